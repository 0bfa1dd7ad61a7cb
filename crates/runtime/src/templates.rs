//! Which invoice2data template set a case is read with: the newest set when its first source
//! is read, pinned then, so every source of the case sees the same templates whichever worker
//! reads it (the same reason workflows are pinned; see `workflows`).

use crate::workflows::PinError;
use ironclad_core::CaseId;
use ironclad_documents::compiler::ReadingCompiler;
use ironclad_documents::workflows::LoadedTemplates;
use ironclad_store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use uuid::Uuid;

/// Template set versions by id, compiled on first use.
pub struct TemplateCatalog {
    store: Store,
    compiler: Arc<dyn ReadingCompiler>,
    loaded: Mutex<HashMap<Uuid, LoadedTemplates>>,
}

impl TemplateCatalog {
    /// A catalog reading `store` and compiling sets with `compiler` (the one the processor
    /// reads from).
    pub fn new(store: Store, compiler: Arc<dyn ReadingCompiler>) -> Self {
        Self {
            store,
            compiler,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// The set the case reads with (pinning the newest if it has none); `None` while no set
    /// has been loaded.
    pub async fn for_case(&self, case: CaseId) -> Result<Option<LoadedTemplates>, PinError> {
        match self.store.case_template_set(case).await? {
            Some(id) => self.load(id).await.map(Some),
            None => Ok(None),
        }
    }

    async fn load(&self, id: Uuid) -> Result<LoadedTemplates, PinError> {
        if let Some(t) = self.lock().get(&id) {
            return Ok(t.clone());
        }
        let stored = self.store.template_set_by_id(id).await?.ok_or_else(|| {
            PinError::Unusable(format!("template set version {id} does not exist"))
        })?;
        let version = stored.version;
        // Compiling a few hundred templates is CPU work: off the async threads.
        let compiler = Arc::clone(&self.compiler);
        let compiled = tokio::task::spawn_blocking(move || {
            let files: Vec<(&str, &str)> = stored
                .files
                .iter()
                .map(|f| (f.name.as_str(), f.yaml.as_str()))
                .collect();
            compiler.compile_templates(&files)
        })
        .await
        .map_err(|e| PinError::Unusable(format!("compiling template set {version} crashed: {e}")))?
        .map_err(|refused| {
            let (name, reason) = refused.first().cloned().unwrap_or_default();
            PinError::Unusable(format!(
                "template set version {version} no longer compiles ({} refused; {name}: {reason})",
                refused.len()
            ))
        })?;
        let loaded = LoadedTemplates {
            id,
            templates: compiled,
        };
        tracing::info!(
            version,
            templates = loaded.templates.len(),
            "template set loaded"
        );
        self.lock().insert(id, loaded.clone());
        Ok(loaded)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, LoadedTemplates>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }
}
