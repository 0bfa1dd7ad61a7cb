//! The reconciler: makes PostgreSQL's view of due work true again, whatever Redis forgot or
//! whichever process died. Everything it emits goes through the worker's conditional claim, so
//! it can never create a second effect.

use crate::config::RuntimeConfig;
use crate::metric_names as m;
use crate::{pause, RuntimeError};
use ironclad_blobs::BlobStore;
use ironclad_core::faults::{FaultPoint, Faults};
use ironclad_queue::Queue;
use ironclad_store::Store;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Due jobs re-announced because no live message carried them.
    pub reemitted: u64,
    /// RUNNING jobs with an expired lease returned to PENDING.
    pub rescued: u64,
    /// RUNNING jobs with an expired lease on their last attempt, failed.
    pub failed: u64,
    /// Due jobs looked at whose message still waits in the stream (not announced again).
    pub still_queued: u64,
}

/// One reconciler (several may run; every statement is guarded and skips locked rows).
#[derive(Debug, Clone)]
pub struct Reconciler {
    store: Store,
    queue: Queue,
    blobs: BlobStore,
    config: RuntimeConfig,
    faults: Faults,
}

const BATCH: i64 = 1000;

/// How often the pilot measurements are sampled: the charts' resolution is a minute, and a
/// reconciler sampling more often only finds the minute already written.
const PILOT_SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_secs(20);

impl Reconciler {
    /// A reconciler over `store`, asking `queue` which announcements still wait in the stream,
    /// and sweeping `blobs` for orphans.
    pub fn new(
        store: Store,
        queue: Queue,
        blobs: BlobStore,
        config: RuntimeConfig,
        faults: Faults,
    ) -> Self {
        Self {
            store,
            queue,
            blobs,
            config,
            faults,
        }
    }

    /// Rescues lapsed leases and re-announces due jobs whose messages are gone.
    pub async fn sweep(&self) -> Result<SweepReport, RuntimeError> {
        let (rescued, failed) = self.store.rescue_expired_leases(BATCH).await?;
        crate::strike(&self.faults, FaultPoint::ReconcilerMidSweep).await?;
        let (reemitted, still_queued) = self.reemit_lost().await?;
        metrics::counter!(m::REEMITTED_TOTAL).increment(reemitted);
        metrics::counter!(m::LEASES_RESCUED_TOTAL).increment(rescued);
        if rescued + failed + reemitted > 0 {
            tracing::info!(rescued, failed, reemitted, "reconciler repaired work");
        }
        Ok(SweepReport {
            reemitted,
            rescued,
            failed,
            still_queued,
        })
    }

    /// Announces again the due jobs none of whose published messages still waits in Redis
    /// (in the stream, undelivered, or in a consumer's pending list); returns (announced,
    /// still queued). When Redis cannot be asked nothing is announced: a backlog that merely
    /// waits must never be multiplied, and the next sweep asks again.
    async fn reemit_lost(&self) -> Result<(u64, u64), RuntimeError> {
        let candidates = self
            .store
            .reemit_candidates(self.config.reemit_after, BATCH)
            .await?;
        if candidates.is_empty() {
            return Ok((0, 0));
        }
        let entries: Vec<String> = candidates
            .iter()
            .flat_map(|(_, ids)| ids.iter().cloned())
            .collect();
        let live = self.queue.live_entries(&entries).await?;
        let (waiting, lost): (Vec<_>, Vec<_>) = candidates
            .into_iter()
            .partition(|(_, ids)| ids.iter().any(|id| live.contains(id)));
        let lost: Vec<_> = lost.into_iter().map(|(job, _)| job).collect();
        let reemitted = self.store.reemit_jobs(&lost).await?;
        Ok((reemitted, waiting.len() as u64))
    }

    /// Deletes blobs no source references, older than the grace period.
    pub async fn sweep_blobs(&self) -> Result<ironclad_blobs::SweepReport, RuntimeError> {
        let store = self.store.clone();
        let report = self
            .blobs
            .sweep(self.config.blob_grace, move |keys| {
                let store = store.clone();
                async move { store.referenced_blobs(keys).await }
            })
            .await;
        match report {
            Ok(r) => Ok(r),
            Err(err) => {
                tracing::warn!(error = %err, "blob sweep failed");
                Ok(ironclad_blobs::SweepReport::default())
            }
        }
    }

    /// Records this minute's pilot measurements (the operations page's charts) unless another
    /// reconciler already did. A Redis that does not answer leaves the pending age unknown
    /// rather than skipping the minute: the other four still tell what happened.
    pub async fn sample_pilot_measures(&self) -> Result<bool, RuntimeError> {
        let pending = match self.queue.pending_summary().await {
            Ok(p) => Some(p.oldest_idle_ms as f64 / 1000.0),
            Err(err) => {
                tracing::debug!(error = %err, "pilot sample without the pending age");
                None
            }
        };
        Ok(self.store.record_pilot_sample(pending).await?)
    }

    /// Sweeps every `reconcile_every` until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut last_blob_sweep = Instant::now();
        let mut last_sample: Option<Instant> = None;
        loop {
            if let Err(err) = self.sweep().await {
                tracing::warn!(error = %err, "reconciler sweep failed");
            }
            if last_sample.is_none_or(|t| t.elapsed() >= PILOT_SAMPLE_EVERY) {
                last_sample = Some(Instant::now());
                if let Err(err) = self.sample_pilot_measures().await {
                    tracing::warn!(error = %err, "pilot sample failed");
                }
            }
            if last_blob_sweep.elapsed() >= self.config.blob_sweep_every {
                last_blob_sweep = Instant::now();
                let _ = self.sweep_blobs().await;
            }
            if pause(&shutdown, self.config.reconcile_every).await {
                break;
            }
        }
    }
}
