//! The admin's ruleset actions the desk shares with the API: validating a ruleset against its
//! workflow, activating it, finding it and what it is compared with.

use crate::error::ApiError;
use crate::responses::rulesets::RuleIssueView;
use crate::state::AppState;
use axum::http::StatusCode;
use ironclad_core::rules::{CompiledRuleset, RuleIssue};
use ironclad_documents::rules as case_rules;
use ironclad_store::rulesets::{ActivationError, RulesetRow};
use serde_json::json;
use uuid::Uuid;

/// Validates `row` against its workflow's latest version: `Err` only when the workflow cannot
/// be found (the API's 422 `unknown_workflow`).
pub(crate) async fn check_ruleset(
    state: &AppState,
    row: &RulesetRow,
) -> Result<Result<CompiledRuleset, Vec<RuleIssue>>, ApiError> {
    let yaml = latest_workflow_yaml(state, &row.workflow).await?;
    Ok(case_rules::validate_for_yaml(
        state.compiler.as_ref(),
        &yaml,
        &row.spec,
    ))
}

/// Activates `row` with `comment` after checking both: the one path the API and the desk
/// share. 400 for a missing comment, 422 for invalid rules, 409 when not a DRAFT.
pub(crate) async fn activate_checked(
    state: &AppState,
    tenant: Uuid,
    row: &RulesetRow,
    actor: &str,
    comment: &str,
) -> Result<RulesetRow, ApiError> {
    // U+0000 too: PostgreSQL's text cannot hold it.
    if comment.trim().is_empty() || comment.chars().count() > 4000 || comment.contains('\0') {
        return Err(ApiError::bad_request(
            "invalid_body",
            "comment is required (1 to 4000 characters, no U+0000): say why these rules go live",
        ));
    }
    if let Err(issues) = check_ruleset(state, row).await? {
        return Err(ApiError::client(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_ruleset",
            "the ruleset is not valid for its workflow; fix it in a new version",
        )
        .with_details(json!({
            "issues": issues.iter().map(RuleIssueView::from).collect::<Vec<_>>()
        })));
    }
    state
        .store
        .activate_ruleset(tenant, row.id, actor, comment)
        .await
        .map_err(|e| match e {
            ActivationError::NotFound => ApiError::not_found(),
            ActivationError::NotDraft(status) => ApiError::client(
                StatusCode::CONFLICT,
                "not_draft",
                format!("ruleset is {status}; only a DRAFT can be activated"),
            ),
            ActivationError::Store(e) => e.into(),
        })
}

/// The ruleset `row` is compared with by default: the workflow's ACTIVE one, or the previous
/// version when `row` is active; `None` for a first version.
pub(crate) async fn diff_base(
    state: &AppState,
    tenant: Uuid,
    row: &RulesetRow,
) -> Result<Option<RulesetRow>, ApiError> {
    Ok(state.store.default_diff_base(tenant, row).await?)
}

/// The tenant's ruleset `raw_id`; a malformed id is 404 like an unknown one.
pub(crate) async fn find_ruleset(
    state: &AppState,
    tenant: Uuid,
    raw_id: &str,
) -> Result<RulesetRow, ApiError> {
    let id: Uuid = raw_id.parse().map_err(|_| ApiError::not_found())?;
    state
        .store
        .get_ruleset(tenant, id)
        .await?
        .ok_or_else(ApiError::not_found)
}

pub(crate) async fn latest_workflow_yaml(state: &AppState, name: &str) -> Result<String, ApiError> {
    // No workflow is named with U+0000, and PostgreSQL's text cannot hold it (the query would
    // fail as a 500).
    let found = if name.contains('\0') {
        None
    } else {
        state.store.latest_workflow(name).await?
    };
    found.map(|w| w.source_yaml).ok_or_else(|| {
        ApiError::client(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_workflow",
            format!("no workflow named {name:?} is loaded"),
        )
    })
}
