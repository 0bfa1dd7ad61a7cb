//! Fading a rubber stamp's grey ink out of the text it was pressed over.
//!
//! A RECEIVED stamp on a scan is a ring and large letters in mid-grey ink; printed text is
//! black. Where a stamp crosses a value, one threshold for the page keeps both, and Tesseract
//! reads `SBE-24-C` for `SBE-24-0751`. Telling them apart by grey level alone would also
//! thin every glyph, whose anti-aliased edges are mid-grey too; but those edges touch the
//! glyph's black core, and a stamp's ink mostly does not. So: mid-grey pixels with no dark
//! pixel within [`NEAR_PX`] are *lone*; tiles dense with lone pixels, grouped, are a stamp
//! when the group is large in both directions (a ring, not a line of grey text); and inside a
//! stamp's groups every lone pixel becomes paper. Glyphs, cores and edges, stay as scanned.

use crate::gray::Gray;

/// Darker than this is a glyph's core (black text scans at 20–80; a grey stamp at 120–170).
const DARK: u8 = 100;
/// From this on, a pixel is paper.
const PAPER: u8 = 200;
/// A mid-grey pixel this close to a dark one is a glyph's edge, not a stamp's ink.
const NEAR_PX: usize = 2;
/// Tiles per page side, about (the tile is a square of the longer side over this).
const TILES_PER_SIDE: usize = 64;
/// Least share of a tile's pixels that are lone for the tile to hold stamp ink (a ring's
/// segment fills 15–25 % of its tile, a thin grey table rule or small grey caption 4–12 %).
const MIN_LONE_SHARE: f64 = 0.15;
/// Least extent of a stamp, in tiles, across and down (at 200 DPI a tile is about 0.18
/// inch: a stamp of an inch spans 5 or more; a line of grey text spans 1 or 2 down).
const MIN_SPAN_TILES: usize = 3;
/// Most a stamp's group may be longer one way than the other: a stamp is round or a short
/// box; a group that runs along a row joined a line of small grey captions.
const MAX_ASPECT: usize = 3;
/// Most a stamp may span, as a share of the page's tiles across (a RECEIVED stamp is an inch
/// or two on a sheet eight wide).
const MAX_SPAN_SHARE: f64 = 0.4;
/// Least share of a page's ink that is dark for its grey to be told apart at all (a soft
/// photo's text is mid-grey throughout).
const MIN_DARK_SHARE: f64 = 0.2;
/// Least body text height, in pixels, for a glyph's strokes to have a dark core at all: under
/// it (small type on a screen-resolution page) a stroke is one or two pixels of anti-aliased
/// grey, and a faint hyphen looks like a stamp's lone ink.
const MIN_TEXT_PX: f64 = 16.0;
/// Least extent, in body text heights, of one connected stroke of lone grey ink for a group
/// to be a stamp: a ring's arc runs for inches, a grey glyph for one height. Text lines cut
/// a ring into arcs, so the stroke need only be as long as this one way, and
/// [`ARC_WIDTH_SHARE`] times less the other (measured on the hard set's 23 stamped pages:
/// the longest arc of each stamp 135–357 px by 43–310 at 19–21 px text).
const ARC_TEXT_HEIGHTS: f64 = 2.5;
/// How many times shorter than long an arc may be across (a straight grey rule is 2–4 px).
const ARC_WIDTH_SHARE: usize = 3;

/// Fades the page's stamps; whether it found any.
pub(super) fn fade(img: &mut Gray) -> bool {
    let text_px = crate::text_height::body_text_height(img);
    tracing::debug!(?text_px, "stamp survey");
    if !text_px.is_some_and(|h| h >= MIN_TEXT_PX) {
        return false;
    }
    let (w, h) = (img.width as usize, img.height as usize);
    let tile = (w.max(h) / TILES_PER_SIDE).max(8);
    if w < tile * MIN_SPAN_TILES || h < tile * MIN_SPAN_TILES {
        return false;
    }
    let px = &img.pixels;
    let dark_count = px.iter().filter(|&&p| p < DARK).count();
    let ink_count = px.iter().filter(|&&p| p < PAPER).count();
    if ink_count == dark_count || (dark_count as f64) < MIN_DARK_SHARE * ink_count as f64 {
        return false;
    }
    let near = near_dark(px, w, h);
    let lone = |i: usize| (DARK..PAPER).contains(&px[i]) && !near[i];
    let (tw, th) = (w.div_ceil(tile), h.div_ceil(tile));
    let mut counts = vec![0usize; tw * th];
    for y in 0..h {
        for x in 0..w {
            if lone(y * w + x) {
                counts[(y / tile) * tw + x / tile] += 1;
            }
        }
    }
    let dense: Vec<bool> = counts
        .iter()
        .map(|&c| c as f64 >= MIN_LONE_SHARE * (tile * tile) as f64)
        .collect();
    // A stamp's ring (or frame) is one stroke of grey ink running several text heights both
    // ways; a block of grey type is many glyph-sized strokes, and is left as printed.
    let min_stroke = (ARC_TEXT_HEIGHTS * text_px.unwrap_or(MIN_TEXT_PX)).round() as usize;
    let stamps: Vec<Vec<usize>> = large_groups(&dense, tw, th)
        .into_iter()
        .filter(|group| {
            let tiles = group.iter().map(|&t| (t % tw, t / tw));
            let (x0, y0, x1, y1) = tiles.fold((usize::MAX, usize::MAX, 0, 0), |b, (x, y)| {
                (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y))
            });
            let region = (
                x0 * tile,
                y0 * tile,
                ((x1 + 1) * tile).min(w),
                ((y1 + 1) * tile).min(h),
            );
            holds_a_long_stroke(&lone, w, region, min_stroke)
        })
        .collect();
    if stamps.is_empty() {
        return false;
    }
    // The stamps' tiles and one tile around them: a ring's edge may fill less of a tile
    // than the threshold.
    let mut faded = vec![false; tw * th];
    for group in &stamps {
        for &t in group {
            let (tx, ty) = (t % tw, t / tw);
            for ny in ty.saturating_sub(1)..=(ty + 1).min(th - 1) {
                for nx in tx.saturating_sub(1)..=(tx + 1).min(tw - 1) {
                    faded[ny * tw + nx] = true;
                }
            }
        }
    }
    let ink: Vec<usize> = (0..w * h)
        .filter(|&i| faded[(i / w / tile) * tw + (i % w) / tile] && lone(i))
        .collect();
    for i in ink {
        img.pixels[i] = 255;
    }
    tracing::debug!(stamps = stamps.len(), "stamp ink faded");
    true
}

