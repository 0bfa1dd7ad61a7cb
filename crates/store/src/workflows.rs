//! Workflow definitions, versioned: loading a changed file mints the next version, loading the
//! same file again returns the existing one. Cases record the version they ran under.

use crate::{Store, StoreResult};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// A stored workflow version.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct WorkflowVersion {
    /// Row id.
    pub id: Uuid,
    /// Workflow name.
    pub name: String,
    /// Version (1, 2, …).
    pub version: i32,
    /// sha256 of the YAML.
    pub sha256: String,
    /// The YAML as loaded.
    pub source_yaml: String,
}

/// Inserts the next version unless this exact content is already stored under the name.
const WORKFLOW_LOAD: &str = r#"
INSERT INTO workflows (id, name, version, sha256, source_yaml)
SELECT $1, $2, coalesce((SELECT max(version) FROM workflows WHERE name = $2), 0) + 1, $3, $4
ON CONFLICT (name, sha256) DO NOTHING
RETURNING id
"#;
const WORKFLOW_BY_SHA: &str =
    "SELECT id, name, version, sha256, source_yaml FROM workflows WHERE name = $1 AND sha256 = $2";
const WORKFLOW_LATEST: &str =
    "SELECT id, name, version, sha256, source_yaml FROM workflows WHERE name = $1 ORDER BY version DESC LIMIT 1";
const WORKFLOWS_LATEST_ALL: &str =
    "SELECT DISTINCT ON (name) id, name, version, sha256, source_yaml \
     FROM workflows ORDER BY name, version DESC";
const CASE_RECORD_WORKFLOW: &str =
    "UPDATE cases SET workflow_id = $2 WHERE id = $1 AND workflow_id IS NULL";
const WORKFLOW_BY_ID: &str =
    "SELECT id, name, version, sha256, source_yaml FROM workflows WHERE id = $1";
const CASE_WORKFLOW: &str = "SELECT workflow_id FROM cases WHERE id = $1";

impl Store {
    /// Stores a (validated) workflow file; returns its version and whether it is new.
    pub async fn load_workflow(
        &self,
        name: &str,
        yaml: &str,
    ) -> StoreResult<(WorkflowVersion, bool)> {
        let sha = hex::encode(Sha256::digest(yaml.as_bytes()));
        // Two loads racing for the same next version: one wins, the other retries once.
        for _ in 0..3 {
            let inserted = sqlx::query_scalar::<_, Uuid>(WORKFLOW_LOAD)
                .bind(Uuid::now_v7())
                .bind(name)
                .bind(&sha)
                .bind(yaml)
                .fetch_optional(self.pool())
                .await;
            match inserted {
                Ok(created) => {
                    let row: WorkflowVersion = sqlx::query_as(WORKFLOW_BY_SHA)
                        .bind(name)
                        .bind(&sha)
                        .fetch_one(self.pool())
                        .await?;
                    return Ok((row, created.is_some()));
                }
                Err(err) => {
                    let err = crate::StoreError::from(err);
                    if err.conflict_constraint() != Some("workflows_name_version_key") {
                        return Err(err);
                    }
                }
            }
        }
        Err(crate::StoreError::Corrupt(format!(
            "could not allocate a version for workflow {name}"
        )))
    }

    /// The newest version of a workflow.
    pub async fn latest_workflow(&self, name: &str) -> StoreResult<Option<WorkflowVersion>> {
        Ok(sqlx::query_as(WORKFLOW_LATEST)
            .bind(name)
            .fetch_optional(self.pool())
            .await?)
    }

    /// The newest version of every workflow.
    pub async fn latest_workflows(&self) -> StoreResult<Vec<WorkflowVersion>> {
        Ok(sqlx::query_as(WORKFLOWS_LATEST_ALL)
            .fetch_all(self.pool())
            .await?)
    }

    /// One stored version.
    pub async fn workflow_by_id(&self, id: Uuid) -> StoreResult<Option<WorkflowVersion>> {
        Ok(sqlx::query_as(WORKFLOW_BY_ID)
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Pins a case to `workflow` unless it is pinned already; returns the version the case is
    /// pinned to now (ours, or the one a concurrent reader or the intake pinned first).
    pub async fn pin_case_workflow(
        &self,
        case: ironclad_core::CaseId,
        workflow: Uuid,
    ) -> StoreResult<Option<Uuid>> {
        sqlx::query(CASE_RECORD_WORKFLOW)
            .bind(case.0)
            .bind(workflow)
            .execute(self.pool())
            .await?;
        // A statement of its own: its snapshot sees whichever pin won.
        let pinned: Option<Option<Uuid>> = sqlx::query_scalar(CASE_WORKFLOW)
            .bind(case.0)
            .fetch_optional(self.pool())
            .await?;
        Ok(pinned.flatten())
    }

    /// Records the workflow version a case runs under (first writer wins).
    pub async fn record_case_workflow(
        &self,
        case: ironclad_core::CaseId,
        workflow: Uuid,
    ) -> StoreResult<()> {
        sqlx::query(CASE_RECORD_WORKFLOW)
            .bind(case.0)
            .bind(workflow)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
