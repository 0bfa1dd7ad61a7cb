//! The review queue: decisions waiting for a person, oldest first, with keyboard shortcuts.

use crate::state::AppState;
use crate::ui::page::{age, render, Chrome, DeskError, DeskQuery};
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
    notice: Option<&'static str>,
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct ListParams {
    done: Option<String>,
}

/// `GET /queue`
pub(crate) async fn list(
    State(state): State<AppState>,
    user: DeskUser,
    DeskQuery(p): DeskQuery<ListParams>,
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
            notice: (p.done.as_deref() == Some("none-other"))
                .then_some("No other case waits for review."),
        },
    ))
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct NextParams {
    after: Option<String>,
}

/// `GET /queue/next?after={case}`: the case whose review comes after `after`'s in the queue
/// (the oldest first, wrapping round), never `after` itself; the queue when no other waits.
pub(crate) async fn next(
    State(state): State<AppState>,
    user: DeskUser,
    DeskQuery(p): DeskQuery<NextParams>,
) -> Result<Response, DeskError> {
    let after = p
        .after
        .as_deref()
        .and_then(|a| a.parse::<uuid::Uuid>().ok());
    let next = state
        .store
        .next_pending_case(user.0.principal.tenant_id, after)
        .await?;
    Ok(match next {
        Some(case) => Redirect::to(&format!("/cases/{case}")).into_response(),
        None => Redirect::to("/queue?done=none-other").into_response(),
    })
}
