//! Page previews for people: one page of a stored file as a small grayscale PNG, turned the
//! way its reading turned it, so that word boxes (relative to the upright page) fall on the
//! right pixels when drawn over it.
//!
//! The same decoders as reading are used (EXIF orientation applied, TIFF pages by index,
//! PDF pages by `pdftoppm` with the crop box), with the same header checks before decoding.

use crate::gray::Gray;
use crate::{images, pdf, ReadError};
use fast_image_resize::ResizeAlg;
use image::ImageFormat;
use ironclad_core::media::MediaType;
use std::path::Path;
use std::time::Duration;

/// What a preview may cost.
#[derive(Debug, Clone, Copy)]
pub struct PreviewLimits {
    /// The longest side of the PNG, in pixels.
    pub max_side: u32,
    /// The most pixels a page may decode to before it is scaled down.
    pub max_pixels: u64,
    /// The longest a PDF page may take to render.
    pub timeout: Duration,
}

impl Default for PreviewLimits {
    fn default() -> Self {
        Self {
            max_side: 1400,
            max_pixels: 60_000_000,
            timeout: Duration::from_secs(20),
        }
    }
}

/// Resolution PDF pages are rendered at: A4 at 120 DPI is 992×1403 pixels.
const PDF_PREVIEW_DPI: u32 = 120;

/// Page `index` (0-based) of the file at `path`, turned clockwise by `rotation` degrees and
/// scaled to fit `limits.max_side`, as PNG bytes. Blocks (decoding, `pdftoppm`).
pub fn render_preview(
    path: &Path,
    media: MediaType,
    index: u32,
    rotation: u16,
    limits: PreviewLimits,
) -> Result<Vec<u8>, ReadError> {
    let page = match media {
        MediaType::Pdf => pdf::render_page(
            path,
            index + 1,
            PDF_PREVIEW_DPI,
            limits.max_pixels,
            limits.timeout,
        )?,
        MediaType::Png | MediaType::Jpeg | MediaType::Tiff => {
            let bytes = std::fs::read(path)
                .map_err(|e| ReadError::Retryable(format!("could not read the file: {e}")))?;
            match media {
                MediaType::Tiff => images::decode_tiff_page(&bytes, index, limits.max_pixels)?.0,
                _ if index > 0 => {
                    return Err(ReadError::Terminal(format!(
                        "an image has one page, not {}",
                        index + 1
                    )))
                }
                MediaType::Png => {
                    images::decode_single(&bytes, ImageFormat::Png, limits.max_pixels)?.0
                }
                _ => images::decode_single(&bytes, ImageFormat::Jpeg, limits.max_pixels)?.0,
            }
        }
    };
    let upright = match rotation % 360 {
        0 => page,
        turn => page.rotated_cw(turn),
    };
    encode_png(&fit(upright, limits.max_side.max(16)))
}

/// The page scaled down so its longer side is at most `max_side` (never enlarged).
fn fit(img: Gray, max_side: u32) -> Gray {
    let longer = img.width.max(img.height);
    if longer <= max_side {
        return img;
    }
    let s = f64::from(max_side) / f64::from(longer);
    let w = ((f64::from(img.width) * s).round() as u32).max(1);
    let h = ((f64::from(img.height) * s).round() as u32).max(1);
    img.resized(
        w,
        h,
        ResizeAlg::Convolution(fast_image_resize::FilterType::Bilinear),
    )
    .unwrap_or(img)
}

fn encode_png(img: &Gray) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::with_capacity(img.pixels.len() / 3);
    let mut encoder = png::Encoder::new(&mut out, img.width, img.height);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let failed = |e: png::EncodingError| ReadError::Terminal(format!("preview encoding: {e}"));
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(&img.pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_page_is_scaled_to_fit_and_keeps_its_shape() {
        let img = Gray::new(3000, 1500, vec![200; 3000 * 1500]).expect("buffer matches");
        let small = fit(img, 1000);
        assert_eq!((small.width, small.height), (1000, 500));
        let tiny = Gray::new(10, 20, vec![0; 200]).expect("buffer matches");
        assert_eq!(fit(tiny, 1000).height, 20, "never enlarged");
    }

    #[test]
    fn a_png_preview_decodes_back() -> Result<(), ReadError> {
        let img = Gray::new(4, 2, vec![0, 50, 100, 150, 200, 250, 255, 1]).expect("4x2");
        let png_bytes = encode_png(&img)?;
        let dir = tempfile::tempdir().map_err(|e| ReadError::Retryable(e.to_string()))?;
        let path = dir.path().join("p.png");
        std::fs::write(&path, &png_bytes).map_err(|e| ReadError::Retryable(e.to_string()))?;
        let again = render_preview(&path, MediaType::Png, 0, 90, PreviewLimits::default())?;
        let decoded = image::load_from_memory(&again)
            .map_err(|e| ReadError::Terminal(e.to_string()))?
            .to_luma8();
        assert_eq!(decoded.dimensions(), (2, 4), "turned a quarter");
        assert!(render_preview(&path, MediaType::Png, 1, 0, PreviewLimits::default()).is_err());
        Ok(())
    }
}
