//! `/v1/rulesets` (admin): versioned rules per workflow — create a DRAFT, validate it against
//! the workflow, activate it (the previous ACTIVE one is RETIRED), list, show and diff.
//! Activation never changes decided cases; `POST /v1/cases/{id}/reevaluate` does, per case.

use crate::actions::rulesets::{
    activate_checked, check_ruleset, diff_base, find_ruleset, latest_workflow_yaml,
};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::responses::rulesets::{
    RulesetCreated, RulesetDiff, RulesetList, RulesetOne, RulesetVersion, Validation,
};
use crate::state::AppState;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ironclad_core::role::Role;
use ironclad_core::rules::RulesetSpec;
use ironclad_documents::rules as case_rules;
use ironclad_store::rulesets::RulesetRow;
use serde::Deserialize;
use serde_json::json;

/// The ruleset routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/rulesets", get(list).post(create))
        .route("/v1/rulesets/{id}", get(show))
        .route("/v1/rulesets/{id}/validate", post(validate))
        .route("/v1/rulesets/{id}/activate", post(activate))
        .route("/v1/rulesets/{id}/diff", get(diff))
}

const ACTION: &str = "manage rulesets";

/// Body of `POST /v1/rulesets`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    /// The workflow the rules are written for.
    workflow: String,
    /// The rule specifications (see docs/rules.md).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    rules: serde_json::Value,
    /// The decision policy.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    policy: Option<serde_json::Value>,
}

/// `POST /v1/rulesets`: stores a DRAFT (its shape must parse) and says whether it is valid
/// against the workflow's latest version.
#[utoipa::path(
    post,
    path = "/v1/rulesets",
    tag = "rulesets",
    request_body = CreateBody,
    responses(
        (status = 201, description = "The DRAFT is stored; `validation` says whether it can be activated", body = RulesetCreated),
        (status = 400, description = "The body is not JSON", body = crate::openapi::ErrorBody),
        (status = 403, description = "Only admins manage rulesets", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = crate::openapi::ErrorBody),
        (status = 422, description = "The body or the ruleset cannot be read, or the workflow is unknown", body = crate::openapi::ErrorBody),
    ),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<CreateBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let Json(body) =
        body.map_err(|e| ApiError::client(e.status(), "invalid_body", e.body_text()))?;
    let workflow_yaml = latest_workflow_yaml(&state, &body.workflow).await?;
    let mut spec = json!({ "rules": body.rules });
    if let Some(policy) = body.policy {
        spec["policy"] = policy;
    }
    if spec.to_string().contains("\\u0000") {
        // PostgreSQL's jsonb cannot hold U+0000; say so instead of failing the insert.
        return Err(ApiError::client(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_ruleset",
            "the ruleset contains the character U+0000, which cannot be stored",
        ));
    }
    if let Err(e) = serde_json::from_value::<RulesetSpec>(spec.clone()) {
        return Err(ApiError::client(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_ruleset",
            format!("the ruleset cannot be read: {e}"),
        ));
    }
    let row = state
        .store
        .create_ruleset(
            caller.0.tenant_id.0,
            &body.workflow,
            &spec,
            &caller.0.actor(),
        )
        .await?;
    let validation = Validation::from(case_rules::validate_for_yaml(
        state.compiler.as_ref(),
        &workflow_yaml,
        &row.spec,
    ));
    Ok((
        StatusCode::CREATED,
        Json(RulesetCreated {
            ruleset: row.into(),
            validation,
        }),
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
struct ListParams {
    workflow: Option<String>,
}

/// `GET /v1/rulesets[?workflow=]`.
#[utoipa::path(
    get,
    path = "/v1/rulesets",
    tag = "rulesets",
    params(("workflow" = Option<String>, Query, description = "Only this workflow's rulesets")),
    responses(
        (status = 200, description = "The tenant's rulesets", body = RulesetList),
        (status = 400, description = "The query string cannot be parsed, or `workflow` holds U+0000", body = crate::openapi::ErrorBody),
        (status = 403, description = "Only admins manage rulesets", body = crate::openapi::ErrorBody),
    ),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let Query(p) = params.map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))?;
    // No workflow is named with U+0000, which PostgreSQL's text cannot even hold.
    if p.workflow.as_deref().is_some_and(|w| w.contains('\0')) {
        return Err(ApiError::bad_request(
            "invalid_query",
            "workflow contains the character U+0000",
        ));
    }
    let rows = state
        .store
        .list_rulesets(caller.0.tenant_id.0, p.workflow.as_deref())
        .await?;
    Ok(Json(RulesetList {
        rulesets: rows.into_iter().map(Into::into).collect(),
    })
    .into_response())
}

