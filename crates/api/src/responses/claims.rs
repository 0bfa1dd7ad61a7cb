//! A claim on a case's review, and whether one was released.

use chrono::{DateTime, Utc};
use ironclad_store::claims;
use ironclad_store::tenants::Principal;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// A claim on a case's review.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimAnswer {
    /// The case.
    pub case_id: Uuid,
    /// Who holds it.
    pub holder: String,
    /// Their name, as people read it.
    pub holder_name: String,
    /// Since when.
    pub claimed_at: DateTime<Utc>,
    /// Until when, unless renewed.
    pub expires_at: DateTime<Utc>,
    /// Whether the caller holds it.
    pub yours: bool,
    /// What this call did.
    pub change: ClaimChange,
}

impl ClaimAnswer {
    /// `claim` as `who` sees it, after a call that did `change`.
    pub fn new(claim: claims::Claim, change: claims::ClaimChange, who: &Principal) -> Self {
        Self {
            yours: claim.holder == who.actor(),
            case_id: claim.case_id,
            holder: claim.holder,
            holder_name: claim.holder_name,
            claimed_at: claim.claimed_at,
            expires_at: claim.expires_at,
            change: change.into(),
        }
    }
}

/// What a claim call did.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimChange {
    /// Nobody held it (or a claim had expired): it is the caller's now.
    Claimed,
    /// The caller held it already: it lasts longer.
    Renewed,
    /// Someone else held it: the caller took it over.
    TakenOver,
}

impl From<claims::ClaimChange> for ClaimChange {
    fn from(c: claims::ClaimChange) -> Self {
        match c {
            claims::ClaimChange::Claimed => Self::Claimed,
            claims::ClaimChange::Renewed => Self::Renewed,
            claims::ClaimChange::TakenOver => Self::TakenOver,
        }
    }
}

/// Whether a claim was released.
#[derive(Debug, Serialize, ToSchema)]
pub struct Released {
    /// The case.
    pub case_id: Uuid,
    /// False when no claim was live.
    pub released: bool,
}
