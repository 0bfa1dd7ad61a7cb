//! Text transformed by a template's options, remembering where each byte came from, so a
//! value matched on the transformed text can be traced back to the words it was read from.

use std::ops::Range;

use super::pyre::{PyRegex, PyReplacement};

/// A text derived from a source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Traced {
    text: String,
    /// For each byte of `text`, the source bytes its character came from.
    origin: Vec<Range<usize>>,
}

impl Traced {
    /// The source itself.
    pub fn new(source: &str) -> Self {
        let mut origin = Vec::with_capacity(source.len());
        for (i, c) in source.char_indices() {
            origin.resize(i + c.len_utf8(), i..i + c.len_utf8());
        }
        Traced {
            text: source.to_owned(),
            origin,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_text(self) -> String {
        self.text
    }

    /// Replaces every character by what `f` makes of it (nothing, itself, several).
    pub fn map_chars<I: IntoIterator<Item = char>>(&self, f: impl Fn(char) -> I) -> Self {
        let mut out = Builder::with_capacity(self.text.len());
        for (i, c) in self.text.char_indices() {
            for d in f(c) {
                out.push_char(d, self.origin[i].clone());
            }
        }
        out.finish()
    }

    /// `re.sub` over the text: a replacement comes from where its match began.
    pub fn substitute(&self, re: &PyRegex, repl: &PyReplacement) -> Self {
        let mut out = Builder::with_capacity(self.text.len());
        let mut last = 0;
        for (range, replacement) in re.sub_each(repl, &self.text) {
            out.copy(
                &self.text[last..range.start],
                &self.origin[last..range.start],
            );
            let from = self.source_range(range.clone());
            for c in replacement.chars() {
                out.push_char(c, from.clone());
            }
            last = range.end;
        }
        out.copy(&self.text[last..], &self.origin[last..]);
        out.finish()
    }

    /// The source bytes a range of the text came from (whole source characters). An empty
    /// range maps to an empty range where it starts.
    pub fn source_range(&self, range: Range<usize>) -> Range<usize> {
        let len = self.text.len();
        let (start, end) = (range.start.min(len), range.end.min(len));
        let Some(first) = self.origin.get(start) else {
            let end_of_source = self.origin.last().map_or(0, |r| r.end);
            return end_of_source..end_of_source;
        };
        if end <= start {
            return first.start..first.start;
        }
        first.start..self.origin[end - 1].end.max(first.start)
    }
}

struct Builder {
    text: String,
    origin: Vec<Range<usize>>,
}

impl Builder {
    fn with_capacity(n: usize) -> Self {
        Builder {
            text: String::with_capacity(n),
            origin: Vec::with_capacity(n),
        }
    }

    fn push_char(&mut self, c: char, from: Range<usize>) {
        self.text.push(c);
        self.origin.resize(self.text.len(), from);
    }

    fn copy(&mut self, text: &str, origin: &[Range<usize>]) {
        self.text.push_str(text);
        self.origin.extend_from_slice(origin);
    }

    fn finish(self) -> Traced {
        Traced {
            text: self.text,
            origin: self.origin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_and_replaced_text_maps_back_to_its_source() {
        let source = "Total:  1 234,50 EUR";
        let squeezed = Traced::new(source).map_chars(|c| (c != ' ').then_some(c));
        assert_eq!(squeezed.text(), "Total:1234,50EUR");
        let at = squeezed.text().find("1234,50").unwrap();
        let range = squeezed.source_range(at..at + "1234,50".len());
        assert_eq!(&source[range], "1 234,50");

        let re = PyRegex::new("EUR").unwrap();
        let euro = squeezed.substitute(&re, &PyReplacement::new("€"));
        assert_eq!(euro.text(), "Total:1234,50€");
        let at = euro.text().find('€').unwrap();
        assert_eq!(&source[euro.source_range(at..euro.text().len())], "EUR");
    }

    #[test]
    fn case_folding_that_changes_lengths_keeps_the_map() {
        let source = "İx";
        let lower = Traced::new(source).map_chars(char::to_lowercase);
        assert_eq!(lower.text(), "i\u{307}x");
        let at = lower.text().find('x').unwrap();
        assert_eq!(&source[lower.source_range(at..at + 1)], "x");
        assert_eq!(&source[lower.source_range(0..at)], "İ");
    }
}
