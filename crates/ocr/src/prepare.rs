//! Preparing a page image for OCR, and mapping what is read on it back onto the page as
//! stored.
//!
//! Three things are undone before Tesseract reads a page, each only where the page needs it:
//!
//! * **A photographed page's perspective.** When the image's outer ring is clearly darker than
//!   the paper (a page on a desk), the page's four edges are found and the quadrilateral they
//!   make is warped flat (a homography) to a rectangle the size of its sides
//!   (`page_edges.rs`). Such a photo rarely records a resolution: the flattened page is given
//!   the one that makes it an A4 or Letter sheet when it has that shape ([`Prepared::dpi`]).
//! * **Skew** of [`MIN_SKEW_DEGREES`] or more, found by Leptonica (`skew.rs`), is turned back,
//!   in the same resampling as the perspective (`warp.rs`, bilinear; a bilevel page is
//!   thresholded back to bilevel).
//! * **Uneven light.** The paper's brightness is measured on a coarse grid; when a smooth
//!   surface fitted to it spans more than [`UNEVEN_LIGHT`] of its brightest, the page is divided
//!   by it (`light.rs`): the paper is white all over, the shaded part keeps its ink's contrast,
//!   and one global threshold then reads it best (see [`Threshold`]). The glyph-ink and
//!   rule-line measures taken after OCR (`engine.rs`) see the same evened page.
//!
//! Everything is decided on a small copy of the page (its longer side at most
//! [`SURVEY_PX`]): a clean, straight scan costs the copy, the grid, a ring of pixels and the
//! skew search, ≈8 ms of CPU for a 300-DPI A4 page (measured on 2 busy cores, where its OCR
//! takes 1–3 s), and is read exactly as decoded ([`Geometry::identity`], global threshold).
//! A skewed scan costs ≈35 ms, the resampling most of it.
//!
//! Contract:
//! * [`prepare`] is deterministic: the same pixels give the same prepared image and
//!   geometry, so a second look at a page crops exactly what the first reading saw.
//! * [`Geometry`] maps boxes between the prepared image and the stored image, both in
//!   page-relative coordinates (0..=1) of the *unrotated* images (before any quarter turn the
//!   reader applies afterwards).

#[cfg(test)]
mod fixture_tests;
mod light;
mod page_edges;
mod skew;
mod stamp;
mod warp;

use crate::gray::Gray;
use ironclad_core::page::BBox;
use std::borrow::Cow;

/// How Tesseract turns the prepared gray image into ink and paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Threshold {
    /// Tesseract's default: one (Otsu) threshold for the whole page.
    #[default]
    Global,
    /// A threshold per neighbourhood (Sauvola): for pages whose light varies across them and
    /// could not be evened out. Measured, Sauvola on the raw photos read far better than Otsu
    /// (626 against 379 of 685 numbers on development photos), but after the division by the
    /// background Otsu read as well or better (656 against 650).
    Adaptive,
}

/// A page ready for OCR.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// What Tesseract reads.
    pub img: Gray,
    /// How its boxes map back onto the stored image.
    pub geometry: Geometry,
    /// How Tesseract should binarize it.
    pub threshold: Threshold,
    /// The resolution to tell Tesseract: the stored image's; for a flattened photo that has
    /// none, the one that makes the page an A4 or US Letter sheet when it has that shape.
    pub dpi: Option<u32>,
}

/// The map between the prepared image and the stored one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Geometry {
    /// `None`: the prepared image is the stored image (maybe scaled), so normalized boxes are
    /// the same on both.
    to_stored: Option<Homography>,
}

/// A plane projective map in normalized coordinates: `(x, y) ↦ ((a x + b y + c) / (g x + h y
/// + 1), (d x + e y + f) / (g x + h y + 1))`, coefficients `[a, b, c, d, e, f, g, h]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Homography(pub [f64; 8]);

