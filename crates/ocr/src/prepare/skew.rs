//! How far a page's text lines are turned, by Leptonica's `pixFindSkewSweepAndSearch`.
//!
//! Leptonica shears a 1-bit image by each candidate angle and scores the squared differences
//! of neighbouring rows' ink counts, which peak when text lines lie along the rows: a sweep
//! of whole degrees at half resolution, then a binary search to 0.01° at full. It is given the
//! small copy of the page (≈140 DPI for an A4 page: Leptonica's defaults sweep a 300-DPI
//! page at 4× reduction and search at 2×, i.e. the same 75 and 150 DPI), binarized at Otsu's
//! level after the light was evened out, so a shaded corner's text counts like the rest.

use crate::gray::Gray;
use leptess::capi;
use std::ptr::NonNull;

/// The sweep covers ± this many degrees; the search then refines. Scans come skewed by at
/// most a few degrees; a page turned further is a layout, not a skew.
const SWEEP_RANGE: f32 = 6.0;
/// Below this ratio of the best score to the worst, Leptonica's own deskew leaves a page alone
/// (`MinAllowedConfidence` in skew.c): a page without enough text lines to tell.
const MIN_CONFIDENCE: f32 = 3.0;

/// A Leptonica image, destroyed on drop.
struct Pix(NonNull<capi::Pix>);

impl Pix {
    /// A 1-bit image of `img`'s pixels at or below `threshold` (Leptonica: 1 is ink).
    fn binary(img: &Gray, threshold: u8) -> Option<Pix> {
        let (w, h) = (
            i32::try_from(img.width).ok()?,
            i32::try_from(img.height).ok()?,
        );
        // SAFETY: plain constructor; null on failure. The image starts all zeros (paper).
        let pix = Pix(NonNull::new(unsafe { capi::pixCreate(w, h, 1) })?);
        // SAFETY: the image is 1 bpp, `height` rows of `wpl` 32-bit words each, owned by `pix`.
        let (data, wpl) = unsafe {
            (
                capi::pixGetData(pix.0.as_ptr()),
                capi::pixGetWpl(pix.0.as_ptr()) as usize,
            )
        };
        if data.is_null() {
            return None;
        }
        // SAFETY: as above; the slice is the raster and lives as long as `pix`.
        let raster = unsafe { std::slice::from_raw_parts_mut(data, wpl * img.height as usize) };
        let width = img.width as usize;
        for (row, words) in img
            .pixels
            .chunks_exact(width)
            .zip(raster.chunks_exact_mut(wpl))
        {
            for (x, &p) in row.iter().enumerate() {
                // At or below: Otsu's level of a bilevel page (a fax) is its black, 0.
                if p <= threshold {
                    // The leftmost pixel is a word's most significant bit.
                    words[x >> 5] |= 0x8000_0000 >> (x & 31);
                }
            }
        }
        Some(pix)
    }
}

impl Drop for Pix {
    fn drop(&mut self) {
        let mut p = self.0.as_ptr();
        // SAFETY: created by pixCreate, destroyed once; pixDestroy nulls the pointer.
        unsafe { capi::pixDestroy(&mut p) }
    }
}

/// How far `img`'s text lines are turned clockwise, in degrees, when Leptonica is confident
/// of it. `img` should have even light (see `light.rs`).
pub(super) fn clockwise_degrees(img: &Gray) -> Option<f64> {
    let threshold = crate::gray::otsu(&img.pixels)?;
    let pix = Pix::binary(img, threshold)?;
    let (mut angle, mut confidence) = (0f32, 0f32);
    // SAFETY: a valid 1-bpp image and out-pointers that live through the call.
    let failed = unsafe {
        capi::pixFindSkewSweepAndSearch(
            pix.0.as_ptr(),
            &mut angle,
            &mut confidence,
            2,
            1,
            SWEEP_RANGE,
            1.0,
            0.01,
        )
    };
    if failed != 0 || confidence < MIN_CONFIDENCE || !angle.is_finite() {
        return None;
    }
    // Leptonica gives the clockwise rotation that would deskew the image: the content itself
    // is turned the other way.
    Some(-f64::from(angle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::{warp::warp, Homography};

    /// Lines of "words" (dark bars) on white, `w` × `h`.
    fn text(w: u32, h: u32) -> Gray {
        let mut pixels = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let ink = (60..h - 60).contains(&y)
                    && (60..w - 60).contains(&x)
                    && y % 22 < 9
                    && (x + (y / 22) * 13) % 47 < 38;
                pixels.push(if ink { 30 } else { 235 });
            }
        }
        Gray::new(w, h, pixels).unwrap()
    }

    #[test]
    fn finds_a_known_turn_and_its_sense() {
        let (w, h) = (1100u32, 1400u32);
        let page = text(w, h);
        assert!(clockwise_degrees(&page).is_none_or(|a| a.abs() < 0.05));
        for degrees in [1.5f64, -0.8] {
            // The stored image shows the page turned `degrees` clockwise: each stored point
            // shows the page's point turned back.
            let turned = Homography::rotation(degrees, f64::from(w), f64::from(h));
            let img = warp(&page, &turned, w, h, 235).unwrap();
            let found = clockwise_degrees(&img).expect("an angle");
            assert!((found - degrees).abs() < 0.1, "{degrees}: {found}");
        }
    }
}
