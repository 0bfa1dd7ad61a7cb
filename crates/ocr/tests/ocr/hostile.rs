//! Untrusted input: every bad file is a quick `ReadError::Terminal` naming what is wrong,
//! never a panic, a hang or a huge allocation.

use crate::common;

use common::{pdf, Page};
use ironclad_core::media::MediaType;
use ironclad_inspect::fixtures;
use ironclad_ocr::{PageReader, ReadError, ReadOptions};
use std::time::{Duration, Instant};

fn reader() -> PageReader {
    PageReader::new(
        ReadOptions {
            dpi: 150,
            threads: 2,
            max_pages: 20,
            ..ReadOptions::default()
        },
        None,
    )
}

/// Reads `bytes` as `media`, expecting a terminal error within `within`; returns its message.
fn refused(bytes: &[u8], media: MediaType, within: Duration) -> String {
    let r = reader();
    let started = Instant::now();
    let result = r.read_bytes(bytes, media);
    let took = started.elapsed();
    assert!(took < within, "{media:?} took {took:?}");
    assert_eq!(r.ocr_calls(), 0, "refused input must not reach OCR");
    match result {
        Err(ReadError::Terminal(m)) => {
            println!("{media:?} refused in {took:?}: {m}");
            m
        }
        other => panic!("expected Terminal for {media:?}, got {other:?}"),
    }
}

const QUICK: Duration = Duration::from_secs(3);

#[test]
fn pdf_with_a_huge_page_is_refused_without_rendering() {
    // 100 000 pt square at 150 DPI would be 4.3 × 10^10 pixels; the page has no text, so it
    // would go to the renderer if the size were not checked first.
    let mut doc = pdf(&[Page {
        width_pt: 100_000.0,
        height_pt: 100_000.0,
        lines: &[],
        font_size: 12,
        image: None,
        jpeg: false,
    }]);
    let m = refused(&doc, MediaType::Pdf, QUICK);
    assert!(
        m.starts_with("page 1:") && m.contains("over the limit"),
        "{m}"
    );
    // A small crop box does not hide the media box.
    let pos = doc.windows(9).position(|w| w == b"/MediaBox").unwrap();
    doc.splice(pos..pos, b"/CropBox [0 0 612 792] ".iter().copied());
    let xref_fixed = fix_xref(&doc);
    let m = refused(&xref_fixed, MediaType::Pdf, QUICK);
    assert!(m.contains("over the limit"), "{m}");
}

