//! Decoding PNG, JPEG and (multi-page) TIFF uploads to 8-bit grayscale, refusing oversized
//! images from their headers before any pixel buffer is allocated.
//!
//! PNG and JPEG go through the `image` crate with `image::Limits`; TIFF goes through the `tiff`
//! crate directly because `image` reads only a TIFF's first page. Both are pure Rust, so a
//! malformed file is an error value, never memory corruption.

use crate::gray::Gray;
use crate::{resolution, ReadError};
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};
use std::io::Cursor;
use tiff::decoder::{Decoder as TiffDecoder, DecodingResult, Limits as TiffLimits};
use tiff::ColorType;

/// Decodes a one-page PNG or JPEG, with the resolution it records (see [`crate::resolution`]).
/// EXIF orientation is applied, so a phone photo stored sideways with an orientation tag
/// arrives upright.
pub(crate) fn decode_single(
    bytes: &[u8],
    format: ImageFormat,
    max_pixels: u64,
) -> Result<(Gray, Option<u32>), ReadError> {
    let (img, _) = decode(bytes, format, max_pixels, true)?;
    let dpi = match format {
        ImageFormat::Png => resolution::png_dpi(bytes),
        ImageFormat::Jpeg => resolution::jpeg_dpi(bytes),
        _ => None,
    };
    Ok((img, dpi))
}

/// Decodes a JPEG embedded in a PDF, with the number of colour components it stores: a PDF
/// draws the pixels as they are stored, so an EXIF orientation tag is ignored (as PDF viewers
/// do).
pub(crate) fn decode_embedded_jpeg(bytes: &[u8], max_pixels: u64) -> Result<(Gray, u8), ReadError> {
    decode(bytes, ImageFormat::Jpeg, max_pixels, false)
}

/// The image in gray and how many colour channels it stored (alpha included).
fn decode(
    bytes: &[u8],
    format: ImageFormat,
    max_pixels: u64,
    apply_orientation: bool,
) -> Result<(Gray, u8), ReadError> {
    let name = format!("{format:?}").to_uppercase();
    let bad = |e: image::ImageError| {
        ReadError::Terminal(format!("page 1: the {name} image cannot be decoded: {e}"))
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let side = u32::try_from(max_pixels).unwrap_or(u32::MAX);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(side);
    limits.max_image_height = Some(side);
    // The output buffer at 8 bytes a pixel (RGBA16) plus decoder scratch.
    limits.max_alloc = Some(max_pixels.saturating_mul(8).saturating_add(64 << 20));
    reader.limits(limits);
    let mut decoder = reader
        .into_decoder()
        .map_err(|e| oversize_or(e, &name, max_pixels, bad))?;
    let (w, h) = decoder.dimensions();
    check_pixels(w, h, max_pixels, 1)?;
    let orientation = apply_orientation
        .then(|| decoder.orientation())
        .transpose()
        .map_err(bad)?;
    let channels = decoder.original_color_type().channel_count();
    let mut img =
        DynamicImage::from_decoder(decoder).map_err(|e| oversize_or(e, &name, max_pixels, bad))?;
    if let Some(orientation) = orientation {
        img.apply_orientation(orientation);
    }
    Ok((to_gray(img), channels))
}

fn oversize_or(
    e: image::ImageError,
    name: &str,
    max_pixels: u64,
    bad: impl Fn(image::ImageError) -> ReadError,
) -> ReadError {
    match e {
        image::ImageError::Limits(_) => ReadError::Terminal(format!(
            "page 1: the {name} image is larger than the limit of {max_pixels} pixels"
        )),
        e => bad(e),
    }
}

fn check_pixels(w: u32, h: u32, max_pixels: u64, page: u32) -> Result<(), ReadError> {
    let pixels = u64::from(w) * u64::from(h);
    if pixels > max_pixels {
        return Err(ReadError::Terminal(format!(
            "page {page}: the image is {w}×{h} pixels, over the limit of {max_pixels}"
        )));
    }
    if pixels == 0 {
        return Err(ReadError::Terminal(format!(
            "page {page}: the image is empty ({w}×{h})"
        )));
    }
    Ok(())
}

/// Flattens onto white (a transparent background must not read as black) and drops colour
/// with the weights poppler's `-gray` rendering uses (0.299, 0.587, 0.114), so a colour scan
/// reads the same decoded here or rendered by `pdftoppm`.
fn to_gray(img: DynamicImage) -> Gray {
    let (w, h) = (img.width(), img.height());
    let pixels = match img {
        DynamicImage::ImageLuma8(g) => g.into_raw(),
        img if img.color().has_alpha() => img
            .into_rgba8()
            .pixels()
            .map(|p| over_white(luma(p[0], p[1], p[2]), p[3]))
            .collect(),
        img if img.color().has_color() => img
            .into_rgb8()
            .pixels()
            .map(|p| luma(p[0], p[1], p[2]))
            .collect(),
        img => img.into_luma8().into_raw(),
    };
    Gray {
        width: w,
        height: h,
        pixels,
    }
}

fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((299 * u32::from(r) + 587 * u32::from(g) + 114 * u32::from(b)) / 1000) as u8
}

