//! Deciding a file's type from its first bytes, never from its name.

use ironclad_core::media::MediaType;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
/// How far into the file a PDF header may start (some generators prepend junk; readers
/// accept the header within the first KiB).
const PDF_HEADER_WINDOW: usize = 1024;

/// The accepted media type that `bytes` start with, or `None` for anything else (HTML, ZIP,
/// text, empty, ...).
pub fn sniff(bytes: &[u8]) -> Option<MediaType> {
    if bytes.starts_with(PNG_SIGNATURE) {
        Some(MediaType::Png)
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some(MediaType::Jpeg)
    } else if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
        Some(MediaType::Tiff)
    } else if pdf_header_offset(bytes).is_some() {
        Some(MediaType::Pdf)
    } else {
        None
    }
}

/// Where `%PDF-` starts, if it does within the first KiB.
pub(crate) fn pdf_header_offset(bytes: &[u8]) -> Option<usize> {
    let window = &bytes[..bytes.len().min(PDF_HEADER_WINDOW)];
    window.windows(5).position(|w| w == b"%PDF-")
}

/// A short, user-facing description of what an unaccepted file looks like, for the error
/// message ("text/html", "empty file", ...).
pub(crate) fn describe_unsupported(bytes: &[u8]) -> &'static str {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"PK\x03\x04", "application/zip (also .docx, .xlsx)"),
        (b"PK\x05\x06", "application/zip"),
        (b"\x1f\x8b", "application/gzip"),
        (b"Rar!", "application/x-rar"),
        (b"7z\xbc\xaf", "application/x-7z-compressed"),
        (
            b"\xd0\xcf\x11\xe0",
            "application/x-ole-storage (.doc, .xls, .msg)",
        ),
        (b"GIF8", "image/gif"),
        (b"BM", "image/bmp"),
        (b"II+\0", "image/tiff (BigTIFF)"),
        (b"MM\0+", "image/tiff (BigTIFF)"),
        (b"{\\rtf", "application/rtf"),
        (b"\x7fELF", "application/x-executable"),
        (b"MZ", "application/x-msdownload"),
    ];
    if bytes.is_empty() {
        return "empty file";
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return "image/webp";
    }
    if let Some((_, what)) = SIGNATURES.iter().find(|(sig, _)| bytes.starts_with(sig)) {
        return what;
    }
    let head = &bytes[..bytes.len().min(512)];
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(text.len());
    let lead: Vec<u8> = text[start..]
        .iter()
        .take(16)
        .map(u8::to_ascii_lowercase)
        .collect();
    if lead.starts_with(b"<!doctype html")
        || lead.starts_with(b"<html")
        || lead.starts_with(b"<head")
    {
        return "text/html";
    }
    if lead.starts_with(b"<svg") || (lead.starts_with(b"<?xml") && contains(head, b"<svg")) {
        return "image/svg+xml";
    }
    if lead.starts_with(b"<?xml") {
        return "application/xml";
    }
    if std::str::from_utf8(head)
        .is_ok_and(|s| !s.chars().any(|c| c.is_control() && !c.is_whitespace()))
    {
        return "text/plain";
    }
    "unknown"
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_signatures() {
        assert_eq!(sniff(b"%PDF-1.7\n"), Some(MediaType::Pdf));
        let mut late_pdf = vec![b' '; 1000];
        late_pdf.extend_from_slice(b"%PDF-1.4");
        assert_eq!(sniff(&late_pdf), Some(MediaType::Pdf));
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Some(MediaType::Png)
        );
        assert_eq!(sniff(b"\xff\xd8\xff\xe0"), Some(MediaType::Jpeg));
        assert_eq!(sniff(b"II*\0\x08\0\0\0"), Some(MediaType::Tiff));
        assert_eq!(sniff(b"MM\0*\0\0\0\x08"), Some(MediaType::Tiff));
    }

    #[test]
    fn everything_else_is_refused_and_described() {
        let mut too_late_pdf = vec![b' '; 1024];
        too_late_pdf.extend_from_slice(b"%PDF-1.4");
        let cases: &[(&[u8], &str)] = &[
            (b"", "empty file"),
            (b"  <!DOCTYPE html><html>", "text/html"),
            (b"\xef\xbb\xbf<HTML><body>", "text/html"),
            (b"PK\x03\x04\x14\0", "application/zip (also .docx, .xlsx)"),
            (b"GIF89a", "image/gif"),
            (b"hello, world\n", "text/plain"),
            (b"\x89PNG\r\n", "unknown"),
            (b"\xff\xd8", "unknown"),
            (b"\0\x01\x02\x03", "unknown"),
            (&too_late_pdf, "text/plain"),
        ];
        for (bytes, what) in cases {
            assert_eq!(sniff(bytes), None, "{what}");
            assert_eq!(describe_unsupported(bytes), *what);
        }
    }
}
