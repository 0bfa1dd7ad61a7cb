//! The OCR crate's integration tests, in one binary (one link of the crate, Tesseract and
//! Leptonica instead of one per file): `cargo test -p ironclad-ocr --test ocr`.

mod common;
mod hostile;
mod photographed;
mod read;
