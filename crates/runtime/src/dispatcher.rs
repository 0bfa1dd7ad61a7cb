//! The outbox dispatcher: turns committed intents into stream messages.
//!
//! A batch is claimed under a fresh lock token, published in one pipelined XADD, then marked
//! PUBLISHED only where the token is still ours. A crash between XADD and the mark publishes the
//! batch again later (after the lock timeout): delivery is at-least-once by design, and the
//! worker's conditional claim makes the duplicate harmless.

use crate::config::RuntimeConfig;
use crate::metric_names as m;
use crate::{pause, RuntimeError};
use ironclad_core::faults::{FaultPoint, Faults};
use ironclad_queue::Queue;
use ironclad_store::outbox::OutboxBackoff;
use ironclad_store::Store;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Tries at marking a published batch (about 11 s of backoff in all).
const MARK_TRIES: u32 = 9;

/// What one tick did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatchReport {
    /// Rows claimed.
    pub claimed: usize,
    /// Rows marked PUBLISHED.
    pub published: u64,
    /// Rows released after a failed publication.
    pub released: u64,
    /// Rows that became DEAD.
    pub dead: u64,
}

/// One dispatcher. Several may run against the same database.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    store: Store,
    queue: Queue,
    config: RuntimeConfig,
    faults: Faults,
}

impl Dispatcher {
    /// A dispatcher over `store` and `queue`.
    pub fn new(store: Store, queue: Queue, config: RuntimeConfig, faults: Faults) -> Self {
        Self {
            store,
            queue,
            config,
            faults,
        }
    }

    fn backoff(&self) -> OutboxBackoff {
        OutboxBackoff {
            max_attempts: self.config.outbox_max_attempts,
            base: self.config.outbox_backoff_base,
            max: self.config.outbox_backoff_max,
        }
    }

    /// Claims, publishes and marks one batch.
    pub async fn tick(&self) -> Result<DispatchReport, RuntimeError> {
        let (token, batch) = self
            .store
            .outbox_claim_batch(self.config.dispatch_batch)
            .await?;
        let mut report = DispatchReport {
            claimed: batch.len(),
            ..DispatchReport::default()
        };
        if batch.is_empty() {
            return Ok(report);
        }
        crate::strike(&self.faults, FaultPoint::DispatcherAfterClaim).await?;
        let ids: Vec<_> = batch.iter().map(|r| r.id).collect();
        let bodies: Vec<String> = batch.into_iter().map(|r| r.payload).collect();
        let stream_ids = match self.queue.publish(&bodies).await {
            Ok(stream_ids) => stream_ids,
            Err(err) => {
                tracing::warn!(error = %err, rows = ids.len(), "publication failed; releasing the batch with backoff");
                let (released, dead) = self
                    .store
                    .outbox_release(&ids, token, &err.to_string(), self.backoff())
                    .await?;
                metrics::counter!(m::PUBLISH_FAILURES_TOTAL).increment(released);
                report.released = released;
                report.dead = dead;
                return Ok(report);
            }
        };
        crate::strike(&self.faults, FaultPoint::DispatcherAfterPublish).await?;
        // The messages are out: marking them is worth a few tries through a PostgreSQL blip
        // (else the rows wait for the lock timeout and are published a second time).
        let mut tries = 0u32;
        report.published = loop {
            match self
                .store
                .outbox_mark_published(&ids, token, &stream_ids)
                .await
            {
                Ok(marked) => break marked,
                Err(err) if err.is_transient() && tries < MARK_TRIES => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(250) * tries).await;
                }
                Err(err) => return Err(err.into()),
            }
        };
        metrics::counter!(m::PUBLISHED_TOTAL).increment(report.published);
        Ok(report)
    }

    /// Returns abandoned PUBLISHING rows and prunes old PUBLISHED ones.
    pub async fn maintain(&self) -> Result<(u64, u64), RuntimeError> {
        let reset = self
            .store
            .outbox_reset_stuck(
                self.config.outbox_lock_timeout,
                self.config.outbox_max_attempts,
            )
            .await?;
        let mut pruned = 0;
        // Small batches, a bounded number per pass: pruning must never starve publication.
        for _ in 0..10 {
            let n = self
                .store
                .outbox_prune(self.config.outbox_retention, 1000)
                .await?;
            pruned += n;
            if n < 1000 {
                break;
            }
        }
        if reset > 0 {
            tracing::warn!(
                rows = reset,
                "outbox rows abandoned in PUBLISHING returned to PENDING"
            );
        }
        Ok((reset, pruned))
    }

    /// Runs until `shutdown`: ticks back to back while there is a backlog, pauses when idle,
    /// backs off on errors.
    pub async fn run(self, shutdown: CancellationToken) {
        let maintain_every = Duration::from_secs(5).min(self.config.outbox_lock_timeout);
        let mut last_maintain = Instant::now() - maintain_every;
        let mut failures: u32 = 0;
        while !shutdown.is_cancelled() {
            if last_maintain.elapsed() >= maintain_every {
                if let Err(err) = self.maintain().await {
                    tracing::warn!(error = %err, "outbox maintenance failed");
                }
                last_maintain = Instant::now();
            }
            let wait = match self.tick().await {
                Ok(r) => {
                    failures = 0;
                    if r.claimed as i64 >= self.config.dispatch_batch && r.released == 0 {
                        Duration::ZERO
                    } else if r.released > 0 {
                        self.config.outbox_backoff_base
                    } else {
                        self.config.dispatch_idle
                    }
                }
                Err(err) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(error = %err, "dispatcher tick failed");
                    crate::retry_backoff(failures)
                }
            };
            if !wait.is_zero() && pause(&shutdown, wait).await {
                break;
            }
        }
    }
}
