//! Notifications: the operator's inbox, and the webhook deliveries each one fans out to.
//!
//! A notification and its deliveries are written in the transaction of the change they
//! announce, so "decided" and "told" can never disagree; the dedup key makes a repeated cause
//! (a rerun, a replay) announce once.

use ironclad_core::notification::{
    DossierResolved, NotificationData, NotificationType, ProcessingFailed,
};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

/// Attempts per webhook delivery before it is DEAD (an admin may requeue it).
pub const WEBHOOK_MAX_ATTEMPTS: i32 = 8;

/// The CTEs `n` (the notification, unless its dedup key exists; `RETURNING id, tenant_id`) and
/// `deliveries` (one PENDING delivery per active endpoint of the tenant), with the statement's
/// placeholders for id, tenant, case, type, dedup key, data and max attempts. Shared by
/// [`NOTIFY`] and the statements that announce as part of a larger write.
macro_rules! notify_ctes {
    ($id:literal, $tenant:literal, $case:literal, $kind:literal, $key:literal, $data:literal, $max:literal) => {
        concat!(
            "n AS (
    INSERT INTO notifications (id, tenant_id, case_id, type, dedup_key, data)
    VALUES (", $id, ", ", $tenant, ", ", $case, ", ", $kind, ", ", $key, ", ", $data, ")
    ON CONFLICT (tenant_id, dedup_key) DO NOTHING
    RETURNING id, tenant_id
), deliveries AS (
    INSERT INTO webhook_deliveries (id, tenant_id, notification_id, endpoint_id, status, max_attempts)
    SELECT gen_random_uuid(), n.tenant_id, n.id, e.id, 'PENDING', ", $max, "
    FROM n JOIN webhook_endpoints e ON e.tenant_id = n.tenant_id AND e.disabled_at IS NULL
)"
        )
    };
}
pub(crate) use notify_ctes;

/// Inserts the notification unless its dedup key exists, and one PENDING delivery per active
/// endpoint of the tenant. Returns the new notification's id (`None`: already announced).
const NOTIFY: &str = concat!(
    "WITH ",
    notify_ctes!("$1", "$2", "$3", "$4", "$5", "$6", "$7"),
    "\nSELECT id FROM n"
);

/// One thing to announce.
#[derive(Debug, Clone)]
pub(crate) struct Announcement {
    pub tenant: Uuid,
    pub case: Option<Uuid>,
    pub kind: NotificationType,
    /// Unique per tenant: the same cause always yields the same key.
    pub dedup_key: String,
    pub data: serde_json::Value,
}

/// Writes the announcement inside the caller's transaction.
pub(crate) async fn announce(
    tx: &mut Transaction<'_, Postgres>,
    a: Announcement,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar(NOTIFY)
        .bind(Uuid::now_v7())
        .bind(a.tenant)
        .bind(a.case)
        .bind(a.kind.as_str())
        .bind(&a.dedup_key)
        .bind(a.data)
        .bind(WEBHOOK_MAX_ATTEMPTS)
        .fetch_optional(&mut **tx)
        .await
}

/// Announces a case that the failure of `job` just moved to FAILED (the caller checked it was
/// not FAILED before): once per such failure, so a case requeued and failing again in the same
/// generation is announced again.
pub(crate) async fn announce_case_failed(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
    job: Uuid,
) -> Result<(), sqlx::Error> {
    type Failed = (Uuid, i32, Option<String>, Option<String>, Option<String>);
    let failed: Option<Failed> = sqlx::query_as(
        "SELECT tenant_id, generation, failure_code, status_reason, external_reference \
             FROM cases WHERE id = $1 AND status = 'FAILED'",
    )
    .bind(case)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some((tenant, generation, code, reason, reference)) = failed {
        announce(
            tx,
            Announcement {
                tenant,
                case: Some(case),
                kind: NotificationType::ProcessingFailed,
                dedup_key: format!("case:{case}:generation:{generation}:failed:{job}"),
                data: ProcessingFailed {
                    case_id: case,
                    external_reference: reference.as_deref(),
                    generation,
                    code: code.as_deref(),
                    reason: reason.as_deref(),
                }
                .to_json(),
            },
        )
        .await?;
    }
    Ok(())
}

/// Announces a case resolved — by a reviewer, a confirming second reviewer or the policy's
/// auto-approval — once per decision version it settles.
pub(crate) async fn announce_resolved(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    resolved: DossierResolved<'_>,
) -> Result<(), sqlx::Error> {
    let case = resolved.case_id;
    announce(
        tx,
        Announcement {
            tenant,
            case: Some(case),
            kind: NotificationType::DossierResolved,
            dedup_key: format!("case:{case}:resolved:{}", resolved.decision_version),
            data: resolved.to_json(),
        },
    )
    .await?;
    Ok(())
}
