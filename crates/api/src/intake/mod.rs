//! Case intake: a multipart request streamed into the blob store, checked, and committed.
//!
//! The request is read part by part. Each `file` part is written chunk by chunk into a
//! [`BlobWriter`](ironclad_blobs::BlobWriter) and, at the same time, kept in memory (one file at a time, at most
//! `max_file_bytes`) so it can be inspected without reading it back. A file that breaks a
//! rule is never finished: its writer is aborted, so only accepted bytes reach the store.
//! Once every file is durable the case is committed in one statement
//! ([`Store::commit_intake`](ironclad_store::Store::commit_intake)), which is also where an
//! `Idempotency-Key` is settled: replay, reuse with another payload, or first use.
//!
//! **Bounded across requests.** An intake runs only with an [`IntakeSlot`] (at most
//! `max_concurrent_intakes` at once, see [`crate::throttle`]), and each file's inspection gets
//! at most `inspect_timeout`. The whole intake is one future: when it is dropped (deadline,
//! client gone) no further part is read or inspected and no commit starts; an inspection
//! already running on the blocking pool finishes there, still holding the request's slot.
//! A request that does not commit deletes the blobs it created before answering (see
//! `cleanup`); only a crash, or a commit whose outcome is unknown, leaves them to the sweep.
//!
//! Refusals, in the order they are detected:
//!
//! | condition | status | code |
//! |---|---|---|
//! | the body arrives slower than `intake_min_bytes_per_sec` (after `intake_rate_grace`) | 408 | `upload_too_slow` |
//! | unknown part, bad text field | 400 | `unknown_field`, `invalid_field`, `duplicate_field` |
//! | more than `max_files` file parts | 413 | `too_many_files` |
//! | a file over `max_file_bytes` (reading stops at once) | 413 | `file_too_large` |
//! | a zero-byte file | 422 | `empty_file` |
//! | not PDF/PNG/JPEG/TIFF by its bytes | 415 | `unsupported_media_type` |
//! | truncated, corrupt or password-protected | 422 | `unreadable_file` |
//! | an image or PDF structure too big to process (pixel bombs) | 413 | `document_too_large` |
//! | inspection longer than `inspect_timeout` | 413 | `document_too_large` |
//! | pages over `max_total_pages` (one file or all together) | 413 | `too_many_pages` |
//! | the same bytes twice in one request | 422 | `duplicate_file` |
//! | no file part at all | 400 | `no_files` |
//! | `Idempotency-Key` reused for a different payload | 409 | `idempotency_key_reused` |
//!
//! Before any of these, a request beyond `max_concurrent_intakes`, or beyond its tenant's
//! share of them, is answered 503 `busy` with `Retry-After`, without reading its body.

mod cleanup;
mod inspection;
mod pace;
mod receive;

pub use receive::{MAX_EXTERNAL_REFERENCE_CHARS, MAX_WORKFLOW_CHARS};

use crate::error::ApiError;
use crate::state::AppState;
use crate::throttle::IntakeSlot;
use axum::extract::Multipart;
use axum::http::StatusCode;
use cleanup::Uncommitted;
use ironclad_core::faults::FaultPoint;
use ironclad_core::media::MediaType;
use ironclad_core::{CaseId, CaseStatus, IdempotencyKey, JobId, SourceId};
use ironclad_store::intake::{IntakeOutcome, NewCase, NewSource};
use ironclad_store::tenants::Principal;
use receive::{receive, ReceivedFile};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Instant;

/// What intake answered: the 201 body, and whether it is the replay of an earlier request.
#[derive(Debug, Clone, PartialEq)]
pub struct IntakeReply {
    /// The response body (for a replay, the original one, as stored).
    pub body: Value,
    /// The case id, for the `Location` header.
    pub case_id: String,
    /// True when an earlier request with the same key and payload created the case.
    pub replayed: bool,
}

/// The 201 body.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct CaseReceipt<'a> {
    case_id: CaseId,
    status: CaseStatus,
    external_reference: Option<&'a str>,
    workflow: Option<&'a str>,
    sources: Vec<SourceReceipt<'a>>,
}

