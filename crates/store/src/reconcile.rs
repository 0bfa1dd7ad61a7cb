//! What the reconciler asks of PostgreSQL: re-announce work no live message carries, rescue
//! expired leases, requeue dead work, and tell the blob sweep which blobs are referenced.

use crate::jobs::CASE_LOCK;
use crate::{secs, Store, StoreResult};
use chrono::{DateTime, Utc};
use ironclad_core::{JobId, TenantId};
use std::collections::HashSet;
use std::time::Duration;
use uuid::Uuid;

/// Due PENDING jobs that may have lost their announcement: no PENDING/PUBLISHING outbox row and
/// no row published within the last `$1` seconds. Each comes with the stream entries its
/// published rows became; the reconciler asks Redis which of those still wait (in the stream
/// or a consumer's pending list) and re-announces only jobs none of whose entries does. That is
/// what makes a Redis FLUSHALL or restart a delay rather than a loss, without a backlog that
/// merely waits in the stream being announced again and again. $2 limit.
const JOBS_REEMIT_CANDIDATES: &str = r#"
SELECT j.id,
       coalesce((SELECT array_agg(o.stream_id) FROM outbox o
                 WHERE o.job_id = j.id AND o.status = 'PUBLISHED' AND o.stream_id IS NOT NULL),
                '{}'::text[]) AS stream_ids
FROM jobs j
WHERE j.status = 'PENDING' AND j.next_attempt_at <= now()
  AND NOT EXISTS (
    SELECT 1 FROM outbox o WHERE o.job_id = j.id
      AND (o.status IN ('PENDING', 'PUBLISHING')
        OR (o.status = 'PUBLISHED' AND o.published_at > now() - make_interval(secs => $1))))
ORDER BY j.next_attempt_at
LIMIT $2
"#;

/// Announces the jobs `$1` again, each still due with no announcement pending. Duplicates it
/// may create (a message that was only late) are absorbed by the conditional claim.
const JOBS_REEMIT: &str = r#"
INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
SELECT gen_random_uuid(), 'job:' || j.id || ':reemit:' || gen_random_uuid(), j.id,
       json_build_object('v', 1, 'job_id', j.id, 'case_id', j.case_id, 'kind', j.kind,
                         'attempt', j.attempt + 1)::text,
       'PENDING'
FROM jobs j
WHERE j.id = ANY($1) AND j.status = 'PENDING' AND j.next_attempt_at <= now()
  AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.job_id = j.id AND o.status IN ('PENDING', 'PUBLISHING'))
"#;

