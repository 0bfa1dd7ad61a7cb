//! What people do with decisions: the review queue, resolving a review (and a second
//! reviewer's answer under four eyes), reprocessing a case and reevaluating it under the
//! active rules. The work is in [`crate::actions`]; these handlers read HTTP.
//!
//! Every action carries an `Idempotency-Key` (required): the first answer is stored with the
//! action in one transaction, a replay gets it back (with `Idempotent-Replayed: true`), and
//! another request under the same key gets 409. Other tenants' and unknown cases are 404.

use crate::actions::{self, action_error, action_key, check_text};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::paging::Paging;
use crate::responses::corrections::CorrectionAnswer;
use crate::responses::decisions::{
    ProposalAnswer, Reevaluated, Reprocessed, ReviewAnswer, ReviewPage, SecondAnswer,
};
use crate::routes::cases::{idempotency_key, IDEMPOTENT_REPLAYED};
use crate::state::AppState;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ironclad_core::review::{ReviewAction, ReviewStatus, SecondOpinion};
use ironclad_core::role::Role;
use ironclad_core::CaseId;
use ironclad_store::replay::ActionAnswer;
use ironclad_store::reviews::{ClaimFilter, ReviewQuery, ReviewRequest, SecondRequest};
use serde::Deserialize;
use serde_json::json;

pub use crate::actions::reviews::REVIEW_WAIT_SECONDS;

/// The decision routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/reviews", get(list_reviews))
        .route("/v1/cases/{id}/reviews", post(review_case))
        .route("/v1/cases/{id}/reviews/second", post(second_opinion))
        .route("/v1/cases/{id}/reprocess", post(reprocess_case))
        .route("/v1/cases/{id}/reevaluate", post(reevaluate_case))
}

#[derive(Debug, Deserialize)]
struct ReviewListParams {
    status: Option<String>,
    claim: Option<String>,
    overdue: Option<String>,
}

/// `GET /v1/reviews?status=PENDING` (any role): oldest first, with age, claim, what waits
/// for a second reviewer and whether the review is overdue.
#[utoipa::path(
    get,
    path = "/v1/reviews",
    tag = "decisions",
    params(
        ("status" = Option<ReviewStatus>, Query, description = "Reviews in this status (default PENDING; AWAITING_SECOND: what waits for a second reviewer)"),
        ("claim" = Option<String>, Query, description = "`mine`: reviews the caller holds a live claim on; `unclaimed`: nobody does"),
        ("overdue" = Option<bool>, Query, description = "`true`: only open reviews past their policy's `review_sla`"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "Page size (default 50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "One page of the review queue, oldest first", body = ReviewPage),
        (status = 400, description = "A bad `status`, `claim`, `overdue`, `limit` or `cursor`", body = crate::openapi::ErrorBody),
    ),
)]
async fn list_reviews(
    State(state): State<AppState>,
    caller: Caller,
    paging: Paging,
    params: Result<Query<ReviewListParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(p) = params.map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))?;
    let status: ReviewStatus = p
        .status
        .as_deref()
        .unwrap_or("PENDING")
        .parse()
        .map_err(|_| {
            ApiError::bad_request(
                "invalid_status",
                "status must be PENDING, AWAITING_SECOND, RESOLVED or CANCELLED",
            )
        })?;
    let claim = match p.claim.as_deref() {
        None => ClaimFilter::Any,
        Some("mine") => ClaimFilter::HeldBy(caller.0.actor()),
        Some("unclaimed") => ClaimFilter::Unclaimed,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_claim",
                "claim must be mine or unclaimed",
            ))
        }
    };
    let overdue_only = match p.overdue.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_overdue",
                "overdue must be true or false",
            ))
        }
    };
    let query = ReviewQuery {
        statuses: vec![status],
        claim,
        overdue_only,
        after: paging.after,
        limit: paging.fetch(),
    };
    let rows = state
        .store
        .list_reviews(caller.0.tenant_id.0, &query)
        .await?;
    let (reviews, next_cursor) = paging.page(rows, |r| (r.created_at, r.id));
    Ok(Json(ReviewPage {
        reviews: reviews.into_iter().map(Into::into).collect(),
        next_cursor,
    })
    .into_response())
}

/// Body of `POST /v1/cases/{id}/reviews`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ReviewBody {
    action: ReviewAction,
    /// The decision version the reviewer looked at (409 when a newer one exists).
    expected_decision_version: i32,
    /// Required for OVERRIDE.
    #[serde(default)]
    #[schema(max_length = 4000)]
    comment: Option<String>,
}

