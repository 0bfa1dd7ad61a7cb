//! An 8-bit grayscale page image: what every input is turned into before OCR.

use fast_image_resize::images::{Image as ResizeImage, ImageRef};
use fast_image_resize::{PixelType, ResizeAlg, ResizeOptions, Resizer};
use sha2::{Digest, Sha256};

/// A page as 8-bit grayscale pixels, row-major, one byte per pixel, no row padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gray {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

impl Gray {
    /// Wraps pixels whose length the caller has already checked.
    pub fn new(width: u32, height: u32, pixels: Vec<u8>) -> Option<Gray> {
        (pixels.len() as u64 == u64::from(width) * u64::from(height)).then_some(Gray {
            width,
            height,
            pixels,
        })
    }

    /// Whether every pixel is black or white (a fax, a 1-bit TIFF). Stops at the first grey
    /// pixel, which on a scan comes at once.
    pub fn is_bilevel(&self) -> bool {
        self.pixels.iter().all(|&p| p == 0 || p == 255)
    }

    /// SHA-256 of the dimensions and pixels: two renderings with the same pixels are the same
    /// page whatever file they came from.
    pub fn digest(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.width.to_le_bytes());
        h.update(self.height.to_le_bytes());
        h.update(&self.pixels);
        h.finalize().into()
    }

    /// The image turned `degrees` clockwise (0, 90, 180 or 270; anything else is treated as 0).
    pub fn rotated_cw(&self, degrees: u16) -> Gray {
        let (w, h) = (self.width as usize, self.height as usize);
        let src = &self.pixels;
        match degrees {
            180 => {
                let mut pixels = src.clone();
                pixels.reverse();
                Gray {
                    width: self.width,
                    height: self.height,
                    pixels,
                }
            }
            90 | 270 => {
                // Output is h wide and w tall. Clockwise: out(x', y') = in(y', h-1-x').
                let mut pixels = vec![0u8; w * h];
                for y in 0..h {
                    let row = &src[y * w..(y + 1) * w];
                    for (x, &p) in row.iter().enumerate() {
                        let (nx, ny) = if degrees == 90 {
                            (h - 1 - y, x)
                        } else {
                            (y, w - 1 - x)
                        };
                        pixels[ny * h + nx] = p;
                    }
                }
                Gray {
                    width: self.height,
                    height: self.width,
                    pixels,
                }
            }
            _ => self.clone(),
        }
    }
}

/// Parses a binary PGM (`P5`) with maxval 255, as `pdftoppm -gray` writes it. Anything else,
/// or a pixel count above `max_pixels` (checked before copying), is an error message.
pub(crate) fn parse_pgm(bytes: &[u8], max_pixels: u64) -> Result<Gray, String> {
    let mut pos = 0usize;
    let mut fields = [0u64; 3];
    if bytes.get(..2) != Some(b"P5") {
        return Err("renderer output is not a binary PGM".into());
    }
    pos += 2;
    for field in fields.iter_mut() {
        // Whitespace and `#` comments may separate header fields.
        loop {
            match bytes.get(pos) {
                Some(b) if b.is_ascii_whitespace() => pos += 1,
                Some(b'#') => {
                    while bytes.get(pos).is_some_and(|&b| b != b'\n') {
                        pos += 1;
                    }
                }
                _ => break,
            }
        }
        let start = pos;
        while bytes.get(pos).is_some_and(u8::is_ascii_digit) && pos - start < 10 {
            pos += 1;
        }
        *field = std::str::from_utf8(&bytes[start..pos])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or("renderer output has a malformed PGM header")?;
    }
    // Exactly one whitespace byte separates the header from the raster.
    if !bytes.get(pos).is_some_and(u8::is_ascii_whitespace) {
        return Err("renderer output has a malformed PGM header".into());
    }
    pos += 1;
    let [width, height, maxval] = fields;
    if maxval != 255 {
        return Err(format!(
            "renderer output has unsupported PGM maxval {maxval}"
        ));
    }
    let pixels = width * height;
    if width == 0 || height == 0 || pixels > max_pixels {
        return Err(format!(
            "rendered page is {width}×{height} pixels, over the limit of {max_pixels}"
        ));
    }
    let raster = bytes
        .get(pos..pos + pixels as usize)
        .ok_or("renderer output is truncated")?;
    Gray::new(width as u32, height as u32, raster.to_vec())
        .ok_or_else(|| "renderer output is truncated".into())
}

