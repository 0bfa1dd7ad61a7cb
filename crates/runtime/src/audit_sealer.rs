//! The audit sealer: puts committed audit events into their tenants' hash chains.
//!
//! Events are inserted unsealed so no writer waits on a chain's head (migration
//! `0008_audit_sealing.sql`); this loop, run by every role, seals them a moment after they
//! commit, so sealing goes on while any process of the deployment runs. Several sealers are
//! safe and do not queue on each other: a chain another sealer holds is skipped for the round
//! (migration `0014_audit_seal_in_order.sql`). A sealer killed mid-round loses nothing: the
//! round is one transaction, and the events stay unsealed until the next round, here or
//! elsewhere. A chain that cannot be sealed (a row planted behind the triggers' back) does not
//! stop the others; it shows as the oldest unsealed event's age, which the sealer watches.

use std::time::{Duration, Instant};

use ironclad_store::{Store, StoreError};
use tokio_util::sync::CancellationToken;

use crate::metric_names as m;
use crate::pause;

/// How often an idle sealer looks for new events: the window in which a committed event is
/// protected by the append-only trigger alone.
pub const DEFAULT_SEAL_EVERY: Duration = Duration::from_millis(200);

/// An event unsealed for longer than this is warned about (a healthy sealer seals within a
/// round or two): no sealer ran for a while, or a chain cannot be sealed.
pub const UNSEALED_WARN_AFTER: Duration = Duration::from_secs(60);

/// How often the sealer looks at the oldest unsealed event's age (and how often it repeats a
/// warning while the age stays high).
const AGE_CHECK_EVERY: Duration = Duration::from_secs(30);

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

    /// Warns when the oldest committed event has waited longer than [`UNSEALED_WARN_AFTER`]
    /// for its seal; answers that age in seconds (`None` when all are sealed).
    pub async fn check_backlog(&self) -> Result<Option<f64>, StoreError> {
        let age = self.store.audit_oldest_unsealed_age().await?;
        if let Some(seconds) = age.filter(|s| *s > UNSEALED_WARN_AFTER.as_secs_f64()) {
            tracing::warn!(
                oldest_unsealed_age_seconds = seconds,
                "an audit event has waited over a minute for its seal: a tenant's chain may be \
                 unsealable (see the database log's 'audit chain ... was not sealed' warnings \
                 and run `ironclad audit verify`)"
            );
        }
        Ok(age)
    }

    /// Runs until `shutdown`: rounds back to back while a backlog remains, every `every` when
    /// idle, backing off on errors (PostgreSQL down is a delay, not a loss).
    pub async fn run(self, shutdown: CancellationToken) {
        let mut failures: u32 = 0;
        let mut age_checked = Instant::now();
        while !shutdown.is_cancelled() {
            if age_checked.elapsed() >= AGE_CHECK_EVERY {
                age_checked = Instant::now();
                if let Err(err) = self.check_backlog().await {
                    tracing::debug!(error = %err, "could not read the audit sealing backlog");
                }
            }
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