/// RUNNING jobs whose lease lapsed (their worker is gone) return to PENDING with a new outbox
/// row, if attempts remain; their open run is closed as LOST. $1 limit.
const JOB_RESCUE_LAPSED: &str = r#"
WITH rescued AS (
    UPDATE jobs SET status = 'PENDING', next_attempt_at = now(), lease_token = NULL,
        lease_expires_at = NULL, updated_at = now(),
        last_error = 'lease lapsed: worker ' || coalesce(lease_owner, '?') || ' was lost'
    WHERE id IN (SELECT id FROM jobs WHERE status = 'RUNNING' AND lease_expires_at < now()
                   AND lease_lapsed(lease_expires_at, lease_duration) AND attempt < max_attempts
                 ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
    RETURNING id, case_id, kind, attempt
), lost AS (
    UPDATE job_runs r SET outcome = 'LOST', finished_at = now()
    FROM rescued x WHERE r.job_id = x.id AND r.outcome IS NULL
)
INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
SELECT gen_random_uuid(), 'job:' || id || ':attempt:' || (attempt + 1), id,
       json_build_object('v', 1, 'job_id', id, 'case_id', case_id, 'kind', kind,
                         'attempt', attempt + 1)::text,
       'PENDING'
FROM rescued
ON CONFLICT (idempotency_key) DO NOTHING
"#;

/// A FAILED job of its case's current generation that an operator may run again: every
/// technical failure, never a file that cannot be read (rows failed before failure codes
/// existed count when they were dead-lettered).
macro_rules! requeueable {
    ($j:literal) => {
        concat!(
            $j,
            ".status = 'FAILED' AND (",
            $j,
            ".error_code <> 'document_unreadable' OR (",
            $j,
            ".error_code IS NULL AND ",
            $j,
            ".dead_lettered_at IS NOT NULL)) AND ",
            $j,
            ".generation = (SELECT generation FROM cases WHERE id = ",
            $j,
            ".case_id)"
        )
    };
}

/// The cases with something to requeue (of tenant `$2`, or all when NULL), in id order (the
/// order their locks are taken in).
const CASES_WITH_REQUEUEABLE_JOBS: &str = concat!(
    "SELECT DISTINCT j.case_id FROM jobs j WHERE ",
    requeueable!("j"),
    " AND ($2::uuid IS NULL OR j.case_id IN (SELECT id FROM cases WHERE tenant_id = $2))",
    " ORDER BY j.case_id LIMIT $1"
);

/// A tenant's requeueable jobs with their cases, newest failure first: the desk's dead letters.
const DEAD_LETTERS_OF_TENANT: &str = concat!(
    "SELECT j.id, j.case_id, c.external_reference, j.kind, j.error_code, j.last_error, j.finished_at
     FROM jobs j JOIN cases c ON c.id = j.case_id
     WHERE c.tenant_id = $1 AND ",
    requeueable!("j"),
    " ORDER BY j.finished_at DESC, j.id LIMIT $2"
);

/// Requeueable jobs of the (locked) cases `$2` start over with a fresh retry budget of their
/// own size, a new outbox row, their case back to PROCESSING unless another job of its
/// generation failed and stays failed (that case could never be finalized), and a REQUEUED
/// audit event. Runs after every case's CASE_LOCK, so a sibling failing at the same time is
/// either already visible here or sees the reopened case.
const JOBS_REQUEUE: &str = concat!(
    "WITH previous AS (
        SELECT j.id, j.error_code FROM jobs j WHERE j.case_id = ANY($2) AND ",
    requeueable!("j"),
    " FOR UPDATE
    ), requeued AS (
        UPDATE jobs j SET status = 'PENDING', budget_start = j.attempt,
            max_attempts = j.attempt + greatest(j.max_attempts - j.budget_start, 1),
            next_attempt_at = now(), finished_at = NULL, dead_lettered_at = NULL,
            error_code = NULL, updated_at = now()
        FROM previous p WHERE j.id = p.id
        RETURNING j.id, j.case_id, j.kind, j.generation, p.error_code
    ), announced AS (
        INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
        SELECT gen_random_uuid(), 'job:' || id || ':requeue:' || gen_random_uuid(), id,
               json_build_object('v', 1, 'job_id', id, 'case_id', case_id, 'kind', kind, 'attempt', 1)::text,
               'PENDING'
        FROM requeued
    ), reopened AS (
        UPDATE cases c SET status = 'PROCESSING', status_reason = NULL, failure_code = NULL,
            updated_at = now()
        FROM (SELECT DISTINCT case_id, generation FROM requeued) r
        WHERE c.id = r.case_id AND c.generation = r.generation AND c.status = 'FAILED'
          AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.case_id = c.id AND j.generation = c.generation
                            AND j.status = 'FAILED' AND j.id NOT IN (SELECT id FROM requeued))
    )
    INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
    SELECT r.case_id, c.tenant_id, $1, 'REQUEUED',
           json_build_object('job_id', r.id, 'previous_code', r.error_code)
    FROM requeued r JOIN cases c ON c.id = r.case_id"
);

/// Cases requeued per transaction: bounds how many case locks one requeue holds at once.
const REQUEUE_BATCH: i64 = 500;

/// A job that failed for a technical reason and may be requeued, with its case.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeadLetter {
    /// The job.
    pub id: Uuid,
    /// Its case.
    pub case_id: Uuid,
    /// The case's external reference.
    pub external_reference: Option<String>,
    /// `process_source` or `finalize_case`.
    pub kind: String,
    /// Why it failed, as a code (NULL for rows failed before codes existed).
    pub error_code: Option<String>,
    /// The last error, in words.
    pub last_error: Option<String>,
    /// When it failed.
    pub finished_at: Option<DateTime<Utc>>,
}

