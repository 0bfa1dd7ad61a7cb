//! Reading the multipart body: text fields validated, each file streamed into the blob
//! store under the byte limit, inspected, and made durable.

use super::cleanup::Uncommitted;
use super::inspection::check_file;
use super::pace::UploadPace;
use crate::error::ApiError;
use crate::state::AppState;
use crate::throttle::IntakeSlot;
use axum::extract::multipart::{Field, MultipartError};
use axum::extract::Multipart;
use axum::http::StatusCode;
use ironclad_blobs::{BlobWriter, StoredBlob};
use ironclad_core::media::MediaType;
use serde_json::json;

/// Longest accepted `external_reference`, in characters.
pub const MAX_EXTERNAL_REFERENCE_CHARS: usize = 200;
/// Longest accepted `workflow`, in characters.
pub const MAX_WORKFLOW_CHARS: usize = 100;
/// Longest file name kept (display only); longer names are cut.
const MAX_FILENAME_CHARS: usize = 255;

/// One file that passed every check and is durable in the blob store.
#[derive(Debug, Clone)]
pub(super) struct ReceivedFile {
    pub(super) filename: String,
    pub(super) blob: StoredBlob,
    pub(super) media_type: MediaType,
    pub(super) pages: u32,
}

/// Everything read from the request body.
#[derive(Debug, Default)]
pub(super) struct Submission {
    pub(super) external_reference: Option<String>,
    pub(super) workflow: Option<String>,
    pub(super) files: Vec<ReceivedFile>,
}

/// Streams the whole body: text fields parsed, files stored and checked. Each file made
/// durable is recorded in `made` at once, so a later refusal can delete it.
pub(super) async fn receive(
    multipart: &mut Multipart,
    state: &AppState,
    slot: &IntakeSlot,
    made: &mut Uncommitted,
) -> Result<Submission, ApiError> {
    let limits = &state.config.limits;
    let mut pace = UploadPace::new(
        state.config.intake_min_bytes_per_sec,
        state.config.intake_rate_grace,
    );
    let mut submission = Submission::default();
    let mut total_pages: u32 = 0;
    while let Some(mut field) = pace
        .read(multipart.next_field())
        .await?
        .map_err(multipart_error)?
    {
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "file" => {
                if submission.files.len() >= limits.max_files {
                    return Err(ApiError::client(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "too_many_files",
                        format!("at most {} files are accepted per case", limits.max_files),
                    )
                    .with_details(json!({"max_files": limits.max_files})));
                }
                let filename = clean_filename(field.file_name(), submission.files.len() + 1);
                let file =
                    receive_file(&mut field, filename, state, slot, total_pages, &mut pace).await?;
                made.add(&file.blob);
                total_pages = total_pages.saturating_add(file.pages);
                if let Some(first) = submission
                    .files
                    .iter()
                    .find(|f| f.blob.sha256 == file.blob.sha256)
                {
                    return Err(ApiError::client(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "duplicate_file",
                        format!(
                            "{:?} and {:?} have the same content",
                            first.filename, file.filename
                        ),
                    )
                    .with_details(json!({
                        "filenames": [first.filename, file.filename],
                        "sha256": file.blob.sha256,
                    })));
                }
                submission.files.push(file);
            }
            "external_reference" => {
                let value =
                    read_text(&mut field, &name, MAX_EXTERNAL_REFERENCE_CHARS, &mut pace).await?;
                if value.chars().any(char::is_control) {
                    return Err(invalid_field(&name, "must not contain control characters"));
                }
                set_once(&mut submission.external_reference, &name, value)?;
            }
            "workflow" => {
                let value = read_text(&mut field, &name, MAX_WORKFLOW_CHARS, &mut pace).await?;
                let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
                if !value.chars().all(allowed) {
                    return Err(invalid_field(
                        &name,
                        "may only contain A-Z, a-z, 0-9, '_', '.' and '-'",
                    ));
                }
                set_once(&mut submission.workflow, &name, value)?;
            }
            _ => {
                return Err(ApiError::bad_request(
                    "unknown_field",
                    format!("unknown part {name:?}; expected file, external_reference or workflow"),
                )
                .with_details(json!({"field": name})))
            }
        }
    }
    if submission.files.is_empty() {
        return Err(ApiError::bad_request(
            "no_files",
            "a case needs at least one part named \"file\"",
        ));
    }
    Ok(submission)
}

