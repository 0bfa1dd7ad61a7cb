//! The case page's review desk: who is reviewing the case (claim, renew, take over, release)
//! and what waits for a second reviewer (confirm, decline). The page renews its reader's
//! claim every minute while it is open (`assets/ui/review.js`).

use crate::actions::{self, action_key, check_text, form_key, Failure};
use crate::error::ApiError;
use crate::state::AppState;
use crate::ui::case::wording::shown;
use crate::ui::case::{answer_with, Typed};
use crate::ui::cases::when;
use crate::ui::page::{DeskError, DeskForm};
use crate::ui::session::DeskUser;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use ironclad_core::review::{ReviewStatus, SecondOpinion};
use ironclad_core::role::Role;
use ironclad_core::CaseId;
use ironclad_store::reviews::{ReviewState, SecondRequest};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

/// Who holds the case's claim, as the page says it.
pub(crate) struct ClaimView {
    /// "Rita Reviewer" (or "You").
    pub holder: String,
    /// The reader holds it.
    pub mine: bool,
    /// Since when, as people read it.
    pub since: String,
    /// Until when.
    pub until: String,
}

/// What waits for a second reviewer, as the page says it.
pub(crate) struct SecondView {
    /// APPROVE, OVERRIDE, REJECT or CORRECTION.
    pub action: String,
    /// Who proposed it ("you" for the reader).
    pub by: String,
    /// The reader proposed it (and may not confirm it).
    pub mine: bool,
    /// The comment (a correction's reason).
    pub comment: Option<String>,
    /// The correction proposed, if it is one.
    pub correction: Option<ProposedCorrection>,
}

/// A correction waiting for a second reviewer.
pub(crate) struct ProposedCorrection {
    /// The field.
    pub field: String,
    /// Its value now.
    pub old: String,
    /// The value proposed.
    pub new: String,
}

/// The review desk of a case page.
pub(crate) struct ReviewDesk {
    /// The reader may review (reviewer or admin).
    pub reviewer: bool,
    /// The reader may release others' claims.
    pub admin: bool,
    /// The case has an open review.
    pub open: bool,
    /// The decision version under review.
    pub version: i32,
    /// The live claim.
    pub claim: Option<ClaimView>,
    /// What waits for a second reviewer.
    pub second: Option<SecondView>,
    /// "overdue since …" when the review is past its SLA.
    pub overdue: Option<String>,
    /// The reader may resolve or correct: a reviewer, the review PENDING, no one else's claim.
    pub may_act: bool,
    /// The reader may confirm or decline what waits: a reviewer who did not propose it, no
    /// one else's claim.
    pub may_second: bool,
    /// The second-opinion form's own key.
    pub second_key: String,
}

impl ReviewDesk {
    /// The desk for `user` of a case whose review stands as `state`.
    pub(crate) fn of(state: ReviewState, user: &DeskUser) -> Self {
        let me = user.0.principal.actor();
        let role = user.0.principal.role;
        let reviewer = matches!(role, Role::Reviewer | Role::Admin);
        let claim = state.claim.map(|c| ClaimView {
            mine: c.holder == me,
            holder: if c.holder == me {
                "You".to_owned()
            } else {
                c.holder_name
            },
            since: when(c.claimed_at),
            until: c.expires_at.format("%H:%M UTC").to_string(),
        });
        let open = state.open;
        let waiting = open
            .as_ref()
            .is_some_and(|o| o.status == ReviewStatus::AwaitingSecond.as_str());
        let second = open.as_ref().filter(|_| waiting).map(|o| {
            let mine = o.proposed_by.as_deref() == Some(me.as_str());
            SecondView {
                action: o.proposed_action.clone().unwrap_or_default(),
                by: if mine {
                    "you".to_owned()
                } else {
                    o.proposed_by_name.clone().unwrap_or_default()
                },
                mine,
                comment: o.proposed_comment.clone(),
                correction: o.correction_field.as_ref().map(|field| {
                    let value = |v: &Option<serde_json::Value>| {
                        v.as_ref()
                            .filter(|v| !v.is_null())
                            .map(shown)
                            .unwrap_or_else(|| "(nothing)".to_owned())
                    };
                    ProposedCorrection {
                        field: field.clone(),
                        old: value(&o.correction_old_value),
                        new: value(&o.correction_value),
                    }
                }),
            }
        });
        let claimed_by_other = claim.as_ref().is_some_and(|c| !c.mine);
        Self {
            reviewer,
            admin: role == Role::Admin,
            open: open.is_some(),
            version: open.as_ref().map_or(0, |o| o.decision_version),
            overdue: open
                .as_ref()
                .filter(|o| o.overdue)
                .and_then(|o| o.due_at)
                .map(|at| format!("overdue since {}", when(at))),
            may_act: reviewer && open.is_some() && !waiting && !claimed_by_other,
            may_second: reviewer
                && waiting
                && !claimed_by_other
                && second.as_ref().is_some_and(|s| !s.mine),
            claim,
            second,
            second_key: Uuid::new_v4().to_string(),
        }
    }
}

