//! The workflows a processor can apply, as loaded into the database: shared by every
//! processor that classifies and extracts (the built-in reader and the HTTP provider), and
//! the invoice2data template set a case is read with.
//!
//! The seam knows a workflow only as far as deciding a case needs: its name, the schema
//! rules are checked against and its own rules. How its documents are read is compiled by a
//! [`ReadingCompiler`](crate::compiler::ReadingCompiler) into instructions the seam carries
//! unopened; the processor that reads them gets them back by type
//! ([`CompiledWorkflow::instructions`]), so neither this crate nor the worker depends on one
//! reading implementation.

use crate::processor::ProcessorError;
use ironclad_core::rules::{CompiledRuleset, Schema};
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// What a reading implementation compiled, opaque to the seam: only the implementation that
/// made it knows its type.
#[derive(Clone)]
struct Instructions(Arc<dyn Any + Send + Sync>);

impl Instructions {
    fn new<T: Any + Send + Sync>(compiled: T) -> Self {
        Self(Arc::new(compiled))
    }

    /// The instructions as `T`, or `None` when another implementation compiled them.
    fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        Arc::clone(&self.0).downcast::<T>().ok()
    }
}

/// A workflow file compiled: what decides a case, and how its documents are read.
#[derive(Clone)]
pub struct CompiledWorkflow {
    name: String,
    schema: Schema,
    ruleset: CompiledRuleset,
    instructions: Instructions,
}

impl CompiledWorkflow {
    /// A workflow named `name`, whose rules may name what `schema` declares, decided by
    /// `ruleset` when the tenant has no managed ruleset, and read with `instructions` (whatever
    /// the reading implementation compiled from the file).
    pub fn new<T: Any + Send + Sync>(
        name: String,
        schema: Schema,
        ruleset: CompiledRuleset,
        instructions: T,
    ) -> Self {
        Self {
            name,
            schema,
            ruleset,
            instructions: Instructions::new(instructions),
        }
    }

    /// The workflow's name, as stored.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The document types and fields rules may name.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The rules written in the workflow file.
    pub fn ruleset(&self) -> &CompiledRuleset {
        &self.ruleset
    }

    /// The reading instructions, as the implementation that compiled them knows them. A
    /// workflow compiled by another implementation is a terminal failure: reading it again
    /// would not change who compiled it.
    pub fn instructions<T: Any + Send + Sync>(&self) -> Result<Arc<T>, ProcessorError> {
        self.instructions.get().ok_or_else(|| {
            ProcessorError::Terminal(format!(
                "workflow {:?} was not compiled for this processor (it reads {})",
                self.name,
                std::any::type_name::<T>()
            ))
        })
    }
}

impl std::fmt::Debug for CompiledWorkflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledWorkflow")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .field("ruleset", &self.ruleset)
            .finish_non_exhaustive()
    }
}

/// An invoice2data template set compiled, opaque to the seam like a workflow's reading
/// instructions.
#[derive(Clone)]
pub struct CompiledTemplates {
    len: usize,
    instructions: Instructions,
}

impl CompiledTemplates {
    /// `len` templates, compiled into `instructions` by a reading implementation.
    pub fn new<T: Any + Send + Sync>(len: usize, instructions: T) -> Self {
        Self {
            len,
            instructions: Instructions::new(instructions),
        }
    }

    /// How many templates the set holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set holds no template.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The templates, as the implementation that compiled them knows them; a terminal failure
    /// when another one did.
    pub fn instructions<T: Any + Send + Sync>(&self) -> Result<Arc<T>, ProcessorError> {
        self.instructions.get().ok_or_else(|| {
            ProcessorError::Terminal(format!(
                "the template set was not compiled for this processor (it reads {})",
                std::any::type_name::<T>()
            ))
        })
    }
}

impl std::fmt::Debug for CompiledTemplates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledTemplates")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// One stored workflow version.
#[derive(Debug, Clone)]
pub struct LoadedWorkflow {
    /// `workflows.id` of the version, reported as `ProcessedSource::workflow_id`.
    pub id: Uuid,
    /// The compiled definition.
    pub workflow: Arc<CompiledWorkflow>,
}

