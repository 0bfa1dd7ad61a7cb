//! `/v1/notifications`: the tenant's inbox (any role), newest first, and marking one read.
//!
//! Another tenant's notification, an unknown id and a malformed id all get the same 404.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::paging::Paging;
use crate::responses::notifications::{MarkedRead, NotificationPage};
use crate::state::AppState;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use ironclad_store::Transition;
use serde::Deserialize;
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
    paging: Paging,
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
    let notifications = state
        .store
        .notifications_list(
            caller.0.tenant_id,
            unread_only,
            paging.after,
            paging.fetch(),
        )
        .await?;
    let (notifications, next_cursor) = paging.page(notifications, |n| (n.created_at, n.id));
    Ok(Json(NotificationPage {
        notifications: notifications.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
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
        notification: notification.into(),
        changed: transition == Transition::Applied,
    }))
}
