//! Human review: the queue of decisions awaiting a person, resolving one, and the second
//! reviewer the policy's `four_eyes` asks for.
//!
//! Every action runs under the case lock: the open review, the latest decision version, the
//! claim and the replay record are read after it, so two reviewers at once cannot both win
//! and a stale `expected_decision_version` is always seen as stale.
//!
//! **Four eyes.** When the policy of the decision under review names an action in
//! `four_eyes`, the first reviewer's resolution (or correction, see [`crate::corrections`])
//! does not take effect: the review moves to AWAITING_SECOND with what was proposed and by
//! whom, the proposer's claim ends, and another reviewer confirms it (it takes effect, both
//! names recorded) or declines it (the review is PENDING again). Nobody confirms their own.
//! The policy is read from the decision's frozen snapshot: the rules that decided the version
//! under review are the ones that govern it.

use chrono::{DateTime, Utc};
use ironclad_core::audit::AuditEventType;
use ironclad_core::notification::DossierResolved;
use ironclad_core::review::{
    check_second, FourEyesAction, Resolution, ReviewAction, ReviewStatus, SecondOpinion,
};
use ironclad_core::DecisionStatus;
use serde::Serialize;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::corrections::{self, Corrected};
use crate::decisions::{RulesApplied, CASE_RESOLVE};
use crate::notify::announce_resolved;
use crate::replay::{self, ActionAnswer, ActionError, ActionKey};
use crate::{audit_trail, claims, people, Store, StoreResult};

/// A review request, as the API or CLI received it.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    /// The case.
    pub case: Uuid,
    /// What the reviewer asks.
    pub action: ReviewAction,
    /// The decision version the reviewer looked at.
    pub expected_decision_version: i32,
    /// Why (required for OVERRIDE).
    pub comment: Option<String>,
    /// Who (the key's name).
    pub actor: String,
    /// With which role.
    pub actor_role: String,
}

/// A resolved review.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewResolved {
    /// The review.
    pub review_id: Uuid,
    /// The case, now RESOLVED.
    pub case_id: Uuid,
    /// The decision version resolved.
    pub decision_version: i32,
    /// How.
    pub resolution: Resolution,
    /// By whom (who proposed it, under four eyes).
    pub actor: String,
    /// The second reviewer who confirmed it, under four eyes.
    pub confirmed_by: Option<String>,
    /// When the decision was written (the review opened).
    pub opened_at: DateTime<Utc>,
    /// When it was resolved.
    pub resolved_at: DateTime<Utc>,
}

/// An action waiting for a second reviewer.
#[derive(Debug, Clone, Serialize)]
pub struct Proposal {
    /// The review, AWAITING_SECOND.
    pub review_id: Uuid,
    /// The case.
    pub case_id: Uuid,
    /// The decision version it is about.
    pub decision_version: i32,
    /// What was proposed.
    pub action: FourEyesAction,
    /// The resolution it would record (resolutions only).
    pub resolution: Option<Resolution>,
    /// The proposer's comment.
    pub comment: Option<String>,
    /// The correction it would apply (corrections only).
    pub correction_id: Option<Uuid>,
    /// Who proposed it.
    pub proposed_by: String,
    /// Who proposed it, as people read it.
    pub proposed_by_name: String,
    /// When.
    pub proposed_at: DateTime<Utc>,
}

/// What a review request did.
#[derive(Debug, Clone)]
pub enum ReviewOutcome {
    /// The case is resolved.
    Resolved(ReviewResolved),
    /// The policy's `four_eyes` holds the action for a second reviewer.
    AwaitingSecond(Proposal),
}

/// A second reviewer's answer, as the API or CLI received it.
#[derive(Debug, Clone)]
pub struct SecondRequest {
    /// The case.
    pub case: Uuid,
    /// Confirm or decline.
    pub opinion: SecondOpinion,
    /// The decision version the second reviewer looked at.
    pub expected_decision_version: i32,
    /// Why (kept with the answer).
    pub comment: Option<String>,
    /// Who.
    pub actor: String,
    /// With which role.
    pub actor_role: String,
}

