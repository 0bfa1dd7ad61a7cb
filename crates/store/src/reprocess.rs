//! Reprocess: read a case again as a new generation.
//!
//! One transaction under the case lock: the generation goes up, the old generation's
//! unfinished jobs become CANCELLED (so their late results are refused by the lease-token
//! guard of every completion), an open review is cancelled (with a correction waiting for a
//! second reviewer, and the claim), and new jobs with their outbox rows are written. Sources
//! not asked for are carried over — their pages, segments and current facts, corrections
//! included, copied into the new generation — when the previous generation read them; any
//! source it did not read is read again, and earlier corrections of it are not applied to the
//! new reading (they stay in the case's history). It works from any status, FAILED included,
//! but a RESOLVED case carries a person's resolution: only a reviewer or an admin may read it
//! again ([`may_reprocess`], checked under the lock). The earlier resolution is not erased: its
//! review row and audit events stay, and the case page shows them.

use ironclad_core::audit::AuditEventType;
use ironclad_core::outbox::job_message_key;
use ironclad_core::role::Role;
use ironclad_core::{CaseId, CaseStatus, Envelope, JobId, JobKind};
use serde::Serialize;
use uuid::Uuid;

use crate::replay::{self, ActionAnswer, ActionError, ActionKey};
use crate::{audit_trail, Store};

/// A reprocess request.
#[derive(Debug, Clone)]
pub struct ReprocessRequest {
    /// The case.
    pub case: Uuid,
    /// Sources to read again (`None`: all).
    pub source_ids: Option<Vec<Uuid>>,
    /// Why (kept in the audit trail).
    pub reason: String,
    /// Who.
    pub actor: String,
    /// With which role ([`may_reprocess`]).
    pub actor_role: Role,
    /// Attempts per new job.
    pub max_attempts: i32,
}

/// Whether `role` may read a case in `status` again; `Err` says why not.
///
/// A RESOLVED case holds a reviewer's resolution (a REJECT, say): an operator's reprocess
/// would clear it and, under `auto_approve_ready`, let the system approve the new reading.
/// So only reviewers and admins reopen resolved cases; the others are an operator's (or an
/// admin's) to read again, as before.
pub fn may_reprocess(role: Role, status: CaseStatus) -> Result<(), &'static str> {
    match (role, status) {
        (Role::Admin, _) => Ok(()),
        (Role::Reviewer, CaseStatus::Resolved) => Ok(()),
        (Role::Operator, CaseStatus::Resolved) => Err(
            "this case is RESOLVED: only a reviewer or an admin may read it again, so a \
             person's resolution is not undone by a reprocess",
        ),
        (Role::Operator, _) => Ok(()),
        (Role::Reviewer, _) => Err(
            "a reviewer may read again only a RESOLVED case; an operator reprocesses the others",
        ),
    }
}

/// What a reprocess started.
#[derive(Debug, Clone, Serialize)]
pub struct Reprocessed {
    /// The case.
    pub case_id: Uuid,
    /// Its new generation.
    pub generation: i32,
    /// Sources being read again, with their new job.
    pub jobs: Vec<ReprocessJob>,
    /// Sources whose previous reading was carried over.
    pub carried_over: Vec<Uuid>,
    /// Old-generation jobs cancelled.
    pub cancelled_jobs: i64,
}

/// One new job.
#[derive(Debug, Clone, Serialize)]
pub struct ReprocessJob {
    /// The source.
    pub source_id: Uuid,
    /// Its job in the new generation.
    pub job_id: Uuid,
}

const NEXT_GENERATION: &str = r#"
UPDATE cases SET generation = generation + 1, status = 'PROCESSING', status_reason = NULL,
    failure_code = NULL, resolution = NULL, resolved_by = NULL, resolved_at = NULL,
    updated_at = now()
WHERE id = $1
RETURNING generation
"#;

/// Cancels the older generations' unfinished jobs and closes their open runs.
const CANCEL_OLD_JOBS: &str = r#"
WITH cancelled AS (
    UPDATE jobs SET status = 'CANCELLED', finished_at = now(), lease_token = NULL,
        lease_expires_at = NULL, updated_at = now()
    WHERE case_id = $1 AND generation < $2 AND status IN ('PENDING', 'RUNNING')
    RETURNING id
), runs AS (
    UPDATE job_runs r SET outcome = 'CANCELLED', finished_at = now()
    FROM cancelled c WHERE r.job_id = c.id AND r.outcome IS NULL
)
SELECT count(*) FROM cancelled
"#;

