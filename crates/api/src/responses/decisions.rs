//! What people do with decisions: the review queue, a resolved review or a proposal held for
//! a second reviewer, a reprocess and a reevaluation.

use chrono::{DateTime, Utc};
use ironclad_core::review::{FourEyesAction, Resolution, ReviewStatus};
use ironclad_core::DecisionStatus;
use ironclad_store::{decisions, reprocess, reviews};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// A review in the queue.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewRow {
    /// The review.
    pub id: Uuid,
    /// The case.
    pub case_id: Uuid,
    /// The case's reference.
    pub external_reference: Option<String>,
    /// The decision it settles.
    pub decision_version: i32,
    /// That decision's status.
    pub decision_status: String,
    /// That decision's summary.
    pub summary: String,
    /// PENDING, AWAITING_SECOND, RESOLVED or CANCELLED.
    pub status: String,
    /// How it was resolved.
    pub resolution: Option<String>,
    /// By whom.
    pub actor: Option<String>,
    /// Their comment.
    pub comment: Option<String>,
    /// When it opened.
    pub created_at: DateTime<Utc>,
    /// When it was resolved.
    pub resolved_at: Option<DateTime<Utc>>,
    /// Seconds waited (until now, or until resolved).
    pub age_seconds: f64,
    /// When it is overdue under its policy's `review_sla` (none without one).
    pub due_at: Option<DateTime<Utc>>,
    /// Open and past `due_at`.
    pub overdue: bool,
    /// Who holds a live claim on it (`user:<id>`…).
    pub claimed_by: Option<String>,
    /// Their name, as people read it.
    pub claimed_by_name: Option<String>,
    /// Until when.
    pub claimed_until: Option<DateTime<Utc>>,
    /// What waits for a second reviewer: APPROVE, OVERRIDE, REJECT or CORRECTION.
    pub proposed_action: Option<String>,
    /// Who proposed it.
    pub proposed_by: Option<String>,
    /// Their name.
    pub proposed_by_name: Option<String>,
    /// Who confirmed a resolution someone else proposed.
    pub confirmed_by: Option<String>,
}

impl From<reviews::ReviewRow> for ReviewRow {
    fn from(r: reviews::ReviewRow) -> Self {
        Self {
            id: r.id,
            case_id: r.case_id,
            external_reference: r.external_reference,
            decision_version: r.decision_version,
            decision_status: r.decision_status,
            summary: r.summary,
            status: r.status,
            resolution: r.resolution,
            actor: r.actor,
            comment: r.comment,
            created_at: r.created_at,
            resolved_at: r.resolved_at,
            age_seconds: r.age_seconds,
            due_at: r.due_at,
            overdue: r.overdue,
            claimed_by: r.claimed_by,
            claimed_by_name: r.claimed_by_name,
            claimed_until: r.claimed_until,
            proposed_action: r.proposed_action,
            proposed_by: r.proposed_by,
            proposed_by_name: r.proposed_by_name,
            confirmed_by: r.confirmed_by,
        }
    }
}

/// A page of the review queue.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewPage {
    /// Oldest first.
    pub reviews: Vec<ReviewRow>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// A resolved review (`POST /v1/cases/{id}/reviews`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewAnswer {
    /// The review.
    pub review_id: Uuid,
    /// The case, now RESOLVED.
    pub case_id: Uuid,
    /// Always `RESOLVED`.
    pub status: String,
    /// How it was resolved.
    pub resolution: Resolution,
    /// The decision version resolved.
    pub decision_version: i32,
    /// Who resolved it (who proposed it, under four eyes).
    pub actor: String,
    /// The second reviewer who confirmed it, under the policy's `four_eyes`.
    pub confirmed_by: Option<String>,
    /// When.
    pub resolved_at: DateTime<Utc>,
    /// How long the decision waited for a person.
    pub waited_seconds: f64,
}

