//! The one-statement intake: case, sources, jobs, outbox rows, audit event and the submission
//! record commit together or not at all.

use crate::{Store, StoreError, StoreResult};
use ironclad_core::outbox::job_message_key;
use ironclad_core::{CaseId, Envelope, JobId, JobKind, SourceId, TenantId};
use uuid::Uuid;

/// One accepted file, already durable in the blob store.
#[derive(Debug, Clone)]
pub struct NewSource {
    /// Pre-assigned id (it appears in the response built before the commit).
    pub source_id: SourceId,
    /// Pre-assigned id of the job that will process it.
    pub job_id: JobId,
    /// Client's file name (display only).
    pub filename: String,
    /// Hex sha256 of the bytes.
    pub sha256: String,
    /// Sniffed media type.
    pub media_type: String,
    /// Size in bytes.
    pub size_bytes: i64,
    /// Page count.
    pub pages: i32,
    /// Blob store key.
    pub blob_key: String,
}

/// Everything one intake commits.
#[derive(Debug, Clone)]
pub struct NewCase {
    /// The calling tenant.
    pub tenant_id: TenantId,
    /// Pre-assigned case id.
    pub case_id: CaseId,
    /// Client's own reference, if any.
    pub external_reference: Option<String>,
    /// Requested workflow, if any.
    pub workflow: Option<String>,
    /// The workflow version the case is pinned to (the newest of its workflow at intake);
    /// `None` leaves the pin to the first worker that reads a source.
    pub workflow_id: Option<Uuid>,
    /// Client's idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// Digest of the request's meaningful content.
    pub fingerprint: String,
    /// The files.
    pub sources: Vec<NewSource>,
    /// Attempts allowed per job.
    pub max_attempts: i32,
    /// Who submitted (for the audit trail), e.g. `api_key:<id>`.
    pub actor: String,
    /// The 201 body, stored so a replay answers exactly the same.
    pub response: serde_json::Value,
}

/// What intake did.
#[derive(Debug, Clone, PartialEq)]
pub enum IntakeOutcome {
    /// A new case was committed.
    Created,
    /// The same key and payload were seen before: here is the original answer.
    Replayed(serde_json::Value),
    /// The key was used before for a different payload.
    KeyReused,
}

/// A stored submission (for replay before any work is done).
#[derive(Debug, Clone)]
pub struct StoredSubmission {
    /// Fingerprint of the original request.
    pub fingerprint: String,
    /// The original 201 body.
    pub response: serde_json::Value,
}

