//! The review queue: decisions waiting for a person, oldest first, with keyboard shortcuts.

use crate::state::AppState;
use crate::ui::page::{age, render, Chrome, DeskError};
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ironclad_core::review::ReviewStatus;

/// Reviews listed at once (the oldest ones: the queue is worked from the top).
const QUEUE_SIZE: i64 = 200;

struct QueueRow {
    case_id: uuid::Uuid,
    reference: String,
    status: String,
    version: i32,
    summary: String,
    age: String,
}

#[derive(Template)]
#[template(path = "queue.html")]
struct QueuePage {
    chrome: Chrome,
    rows: Vec<QueueRow>,
}

/// `GET /queue`
pub(crate) async fn list(
    State(state): State<AppState>,
    user: DeskUser,
) -> Result<Response, DeskError> {
    let rows = state
        .store
        .list_reviews(
            user.0.principal.tenant_id.0,
            ReviewStatus::Pending,
            None,
            QUEUE_SIZE,
        )
        .await?
        .into_iter()
        .map(|r| QueueRow {
            case_id: r.case_id,
            reference: r
                .external_reference
                .unwrap_or_else(|| r.case_id.to_string()),
            status: r.decision_status,
            version: r.decision_version,
            summary: r.summary,
            age: age(r.age_seconds),
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &QueuePage {
            chrome: Chrome::of(&user, "queue"),
            rows,
        },
    ))
}

/// `GET /queue/next`: the oldest case waiting for review, or the (empty) queue.
pub(crate) async fn next(
    State(state): State<AppState>,
    user: DeskUser,
) -> Result<Response, DeskError> {
    let oldest = state
        .store
        .list_reviews(user.0.principal.tenant_id.0, ReviewStatus::Pending, None, 1)
        .await?;
    Ok(match oldest.first() {
        Some(r) => Redirect::to(&format!("/cases/{}", r.case_id)).into_response(),
        None => Redirect::to("/queue").into_response(),
    })
}
