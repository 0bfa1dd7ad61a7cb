//! A photographed page's four edges, where it lies on a darker surface.
//!
//! On a small copy of the photo: when the image's outer ring is clearly darker than the paper,
//! each side is searched along 41 scan lines running inward from the image's edge, each stopping
//! where the profile first rises halfway from the desk to the paper it reaches (the light may
//! fall off across the page: each scan line takes its own desk and paper levels). A straight
//! line is fitted to each side's crossings, the one most of them lie on (a pen, a shadow, a
//! corner folded over fall off it), and the four lines meet at the page's corners. A
//! side with too few crossings on a line is the image's own edge (the page runs out of the
//! frame there), which leaves at least two sides to find.

use crate::gray::Gray;

/// The outer ring (this share of each side) is the desk when its median is at most this share
/// of the paper's brightness. Photos on a desk measured 0.25–0.5; scans' white margins ≈1.
const DESK_RATIO: f64 = 0.72;
/// Share of each side that makes the outer ring.
const RING: f64 = 0.02;
/// Scan lines per side, spread over its middle 80 %.
const SCAN_LINES: usize = 41;
/// How far in from the image's edge a page's edge is looked for.
const REACH: f64 = 0.35;
/// Fewest gray levels between desk and paper along a scan line for a crossing to count.
const MIN_STEP: f64 = 12.0;
/// Fewest crossings on a side's line for the side to count as found (of [`SCAN_LINES`]).
const MIN_ON_LINE: usize = 14;
/// A crossing this close to a line (small-copy pixels, ≈0.2 mm on an A4 page) is on it: an
/// edge's crossings scatter by under a pixel through blur and JPEG.
const ON_LINE_PX: f64 = 2.0;
/// A side's line may lean at most this much (run over rise): 0.2 is 11°, far past a photo
/// taken to be read.
const MAX_LEAN: f64 = 0.2;
/// Smallest share of the image the page may cover.
const MIN_AREA: f64 = 0.25;

