//! What people do, once: the use cases the JSON routes (`routes/`) and the desk (`ui/`) both
//! call. A route parses an HTTP request and a desk handler a form; both hand the same
//! request to a function here, which checks it, acts through the store and answers in
//! [`ApiError`]s — so an action behaves the same however it was asked for, and neither side
//! imports the other.
//!
//! - [`reviews`]: resolving a review, a second reviewer's answer (four eyes).
//! - [`corrections`]: correcting a value (typed, or read from a box), and previewing it.
//! - [`claims`]: claiming, renewing, taking over and releasing a review.
//! - [`reprocess`]: reading a case again; [`reevaluate`]: deciding it again under the
//!   active rules.
//! - [`rulesets`], [`webhooks`]: the admin actions the desk shares with the API.

pub mod claims;
pub mod corrections;
pub mod reevaluate;
pub mod reprocess;
pub mod reviews;
pub mod rulesets;
pub mod webhooks;

use crate::error::ApiError;
use axum::http::StatusCode;
use ironclad_store::replay::{ActionError, ActionKey};
use ironclad_store::tenants::Principal;
use serde_json::json;
use uuid::Uuid;

/// Longest review comment, reprocess reason or correction reason accepted.
pub const MAX_COMMENT_CHARS: usize = 4000;

/// Refuses a comment or reason too long, or holding U+0000.
pub(crate) fn check_text(field: &'static str, text: Option<&str>) -> Result<(), ApiError> {
    if text.is_some_and(|t| t.chars().count() > MAX_COMMENT_CHARS) {
        return Err(ApiError::bad_request(
            "invalid_body",
            format!("{field} is longer than {MAX_COMMENT_CHARS} characters"),
        ));
    }
    // PostgreSQL's text and jsonb cannot hold U+0000: refuse it here, not as a failed insert.
    if text.is_some_and(|t| t.contains('\0')) {
        return Err(ApiError::bad_request(
            "invalid_body",
            format!("{field} contains the character U+0000"),
        ));
    }
    Ok(())
}

/// A reason that must be given: present, not blank, within bounds.
pub(crate) fn required_reason(field: &'static str, text: &str, why: &str) -> Result<(), ApiError> {
    check_text(field, Some(text))?;
    if text.trim().is_empty() {
        return Err(ApiError::bad_request(
            "invalid_body",
            format!("{field} is required: {why}"),
        ));
    }
    Ok(())
}

/// The replay key of a request: the client's `Idempotency-Key` (an API header, or the key a
/// desk form was rendered with) and the one fingerprint of [`ActionKey::new`].
pub(crate) fn action_key(
    who: &Principal,
    action: &'static str,
    key: &str,
    case: Uuid,
    request: &serde_json::Value,
) -> ActionKey {
    ActionKey::new(who.tenant_id.0, action, key, case, request)
}

/// The `Idempotency-Key` a desk form was rendered with (a double submit, or a resubmitted
/// page, is then applied once).
pub(crate) fn form_key(raw: &str) -> Result<String, ApiError> {
    let key = raw.trim();
    if key.is_empty() || key.len() > 200 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::bad_request(
            "missing_idempotency_key",
            "this form is missing its key; reload the page",
        ));
    }
    Ok(key.to_owned())
}

/// A store refusal as the API answers it (the desk shows conflicts and refusals beside the
/// form instead, and everything else as this).
pub(crate) fn action_error(e: ActionError) -> ApiError {
    match e {
        ActionError::NotFound => ApiError::not_found(),
        ActionError::KeyReused => ApiError::client(
            StatusCode::CONFLICT,
            "idempotency_key_reused",
            "this Idempotency-Key was already used for a different request",
        ),
        ActionError::Conflict { message, current } => {
            ApiError::client(StatusCode::CONFLICT, "conflict", message)
                .with_details(json!({ "current": current }))
        }
        claimed @ ActionError::Claimed { .. } => {
            let details = match &claimed {
                ActionError::Claimed {
                    holder_name,
                    expires_at,
                } => json!({"claimed_by": holder_name, "claimed_until": expires_at}),
                _ => serde_json::Value::Null,
            };
            ApiError::client(StatusCode::CONFLICT, "claimed", claimed.to_string())
                .with_details(details)
        }
        ActionError::Refused(message) => {
            ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, "not_allowed", message)
        }
        ActionError::Forbidden(message) => {
            ApiError::client(StatusCode::FORBIDDEN, "forbidden", message)
        }
        ActionError::Store(e) => e.into(),
    }
}

/// Why an action that checks its input before the store acts was not done: the store's
/// refusal (a conflict, a claim, a refusal: the desk shows it beside its form), or a request
/// refused before it reached the store.
#[derive(Debug)]
pub(crate) enum Failure {
    /// As the store found it.
    Action(ActionError),
    /// Anything else.
    Api(ApiError),
}

impl From<ActionError> for Failure {
    fn from(e: ActionError) -> Self {
        Self::Action(e)
    }
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Self::Api(e)
    }
}

impl From<ironclad_store::StoreError> for Failure {
    fn from(e: ironclad_store::StoreError) -> Self {
        Self::Api(e.into())
    }
}

impl From<Failure> for ApiError {
    fn from(e: Failure) -> Self {
        match e {
            Failure::Action(e) => action_error(e),
            Failure::Api(e) => e,
        }
    }
}
