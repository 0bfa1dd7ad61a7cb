//! Resolving a review, and a second reviewer's answer to what four eyes held.

use crate::actions::{corrections, Failure};
use crate::responses::corrections::CorrectionAnswer;
use crate::responses::decisions::{ProposalAnswer, ReviewAnswer, SecondAnswer};
use crate::state::AppState;
use ironclad_core::review::ReviewStatus;
use ironclad_store::replay::{ActionAnswer, ActionError, ActionKey};
use ironclad_store::reviews::{ReviewOutcome, ReviewRequest, SecondOutcome, SecondRequest};
use serde_json::{json, Value};

/// Histogram of how long resolved decisions waited for a person (the fifth pilot measure;
/// the oldest pending wait is a gauge on `/metrics`).
pub const REVIEW_WAIT_SECONDS: &str = "ironclad_review_wait_seconds";

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
            ReviewOutcome::Resolved(r) => json!(ReviewAnswer::from(r)),
            ReviewOutcome::AwaitingSecond(p) => {
                json!(ProposalAnswer::new(p, ReviewStatus::AwaitingSecond))
            }
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
            SecondOutcome::Resolved(r) => json!(SecondAnswer::Resolved(r.into())),
            SecondOutcome::Corrected(c) => json!(CorrectionAnswer::from(c)),
            SecondOutcome::Declined(p) => {
                let declined = ProposalAnswer::new(p, ReviewStatus::Pending);
                json!(SecondAnswer::Declined(declined))
            }
        })
        .await?;
    record_wait(&answer);
    Ok(answer)
}
