//! Job transitions: claim under a lease, renew, and commit exactly one outcome.
//!
//! Every statement that ends a run carries the lease token the claim handed out, so a worker
//! whose lease expired (and whose job another worker rescued) cannot overwrite the outcome.

use crate::decisions::{self, RulesApplied};
use crate::{secs, Store, StoreError, StoreResult, Transition};
use ironclad_core::outbox::job_message_key;
use ironclad_core::{CaseId, Envelope, FailureCode, JobId, JobKind, JobStatus, SourceId};
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
    /// Attempts made before the current retry budget (an operator's requeue starts one).
    pub budget_start: i32,
    /// Proof of ownership for renew and finish; also the id of this run in `job_runs`.
    pub lease_token: Uuid,
}

impl ClaimedJob {
    /// Where the job stands in its attempts, for the retry policy.
    pub fn attempts(&self) -> ironclad_core::retry::Attempts {
        ironclad_core::retry::Attempts {
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            budget_start: self.budget_start,
        }
    }
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
/// A RUNNING job whose lease lapsed is claimable too: its worker is gone, and waiting for the
/// reconciler would only add latency. The attempt counter bounds how often that can happen,
/// and the lapsed run is closed as LOST. The run itself is recorded in `job_runs`.
/// Only the job row is locked: the case moves to PROCESSING in a statement of its own, so a
/// claim never holds a job lock while waiting for a case lock (every outcome takes the case
/// lock first, then the job's).
const JOB_CLAIM: &str = r#"
WITH claimed AS (
    UPDATE jobs
    SET status = 'RUNNING', attempt = attempt + 1, lease_owner = $4, lease_token = $5, message_id = $7,
        lease_expires_at = now() + make_interval(secs => $6),
        lease_duration = make_interval(secs => $6),
        started_at = coalesce(started_at, now()), updated_at = now()
    WHERE id = $1 AND case_id = $2 AND kind = $3 AND attempt < max_attempts
      AND ((status = 'PENDING' AND next_attempt_at <= now())
        OR (status = 'RUNNING' AND lease_lapsed(lease_expires_at, lease_duration)))
    RETURNING id, case_id, source_id, kind, generation, attempt, max_attempts, budget_start
), lost AS (
    UPDATE job_runs SET outcome = 'LOST', finished_at = now()
    WHERE job_id = (SELECT id FROM claimed) AND outcome IS NULL
), run AS (
    INSERT INTO job_runs (lease_token, job_id, attempt, owner, message_id)
    SELECT $5, id, attempt, $4, $7 FROM claimed
)
SELECT id, case_id, source_id, kind, generation, attempt, max_attempts, budget_start FROM claimed
"#;

/// A claimed job's case shows it is being worked on. Cosmetic (no transition depends on it),
/// so it runs on its own after the claim.
const CASE_STARTED: &str =
    "UPDATE cases SET status = 'PROCESSING', updated_at = now() WHERE id = $1 AND status = 'INGESTED'";

/// Read-only explanation of a refused claim; every action taken on it is guarded again.
const JOB_EXPLAIN_REFUSAL: &str = r#"
SELECT case_id, kind, status, attempt >= max_attempts AS exhausted,
       next_attempt_at <= now() AS due,
       coalesce(lease_lapsed(lease_expires_at, lease_duration), false) AS lease_lapsed,
       message_id IS NOT DISTINCT FROM $2 AS same_message
FROM jobs WHERE id = $1
"#;

/// Extends a held lease, however late: as long as nobody took the job over (the token is
/// still ours), a renewal after an expiry is as good as one before it.
const JOB_RENEW_LEASE: &str = r#"
UPDATE jobs SET lease_expires_at = now() + make_interval(secs => $3), updated_at = now()
WHERE id = $1 AND status = 'RUNNING' AND lease_token = $2
"#;

/// $1 job, $2 token, $3 result.
const JOB_SUCCEED: &str = r#"
WITH done AS (
    UPDATE jobs SET status = 'SUCCEEDED', result = $3, finished_at = now(), lease_token = NULL,
        lease_expires_at = NULL, updated_at = now()
    WHERE id = $1 AND status = 'RUNNING' AND lease_token = $2
    RETURNING case_id, generation
), run AS (
    UPDATE job_runs SET outcome = 'SUCCEEDED', finished_at = now()
    WHERE lease_token = $2 AND EXISTS (SELECT 1 FROM done)
)
SELECT case_id, generation FROM done
"#;

/// Whether a live run holds the job through the stream message `$2`.
const JOB_HELD_VIA: &str = r#"
SELECT status = 'RUNNING' AND NOT lease_lapsed(lease_expires_at, lease_duration)
       AND message_id IS NOT DISTINCT FROM $2
FROM jobs WHERE id = $1
"#;

/// What a run's own record says it came to (`None`: still open, or no such run).
const RUN_OUTCOME: &str = "SELECT outcome FROM job_runs WHERE lease_token = $1";

/// Taken first by every transaction that ends a job or reopens a case, so they serialise per
/// case: the "was that the last source?" check of concurrent successes, and a requeue racing a
/// sibling's failure (under READ COMMITTED each later statement then sees what the previous
/// holder committed). Order is always case, then job: no two of them can deadlock.
pub(crate) const CASE_LOCK: &str = "SELECT id FROM cases WHERE id = $1 FOR UPDATE";

/// [`CASE_LOCK`], answering whether the case is FAILED already (a failure that finds it so
/// announces nothing new).
const CASE_LOCK_STATUS_FAILED: &str =
    "SELECT status = 'FAILED' FROM cases WHERE id = $1 FOR UPDATE";

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
), run AS (
    UPDATE job_runs SET outcome = 'RETRY_SCHEDULED', finished_at = now()
    WHERE lease_token = $2 AND EXISTS (SELECT 1 FROM retried)
), announced AS (
    INSERT INTO outbox (id, idempotency_key, job_id, payload, status, available_at)
    SELECT $5, $6, id, $7, 'PENDING', next_attempt_at FROM retried
    ON CONFLICT (idempotency_key) DO NOTHING
)
SELECT count(*) FROM retried
"#;

