//! What people do with decisions: the review queue, resolving a review, reprocessing a case
//! and reevaluating it under the active rules.
//!
//! Every action carries an `Idempotency-Key` (required): the first answer is stored with the
//! action in one transaction, a replay gets it back (with `Idempotent-Replayed: true`), and
//! another request under the same key gets 409. Other tenants' and unknown cases are 404.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::cases::{idempotency_key, IDEMPOTENT_REPLAYED};
use crate::state::AppState;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ironclad_core::review::{ReviewAction, ReviewStatus};
use ironclad_core::role::Role;
use ironclad_core::CaseId;
use ironclad_documents::rules as case_rules;
use ironclad_store::decisions::RulesApplied;
use ironclad_store::read::{decode_cursor, encode_cursor};
use ironclad_store::replay::{ActionAnswer, ActionError, ActionKey};
use ironclad_store::reprocess::ReprocessRequest;
use ironclad_store::reviews::ReviewRequest;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

/// Histogram of how long resolved decisions waited for a person (the fifth pilot measure;
/// the oldest pending wait is a gauge on `/metrics`).
pub const REVIEW_WAIT_SECONDS: &str = "ironclad_review_wait_seconds";

/// Longest review comment or reprocess reason accepted.
pub const MAX_COMMENT_CHARS: usize = 4000;

/// The decision routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/reviews", get(list_reviews))
        .route("/v1/cases/{id}/reviews", post(review_case))
        .route("/v1/cases/{id}/reprocess", post(reprocess_case))
        .route("/v1/cases/{id}/reevaluate", post(reevaluate_case))
}

#[derive(Debug, Deserialize)]
struct ReviewListParams {
    status: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// `GET /v1/reviews?status=PENDING` (any role): oldest first, with age and decision status.
#[utoipa::path(
    get,
    path = "/v1/reviews",
    tag = "decisions",
    params(
        ("status" = Option<ReviewStatus>, Query, description = "Reviews in this status (default PENDING)"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "Page size (default 50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "One page of the review queue, oldest first", body = crate::openapi::ReviewPage),
        (status = 400, description = "A bad `status`, `limit` or `cursor`", body = crate::openapi::ErrorBody),
    ),
)]
async fn list_reviews(
    State(state): State<AppState>,
    caller: Caller,
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
                "status must be PENDING, RESOLVED or CANCELLED",
            )
        })?;
    let limit = match p.limit.as_deref() {
        None => 50,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=500).contains(n))
            .ok_or_else(|| ApiError::bad_request("invalid_limit", "limit must be 1..=500"))?,
    };
    let after = match p.cursor.as_deref() {
        None => None,
        Some(raw) => Some(
            decode_cursor(raw)
                .ok_or_else(|| ApiError::bad_request("invalid_cursor", "cursor is not valid"))?,
        ),
    };
    let rows = state
        .store
        .list_reviews(caller.0.tenant_id.0, status, after, limit)
        .await?;
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| encode_cursor(r.created_at, r.id)))
        .flatten();
    Ok(Json(json!({ "reviews": rows, "next_cursor": next })).into_response())
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
        (status = 200, description = "The review is resolved (a replay has `Idempotent-Replayed: true`)", body = crate::openapi::ReviewAnswer),
        (status = 400, description = "A bad body, or a missing or malformed `Idempotency-Key`", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not do this", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The case changed meanwhile (`conflict`), or the `Idempotency-Key` was used for another request", body = crate::openapi::ErrorBody),
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
    let key = action_key(&caller, "review", &headers, case, &body_fingerprint(&body))?;
    let req = ReviewRequest {
        case: case.0,
        action: body.action,
        expected_decision_version: body.expected_decision_version,
        comment: body.comment.clone(),
        actor: actor(&caller),
        actor_role: caller.0.role.as_str().to_owned(),
    };
    let answer = resolve_review(&state, &key, &req)
        .await
        .map_err(action_error)?;
    Ok(reply(answer))
}

