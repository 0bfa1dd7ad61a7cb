//! Job transitions: claim under a lease, renew, and commit exactly one outcome.
//!
//! Every statement that ends a run carries the lease token the claim handed out, so a worker
//! whose lease expired (and whose job another worker rescued) cannot overwrite the outcome.

use crate::{secs, Store, StoreResult, Transition};
use ironclad_core::decision::NO_RULESET_SUMMARY;
use ironclad_core::outbox::job_message_key;
use ironclad_core::{CaseId, Envelope, JobId, JobKind, JobStatus, SourceId};
use std::time::Duration;
use uuid::Uuid;

/// A job this worker now holds.
#[derive(Debug, Clone)]
pub struct ClaimedJob {
    /// The job.
    pub id: JobId,
    /// Its case.
    pub case_id: CaseId,
    /// Its source (for `process_source`).
    pub source_id: Option<SourceId>,
    /// What to do.
    pub kind: JobKind,
    /// The case generation it belongs to.
    pub generation: i32,
    /// This run's attempt number (1-based).
    pub attempt: i32,
    /// Attempts allowed.
    pub max_attempts: i32,
    /// Proof of ownership for renew and finish.
    pub lease_token: Uuid,
}

/// Why a message did not lead to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimRefusal {
    /// No job has this id.
    UnknownJob,
    /// The job exists but belongs to another case or is of another kind: a forged or stale
    /// message, which must never fail the real job.
    Mismatch,
    /// The job is finished; the message is a harmless duplicate.
    Terminal(JobStatus),
    /// The job waits for a later attempt time; a delayed message will announce it.
    NotDue,
    /// Another worker holds a live lease, claimed through this very message (its consumer may
    /// have gone silent): keep the message until the lease expires.
    Leased,
    /// Another worker holds a live lease, claimed through another message: this one is a
    /// duplicate.
    LeasedElsewhere,
    /// No attempts are left (the last run's worker died); the job must be failed.
    Exhausted,
}

/// Result of trying to claim a job.
#[derive(Debug, Clone)]
pub enum ClaimOutcome {
    /// Ours to run.
    Claimed(ClaimedJob),
    /// Not ours, and why.
    Refused(ClaimRefusal),
}

/// Parameters: $1 job, $2 case, $3 kind, $4 owner, $5 token, $6 lease seconds, $7 message id.
/// A RUNNING job whose lease expired is claimable too: its worker is gone, and waiting for the
/// reconciler would only add latency. The attempt counter bounds how often that can happen.
const JOB_CLAIM: &str = r#"
WITH claimed AS (
    UPDATE jobs
    SET status = 'RUNNING', attempt = attempt + 1, lease_owner = $4, lease_token = $5, message_id = $7,
        lease_expires_at = now() + make_interval(secs => $6),
        started_at = coalesce(started_at, now()), updated_at = now()
    WHERE id = $1 AND case_id = $2 AND kind = $3 AND attempt < max_attempts
      AND ((status = 'PENDING' AND next_attempt_at <= now())
        OR (status = 'RUNNING' AND lease_expires_at < now()))
    RETURNING id, case_id, source_id, kind, generation, attempt, max_attempts
), started AS (
    UPDATE cases SET status = 'PROCESSING', updated_at = now()
    WHERE id = (SELECT case_id FROM claimed) AND status = 'INGESTED'
)
SELECT id, case_id, source_id, kind, generation, attempt, max_attempts FROM claimed
"#;

/// Read-only explanation of a refused claim; every action taken on it is guarded again.
const JOB_EXPLAIN_REFUSAL: &str = r#"
SELECT case_id, kind, status, attempt >= max_attempts AS exhausted,
       next_attempt_at <= now() AS due, coalesce(lease_expires_at < now(), false) AS lease_expired,
       message_id IS NOT DISTINCT FROM $2 AS same_message
FROM jobs WHERE id = $1
"#;

const JOB_RENEW_LEASE: &str = r#"
UPDATE jobs SET lease_expires_at = now() + make_interval(secs => $3), updated_at = now()
WHERE id = $1 AND status = 'RUNNING' AND lease_token = $2
"#;

const JOB_SUCCEED: &str = r#"
UPDATE jobs SET status = 'SUCCEEDED', result = $3, finished_at = now(), lease_token = NULL,
    lease_expires_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'RUNNING' AND lease_token = $2