/// What a second reviewer's answer did.
#[derive(Debug, Clone)]
pub enum SecondOutcome {
    /// A proposed resolution was confirmed: the case is resolved.
    Resolved(ReviewResolved),
    /// A proposed correction was confirmed: applied, and the case decided again.
    Corrected(Corrected),
    /// The proposal was declined: the review waits for a person again.
    Declined(Proposal),
}

/// A review in the queue.
#[derive(Debug, Clone, sqlx::FromRow)]
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

/// Which claims a queue listing keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimFilter {
    /// Reviews whatever their claim.
    Any,
    /// Reviews this actor holds a live claim on.
    HeldBy(String),
    /// Reviews nobody holds a live claim on.
    Unclaimed,
}

/// What a queue listing shows.
#[derive(Debug, Clone)]
pub struct ReviewQuery {
    /// Reviews in any of these statuses.
    pub statuses: Vec<ReviewStatus>,
    /// Which claims.
    pub claim: ClaimFilter,
    /// Only reviews past their SLA.
    pub overdue_only: bool,
    /// Keyset cursor: after this (created_at, id).
    pub after: Option<(DateTime<Utc>, Uuid)>,
    /// Rows at most.
    pub limit: i64,
}

/// The case's open review (PENDING or AWAITING_SECOND), with what the decision's policy says
/// and the latest decision version.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct OpenReview {
    pub id: Uuid,
    pub status: String,
    pub decision_version: i32,
    pub decision_status: String,
    pub created_at: DateTime<Utc>,
    pub proposed_action: Option<String>,
    pub proposed_resolution: Option<String>,
    pub proposed_comment: Option<String>,
    pub correction_id: Option<Uuid>,
    pub proposed_by: Option<String>,
    pub proposed_by_name: Option<String>,
    pub proposed_role: Option<String>,
    pub proposed_at: Option<DateTime<Utc>>,
    pub latest: Option<i32>,
    pub four_eyes: serde_json::Value,
    /// The case's `external_reference`, which every notification about it carries.
    pub external_reference: Option<String>,
}

impl OpenReview {
    /// Whether the policy of the decision under review holds `action` for a second reviewer.
    pub(crate) fn needs_second(&self, action: FourEyesAction) -> bool {
        serde_json::from_value::<Vec<FourEyesAction>>(self.four_eyes.clone())
            .unwrap_or_default()
            .contains(&action)
    }

    fn proposal(&self, case: Uuid) -> Option<Proposal> {
        let action = match (&self.proposed_action, self.correction_id) {
            (_, Some(_)) => FourEyesAction::Correction,
            (Some(a), None) => a.parse::<ReviewAction>().ok()?.into(),
            (None, None) => return None,
        };
        Some(Proposal {
            review_id: self.id,
            case_id: case,
            decision_version: self.decision_version,
            action,
            resolution: self
                .proposed_resolution
                .as_deref()
                .and_then(|r| r.parse().ok()),
            comment: self.proposed_comment.clone(),
            correction_id: self.correction_id,
            proposed_by: self.proposed_by.clone()?,
            proposed_by_name: self.proposed_by_name.clone().unwrap_or_default(),
            proposed_at: self.proposed_at?,
        })
    }
}

