//! Table borders and underlines taken off a page before OCR.
//!
//! Tesseract reads a rule beside a word as part of it (`|Shipper`, `ae, ee` for a cell border,
//! `“|` between a label and its value) and a long rule as a line of junk, which breaks both
//! patterns and label geometry. Rules are what text never is: long, thin, straight runs of
//! ink. A pixel is taken off when it lies on a horizontal run of ink at least
//! [`min_run`] long whose stack is at most [`max_thickness`] tall — the morphological opening
//! by a line element, done with run lengths in two passes over the rows — and likewise for
//! vertical runs. A filled block (a dark header cell) is thick, so it stays; so does every
//! letter, whose strokes are far shorter than a rule.

use crate::gray::Gray;

/// What was taken off a page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Erased {
    /// Pixels turned to background.
    pub pixels: usize,
}

const HORIZONTAL: u8 = 1;
const VERTICAL: u8 = 2;
/// A mark kept after the thickness test: the pixel goes.
const ERASE: u8 = 4;

/// Shortest rule, in pixels along the page's side: a thirtieth of it (7 mm on A4), and never
/// under 40 px, so a dash or a letter's bar is never one.
fn min_run(side: usize) -> usize {
    (side / 30).max(40)
}

/// Thickest rule, in pixels: 0.7 mm on A4 at any resolution, at least 3 px.
fn max_thickness(width: usize, height: usize) -> usize {
    (width.min(height) / 300).max(3)
}

/// Takes the page's rule lines off, in place.
pub(crate) fn erase(img: &mut Gray) -> Erased {
    let (w, h) = (img.width as usize, img.height as usize);
    if w < 2 * 40 || h < 2 * 40 {
        return Erased::default();
    }
    // A page of one shade has no ink to tell apart: nothing is below mid-gray.
    let ink = crate::gray::otsu(&img.pixels).unwrap_or(127);
    let dark = |p: u8| p <= ink;
    let mut mask = vec![0u8; w * h];

    // Long horizontal runs, row by row.
    let min_h = min_run(w);
    for y in 0..h {
        let row = &img.pixels[y * w..(y + 1) * w];
        let mut x = 0;
        while x < w {
            if !dark(row[x]) {
                x += 1;
                continue;
            }
            let start = x;
            while x < w && dark(row[x]) {
                x += 1;
            }
            if x - start >= min_h {
                mask[y * w + start..y * w + x]
                    .iter_mut()
                    .for_each(|m| *m |= HORIZONTAL);
            }
        }
    }
    // Long vertical runs, still row by row: a run length per column.
    let min_v = min_run(h);
    let mut run = vec![0usize; w];
    for y in 0..=h {
        for x in 0..w {
            if y < h && dark(img.pixels[y * w + x]) {
                run[x] += 1;
                continue;
            }
            if run[x] >= min_v {
                for yy in y - run[x]..y {
                    mask[yy * w + x] |= VERTICAL;
                }
            }
            run[x] = 0;
        }
    }

    // Keep only thin structures: a horizontal mark whose column stack, or a vertical mark
    // whose row stack, is thicker than a rule belongs to a filled block.
    let thick = max_thickness(w, h);
    let mut stack = vec![0usize; w];
    for y in 0..=h {
        for x in 0..w {
            if y < h && mask[y * w + x] & HORIZONTAL != 0 {
                stack[x] += 1;
                continue;
            }
            if (1..=thick).contains(&stack[x]) {
                for yy in y - stack[x]..y {
                    mask[yy * w + x] |= ERASE;
                }
            }
            stack[x] = 0;
        }
    }
    for y in 0..h {
        let mut x = 0;
        while x < w {
            if mask[y * w + x] & VERTICAL == 0 {
                x += 1;
                continue;
            }
            let start = x;
            while x < w && mask[y * w + x] & VERTICAL != 0 {
                x += 1;
            }
            if x - start <= thick {
                mask[y * w + start..y * w + x]
                    .iter_mut()
                    .for_each(|m| *m |= ERASE);
            }
        }
    }
    // A rule's anti-aliased or blurred fringe is lighter than the ink threshold; left alone,
    // it is a faint line that Tesseract binarizes back into `|`. It goes with the rule.
    let fringe = (thick / 2).max(FRINGE);
    // Erased pixels take the paper's own gray: pure white on a gray scan would be a brighter
    // class of its own, and Tesseract's threshold would then call the paper ink.
    let paper = paper_level(&img.pixels, ink);
    let mut erased = Erased::default();
    for y in 0..h {
        for x in 0..w {
            if mask[y * w + x] & ERASE == 0 {
                continue;
            }
            for yy in y.saturating_sub(fringe)..(y + fringe + 1).min(h) {
                for xx in x.saturating_sub(fringe)..(x + fringe + 1).min(w) {
                    let p = &mut img.pixels[yy * w + xx];
                    if *p != paper {
                        *p = paper;
                        erased.pixels += 1;
                    }
                }
            }
        }
    }
    erased
}