RETURNING case_id, generation
"#;

/// Serialises the "was that the last source?" check between concurrent successes of one case.
const CASE_LOCK: &str = "SELECT id FROM cases WHERE id = $1 FOR UPDATE";

/// Enqueues finalize once every source job of the generation succeeded. Runs after CASE_LOCK
/// in its own statement so its snapshot sees every success committed before the lock.
/// Parameters: $1 case, $2 generation, $3 finalize job id, $4 max attempts, $5 outbox id,
/// $6 outbox key, $7 payload.
const FINALIZE_ENQUEUE: &str = r#"
WITH ready AS (
    SELECT c.id FROM cases c
    WHERE c.id = $1 AND c.generation = $2 AND c.status IN ('INGESTED', 'PROCESSING')
      AND NOT EXISTS (
        SELECT 1 FROM jobs j
        WHERE j.case_id = c.id AND j.generation = c.generation AND j.kind = 'process_source'
          AND j.status <> 'SUCCEEDED')
), job AS (
    INSERT INTO jobs (id, case_id, kind, status, generation, max_attempts)
    SELECT $3, id, 'finalize_case', 'PENDING', $2, $4 FROM ready
    ON CONFLICT (case_id, generation) WHERE kind = 'finalize_case' DO NOTHING
    RETURNING id
)
INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
SELECT $5, $6, id, $7, 'PENDING' FROM job
RETURNING job_id
"#;

/// Parameters: $1 job, $2 token, $3 error, $4 delay seconds, $5 outbox id, $6 outbox key,
/// $7 payload. The delayed outbox row is keyed by job and attempt, so it exists once.
const JOB_SCHEDULE_RETRY: &str = r#"
WITH retried AS (
    UPDATE jobs SET status = 'PENDING', last_error = $3,
        next_attempt_at = now() + make_interval(secs => $4),
        lease_token = NULL, lease_expires_at = NULL, updated_at = now()
    WHERE id = $1 AND status = 'RUNNING' AND lease_token = $2
    RETURNING id, next_attempt_at
), announced AS (
    INSERT INTO outbox (id, idempotency_key, job_id, payload, status, available_at)
    SELECT $5, $6, id, $7, 'PENDING', next_attempt_at FROM retried
    ON CONFLICT (idempotency_key) DO NOTHING
)
SELECT count(*) FROM retried
"#;

/// Fails jobs matched by `$guard`, fails their case (technical failure, current generation
/// only) and records `PROCESSING_FAILED`, in one statement. `$2` is the reason, `$3` whether
/// the failure is a dead letter, `$4` the actor.
macro_rules! fail_jobs_sql {
    ($guard:literal) => {
        concat!(
            "WITH failed AS (
                UPDATE jobs SET status = 'FAILED', last_error = $2, finished_at = now(),
                    lease_token = NULL, lease_expires_at = NULL, updated_at = now(),
                    dead_lettered_at = CASE WHEN $3 THEN now() ELSE dead_lettered_at END
                WHERE ",
            $guard,
            " RETURNING id, case_id, kind, attempt, generation, last_error
            ), case_failed AS (
                UPDATE cases c SET status = 'FAILED', status_reason = f.last_error, updated_at = now()
                FROM failed f
                WHERE c.id = f.case_id AND c.generation = f.generation
                  AND c.status IN ('INGESTED', 'PROCESSING')
                RETURNING c.id
            )
            INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
            SELECT f.case_id, c.tenant_id, $4, 'PROCESSING_FAILED',
                   json_build_object('job_id', f.id, 'kind', f.kind, 'attempt', f.attempt,
                                     'reason', f.last_error, 'dead_lettered', $3::boolean)
            FROM failed f JOIN cases c ON c.id = f.case_id
            RETURNING case_id"
        )
    };
}

