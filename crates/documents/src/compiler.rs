//! How the texts a case is read with become what a processor reads: a workflow file and an
//! invoice2data template set, compiled by the reading implementation the binary chose.
//!
//! The worker and the API store and pin these texts but never read documents themselves, so
//! they hold a [`ReadingCompiler`] handed to them at start-up rather than depending on one
//! reading library.

use crate::workflows::{CompiledTemplates, CompiledWorkflow};
use ironclad_core::parse::{ParseError, Parsed};

/// Compiles workflow files and template sets for the processors of one reading
/// implementation. Object safe, so callers hold an `Arc<dyn ReadingCompiler>`.
pub trait ReadingCompiler: Send + Sync + 'static {
    /// Parses and compiles a workflow file; `Err` is why it cannot be used, as the
    /// implementation words it (shown to operators and stored with failures).
    fn compile_workflow(&self, yaml: &str) -> Result<CompiledWorkflow, String>;

    /// Compiles a template set given as `(file name, text)`, in the set's order: every
    /// template, or every file refused with its reason (a set is used whole or not at all).
    fn compile_templates(
        &self,
        files: &[(&str, &str)],
    ) -> Result<CompiledTemplates, Vec<(String, String)>>;

    /// Reads `raw` as field `field` of document type `doc_type` is read when `workflow` (which
    /// this implementation compiled) extracts it: its parser, the unit its label states and
    /// the workflow's locale hints. `None` when the type has no such field. What a person
    /// types in a correction goes through the very parser the reading used.
    fn read_field(
        &self,
        workflow: &CompiledWorkflow,
        doc_type: &str,
        field: &str,
        raw: &str,
    ) -> Option<Result<Parsed, ParseError>>;
}
