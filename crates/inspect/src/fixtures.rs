//! Deterministic document generators for tests (cargo feature `fixtures`).
//!
//! Every generator builds its bytes by hand (no image or PDF library), so the fixtures are
//! identical on every machine and cost nothing to build. They were checked with `pdfinfo`,
//! `pdftotext` and ImageMagick's `identify`.

use crate::inspect::png::crc32;
use std::fmt::Write as _;

/// A valid PDF with `n` pages of Helvetica text. Page `i` reads `"<text>"` then
/// `"Page i of n"`, so a test can find its own document's words with `pdftotext`. Characters
/// outside printable ASCII are replaced by `?` (the font has no encoding for them here).
pub fn pdf_with_pages(n: u32, text: &str) -> Vec<u8> {
    build_pdf(n, text, false)
}

/// A one-page PDF whose trailer names an `/Encrypt` dictionary with a user password, as a
/// password-protected upload would.
pub fn encrypted_pdf() -> Vec<u8> {
    build_pdf(1, "secret", true)
}

/// The first half of `bytes`, as an interrupted upload leaves it.
pub fn truncated(bytes: &[u8]) -> Vec<u8> {
    bytes[..bytes.len() / 2].to_vec()
}

/// A valid 8-bit grayscale PNG of `width` × `height` white pixels with a dark diagonal,
/// compressed with stored (uncompressed) deflate blocks.
pub fn png(width: u32, height: u32) -> Vec<u8> {
    let row = width as usize + 1;
    let mut raw = Vec::with_capacity(row * height as usize);
    for y in 0..height {
        raw.push(0); // filter type None
        raw.extend((0..width).map(|x| if x == y { 0x00 } else { 0xff }));
    }
    png_with(width, height, &zlib_stored(&raw))
}

/// A structurally valid PNG whose header declares `width` × `height` pixels while its data
/// holds none: a decompression bomb's calling card.
pub fn png_bomb_header(width: u32, height: u32) -> Vec<u8> {
    png_with(width, height, &zlib_stored(&[]))
}

/// A tiny valid baseline JPEG: 8 × 8 white, grayscale (made with
/// `convert -size 8x8 xc:white -strip x.jpg`).
pub fn jpeg_minimal() -> Vec<u8> {
    JPEG_8X8_WHITE.to_vec()
}

/// A valid little-endian TIFF with `n` pages (one IFD each), every page 8 × 8 grayscale in
/// one uncompressed strip. Page `i` is filled with grey level `i`.
pub fn tiff_pages(n: u32) -> Vec<u8> {
    const ENTRIES: u16 = 12;
    const IFD_LEN: u32 = 2 + ENTRIES as u32 * 12 + 4;
    const PAGE_LEN: u32 = IFD_LEN + 16 + 64; // IFD, two resolutions, one strip
    let mut out = Vec::with_capacity(8 + n as usize * PAGE_LEN as usize);
    out.extend_from_slice(b"II*\0");
    out.extend_from_slice(&8u32.to_le_bytes());
    for page in 0..n {
        let base = 8 + page * PAGE_LEN;
        let (xres, yres, strip) = (base + IFD_LEN, base + IFD_LEN + 8, base + IFD_LEN + 16);
        let next = if page + 1 < n { base + PAGE_LEN } else { 0 };
        out.extend_from_slice(&ENTRIES.to_le_bytes());
        let mut entry = |tag: u16, kind: u16, value: u32| {
            out.extend_from_slice(&tag.to_le_bytes());
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&1u32.to_le_bytes());
            out.extend_from_slice(&value.to_le_bytes()); // a SHORT sits in the low bytes
        };
        const SHORT: u16 = 3;
        const LONG: u16 = 4;
        const RATIONAL: u16 = 5;
        entry(256, SHORT, 8); // ImageWidth
        entry(257, SHORT, 8); // ImageLength
        entry(258, SHORT, 8); // BitsPerSample
        entry(259, SHORT, 1); // Compression: none
        entry(262, SHORT, 1); // PhotometricInterpretation: BlackIsZero
        entry(273, LONG, strip); // StripOffsets
        entry(277, SHORT, 1); // SamplesPerPixel
        entry(278, SHORT, 8); // RowsPerStrip
        entry(279, LONG, 64); // StripByteCounts
        entry(282, RATIONAL, xres); // XResolution
        entry(283, RATIONAL, yres); // YResolution
        entry(296, SHORT, 2); // ResolutionUnit: inch
        out.extend_from_slice(&next.to_le_bytes());
        for _ in 0..2 {
            out.extend_from_slice(&72u32.to_le_bytes());
            out.extend_from_slice(&1u32.to_le_bytes());
        }
        out.extend(std::iter::repeat_n((page % 256) as u8, 64));
    }
    out
}

/// An HTML page, as uploaded under a `.jpg` name.
pub fn html_as_jpeg() -> Vec<u8> {
    b"<!DOCTYPE html>\n<html><head><title>Invoice</title></head>\n<body><p>Not really a JPEG.</p></body></html>\n".to_vec()
}

