//! What every request handler can reach: the stores, the queue, limits and fault points.

use ironclad_blobs::BlobStore;
use ironclad_core::faults::Faults;
use ironclad_core::RetryPolicy;
use ironclad_documents::compiler::ReadingCompiler;
use ironclad_documents::preview::PagePreviewer;
use ironclad_documents::regions::RegionReader;
use ironclad_queue::Queue;
use ironclad_runtime::workflows::WorkflowCatalog;
use ironclad_store::users::SessionPolicy;
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

/// A token-bucket rate: `per_second` requests a second on average, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Sustained requests per second.
    pub per_second: u32,
    /// Requests accepted back to back after a quiet period (the bucket's size).
    pub burst: u32,
}

impl RateLimit {
    /// `Some` limit, or `None` (no limit) when either number is 0: lets a CLI map
    /// "0" to "disabled" without a special case.
    pub fn new(per_second: u32, burst: u32) -> Option<Self> {
        (per_second > 0 && burst > 0).then_some(Self { per_second, burst })
    }
}

/// Settings of the operator's desk (the web UI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeskConfig {
    /// How long sessions live. Default: 2 h idle, 12 h at most (a working day).
    pub sessions: SessionPolicy,
    /// The desk's cookies are `Secure` and `__Host-` prefixed (default). Browsers accept them
    /// over HTTPS and from `http://localhost` / `http://127.0.0.1`; only plain HTTP on another
    /// address (a development box on a LAN) needs this off, which drops the prefix too.
    pub secure_cookies: bool,
    /// Sign-in attempts per minute per account and per address; 0 disables. Default 10, with
    /// a burst of 5: a person who mistypes is not held up, a password guesser gets 10 a minute.
    pub login_attempts_per_minute: u32,
    /// Page previews kept in memory, in MiB. Default 128 (a few hundred pages).
    pub preview_cache_mib: u64,
    /// How often an API process deletes expired sessions. Default 10 min.
    pub session_sweep_every: Duration,
}

impl Default for DeskConfig {
    fn default() -> Self {
        Self {
            sessions: SessionPolicy {
                idle: Duration::from_secs(2 * 3600),
                lifetime: Duration::from_secs(12 * 3600),
            },
            secure_cookies: true,
            login_attempts_per_minute: 10,
            preview_cache_mib: 128,
            session_sweep_every: Duration::from_secs(600),
        }
    }
}

