//! How bright the paper is across a page, whether that varies enough to matter, and the page
//! divided by it.
//!
//! The paper's brightness is measured on a coarse grid over a small copy of the page: in each
//! cell, the gray level that 90 % of its pixels are at or below (ink is dark and rarely covers
//! a tenth of a cell, so this is the paper's, or the desk's, under the light falling there).
//! Cells that print darks over a whole cell (a filled header bar, a logo) would read as shade:
//! a grey *closing* of the grid (the brightest of each 5 × 5 cells, then the darkest of that)
//! fills such holes up to four cells across, which light never makes, and a 3 × 3 mean
//! smooths what is left.
//!
//! Whether light varies is decided on a smooth surface, not on the cells: a quadratic in x and y
//! fitted to the cells by least squares, in three rounds that each drop the cells darker than
//! the fit by more than noise (printed shading that survived the closing). Light falling off
//! across a page, a lamp's hot spot and a phone's vignetting are all smooth at the scale of a
//! page; what a quadratic cannot follow is print, not light.

use crate::gray::Gray;

/// Cells along the page's longer side. At 48, a cell of an A4 page is ≈6 mm: several text lines,
/// so its brightest pixels are paper, and fine enough to follow a shadow's edge.
const CELLS_LONG_SIDE: usize = 48;
/// The share of a cell's pixels at or below the gray level taken as its paper.
const PAPER_QUANTILE: f64 = 0.9;
/// Half the side of the closing, in cells (5 × 5).
const CLOSING_RADIUS: usize = 2;
/// A cell darker than the fitted light by more than this many gray levels (or three times the
/// fit's median deviation, whichever is more) is print, left out of the next round.
const OUTLIER_LEVELS: f64 = 6.0;
/// The darkest the background may be taken as when dividing by it, so a nearly black patch
/// (the desk's remains at a corner) is not blown up into noise.
const MIN_BACKGROUND: f32 = 24.0;

/// The paper's brightness on a grid of cells over an image, closed and smoothed.
#[derive(Debug, Clone)]
pub(super) struct Background {
    cols: usize,
    rows: usize,
    /// Row-major, gray levels.
    cells: Vec<f32>,
}

impl Background {
    /// Measures `img` (a small copy of the page is enough: only the cells' size matters).
    /// `None` for an image too small to hold a grid.
    pub fn measure(img: &Gray) -> Option<Background> {
        let (w, h) = (img.width as usize, img.height as usize);
        let long = w.max(h);
        if long < CELLS_LONG_SIDE * 4 || w.min(h) < 16 {
            return None;
        }
        let side = long.div_ceil(CELLS_LONG_SIDE);
        let (cols, rows) = (w.div_ceil(side), h.div_ceil(side));
        let mut cells = Vec::with_capacity(cols * rows);
        let mut histogram = [0u32; 256];
        for r in 0..rows {
            let (y0, y1) = (r * side, ((r + 1) * side).min(h));
            for c in 0..cols {
                let (x0, x1) = (c * side, ((c + 1) * side).min(w));
                histogram.fill(0);
                // Every other pixel of every other row: a cell still gives hundreds, for a
                // quarter of the time.
                let mut n = 0u32;
                for y in (y0..y1).step_by(2) {
                    for &p in img.pixels[y * w + x0..y * w + x1].iter().step_by(2) {
                        histogram[usize::from(p)] += 1;
                        n += 1;
                    }
                }
                let n = f64::from(n);
                cells.push(quantile(&histogram, n, PAPER_QUANTILE));
            }
        }
        let closed = erode(&dilate(&cells, cols, rows), cols, rows);
        Some(Background {
            cols,
            rows,
            cells: mean3(&closed, cols, rows),
        })
    }

    /// The gray level `q` (0..=1) of the cells are at or below.
    pub fn quantile(&self, q: f64) -> f32 {
        let mut v = self.cells.clone();
        v.sort_by(f32::total_cmp);
        let i = ((v.len() as f64 - 1.0) * q.clamp(0.0, 1.0)).round() as usize;
        v.get(i).copied().unwrap_or(255.0)
    }

