//! Webhook endpoints and their delivery log (admins).

use chrono::{DateTime, Utc};
use ironclad_store::webhooks;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// An endpoint as anyone may see it: never its secret.
#[derive(Debug, Serialize, ToSchema)]
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

impl From<webhooks::WebhookEndpoint> for WebhookEndpoint {
    fn from(e: webhooks::WebhookEndpoint) -> Self {
        Self {
            id: e.id,
            url: e.url,
            description: e.description,
            created_by: e.created_by,
            created_at: e.created_at,
            disabled_at: e.disabled_at,
        }
    }
}

/// A new endpoint, with the signing secret: the only time the secret leaves the database.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedWebhook {
    /// The endpoint.
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// The HMAC-SHA256 key of `Ironclad-Signature` (`whsec_` + 64 hex digits).
    pub secret: String,
}

impl From<webhooks::CreatedWebhook> for CreatedWebhook {
    fn from(c: webhooks::CreatedWebhook) -> Self {
        Self {
            endpoint: c.endpoint.into(),
            secret: c.secret,
        }
    }
}

// Every endpoint of the tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookEndpoint>,
}

// An endpoint after `DELETE`, and whether this call is the one that disabled it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Disabled {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// False when it was already disabled.
    pub changed: bool,
}

/// One delivery with its attempts, as the delivery log shows it.
#[derive(Debug, Serialize, ToSchema)]
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
    pub attempt_log: Vec<AttemptView>,
}

impl From<webhooks::DeliveryView> for DeliveryView {
    fn from(d: webhooks::DeliveryView) -> Self {
        Self {
            id: d.id,
            endpoint_id: d.endpoint_id,
            notification_id: d.notification_id,
            event: d.event,
            status: d.status,
            attempts: d.attempts,
            max_attempts: d.max_attempts,
            next_attempt_at: d.next_attempt_at,
            last_error: d.last_error,
            created_at: d.created_at,
            delivered_at: d.delivered_at,
            requeued_by: d.requeued_by,
            requeued_at: d.requeued_at,
            attempt_log: d.attempt_log.into_iter().map(Into::into).collect(),
        }
    }
}

/// One attempt of a delivery, as logged.
#[derive(Debug, Serialize, ToSchema)]
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

impl From<webhooks::AttemptView> for AttemptView {
    fn from(a: webhooks::AttemptView) -> Self {
        Self {
            attempt: a.attempt,
            started_at: a.started_at,
            finished_at: a.finished_at,
            http_status: a.http_status,
            error: a.error,
            response_excerpt: a.response_excerpt,
        }
    }
}

// One page of an endpoint's delivery log.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryLog {
    pub deliveries: Vec<DeliveryView>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}
