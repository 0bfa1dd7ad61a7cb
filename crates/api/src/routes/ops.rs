//! Operations endpoints: liveness and readiness (no authentication), and Prometheus metrics
//! (open, or behind a bearer token: [`ApiConfig::metrics_token`](crate::ApiConfig)).
//!
//! `/metrics` renders the process's recorder and then gauges read from PostgreSQL (outbox,
//! cases and jobs by status) and Redis (pending messages). These gauges are written as text
//! here rather than through the `metrics` facade, so they are correct with or without a
//! recorder; nothing else may register the same names. A dependency that is down costs its
//! lines only, reported by `ironclad_scrape_source_up{source=…} 0`.
//!
//! The gauges are full-table counts on the pool workers also use to renew leases, so they
//! are read at most once per [`GAUGE_TTL`] whatever the scrape rate ([`ScrapeCache`]):
//! concurrent scrapes wait for one read rather than each starting its own, and
//! `ironclad_scrape_gauges_age_seconds` says how old the figures are.

use crate::auth::bearer_token;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use ironclad_core::{CaseStatus, JobStatus};
use ironclad_queue::PendingSummary;
use ironclad_store::metrics::PipelineGauges;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How long each dependency gets to answer a probe or a scrape. Kubernetes' default probe
/// timeout is 1 s and its period 10 s; 2 s each (run in parallel) stays inside a period
/// while tolerating one slow fsync on a loaded PostgreSQL.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long gauges read for one scrape serve the next ones. Prometheus scrapes every 15–60 s
/// by default; 5 s keeps the figures fresh for any sane scrape interval while capping the
/// database's cost at one read per 5 s, whatever the number of scrapers.
pub const GAUGE_TTL: Duration = Duration::from_secs(5);

/// The health routes (never authenticated, never rate limited). `/readyz` needs a
/// [`ReadyCache`] extension ([`crate::router()`] installs one).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

/// The `/metrics` route. Needs a [`ScrapeCache`] extension ([`crate::router()`] and
/// [`crate::metrics_router`] install one).
pub fn metrics_routes() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

/// Liveness: the process answers HTTP. Never checks dependencies, so a database outage does
/// not get every API process restarted.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "ops",
    security(()),
    responses((status = 200, description = "The process answers", body = crate::openapi::Health)),
)]
async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// Readiness: PostgreSQL answers within [`PROBE_TIMEOUT`], checked at most once per
/// [`READINESS_TTL`] however many ask ([`ReadyCache`]). Redis is probed and reported, but
/// its outage leaves the process ready (`"status": "degraded"`): intake needs only PostgreSQL
/// and the blob store, and the outbox publishes once Redis is back, so taking every API
/// process out of a load balancer's rotation would turn a delay into refused uploads.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "ops",
    security(()),
    responses(
        (status = 200, description = "PostgreSQL answers (`degraded` when Redis does not)", body = crate::openapi::Readiness),
        (status = 503, description = "PostgreSQL does not answer", body = crate::openapi::Readiness),
    ),
)]
async fn readyz(
    State(state): State<AppState>,
    Extension(cache): Extension<ReadyCache>,
) -> Response {
    let ready = cache.get(&state).await;
    let word = |ok: bool| if ok { "ok" } else { "error" };
    let status = match (ready.postgres, ready.redis.unwrap_or(true)) {
        (false, _) => "unavailable",
        (true, false) => "degraded",
        (true, true) => "ok",
    };
    let body = json!({
        "status": status,
        "postgres": word(ready.postgres),
        "redis": ready.redis.map_or("not_configured", word),
    });
    let status = if ready.postgres {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}

/// How long one readiness check answers `/readyz`. The probe is anonymous: without this, a
/// flood of it was a flood of PostgreSQL and Redis round trips. A second is far below any
/// orchestrator's probe period, so no probe sees a stale answer it would act on.
pub const READINESS_TTL: Duration = Duration::from_secs(1);

/// One readiness check's findings.
#[derive(Debug, Clone, Copy)]
struct Readiness {
    at: Instant,
    postgres: bool,
    /// `None`: no queue configured.
    redis: Option<bool>,
}

/// The last readiness check of one application; clones share it. As with [`ScrapeCache`], the
/// lock is held across the check: concurrent probes wait for one check instead of each
/// making their own, and a failed check is kept for its second too.
#[derive(Debug, Clone, Default)]
pub struct ReadyCache(Arc<tokio::sync::Mutex<Option<Readiness>>>);

impl ReadyCache {
    /// An empty cache: the first probe checks.
    pub fn new() -> Self {
        Self::default()
    }

    async fn get(&self, state: &AppState) -> Readiness {
        let mut last = self.0.lock().await;
        if let Some(ready) = last.filter(|r| r.at.elapsed() < READINESS_TTL) {
            return ready;
        }
        let postgres = probe("postgres", state.store.ping());
        let redis = async {
            match &state.queue {
                Some(queue) => Some(probe("redis", queue.ping()).await),
                None => None,
            }
        };
        let (postgres, redis) = tokio::join!(postgres, redis);
        let ready = Readiness {
            at: Instant::now(),
            postgres,
            redis,
        };
        *last = Some(ready);
        ready
    }
}

/// Whether `check` succeeded within [`PROBE_TIMEOUT`]; failures are logged with their cause.
async fn probe<E: std::fmt::Display>(
    what: &'static str,
    check: impl Future<Output = Result<(), E>>,
) -> bool {
    match tokio::time::timeout(PROBE_TIMEOUT, check).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(dependency = what, error = %e, "readiness probe failed");
            false
        }
        Err(_) => {
            tracing::warn!(dependency = what, timeout = ?PROBE_TIMEOUT, "readiness probe timed out");
            false
        }
    }
}

