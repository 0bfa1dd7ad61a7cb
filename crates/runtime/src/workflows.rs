//! Which workflow version a case is read under: one per case, pinned once, loaded by any worker.
//!
//! During a rolling restart two workers may hold different versions of a workflow. If each
//! read its sources with its own, one case could mix versions (classified by one, extracted by
//! the other). So a case is pinned to one version — at intake, or by the first source read —
//! and every worker reads with that version, loading it from the database when it does not
//! hold it already.

use ironclad_core::CaseId;
use ironclad_documents::compiler::ReadingCompiler;
use ironclad_documents::workflows::LoadedWorkflow;
use ironclad_store::{Store, StoreError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

/// Why a case's workflow could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// PostgreSQL could not be asked (retry like any store error).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such workflow, or its stored text no longer parses: the job cannot run.
    #[error("{0}")]
    Unusable(String),
}

/// Workflow versions by id, loaded on demand, plus the name used when a case names none.
pub struct WorkflowCatalog {
    store: Store,
    compiler: Arc<dyn ReadingCompiler>,
    default: Option<String>,
    loaded: Mutex<HashMap<Uuid, LoadedWorkflow>>,
}

impl WorkflowCatalog {
    /// A catalog reading `store` and compiling what it loads with `compiler` (the one the
    /// processor reads from), already holding `preloaded` versions; `default` is the workflow
    /// of cases that name none.
    pub fn new(
        store: Store,
        compiler: Arc<dyn ReadingCompiler>,
        default: Option<String>,
        preloaded: impl IntoIterator<Item = LoadedWorkflow>,
    ) -> Self {
        Self {
            store,
            compiler,
            default,
            loaded: Mutex::new(preloaded.into_iter().map(|w| (w.id, w)).collect()),
        }
    }

    /// The version the case runs under: the one it is pinned to, else the newest version of
    /// the workflow it names (or of the default), which is pinned now — first writer wins, and
    /// the winner is what is returned. `None` when the case names none and there is no default.
    pub async fn for_case(
        &self,
        case: CaseId,
        requested: Option<&str>,
        pinned: Option<Uuid>,
    ) -> Result<Option<LoadedWorkflow>, PinError> {
        let id = match pinned {
            Some(id) => id,
            None => {
                let Some(name) = requested.or(self.default.as_deref()) else {
                    return Ok(None);
                };
                let latest = self
                    .store
                    .latest_workflow(name)
                    .await?
                    .ok_or_else(|| PinError::Unusable(format!("unknown workflow {name:?}")))?;
                self.store
                    .pin_case_workflow(case, latest.id)
                    .await?
                    .unwrap_or(latest.id)
            }
        };
        self.load(id).await.map(Some)
    }

    /// One version, from memory or the database.
    async fn load(&self, id: Uuid) -> Result<LoadedWorkflow, PinError> {
        if let Some(w) = self.lock().get(&id) {
            return Ok(w.clone());
        }
        let stored =
            self.store.workflow_by_id(id).await?.ok_or_else(|| {
                PinError::Unusable(format!("workflow version {id} does not exist"))
            })?;
        let workflow = self
            .compiler
            .compile_workflow(&stored.source_yaml)
            .map_err(|e| {
                PinError::Unusable(format!(
                    "workflow {} version {} no longer parses: {e}",
                    stored.name, stored.version
                ))
            })?;
        let loaded = LoadedWorkflow {
            id,
            workflow: Arc::new(workflow),
        };
        tracing::info!(workflow = %stored.name, version = stored.version, "workflow version loaded for a pinned case");
        self.lock().insert(id, loaded.clone());
        Ok(loaded)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, LoadedWorkflow>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }
}
