//! The audit sealer: puts committed audit events into their tenants' hash chains.
//!
//! Events are inserted unsealed so no writer waits on a chain's head (migration
//! `0008_audit_sealing.sql`); this loop, run by the dispatcher role, seals them a moment after
//! they commit. Several sealers (several dispatchers) are safe: the database orders them per
//! chain. A sealer killed mid-round loses nothing: the round is one transaction, and the events
//! stay unsealed until the next round, here or elsewhere.

use std::time::Duration;

use ironclad_store::{Store, StoreError};
use tokio_util::sync::CancellationToken;

use crate::metric_names as m;
use crate::pause;

/// How often an idle sealer looks for new events: the window in which a committed event is
/// protected by the append-only trigger alone.
pub const DEFAULT_SEAL_EVERY: Duration = Duration::from_millis(200);

/// Seals audit events until shutdown.
pub struct AuditSealer {
    store: Store,
    every: Duration,
}

impl AuditSealer {
    /// A sealer that looks for events every `every` when idle.
    pub fn new(store: Store, every: Duration) -> Self {
        Self { store, every }
    }

    /// One round: seals what is committed (up to a batch per chain); answers how many.
    pub async fn tick(&self) -> Result<u64, StoreError> {
        let sealed = self.store.seal_audit_events().await?;
        metrics::counter!(m::AUDIT_SEALED_TOTAL).increment(sealed);
        Ok(sealed)
    }

    /// Runs until `shutdown`: rounds back to back while a backlog remains, every `every` when
    /// idle, backing off on errors (PostgreSQL down is a delay, not a loss).
    pub async fn run(self, shutdown: CancellationToken) {
        let mut failures: u32 = 0;
        while !shutdown.is_cancelled() {
            let wait = match self.tick().await {
                Ok(sealed) => {
                    failures = 0;
                    if sealed >= u64::try_from(ironclad_store::audit::SEAL_BATCH).unwrap_or(1) {
                        Duration::ZERO
                    } else {
                        self.every
                    }
                }
                Err(err) => {
                    failures = failures.saturating_add(1);
                    metrics::counter!(m::AUDIT_SEAL_FAILURES_TOTAL).increment(1);
                    tracing::warn!(error = %err, "audit sealing failed; retrying");
                    crate::retry_backoff(failures)
                }
            };
            if !wait.is_zero() && pause(&shutdown, wait).await {
                break;
            }
        }
    }
}
