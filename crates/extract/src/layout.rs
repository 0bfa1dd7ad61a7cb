//! A page's text rebuilt from its words, remembering which bytes each word occupies, so a
//! pattern match on the text can be traced back to the words — and their boxes and
//! confidences — that it covers.

use std::ops::Range;

use ironclad_core::page::{BBox, PageText, Word};

use crate::workflow::Region;
use ironclad_core::fold::{fold, Folded};

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
            spans.push((push_word(&mut text, &w.text), i));
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

    /// The page as `pdftotext -layout` prints it, rebuilt from the words' boxes whatever read
    /// them (text layer or OCR): invoice2data templates are written against this text. Side by
    /// side blocks share a row and keep their columns; every kept word still maps back to its
    /// box. See [`Fragment`] for how columns and rows are found.
    pub fn columnar(page: &'p PageText) -> Self {
        let mut fragments = fragments(page);
        assign_columns(&mut fragments);
        let mut text = String::new();
        let mut spans = Vec::with_capacity(page.words.len());
        for (r, row) in rows(&fragments).iter().enumerate() {
            if r > 0 {
                text.push('\n');
                for _ in 0..row.blank_lines_before {
                    text.push('\n');
                }
            }
            let mut column = 0usize;
            for &f in &row.fragments {
                let fragment = &fragments[f];
                let pad = fragment
                    .column
                    .saturating_sub(column)
                    .max(usize::from(column > 0));
                text.extend(std::iter::repeat_n(' ', pad));
                column += pad;
                for (k, &(i, w)) in fragment.words.iter().enumerate() {
                    if k > 0 {
                        text.push(' ');
                        column += 1;
                    }
                    let span = push_word(&mut text, &w.text);
                    column += text[span.clone()].chars().count();
                    spans.push((span, i));
                }
            }
        }
        // `evidence` bisects spans by start: rows go down the page and fragments rightwards.
        let folded = fold(&text);
        PageLayout {
            page,
            text,
            spans,
            folded,
        }
    }

    /// The page these lines were laid out from.
    pub fn page(&self) -> &'p PageText {
        self.page
    }

    /// The page as read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The folded text that patterns run on.
    pub fn folded(&self) -> &Folded {
        &self.folded
    }

    /// For each line of [`Self::text`], how tall it prints against the page's typical word:
    /// the median height of its words over the median of all the page's words. About 1 for
    /// body text; a title is taller, a form's small-capital labels shorter. 1 for every line
    /// when boxes carry no height.
    pub fn line_scales(&self) -> Vec<f32> {
        let mut lines: Vec<Vec<f32>> = vec![Vec::new()];
        let mut previous_end = 0;
        for (range, i) in &self.spans {
            let newlines = self.text[previous_end..range.start].matches('\n').count();
            lines.extend(std::iter::repeat_n(Vec::new(), newlines));
            previous_end = range.end;
            let b = self.page.words[*i].bbox.normalized();
            if let Some(line) = lines.last_mut() {
                line.push(b.y1 - b.y0);
            }
        }
        let mut all: Vec<f32> = lines.iter().flatten().copied().collect();
        let page = median(&mut all);
        lines
            .iter_mut()
            .map(|h| match (median(h), page) {
                (Some(h), Some(p)) if p > 0.0 => h / p,
                _ => 1.0,
            })
            .collect()
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

/// A document's pages laid out in columns one after the other, each ended by a form feed as
/// `pdftotext -layout` prints a PDF: the text invoice2data templates run on, with the way back
/// from any range of it to its page and words.
pub(crate) struct DocumentText<'p> {
    text: String,
    /// Each page's layout and where its text starts in `text`.
    pages: Vec<(usize, PageLayout<'p>)>,
}

impl<'p> DocumentText<'p> {
    pub fn columnar(pages: &'p [PageText]) -> Self {
        let mut text = String::new();
        let mut laid_out = Vec::with_capacity(pages.len());
        for page in pages {
            let layout = PageLayout::columnar(page);
            laid_out.push((text.len(), layout));
            if let Some((_, layout)) = laid_out.last() {
                text.push_str(layout.text());
            }
            text.push_str("\n\u{c}");
        }
        DocumentText {
            text,
            pages: laid_out,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_text(self) -> String {
        self.text
    }

    /// The page a range of [`Self::text`] starts on, the words it covers there (clipped to
    /// that page) and their text as printed; `None` when it covers no word.
    pub fn evidence(&self, range: Range<usize>) -> Option<(&'p PageText, SpanEvidence, &str)> {
        let k = self
            .pages
            .partition_point(|(start, _)| *start <= range.start)
            .checked_sub(1)?;
        let (start, layout) = &self.pages[k];
        let len = layout.text().len();
        let local = (range.start - start).min(len)..range.end.saturating_sub(*start).min(len);
        let evidence = layout.evidence(local.clone())?;
        Some((layout.page, evidence, layout.text()[local].trim()))
    }
}

/// The upper median (the middle value, or the higher of the two middle ones).
pub(crate) fn median<T: Copy + PartialOrd>(values: &mut [T]) -> Option<T> {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values.get(values.len() / 2).copied()
}

/// Appends a word and returns where it went. A word never breaks a line: line structure
/// comes from the layout alone.
fn push_word(text: &mut String, word: &str) -> Range<usize> {
    let start = text.len();
    text.extend(
        word.chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c }),
    );
    start..text.len()
}

/// A word's box is about this many font sizes high (ascent plus descent).
const BOX_PER_FONT_SIZE: f64 = 1.2;
/// How far below the baseline a box reaches, in font sizes.
const DESCENT: f64 = 0.2;
/// Fragments whose baselines are closer than this many font sizes print on one row (poppler's
/// `maxIntraLineDelta`).
const SAME_ROW: f64 = 0.5;
/// Most blank lines printed for a vertical gap.
const MAX_BLANK_LINES: usize = 4;

/// One line as its reader grouped it (a text line of one block): the unit that is placed.
///
/// This follows poppler's physical layout (`pdftotext -layout`): fragments are taken
/// left to right, and each starts at the furthest column any fragment to its left implies —
/// one past its end when it ends before, or the column of its character under this fragment's
/// left edge when it reaches past it. So a value column lines up under the columns of the long
/// lines above it, and a short label's value follows it after one space when nothing longer
/// spans the gap.
struct Fragment<'w> {
    words: Vec<(usize, &'w Word)>,
    x0: f64,
    x1: f64,
    top: f64,
    baseline: f64,
    font_size: f64,
    chars: usize,
    column: usize,
    /// The reader's block (`PageText::line_blocks`), if it grouped lines into blocks.
    block: Option<u32>,
}

impl Fragment<'_> {
    /// Columns from this fragment's start to the first character whose centre lies right of
    /// `x`: characters spread over each word in proportion to their usual widths (see
    /// [`glyph_width`]), and the space between two words spanning their gap.
    fn columns_before(&self, x: f64) -> usize {
        let mut offset = 0;
        let mut previous_end: Option<f64> = None;
        for (_, w) in &self.words {
            let b = w.bbox.normalized();
            let (x0, x1) = (f64::from(b.x0), f64::from(b.x1));
            let len = w.text.chars().count();
            if x <= x0 {
                // In the gap: past the space only if past its middle.
                return match previous_end {
                    Some(end) if x < (end + x0) / 2.0 => offset - 1,
                    _ => offset,
                };
            }
            if x < x1 {
                let total: f64 = w.text.chars().map(glyph_width).sum();
                let target = (x - x0) / (x1 - x0) * total;
                let mut before = 0.0;
                let mut left_of_x = 0;
                for c in w.text.chars() {
                    let width = glyph_width(c);
                    if before + width / 2.0 >= target {
                        break;
                    }
                    before += width;
                    left_of_x += 1;
                }
                return offset + left_of_x;
            }
            offset += len + 1;
            previous_end = Some(x1);
        }
        self.chars
    }
}

