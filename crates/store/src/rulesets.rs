//! Managed rulesets: versioned rules per tenant and workflow, `DRAFT → ACTIVE → RETIRED`.
//!
//! The store keeps them and guards the transitions; whether a ruleset is valid is decided by
//! core against the workflow before [`Store::activate_ruleset`] is called. Activation retires
//! the previous ACTIVE ruleset in the same transaction (a partial unique index allows one), and
//! never touches decided cases: reevaluation is an explicit, separate act.

use chrono::{DateTime, Utc};
use ironclad_core::audit::AuditEventType;
use ironclad_core::notification::NotificationType;
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::notify::{announce, Announcement};
use crate::{audit_trail, Store, StoreError, StoreResult};

/// One stored ruleset.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RulesetRow {
    /// Id.
    pub id: Uuid,
    /// The workflow name its rules are written for.
    pub workflow: String,
    /// 1, 2, … per (tenant, workflow).
    pub version: i32,
    /// DRAFT, ACTIVE or RETIRED.
    pub status: String,
    /// `{rules, policy}` as written.
    pub spec: serde_json::Value,
    /// sha256 of the spec's JSON text.
    pub sha256: String,
    /// Who created it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// Who activated it.
    pub activated_by: Option<String>,
    /// When.
    pub activated_at: Option<DateTime<Utc>>,
    /// Why.
    pub activation_comment: Option<String>,
    /// When it was replaced.
    pub retired_at: Option<DateTime<Utc>>,
}

/// Why an activation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    /// No such ruleset for the tenant.
    #[error("ruleset not found")]
    NotFound,
    /// Only a DRAFT can be activated.
    #[error("ruleset is {0}; only a DRAFT can be activated (create a new version instead)")]
    NotDraft(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for ActivationError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(e.into())
    }
}

const COLUMNS: &str = "id, workflow, version, status, spec, sha256, created_by, created_at, \
     activated_by, activated_at, activation_comment, retired_at";

/// Creates the next version as a DRAFT. Versions are taken under a per-(tenant, workflow)
/// transaction lock, so two creations never collide.
const RULESET_CREATE: &str = r#"
INSERT INTO rulesets (id, tenant_id, workflow, version, status, spec, sha256, created_by)
SELECT $1, $2, $3, coalesce(max(version), 0) + 1, 'DRAFT', $4, $5, $6
FROM rulesets WHERE tenant_id = $2 AND workflow = $3
RETURNING id, workflow, version, status, spec, sha256, created_by, created_at,
          activated_by, activated_at, activation_comment, retired_at
"#;

const RULESET_RETIRE_ACTIVE: &str = r#"
UPDATE rulesets SET status = 'RETIRED', retired_at = now()
WHERE tenant_id = $1 AND workflow = $2 AND status = 'ACTIVE'
RETURNING id, version
"#;

const RULESET_ACTIVATE: &str = r#"
UPDATE rulesets SET status = 'ACTIVE', activated_by = $3, activated_at = now(),
    activation_comment = $4
WHERE id = $1 AND tenant_id = $2 AND status = 'DRAFT'
RETURNING id, workflow, version, status, spec, sha256, created_by, created_at,
          activated_by, activated_at, activation_comment, retired_at
"#;

