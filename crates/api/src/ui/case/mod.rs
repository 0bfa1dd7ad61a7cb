//! The case page (see [`view`]), the review and reprocess forms, and the small state answer
//! the page polls to update itself when the decision arrives.
//!
//! A refused action shows its reason beside its form with what was typed kept; "someone
//! else changed this case" is said only when the audit trail shows someone did, naming who
//! and what, since the page was rendered.

mod history;
mod view;
pub(crate) mod wording;

use crate::actions::reviews::resolve as resolve_review;
use crate::actions::{action_error, action_key, check_text, form_key, MAX_COMMENT_CHARS};
use crate::error::ApiError;
use crate::state::AppState;
use crate::ui::claims::ReviewDesk;
use crate::ui::page::{render, DeskError, DeskForm, DeskQuery};
use crate::ui::people::People;
use crate::ui::session::DeskUser;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use ironclad_core::review::ReviewAction;
use ironclad_core::role::Role;
use ironclad_core::CaseId;
use ironclad_store::read::CaseDetail;
use ironclad_store::replay::ActionError;
use ironclad_store::reviews::ReviewRequest;
use serde::Deserialize;
use serde_json::{json, Value};
pub(crate) use view::DocumentItem;
use view::{build, live_state, CasePage, Conflict, Newer};

/// The tenant's case `id`: 404 for an unknown or another tenant's case.
async fn detail(state: &AppState, user: &DeskUser, id: &str) -> Result<CaseDetail, DeskError> {
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    Ok(state
        .store
        .case_detail(Some(user.0.principal.tenant_id), case)
        .await?
        .ok_or_else(ApiError::not_found)?)
}

/// The names of everyone the case's history and decision mention.
async fn people_of(state: &AppState, user: &DeskUser, d: &CaseDetail) -> Result<People, DeskError> {
    let actors = d
        .audit
        .iter()
        .map(|e| e.actor.as_str())
        .chain(d.decision.as_ref().map(|d| d.decided_by.as_str()));
    Ok(People::load(state, user.0.principal.tenant_id, actors).await?)
}

/// Loads the page of case `id` for `user`.
pub(crate) async fn load(
    state: &AppState,
    user: &DeskUser,
    id: &str,
) -> Result<CasePage, DeskError> {
    let d = detail(state, user, id).await?;
    let people = people_of(state, user, &d).await?;
    let case = d.case.id;
    let mut page = build(d, user, &people);
    with_review_desk(state, user, case, &mut page).await?;
    Ok(page)
}

