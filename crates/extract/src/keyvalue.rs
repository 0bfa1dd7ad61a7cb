//! Values found by page geometry: beside or under their printed label.
//!
//! Stacked forms (`GROSS WEIGHT (KG)` over `12,694.3`, two columns side by side) and bordered
//! tables (label cell | value cell) put a label and its value on different lines of reading
//! order, so no pattern over the text can pair them. Here a label is found fuzzily on each of
//! its reader's lines (the skeleton matching of [`crate::fuzzy`]), and its value is looked for
//! where the workflow says: the nearest run of words right of it on its row, or the first row
//! under it overlapping it horizontally. A run stops at a wide gap (the next column), at a
//! rule mark OCR made of a cell border (`|`), and at another field's label, so a stacked
//! form's next label is never taken for a value. The field's parser then has the last word:
//! `12,694.3` is a weight, `TGHU9458075` beside it is not.

use std::ops::Range;

use ironclad_core::page::{BBox, PageText, Word};

use crate::fuzzy::{skeleton, Phrase, STRAY};
use crate::layout::{median, reader_lines};
use crate::workflow::{CompiledField, Direction, Region};
use ironclad_core::fold::fold_str;

/// Gap between two words of one value, in character widths, beyond which the run stops: a
/// space is under one, a column break several.
const MAX_GAP_CHARS: f64 = 2.5;
/// How far under a label its value may start, in line heights.
const MAX_DROP_LINES: f64 = 2.5;
/// Rows may drift from the page's measured skew by this much per unit of width (a photo's
/// keystone, a curved page).
const ROW_DRIFT: f64 = 0.008;
/// Steepest skew believed, in page heights per page width (about 8°).
const MAX_SKEW: f64 = 0.2;

/// One place a field's label was found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LabelHit {
    /// Which of the field's labels.
    pub label: usize,
    /// Indices into the page's words, left to right.
    pub words: Vec<usize>,
    pub bbox: BBox,
    /// Edits between the label and what is printed.
    pub edits: u32,
}

/// The value a label points at: its words (indices, left to right) and the direction taken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ValueRun {
    pub words: Vec<usize>,
    pub direction: Direction,
    /// How many words at the start of `words` may be the label again in another language,
    /// after a slash whose colon OCR lost (`Date d'acceptation / Date 24/04/2025`): words
    /// without digits, at most [`MAX_CAPTION_WORDS`]. A parser that refuses them may skip
    /// them; free text may not (it would skip a name).
    pub caption: usize,
}

/// Most words a label's other-language caption takes (`Date of acceptance`).
const MAX_CAPTION_WORDS: usize = 3;

/// One reader line's skeleton and, for each of its words with letters or digits, (word index,
/// skeleton range).
type SkeletonLine = (Vec<u8>, Vec<(usize, Range<usize>)>);

/// A page prepared for label search: every word's box and skeleton, grouped by reader line.
pub(crate) struct LabelPage<'p> {
    page: &'p PageText,
    boxes: Vec<BBox>,
    lines: Vec<SkeletonLine>,
    /// Words that are part of some label of the document type: a value never includes them.
    label_words: Vec<bool>,
    /// The page's skew, from its reader's lines: how far a row descends per unit of width.
    slope: f64,
}

impl<'p> LabelPage<'p> {
    pub fn new(page: &'p PageText) -> Self {
        let boxes: Vec<BBox> = page.words.iter().map(|w| w.bbox.normalized()).collect();
        let by_line = reader_lines(page);
        let slope = skew(&by_line, &boxes);
        let lines = by_line
            .into_iter()
            .map(|words| {
                let mut text = Vec::new();
                let mut spans = Vec::new();
                for i in words {
                    let sk = skeleton(&fold_str(&page.words[i].text));
                    if sk.is_empty() {
                        continue;
                    }
                    let start = text.len();
                    text.extend_from_slice(&sk);
                    spans.push((i, start..text.len()));
                }
                (text, spans)
            })
            .collect();
        LabelPage {
            page,
            boxes,
            lines,
            label_words: vec![false; page.words.len()],
            slope,
        }
    }

    /// Every place one of `field`'s labels is printed (inside `region`, when given).
    pub fn find_labels(&self, field: &CompiledField, region: Option<Region>) -> Vec<LabelHit> {
        let mut hits = Vec::new();
        for (label, spellings) in field.labels.iter().enumerate() {
            for phrase in spellings.spellings() {
                for line in &self.lines {
                    for (end, edits) in phrase.occurrences(&line.0) {
                        let Some(words) = self.label_words_at(phrase, line, end, edits) else {
                            continue;
                        };
                        // Both spellings may find the same words: once is enough.
                        if hits
                            .iter()
                            .any(|h: &LabelHit| h.label == label && h.words == words)
                        {
                            continue;
                        }
                        let bbox = self.union(&words);
                        if region.is_none_or(|r| r.contains_centre(bbox)) {
                            hits.push(LabelHit {
                                label,
                                words,
                                bbox,
                                edits,
                            });
                        }
                    }
                }
            }
        }
        hits
    }