/// One accepted file in the 201 body, with the ids its rows were committed under.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct SourceReceipt<'a> {
    source_id: SourceId,
    filename: &'a str,
    /// Hex sha256 of the bytes.
    sha256: &'a str,
    media_type: MediaType,
    size_bytes: u64,
    pages: u32,
    job_id: JobId,
}

/// Reads, checks and commits one intake request under its `slot`, recording its outcome in
/// the metrics. A request that does not commit deletes the blobs it created before returning.
pub async fn submit(
    state: &AppState,
    principal: Principal,
    idempotency_key: Option<IdempotencyKey>,
    multipart: Multipart,
    slot: IntakeSlot,
) -> Result<IntakeReply, ApiError> {
    let started = Instant::now();
    let mut made = Uncommitted::new(state.blobs.clone(), state.store.clone());
    let result = submit_inner(
        state,
        principal,
        idempotency_key,
        multipart,
        &slot,
        &mut made,
    )
    .await;
    made.finish().await;
    let outcome = match &result {
        Ok(reply) if reply.replayed => "replayed",
        Ok(_) => "created",
        Err(e) if e.status().is_client_error() => "refused",
        Err(_) => "failed",
    };
    metrics::counter!("ironclad_intake_cases_total", "outcome" => outcome).increment(1);
    metrics::histogram!("ironclad_intake_duration_seconds", "outcome" => outcome)
        .record(started.elapsed().as_secs_f64());
    result
}

async fn submit_inner(
    state: &AppState,
    principal: Principal,
    idempotency_key: Option<IdempotencyKey>,
    mut multipart: Multipart,
    slot: &IntakeSlot,
    made: &mut Uncommitted,
) -> Result<IntakeReply, ApiError> {
    let submission = receive(&mut multipart, state, slot, made).await?;
    // Every blob is durable from here on; `made` knows them, and deletes the ones this request
    // created if it ends without a commit.
    state
        .faults
        .strike(FaultPoint::IntakeAfterBlobWrite, tokio::time::sleep)
        .await?;
    // The case is pinned to the newest version of its workflow now, so that every source is
    // read under that one version whichever worker reads it. A workflow nobody loaded would
    // only fail the case later, in a worker: refuse it now.
    let workflow_id = match submission.workflow.as_deref() {
        Some(name) => match state.store.latest_workflow(name).await? {
            Some(version) => Some(version.id),
            None => {
                return Err(ApiError::client(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "unknown_workflow",
                    format!("no workflow named {name:?} is loaded (see `ironclad workflow load`)"),
                ))
            }
        },
        // Not loaded yet (a fresh deployment whose workers have not started): the first
        // worker to read the case pins it.
        None => match state.config.default_workflow.as_deref() {
            Some(name) => state.store.latest_workflow(name).await?.map(|v| v.id),
            None => None,
        },
    };

    let case_id = CaseId::new();
    let sources: Vec<NewSource> = submission
        .files
        .iter()
        .map(new_source)
        .collect::<Result<_, _>>()?;
    let receipt = CaseReceipt {
        case_id,
        status: CaseStatus::Ingested,
        external_reference: submission.external_reference.as_deref(),
        workflow: submission.workflow.as_deref(),
        sources: submission
            .files
            .iter()
            .zip(&sources)
            .map(|(f, s)| SourceReceipt {
                source_id: s.source_id,
                filename: &f.filename,
                sha256: &f.blob.sha256,
                media_type: f.media_type,
                size_bytes: f.blob.size,
                pages: f.pages,
                job_id: s.job_id,
            })
            .collect(),
    };
    // A `Value` (sorted keys) rather than the struct: a replay answers with the body read
    // back from jsonb, which also comes out sorted, so both answers are byte-identical.
    let body = serde_json::to_value(&receipt)
        .map_err(|e| ApiError::Internal(format!("serializing the intake receipt: {e}")))?;
    let pairs: Vec<(&str, &str)> = submission
        .files
        .iter()
        .map(|f| (f.filename.as_str(), f.blob.sha256.as_str()))
        .collect();
    let new_case = NewCase {
        tenant_id: principal.tenant_id,
        case_id,
        external_reference: submission.external_reference.clone(),
        workflow: submission.workflow.clone(),
        workflow_id,
        idempotency_key: idempotency_key.as_ref().map(|k| k.as_str().to_owned()),
        fingerprint: fingerprint(
            submission.external_reference.as_deref(),
            submission.workflow.as_deref(),
            &pairs,
        ),
        sources,
        max_attempts: state.config.max_attempts,
        actor: principal.actor(),
        response: body.clone(),
    };
    made.committing();
    let outcome = state.store.commit_intake(&new_case).await;
    made.settle(match &outcome {
        Ok(IntakeOutcome::Created) => Ok(true),
        Ok(_) => Ok(false),
        Err(e) => Err(e),
    });
    match outcome? {
        IntakeOutcome::Created => {
            tracing::info!(case_id = %case_id, tenant_id = %principal.tenant_id,
                sources = new_case.sources.len(), "case ingested");
            // Committed, not yet answered: a crash here must leave a case the client can find
            // again by replaying its Idempotency-Key.
            state
                .faults
                .strike(FaultPoint::IntakeAfterCommit, tokio::time::sleep)
                .await?;
            Ok(IntakeReply {
                body,
                case_id: case_id.to_string(),
                replayed: false,
            })
        }
        IntakeOutcome::Replayed(original) => {
            let original_id = original["case_id"].as_str().unwrap_or_default().to_owned();
            tracing::info!(case_id = %original_id, "intake replayed under its idempotency key");
            Ok(IntakeReply {
                body: original,
                case_id: original_id,
                replayed: true,
            })
        }
        IntakeOutcome::KeyReused => Err(ApiError::client(
            StatusCode::CONFLICT,
            "idempotency_key_reused",
            "this Idempotency-Key was already used for a different request",
        )
        .with_details(json!({"idempotency_key": new_case.idempotency_key}))),
    }
}

