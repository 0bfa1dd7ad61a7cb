//! Text the page's reading left out: ink where no word was read.
//!
//! Tesseract's layout analysis sometimes drops whole lines: on a speckled 200-DPI fax it left
//! out `Number of packages: 790 CARTONS` and the row `Chennai, 24 February 2024`, printed as
//! clearly as the lines around them (the same page read again as a block gives both). A field
//! whose label was never read gives the second look nothing to go on, so the page itself is
//! checked: its ink, less the words' boxes, table rules and specks, is cut into cells one
//! text line square; cells dense with ink are text, and each group of them is read again
//! alone, as a line or a block (`second_look::read_crops`). A page whose every line was read
//! has no such group and costs one pass over its pixels.

use crate::gray::Gray;
use crate::second_look::{Crop, CropMode};
use ironclad_core::page::{BBox, Word};

/// Least share of a cell's pixels that are uncovered ink for the cell to hold text (a line of
/// body text inks 12–25 % of a square one line tall; a fax's speckle well under 2 %).
const MIN_INK_SHARE: f64 = 0.07;
/// Fewest cells of a group: shorter is a stray mark, a digit of a page number, a logo's edge.
const MIN_GROUP_CELLS: usize = 3;
/// A run of ink longer than this many text heights is a rule, not a glyph.
const RULE_HEIGHTS: usize = 3;
/// Most lines a group may span and still be text read again (taller is a picture, a logo).
const MAX_GROUP_LINES: usize = 6;
/// Most groups read again on one page (each costs a crop's recognition).
pub(crate) const MAX_GROUPS: usize = 12;
/// Margin kept around each word's box, in text heights: the glyphs' edges and accents.
const WORD_MARGIN: f64 = 0.3;

/// The regions of `img` holding text that no word of `words` covers, as crops in `img`'s
/// normalized frame, given the page's body text height in pixels.
pub(crate) fn unread_regions(img: &Gray, words: &[BBox], text_px: f64) -> Vec<Crop> {
    let (w, h) = (img.width as usize, img.height as usize);
    let cell = text_px.round() as usize;
    if cell < 4 || w < cell * 4 || h < cell * 4 {
        return Vec::new();
    }
    let Some(threshold) = crate::gray::otsu(&img.pixels) else {
        return Vec::new();
    };
    let mut ink: Vec<bool> = img.pixels.iter().map(|&p| p <= threshold).collect();
    // Rules: runs of ink longer than a few text heights, across or down.
    let rules = long_runs(&ink, w, h, RULE_HEIGHTS * cell);
    for (i, r) in rules.iter().enumerate() {
        if *r {
            ink[i] = false;
        }
    }
    // The words' boxes, with a margin.
    let margin = (WORD_MARGIN * text_px).round() as usize;
    for b in words {
        let b = b.normalized();
        let px = |v: f32, n: usize| ((v.clamp(0.0, 1.0) * n as f32).round() as usize).min(n);
        let (x0, x1) = (
            px(b.x0, w).saturating_sub(margin),
            (px(b.x1, w) + margin).min(w),
        );
        let (y0, y1) = (
            px(b.y0, h).saturating_sub(margin),
            (px(b.y1, h) + margin).min(h),
        );
        for y in y0..y1 {
            ink[y * w + x0..y * w + x1].fill(false);
        }
    }
    let (cw, ch) = (w.div_ceil(cell), h.div_ceil(cell));
    let mut counts = vec![0usize; cw * ch];
    for y in 0..h {
        for x in 0..w {
            if ink[y * w + x] {
                counts[(y / cell) * cw + x / cell] += 1;
            }
        }
    }
    let dense: Vec<bool> = counts
        .iter()
        .map(|&c| c as f64 >= MIN_INK_SHARE * (cell * cell) as f64)
        .collect();
    let mut crops = Vec::new();
    let groups = crate::gray::cell_groups(&dense, cw, ch)
        .into_iter()
        .map(|g| (g.bbox.0, g.bbox.1, g.bbox.2, g.bbox.3, g.cells.len()))
        .collect();
    for (x0, y0, x1, y1, n) in rows_joined(groups) {
        let lines = y1 + 1 - y0;
        if n < MIN_GROUP_CELLS || x1 + 1 - x0 < MIN_GROUP_CELLS || lines > MAX_GROUP_LINES {
            continue;
        }
        // Half a cell around the group: a line's ascenders and the edges of its first and
        // last glyphs may sit in cells that were not dense.
        let half = cell / 2;
        let bbox = BBox {
            x0: ((x0 * cell).saturating_sub(half)) as f32 / w as f32,
            y0: ((y0 * cell).saturating_sub(half)) as f32 / h as f32,
            x1: (((x1 + 1) * cell + half).min(w)) as f32 / w as f32,
            y1: (((y1 + 1) * cell + half).min(h)) as f32 / h as f32,
        };
        crops.push(Crop {
            bbox,
            mode: if lines <= 2 {
                CropMode::Line
            } else {
                CropMode::Block
            },
            line_height: (text_px / h as f64) as f32,
        });
        if crops.len() == MAX_GROUPS {
            break;
        }
    }
    crops
}

