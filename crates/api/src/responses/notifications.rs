//! The tenant's inbox: a page of notifications, and one marked read.

use chrono::{DateTime, Utc};
use ironclad_core::notification::NotificationType;
use ironclad_store::notifications;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// A notification as its tenant sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationView {
    /// Notification id (also the `id` of its webhook payload).
    pub id: Uuid,
    /// What it announces.
    #[serde(rename = "type")]
    pub kind: NotificationType,
    /// The case, when it concerns one.
    pub case_id: Option<Uuid>,
    /// Type-specific facts.
    pub data: serde_json::Value,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// When someone of the tenant marked it read; `None` while unread.
    pub read_at: Option<DateTime<Utc>>,
}

impl From<notifications::NotificationView> for NotificationView {
    fn from(n: notifications::NotificationView) -> Self {
        Self {
            id: n.id,
            kind: n.kind,
            case_id: n.case_id,
            data: n.data,
            created_at: n.created_at,
            read_at: n.read_at,
        }
    }
}

/// One page of the inbox.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationPage {
    pub notifications: Vec<NotificationView>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// The notification after `POST …/read`, and whether this call is the one that marked it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MarkedRead {
    #[serde(flatten)]
    pub notification: NotificationView,
    /// False when it was already read (its first `read_at` is kept).
    pub changed: bool,
}
