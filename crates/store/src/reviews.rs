//! Human review: the queue of decisions awaiting a person, and resolving one.
//!
//! Resolving runs under the case lock: the pending review, the latest decision version and
//! the replay record are read after it, so two reviewers at once cannot both win and a stale
//! `expected_decision_version` is always seen as stale.

use chrono::{DateTime, Utc};
use ironclad_core::audit::AuditEventType;
use ironclad_core::notification::NotificationType;
use ironclad_core::review::{Resolution, ReviewAction, ReviewStatus};
use ironclad_core::DecisionStatus;
use serde::Serialize;
use uuid::Uuid;

use crate::decisions::CASE_RESOLVE;
use crate::notify::{announce, Announcement};
use crate::replay::{self, ActionAnswer, ActionError, ActionKey};
use crate::{audit_trail, Store, StoreResult};

/// A review request, as the API or CLI received it.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    /// The case.
    pub case: Uuid,
    /// What the reviewer asks.
    pub action: ReviewAction,
    /// The decision version the reviewer looked at.
    pub expected_decision_version: i32,
    /// Why (required for OVERRIDE).
    pub comment: Option<String>,
    /// Who (the key's name).
    pub actor: String,
    /// With which role.
    pub actor_role: String,
}

/// A resolved review.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewResolved {
    /// The review.
    pub review_id: Uuid,
    /// The case, now RESOLVED.
    pub case_id: Uuid,
    /// The decision version resolved.
    pub decision_version: i32,
    /// How.
    pub resolution: Resolution,
    /// By whom.
    pub actor: String,
    /// When the decision was written (the review opened).
    pub opened_at: DateTime<Utc>,
    /// When it was resolved.
    pub resolved_at: DateTime<Utc>,
}

/// A review in the queue.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewRow {
    /// The review.
    pub id: Uuid,
    /// The case.
    pub case_id: Uuid,
    /// The case's reference.
    pub external_reference: Option<String>,
    /// The decision it settles.
    pub decision_version: i32,
    /// That decision's status.
    pub decision_status: String,
    /// That decision's summary.
    pub summary: String,
    /// PENDING, RESOLVED or CANCELLED.
    pub status: String,
    /// How it was resolved.
    pub resolution: Option<String>,
    /// By whom.
    pub actor: Option<String>,
    /// Their comment.
    pub comment: Option<String>,
    /// When it opened.
    pub created_at: DateTime<Utc>,
    /// When it was resolved.
    pub resolved_at: Option<DateTime<Utc>>,
    /// Seconds waited (until now, or until resolved).
    pub age_seconds: f64,
}

/// The pending review: id, decision version and status, opened at, the latest version.
type PendingRow = (Uuid, i32, String, DateTime<Utc>, Option<i32>);

const PENDING_FOR_CASE: &str = r#"
SELECT r.id, r.decision_version, r.decision_status, r.created_at,
       (SELECT max(version) FROM decisions WHERE case_id = r.case_id)
FROM reviews r WHERE r.case_id = $1 AND r.status = 'PENDING'
"#;

const LATEST_DECISION: &str = r#"
SELECT json_build_object('version', version, 'status', status, 'summary', summary,
                         'created_at', created_at)
FROM decisions WHERE case_id = $1 ORDER BY version DESC LIMIT 1
"#;

const REVIEW_RESOLVE: &str = r#"
UPDATE reviews SET status = 'RESOLVED', resolution = $2, actor = $3, actor_role = $4,
    comment = $5, resolved_at = now()
WHERE id = $1 AND status = 'PENDING'
RETURNING resolved_at
"#;

const REVIEWS_LIST: &str = r#"
SELECT r.id, r.case_id, c.external_reference, r.decision_version, r.decision_status, d.summary,
       r.status, r.resolution, r.actor, r.comment, r.created_at, r.resolved_at,
       extract(epoch FROM coalesce(r.resolved_at, now()) - r.created_at)::float8 AS age_seconds
FROM reviews r JOIN cases c ON c.id = r.case_id JOIN decisions d ON d.id = r.decision_id
WHERE r.tenant_id = $1 AND r.status = $2
  AND ($3::timestamptz IS NULL OR (r.created_at, r.id) > ($3, $4))
ORDER BY r.created_at, r.id
LIMIT $5
"#;

const OLDEST_PENDING: &str = r#"
SELECT extract(epoch FROM now() - min(created_at))::float8 FROM reviews WHERE status = 'PENDING'
"#;