    /// Marks the words of `hits` as label words, which values stop at.
    pub fn mark(&mut self, hits: &[LabelHit]) {
        for h in hits {
            for &i in &h.words {
                self.label_words[i] = true;
            }
        }
    }

    /// The words a match ending at `end` of `text` covers, if it ends with the label's own
    /// last letter, starts and ends at word boundaries (give or take its edits, and a stray
    /// `l` a rule became) and its words are not spread over several columns.
    fn label_words_at(
        &self,
        phrase: &Phrase,
        (text, spans): &SkeletonLine,
        end: usize,
        edits: u32,
    ) -> Option<Vec<usize>> {
        if !text.get(end).is_some_and(|&b| phrase.ends_like(b)) {
            return None;
        }
        let start = (end + 1).saturating_sub(phrase.len());
        let edits_at = edits as usize;
        let covered: Vec<&(usize, Range<usize>)> = spans
            .iter()
            .filter(|(_, r)| r.start <= end && r.end > start)
            // A word before the label that reaches into it by no more than the edits is what
            // the edits stood for, letters the page lost at the label's start (`République
            // voice date`), not part of it.
            .skip_while(|(_, r)| r.start < start && r.end <= start + edits_at)
            .collect();
        let (first, last) = (covered.first()?, covered.last()?);
        let stray = |at: usize| text.get(at) == Some(&STRAY);
        let leading = start.saturating_sub(first.1.start);
        let trailing = last.1.end - 1 - end;
        let edits = edits as usize;
        let leading_ok = leading <= edits || (leading == edits + 1 && stray(first.1.start));
        let trailing_ok = trailing == 0 || (trailing == 1 && stray(end + 1));
        if !(leading_ok && trailing_ok) {
            return None;
        }
        let words: Vec<usize> = covered.iter().map(|(i, _)| *i).collect();
        // A label starts its cell: right after a small word of a sentence (`… bitte unter
        // Angabe der Rechnungsnummer an`, `keep this invoice and`) it is prose, not a label.
        let position = spans.iter().position(|(i, _)| *i == words[0])?;
        if let Some((before, _)) = position.checked_sub(1).map(|k| &spans[k]) {
            let gap = f64::from(self.boxes[words[0]].x0 - self.boxes[*before].x1);
            let lower = |i: usize| {
                self.page.words[i]
                    .text
                    .chars()
                    .next()
                    .is_some_and(char::is_lowercase)
            };
            // A sentence is lower-case words in a row; a unit after a number (`7,980.62 kg
            // Gross weight: …`, two labels on one line) is not one.
            let earlier = position.checked_sub(2).map(|k| spans[k].0);
            // A mark between them (`Numéro de déclaration / Declaration No.`, a cell's `|`)
            // ends the sentence: what follows is a label of its own.
            let prose = lower(*before)
                && earlier.is_none_or(lower)
                && !self.mark_between(*before, words[0]);
            if prose && gap <= MAX_GAP_CHARS * self.char_width(&[*before, words[0]]) {
                return None;
            }
        }
        let wide = words.windows(2).any(|pair| {
            let (a, b) = (self.boxes[pair[0]], self.boxes[pair[1]]);
            f64::from(b.x0 - a.x1) > MAX_GAP_CHARS * self.char_width(&[pair[0], pair[1]])
        });
        (!wide).then_some(words)
    }

    /// Whether a word without letters or digits (`/`, `|`, `—`) sits on the line of `left`
    /// between it and `right`.
    fn mark_between(&self, left: usize, right: usize) -> bool {
        let (l, r) = (self.boxes[left], self.boxes[right]);
        let line = self.page.words[left].line;
        self.page.words.iter().enumerate().any(|(k, w)| {
            let centre = (self.boxes[k].x0 + self.boxes[k].x1) / 2.0;
            w.line == line
                && centre > l.x1
                && centre < r.x0
                && skeleton(&fold_str(&w.text)).is_empty()
        })
    }

    /// Where the label's value is, trying `value_at` in order; every direction that holds a
    /// run of words is returned, preferred first.
    pub fn values(&self, hit: &LabelHit, value_at: &[Direction]) -> Vec<ValueRun> {
        value_at
            .iter()
            .filter_map(|&direction| {
                let (words, caption) = match direction {
                    Direction::Right => self.right_of(hit),
                    Direction::Below => (self.below(hit), 0),
                };
                (!words.is_empty()).then_some(ValueRun {
                    words,
                    direction,
                    caption,
                })
            })
            .collect()
    }

