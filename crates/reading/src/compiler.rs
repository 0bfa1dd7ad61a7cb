//! Workflow files and template sets compiled with `ironclad-extract`: the instructions this
//! crate's [`ReadingProcessor`](crate::ReadingProcessor) and the HTTP provider read (an
//! [`ironclad_extract::Workflow`], a `Vec` of [`ironclad_extract::invoice2data::Template`]).

use ironclad_core::parse::{ParseError, Parsed};
use ironclad_documents::compiler::ReadingCompiler;
use ironclad_documents::workflows::{CompiledTemplates, CompiledWorkflow};
use ironclad_extract::invoice2data::{compile_set, Template};
use ironclad_extract::Workflow;

/// The [`ReadingCompiler`] of `ironclad-extract`'s workflow and invoice2data formats.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractCompiler;

impl ReadingCompiler for ExtractCompiler {
    fn compile_workflow(&self, yaml: &str) -> Result<CompiledWorkflow, String> {
        Workflow::from_yaml(yaml)
            .map(compiled_workflow)
            .map_err(|e| e.to_string())
    }

    fn compile_templates(
        &self,
        files: &[(&str, &str)],
    ) -> Result<CompiledTemplates, Vec<(String, String)>> {
        compile_set(files.iter().copied()).map(compiled_templates)
    }

    fn read_field(
        &self,
        workflow: &CompiledWorkflow,
        doc_type: &str,
        field: &str,
        raw: &str,
    ) -> Option<Result<Parsed, ParseError>> {
        let workflow = workflow.instructions::<Workflow>().ok()?;
        ironclad_extract::extract::read_field(&workflow, doc_type, field, raw)
    }
}

/// A parsed workflow as the seam carries it: its name, schema and rules, with the workflow
/// itself as the reading instructions.
pub fn compiled_workflow(workflow: Workflow) -> CompiledWorkflow {
    CompiledWorkflow::new(
        workflow.spec().name.clone(),
        workflow.schema(),
        workflow.ruleset().clone(),
        workflow,
    )
}

/// Compiled templates, in the set's order, as the seam carries them.
pub fn compiled_templates(templates: Vec<Template>) -> CompiledTemplates {
    CompiledTemplates::new(templates.len(), templates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_it_compiles_reads_back_as_extract_types() {
        let yaml = "name: t\nversion: 1\ndocument_types:\n  - id: invoice\n    title: Invoice\n    recognition: {keywords: [{text: invoice, weight: 0.6}]}\n    fields: []\n";
        let compiled = ExtractCompiler.compile_workflow(yaml).expect("compiles");
        assert_eq!(compiled.name(), "t");
        let workflow = compiled
            .instructions::<Workflow>()
            .expect("an extract workflow");
        assert_eq!(workflow.spec().version, 1);
        assert_eq!(
            ExtractCompiler.compile_workflow("name: [").err(),
            Workflow::from_yaml("name: [").err().map(|e| e.to_string())
        );
        // A field is read as the workflow reads it; a field the type lacks is none.
        let typed = ExtractCompiler.read_field(&compiled, "invoice", "nothing", "1");
        assert!(typed.is_none());
        let empty = ExtractCompiler
            .compile_templates(&[])
            .expect("an empty set");
        assert!(empty.is_empty());
        assert!(empty.instructions::<Vec<Template>>().is_ok());
    }
}