/// $1 job, $5 token: the worker's own run.
const JOB_FAIL_HELD: &str = fail_jobs_sql!("id = $1 AND status = 'RUNNING' AND lease_token = $5");
/// $1 job, $5 case, $6 kind: no live worker holds it (due, or its lease expired). A job
/// waiting for a scheduled retry is left alone: a stale duplicate must not cancel that retry.
const JOB_FAIL_UNHELD: &str = fail_jobs_sql!(
    "id = $1 AND case_id = $5 AND kind = $6 AND ((status = 'PENDING' AND next_attempt_at <= now()) OR (status = 'RUNNING' AND lease_expires_at < now()))"
);
/// $1 job: attempts exhausted and nobody holds it.
pub(crate) const JOB_FAIL_EXHAUSTED: &str = fail_jobs_sql!(
    "id = $1 AND attempt >= max_attempts AND (status = 'PENDING' OR (status = 'RUNNING' AND lease_expires_at < now()))"
);
/// $1 limit: RUNNING jobs whose lease expired on their last attempt.
pub(crate) const JOB_FAIL_EXPIRED_LAST_ATTEMPT: &str = fail_jobs_sql!(
    "id IN (SELECT id FROM jobs WHERE status = 'RUNNING' AND lease_expires_at < now()
            AND attempt >= max_attempts ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)"
);

/// Writes decision version N for the generation (unique per generation), moves the case to
/// AWAITING_REVIEW and records DECISION_GENERATED, all only if the decision is new.
/// Parameters: $1 case, $2 generation, $3 decision id, $4 status, $5 summary, $6 evidence.
const DECISION_WRITE: &str = r#"
WITH decision AS (
    INSERT INTO decisions (id, case_id, generation, version, status, summary, evidence)
    SELECT $3, c.id, $2,
           (SELECT coalesce(max(version), 0) + 1 FROM decisions WHERE case_id = $1), $4, $5, $6
    FROM cases c WHERE c.id = $1 AND c.generation = $2 AND c.status IN ('INGESTED', 'PROCESSING')
    ON CONFLICT DO NOTHING
    RETURNING id, case_id, version, status
), moved AS (
    UPDATE cases SET status = 'AWAITING_REVIEW', status_reason = NULL, updated_at = now()
    WHERE id IN (SELECT case_id FROM decision)
)
INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
SELECT d.case_id, c.tenant_id, 'system:finalize', 'DECISION_GENERATED',
       json_build_object('decision_id', d.id, 'version', d.version, 'status', d.status,
                         'generation', $2::int)
FROM decision d JOIN cases c ON c.id = d.case_id
RETURNING case_id
"#;

/// id, case, source, kind, generation, attempt, max attempts.
type ClaimRow = (Uuid, Uuid, Option<Uuid>, String, i32, i32, i32);

/// What finishing a finalize job did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalizeOutcome {
    /// A new decision was written.
    Decided,
    /// The decision for this generation already existed (a rerun); nothing new was written.
    AlreadyDecided,
    /// The lease was lost; nothing was written.
    Stale,
}

impl Store {
    /// Claims the job a message names, if it is due and free.
    pub async fn claim_job(
        &self,
        msg: &Envelope,
        owner: &str,
        lease: Duration,
    ) -> StoreResult<ClaimOutcome> {
        self.claim_job_via(msg, None, owner, lease).await
    }

    /// [`Store::claim_job`], recording the stream message the claim came through.
    pub async fn claim_job_via(
        &self,
        msg: &Envelope,
        message_id: Option<&str>,
        owner: &str,
        lease: Duration,
    ) -> StoreResult<ClaimOutcome> {
        let token = Uuid::new_v4();
        let row: Option<ClaimRow> = sqlx::query_as(JOB_CLAIM)
            .bind(msg.job_id.0)
            .bind(msg.case_id.0)
            .bind(msg.kind.as_str())
            .bind(owner)
            .bind(token)
            .bind(secs(lease))
            .bind(message_id)
            .fetch_optional(self.pool())
            .await?;
        if let Some((id, case_id, source_id, kind, generation, attempt, max_attempts)) = row {
            return Ok(ClaimOutcome::Claimed(ClaimedJob {
                id: JobId(id),
                case_id: CaseId(case_id),
                source_id: source_id.map(SourceId),
                kind: kind.parse()?,
                generation,
                attempt,
                max_attempts,
                lease_token: token,
            }));
        }
        let explain: Option<(Uuid, String, String, bool, bool, bool, bool)> =
            sqlx::query_as(JOB_EXPLAIN_REFUSAL)
                .bind(msg.job_id.0)
                .bind(message_id)
                .fetch_optional(self.pool())
                .await?;
        let refusal = match explain {
            None => ClaimRefusal::UnknownJob,
            Some((case_id, kind, ..)) if case_id != msg.case_id.0 || kind != msg.kind.as_str() => {
                ClaimRefusal::Mismatch
            }
            Some((_, _, status, exhausted, due, lease_expired, same_message)) => {
                let status: JobStatus = status.parse()?;
                match status {
                    s if s.is_terminal() => ClaimRefusal::Terminal(s),
                    _ if exhausted && (status == JobStatus::Pending || lease_expired) => {
                        ClaimRefusal::Exhausted
                    }
                    JobStatus::Pending if !due => ClaimRefusal::NotDue,
                    JobStatus::Running
                        if !lease_expired && message_id.is_some() && !same_message =>
                    {
                        ClaimRefusal::LeasedElsewhere
                    }
                    JobStatus::Running if !lease_expired => ClaimRefusal::Leased,
                    // It became claimable between the two statements; the caller may retry.
                    _ => ClaimRefusal::Leased,
                }
            }
        };
        Ok(ClaimOutcome::Refused(refusal))
    }

