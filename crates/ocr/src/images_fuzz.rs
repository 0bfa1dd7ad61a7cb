//! Fuzz properties of the image decoders (see `crates/fuzz` and the README's "Fuzzing
//! untrusted input"): damaged PNG, JPEG and TIFF files decode or fail with a terminal error
//! within the time budget, never past the pixel limit, and a header declaring more pixels
//! than the limit is refused before any pixel buffer exists.

use crate::images::{decode_single, decode_tiff_page, tiff_page_count};
use crate::ReadError;
use image::ImageFormat;
use ironclad_fuzz::{config, damaged, within};
use ironclad_inspect::fixtures;
use proptest::prelude::*;

/// A one-page image of `format` (0 PNG, 1 JPEG, 2 TIFF) whose header declares `width` ×
/// `height` while holding (almost) no pixel data.
fn declaring(format: u8, width: u32, height: u32) -> Vec<u8> {
    match format {
        0 => fixtures::png_bomb_header(width, height),
        1 => {
            let mut jpeg = fixtures::jpeg_minimal();
            let sof = jpeg
                .windows(2)
                .position(|w| w == [0xff, 0xc0])
                .expect("the fixture has a frame header");
            // SOF0: length (2), precision (1), height (2), width (2).
            jpeg[sof + 5..sof + 7].copy_from_slice(&(height as u16).to_be_bytes());
            jpeg[sof + 7..sof + 9].copy_from_slice(&(width as u16).to_be_bytes());
            jpeg
        }
        _ => {
            let mut tiff = fixtures::tiff_pages(1);
            // Entries 0 and 1 (at 10 and 22) are ImageWidth and ImageLength: make them LONG.
            for (at, value) in [(10, width), (22, height)] {
                tiff[at + 2..at + 4].copy_from_slice(&4u16.to_le_bytes());
                tiff[at + 8..at + 12].copy_from_slice(&value.to_le_bytes());
            }
            tiff
        }
    }
}

/// Decodes `bytes` as `format` (page 0 for a TIFF, after counting) within the budget: the
/// decoded page's size, or the error.
fn decode(format: u8, bytes: Vec<u8>, max_pixels: u64) -> Result<(u32, u32), ReadError> {
    within("decode", move || {
        let gray = match format {
            0 => decode_single(&bytes, ImageFormat::Png, max_pixels)?.0,
            1 => decode_single(&bytes, ImageFormat::Jpeg, max_pixels)?.0,
            _ => {
                let pages = tiff_page_count(&bytes, 4, max_pixels)?;
                decode_tiff_page(&bytes, pages - 1, max_pixels)?.0
            }
        };
        Ok((gray.width, gray.height))
    })
}

fn seeds() -> Vec<Vec<u8>> {
    vec![
        fixtures::png(5, 3),
        fixtures::jpeg_minimal(),
        fixtures::tiff_pages(1),
        fixtures::tiff_pages(3),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn damaged_images_decode_within_limits(
        format in 0u8..3,
        bytes in damaged(seeds(), &[]),
        max_pixels in prop_oneof![1u64..64, Just(60_000_000)],
    ) {
        match decode(format, bytes, max_pixels) {
            Ok((w, h)) => prop_assert!(u64::from(w) * u64::from(h) <= max_pixels),
            Err(ReadError::Terminal(message)) => prop_assert!(!message.is_empty()),
            Err(other) => prop_assert!(false, "not a terminal error: {other:?}"),
        }
    }

    /// Declared sizes over the limit are refused from the header, whatever the numbers;
    /// under it, what decodes has the declared size.
    #[test]
    fn declared_size_over_the_limit_is_refused_before_decoding(
        format in 0u8..3,
        width in prop_oneof![1u32..100, 1u32..0x7fff_ffff],
        height in prop_oneof![1u32..100, 1u32..0x7fff_ffff],
        max_pixels in 1u64..10_000,
    ) {
        let (width, height) = if format == 1 {
            (width % 0xffff + 1, height % 0xffff + 1)
        } else {
            (width, height)
        };
        let answer = decode(format, declaring(format, width, height), max_pixels);
        if u64::from(width) * u64::from(height) > max_pixels {
            prop_assert!(matches!(answer, Err(ReadError::Terminal(_))), "{answer:?}");
        } else if let Ok(size) = answer {
            prop_assert_eq!(size, (width, height));
        }
    }
}