/// `POST /v1/cases/{id}/reviews` (reviewer or admin).
#[utoipa::path(
    post,
    path = "/v1/cases/{id}/reviews",
    tag = "decisions",
    params(
        ("id" = uuid::Uuid, Path, description = "Case id"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Required: a retried request is applied once and answered the same"),
    ),
    request_body = ReviewBody,
    responses(
        (status = 200, description = "The review is resolved (a replay has `Idempotent-Replayed: true`)", body = ReviewAnswer),
        (status = 202, description = "The policy's `four_eyes` holds the action for a second reviewer (AWAITING_SECOND)", body = ProposalAnswer),
        (status = 400, description = "A bad body, or a missing or malformed `Idempotency-Key`", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not do this", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The case changed meanwhile (`conflict`), another reviewer holds it (`claimed`), or the `Idempotency-Key` was used for another request", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = crate::openapi::ErrorBody),
        (status = 422, description = "Not allowed in the case's current state", body = crate::openapi::ErrorBody),
    ),
)]
async fn review_case(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
    body: Result<Json<ReviewBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Reviewer, Role::Admin], "resolve reviews")?;
    let case = case_id(id)?;
    let Json(body) = body.map_err(invalid_body)?;
    check_text("comment", body.comment.as_deref())?;
    let key = action_key(
        &caller.0,
        "review",
        &required_key(&headers)?,
        case.0,
        &json!({"action": body.action, "expected_decision_version": body.expected_decision_version,
                "comment": body.comment}),
    );
    let req = ReviewRequest {
        case: case.0,
        action: body.action,
        expected_decision_version: body.expected_decision_version,
        comment: body.comment.clone(),
        actor: caller.0.actor(),
        actor_role: caller.0.role.as_str().to_owned(),
    };
    let answer = actions::reviews::resolve(&state, &key, &req)
        .await
        .map_err(action_error)?;
    Ok(reply(answer))
}

/// Body of `POST /v1/cases/{id}/reviews/second`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct SecondBody {
    /// CONFIRM (the action takes effect) or DECLINE (the review waits for a person again).
    opinion: SecondOpinion,
    /// The decision version the second reviewer looked at (409 when a newer one exists).
    expected_decision_version: i32,
    /// Why (kept with the answer and in the timeline).
    #[serde(default)]
    #[schema(max_length = 4000)]
    comment: Option<String>,
}

/// `POST /v1/cases/{id}/reviews/second` (reviewer or admin, never the proposer): confirm or
/// decline what four eyes held.
#[utoipa::path(
    post,
    path = "/v1/cases/{id}/reviews/second",
    tag = "decisions",
    params(
        ("id" = uuid::Uuid, Path, description = "Case id"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Required: a retried request is applied once and answered the same"),
    ),
    request_body = SecondBody,
    responses(
        (status = 200, description = "A resolution confirmed (the case is RESOLVED), or the proposal declined (the review is PENDING again)", body = SecondAnswer),
        (status = 201, description = "A correction confirmed: applied, and the case decided again", body = CorrectionAnswer),
        (status = 400, description = "A bad body, or a missing or malformed `Idempotency-Key`", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not do this, or the caller proposed the action (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "Nothing waits for a second reviewer, the case changed meanwhile, another reviewer holds it (`claimed`), or the `Idempotency-Key` was used for another request", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = crate::openapi::ErrorBody),
        (status = 422, description = "Not allowed in the case's current state", body = crate::openapi::ErrorBody),
    ),
)]
async fn second_opinion(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
    body: Result<Json<SecondBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Reviewer, Role::Admin], "confirm reviews")?;
    let case = case_id(id)?;
    let Json(body) = body.map_err(invalid_body)?;
    check_text("comment", body.comment.as_deref())?;
    let comment = body
        .comment
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    let key = action_key(
        &caller.0,
        "second",
        &required_key(&headers)?,
        case.0,
        &json!({"opinion": body.opinion, "expected_decision_version": body.expected_decision_version,
                "comment": comment}),
    );
    let req = SecondRequest {
        case: case.0,
        opinion: body.opinion,
        expected_decision_version: body.expected_decision_version,
        comment: comment.map(str::to_owned),
        actor: caller.0.actor(),
        actor_role: caller.0.role.as_str().to_owned(),
    };
    let answer = actions::reviews::second_opinion(&state, caller.0.tenant_id.0, &key, &req).await?;
    Ok(reply(answer))
}