/// The source row for an accepted file, with fresh ids.
fn new_source(file: &ReceivedFile) -> Result<NewSource, ApiError> {
    let size_bytes = i64::try_from(file.blob.size)
        .map_err(|_| ApiError::Internal(format!("file size {} overflows", file.blob.size)))?;
    let pages = i32::try_from(file.pages)
        .map_err(|_| ApiError::Internal(format!("page count {} overflows", file.pages)))?;
    Ok(NewSource {
        source_id: SourceId::new(),
        job_id: JobId::new(),
        filename: file.filename.clone(),
        sha256: file.blob.sha256.clone(),
        media_type: file.media_type.as_str().to_owned(),
        size_bytes,
        pages,
        blob_key: file.blob.key.clone(),
    })
}

/// Digest of what makes two requests "the same": the text fields and each file's name and
/// content, in order. The ids generated per request are deliberately not part of it.
pub fn fingerprint(
    external_reference: Option<&str>,
    workflow: Option<&str>,
    files: &[(&str, &str)],
) -> String {
    // A JSON array is an unambiguous encoding (strings are quoted and escaped), and the
    // version tag lets the format change without old keys colliding with new ones.
    let canonical = json!(["ironclad-intake/1", external_reference, workflow, files]);
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_depends_on_content_and_order_only() {
        let a = fingerprint(Some("ref"), None, &[("a.pdf", "11"), ("b.png", "22")]);
        assert_eq!(
            a,
            fingerprint(Some("ref"), None, &[("a.pdf", "11"), ("b.png", "22")])
        );
        assert_ne!(
            a,
            fingerprint(Some("ref"), None, &[("b.png", "22"), ("a.pdf", "11")])
        );
        assert_ne!(
            a,
            fingerprint(None, None, &[("a.pdf", "11"), ("b.png", "22")])
        );
        assert_ne!(
            a,
            fingerprint(Some("ref"), Some(""), &[("a.pdf", "11"), ("b.png", "22")])
        );
        assert_ne!(
            a,
            fingerprint(Some("ref"), None, &[("a.pdf", "12"), ("b.png", "22")])
        );
        // No separator games: moving text between fields changes the digest.
        assert_ne!(
            fingerprint(Some("a"), Some("b"), &[]),
            fingerprint(Some("ab"), None, &[])
        );
        assert_eq!(a.len(), 64);
    }
}