/// Resolves a review and records how long it waited: the one path the API and the desk share.
pub(crate) async fn resolve_review(
    state: &AppState,
    key: &ActionKey,
    req: &ReviewRequest,
) -> Result<ActionAnswer, ActionError> {
    let answer = state
        .store
        .resolve_review(key, req, |r| {
            json!({
                "review_id": r.review_id, "case_id": r.case_id, "status": "RESOLVED",
                "resolution": r.resolution, "decision_version": r.decision_version,
                "actor": r.actor, "resolved_at": r.resolved_at,
                "waited_seconds": (r.resolved_at - r.opened_at).num_milliseconds() as f64 / 1000.0,
            })
        })
        .await?;
    if !answer.replayed {
        if let Some(waited) = answer.body.get("waited_seconds").and_then(|w| w.as_f64()) {
            metrics::histogram!(REVIEW_WAIT_SECONDS).record(waited);
        }
    }
    Ok(answer)
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
        (status = 202, description = "A new generation is being read", body = ironclad_store::reprocess::Reprocessed),
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
    if body.reason.trim().is_empty() {
        return Err(ApiError::bad_request(
            "invalid_body",
            "reason is required: say why the case is read again",
        ));
    }
    check_text("reason", Some(&body.reason))?;
    if body.source_ids.as_ref().is_some_and(|s| s.len() > 1000) {
        return Err(ApiError::bad_request(
            "invalid_body",
            "at most 1000 source_ids",
        ));
    }
    let fingerprint =
        body_fingerprint(&json!({"source_ids": body.source_ids, "reason": body.reason}));
    let key = action_key(&caller, "reprocess", &headers, case, &fingerprint)?;
    let req = ReprocessRequest {
        case: case.0,
        source_ids: body.source_ids.clone(),
        reason: body.reason.clone(),
        actor: actor(&caller),
        actor_role: caller.0.role,
        max_attempts: state.config.max_attempts,
    };
    let answer = state
        .store
        .reprocess_case(&key, &req, |r| json!(r))
        .await
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
        (status = 201, description = "A new decision version", body = crate::openapi::Reevaluated),
        (status = 400, description = "A bad body, or a missing or malformed `Idempotency-Key`", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not do this", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The case changed meanwhile (`conflict`), or the `Idempotency-Key` was used for another request", body = crate::openapi::ErrorBody),
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
    let key = action_key(&caller, "reevaluate", &headers, case, "")?;
    let tenant = caller.0.tenant_id.0;
    let context = state
        .store
        .decision_context(case.0, Some(tenant))
        .await?
        .ok_or_else(ApiError::not_found)?;
    let workflow_yaml = state.store.case_workflow_yaml(&context).await?;
    let chosen = case_rules::choose_for_yaml(
        state.compiler.as_ref(),
        workflow_yaml.as_deref(),
        context.active_ruleset.as_ref(),
    );
    if let Some(problem) = &chosen.problem {
        tracing::warn!(case_id = %case, %problem, "reevaluating without the expected rules");
    }
    let applied = RulesApplied::new(&chosen.ruleset, chosen.managed);
    let answer = state
        .store
        .reevaluate_case(
            &key,
            case.0,
            &applied,
            &actor(&caller),
            |d| json!({"case_id": case, "decision": d}),
        )
        .await
        .map_err(action_error)?;
    Ok(reply(answer))
}

/// Who did it, as the audit trail and the case record it.
pub(crate) fn actor(caller: &Caller) -> String {
    caller.0.actor()
}

fn case_id(id: Result<Path<String>, PathRejection>) -> Result<CaseId, ApiError> {
    id.ok()
        .and_then(|Path(raw)| raw.parse().ok())
        .ok_or_else(ApiError::not_found)
}

fn invalid_body(e: JsonRejection) -> ApiError {
    ApiError::client(e.status(), "invalid_body", e.body_text())
}

/// Refuses a comment or reason too long, or holding U+0000 (shared with the desk's forms).
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

fn body_fingerprint(body: &impl std::fmt::Debug) -> String {
    hex::encode(Sha256::digest(format!("{body:?}").as_bytes()))
}

/// The request's replay key: required on every case action.
fn action_key(
    caller: &Caller,
    action: &'static str,
    headers: &HeaderMap,
    case: CaseId,
    fingerprint: &str,
) -> Result<ActionKey, ApiError> {
    let key = idempotency_key(headers)?.ok_or_else(|| {
        ApiError::bad_request(
            "missing_idempotency_key",
            "this action needs an Idempotency-Key header, so a retried request is applied once",
        )
    })?;
    Ok(ActionKey {
        tenant: caller.0.tenant_id.0,
        action,
        key: key.as_str().to_owned(),
        fingerprint: hex::encode(Sha256::digest(format!("{case}:{fingerprint}").as_bytes())),
    })
}

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
        ActionError::Refused(message) => {
            ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, "not_allowed", message)
        }
        ActionError::Forbidden(message) => {
            ApiError::client(StatusCode::FORBIDDEN, "forbidden", message)
        }
        ActionError::Store(e) => e.into(),
    }
}

fn reply(answer: ActionAnswer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = (status, Json(answer.body)).into_response();
    if answer.replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}
