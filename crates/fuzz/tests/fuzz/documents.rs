//! Type sniffing, inspection (PDF page count and guard, PNG/JPEG/TIFF walks and pixel
//! limits) and the guarded PDF loader the OCR reads through.

use ironclad_core::media::MediaType;
use ironclad_fuzz::{config, config_scaled, damaged, soup, within};
use ironclad_inspect::inspect::load_pdf;
use ironclad_inspect::{fixtures, inspect, sniff, InspectError, InspectLimits, Inspection};
use proptest::prelude::*;

/// Pieces of PDF syntax inserted into damaged PDFs: the structures the guard and `lopdf`
/// branch on, and numbers that make offsets and counts lie.
const PDF_TOKENS: &[&[u8]] = &[
    b"<<",
    b">>",
    b"[",
    b"]",
    b" obj ",
    b" endobj ",
    b"stream\n",
    b"\nendstream",
    b"xref\n0 3\n",
    b"0000000009 00000 n \n",
    b"trailer",
    b"startxref\n9\n",
    b"%%EOF",
    b"/Prev 9",
    b"/XRefStm 9",
    b"/Type /XRef",
    b"/Type /ObjStm /N 2 /First 4",
    b"/Filter /FlateDecode",
    b"/DecodeParms << /Predictor 12 >>",
    b"/Length 99999999",
    b"/Count 999999",
    b"/Kids [3 0 R 3 0 R]",
    b"/Parent 2 0 R",
    b"/Contents [4 0 R]",
    b"3 0 R",
    b"/Encrypt 1 0 R",
    b"/Root 1 0 R",
    b"/W [1 2 1]",
    b"/Index [0 999999999]",
    b"(",
    b")",
    b"\\",
    b"<",
    b">",
    b"%",
    b"-1",
    b"999999999999999999999",
    b"1.5e308",
];

/// Chunks, markers and IFD entries of the image formats.
const IMAGE_TOKENS: &[&[u8]] = &[
    b"IHDR",
    b"IDAT",
    b"IEND",
    b"\0\0\0\0IEND\xaeB`\x82",
    b"\xff\xd8",
    b"\xff\xd9",
    b"\xff\xda\0\x08\x01\x01\0\0\x3f\0",
    b"\xff\xc0\0\x0b\x08\xff\xff\xff\xff\x01\x01\x11\0",
    b"\xff\xc4",
    b"\xff\xff\xff",
    b"\xff\0",
    b"\xff\xd0",
    // TIFF entries (little-endian): width, height, strip offsets/counts as LONG arrays.
    b"\x00\x01\x04\x00\x01\x00\x00\x00\xff\xff\xff\x7f",
    b"\x01\x01\x04\x00\x01\x00\x00\x00\xff\xff\xff\x7f",
    b"\x11\x01\x04\x00\xff\xff\x00\x00\x08\x00\x00\x00",
    b"\x17\x01\x04\x00\xff\xff\x00\x00\x08\x00\x00\x00",
    b"\x44\x01\x04\x00\x02\x00\x00\x00\x08\x00\x00\x00",
    b"\x08\x00\x00\x00",
];

/// PDF syntax for documents built from scratch.
const PDF_SOUP: &[&str] = &[
    "%PDF-1.7",
    "<<",
    ">>",
    "[",
    "]",
    "/Type",
    "/Catalog",
    "/Pages",
    "/Page",
    "/Kids",
    "/Count",
    "/Root",
    "/Size",
    "/Prev",
    "/XRefStm",
    "/XRef",
    "/ObjStm",
    "/W",
    "/Index",
    "/N",
    "/First",
    "/Filter",
    "/FlateDecode",
    "/Length",
    "/Contents",
    "/Parent",
    "/Encrypt",
    "/Fl#61teDecode",
    "0",
    "1",
    "2",
    "3",
    "12",
    "-3",
    "R",
    "obj",
    "endobj",
    "stream\n",
    "\nendstream",
    "xref",
    "0 4",
    "0000000009 00000 n",
    "0000000000 65535 f",
    "trailer",
    "startxref",
    "9",
    "%%EOF",
    "(",
    ")",
    "(a(b)c)",
    "<ab>",
    "\\",
    "%",
    "null",
    "true",
];

fn limits() -> InspectLimits {
    InspectLimits::default()
}