const BLOBS_REFERENCED: &str = "SELECT DISTINCT blob_key FROM sources WHERE blob_key = ANY($1)";

impl Store {
    /// Due PENDING jobs that may have lost their announcement (see
    /// [`JOBS_REEMIT_CANDIDATES`]), with the stream entries they were published as, oldest
    /// due first. `grace` keeps a freshly published job out of the list.
    pub async fn reemit_candidates(
        &self,
        grace: Duration,
        limit: i64,
    ) -> StoreResult<Vec<(JobId, Vec<String>)>> {
        let rows: Vec<(Uuid, Vec<String>)> = sqlx::query_as(JOBS_REEMIT_CANDIDATES)
            .bind(secs(grace))
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        Ok(rows.into_iter().map(|(id, s)| (JobId(id), s)).collect())
    }

    /// Announces `jobs` again where each is still due with nothing pending; returns how many.
    pub async fn reemit_jobs(&self, jobs: &[JobId]) -> StoreResult<u64> {
        if jobs.is_empty() {
            return Ok(0);
        }
        let ids: Vec<Uuid> = jobs.iter().map(|j| j.0).collect();
        Ok(sqlx::query(JOBS_REEMIT)
            .bind(ids)
            .execute(self.pool())
            .await?
            .rows_affected())
    }

    /// Rescues RUNNING jobs whose lease lapsed: back to PENDING if attempts remain, else
    /// FAILED with the reason. Returns (rescued, failed).
    pub async fn rescue_expired_leases(&self, limit: i64) -> StoreResult<(u64, u64)> {
        let rescued = sqlx::query(JOB_RESCUE_LAPSED)
            .bind(limit)
            .execute(self.pool())
            .await?
            .rows_affected();
        let failed = self
            .fail_lapsed_last_attempts(limit, "system:reconciler")
            .await?;
        Ok((rescued, failed))
    }

    /// Requeues every job that failed for a technical reason (dead-lettered, attempts
    /// exhausted, worker lost, …) with a fresh retry budget; returns how many.
    pub async fn requeue_dead_lettered_jobs(&self, actor: &str) -> StoreResult<u64> {
        self.requeue_dead_lettered(None, actor).await
    }

    /// [`Store::requeue_dead_lettered_jobs`] for one tenant's cases only (the desk's button).
    pub async fn requeue_dead_lettered_jobs_of(
        &self,
        tenant: TenantId,
        actor: &str,
    ) -> StoreResult<u64> {
        self.requeue_dead_lettered(Some(tenant.0), actor).await
    }

    async fn requeue_dead_lettered(&self, tenant: Option<Uuid>, actor: &str) -> StoreResult<u64> {
        let mut total = 0;
        loop {
            let mut tx = self.pool().begin().await?;
            let cases: Vec<Uuid> = sqlx::query_scalar(CASES_WITH_REQUEUEABLE_JOBS)
                .bind(REQUEUE_BATCH)
                .bind(tenant)
                .fetch_all(&mut *tx)
                .await?;
            if cases.is_empty() {
                return Ok(total);
            }
            for case in &cases {
                sqlx::query(CASE_LOCK).bind(case).execute(&mut *tx).await?;
            }
            let requeued = sqlx::query(JOBS_REQUEUE)
                .bind(actor)
                .bind(&cases)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            total += requeued;
            if (cases.len() as i64) < REQUEUE_BATCH || requeued == 0 {
                return Ok(total);
            }
        }
    }

    /// Up to `limit` of a tenant's jobs that an operator may requeue, newest failure first.
    pub async fn dead_letters_of(
        &self,
        tenant: TenantId,
        limit: i64,
    ) -> StoreResult<Vec<DeadLetter>> {
        Ok(sqlx::query_as(DEAD_LETTERS_OF_TENANT)
            .bind(tenant.0)
            .bind(limit)
            .fetch_all(self.pool())
            .await?)
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