/// API settings.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiConfig {
    /// Intake limits.
    pub limits: IntakeLimits,
    /// Attempts allowed per job created by intake. Default: the core retry policy's (5).
    pub max_attempts: i32,
    /// Whole-request deadline, body upload included. Default 60 s; a request that takes longer
    /// is answered 503 `timeout` (an intake cut off mid-commit can be replayed safely with its
    /// `Idempotency-Key`).
    pub request_timeout: Duration,
    /// Intake requests handled at once by this process; one more is answered 503 `busy` with
    /// `Retry-After` at once rather than queued. Default 32: a small intake takes ~20 ms, so
    /// 32 slots carry ~1,500 cases/s. Each intake holds at most one file in memory, so file
    /// buffers stay below about `max_concurrent_intakes × max_file_bytes` (default 32 × 25 MiB
    /// = 800 MiB, plus the parser's working memory). 0 counts as 1.
    pub max_concurrent_intakes: usize,
    /// Intakes one tenant may run at once, within `max_concurrent_intakes`; `None` (default)
    /// means half the slots (at least 1). Without a share, one operator key uploading slowly
    /// holds every slot and every other tenant is answered 503. 0 counts as 1.
    pub intake_slots_per_tenant: Option<usize>,
    /// Slowest upload accepted, in bytes per second of waiting for the client; 0 disables.
    /// Default 16 KiB/s (a 25 MiB file in 27 min would pass; a 1 byte/s trickle that holds a
    /// slot to the request deadline does not). Only time spent waiting for the client's
    /// bytes counts, not our own inspection or disk writes.
    pub intake_min_bytes_per_sec: u64,
    /// How long an upload may wait for the client before its rate is judged. Default 5 s: a
    /// phone on a bad network may stall a few seconds at the start of an upload.
    pub intake_rate_grace: Duration,
    /// Longest time one file's inspection (type, structure, page count) may take; past it the
    /// file is refused 413 `document_too_large`. Default 20 s: an honest 25 MiB PDF takes well
    /// under a second.
    pub inspect_timeout: Duration,
    /// Rate per API key, checked after authentication; `None` disables. Default 200/s with a
    /// burst of 400: a client polling its cases and submitting at full speed stays far below
    /// it (intake itself is bounded by `max_concurrent_intakes`), while a leaked key used from
    /// many addresses is capped as a whole.
    pub key_rate_limit: Option<RateLimit>,
    /// Rate per client address (IPv4 address, IPv6 /64), checked before authentication, so
    /// requests with bad keys count here; `None` disables. Default 100/s with a burst of 200:
    /// a UI page load or a CLI run is a few dozen requests. Behind a reverse proxy, list it in
    /// [`ApiConfig::trusted_proxies`], or every client shares the proxy's bucket. `/healthz` and
    /// `/readyz` are never limited.
    pub address_rate_limit: Option<RateLimit>,
    /// Reverse proxies whose `X-Forwarded-For` is believed (addresses or CIDR ranges). Empty
    /// (default): the TCP peer is the client. A request from one of these peers is keyed by
    /// the rightmost address in `X-Forwarded-For` that is not itself a trusted proxy, for the
    /// rate limits and the desk's sign-in throttle; anyone else's header is ignored, since a
    /// client can write any `X-Forwarded-For` it likes.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Argon2 hashes (desk sign-in, password changes) computed at once by this process.
    /// Default 2: each takes ≈19 MiB and a core for tens of milliseconds.
    pub password_hashes_at_once: usize,
    /// Hashes that may wait for one of those places; one more is answered 503 with
    /// `Retry-After` rather than queued. Default 16 (well under a second of waiting).
    pub password_hash_queue: usize,
    /// Bearer token required to scrape `/metrics`; `None` (default) leaves it open. Compared
    /// in constant time; never printed by `Debug`.
    pub metrics_token: Option<String>,
    /// Whether the API listener serves `/metrics` (default true). Set false when metrics are
    /// served on their own listener ([`crate::serve_metrics`]); the API then answers 404.
    pub metrics_on_api_listener: bool,
    /// The workflow a case that names none runs under. Intake pins every case to the newest
    /// stored version of its workflow, so all its sources are read under one version even
    /// during a rolling restart; `None` leaves the pin to the first worker that reads it.
    pub default_workflow: Option<String>,
    /// Whether a webhook endpoint may be created at `localhost` or at an IP literal outside the
    /// public address space (loopback, private, link-local, CGNAT, multicast, …). Default
    /// false: such a URL is refused 400 `invalid_url`, so that a tenant admin cannot aim the
    /// deliverer at our own network. Set (`IRONCLAD_WEBHOOK_ALLOW_PRIVATE`) for on-premise
    /// receivers; the deliverer has the same setting for the addresses it connects to.
    pub webhook_allow_private: bool,
    /// Active (not disabled) webhook endpoints one tenant may have. Default 20
    /// (`IRONCLAD_WEBHOOK_MAX_ENDPOINTS`); one more is refused 409 `too_many_webhooks`. Each
    /// endpoint multiplies every notification into a delivery and takes its own share of the
    /// deliverers' slots, so the cap bounds what one tenant can ask of them.
    pub webhook_max_endpoints: u32,
    /// The operator's desk.
    pub desk: DeskConfig,
    /// How long a reviewer's claim on a case's review lasts unless renewed. Default 15 min:
    /// the desk renews it every minute while the case's page is open, so a claim outlives
    /// its reviewer's page by at most this.
    pub review_claim: Duration,
}