/// What the case page says after one of the review desk's actions (`?done=`); `version` is
/// the decision now shown.
pub(crate) fn notice(done: &str, version: Option<i32>) -> Option<String> {
    let decided = version
        .map(|v| format!(" The case was decided again: decision v{v} below."))
        .unwrap_or_default();
    Some(match done {
        "claimed" => "You are reviewing this case; others see it is yours.".to_owned(),
        "taken-over" => "You took this review over; the timeline says why.".to_owned(),
        "released" => "The review is free for anyone to take.".to_owned(),
        "review-proposed" => {
            "Your resolution waits for a second reviewer to confirm or decline it.".to_owned()
        }
        "correction" => format!("Your correction was saved.{decided}"),
        "correction-proposed" => {
            "Your correction waits for a second reviewer to confirm or decline it.".to_owned()
        }
        "confirmed" => format!("You confirmed it.{decided}"),
        "declined" => "You declined it; the review waits for a person again.".to_owned(),
        _ => return None,
    })
}

#[derive(Debug, Deserialize)]
pub(crate) struct ClaimForm {
    #[serde(default)]
    csrf: String,
    /// `claim`, `release` or `takeover`.
    what: String,
    #[serde(default)]
    reason: String,
}

/// `POST /cases/{id}/claim`: claim (or renew), take over with a reason, or release.
pub(crate) async fn claim(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<ClaimForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let who = &user.0.principal;
    let done = match form.what.as_str() {
        "claim" => {
            actions::claims::claim(&state, who, case.0).await?;
            "claimed"
        }
        "takeover" => {
            actions::claims::take_over(&state, who, case.0, &form.reason).await?;
            "taken-over"
        }
        "release" => {
            actions::claims::release(&state, who, case.0).await?;
            "released"
        }
        _ => {
            return Err(ApiError::bad_request(
                "invalid_form",
                "what must be claim, takeover or release",
            )
            .into())
        }
    };
    Ok(Redirect::to(&format!("/cases/{}?done={done}", case.0)).into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct SecondForm {
    #[serde(default)]
    csrf: String,
    opinion: String,
    expected_decision_version: i32,
    #[serde(default)]
    comment: String,
    #[serde(default)]
    idempotency_key: String,
    /// The last audit event of the page the form was on.
    #[serde(default)]
    seen_event: Option<i64>,
}

/// `POST /cases/{id}/second`: a second reviewer confirms or declines what waits.
pub(crate) async fn second(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<SecondForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    user.require(&[Role::Reviewer, Role::Admin], "confirm reviews")?;
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let opinion: SecondOpinion = form
        .opinion
        .parse()
        .map_err(|_| ApiError::bad_request("invalid_form", "opinion must be CONFIRM or DECLINE"))?;
    let comment = form.comment.trim();
    check_text("comment", Some(comment))?;
    let comment = (!comment.is_empty()).then(|| comment.to_owned());
    let who = &user.0.principal;
    let key = action_key(
        who,
        "second",
        &form_key(&form.idempotency_key)?,
        case.0,
        &json!({"opinion": opinion, "expected_decision_version": form.expected_decision_version,
                "comment": comment}),
    );
    let req = SecondRequest {
        case: case.0,
        opinion,
        expected_decision_version: form.expected_decision_version,
        comment,
        actor: who.actor(),
        actor_role: who.role.as_str().to_owned(),
    };
    match actions::reviews::second_opinion(&state, who.tenant_id.0, &key, &req).await {
        Ok(_) => {
            let done = match opinion {
                SecondOpinion::Confirm => "confirmed",
                SecondOpinion::Decline => "declined",
            };
            Ok(Redirect::to(&format!("/cases/{}?done={done}", case.0)).into_response())
        }
        Err(Failure::Action(e)) => {
            answer_with(&state, &user, &id, form.seen_event, Typed::Desk, e).await
        }
        Err(Failure::Api(e)) => Err(e.into()),
    }
}