/// The page's corners in normalized image coordinates: top left, top right, bottom right,
/// bottom left. `None` when the image shows no darker surface around the page, or its edges do
/// not make a plausible page. `paper` is the paper's gray level (its bright cells).
pub(super) fn find(img: &Gray, paper: f64) -> Option<[(f64, f64); 4]> {
    let (w, h) = (img.width as usize, img.height as usize);
    if w < 64 || h < 64 || paper <= 0.0 {
        return None;
    }
    if ring_median(img) > DESK_RATIO * paper {
        return None;
    }
    let at = |x: usize, y: usize| f64::from(img.pixels[y * w + x]);
    // Each side as (crossings, along which axis): left/right give x for y, top/bottom y for x.
    let lines = |n: usize| {
        (0..SCAN_LINES)
            .map(move |i| 0.1 * n as f64 + 0.8 * n as f64 * i as f64 / (SCAN_LINES - 1) as f64)
    };
    let reach_x = ((w as f64 * REACH) as usize).max(4);
    let reach_y = ((h as f64 * REACH) as usize).max(4);
    // Profile along a scan line of three averaged pixel rows (or columns).
    let crossing = |profile: &dyn Fn(usize) -> f64, len: usize| -> Option<f64> {
        let desk = (0..3).map(profile).sum::<f64>() / 3.0;
        let page = (0..len).map(profile).fold(0.0, f64::max);
        if page - desk < MIN_STEP || desk > 0.85 * page {
            return None;
        }
        let mid = (desk + page) / 2.0;
        let mut prev = desk;
        for i in 1..len {
            let v = profile(i);
            // The crossing must hold for a few pixels: not a bright speck on the desk.
            if v >= mid && (i + 1..(i + 4).min(len)).all(|j| profile(j) >= mid) {
                let t = if v > prev {
                    (mid - prev) / (v - prev)
                } else {
                    0.0
                };
                return Some(i as f64 - 1.0 + t.clamp(0.0, 1.0) + 0.5);
            }
            prev = v;
        }
        None
    };
    let mut sides: [Vec<(f64, f64)>; 4] = Default::default();
    for y in lines(h) {
        let y = (y as usize).clamp(1, h - 2);
        let row = |x: usize| (at(x, y - 1) + at(x, y) + at(x, y + 1)) / 3.0;
        let rev = |x: usize| row(w - 1 - x);
        if let Some(x) = crossing(&row, reach_x) {
            sides[3].push((y as f64 + 0.5, x));
        }
        if let Some(x) = crossing(&rev, reach_x) {
            sides[1].push((y as f64 + 0.5, w as f64 - x));
        }
    }
    for x in lines(w) {
        let x = (x as usize).clamp(1, w - 2);
        let col = |y: usize| (at(x - 1, y) + at(x, y) + at(x + 1, y)) / 3.0;
        let rev = |y: usize| col(h - 1 - y);
        if let Some(y) = crossing(&col, reach_y) {
            sides[0].push((x as f64 + 0.5, y));
        }
        if let Some(y) = crossing(&rev, reach_y) {
            sides[2].push((x as f64 + 0.5, h as f64 - y));
        }
    }
    // Top, right, bottom, left, each as `across = a + b * along` in pixels; the image's own
    // edge where a side is not found.
    let (wf, hf) = (w as f64, h as f64);
    let edges = [(0.0, 0.0), (wf, 0.0), (hf, 0.0), (0.0, 0.0)];
    let mut found = 0;
    let mut fitted = [(0.0, 0.0); 4];
    for (i, side) in sides.iter().enumerate() {
        fitted[i] = match fit_line(side) {
            Some(line) => {
                found += 1;
                line
            }
            None => edges[i],
        };
    }
    if found < 2 {
        return None;
    }
    let [top, right, bottom, left] = fitted;
    // Where a "y = a + b x" line meets an "x = a + b y" line.
    let meet = |horizontal: (f64, f64), vertical: (f64, f64)| {
        let (ha, hb) = horizontal;
        let (va, vb) = vertical;
        let den = 1.0 - hb * vb;
        if den.abs() < 1e-9 {
            return None;
        }
        let x = (va + vb * ha) / den;
        Some((x / wf, (ha + hb * x) / hf))
    };
    let corners = [
        meet(top, left)?,
        meet(top, right)?,
        meet(bottom, right)?,
        meet(bottom, left)?,
    ];
    plausible(&corners).then_some(corners)
}

/// The median gray level of the image's outer ring.
fn ring_median(img: &Gray) -> f64 {
    let (w, h) = (img.width as usize, img.height as usize);
    let (rx, ry) = (
        ((w as f64 * RING) as usize).max(1),
        ((h as f64 * RING) as usize).max(1),
    );
    let mut histogram = [0u64; 256];
    for y in 0..h {
        let row = &img.pixels[y * w..(y + 1) * w];
        if y < ry || y >= h - ry {
            row.iter().for_each(|&p| histogram[usize::from(p)] += 1);
        } else {
            row[..rx]
                .iter()
                .chain(&row[w - rx..])
                .for_each(|&p| histogram[usize::from(p)] += 1);
        }
    }
    let total: u64 = histogram.iter().sum();
    let mut seen = 0;
    for (level, &n) in histogram.iter().enumerate() {
        seen += n;
        if seen * 2 >= total {
            return level as f64;
        }
    }
    255.0
}