/// A big-endian TIFF of one 4 × 4 page, one strip.
fn big_endian_tiff() -> Vec<u8> {
    let mut out = b"MM\0*".to_vec();
    out.extend_from_slice(&8u32.to_be_bytes());
    let entries: &[(u16, u16, u32)] = &[
        (256, 3, 4 << 16), // a SHORT sits in the high bytes of a big-endian value
        (257, 3, 4 << 16),
        (258, 3, 8 << 16),
        (259, 3, 1 << 16),
        (262, 3, 1 << 16),
        (273, 4, 8 + 2 + 7 * 12 + 4),
        (279, 4, 16),
    ];
    out.extend_from_slice(&(entries.len() as u16).to_be_bytes());
    for &(tag, kind, value) in entries {
        out.extend_from_slice(&tag.to_be_bytes());
        out.extend_from_slice(&kind.to_be_bytes());
        out.extend_from_slice(&1u32.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&[0x80; 16]);
    out
}

/// A PDF 1.5 whose catalog and page tree sit in an object stream, indexed by a
/// cross-reference stream instead of a table: the path modern writers take. `deflate`
/// compresses both streams, as writers do (the guard then inflates them under its caps).
fn modern_pdf(deflate: bool) -> Vec<u8> {
    let filter = if deflate { " /Filter /FlateDecode" } else { "" };
    let encode = |data: &[u8]| if deflate { zlib(data) } else { data.to_vec() };
    let catalog = "<< /Type /Catalog /Pages 2 0 R >>";
    let pages = "<< /Type /Pages /Kids [3 0 R] /Count 1 >>";
    let header = format!("1 0 2 {} ", catalog.len() + 1);
    let packed = format!("{header}{catalog} {pages}");
    let objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".to_vec(),
        fixtures::pdf_stream("", b"BT 72 720 Td (modern) Tj ET"),
        fixtures::pdf_stream(
            &format!("/Type /ObjStm /N 2 /First {}{filter}", header.len()),
            &encode(packed.as_bytes()),
        ),
    ];
    let mut out = b"%PDF-1.5\n".to_vec();
    let mut offsets = Vec::new();
    for (k, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", k + 3).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref_at = out.len();
    // Rows of /W [1 2 1]: type, offset or object-stream number, generation or index.
    let mut rows: Vec<u8> = vec![0, 0, 0, 0xff, 2, 0, 5, 0, 2, 0, 5, 1];
    for &offset in offsets.iter().chain([&xref_at]) {
        let offset = u16::try_from(offset).expect("a small file");
        rows.push(1);
        rows.extend_from_slice(&offset.to_be_bytes());
        rows.push(0);
    }
    out.extend_from_slice(b"6 0 obj\n");
    out.extend_from_slice(&fixtures::pdf_stream(
        &format!("/Type /XRef /Size 7 /W [1 2 1] /Root 1 0 R{filter}"),
        &encode(&rows),
    ));
    out.extend_from_slice(format!("\nendobj\nstartxref\n{xref_at}\n%%EOF\n").as_bytes());
    out
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

fn pdf_seeds() -> Vec<Vec<u8>> {
    vec![
        fixtures::pdf_with_pages(1, "one"),
        fixtures::pdf_with_pages(3, "three"),
        fixtures::encrypted_pdf(),
        modern_pdf(false),
        modern_pdf(true),
    ]
}

fn image_seeds() -> Vec<Vec<u8>> {
    vec![
        fixtures::png(5, 3),
        fixtures::png(1, 1),
        fixtures::jpeg_minimal(),
        fixtures::tiff_pages(1),
        fixtures::tiff_pages(3),
        big_endian_tiff(),
    ]
}

/// What any answer of [`inspect`] must satisfy, whatever the bytes.
fn check_answer(
    bytes: &[u8],
    limits: &InspectLimits,
    answer: &Result<Inspection, InspectError>,
) -> Result<(), TestCaseError> {
    let sniffed = sniff(bytes);
    match answer {
        Ok(found) => {
            prop_assert_eq!(Some(found.media_type), sniffed);
            prop_assert!(
                found.pages >= 1 && found.pages <= limits.max_pages,
                "{found:?}"
            );
            if matches!(found.media_type, MediaType::Png | MediaType::Jpeg) {
                prop_assert_eq!(found.pages, 1);
            }
        }
        Err(InspectError::Unsupported { detected }) => {
            prop_assert_eq!(sniffed, None);
            prop_assert!(!detected.is_empty());
        }
        Err(e) => {
            prop_assert!(sniffed.is_some(), "{e} for a file of no accepted type");
            prop_assert!(!e.to_string().is_empty() && !e.code().is_empty());
            match e {
                InspectError::TooManyPages { pages, max } => {
                    prop_assert_eq!(*max, limits.max_pages);
                    prop_assert!(pages > max);
                }
                InspectError::Encrypted => prop_assert_eq!(sniffed, Some(MediaType::Pdf)),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Inspects `bytes` within the time budget and checks the answer.
fn inspect_checked(bytes: Vec<u8>, limits: InspectLimits) -> Result<(), TestCaseError> {
    let copy = bytes.clone();
    let answer = within("inspect", move || inspect(&copy, &limits));
    check_answer(&bytes, &limits, &answer)
}

#[test]
fn seeds_are_valid() {
    for seed in pdf_seeds().into_iter().chain(image_seeds()) {
        match inspect(&seed, &limits()) {
            Ok(_) => {}
            Err(InspectError::Encrypted) => {}
            Err(e) => panic!("seed refused: {e}"),
        }
    }
    for deflate in [false, true] {
        let modern = inspect(&modern_pdf(deflate), &limits()).expect("the modern PDF is valid");
        assert_eq!((modern.media_type, modern.pages), (MediaType::Pdf, 1));
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        inspect_checked(bytes, limits())?;
    }

    #[test]
    fn magic_prefixed_noise(
        magic in prop_oneof![
            Just(&b"%PDF-1.7\n"[..]),
            Just(&b"\x89PNG\r\n\x1a\n"[..]),
            Just(&b"\xff\xd8\xff"[..]),
            Just(&b"II*\0"[..]),
            Just(&b"MM\0*"[..]),
        ],
        noise in proptest::collection::vec(any::<u8>(), 0..2048),
    ) {
        let mut bytes = magic.to_vec();
        bytes.extend_from_slice(&noise);
        inspect_checked(bytes, limits())?;
    }

    #[test]
    fn damaged_pdfs(bytes in damaged(pdf_seeds(), PDF_TOKENS), max_pages in 1u32..5) {
        let limits = InspectLimits { max_pages, ..limits() };
        inspect_checked(bytes, limits)?;
    }

    #[test]
    fn damaged_images(
        bytes in damaged(image_seeds(), IMAGE_TOKENS),
        max_pixels in prop_oneof![Just(InspectLimits::DEFAULT_MAX_PIXELS_PER_PAGE), 1u64..64],
    ) {
        let limits = InspectLimits { max_pixels_per_page: max_pixels, max_pages: 2 };
        inspect_checked(bytes, limits)?;
    }

    #[test]
    fn pdf_soup(text in soup(PDF_SOUP, 400)) {
        let mut bytes = b"%PDF-1.7\n".to_vec();
        bytes.extend_from_slice(text.as_bytes());
        bytes.extend_from_slice(b"\nstartxref\n9\n%%EOF\n");
        inspect_checked(bytes, limits())?;
    }

    /// The loader the OCR reads PDFs through: same refusals, and an accepted file's pages all
    /// resolve to dictionaries, no more of them than allowed.
    #[test]
    fn load_pdf_of_damaged_pdfs(bytes in damaged(pdf_seeds(), PDF_TOKENS), max_pages in 1u32..5) {
        let loaded = within("load_pdf", move || {
            load_pdf(&bytes, max_pages, 1_000_000_000_000).map(|pdf| {
                let resolve = pdf.pages.iter().all(|&id| pdf.document.get_dictionary(id).is_ok());
                (pdf.pages.len(), resolve)
            })
        });
        if let Ok((pages, resolve)) = loaded {
            prop_assert!(pages >= 1 && pages <= max_pages as usize);
            prop_assert!(resolve);
        }
    }
}

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
            let (h, w) = (height as u16, width as u16);
            jpeg[sof + 5..sof + 7].copy_from_slice(&h.to_be_bytes());
            jpeg[sof + 7..sof + 9].copy_from_slice(&w.to_be_bytes());
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

proptest! {
    #![proptest_config(config())]

    /// An image is refused from its declared size alone when it is too large, whatever the
    /// numbers, and accepted when it is not: nothing in between decodes pixels.
    #[test]
    fn declared_size_is_checked_against_the_limit(
        format in 0u8..3,
        width in prop_oneof![1u32..100, 1u32..0x7fff_ffff],
        height in prop_oneof![1u32..100, 1u32..0x7fff_ffff],
        max_pixels in prop_oneof![1u64..10_000, Just(InspectLimits::DEFAULT_MAX_PIXELS_PER_PAGE)],
    ) {
        let (width, height) = if format == 1 {
            // A JPEG's sides are 16-bit.
            (width % 0xffff + 1, height % 0xffff + 1)
        } else {
            (width, height)
        };
        let limits = InspectLimits { max_pixels_per_page: max_pixels, ..limits() };
        let bytes = declaring(format, width, height);
        let answer = within("inspect", move || inspect(&bytes, &limits));
        if u64::from(width) * u64::from(height) > max_pixels {
            prop_assert!(matches!(answer, Err(InspectError::TooLarge { .. })), "{answer:?}");
        } else {
            prop_assert_eq!(answer.map(|i| i.pages), Ok(1));
        }
    }
}

proptest! {
    #![proptest_config(config_scaled(8))]

    /// Page counts are exact up to the limit and refused above it.
    #[test]
    fn page_counts_are_bounded(tiff in any::<bool>(), pages in 1u32..40, max_pages in 1u32..40) {
        let bytes = if tiff {
            fixtures::tiff_pages(pages)
        } else {
            fixtures::pdf_with_pages(pages, "bounded")
        };
        let limits = InspectLimits { max_pages, ..limits() };
        let answer = within("inspect", move || inspect(&bytes, &limits));
        if pages <= max_pages {
            prop_assert_eq!(answer.map(|i| i.pages), Ok(pages));
        } else {
            prop_assert!(
                matches!(answer, Err(InspectError::TooManyPages { max, .. }) if max == max_pages),
                "{answer:?}"
            );
        }
    }
}
