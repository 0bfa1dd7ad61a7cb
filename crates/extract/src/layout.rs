//! A page's text rebuilt from its words, remembering which bytes each word occupies, so a
//! pattern match on the text can be traced back to the words — and their boxes and
//! confidences — that it covers.

use std::ops::Range;

use ironclad_core::page::{BBox, PageText, Word};

use crate::normalize::{fold, Folded};
use crate::workflow::Region;

/// One page's searchable text.
#[derive(Debug, Clone)]
pub(crate) struct PageLayout<'p> {
    page: &'p PageText,
    text: String,
    /// Byte range of each kept word in `text`, with the word's index in `page.words`.
    spans: Vec<(Range<usize>, usize)>,
    folded: Folded,
}

/// What a span of text stands on: the words it overlaps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SpanEvidence {
    /// Union of the overlapped words' boxes.
    pub bbox: BBox,
    /// Mean of the overlapped words' confidences, in `[0, 1]`.
    pub confidence: f64,
}

impl<'p> PageLayout<'p> {
    /// The whole page, laid out as [`PageText::text`] does: one line per `Word::line`,
    /// words separated by single spaces.
    pub fn new(page: &'p PageText) -> Self {
        Self::build(page, |_| true)
    }

    /// Only the words whose centre lies inside `region`.
    pub fn within(page: &'p PageText, region: Region) -> Self {
        Self::build(page, |w| region.contains_centre(w.bbox))
    }

    fn build(page: &'p PageText, keep: impl Fn(&Word) -> bool) -> Self {
        let mut text = String::new();
        let mut spans = Vec::with_capacity(page.words.len());
        let mut current: Option<u32> = None;
        for (i, w) in page.words.iter().enumerate() {
            if w.text.trim().is_empty() || !keep(w) {
                continue;
            }
            match current {
                Some(l) if l == w.line => text.push(' '),
                Some(_) => text.push('\n'),
                None => {}
            }
            let start = text.len();
            // A word never breaks a line: line structure comes from `Word::line` alone.
            text.extend(
                w.text
                    .chars()
                    .map(|c| if c == '\n' || c == '\r' { ' ' } else { c }),
            );
            spans.push((start..text.len(), i));
            current = Some(w.line);
        }
        let folded = fold(&text);
        PageLayout {
            page,
            text,
            spans,
            folded,
        }
    }

    /// The page as read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The folded text that patterns run on.
    pub fn folded(&self) -> &Folded {
        &self.folded
    }

    /// The boxes and confidences of the words that `range` (of [`Self::text`]) overlaps, or
    /// `None` when it touches no word (only spaces between words).
    pub fn evidence(&self, range: Range<usize>) -> Option<SpanEvidence> {
        if range.is_empty() {
            return None;
        }
        // Spans are sorted by start, so the first candidate is found by bisection.
        let first = self.spans.partition_point(|(r, _)| r.end <= range.start);
        let mut bbox: Option<BBox> = None;
        let (mut sum, mut n) = (0.0f64, 0u32);
        for (r, i) in &self.spans[first..] {
            if r.start >= range.end {
                break;
            }
            let w = &self.page.words[*i];
            let b = w.bbox.normalized();
            bbox = Some(bbox.map_or(b, |acc| acc.union(b)));
            sum += f64::from(w.confidence).clamp(0.0, 1.0);
            n += 1;
        }
        bbox.map(|bbox| SpanEvidence {
            bbox,
            confidence: sum / f64::from(n),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ironclad_core::page::ReadMethod;

    /// A page whose words sit on a grid: word `j` of line `i` spans x = j*0.1 .. j*0.1+0.08.
    pub(crate) fn grid_page(lines: &[&str], confidence: f32) -> PageText {
        let mut words = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            for (j, t) in line.split_whitespace().enumerate() {
                let (x, y) = (j as f32 * 0.1, i as f32 * 0.02);
                words.push(Word {
                    text: t.to_owned(),
                    bbox: BBox {
                        x0: x,
                        y0: y,
                        x1: x + 0.08,
                        y1: y + 0.015,
                    },
                    confidence,
                    line: i as u32,
                });
            }
        }
        PageText {
            index: 0,
            method: ReadMethod::TextLayer,
            confidence,
            rotation: 0,
            words,
        }
    }

    #[test]
    fn text_matches_the_core_rendering() {
        let page = grid_page(&["Invoice No.: 42", "Total  USD 10.00"], 1.0);
        assert_eq!(PageLayout::new(&page).text(), page.text());
    }

    #[test]
    fn evidence_covers_only_the_overlapped_words() {
        let mut page = grid_page(&["Gross weight: 12,431.30 KGS"], 1.0);
        page.words[2].confidence = 0.5;
        let layout = PageLayout::new(&page);
        let at = layout.text().find("12,431.30").unwrap();
        let ev = layout.evidence(at..at + "12,431.30 KGS".len()).unwrap();
        assert_eq!(
            ev.bbox,
            BBox {
                x0: 0.2,
                y0: 0.0,
                x1: 0.38,
                y1: 0.015
            }
        );
        assert!((ev.confidence - 0.75).abs() < 1e-9);
        // Part of a word counts as the word.
        let ev = layout.evidence(at + 1..at + 2).unwrap();
        assert_eq!(ev.bbox.x0, 0.2);
        assert_eq!(ev.bbox.x1, 0.28);
    }

    #[test]
    fn a_region_keeps_only_words_centred_inside_it() {
        let page = grid_page(&["left middle right", "down"], 1.0);
        let region = Region {
            x0: 0.05,
            y0: 0.0,
            x1: 0.25,
            y1: 0.5,
        };
        let layout = PageLayout::within(&page, region);
        assert_eq!(layout.text(), "middle right");
    }
}
