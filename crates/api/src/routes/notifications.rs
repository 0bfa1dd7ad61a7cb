//! `/v1/notifications`: the tenant's inbox (any role), newest first, and marking one read.
//!
//! Another tenant's notification, an unknown id and a malformed id all get the same 404.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::cases::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
use crate::state::AppState;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use ironclad_store::notifications::NotificationView;
use ironclad_store::read::{decode_cursor, encode_cursor};
use ironclad_store::Transition;
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

/// The inbox routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/notifications", get(list))
        .route("/v1/notifications/{id}/read", post(mark_read))
}

/// Query of the listing, as text so each mistake gets its own 400.
#[derive(Debug, Deserialize)]
struct ListParams {
    unread: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// One page of the inbox.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct NotificationPage {
    notifications: Vec<NotificationView>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

/// `limit` of a listing: 1..=[`MAX_PAGE_SIZE`], default [`DEFAULT_PAGE_SIZE`].
pub(crate) fn page_size(raw: Option<&str>) -> Result<i64, ApiError> {
    match raw {
        None => Ok(DEFAULT_PAGE_SIZE),
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=MAX_PAGE_SIZE).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_limit",
                    format!("limit must be an integer from 1 to {MAX_PAGE_SIZE}"),
                )
                .with_details(json!({"max": MAX_PAGE_SIZE}))
            }),
    }
}

/// `cursor` of a listing, as this API issued it.
pub(crate) fn page_cursor(
    raw: Option<&str>,
) -> Result<Option<(chrono::DateTime<chrono::Utc>, Uuid)>, ApiError> {
    raw.map(|c| {
        decode_cursor(c).ok_or_else(|| {
            ApiError::bad_request("invalid_cursor", "cursor is not one this API issued")
        })
    })
    .transpose()
}

/// A path id; malformed is "no such thing", exactly like unknown or foreign.
pub(crate) fn path_id(id: Result<Path<String>, PathRejection>) -> Result<Uuid, ApiError> {
    id.ok()
        .and_then(|Path(raw)| raw.parse().ok())
        .ok_or_else(ApiError::not_found)
}

/// `GET /v1/notifications?unread=true&limit=&cursor=`.
#[utoipa::path(
    get,
    path = "/v1/notifications",
    tag = "notifications",
    params(
        ("unread" = Option<bool>, Query, description = "`true`: only unread notifications"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "Page size (default 50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "One page of the inbox, newest first", body = NotificationPage),
        (status = 400, description = "A bad `unread`, `limit` or `cursor`", body = crate::openapi::ErrorBody),
    ),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<NotificationPage>, ApiError> {
    let Query(params) = params.map_err(|_| {
        ApiError::bad_request("invalid_query", "the query string could not be parsed")
    })?;
    let unread_only = match params.unread.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(
                "invalid_unread",
                format!("unread must be true or false, not {other:?}"),
            ))
        }
    };
    let limit = page_size(params.limit.as_deref())?;
    let cursor = page_cursor(params.cursor.as_deref())?;
    // One row more than asked tells whether another page exists.
    let mut notifications = state
        .store
        .notifications_list(caller.0.tenant_id, unread_only, cursor, limit + 1)
        .await?;
    let next_cursor = if notifications.len() as i64 > limit {
        notifications.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        notifications
            .last()
            .map(|n| encode_cursor(n.created_at, n.id))
    } else {
        None
    };
    Ok(Json(NotificationPage {
        notifications,
        next_cursor,
    }))
}

/// The notification after `POST …/read`, and whether this call is the one that marked it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct MarkedRead {
    #[serde(flatten)]
    notification: NotificationView,
    /// False when it was already read (its first `read_at` is kept).
    changed: bool,
}

/// `POST /v1/notifications/{id}/read`: idempotent; 200 either way.
#[utoipa::path(
    post,
    path = "/v1/notifications/{id}/read",
    tag = "notifications",
    params(("id" = uuid::Uuid, Path, description = "Notification id")),
    responses(
        (status = 200, description = "The notification, read", body = MarkedRead),
        (status = 404, description = "No such notification for this tenant", body = crate::openapi::ErrorBody),
    ),
)]
async fn mark_read(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<MarkedRead>, ApiError> {
    let id = path_id(id)?;
    let (notification, transition) = state
        .store
        .notification_mark_read(caller.0.tenant_id, id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(MarkedRead {
        notification,
        changed: transition == Transition::Applied,
    }))
}
