//! Gauges read from PostgreSQL at scrape time (counters live in the processes).

use crate::{Store, StoreResult};

/// The database's view of the pipeline's health.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PipelineGauges {
    /// Outbox rows waiting to be published.
    pub outbox_pending: i64,
    /// Age in seconds of the oldest due PENDING outbox row (0 when none).
    pub outbox_oldest_pending_age_seconds: f64,
    /// Outbox rows that gave up.
    pub outbox_dead: i64,
    /// Cases per status.
    pub cases_by_status: Vec<(String, i64)>,
    /// Jobs per status.
    pub jobs_by_status: Vec<(String, i64)>,
    /// Jobs waiting for a retry (PENDING after at least one attempt of their budget): the
    /// pilot's retry volume.
    pub jobs_retry_waiting: i64,
    /// Webhook deliveries waiting for an attempt (PENDING).
    pub webhook_pending: i64,
    /// Age in seconds of the oldest due PENDING webhook delivery (0 when none).
    pub webhook_oldest_pending_age_seconds: f64,
    /// Webhook deliveries that gave up (DEAD), waiting for an admin's requeue.
    pub webhook_dead: i64,
    /// Decisions waiting for a person (PENDING reviews).
    pub reviews_pending: i64,
    /// How long the oldest pending review has waited, in seconds (0 when none): the fifth
    /// pilot measure, with the resolved waits' histogram kept by the API.
    pub review_oldest_pending_age_seconds: f64,
    /// Open reviews (waiting for a person or a second reviewer) past their policy's
    /// `review_sla`.
    pub reviews_overdue: i64,
    /// Age in seconds of the oldest audit event not yet sealed into its chain (0 when none).
    pub audit_oldest_unsealed_age_seconds: f64,
}

/// The outbox, the webhook deliveries (both outboxes), the review queue, the jobs waiting
/// for a retry and the audit events awaiting their seal in one round trip, so a scrape stays
/// at three statements.
const GAUGES_OUTBOXES: &str = r#"
SELECT o.pending, o.oldest, o.dead, w.pending, w.oldest, w.dead, r.pending, r.oldest, j.retrying,
       v.overdue, a.oldest FROM
(SELECT count(*) FILTER (WHERE status = 'PENDING') AS pending,
        coalesce(extract(epoch FROM now() - min(available_at) FILTER (WHERE status = 'PENDING' AND available_at <= now())), 0)::float8 AS oldest,
        count(*) FILTER (WHERE status = 'DEAD') AS dead
 FROM outbox WHERE status IN ('PENDING', 'DEAD')) o,
(SELECT count(*) FILTER (WHERE status = 'PENDING') AS pending,
        coalesce(extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE status = 'PENDING' AND next_attempt_at <= now())), 0)::float8 AS oldest,
        count(*) FILTER (WHERE status = 'DEAD') AS dead
 FROM webhook_deliveries WHERE status IN ('PENDING', 'DEAD')) w,
(SELECT count(*) AS pending,
        coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest
 FROM reviews WHERE status = 'PENDING') r,
(SELECT count(*) AS retrying FROM jobs WHERE status = 'PENDING' AND attempt > budget_start) j,
(SELECT count(*) AS overdue FROM reviews
 WHERE status IN ('PENDING', 'AWAITING_SECOND') AND due_at < now()) v,
(SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest
 FROM audit_events WHERE hash IS NULL) a
"#;
const GAUGES_CASES: &str = "SELECT status, count(*) FROM cases GROUP BY status ORDER BY status";
const GAUGES_JOBS: &str = "SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status";

impl Store {
    /// Reads the pipeline gauges.
    pub async fn pipeline_gauges(&self) -> StoreResult<PipelineGauges> {
        type Outboxes = (i64, f64, i64, i64, f64, i64, i64, f64, i64, i64, f64);
        let (
            outbox_pending,
            outbox_oldest_pending_age_seconds,
            outbox_dead,
            webhook_pending,
            webhook_oldest_pending_age_seconds,
            webhook_dead,
            reviews_pending,
            review_oldest_pending_age_seconds,
            jobs_retry_waiting,
            reviews_overdue,
            audit_oldest_unsealed_age_seconds,
        ): Outboxes = sqlx::query_as(GAUGES_OUTBOXES)
            .fetch_one(self.pool())
            .await?;
        let cases_by_status = sqlx::query_as(GAUGES_CASES).fetch_all(self.pool()).await?;
        let jobs_by_status = sqlx::query_as(GAUGES_JOBS).fetch_all(self.pool()).await?;
        Ok(PipelineGauges {
            outbox_pending,
            outbox_oldest_pending_age_seconds,
            outbox_dead,
            cases_by_status,
            jobs_by_status,
            jobs_retry_waiting,
            webhook_pending,
            webhook_oldest_pending_age_seconds,
            webhook_dead,
            reviews_pending,
            review_oldest_pending_age_seconds,
            reviews_overdue,
            audit_oldest_unsealed_age_seconds,
        })
    }
}