    /// Extends a held lease.
    pub async fn renew_lease(&self, job: &ClaimedJob, lease: Duration) -> StoreResult<Transition> {
        let done = sqlx::query(JOB_RENEW_LEASE)
            .bind(job.id.0)
            .bind(job.lease_token)
            .bind(secs(lease))
            .execute(self.pool())
            .await?;
        Ok(applied(done.rows_affected()))
    }

    /// Records a processed source, and enqueues finalize if it was the generation's last.
    /// Returns whether the lease was still ours and, if so, whether finalize was enqueued.
    pub async fn complete_source_job(
        &self,
        job: &ClaimedJob,
        result: &serde_json::Value,
        finalize_max_attempts: i32,
    ) -> StoreResult<(Transition, bool)> {
        self.complete_source_job_with(job, result, None, finalize_max_attempts)
            .await
    }

    /// [`Store::complete_source_job`], also storing what reading the source produced, in the
    /// same transaction.
    pub async fn complete_source_job_with(
        &self,
        job: &ClaimedJob,
        result: &serde_json::Value,
        results: Option<&crate::results::SourceResults>,
        finalize_max_attempts: i32,
    ) -> StoreResult<(Transition, bool)> {
        let mut tx = self.pool().begin().await?;
        let done: Option<(Uuid, i32)> = sqlx::query_as(JOB_SUCCEED)
            .bind(job.id.0)
            .bind(job.lease_token)
            .bind(result)
            .fetch_optional(&mut *tx)
            .await?;
        let Some((case_id, generation)) = done else {
            return Ok((Transition::Stale, false));
        };
        if let (Some(results), Some(source)) = (results, job.source_id) {
            crate::results::insert(&mut tx, case_id, source.0, generation, results).await?;
        }
        sqlx::query(CASE_LOCK)
            .bind(case_id)
            .execute(&mut *tx)
            .await?;
        let finalize_id = JobId::new();
        let envelope = Envelope::new(finalize_id, CaseId(case_id), JobKind::FinalizeCase, 1);
        let enqueued = sqlx::query(FINALIZE_ENQUEUE)
            .bind(case_id)
            .bind(generation)
            .bind(finalize_id.0)
            .bind(finalize_max_attempts)
            .bind(Uuid::now_v7())
            .bind(job_message_key(finalize_id, 1))
            .bind(envelope.to_json())
            .execute(&mut *tx)
            .await?
            .rows_affected()
            > 0;
        tx.commit().await?;
        Ok((Transition::Applied, enqueued))
    }

    /// Puts a held job back to PENDING after `delay`, with a delayed outbox row announcing
    /// the next attempt.
    pub async fn schedule_retry(
        &self,
        job: &ClaimedJob,
        error: &str,
        delay: Duration,
    ) -> StoreResult<Transition> {
        let next_attempt = job.attempt + 1;
        let envelope = Envelope::new(job.id, job.case_id, job.kind, next_attempt);
        let retried: i64 = sqlx::query_scalar(JOB_SCHEDULE_RETRY)
            .bind(job.id.0)
            .bind(job.lease_token)
            .bind(error)
            .bind(secs(delay))
            .bind(Uuid::now_v7())
            .bind(job_message_key(job.id, next_attempt))
            .bind(envelope.to_json())
            .fetch_one(self.pool())
            .await?;
        Ok(applied(u64::try_from(retried).unwrap_or(0)))
    }