const OPEN_FOR_CASE: &str = r#"
SELECT r.id, r.status, r.decision_version, r.decision_status, r.created_at,
       r.proposed_action, r.proposed_resolution, r.proposed_comment, r.correction_id,
       r.proposed_by,
       r.proposed_by_name, r.proposed_role, r.proposed_at,
       (SELECT max(version) FROM decisions WHERE case_id = r.case_id) AS latest,
       coalesce(d.evidence #> '{rules,policy,four_eyes}', '[]'::jsonb) AS four_eyes,
       (SELECT external_reference FROM cases WHERE id = r.case_id) AS external_reference
FROM reviews r JOIN decisions d ON d.id = r.decision_id
WHERE r.case_id = $1 AND r.status IN ('PENDING', 'AWAITING_SECOND')
"#;

const LATEST_DECISION: &str = r#"
SELECT json_build_object('version', version, 'status', status, 'summary', summary,
                         'created_at', created_at)
FROM decisions WHERE case_id = $1 ORDER BY version DESC LIMIT 1
"#;

/// $1 review, $2 resolution, $3 actor, $4 role, $5 comment, $6 the second reviewer (or NULL).
const REVIEW_RESOLVE: &str = r#"
UPDATE reviews SET status = 'RESOLVED', resolution = $2, actor = $3, actor_role = $4,
    comment = $5, resolved_at = now(), confirmed_by = $6,
    confirmed_at = CASE WHEN $6::text IS NULL THEN NULL ELSE now() END
WHERE id = $1 AND status IN ('PENDING', 'AWAITING_SECOND')
RETURNING resolved_at
"#;

/// Holds a resolution ($2 action, $3 resolution, $4 comment) or a correction ($5) for a
/// second reviewer; $6 who, $7 their name, $8 their role. $1 review.
const REVIEW_PROPOSE: &str = r#"
UPDATE reviews SET status = 'AWAITING_SECOND', proposed_action = $2, proposed_resolution = $3,
    proposed_comment = $4, correction_id = $5, proposed_by = $6, proposed_by_name = $7,
    proposed_role = $8, proposed_at = now()
WHERE id = $1 AND status = 'PENDING'
RETURNING proposed_at
"#;

/// A declined proposal: the review waits for a person again.
const REVIEW_REOPEN: &str = r#"
UPDATE reviews SET status = 'PENDING', proposed_action = NULL, proposed_resolution = NULL,
    proposed_comment = NULL, correction_id = NULL, proposed_by = NULL, proposed_by_name = NULL,
    proposed_role = NULL, proposed_at = NULL
WHERE id = $1 AND status = 'AWAITING_SECOND'
"#;

/// $1 tenant, $2 statuses, $3/$4 cursor, $5 limit, $6 claim filter (`any`, `held`,
/// `unclaimed`), $7 the holder for `held`, $8 overdue only.
const REVIEWS_LIST: &str = r#"
SELECT r.id, r.case_id, c.external_reference, r.decision_version, r.decision_status, d.summary,
       r.status, r.resolution, r.actor, r.comment, r.created_at, r.resolved_at,
       extract(epoch FROM coalesce(r.resolved_at, now()) - r.created_at)::float8 AS age_seconds,
       r.due_at,
       (r.status IN ('PENDING', 'AWAITING_SECOND') AND coalesce(r.due_at < now(), false))
           AS overdue,
       k.holder AS claimed_by, k.holder_name AS claimed_by_name, k.expires_at AS claimed_until,
       CASE WHEN r.correction_id IS NOT NULL THEN 'CORRECTION' ELSE r.proposed_action END
           AS proposed_action,
       r.proposed_by, r.proposed_by_name, r.confirmed_by
FROM reviews r JOIN cases c ON c.id = r.case_id JOIN decisions d ON d.id = r.decision_id
LEFT JOIN review_claims k ON k.case_id = r.case_id AND k.expires_at > now()
    AND r.status IN ('PENDING', 'AWAITING_SECOND')
WHERE r.tenant_id = $1 AND r.status = ANY($2)
  AND ($3::timestamptz IS NULL OR (r.created_at, r.id) > ($3, $4))
  AND CASE $6 WHEN 'held' THEN k.holder = $7 WHEN 'unclaimed' THEN k.holder IS NULL ELSE true END
  AND (NOT $8 OR (r.status IN ('PENDING', 'AWAITING_SECOND') AND r.due_at < now()))
ORDER BY r.created_at, r.id
LIMIT $5
"#;

const OLDEST_PENDING: &str = r#"
SELECT extract(epoch FROM now() - min(created_at))::float8 FROM reviews WHERE status = 'PENDING'
"#;

/// The case's open review, if any (under the caller's case lock).
pub(crate) async fn open_review(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
) -> Result<Option<OpenReview>, sqlx::Error> {
    sqlx::query_as(OPEN_FOR_CASE)
        .bind(case)
        .fetch_optional(&mut **tx)
        .await
}

/// The current decision, for a conflict's `details.current`.
pub(crate) async fn current_decision(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
) -> Result<serde_json::Value, sqlx::Error> {
    let current: Option<serde_json::Value> = sqlx::query_scalar(LATEST_DECISION)
        .bind(case)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(current.unwrap_or(serde_json::Value::Null))
}

/// The refusal of an action while something waits for a second reviewer.
fn waiting_for_second(open: &OpenReview, current: serde_json::Value) -> ActionError {
    let what = open
        .correction_id
        .map(|_| "a correction".to_owned())
        .or_else(|| open.proposed_action.as_ref().cloned())
        .unwrap_or_else(|| "an action".to_owned());
    ActionError::Conflict {
        message: format!(
            "decision version {} waits for a second reviewer: {} proposed {what}; \
             confirm or decline it first",
            open.decision_version,
            open.proposed_by_name.as_deref().unwrap_or("someone"),
        ),
        current,
    }
}

/// `Some(conflict)` when the case's open review waits for a second reviewer (nothing else
/// may change the case meanwhile but a reprocess).
pub(crate) async fn awaiting_second(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
) -> Result<Option<ActionError>, sqlx::Error> {
    match open_review(tx, case).await? {
        Some(open) if open.status == ReviewStatus::AwaitingSecond.as_str() => {
            let current = current_decision(tx, case).await?;
            Ok(Some(waiting_for_second(&open, current)))
        }
        _ => Ok(None),
    }
}

/// The case's open review, checked for an action that needs it PENDING on
/// `expected_version`, the latest: a conflict otherwise, naming what is in the way.
pub(crate) async fn pending_on(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
    case_status: &str,
    expected_version: i32,
) -> Result<OpenReview, ActionError> {
    let open = open_review(tx, case).await?;
    let current = current_decision(tx, case).await?;
    let Some(open) = open else {
        return Err(ActionError::Conflict {
            message: format!("nothing awaits review on this case (it is {case_status})"),
            current,
        });
    };
    if expected_version != open.decision_version || open.latest != Some(open.decision_version) {
        return Err(ActionError::Conflict {
            message: format!(
                "decision version {expected_version} is not the current one ({}); look at the \
                 newer decision",
                open.latest.unwrap_or(open.decision_version)
            ),
            current,
        });
    }
    if open.status == ReviewStatus::AwaitingSecond.as_str() {
        return Err(waiting_for_second(&open, current));
    }
    Ok(open)
}

/// Holds `action` on the review for a second reviewer (the proposer's claim ends, so anyone
/// else may take it up). Audited as `event`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn propose(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    case: Uuid,
    open: &OpenReview,
    action: FourEyesAction,
    resolution: Option<Resolution>,
    comment: Option<&str>,
    correction: Option<Uuid>,
    actor: &str,
    actor_role: &str,
) -> Result<Proposal, ActionError> {
    let name = people::name_of(&mut **tx, tenant, actor).await?;
    let review_action = match action {
        FourEyesAction::Correction => None,
        other => Some(other.as_str()),
    };
    let proposed_at: Option<DateTime<Utc>> = sqlx::query_scalar(REVIEW_PROPOSE)
        .bind(open.id)
        .bind(review_action)
        .bind(resolution.map(Resolution::as_str))
        .bind(comment)
        .bind(correction)
        .bind(crate::storable(actor).as_ref())
        .bind(&name)
        .bind(actor_role)
        .fetch_optional(&mut **tx)
        .await?;
    let proposed_at = proposed_at.ok_or_else(|| ActionError::Conflict {
        message: "the review changed meanwhile; look again".into(),
        current: serde_json::Value::Null,
    })?;
    claims::end_claim(tx, case).await?;
    let event = if correction.is_some() {
        AuditEventType::CorrectionProposed
    } else {
        AuditEventType::ResolutionProposed
    };
    audit_trail::record(
        tx,
        tenant,
        Some(case),
        actor,
        event,
        serde_json::json!({
            "review_id": open.id, "decision_version": open.decision_version,
            "action": action, "resolution": resolution, "comment": comment,
            "correction_id": correction, "proposed_by_name": name, "actor_role": actor_role,
            "awaiting": "a second reviewer",
        }),
    )
    .await?;
    Ok(Proposal {
        review_id: open.id,
        case_id: case,
        decision_version: open.decision_version,
        action,
        resolution,
        comment: comment.map(str::to_owned),
        correction_id: correction,
        proposed_by: actor.to_owned(),
        proposed_by_name: name,
        proposed_at,
    })
}