impl Homography {
    /// The map sending the unit square's corners to `corners` (top left, top right, bottom
    /// right, bottom left): Heckbert's closed form. `None` for a degenerate quadrilateral.
    pub fn from_unit_square(corners: [(f64, f64); 4]) -> Option<Homography> {
        let [(x0, y0), (x1, y1), (x2, y2), (x3, y3)] = corners;
        let (sx, sy) = (x0 - x1 + x2 - x3, y0 - y1 + y2 - y3);
        let (g, h) = if sx.abs() < 1e-12 && sy.abs() < 1e-12 {
            (0.0, 0.0)
        } else {
            let (dx1, dx2, dy1, dy2) = (x1 - x2, x3 - x2, y1 - y2, y3 - y2);
            let den = dx1 * dy2 - dx2 * dy1;
            if den.abs() < 1e-12 {
                return None;
            }
            ((sx * dy2 - dx2 * sy) / den, (dx1 * sy - sx * dy1) / den)
        };
        let m = Homography([
            x1 - x0 + g * x1,
            x3 - x0 + h * x3,
            x0,
            y1 - y0 + g * y1,
            y3 - y0 + h * y3,
            y0,
            g,
            h,
        ]);
        m.0.iter().all(|v| v.is_finite()).then_some(m)
    }

    /// The map for an image of `w` × `h` pixels that shows another of the same size turned
    /// `clockwise_degrees` about its centre (y points down): each point to where it comes from.
    pub fn rotation(clockwise_degrees: f64, w: f64, h: f64) -> Homography {
        let (sin, cos) = clockwise_degrees.to_radians().sin_cos();
        let (wh, hw) = (w / h.max(1.0), h / w.max(1.0));
        Homography([
            cos,
            sin * hw,
            0.5 * (1.0 - cos) - 0.5 * sin * hw,
            -sin * wh,
            cos,
            0.5 * (1.0 - cos) + 0.5 * sin * wh,
            0.0,
            0.0,
        ])
    }

    /// `self` after `first`: a point goes through `first`, then `self`.
    pub fn after(&self, first: &Homography) -> Option<Homography> {
        let m = |h: &Homography| {
            let [a, b, c, d, e, f, g, h] = h.0;
            [[a, b, c], [d, e, f], [g, h, 1.0]]
        };
        let (p, q) = (m(self), m(first));
        let mut r = [[0f64; 3]; 3];
        for (i, row) in r.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = (0..3).map(|k| p[i][k] * q[k][j]).sum();
            }
        }
        Homography::scaled(r)
    }

    /// The map of a 3×3 matrix, scaled so its last entry is 1; `None` when that entry is 0.
    fn scaled(m: [[f64; 3]; 3]) -> Option<Homography> {
        let n = m[2][2];
        if n.abs() < 1e-12 {
            return None;
        }
        Some(Homography([
            m[0][0] / n,
            m[0][1] / n,
            m[0][2] / n,
            m[1][0] / n,
            m[1][1] / n,
            m[1][2] / n,
            m[2][0] / n,
            m[2][1] / n,
        ]))
    }

    fn apply(&self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, e, f, g, h] = self.0;
        let w = g * x + h * y + 1.0;
        if w.abs() < 1e-12 {
            return (x, y);
        }
        ((a * x + b * y + c) / w, (d * x + e * y + f) / w)
    }

    /// The inverse map, when there is one.
    fn inverse(&self) -> Option<Homography> {
        let [a, b, c, d, e, f, g, h] = self.0;
        // The 3×3 matrix [[a b c] [d e f] [g h 1]] inverted by its adjugate.
        let m = [[a, b, c], [d, e, f], [g, h, 1.0]];
        let cof = |r0: usize, r1: usize, c0: usize, c1: usize| {
            m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]
        };
        let adj = [
            [cof(1, 2, 1, 2), -cof(0, 2, 1, 2), cof(0, 1, 1, 2)],
            [-cof(1, 2, 0, 2), cof(0, 2, 0, 2), -cof(0, 1, 0, 2)],
            [cof(1, 2, 0, 1), -cof(0, 2, 0, 1), cof(0, 1, 0, 1)],
        ];
        let det = m[0][0] * adj[0][0] + m[0][1] * adj[1][0] + m[0][2] * adj[2][0];
        if det.abs() < 1e-12 {
            return None;
        }
        Homography::scaled(adj)
    }

    /// The smallest box holding the image of `b`'s four corners.
    fn map_box(&self, b: BBox) -> BBox {
        let corners = [(b.x0, b.y0), (b.x1, b.y0), (b.x0, b.y1), (b.x1, b.y1)]
            .map(|(x, y)| self.apply(f64::from(x), f64::from(y)));
        let xs = corners.map(|c| c.0);
        let ys = corners.map(|c| c.1);
        let min = |v: [f64; 4]| v.into_iter().fold(f64::INFINITY, f64::min) as f32;
        let max = |v: [f64; 4]| v.into_iter().fold(f64::NEG_INFINITY, f64::max) as f32;
        BBox {
            x0: min(xs),
            y0: min(ys),
            x1: max(xs),
            y1: max(ys),
        }
        .normalized()
    }
}

