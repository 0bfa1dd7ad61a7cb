//! Page previews for people: one page of a stored file as a small grayscale PNG, turned the
//! way its reading turned it, so that word boxes (relative to the upright page) fall on the
//! right pixels when drawn over it.
//!
//! The same decoders as reading are used (EXIF orientation applied, TIFF pages by index,
//! PDF pages by `pdftoppm` with the crop box), with the same header checks before decoding.
//!
//! A PDF page's size is read (`pdfinfo`) before it is rendered, and the page is rendered at
//! the resolution its preview needs, not more: a page may be up to 200×200 inches, which at
//! the usual 120 DPI is 576 million pixels that `pdftoppm` would rasterise in full (memory
//! and a core for many seconds) only for the result to be refused by the output cap.

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
        MediaType::Pdf => {
            let dpi = pdf_preview_dpi(path, index, &limits)?;
            pdf::render_page(path, index + 1, dpi, limits.max_pixels, limits.timeout)?
        }
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

/// The resolution page `index` (0-based) of the PDF at `path` is previewed at:
/// [`PDF_PREVIEW_DPI`], or less for a page whose longer side would pass `max_side` (pixels
/// beyond those are thrown away by [`fit`] anyway). Refused when even that is over
/// `max_pixels` (a page thousands of inches long).
fn pdf_preview_dpi(path: &Path, index: u32, limits: &PreviewLimits) -> Result<u32, ReadError> {
    let page = index + 1;
    let info = pdf::pdf_info(path, page, limits.timeout)?;
    if page > info.pages {
        return Err(ReadError::Terminal(format!(
            "the document has {} pages, not {page}",
            info.pages
        )));
    }
    let size = info
        .sizes
        .get(index as usize)
        .copied()
        .flatten()
        .ok_or_else(|| {
            ReadError::Terminal(format!("page {page}: the PDF gives this page no size"))
        })?;
    let longer_pt = size.width_pt.max(size.height_pt).max(1.0);
    let needed = (f64::from(limits.max_side.max(16)) * 72.0 / longer_pt).ceil();
    let dpi = (needed.clamp(1.0, f64::from(PDF_PREVIEW_DPI))) as u32;
    let pixels = size.pixels_at(dpi);
    if pixels > limits.max_pixels {
        return Err(ReadError::Terminal(format!(
            "page {page}: {:.0}×{:.0} pt is {pixels} pixels even at {dpi} DPI, over the preview limit of {}",
            size.width_pt, size.height_pt, limits.max_pixels
        )));
    }
    Ok(dpi)
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

    /// A one-page PDF whose page is `width`×`height` pt, with a line across it.
    fn pdf_page(width: u32, height: u32) -> Vec<u8> {
        use ironclad_inspect::fixtures::{pdf_from_objects, pdf_stream};
        let ink = format!("10 w 0 0 m {width} {height} l S");
        pdf_from_objects(
            &[
                b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
                format!(
                    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] /Contents 4 0 R >>"
                )
                .into_bytes(),
                pdf_stream("", ink.as_bytes()),
            ],
            "",
        )
    }

    fn preview_of(pdf: &[u8]) -> Result<(u32, u32), ReadError> {
        let dir = tempfile::tempdir().map_err(|e| ReadError::Retryable(e.to_string()))?;
        let path = dir.path().join("p.pdf");
        std::fs::write(&path, pdf).map_err(|e| ReadError::Retryable(e.to_string()))?;
        let png = render_preview(&path, MediaType::Pdf, 0, 0, PreviewLimits::default())?;
        let decoded = image::load_from_memory(&png)
            .map_err(|e| ReadError::Terminal(e.to_string()))?
            .to_luma8();
        Ok(decoded.dimensions())
    }

    /// The largest page PDF allows, 200×200 inches, is 576 MP at the usual 120 DPI: it is
    /// rendered at the resolution its preview needs instead (quickly, not refused), and
    /// an ordinary page keeps its resolution. Needs poppler-utils.
    #[test]
    fn a_huge_pdf_page_is_previewed_at_the_resolution_it_needs() -> Result<(), ReadError> {
        let started = std::time::Instant::now();
        let (w, h) = preview_of(&pdf_page(14_400, 14_400))?;
        assert!(w <= 1400 && h <= 1400 && w >= 1000, "{w}×{h}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        // A4 at 120 DPI is 992×1403, fitted to 1400 on its longer side.
        let (w, h) = preview_of(&pdf_page(595, 842))?;
        assert_eq!(h, 1400, "{w}×{h}");
        Ok(())
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