/// Resolves the review as `resolution` by `actor` (confirmed by `second`, under four eyes):
/// the review, the case, the notification, the audit event and the claim, in the caller's
/// transaction.
#[allow(clippy::too_many_arguments)]
async fn resolve(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    case: Uuid,
    open: &OpenReview,
    action: ReviewAction,
    resolution: Resolution,
    comment: Option<&str>,
    actor: &str,
    actor_role: &str,
    second: Option<&str>,
) -> Result<ReviewResolved, ActionError> {
    let resolved_at: Option<DateTime<Utc>> = sqlx::query_scalar(REVIEW_RESOLVE)
        .bind(open.id)
        .bind(resolution.as_str())
        .bind(actor)
        .bind(actor_role)
        .bind(comment)
        .bind(second)
        .fetch_optional(&mut **tx)
        .await?;
    let resolved_at = resolved_at.ok_or_else(|| ActionError::Conflict {
        message: "the review changed meanwhile; look again".into(),
        current: serde_json::Value::Null,
    })?;
    sqlx::query(CASE_RESOLVE)
        .bind(case)
        .bind(resolution.as_str())
        .bind(actor)
        .execute(&mut **tx)
        .await?;
    claims::end_claim(tx, case).await?;
    let version = open.decision_version;
    announce_resolved(
        tx,
        tenant,
        DossierResolved {
            case_id: case,
            external_reference: open.external_reference.as_deref(),
            decision_version: version,
            resolution,
            actor,
            confirmed_by: second,
        },
    )
    .await?;
    audit_trail::record(
        tx,
        tenant,
        Some(case),
        actor,
        AuditEventType::ReviewResolved,
        serde_json::json!({
            "review_id": open.id, "decision_version": version, "action": action,
            "resolution": resolution, "comment": comment, "actor_role": actor_role,
            "confirmed_by": second,
        }),
    )
    .await?;
    Ok(ReviewResolved {
        review_id: open.id,
        case_id: case,
        decision_version: version,
        resolution,
        actor: actor.to_owned(),
        confirmed_by: second.map(str::to_owned),
        opened_at: open.created_at,
        resolved_at,
    })
}

