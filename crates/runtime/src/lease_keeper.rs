//! Keeps a running job's claim alive: renews the PostgreSQL lease and touches the stream
//! message, so neither the reconciler nor XAUTOCLAIM takes work from a live worker.

use ironclad_queue::Queue;
use ironclad_store::jobs::ClaimedJob;
use ironclad_store::{Store, Transition};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A running renewal; stops when dropped.
pub struct LeaseKeeper {
    stop: CancellationToken,
    lost: Arc<AtomicBool>,
}

impl LeaseKeeper {
    /// Starts renewing `job` every `every`, for `lease` each time, touching `message_id`.
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
        let (stop2, lost2) = (stop.clone(), lost.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop2.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
                match store.renew_lease(&job, lease).await {
                    Ok(Transition::Applied) => {}
                    Ok(Transition::Stale) => {
                        tracing::warn!(job_id = %job.id, "lease lost; the outcome of this run will be discarded");
                        lost2.store(true, Ordering::SeqCst);
                        return;
                    }
                    // A failed renewal is not a lost lease yet; the next one may succeed.
                    Err(err) => {
                        tracing::warn!(job_id = %job.id, error = %err, "lease renewal failed")
                    }
                }
                if let Err(err) = queue.touch(std::slice::from_ref(&message_id)).await {
                    tracing::debug!(job_id = %job.id, error = %err, "message touch failed");
                }
            }
        });
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
