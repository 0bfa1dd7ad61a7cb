//! The admin's webhook actions the desk shares with the API: checking a new endpoint, and
//! requeueing a DEAD delivery.

use crate::error::ApiError;
use crate::state::AppState;
use axum::http::StatusCode;
use ironclad_core::webhook_url::WebhookUrl;
use ironclad_core::TenantId;
use ironclad_store::webhooks::{DeliveryView, RequeueOutcome, MAX_DESCRIPTION_LEN};
use serde_json::json;

/// An endpoint's URL and description as checked for creation (the API's and the desk's one
/// path): 400 `invalid_url` or `invalid_description`.
pub(crate) fn checked_endpoint<'d>(
    state: &AppState,
    url: &str,
    description: Option<&'d str>,
) -> Result<(WebhookUrl, Option<&'d str>), ApiError> {
    let url = WebhookUrl::parse(url, state.config.webhook_allow_private).map_err(|e| {
        ApiError::bad_request("invalid_url", e.to_string()).with_details(json!({"field": "url"}))
    })?;
    let description = description.map(str::trim).filter(|d| !d.is_empty());
    if let Some(d) = description {
        if d.chars().count() > MAX_DESCRIPTION_LEN || d.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "invalid_description",
                format!(
                    "description must be at most {MAX_DESCRIPTION_LEN} characters, without control characters"
                ),
            )
            .with_details(json!({"field": "description", "max": MAX_DESCRIPTION_LEN})));
        }
    }
    Ok((url, description))
}

/// Requeues the tenant's DEAD delivery `id` (the API's and the desk's one path): 404 unknown,
/// 409 `not_dead` or `endpoint_disabled`.
pub(crate) async fn requeue_delivery(
    state: &AppState,
    tenant: TenantId,
    id: uuid::Uuid,
    actor: &str,
) -> Result<DeliveryView, ApiError> {
    match state.store.webhook_requeue(tenant, id, actor).await? {
        RequeueOutcome::Requeued(view) => Ok(*view),
        RequeueOutcome::NotFound => Err(ApiError::not_found()),
        RequeueOutcome::NotDead(status) => Err(ApiError::client(
            StatusCode::CONFLICT,
            "not_dead",
            format!("only a DEAD delivery can be requeued; this one is {status}"),
        )
        .with_details(json!({"status": status}))),
        RequeueOutcome::EndpointDisabled => Err(ApiError::client(
            StatusCode::CONFLICT,
            "endpoint_disabled",
            "the delivery's endpoint is disabled; create a new endpoint instead",
        )),
    }
}
