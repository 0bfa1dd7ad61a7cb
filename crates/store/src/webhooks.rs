//! Webhook endpoints and their deliveries: the admin's side (create, list, disable, requeue,
//! the delivery log) and the deliverer's (claim, record an attempt, release expired locks).
//!
//! A delivery row is the outbox of one (notification, endpoint) pair, written with the
//! notification (see `notify`). Its id is the `Ironclad-Delivery-Id` of every attempt, so a
//! receiver that dedupes by it sees each event once although delivery is at-least-once.
//!
//! States (`DeliveryStatus`), and who moves them on:
//! - `PENDING`: due at `next_attempt_at`; a deliverer's claim moves it to DELIVERING.
//! - `DELIVERING`: held under `lock_token` until `locked_until`; the holder records the attempt
//!   (→ DELIVERED, PENDING with backoff, or DEAD), or the lock expires and maintenance returns
//!   it to PENDING (or DEAD when its budget is spent), logging the attempt as lost.
//! - `DELIVERED`: terminal; the receiver answered 2xx.
//! - `DEAD`: attempts spent (or the endpoint was disabled); an admin's requeue gives it a fresh
//!   budget under the same id.

use crate::error::StoreError;
use crate::{audit_trail, secs, storable, Store, StoreResult, Transition};
use chrono::{DateTime, Utc};
use ironclad_core::audit::AuditEventType;
use ironclad_core::notification::{DeliveryStatus, NotificationType};
use ironclad_core::webhook_url::WebhookUrl;
use ironclad_core::TenantId;
use rand::Rng;
use serde::Serialize;
use std::time::Duration;
use uuid::Uuid;

/// Longest description of an endpoint.
pub const MAX_DESCRIPTION_LEN: usize = 500;
/// Active endpoints a tenant may have unless configured otherwise
/// (`IRONCLAD_WEBHOOK_MAX_ENDPOINTS`): each one multiplies every notification into a delivery,
/// and each takes its own share of the deliverers' slots.
pub const DEFAULT_MAX_ENDPOINTS: u32 = 20;
/// How much of a receiver's answer is kept as evidence, in bytes.
pub const RESPONSE_EXCERPT_BYTES: usize = 4096;

/// An endpoint as anyone may see it: never its secret.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WebhookEndpoint {
    /// Endpoint id.
    pub id: Uuid,
    /// Where deliveries are POSTed.
    pub url: String,
    /// The admin's note.
    pub description: Option<String>,
    /// Who created it (`api_key:<id>`).
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// When it was disabled (no more deliveries); `None` while active.
    pub disabled_at: Option<DateTime<Utc>>,
}

/// A new endpoint, with the signing secret: the only time the secret leaves the database.
#[derive(Debug, Clone)]
pub struct CreatedWebhook {
    /// The endpoint.
    pub endpoint: WebhookEndpoint,
    /// The HMAC-SHA256 key of `Ironclad-Signature` (`whsec_` + 64 hex digits).
    pub secret: String,
}

/// One attempt of a delivery, as logged.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttemptView {
    /// Attempt number (1-based over the delivery's life; a requeue continues the count).
    pub attempt: i32,
    /// When the request started.
    pub started_at: DateTime<Utc>,
    /// When the answer (or the failure) came.
    pub finished_at: DateTime<Utc>,
    /// The receiver's HTTP status, when it answered.
    pub http_status: Option<i32>,
    /// Why no answer came (timeout, connection refused, deliverer lost), when none did.
    pub error: Option<String>,
    /// The start of the receiver's answer (at most 4 KiB).
    pub response_excerpt: Option<String>,
}

/// One delivery with its attempts, as the delivery log shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryView {
    /// The delivery id (`Ironclad-Delivery-Id` of every attempt).
    pub id: Uuid,
    /// The endpoint it goes to.
    pub endpoint_id: Uuid,
    /// The notification it carries.
    pub notification_id: Uuid,
    /// The notification's type (`Ironclad-Event`).
    pub event: String,
    /// Where it stands.
    pub status: String,
    /// Attempts made (all budgets).
    pub attempts: i32,
    /// Attempts allowed before DEAD (all budgets).
    pub max_attempts: i32,
    /// When the next attempt is due (PENDING).
    pub next_attempt_at: DateTime<Utc>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// When the receiver took it.
    pub delivered_at: Option<DateTime<Utc>>,
    /// Who last requeued it.
    pub requeued_by: Option<String>,
    /// When.
    pub requeued_at: Option<DateTime<Utc>>,
    /// Every attempt, oldest first.
    #[sqlx(skip)]
    pub attempt_log: Vec<AttemptView>,
}

