//! `inspect` against every fixture, valid and broken.

use super::*;
use crate::fixtures;
use proptest::prelude::*;
use std::time::{Duration, Instant};

fn limits() -> InspectLimits {
    InspectLimits::default()
}

fn ok(bytes: &[u8]) -> (MediaType, u32) {
    match inspect(bytes, &limits()) {
        Ok(i) => (i.media_type, i.pages),
        Err(e) => panic!("expected a valid document, got {e}"),
    }
}

fn unreadable(bytes: &[u8]) -> String {
    match inspect(bytes, &limits()) {
        Err(InspectError::Unreadable { reason }) => reason,
        other => panic!("expected Unreadable, got {other:?}"),
    }
}

#[test]
fn valid_fixtures() {
    assert_eq!(ok(&fixtures::pdf_with_pages(1, "one")), (MediaType::Pdf, 1));
    assert_eq!(
        ok(&fixtures::pdf_with_pages(7, "seven")),
        (MediaType::Pdf, 7)
    );
    assert_eq!(ok(&fixtures::png(8, 8)), (MediaType::Png, 1));
    assert_eq!(ok(&fixtures::png(300, 200)), (MediaType::Png, 1));
    assert_eq!(ok(&fixtures::jpeg_minimal()), (MediaType::Jpeg, 1));
    assert_eq!(ok(&fixtures::tiff_pages(1)), (MediaType::Tiff, 1));
    assert_eq!(ok(&fixtures::tiff_pages(5)), (MediaType::Tiff, 5));
}

#[test]
fn truncated_fixtures_are_unreadable() {
    for valid in [
        fixtures::pdf_with_pages(3, "cut"),
        fixtures::png(64, 64),
        fixtures::jpeg_minimal(),
        fixtures::tiff_pages(3),
        fixtures::tiff_pages(1),
    ] {
        unreadable(&fixtures::truncated(&valid));
        // Cut elsewhere too (a PDF may lose only the newline after `%%EOF`).
        for cut in [valid.len() - 2, valid.len() - 7, valid.len() * 3 / 4, 40] {
            assert!(
                inspect(&valid[..cut], &limits()).is_err(),
                "cut at {cut} of {} accepted",
                valid.len()
            );
        }
    }
}

#[test]
fn pdf_cut_anywhere_is_refused() {
    let pdf = fixtures::pdf_with_pages(2, "every cut");
    // Only the newline after `%%EOF` may go.
    let complete = pdf.len() - 1;
    assert_eq!(&pdf[complete - 5..complete], b"%%EOF");
    for cut in 0..complete {
        assert!(inspect(&pdf[..cut], &limits()).is_err(), "cut at {cut}");
    }
    assert_eq!(ok(&pdf[..complete]), (MediaType::Pdf, 2));
}

