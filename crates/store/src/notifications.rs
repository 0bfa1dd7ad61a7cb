//! The operator's inbox: a tenant's notifications, newest first, and marking them read.
//!
//! Notifications are written by `notify::announce` inside the transaction of the change they
//! announce; [`Store::announce`] is the same write in a transaction of its own, for callers
//! with nothing else to commit (tools, tests).

use crate::notify::{announce, Announcement};
use crate::{storable, Store, StoreResult, Transition};
use chrono::{DateTime, Utc};
use ironclad_core::notification::NotificationType;
use ironclad_core::{CaseId, TenantId};
use uuid::Uuid;

/// A notification as its tenant sees it.
#[derive(Debug, Clone)]
pub struct NotificationView {
    /// Notification id (also the `id` of its webhook payload).
    pub id: Uuid,
    /// What it announces.
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

/// Something to announce, outside any other transaction.
#[derive(Debug, Clone)]
pub struct NewNotification {
    /// Whose inbox.
    pub tenant: TenantId,
    /// The case it concerns, if any.
    pub case: Option<CaseId>,
    /// What it announces.
    pub kind: NotificationType,
    /// Unique per tenant: announcing the same key again does nothing.
    pub dedup_key: String,
    /// Type-specific facts.
    pub data: serde_json::Value,
}

type Row = (
    Uuid,
    String,
    Option<Uuid>,
    serde_json::Value,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

fn view((id, kind, case_id, data, created_at, read_at): Row) -> StoreResult<NotificationView> {
    Ok(NotificationView {
        id,
        kind: kind.parse()?,
        case_id,
        data,
        created_at,
        read_at,
    })
}

/// Newest first, strictly after the cursor; `$2` restricts to unread. Relies on
/// `notifications_by_tenant (tenant_id, created_at DESC, id DESC)`.
const NOTIFICATION_LIST: &str = r#"
SELECT id, type, case_id, data, created_at, read_at FROM notifications
WHERE tenant_id = $1 AND (NOT $2 OR read_at IS NULL)
  AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4))
ORDER BY created_at DESC, id DESC LIMIT $5
"#;

/// Marks read once (guarded by `read_at IS NULL`); an already-read notification comes back
/// unchanged with `changed = false`. Both halves read the statement's snapshot, so exactly one
/// of them yields the row.
const NOTIFICATION_MARK_READ: &str = r#"
WITH marked AS (
    UPDATE notifications SET read_at = now()
    WHERE id = $1 AND tenant_id = $2 AND read_at IS NULL
    RETURNING id, type, case_id, data, created_at, read_at
)
SELECT id, type, case_id, data, created_at, read_at, true FROM marked
UNION ALL
SELECT id, type, case_id, data, created_at, read_at, false FROM notifications
WHERE id = $1 AND tenant_id = $2 AND NOT EXISTS (SELECT 1 FROM marked)
"#;

impl Store {
    /// A page of the tenant's notifications, newest first (only unread ones if
    /// `unread_only`); pass the last one's `(created_at, id)` as `cursor` to continue.
    pub async fn notifications_list(
        &self,
        tenant: TenantId,
        unread_only: bool,
        cursor: Option<(DateTime<Utc>, Uuid)>,
        limit: i64,
    ) -> StoreResult<Vec<NotificationView>> {
        let rows: Vec<Row> = sqlx::query_as(NOTIFICATION_LIST)
            .bind(tenant.0)
            .bind(unread_only)
            .bind(cursor.map(|c| c.0))
            .bind(cursor.map(|c| c.1))
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        rows.into_iter().map(view).collect()
    }

    /// Marks a notification of `tenant` read: `Applied` the first time, `Stale` when it
    /// already was (its first `read_at` is kept); `None` for unknown and foreign ids alike.
    pub async fn notification_mark_read(
        &self,
        tenant: TenantId,
        id: Uuid,
    ) -> StoreResult<Option<(NotificationView, Transition)>> {
        type Marked = (
            Uuid,
            String,
            Option<Uuid>,
            serde_json::Value,
            DateTime<Utc>,
            Option<DateTime<Utc>>,
            bool,
        );
        let row: Option<Marked> = sqlx::query_as(NOTIFICATION_MARK_READ)
            .bind(id)
            .bind(tenant.0)
            .fetch_optional(self.pool())
            .await?;
        row.map(|(id, kind, case, data, created, read, changed)| {
            let transition = if changed {
                Transition::Applied
            } else {
                Transition::Stale
            };
            Ok((view((id, kind, case, data, created, read))?, transition))
        })
        .transpose()
    }

    /// Announces `n` in a transaction of its own: the notification (unless its dedup key is
    /// taken) and one PENDING delivery per active endpoint. Returns the new notification's id,
    /// `None` when the key was already announced.
    pub async fn announce(&self, n: NewNotification) -> StoreResult<Option<Uuid>> {
        let mut tx = self.pool().begin().await?;
        let id = announce(
            &mut tx,
            Announcement {
                tenant: n.tenant.0,
                case: n.case.map(|c| c.0),
                kind: n.kind,
                dedup_key: storable(&n.dedup_key).into_owned(),
                data: n.data,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(id)
    }
}
