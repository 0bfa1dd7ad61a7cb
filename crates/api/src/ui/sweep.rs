//! Expired sessions are deleted by the processes that serve the desk: each API process runs
//! [`sweep_sessions_every`] beside its listener. The sweep is one idempotent DELETE, so
//! several API processes sweeping at once only repeat each other's no-op.

use ironclad_store::Store;
use std::time::Duration;

/// Deletes expired sessions (and forgotten once-shown secrets) every `every`, the first time
/// one period after start, until the task is dropped; a failed sweep is logged and tried
/// again next time.
pub async fn sweep_sessions_every(store: Store, every: Duration) {
    let every = every.max(Duration::from_millis(10));
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match store.sweep_sessions().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(sessions = n, "expired desk sessions deleted"),
            Err(e) => tracing::warn!(error = %e, "desk session sweep failed; trying again later"),
        }
    }
}