impl Store {
    /// Resolves the case's pending review, or holds the resolution for a second reviewer
    /// when the decision's policy says so (see the module doc). `respond` turns the outcome
    /// into the body stored for replays and returned (200 resolved, 202 held).
    pub async fn resolve_review(
        &self,
        key: &ActionKey,
        req: &ReviewRequest,
        respond: impl FnOnce(&ReviewOutcome) -> serde_json::Value,
    ) -> Result<ActionAnswer, ActionError> {
        let mut tx = self.pool().begin().await?;
        let (status, _) = replay::lock_case(&mut tx, key.tenant, req.case).await?;
        if let Some(answer) = replay::replayed(&mut tx, key).await? {
            return Ok(answer);
        }
        claims::check_claim(&mut tx, req.case, &req.actor).await?;
        let open = pending_on(&mut tx, req.case, &status, req.expected_decision_version).await?;
        let decision_status: DecisionStatus = open
            .decision_status
            .parse()
            .map_err(|e: ironclad_core::UnknownVariant| ActionError::Refused(e.to_string()))?;
        let resolution = req
            .action
            .resolve(decision_status, req.comment.as_deref())
            .map_err(|e| ActionError::Refused(e.to_string()))?;
        let comment = req
            .comment
            .as_deref()
            .map(|c| crate::storable(c).into_owned());
        let (outcome, http) = if open.needs_second(req.action.into()) {
            let proposal = propose(
                &mut tx,
                key.tenant,
                req.case,
                &open,
                req.action.into(),
                Some(resolution),
                comment.as_deref(),
                None,
                &req.actor,
                &req.actor_role,
            )
            .await?;
            (ReviewOutcome::AwaitingSecond(proposal), 202)
        } else {
            let resolved = resolve(
                &mut tx,
                key.tenant,
                req.case,
                &open,
                req.action,
                resolution,
                comment.as_deref(),
                &req.actor,
                &req.actor_role,
                None,
            )
            .await?;
            (ReviewOutcome::Resolved(resolved), 200)
        };
        replay::commit_answer(tx, key, http, respond(&outcome)).await
    }