    /// Fails a job this worker holds, and its case.
    pub async fn fail_held_job(
        &self,
        job: &ClaimedJob,
        reason: &str,
        actor: &str,
    ) -> StoreResult<Transition> {
        let rows = sqlx::query(JOB_FAIL_HELD)
            .bind(job.id.0)
            .bind(reason)
            .bind(false)
            .bind(actor)
            .bind(job.lease_token)
            .execute(self.pool())
            .await?;
        Ok(applied(rows.rows_affected()))
    }

    /// Fails the job a dead-lettered message names, unless a live worker holds it or it is
    /// already terminal, or the message does not match it.
    pub async fn fail_dead_lettered(
        &self,
        msg: &Envelope,
        reason: &str,
        actor: &str,
    ) -> StoreResult<Transition> {
        let rows = sqlx::query(JOB_FAIL_UNHELD)
            .bind(msg.job_id.0)
            .bind(reason)
            .bind(true)
            .bind(actor)
            .bind(msg.case_id.0)
            .bind(msg.kind.as_str())
            .execute(self.pool())
            .await?;
        Ok(applied(rows.rows_affected()))
    }

    /// Fails a job whose attempts are exhausted and that no live worker holds.
    pub async fn fail_exhausted(&self, job: JobId, actor: &str) -> StoreResult<Transition> {
        let rows = sqlx::query(JOB_FAIL_EXHAUSTED)
            .bind(job.0)
            .bind("attempts exhausted: the worker running the last attempt was lost")
            .bind(false)
            .bind(actor)
            .execute(self.pool())
            .await?;
        Ok(applied(rows.rows_affected()))
    }

    /// Completes a finalize job: writes the generation's decision exactly once.
    pub async fn finalize_case(&self, job: &ClaimedJob) -> StoreResult<FinalizeOutcome> {
        let mut tx = self.pool().begin().await?;
        let done: Option<(Uuid, i32)> = sqlx::query_as(JOB_SUCCEED)
            .bind(job.id.0)
            .bind(job.lease_token)
            .bind(serde_json::json!({ "finalized": true }))
            .fetch_optional(&mut *tx)
            .await?;
        let Some((case_id, generation)) = done else {
            return Ok(FinalizeOutcome::Stale);
        };
        let evidence = serde_json::json!({ "ruleset": null, "generation": generation });
        let decided = sqlx::query(DECISION_WRITE)
            .bind(case_id)
            .bind(generation)
            .bind(Uuid::now_v7())
            .bind(ironclad_core::DecisionStatus::ReviewRequired.as_str())
            .bind(NO_RULESET_SUMMARY)
            .bind(evidence)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            > 0;
        tx.commit().await?;
        Ok(if decided {
            FinalizeOutcome::Decided
        } else {
            FinalizeOutcome::AlreadyDecided
        })
    }
}

pub(crate) fn applied(rows: u64) -> Transition {
    if rows > 0 {
        Transition::Applied
    } else {
        Transition::Stale
    }
}

/// What a worker needs to know about the source a job processes.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SourceRecord {
    /// Source id.
    pub id: Uuid,
    /// Blob store key.
    pub blob_key: String,
    /// Hex sha256 the bytes must have.
    pub sha256: String,
    /// Media type sniffed at intake.
    pub media_type: String,
    /// Pages counted at intake.
    pub pages: i32,
    /// The workflow its case asked for.
    pub workflow: Option<String>,
}

const SOURCE_GET: &str = "SELECT s.id, s.blob_key, s.sha256, s.media_type, s.pages, c.workflow \
     FROM sources s JOIN cases c ON c.id = s.case_id WHERE s.id = $1";

impl Store {
    /// The source a job processes.
    pub async fn source_record(&self, source: SourceId) -> StoreResult<Option<SourceRecord>> {
        Ok(sqlx::query_as(SOURCE_GET)
            .bind(source.0)
            .fetch_optional(self.pool())
            .await?)
    }
}
