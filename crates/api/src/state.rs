//! What every request handler can reach: the stores, the queue, limits and fault points.

use ironclad_blobs::BlobStore;
use ironclad_core::faults::Faults;
use ironclad_core::RetryPolicy;
use ironclad_queue::Queue;
use ironclad_store::Store;
use metrics_exporter_prometheus::PrometheusHandle;
use std::sync::Arc;
use std::time::Duration;

/// Limits on one intake request, all enforced while the body streams in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntakeLimits {
    /// Largest accepted file, in bytes. Default 25 MiB: a 500-page scanned dossier split into
    /// a few files fits; a request is refused at the first byte beyond it.
    pub max_file_bytes: u64,
    /// Most files per case. Default 50.
    pub max_files: usize,
    /// Most pages across all files of a case. Default 500: the document step reads every page,
    /// so this bounds the work one request can enqueue.
    pub max_total_pages: u32,
}

impl Default for IntakeLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 25 * 1024 * 1024,
            max_files: 50,
            max_total_pages: 500,
        }
    }
}

impl IntakeLimits {
    /// The body limit handed to axum: every file at its maximum plus 1 MiB of multipart
    /// framing and text fields. The per-file limit normally trips first; this one only
    /// bounds what the streaming checks cannot see (framing, huge text parts).
    pub fn max_body_bytes(&self) -> usize {
        let files = (self.max_files as u64).saturating_mul(self.max_file_bytes);
        usize::try_from(files.saturating_add(1024 * 1024)).unwrap_or(usize::MAX)
    }
}

/// API settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiConfig {
    /// Intake limits.
    pub limits: IntakeLimits,
    /// Attempts allowed per job created by intake. Default: the core retry policy's (5).
    pub max_attempts: i32,
    /// Whole-request deadline, body upload included. Default 60 s; a request that takes longer
    /// is answered 503 `timeout` (an intake cut off mid-commit can be replayed safely with its
    /// `Idempotency-Key`).
    pub request_timeout: Duration,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            limits: IntakeLimits::default(),
            max_attempts: RetryPolicy::default().max_attempts,
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// Shared state of the application. Cheap to clone (every field is a handle).
#[derive(Clone)]
pub struct AppState {
    /// PostgreSQL, the source of truth.
    pub store: Store,
    /// Where uploaded bytes go.
    pub blobs: BlobStore,
    /// The job stream, if this process is configured with one; only readiness and metrics
    /// use it (intake goes through the outbox, never straight to Redis).
    pub queue: Option<Queue>,
    /// Settings.
    pub config: Arc<ApiConfig>,
    /// The process's Prometheus recorder, rendered by `/metrics`; `None` renders only the
    /// gauges read at scrape time.
    pub metrics: Option<PrometheusHandle>,
    /// Fault points armed by tests or `IRONCLAD_CRASH_AT`.
    pub faults: Faults,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("store", &self.store)
            .field("blobs", &self.blobs)
            .field("queue", &self.queue)
            .field("config", &self.config)
            .field("metrics", &self.metrics.is_some())
            .field("faults", &self.faults)
            .finish()
    }
}
