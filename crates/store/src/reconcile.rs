//! What the reconciler asks of PostgreSQL: re-announce work no live message carries, rescue
//! expired leases, requeue dead work, and tell the blob sweep which blobs are referenced.

use crate::jobs::JOB_FAIL_EXPIRED_LAST_ATTEMPT;
use crate::{secs, Store, StoreResult};
use std::collections::HashSet;
use std::time::Duration;

/// Due PENDING jobs with no PENDING/PUBLISHING outbox row and no row published recently enough
/// to still be in flight get a fresh outbox row. This is what makes a Redis FLUSHALL or restart
/// a delay rather than a loss. Duplicates it creates are absorbed by the conditional claim.
/// $1 in-flight window seconds, $2 limit.
const JOB_REEMIT_ORPHANED: &str = r#"
INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
SELECT gen_random_uuid(), 'job:' || j.id || ':reemit:' || gen_random_uuid(), j.id,
       json_build_object('v', 1, 'job_id', j.id, 'case_id', j.case_id, 'kind', j.kind,
                         'attempt', j.attempt + 1)::text,
       'PENDING'
FROM jobs j
WHERE j.status = 'PENDING' AND j.next_attempt_at <= now()
  AND NOT EXISTS (
    SELECT 1 FROM outbox o WHERE o.job_id = j.id
      AND (o.status IN ('PENDING', 'PUBLISHING')
        OR (o.status = 'PUBLISHED' AND o.published_at > now() - make_interval(secs => $1))))
ORDER BY j.next_attempt_at
LIMIT $2
"#;

/// RUNNING jobs whose lease expired (their worker died) return to PENDING with a new outbox
/// row, if attempts remain. $1 limit.
const JOB_RESCUE_EXPIRED: &str = r#"
WITH rescued AS (
    UPDATE jobs SET status = 'PENDING', next_attempt_at = now(), lease_token = NULL,
        lease_expires_at = NULL, updated_at = now(),
        last_error = 'lease expired: worker ' || coalesce(lease_owner, '?') || ' was lost'
    WHERE id IN (SELECT id FROM jobs WHERE status = 'RUNNING' AND lease_expires_at < now()
                 AND attempt < max_attempts ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
    RETURNING id, case_id, kind, attempt
)
INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
SELECT gen_random_uuid(), 'job:' || id || ':attempt:' || (attempt + 1), id,
       json_build_object('v', 1, 'job_id', id, 'case_id', case_id, 'kind', kind,
                         'attempt', attempt + 1)::text,
       'PENDING'
FROM rescued
ON CONFLICT (idempotency_key) DO NOTHING
"#;

/// Dead-lettered jobs start over: attempts reset, a new outbox row, the case back to
/// PROCESSING (unless another job of its generation failed for good: that case could never be
/// finalized), and a REQUEUED audit event.
const JOB_REQUEUE_DEAD_LETTERED: &str = r#"
WITH requeued AS (
    UPDATE jobs SET status = 'PENDING', max_attempts = attempt + max_attempts, next_attempt_at = now(), finished_at = NULL,
        dead_lettered_at = NULL, updated_at = now()
    WHERE status = 'FAILED' AND dead_lettered_at IS NOT NULL
    RETURNING id, case_id, kind, generation, last_error
), announced AS (
    INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
    SELECT gen_random_uuid(), 'job:' || id || ':requeue:' || gen_random_uuid(), id,
           json_build_object('v', 1, 'job_id', id, 'case_id', case_id, 'kind', kind, 'attempt', 1)::text,
           'PENDING'
    FROM requeued
), reopened AS (
    UPDATE cases c SET status = 'PROCESSING', status_reason = NULL, updated_at = now()
    FROM requeued r WHERE c.id = r.case_id AND c.generation = r.generation AND c.status = 'FAILED'
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.case_id = c.id AND j.generation = c.generation AND j.status = 'FAILED' AND j.dead_lettered_at IS NULL)
)
INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
SELECT r.case_id, c.tenant_id, $1, 'REQUEUED',
       json_build_object('job_id', r.id, 'previous_error', r.last_error)
FROM requeued r JOIN cases c ON c.id = r.case_id
"#;

const BLOBS_REFERENCED: &str = "SELECT DISTINCT blob_key FROM sources WHERE blob_key = ANY($1)";

impl Store {
    /// Re-announces due PENDING jobs that no live message carries; returns how many.
    pub async fn reemit_orphaned_jobs(&self, in_flight: Duration, limit: i64) -> StoreResult<u64> {
        let done = sqlx::query(JOB_REEMIT_ORPHANED)
            .bind(secs(in_flight))
            .bind(limit)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Rescues RUNNING jobs whose lease expired: back to PENDING if attempts remain, else
    /// FAILED with the reason. Returns (rescued, failed).
    pub async fn rescue_expired_leases(&self, limit: i64) -> StoreResult<(u64, u64)> {
        let rescued = sqlx::query(JOB_RESCUE_EXPIRED)
            .bind(limit)
            .execute(self.pool())
            .await?
            .rows_affected();
        let failed = sqlx::query(JOB_FAIL_EXPIRED_LAST_ATTEMPT)
            .bind(limit)
            .bind("lease expired on the last attempt: the worker was lost")
            .bind(false)
            .bind("system:reconciler")
            .execute(self.pool())
            .await?
            .rows_affected();
        Ok((rescued, failed))
    }

    /// Requeues every dead-lettered job; returns how many.
    pub async fn requeue_dead_lettered_jobs(&self, actor: &str) -> StoreResult<u64> {
        Ok(sqlx::query(JOB_REQUEUE_DEAD_LETTERED)
            .bind(actor)
            .execute(self.pool())
            .await?
            .rows_affected())
    }

    /// Which of `keys` some source references.
    pub async fn referenced_blobs(&self, keys: Vec<String>) -> StoreResult<HashSet<String>> {
        let found: Vec<String> = sqlx::query_scalar(BLOBS_REFERENCED)
            .bind(keys)
            .fetch_all(self.pool())
            .await?;
        Ok(found.into_iter().collect())
    }
}