/// A character's advance in Helvetica, in thousandths of the font size (its AFM metrics):
/// word boxes say where a word is, not where its letters are, and poppler places columns by
/// its letters' real edges. Sans-serif and most proportional fonts are close to these; other
/// characters count as a digit.
fn glyph_width(c: char) -> f64 {
    const ASCII: [u16; 95] = [
        278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278,
        278, // ' '../
        556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584,
        556, // 0..?
        1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722,
        778, // @..O
        667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469,
        556, // P.._
        333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556,
        556, // `..o
        556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, // p..~
    ];
    let code = u32::from(c);
    (32..127)
        .contains(&code)
        .then(|| ASCII[(code - 32) as usize])
        .map_or(556.0, f64::from)
}

/// The page's non-blank words as its reader grouped them into lines (`Word::line`), lines in
/// order and each line's words left to right: indices into `page.words`.
pub(crate) fn reader_lines(page: &PageText) -> Vec<Vec<usize>> {
    let mut by_line: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, w) in page.words.iter().enumerate() {
        if !w.text.trim().is_empty() {
            by_line.entry(w.line).or_default().push(i);
        }
    }
    let x0 = |i: usize| page.words[i].bbox.normalized().x0;
    by_line
        .into_values()
        .map(|mut words| {
            words.sort_by(|&a, &b| x0(a).total_cmp(&x0(b)));
            words
        })
        .collect()
}