impl From<&reviews::ReviewResolved> for ReviewAnswer {
    fn from(r: &reviews::ReviewResolved) -> Self {
        Self {
            review_id: r.review_id,
            case_id: r.case_id,
            status: ReviewStatus::Resolved.as_str().to_owned(),
            resolution: r.resolution,
            decision_version: r.decision_version,
            actor: r.actor.clone(),
            confirmed_by: r.confirmed_by.clone(),
            resolved_at: r.resolved_at,
            waited_seconds: (r.resolved_at - r.opened_at).num_milliseconds() as f64 / 1000.0,
        }
    }
}

/// An action held for a second reviewer (202 `AWAITING_SECOND`), or a proposal a second
/// reviewer declined (the review `PENDING` again).
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposalAnswer {
    /// The review.
    pub review_id: Uuid,
    /// The case.
    pub case_id: Uuid,
    /// `AWAITING_SECOND`, or `PENDING` once declined.
    pub status: ReviewStatus,
    /// The decision version it is about.
    pub decision_version: i32,
    /// What was proposed.
    pub proposed: ProposedView,
}

impl ProposalAnswer {
    /// The proposal `p`, its review now in `status`.
    pub fn new(p: &reviews::Proposal, status: ReviewStatus) -> Self {
        Self {
            review_id: p.review_id,
            case_id: p.case_id,
            status,
            decision_version: p.decision_version,
            proposed: ProposedView {
                action: p.action,
                resolution: p.resolution,
                comment: p.comment.clone(),
                correction_id: p.correction_id,
                by: p.proposed_by.clone(),
                by_name: p.proposed_by_name.clone(),
                at: p.proposed_at,
            },
        }
    }
}

/// What a reviewer proposed under four eyes.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposedView {
    /// APPROVE, OVERRIDE, REJECT or CORRECTION.
    pub action: FourEyesAction,
    /// The resolution it records (resolutions only).
    pub resolution: Option<Resolution>,
    /// The proposer's comment (or the correction's reason).
    pub comment: Option<String>,
    /// The correction it applies (corrections only).
    pub correction_id: Option<Uuid>,
    /// Who proposed it.
    pub by: String,
    /// Their name, as people read it.
    pub by_name: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// A second reviewer's answer: the case resolved, or the proposal declined.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SecondAnswer {
    /// A resolution confirmed.
    Resolved(ReviewAnswer),
    /// The proposal declined.
    Declined(ProposalAnswer),
}

/// A decision that was written.
#[derive(Debug, Serialize, ToSchema)]
pub struct WrittenDecision {
    /// Its id.
    pub id: Uuid,
    /// Its version (1, 2, … per case).
    pub version: i32,
    /// What core decided.
    pub status: DecisionStatus,
    /// Whether the policy resolved it without a person.
    pub auto_resolved: bool,
}

impl From<&decisions::WrittenDecision> for WrittenDecision {
    fn from(d: &decisions::WrittenDecision) -> Self {
        Self {
            id: d.id,
            version: d.version,
            status: d.status,
            auto_resolved: d.auto_resolved,
        }
    }
}

/// A new decision version (`POST /v1/cases/{id}/reevaluate`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Reevaluated {
    /// The case.
    pub case_id: Uuid,
    /// The decision written.
    pub decision: WrittenDecision,
}

/// What a reprocess started.
#[derive(Debug, Serialize, ToSchema)]
pub struct Reprocessed {
    /// The case.
    pub case_id: Uuid,
    /// Its new generation.
    pub generation: i32,
    /// Sources being read again, with their new job.
    pub jobs: Vec<ReprocessJob>,
    /// Sources whose previous reading was carried over.
    pub carried_over: Vec<Uuid>,
    /// Old-generation jobs cancelled.
    pub cancelled_jobs: i64,
}

impl From<&reprocess::Reprocessed> for Reprocessed {
    fn from(r: &reprocess::Reprocessed) -> Self {
        Self {
            case_id: r.case_id,
            generation: r.generation,
            jobs: r
                .jobs
                .iter()
                .map(|j| ReprocessJob {
                    source_id: j.source_id,
                    job_id: j.job_id,
                })
                .collect(),
            carried_over: r.carried_over.clone(),
            cancelled_jobs: r.cancelled_jobs,
        }
    }
}

/// One new job.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReprocessJob {
    /// The source.
    pub source_id: Uuid,
    /// Its job in the new generation.
    pub job_id: Uuid,
}