/// Whether the pixels of `region` (x0, y0, x1, y1 in a page `w` wide) for which `lone`
/// holds include one 8-connected stroke at least `min_span` pixels long one way and a
/// [`ARC_WIDTH_SHARE`]th of that the other (an arc, not a straight grey rule).
fn holds_a_long_stroke(
    lone: &impl Fn(usize) -> bool,
    w: usize,
    region: (usize, usize, usize, usize),
    min_span: usize,
) -> bool {
    let (x0, y0, x1, y1) = region;
    let (rw, rh) = (x1.saturating_sub(x0), y1.saturating_sub(y0));
    if rw.max(rh) < min_span {
        return false;
    }
    let mask: Vec<bool> = (0..rw * rh)
        .map(|i| lone((y0 + i / rw) * w + x0 + i % rw))
        .collect();
    crate::gray::cell_groups(&mask, rw, rh).iter().any(|g| {
        let (gx0, gy0, gx1, gy1) = g.bbox;
        let (across, down) = (gx1 + 1 - gx0, gy1 + 1 - gy0);
        across.max(down) >= min_span && across.min(down) >= min_span / ARC_WIDTH_SHARE
    })
}

/// For each pixel, whether a dark pixel lies within [`NEAR_PX`] of it (a square
/// neighbourhood: a max filter along the rows, then along the columns).
fn near_dark(px: &[u8], w: usize, h: usize) -> Vec<bool> {
    let mut rows = vec![false; w * h];
    for y in 0..h {
        let row = &px[y * w..(y + 1) * w];
        let mut last_dark: Option<usize> = None;
        // Left to right marks pixels after a dark one; right to left, those before.
        for x in 0..w {
            if row[x] < DARK {
                last_dark = Some(x);
            }
            rows[y * w + x] = last_dark.is_some_and(|d| x - d <= NEAR_PX);
        }
        last_dark = None;
        for x in (0..w).rev() {
            if row[x] < DARK {
                last_dark = Some(x);
            }
            if last_dark.is_some_and(|d| d - x <= NEAR_PX) {
                rows[y * w + x] = true;
            }
        }
    }
    // Down the columns, row by row (a pass one column at a time misses the cache at every
    // pixel): the last row with a dark pixel above, then the next one below.
    let mut out = vec![false; w * h];
    let mut nearest = vec![usize::MAX; w];
    for y in 0..h {
        for x in 0..w {
            if rows[y * w + x] {
                nearest[x] = y;
            }
            out[y * w + x] = nearest[x] != usize::MAX && y - nearest[x] <= NEAR_PX;
        }
    }
    nearest.fill(usize::MAX);
    for y in (0..h).rev() {
        for x in 0..w {
            if rows[y * w + x] {
                nearest[x] = y;
            }
            if nearest[x] != usize::MAX && nearest[x] - y <= NEAR_PX {
                out[y * w + x] = true;
            }
        }
    }
    out
}

