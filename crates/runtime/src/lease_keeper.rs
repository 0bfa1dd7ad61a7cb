//! Keeps a running job's claim alive: renews the PostgreSQL lease and touches the stream
//! message, so neither the reconciler nor XAUTOCLAIM takes work from a live worker.
//!
//! The two run as independent loops. A renewal stuck on an unreachable PostgreSQL (each try
//! can take the whole connect timeout) must not delay the touch: a message left idle past the
//! claim threshold is reclaimed by another worker, which can only look at it and leave it, but
//! each such delivery is noise in the pending list. A failed renewal is retried with backoff
//! well inside the lease, and a renewal that lands after the lease ran out still counts: the
//! lease is lost only when another run took the job (the token no longer matches).

use ironclad_queue::Queue;
use ironclad_store::jobs::ClaimedJob;
use ironclad_store::{Store, Transition};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// First retry delay after a failed renewal; doubles up to half the renew interval.
const RENEW_RETRY_FIRST: Duration = Duration::from_millis(200);

/// A running renewal; stops when dropped.
pub struct LeaseKeeper {
    stop: CancellationToken,
    lost: Arc<AtomicBool>,
}

impl LeaseKeeper {
    /// Starts renewing `job` every `every`, for `lease` each time, and touching `message_id`
    /// every `every`.
    pub fn start(
        store: Store,
        queue: Queue,
        job: ClaimedJob,
        message_id: String,
        lease: Duration,
        every: Duration,
    ) -> Self {
        let stop = CancellationToken::new();
        let lost = Arc::new(AtomicBool::new(false));
        tokio::spawn(renew_loop(
            store,
            job.clone(),
            lease,
            every,
            stop.clone(),
            lost.clone(),
        ));
        tokio::spawn(touch_loop(queue, job, message_id, every, stop.clone()));
        Self { stop, lost }
    }

    /// Whether a renewal found the lease taken by someone else.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn renew_loop(
    store: Store,
    job: ClaimedJob,
    lease: Duration,
    every: Duration,
    stop: CancellationToken,
    lost: Arc<AtomicBool>,
) {
    let mut wait = every;
    let mut failures: u32 = 0;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        // Bounded by the interval: a call hanging on a vanished server is abandoned and
        // tried again on a fresh connection.
        let renewal = tokio::select! {
            _ = stop.cancelled() => return,
            r = tokio::time::timeout(every, store.renew_lease(&job, lease)) => r,
        };
        match renewal {
            Ok(Ok(Transition::Applied)) => {
                if failures > 0 {
                    tracing::info!(job_id = %job.id, failures, "lease renewed again");
                }
                failures = 0;
                wait = every;
            }
            Ok(Ok(Transition::Stale)) => {
                // The run's own commit also clears the token; only a renewal that was not
                // cancelled first means someone else holds the job now.
                if !stop.is_cancelled() {
                    tracing::warn!(job_id = %job.id, "lease lost; the outcome of this run will be discarded");
                    lost.store(true, Ordering::SeqCst);
                }
                return;
            }
            failed => {
                failures = failures.saturating_add(1);
                let error = match failed {
                    Ok(Err(err)) => err.to_string(),
                    _ => format!("no answer within {every:?}"),
                };
                wait = RENEW_RETRY_FIRST
                    .saturating_mul(1 << failures.min(8))
                    .min(every / 2);
                tracing::warn!(job_id = %job.id, failures, %error, retry_in = ?wait, "lease renewal failed; retrying");
            }
        }
    }
}

async fn touch_loop(
    queue: Queue,
    job: ClaimedJob,
    message_id: String,
    every: Duration,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let touched =
            tokio::time::timeout(every, queue.touch(std::slice::from_ref(&message_id))).await;
        match touched {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                tracing::debug!(job_id = %job.id, error = %err, "message touch failed")
            }
            Err(_) => tracing::debug!(job_id = %job.id, "message touch timed out"),
        }
    }
}