/// What a requeue did.
#[derive(Debug, Clone)]
pub enum RequeueOutcome {
    /// PENDING again with a fresh budget, same id.
    Requeued(Box<DeliveryView>),
    /// No such delivery for this tenant.
    NotFound,
    /// Only DEAD deliveries are requeued; this one is in `status`.
    NotDead(DeliveryStatus),
    /// Its endpoint is disabled; nothing would be sent.
    EndpointDisabled,
}

/// A delivery a deliverer holds: everything needed to send it, and the token that proves the
/// hold when the outcome is written.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    /// Delivery id (`Ironclad-Delivery-Id`).
    pub id: Uuid,
    /// The hold; only a write carrying it applies.
    pub lock_token: Uuid,
    /// This attempt's number.
    pub attempt: i32,
    /// Attempts of the current budget before this one (for the backoff).
    pub attempt_in_budget: i32,
    /// Attempts allowed in all; this attempt failing at the limit makes the delivery DEAD.
    pub max_attempts: i32,
    /// Where to POST.
    pub url: String,
    /// The endpoint's signing secret.
    pub secret: String,
    /// The notification to send.
    pub notification: NotificationPayload,
}

/// The body of a webhook: the notification as `{id, type, created_at, case_id, data}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotificationPayload {
    /// Notification id.
    pub id: Uuid,
    /// What it announces.
    #[serde(rename = "type")]
    pub kind: NotificationType,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// The case, when it concerns one.
    pub case_id: Option<Uuid>,
    /// Type-specific facts.
    pub data: serde_json::Value,
}

/// What one attempt came to, as the deliverer saw it.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    /// When the request started.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: DateTime<Utc>,
    /// The receiver's status, when it answered.
    pub http_status: Option<u16>,
    /// Why no answer came (timeout, refused, …), when none did.
    pub error: Option<String>,
    /// The start of the answer's body (cut to [`RESPONSE_EXCERPT_BYTES`] by the store).
    pub response_excerpt: Option<String>,
    /// Whether the receiver took it (2xx).
    pub delivered: bool,
    /// Wait before the next attempt, should this one not be the last.
    pub retry_in: Duration,
}

/// Where an attempt's record left the delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The receiver has it.
    Delivered,
    /// Another attempt is due at this time.
    RetryAt(DateTime<Utc>),
    /// No attempts left (or the endpoint was disabled meanwhile).
    Dead,
    /// Our hold was gone (the lock expired and someone else moved the row on): nothing
    /// written.
    Stale,
}

/// What a maintenance pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryMaintenance {
    /// DELIVERING rows whose lock expired, returned to PENDING.
    pub released: u64,
    /// Of those, the ones whose budget was spent (now DEAD).
    pub released_dead: u64,
    /// PENDING rows of disabled endpoints, made DEAD.
    pub retired: u64,
}

/// How many deliveries may be in flight (DELIVERING under a live lock, all deliverers
/// together) per endpoint and per tenant: what one slow or silent receiver can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlightShare {
    /// Most in flight to one endpoint. At least 1.
    pub per_endpoint: u32,
    /// Most in flight to one tenant's endpoints together. At least 1.
    pub per_tenant: u32,
}

/// Why an endpoint was not created.
#[derive(Debug, thiserror::Error)]
pub enum WebhookCreateError {
    /// The tenant already has `limit` active (not disabled) endpoints.
    #[error("this tenant already has {limit} active webhook endpoints, the most allowed; disable one before adding another")]
    TooManyEndpoints {
        /// The cap (`IRONCLAD_WEBHOOK_MAX_ENDPOINTS`).
        limit: u32,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for WebhookCreateError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(e.into())
    }
}

/// Holds the tenant's row until commit, so that two creations for one tenant count its
/// endpoints one after the other. Taken in its own statement: the count must be read after
/// the lock is granted (a READ COMMITTED statement that waited for a lock still counts from
/// the snapshot it started with). NO KEY UPDATE does not block the KEY SHARE locks that rows
/// referencing the tenant take.
const TENANT_LOCK_FOR_ENDPOINTS: &str = "SELECT id FROM tenants WHERE id = $1 FOR NO KEY UPDATE";

/// Inserts the endpoint only while the tenant has fewer than $7 active endpoints (disabled
/// ones receive nothing and do not count); no row means the cap is reached.
const WEBHOOK_CREATE: &str = r#"
INSERT INTO webhook_endpoints (id, tenant_id, url, description, secret, created_by)
SELECT $1, $2, $3, $4, $5, $6
WHERE (SELECT count(*) FROM webhook_endpoints
       WHERE tenant_id = $2 AND disabled_at IS NULL) < $7
RETURNING id, url, description, created_by, created_at, disabled_at
"#;