/// One statement, so it is atomic without an explicit transaction and costs one round trip.
/// Parameters: $1 case id, $2 tenant, $3 external ref, $4 workflow, $5..$11 source columns,
/// $12 job ids, $13 max attempts, $14..$16 outbox ids/keys/payloads, $17 actor, $18 audit data,
/// $19 submission id, $20 idempotency key, $21 fingerprint, $22 response, $23 workflow version.
/// A reused idempotency key aborts the whole statement on the unique constraint.
const INTAKE_COMMIT: &str = r#"
WITH new_case AS (
    INSERT INTO cases (id, tenant_id, external_reference, workflow, status, workflow_id)
    VALUES ($1, $2, $3, $4, 'INGESTED', $23)
    RETURNING id
), new_sources AS (
    INSERT INTO sources (id, case_id, filename, sha256, media_type, size_bytes, pages, blob_key)
    SELECT s.id, $1, s.filename, s.sha256, s.media_type, s.size_bytes, s.pages, s.blob_key
    FROM unnest($5::uuid[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::int[], $11::text[])
        AS s(id, filename, sha256, media_type, size_bytes, pages, blob_key)
    RETURNING id
), new_jobs AS (
    INSERT INTO jobs (id, case_id, source_id, kind, status, generation, max_attempts)
    SELECT j.id, $1, j.source_id, 'process_source', 'PENDING', 1, $13
    FROM unnest($12::uuid[], $5::uuid[]) AS j(id, source_id)
    RETURNING id
), new_outbox AS (
    INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
    SELECT o.id, o.key, o.job_id, o.payload, 'PENDING'
    FROM unnest($14::uuid[], $15::text[], $12::uuid[], $16::text[]) AS o(id, key, job_id, payload)
    RETURNING id
), audit AS (
    INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
    VALUES ($1, $2, $17, 'CASE_INGESTED', $18)
    RETURNING id
), submission AS (
    INSERT INTO intake_submissions (id, tenant_id, idempotency_key, fingerprint, case_id, response)
    VALUES ($19, $2, $20, $21, $1, $22)
    RETURNING id
)
SELECT (SELECT count(*) FROM new_sources) + (SELECT count(*) FROM new_jobs)
     + (SELECT count(*) FROM new_outbox) + (SELECT count(*) FROM audit)
     + (SELECT count(*) FROM submission) + (SELECT count(*) FROM new_case)
"#;

const SUBMISSION_FIND: &str =
    "SELECT fingerprint, response FROM intake_submissions WHERE tenant_id = $1 AND idempotency_key = $2";

/// The constraint a reused idempotency key violates.
const SUBMISSION_KEY_CONSTRAINT: &str = "intake_submissions_tenant_id_idempotency_key_key";

impl Store {
    /// Looks up an earlier submission under this key.
    pub async fn find_submission(
        &self,
        tenant: TenantId,
        key: &str,
    ) -> StoreResult<Option<StoredSubmission>> {
        let row: Option<(String, serde_json::Value)> = sqlx::query_as(SUBMISSION_FIND)
            .bind(tenant.0)
            .bind(key)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(|(fingerprint, response)| StoredSubmission {
            fingerprint,
            response,
        }))
    }

    /// Commits a case with everything it needs to be processed, atomically.
    pub async fn commit_intake(&self, case: &NewCase) -> StoreResult<IntakeOutcome> {
        let n = case.sources.len();
        let mut source_ids = Vec::with_capacity(n);
        let mut filenames = Vec::with_capacity(n);
        let mut digests = Vec::with_capacity(n);
        let mut media = Vec::with_capacity(n);
        let mut sizes = Vec::with_capacity(n);
        let mut pages = Vec::with_capacity(n);
        let mut blob_keys = Vec::with_capacity(n);
        let mut job_ids = Vec::with_capacity(n);
        let mut outbox_ids = Vec::with_capacity(n);
        let mut outbox_keys = Vec::with_capacity(n);
        let mut payloads = Vec::with_capacity(n);
        for s in &case.sources {
            source_ids.push(s.source_id.0);
            filenames.push(s.filename.clone());
            digests.push(s.sha256.clone());
            media.push(s.media_type.clone());
            sizes.push(s.size_bytes);
            pages.push(s.pages);
            blob_keys.push(s.blob_key.clone());
            job_ids.push(s.job_id.0);
            outbox_ids.push(Uuid::now_v7());
            outbox_keys.push(job_message_key(s.job_id, 1));
            payloads
                .push(Envelope::new(s.job_id, case.case_id, JobKind::ProcessSource, 1).to_json());
        }
        let audit = serde_json::json!({
            "sources": case.sources.len(),
            "external_reference": case.external_reference,
            "idempotency_key": case.idempotency_key,
        });
        let result = sqlx::query(INTAKE_COMMIT)
            .bind(case.case_id.0)
            .bind(case.tenant_id.0)
            .bind(&case.external_reference)
            .bind(&case.workflow)
            .bind(&source_ids)
            .bind(&filenames)
            .bind(&digests)
            .bind(&media)
            .bind(&sizes)
            .bind(&pages)
            .bind(&blob_keys)
            .bind(&job_ids)
            .bind(case.max_attempts)
            .bind(&outbox_ids)
            .bind(&outbox_keys)
            .bind(&payloads)
            .bind(&case.actor)
            .bind(&audit)
            .bind(Uuid::now_v7())
            .bind(&case.idempotency_key)
            .bind(&case.fingerprint)
            .bind(&case.response)
            .bind(case.workflow_id)
            .execute(self.pool())
            .await
            .map_err(StoreError::from);
        match result {
            Ok(_) => Ok(IntakeOutcome::Created),
            Err(err) if err.conflict_constraint() == Some(SUBMISSION_KEY_CONSTRAINT) => {
                let key = case.idempotency_key.as_deref().unwrap_or_default();
                match self.find_submission(case.tenant_id, key).await? {
                    Some(s) if s.fingerprint == case.fingerprint => {
                        Ok(IntakeOutcome::Replayed(s.response))
                    }
                    Some(_) => Ok(IntakeOutcome::KeyReused),
                    // The conflicting row vanished: impossible without deleting submissions.
                    None => Err(err),
                }
            }
            Err(err) => Err(err),
        }
    }
}