/// A PDF file of these objects, numbered from 1 in order (object 1 must be the catalog), with
/// a cross-reference table and a trailer carrying `trailer_extra` (e.g. `/Encrypt 9 0 R`).
pub fn pdf_from_objects(objects: &[Vec<u8>], trailer_extra: &str) -> Vec<u8> {
    let mut out: Vec<u8> = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets: Vec<usize> = Vec::with_capacity(objects.len());
    for body in objects {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", offsets.len()).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let mut table = format!("xref\n0 {}\n0000000000 65535 f \n", offsets.len() + 1);
    for offset in &offsets {
        let _ = writeln!(table, "{offset:010} 00000 n ");
    }
    let _ = write!(
        table,
        "trailer\n<< /Size {} /Root 1 0 R{trailer_extra} >>\nstartxref\n{xref}\n%%EOF\n",
        offsets.len() + 1
    );
    out.extend_from_slice(table.as_bytes());
    out
}

/// A stream object's body: its dictionary entries, `/Length`, and the data.
pub fn pdf_stream(dict_entries: &str, data: &[u8]) -> Vec<u8> {
    let sep = if dict_entries.is_empty() { "" } else { " " };
    let mut body =
        format!("<< {dict_entries}{sep}/Length {} >>\nstream\n", data.len()).into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(b"\nendstream");
    body
}

fn build_pdf(pages: u32, text: &str, encrypted: bool) -> Vec<u8> {
    let page_id = |i: u32| 4 + 2 * i;
    let mut kids = String::with_capacity(pages as usize * 8);
    for i in 0..pages {
        let _ = write!(kids, "{} 0 R ", page_id(i));
    }
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{kids}] /Count {pages} >>").into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    ];
    let text = pdf_string(text);
    for i in 0..pages {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
                 /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
                page_id(i) + 1
            )
            .into_bytes(),
        );
        let content = format!(
            "BT /F1 18 Tf 72 720 Td ({text}) Tj 0 -28 Td (Page {} of {pages}) Tj ET",
            i + 1
        );
        objects.push(pdf_stream("", content.as_bytes()));
    }
    let mut trailer_extra = String::new();
    if encrypted {
        // RC4 40-bit "standard security handler" entries; O and U are not derived from any
        // password, so no password (the empty one included) opens the file.
        objects.push(
            format!(
                "<< /Filter /Standard /V 1 /R 2 /Length 40 /P -3904 /O <{}> /U <{}> >>",
                "5a".repeat(32),
                "a5".repeat(32)
            )
            .into_bytes(),
        );
        let id = "0123456789abcdef0123456789abcdef";
        trailer_extra = format!(" /Encrypt {} 0 R /ID [<{id}> <{id}>]", objects.len());
    }
    pdf_from_objects(&objects, &trailer_extra)
}

/// Escapes text for a PDF literal string in WinAnsi Helvetica.
fn pdf_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '(' | ')' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

fn png_with(width: u32, height: u32, idat: &[u8]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]); // 8-bit grayscale, deflate, no filter, no interlace
    png_chunk(&mut out, b"IHDR", &ihdr);
    png_chunk(&mut out, b"IDAT", idat);
    png_chunk(&mut out, b"IEND", &[]);
    out
}

fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream of stored deflate blocks: valid, uncompressed, no compressor needed.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let mut blocks = data.chunks(0xffff).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        out.push(u8::from(blocks.peek().is_none()));
        let len = block.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

const JPEG_8X8_WHITE: [u8; 160] = [
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01,
    0x00, 0x01, 0x00, 0x00, 0xff, 0xdb, 0x00, 0x43, 0x00, 0x08, 0x06, 0x06, 0x07, 0x06, 0x05, 0x08,
    0x07, 0x07, 0x07, 0x09, 0x09, 0x08, 0x0a, 0x0c, 0x14, 0x0d, 0x0c, 0x0b, 0x0b, 0x0c, 0x19, 0x12,
    0x13, 0x0f, 0x14, 0x1d, 0x1a, 0x1f, 0x1e, 0x1d, 0x1a, 0x1c, 0x1c, 0x20, 0x24, 0x2e, 0x27, 0x20,
    0x22, 0x2c, 0x23, 0x1c, 0x1c, 0x28, 0x37, 0x29, 0x2c, 0x30, 0x31, 0x34, 0x34, 0x34, 0x1f, 0x27,
    0x39, 0x3d, 0x38, 0x32, 0x3c, 0x2e, 0x33, 0x34, 0x32, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x08,
    0x00, 0x08, 0x01, 0x01, 0x11, 0x00, 0xff, 0xc4, 0x00, 0x14, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0xff, 0xc4, 0x00, 0x14,
    0x10, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00, 0x7f, 0x7f, 0xff, 0xd9,
];
