//! Claiming a review so several people can share one queue (see `ironclad_store::claims`):
//! claim or renew, take over with a reason, release (the holder, or an admin).

use crate::actions::{action_error, required_reason};
use crate::error::ApiError;
use crate::state::AppState;
use ironclad_core::role::Role;
use ironclad_store::claims::{Claim, ClaimChange};
use ironclad_store::tenants::Principal;
use uuid::Uuid;

/// Claims the case's review for `who`, or renews their claim (reviewers and admins).
pub(crate) async fn claim(
    state: &AppState,
    who: &Principal,
    case: Uuid,
) -> Result<(Claim, ClaimChange), ApiError> {
    crate::auth::Caller(*who).require(&[Role::Reviewer, Role::Admin], "claim reviews")?;
    state
        .store
        .claim_review(
            who.tenant_id.0,
            case,
            &who.actor(),
            state.config.review_claim,
        )
        .await
        .map_err(action_error)
}

/// Takes the case's review over from whoever holds it, saying why.
pub(crate) async fn take_over(
    state: &AppState,
    who: &Principal,
    case: Uuid,
    reason: &str,
) -> Result<(Claim, ClaimChange), ApiError> {
    crate::auth::Caller(*who).require(&[Role::Reviewer, Role::Admin], "take over reviews")?;
    required_reason(
        "reason",
        reason,
        "say why you take the review over (the holder and the timeline see it)",
    )?;
    state
        .store
        .take_over_review(
            who.tenant_id.0,
            case,
            &who.actor(),
            reason.trim(),
            state.config.review_claim,
        )
        .await
        .map_err(action_error)
}

/// Releases the case's claim: the holder's own, or anyone's for an admin. `false` when no
/// claim was live.
pub(crate) async fn release(
    state: &AppState,
    who: &Principal,
    case: Uuid,
) -> Result<bool, ApiError> {
    crate::auth::Caller(*who).require(&[Role::Reviewer, Role::Admin], "release reviews")?;
    state
        .store
        .release_review(who.tenant_id.0, case, &who.actor(), who.role == Role::Admin)
        .await
        .map_err(action_error)
}