impl Gray {
    /// The image at `w`×`h` by `alg`, or `None` if it cannot be resized.
    pub fn resized(&self, w: u32, h: u32, alg: ResizeAlg) -> Option<Gray> {
        let src = ImageRef::new(self.width, self.height, &self.pixels, PixelType::U8).ok()?;
        let mut dst = ResizeImage::new(w, h, PixelType::U8);
        Resizer::new()
            .resize(&src, &mut dst, &ResizeOptions::new().resize_alg(alg))
            .ok()?;
        Gray::new(w, h, dst.into_vec())
    }
}

/// A group of touching cells of a grid (eight neighbours): its cells (row-major indices) and
/// its box in cells (x0, y0, x1, y1, inclusive).
pub(crate) struct CellGroup {
    pub cells: Vec<usize>,
    pub bbox: (usize, usize, usize, usize),
}

/// The groups of touching `marked` cells of a `cw` × `ch` grid, in the order of their first
/// cell (top to bottom, then left to right).
pub(crate) fn cell_groups(marked: &[bool], cw: usize, ch: usize) -> Vec<CellGroup> {
    let mut seen = vec![false; marked.len()];
    let mut out = Vec::new();
    for start in 0..marked.len() {
        if !marked[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        let mut stack = vec![start];
        let mut cells = Vec::new();
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        while let Some(i) = stack.pop() {
            cells.push(i);
            let (x, y) = (i % cw, i / cw);
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            for ny in y.saturating_sub(1)..=(y + 1).min(ch - 1) {
                for nx in x.saturating_sub(1)..=(x + 1).min(cw - 1) {
                    let j = ny * cw + nx;
                    if marked[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        out.push(CellGroup {
            cells,
            bbox: (x0, y0, x1, y1),
        });
    }
    out
}

/// Otsu's threshold: the gray level that best splits the pixels into ink and paper (ink is at
/// or below it). Works on a low-contrast scan, where ink is mid-gray, as on a clean one.
/// `None` for pixels of one shade.
pub(crate) fn otsu(pixels: &[u8]) -> Option<u8> {
    let mut histogram = [0u64; 256];
    for &p in pixels {
        histogram[usize::from(p)] += 1;
    }
    let total = pixels.len() as f64;
    let sum_all: f64 = histogram
        .iter()
        .enumerate()
        .map(|(v, &n)| v as f64 * n as f64)
        .sum();
    let (mut weight_below, mut sum_below) = (0.0f64, 0.0f64);
    let (mut best, mut best_variance) = (None, -1.0f64);
    for (v, &n) in histogram.iter().enumerate() {
        weight_below += n as f64;
        sum_below += v as f64 * n as f64;
        let weight_above = total - weight_below;
        if weight_below == 0.0 || weight_above == 0.0 {
            continue;
        }
        let mean_below = sum_below / weight_below;
        let mean_above = (sum_all - sum_below) / weight_above;
        let variance = weight_below * weight_above * (mean_below - mean_above).powi(2);
        if variance > best_variance {
            best_variance = variance;
            best = u8::try_from(v).ok();
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img() -> Gray {
        // 3 wide, 2 tall:
        // 1 2 3
        // 4 5 6
        Gray::new(3, 2, vec![1, 2, 3, 4, 5, 6]).unwrap()
    }

    #[test]
    fn rotations() {
        assert_eq!(img().rotated_cw(90).pixels, vec![4, 1, 5, 2, 6, 3]);
        assert_eq!(img().rotated_cw(180).pixels, vec![6, 5, 4, 3, 2, 1]);
        assert_eq!(img().rotated_cw(270).pixels, vec![3, 6, 2, 5, 1, 4]);
        assert_eq!(img().rotated_cw(90).rotated_cw(270), img());
        let r = img().rotated_cw(270);
        assert_eq!((r.width, r.height), (2, 3));
    }

    #[test]
    fn pgm_parses_and_refuses() {
        let mut pgm = b"P5\n# comment\n3 2\n255\n".to_vec();
        pgm.extend([1, 2, 3, 4, 5, 6]);
        assert_eq!(parse_pgm(&pgm, 100).unwrap(), img());
        assert!(parse_pgm(&pgm, 5).unwrap_err().contains("over the limit"));
        assert!(parse_pgm(&pgm[..pgm.len() - 1], 100)
            .unwrap_err()
            .contains("truncated"));
        assert!(parse_pgm(b"P6\n1 1\n255\n\0\0\0", 100).is_err());
        assert!(parse_pgm(b"P5\n99999999999 1\n255\n", u64::MAX).is_err());
        assert!(parse_pgm(b"", 100).is_err());
    }
}
