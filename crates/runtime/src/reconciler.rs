//! The reconciler: makes PostgreSQL's view of due work true again, whatever Redis forgot or
//! whichever process died. Everything it emits goes through the worker's conditional claim, so
//! it can never create a second effect.

use crate::config::RuntimeConfig;
use crate::metric_names as m;
use crate::{pause, RuntimeError};
use ironclad_blobs::BlobStore;
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
}

/// One reconciler (several may run; every statement is guarded and skips locked rows).
#[derive(Debug, Clone)]
pub struct Reconciler {
    store: Store,
    blobs: BlobStore,
    config: RuntimeConfig,
}

const BATCH: i64 = 1000;

impl Reconciler {
    /// A reconciler over `store`, sweeping `blobs` for orphans.
    pub fn new(store: Store, blobs: BlobStore, config: RuntimeConfig) -> Self {
        Self {
            store,
            blobs,
            config,
        }
    }

    /// Rescues expired leases and re-announces orphaned due jobs.
    pub async fn sweep(&self) -> Result<SweepReport, RuntimeError> {
        let (rescued, failed) = self.store.rescue_expired_leases(BATCH).await?;
        let reemitted = self
            .store
            .reemit_orphaned_jobs(self.config.reemit_after, BATCH)
            .await?;
        metrics::counter!(m::REEMITTED_TOTAL).increment(reemitted);
        metrics::counter!(m::LEASES_RESCUED_TOTAL).increment(rescued);
        if rescued + failed + reemitted > 0 {
            tracing::info!(rescued, failed, reemitted, "reconciler repaired work");
        }
        Ok(SweepReport {
            reemitted,
            rescued,
            failed,
        })
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

    /// Sweeps every `reconcile_every` until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut last_blob_sweep = Instant::now();
        loop {
            if let Err(err) = self.sweep().await {
                tracing::warn!(error = %err, "reconciler sweep failed");
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
