//! `/v1/cases/{id}/claim`: claiming a case's review so several people share one queue —
//! `POST` claims or renews (409 `claimed` while another's claim is live), `POST …/takeover`
//! takes it over with a reason, `DELETE` releases it (the holder, or an admin). No
//! `Idempotency-Key`: claiming twice renews, and releasing twice finds nothing to release.

use crate::actions::claims;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::responses::claims::{ClaimAnswer, Released};
use crate::routes::decisions::{case_id, invalid_body};
use crate::state::AppState;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;

/// The claim routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/cases/{id}/claim", post(claim).delete(release))
        .route("/v1/cases/{id}/claim/takeover", post(take_over))
}

/// `POST /v1/cases/{id}/claim` (reviewer or admin): the review is the caller's for the claim
/// period (15 min by default), or their claim lasts that much longer.
#[utoipa::path(
    post,
    path = "/v1/cases/{id}/claim",
    tag = "decisions",
    params(("id" = uuid::Uuid, Path, description = "Case id")),
    responses(
        (status = 200, description = "The caller's claim (`change`: claimed or renewed)", body = ClaimAnswer),
        (status = 403, description = "The key's role may not claim reviews", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "Another reviewer's claim is live (`claimed`), or the case does not await review (`conflict`)", body = crate::openapi::ErrorBody),
    ),
)]
async fn claim(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<ClaimAnswer>, ApiError> {
    let case = case_id(id)?;
    let (claim, change) = claims::claim(&state, &caller.0, case.0).await?;
    Ok(Json(ClaimAnswer::new(claim, change, &caller.0)))
}

/// Body of `POST /v1/cases/{id}/claim/takeover`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct TakeOverBody {
    /// Why (the timeline shows it with both names).
    #[schema(min_length = 1, max_length = 4000)]
    reason: String,
}

/// `POST /v1/cases/{id}/claim/takeover` (reviewer or admin): the review is the caller's,
/// whoever held it.
#[utoipa::path(
    post,
    path = "/v1/cases/{id}/claim/takeover",
    tag = "decisions",
    params(("id" = uuid::Uuid, Path, description = "Case id")),
    request_body = TakeOverBody,
    responses(
        (status = 200, description = "The caller's claim (`change`: taken_over, claimed or renewed)", body = ClaimAnswer),
        (status = 400, description = "No reason, or a bad body", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not claim reviews", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The case does not await review", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = crate::openapi::ErrorBody),
        (status = 422, description = "The JSON does not fit the body (an unknown field, a wrong type)", body = crate::openapi::ErrorBody),
    ),
)]
async fn take_over(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
    body: Result<Json<TakeOverBody>, JsonRejection>,
) -> Result<Json<ClaimAnswer>, ApiError> {
    let case = case_id(id)?;
    let Json(body) = body.map_err(invalid_body)?;
    let (claim, change) = claims::take_over(&state, &caller.0, case.0, &body.reason).await?;
    Ok(Json(ClaimAnswer::new(claim, change, &caller.0)))
}

/// `DELETE /v1/cases/{id}/claim` (the holder, or an admin for anyone's).
#[utoipa::path(
    delete,
    path = "/v1/cases/{id}/claim",
    tag = "decisions",
    params(("id" = uuid::Uuid, Path, description = "Case id")),
    responses(
        (status = 200, description = "`released`: whether a live claim was released", body = Released),
        (status = 403, description = "Someone else holds the claim and the caller is no admin (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
    ),
)]
async fn release(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Released>, ApiError> {
    let case = case_id(id)?;
    let released = claims::release(&state, &caller.0, case.0).await?;
    Ok(Json(Released {
        case_id: case.0,
        released,
    }))
}
