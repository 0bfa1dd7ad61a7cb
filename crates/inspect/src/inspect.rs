//! Checking that an upload is a complete, readable document of an accepted type, and counting
//! its pages.
//!
//! Everything here reads untrusted bytes: every offset is bounds-checked, nothing allocates in
//! proportion to a size the file declares, and damage (truncation, loops, pixel bombs) is a
//! typed error rather than a panic. Completeness is checked per format: a PDF must end with
//! `%%EOF` and every page must resolve, a PNG must reach `IEND`, a JPEG `EOI`, and every TIFF
//! strip must lie inside the file.

mod jpeg;
mod pdf;
mod pdf_guard;
pub(crate) mod png;
mod tiff;

use crate::sniff::{describe_unsupported, sniff};
use ironclad_core::media::MediaType;

pub use pdf::LoadedPdf;

/// Parses an untrusted PDF with `lopdf` after the same checks as [`inspect`] (complete, not
/// encrypted, bounded nesting and inflation, every page resolves, at most `max_pages`), also
/// refusing it when parsing would cost more than `max_load_cost` (objects × bytes: lopdf 0.38
/// parses ≈10^11 of them a second here; [`inspect`] allows 10^12). `lopdf` is not hardened on
/// its own: reach it only through this.
pub fn load_pdf(
    bytes: &[u8],
    max_pages: u32,
    max_load_cost: u64,
) -> Result<LoadedPdf, InspectError> {
    pdf::load_checked(bytes, max_pages, max_load_cost)
}

/// Limits applied while inspecting one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InspectLimits {
    /// Most pages accepted in one file.
    pub max_pages: u32,
    /// Most pixels (width × height) accepted for one page; larger images are refused before
    /// anything tries to decode them.
    pub max_pixels_per_page: u64,
}

impl InspectLimits {
    /// Default pixel limit: 100 megapixels, above an A4 page at 1200 DPI (≈ 140 MP is A3).
    pub const DEFAULT_MAX_PIXELS_PER_PAGE: u64 = 100_000_000;
    /// Default page limit per file.
    pub const DEFAULT_MAX_PAGES: u32 = 500;
}

impl Default for InspectLimits {
    fn default() -> Self {
        Self {
            max_pages: Self::DEFAULT_MAX_PAGES,
            max_pixels_per_page: Self::DEFAULT_MAX_PIXELS_PER_PAGE,
        }
    }
}

/// What an accepted file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inspection {
    /// The type, from the bytes.
    pub media_type: MediaType,
    /// Number of pages (1 for PNG and JPEG).
    pub pages: u32,
}

/// Why a file was refused. The messages are meant for the person who uploaded it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InspectError {
    /// Not one of the accepted types.
    #[error("unsupported file type ({detected}); accepted types are PDF, PNG, JPEG and TIFF")]
    Unsupported {
        /// What the file looks like, e.g. "text/html", "empty file", "unknown".
        detected: String,
    },
    /// An accepted type, but truncated or corrupt.
    #[error("the file cannot be read: {reason}")]
    Unreadable {
        /// What is wrong, in a few words.
        reason: String,
    },
    /// More pages than the limit.
    #[error("the document has {pages} pages; at most {max} are accepted per file")]
    TooManyPages {
        /// Pages found.
        pages: u32,
        /// The limit.
        max: u32,
    },
    /// An image (or a PDF structure) too large to process safely.
    #[error("the file is too large to process: {reason}")]
    TooLarge {
        /// What is too large.
        reason: String,
    },
    /// A password-protected PDF.
    #[error("the PDF is password-protected; upload a copy without a password")]
    Encrypted,
}

impl InspectError {
    /// A stable machine-readable code for API responses.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unsupported { .. } => "unsupported_media_type",
            Self::Unreadable { .. } => "unreadable_document",
            Self::TooManyPages { .. } => "too_many_pages",
            Self::TooLarge { .. } => "document_too_large",
            Self::Encrypted => "encrypted_document",
        }
    }

    pub(crate) fn unreadable(reason: impl Into<String>) -> Self {
        Self::Unreadable {
            reason: reason.into(),
        }
    }

    pub(crate) fn too_large(reason: impl Into<String>) -> Self {
        Self::TooLarge {
            reason: reason.into(),
        }
    }
}

/// Identifies `bytes`, checks they are a complete document within `limits`, and counts pages.
pub fn inspect(bytes: &[u8], limits: &InspectLimits) -> Result<Inspection, InspectError> {
    let media_type = sniff(bytes).ok_or_else(|| InspectError::Unsupported {
        detected: describe_unsupported(bytes).to_owned(),
    })?;
    let pages = match media_type {
        MediaType::Pdf => pdf::count_pages(bytes, limits.max_pages)?,
        MediaType::Png => png::check(bytes, limits).map(|()| 1)?,
        MediaType::Jpeg => jpeg::check(bytes, limits).map(|()| 1)?,
        MediaType::Tiff => tiff::count_pages(bytes, limits)?,
    };
    if pages > limits.max_pages {
        return Err(InspectError::TooManyPages {
            pages,
            max: limits.max_pages,
        });
    }
    Ok(Inspection { media_type, pages })
}

/// Refuses a page whose declared size exceeds the pixel limit.
fn check_pixels(
    width: u64,
    height: u64,
    page: u32,
    limits: &InspectLimits,
) -> Result<(), InspectError> {
    let pixels = width.saturating_mul(height);
    if pixels > limits.max_pixels_per_page {
        return Err(InspectError::too_large(format!(
            "page {page} is {width} × {height} pixels ({} megapixels; the limit is {})",
            pixels / 1_000_000,
            limits.max_pixels_per_page / 1_000_000
        )));
    }
    Ok(())
}

/// `len` bytes at `at`, if they are inside `bytes`.
fn slice_at(bytes: &[u8], at: usize, len: usize) -> Option<&[u8]> {
    bytes.get(at..at.checked_add(len)?)
}

#[cfg(test)]
mod tests;
