//! The workflows a processor can apply, as loaded into the database: shared by every
//! processor that classifies and extracts (the built-in reader and the HTTP provider), and
//! the invoice2data template set a case is read with.

use ironclad_extract::Workflow;
use std::collections::HashMap;
use std::sync::Arc;
use uuid::Uuid;

/// One stored workflow version.
#[derive(Debug, Clone)]
pub struct LoadedWorkflow {
    /// `workflows.id` of the version, reported as `ProcessedSource::workflow_id`.
    pub id: Uuid,
    /// The parsed definition.
    pub workflow: Arc<Workflow>,
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
    pub templates: Arc<Vec<ironclad_extract::invoice2data::Template>>,
}

/// Two loaded template sets are the same when they are the same stored version.
impl PartialEq for LoadedTemplates {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for LoadedTemplates {}

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