    /// The run of words after the label on its row, and how many of its first words may be
    /// the label's other-language caption ([`ValueRun::caption`]).
    fn right_of(&self, hit: &LabelHit) -> (Vec<usize>, usize) {
        let l = hit.bbox;
        let last_line = hit.words.last().map(|&i| self.page.words[i].line);
        let cw = self.char_width(&hit.words);
        let mut row: Vec<usize> = (0..self.page.words.len())
            .filter(|i| !hit.words.contains(i) && !self.page.words[*i].text.trim().is_empty())
            .filter(|&i| {
                let b = self.boxes[i];
                f64::from(b.x0) >= f64::from(l.x1) - cw / 2.0
                    && (Some(self.page.words[i].line) == last_line || self.same_row(l, b))
            })
            .collect();
        row.sort_by(|&a, &b| self.boxes[a].x0.total_cmp(&self.boxes[b].x0));
        let start = row
            .iter()
            .position(|&i| can_start_value(&self.page.words[i]));
        match start {
            // The next thing on the row is another label (`VESSEL:` beside `BILL OF LADING
            // NO.:` in a stacked row): this label's value is elsewhere.
            Some(s) if is_colon_label(&self.page.words[row[s]]) => (Vec::new(), 0),
            Some(s) => {
                let run = self.run(&row[s..], cw);
                let slash = row[..s]
                    .iter()
                    .any(|&i| self.page.words[i].text.trim() == "/");
                let caption = if slash {
                    run.iter()
                        .take_while(|&&i| {
                            !self.page.words[i]
                                .text
                                .contains(|c: char| c.is_ascii_digit())
                        })
                        .count()
                        .min(MAX_CAPTION_WORDS)
                        .min(run.len().saturating_sub(1))
                } else {
                    0
                };
                (run, caption)
            }
            None => (Vec::new(), 0),
        }
    }

    /// The run of words on the first row under the label that overlaps it horizontally.
    fn below(&self, hit: &LabelHit) -> Vec<usize> {
        let l = hit.bbox;
        let height = f64::from(l.y1 - l.y0);
        let overlaps = |b: BBox| b.x0 < l.x1 && b.x1 > l.x0;
        let first = (0..self.page.words.len())
            .filter(|i| !hit.words.contains(i))
            .filter(|&i| {
                let w = &self.page.words[i];
                let b = self.boxes[i];
                let drop = f64::from(b.y0 - l.y1);
                !w.text.trim().is_empty()
                    && can_start_value(w)
                    && b.y0 > (l.y0 + l.y1) / 2.0
                    && overlaps(b)
                    && drop <= MAX_DROP_LINES * height.max(f64::from(b.y1 - b.y0))
            })
            .min_by(|&a, &b| self.boxes[a].y0.total_cmp(&self.boxes[b].y0));
        let Some(first) = first else {
            return Vec::new();
        };
        // The first thing under the label is a label: its value row is missing.
        if is_colon_label(&self.page.words[first]) {
            return Vec::new();
        }
        let fb = self.boxes[first];
        let line = self.page.words[first].line;
        let mut row: Vec<usize> = (0..self.page.words.len())
            .filter(|&i| !self.page.words[i].text.trim().is_empty())
            .filter(|&i| self.page.words[i].line == line || self.same_row(fb, self.boxes[i]))
            .collect();
        row.sort_by(|&a, &b| self.boxes[a].x0.total_cmp(&self.boxes[b].x0));
        // The run holding the leftmost word under the label: extend it rightwards from there,
        // and leftwards over words that reach under the label or sit close to it.
        let Some(anchor) = row
            .iter()
            .position(|&i| overlaps(self.boxes[i]) && can_start_value(&self.page.words[i]))
        else {
            return Vec::new();
        };
        let cw = self.char_width(&row[anchor..=anchor]);
        let mut begin = anchor;
        while begin > 0 {
            let (prev, cur) = (row[begin - 1], row[begin]);
            if self.breaks_run(prev, cur, cw) || self.boxes[prev].x1 < l.x0 - (cw as f32) * 4.0 {
                break;
            }
            begin -= 1;
        }
        self.run(&row[begin..], cw)
    }

