//! Open cases that wait beyond their expected time, and why: the one statement behind
//! `ironclad cases --stuck`, the desk's operations page and `ironclad verify`.
//!
//! A case is stuck when it is open (INGESTED, PROCESSING) and neither it nor any job of its
//! current generation changed for longer than the threshold: a running job's lease renewal is
//! activity, so a long OCR is not stuck. Each comes with its unfinished jobs. What a tenant is
//! shown leaves out the lease holder and the last error, which may name hosts and paths
//! (`read::JobView::last_error`); an operator sees both.

use std::time::Duration;

use ironclad_core::TenantId;
use serde::{Deserialize, Serialize};
use sqlx::types::Json;
use uuid::Uuid;

use crate::read::CaseSummary;
use crate::{Store, StoreResult};

/// An open case idle this long is stuck, unless the caller says otherwise: twice the longest
/// a healthy case waits between two changes (a scanned page's OCR renews its lease every
/// few seconds; a retry's first delay is 30 s, its second 2 min).
pub const STUCK_AFTER: Duration = Duration::from_secs(600);

/// Whose cases to look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StuckScope {
    /// Every tenant's, with the operator's detail.
    Operator,
    /// One tenant's, with what a tenant may be shown.
    Tenant(TenantId),
}

/// One unfinished job of a stuck case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpenJob {
    /// Job id.
    pub id: Uuid,
    /// `process_source` or `finalize_case`.
    pub kind: String,
    /// PENDING or RUNNING.
    pub status: String,
    /// Attempts made.
    pub attempt: i32,
    /// Attempts allowed.
    pub max_attempts: i32,
    /// Seconds until its next attempt is due, when it waits for a retry.
    pub retry_in_seconds: Option<i64>,
    /// The latest outbox row announcing it: PENDING, PUBLISHING, PUBLISHED or DEAD.
    pub outbox_status: Option<String>,
    /// Who holds it (operator detail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_owner: Option<String>,
    /// Its last error (operator detail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A stuck case.
#[derive(Debug, Clone, Serialize)]
pub struct StuckCase {
    /// The case.
    #[serde(flatten)]
    pub case: CaseSummary,
    /// Seconds since the case or one of its current jobs last changed.
    pub idle_seconds: i64,
    /// Why it waits, in words (what the scope may be shown).
    pub reason: String,
    /// Its unfinished jobs (without lease holder and last error for a tenant).
    pub open_jobs: Vec<OpenJob>,
}

#[derive(sqlx::FromRow)]
struct StuckRow {
    #[sqlx(flatten)]
    case: CaseSummary,
    idle_seconds: i64,
    open_jobs: Json<Vec<OpenJob>>,
}

/// $1 threshold seconds, $2 most rows, $3 tenant (NULL: every tenant). Oldest activity first.
const STUCK: &str = r#"
SELECT c.id, c.tenant_id, c.external_reference, c.workflow, c.status, c.status_reason,
       c.generation, c.created_at, c.updated_at, c.resolution, c.resolved_by, c.resolved_at,
       extract(epoch FROM now() - a.last_activity)::bigint AS idle_seconds,
       a.open_jobs
FROM cases c
CROSS JOIN LATERAL (
    SELECT greatest(c.updated_at, max(j.updated_at)) AS last_activity,
           coalesce(jsonb_agg(jsonb_build_object(
               'id', j.id, 'kind', j.kind, 'status', j.status, 'attempt', j.attempt,
               'max_attempts', j.max_attempts,
               'retry_in_seconds', CASE WHEN j.status = 'PENDING' AND j.next_attempt_at > now()
                   THEN ceil(extract(epoch FROM j.next_attempt_at - now()))::bigint END,
               'outbox_status', (SELECT o.status FROM outbox o WHERE o.job_id = j.id
                                 ORDER BY o.created_at DESC LIMIT 1),
               'lease_owner', j.lease_owner, 'last_error', j.last_error)
               ORDER BY j.created_at, j.id)
               FILTER (WHERE j.status IN ('PENDING', 'RUNNING')), '[]'::jsonb) AS open_jobs
    FROM jobs j WHERE j.case_id = c.id AND j.generation = c.generation
) a
WHERE c.status IN ('INGESTED', 'PROCESSING')
  AND ($3::uuid IS NULL OR c.tenant_id = $3)
  AND c.updated_at < now() - make_interval(secs => $1)
  AND a.last_activity < now() - make_interval(secs => $1)