/// The gauges of one read, shared by the scrapes that follow it for [`GAUGE_TTL`].
#[derive(Debug, Clone)]
pub(crate) struct Scraped {
    at: Instant,
    pub(crate) db: Option<PipelineGauges>,
    pub(crate) pending: Option<PendingSummary>,
}

/// The last gauge read of one application. Cheap to clone; clones share it.
///
/// The lock is held across the read on purpose: that is the single flight. A scrape that
/// finds the figures stale reads them while the others wait (at most [`PROBE_TIMEOUT`]), then
/// they all answer from that one read. A failed read is kept as well, so a database that is
/// down is not asked again by every scrape either.
#[derive(Debug, Clone, Default)]
pub struct ScrapeCache(Arc<tokio::sync::Mutex<Option<Scraped>>>);

impl ScrapeCache {
    /// An empty cache: the first scrape reads.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) async fn get(&self, state: &AppState) -> Scraped {
        let mut last = self.0.lock().await;
        if let Some(scraped) = last.as_ref().filter(|s| s.at.elapsed() < GAUGE_TTL) {
            return scraped.clone();
        }
        let gauges = read("postgres", state.store.pipeline_gauges());
        let pending = async {
            match &state.queue {
                Some(queue) => read("redis", queue.pending_summary()).await,
                None => None,
            }
        };
        let (db, pending) = tokio::join!(gauges, pending);
        let scraped = Scraped {
            at: Instant::now(),
            db,
            pending,
        };
        *last = Some(scraped.clone());
        scraped
    }
}