/// Streams one file into the blob store, checks it, and makes it durable; aborts the
/// writer (removing its temp file) on any refusal.
async fn receive_file(
    field: &mut Field<'_>,
    filename: String,
    state: &AppState,
    slot: &IntakeSlot,
    pages_so_far: u32,
    pace: &mut UploadPace,
) -> Result<ReceivedFile, ApiError> {
    let limits = &state.config.limits;
    let mut writer = state.blobs.writer().await?;
    let streamed = stream_into(field, &mut writer, &filename, limits.max_file_bytes, pace).await;
    let checked = match streamed {
        Ok(bytes) => {
            let budget = state.config.inspect_timeout;
            check_file(bytes, &filename, limits, pages_so_far, slot, budget).await
        }
        Err(e) => Err(e),
    };
    let inspection = match checked {
        Ok(inspection) => inspection,
        Err(e) => {
            writer.abort().await;
            return Err(e);
        }
    };
    let blob = writer.finish().await?;
    Ok(ReceivedFile {
        filename,
        blob,
        media_type: inspection.media_type,
        pages: inspection.pages,
    })
}

/// Copies the part into `writer` chunk by chunk, stopping at the first chunk that would
/// pass `max_bytes`; returns the bytes (kept for inspection).
async fn stream_into(
    field: &mut Field<'_>,
    writer: &mut BlobWriter,
    filename: &str,
    max_bytes: u64,
    pace: &mut UploadPace,
) -> Result<Vec<u8>, ApiError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = pace.read(field.chunk()).await?.map_err(multipart_error)? {
        pace.count(chunk.len());
        if writer.len().saturating_add(chunk.len() as u64) > max_bytes {
            return Err(ApiError::client(
                StatusCode::PAYLOAD_TOO_LARGE,
                "file_too_large",
                format!("{filename:?} is larger than {max_bytes} bytes"),
            )
            .with_details(json!({"filename": filename, "max_bytes": max_bytes})));
        }
        writer.write(&chunk).await?;
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Reads a text part of at most `max_chars` characters, trimmed; refuses longer ones without
/// reading further.
async fn read_text(
    field: &mut Field<'_>,
    name: &str,
    max_chars: usize,
    pace: &mut UploadPace,
) -> Result<String, ApiError> {
    let max_bytes = max_chars * 4; // UTF-8 needs at most 4 bytes a character
    let mut buf = Vec::new();
    while let Some(chunk) = pace.read(field.chunk()).await?.map_err(multipart_error)? {
        pace.count(chunk.len());
        if buf.len() + chunk.len() > max_bytes {
            return Err(too_long(name, max_chars));
        }
        buf.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(buf).map_err(|_| invalid_field(name, "must be UTF-8 text"))?;
    let text = text.trim();
    if text.chars().count() > max_chars {
        return Err(too_long(name, max_chars));
    }
    Ok(text.to_owned())
}

/// Stores a text field's value; an empty value counts as absent, a second one is refused.
fn set_once(slot: &mut Option<String>, name: &str, value: String) -> Result<(), ApiError> {
    if slot.is_some() {
        return Err(
            ApiError::bad_request("duplicate_field", format!("{name:?} was given twice"))
                .with_details(json!({"field": name})),
        );
    }
    if !value.is_empty() {
        *slot = Some(value);
    }
    Ok(())
}

fn too_long(name: &str, max_chars: usize) -> ApiError {
    invalid_field(name, &format!("must be at most {max_chars} characters"))
}

fn invalid_field(name: &str, rule: &str) -> ApiError {
    ApiError::bad_request("invalid_field", format!("{name:?} {rule}"))
        .with_details(json!({"field": name, "rule": rule}))
}

/// The display name of the `index`-th file (1-based): the client's base name, without control
/// characters and cut to [`MAX_FILENAME_CHARS`], or `file-<index>` when there is none.
fn clean_filename(raw: Option<&str>, index: usize) -> String {
    let base = raw
        .unwrap_or_default()
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default();
    let cleaned: String = base
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_FILENAME_CHARS)
        .collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() {
        format!("file-{index}")
    } else {
        cleaned.to_owned()
    }
}

/// A body that could not be parsed as multipart, or that passed the body limit.
fn multipart_error(err: MultipartError) -> ApiError {
    if err.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::client(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than this server accepts",
        )
    } else {
        // The parser's text describes the client's body, never our internals; an I/O error
        // (client went away) is reported generically.
        let detail = if err.status() == StatusCode::BAD_REQUEST {
            err.body_text()
        } else {
            "the request body could not be read".to_owned()
        };
        ApiError::bad_request("malformed_multipart", detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames_are_display_safe() {
        assert_eq!(clean_filename(Some("invoice.pdf"), 1), "invoice.pdf");
        assert_eq!(clean_filename(Some("C:\\scans\\bl.tif"), 1), "bl.tif");
        assert_eq!(clean_filename(Some("../../etc/passwd"), 1), "passwd");
        assert_eq!(clean_filename(Some("a\u{0}b\nc"), 1), "abc");
        assert_eq!(clean_filename(Some(""), 3), "file-3");
        assert_eq!(clean_filename(None, 2), "file-2");
        assert_eq!(
            clean_filename(Some(&"x".repeat(400)), 1).len(),
            MAX_FILENAME_CHARS
        );
    }
}
