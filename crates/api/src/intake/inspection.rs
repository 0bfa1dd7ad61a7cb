//! Judging one uploaded file by its bytes: type, completeness, pages, size in pixels.

use crate::error::ApiError;
use crate::state::IntakeLimits;
use crate::throttle::IntakeSlot;
use axum::http::StatusCode;
use ironclad_inspect::{inspect, InspectError, InspectLimits, Inspection};
use serde_json::json;
use std::time::Duration;

/// Identifies the file from its bytes and applies the page budget, within `budget`.
///
/// The parse runs on the blocking pool and cannot be interrupted. It holds a clone of the
/// request's `slot` (and the bytes) until it ends, so a parse that outlives its request —
/// refused for taking too long, or its request dropped — still counts against the cap on
/// concurrent intakes; its result is then simply discarded.
pub(super) async fn check_file(
    bytes: Vec<u8>,
    filename: &str,
    limits: &IntakeLimits,
    pages_so_far: u32,
    slot: &IntakeSlot,
    budget: Duration,
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
    let slot = slot.clone();
    let parse = tokio::task::spawn_blocking(move || {
        let inspected = inspect(&bytes, &inspect_limits);
        drop(slot);
        inspected
    });
    let inspection = tokio::time::timeout(budget, parse)
        .await
        .map_err(|_| too_slow(filename, budget))?
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

/// The answer for a file whose inspection ran past its budget (a hostile structure, most
/// likely: an honest file of the largest accepted size takes well under a second).
fn too_slow(filename: &str, budget: Duration) -> ApiError {
    tracing::warn!(filename, ?budget, "file inspection ran past its budget");
    let reason = format!("inspection took longer than {} ms", budget.as_millis());
    ApiError::client(
        StatusCode::PAYLOAD_TOO_LARGE,
        "document_too_large",
        format!("{filename:?}: the file is too large to process: {reason}"),
    )
    .with_details(json!({"filename": filename, "reason": reason}))
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