const WEBHOOK_LIST: &str = r#"
SELECT id, url, description, created_by, created_at, disabled_at FROM webhook_endpoints
WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC
"#;

const WEBHOOK_GET: &str = r#"
SELECT id, url, description, created_by, created_at, disabled_at FROM webhook_endpoints
WHERE id = $1 AND tenant_id = $2
"#;

/// $1 endpoint, $2 tenant, $3 actor. Guarded: an endpoint is disabled once.
const WEBHOOK_DISABLE: &str = r#"
UPDATE webhook_endpoints SET disabled_at = now(), disabled_by = $3
WHERE id = $1 AND tenant_id = $2 AND disabled_at IS NULL
RETURNING id, url, description, created_by, created_at, disabled_at
"#;

/// PENDING deliveries of disabled endpoints (of one endpoint when $1 is given) become DEAD: a
/// disabled endpoint is sent nothing more. Also run by maintenance, which catches a delivery an
/// announce committed concurrently with the disable, or one whose in-flight attempt failed
/// after it.
const DELIVERY_RETIRE_DISABLED: &str = r#"
UPDATE webhook_deliveries d SET status = 'DEAD', last_error = 'endpoint disabled before delivery'
FROM webhook_endpoints e
WHERE e.id = d.endpoint_id AND e.disabled_at IS NOT NULL AND d.status = 'PENDING'
  AND ($1::uuid IS NULL OR d.endpoint_id = $1)
"#;

/// Claims due deliveries fairly. $1 most to claim, $2 lock token, $3 lock seconds, $4 attempts
/// per budget (the claiming deliverer's setting governs, and at least this attempt is
/// allowed), $5 most in flight per endpoint, $6 most in flight per tenant.
///
/// In flight means DELIVERING under a live lock, whoever holds it. An endpoint or tenant at
/// its share is skipped, so a receiver that never answers holds at most $5 (its tenant at most
/// $6) of the deliverers' slots. The rest is taken in rounds: each tenant's oldest first, then
/// each tenant's second, and within a tenant one per endpoint per round — never the 16 oldest
/// of whoever has the longest backlog.
///
/// Relies on `webhook_deliveries_due_by_endpoint` (one short index range per endpoint) and
/// `webhook_deliveries_locked` (the in-flight counts read only DELIVERING rows). SKIP LOCKED
/// sits inside the per-endpoint pick so that two deliverers claiming at once take disjoint
/// rows rather than the same ones; the status is re-checked on the locked row, so two
/// deliverers never hold the same delivery. Neither sees the other's uncommitted claim, so
/// two claims at the same instant may together exceed a share once; the next claim sees both.
const DELIVERY_CLAIM: &str = r#"
WITH in_flight AS (
    SELECT endpoint_id, tenant_id FROM webhook_deliveries
    WHERE status = 'DELIVERING' AND locked_until > now()
), tenant_free AS (
    SELECT e.tenant_id, $6 - count(f.tenant_id) AS free
    FROM (SELECT DISTINCT tenant_id FROM webhook_endpoints WHERE disabled_at IS NULL) e
    LEFT JOIN in_flight f ON f.tenant_id = e.tenant_id
    GROUP BY e.tenant_id
), endpoint_free AS (
    SELECT e.id, e.tenant_id, least($5 - count(f.endpoint_id), t.free) AS free
    FROM webhook_endpoints e
    JOIN tenant_free t ON t.tenant_id = e.tenant_id AND t.free > 0
    LEFT JOIN in_flight f ON f.endpoint_id = e.id
    WHERE e.disabled_at IS NULL
    GROUP BY e.id, e.tenant_id, t.free
    HAVING least($5 - count(f.endpoint_id), t.free) > 0
), candidates AS (
    SELECT c.id, c.next_attempt_at, s.id AS endpoint_id, s.tenant_id
    FROM endpoint_free s
    CROSS JOIN LATERAL (
        SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.endpoint_id = s.id AND d.status = 'PENDING' AND d.next_attempt_at <= now()
        ORDER BY d.next_attempt_at, d.id
        LIMIT s.free
        FOR UPDATE SKIP LOCKED
    ) c
), by_endpoint AS (
    SELECT id, next_attempt_at, tenant_id,
           row_number() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at, id) AS turn
    FROM candidates
), by_tenant AS (
    SELECT b.id, b.next_attempt_at, t.free,
           row_number() OVER (PARTITION BY b.tenant_id ORDER BY b.turn, b.next_attempt_at, b.id)
               AS round
    FROM by_endpoint b JOIN tenant_free t ON t.tenant_id = b.tenant_id
), picked AS (
    SELECT id FROM by_tenant WHERE round <= free
    ORDER BY round, next_attempt_at, id
    LIMIT $1
), claimed AS (
    UPDATE webhook_deliveries d SET status = 'DELIVERING', lock_token = $2, locked_at = now(),
        locked_until = now() + make_interval(secs => $3), attempts = d.attempts + 1,
        max_attempts = greatest(d.budget_start + $4, d.attempts + 1)
    FROM picked WHERE d.id = picked.id AND d.status = 'PENDING'
    RETURNING d.id, d.notification_id, d.endpoint_id, d.attempts, d.budget_start, d.max_attempts
)
SELECT c.id, c.attempts, c.budget_start, c.max_attempts, e.url, e.secret,
       n.id, n.type, n.created_at, n.case_id, n.data