    /// A second reviewer's answer to what waits on the case (see the module doc). Confirming
    /// a correction applies it and decides the case again under `rules` (the rules of the
    /// decision it was proposed on). `respond` turns the outcome into the body stored for
    /// replays and returned (200, or 201 for an applied correction).
    pub async fn second_opinion(
        &self,
        key: &ActionKey,
        req: &SecondRequest,
        rules: &RulesApplied<'_>,
        respond: impl FnOnce(&SecondOutcome) -> serde_json::Value,
    ) -> Result<ActionAnswer, ActionError> {
        let mut tx = self.pool().begin().await?;
        let (status, generation) = replay::lock_case(&mut tx, key.tenant, req.case).await?;
        if let Some(answer) = replay::replayed(&mut tx, key).await? {
            return Ok(answer);
        }
        claims::check_claim(&mut tx, req.case, &req.actor).await?;
        let open = open_review(&mut tx, req.case).await?;
        let current = current_decision(&mut tx, req.case).await?;
        let Some(open) = open.filter(|o| o.status == ReviewStatus::AwaitingSecond.as_str()) else {
            return Err(ActionError::Conflict {
                message: format!(
                    "nothing waits for a second reviewer on this case (it is {status})"
                ),
                current,
            });
        };
        if req.expected_decision_version != open.decision_version
            || open.latest != Some(open.decision_version)
        {
            return Err(ActionError::Conflict {
                message: format!(
                    "decision version {} is not the current one ({}); look at the newer decision",
                    req.expected_decision_version,
                    open.latest.unwrap_or(open.decision_version)
                ),
                current,
            });
        }
        let proposal = open
            .proposal(req.case)
            .ok_or_else(|| ActionError::Conflict {
                message: "the proposal on this case cannot be read; decline it and act again"
                    .into(),
                current: current.clone(),
            })?;
        check_second(proposal.action, &proposal.proposed_by, &req.actor)
            .map_err(|e| ActionError::Forbidden(e.to_string()))?;
        let second_name = people::name_of(&mut *tx, key.tenant, &req.actor).await?;
        let comment = req
            .comment
            .as_deref()
            .map(|c| crate::storable(c).into_owned());
        let event = match req.opinion {
            SecondOpinion::Confirm => AuditEventType::SecondConfirmed,
            SecondOpinion::Decline => AuditEventType::SecondDeclined,
        };
        audit_trail::record(
            &mut tx,
            key.tenant,
            Some(req.case),
            &req.actor,
            event,
            serde_json::json!({
                "review_id": open.id, "decision_version": open.decision_version,
                "action": proposal.action, "proposed_by": proposal.proposed_by,
                "proposed_by_name": proposal.proposed_by_name, "second_name": second_name,
                "correction_id": proposal.correction_id, "comment": comment,
                "actor_role": req.actor_role,
            }),
        )
        .await?;
        let (outcome, http) = match (req.opinion, proposal.correction_id) {
            (SecondOpinion::Decline, correction) => {
                sqlx::query(REVIEW_REOPEN)
                    .bind(open.id)
                    .execute(&mut *tx)
                    .await?;
                if let Some(id) = correction {
                    corrections::decline(&mut tx, id, &req.actor, &second_name, comment.as_deref())
                        .await?;
                }
                (SecondOutcome::Declined(proposal), 200)
            }
            (SecondOpinion::Confirm, Some(correction)) => {
                let corrected = corrections::apply(
                    &mut tx,
                    key.tenant,
                    req.case,
                    generation,
                    correction,
                    open.decision_version,
                    rules,
                    Some((&req.actor, &second_name, comment.as_deref())),
                )
                .await?;
                (SecondOutcome::Corrected(corrected), 201)
            }
            (SecondOpinion::Confirm, None) => {
                let action: ReviewAction = open
                    .proposed_action
                    .as_deref()
                    .and_then(|a| a.parse().ok())
                    .ok_or_else(|| ActionError::Refused("the proposal names no action".into()))?;
                let decision_status: DecisionStatus =
                    open.decision_status
                        .parse()
                        .map_err(|e: ironclad_core::UnknownVariant| {
                            ActionError::Refused(e.to_string())
                        })?;
                let resolution = action
                    .resolve(decision_status, proposal.comment.as_deref())
                    .map_err(|e| ActionError::Refused(e.to_string()))?;
                let resolved = resolve(
                    &mut tx,
                    key.tenant,
                    req.case,
                    &open,
                    action,
                    resolution,
                    proposal.comment.as_deref(),
                    &proposal.proposed_by,
                    open.proposed_role.as_deref().unwrap_or("reviewer"),
                    Some(&req.actor),
                )
                .await?;
                (SecondOutcome::Resolved(resolved), 200)
            }
        };
        replay::commit_answer(tx, key, http, respond(&outcome)).await
    }

