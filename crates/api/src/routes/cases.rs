//! `/v1/cases`: intake (POST), one case (GET by id), and the keyset-paged listing.
//!
//! Every read is scoped to the caller's tenant; another tenant's case, an unknown id and a
//! malformed id all get the same 404, so ids cannot be probed across tenants.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::intake;
use crate::paging::Paging;
use crate::responses::cases::{CasePage, TenantCase};
use crate::state::{AppState, IntakeLimits};
use crate::throttle::IntakeSlots;
use axum::extract::multipart::MultipartRejection;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Multipart, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use ironclad_core::role::Role;
use ironclad_core::{CaseId, CaseStatus, IdempotencyKey};
use serde::Deserialize;
use serde_json::json;

/// Header a client sets to make a submission safe to retry.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Header set on a 201 that replays an earlier submission's answer.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The case routes. The body limit covers a full upload (see [`IntakeLimits::max_body_bytes`]);
/// the finer limits are enforced while streaming.
pub fn router(limits: &IntakeLimits) -> Router<AppState> {
    Router::new()
        .route("/v1/cases", get(list_cases).post(create_case))
        .route("/v1/cases/{id}", get(get_case))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes()))
}

/// `POST /v1/cases` (operator or admin). Beyond `max_concurrent_intakes` running intakes, or
/// beyond the tenant's share of them, answered 503 `busy` at once, before the body is read.
#[utoipa::path(
    post,
    path = "/v1/cases",
    tag = "cases",
    request_body(content = crate::openapi::CaseSubmission, content_type = "multipart/form-data"),
    params(
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Makes the submission safe to retry: the same key and files answer the first 201 again"),
    ),
    responses(
        (status = 201, description = "The case was committed (or, with `Idempotent-Replayed: true`, an earlier identical submission is answered again)", body = crate::intake::CaseReceipt,
            headers(("Location" = String, description = "`/v1/cases/{id}`"), ("Idempotent-Replayed" = String, description = "`true` on a replay"))),
        (status = 400, description = "Malformed multipart, an invalid, unknown or repeated field, no file, or a malformed `Idempotency-Key`", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not submit cases", body = crate::openapi::ErrorBody),
        (status = 409, description = "The `Idempotency-Key` was used for a different submission", body = crate::openapi::ErrorBody),
        (status = 413, description = "A file, the files together or their pages are over a limit", body = crate::openapi::ErrorBody),
        (status = 415, description = "Not multipart/form-data, or a file of an unsupported type", body = crate::openapi::ErrorBody),
        (status = 422, description = "A file cannot be read (damaged, encrypted, …) or the workflow is unknown", body = crate::openapi::ErrorBody),
    ),
)]
async fn create_case(
    State(state): State<AppState>,
    Extension(slots): Extension<IntakeSlots>,
    caller: Caller,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Operator, Role::Admin], "submit cases")?;
    let key = idempotency_key(&headers)?;
    let multipart = multipart.map_err(|_| {
        ApiError::client(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "expected_multipart",
            "the body must be multipart/form-data with one or more \"file\" parts",
        )
    })?;
    let slot = slots.try_acquire(caller.0.tenant_id)?;
    let reply = intake::submit(&state, caller.0, key, multipart, slot).await?;
    let mut response = (StatusCode::CREATED, Json(reply.body)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/cases/{}", reply.case_id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    if reply.replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// The `Idempotency-Key` header, if present; malformed keys are refused (400).
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let invalid = |reason: String| {
        ApiError::bad_request(
            "invalid_idempotency_key",
            format!("Idempotency-Key: {reason}"),
        )
    };
    let text = value
        .to_str()
        .map_err(|_| invalid("must be visible ASCII characters".to_owned()))?;
    IdempotencyKey::parse(text)
        .map(Some)
        .map_err(|e| invalid(e.to_string()))
}

/// `GET /v1/cases/{id}` (any role of the owning tenant).
#[utoipa::path(
    get,
    path = "/v1/cases/{id}",
    tag = "cases",
    params(("id" = uuid::Uuid, Path, description = "Case id")),
    responses(
        (status = 200, description = "The case with its files, jobs, pages, documents, latest decision and history", body = TenantCase),
        (status = 404, description = "No such case for this tenant (unknown, another tenant's, or a malformed id)", body = crate::openapi::ErrorBody),
    ),
)]
async fn get_case(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    // A malformed id is "no such case", exactly like an unknown or foreign one.
    let id: CaseId = id
        .ok()
        .and_then(|Path(raw)| raw.parse().ok())
        .ok_or_else(ApiError::not_found)?;
    let detail = state
        .store
        .case_detail(Some(caller.0.tenant_id), id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(TenantCase::from(detail)).into_response())
}

/// Query of the listing; everything arrives as text so each mistake gets its own 400.
#[derive(Debug, Deserialize)]
struct ListParams {
    status: Option<String>,
}

/// `GET /v1/cases?status=&limit=&cursor=`: the caller's cases, newest first.
#[utoipa::path(
    get,
    path = "/v1/cases",
    tag = "cases",
    params(
        ("status" = Option<CaseStatus>, Query, description = "Only cases in this status"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "Page size (default 50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "One page of the caller's cases, newest first", body = CasePage),
        (status = 400, description = "A bad `status`, `limit` or `cursor`", body = crate::openapi::ErrorBody),
    ),
)]
async fn list_cases(
    State(state): State<AppState>,
    caller: Caller,
    paging: Paging,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) = params.map_err(|_| {
        ApiError::bad_request("invalid_query", "the query string could not be parsed")
    })?;
    let status = params
        .status
        .as_deref()
        .map(|s| {
            s.parse::<CaseStatus>().map_err(|_| {
                ApiError::bad_request("invalid_status", format!("unknown case status {s:?}"))
                    .with_details(json!({"allowed": CaseStatus::ALL}))
            })
        })
        .transpose()?;
    let cases = state
        .store
        .list_cases(
            Some(caller.0.tenant_id),
            status.map(CaseStatus::as_str),
            paging.after,
            paging.fetch(),
        )
        .await?;
    let (cases, next_cursor) = paging.page(cases, |c| (c.created_at, c.id));
    Ok(Json(CasePage {
        cases: cases.into_iter().map(Into::into).collect(),
        next_cursor,
    })
    .into_response())
}