FROM claimed c
JOIN webhook_endpoints e ON e.id = c.endpoint_id
JOIN notifications n ON n.id = c.notification_id
"#;

/// Writes one attempt and the delivery's next state, only while the hold is ours.
/// $1 delivery, $2 lock token, $3 attempt, $4 started, $5 finished, $6 http status, $7 error,
/// $8 response excerpt, $9 delivered, $10 retry delay seconds, $11 summary for `last_error`.
const DELIVERY_RECORD_ATTEMPT: &str = r#"
WITH moved AS (
    UPDATE webhook_deliveries d SET
        status = CASE WHEN $9 THEN 'DELIVERED'
                      WHEN d.attempts >= d.max_attempts OR e.disabled_at IS NOT NULL THEN 'DEAD'
                      ELSE 'PENDING' END,
        delivered_at = CASE WHEN $9 THEN now() END,
        next_attempt_at = CASE WHEN $9 THEN d.next_attempt_at
                               ELSE now() + make_interval(secs => $10) END,
        last_error = CASE WHEN $9 THEN NULL
                          WHEN e.disabled_at IS NOT NULL THEN $11::text || '; endpoint disabled'
                          ELSE $11::text END,
        lock_token = NULL, locked_until = NULL, locked_at = NULL
    FROM webhook_endpoints e
    WHERE d.id = $1 AND d.status = 'DELIVERING' AND d.lock_token = $2 AND d.attempts = $3
      AND e.id = d.endpoint_id
    RETURNING d.id, d.status, d.next_attempt_at
), logged AS (
    INSERT INTO webhook_attempts (delivery_id, attempt, started_at, finished_at, http_status,
                                  error, response_excerpt)
    SELECT id, $3, $4, $5, $6, $7, $8 FROM moved
)
SELECT status, next_attempt_at FROM moved
"#;

/// DELIVERING rows whose lock expired (their deliverer died or stalled) return to PENDING, due
/// now, or become DEAD when their budget is spent; the lost attempt is logged for them.
/// Batched and SKIP LOCKED so that two maintainers never fight over rows.
const DELIVERY_RELEASE_EXPIRED: &str = r#"
WITH expired AS (
    SELECT id, locked_at FROM webhook_deliveries
    WHERE status = 'DELIVERING' AND locked_until < now()
    ORDER BY locked_until LIMIT 500
    FOR UPDATE SKIP LOCKED
), released AS (
    UPDATE webhook_deliveries d SET
        status = CASE WHEN d.attempts >= d.max_attempts THEN 'DEAD' ELSE 'PENDING' END,
        next_attempt_at = now(),
        last_error = 'deliverer lost during the attempt (lock expired); outcome unknown',
        lock_token = NULL, locked_until = NULL, locked_at = NULL
    FROM expired WHERE d.id = expired.id AND d.status = 'DELIVERING'
    RETURNING d.id, d.attempts, d.status, expired.locked_at
), logged AS (
    INSERT INTO webhook_attempts (delivery_id, attempt, started_at, finished_at, error)
    SELECT id, attempts, least(locked_at, now()), now(),
           'deliverer lost during the attempt (lock expired); outcome unknown'
    FROM released
    ON CONFLICT (delivery_id, attempt) DO NOTHING
)
SELECT status FROM released
"#;

/// A DEAD delivery becomes PENDING with a budget as large as its last one, keeping its id
/// and its attempt count (so attempt numbers in the log stay unique). $1 delivery, $2 tenant,
/// $3 actor.
/// What a requeue sets on a DEAD delivery (`$ACTOR` is the statement's actor parameter): due
/// now, with a fresh budget of as many attempts as its last one.
macro_rules! requeue_set {
    ($actor:literal) => {
        concat!(
            "SET status = 'PENDING', budget_start = d.attempts, ",
            "max_attempts = d.attempts + greatest(d.max_attempts - d.budget_start, 1), ",
            "next_attempt_at = now(), requeued_by = ",
            $actor,
            ", requeued_at = now() "
        )
    };
}