fn over_white(v: u8, alpha: u8) -> u8 {
    let a = u32::from(alpha);
    ((u32::from(v) * a + 255 * (255 - a)) / 255) as u8
}

fn tiff_limits(max_pixels: u64) -> TiffLimits {
    let bytes = usize::try_from(max_pixels.saturating_mul(8)).unwrap_or(usize::MAX);
    let mut limits = TiffLimits::default();
    limits.decoding_buffer_size = bytes;
    limits.intermediate_buffer_size = bytes;
    limits
}

fn tiff_error(page: u32, e: tiff::TiffError) -> ReadError {
    match e {
        tiff::TiffError::LimitsExceeded => ReadError::Terminal(format!(
            "page {page}: the TIFF image exceeds the decoding limits"
        )),
        e => ReadError::Terminal(format!("page {page}: the TIFF cannot be decoded: {e}")),
    }
}

/// Counts a TIFF's pages by walking its directories, checking every page's size on the way
/// and stopping as soon as the count passes `max_pages`.
pub(crate) fn tiff_page_count(
    bytes: &[u8],
    max_pages: u32,
    max_pixels: u64,
) -> Result<u32, ReadError> {
    let mut dec = TiffDecoder::new(Cursor::new(bytes))
        .map_err(|e| tiff_error(1, e))?
        .with_limits(tiff_limits(max_pixels));
    let mut pages = 0u32;
    loop {
        pages += 1;
        if pages > max_pages {
            return Err(ReadError::Terminal(format!(
                "the TIFF has more than {max_pages} pages, the limit"
            )));
        }
        let (w, h) = dec.dimensions().map_err(|e| tiff_error(pages, e))?;
        check_pixels(w, h, max_pixels, pages)?;
        if !dec.more_images() {
            return Ok(pages);
        }
        dec.next_image().map_err(|e| tiff_error(pages + 1, e))?;
    }
}

/// Decodes page `index` (0-based) of a TIFF, with the resolution its tags record.
pub(crate) fn decode_tiff_page(
    bytes: &[u8],
    index: u32,
    max_pixels: u64,
) -> Result<(Gray, Option<u32>), ReadError> {
    let page = index + 1;
    let mut dec = TiffDecoder::new(Cursor::new(bytes))
        .map_err(|e| tiff_error(page, e))?
        .with_limits(tiff_limits(max_pixels));
    dec.seek_to_image(index as usize)
        .map_err(|e| tiff_error(page, e))?;
    let (w, h) = dec.dimensions().map_err(|e| tiff_error(page, e))?;
    check_pixels(w, h, max_pixels, page)?;
    let color = dec.colortype().map_err(|e| tiff_error(page, e))?;
    let dpi = resolution::tiff_dpi(&mut dec);
    let data = dec.read_image().map_err(|e| tiff_error(page, e))?;
    let gray = tiff_to_gray(w, h, color, data).ok_or_else(|| {
        ReadError::Terminal(format!(
            "page {page}: unsupported TIFF pixel format {color:?}"
        ))
    })?;
    Ok((gray, dpi))
}

