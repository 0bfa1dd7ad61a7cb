//! Accent- and case-insensitive folding, with a way back to the original text: the one folding
//! of the project (labels and patterns, keywords, month names, identifiers compared).
//!
//! Documents spell one label many ways: `Valeur déclarée`, `VALEUR DECLAREE`, `Valeur
//! declarée` when OCR drops one accent. Matching runs on a folded copy of the page (compatibility
//! decomposition, combining marks removed, lower case), and patterns are folded the same way, so
//! all of these meet. Evidence must still quote the page as printed, so every folded byte
//! remembers which original character produced it.
//!
//! Compatibility decomposition (NFKD) rather than NFD is deliberate: PDF text layers carry
//! ligatures (`ﬁ`) and no-break spaces that NFD leaves alone, and a label split by a ligature
//! would otherwise never match.

use std::ops::Range;

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// A folded copy of a text and the map from folded offsets back to original ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folded {
    text: String,
    /// For each byte of `text`, the byte range of the original character that produced it.
    origin: Vec<Range<usize>>,
    original_len: usize,
}

impl Folded {
    /// The folded text, to run patterns on.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Maps a byte range of the folded text back to the smallest byte range of the original
    /// text covering every character that produced it. An empty range maps to an empty range
    /// at the matching original position.
    pub fn original_range(&self, folded: Range<usize>) -> Range<usize> {
        let start = self.original_offset(folded.start);
        if folded.end <= folded.start {
            return start..start;
        }
        let end = self
            .origin
            .get(folded.end - 1)
            .map_or(self.original_len, |r| r.end);
        start..end.max(start)
    }

    /// The original offset of the character that produced the folded byte at `offset` (the
    /// end of the original text past the last byte).
    fn original_offset(&self, offset: usize) -> usize {
        self.origin
            .get(offset)
            .map_or(self.original_len, |r| r.start)
    }
}

/// Folds `text` for matching: NFKD, combining marks removed, lower case.
pub fn fold(text: &str) -> Folded {
    let mut out = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len());
    let mut buf = [0u8; 4];
    for (start, c) in text.char_indices() {
        let range = start..start + c.len_utf8();
        for d in std::iter::once(c).nfkd().filter(|d| !is_combining_mark(*d)) {
            // Lower-casing can itself produce combining marks (`İ` → `i̇`), which go too.
            for l in d.to_lowercase().filter(|l| !is_combining_mark(*l)) {
                out.push_str(l.encode_utf8(&mut buf));
                origin.extend(std::iter::repeat_n(range.clone(), l.len_utf8()));
            }
        }
    }
    Folded {
        text: out,
        origin,
        original_len: text.len(),
    }
}

/// Folds a string without keeping the map: for keywords and comparisons.
pub fn fold_str(text: &str) -> String {
    fold(text).text
}

/// Removes accents from the literal characters of a regular expression, leaving its syntax
/// alone, so the pattern `valeur déclarée` finds the folded page text `valeur declaree`.
///
/// Case is left as written: patterns are compiled case-insensitively instead, because
/// lower-casing would turn escapes such as `\D` or `\W` into their opposites. Only non-ASCII
/// characters are touched, and in regex syntax those are always literals.
pub fn fold_pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.extend(std::iter::once(c).nfkd().filter(|d| !is_combining_mark(*d)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accents_and_case_fold_together() {
        assert_eq!(fold_str("Valeur déclarée"), fold_str("VALEUR DECLAREE"));
        assert_eq!(fold_str("Valeur déclarée"), "valeur declaree");
        assert_eq!(fold_str("DÉCLARATION EN DOUANE"), "declaration en douane");
    }

    #[test]
    fn ligatures_and_no_break_spaces_fold_to_plain_text() {
        assert_eq!(fold_str("Certiﬁcate"), "certificate");
        assert_eq!(fold_str("1\u{a0}234"), "1 234");
    }

    #[test]
    fn folded_ranges_map_back_to_the_original() {
        let original = "Masse brute: 7.774,40 kg — Dédouané";
        let folded = fold(original);
        let at = folded.as_str().find("dedouane").unwrap();
        let back = folded.original_range(at..at + "dedouane".len());
        assert_eq!(&original[back], "Dédouané");
        let at = folded.as_str().find("7.774,40").unwrap();
        assert_eq!(&original[folded.original_range(at..at + 8)], "7.774,40");
    }

    #[test]
    fn a_range_inside_an_expanded_character_covers_the_whole_character() {
        let original = "aﬁb";
        let folded = fold(original);
        assert_eq!(folded.as_str(), "afib");
        // "i" alone came from the ligature: the original range is the whole ligature.
        assert_eq!(&original[folded.original_range(2..3)], "ﬁ");
        assert_eq!(folded.original_range(4..4), 5..5);
    }

    #[test]
    fn patterns_lose_accents_but_keep_syntax_and_case() {
        assert_eq!(
            fold_pattern(r"Valeur déclarée\s*:\s*(?P<value>\D+)"),
            r"Valeur declaree\s*:\s*(?P<value>\D+)"
        );
        assert_eq!(fold_pattern("[éè]"), "[ee]");
    }

    proptest! {
        #[test]
        fn every_folded_range_maps_to_a_char_boundary(text in "\\PC{0,40}", a in 0usize..200, b in 0usize..200) {
            let folded = fold(&text);
            let len = folded.as_str().len();
            let (s, e) = (a.min(len), b.min(len));
            let r = folded.original_range(s.min(e)..s.max(e));
            prop_assert!(r.start <= r.end && r.end <= text.len());
            prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
        }
    }
}