const DELIVERY_REQUEUE: &str = concat!(
    "UPDATE webhook_deliveries d ",
    requeue_set!("$3"),
    "FROM webhook_endpoints e
WHERE d.id = $1 AND d.tenant_id = $2 AND d.status = 'DEAD'
  AND e.id = d.endpoint_id AND e.disabled_at IS NULL
RETURNING d.id"
);

/// Every DEAD delivery of an enabled endpoint, all tenants, requeued by $1, each with its audit
/// event ($2 the event type) in its tenant's trail. Answers how many.
const DELIVERY_REQUEUE_ALL_DEAD: &str = concat!(
    "WITH requeued AS (UPDATE webhook_deliveries d ",
    requeue_set!("$1"),
    "FROM webhook_endpoints e
    WHERE d.status = 'DEAD' AND e.id = d.endpoint_id AND e.disabled_at IS NULL
    RETURNING d.id, d.tenant_id, d.endpoint_id, d.notification_id, d.attempts, d.max_attempts
), audited AS (
    INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
    SELECT n.case_id, r.tenant_id, $1, $2,
           jsonb_build_object('delivery_id', r.id, 'endpoint_id', r.endpoint_id,
                              'notification_id', r.notification_id, 'attempts', r.attempts,
                              'max_attempts', r.max_attempts)
    FROM requeued r JOIN notifications n ON n.id = r.notification_id
)
SELECT count(*) FROM requeued"
);

/// Why a requeue did not apply ($1 delivery, $2 tenant).
const DELIVERY_REQUEUE_REFUSAL: &str = r#"
SELECT d.status, e.disabled_at IS NOT NULL FROM webhook_deliveries d
JOIN webhook_endpoints e ON e.id = d.endpoint_id
WHERE d.id = $1 AND d.tenant_id = $2
"#;

/// One delivery (already known to be the caller's).
const DELIVERY_GET: &str = "SELECT d.id, d.endpoint_id, d.notification_id, n.type AS event, \
     d.status, d.attempts, d.max_attempts, d.next_attempt_at, d.last_error, d.created_at, \
     d.delivered_at, d.requeued_by, d.requeued_at \
     FROM webhook_deliveries d JOIN notifications n ON n.id = d.notification_id WHERE d.id = $1";

/// One endpoint's deliveries, newest first, after the cursor. Relies on
/// `webhook_deliveries_by_endpoint`.
const DELIVERY_LOG_BY_ENDPOINT: &str = "SELECT d.id, d.endpoint_id, d.notification_id, \
     n.type AS event, d.status, d.attempts, d.max_attempts, d.next_attempt_at, d.last_error, \
     d.created_at, d.delivered_at, d.requeued_by, d.requeued_at \
     FROM webhook_deliveries d JOIN notifications n ON n.id = d.notification_id \
     WHERE d.endpoint_id = $1 AND d.tenant_id = $2 \
       AND ($3::timestamptz IS NULL OR (d.created_at, d.id) < ($3, $4)) \
     ORDER BY d.created_at DESC, d.id DESC LIMIT $5";

/// One notification's deliveries (one per endpoint).
const DELIVERY_LOG_BY_NOTIFICATION: &str = "SELECT d.id, d.endpoint_id, d.notification_id, \
     n.type AS event, d.status, d.attempts, d.max_attempts, d.next_attempt_at, d.last_error, \
     d.created_at, d.delivered_at, d.requeued_by, d.requeued_at \
     FROM webhook_deliveries d JOIN notifications n ON n.id = d.notification_id \
     WHERE d.notification_id = $1 AND d.tenant_id = $2 ORDER BY d.created_at, d.id";

const DELIVERY_ATTEMPTS: &str = "SELECT delivery_id, attempt, started_at, finished_at, \
     http_status, error, response_excerpt FROM webhook_attempts \
     WHERE delivery_id = ANY($1) ORDER BY delivery_id, attempt";

/// A fresh signing secret: `whsec_` + 32 random bytes in hex.
fn new_secret() -> String {
    let bytes: [u8; 32] = rand::rng().random();
    format!("whsec_{}", hex::encode(bytes))
}

