//! Claims: who is working on a case's review, so several people can share one queue.
//!
//! A reviewer claims a case awaiting review for a while (the API's default is 15 minutes,
//! renewed while their page is open). Meanwhile others read the case but cannot act on it —
//! resolve, correct, confirm — unless they take the claim over with a reason; an admin may
//! release anyone's. An expired claim is as good as none, so a closed laptop never locks a
//! case for long. Every claim statement runs under the case lock, the order every case
//! transaction takes, so a claim and an action on the same case never interleave. Renewals
//! are not audited (they happen every minute); claiming, taking over and releasing are.

use chrono::{DateTime, Utc};
use ironclad_core::audit::AuditEventType;
use sqlx::{Postgres, Transaction};
use std::time::Duration;
use uuid::Uuid;

use crate::replay::{self, ActionError};
use crate::{audit_trail, people, secs, Store, StoreResult};

/// A live claim.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Claim {
    /// The case.
    pub case_id: Uuid,
    /// Who holds it (`user:<id>`, `api_key:<id>`).
    pub holder: String,
    /// Who holds it, as people read it.
    pub holder_name: String,
    /// Since when it is theirs (a renewal keeps it).
    pub claimed_at: DateTime<Utc>,
    /// Until when, unless renewed.
    pub expires_at: DateTime<Utc>,
}

/// What a claim call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimChange {
    /// Nobody held it (or a claim had expired): it is the caller's now.
    Claimed,
    /// The caller held it already: it lasts longer.
    Renewed,
    /// Someone else held it: the caller took it over.
    TakenOver,
}

/// $1 case: its claim if it is live.
const LIVE_CLAIM: &str = r#"
SELECT case_id, holder, holder_name, claimed_at, expires_at FROM review_claims
WHERE case_id = $1 AND expires_at > now()
"#;

/// Makes $1's claim $3's (named $4) until now + $5 seconds; a claim the holder renews keeps
/// its start. $2 tenant.
const CLAIM_WRITE: &str = r#"
INSERT INTO review_claims (case_id, tenant_id, holder, holder_name, claimed_at, expires_at)
VALUES ($1, $2, $3, $4, now(), now() + make_interval(secs => $5))
ON CONFLICT (case_id) DO UPDATE SET
    holder = EXCLUDED.holder, holder_name = EXCLUDED.holder_name,
    claimed_at = CASE WHEN review_claims.holder = EXCLUDED.holder
                       AND review_claims.expires_at > now()
                      THEN review_claims.claimed_at ELSE now() END,
    expires_at = EXCLUDED.expires_at
RETURNING case_id, holder, holder_name, claimed_at, expires_at
"#;

/// Refuses (`Claimed`) when someone other than `actor` holds a live claim on `case`; run
/// under the case lock by every action a claim guards.
pub(crate) async fn check_claim(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
    actor: &str,
) -> Result<(), ActionError> {
    let claim: Option<Claim> = sqlx::query_as(LIVE_CLAIM)
        .bind(case)
        .fetch_optional(&mut **tx)
        .await?;
    match claim {
        Some(c) if c.holder != actor => Err(ActionError::Claimed {
            holder_name: c.holder_name,
            expires_at: c.expires_at,
        }),
        _ => Ok(()),
    }
}