impl ApiConfig {
    /// The intake slots one tenant may hold: [`ApiConfig::intake_slots_per_tenant`], or half
    /// of the shared ones, never more than those nor less than 1.
    pub fn intake_tenant_share(&self) -> usize {
        let total = self.max_concurrent_intakes.max(1);
        self.intake_slots_per_tenant
            .unwrap_or(total / 2)
            .clamp(1, total)
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            limits: IntakeLimits::default(),
            max_attempts: RetryPolicy::default().max_attempts,
            request_timeout: Duration::from_secs(60),
            max_concurrent_intakes: 32,
            intake_slots_per_tenant: None,
            intake_min_bytes_per_sec: 16 * 1024,
            intake_rate_grace: Duration::from_secs(5),
            inspect_timeout: Duration::from_secs(20),
            key_rate_limit: RateLimit::new(200, 400),
            address_rate_limit: RateLimit::new(100, 200),
            trusted_proxies: Vec::new(),
            password_hashes_at_once: 2,
            password_hash_queue: 16,
            metrics_token: None,
            metrics_on_api_listener: true,
            default_workflow: None,
            webhook_allow_private: false,
            webhook_max_endpoints: ironclad_store::webhooks::DEFAULT_MAX_ENDPOINTS,
            desk: DeskConfig::default(),
            review_claim: Duration::from_secs(15 * 60),
        }
    }
}

impl std::fmt::Debug for ApiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiConfig")
            .field("limits", &self.limits)
            .field("max_attempts", &self.max_attempts)
            .field("request_timeout", &self.request_timeout)
            .field("max_concurrent_intakes", &self.max_concurrent_intakes)
            .field("intake_slots_per_tenant", &self.intake_slots_per_tenant)
            .field("intake_min_bytes_per_sec", &self.intake_min_bytes_per_sec)
            .field("intake_rate_grace", &self.intake_rate_grace)
            .field("inspect_timeout", &self.inspect_timeout)
            .field("key_rate_limit", &self.key_rate_limit)
            .field("address_rate_limit", &self.address_rate_limit)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("password_hashes_at_once", &self.password_hashes_at_once)
            .field("password_hash_queue", &self.password_hash_queue)
            .field(
                "metrics_token",
                &self.metrics_token.as_ref().map(|_| "<redacted>"),
            )
            .field("metrics_on_api_listener", &self.metrics_on_api_listener)
            .field("default_workflow", &self.default_workflow)
            .field("webhook_allow_private", &self.webhook_allow_private)
            .field("webhook_max_endpoints", &self.webhook_max_endpoints)
            .field("desk", &self.desk)
            .field("review_claim", &self.review_claim)
            .finish()
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
    /// Compiles the stored workflow files rulesets are validated and applied against: the
    /// binary hands it the reading implementation its workers read with.
    pub compiler: Arc<dyn ReadingCompiler>,
    /// Renders the page images the desk shows: the binary hands it the reading
    /// implementation, so a page is shown as it was read.
    pub previews: Arc<dyn PagePreviewer>,
    /// Reads a box a reviewer drew on a page (a correction): the binary hands it the second
    /// look's crop reader.
    pub regions: Arc<dyn RegionReader>,
}

impl AppState {
    /// The workflow versions cases are pinned to, resolved as the worker resolves them and
    /// compiled with [`AppState::compiler`] (the API keeps no compiled workflow between
    /// requests).
    pub fn workflows(&self) -> WorkflowCatalog {
        WorkflowCatalog::new(
            self.store.clone(),
            Arc::clone(&self.compiler),
            self.config.default_workflow.clone(),
            [],
        )
    }
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
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_token_never_prints() {
        let config = ApiConfig {
            metrics_token: Some("s3cret-token".into()),
            ..ApiConfig::default()
        };
        let printed = format!("{config:?}");
        assert!(!printed.contains("s3cret"), "{printed}");
        assert!(printed.contains("<redacted>"));
    }

    #[test]
    fn a_zero_rate_disables_the_limit() {
        assert_eq!(RateLimit::new(0, 10), None);
        assert_eq!(RateLimit::new(10, 0), None);
        assert_eq!(
            RateLimit::new(2, 3),
            Some(RateLimit {
                per_second: 2,
                burst: 3
            })
        );
    }
}