    /// The words of `row` (left to right) from its first, up to a wide gap, a rule mark, a
    /// label word, a word ending in a colon (the next, undeclared, label: `INV-1 Date: …`) or
    /// a number mark with the word before it (`BOOKING No.`, another undeclared label). A
    /// label word first means the label has no value there.
    fn run(&self, row: &[usize], cw: f64) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for &i in row {
            let word = &self.page.words[i];
            if !out.is_empty() && is_number_mark(&word.text) {
                out.pop();
                break;
            }
            if self.label_words[i]
                || is_rule_mark(word)
                || (!out.is_empty() && word.text.trim_end().ends_with(':'))
            {
                break;
            }
            if let Some(&prev) = out.last() {
                if self.breaks_run(prev, i, cw) {
                    break;
                }
            }
            out.push(i);
        }
        out
    }

    fn breaks_run(&self, left: usize, right: usize, cw: f64) -> bool {
        let cw = cw.max(self.char_width(&[left, right]));
        let gap = f64::from(self.boxes[right].x0 - self.boxes[left].x1);
        // Overlapping words are not side by side: one sits above the other.
        gap > MAX_GAP_CHARS * cw
            || gap < -cw
            || self.label_words[left]
            || self.label_words[right]
            || is_rule_mark(&self.page.words[left])
            || is_rule_mark(&self.page.words[right])
    }

    /// Whether `b` sits on the row of `a`: its vertical centre within half a line of where
    /// the row of `a` runs at its place, following the page's skew.
    fn same_row(&self, a: BBox, b: BBox) -> bool {
        let centre = |b: BBox| (f64::from(b.x0 + b.x1) / 2.0, f64::from(b.y0 + b.y1) / 2.0);
        let ((xa, ya), (xb, yb)) = (centre(a), centre(b));
        let height = f64::from((a.y1 - a.y0).max(b.y1 - b.y0));
        let dx = (xb - xa).abs();
        (yb - (ya + self.slope * (xb - xa))).abs() <= height / 2.0 + ROW_DRIFT * dx
    }

    /// Mean width of a character over `words`, in page widths.
    fn char_width(&self, words: &[usize]) -> f64 {
        let (mut width, mut chars) = (0.0f64, 0usize);
        for &i in words {
            let b = self.boxes[i];
            width += f64::from(b.x1 - b.x0);
            chars += self.page.words[i].text.chars().count();
        }
        if chars == 0 {
            0.0
        } else {
            width / chars as f64
        }
    }

    /// Whether word `i` is part of some label of the document type (see [`LabelPage::mark`]).
    pub fn is_label_word(&self, i: usize) -> bool {
        self.label_words.get(i).copied().unwrap_or(false)
    }

    /// Whether a word of some label of the document type sits inside `bbox` (a value's box):
    /// a pattern whose blanks ran past an empty cell took the next label for its value.
    pub fn holds_label_word(&self, bbox: BBox) -> bool {
        self.label_words
            .iter()
            .zip(&self.boxes)
            .any(|(&label, &b)| label && bbox.contains_centre(b))
    }

    /// The union of the words' boxes.
    pub fn union(&self, words: &[usize]) -> BBox {
        words
            .iter()
            .map(|&i| self.boxes[i])
            .reduce(BBox::union)
            .unwrap_or_default()
    }

    /// The words' text, joined by single spaces.
    pub fn text(&self, words: &[usize]) -> String {
        let texts: Vec<&str> = words
            .iter()
            .map(|&i| self.page.words[i].text.trim())
            .collect();
        texts.join(" ")
    }

    /// Mean confidence of the words, in `[0, 1]`.
    pub fn confidence(&self, words: &[usize]) -> f64 {
        let sum: f64 = words
            .iter()
            .map(|&i| f64::from(self.page.words[i].confidence).clamp(0.0, 1.0))
            .sum();
        sum / words.len().max(1) as f64
    }
}

/// The page's skew: the median slope of its reader's long lines (three words or more, over a
/// tenth of the page's width), each fitted by least squares through its words' bottom edges.
/// 0 when no line says.
fn skew(lines: &[Vec<usize>], boxes: &[BBox]) -> f64 {
    let mut slopes: Vec<f64> = lines
        .iter()
        .filter(|words| words.len() >= 3)
        .filter_map(|words| {
            let points: Vec<(f64, f64)> = words
                .iter()
                .map(|&i| {
                    let b = boxes[i];
                    (f64::from(b.x0 + b.x1) / 2.0, f64::from(b.y1))
                })
                .collect();
            let n = points.len() as f64;
            let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
            let my = points.iter().map(|p| p.1).sum::<f64>() / n;
            let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
            let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
            let span = points.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max)
                - points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
            (span > 0.1 && sxx > 0.0).then(|| sxy / sxx)
        })
        .filter(|s| s.abs() <= MAX_SKEW)
        .collect();
    median(&mut slopes).unwrap_or(0.0)
}

/// Whether a word says "number" the way a label does (`No.`, `N°`, `Nr`, `#`, `Number`): after
/// a name, it makes that name a label (`BOOKING No.`), not a value.
pub(crate) fn is_number_mark(text: &str) -> bool {
    let bare = text.trim_end_matches([':', '.']).to_lowercase();
    matches!(
        bare.as_str(),
        "no" | "n°" | "nº" | "nr" | "#" | "number" | "numéro" | "numero" | "nummer"
    )
}

