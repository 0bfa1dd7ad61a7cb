//! Resampling a page through a [`Homography`]: each pixel of the output is the bilinear blend
//! of the four stored pixels around the point the map sends it to.
//!
//! The map is evaluated exactly every [`SPAN`] pixels along a row and stepped linearly in
//! 16.16 fixed point in between: for the perspective of a photo taken to be read the
//! step's error is far below a hundredth of a pixel, and the division per pixel it saves was
//! most of the cost (≈3× the time, measured on a 4.7 MP photo). A deskew is affine, so its
//! steps are exact.

use super::Homography;
use crate::gray::Gray;

/// Output pixels between exact evaluations of the map.
const SPAN: usize = 32;

/// The `out_w` × `out_h` image whose normalized point `p` shows `src` at `to_src(p)`; points
/// that fall outside `src` are `fill`. `None` for an empty output or one that overflows.
pub(super) fn warp(
    src: &Gray,
    to_src: &Homography,
    out_w: u32,
    out_h: u32,
    fill: u8,
) -> Option<Gray> {
    if out_w == 0 || out_h == 0 || src.width == 0 || src.height == 0 {
        return None;
    }
    // Fixed-point positions must fit in an i64 with room: sides far beyond any page.
    if src.width > 1 << 20 || src.height > 1 << 20 {
        return None;
    }
    let len = (out_w as usize).checked_mul(out_h as usize)?;
    let mut pixels = vec![fill; len];
    let [a, b, c, d, e, f, g, h] = to_src.0;
    let (sw, sh) = (f64::from(src.width), f64::from(src.height));
    let (ow, oh) = (f64::from(out_w), f64::from(out_h));
    // In output pixels (centres at +0.5) to source pixels (centres at +0.5): the map is
    // conjugated by the two images' scales.
    let (a, b, c) = (a * sw / ow, b * sw / oh, c * sw);
    let (d, e, f) = (d * sh / ow, e * sh / oh, f * sh);
    let (g, h) = (g / ow, h / oh);
    // Source position of output pixel (x, y), in 16.16 fixed point (pixel centres at 0).
    let at = |x: usize, v: f64| -> Option<(i64, i64)> {
        let u = x as f64 + 0.5;
        let w = g * u + h * v + 1.0;
        if w.abs() < 1e-9 {
            return None;
        }
        let fixed = |t: f64| {
            let t = (t * 65536.0).round();
            t.is_finite().then_some(t.clamp(-1e15, 1e15) as i64)
        };
        Some((
            fixed((a * u + b * v + c) / w - 0.5)?,
            fixed((d * u + e * v + f) / w - 0.5)?,
        ))
    };
    let sampler = Sampler::new(src);
    for (y, row) in pixels.chunks_exact_mut(out_w as usize).enumerate() {
        let v = y as f64 + 0.5;
        for (k, span) in row.chunks_mut(SPAN).enumerate() {
            let x0 = k * SPAN;
            let n = span.len() as i64;
            let (Some((sx0, sy0)), Some((sx1, sy1))) = (at(x0, v), at(x0 + span.len(), v)) else {
                continue;
            };
            let (dx, dy) = ((sx1 - sx0) / n, (sy1 - sy0) / n);
            let last = (sx0 + dx * (n - 1), sy0 + dy * (n - 1));
            if sampler.holds(sx0, sy0) && sampler.holds(last.0, last.1) {
                // The span lies inside (it is straight, so both ends do): no edge cases.
                sampler.interior(span, (sx0, sy0), (dx, dy));
                continue;
            }
            let (mut fx, mut fy) = (sx0, sy0);
            for p in span.iter_mut() {
                if let Some(value) = sampler.at(fx, fy) {
                    *p = value;
                }
                fx += dx;
                fy += dy;
            }
        }
    }
    Gray::new(out_w, out_h, pixels)
}

/// Bilinear reads of an image at 16.16 fixed-point positions.
struct Sampler<'a> {
    pixels: &'a [u8],
    w: i64,
    h: i64,
}

impl<'a> Sampler<'a> {
    fn new(src: &'a Gray) -> Self {
        Sampler {
            pixels: &src.pixels,
            w: i64::from(src.width),
            h: i64::from(src.height),
        }
    }

    /// Whether the four pixels around (`fx`, `fy`) are all inside the image.
    #[inline]
    fn holds(&self, fx: i64, fy: i64) -> bool {
        let (x0, y0) = (fx >> 16, fy >> 16);
        x0 >= 0 && y0 >= 0 && x0 < self.w - 1 && y0 < self.h - 1
    }