/// What waited for a person on the old reading ends with it: a correction waiting for a
/// second reviewer, and the claim on the review.
const END_OLD_REVIEW_WORK: &str = r#"
WITH dropped AS (
    UPDATE corrections SET status = 'CANCELLED'
    WHERE case_id = $1 AND status = 'AWAITING_SECOND'
)
DELETE FROM review_claims WHERE case_id = $1
"#;

/// The case's sources, and whether generation $2 read each one (its job SUCCEEDED).
const SOURCES_READ: &str = r#"
SELECT s.id, EXISTS (
    SELECT 1 FROM jobs j WHERE j.source_id = s.id AND j.generation = $2
      AND j.kind = 'process_source' AND j.status = 'SUCCEEDED'
) OR (
    -- carried over into $2 from an earlier generation: it has segments there without a job
    NOT EXISTS (SELECT 1 FROM jobs j WHERE j.source_id = s.id AND j.generation = $2)
    AND EXISTS (SELECT 1 FROM segments g WHERE g.source_id = s.id AND g.generation = $2)
)
FROM sources s WHERE s.case_id = $1 ORDER BY s.created_at, s.id
"#;

/// Copies pages, segments and the current facts of sources $3 from generation $2 - 1 into $2.
/// A corrected fact comes over as corrected (its version and correction kept): the reading it
/// corrected is the one carried over. Sources read again get no earlier correction.
const CARRY_OVER: &str = r#"
WITH old_pages AS (
    INSERT INTO pages (id, case_id, source_id, generation, page_index, method, confidence,
                       rotation, doc_type, class_confidence, class_reason, text, words)
    SELECT gen_random_uuid(), case_id, source_id, $2, page_index, method, confidence, rotation,
           doc_type, class_confidence, class_reason, text, words
    FROM pages WHERE case_id = $1 AND generation = $2 - 1 AND source_id = ANY($3)
), old_segments AS (
    SELECT s.*, gen_random_uuid() AS new_id FROM segments s
    WHERE s.case_id = $1 AND s.generation = $2 - 1 AND s.source_id = ANY($3)
), new_segments AS (
    INSERT INTO segments (id, case_id, source_id, generation, ordinal, doc_type, confidence,
                          first_page, last_page, reason, active)
    SELECT new_id, case_id, source_id, $2, ordinal, doc_type, confidence, first_page,
           last_page, reason, active
    FROM old_segments
)
INSERT INTO facts (id, segment_id, case_id, field, value, raw_text, page, bbox, confidence,
                   conflict, missing, candidates, version, correction_id)
SELECT gen_random_uuid(), o.new_id, f.case_id, f.field, f.value, f.raw_text, f.page, f.bbox,
       f.confidence, f.conflict, f.missing, f.candidates, f.version, f.correction_id
FROM facts f JOIN old_segments o ON o.id = f.segment_id
WHERE f.superseded_at IS NULL
"#;

const JOBS_INSERT: &str = r#"
WITH new_jobs AS (
    INSERT INTO jobs (id, case_id, source_id, kind, status, generation, max_attempts)
    SELECT j.id, $1, j.source_id, 'process_source', 'PENDING', $2, $3
    FROM unnest($4::uuid[], $5::uuid[]) AS j(id, source_id)
    RETURNING id
)
INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
SELECT o.id, o.key, o.job_id, o.payload, 'PENDING'
FROM unnest($6::uuid[], $7::text[], $4::uuid[], $8::text[]) AS o(id, key, job_id, payload)
"#;

/// A source, and whether the previous generation read it.
type SourceRead = (Uuid, bool);