impl Geometry {
    /// The prepared image is the stored one.
    pub fn identity() -> Geometry {
        Geometry { to_stored: None }
    }

    /// A prepared image whose normalized point `p` shows the stored image's point
    /// `to_stored(p)`.
    pub fn projective(to_stored: Homography) -> Geometry {
        Geometry {
            to_stored: Some(to_stored),
        }
    }

    /// Whether boxes are the same on both images.
    pub fn is_identity(&self) -> bool {
        self.to_stored.is_none()
    }

    /// A box read on the prepared image, on the stored image.
    pub fn box_to_stored(&self, b: BBox) -> BBox {
        match &self.to_stored {
            None => b,
            Some(h) => h.map_box(b),
        }
    }

    /// A box given on the stored image, on the prepared image (to crop what it covers).
    // The second look's (`second_look.rs`); nothing else maps this way.
    #[allow(dead_code)]
    pub fn box_to_prepared(&self, b: BBox) -> BBox {
        match self.to_stored.as_ref().and_then(Homography::inverse) {
            None => b,
            Some(h) => h.map_box(b),
        }
    }
}

/// The longest side of the small copy every decision is made on: a 300-DPI A4 page is shrunk
/// 3× to 1,170 px (100 DPI), a 200-DPI one 2×. The skew search sweeps at half that resolution
/// and refines at it, Leptonica's defaults on a 300-DPI page give 75 and 150 DPI: found within
/// 0.06° of the generator's skew on every fixture scan, where refining at half resolution was
/// off by up to 0.08°, and a survey of 1,750 px (2× for 300 DPI) cost 11–15 ms of CPU a page
/// against 8 (measured on 2 busy cores).
pub(crate) const SURVEY_PX: u32 = 1600;
/// Light varying by more than this share of the paper's brightest (the range of the fitted
/// surface) counts as uneven. Clean scans measured 0–0.03 (grey paper, a scanner's own
/// gradient); phone photos with light falling to 60–66 % measured 0.25–0.45.
pub(crate) const UNEVEN_LIGHT: f64 = 0.12;
/// Skew below this is left to Tesseract, whose line finding follows it: turning a page costs a
/// resampling (≈25 ms on a 300-DPI page) and softens its glyphs a little.
pub(crate) const MIN_SKEW_DEGREES: f64 = 0.4;

/// What was decided for one page, and how long deciding and preparing took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Decisions {
    /// The page's corners were found on a darker surface and it was flattened.
    pub flattened: bool,
    /// The skew turned back, clockwise degrees, when it was.
    pub deskewed: Option<f64>,
    /// The light's variation over the page (see [`UNEVEN_LIGHT`]).
    pub unevenness: f64,
    /// The page was divided by its background.
    pub normalized: bool,
    /// A stamp's grey ink was faded out of the text it covered (`stamp.rs`).
    pub stamps_faded: bool,
}

/// Whether [`prepare`] would at most turn `img` back by `max_deg` degrees (no flattening),
/// or leave it as it is: what preparing would do to the page's geometry, without doing it.
pub(crate) fn turns_at_most(img: &Gray, max_deg: f64) -> bool {
    Plan::of(img)
        .is_none_or(|plan| !plan.flattened && plan.skew.is_none_or(|deg| deg.abs() <= max_deg))
}

/// The page as Tesseract should read it. Deterministic (see the module documentation).
pub(crate) fn prepare(img: Gray, dpi: Option<u32>) -> Prepared {
    prepare_explained(img, dpi).0
}

