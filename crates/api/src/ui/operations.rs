//! The operations page: the five pilot measurements as numbers and as charts over the last
//! hours (the reconciler's minute samples), the tenant's stuck and failed cases with their
//! reasons, and its dead letters with a requeue.

use crate::routes::ops::ScrapeCache;
use crate::state::AppState;
use crate::ui::cases::when;
use crate::ui::chart::{spark, Spark};
use crate::ui::page::{age, render, Chrome, CsrfOnly, DeskError, DeskForm};
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};
use ironclad_core::role::Role;
use ironclad_store::pilot::PilotSample;
use ironclad_store::stuck::{StuckScope, STUCK_AFTER};
use std::time::Duration;

/// The charts' window.
const HISTORY: Duration = Duration::from_secs(6 * 3600);

/// Dead letters listed (the requeue takes them all).
const DEAD_LETTERS_SHOWN: i64 = 50;

struct Measure {
    key: &'static str,
    title: &'static str,
    value: String,
    /// A second, smaller figure beside the value (the oldest review's wait).
    detail: Option<String>,
    note: &'static str,
    /// `ok`, `warn` or `bad`: the card's border.
    state: &'static str,
    chart: Option<Chart>,
}

/// A measure's chart over [`HISTORY`], with its peak in the measure's own unit.
struct Chart {
    path: String,
    peak: String,
    /// How many minutes were sampled in the window (a new installation has few).
    samples: usize,
    width: f64,
    height: f64,
}

struct DeadRow {
    case_id: uuid::Uuid,
    reference: String,
    kind: String,
    reason: String,
    since: String,
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
    dead: Vec<DeadRow>,
    dead_more: bool,
    history: String,
    notice: Option<String>,
}

/// Which pilot measure a chart draws, and how its values read.
#[derive(Clone, Copy)]
enum Series {
    OutboxAge,
    RetryWaiting,
    PendingAge,
    Failures,
    ReviewWait,
}

impl Series {
    fn value(self, s: &PilotSample) -> Option<f64> {
        match self {
            Self::OutboxAge => Some(s.outbox_age_seconds),
            Self::RetryWaiting => Some(s.retry_waiting as f64),
            Self::PendingAge => s.pending_age_seconds,
            Self::Failures => Some(s.terminal_failures as f64),
            Self::ReviewWait => Some(s.review_wait_seconds),
        }
    }

    fn label(self, v: f64) -> String {
        match self {
            Self::OutboxAge | Self::PendingAge | Self::ReviewWait => age(v),
            Self::RetryWaiting | Self::Failures => format!("{v:.0}"),
        }
    }

    fn chart(self, samples: &[PilotSample], now: DateTime<Utc>) -> Option<Chart> {
        let points: Vec<_> = samples.iter().map(|s| (s.minute, self.value(s))).collect();
        spark(&points, now, HISTORY).map(
            |Spark {
                 path,
                 peak,
                 samples,
                 ..
             }| Chart {
                path,
                peak: self.label(peak),
                samples,
                width: crate::ui::chart::WIDTH,
                height: crate::ui::chart::HEIGHT,
            },
        )
    }
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
    page(&state, &scrapes, &user, None).await
}

/// `POST /operations/requeue`: every dead letter of the tenant starts over with a fresh retry
/// budget (as `ironclad requeue --dead` does for the whole installation), audited with the
/// user as actor.
pub(crate) async fn requeue(
    State(state): State<AppState>,
    Extension(scrapes): Extension<ScrapeCache>,
    user: DeskUser,
    DeskForm(form): DeskForm<CsrfOnly>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    user.require(&[Role::Operator, Role::Admin], "requeue dead work")?;
    let requeued = state
        .store
        .requeue_dead_lettered_jobs_of(user.0.principal.tenant_id, &user.0.principal.actor())
        .await?;
    let notice = match requeued {
        0 => "Nothing to requeue: no dead work is left.".to_owned(),
        1 => "1 job requeued.".to_owned(),
        n => format!("{n} jobs requeued."),
    };
    page(&state, &scrapes, &user, Some(notice)).await
}

