//! Hostile uploads through the reading path: `sniff`, `inspect` (intake) and `PageReader`
//! (the worker). Each must end in a clear terminal error, quickly, without a panic and
//! without reaching OCR — and the same reader must then read good files as before.

use crate::evaluate::{read_options, TRADE_YAML};
use crate::truth::{fixtures_dir, workflow_field, Expected, Truth};
use ironclad_core::media::MediaType;
use ironclad_extract::{analyze, Workflow};
use ironclad_inspect::{fixtures, inspect, sniff, InspectError, InspectLimits};
use ironclad_ocr::{PageReader, ReadError};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// How long refusing one hostile file may take, at most, on a loaded 2-core machine.
const QUICK: Duration = Duration::from_secs(5);

/// What the path made of a hostile file.
struct Refusal {
    sniffed: Option<MediaType>,
    inspected: Result<ironclad_inspect::Inspection, InspectError>,
    /// The reader's terminal message.
    message: String,
}

/// Runs `bytes` through sniff, inspect and the reader. The reader gets the sniffed type or,
/// when sniffing finds none, `claimed` (what a caller trusting the file name would pass), so
/// its own defences are exercised too. Asserts a quick `ReadError::Terminal` and no OCR.
fn refuse(reader: &PageReader, bytes: &[u8], claimed: MediaType) -> Refusal {
    let started = Instant::now();
    let sniffed = sniff(bytes);
    let inspected = inspect(bytes, &InspectLimits::default());
    let inspect_took = started.elapsed();
    assert!(inspect_took < QUICK, "inspect took {inspect_took:?}");

    let ocr_before = reader.ocr_calls();
    let started = Instant::now();
    let result = reader.read_bytes(bytes, sniffed.unwrap_or(claimed));
    let took = started.elapsed();
    assert!(took < QUICK, "reading took {took:?}: {result:?}");
    assert_eq!(
        reader.ocr_calls(),
        ocr_before,
        "refused input must not reach OCR"
    );
    let message = match result {
        Err(ReadError::Terminal(m)) => m,
        other => panic!("expected ReadError::Terminal, got {other:?}"),
    };
    println!(
        "{} bytes: sniff {sniffed:?}; inspect {:?} in {inspect_took:?}; read refused in {took:?}: {message}",
        bytes.len(),
        inspected.as_ref().map_err(|e| e.to_string()),
    );
    Refusal {
        sniffed,
        inspected,
        message,
    }
}

/// A fresh reader with the product's options.
fn reader() -> PageReader {
    PageReader::new(read_options(), None)
}

/// The reader still reads: a text PDF with every field right, and a scan through OCR.
fn reader_still_works(reader: &PageReader) {
    let truth = Truth::load();
    let workflow = Workflow::from_yaml(TRADE_YAML).unwrap();
    let good = truth.file("set-01/bill-of-lading.pdf");
    let bytes = std::fs::read(good.path()).unwrap();
    let pages = reader
        .read_bytes(&bytes, sniff(&bytes).unwrap())
        .expect("a good text PDF after a hostile file");
    let a = analyze(&workflow, &pages);
    assert_eq!(a.segments.len(), 1, "{:?}", a.segments);
    let doc = &good.documents[0];
    assert_eq!(
        a.segments[0].segment.doc_type.as_deref(),
        Some("bill_of_lading")
    );
    let mut wrong = String::new();
    for (name, value) in &doc.fields {
        let expected = Expected::from_truth(name, value).unwrap();
        let chosen = a.segments[0]
            .facts
            .iter()
            .find(|f| f.field == workflow_field(name))
            .and_then(|f| f.chosen.as_ref());
        if !chosen.is_some_and(|c| expected.matches(&c.value)) {
            let _ = writeln!(wrong, "{name}: expected {value}, got {chosen:?}");
        }
    }
    assert!(wrong.is_empty(), "after a hostile file:\n{wrong}");

    let ocr_before = reader.ocr_calls();
    let scan = std::fs::read(fixtures_dir().join("set-03/packing-list.jpg")).unwrap();
    let pages = reader
        .read_bytes(&scan, MediaType::Jpeg)
        .expect("a good scan after a hostile file");
    assert!(reader.ocr_calls() > ocr_before, "the scan was not OCRed");
    let a = analyze(&workflow, &pages);
    assert_eq!(
        a.pages[0].doc_type.as_deref(),
        Some("packing_list"),
        "{:?}",
        a.pages[0]
    );
}

/// A one-page PDF with an empty page (no text layer, so it would be rendered for OCR) whose
/// media box is `width` × `height` points.
fn blank_pdf(width: u32, height: u32) -> Vec<u8> {
    let objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] \
             /Resources << >> /Contents 4 0 R >>"
        )
        .into_bytes(),
        fixtures::pdf_stream("", b""),
    ];
    fixtures::pdf_from_objects(&objects, "")
}

