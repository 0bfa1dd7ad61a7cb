//! How tall a page's body text is, estimated cheaply, and the page scaled so that height sits
//! where Tesseract reads well.
//!
//! Tesseract's layout analysis, thresholding and line images cost in proportion to pixels, while
//! its LSTM recognizer scales every text line to a fixed height of its own. So pixels above what
//! the recognizer needs are paid for and then thrown away: a page of 14 pt type rendered at
//! 300 DPI costs about twice the pixels of the same page at 210 DPI, and reads the same.
//!
//! The estimate: the page shrunk 2× keeping dark strokes (minimum of each 2×2 block), binarized
//! at Otsu's threshold, cut into connected components; the most common height of glyph-shaped
//! components is the body text's height (the x-height where lower case dominates, the cap
//! height on a page of capitals, which only makes the scaling more careful). It takes about
//! 1 % of a page's OCR time.

use crate::gray::Gray;
use fast_image_resize::{FilterType, ResizeAlg};

/// Fewest glyph-shaped components for an estimate: fewer is a photo, a blank or a page of
/// a few words, which is left as it is.
const MIN_GLYPHS: usize = 40;
/// Tallest component counted as a glyph, in shrunk pixels (≈ 100 pt type at 300 DPI).
const MAX_GLYPH_HEIGHT: usize = 200;
/// Shortest component counted as a glyph, in shrunk pixels: below it is speckle and dots.
const MIN_GLYPH_HEIGHT: usize = 3;
/// Scaling by less than this is not worth a resize.
const MIN_SHRINK: f64 = 0.05;
/// Most a page is shrunk: a page of very large type is still read with detail to spare.
const MIN_SCALE: f64 = 0.3;
/// Lowest resolution a page of known resolution is shrunk to. The estimate is the cap height
/// on a page of capitals and digits, whose lower case (if any) is then smaller than the
/// target: at 125 DPI the test invoice's 16 pt `No.` read as `No,`.
const MIN_DPI: f64 = 200.0;

/// The page's body text height in pixels of `img`, if it has enough text to tell.
pub(crate) fn body_text_height(img: &Gray) -> Option<f64> {
    let small = shrink_dark(img);
    let threshold = crate::gray::otsu(&small.pixels)?;
    let heights = component_heights(&small, threshold);
    // A glyph H pixels tall covers H/2 + 3/4 shrunk rows on average (it starts anywhere in a
    // 2-row block): undo that.
    mode_height(&heights).map(|h| h * 2.0 - 1.5)
}

/// How much to scale `img`, once it has been enlarged by `enlarged` (1 when it is read as
/// it is) to `dpi`, for its body text to be `target` pixels tall: see [`scale_for`]; never
/// below [`MIN_DPI`]; 1 when the page has too little text to tell, or when its resolution is
/// unknown (a photo, a screenshot: no floor can be set, and Tesseract then estimates the
/// resolution from the text height itself).
pub(crate) fn fitted(img: &Gray, enlarged: f64, target: u32, dpi: Option<u32>) -> f64 {
    let Some(dpi) = dpi else {
        return 1.0;
    };
    let floor = MIN_SCALE.max(MIN_DPI / f64::from(dpi.max(1)));
    match body_text_height(img) {
        Some(height) => scale_for(height * enlarged, f64::from(target), floor),
        None => 1.0,
    }
}

/// How much to scale a page whose body text is `height` pixels tall so it becomes `target`:
/// never enlarged, never below `floor`, and 1 when the change is too small to pay.
pub(crate) fn scale_for(height: f64, target: f64, floor: f64) -> f64 {
    if !(height.is_finite() && height > 0.0 && target > 0.0) {
        return 1.0;
    }
    let s = (target / height).clamp(floor.clamp(0.05, 1.0), 1.0);
    if s > 1.0 - MIN_SHRINK {
        1.0
    } else {
        s
    }
}