/// [`prepare`], with what it decided.
pub(crate) fn prepare_explained(img: Gray, dpi: Option<u32>) -> (Prepared, Decisions) {
    let started = std::time::Instant::now();
    let plan = Plan::of(&img);
    let mut decisions = Decisions {
        flattened: false,
        deskewed: None,
        unevenness: 0.0,
        normalized: false,
        stamps_faded: false,
    };
    let Some(plan) = plan else {
        let mut img = img;
        decisions.stamps_faded = stamp::fade(&mut img);
        return (Prepared::as_stored(img, dpi), decisions);
    };
    decisions.unevenness = plan.unevenness;
    let (mut img, geometry) = match plan.to_stored.and_then(|h| {
        let (w, h_px) = plan.size;
        warp::warp(&img, &h, w, h_px, plan.paper).map(|warped| (warped, h))
    }) {
        Some((mut warped, h)) => {
            // A bilevel page (a fax, a 1-bit TIFF) stays bilevel: the blend's grey edges cost
            // a 1-bit 200-DPI declaration 8 of its 47 values where the same deskew
            // thresholded back at mid-grey lost 1 (Tesseract read `Deciaration`, `R0` as
            // `RO` on the grey version).
            if img.is_bilevel() {
                for p in &mut warped.pixels {
                    *p = if *p < 128 { 0 } else { 255 };
                }
            }
            decisions.flattened = plan.flattened;
            decisions.deskewed = plan.skew;
            (warped, Geometry::projective(h))
        }
        None => (img, Geometry::identity()),
    };
    let uneven = plan.unevenness > UNEVEN_LIGHT;
    if uneven {
        // The grid again on the prepared image, which the survey's may not match cell for cell.
        let background = if geometry.is_identity() {
            Some(plan.background)
        } else {
            shrunk(&img).and_then(|small| light::Background::measure(&small))
        };
        if let Some(b) = background {
            b.normalize(&mut img);
            decisions.normalized = true;
        }
    }
    // Once the page is divided by its background, one threshold fits all of it, and read
    // best: on 24 development photos (light falling to 55–65 %) Otsu read 656 of 685 numbers
    // and Sauvola 650, on 8 with a sharp shadow 218 and 212 of 232, on the 22 hard-set photos
    // 143 of 147 both; without the division Sauvola read 626 of 685 and Otsu 379. Sauvola
    // stays for uneven light that could not be measured on the prepared page.
    // A scan's stamps (a photo's soft text is grey throughout, and a 1-bit page has no grey).
    if !decisions.flattened && !decisions.normalized {
        decisions.stamps_faded = stamp::fade(&mut img);
    }
    let threshold = if uneven && !decisions.normalized {
        Threshold::Adaptive
    } else {
        Threshold::Global
    };
    tracing::debug!(
        ms = started.elapsed().as_secs_f64() * 1e3,
        flattened = decisions.flattened,
        deskewed = ?decisions.deskewed,
        unevenness = decisions.unevenness,
        stamps_faded = decisions.stamps_faded,
        "page prepared"
    );
    let dpi = match dpi {
        None if decisions.flattened => sheet_dpi(img.width, img.height),
        dpi => dpi,
    };
    (
        Prepared {
            img,
            geometry,
            threshold,
            dpi,
        },
        decisions,
    )
}

/// The resolution at which a page of `w` × `h` pixels is an A4 or a US Letter sheet, when its
/// sides are in one of their proportions (within 4 %).
///
/// Photos rarely record a resolution, and Tesseract then estimates one from the text, which
/// on a flattened photo of a bordered form went wrong enough for its layout analysis to drop
/// the form's whole table (measured: a customs declaration read 0 of its 4 table values
/// without a resolution, 4 of 4 told 150, 200 or 300 DPI).
fn sheet_dpi(w: u32, h: u32) -> Option<u32> {
    let (short, long) = (f64::from(w.min(h)), f64::from(w.max(h)));
    if short <= 0.0 {
        return None;
    }
    let ratio = long / short;
    // A4 is 297 × 210 mm; Letter 11 × 8.5 in.
    let long_inches = [(297.0 / 210.0, 297.0 / 25.4), (11.0 / 8.5, 11.0)]
        .into_iter()
        .find(|(shape, _)| (ratio / shape - 1.0).abs() < 0.04)
        .map(|(_, inches)| inches)?;
    let dpi = (long / long_inches).round();
    (70.0..=1200.0).contains(&dpi).then_some(dpi as u32)
}

impl Prepared {
    /// The page read as decoded.
    fn as_stored(img: Gray, dpi: Option<u32>) -> Prepared {
        Prepared {
            img,
            geometry: Geometry::identity(),
            threshold: Threshold::Global,
            dpi,
        }
    }
}

/// What a page needs, decided on its small copy.
struct Plan {
    /// Prepared to stored, when the page is warped at all.
    to_stored: Option<Homography>,
    /// The prepared image's size.
    size: (u32, u32),
    /// The paper's gray level, for what a warp brings in from outside the image.
    paper: u8,
    flattened: bool,
    skew: Option<f64>,
    unevenness: f64,
    /// The survey's grid, valid for the stored image.
    background: light::Background,
}

