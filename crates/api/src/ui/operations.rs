//! The operations page: the five pilot measurements as numbers, and the tenant's stuck and
//! failed cases with their reasons.

use crate::routes::ops::ScrapeCache;
use crate::state::AppState;
use crate::ui::cases::when;
use crate::ui::page::{age, render, Chrome, DeskError};
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::Response;
use ironclad_core::role::Role;
use std::time::Duration;

/// An open case idle this long is listed as stuck.
const STUCK_AFTER: Duration = Duration::from_secs(10 * 60);

struct Measure {
    key: &'static str,
    title: &'static str,
    value: String,
    note: &'static str,
    /// `ok`, `warn` or `bad`: the card's border.
    state: &'static str,
}

struct StuckRow {
    id: uuid::Uuid,
    reference: String,
    status: String,
    idle: String,
    reason: String,
}

struct FailedRow {
    id: uuid::Uuid,
    reference: String,
    reason: String,
    since: String,
}

#[derive(Template)]
#[template(path = "operations.html")]
struct OperationsPage {
    chrome: Chrome,
    measures: Vec<Measure>,
    stuck: Vec<StuckRow>,
    stuck_after: String,
    failed: Vec<FailedRow>,
}

fn level(value: f64, warn: f64, bad: f64) -> &'static str {
    if value >= bad {
        "bad"
    } else if value >= warn {
        "warn"
    } else {
        "ok"
    }
}

/// `GET /operations` (operators and admins).
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(scrapes): Extension<ScrapeCache>,
    user: DeskUser,
) -> Result<Response, DeskError> {
    user.require(&[Role::Operator, Role::Admin], "see operations")?;
    let tenant = user.0.principal.tenant_id;
    let scraped = scrapes.get(&state).await;
    let unknown = || "unknown".to_owned();
    let mut measures = Vec::new();
    match &scraped.db {
        Some(g) => {
            let jobs = |s: &str| {
                g.jobs_by_status
                    .iter()
                    .filter(|(k, _)| k == s)
                    .map(|(_, n)| *n)
                    .sum::<i64>()
            };
            let failed = jobs("FAILED") + g.outbox_dead + g.webhook_dead;
            measures.push(Measure {
                key: "outbox_age",
                title: "Outbox age",
                value: age(g.outbox_oldest_pending_age_seconds),
                note: "oldest intent to publish not yet on the stream",
                state: level(g.outbox_oldest_pending_age_seconds, 30.0, 300.0),
            });
            measures.push(Measure {
                key: "retries",
                title: "Retry volume",
                value: g.outbox_pending.to_string(),
                note: "outbox rows waiting to be published or retried",
                state: level(g.outbox_pending as f64, 100.0, 10_000.0),
            });
            measures.push(Measure {
                key: "failures",
                title: "Terminal failures",
                value: failed.to_string(),
                note: "failed jobs, dead outbox rows and dead webhook deliveries",
                state: level(failed as f64, 1.0, 10.0),
            });
            measures.push(Measure {
                key: "review_wait",
                title: "Awaiting review",
                value: format!(
                    "{} · oldest {}",
                    g.reviews_pending,
                    age(g.review_oldest_pending_age_seconds)
                ),
                note: "decisions waiting for a person",
                state: level(
                    g.review_oldest_pending_age_seconds,
                    4.0 * 3600.0,
                    24.0 * 3600.0,
                ),
            });
        }
        None => measures.push(Measure {
            key: "database",
            title: "PostgreSQL",
            value: unknown(),
            note: "the database did not answer within 2 s",
            state: "bad",
        }),
    }
    let pending_ms = scraped.pending.as_ref().map(|p| p.oldest_idle_ms);
    measures.insert(
        1,
        Measure {
            key: "pending_age",
            title: "Pending-message age",
            value: pending_ms
                .map(|ms| age(ms as f64 / 1000.0))
                .unwrap_or_else(unknown),
            note: "oldest message a worker holds without acknowledging it",
            state: pending_ms.map_or("bad", |ms| level(ms as f64 / 1000.0, 120.0, 900.0)),
        },
    );
    let stuck = state
        .store
        .stuck_cases(STUCK_AFTER, 500)
        .await?
        .into_iter()
        .filter(|s| s.case.tenant_id == tenant.0)
        .map(|s| StuckRow {
            id: s.case.id,
            reference: s
                .case
                .external_reference
                .unwrap_or_else(|| s.case.id.to_string()),
            status: s.case.status,
            idle: age(s.idle_seconds as f64),
            reason: s.reason,
        })
        .collect();
    let failed = state
        .store
        .search_cases(Some(tenant), Some("FAILED"), None, None, 100)
        .await?
        .into_iter()
        .map(|c| FailedRow {
            id: c.id,
            reference: c.external_reference.unwrap_or_else(|| c.id.to_string()),
            reason: c.status_reason.unwrap_or_default(),
            since: when(c.updated_at),
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &OperationsPage {
            chrome: Chrome::of(&user, "operations"),
            measures,
            stuck,
            stuck_after: age(STUCK_AFTER.as_secs_f64()),
            failed,
        },
    ))
}