#[test]
fn hostile_pdf_bomb_with_a_huge_media_box() {
    let r = reader();
    // 100 000 pt square: 1.9 × 10^11 pixels at 300 DPI. A small page of the same shape is
    // read without complaint, so it is the size that is refused.
    let ok = r.read_bytes(&blank_pdf(612, 792), MediaType::Pdf);
    assert!(ok.is_ok(), "{ok:?}");
    let refusal = refuse(&r, &blank_pdf(100_000, 100_000), MediaType::Pdf);
    assert_eq!(refusal.sniffed, Some(MediaType::Pdf));
    assert!(
        refusal.message.starts_with("page 1:") && refusal.message.contains("over the limit"),
        "{}",
        refusal.message
    );
    // Intake does not render, so it need not refuse the size; if it does, it says so.
    assert!(
        matches!(
            refusal.inspected,
            Ok(_) | Err(InspectError::TooLarge { .. })
        ),
        "{:?}",
        refusal.inspected
    );
    reader_still_works(&r);
}

#[test]
fn hostile_image_declaring_50000_by_50000_pixels() {
    let r = reader();
    let refusal = refuse(
        &r,
        &fixtures::png_bomb_header(50_000, 50_000),
        MediaType::Png,
    );
    assert_eq!(refusal.sniffed, Some(MediaType::Png));
    assert!(
        matches!(refusal.inspected, Err(InspectError::TooLarge { .. })),
        "{:?}",
        refusal.inspected
    );
    assert!(refusal.message.contains("limit"), "{}", refusal.message);
    reader_still_works(&r);
}

#[test]
fn hostile_truncated_pdf() {
    let r = reader();
    let whole = fixtures::pdf_with_pages(3, "COMMERCIAL INVOICE Invoice No.: ABC-24-0123");
    let refusal = refuse(&r, &fixtures::truncated(&whole), MediaType::Pdf);
    assert_eq!(refusal.sniffed, Some(MediaType::Pdf));
    assert!(
        matches!(refusal.inspected, Err(InspectError::Unreadable { .. })),
        "{:?}",
        refusal.inspected
    );
    assert!(refusal.message.contains("truncated"), "{}", refusal.message);
    reader_still_works(&r);
}

#[test]
fn hostile_encrypted_pdf() {
    let r = reader();
    let refusal = refuse(&r, &fixtures::encrypted_pdf(), MediaType::Pdf);
    assert_eq!(refusal.sniffed, Some(MediaType::Pdf));
    assert_eq!(refusal.inspected, Err(InspectError::Encrypted));
    assert!(refusal.message.contains("password"), "{}", refusal.message);
    reader_still_works(&r);
}

#[test]
fn hostile_pdf_with_10000_pages() {
    let r = reader();
    let doc = fixtures::pdf_with_pages(10_000, "PACKING LIST");
    let refusal = refuse(&r, &doc, MediaType::Pdf);
    assert_eq!(refusal.sniffed, Some(MediaType::Pdf));
    assert_eq!(
        refusal.inspected,
        Err(InspectError::TooManyPages {
            pages: 10_000,
            max: InspectLimits::DEFAULT_MAX_PAGES
        })
    );
    assert!(
        refusal.message.contains("10000 pages") && refusal.message.contains("limit"),
        "{}",
        refusal.message
    );
    reader_still_works(&r);
}

#[test]
fn hostile_zero_byte_file() {
    let r = reader();
    for claimed in [
        MediaType::Pdf,
        MediaType::Png,
        MediaType::Jpeg,
        MediaType::Tiff,
    ] {
        let refusal = refuse(&r, b"", claimed);
        assert_eq!(refusal.sniffed, None);
        assert!(
            matches!(&refusal.inspected, Err(InspectError::Unsupported { detected }) if detected.contains("empty")),
            "{:?}",
            refusal.inspected
        );
        assert!(refusal.message.contains("empty"), "{}", refusal.message);
    }
    reader_still_works(&r);
}

#[test]
fn hostile_jpeg_that_is_really_html() {
    let r = reader();
    let html = fixtures::html_as_jpeg();
    let refusal = refuse(&r, &html, MediaType::Jpeg);
    assert_eq!(refusal.sniffed, None, "HTML must not sniff as an image");
    assert!(
        matches!(&refusal.inspected, Err(InspectError::Unsupported { detected }) if detected.contains("html")),
        "{:?}",
        refusal.inspected
    );
    assert!(!refusal.message.is_empty());
    reader_still_works(&r);
}