impl Plan {
    fn of(img: &Gray) -> Option<Plan> {
        let small = shrunk(img)?;
        let background = light::Background::measure(&small)?;
        let paper = background.quantile(0.9);
        let (w, h) = (f64::from(img.width), f64::from(img.height));
        let corners = page_edges::find(&small, f64::from(paper));
        let flat = corners.and_then(|c| {
            let to_stored = Homography::from_unit_square(c)?;
            let px = |i: usize| (c[i].0 * w, c[i].1 * h);
            let dist = |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).hypot(a.1 - b.1);
            let width = (dist(px(0), px(1)) + dist(px(3), px(2))) / 2.0;
            let height = (dist(px(0), px(3)) + dist(px(1), px(2))) / 2.0;
            // Never more pixels than the photo had: the page is part of it.
            let fit = (w * h / (width * height)).sqrt().min(1.0);
            let size = (
                ((width * fit).round() as u32).max(1),
                ((height * fit).round() as u32).max(1),
            );
            Some((to_stored, size))
        });
        // The survey continues on the flattened small copy, whose light and skew are the page's.
        let scale = f64::from(small.width) / w;
        let (view, view_background) = match &flat {
            Some((to_stored, (fw, fh))) => {
                let sw = ((f64::from(*fw) * scale).round() as u32).max(1);
                let sh = ((f64::from(*fh) * scale).round() as u32).max(1);
                let view = warp::warp(&small, to_stored, sw, sh, paper as u8)?;
                let b = light::Background::measure(&view)?;
                (Cow::Owned(view), b)
            }
            None => (Cow::Borrowed(small.as_ref()), background.clone()),
        };
        let unevenness = view_background.unevenness();
        let skew = if unevenness > UNEVEN_LIGHT {
            let mut even = view.into_owned();
            view_background.normalize(&mut even);
            skew::clockwise_degrees(&even)
        } else {
            skew::clockwise_degrees(&view)
        }
        .filter(|a| a.abs() >= MIN_SKEW_DEGREES);
        let (flat_map, size) = match flat {
            Some((m, size)) => (Some(m), size),
            None => (None, (img.width, img.height)),
        };
        // The prepared image shows the flattened page turned back by its skew.
        let turn_back =
            skew.map(|a| Homography::rotation(-a, f64::from(size.0), f64::from(size.1)));
        let to_stored = match (flat_map, turn_back) {
            (Some(f), Some(t)) => Some(f.after(&t)?),
            (Some(f), None) => Some(f),
            (None, t) => t,
        };
        Some(Plan {
            to_stored,
            size,
            paper: paper.round().clamp(0.0, 255.0) as u8,
            flattened: flat_map.is_some(),
            skew,
            unevenness,
            background,
        })
    }
}

/// `img`, or a copy shrunk by the smallest whole factor that brings its longer side to
/// [`SURVEY_PX`] or less, each pixel the mean of its block (every pixel counts, so thin strokes
/// stay). Whole blocks, summed down the rows and then across, cost ≈0.4 ns a pixel
/// against ≈1.5 for a general box resize (measured), the most expensive step of the survey.
/// Columns and rows past the last whole block are left out: at most `factor - 1` pixels, which
/// move what the survey measures by less than a pixel of the page as stored.
fn shrunk(img: &Gray) -> Option<Cow<'_, Gray>> {
    let long = img.width.max(img.height);
    let k = long.div_ceil(SURVEY_PX).max(1) as usize;
    if k == 1 {
        return Some(Cow::Borrowed(img));
    }
    let (w, h) = (img.width as usize, img.height as usize);
    let (sw, sh) = (w / k, h / k);
    if sw == 0 || sh == 0 {
        return None;
    }
    let mut out = Vec::with_capacity(sw * sh);
    let mut sums = vec![0u32; w];
    let area = (k * k) as u32;
    for block_row in img.pixels.chunks_exact(w * k).take(sh) {
        sums.fill(0);
        for row in block_row.chunks_exact(w) {
            for (s, &p) in sums.iter_mut().zip(row) {
                *s += u32::from(p);
            }
        }
        out.extend(
            sums.chunks_exact(k)
                .take(sw)
                .map(|block| ((block.iter().sum::<u32>() + area / 2) / area) as u8),
        );
    }
    Gray::new(sw as u32, sh as u32, out).map(Cow::Owned)
}