/// Rebuilds a hand-made PDF's xref after an edit shifted its objects (poppler would repair
/// it anyway, but the test should not depend on that).
fn fix_xref(doc: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(doc);
    let body_end = text.find("xref\n").unwrap();
    let mut out = doc[..body_end].to_vec();
    let mut offsets = Vec::new();
    let mut search = 0;
    while let Some(p) = text[search..body_end].find(" 0 obj\n") {
        let line_start = text[..search + p].rfind('\n').map_or(0, |n| n + 1);
        offsets.push(line_start);
        search += p + 7;
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", offsets.len() + 1).bytes());
    for off in &offsets {
        out.extend(format!("{off:010} 00000 n \n").bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            offsets.len() + 1
        )
        .bytes(),
    );
    out
}

#[test]
fn image_declaring_50000_square_is_refused_quickly() {
    let m = refused(
        &fixtures::png_bomb_header(50_000, 50_000),
        MediaType::Png,
        Duration::from_secs(1),
    );
    assert!(m.starts_with("page 1:") && m.contains("limit"), "{m}");
}

#[test]
fn tiff_declaring_a_huge_page_is_refused_quickly() {
    // The fixture's 8×8 pages, with page 2's width, height and rows per strip patched to 60 000
    // (a consistent header promising 3.6 × 10^9 pixels).
    let mut t = fixtures::tiff_pages(2);
    let ifd2 =
        u32::from_le_bytes(t[8 + 2 + 12 * 12..8 + 2 + 12 * 12 + 4].try_into().unwrap()) as usize;
    for entry in [0, 1, 7] {
        let value = ifd2 + 2 + entry * 12 + 8;
        t[value..value + 4].copy_from_slice(&60_000u32.to_le_bytes());
        t[ifd2 + 2 + entry * 12 + 2] = 4; // type LONG so the value fits
    }
    let m = refused(&t, MediaType::Tiff, Duration::from_secs(1));
    assert!(m.starts_with("page 2:") && m.contains("limit"), "{m}");
}

#[test]
fn truncated_pdf_is_refused() {
    let whole = pdf(&[
        Page::text(common::INVOICE, 12),
        Page::text(common::INVOICE, 12),
    ]);
    let m = refused(&fixtures::truncated(&whole), MediaType::Pdf, QUICK);
    assert!(m.contains("truncated"), "{m}");
}

#[test]
fn pdf_with_a_broken_body_is_refused() {
    // Ends properly but everything between header and trailer is noise.
    let mut doc = b"%PDF-1.4\n".to_vec();
    doc.extend((0..5000u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8));
    doc.extend(b"\ntrailer\n<< /Root 9 0 R >>\nstartxref\n9\n%%EOF\n");
    let m = refused(&doc, MediaType::Pdf, QUICK);
    assert!(!m.is_empty());
}

#[test]
fn encrypted_pdf_is_refused() {
    let m = refused(&fixtures::encrypted_pdf(), MediaType::Pdf, QUICK);
    assert!(m.contains("password-protected"), "{m}");
}

#[test]
fn zero_bytes_are_refused_for_every_type() {
    for media in [
        MediaType::Pdf,
        MediaType::Png,
        MediaType::Jpeg,
        MediaType::Tiff,
    ] {
        let m = refused(b"", media, Duration::from_millis(500));
        assert!(m.contains("empty"), "{m}");
    }
}

#[test]
fn bytes_of_the_wrong_type_are_refused() {
    let png = fixtures::png(8, 8);
    for media in [MediaType::Pdf, MediaType::Jpeg, MediaType::Tiff] {
        refused(&png, media, QUICK);
    }
    refused(&fixtures::html_as_jpeg(), MediaType::Jpeg, QUICK);
    refused(
        &fixtures::truncated(&fixtures::jpeg_minimal()),
        MediaType::Jpeg,
        QUICK,
    );
    refused(
        &fixtures::truncated(&fixtures::tiff_pages(3)),
        MediaType::Tiff,
        QUICK,
    );
}

#[test]
fn too_many_pages_are_refused_before_reading_any() {
    let m = refused(
        &fixtures::pdf_with_pages(21, "hello world"),
        MediaType::Pdf,
        QUICK,
    );
    assert!(m.contains("21 pages") && m.contains("limit of 20"), "{m}");
    let m = refused(&fixtures::tiff_pages(21), MediaType::Tiff, QUICK);
    assert!(m.contains("more than 20 pages"), "{m}");
}

#[test]
fn tiny_valid_images_read_as_blank_pages() {
    // Not hostile, just empty: a page with no text is a page with no words, not an error.
    let r = reader();
    for (bytes, media) in [
        (fixtures::png(64, 64), MediaType::Png),
        (fixtures::jpeg_minimal(), MediaType::Jpeg),
        (fixtures::tiff_pages(2), MediaType::Tiff),
    ] {
        let pages = r
            .read_bytes(&bytes, media)
            .unwrap_or_else(|e| panic!("{media:?}: {e:?}"));
        assert!(
            pages
                .iter()
                .all(|p| p.words.is_empty() && p.confidence == 0.0),
            "{media:?}: {pages:?}"
        );
    }
}

#[test]
fn missing_file_is_retryable() {
    let err = reader()
        .read_file(std::path::Path::new("/nonexistent/x.pdf"), MediaType::Pdf)
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
}