    /// How much the light varies over the page: the range of the fitted quadratic over the
    /// cells it was fitted to, as a share of its brightest (0 for even light; 0.4 where the
    /// light falls to 60 %). 0 when there is nothing to fit.
    pub fn unevenness(&self) -> f64 {
        let points: Vec<(f64, f64, f64)> = (0..self.rows)
            .flat_map(|r| (0..self.cols).map(move |c| (r, c)))
            .map(|(r, c)| {
                (
                    (c as f64 + 0.5) / self.cols as f64,
                    (r as f64 + 0.5) / self.rows as f64,
                    f64::from(self.cells[r * self.cols + c]),
                )
            })
            .collect();
        let mut kept: Vec<bool> = vec![true; points.len()];
        let mut fit = None;
        for _ in 0..3 {
            let Some(f) = Quadratic::fit(points.iter().zip(&kept).filter(|(_, k)| **k)) else {
                break;
            };
            let mut deviations: Vec<f64> = points
                .iter()
                .zip(&kept)
                .filter(|(_, k)| **k)
                .map(|(&(x, y, z), _)| (z - f.at(x, y)).abs())
                .collect();
            deviations.sort_by(f64::total_cmp);
            let mad = deviations.get(deviations.len() / 2).copied().unwrap_or(0.0);
            let limit = OUTLIER_LEVELS.max(3.0 * mad);
            for (k, &(x, y, z)) in kept.iter_mut().zip(&points) {
                *k = z - f.at(x, y) > -limit;
            }
            fit = Some(f);
        }
        let Some(fit) = fit else {
            return 0.0;
        };
        let fitted = points
            .iter()
            .zip(&kept)
            .filter(|(_, k)| **k)
            .map(|(&(x, y, _), _)| fit.at(x, y));
        let (lo, hi) = fitted.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        if !(hi > 0.0 && lo.is_finite()) {
            return 0.0;
        }
        ((hi - lo.max(0.0)) / hi).clamp(0.0, 1.0)
    }

    /// `img` (the page this grid was measured on, at any scale) divided by the background:
    /// paper becomes white wherever it lies, ink keeps its contrast with the paper around it.
    pub fn normalize(&self, img: &mut Gray) {
        let (w, h) = (img.width as usize, img.height as usize);
        if w == 0 || h == 0 {
            return;
        }
        // Each pixel's place between the centres of the cells around it.
        let place = |i: usize, n: usize, cells: usize| {
            let t =
                ((i as f64 + 0.5) / n as f64 * cells as f64 - 0.5).clamp(0.0, cells as f64 - 1.0);
            let a = (t.floor() as usize).min(cells - 1);
            (a, (a + 1).min(cells - 1), (t - a as f64) as f32)
        };
        let columns: Vec<(usize, usize, f32)> = (0..w).map(|x| place(x, w, self.cols)).collect();
        let mut row_background = vec![0f32; self.cols];
        for y in 0..h {
            let (r0, r1, fy) = place(y, h, self.rows);
            for (c, b) in row_background.iter_mut().enumerate() {
                let top = self.cells[r0 * self.cols + c];
                let bottom = self.cells[r1 * self.cols + c];
                *b = top + (bottom - top) * fy;
            }
            let row = &mut img.pixels[y * w..(y + 1) * w];
            for (p, &(c0, c1, fx)) in row.iter_mut().zip(&columns) {
                let (a, b) = (row_background[c0], row_background[c1]);
                let background = (a + (b - a) * fx).max(MIN_BACKGROUND);
                *p = (f32::from(*p) * 255.0 / background).min(255.0) as u8;
            }
        }
    }
}

/// The gray level at or below which `q` of the `n` pixels counted in `histogram` lie.
fn quantile(histogram: &[u32; 256], n: f64, q: f64) -> f32 {
    let want = (n * q).ceil().max(1.0);
    let mut seen = 0.0;
    for (level, &count) in histogram.iter().enumerate() {
        seen += f64::from(count);
        if seen >= want {
            return level as f32;
        }
    }
    255.0
}

/// Each cell replaced by `pick` of the cells within [`CLOSING_RADIUS`] of it.
fn filter(cells: &[f32], cols: usize, rows: usize, pick: fn(f32, f32) -> f32) -> Vec<f32> {
    let r = CLOSING_RADIUS;
    let mut out = Vec::with_capacity(cells.len());
    for y in 0..rows {
        for x in 0..cols {
            let mut v = cells[y * cols + x];
            for yy in y.saturating_sub(r)..(y + r + 1).min(rows) {
                for xx in x.saturating_sub(r)..(x + r + 1).min(cols) {
                    v = pick(v, cells[yy * cols + xx]);
                }
            }
            out.push(v);
        }
    }
    out
}

fn dilate(cells: &[f32], cols: usize, rows: usize) -> Vec<f32> {
    filter(cells, cols, rows, f32::max)
}

fn erode(cells: &[f32], cols: usize, rows: usize) -> Vec<f32> {
    filter(cells, cols, rows, f32::min)
}