impl Store {
    /// Resolves the case's pending review (see the module doc). `respond` turns the result
    /// into the body stored for replays and returned.
    pub async fn resolve_review(
        &self,
        key: &ActionKey,
        req: &ReviewRequest,
        respond: impl FnOnce(&ReviewResolved) -> serde_json::Value,
    ) -> Result<ActionAnswer, ActionError> {
        let mut tx = self.pool().begin().await?;
        let (status, _) = replay::lock_case(&mut tx, key.tenant, req.case).await?;
        if let Some(answer) = replay::replayed(&mut tx, key).await? {
            return Ok(answer);
        }
        let pending: Option<PendingRow> = sqlx::query_as(PENDING_FOR_CASE)
            .bind(req.case)
            .fetch_optional(&mut *tx)
            .await?;
        let current: Option<serde_json::Value> = sqlx::query_scalar(LATEST_DECISION)
            .bind(req.case)
            .fetch_optional(&mut *tx)
            .await?;
        let current = current.unwrap_or(serde_json::Value::Null);
        let Some((review_id, version, decision_status, opened_at, latest)) = pending else {
            return Err(ActionError::Conflict {
                message: format!("nothing awaits review on this case (it is {status})"),
                current,
            });
        };
        if req.expected_decision_version != version || latest != Some(version) {
            return Err(ActionError::Conflict {
                message: format!(
                    "decision version {} is not the current one ({}); look at the newer decision",
                    req.expected_decision_version,
                    latest.unwrap_or(version)
                ),
                current,
            });
        }
        let decision_status: DecisionStatus = decision_status
            .parse()
            .map_err(|e: ironclad_core::UnknownVariant| ActionError::Refused(e.to_string()))?;
        let resolution = req
            .action
            .resolve(decision_status, req.comment.as_deref())
            .map_err(|e| ActionError::Refused(e.to_string()))?;
        let comment = req
            .comment
            .as_deref()
            .map(|c| crate::storable(c).into_owned());
        let resolved_at: DateTime<Utc> = sqlx::query_scalar(REVIEW_RESOLVE)
            .bind(review_id)
            .bind(resolution.as_str())
            .bind(&req.actor)
            .bind(&req.actor_role)
            .bind(&comment)
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query(CASE_RESOLVE)
            .bind(req.case)
            .bind(resolution.as_str())
            .bind(&req.actor)
            .execute(&mut *tx)
            .await?;
        let data = serde_json::json!({
            "review_id": review_id, "decision_version": version, "action": req.action,
            "resolution": resolution, "comment": comment, "actor_role": req.actor_role,
        });
        announce(
            &mut tx,
            Announcement {
                tenant: key.tenant,
                case: Some(req.case),
                kind: NotificationType::DossierResolved,
                dedup_key: format!("case:{}:resolved:{version}", req.case),
                data: serde_json::json!({"case_id": req.case, "decision_version": version,
                                         "resolution": resolution, "actor": req.actor}),
            },
        )
        .await?;
        // the audit event last: it holds the tenant's chain head until commit
        audit_trail::record(
            &mut tx,
            key.tenant,
            Some(req.case),
            &req.actor,
            AuditEventType::ReviewResolved,
            data.clone(),
        )
        .await?;
        let resolved = ReviewResolved {
            review_id,
            case_id: req.case,
            decision_version: version,
            resolution,
            actor: req.actor.clone(),
            opened_at,
            resolved_at,
        };
        let body = respond(&resolved);
        replay::remember(&mut tx, key, 200, &body).await?;
        tx.commit().await?;
        Ok(ActionAnswer {
            status: 200,
            body,
            replayed: false,
        })
    }

    /// A tenant's reviews in `status`, oldest first, after the keyset cursor.
    pub async fn list_reviews(
        &self,
        tenant: Uuid,
        status: ReviewStatus,
        after: Option<(DateTime<Utc>, Uuid)>,
        limit: i64,
    ) -> StoreResult<Vec<ReviewRow>> {
        Ok(sqlx::query_as(REVIEWS_LIST)
            .bind(tenant)
            .bind(status.as_str())
            .bind(after.map(|a| a.0))
            .bind(after.map(|a| a.1))
            .bind(limit)
            .fetch_all(self.pool())
            .await?)
    }

    /// Seconds the oldest pending review has waited (all tenants), if any waits.
    pub async fn oldest_pending_review_secs(&self) -> StoreResult<Option<f64>> {
        Ok(sqlx::query_scalar(OLDEST_PENDING)
            .fetch_one(self.pool())
            .await?)
    }
}