/// Body of `POST /v1/cases/{id}/reprocess`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ReprocessBody {
    /// Only these sources are read again (default: all).
    #[serde(default)]
    #[schema(max_items = 1000)]
    source_ids: Option<Vec<uuid::Uuid>>,
    /// Why the case is read again.
    #[schema(min_length = 1, max_length = 4000)]
    reason: String,
}

/// `POST /v1/cases/{id}/reprocess`: a new generation. Operators and admins read cases again;
/// a RESOLVED case carries a person's resolution, so only a reviewer or an admin may reopen
/// it (an operator gets 403), and its earlier resolution stays in its history.
#[utoipa::path(
    post,
    path = "/v1/cases/{id}/reprocess",
    tag = "decisions",
    params(
        ("id" = uuid::Uuid, Path, description = "Case id"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Required: a retried request is applied once and answered the same"),
    ),
    request_body = ReprocessBody,
    responses(
        (status = 202, description = "A new generation is being read", body = Reprocessed),
        (status = 400, description = "A bad body, or a missing or malformed `Idempotency-Key`", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not do this (`forbidden`), e.g. an operator reprocessing a RESOLVED case", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The case changed meanwhile (`conflict`), or the `Idempotency-Key` was used for another request", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = crate::openapi::ErrorBody),
        (status = 422, description = "Not allowed in the case's current state", body = crate::openapi::ErrorBody),
    ),
)]
async fn reprocess_case(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
    body: Result<Json<ReprocessBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    // Which cases each role may read again is decided under the case's lock (its status).
    caller.require(
        &[Role::Operator, Role::Reviewer, Role::Admin],
        "reprocess cases",
    )?;
    let case = case_id(id)?;
    let Json(body) = body.map_err(invalid_body)?;
    let key = required_key(&headers)?;
    let answer = actions::reprocess::reprocess(
        &state,
        &caller.0,
        &key,
        case.0,
        body.source_ids,
        &body.reason,
    )
    .await?
    .map_err(action_error)?;
    Ok(reply(answer))
}

/// `POST /v1/cases/{id}/reevaluate` (reviewer or admin): a new decision version under the
/// active rules, from the facts already read.
#[utoipa::path(
    post,
    path = "/v1/cases/{id}/reevaluate",
    tag = "decisions",
    params(
        ("id" = uuid::Uuid, Path, description = "Case id"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Required: a retried request is applied once and answered the same"),
    ),
    responses(
        (status = 201, description = "A new decision version", body = Reevaluated),
        (status = 400, description = "A bad body, or a missing or malformed `Idempotency-Key`", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not do this", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The case changed meanwhile (`conflict`), another reviewer holds it (`claimed`), or the `Idempotency-Key` was used for another request", body = crate::openapi::ErrorBody),
        (status = 422, description = "Not allowed in the case's current state", body = crate::openapi::ErrorBody),
    ),
)]
async fn reevaluate_case(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Reviewer, Role::Admin], "reevaluate cases")?;
    let case = case_id(id)?;
    let key = required_key(&headers)?;
    let answer = actions::reevaluate::reevaluate(&state, &caller.0, &key, case.0)
        .await?
        .map_err(action_error)?;
    Ok(reply(answer))
}

/// A case id from the path; malformed is "no such case", exactly like unknown or foreign.
pub(crate) fn case_id(id: Result<Path<String>, PathRejection>) -> Result<CaseId, ApiError> {
    id.ok()
        .and_then(|Path(raw)| raw.parse().ok())
        .ok_or_else(ApiError::not_found)
}

/// A JSON body that could not be read, as the API answers it.
pub(crate) fn invalid_body(e: JsonRejection) -> ApiError {
    ApiError::client(e.status(), "invalid_body", e.body_text())
}

/// The request's `Idempotency-Key`: required on every case action.
pub(crate) fn required_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let key = idempotency_key(headers)?.ok_or_else(|| {
        ApiError::bad_request(
            "missing_idempotency_key",
            "this action needs an Idempotency-Key header, so a retried request is applied once",
        )
    })?;
    Ok(key.as_str().to_owned())
}

/// An action's answer: its first status and body, marked when it is a replay.
pub(crate) fn reply(answer: ActionAnswer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = (status, Json(answer.body)).into_response();
    if answer.replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}
