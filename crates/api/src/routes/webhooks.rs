//! `/v1/webhooks`: endpoints, their delivery log, and requeueing a DEAD delivery — admins only
//! (403 for other roles, before anything is looked up).
//!
//! The signing secret is in the 201 of the creation and nowhere else. Another tenant's id, an
//! unknown id and a malformed id all get the same 404.

use crate::actions::webhooks::{checked_endpoint, requeue_delivery};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::paging::Paging;
use crate::responses::webhooks::{
    CreatedWebhook, DeliveryLog, DeliveryView, Disabled, WebhookEndpoint, WebhookList,
};
use crate::routes::notifications::path_id;
use crate::state::AppState;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ironclad_core::role::Role;
use ironclad_store::Transition;
use serde::Deserialize;
use serde_json::json;

const ACTION: &str = "manage webhooks";

/// The webhook routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/webhooks", get(list).post(create))
        .route("/v1/webhooks/{id}", get(get_one).delete(disable))
        .route("/v1/webhooks/{id}/deliveries", get(deliveries))
        .route("/v1/webhooks/deliveries/{id}/requeue", post(requeue))
}

fn actor(caller: &Caller) -> String {
    caller.0.actor()
}

/// Body of `POST /v1/webhooks`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateWebhook {
    /// Where deliveries are POSTed (http or https, a public host unless the server allows
    /// private addresses).
    #[schema(max_length = 2000, example = "https://example.com/hooks/ironclad")]
    url: String,
    /// A note for admins.
    description: Option<String>,
}

/// `POST /v1/webhooks` {url, description?} → 201 with the secret, shown this once.
#[utoipa::path(
    post,
    path = "/v1/webhooks",
    tag = "webhooks",
    request_body = CreateWebhook,
    responses(
        (status = 201, description = "The endpoint, with its signing secret (shown this once; `Cache-Control: no-store`)", body = CreatedWebhook,
            headers(("Location" = String, description = "`/v1/webhooks/{id}`"))),
        (status = 400, description = "A bad body, URL or description", body = crate::openapi::ErrorBody),
        (status = 403, description = "Only admins manage webhooks", body = crate::openapi::ErrorBody),
        (status = 409, description = "`too_many_webhooks`: the tenant already has the most active endpoints allowed (`details.limit`); nothing was created", body = crate::openapi::ErrorBody),
    ),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<CreateWebhook>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let Json(body) = body.map_err(|e| {
        ApiError::bad_request(
            "invalid_body",
            "expected a JSON object {\"url\": …, \"description\": …}",
        )
        .with_details(json!({"reason": e.body_text()}))
    })?;
    let (url, description) = checked_endpoint(&state, &body.url, body.description.as_deref())?;
    let created = state
        .store
        .webhook_create(
            caller.0.tenant_id,
            &url,
            description,
            &actor(&caller),
            state.config.webhook_max_endpoints,
        )
        .await?;
    let created = CreatedWebhook::from(created);
    let mut response = (StatusCode::CREATED, Json(&created)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/webhooks/{}", created.endpoint.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    // The body holds a secret: no cache may keep it.
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `GET /v1/webhooks`: every endpoint of the tenant, disabled ones included, never a secret.
#[utoipa::path(
    get,
    path = "/v1/webhooks",
    tag = "webhooks",
    responses(
        (status = 200, description = "Every endpoint of the tenant", body = WebhookList),
        (status = 403, description = "Only admins manage webhooks", body = crate::openapi::ErrorBody),
    ),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<WebhookList>, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let endpoints = state.store.webhook_list(caller.0.tenant_id).await?;
    Ok(Json(WebhookList {
        webhooks: endpoints.into_iter().map(Into::into).collect(),
    }))
}

/// `GET /v1/webhooks/{id}`: one endpoint, without its secret.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}",
    tag = "webhooks",
    params(("id" = uuid::Uuid, Path, description = "Endpoint id")),
    responses(
        (status = 200, description = "The endpoint", body = WebhookEndpoint),
        (status = 403, description = "Only admins manage webhooks", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such endpoint for this tenant", body = crate::openapi::ErrorBody),
    ),
)]
async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<WebhookEndpoint>, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let id = path_id(id)?;
    state
        .store
        .webhook_get(caller.0.tenant_id, id)
        .await?
        .map(|endpoint| Json(endpoint.into()))
        .ok_or_else(ApiError::not_found)
}

/// `DELETE /v1/webhooks/{id}`: disables (the endpoint and its log are kept); idempotent.
#[utoipa::path(
    delete,
    path = "/v1/webhooks/{id}",
    tag = "webhooks",
    params(("id" = uuid::Uuid, Path, description = "Endpoint id")),
    responses(
        (status = 200, description = "The endpoint, disabled", body = Disabled),
        (status = 403, description = "Only admins manage webhooks", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such endpoint for this tenant", body = crate::openapi::ErrorBody),
    ),
)]
async fn disable(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Disabled>, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let id = path_id(id)?;
    let (endpoint, transition) = state
        .store
        .webhook_disable(caller.0.tenant_id, id, &actor(&caller))
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(Disabled {
        endpoint: endpoint.into(),
        changed: transition == Transition::Applied,
    }))
}

/// `GET /v1/webhooks/{id}/deliveries?limit=&cursor=`: newest first, each with its attempts.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}/deliveries",
    tag = "webhooks",
    params(
        ("id" = uuid::Uuid, Path, description = "Endpoint id"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "Page size (default 50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "One page of the delivery log, newest first", body = DeliveryLog),
        (status = 400, description = "A bad `limit` or `cursor`", body = crate::openapi::ErrorBody),
        (status = 403, description = "Only admins manage webhooks", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such endpoint for this tenant", body = crate::openapi::ErrorBody),
    ),
)]
async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
    paging: Result<Paging, ApiError>,
) -> Result<Json<DeliveryLog>, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let id = path_id(id)?;
    let paging = paging?;
    let deliveries = state
        .store
        .webhook_delivery_log(caller.0.tenant_id, id, paging.after, paging.fetch())
        .await?
        .ok_or_else(ApiError::not_found)?;
    let (deliveries, next_cursor) = paging.page(deliveries, |d| (d.created_at, d.id));
    Ok(Json(DeliveryLog {
        deliveries: deliveries.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

/// `POST /v1/webhooks/deliveries/{id}/requeue`: a DEAD delivery is sent again, same id, with a
/// fresh attempts budget. 409 when it is not DEAD or its endpoint is disabled.
#[utoipa::path(
    post,
    path = "/v1/webhooks/deliveries/{id}/requeue",
    tag = "webhooks",
    params(("id" = uuid::Uuid, Path, description = "Delivery id")),
    responses(
        (status = 200, description = "The delivery, PENDING again", body = DeliveryView),
        (status = 403, description = "Only admins manage webhooks", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such delivery for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The delivery is not DEAD, or its endpoint is disabled", body = crate::openapi::ErrorBody),
    ),
)]
async fn requeue(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<DeliveryView>, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let id = path_id(id)?;
    requeue_delivery(&state, caller.0.tenant_id, id, &actor(&caller))
        .await
        .map(|delivery| Json(delivery.into()))
}