/// Fails jobs matched by `$guard`, closes their open run as `$run_outcome`, fails their case
/// (technical failure, current generation only) and records `PROCESSING_FAILED`, in one
/// statement. Runs after [`CASE_LOCK`] in the same transaction.
/// `$1` job, `$2` the operator's detail (kept in `last_error`, never shown to tenants), `$3`
/// whether the failure is a dead letter, `$4` the actor, `$5` the failure code, `$6` the
/// tenant-safe message; guard parameters start at `$7`.
macro_rules! fail_jobs_sql {
    ($guard:literal, $run_outcome:literal) => {
        concat!(
            "WITH failed AS (
                UPDATE jobs SET status = 'FAILED', last_error = $2, error_code = $5,
                    finished_at = now(), lease_token = NULL, lease_expires_at = NULL,
                    updated_at = now(),
                    dead_lettered_at = CASE WHEN $3 THEN now() ELSE dead_lettered_at END
                WHERE id = $1 AND ",
            $guard,
            " RETURNING id, case_id, kind, attempt, generation
            ), run AS (
                UPDATE job_runs r SET outcome = '",
            $run_outcome,
            "', finished_at = now()
                FROM failed f WHERE r.job_id = f.id AND r.outcome IS NULL
            ), case_failed AS (
                UPDATE cases c SET status = 'FAILED', status_reason = $6, failure_code = $5,
                    updated_at = now()
                FROM failed f
                WHERE c.id = f.case_id AND c.generation = f.generation
                  AND (c.status IN ('INGESTED', 'PROCESSING')
                    -- a file that cannot be read is the reason that stays: a requeue cannot
                    -- cure it, whereas the technical failure it replaces may be requeued
                    OR (c.status = 'FAILED' AND $5::text = 'document_unreadable'))
                RETURNING c.id
            )
            INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
            SELECT f.case_id, c.tenant_id, $4, 'PROCESSING_FAILED',
                   json_build_object('job_id', f.id, 'kind', f.kind, 'attempt', f.attempt,
                                     'code', $5::text, 'reason', $6::text,
                                     'dead_lettered', $3::boolean)
            FROM failed f JOIN cases c ON c.id = f.case_id
            RETURNING case_id"
        )
    };
}