/// `haystack` with the first `from` replaced by `to` (same length, so offsets stay right).
fn patch(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = memchr::memmem::find(haystack, from).expect("pattern present");
    let mut out = haystack.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

#[test]
fn pdf_with_a_damaged_page_is_refused() {
    // Every xref offset stays right, but one object no longer parses: lopdf skips it
    // silently; the page walk must notice.
    let pdf = fixtures::pdf_with_pages(3, "damaged");
    let page = patch(
        &pdf,
        b"6 0 obj\n<< /Type /Page /Parent",
        b"6 0 obj\n<< /Type /Page )Parent",
    );
    assert!(unreadable(&page).contains("page object 6 0"));
    let content = patch(&pdf, b"7 0 obj\n", b"7 0 obx\n");
    assert!(unreadable(&content).contains("content of page 2"));
}

#[test]
fn encrypted_pdf() {
    assert_eq!(
        inspect(&fixtures::encrypted_pdf(), &limits()),
        Err(InspectError::Encrypted)
    );
}

#[test]
fn pixel_bombs_are_too_large() {
    assert!(matches!(
        inspect(&fixtures::png_bomb_header(50_000, 50_000), &limits()),
        Err(InspectError::TooLarge { .. })
    ));
    // Within the limit, the same structure is merely an empty image.
    assert_eq!(
        ok(&fixtures::png_bomb_header(100, 100)),
        (MediaType::Png, 1)
    );
    let small = InspectLimits {
        max_pixels_per_page: 63,
        ..limits()
    };
    for bytes in [
        fixtures::jpeg_minimal(),
        fixtures::tiff_pages(2),
        fixtures::png(8, 8),
    ] {
        assert!(matches!(
            inspect(&bytes, &small),
            Err(InspectError::TooLarge { .. })
        ));
    }
}

#[test]
fn unsupported_inputs() {
    let detected = |bytes: &[u8]| match inspect(bytes, &limits()) {
        Err(InspectError::Unsupported { detected }) => detected,
        other => panic!("expected Unsupported, got {other:?}"),
    };
    assert_eq!(detected(&fixtures::html_as_jpeg()), "text/html");
    assert_eq!(detected(b""), "empty file");
    assert_eq!(
        detected(b"PK\x03\x04rest"),
        "application/zip (also .docx, .xlsx)"
    );
    assert_eq!(detected(b"just some text"), "text/plain");
}

#[test]
fn too_many_pages_is_fast() {
    let big = fixtures::pdf_with_pages(10_000, "many");
    let started = Instant::now();
    let result = inspect(
        &big,
        &InspectLimits {
            max_pages: 500,
            ..limits()
        },
    );
    let took = started.elapsed();
    assert_eq!(
        result,
        Err(InspectError::TooManyPages {
            pages: 10_000,
            max: 500
        })
    );
    assert!(took.as_secs_f64() < 2.0, "took {took:?}");

    // A page tree root that under-declares its pages is counted by walking it.
    let lying = patch(
        &fixtures::pdf_with_pages(3, "liar"),
        b"/Count 3",
        b"/Count 1",
    );
    let max_two = InspectLimits {
        max_pages: 2,
        ..limits()
    };
    assert_eq!(
        inspect(&lying, &max_two),
        Err(InspectError::TooManyPages { pages: 3, max: 2 })
    );
    assert_eq!(ok(&lying), (MediaType::Pdf, 3));

    let tiff = fixtures::tiff_pages(3);
    assert_eq!(
        inspect(
            &tiff,
            &InspectLimits {
                max_pages: 2,
                ..limits()
            }
        ),
        Err(InspectError::TooManyPages { pages: 3, max: 2 })
    );
}

#[test]
fn png_structure() {
    let png = fixtures::png(4, 4);
    // Trailing bytes after IEND are ignored, as decoders do.
    let mut trailing = png.clone();
    trailing.extend_from_slice(b"junk");
    assert_eq!(ok(&trailing), (MediaType::Png, 1));
    // No IDAT before IEND.
    let header_only: Vec<u8> = png[..33]
        .iter()
        .chain(&png[png.len() - 12..])
        .copied()
        .collect();
    assert!(unreadable(&header_only).contains("no image data"));
    // A flipped bit in the header fails its CRC.
    let mut flipped = png.clone();
    flipped[18] ^= 1;
    unreadable(&flipped);
}

#[test]
fn jpeg_structure() {
    let jpeg = fixtures::jpeg_minimal();
    let mut padded = jpeg.clone();
    padded.extend_from_slice(&[0; 16]);
    assert_eq!(ok(&padded), (MediaType::Jpeg, 1));
    let mut trailing = jpeg.clone();
    trailing.extend_from_slice(b"<html>");
    unreadable(&trailing);
    assert!(unreadable(b"\xff\xd8\xff\xd9").contains("no image data"));
    unreadable(b"\xff\xd8\xff");
}

#[test]
fn tiff_loops_and_bad_offsets() {
    let mut looped = fixtures::tiff_pages(3);
    // Point page 3's "next IFD" back at page 2 (pages are 230 bytes, IFDs 150).
    let page3_next = 8 + 2 * 230 + 146;
    looped[page3_next..page3_next + 4].copy_from_slice(&(8u32 + 230).to_le_bytes());
    assert!(unreadable(&looped).contains("loops"));

    let mut self_loop = fixtures::tiff_pages(1);
    self_loop[8 + 146..8 + 150].copy_from_slice(&8u32.to_le_bytes());
    assert!(unreadable(&self_loop).contains("loops"));

    let mut past_end = fixtures::tiff_pages(1);
    past_end[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    unreadable(&past_end);

    // Big-endian is read too.
    let be = big_endian_tiff();
    assert_eq!(ok(&be), (MediaType::Tiff, 1));
}

/// A one-page 2 × 2 big-endian TIFF built by hand.
fn big_endian_tiff() -> Vec<u8> {
    let mut out = b"MM\0*\0\0\0\x08".to_vec();
    let entries: [(u16, u16, u32); 5] = [
        (256, 3, 2 << 16),
        (257, 3, 2 << 16),
        (273, 4, 8 + 2 + 5 * 12 + 4),
        (278, 3, 2 << 16),
        (279, 4, 4),
    ];
    out.extend_from_slice(&5u16.to_be_bytes());
    for (tag, kind, value) in entries {
        out.extend_from_slice(&tag.to_be_bytes());
        out.extend_from_slice(&kind.to_be_bytes());
        out.extend_from_slice(&1u32.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&[0, 255, 255, 0]);
    out
}

#[test]
fn pdf_nesting_bomb_is_refused_not_a_crash() {
    let bomb = pdf_with_object(&format!("{}1{}", "[".repeat(50_000), "]".repeat(50_000)));
    assert!(unreadable(&bomb).contains("nested"));
}

#[test]
fn pdf_xref_stream_bomb_is_refused() {
    // A cross-reference stream inflating to 64 MiB of zeros.
    let zeros = vec![0u8; 64 << 20];
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut z, &zeros).expect("compress");
    let data = z.finish().expect("compress");
    let mut pdf = b"%PDF-1.5\n".to_vec();
    let at = pdf.len();
    pdf.extend_from_slice(
        format!(
            "1 0 obj\n<< /Type /XRef /Size 2 /W [1 2 1] /Filter /Fl#61teDecode /Length {} >>\nstream\n",
            data.len()
        )
        .as_bytes(),
    );
    pdf.extend_from_slice(&data);
    pdf.extend_from_slice(format!("\nendstream\nendobj\nstartxref\n{at}\n%%EOF\n").as_bytes());
    assert!(matches!(
        inspect(&pdf, &limits()),
        Err(InspectError::TooLarge { .. })
    ));
}

/// A one-page PDF with one extra object holding `body`.
fn pdf_with_object(body: &str) -> Vec<u8> {
    let valid = fixtures::pdf_with_pages(1, "x");
    let xref_at = memchr::memmem::find(&valid, b"xref\n").expect("xref");
    let trailer_at = memchr::memmem::find(&valid, b"trailer").expect("trailer");
    let mut out = valid[..xref_at].to_vec();
    let extra_at = out.len();
    out.extend_from_slice(format!("6 0 obj\n{body}\nendobj\n").as_bytes());
    let new_xref = out.len();
    out.extend_from_slice(&patch(&valid[xref_at..trailer_at], b"0 6\n", b"0 7\n"));
    out.extend_from_slice(
        format!(
            "{extra_at:010} 00000 n \ntrailer\n<< /Size 7 /Root 1 0 R >>\nstartxref\n{new_xref}\n%%EOF\n"
        )
        .as_bytes(),
    );
    out
}

#[test]
fn pdf_too_costly_to_load_is_refused_quickly() {
    // 600,000 xref entries in a 12 MB file: lopdf 0.38 would rescan the file per entry.
    let valid = fixtures::pdf_with_pages(1, "x");
    let xref_at = memchr::memmem::find(&valid, b"xref\n").expect("xref");
    let mut pdf = valid[..xref_at].to_vec();
    let entries = 600_000;
    pdf.extend_from_slice(format!("xref\n0 {entries}\n0000000000 65535 f \n").as_bytes());
    for _ in 1..entries {
        pdf.extend_from_slice(b"0000000015 00000 n \n");
    }
    pdf.extend_from_slice(
        format!("trailer\n<< /Size {entries} /Root 1 0 R >>\nstartxref\n{xref_at}\n%%EOF\n")
            .as_bytes(),
    );
    let started = Instant::now();
    assert!(matches!(
        inspect(&pdf, &limits()),
        Err(InspectError::TooLarge { reason }) if reason.contains("too complex")
    ));
    assert!(started.elapsed().as_secs_f64() < 5.0);
}

#[test]
fn pdf_with_extra_object_helper_is_valid() {
    assert_eq!(ok(&pdf_with_object("[1 2 3]")), (MediaType::Pdf, 1));
}

#[test]
fn error_codes_and_messages() {
    let e = InspectError::TooManyPages { pages: 9, max: 5 };
    assert_eq!(e.code(), "too_many_pages");
    assert_eq!(
        e.to_string(),
        "the document has 9 pages; at most 5 are accepted per file"
    );
    assert_eq!(InspectError::Encrypted.code(), "encrypted_document");
}

fn mutate(mut bytes: Vec<u8>, flips: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    let len = bytes.len();
    for &(at, bit) in flips {
        bytes[at % len] ^= 1 << (bit % 8);
    }
    if let Some(cut) = cut {
        bytes.truncate(cut % (len + 1));
    }
    bytes
}

proptest! {
    // Bounded like every fuzz property (IRONCLAD_FUZZ_CASES; see crates/fuzz).
    #![proptest_config(ironclad_fuzz::config_scaled(2))]

    #[test]
    fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = inspect(&bytes, &limits());
    }

    #[test]
    fn never_panics_on_damaged_fixtures(
        which in 0usize..5,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let valid = match which {
            0 => fixtures::pdf_with_pages(2, "prop"),
            1 => fixtures::png(5, 3),
            2 => fixtures::jpeg_minimal(),
            3 => fixtures::tiff_pages(2),
            _ => fixtures::encrypted_pdf(),
        };
        let damaged = mutate(valid, &flips, cut);
        let _ = inspect(&damaged, &limits());
    }

    #[test]
    fn never_panics_on_magic_prefixed_noise(
        which in 0usize..5,
        noise in proptest::collection::vec(any::<u8>(), 0..1024),
    ) {
        let magic: &[u8] = match which {
            0 => b"%PDF-1.7\n",
            1 => b"\x89PNG\r\n\x1a\n",
            2 => b"\xff\xd8\xff",
            3 => b"II*\0",
            _ => b"MM\0*",
        };
        let mut bytes = magic.to_vec();
        bytes.extend_from_slice(&noise);
        let _ = inspect(&bytes, &limits());
    }
}

/// Pieces of PDF syntax, so random documents reach the xref preflight and `lopdf`.
const PDF_SOUP: &[&str] = &[
    "<<",
    ">>",
    "[",
    "]",
    "/W",
    "/Prev",
    "/XRefStm",
    "/Root",
    "/Pages",
    "/Count",
    "/Kids",
    "/Type",
    "/Page",
    "/XRef",
    "/ObjStm",
    "/Filter",
    "/FlateDecode",
    "/Encrypt",
    "/Fl#61teDecode",
    "1",
    "0",
    "2",
    "12",
    "-3",
    "R",
    "obj",
    "endobj",
    "stream\n",
    "\nendstream",
    "xref\n",
    "trailer",
    "n",
    "f",
    "(",
    ")",
    "\\",
    "<ab",
    ">",
    "%c\n",
    " ",
    "\n",
    "#",
    "0000000009 00000 n \n",
];

proptest! {
    #![proptest_config(ironclad_fuzz::config())]

    #[test]
    fn never_panics_on_pdf_shaped_soup(
        pieces in proptest::collection::vec(0..PDF_SOUP.len(), 0..300),
        startxref in 0usize..4000,
    ) {
        let mut pdf = b"%PDF-1.7\n".to_vec();
        for i in pieces {
            pdf.extend_from_slice(PDF_SOUP[i].as_bytes());
        }
        pdf.extend_from_slice(format!("\nstartxref\n{}\n%%EOF\n", startxref % pdf.len()).as_bytes());
        let _ = inspect(&pdf, &limits());
    }
}

/// The fixture re-saved by `lopdf` with object streams and a cross-reference stream, plus an
/// extra object (which `lopdf` packs into an object stream).
fn modern_pdf_with(extra: Option<lopdf::Object>) -> Vec<u8> {
    let mut doc = lopdf::Document::load_mem(&fixtures::pdf_with_pages(3, "modern")).expect("load");
    if let Some(object) = extra {
        doc.add_object(object);
    }
    let mut out = Vec::new();
    doc.save_modern(&mut out).expect("save");
    out
}

#[test]
fn modern_pdf_with_object_streams() {
    let pdf = modern_pdf_with(None);
    assert!(memchr::memmem::find(&pdf, b"/ObjStm").is_some());
    assert!(memchr::memmem::find(&pdf, b"/XRef").is_some());
    assert_eq!(ok(&pdf), (MediaType::Pdf, 3));
}

#[test]
fn object_stream_bombs_are_refused() {
    // Deep nesting hidden inside a compressed object stream, out of the raw scan's sight.
    let mut deep = lopdf::Object::Integer(1);
    for _ in 0..=pdf_guard::MAX_NESTING {
        deep = lopdf::Object::Array(vec![deep]);
    }
    assert!(unreadable(&modern_pdf_with(Some(deep))).contains("nested"));

    // 24 MiB of zeros compress to a few KiB.
    let huge = lopdf::Object::string_literal(vec![b'0'; 24 << 20]);
    assert!(matches!(
        inspect(&modern_pdf_with(Some(huge)), &limits()),
        Err(InspectError::TooLarge { .. })
    ));
}

/// A TIFF whose `pages` IFDs all point at one table of `strips` empty strips: valid strip by
/// strip, but each page re-reads the whole table.
fn tiff_sharing_one_strip_table(pages: u32, strips: u32) -> Vec<u8> {
    const IFD_LEN: u32 = 2 + 4 * 12 + 4;
    let offsets = 8u32;
    let sizes = offsets + 4 * strips;
    let first = sizes + 4 * strips;
    let mut out = b"II*\0".to_vec();
    out.extend_from_slice(&first.to_le_bytes());
    // Every strip at offset 0 with length 0: inside the file.
    out.resize(first as usize, 0);
    for page in 0..pages {
        let next = if page + 1 < pages {
            first + (page + 1) * IFD_LEN
        } else {
            0
        };
        out.extend_from_slice(&4u16.to_le_bytes());
        let entries: [(u16, u16, u32, u32); 4] = [
            (256, 3, 1, 8),
            (257, 3, 1, 8),
            (273, 4, strips, offsets),
            (279, 4, strips, sizes),
        ];
        for (tag, kind, count, value) in entries {
            out.extend_from_slice(&tag.to_le_bytes());
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(&next.to_le_bytes());
    }
    out
}

/// Found while writing the fuzz properties (`crates/fuzz`; random edits rarely build it): 400 pages
/// sharing a 250,000-strip table made `inspect` read 10⁸ entries from a 2 MB upload — and a
/// 25 MiB one 10¹² — on a blocking thread the intake timeout cannot stop.
#[test]
fn regression_tiff_pages_sharing_one_strip_table_are_refused_quickly() {
    let bytes = tiff_sharing_one_strip_table(400, 250_000);
    let started = Instant::now();
    let answer = inspect(&bytes, &limits());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(&answer, Err(InspectError::Unreadable { reason }) if reason.contains("share strip tables")),
        "{answer:?}"
    );
    // The budget is the file's size: two pages may share a table, costing twice its reads.
    let shared_once = tiff_sharing_one_strip_table(2, 1000);
    assert_eq!(inspect(&shared_once, &limits()).map(|i| i.pages), Ok(2));
    let shared_thrice = tiff_sharing_one_strip_table(3, 1000);
    assert!(inspect(&shared_thrice, &limits()).is_err());
}

/// Pages past the limit are counted without being checked, so the count stays exact.
#[test]
fn regression_tiff_page_count_past_the_limit_is_exact_and_quick() {
    let bytes = fixtures::tiff_pages(40);
    let limits = InspectLimits {
        max_pages: 3,
        ..limits()
    };
    assert_eq!(
        inspect(&bytes, &limits),
        Err(InspectError::TooManyPages { pages: 40, max: 3 })
    );
}

/// Found by the fuzz properties (`crates/fuzz`, `load_pdf_of_damaged_pdfs`): with `/Count`
/// damaged (here `/?ount`), the early refusal had nothing to read and `load_pdf` returned all
/// three pages under a limit of one (`inspect` refused it only by its own later check).
#[test]
fn regression_load_pdf_holds_the_page_limit_without_a_count() {
    let pdf = patch(&fixtures::pdf_with_pages(3, "three"), b"/Count", b"/?ount");
    assert!(matches!(
        load_pdf(&pdf, 1, pdf::LOAD_COST_BUDGET),
        Err(InspectError::TooManyPages { pages: 3, max: 1 })
    ));
    assert_eq!(
        load_pdf(&pdf, 3, pdf::LOAD_COST_BUDGET).map(|p| p.pages.len()),
        Ok(3)
    );
}