    /// `out[i]` = the blend at `start + i * step`, every position [`Sampler::holds`].
    #[inline]
    fn interior(&self, out: &mut [u8], start: (i64, i64), step: (i64, i64)) {
        let w = self.w as usize;
        let (mut fx, mut fy) = start;
        for p in out.iter_mut() {
            let i = (fy >> 16) as usize * w + (fx >> 16) as usize;
            let (tx, ty) = (((fx >> 8) & 0xff) as u32, ((fy >> 8) & 0xff) as u32);
            let (top, bottom) = (&self.pixels[i..i + 2], &self.pixels[i + w..i + w + 2]);
            let t = u32::from(top[0]) * (256 - tx) + u32::from(top[1]) * tx;
            let b = u32::from(bottom[0]) * (256 - tx) + u32::from(bottom[1]) * tx;
            *p = ((t * (256 - ty) + b * ty + 32768) >> 16) as u8;
            fx += step.0;
            fy += step.1;
        }
    }

    /// The blend at (`fx`, `fy`); `None` outside the image (within half a pixel of the border
    /// the edge pixels are blended with themselves).
    #[inline]
    fn at(&self, fx: i64, fy: i64) -> Option<u8> {
        let (w, h) = (self.w, self.h);
        let (x0, y0) = (fx >> 16, fy >> 16);
        let (tx, ty) = (((fx >> 8) & 0xff) as u32, ((fy >> 8) & 0xff) as u32);
        let (x1, y1) = if x0 >= 0 && y0 >= 0 && x0 < w - 1 && y0 < h - 1 {
            (x0 + 1, y0 + 1)
        } else {
            if fx < -32768
                || fy < -32768
                || fx > (w - 1) * 65536 + 32768
                || fy > (h - 1) * 65536 + 32768
            {
                return None;
            }
            let clamp = |v: i64, n: i64| v.clamp(0, n - 1);
            return Some(self.blend(
                (clamp(x0, w), clamp(x0 + 1, w)),
                (clamp(y0, h), clamp(y0 + 1, h)),
                if x0 < 0 || x0 >= w - 1 { 0 } else { tx },
                if y0 < 0 || y0 >= h - 1 { 0 } else { ty },
            ));
        };
        Some(self.blend((x0, x1), (y0, y1), tx, ty))
    }

    #[inline]
    fn blend(&self, (x0, x1): (i64, i64), (y0, y1): (i64, i64), tx: u32, ty: u32) -> u8 {
        let p = |x: i64, y: i64| u32::from(self.pixels[(y * self.w + x) as usize]);
        let top = p(x0, y0) * (256 - tx) + p(x1, y0) * tx;
        let bottom = p(x0, y1) * (256 - tx) + p(x1, y1) * tx;
        ((top * (256 - ty) + bottom * ty + 32768) >> 16) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(w: u32, h: u32) -> Gray {
        let pixels = (0..h)
            .flat_map(|y| (0..w).map(move |x| ((x * 7 + y * 3) % 256) as u8))
            .collect();
        Gray::new(w, h, pixels).unwrap()
    }

    #[test]
    fn the_identity_copies() {
        let img = ramp(37, 23);
        let id = Homography([1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
        assert_eq!(warp(&img, &id, 37, 23, 0).unwrap(), img);
        // Through the projective path too (a vanishing perspective term).
        let almost = Homography([1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1e-15, 0.0]);
        let out = warp(&img, &almost, 37, 23, 0).unwrap();
        assert_eq!(out, img);
    }

    #[test]
    fn a_crop_shows_the_stored_pixels() {
        let img = ramp(40, 40);
        // The output's unit square is the stored image's right half.
        let half = Homography([0.5, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0]);
        let out = warp(&img, &half, 20, 40, 0).unwrap();
        for y in [0usize, 17, 39] {
            for x in [0usize, 5, 19] {
                assert_eq!(
                    out.pixels[y * 20 + x],
                    img.pixels[y * 40 + 20 + x],
                    "{x},{y}"
                );
            }
        }
    }

    #[test]
    fn outside_is_filled() {
        let img = ramp(10, 10);
        let shifted = Homography([1.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0]);
        let out = warp(&img, &shifted, 10, 10, 200).unwrap();
        assert_eq!(out.pixels[9], 200);
        assert_eq!(out.pixels[0], img.pixels[5]);
    }
}
