//! What an upload is: its type from its bytes, whether it is a complete document within
//! limits, how many pages it has — before anything is queued, and again before a page is read.
//!
//! * [`sniff()`] decides the type from magic bytes, never from a file name;
//! * [`inspect()`] checks the file is a complete document within limits and counts its pages;
//! * [`fixtures`] (feature `fixtures`) writes small documents for other crates' tests.
//!
//! **Design choice.** Inspection is our own bounds-checked parsing for PNG, JPEG and TIFF
//! (headers and chunk/segment/IFD walks, no pixel decoding) and `lopdf` for PDF, fenced by a
//! small preflight of our own (nesting depth, inflate caps, encryption). Intake can thus
//! refuse a truncated, disguised, encrypted or bomb-shaped upload in milliseconds, before
//! anything is queued, with no image codecs in the build. **Its cost:** "readable" here means
//! structurally complete, not decodable — a file with damaged pixel data passes and fails
//! later, in OCR, as a terminal job error — and the PDF side is only as hard as the preflight
//! plus `lopdf` (see `inspect::pdf_guard` for what is covered).
#![deny(missing_docs)]

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod inspect;
pub mod sniff;

pub use inspect::{inspect, InspectError, InspectLimits, Inspection};
pub use sniff::sniff;