/// The mean of each cell's 3 × 3 neighbourhood (fewer at the edges).
fn mean3(cells: &[f32], cols: usize, rows: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(cells.len());
    for y in 0..rows {
        for x in 0..cols {
            let (mut sum, mut n) = (0.0, 0.0);
            for yy in y.saturating_sub(1)..(y + 2).min(rows) {
                for xx in x.saturating_sub(1)..(x + 2).min(cols) {
                    sum += cells[yy * cols + xx];
                    n += 1.0;
                }
            }
            out.push(sum / n);
        }
    }
    out
}

/// `z = c0 + c1 x + c2 y + c3 x² + c4 x y + c5 y²`.
#[derive(Debug, Clone, Copy)]
struct Quadratic([f64; 6]);

impl Quadratic {
    fn terms(x: f64, y: f64) -> [f64; 6] {
        [1.0, x, y, x * x, x * y, y * y]
    }

    fn at(&self, x: f64, y: f64) -> f64 {
        Self::terms(x, y)
            .iter()
            .zip(&self.0)
            .map(|(t, c)| t * c)
            .sum()
    }

    /// The least-squares fit to `points` (x, y, z), by the normal equations; `None` for too
    /// few points or a degenerate spread.
    fn fit<'a>(points: impl Iterator<Item = (&'a (f64, f64, f64), &'a bool)>) -> Option<Self> {
        let mut a = [[0f64; 7]; 6];
        let mut n = 0usize;
        for (&(x, y, z), _) in points {
            let t = Self::terms(x, y);
            for i in 0..6 {
                for j in 0..6 {
                    a[i][j] += t[i] * t[j];
                }
                a[i][6] += t[i] * z;
            }
            n += 1;
        }
        if n < 12 {
            return None;
        }
        solve(a).map(Quadratic)
    }
}

/// Solves the 6 × 6 system whose augmented matrix is `a` by Gaussian elimination with partial
/// pivoting; `None` when it is singular.
fn solve(mut a: [[f64; 7]; 6]) -> Option<[f64; 6]> {
    for col in 0..6 {
        let pivot = (col..6).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-9 {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col];
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (v, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *v -= f * p;
                }
            }
        }
    }
    let mut x = [0f64; 6];
    for (i, xi) in x.iter_mut().enumerate() {
        *xi = a[i][6] / a[i][i];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of "text" (dark bars on lines) under light that is `light(x, y)` (0..=1).
    fn page(w: u32, h: u32, light: impl Fn(f64, f64) -> f64) -> Gray {
        let mut pixels = Vec::with_capacity((w * h) as usize);
        for y in 0..h {
            for x in 0..w {
                let line = y % 24 < 8 && x % 40 < 30 && (40..w - 40).contains(&x);
                let paper = if line { 40.0 } else { 240.0 };
                let l = light(f64::from(x) / f64::from(w), f64::from(y) / f64::from(h));
                pixels.push((paper * l).round() as u8);
            }
        }
        Gray::new(w, h, pixels).unwrap()
    }

    #[test]
    fn even_light_is_even_and_falling_light_is_not() {
        let even = Background::measure(&page(600, 800, |_, _| 1.0)).unwrap();
        assert!(even.unevenness() < 0.02, "{}", even.unevenness());
        let falling =
            Background::measure(&page(600, 800, |x, y| 1.0 - 0.4 * (x + y) / 2.0)).unwrap();
        let u = falling.unevenness();
        assert!((0.3..0.45).contains(&u), "{u}");
    }

    #[test]
    fn a_dark_printed_block_is_not_light() {
        // A filled bar across the page, 3 cells tall: print, closed over.
        let mut img = page(600, 800, |_, _| 1.0);
        for y in 300..350 {
            for x in 0..600 {
                img.pixels[y * 600 + x] = 30;
            }
        }
        let b = Background::measure(&img).unwrap();
        assert!(b.unevenness() < 0.05, "{}", b.unevenness());
    }

    #[test]
    fn normalizing_whitens_the_paper_and_keeps_the_ink() {
        let mut img = page(600, 800, |x, _| 1.0 - 0.4 * x);
        let b = Background::measure(&img).unwrap();
        b.normalize(&mut img);
        // Paper at the dark side (x = 590, between lines) and ink there.
        let paper = img.pixels[10 * 600 + 590];
        let ink = img.pixels[2 * 600 + 500];
        assert!(paper > 235, "{paper}");
        assert!(ink < 70, "{ink}");
        let after = Background::measure(&img).unwrap();
        assert!(after.unevenness() < 0.03, "{}", after.unevenness());
    }
}
