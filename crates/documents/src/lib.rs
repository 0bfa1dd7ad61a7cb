//! Reading what was uploaded: which document type it is, whether it is complete, how many
//! pages it has — and the worker's document step behind a trait.
//!
//! * [`sniff()`] decides the type from magic bytes, never from a file name;
//! * [`inspect()`] checks the file is a complete document within limits and counts its pages;
//! * [`processor`] defines [`DocumentProcessor`], the step a worker runs per source, with a
//!   stand-in implementation (verifies the blob, counts pages) until OCR arrives, and a
//!   scripted one for failure tests;
//! * [`workflows`] and [`compiler`] carry the workflows and template sets a case is read with
//!   across the seam, compiled by whichever reading implementation the binary injects, so
//!   neither this crate nor the worker depends on one.
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

pub mod compiler;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod inspect;
pub mod preview;
pub mod processor;
pub mod regions;
pub mod registry;
pub mod rules;
pub mod sniff;
pub mod workflows;

pub use compiler::ReadingCompiler;
pub use inspect::{inspect, InspectError, InspectLimits, Inspection};
pub use processor::{
    processor_from_spec, Behaviour, DocumentProcessor, ProcessFuture, ProcessedSource,
    ProcessorError, ScriptedProcessor, SourceInput, StandInProcessor,
};
pub use registry::{ProcessorRegistry, RegistryError};
pub use sniff::sniff;