/// `img` scaled by `s` (box filter: every source pixel counts), or `None` if it cannot be.
pub(crate) fn scaled(img: &Gray, s: f64) -> Option<Gray> {
    let w = ((f64::from(img.width) * s).round() as u32).max(1);
    let h = ((f64::from(img.height) * s).round() as u32).max(1);
    img.resized(w, h, ResizeAlg::Convolution(FilterType::Box))
}

/// Half the size on each axis, each pixel the darkest of its 2×2 block (thin strokes survive).
fn shrink_dark(img: &Gray) -> Gray {
    let (w, h) = (img.width as usize, img.height as usize);
    let (sw, sh) = ((w / 2).max(1), (h / 2).max(1));
    let mut out = vec![255u8; sw * sh];
    if w < 2 || h < 2 {
        return Gray {
            width: sw as u32,
            height: sh as u32,
            pixels: out,
        };
    }
    for (y, row) in out.chunks_exact_mut(sw).enumerate() {
        let top = &img.pixels[2 * y * w..2 * y * w + w];
        let bottom = &img.pixels[(2 * y + 1) * w..(2 * y + 1) * w + w];
        for (x, px) in row.iter_mut().enumerate() {
            *px = top[2 * x]
                .min(top[2 * x + 1])
                .min(bottom[2 * x])
                .min(bottom[2 * x + 1]);
        }
    }
    Gray {
        width: sw as u32,
        height: sh as u32,
        pixels: out,
    }
}

/// A run of ink on one row, `[start, end)`, and the component it belongs to.
struct Run {
    start: usize,
    end: usize,
    label: usize,
}

/// The heights of the glyph-shaped connected components (8-connected) of ink.
fn component_heights(img: &Gray, threshold: u8) -> Vec<usize> {
    let w = img.width as usize;
    let mut parent: Vec<usize> = Vec::new();
    // Per component: top, bottom, left, right.
    let mut extent: Vec<[usize; 4]> = Vec::new();
    let mut previous: Vec<Run> = Vec::new();
    for (y, row) in img.pixels.chunks_exact(w).enumerate() {
        let mut current = Vec::new();
        let mut x = 0;
        while x < w {
            if row[x] > threshold {
                x += 1;
                continue;
            }
            let start = x;
            while x < w && row[x] <= threshold {
                x += 1;
            }
            let label = parent.len();
            parent.push(label);
            extent.push([y, y, start, x - 1]);
            current.push(Run {
                start,
                end: x,
                label,
            });
        }
        // Join each run with the runs above it that touch it, diagonals included.
        let mut j = 0;
        for run in &current {
            while j < previous.len() && previous[j].end < run.start {
                j += 1;
            }
            let mut k = j;
            while k < previous.len() && previous[k].start <= run.end {
                union(&mut parent, &mut extent, run.label, previous[k].label);
                k += 1;
            }
        }
        previous = current;
    }
    let mut heights = Vec::new();
    for (label, &p) in parent.iter().enumerate() {
        if p != label {
            continue;
        }
        let [top, bottom, left, right] = extent[label];
        let (h, w) = (bottom - top + 1, right - left + 1);
        if (MIN_GLYPH_HEIGHT..=MAX_GLYPH_HEIGHT).contains(&h) && w <= 4 * h {
            heights.push(h);
        }
    }
    heights
}

fn find(parent: &mut [usize], mut a: usize) -> usize {
    while parent[a] != a {
        parent[a] = parent[parent[a]];
        a = parent[a];
    }
    a
}

fn union(parent: &mut [usize], extent: &mut [[usize; 4]], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra == rb {
        return;
    }
    let (keep, gone) = (ra.min(rb), ra.max(rb));
    parent[gone] = keep;
    let (g, k) = (extent[gone], &mut extent[keep]);
    k[0] = k[0].min(g[0]);
    k[1] = k[1].max(g[1]);
    k[2] = k[2].min(g[2]);
    k[3] = k[3].max(g[3]);
}