fn fragments(page: &PageText) -> Vec<Fragment<'_>> {
    reader_lines(page)
        .into_iter()
        .map(|line| {
            let block = line
                .first()
                .and_then(|&i| page.line_blocks.get(page.words[i].line as usize))
                .copied();
            let words: Vec<(usize, &Word)> =
                line.into_iter().map(|i| (i, &page.words[i])).collect();
            let (mut x0, mut x1, mut top, mut bottom) = (1.0f64, 0.0f64, 1.0f64, 0.0f64);
            let mut chars = 0;
            let mut heights = Vec::with_capacity(words.len());
            for (_, w) in &words {
                let b = w.bbox.normalized();
                x0 = x0.min(f64::from(b.x0));
                x1 = x1.max(f64::from(b.x1));
                top = top.min(f64::from(b.y0));
                bottom = bottom.max(f64::from(b.y1));
                heights.push(f64::from(b.y1 - b.y0));
                chars += w.text.chars().count();
            }
            chars += words.len().saturating_sub(1);
            let height = median(&mut heights).unwrap_or(0.0);
            let font_size = (height / BOX_PER_FONT_SIZE).max(f64::EPSILON);
            Fragment {
                words,
                x0,
                x1,
                top,
                baseline: bottom - DESCENT * font_size,
                font_size,
                chars,
                column: 0,
                block,
            }
        })
        .collect()
}