/// Converts the pixel layouts scanners produce (bilevel, gray, RGB, CMYK, with or without
/// alpha; 8 or 16 bits) to 8-bit gray. Returns `None` for anything else or a short buffer.
fn tiff_to_gray(w: u32, h: u32, color: ColorType, data: DecodingResult) -> Option<Gray> {
    let n = w as usize * h as usize;
    // Samples normalized to 8 bits, with the number per pixel.
    let (samples, per_pixel): (Vec<u8>, usize) = match (color, data) {
        (ColorType::Gray(bits @ (1 | 2 | 4)), DecodingResult::U8(v)) => {
            // Rows are packed MSB-first and padded to a whole byte.
            let bits = bits as usize;
            let stride = (w as usize * bits).div_ceil(8);
            let max = (1u16 << bits) - 1;
            let mut out = Vec::with_capacity(n);
            for row in 0..h as usize {
                let line = v.get(row * stride..(row + 1) * stride)?;
                for x in 0..w as usize {
                    let bit = x * bits;
                    let val = (line[bit / 8] >> (8 - bits - bit % 8)) as u16 & max;
                    out.push((val * 255 / max) as u8);
                }
            }
            (out, 1)
        }
        (c, DecodingResult::U8(v)) if c.bit_depth() == 8 => (v, samples_of(c)?),
        (c, DecodingResult::U16(v)) if c.bit_depth() == 16 => {
            (v.iter().map(|s| (s >> 8) as u8).collect(), samples_of(c)?)
        }
        _ => return None,
    };
    let px = samples.get(..n.checked_mul(per_pixel)?)?;
    let pixels: Vec<u8> = match color {
        ColorType::Gray(_) => px.to_vec(),
        ColorType::GrayA(_) => px.chunks_exact(2).map(|p| over_white(p[0], p[1])).collect(),
        ColorType::RGB(_) => px.chunks_exact(3).map(|p| luma(p[0], p[1], p[2])).collect(),
        ColorType::RGBA(_) => px
            .chunks_exact(4)
            .map(|p| over_white(luma(p[0], p[1], p[2]), p[3]))
            .collect(),
        ColorType::CMYK(_) | ColorType::CMYKA(_) => px
            .chunks_exact(per_pixel)
            .map(|p| {
                let k = 255 - u32::from(p[3]);
                let ch = |c: u8| ((255 - u32::from(c)) * k / 255) as u8;
                luma(ch(p[0]), ch(p[1]), ch(p[2]))
            })
            .collect(),
        _ => return None,
    };
    Gray::new(w, h, pixels)
}

fn samples_of(c: ColorType) -> Option<usize> {
    Some(match c {
        ColorType::Gray(_) => 1,
        ColorType::GrayA(_) => 2,
        ColorType::RGB(_) => 3,
        ColorType::RGBA(_) => 4,
        ColorType::CMYK(_) => 4,
        ColorType::CMYKA(_) => 5,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bilevel_rows_unpack_with_padding() {
        // 3×2, 1 bit: row 0 = 1 0 1 (0b101_00000), row 1 = 0 1 0.
        let g = tiff_to_gray(
            3,
            2,
            ColorType::Gray(1),
            DecodingResult::U8(vec![0b1010_0000, 0b0100_0000]),
        )
        .unwrap();
        assert_eq!(g.pixels, vec![255, 0, 255, 0, 255, 0]);
    }

    #[test]
    fn colour_and_alpha_flatten_to_gray() {
        let g = tiff_to_gray(
            2,
            1,
            ColorType::RGBA(8),
            DecodingResult::U8(vec![0, 0, 0, 0, 0, 0, 0, 255]),
        )
        .unwrap();
        assert_eq!(
            g.pixels,
            vec![255, 0],
            "transparent is white, opaque black stays black"
        );
        let g = tiff_to_gray(1, 1, ColorType::Gray(16), DecodingResult::U16(vec![0x8000])).unwrap();
        assert_eq!(g.pixels, vec![0x80]);
        assert!(
            tiff_to_gray(2, 2, ColorType::Gray(8), DecodingResult::U8(vec![1, 2, 3])).is_none(),
            "short buffer"
        );
        assert!(tiff_to_gray(1, 1, ColorType::Palette(8), DecodingResult::U8(vec![1])).is_none());
    }
}