async fn page(
    state: &AppState,
    scrapes: &ScrapeCache,
    user: &DeskUser,
    notice: Option<String>,
) -> Result<Response, DeskError> {
    user.require(&[Role::Operator, Role::Admin], "see operations")?;
    let tenant = user.0.principal.tenant_id;
    let scraped = scrapes.get(state).await;
    // No history is no reason to hide the live figures.
    let samples = match state.store.pilot_samples(HISTORY).await {
        Ok(samples) => samples,
        Err(err) => {
            tracing::warn!(error = %err, "operations page without its charts");
            Vec::new()
        }
    };
    let now = Utc::now();
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
                detail: None,
                note: "oldest intent to publish not yet on the stream",
                state: level(g.outbox_oldest_pending_age_seconds, 30.0, 300.0),
                chart: Series::OutboxAge.chart(&samples, now),
            });
            measures.push(Measure {
                key: "retries",
                title: "Retry volume",
                value: g.jobs_retry_waiting.to_string(),
                detail: None,
                note: "jobs waiting for a retry after a failed attempt",
                state: level(g.jobs_retry_waiting as f64, 10.0, 1_000.0),
                chart: Series::RetryWaiting.chart(&samples, now),
            });
            measures.push(Measure {
                key: "failures",
                title: "Terminal failures",
                value: failed.to_string(),
                detail: None,
                note: "failed jobs, dead outbox rows and dead webhook deliveries",
                state: level(failed as f64, 1.0, 10.0),
                chart: Series::Failures.chart(&samples, now),
            });
            measures.push(Measure {
                key: "review_wait",
                title: "Awaiting review",
                value: g.reviews_pending.to_string(),
                detail: Some(format!(
                    "oldest {} · {} overdue",
                    age(g.review_oldest_pending_age_seconds),
                    g.reviews_overdue
                )),
                note: "decisions waiting for a person; overdue: past their policy's review_sla",
                // A review past its SLA is a promise broken, whatever the oldest wait.
                state: if g.reviews_overdue > 0 {
                    "bad"
                } else {
                    level(
                        g.review_oldest_pending_age_seconds,
                        4.0 * 3600.0,
                        24.0 * 3600.0,
                    )
                },
                chart: Series::ReviewWait.chart(&samples, now),
            });
        }
        None => measures.push(Measure {
            key: "database",
            title: "PostgreSQL",
            value: unknown(),
            detail: None,
            note: "the database did not answer within 2 s",
            state: "bad",
            chart: None,
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
            detail: None,
            note: "oldest message a worker holds without acknowledging it",
            state: pending_ms.map_or("bad", |ms| level(ms as f64 / 1000.0, 120.0, 900.0)),
            chart: Series::PendingAge.chart(&samples, now),
        },
    );
    let stuck = state
        .store
        .stuck_cases(StuckScope::Tenant(tenant), STUCK_AFTER, 500)
        .await?
        .into_iter()
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
    let mut dead: Vec<DeadRow> = state
        .store
        .dead_letters_of(tenant, DEAD_LETTERS_SHOWN + 1)
        .await?
        .into_iter()
        .map(|d| DeadRow {
            case_id: d.case_id,
            reference: d
                .external_reference
                .unwrap_or_else(|| d.case_id.to_string()),
            kind: d.kind.replace('_', " "),
            reason: match (d.error_code, d.last_error) {
                (Some(code), Some(error)) => format!("{code}: {error}"),
                (code, error) => code.or(error).unwrap_or_default(),
            },
            since: d.finished_at.map(when).unwrap_or_default(),
        })
        .collect();
    let dead_more = dead.len() as i64 > DEAD_LETTERS_SHOWN;
    dead.truncate(DEAD_LETTERS_SHOWN as usize);
    Ok(render(
        StatusCode::OK,
        &OperationsPage {
            chrome: Chrome::of(user, "operations"),
            measures,
            stuck,
            stuck_after: age(STUCK_AFTER.as_secs_f64()),
            failed,
            dead,
            dead_more,
            history: format!("{} h", HISTORY.as_secs() / 3600),
            notice,
        },
    ))
}
