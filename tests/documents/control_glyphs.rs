//! A text PDF whose `ToUnicode` CMap maps glyphs to U+0000 and to other control characters,
//! read the way the worker reads an upload (`sniff`, then `PageReader::read_loaded_until`) and
//! by `ironclad extract --json`.
//!
//! PostgreSQL's `text` and `jsonb` refuse U+0000: one such word made storing the job's result
//! fail on every attempt. Control characters are junk in evidence too, so none may leave the
//! reader, while the page's real text stays, with its boxes.
//!
//! Poppler (22.12, Debian bookworm) itself drops a glyph mapped to U+0000 alone, but prints
//! the other control characters as they are; the fixture has both.

use crate::evaluate::read_options;
use ironclad_core::page::{PageText, ReadMethod};
use ironclad_inspect::fixtures::{pdf_from_objects, pdf_stream};
use ironclad_inspect::sniff;
use ironclad_ocr::PageReader;
use std::io::Write as _;
use std::process::Command;
use std::sync::atomic::AtomicBool;

/// The page's lines as written in the content stream. With the CMap below, `|` reads as
/// U+0000, `~` as U+0001, `^` as U+001B (escape) and `` ` `` as U+007F (delete); every other
/// printable ASCII byte reads as itself.
const LINES: [&str; 3] = [
    "INVOICE No 2024-0042 Total EUR 1234.56",
    "Ship|per ACME | Ltd",
    "Ref~A ^ B`C",
];

/// The words that must be read (the junk glyphs removed, the rest of each word kept).
const EXPECTED: [&str; 10] = [
    "INVOICE",
    "2024-0042",
    "Total",
    "EUR",
    "1234.56",
    "ACME",
    "Ltd",
    "RefA",
    "BC",
    "Ship",
];

/// A one-page Helvetica PDF of [`LINES`] whose font carries the control-mapping CMap.
fn pdf_with_control_glyphs() -> Vec<u8> {
    let cmap = "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n\
        /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n\
        /CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n\
        1 begincodespacerange\n<00> <FF>\nendcodespacerange\n\
        1 beginbfrange\n<20> <7E> <0020>\nendbfrange\n\
        4 beginbfchar\n<7C> <0000>\n<7E> <0001>\n<5E> <001B>\n<60> <007F>\nendbfchar\n\
        endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n";
    let mut content = String::from("BT /F1 14 Tf 72 720 Td");
    for (i, line) in LINES.iter().enumerate() {
        if i > 0 {
            content.push_str(" 0 -24 Td");
        }
        content.push_str(&format!(" ({line}) Tj"));
    }
    content.push_str(" ET");
    pdf_from_objects(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>".to_vec(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding \
              /ToUnicode 6 0 R >>"
                .to_vec(),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
              /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>"
                .to_vec(),
            pdf_stream("", content.as_bytes()),
            pdf_stream("", cmap.as_bytes()),
        ],
        "",
    )
}

/// Whether `c` may appear in stored text: no control character but tab, newline and CR.
fn allowed(c: char) -> bool {
    !c.is_control() || matches!(c, '\t' | '\n' | '\r')
}

/// The fixture written to a file, as the worker finds a blob on disk.
fn fixture_file() -> (tempfile::NamedTempFile, Vec<u8>) {
    let bytes = pdf_with_control_glyphs();
    let mut file = tempfile::Builder::new()
        .prefix("control-glyphs-")
        .suffix(".pdf")
        .tempfile()
        .expect("temporary file");
    file.write_all(&bytes).expect("write the fixture");
    (file, bytes)
}

/// Asserts the page holds no control character and still holds its text, boxed.
fn assert_clean_page(page: &PageText) {
    for w in &page.words {
        assert!(
            !w.text.is_empty() && w.text.chars().all(allowed),
            "junk in word {w:?}"
        );
    }
    for expected in EXPECTED {
        let w = page
            .words
            .iter()
            .find(|w| w.text == expected)
            .unwrap_or_else(|| panic!("{expected:?} missing from {:?}", page.words));
        let b = w.bbox;
        assert!(
            0.0 <= b.x0 && b.x0 < b.x1 && b.x1 <= 1.0 && 0.0 <= b.y0 && b.y0 < b.y1 && b.y1 <= 1.0,
            "{w:?}"
        );
    }
    assert!(
        page.text()
            .starts_with("INVOICE No 2024-0042 Total EUR 1234.56\n"),
        "{:?}",
        page.text()
    );
}

#[test]
fn control_glyphs_never_leave_the_reader() {
    let (file, bytes) = fixture_file();
    let media = sniff(&bytes).expect("the fixture is a PDF");
    let reader = PageReader::new(read_options(), None);
    let pages = reader
        .read_loaded_until(file.path(), &bytes, media, &AtomicBool::new(false))
        .expect("the fixture reads");
    assert_eq!(pages.len(), 1);
    assert_eq!(pages[0].method, ReadMethod::TextLayer, "{:?}", pages[0]);
    assert_clean_page(&pages[0]);
    // What the worker stores: serde_json writes a control character as `\u00XX` (DEL as is).
    let json = serde_json::to_string(&pages).expect("pages serialize");
    assert!(
        !json.contains("\\u00") && !json.contains('\u{7f}'),
        "control characters in the stored JSON: {json}"
    );
}

#[test]
fn extract_json_of_control_glyphs_is_clean() {
    let (file, _) = fixture_file();
    let out = Command::new(env!("CARGO_BIN_EXE_ironclad"))
        .arg("extract")
        .arg("--json")
        .arg(file.path())
        .output()
        .expect("ironclad runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !stdout.contains("\\u00") && !stdout.contains('\u{7f}'),
        "control characters in the output: {stdout}"
    );
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    let page: PageText =
        serde_json::from_value(report["pages"][0].clone()).expect("the page as the reader gave it");
    assert_clean_page(&page);
}
