//! Judging one uploaded file by its bytes: type, completeness, pages, size in pixels.

use crate::error::ApiError;
use crate::state::IntakeLimits;
use axum::http::StatusCode;
use ironclad_documents::{inspect, InspectError, InspectLimits, Inspection};
use serde_json::json;

/// Identifies the file from its bytes and applies the page budget.
pub(super) async fn check_file(
    bytes: Vec<u8>,
    filename: &str,
    limits: &IntakeLimits,
    pages_so_far: u32,
) -> Result<Inspection, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::client(
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_file",
            format!("{filename:?} is empty"),
        )
        .with_details(json!({"filename": filename})));
    }
    let inspect_limits = InspectLimits {
        max_pages: limits.max_total_pages,
        ..InspectLimits::default()
    };
    // Parsing a 25 MiB PDF is CPU work: keep it off the async workers.
    let inspection = tokio::task::spawn_blocking(move || inspect(&bytes, &inspect_limits))
        .await
        .map_err(|e| ApiError::Internal(format!("inspection task failed: {e}")))?
        .map_err(|e| refusal(e, filename, limits))?;
    let total = pages_so_far.saturating_add(inspection.pages);
    if total > limits.max_total_pages {
        return Err(too_many_pages(filename, total, limits));
    }
    Ok(inspection)
}

/// The answer for a file the inspector refused.
fn refusal(err: InspectError, filename: &str, limits: &IntakeLimits) -> ApiError {
    let message = format!("{filename:?}: {err}");
    match err {
        InspectError::Unsupported { detected } => ApiError::client(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            message,
        )
        .with_details(json!({"filename": filename, "detected": detected})),
        InspectError::Unreadable { reason } => {
            ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, "unreadable_file", message)
                .with_details(json!({"filename": filename, "reason": reason}))
        }
        InspectError::Encrypted => {
            ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, "unreadable_file", message)
                .with_details(json!({"filename": filename, "reason": "password-protected PDF"}))
        }
        InspectError::TooManyPages { pages, .. } => too_many_pages(filename, pages, limits),
        InspectError::TooLarge { reason } => {
            ApiError::client(StatusCode::PAYLOAD_TOO_LARGE, "document_too_large", message)
                .with_details(json!({"filename": filename, "reason": reason}))
        }
    }
}

fn too_many_pages(filename: &str, pages: u32, limits: &IntakeLimits) -> ApiError {
    ApiError::client(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_many_pages",
        format!(
            "with {filename:?} the case has {pages} pages; at most {} are accepted",
            limits.max_total_pages
        ),
    )
    .with_details(
        json!({"filename": filename, "pages": pages, "max_pages": limits.max_total_pages}),
    )
}
