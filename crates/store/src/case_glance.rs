//! Small reads the desk makes around its pages: each case's decision for the list, a case's
//! state for a page waiting on its decision, the people behind audit actors, and the next
//! case waiting for review.

use crate::{Store, StoreResult};
use ironclad_core::TenantId;
use serde::Serialize;
use uuid::Uuid;

/// What a case page waits for: it reloads when any of these changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseState {
    /// The case's status.
    pub status: String,
    /// Its generation (a reprocess starts a new one).
    pub generation: i32,
    /// The current generation's latest decision version, if any.
    pub decision_version: Option<i32>,
    /// That decision's status.
    pub decision_status: Option<String>,
}

/// How the desk names the actors of audit events and records.
#[derive(Debug, Clone, Default)]
pub struct ActorNames {
    /// Users: (id, display name or address).
    pub users: Vec<(Uuid, String)>,
    /// API keys: (id, label, prefix).
    pub keys: Vec<(Uuid, Option<String>, String)>,
}

/// The latest decision of each case's current generation ($2 case ids of tenant $1).
const CASE_DECISIONS: &str = r#"
SELECT DISTINCT ON (d.case_id) d.case_id, d.status
FROM decisions d JOIN cases c ON c.id = d.case_id AND c.generation = d.generation
WHERE c.tenant_id = $1 AND d.case_id = ANY($2)
ORDER BY d.case_id, d.version DESC
"#;
const CASE_STATE: &str = r#"
SELECT c.status, c.generation, d.version, d.status
FROM cases c
LEFT JOIN LATERAL (
    SELECT version, status FROM decisions
    WHERE case_id = c.id AND generation = c.generation ORDER BY version DESC LIMIT 1
) d ON true
WHERE c.id = $1 AND c.tenant_id = $2
"#;
const USER_NAMES: &str = "SELECT id, coalesce(display_name, email) FROM users \
     WHERE tenant_id = $1 AND id = ANY($2)";
const KEY_NAMES: &str =
    "SELECT id, label, prefix FROM api_keys WHERE tenant_id = $1 AND id = ANY($2)";
/// The tenant's open reviews in queue order (oldest first) that nobody but $3 holds a live
/// claim on, the case after $2 first and $2 itself never: what `n` opens next.
const NEXT_PENDING: &str = r#"
WITH queue AS (
    SELECT r.case_id, r.created_at, r.id FROM reviews r
    LEFT JOIN review_claims k ON k.case_id = r.case_id AND k.expires_at > now()
    WHERE r.tenant_id = $1 AND r.status IN ('PENDING', 'AWAITING_SECOND')
      AND (k.holder IS NULL OR k.holder = $3)
), here AS (
    SELECT created_at, id FROM reviews
    WHERE tenant_id = $1 AND case_id = $2 AND status IN ('PENDING', 'AWAITING_SECOND')
)
SELECT q.case_id FROM queue q
WHERE q.case_id IS DISTINCT FROM $2
ORDER BY (SELECT (q.created_at, q.id) > (h.created_at, h.id) FROM here h) DESC NULLS LAST,
         q.created_at, q.id
LIMIT 1
"#;

impl Store {
    /// The latest decision status of each of the tenant's `cases` (current generation);
    /// cases without a decision are left out.
    pub async fn case_decisions(
        &self,
        tenant: TenantId,
        cases: &[Uuid],
    ) -> StoreResult<Vec<(Uuid, String)>> {
        if cases.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(CASE_DECISIONS)
            .bind(tenant.0)
            .bind(cases)
            .fetch_all(self.pool())
            .await?)
    }

    /// The tenant's case's state; `None` for an unknown or another tenant's case.
    pub async fn case_state(&self, tenant: TenantId, case: Uuid) -> StoreResult<Option<CaseState>> {
        let row: Option<(String, i32, Option<i32>, Option<String>)> = sqlx::query_as(CASE_STATE)
            .bind(case)
            .bind(tenant.0)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(
            |(status, generation, decision_version, decision_status)| CaseState {
                status,
                generation,
                decision_version,
                decision_status,
            },
        ))
    }

    /// The names of the tenant's `users` and `keys` (other tenants' ids are not found).
    pub async fn actor_names(
        &self,
        tenant: TenantId,
        users: &[Uuid],
        keys: &[Uuid],
    ) -> StoreResult<ActorNames> {
        let mut names = ActorNames::default();
        if !users.is_empty() {
            names.users = sqlx::query_as(USER_NAMES)
                .bind(tenant.0)
                .bind(users)
                .fetch_all(self.pool())
                .await?;
        }
        if !keys.is_empty() {
            names.keys = sqlx::query_as(KEY_NAMES)
                .bind(tenant.0)
                .bind(keys)
                .fetch_all(self.pool())
                .await?;
        }
        Ok(names)
    }

    /// The case whose review comes after `current`'s in the tenant's queue (oldest first,
    /// wrapping round), never `current` itself nor one someone other than `actor` is
    /// reviewing (a live claim); `None` when no other case waits.
    pub async fn next_pending_case(
        &self,
        tenant: TenantId,
        current: Option<Uuid>,
        actor: &str,
    ) -> StoreResult<Option<Uuid>> {
        Ok(sqlx::query_scalar(NEXT_PENDING)
            .bind(tenant.0)
            .bind(current)
            .bind(actor)
            .fetch_optional(self.pool())
            .await?)
    }
}
