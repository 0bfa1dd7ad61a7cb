//! The five pilot measurements sampled once a minute, kept for a day: the history behind the
//! operations page's charts (the live figures come from [`crate::metrics`]).

use crate::{Store, StoreResult};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// One minute's measurements.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PilotSample {
    /// The minute sampled (truncated).
    pub minute: DateTime<Utc>,
    /// Age of the oldest due outbox row, in seconds.
    pub outbox_age_seconds: f64,
    /// Jobs waiting for a retry.
    pub retry_waiting: i64,
    /// Idle time of the oldest pending stream message, in seconds; `None` when Redis did not
    /// answer the sampler.
    pub pending_age_seconds: Option<f64>,
    /// Failed jobs, dead outbox rows and dead webhook deliveries.
    pub terminal_failures: i64,
    /// How long the oldest pending review has waited, in seconds.
    pub review_wait_seconds: f64,
}

/// Computes this minute's row from the tables in the statement that writes it, so concurrent
/// samplers cannot interleave a read and a write; prunes rows older than a day on the way.
const SAMPLE: &str = r#"
WITH pruned AS (DELETE FROM pilot_samples WHERE minute < now() - interval '1 day')
INSERT INTO pilot_samples (minute, outbox_age_seconds, retry_waiting, pending_age_seconds,
                           terminal_failures, review_wait_seconds)
SELECT date_trunc('minute', now()),
       coalesce(extract(epoch FROM now() - (SELECT min(available_at) FROM outbox
                                             WHERE status = 'PENDING' AND available_at <= now())), 0)::float8,
       (SELECT count(*) FROM jobs WHERE status = 'PENDING' AND attempt > budget_start),
       $1,
       (SELECT count(*) FROM jobs WHERE status = 'FAILED')
         + (SELECT count(*) FROM outbox WHERE status = 'DEAD')
         + (SELECT count(*) FROM webhook_deliveries WHERE status = 'DEAD'),
       coalesce(extract(epoch FROM now() - (SELECT min(created_at) FROM reviews
                                             WHERE status = 'PENDING')), 0)::float8
ON CONFLICT (minute) DO NOTHING
"#;

const SAMPLES_SINCE: &str = r#"
SELECT minute, outbox_age_seconds, retry_waiting, pending_age_seconds, terminal_failures,
       review_wait_seconds
FROM pilot_samples WHERE minute >= now() - make_interval(secs => $1) ORDER BY minute
"#;

impl Store {
    /// Writes this minute's sample unless another sampler already did; `pending_age_seconds`
    /// is what Redis said (`None` when it did not answer). Returns whether a row was written.
    pub async fn record_pilot_sample(&self, pending_age_seconds: Option<f64>) -> StoreResult<bool> {
        let written = sqlx::query(SAMPLE)
            .bind(pending_age_seconds.map(|s| s.max(0.0)))
            .execute(self.pool())
            .await?
            .rows_affected();
        Ok(written == 1)
    }

    /// The samples of the last `window`, oldest first.
    pub async fn pilot_samples(&self, window: Duration) -> StoreResult<Vec<PilotSample>> {
        Ok(sqlx::query_as(SAMPLES_SINCE)
            .bind(window.as_secs_f64())
            .fetch_all(self.pool())
            .await?)
    }
}