/// The most common height, smoothed over its neighbours (a glyph is one pixel taller or
/// shorter depending on where it falls on the grid), refined to the weighted mean of the
/// three heights around the peak.
fn mode_height(heights: &[usize]) -> Option<f64> {
    if heights.len() < MIN_GLYPHS {
        return None;
    }
    let mut hist = vec![0usize; MAX_GLYPH_HEIGHT + 2];
    for &h in heights {
        hist[h] += 1;
    }
    let smoothed = |h: usize| hist[h - 1] + hist[h] + hist[h + 1];
    let peak =
        (MIN_GLYPH_HEIGHT..=MAX_GLYPH_HEIGHT).max_by_key(|&h| (smoothed(h), usize::MAX - h))?;
    let mass = smoothed(peak);
    if mass == 0 {
        return None;
    }
    let weighted = (peak - 1) * hist[peak - 1] + peak * hist[peak] + (peak + 1) * hist[peak + 1];
    Some(weighted as f64 / mass as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A white page with rows of black `glyph`-tall, `glyph*2/3`-wide blocks, spaced like text.
    fn page_of_blocks(width: u32, height: u32, glyph: u32) -> Gray {
        let (w, h) = (width as usize, height as usize);
        let mut pixels = vec![255u8; w * h];
        let g = glyph as usize;
        let gw = (g * 2 / 3).max(1);
        let mut y = g;
        while y + g < h {
            let mut x = g;
            while x + gw < w {
                for yy in y..y + g {
                    pixels[yy * w + x..yy * w + x + gw].fill(0);
                }
                x += gw + g / 2 + 1;
            }
            y += 2 * g;
        }
        Gray::new(width, height, pixels).expect("sized")
    }

    #[test]
    fn the_height_of_the_common_glyph_is_found() {
        for glyph in [12u32, 20, 31, 60] {
            let page = page_of_blocks(1200, 900, glyph);
            let h = body_text_height(&page).expect("enough glyphs");
            assert!(
                (h - f64::from(glyph)).abs() <= 2.0,
                "glyphs {glyph} px tall estimated at {h:.1}"
            );
        }
    }

    #[test]
    fn blank_and_single_shade_pages_give_no_estimate() {
        let blank = Gray::new(400, 300, vec![255; 400 * 300]).expect("sized");
        assert_eq!(body_text_height(&blank), None);
        let few = page_of_blocks(60, 60, 20);
        assert_eq!(
            body_text_height(&few),
            None,
            "a handful of marks is not text"
        );
    }

    #[test]
    fn speckle_and_rules_do_not_count_as_glyphs() {
        let mut page = page_of_blocks(1200, 900, 24);
        let w = page.width as usize;
        // Speckle: isolated dark pixels everywhere.
        for i in (0..page.pixels.len()).step_by(97) {
            page.pixels[i] = 0;
        }
        // A table rule across the page.
        page.pixels[450 * w..451 * w].fill(0);
        let h = body_text_height(&page).expect("enough glyphs");
        assert!((h - 24.0).abs() <= 2.0, "estimated {h:.1}");
    }

    #[test]
    fn pages_are_only_ever_shrunk_and_never_below_the_floor() {
        assert_eq!(scale_for(20.0, 20.0, 0.5), 1.0);
        assert_eq!(scale_for(10.0, 20.0, 0.5), 1.0, "never enlarged");
        assert_eq!(scale_for(20.5, 20.0, 0.5), 1.0, "too small a change to pay");
        assert!((scale_for(40.0, 20.0, 0.5) - 0.5).abs() < 1e-9);
        assert!((scale_for(80.0, 20.0, 0.6) - 0.6).abs() < 1e-9, "floor");
        assert_eq!(scale_for(f64::NAN, 20.0, 0.5), 1.0);
        let page = page_of_blocks(600, 400, 30);
        let half = scaled(&page, 0.5).expect("scaled");
        assert_eq!((half.width, half.height), (300, 200));
        let h = body_text_height(&half).expect("glyphs");
        assert!((h - 15.0).abs() <= 2.0, "estimated {h:.1}");
    }
}