/// Adds who is reviewing the case and what waits for a second reviewer; the review form goes
/// when someone else holds the review or an action waits for a second reviewer.
async fn with_review_desk(
    state: &AppState,
    user: &DeskUser,
    case: uuid::Uuid,
    page: &mut CasePage,
) -> Result<(), DeskError> {
    let review = state
        .store
        .review_state(user.0.principal.tenant_id.0, case)
        .await?;
    page.desk = ReviewDesk::of(review, user);
    if !page.desk.may_act {
        page.review = None;
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
pub(crate) struct ShowParams {
    done: Option<String>,
    /// `<segment>:<field>`: open the correction form for that field.
    correct: Option<String>,
}

/// `GET /cases/{id}` (`?done=review|reprocess` after an action, to say it was done).
pub(crate) async fn show(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskQuery(params): DeskQuery<ShowParams>,
) -> Result<Response, DeskError> {
    let mut page = load(&state, &user, &id).await?;
    page.notice = match params.done.as_deref() {
        Some("review") => Some("Your review was recorded.".to_owned()),
        Some("reprocess") => Some("Every document of the case is being read again.".to_owned()),
        Some(done) => crate::ui::claims::notice(done, page.decision.as_ref().map(|d| d.version)),
        None => None,
    };
    if let Some((segment, field)) = params.correct.as_deref().and_then(|c| c.split_once(':')) {
        page.correction.open_for(&page.documents, segment, field);
    }
    Ok(render(StatusCode::OK, &page))
}

/// `GET /cases/{id}/state`: what the page compares to know the case changed (its status,
/// generation and decision version). The page polls it with the poll header, which does not
/// extend the session's idle time.
pub(crate) async fn live(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
) -> Result<Response, DeskError> {
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let s = state
        .store
        .case_state(user.0.principal.tenant_id, case.0)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let mut response = Json(json!({
        "state": live_state(&s.status, s.generation, s.decision_version),
        "status": s.status,
        "decision_status": s.decision_status,
    }))
    .into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}

/// Which form a refused action came from, and what was typed in it.
pub(crate) enum Typed {
    Review {
        action: String,
        comment: String,
    },
    Reprocess {
        reason: String,
    },
    /// A form of the review desk (a correction, a second opinion): a refusal is said at the
    /// top of the page.
    Desk,
}

/// The case page again after a refused action: a conflict names who changed what since the
/// page the person acted on (`seen` its last event); a refusal says why beside the form,
/// with what was typed kept.
pub(crate) async fn answer_with(
    state: &AppState,
    user: &DeskUser,
    id: &str,
    seen: Option<i64>,
    typed: Typed,
    error: ActionError,
) -> Result<Response, DeskError> {
    let d = detail(state, user, id).await?;
    let people = people_of(state, user, &d).await?;
    let (changes, by_someone_else) = match seen {
        Some(seen) => history::since(&d.audit, seen, &user.0.principal.actor(), &people),
        None => (Vec::new(), false),
    };
    let case = d.case.id;
    let mut page = build(d, user, &people);
    with_review_desk(state, user, case, &mut page).await?;
    let (status, problem) = match error {
        ActionError::Conflict { message, current } => {
            let newer = Some(current).and_then(|c| {
                Some(Newer {
                    version: c.get("version")?.as_i64()?,
                    status: c.get("status")?.as_str()?.to_owned(),
                    summary: c
                        .get("summary")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
            });
            page.conflict = Some(Conflict {
                changes,
                by_someone_else,
                message,
                newer,
                kept_comment: None,
            });
            (StatusCode::CONFLICT, None)
        }
        ActionError::Refused(message) => (StatusCode::UNPROCESSABLE_ENTITY, Some(message)),
        ActionError::Forbidden(message) => (StatusCode::FORBIDDEN, Some(message)),
        claimed @ ActionError::Claimed { .. } => (StatusCode::CONFLICT, Some(claimed.to_string())),
        other => return Err(action_error(other).into()),
    };
    match (typed, page.review.as_mut(), page.reprocess.as_mut()) {
        (Typed::Review { action, comment }, Some(review), _) => {
            review.action = action;
            review.comment = comment;
            review.problem = problem;
        }
        (Typed::Reprocess { reason }, _, Some(reprocess)) if reprocess.allowed => {
            reprocess.reason = reason;
            reprocess.problem = problem;
        }
        // The form is gone (the case moved on): keep what was typed beside the conflict.
        (Typed::Review { comment, .. }, None, _) if page.conflict.is_some() => {
            if let Some(conflict) = page.conflict.as_mut() {
                conflict.kept_comment = Some(comment).filter(|c| !c.trim().is_empty());
            }
        }
        // Not this person's form: say it at the top.
        _ => page.problem = problem,
    }
    Ok(render(status, &page))
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReviewForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
    expected_decision_version: i32,
    #[serde(default)]
    comment: String,
    #[serde(default)]
    idempotency_key: String,
    /// The last audit event of the page the form was on (absent from an older page).
    #[serde(default)]
    seen_event: Option<i64>,
}

/// `POST /cases/{id}/review` (reviewers and admins).
pub(crate) async fn review(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<ReviewForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    user.require(&[Role::Reviewer, Role::Admin], "resolve reviews")?;
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let comment = form.comment.trim();
    check_text("comment", Some(comment))?;
    let typed = Typed::Review {
        action: form.action.clone(),
        comment: form.comment.clone(),
    };
    let action: ReviewAction = match form.action.parse() {
        Ok(action) => action,
        Err(_) => {
            let refused = ActionError::Refused(
                "Choose how to resolve the decision: approve, override or reject.".into(),
            );
            return answer_with(&state, &user, &id, form.seen_event, typed, refused).await;
        }
    };
    let comment = (!comment.is_empty()).then(|| comment.to_owned());
    let key = action_key(
        &user.0.principal,
        "review",
        &form_key(&form.idempotency_key)?,
        case.0,
        &json!({"action": action, "comment": comment,
                "expected_decision_version": form.expected_decision_version}),
    );
    let req = ReviewRequest {
        case: case.0,
        action,
        expected_decision_version: form.expected_decision_version,
        comment,
        actor: user.0.principal.actor(),
        actor_role: user.0.principal.role.as_str().to_owned(),
    };
    match resolve_review(&state, &key, &req).await {
        Ok(answer) => {
            // Held for a second reviewer (four eyes) says so.
            let done = if answer.status == 202 {
                "review-proposed"
            } else {
                "review"
            };
            Ok(Redirect::to(&format!("/cases/{}?done={done}#main", case.0)).into_response())
        }
        Err(e) => answer_with(&state, &user, &id, form.seen_event, typed, e).await,
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReprocessForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    idempotency_key: String,
    /// The last audit event of the page the form was on (absent from an older page).
    #[serde(default)]
    seen_event: Option<i64>,
}

/// `POST /cases/{id}/reprocess` (operators, reviewers and admins; which cases each may read
/// again is decided under the case's lock, see `ironclad_store::reprocess::may_reprocess`).
pub(crate) async fn reprocess(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<ReprocessForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let reason = form.reason.trim();
    check_text("reason", Some(reason))?;
    let typed = Typed::Reprocess {
        reason: form.reason.clone(),
    };
    if reason.is_empty() {
        let refused = ActionError::Refused(format!(
            "Say why the case is read again (1 to {MAX_COMMENT_CHARS} characters)."
        ));
        return answer_with(&state, &user, &id, form.seen_event, typed, refused).await;
    }
    let key = form_key(&form.idempotency_key)?;
    let reprocessed =
        crate::actions::reprocess::reprocess(&state, &user.0.principal, &key, case.0, None, reason)
            .await?;
    match reprocessed {
        Ok(_) => {
            Ok(Redirect::to(&format!("/cases/{}?done=reprocess#main", case.0)).into_response())
        }
        Err(e) => answer_with(&state, &user, &id, form.seen_event, typed, e).await,
    }
}