/// A word ending in a colon: a label (`VESSEL:`), never the value of another.
fn is_colon_label(word: &Word) -> bool {
    word.text.trim_end().ends_with(':')
}

/// Whether a value may start with this word: not a rule mark, and not a speck of dirt OCR
/// read as a symbol (`©`, `°`, `*`: no letter or digit). A currency sign may start an amount.
pub(crate) fn can_start_value(word: &Word) -> bool {
    let t = word.text.trim();
    !is_rule_mark(word)
        && t.chars()
            .any(|c| c.is_alphanumeric() || matches!(c, '$' | '€' | '£' | '¥' | '₹' | '#'))
}

/// A word that is a table border or rule as OCR read it: nothing but bars, brackets, dashes
/// and the like, or a lone `l`/`I`.
pub(crate) fn is_rule_mark(word: &Word) -> bool {
    let t = word.text.trim();
    t == "l"
        || t == "I"
        || t.chars().all(|c| {
            matches!(
                c,
                '|' | '¦'
                    | '['
                    | ']'
                    | '!'
                    | '_'
                    | '—'
                    | '–'
                    | '-'
                    | '='
                    | '~'
                    | '“'
                    | '”'
                    | '"'
                    | '\''
                    | '‘'
                    | '’'
                    | ':'
                    | ';'
                    | '.'
                    | ','
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::placed_page;
    use crate::workflow::Workflow;

    /// A page of words placed by hand: (text, x0, y0, x1, line); every word 0.012 high.
    fn page(words: &[(&str, f32, f32, f32, u32)]) -> PageText {
        placed_page(words, 1.0)
    }

    fn field(labels: &str, value_at: &str) -> CompiledField {
        let yaml = format!(
            "name: t\nversion: 1\ndocument_types:\n  - id: d\n    title: D\n    recognition: {{keywords: [{{text: d}}]}}\n    fields:\n      - {{name: f, parser: text, labels: {labels}, value_at: {value_at}}}\n"
        );
        let wf = Workflow::from_yaml(&yaml).expect("workflow");
        let (_, compiled) = wf.compiled_type("d").expect("type");
        compiled.fields[0].clone()
    }

    fn texts(p: &LabelPage<'_>, runs: &[ValueRun]) -> Vec<String> {
        runs.iter().map(|r| p.text(&r.words)).collect()
    }

    #[test]
    fn a_stacked_form_pairs_each_label_with_the_value_under_it() {
        // GROSS WEIGHT (KG)        CONTAINER No.
        // 12,694.3                 TGHU9458075
        let pg = page(&[
            ("GROSS", 0.10, 0.20, 0.15, 0),
            ("WEIGHT", 0.16, 0.20, 0.22, 0),
            ("(KG)", 0.23, 0.20, 0.26, 0),
            ("CONTAINER", 0.50, 0.20, 0.59, 0),
            ("No.", 0.60, 0.20, 0.63, 0),
            ("12,694.3", 0.10, 0.215, 0.18, 1),
            ("TGHU9458075", 0.50, 0.215, 0.62, 1),
        ]);
        let weight = field("['gross weight (kg)']", "[right, below]");
        let container = field("['container no']", "[below]");
        let mut p = LabelPage::new(&pg);
        let (hw, hc) = (
            p.find_labels(&weight, None),
            p.find_labels(&container, None),
        );
        p.mark(&hw);
        p.mark(&hc);
        assert_eq!(hw.len(), 1);
        assert_eq!(hw[0].words, [0, 1, 2]);
        // Right of the weight's label is another label: no value there, so below it is.
        assert_eq!(texts(&p, &p.values(&hw[0], &weight.value_at)), ["12,694.3"]);
        assert_eq!(
            texts(&p, &p.values(&hc[0], &container.value_at)),
            ["TGHU9458075"]
        );
    }

    #[test]
    fn a_label_whose_in_a_fax_merged_or_lost_is_found_and_its_value_read() {
        // | 14 rue dela République voice date' 13 March 2025   (fax-02: `In` lost)
        // Commercal mvoce INV2562755                           (`In` read as `m`)
        let pg = page(&[
            ("République", 0.10, 0.20, 0.22, 0),
            ("voice", 0.50, 0.20, 0.55, 0),
            ("date'", 0.56, 0.20, 0.60, 0),
            ("13", 0.62, 0.20, 0.64, 0),
            ("March", 0.65, 0.20, 0.70, 0),
            ("2025", 0.71, 0.20, 0.75, 0),
            ("Commercal", 0.10, 0.30, 0.20, 1),
            ("mvoce", 0.21, 0.30, 0.26, 1),
            ("INV2562755", 0.28, 0.30, 0.38, 1),
        ]);
        let date = field("['invoice date']", "[right]");
        let invoice = field("['commercial invoice']", "[right]");
        let mut p = LabelPage::new(&pg);
        let (hd, hi) = (p.find_labels(&date, None), p.find_labels(&invoice, None));
        p.mark(&hd);
        p.mark(&hi);
        assert_eq!(hd.len(), 1, "{hd:?}");
        assert_eq!(
            hd[0].words,
            [1, 2],
            "the street's last letters are not the label's"
        );
        assert_eq!(
            texts(&p, &p.values(&hd[0], &date.value_at)),
            ["13 March 2025"]
        );
        assert_eq!(hi.len(), 1, "{hi:?}");
        assert_eq!(
            texts(&p, &p.values(&hi[0], &invoice.value_at)),
            ["INV2562755"]
        );
    }

    #[test]
    fn a_label_after_a_unit_is_a_label_not_prose() {
        // Net weight: 7,980.62 kg Grass weight: 8,933.44 kg   (a fax's `Grass`)
        let pg = page(&[
            ("Net", 0.05, 0.20, 0.08, 0),
            ("weight:", 0.09, 0.20, 0.15, 0),
            ("7,980.62", 0.16, 0.20, 0.23, 0),
            ("kg", 0.24, 0.20, 0.26, 0),
            ("Grass", 0.28, 0.20, 0.33, 0),
            ("weight:", 0.34, 0.20, 0.40, 0),
            ("8,933.44", 0.41, 0.20, 0.48, 0),
            ("kg", 0.49, 0.20, 0.51, 0),
        ]);
        let f = field("['gross weight']", "[right]");
        let p = LabelPage::new(&pg);
        let hits = p.find_labels(&f, None);
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(texts(&p, &p.values(&hits[0], &f.value_at)), ["8,933.44 kg"]);
        // In a sentence it is still prose.
        let pg = page(&[
            ("the", 0.05, 0.20, 0.08, 0),
            ("stated", 0.09, 0.20, 0.15, 0),
            ("gross", 0.16, 0.20, 0.21, 0),
            ("weight", 0.22, 0.20, 0.28, 0),
            ("applies", 0.29, 0.20, 0.36, 0),
        ]);
        let p = LabelPage::new(&pg);
        assert!(p.find_labels(&f, None).is_empty());
    }

    #[test]
    fn a_colon_label_beside_or_under_a_label_is_not_its_value() {
        // CONTAINER NO.:   BILL OF LADING NO.:   VESSEL:       (only the B/L's is declared)
        // CMAU0321047      CMDUDTT5566049        CMA CGM TAGE
        let pg = page(&[
            ("CONTAINER", 0.05, 0.20, 0.14, 0),
            ("NO.:", 0.15, 0.20, 0.18, 0),
            ("BILL", 0.35, 0.20, 0.39, 0),
            ("OF", 0.40, 0.20, 0.42, 0),
            ("LADING", 0.43, 0.20, 0.49, 0),
            ("NO.:", 0.50, 0.20, 0.53, 0),
            ("VESSEL:", 0.65, 0.20, 0.72, 0),
            ("CMAU0321047", 0.05, 0.215, 0.16, 1),
            ("CMDUDTT5566049", 0.35, 0.215, 0.48, 1),
            ("CMA", 0.65, 0.215, 0.68, 1),
        ]);
        let bl = field("['bill of lading no']", "[right, below]");
        let p = LabelPage::new(&pg);
        let hits = p.find_labels(&bl, None);
        assert_eq!(hits.len(), 1);
        assert_eq!(
            texts(&p, &p.values(&hits[0], &bl.value_at)),
            ["CMDUDTT5566049"]
        );
        // A label whose value row is missing: the next row's label is not its value.
        let pg = page(&[
            ("BILL", 0.35, 0.20, 0.39, 0),
            ("OF", 0.40, 0.20, 0.42, 0),
            ("LADING", 0.43, 0.20, 0.49, 0),
            ("NO.:", 0.50, 0.20, 0.53, 0),
            ("FREIGHT:", 0.35, 0.215, 0.43, 1),
        ]);
        let p = LabelPage::new(&pg);
        let hits = p.find_labels(&bl, None);
        assert!(p.values(&hits[0], &bl.value_at).is_empty());
    }

    #[test]
    fn a_name_followed_by_a_number_mark_is_a_label_not_a_value() {
        // B/L No.   BOOKING No.          (the booking label is not declared)
        // ONEY123   BK-77
        let pg = page(&[
            ("B/L", 0.10, 0.20, 0.13, 0),
            ("No.", 0.14, 0.20, 0.17, 0),
            ("BOOKING", 0.20, 0.20, 0.28, 0),
            ("No.", 0.29, 0.20, 0.32, 0),
            ("ONEY123", 0.10, 0.215, 0.17, 1),
            ("BK-77", 0.20, 0.215, 0.25, 1),
        ]);
        let f = field("['b/l no']", "[right, below]");
        let p = LabelPage::new(&pg);
        let hits = p.find_labels(&f, None);
        assert_eq!(hits.len(), 1);
        assert_eq!(texts(&p, &p.values(&hits[0], &f.value_at)), ["ONEY123"]);
        // On one row, the value stops where the next label's name begins.
        let pg = page(&[
            ("B/L", 0.10, 0.20, 0.13, 0),
            ("No.", 0.14, 0.20, 0.17, 0),
            ("ONEY123", 0.19, 0.20, 0.26, 0),
            ("BOOKING", 0.28, 0.20, 0.36, 0),
            ("No.", 0.37, 0.20, 0.40, 0),
            ("BK-77", 0.42, 0.20, 0.47, 0),
        ]);
        let p = LabelPage::new(&pg);
        let hits = p.find_labels(&f, None);
        assert_eq!(texts(&p, &p.values(&hits[0], &f.value_at))[0], "ONEY123");
    }

    #[test]
    fn a_speck_read_as_a_symbol_is_not_a_value() {
        // INVOICE No.      © B/LNO.        (a speckled scan: © is dirt, B/LNO. the next label)
        // DPI/2024/8266      COSU9588360179
        let pg = page(&[
            ("INVOICE", 0.35, 0.15, 0.41, 0),
            ("No.", 0.415, 0.15, 0.44, 0),
            ("©", 0.638, 0.155, 0.640, 1),
            ("B/LNO.", 0.653, 0.15, 0.69, 1),
            ("DPI/2024/8266", 0.364, 0.165, 0.474, 2),
            ("COSU9588360179", 0.652, 0.165, 0.793, 2),
        ]);
        let invoice = field("['invoice no']", "[right, below]");
        let bl = field("['b/l no']", "[below]");
        let mut p = LabelPage::new(&pg);
        let (hi, hb) = (p.find_labels(&invoice, None), p.find_labels(&bl, None));
        p.mark(&hi);
        p.mark(&hb);
        assert_eq!(hb.len(), 1, "B/LNO. is the B/L label, joined");
        assert_eq!(
            texts(&p, &p.values(&hi[0], &invoice.value_at)),
            ["DPI/2024/8266"]
        );
        // A currency sign still starts an amount.
        let pg = page(&[
            ("Total", 0.10, 0.20, 0.15, 0),
            ("$", 0.30, 0.20, 0.31, 0),
            ("4.11", 0.32, 0.20, 0.36, 0),
        ]);
        let total = field("['total']", "[right]");
        let p = LabelPage::new(&pg);
        let hits = p.find_labels(&total, None);
        assert_eq!(texts(&p, &p.values(&hits[0], &total.value_at)), ["$ 4.11"]);
    }

    #[test]
    fn a_bordered_table_skips_the_rule_and_stops_at_the_next_cell() {
        // | Poids brut (kg) | 158 742,21 | Colis | 12 |
        let pg = page(&[
            ("|", 0.05, 0.30, 0.055, 0),
            ("Po1ds", 0.06, 0.30, 0.11, 0),
            ("brut", 0.12, 0.30, 0.16, 0),
            ("(kg)", 0.17, 0.30, 0.21, 0),
            ("|", 0.40, 0.30, 0.405, 0),
            ("158", 0.42, 0.30, 0.45, 0),
            ("742,21", 0.46, 0.30, 0.52, 0),
            ("|", 0.60, 0.30, 0.605, 0),
            ("Colis", 0.62, 0.30, 0.67, 0),
        ]);
        let f = field("['poids brut (kg)']", "[right]");
        let p = LabelPage::new(&pg);
        let hits = p.find_labels(&f, None);
        assert_eq!(hits.len(), 1, "one slip (1 for i) is tolerated");
        assert_eq!(hits[0].edits, 0, "1 and i are one class");
        assert_eq!(texts(&p, &p.values(&hits[0], &f.value_at)), ["158 742,21"]);
    }

    #[test]
    fn a_label_inside_a_longer_word_or_spread_over_columns_is_not_a_label() {
        let pg = page(&[
            ("Containers", 0.10, 0.10, 0.20, 0),
            ("shipped", 0.21, 0.10, 0.28, 0),
            ("Gross", 0.10, 0.20, 0.15, 1),
            ("weight", 0.60, 0.20, 0.66, 1),
        ]);
        let p = LabelPage::new(&pg);
        assert!(p
            .find_labels(&field("['container']", "[right]"), None)
            .is_empty());
        assert!(p
            .find_labels(&field("['gross weight']", "[right]"), None)
            .is_empty());
    }

    #[test]
    fn rows_follow_a_skewed_page() {
        // Turned about 3°: each row descends 0.05 per unit of width, more than the gap
        // between the label's row and the next one over the label-to-value distance.
        let skewed = |x: f32, y: f32| y + 0.05 * x;
        let mut words = Vec::new();
        for (line, (label, value)) in [
            ("Invoice", "INV-7"),
            ("Date", "14.09.2024"),
            ("Terms", "CFR"),
        ]
        .into_iter()
        .enumerate()
        {
            let y = 0.30 + 0.016 * line as f32;
            words.push((label, 0.10, skewed(0.10, y), 0.18, line as u32 * 2));
            words.push((value, 0.60, skewed(0.60, y), 0.70, line as u32 * 2 + 1));
        }
        words.push(("a", 0.1, 0.1, 0.12, 9));
        words.push(("long", 0.3, 0.1 + 0.05 * 0.3, 0.35, 9));
        words.push(("line", 0.6, 0.1 + 0.05 * 0.6, 0.65, 9));
        let pg = page(&words);
        let f = field("['date']", "[right]");
        let p = LabelPage::new(&pg);
        assert!((p.slope - 0.05).abs() < 0.01, "{}", p.slope);
        let hits = p.find_labels(&f, None);
        assert_eq!(texts(&p, &p.values(&hits[0], &f.value_at)), ["14.09.2024"]);
    }

    #[test]
    fn a_label_inside_a_sentence_is_prose() {
        let pg = page(&[
            ("Please", 0.10, 0.10, 0.16, 0),
            ("quote", 0.17, 0.10, 0.22, 0),
            ("the", 0.23, 0.10, 0.26, 0),
            ("invoice", 0.27, 0.10, 0.34, 0),
            ("number", 0.35, 0.10, 0.42, 0),
            ("when", 0.43, 0.10, 0.47, 0),
            ("paying", 0.48, 0.10, 0.54, 0),
            ("Invoice", 0.10, 0.20, 0.17, 1),
            ("number", 0.18, 0.20, 0.25, 1),
            ("INV-7", 0.40, 0.20, 0.45, 1),
            ("Invoice", 0.10, 0.30, 0.17, 2),
            ("INV-8", 0.40, 0.30, 0.45, 2),
        ]);
        let p = LabelPage::new(&pg);
        let number = field("['invoice number']", "[right]");
        let hits = p.find_labels(&number, None);
        assert_eq!(
            hits.len(),
            1,
            "the sentence's `the invoice number` is not a label"
        );
        assert_eq!(texts(&p, &p.values(&hits[0], &number.value_at)), ["INV-7"]);
        let hash = field("['invoice #']", "[right]");
        assert!(
            p.find_labels(&hash, None).is_empty(),
            "`#` is part of the label"
        );
    }

    #[test]
    fn a_label_after_a_slash_ends_the_sentence_before_it() {
        // A bilingual caption: the French label in lower case, a slash, the English label.
        let pg = page(&[
            ("Numéro", 0.10, 0.10, 0.16, 0),
            ("de", 0.17, 0.10, 0.19, 0),
            ("declaration", 0.20, 0.10, 0.28, 0),
            ("/", 0.285, 0.10, 0.29, 0),
            ("Declaration", 0.295, 0.10, 0.375, 0),
            ("No.", 0.38, 0.10, 0.41, 0),
            ("25FRULRDGMZ2F3C9E4", 0.42, 0.10, 0.59, 0),
        ]);
        let p = LabelPage::new(&pg);
        let f = field("['declaration no']", "[right]");
        let hits = p.find_labels(&f, None);
        assert_eq!(hits.len(), 1);
        assert_eq!(
            texts(&p, &p.values(&hits[0], &f.value_at)),
            ["25FRULRDGMZ2F3C9E4"]
        );
        // Without the slash, `de declaration Declaration No.` reads on like a sentence.
        let mut words = pg.words.clone();
        words.remove(3);
        let pg = PageText { words, ..pg };
        assert!(LabelPage::new(&pg).find_labels(&f, None).is_empty());
    }

    #[test]
    fn a_value_far_below_or_beside_the_label_column_is_not_taken() {
        let pg = page(&[
            ("Shipper", 0.10, 0.10, 0.17, 0),
            ("ACME", 0.50, 0.14, 0.55, 1),
            ("far", 0.10, 0.30, 0.13, 2),
        ]);
        let f = field("['shipper']", "[below]");
        let p = LabelPage::new(&pg);
        let hits = p.find_labels(&f, None);
        assert!(p.values(&hits[0], &f.value_at).is_empty());
    }
}
