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
}

const GAUGES_OUTBOX: &str = r#"
SELECT count(*) FILTER (WHERE status = 'PENDING'),
       coalesce(extract(epoch FROM now() - min(available_at) FILTER (WHERE status = 'PENDING' AND available_at <= now())), 0)::float8,
       count(*) FILTER (WHERE status = 'DEAD')
FROM outbox WHERE status IN ('PENDING', 'DEAD')
"#;
const GAUGES_CASES: &str = "SELECT status, count(*) FROM cases GROUP BY status ORDER BY status";
const GAUGES_JOBS: &str = "SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status";

impl Store {
    /// Reads the pipeline gauges.
    pub async fn pipeline_gauges(&self) -> StoreResult<PipelineGauges> {
        let (outbox_pending, outbox_oldest_pending_age_seconds, outbox_dead): (i64, f64, i64) =
            sqlx::query_as(GAUGES_OUTBOX).fetch_one(self.pool()).await?;
        let cases_by_status = sqlx::query_as(GAUGES_CASES).fetch_all(self.pool()).await?;
        let jobs_by_status = sqlx::query_as(GAUGES_JOBS).fetch_all(self.pool()).await?;
        Ok(PipelineGauges {
            outbox_pending,
            outbox_oldest_pending_age_seconds,
            outbox_dead,
            cases_by_status,
            jobs_by_status,
        })
    }
}
