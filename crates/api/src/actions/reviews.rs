//! Resolving a review, and a second reviewer's answer to what four eyes held.

use crate::actions::{corrections, Failure};
use crate::state::AppState;
use ironclad_store::replay::{ActionAnswer, ActionError, ActionKey};
use ironclad_store::reviews::{
    Proposal, ReviewOutcome, ReviewRequest, ReviewResolved, SecondOutcome, SecondRequest,
};
use serde_json::{json, Value};

/// Histogram of how long resolved decisions waited for a person (the fifth pilot measure;
/// the oldest pending wait is a gauge on `/metrics`).
pub const REVIEW_WAIT_SECONDS: &str = "ironclad_review_wait_seconds";

/// A resolution as the API answers it.
pub(crate) fn resolved_json(r: &ReviewResolved) -> Value {
    json!({
        "review_id": r.review_id, "case_id": r.case_id, "status": "RESOLVED",
        "resolution": r.resolution, "decision_version": r.decision_version,
        "actor": r.actor, "confirmed_by": r.confirmed_by, "resolved_at": r.resolved_at,
        "waited_seconds": (r.resolved_at - r.opened_at).num_milliseconds() as f64 / 1000.0,
    })
}

/// What waits for a second reviewer, as the API answers it.
pub(crate) fn proposal_json(p: &Proposal, status: &str) -> Value {
    json!({
        "review_id": p.review_id, "case_id": p.case_id, "status": status,
        "decision_version": p.decision_version,
        "proposed": {
            "action": p.action, "resolution": p.resolution, "comment": p.comment,
            "correction_id": p.correction_id, "by": p.proposed_by, "by_name": p.proposed_by_name,
            "at": p.proposed_at,
        },
    })
}

/// Records how long a resolved decision waited (first answers only, not replays).
fn record_wait(answer: &ActionAnswer) {
    if answer.replayed || answer.body.get("status").and_then(Value::as_str) != Some("RESOLVED") {
        return;
    }
    if let Some(waited) = answer.body.get("waited_seconds").and_then(Value::as_f64) {
        metrics::histogram!(REVIEW_WAIT_SECONDS).record(waited);
    }
}

/// Resolves the case's review (or holds it for a second reviewer): the one path the API and
/// the desk share. Store refusals are kept as they are, for the desk to show beside its form.
pub(crate) async fn resolve(
    state: &AppState,
    key: &ActionKey,
    req: &ReviewRequest,
) -> Result<ActionAnswer, ActionError> {
    let answer = state
        .store
        .resolve_review(key, req, |outcome| match outcome {
            ReviewOutcome::Resolved(r) => resolved_json(r),
            ReviewOutcome::AwaitingSecond(p) => proposal_json(p, "AWAITING_SECOND"),
        })
        .await?;
    record_wait(&answer);
    Ok(answer)
}

/// A second reviewer confirms or declines what waits on the case. A correction confirmed is
/// applied under the rules of the decision it was proposed on.
pub(crate) async fn second_opinion(
    state: &AppState,
    tenant: uuid::Uuid,
    key: &ActionKey,
    req: &SecondRequest,
) -> Result<ActionAnswer, Failure> {
    if let Some(answer) = state.store.earlier_answer(key).await? {
        return Ok(answer);
    }
    let rules = corrections::latest_rules(state, tenant, req.case).await?;
    let applied = rules.applied();
    let answer = state
        .store
        .second_opinion(key, req, &applied, |outcome| match outcome {
            SecondOutcome::Resolved(r) => resolved_json(r),
            SecondOutcome::Corrected(c) => corrections::corrected_json(c),
            SecondOutcome::Declined(p) => proposal_json(p, "PENDING"),
        })
        .await?;
    record_wait(&answer);
    Ok(answer)
}