/// Gives each fragment its column, as poppler does: within each of the reader's blocks line
/// by line (see [`Fragment`]), then each block as a whole (see [`place_blocks`]). Without
/// blocks (OCR), the page is one block.
fn assign_columns(fragments: &mut [Fragment<'_>]) {
    let mut blocks: std::collections::BTreeMap<Option<u32>, Vec<usize>> = Default::default();
    let whole_page = fragments.iter().any(|f| f.block.is_none());
    for (i, f) in fragments.iter().enumerate() {
        blocks
            .entry(if whole_page { None } else { f.block })
            .or_default()
            .push(i);
    }
    let blocks: Vec<Vec<usize>> = blocks.into_values().collect();
    for members in &blocks {
        assign_within_block(fragments, members);
    }
    place_blocks(fragments, &blocks);
}

/// Columns of a block's lines relative to the block (poppler's `TextBlock::coalesce`).
fn assign_within_block(fragments: &mut [Fragment<'_>], members: &[usize]) {
    let x0s: Vec<f64> = members.iter().map(|&i| fragments[i].x0).collect();
    let columns = left_to_right(&x0s, |j, column, x| {
        let left = &fragments[members[j]];
        if x >= left.x1 {
            column + left.chars + 1
        } else {
            column + left.columns_before(x)
        }
    });
    for (&i, column) in members.iter().zip(columns) {
        fragments[i].column = column;
    }
}

/// Shifts each block to its column (poppler's `TextPage::coalesce`, physical layout): blocks
/// taken left to right, each starting at the furthest column a block to its left implies —
/// three past its last column when it ends before, else as far into it as its left edge lies
/// in proportion to its width (truncated). Proportion, not letters: that is what places
/// `pdftotext -layout`'s columns, and templates count its spaces.
fn place_blocks(fragments: &mut [Fragment<'_>], blocks: &[Vec<usize>]) {
    if blocks.len() < 2 {
        return;
    }
    // Each block's left and right edges and its width in columns.
    let extents: Vec<(f64, f64, usize)> = blocks
        .iter()
        .map(|members| {
            let f = || members.iter().map(|&i| &fragments[i]);
            (
                f().map(|f| f.x0).fold(f64::MAX, f64::min),
                f().map(|f| f.x1).fold(f64::MIN, f64::max),
                f().map(|f| f.column + f.chars).max().unwrap_or(0),
            )
        })
        .collect();
    let x0s: Vec<f64> = extents.iter().map(|e| e.0).collect();
    let columns = left_to_right(&x0s, |j, column, x| {
        let (x0, x1, width) = extents[j];
        if x > x1 {
            column + width + 3
        } else if x1 <= x0 {
            column
        } else {
            column + ((x - x0) / (x1 - x0) * width as f64) as usize
        }
    });
    for (members, column) in blocks.iter().zip(columns) {
        for &i in members {
            fragments[i].column += column;
        }
    }
}

/// Poppler's column assignment, at both levels: items taken by their left edges `x0s`, left
/// to right, each starting at the furthest column an item to its left implies —
/// `implied(left, left's column, this item's x0)`. Columns in the items' order.
fn left_to_right(x0s: &[f64], implied: impl Fn(usize, usize, f64) -> usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..x0s.len()).collect();
    order.sort_by(|&a, &b| x0s[a].total_cmp(&x0s[b]));
    let mut columns = vec![0; x0s.len()];
    for (k, &i) in order.iter().enumerate() {
        columns[i] = order[..k]
            .iter()
            .map(|&j| implied(j, columns[j], x0s[i]))
            .max()
            .unwrap_or(0);
    }
    columns
}

/// One printed row: fragments (indices) left to right, and the blank lines above it.
struct Row {
    fragments: Vec<usize>,
    blank_lines_before: usize,
}

/// Fragments top to bottom; those whose baselines lie within [`SAME_ROW`] font sizes of a
/// row's first fragment share its row.
fn rows(fragments: &[Fragment<'_>]) -> Vec<Row> {
    let mut order: Vec<usize> = (0..fragments.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&fragments[a], &fragments[b]);
        a.top.total_cmp(&b.top).then(a.x0.total_cmp(&b.x0))
    });
    let mut rows: Vec<Row> = Vec::new();
    let mut first: Option<usize> = None;
    for i in order {
        let f = &fragments[i];
        match first.map(|h| &fragments[h]) {
            Some(head) if (f.baseline - head.baseline).abs() < SAME_ROW * head.font_size => {
                if let Some(row) = rows.last_mut() {
                    row.fragments.push(i);
                }
            }
            previous => {
                let blank_lines_before = previous.map_or(0, |p| {
                    let lines = (f.baseline - p.baseline) / p.font_size / 1.5;
                    (lines.floor().max(1.0) as usize - 1).min(MAX_BLANK_LINES)
                });
                rows.push(Row {
                    fragments: vec![i],
                    blank_lines_before,
                });
                first = Some(i);
            }
        }
    }
    for row in &mut rows {
        row.fragments.sort_by_key(|&i| fragments[i].column);
    }
    rows
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
            line_blocks: Vec::new(),
            index: 0,
            method: ReadMethod::TextLayer,
            confidence,
            rotation: 0,
            size_pt: None,
            words,
        }
    }

    /// A page of words placed by hand: (text, x0, y0, x1, reader line), each 0.012 high and
    /// read with `confidence`.
    pub(crate) fn placed_page(words: &[(&str, f32, f32, f32, u32)], confidence: f32) -> PageText {
        let mut page = grid_page(&[], confidence);
        page.words = words
            .iter()
            .map(|&(text, x0, y0, x1, line)| Word {
                text: text.into(),
                bbox: BBox {
                    x0,
                    y0,
                    x1,
                    y1: y0 + 0.012,
                },
                confidence,
                line,
            })
            .collect();
        page
    }

    #[test]
    fn columns_inside_a_word_follow_its_letters_widths() {
        // `illWWW` over 0..1: the narrow letters take a sixth of it, not half.
        let mut page = grid_page(&["illWWW"], 1.0);
        page.words[0].bbox.x1 = 1.0;
        let fragments = fragments(&page);
        assert_eq!(fragments[0].columns_before(0.3), 3, "past i, l, l");
        assert_eq!(fragments[0].columns_before(0.1), 2);
        assert_eq!(fragments[0].columns_before(0.99), 6);
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

    fn word(text: &str, x0: f32, y0: f32, line: u32) -> Word {
        Word {
            text: text.to_owned(),
            // 0.01 of the page per character, 0.015 high.
            bbox: BBox {
                x0,
                y0,
                x1: x0 + 0.01 * text.chars().count() as f32,
                y1: y0 + 0.015,
            },
            confidence: 0.9,
            line,
        }
    }

    fn page_of(words: Vec<Word>) -> PageText {
        PageText {
            line_blocks: Vec::new(),
            index: 0,
            method: ReadMethod::TextLayer,
            confidence: 1.0,
            rotation: 0,
            size_pt: None,
            words,
        }
    }

    #[test]
    fn columnar_text_puts_side_by_side_blocks_on_one_row() {
        // Two blocks read one after the other (a text layer's order): labels, then values to
        // their right. Nothing longer spans the gap, so a value follows its label after one
        // space, as `pdftotext -layout` prints it.
        let page = page_of(vec![
            word("Invoice", 0.0, 0.10, 0),
            word("Date", 0.0, 0.12, 1),
            word("42", 0.30, 0.10, 2),
            word("2024-05-01", 0.30, 0.12, 3),
            word("Total", 0.0, 0.30, 4),
            word("10.00", 0.30, 0.301, 4),
        ]);
        let layout = PageLayout::columnar(&page);
        assert_eq!(
            layout.text(),
            "Invoice 42\nDate    2024-05-01\n\n\n\n\nTotal 10.00"
        );
        // Every word still maps back to its own box.
        let at = layout.text().find("2024-05-01").unwrap();
        let ev = layout.evidence(at..at + 10).unwrap();
        assert_eq!(ev.bbox, page.words[3].bbox.normalized());
        let at = layout.text().find("Total").unwrap();
        assert_eq!(
            layout.evidence(at..at + 5).unwrap().bbox,
            page.words[4].bbox.normalized()
        );
    }

    #[test]
    fn a_value_lines_up_under_the_long_line_that_spans_its_gap() {
        let page = page_of(vec![
            word("aaaa", 0.0, 0.10, 0),
            word("bbbb", 0.3, 0.10, 0),
            word("cccc", 0.5, 0.10, 0),
            word("dddd", 0.6, 0.10, 0),
            word("Total", 0.0, 0.12, 1),
            word("4.11", 0.6, 0.12, 2),
        ]);
        assert_eq!(
            PageLayout::columnar(&page).text(),
            format!("aaaa bbbb cccc dddd\nTotal{}4.11", " ".repeat(10))
        );
    }

    #[test]
    fn blocks_are_placed_in_proportion_to_the_blocks_left_of_them() {
        // AWS's invoice: a heading and a footnote block at the left margin, a line item
        // indented under the heading. Poppler places the item's block by proportion of each
        // block to its left: the heading says 2 (0.02 of its 0.03, 3 columns), the wide
        // footnote 4 (0.02 of its 0.29, 60 columns). It prints 4 spaces, which the template's
        // `^    (?P<name>…)` needs. By letters, the footnote's wide `W`s put the item at 1.
        let mut footnote = word(
            &format!("{}{}", "W".repeat(10), "i".repeat(50)),
            0.0,
            0.30,
            2,
        );
        footnote.bbox.x1 = 0.29;
        let mut page = page_of(vec![
            word("Det", 0.0, 0.10, 0),
            word("AWS", 0.02, 0.12, 1),
            word("Transfer", 0.06, 0.12, 1),
            footnote,
        ]);
        page.line_blocks = vec![0, 1, 2];
        let blocks = PageLayout::columnar(&page).text().to_owned();
        assert_eq!(blocks.lines().nth(1), Some("    AWS Transfer"), "{blocks}");
        // Without blocks (OCR), the page is one block and letters place the item.
        page.line_blocks.clear();
        let letters = PageLayout::columnar(&page).text().to_owned();
        assert_eq!(letters.lines().nth(1), Some("  AWS Transfer"), "{letters}");
    }

    #[test]
    fn columnar_text_of_touching_words_keeps_one_space() {
        let page = page_of(vec![word("ab", 0.10, 0.1, 0), word("cd", 0.105, 0.1, 0)]);
        assert_eq!(PageLayout::columnar(&page).text(), "ab cd");
        assert_eq!(PageLayout::columnar(&page_of(Vec::new())).text(), "");
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