/// Prometheus text: the recorder's metrics, then the gauges (at most [`GAUGE_TTL`] old).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "ops",
    description = "Served on the API's listener unless the metrics have a listener of their own. \
                   When the server has a metrics token, it is required as `Authorization: Bearer <token>`; \
                   API keys are not accepted here.",
    security(()),
    responses(
        (status = 200, description = "Prometheus text exposition", content_type = "text/plain; version=0.0.4; charset=utf-8", body = String),
        (status = 401, description = "A metrics token is configured and was not given", body = crate::openapi::ErrorBody),
    ),
)]
async fn metrics(
    State(state): State<AppState>,
    Extension(cache): Extension<ScrapeCache>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if let Some(expected) = state.config.metrics_token.as_deref() {
        if !bearer_token(&headers).is_some_and(|given| tokens_match(given, expected)) {
            return Err(ApiError::client(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "missing or invalid metrics token",
            ));
        }
    }
    let mut text = state
        .metrics
        .as_ref()
        .map(|handle| handle.render())
        .unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let scraped = cache.get(&state).await;
    write_scrape_gauges(
        &mut text,
        scraped.db.as_ref(),
        scraped.pending,
        state.queue.is_some(),
    );
    single(
        &mut text,
        "ironclad_scrape_gauges_age_seconds",
        "Age of the database and stream gauges above (they are read at most every 5 s).",
        scraped.at.elapsed().as_secs_f64(),
    );
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// Whether the presented token is the configured one, in time independent of where they
/// differ: both are hashed first, so even their lengths stay private.
fn tokens_match(given: &str, expected: &str) -> bool {
    let given = Sha256::digest(given.as_bytes());
    let expected = Sha256::digest(expected.as_bytes());
    given.as_slice().ct_eq(expected.as_slice()).into()
}

/// The value of `read` if it answers within [`PROBE_TIMEOUT`]; `None` (logged) otherwise.
async fn read<T, E: std::fmt::Display>(
    what: &'static str,
    read: impl Future<Output = Result<T, E>>,
) -> Option<T> {
    match tokio::time::timeout(PROBE_TIMEOUT, read).await {
        Ok(Ok(value)) => Some(value),
        Ok(Err(e)) => {
            tracing::warn!(dependency = what, error = %e, "metrics scrape could not read gauges");
            None
        }
        Err(_) => {
            tracing::warn!(dependency = what, "metrics scrape timed out reading gauges");
            None
        }
    }
}

/// Appends the scrape-time gauges in Prometheus' text format.
fn write_scrape_gauges(
    out: &mut String,
    db: Option<&PipelineGauges>,
    pending: Option<PendingSummary>,
    queue_configured: bool,
) {
    family(
        out,
        "ironclad_scrape_source_up",
        "Whether the last scrape could read this source (1) or not (0).",
    );
    sample(
        out,
        "ironclad_scrape_source_up",
        Some(("source", "postgres")),
        bool_value(db.is_some()),
    );
    if queue_configured {
        sample(
            out,
            "ironclad_scrape_source_up",
            Some(("source", "redis")),
            bool_value(pending.is_some()),
        );
    }
    if let Some(g) = db {
        single(
            out,
            "ironclad_outbox_pending",
            "Outbox rows waiting to be published.",
            g.outbox_pending as f64,
        );
        single(
            out,
            "ironclad_outbox_oldest_pending_age_seconds",
            "Age of the oldest due outbox row waiting to be published.",
            g.outbox_oldest_pending_age_seconds,
        );
        single(
            out,
            "ironclad_jobs_retry_waiting",
            "Jobs waiting for a retry (PENDING after at least one attempt of their budget).",
            g.jobs_retry_waiting as f64,
        );
        single(
            out,
            "ironclad_outbox_dead",
            "Outbox rows that gave up publishing.",
            g.outbox_dead as f64,
        );
        single(
            out,
            "ironclad_webhook_deliveries_pending",
            "Webhook deliveries waiting for an attempt.",
            g.webhook_pending as f64,
        );
        single(
            out,
            "ironclad_webhook_oldest_pending_age_seconds",
            "Age of the oldest due webhook delivery waiting for an attempt.",
            g.webhook_oldest_pending_age_seconds,
        );
        single(
            out,
            "ironclad_webhook_deliveries_dead",
            "Webhook deliveries that gave up, waiting for an admin's requeue.",
            g.webhook_dead as f64,
        );
        single(
            out,
            "ironclad_reviews_pending",
            "Decisions waiting for a person.",
            g.reviews_pending as f64,
        );
        single(
            out,
            "ironclad_review_oldest_pending_age_seconds",
            "How long the oldest pending review has waited (resolved waits: ironclad_review_wait_seconds).",
            g.review_oldest_pending_age_seconds,
        );
        single(
            out,
            "ironclad_reviews_overdue",
            "Open reviews past their policy's review_sla.",
            g.reviews_overdue as f64,
        );
        single(
            out,
            "ironclad_audit_oldest_unsealed_age_seconds",
            "Age of the oldest audit event not yet sealed into its tenant's hash chain (grows when no sealer runs or a chain cannot be sealed).",
            g.audit_oldest_unsealed_age_seconds,
        );
        let cases = CaseStatus::ALL.iter().map(|s| s.as_str());
        by_status(
            out,
            "ironclad_cases",
            "Cases by status.",
            cases,
            &g.cases_by_status,
        );
        let jobs = JobStatus::ALL.iter().map(|s| s.as_str());
        by_status(
            out,
            "ironclad_jobs",
            "Jobs by status.",
            jobs,
            &g.jobs_by_status,
        );
    }
    if let Some(p) = pending {
        single(
            out,
            "ironclad_stream_pending",
            "Messages delivered to a worker and not yet acknowledged.",
            p.count as f64,
        );
        single(
            out,
            "ironclad_stream_oldest_pending_age_seconds",
            "Idle time of the oldest unacknowledged message.",
            p.oldest_idle_ms as f64 / 1000.0,
        );
    }
}

/// A family with every known status (zero when absent, so series never vanish) plus any
/// status the database reports that this build does not know.
fn by_status<'a>(
    out: &mut String,
    name: &str,
    help: &str,
    known: impl Iterator<Item = &'a str>,
    counts: &[(String, i64)],
) {
    family(out, name, help);
    let known: Vec<&str> = known.collect();
    let count_of = |status: &str| {
        counts
            .iter()
            .find(|(s, _)| s == status)
            .map_or(0, |(_, n)| *n)
    };
    for status in &known {
        sample(out, name, Some(("status", status)), count_of(status) as f64);
    }
    for (status, n) in counts.iter().filter(|(s, _)| !known.contains(&s.as_str())) {
        sample(out, name, Some(("status", status)), *n as f64);
    }
}