/// `GET /v1/rulesets/{id}`.
#[utoipa::path(
    get,
    path = "/v1/rulesets/{id}",
    tag = "rulesets",
    params(("id" = uuid::Uuid, Path, description = "Ruleset id")),
    responses(
        (status = 200, description = "The ruleset", body = RulesetOne),
        (status = 403, description = "Only admins manage rulesets", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such ruleset for this tenant", body = crate::openapi::ErrorBody),
    ),
)]
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let row = find(&state, &caller, id).await?;
    Ok(Json(RulesetOne {
        ruleset: row.into(),
    })
    .into_response())
}

/// `POST /v1/rulesets/{id}/validate`: every problem against the workflow's latest version.
#[utoipa::path(
    post,
    path = "/v1/rulesets/{id}/validate",
    tag = "rulesets",
    params(("id" = uuid::Uuid, Path, description = "Ruleset id")),
    responses(
        (status = 200, description = "Whether the ruleset is valid, and every problem", body = Validation),
        (status = 403, description = "Only admins manage rulesets", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such ruleset for this tenant", body = crate::openapi::ErrorBody),
        (status = 422, description = "Its workflow is no longer loaded", body = crate::openapi::ErrorBody),
    ),
)]
async fn validate(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let row = find(&state, &caller, id).await?;
    let validation = Validation::from(check_ruleset(&state, &row).await?);
    Ok(Json(validation).into_response())
}

/// Body of `POST /v1/rulesets/{id}/activate`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct ActivateBody {
    /// Why these rules go live.
    #[schema(min_length = 1, max_length = 4000)]
    comment: String,
}

/// `POST /v1/rulesets/{id}/activate {comment}`: refused (422) when invalid or empty, 409 when
/// not a DRAFT.
#[utoipa::path(
    post,
    path = "/v1/rulesets/{id}/activate",
    tag = "rulesets",
    params(("id" = uuid::Uuid, Path, description = "Ruleset id")),
    request_body = ActivateBody,
    responses(
        (status = 200, description = "The ruleset is ACTIVE; the previous one is RETIRED", body = RulesetOne),
        (status = 400, description = "A bad body or an empty comment", body = crate::openapi::ErrorBody),
        (status = 403, description = "Only admins manage rulesets", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such ruleset for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The ruleset is not a DRAFT", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = crate::openapi::ErrorBody),
        (status = 422, description = "The ruleset is not valid for its workflow, or the body cannot be read", body = crate::openapi::ErrorBody),
    ),
)]
async fn activate(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
    body: Result<Json<ActivateBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let Json(body) =
        body.map_err(|e| ApiError::client(e.status(), "invalid_body", e.body_text()))?;
    let row = find(&state, &caller, id).await?;
    let activated = activate_checked(
        &state,
        caller.0.tenant_id.0,
        &row,
        &caller.0.actor(),
        &body.comment,
    )
    .await?;
    Ok(Json(RulesetOne {
        ruleset: activated.into(),
    })
    .into_response())
}

#[derive(Debug, Deserialize)]
struct DiffParams {
    against: Option<String>,
}

/// `GET /v1/rulesets/{id}/diff[?against=<id>]`: against the given ruleset, else the
/// workflow's ACTIVE one (or the previous version when this one is active).
#[utoipa::path(
    get,
    path = "/v1/rulesets/{id}/diff",
    tag = "rulesets",
    params(
        ("id" = uuid::Uuid, Path, description = "Ruleset id"),
        ("against" = Option<uuid::Uuid>, Query, description = "The ruleset to compare with (default: the workflow's ACTIVE one)"),
    ),
    responses(
        (status = 200, description = "What changed", body = RulesetDiff),
        (status = 400, description = "The query string cannot be parsed", body = crate::openapi::ErrorBody),
        (status = 403, description = "Only admins manage rulesets", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such ruleset for this tenant", body = crate::openapi::ErrorBody),
    ),
)]
async fn diff(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
    params: Result<Query<DiffParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Admin], ACTION)?;
    let Query(p) = params.map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))?;
    let row = find(&state, &caller, id).await?;
    let base = match p.against {
        Some(other) => Some(find(&state, &caller, Ok(Path(other))).await?),
        None => diff_base(&state, caller.0.tenant_id.0, &row).await?,
    };
    let empty = json!({"rules": []});
    let before = base.as_ref().map(|b| &b.spec).unwrap_or(&empty);
    Ok(Json(RulesetDiff {
        ruleset: RulesetVersion::of(&row),
        against: base.as_ref().map(RulesetVersion::with_status),
        diff: case_rules::diff(before, &row.spec),
    })
    .into_response())
}

async fn find(
    state: &AppState,
    caller: &Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<RulesetRow, ApiError> {
    let raw = id.map(|Path(raw)| raw).unwrap_or_default();
    find_ruleset(state, caller.0.tenant_id.0, &raw).await
}