/// Adds the words read again (one list per region) to the page's, each region's lines after
/// the page's last line; a word mostly inside one already read (a region's margin reaching a
/// line that was read) is left out. Returns how many were added.
pub(crate) fn merge(words: &mut Vec<Word>, found: Vec<Vec<Word>>) -> usize {
    let mut next_line = words.iter().map(|w| w.line + 1).max().unwrap_or(0);
    let read: Vec<BBox> = words.iter().map(|w| w.bbox.normalized()).collect();
    let mut added = 0;
    for region in found {
        let base = next_line;
        for mut w in region {
            let b = w.bbox.normalized();
            let area = (b.x1 - b.x0).max(0.0) * (b.y1 - b.y0).max(0.0);
            let overlapped = read.iter().any(|r| {
                let ix = (b.x1.min(r.x1) - b.x0.max(r.x0)).max(0.0);
                let iy = (b.y1.min(r.y1) - b.y0.max(r.y0)).max(0.0);
                ix * iy > 0.5 * area
            });
            if overlapped || w.text.trim().is_empty() {
                continue;
            }
            w.line += base;
            next_line = next_line.max(w.line + 1);
            words.push(w);
            added += 1;
        }
    }
    added
}

/// The pixels of `ink` (a page `w` × `h`) in a run longer than `longest` along a row or down a
/// column. Both passes go through the page row by row: a pass down the columns one at a time
/// touches a new cache line at every pixel, and cost more than the rest of this module.
fn long_runs(ink: &[bool], w: usize, h: usize, longest: usize) -> Vec<bool> {
    let mut rule = vec![false; w * h];
    for y in 0..h {
        let row = &ink[y * w..(y + 1) * w];
        let mut start = 0;
        for x in 0..=w {
            if x < w && row[x] {
                continue;
            }
            if x - start > longest {
                rule[y * w + start..y * w + x].fill(true);
            }
            start = x + 1;
        }
    }
    // How many pixels of ink end at the current row, for each column.
    let mut down = vec![0usize; w];
    for y in 0..=h {
        for (x, run) in down.iter_mut().enumerate() {
            if y < h && ink[y * w + x] {
                *run += 1;
                continue;
            }
            if *run > longest {
                for r in y - *run..y {
                    rule[r * w + x] = true;
                }
            }
            *run = 0;
        }
    }
    rule
}

/// Most cells between two groups on the same rows for them to be one line (`Number of
/// packages:` and `790 CARTONS`, a word gap or two apart).
const JOIN_GAP_CELLS: usize = 3;