/// Ends `case`'s claim (the case was resolved, or its holder proposed an action for a second
/// reviewer, who must be free to act).
pub(crate) async fn end_claim(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM review_claims WHERE case_id = $1")
        .bind(case)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Locks the tenant's case and checks it awaits review (a claim is on a review).
async fn lock_awaiting(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    case: Uuid,
) -> Result<(), ActionError> {
    let (status, _) = replay::lock_case(tx, tenant, case).await?;
    if status == "AWAITING_REVIEW" {
        Ok(())
    } else {
        Err(ActionError::Conflict {
            message: format!("only a case awaiting review can be claimed; this one is {status}"),
            current: serde_json::json!({ "status": status }),
        })
    }
}

impl Store {
    /// The live claim on the tenant's case, if any.
    pub async fn claim_of(&self, tenant: Uuid, case: Uuid) -> StoreResult<Option<Claim>> {
        Ok(sqlx::query_as(
            "SELECT c.case_id, c.holder, c.holder_name, c.claimed_at, c.expires_at \
             FROM review_claims c WHERE c.case_id = $1 AND c.tenant_id = $2 \
               AND c.expires_at > now()",
        )
        .bind(case)
        .bind(tenant)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Claims the case's review for `actor` for `ttl`, or renews their claim. Refused
    /// (`Claimed`) while someone else's claim is live; `take_over` with a reason takes it.
    pub async fn claim_review(
        &self,
        tenant: Uuid,
        case: Uuid,
        actor: &str,
        ttl: Duration,
    ) -> Result<(Claim, ClaimChange), ActionError> {
        let mut tx = self.pool().begin().await?;
        lock_awaiting(&mut tx, tenant, case).await?;
        let live: Option<Claim> = sqlx::query_as(LIVE_CLAIM)
            .bind(case)
            .fetch_optional(&mut *tx)
            .await?;
        let change = match &live {
            Some(c) if c.holder == actor => ClaimChange::Renewed,
            Some(c) => {
                return Err(ActionError::Claimed {
                    holder_name: c.holder_name.clone(),
                    expires_at: c.expires_at,
                })
            }
            None => ClaimChange::Claimed,
        };
        let name = people::name_of(&mut *tx, tenant, actor).await?;
        let claim: Claim = sqlx::query_as(CLAIM_WRITE)
            .bind(case)
            .bind(tenant)
            .bind(crate::storable(actor).as_ref())
            .bind(&name)
            .bind(secs(ttl))
            .fetch_one(&mut *tx)
            .await?;
        if change == ClaimChange::Claimed {
            audit_trail::record(
                &mut tx,
                tenant,
                Some(case),
                actor,
                AuditEventType::ReviewClaimed,
                serde_json::json!({"holder_name": name, "expires_at": claim.expires_at}),
            )
            .await?;
        }
        tx.commit().await?;
        Ok((claim, change))
    }

    /// Takes the case's review over from whoever holds it, saying why (audited with both
    /// people); without a live claim it is an ordinary claim.
    pub async fn take_over_review(
        &self,
        tenant: Uuid,
        case: Uuid,
        actor: &str,
        reason: &str,
        ttl: Duration,
    ) -> Result<(Claim, ClaimChange), ActionError> {
        let mut tx = self.pool().begin().await?;
        lock_awaiting(&mut tx, tenant, case).await?;
        let live: Option<Claim> = sqlx::query_as(LIVE_CLAIM)
            .bind(case)
            .fetch_optional(&mut *tx)
            .await?;
        let name = people::name_of(&mut *tx, tenant, actor).await?;
        let claim: Claim = sqlx::query_as(CLAIM_WRITE)
            .bind(case)
            .bind(tenant)
            .bind(crate::storable(actor).as_ref())
            .bind(&name)
            .bind(secs(ttl))
            .fetch_one(&mut *tx)
            .await?;
        let reason = crate::storable(reason).into_owned();
        let change = match live {
            Some(c) if c.holder == actor => ClaimChange::Renewed,
            Some(c) => {
                audit_trail::record(
                    &mut tx,
                    tenant,
                    Some(case),
                    actor,
                    AuditEventType::ReviewTakenOver,
                    serde_json::json!({"from": c.holder, "from_name": c.holder_name,
                                       "holder_name": name, "reason": reason}),
                )
                .await?;
                ClaimChange::TakenOver
            }
            None => {
                audit_trail::record(
                    &mut tx,
                    tenant,
                    Some(case),
                    actor,
                    AuditEventType::ReviewClaimed,
                    serde_json::json!({"holder_name": name, "expires_at": claim.expires_at,
                                       "reason": reason}),
                )
                .await?;
                ClaimChange::Claimed
            }
        };
        tx.commit().await?;
        Ok((claim, change))
    }

    /// Releases the case's live claim: its holder may, and an admin (`may_release_others`)
    /// may release anyone's (audited). `Ok(false)` when no claim was live.
    pub async fn release_review(
        &self,
        tenant: Uuid,
        case: Uuid,
        actor: &str,
        may_release_others: bool,
    ) -> Result<bool, ActionError> {
        let mut tx = self.pool().begin().await?;
        replay::lock_case(&mut tx, tenant, case).await?;
        let live: Option<Claim> = sqlx::query_as(LIVE_CLAIM)
            .bind(case)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(claim) = live else {
            return Ok(false);
        };
        if claim.holder != actor && !may_release_others {
            return Err(ActionError::Forbidden(format!(
                "{} holds this claim; only they or an admin can release it",
                claim.holder_name
            )));
        }
        end_claim(&mut tx, case).await?;
        audit_trail::record(
            &mut tx,
            tenant,
            Some(case),
            actor,
            AuditEventType::ReviewReleased,
            serde_json::json!({"holder": claim.holder, "holder_name": claim.holder_name}),
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}