    /// A tenant's reviews as `query` asks, oldest first, after the keyset cursor.
    pub async fn list_reviews(
        &self,
        tenant: Uuid,
        query: &ReviewQuery,
    ) -> StoreResult<Vec<ReviewRow>> {
        let statuses: Vec<&str> = query.statuses.iter().map(|s| s.as_str()).collect();
        let (filter, holder) = match &query.claim {
            ClaimFilter::Any => ("any", None),
            ClaimFilter::HeldBy(actor) => ("held", Some(actor.as_str())),
            ClaimFilter::Unclaimed => ("unclaimed", None),
        };
        Ok(sqlx::query_as(REVIEWS_LIST)
            .bind(tenant)
            .bind(&statuses)
            .bind(query.after.map(|a| a.0))
            .bind(query.after.map(|a| a.1))
            .bind(query.limit)
            .bind(filter)
            .bind(holder)
            .bind(query.overdue_only)
            .fetch_all(self.pool())
            .await?)
    }

    /// Seconds the oldest pending review has waited (all tenants), if any waits.
    pub async fn oldest_pending_review_secs(&self) -> StoreResult<Option<f64>> {
        Ok(sqlx::query_scalar(OLDEST_PENDING)
            .fetch_one(self.pool())
            .await?)
    }
}

/// Where a case's review stands, for the case page: what waits (and for whom), whether it is
/// overdue, and who holds its claim.
#[derive(Debug, Clone, Default)]
pub struct ReviewState {
    /// The open review (PENDING or AWAITING_SECOND), if any.
    pub open: Option<OpenReviewView>,
    /// The live claim, if any.
    pub claim: Option<crate::claims::Claim>,
}

/// A case's open review as the desk shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OpenReviewView {
    /// PENDING or AWAITING_SECOND.
    pub status: String,
    /// The decision version it settles.
    pub decision_version: i32,
    /// When it is overdue.
    pub due_at: Option<DateTime<Utc>>,
    /// Past `due_at`.
    pub overdue: bool,
    /// What waits for a second reviewer: APPROVE, OVERRIDE, REJECT or CORRECTION.
    pub proposed_action: Option<String>,
    /// The proposer's comment (a correction's reason).
    pub proposed_comment: Option<String>,
    /// Who proposed it.
    pub proposed_by: Option<String>,
    /// Their name.
    pub proposed_by_name: Option<String>,
    /// When.
    pub proposed_at: Option<DateTime<Utc>>,
    /// The correction waiting: its field.
    pub correction_field: Option<String>,
    /// Its new value (`{"kind", "value"}`).
    pub correction_value: Option<serde_json::Value>,
    /// The value it replaces.
    pub correction_old_value: Option<serde_json::Value>,
}

const REVIEW_STATE: &str = r#"
SELECT r.status, r.decision_version, r.due_at, coalesce(r.due_at < now(), false) AS overdue,
       CASE WHEN r.correction_id IS NOT NULL THEN 'CORRECTION' ELSE r.proposed_action END
           AS proposed_action,
       r.proposed_comment, r.proposed_by, r.proposed_by_name, r.proposed_at,
       k.field AS correction_field, k.new -> 'value' AS correction_value,
       k.old -> 'value' AS correction_old_value
FROM reviews r JOIN cases c ON c.id = r.case_id
LEFT JOIN corrections k ON k.id = r.correction_id
WHERE r.case_id = $1 AND c.tenant_id = $2 AND r.status IN ('PENDING', 'AWAITING_SECOND')
"#;

impl Store {
    /// Where the tenant's case's review stands (see [`ReviewState`]).
    pub async fn review_state(&self, tenant: Uuid, case: Uuid) -> StoreResult<ReviewState> {
        let open: Option<OpenReviewView> = sqlx::query_as(REVIEW_STATE)
            .bind(case)
            .bind(tenant)
            .fetch_optional(self.pool())
            .await?;
        let claim = self.claim_of(tenant, case).await?;
        Ok(ReviewState { open, claim })
    }
}