/// $7 token: the worker's own run.
const JOB_FAIL_HELD: &str = fail_jobs_sql!("status = 'RUNNING' AND lease_token = $7", "FAILED");
/// $7 case, $8 kind: no live worker holds it (due, or its lease lapsed). A job waiting for a
/// scheduled retry is left alone: a stale duplicate must not cancel that retry.
const JOB_FAIL_UNHELD: &str = fail_jobs_sql!(
    "case_id = $7 AND kind = $8 AND ((status = 'PENDING' AND next_attempt_at <= now()) OR (status = 'RUNNING' AND lease_lapsed(lease_expires_at, lease_duration)))",
    "LOST"
);
/// Attempts exhausted and nobody holds it (the last run's worker was lost).
const JOB_FAIL_EXHAUSTED: &str = fail_jobs_sql!(
    "attempt >= max_attempts AND (status = 'PENDING' OR (status = 'RUNNING' AND lease_lapsed(lease_expires_at, lease_duration)))",
    "LOST"
);

/// $1 limit: RUNNING jobs whose lease lapsed on their last attempt (each is then failed by
/// [`JOB_FAIL_EXHAUSTED`] under its case lock).
const JOBS_LAPSED_ON_LAST_ATTEMPT: &str = r#"
SELECT id, case_id FROM jobs
WHERE status = 'RUNNING' AND lease_expires_at < now() AND attempt >= max_attempts
  AND lease_lapsed(lease_expires_at, lease_duration)
ORDER BY lease_expires_at LIMIT $1
"#;

const JOB_CASE: &str = "SELECT case_id FROM jobs WHERE id = $1";

/// id, case, source, kind, generation, attempt, max attempts, budget start.
type ClaimRow = (Uuid, Uuid, Option<Uuid>, String, i32, i32, i32, i32);

/// Why a job is being failed: the stable code and the operator's detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Stable code; its message is what tenants see.
    pub code: FailureCode,
    /// Full detail for operators (logs, `last_error`, the operator CLI).
    pub detail: String,
}

impl Failure {
    /// A failure with `code` and operator `detail`.
    pub fn new(code: FailureCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
        }
    }
}

