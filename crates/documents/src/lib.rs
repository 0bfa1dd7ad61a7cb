//! The worker's document step behind a trait, and what crosses that seam.
//!
//! * [`processor`] defines [`DocumentProcessor`], the step a worker runs per source, with a
//!   stand-in implementation (verifies the blob, counts pages) and a scripted one for failure
//!   tests; the built-in reader (`ironclad-reading`) and the provider implement it;
//! * [`workflows`] and [`compiler`] carry the workflows and template sets a case is read with
//!   across the seam, compiled by whichever reading implementation the binary injects, so
//!   neither this crate nor the worker depends on one;
//! * [`rules`] chooses the rules that decide a case, [`preview`] the desk's page images.
//!
//! What an upload is (its type from its bytes, its completeness, its pages) is
//! `ironclad-inspect`'s, which the OCR reader needs without this seam.
#![deny(missing_docs)]

pub mod compiler;
pub mod preview;
pub mod processor;
pub mod regions;
pub mod registry;
pub mod rules;
pub mod workflows;

pub use compiler::ReadingCompiler;
pub use processor::{
    processor_from_spec, Behaviour, DocumentProcessor, ProcessFuture, ProcessedSource,
    ProcessorError, ScriptedProcessor, SourceInput, StandInProcessor,
};
pub use registry::{ProcessorRegistry, RegistryError};