fn single(out: &mut String, name: &str, help: &str, value: f64) {
    family(out, name, help);
    sample(out, name, None, value);
}

fn family(out: &mut String, name: &str, help: &str) {
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
}

fn sample(out: &mut String, name: &str, label: Option<(&str, &str)>, value: f64) {
    let _ = match label {
        Some((key, v)) => writeln!(out, "{name}{{{key}=\"{}\"}} {value}", escape_label(v)),
        None => writeln!(out, "{name} {value}"),
    };
}

fn bool_value(up: bool) -> f64 {
    if up {
        1.0
    } else {
        0.0
    }
}

/// Label values escape backslash, double quote and newline (Prometheus text format).
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_render_in_text_format() {
        let g = PipelineGauges {
            outbox_pending: 3,
            outbox_oldest_pending_age_seconds: 1.5,
            outbox_dead: 0,
            cases_by_status: vec![("INGESTED".into(), 2), ("WEIRD\"".into(), 1)],
            jobs_by_status: vec![],
            jobs_retry_waiting: 5,
            webhook_pending: 2,
            webhook_oldest_pending_age_seconds: 0.5,
            webhook_dead: 1,
            reviews_pending: 2,
            review_oldest_pending_age_seconds: 90.0,
            reviews_overdue: 3,
            audit_oldest_unsealed_age_seconds: 12.5,
        };
        let pending = PendingSummary {
            count: 4,
            oldest_idle_ms: 2500,
        };
        let mut out = String::new();
        write_scrape_gauges(&mut out, Some(&g), Some(pending), true);
        assert!(out.contains("# TYPE ironclad_outbox_pending gauge\nironclad_outbox_pending 3\n"));
        assert!(out.contains("ironclad_outbox_oldest_pending_age_seconds 1.5\n"));
        assert!(out.contains("ironclad_jobs_retry_waiting 5\n"));
        assert!(out.contains("ironclad_cases{status=\"INGESTED\"} 2\n"));
        assert!(out.contains("ironclad_cases{status=\"RESOLVED\"} 0\n"));
        assert!(out.contains("ironclad_cases{status=\"WEIRD\\\"\"} 1\n"));
        assert!(out.contains("ironclad_jobs{status=\"PENDING\"} 0\n"));
        assert!(out.contains("ironclad_stream_pending 4\n"));
        assert!(out.contains("ironclad_webhook_deliveries_pending 2\n"));
        assert!(out.contains("ironclad_webhook_deliveries_dead 1\n"));
        assert!(out.contains("ironclad_reviews_pending 2\n"));
        assert!(out.contains("ironclad_review_oldest_pending_age_seconds 90\n"));
        assert!(out.contains("# TYPE ironclad_reviews_overdue gauge\nironclad_reviews_overdue 3\n"));
        assert!(out.contains("ironclad_audit_oldest_unsealed_age_seconds 12.5\n"));
        assert!(out.contains("ironclad_stream_oldest_pending_age_seconds 2.5\n"));
        assert!(out.contains("ironclad_scrape_source_up{source=\"redis\"} 1\n"));
    }

    #[test]
    fn tokens_match_exactly() {
        assert!(tokens_match("s3cret", "s3cret"));
        assert!(!tokens_match("s3cre", "s3cret"));
        assert!(!tokens_match("s3cret ", "s3cret"));
        assert!(!tokens_match("", "s3cret"));
    }

    #[test]
    fn a_missing_source_costs_only_its_lines() {
        let mut out = String::new();
        write_scrape_gauges(&mut out, None, None, true);
        assert!(out.contains("ironclad_scrape_source_up{source=\"postgres\"} 0\n"));
        assert!(out.contains("ironclad_scrape_source_up{source=\"redis\"} 0\n"));
        assert!(!out.contains("ironclad_outbox_pending"));
    }
}