ORDER BY a.last_activity, c.id
LIMIT $2
"#;

/// Why a case with these unfinished jobs waits, in words; with the operator's detail or not.
fn reason(jobs: &[OpenJob], operator: bool) -> String {
    if jobs.is_empty() {
        return "no unfinished job in the current generation (finalize not enqueued?)".to_owned();
    }
    jobs.iter()
        .map(|j| {
            let mut r = format!(
                "{} {} {} attempt {}/{}",
                j.kind, j.id, j.status, j.attempt, j.max_attempts
            );
            if j.status == "RUNNING" {
                r += &match (&j.lease_owner, operator) {
                    (Some(owner), true) => format!(" held by {owner}"),
                    _ => " held by a worker".to_owned(),
                };
            } else if j.retry_in_seconds.is_some() {
                r += " waiting for its retry time";
            } else {
                r += &format!(", outbox {}", j.outbox_status.as_deref().unwrap_or("none"));
            }
            if let (Some(e), true) = (&j.last_error, operator) {
                r += &format!(", last error: {e}");
            }
            r
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The stuck cases of `scope` through `executor` (a pool, or a transaction's snapshot).
pub(crate) async fn fetch<'e, E: sqlx::PgExecutor<'e>>(
    executor: E,
    scope: StuckScope,
    threshold: Duration,
    limit: i64,
) -> StoreResult<Vec<StuckCase>> {
    let tenant = match scope {
        StuckScope::Operator => None,
        StuckScope::Tenant(t) => Some(t.0),
    };
    let rows: Vec<StuckRow> = sqlx::query_as(STUCK)
        .bind(threshold.as_secs_f64())
        .bind(limit)
        .bind(tenant)
        .fetch_all(executor)
        .await?;
    let operator = scope == StuckScope::Operator;
    Ok(rows
        .into_iter()
        .map(|row| {
            let mut open_jobs = row.open_jobs.0;
            let reason = reason(&open_jobs, operator);
            if !operator {
                for j in &mut open_jobs {
                    j.lease_owner = None;
                    j.last_error = None;
                }
            }
            StuckCase {
                case: row.case,
                idle_seconds: row.idle_seconds,
                reason,
                open_jobs,
            }
        })
        .collect())
}

impl Store {
    /// Open cases of `scope` idle beyond `threshold` ([`STUCK_AFTER`] by default), oldest
    /// activity first, at most `limit`, each with why it waits.
    pub async fn stuck_cases(
        &self,
        scope: StuckScope,
        threshold: Duration,
        limit: i64,
    ) -> StoreResult<Vec<StuckCase>> {
        fetch(self.pool(), scope, threshold, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(status: &str, owner: Option<&str>, error: Option<&str>) -> OpenJob {
        OpenJob {
            id: Uuid::nil(),
            kind: "process_source".into(),
            status: status.into(),
            attempt: 1,
            max_attempts: 5,
            retry_in_seconds: None,
            outbox_status: Some("PUBLISHED".into()),
            lease_owner: owner.map(str::to_owned),
            last_error: error.map(str::to_owned),
        }
    }

    #[test]
    fn a_tenant_is_never_told_the_lease_holder_or_the_last_error() {
        let jobs = [job(
            "RUNNING",
            Some("worker@host-7"),
            Some("connect /srv/blobs: EIO"),
        )];
        let operator = reason(&jobs, true);
        assert!(operator.contains("held by worker@host-7"), "{operator}");
        assert!(operator.contains("/srv/blobs"), "{operator}");
        let tenant = reason(&jobs, false);
        assert!(tenant.contains("held by a worker"), "{tenant}");
        assert!(
            !tenant.contains("host-7") && !tenant.contains("/srv"),
            "{tenant}"
        );
    }
}