impl Store {
    /// Starts a new generation of the case (see the module doc). `respond` turns the result
    /// into the body stored for replays and returned (202).
    pub async fn reprocess_case(
        &self,
        key: &ActionKey,
        req: &ReprocessRequest,
        respond: impl FnOnce(&Reprocessed) -> serde_json::Value,
    ) -> Result<ActionAnswer, ActionError> {
        let mut tx = self.pool().begin().await?;
        let (status, old_generation) = replay::lock_case(&mut tx, key.tenant, req.case).await?;
        if let Some(answer) = replay::replayed(&mut tx, key).await? {
            return Ok(answer);
        }
        let status: CaseStatus = status
            .parse()
            .map_err(|e: ironclad_core::UnknownVariant| ActionError::Refused(e.to_string()))?;
        may_reprocess(req.actor_role, status)
            .map_err(|why| ActionError::Forbidden(why.to_owned()))?;
        let sources: Vec<SourceRead> = sqlx::query_as(SOURCES_READ)
            .bind(req.case)
            .bind(old_generation)
            .fetch_all(&mut *tx)
            .await?;
        if let Some(asked) = &req.source_ids {
            let unknown: Vec<String> = asked
                .iter()
                .filter(|id| !sources.iter().any(|(s, _)| s == *id))
                .map(Uuid::to_string)
                .collect();
            if !unknown.is_empty() {
                return Err(ActionError::Refused(format!(
                    "these sources are not part of the case: {}",
                    unknown.join(", ")
                )));
            }
            if asked.is_empty() {
                return Err(ActionError::Refused(
                    "source_ids is empty: name at least one source, or leave it out to read all"
                        .into(),
                ));
            }
        }
        let (reread, carried): (Vec<SourceRead>, Vec<SourceRead>) =
            sources.iter().copied().partition(|(id, read)| {
                !read
                    || req
                        .source_ids
                        .as_ref()
                        .is_none_or(|asked| asked.contains(id))
            });
        let reread: Vec<Uuid> = reread.into_iter().map(|p| p.0).collect();
        let carried: Vec<Uuid> = carried.into_iter().map(|p| p.0).collect();

        let generation: i32 = sqlx::query_scalar(NEXT_GENERATION)
            .bind(req.case)
            .fetch_one(&mut *tx)
            .await?;
        let cancelled_jobs: i64 = sqlx::query_scalar(CANCEL_OLD_JOBS)
            .bind(req.case)
            .bind(generation)
            .fetch_one(&mut *tx)
            .await?;
        crate::decisions::cancel_open_review(&mut tx, req.case).await?;
        sqlx::query(END_OLD_REVIEW_WORK)
            .bind(req.case)
            .execute(&mut *tx)
            .await?;
        if !carried.is_empty() {
            sqlx::query(CARRY_OVER)
                .bind(req.case)
                .bind(generation)
                .bind(&carried)
                .execute(&mut *tx)
                .await?;
        }
        let job_ids: Vec<Uuid> = reread.iter().map(|_| Uuid::now_v7()).collect();
        let outbox_ids: Vec<Uuid> = reread.iter().map(|_| Uuid::now_v7()).collect();
        let keys: Vec<String> = job_ids
            .iter()
            .map(|j| job_message_key(JobId(*j), 1))
            .collect();
        let payloads: Vec<String> = job_ids
            .iter()
            .map(|j| {
                Envelope::new(JobId(*j), CaseId(req.case), JobKind::ProcessSource, 1).to_json()
            })
            .collect();
        sqlx::query(JOBS_INSERT)
            .bind(req.case)
            .bind(generation)
            .bind(req.max_attempts)
            .bind(&job_ids)
            .bind(&reread)
            .bind(&outbox_ids)
            .bind(&keys)
            .bind(&payloads)
            .execute(&mut *tx)
            .await?;
        let reason = crate::storable(&req.reason).into_owned();
        audit_trail::record(
            &mut tx,
            key.tenant,
            Some(req.case),
            &req.actor,
            AuditEventType::Reprocessed,
            serde_json::json!({
                "generation": generation, "reason": reason, "reread": reread,
                "carried_over": carried, "cancelled_jobs": cancelled_jobs,
                "previous_status": status, "actor_role": req.actor_role,
            }),
        )
        .await?;
        let done = Reprocessed {
            case_id: req.case,
            generation,
            jobs: reread
                .iter()
                .zip(&job_ids)
                .map(|(s, j)| ReprocessJob {
                    source_id: *s,
                    job_id: *j,
                })
                .collect(),
            carried_over: carried,
            cancelled_jobs,
        };
        replay::commit_answer(tx, key, 202, respond(&done)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolved_case_is_reopened_only_by_a_reviewer_or_an_admin() {
        use CaseStatus::*;
        for status in [Ingested, Processing, AwaitingReview, Failed] {
            assert!(may_reprocess(Role::Operator, status).is_ok(), "{status}");
            assert!(may_reprocess(Role::Admin, status).is_ok(), "{status}");
            assert!(may_reprocess(Role::Reviewer, status).is_err(), "{status}");
        }
        assert!(may_reprocess(Role::Reviewer, Resolved).is_ok());
        assert!(may_reprocess(Role::Admin, Resolved).is_ok());
        let why = may_reprocess(Role::Operator, Resolved)
            .err()
            .unwrap_or_default();
        assert!(
            why.contains("RESOLVED") && why.contains("reviewer"),
            "{why}"
        );
    }
}