/// A box on the upright page (after a clockwise quarter turn of `rotation` degrees) on the
/// unturned image, and back with [`turn_box`].
pub(crate) fn unturn_box(b: BBox, rotation: u16) -> BBox {
    turn_box(b, (360 - rotation % 360) % 360)
}

/// A box on an image, on the image turned `rotation` degrees clockwise.
pub(crate) fn turn_box(b: BBox, rotation: u16) -> BBox {
    let turn = |x: f32, y: f32| match rotation {
        90 => (1.0 - y, x),
        180 => (1.0 - x, 1.0 - y),
        270 => (y, 1.0 - x),
        _ => (x, y),
    };
    let (x0, y0) = turn(b.x0, b.y0);
    let (x1, y1) = turn(b.x1, b.y1);
    BBox { x0, y0, x1, y1 }.normalized()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: BBox, b: BBox) -> bool {
        (a.x0 - b.x0).abs() < 1e-4
            && (a.y0 - b.y0).abs() < 1e-4
            && (a.x1 - b.x1).abs() < 1e-4
            && (a.y1 - b.y1).abs() < 1e-4
    }

    #[test]
    fn boxes_go_to_the_stored_image_and_back() {
        // A slight keystone: the prepared page's top edge is the stored page's narrower one.
        let h = Homography([0.9, 0.02, 0.05, 0.01, 0.95, 0.02, 0.03, 0.01]);
        let g = Geometry::projective(h);
        let b = BBox {
            x0: 0.3,
            y0: 0.4,
            x1: 0.5,
            y1: 0.42,
        };
        let stored = g.box_to_stored(b);
        assert!(!close(stored, b));
        let back = g.box_to_prepared(stored);
        // Corners' bounding boxes grow a little each way through a non-affine map.
        assert!(back.x0 <= b.x0 + 1e-3 && back.x1 >= b.x1 - 1e-3, "{back:?}");
        assert!(close(Geometry::identity().box_to_stored(b), b));
    }

    fn maps_to(h: &Homography, from: (f64, f64), to: (f64, f64)) -> bool {
        let (x, y) = h.apply(from.0, from.1);
        (x - to.0).abs() < 1e-9 && (y - to.1).abs() < 1e-9
    }

    #[test]
    fn the_unit_square_goes_to_the_corners() {
        let c = [(0.06, 0.04), (0.93, 0.07), (0.97, 0.96), (0.03, 0.91)];
        let h = Homography::from_unit_square(c).unwrap();
        for (from, to) in [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]
            .into_iter()
            .zip(c)
        {
            assert!(maps_to(&h, from, to), "{from:?}");
        }
        let back = h.inverse().unwrap();
        assert!(maps_to(&back, c[2], (1.0, 1.0)));
        // A parallelogram is affine.
        let p = Homography::from_unit_square([(0.1, 0.1), (0.9, 0.2), (0.9, 0.9), (0.1, 0.8)]);
        assert_eq!(p.map(|h| (h.0[6], h.0[7])), Some((0.0, 0.0)));
    }

    #[test]
    fn a_rotation_turns_about_the_centre_and_composes() {
        // On a 200 × 100 image turned 90° clockwise (as a map, ignoring that the sides swap),
        // the output's centre comes from the centre, and a point right of it from above it.
        let r = Homography::rotation(90.0, 200.0, 100.0);
        assert!(maps_to(&r, (0.5, 0.5), (0.5, 0.5)));
        let (x, y) = r.apply(0.75, 0.5);
        assert!((x - 0.5).abs() < 1e-9 && y < 0.5, "{x},{y}");
        let there = Homography::rotation(2.0, 300.0, 400.0);
        let back = Homography::rotation(-2.0, 300.0, 400.0);
        let id = there.after(&back).unwrap();
        assert!(maps_to(&id, (0.2, 0.9), (0.2, 0.9)));
    }

    #[test]
    fn quarter_turns_undo() {
        let b = BBox {
            x0: 0.1,
            y0: 0.2,
            x1: 0.3,
            y1: 0.25,
        };
        for r in [0, 90, 180, 270] {
            assert!(close(unturn_box(turn_box(b, r), r), b), "{r}");
        }
    }
}