/// `across = a + b * along` through `points` (along, across): the line through two of them that
/// the most lie within [`ON_LINE_PX`] of (the first such pair: deterministic), refitted to
/// those by least squares. A pen, a finger, a corner folded over or print touching the edge
/// give crossings off the line, however many, as long as they are fewer. `None` when fewer
/// than [`MIN_ON_LINE`] lie on it or it leans too far.
fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let on = |a: f64, b: f64| move |p: &&(f64, f64)| (p.1 - a - b * p.0).abs() <= ON_LINE_PX;
    let mut best: Option<(usize, f64, f64)> = None;
    for (i, p) in points.iter().enumerate() {
        for q in &points[i + 1..] {
            if (q.0 - p.0).abs() < 1e-9 {
                continue;
            }
            let b = (q.1 - p.1) / (q.0 - p.0);
            if b.abs() > MAX_LEAN {
                continue;
            }
            let a = p.1 - b * p.0;
            let count = points.iter().filter(on(a, b)).count();
            if best.is_none_or(|(most, _, _)| count > most) {
                best = Some((count, a, b));
            }
        }
    }
    let (count, a, b) = best?;
    if count < MIN_ON_LINE {
        return None;
    }
    let kept: Vec<&(f64, f64)> = points.iter().filter(on(a, b)).collect();
    let n = kept.len() as f64;
    let (sx, sy) = kept.iter().fold((0.0, 0.0), |(x, y), p| (x + p.0, y + p.1));
    let (mx, my) = (sx / n, sy / n);
    let (sxx, sxy) = kept.iter().fold((0.0, 0.0), |(xx, xy), p| {
        (xx + (p.0 - mx).powi(2), xy + (p.0 - mx) * (p.1 - my))
    });
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    (b.abs() <= MAX_LEAN).then_some((my - b * mx, b))
}

/// Whether four corners (top left, top right, bottom right, bottom left, normalized) make a
/// convex page inside the image (give or take 5 %) covering at least [`MIN_AREA`] of it.
fn plausible(c: &[(f64, f64); 4]) -> bool {
    let inside = c
        .iter()
        .all(|&(x, y)| (-0.05..=1.05).contains(&x) && (-0.05..=1.05).contains(&y));
    // Every turn the same way round (clockwise on the image, y pointing down).
    let cross = |i: usize| {
        let (a, b, d) = (c[i], c[(i + 1) % 4], c[(i + 2) % 4]);
        (b.0 - a.0) * (d.1 - b.1) - (b.1 - a.1) * (d.0 - b.0)
    };
    let convex = (0..4).all(|i| cross(i) > 0.0);
    let area = 0.5
        * (0..4)
            .map(|i| c[i].0 * c[(i + 1) % 4].1 - c[(i + 1) % 4].0 * c[i].1)
            .sum::<f64>();
    inside && convex && area >= MIN_AREA
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A light page with the corners `c` (normalized) on a desk of gray `desk`, 400 × 500.
    fn photo(c: [(f64, f64); 4], desk: u8) -> Gray {
        let (w, h) = (400u32, 500u32);
        let mut pixels = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let p = (
                    (f64::from(x) + 0.5) / f64::from(w),
                    (f64::from(y) + 0.5) / f64::from(h),
                );
                let inside = (0..4).all(|i| {
                    let (a, b) = (c[i], c[(i + 1) % 4]);
                    (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0) >= 0.0
                });
                // Some print on the page, inside its margins, so the profile is not flat paper.
                let margin = (30..370).contains(&x) && (40..460).contains(&y);
                let ink = inside && margin && y % 20 < 5 && x % 9 < 6;
                pixels.push(if !inside {
                    desk
                } else if ink {
                    60
                } else {
                    230
                });
            }
        }
        Gray::new(w, h, pixels).unwrap()
    }

    #[test]
    fn a_page_on_a_desk_is_found() {
        let c = [(0.08, 0.06), (0.9, 0.09), (0.94, 0.95), (0.05, 0.92)];
        let found = find(&photo(c, 90), 230.0).expect("a page");
        for (f, c) in found.iter().zip(&c) {
            assert!(
                (f.0 - c.0).abs() < 0.006 && (f.1 - c.1).abs() < 0.006,
                "{found:?}"
            );
        }
    }

    #[test]
    fn a_scan_has_no_desk() {
        let c = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)];
        assert_eq!(find(&photo(c, 90), 230.0), None);
    }

    #[test]
    fn a_page_running_out_of_the_frame_keeps_the_frame_there() {
        // The page's bottom is cut off by the image's edge.
        let c = [(0.1, 0.1), (0.9, 0.12), (0.92, 1.2), (0.08, 1.2)];
        let found = find(&photo(c, 60), 230.0).expect("a page");
        assert!((found[0].1 - 0.1).abs() < 0.006, "{found:?}");
        assert!((found[2].1 - 1.0).abs() < 1e-6, "{found:?}");
    }
}