/// The tiles of each group of touching dense tiles shaped like a stamp: at least
/// [`MIN_SPAN_TILES`] both across and down, at most [`MAX_SPAN_SHARE`] of the page across,
/// and no more than [`MAX_ASPECT`] times longer one way than the other.
fn large_groups(dense: &[bool], tw: usize, th: usize) -> Vec<Vec<usize>> {
    crate::gray::cell_groups(dense, tw, th)
        .into_iter()
        .filter_map(|g| {
            let (x0, y0, x1, y1) = g.bbox;
            let (across, down) = (x1 + 1 - x0, y1 + 1 - y0);
            tracing::trace!(
                x0,
                y0,
                across,
                down,
                tiles = g.cells.len(),
                "grey ink group"
            );
            (across.min(down) >= MIN_SPAN_TILES
                && across.max(down) <= MAX_ASPECT * across.min(down)
                && across as f64 <= MAX_SPAN_SHARE * tw as f64)
                .then_some(g.cells)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A white page of 640 × 640 with black text bars 20 px tall (cores at 30, edges at 150)
    /// along rows on its left side, and optionally a grey ring (ink at 140) of radius 100
    /// centred on the text's right edge, half over the text.
    fn page(ring: bool) -> Gray {
        let (w, h) = (640usize, 640usize);
        let mut px = vec![250u8; w * h];
        for line in 0..12 {
            let y = 40 + line * 48;
            for x in 40..400 {
                // A glyph every 14 px: a 6-px core with a 1-px grey edge each side.
                let k = x % 14;
                for dy in 0..20 {
                    let i = (y + dy) * w + x;
                    px[i] = match k {
                        1..=6 => 30,
                        0 | 7 => 150,
                        _ => px[i],
                    };
                }
            }
        }
        if ring {
            let (cx, cy) = (400.0f64, 300.0f64);
            for y in 0..h {
                for x in 0..w {
                    let r = (x as f64 - cx).hypot(y as f64 - cy);
                    if (r - 100.0).abs() <= 4.0 && px[y * w + x] > 200 {
                        px[y * w + x] = 140;
                    }
                }
            }
        }
        Gray::new(w as u32, h as u32, px).expect("a page")
    }

    #[test]
    fn a_grey_ring_over_text_fades_and_the_text_stays() {
        let mut img = page(true);
        assert!(fade(&mut img));
        let clean = page(false);
        // Every pixel of the text, cores and grey edges, is as it was; the ring is paper.
        for (i, (&got, &want)) in img.pixels.iter().zip(&clean.pixels).enumerate() {
            if want < PAPER {
                assert_eq!(got, want, "text pixel {i}");
            }
        }
        // The ring is paper wherever it does not touch a glyph.
        let near = near_dark(&clean.pixels, 640, 640);
        let stamped = page(true);
        let ring: Vec<usize> = (0..stamped.pixels.len())
            .filter(|&i| stamped.pixels[i] == 140)
            .collect();
        let apart = ring.iter().filter(|&&i| !near[i]).count();
        assert!(
            apart * 2 > ring.len(),
            "most of the ring is apart from text"
        );
        // Beside the text most of the ring is paper (short arcs cut off between text lines,
        // in tile groups of their own too small for a stamp, may stay: 78 % faded here);
        // where it touches a glyph it stays (the glyph's edge is not told apart).
        let faded = ring
            .iter()
            .filter(|&&i| !near[i] && img.pixels[i] == 255)
            .count();
        assert!(
            faded * 4 >= apart * 3,
            "{faded} of {apart} ring pixels faded"
        );
        assert!(ring.iter().all(|&i| !near[i] || img.pixels[i] == 140));
    }

    #[test]
    fn a_block_of_grey_type_is_not_a_stamp() {
        // Dark text above, and below it a compact block of grey glyphs (each its own stroke,
        // 10 × 20 px, in lines) where no dark ink is near: as dense as a stamp's tiles, but
        // no stroke runs for several text heights.
        let mut img = page(false);
        let w = 640usize;
        for p in &mut img.pixels[w * 330..] {
            *p = 250;
        }
        for line in 0..7 {
            for glyph in 0..16 {
                let (gx, gy) = (150 + glyph * 16, 350 + line * 36);
                for y in gy..gy + 20 {
                    for x in gx..gx + 10 {
                        img.pixels[y * w + x] = 140;
                    }
                }
            }
        }
        let before = img.pixels.clone();
        assert!(!fade(&mut img));
        assert_eq!(img.pixels, before);
    }

    #[test]
    fn small_type_is_never_faded() {
        // The ring page at a third of its size: text 7 px tall has no dark core to tell a
        // glyph's grey edge from a stamp's ink (Flipkart's invoice lost a hyphen so).
        let big = page(true);
        let (w, h) = (213usize, 213usize);
        let px = (0..w * h)
            .map(|i| big.pixels[(i / w) * 3 * 640 + (i % w) * 3])
            .collect();
        let mut img = Gray::new(w as u32, h as u32, px).expect("a page");
        let before = img.pixels.clone();
        assert!(!fade(&mut img));
        assert_eq!(img.pixels, before);
    }

    #[test]
    fn a_page_without_a_stamp_is_left_alone() {
        let mut img = page(false);
        assert!(!fade(&mut img));
        assert_eq!(img.pixels, page(false).pixels);
        // Grey text alone (no dark ink on the page): nothing to tell it from.
        let mut grey = page(false);
        for p in &mut grey.pixels {
            if *p < DARK {
                *p = 150;
            }
        }
        let before = grey.pixels.clone();
        assert!(!fade(&mut grey));
        assert_eq!(grey.pixels, before);
    }
}