/// Two loaded workflows are the same when they are the same stored version.
impl PartialEq for LoadedWorkflow {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for LoadedWorkflow {}

/// One stored invoice2data template set version, compiled.
#[derive(Debug, Clone)]
pub struct LoadedTemplates {
    /// `template_sets.id` of the version.
    pub id: Uuid,
    /// The templates, in the set's file order.
    pub templates: CompiledTemplates,
}

/// Two loaded template sets are the same when they are the same stored version.
impl PartialEq for LoadedTemplates {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for LoadedTemplates {}

/// What one source is read with, as the reading implementation that compiled it knows it:
/// `W` its workflows' instructions, `T` its template sets'.
#[derive(Debug)]
pub struct ReadingPlan<W, T> {
    /// The stored workflow version, when the source is read under one.
    pub loaded: Option<LoadedWorkflow>,
    /// That workflow's reading instructions.
    pub workflow: Option<Arc<W>>,
    /// The case's template set, when one is pinned.
    pub templates: Option<Arc<T>>,
}

impl<W, T> ReadingPlan<W, T> {
    /// The workflow's name, for the job's summary.
    pub fn name(&self) -> Option<String> {
        self.loaded.as_ref().map(|w| w.workflow.name().to_owned())
    }
}

/// Workflows by name, plus the one used when a case names none.
#[derive(Debug, Clone, Default)]
pub struct WorkflowSet {
    /// By name.
    pub by_name: HashMap<String, LoadedWorkflow>,
    /// Used when the case names no workflow.
    pub default: Option<String>,
}

impl WorkflowSet {
    /// The workflow a case runs under: the one it names, else the default; an unknown name is
    /// an error message for a terminal failure.
    pub fn resolve(&self, requested: Option<&str>) -> Result<Option<LoadedWorkflow>, String> {
        match requested.or(self.default.as_deref()) {
            Some(name) => self
                .by_name
                .get(name)
                .cloned()
                .map(Some)
                .ok_or_else(|| format!("unknown workflow {name:?}")),
            None => Ok(None),
        }
    }

    /// What `input` is read with ([`WorkflowSet::for_input`]), as the processor's own types:
    /// an unknown workflow, or one another implementation compiled, is a terminal failure.
    pub fn plan_for<W: Any + Send + Sync, T: Any + Send + Sync>(
        &self,
        input: &crate::processor::SourceInput,
    ) -> Result<ReadingPlan<W, T>, ProcessorError> {
        let loaded = self.for_input(input).map_err(ProcessorError::Terminal)?;
        let workflow = loaded
            .as_ref()
            .map(|w| w.workflow.instructions::<W>())
            .transpose()?;
        let templates = input
            .templates
            .as_ref()
            .map(|t| t.templates.instructions::<T>())
            .transpose()?;
        Ok(ReadingPlan {
            loaded,
            workflow,
            templates,
        })
    }

    /// The workflow a source is read under: the version its case is pinned to when the worker
    /// resolved one, else [`WorkflowSet::resolve`] of the name it asked for.
    pub fn for_input(
        &self,
        input: &crate::processor::SourceInput,
    ) -> Result<Option<LoadedWorkflow>, String> {
        match &input.pinned_workflow {
            Some(pinned) => Ok(Some(pinned.clone())),
            None => self.resolve(input.workflow.as_deref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_come_back_only_as_their_own_type() {
        let workflow = CompiledWorkflow::new(
            "trade".into(),
            Schema::default(),
            CompiledRuleset::default(),
            String::from("read me"),
        );
        assert_eq!(
            workflow
                .instructions::<String>()
                .as_deref()
                .map(String::as_str),
            Ok("read me")
        );
        assert!(matches!(
            workflow.instructions::<u32>(),
            Err(ProcessorError::Terminal(m)) if m.contains("\"trade\" was not compiled")
        ));
        let templates = CompiledTemplates::new(2, vec![1u8, 2]);
        assert_eq!(templates.len(), 2);
        assert_eq!(templates.instructions::<Vec<u8>>().map(|t| t.len()), Ok(2));
        assert!(templates.instructions::<String>().is_err());
    }
}