/// Pixels around a rule taken off with it, at least.
const FRINGE: usize = 2;

/// The paper's gray: the median of the pixels lighter than the ink threshold.
fn paper_level(pixels: &[u8], ink: u8) -> u8 {
    let mut histogram = [0u64; 256];
    for &p in pixels.iter().filter(|&&p| p > ink) {
        histogram[usize::from(p)] += 1;
    }
    let half = histogram.iter().sum::<u64>() / 2;
    let mut seen = 0;
    for (v, &n) in histogram.iter().enumerate() {
        seen += n;
        if seen > half {
            return u8::try_from(v).unwrap_or(u8::MAX);
        }
    }
    u8::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A white page `w` × `h` with `dark` rectangles (x0, y0, x1, y1), exclusive ends.
    fn page(w: u32, h: u32, dark: &[(usize, usize, usize, usize)], ink: u8) -> Gray {
        let mut pixels = vec![230u8; (w * h) as usize];
        for &(x0, y0, x1, y1) in dark {
            for y in y0..y1 {
                for x in x0..x1 {
                    pixels[y * w as usize + x] = ink;
                }
            }
        }
        Gray::new(w, h, pixels).expect("sizes agree")
    }

    fn ink_in(img: &Gray, (x0, y0, x1, y1): (usize, usize, usize, usize)) -> usize {
        let w = img.width as usize;
        (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .filter(|&(x, y)| img.pixels[y * w + x] < 200)
            .count()
    }

    #[test]
    fn rules_go_and_letters_blocks_and_dashes_stay() {
        let (w, h) = (1200, 1600);
        let rule = (100, 400, 1100, 403); // a table's horizontal border, 3 px
        let border = (600, 300, 602, 900); // a vertical cell border, 2 px
        let letter = (200, 500, 204, 540); // a letter's stem
        let dash = (300, 520, 335, 523); // an em dash, 35 px
        let block = (100, 1000, 1100, 1060); // a filled header cell
        let mut img = page(w, h, &[rule, border, letter, dash, block], 60);
        let erased = erase(&mut img);
        assert_eq!(ink_in(&img, rule), 0, "the rule is gone");
        assert_eq!(ink_in(&img, border), 0, "the border is gone");
        assert_eq!(ink_in(&img, letter), 4 * 40, "the stem stays");
        assert_eq!(ink_in(&img, dash), 35 * 3, "the dash stays");
        assert_eq!(ink_in(&img, block), 1000 * 60, "the filled block stays");
        // The rules and their two-pixel fringes, in the paper's gray (230): only the ink
        // pixels change.
        assert_eq!(erased.pixels, 1000 * 3 + 2 * 600 - 2 * 3);
        assert!(img.pixels.iter().all(|&p| p == 230 || p == 60));
    }

    #[test]
    fn low_contrast_rules_go_too_and_take_the_paper_gray() {
        let rule = (50, 200, 750, 202);
        let mut img = page(800, 1000, &[rule], 150);
        erase(&mut img);
        assert_eq!(ink_in(&img, rule), 0);
        assert!(
            img.pixels.iter().all(|&p| p == 230),
            "no white streak on gray paper"
        );
    }

    #[test]
    fn tiny_and_blank_images_are_left_alone() {
        let mut tiny = page(20, 20, &[(0, 5, 20, 6)], 0);
        assert_eq!(erase(&mut tiny).pixels, 0);
        let mut blank = page(500, 500, &[], 0);
        assert_eq!(erase(&mut blank).pixels, 0);
    }
}