/// `text` cut to at most `max` bytes on a character boundary.
fn truncate_utf8(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

type ClaimRow = (
    Uuid,
    i32,
    i32,
    i32,
    String,
    String,
    Uuid,
    String,
    DateTime<Utc>,
    Option<Uuid>,
    serde_json::Value,
);

impl Store {
    /// Creates an endpoint for `tenant` and returns it with its secret (shown once), unless
    /// the tenant already has `max_endpoints` active ones. Audited as WEBHOOK_CREATED by
    /// `actor`, in the same transaction.
    pub async fn webhook_create(
        &self,
        tenant: TenantId,
        url: &WebhookUrl,
        description: Option<&str>,
        actor: &str,
        max_endpoints: u32,
    ) -> Result<CreatedWebhook, WebhookCreateError> {
        let mut tx = self.pool().begin().await?;
        let created =
            webhook_create_in(&mut tx, tenant, url, description, actor, max_endpoints).await?;
        tx.commit().await?;
        Ok(created)
    }

    /// The tenant's endpoints, newest first, disabled ones included.
    pub async fn webhook_list(&self, tenant: TenantId) -> StoreResult<Vec<WebhookEndpoint>> {
        Ok(sqlx::query_as(WEBHOOK_LIST)
            .bind(tenant.0)
            .fetch_all(self.pool())
            .await?)
    }

    /// One endpoint of the tenant; `None` for unknown and foreign ids alike.
    pub async fn webhook_get(
        &self,
        tenant: TenantId,
        id: Uuid,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        Ok(sqlx::query_as(WEBHOOK_GET)
            .bind(id)
            .bind(tenant.0)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Disables an endpoint: nothing more is sent to it and its PENDING deliveries become
    /// DEAD, audited as WEBHOOK_DISABLED — one transaction. `Stale` when it was already
    /// disabled (nothing changed); `None` for unknown and foreign ids.
    pub async fn webhook_disable(
        &self,
        tenant: TenantId,
        id: Uuid,
        actor: &str,
    ) -> StoreResult<Option<(WebhookEndpoint, Transition)>> {
        let mut tx = self.pool().begin().await?;
        let disabled: Option<WebhookEndpoint> = sqlx::query_as(WEBHOOK_DISABLE)
            .bind(id)
            .bind(tenant.0)
            .bind(storable(actor).as_ref())
            .fetch_optional(&mut *tx)
            .await?;
        let Some(endpoint) = disabled else {
            drop(tx);
            return Ok(self
                .webhook_get(tenant, id)
                .await?
                .map(|e| (e, Transition::Stale)));
        };
        let retired = sqlx::query(DELIVERY_RETIRE_DISABLED)
            .bind(Some(id))
            .execute(&mut *tx)
            .await?
            .rows_affected();
        audit_trail::record(
            &mut tx,
            tenant.0,
            None,
            actor,
            AuditEventType::WebhookDisabled,
            serde_json::json!({
                "endpoint_id": endpoint.id, "url": endpoint.url, "pending_deliveries_dropped": retired,
            }),
        )
        .await?;
        tx.commit().await?;
        Ok(Some((endpoint, Transition::Applied)))
    }

    /// Requeues a DEAD delivery of `tenant` with a fresh budget, keeping its id; audited as
    /// WEBHOOK_REQUEUED in the same transaction.
    pub async fn webhook_requeue(
        &self,
        tenant: TenantId,
        delivery: Uuid,
        actor: &str,
    ) -> StoreResult<RequeueOutcome> {
        let mut tx = self.pool().begin().await?;
        let requeued: Option<Uuid> = sqlx::query_scalar(DELIVERY_REQUEUE)
            .bind(delivery)
            .bind(tenant.0)
            .bind(storable(actor).as_ref())
            .fetch_optional(&mut *tx)
            .await?;
        if requeued.is_none() {
            let refusal: Option<(String, bool)> = sqlx::query_as(DELIVERY_REQUEUE_REFUSAL)
                .bind(delivery)
                .bind(tenant.0)
                .fetch_optional(&mut *tx)
                .await?;
            return Ok(match refusal {
                None => RequeueOutcome::NotFound,
                Some((_, true)) => RequeueOutcome::EndpointDisabled,
                Some((status, false)) => RequeueOutcome::NotDead(status.parse()?),
            });
        }
        let mut view: DeliveryView = sqlx::query_as(DELIVERY_GET)
            .bind(delivery)
            .fetch_one(&mut *tx)
            .await?;
        let case: Option<Uuid> =
            sqlx::query_scalar("SELECT case_id FROM notifications WHERE id = $1")
                .bind(view.notification_id)
                .fetch_one(&mut *tx)
                .await?;
        audit_trail::record(
            &mut tx,
            tenant.0,
            case,
            actor,
            AuditEventType::WebhookRequeued,
            serde_json::json!({
                "delivery_id": view.id, "endpoint_id": view.endpoint_id,
                "notification_id": view.notification_id, "attempts": view.attempts,
                "max_attempts": view.max_attempts,
            }),
        )
        .await?;
        tx.commit().await?;
        self.attach_attempts(std::slice::from_mut(&mut view))
            .await?;
        Ok(RequeueOutcome::Requeued(Box::new(view)))
    }

    /// Requeues every DEAD delivery of an enabled endpoint, of every tenant (`ironclad requeue
    /// --dead`), each audited as `actor`; answers how many. Deliveries of disabled endpoints
    /// stay DEAD.
    pub async fn webhook_requeue_all_dead(&self, actor: &str) -> StoreResult<u64> {
        let requeued: i64 = sqlx::query_scalar(DELIVERY_REQUEUE_ALL_DEAD)
            .bind(storable(actor).as_ref())
            .bind(AuditEventType::WebhookRequeued.as_str())
            .fetch_one(self.pool())
            .await?;
        Ok(u64::try_from(requeued).unwrap_or(0))
    }

    /// One endpoint's deliveries with their attempts, newest first; pass the last one's
    /// `(created_at, id)` as `cursor` to continue. `None` when the endpoint is not the
    /// tenant's.
    pub async fn webhook_delivery_log(
        &self,
        tenant: TenantId,
        endpoint: Uuid,
        cursor: Option<(DateTime<Utc>, Uuid)>,
        limit: i64,
    ) -> StoreResult<Option<Vec<DeliveryView>>> {
        if self.webhook_get(tenant, endpoint).await?.is_none() {
            return Ok(None);
        }
        let mut log: Vec<DeliveryView> = sqlx::query_as(DELIVERY_LOG_BY_ENDPOINT)
            .bind(endpoint)
            .bind(tenant.0)
            .bind(cursor.map(|c| c.0))
            .bind(cursor.map(|c| c.1))
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        self.attach_attempts(&mut log).await?;
        Ok(Some(log))
    }

    /// One notification's deliveries (one per endpoint) with their attempts.
    pub async fn webhook_deliveries_of_notification(
        &self,
        tenant: TenantId,
        notification: Uuid,
    ) -> StoreResult<Vec<DeliveryView>> {
        let mut log: Vec<DeliveryView> = sqlx::query_as(DELIVERY_LOG_BY_NOTIFICATION)
            .bind(notification)
            .bind(tenant.0)
            .fetch_all(self.pool())
            .await?;
        self.attach_attempts(&mut log).await?;
        Ok(log)
    }

    /// Fills each delivery's attempt log (one query for all).
    async fn attach_attempts(&self, deliveries: &mut [DeliveryView]) -> StoreResult<()> {
        if deliveries.is_empty() {
            return Ok(());
        }
        let ids: Vec<Uuid> = deliveries.iter().map(|d| d.id).collect();
        type Row = (
            Uuid,
            i32,
            DateTime<Utc>,
            DateTime<Utc>,
            Option<i32>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = sqlx::query_as(DELIVERY_ATTEMPTS)
            .bind(&ids)
            .fetch_all(self.pool())
            .await?;
        for (delivery, attempt, started_at, finished_at, http_status, error, excerpt) in rows {
            if let Some(d) = deliveries.iter_mut().find(|d| d.id == delivery) {
                d.attempt_log.push(AttemptView {
                    attempt,
                    started_at,
                    finished_at,
                    http_status,
                    error,
                    response_excerpt: excerpt,
                });
            }
        }
        Ok(())
    }

    /// Claims up to `limit` due deliveries for `lock` under one fresh token, fairly: no
    /// endpoint or tenant beyond its `share` of deliveries in flight, and the rest taken one per
    /// tenant and endpoint per round (see `DELIVERY_CLAIM`). `max_attempts` is the attempts
    /// allowed per budget.
    pub async fn webhook_claim_due(
        &self,
        limit: i64,
        lock: Duration,
        max_attempts: i32,
        share: InFlightShare,
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        let token = Uuid::new_v4();
        let rows: Vec<ClaimRow> = sqlx::query_as(DELIVERY_CLAIM)
            .bind(limit)
            .bind(token)
            .bind(secs(lock))
            .bind(max_attempts.max(1))
            .bind(i64::from(share.per_endpoint.max(1)))
            .bind(i64::from(share.per_tenant.max(1)))
            .fetch_all(self.pool())
            .await?;
        rows.into_iter()
            .map(
                |(id, attempt, budget_start, max, url, secret, n_id, kind, at, case, data)| {
                    Ok(ClaimedDelivery {
                        id,
                        lock_token: token,
                        attempt,
                        attempt_in_budget: attempt - budget_start,
                        max_attempts: max,
                        url,
                        secret,
                        notification: NotificationPayload {
                            id: n_id,
                            kind: kind.parse()?,
                            created_at: at,
                            case_id: case,
                            data,
                        },
                    })
                },
            )
            .collect::<Result<_, StoreError>>()
    }

    /// Writes an attempt and the delivery's next state in one statement, guarded by the lock
    /// token and attempt number: a holder whose lock expired writes nothing (`Stale`).
    pub async fn webhook_record_attempt(
        &self,
        claimed: &ClaimedDelivery,
        record: &AttemptRecord,
    ) -> StoreResult<AttemptOutcome> {
        let summary = match (&record.error, record.http_status) {
            (Some(error), _) => error.clone(),
            (None, Some(status)) => format!("receiver answered HTTP {status}"),
            (None, None) => "no answer".to_owned(),
        };
        let excerpt = record
            .response_excerpt
            .as_deref()
            .map(|e| storable(truncate_utf8(e, RESPONSE_EXCERPT_BYTES)).into_owned())
            // Replacing NULs may lengthen the text: cut again.
            .map(|e| truncate_utf8(&e, RESPONSE_EXCERPT_BYTES).to_owned());
        let row: Option<(String, DateTime<Utc>)> = sqlx::query_as(DELIVERY_RECORD_ATTEMPT)
            .bind(claimed.id)
            .bind(claimed.lock_token)
            .bind(claimed.attempt)
            .bind(record.started_at)
            .bind(record.finished_at.max(record.started_at))
            .bind(record.http_status.map(i32::from))
            .bind(record.error.as_deref().map(|e| storable(e).into_owned()))
            .bind(excerpt)
            .bind(record.delivered)
            .bind(secs(record.retry_in))
            .bind(storable(&summary).as_ref())
            .fetch_optional(self.pool())
            .await?;
        Ok(match row {
            None => AttemptOutcome::Stale,
            Some((status, at)) => match status.parse::<DeliveryStatus>()? {
                DeliveryStatus::Delivered => AttemptOutcome::Delivered,
                DeliveryStatus::Dead => AttemptOutcome::Dead,
                DeliveryStatus::Pending => AttemptOutcome::RetryAt(at),
                DeliveryStatus::Delivering => {
                    return Err(StoreError::Corrupt(format!(
                        "delivery {} still DELIVERING after its attempt was recorded",
                        claimed.id
                    )))
                }
            },
        })
    }

    /// Releases DELIVERING rows whose lock expired (logging each lost attempt) and retires
    /// PENDING rows of disabled endpoints.
    pub async fn webhook_maintain(&self) -> StoreResult<DeliveryMaintenance> {
        let statuses: Vec<String> = sqlx::query_scalar(DELIVERY_RELEASE_EXPIRED)
            .fetch_all(self.pool())
            .await?;
        let retired = sqlx::query(DELIVERY_RETIRE_DISABLED)
            .bind(None::<Uuid>)
            .execute(self.pool())
            .await?
            .rows_affected();
        Ok(DeliveryMaintenance {
            released: statuses.len() as u64,
            released_dead: statuses.iter().filter(|s| s.as_str() == "DEAD").count() as u64,
            retired,
        })
    }
}

/// [`Store::webhook_create`] inside `tx` (a desk form creates the endpoint in its own
/// transaction).
pub(crate) async fn webhook_create_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    tenant: TenantId,
    url: &WebhookUrl,
    description: Option<&str>,
    actor: &str,
    max_endpoints: u32,
) -> Result<CreatedWebhook, WebhookCreateError> {
    let secret = new_secret();
    let description = description.map(|d| storable(d).into_owned());
    sqlx::query(TENANT_LOCK_FOR_ENDPOINTS)
        .bind(tenant.0)
        .execute(&mut **tx)
        .await?;
    let endpoint: Option<WebhookEndpoint> = sqlx::query_as(WEBHOOK_CREATE)
        .bind(Uuid::now_v7())
        .bind(tenant.0)
        .bind(url.as_str())
        .bind(description.as_deref())
        .bind(&secret)
        .bind(storable(actor).as_ref())
        .bind(i64::from(max_endpoints))
        .fetch_optional(&mut **tx)
        .await?;
    let Some(endpoint) = endpoint else {
        return Err(WebhookCreateError::TooManyEndpoints {
            limit: max_endpoints,
        });
    };
    audit_trail::record(
        tx,
        tenant.0,
        None,
        actor,
        AuditEventType::WebhookCreated,
        serde_json::json!({"endpoint_id": endpoint.id, "url": endpoint.url}),
    )
    .await?;
    Ok(CreatedWebhook { endpoint, secret })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_documented_shape() {
        let s = new_secret();
        assert!(s.starts_with("whsec_"));
        assert_eq!(s.len(), 6 + 64);
        assert_ne!(s, new_secret());
    }

    #[test]
    fn excerpts_are_cut_on_character_boundaries() {
        assert_eq!(truncate_utf8("héllo", 2), "h");
        assert_eq!(truncate_utf8("héllo", 3), "hé");
        assert_eq!(truncate_utf8("abc", 10), "abc");
    }
}