/// The constraint a concurrently taken decision version violates.
const DECISION_VERSION_CONSTRAINT: &str = "decisions_case_id_version_key";

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
        if let Some((id, case_id, source_id, kind, generation, attempt, max_attempts, budget)) = row
        {
            let kind: JobKind = kind.parse()?;
            // A finalize job's case was marked by its sources' claims: one statement saved per case.
            if kind == JobKind::ProcessSource {
                if let Err(err) = sqlx::query(CASE_STARTED)
                    .bind(case_id)
                    .execute(self.pool())
                    .await
                {
                    // Only the case's display status is behind; the claim stands.
                    tracing::debug!(case_id = %case_id, error = %err, "case not marked PROCESSING");
                }
            }
            return Ok(ClaimOutcome::Claimed(ClaimedJob {
                id: JobId(id),
                case_id: CaseId(case_id),
                source_id: source_id.map(SourceId),
                kind,
                generation,
                attempt,
                max_attempts,
                budget_start: budget,
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
            Some((_, _, status, exhausted, due, lapsed, same_message)) => {
                let status: JobStatus = status.parse()?;
                match status {
                    s if s.is_terminal() => ClaimRefusal::Terminal(s),
                    _ if exhausted && (status == JobStatus::Pending || lapsed) => {
                        ClaimRefusal::Exhausted
                    }
                    JobStatus::Pending if !due => ClaimRefusal::NotDue,
                    JobStatus::Running if !lapsed && message_id.is_some() && !same_message => {
                        ClaimRefusal::LeasedElsewhere
                    }
                    JobStatus::Running if !lapsed => ClaimRefusal::Leased,
                    // It became claimable between the two statements; the caller may retry.
                    _ => ClaimRefusal::Leased,
                }
            }
        };
        Ok(ClaimOutcome::Refused(refusal))
    }

    /// Extends a held lease, on the pool kept for renewals.
    pub async fn renew_lease(&self, job: &ClaimedJob, lease: Duration) -> StoreResult<Transition> {
        let done = sqlx::query(JOB_RENEW_LEASE)
            .bind(job.id.0)
            .bind(job.lease_token)
            .bind(secs(lease))
            .execute(self.lease_pool())
            .await?;
        Ok(applied(done.rows_affected()))
    }

    /// Whether a live run holds `job` through the stream message `message_id` (the message is
    /// then its holder's to acknowledge, nobody else's).
    pub async fn job_held_via(&self, job: JobId, message_id: &str) -> StoreResult<bool> {
        let held: Option<bool> = sqlx::query_scalar(JOB_HELD_VIA)
            .bind(job.0)
            .bind(message_id)
            .fetch_optional(self.pool())
            .await?;
        Ok(held.unwrap_or(false))
    }

    /// What the run with this lease token came to, by its own record: `Some` once an outcome
    /// was committed for it. A worker whose commit was answered by an error (the connection
    /// broke after COMMIT) asks this to learn that its outcome did land.
    pub async fn run_outcome(&self, lease_token: Uuid) -> StoreResult<Option<String>> {
        let outcome: Option<Option<String>> = sqlx::query_scalar(RUN_OUTCOME)
            .bind(lease_token)
            .fetch_optional(self.pool())
            .await?;
        Ok(outcome.flatten())
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
        sqlx::query(CASE_LOCK)
            .bind(job.case_id.0)
            .execute(&mut *tx)
            .await?;
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
            .bind(crate::storable(error))
            .bind(secs(delay))
            .bind(Uuid::now_v7())
            .bind(job_message_key(job.id, next_attempt))
            .bind(envelope.to_json())
            .fetch_one(self.pool())
            .await?;
        Ok(applied(u64::try_from(retried).unwrap_or(0)))
    }

    /// Runs one of the fail statements under the case lock: binds `$1`–`$6` and the guard's.
    async fn fail_under_case_lock(
        &self,
        target: FailTarget<'_>,
        failure: &Failure,
        actor: &str,
    ) -> StoreResult<Transition> {
        let mut tx = self.pool().begin().await?;
        let was_failed: Option<bool> = sqlx::query_scalar(CASE_LOCK_STATUS_FAILED)
            .bind(target.case)
            .fetch_optional(&mut *tx)
            .await?;
        let query = sqlx::query(target.sql)
            .bind(target.job.0)
            .bind(crate::storable(&failure.detail))
            .bind(target.dead_letter)
            .bind(actor)
            .bind(failure.code.as_str())
            .bind(failure.code.message());
        let query = match target.guard {
            FailGuard::None => query,
            FailGuard::Token(token) => query.bind(token),
            FailGuard::Message { case, kind } => query.bind(case).bind(kind),
        };
        let rows = query.execute(&mut *tx).await?.rows_affected();
        if rows > 0 && was_failed == Some(false) {
            crate::notify::announce_case_failed(&mut tx, target.case, target.job.0).await?;
        }
        tx.commit().await?;
        Ok(applied(rows))
    }

    /// Fails a job this worker holds, and its case.
    pub async fn fail_held_job(
        &self,
        job: &ClaimedJob,
        failure: &Failure,
        actor: &str,
    ) -> StoreResult<Transition> {
        let target = FailTarget {
            sql: JOB_FAIL_HELD,
            case: job.case_id.0,
            job: job.id,
            dead_letter: false,
            guard: FailGuard::Token(job.lease_token),
        };
        self.fail_under_case_lock(target, failure, actor).await
    }

    /// Fails the job a dead-lettered message names, unless a live worker holds it or it is
    /// already terminal, or the message does not match it.
    pub async fn fail_dead_lettered(
        &self,
        msg: &Envelope,
        detail: &str,
        actor: &str,
    ) -> StoreResult<Transition> {
        let target = FailTarget {
            sql: JOB_FAIL_UNHELD,
            case: msg.case_id.0,
            job: msg.job_id,
            dead_letter: true,
            guard: FailGuard::Message {
                case: msg.case_id.0,
                kind: msg.kind.as_str(),
            },
        };
        let failure = Failure::new(FailureCode::DeadLettered, detail);
        self.fail_under_case_lock(target, &failure, actor).await
    }

    /// Fails a job whose attempts are exhausted and that no live worker holds.
    pub async fn fail_exhausted(&self, job: JobId, actor: &str) -> StoreResult<Transition> {
        let case: Option<Uuid> = sqlx::query_scalar(JOB_CASE)
            .bind(job.0)
            .fetch_optional(self.pool())
            .await?;
        let Some(case) = case else {
            return Ok(Transition::Stale);
        };
        let failure = Failure::new(
            FailureCode::WorkerLost,
            "attempts exhausted: the worker running the last attempt was lost",
        );
        self.fail_under_case_lock(FailTarget::exhausted(case, job), &failure, actor)
            .await
    }

    /// Fails up to `limit` RUNNING jobs whose lease lapsed on their last attempt, each under
    /// its case lock; returns how many.
    pub async fn fail_lapsed_last_attempts(&self, limit: i64, actor: &str) -> StoreResult<u64> {
        let candidates: Vec<(Uuid, Uuid)> = sqlx::query_as(JOBS_LAPSED_ON_LAST_ATTEMPT)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        let failure = Failure::new(
            FailureCode::WorkerLost,
            "lease lapsed on the last attempt: the worker was lost",
        );
        let mut failed = 0;
        for (job, case) in candidates {
            let t = self
                .fail_under_case_lock(FailTarget::exhausted(case, JobId(job)), &failure, actor)
                .await?;
            if t == Transition::Applied {
                failed += 1;
            }
        }
        Ok(failed)
    }

    /// Completes a finalize job: writes the generation's decision exactly once. A decision
    /// version taken meanwhile by a writer that did not hold the case lock is a conflict: the
    /// whole transaction is tried again (it then takes the next version), never skipped.
    pub async fn finalize_case(
        &self,
        job: &ClaimedJob,
        rules: &RulesApplied<'_>,
    ) -> StoreResult<FinalizeOutcome> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.finalize_case_once(job, rules).await {
                Err(StoreError::Conflict { constraint })
                    if constraint == DECISION_VERSION_CONSTRAINT && tries < 3 =>
                {
                    tracing::warn!(job_id = %job.id, "decision version taken concurrently; writing the next one");
                }
                other => return other,
            }
        }
    }

    async fn finalize_case_once(
        &self,
        job: &ClaimedJob,
        rules: &RulesApplied<'_>,
    ) -> StoreResult<FinalizeOutcome> {
        let mut tx = self.pool().begin().await?;
        sqlx::query(CASE_LOCK)
            .bind(job.case_id.0)
            .execute(&mut *tx)
            .await?;
        let done: Option<(Uuid, i32)> = sqlx::query_as(JOB_SUCCEED)
            .bind(job.id.0)
            .bind(job.lease_token)
            .bind(serde_json::json!({ "finalized": true }))
            .fetch_optional(&mut *tx)
            .await?;
        let Some((case_id, generation)) = done else {
            return Ok(FinalizeOutcome::Stale);
        };
        let decided = decisions::decide(
            &mut tx,
            case_id,
            generation,
            decisions::Origin::Finalize,
            "system:finalize",
            rules,
        )
        .await?;
        tx.commit().await?;
        Ok(match decided {
            Some(_) => FinalizeOutcome::Decided,
            None => FinalizeOutcome::AlreadyDecided,
        })
    }
}

/// One fail statement and what it is run on.
struct FailTarget<'a> {
    sql: &'static str,
    /// The case whose lock is taken first.
    case: Uuid,
    job: JobId,
    dead_letter: bool,
    guard: FailGuard<'a>,
}

impl FailTarget<'_> {
    /// The exhausted-attempts statement (no guard parameters).
    fn exhausted(case: Uuid, job: JobId) -> Self {
        Self {
            sql: JOB_FAIL_EXHAUSTED,
            case,
            job,
            dead_letter: false,
            guard: FailGuard::None,
        }
    }
}

/// The guard parameters of a fail statement, after the six shared ones.
enum FailGuard<'a> {
    /// No more parameters.
    None,
    /// `$7` the holder's lease token.
    Token(Uuid),
    /// `$7` case and `$8` kind the message named.
    Message { case: Uuid, kind: &'a str },
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
    /// The workflow version the case is pinned to (at intake, or by its first read).
    pub workflow_id: Option<Uuid>,
}

const SOURCE_GET: &str =
    "SELECT s.id, s.blob_key, s.sha256, s.media_type, s.pages, c.workflow, c.workflow_id \
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