impl Store {
    /// Stores a DRAFT ruleset (the caller validated its shape) and audits it.
    pub async fn create_ruleset(
        &self,
        tenant: Uuid,
        workflow: &str,
        spec: &serde_json::Value,
        actor: &str,
    ) -> StoreResult<RulesetRow> {
        let sha = hex::encode(Sha256::digest(spec.to_string().as_bytes()));
        let mut tx = self.pool().begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("ruleset:{tenant}:{workflow}"))
            .execute(&mut *tx)
            .await?;
        let row: RulesetRow = sqlx::query_as(RULESET_CREATE)
            .bind(Uuid::now_v7())
            .bind(tenant)
            .bind(workflow)
            .bind(spec)
            .bind(&sha)
            .bind(actor)
            .fetch_one(&mut *tx)
            .await?;
        audit_trail::record(
            &mut tx,
            tenant,
            None,
            actor,
            AuditEventType::RulesetCreated,
            serde_json::json!({"ruleset_id": row.id, "workflow": workflow, "version": row.version,
                               "sha256": sha}),
        )
        .await?;
        tx.commit().await?;
        Ok(row)
    }

    /// A tenant's rulesets, for one workflow or all, newest version first.
    pub async fn list_rulesets(
        &self,
        tenant: Uuid,
        workflow: Option<&str>,
    ) -> StoreResult<Vec<RulesetRow>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM rulesets WHERE tenant_id = $1 AND ($2::text IS NULL OR workflow = $2) \
             ORDER BY workflow, version DESC LIMIT 500"
        );
        Ok(sqlx::query_as(&sql)
            .bind(tenant)
            .bind(workflow)
            .fetch_all(self.pool())
            .await?)
    }

    /// One of the tenant's rulesets.
    pub async fn get_ruleset(&self, tenant: Uuid, id: Uuid) -> StoreResult<Option<RulesetRow>> {
        let sql = format!("SELECT {COLUMNS} FROM rulesets WHERE id = $1 AND tenant_id = $2");
        Ok(sqlx::query_as(&sql)
            .bind(id)
            .bind(tenant)
            .fetch_optional(self.pool())
            .await?)
    }

    /// What `row` is compared with when no other ruleset is named: its workflow's ACTIVE
    /// ruleset, or, for the ACTIVE one itself, the version before it.
    pub async fn default_diff_base(
        &self,
        tenant: Uuid,
        row: &RulesetRow,
    ) -> StoreResult<Option<RulesetRow>> {
        let others: Vec<RulesetRow> = self
            .list_rulesets(tenant, Some(&row.workflow))
            .await?
            .into_iter()
            .filter(|r| r.id != row.id)
            .collect();
        let active = others.iter().find(|r| r.status == "ACTIVE").cloned();
        // newest first: the first older version is the one before
        Ok(active.or_else(|| others.into_iter().find(|r| r.version < row.version)))
    }

    /// Makes a DRAFT the tenant's ACTIVE ruleset for its workflow, retiring the previous one,
    /// with actor and comment, an audit event and a RULESET_ACTIVATED notification — one
    /// transaction. The caller must have validated the ruleset against the workflow.
    pub async fn activate_ruleset(
        &self,
        tenant: Uuid,
        id: Uuid,
        actor: &str,
        comment: &str,
    ) -> Result<RulesetRow, ActivationError> {
        let mut tx = self.pool().begin().await?;
        let workflow: Option<(String, String)> = sqlx::query_as(
            "SELECT workflow, status FROM rulesets WHERE id = $1 AND tenant_id = $2 FOR UPDATE",
        )
        .bind(id)
        .bind(tenant)
        .fetch_optional(&mut *tx)
        .await?;
        let (workflow, status) = workflow.ok_or(ActivationError::NotFound)?;
        if status != "DRAFT" {
            return Err(ActivationError::NotDraft(status));
        }
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("ruleset:{tenant}:{workflow}"))
            .execute(&mut *tx)
            .await?;
        let retired: Option<(Uuid, i32)> = sqlx::query_as(RULESET_RETIRE_ACTIVE)
            .bind(tenant)
            .bind(&workflow)
            .fetch_optional(&mut *tx)
            .await?;
        let comment = crate::storable(comment).into_owned();
        let row: RulesetRow = sqlx::query_as(RULESET_ACTIVATE)
            .bind(id)
            .bind(tenant)
            .bind(actor)
            .bind(&comment)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| ActivationError::NotDraft("no longer a DRAFT".into()))?;
        let data = serde_json::json!({
            "ruleset_id": row.id, "workflow": workflow, "version": row.version,
            "comment": comment, "retired": retired.map(|(rid, v)| serde_json::json!({"id": rid, "version": v})),
        });
        announce(
            &mut tx,
            Announcement {
                tenant,
                case: None,
                kind: NotificationType::RulesetActivated,
                dedup_key: format!("ruleset:{}:activated", row.id),
                data: data.clone(),
            },
        )
        .await?;
        audit_trail::record(
            &mut tx,
            tenant,
            None,
            actor,
            AuditEventType::RulesetActivated,
            data,
        )
        .await?;
        tx.commit().await?;
        Ok(row)
    }
}