/// `groups` with those sharing a row and at most [`JOIN_GAP_CELLS`] apart joined, so a line
/// is read whole; top to bottom, then left to right.
fn rows_joined(
    mut groups: Vec<(usize, usize, usize, usize, usize)>,
) -> Vec<(usize, usize, usize, usize, usize)> {
    groups.sort_by_key(|g| (g.1, g.0));
    let mut out: Vec<(usize, usize, usize, usize, usize)> = Vec::new();
    for g in groups {
        let near = out.iter_mut().find(|o| {
            let rows_shared = g.1 <= o.3 && o.1 <= g.3;
            let gap = if g.0 > o.2 {
                g.0 - o.2 - 1
            } else {
                o.0.saturating_sub(g.2 + 1)
            };
            rows_shared && gap <= JOIN_GAP_CELLS
        });
        match near {
            Some(o) => {
                *o = (
                    o.0.min(g.0),
                    o.1.min(g.1),
                    o.2.max(g.2),
                    o.3.max(g.3),
                    o.4 + g.4,
                )
            }
            None => out.push(g),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A white 800 × 600 page with "text" lines (20 px tall, glyphs 8 px wide every 12 px)
    /// from x 100 to 500 at each of `lines`' tops, a table rule across it and speckle.
    fn page(lines: &[usize]) -> Gray {
        let (w, h) = (800usize, 600usize);
        let mut px = vec![255u8; w * h];
        for &top in lines {
            for y in top..top + 20 {
                for x in 100..500 {
                    if x % 12 < 3 || (y - top) % 10 < 2 && x % 12 < 8 {
                        px[y * w + x] = 0;
                    }
                }
            }
        }
        // A rule across the page and one down it.
        px[550 * w..551 * w].fill(0);
        for y in 0..h {
            px[y * w + 700] = 0;
        }
        // Speckle: an isolated pixel every 37 pixels.
        for i in (0..w * h).step_by(37) {
            px[i] = 0;
        }
        Gray::new(w as u32, h as u32, px).expect("a page")
    }

    fn word_box(top: usize) -> BBox {
        BBox {
            x0: 100.0 / 800.0,
            y0: top as f32 / 600.0,
            x1: 500.0 / 800.0,
            y1: (top + 20) as f32 / 600.0,
        }
    }

    #[test]
    fn a_line_no_word_covers_is_found_and_nothing_else() {
        let img = page(&[100, 200, 300]);
        // The reading gave the first and third lines.
        let crops = unread_regions(&img, &[word_box(100), word_box(300)], 20.0);
        assert_eq!(crops.len(), 1, "{crops:?}");
        let c = &crops[0];
        assert_eq!(c.mode, CropMode::Line);
        // It holds the missing line, and neither read line.
        assert!(
            c.bbox.y0 * 600.0 <= 200.0 && c.bbox.y1 * 600.0 >= 220.0,
            "{c:?}"
        );
        assert!(
            c.bbox.y0 * 600.0 > 120.0 && c.bbox.y1 * 600.0 < 300.0,
            "{c:?}"
        );
        assert!(
            c.bbox.x0 * 800.0 <= 100.0 && c.bbox.x1 * 800.0 >= 500.0,
            "{c:?}"
        );
    }

    fn word(text: &str, bbox: BBox, line: u32) -> Word {
        Word {
            text: text.into(),
            bbox,
            confidence: 0.9,
            line,
        }
    }

    #[test]
    fn words_read_again_follow_the_pages_lines_and_never_repeat_one() {
        let mut words = vec![
            word("Container", word_box(100), 0),
            word("Gross", word_box(300), 1),
        ];
        let again = vec![
            vec![
                word("packages:", word_box(200), 0),
                word("790", word_box(202), 0),
            ],
            // A region's margin reached the line read first: that word is not added twice.
            vec![word("Gross", word_box(301), 0), word("", word_box(400), 0)],
        ];
        assert_eq!(merge(&mut words, again), 2);
        let texts: Vec<(&str, u32)> = words.iter().map(|w| (w.text.as_str(), w.line)).collect();
        assert_eq!(
            texts,
            [("Container", 0), ("Gross", 1), ("packages:", 2), ("790", 2)]
        );
    }

    #[test]
    fn runs_longer_than_the_limit_are_rules_across_and_down() {
        // 6 × 5: a run of 4 across row 1, of 3 across row 3, of 5 down column 5.
        let (w, h) = (6, 5);
        let mut ink = vec![false; w * h];
        for x in 1..5 {
            ink[w + x] = true;
        }
        for x in 0..3 {
            ink[3 * w + x] = true;
        }
        for y in 0..5 {
            ink[y * w + 5] = true;
        }
        let rules = long_runs(&ink, w, h, 3);
        let marked: Vec<(usize, usize)> = (0..w * h)
            .filter(|&i| rules[i])
            .map(|i| (i % w, i / w))
            .collect();
        assert_eq!(
            marked,
            [
                (5, 0),
                (1, 1),
                (2, 1),
                (3, 1),
                (4, 1),
                (5, 1),
                (5, 2),
                (5, 3),
                (5, 4)
            ]
        );
    }

    #[test]
    fn a_page_read_whole_has_no_unread_text() {
        let img = page(&[100, 200, 300]);
        let words = [word_box(100), word_box(200), word_box(300)];
        assert!(unread_regions(&img, &words, 20.0).is_empty());
        // Rules and speckle alone are not text.
        assert!(unread_regions(&page(&[]), &[], 20.0).is_empty());
    }
}
