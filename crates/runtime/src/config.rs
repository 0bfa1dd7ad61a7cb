//! Timings and limits of the roles, with defaults that suit one machine.

use ironclad_core::RetryPolicy;
use std::time::Duration;

/// Settings shared by the roles.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// How long a claim on a job stays valid without renewal.
    ///
    /// Must outlast the renew interval by a slow PostgreSQL round trip, or a healthy long job
    /// loses its lease and runs twice. Recovery after a kill -9 takes at most this plus one
    /// reclaim or reconciler pass, which is why it is not minutes: with 15 s and the 10 s
    /// message idle threshold, a dead worker's job resumes within ~30 s.
    pub lease: Duration,
    /// How often a running job renews its lease and touches its message (a third of `lease`).
    pub lease_renew_every: Duration,
    /// Jobs one worker process runs at once.
    pub worker_concurrency: usize,
    /// Longest a single job may run before it is treated as a retryable timeout.
    pub job_timeout: Duration,
    /// How long SIGTERM waits for in-flight jobs before leaving them to lease expiry.
    pub shutdown_grace: Duration,
    /// Retry schedule and attempts per job.
    pub retry: RetryPolicy,
    /// How often a worker runs XAUTOCLAIM recovery.
    pub reclaim_every: Duration,
    /// Outbox rows claimed per dispatcher tick.
    pub dispatch_batch: i64,
    /// Pause between dispatcher ticks when there was nothing (or little) to publish.
    pub dispatch_idle: Duration,
    /// A row in PUBLISHING longer than this was abandoned by a dead dispatcher (or one whose
    /// claim's answer was lost) and returns to PENDING. Default 15 s: a batch's XADD takes
    /// milliseconds, and the work such a row announces waits at most this plus one maintenance
    /// pass (5 s); a slow dispatcher overtaken by it only publishes a harmless duplicate.
    pub outbox_lock_timeout: Duration,
    /// Publication attempts before an outbox row is DEAD.
    pub outbox_max_attempts: i32,
    /// First publication retry delay (doubles per attempt).
    pub outbox_backoff_base: Duration,
    /// Longest publication retry delay.
    pub outbox_backoff_max: Duration,
    /// PUBLISHED rows are deleted after this.
    pub outbox_retention: Duration,
    /// How often the reconciler sweeps.
    pub reconcile_every: Duration,
    /// A published message for a still-PENDING due job is presumed lost (Redis flushed or
    /// restarted) after this long, and the job is announced again. Duplicates are harmless
    /// (the claim is conditional), so erring short only costs a little work.
    pub reemit_after: Duration,
    /// Unreferenced blobs younger than this are left alone by the sweep (a request may be about
    /// to commit them).
    pub blob_grace: Duration,
    /// How often the blob sweep runs.
    pub blob_sweep_every: Duration,
    /// How long a worker holding a claim keeps retrying a store call that fails for a passing
    /// reason (PostgreSQL down or restarting) before giving up and leaving the message to
    /// recovery. Its lease keeper renews meanwhile, so the finished work is committed as soon
    /// as PostgreSQL answers again instead of being redone. Default 10 min.
    pub outcome_patience: Duration,
    /// Longest single store call a worker waits for before treating it as failed (and
    /// retrying on a fresh connection): a server that vanished without closing its
    /// connections would otherwise leave the call hanging. Default 30 s.
    pub store_call_timeout: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(15),
            lease_renew_every: Duration::from_secs(5),
            worker_concurrency: 8,
            job_timeout: Duration::from_secs(600),
            shutdown_grace: Duration::from_secs(20),
            retry: RetryPolicy::default(),
            reclaim_every: Duration::from_secs(5),
            dispatch_batch: 500,
            dispatch_idle: Duration::from_millis(50),
            outbox_lock_timeout: Duration::from_secs(15),
            outbox_max_attempts: 20,
            outbox_backoff_base: Duration::from_millis(500),
            outbox_backoff_max: Duration::from_secs(60),
            outbox_retention: Duration::from_secs(7 * 24 * 3600),
            reconcile_every: Duration::from_secs(5),
            reemit_after: Duration::from_secs(120),
            blob_grace: Duration::from_secs(3600),
            blob_sweep_every: Duration::from_secs(600),
            outcome_patience: Duration::from_secs(600),
            store_call_timeout: Duration::from_secs(30),
        }
    }
}

impl RuntimeConfig {
    /// Refuses combinations that break a promise; the message says which setting to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.lease < self.lease_renew_every * 2 {
            return Err(format!(
                "lease ({:?}) must be at least twice the renew interval ({:?}), or a slow renewal loses a live job",
                self.lease, self.lease_renew_every
            ));
        }
        if self.worker_concurrency == 0 {
            return Err("worker concurrency must be at least 1".into());
        }
        if self.outbox_max_attempts < 1 {
            return Err("outbox max attempts must be at least 1".into());
        }
        if self.dispatch_batch < 1 {
            return Err("dispatch batch must be at least 1".into());
        }
        self.retry.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_short_leases_are_refused() {
        assert!(RuntimeConfig::default().validate().is_ok());
        let bad = RuntimeConfig {
            lease: Duration::from_secs(5),
            ..RuntimeConfig::default()
        };
        assert!(bad.validate().is_err());
    }
}
