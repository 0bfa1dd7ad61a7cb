//! Settings: flags, then `IRONCLAD_*` / `DATABASE_URL` / `REDIS_URL` environment variables, then
//! defaults that work against a local PostgreSQL and Redis. `validate()` refuses combinations
//! that would break a promise before anything starts.

use anyhow::Context;
use clap::Args;
use ironclad_core::RetryPolicy;
use ironclad_runtime::webhooks::DeliveryConfig;
use ironclad_runtime::RuntimeConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Parses `500ms`, `30s`, `2m`, `1h`, `7d` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?} (e.g. 500ms, 30s, 2m, 1h, 7d)"))?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        _ => {
            return Err(format!(
                "unknown unit in duration {text:?} (use ms, s, m, h or d)"
            ))
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

/// A comma-separated list of retry delays (a newtype, so clap takes it as one value).
#[derive(Debug, Clone, PartialEq)]
pub struct Delays(pub Vec<Duration>);

fn parse_delays(text: &str) -> Result<Delays, String> {
    text.split(',')
        .map(parse_duration)
        .collect::<Result<Vec<_>, _>>()
        .map(Delays)
}

/// Where the services are.
#[derive(Debug, Clone, Args)]
pub struct Connections {
    /// PostgreSQL URL.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/ironclad",
        global = true
    )]
    pub database_url: String,
    /// Redis URL.
    #[arg(
        long,
        env = "REDIS_URL",
        default_value = "redis://127.0.0.1:6379/",
        global = true
    )]
    pub redis_url: String,
    /// Prefix for the stream, dead-letter stream and group names (isolates several deployments
    /// sharing one Redis).
    #[arg(long, env = "IRONCLAD_STREAM_PREFIX", global = true)]
    pub stream_prefix: Option<String>,
    /// PostgreSQL connections per process.
    #[arg(long, env = "IRONCLAD_DB_POOL", default_value_t = 16, global = true)]
    pub db_pool: u32,
    /// Extra PostgreSQL connections kept for lease renewals (0: share the main pool).
    #[arg(
        long,
        env = "IRONCLAD_DB_LEASE_POOL",
        default_value_t = 2,
        global = true
    )]
    pub db_lease_pool: u32,
    /// Longest wait for a PostgreSQL connection.
    #[arg(long, env = "IRONCLAD_DB_ACQUIRE_TIMEOUT", default_value = "10s", value_parser = parse_duration, global = true)]
    pub db_acquire_timeout: Duration,
    /// Server-side `statement_timeout` of every session.
    #[arg(long, env = "IRONCLAD_DB_STATEMENT_TIMEOUT", default_value = "60s", value_parser = parse_duration, global = true)]
    pub db_statement_timeout: Duration,
    /// Server-side `lock_timeout` of every session.
    #[arg(long, env = "IRONCLAD_DB_LOCK_TIMEOUT", default_value = "10s", value_parser = parse_duration, global = true)]
    pub db_lock_timeout: Duration,
    /// Server-side `idle_in_transaction_session_timeout` of every session.
    #[arg(long, env = "IRONCLAD_DB_IDLE_IN_TRANSACTION_TIMEOUT", default_value = "60s", value_parser = parse_duration, global = true)]
    pub db_idle_in_transaction_timeout: Duration,
    /// TCP keepalive idle time on the server's side of every connection.
    #[arg(long, env = "IRONCLAD_DB_KEEPALIVE", default_value = "30s", value_parser = parse_duration, global = true)]
    pub db_keepalive: Duration,
    /// PgBouncer in front of PostgreSQL: `transaction` for its `pool_mode = transaction`
    /// (no session settings, no cached prepared statements, every statement in a transaction);
    /// `off` talks to PostgreSQL as to itself. See docs/pgbouncer.md.
    #[arg(long, env = "IRONCLAD_PGBOUNCER", default_value = "off", global = true)]
    pub pgbouncer: ironclad_store::Pooler,
    /// PostgreSQL URL migrations use instead of DATABASE_URL: PostgreSQL itself (or a
    /// session-mode pool). Required with IRONCLAD_PGBOUNCER=transaction.
    #[arg(long, env = "IRONCLAD_MIGRATE_DATABASE_URL", global = true)]
    pub migrate_database_url: Option<String>,
}

impl Connections {
    /// The PostgreSQL pool settings.
    pub fn pool(&self) -> ironclad_store::PoolSettings {
        ironclad_store::PoolSettings {
            max_connections: self.db_pool,
            lease_connections: self.db_lease_pool,
            acquire_timeout: self.db_acquire_timeout,
            statement_timeout: self.db_statement_timeout,
            lock_timeout: self.db_lock_timeout,
            idle_in_transaction_timeout: self.db_idle_in_transaction_timeout,
            keepalive_idle: self.db_keepalive,
            pooler: self.pgbouncer,
            migrate_url: self.migrate_database_url.clone(),
        }
    }
}

/// Where the blob store is: a local directory, or S3-compatible object storage shared by hosts.
#[derive(Debug, Clone, Args)]
pub struct BlobLocation {
    /// Directory of the content-addressed blob store; with `--blob-url s3://…`, the staging
    /// area of uploads and the cache of verified downloads.
    #[arg(long, env = "IRONCLAD_BLOB_DIR", default_value = ".state/blobs")]
    pub blob_dir: PathBuf,
    /// Where the bytes live: `file:///path` or `s3://bucket/prefix` (credentials, region and
    /// endpoint from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL,
    /// AWS_ALLOW_HTTP). Unset: the directory --blob-dir.
    #[arg(long, env = "IRONCLAD_BLOB_URL")]
    pub blob_url: Option<String>,
    /// How long an object store request may keep retrying before it fails (an upload that
    /// cannot finish within it makes intake answer 503).
    #[arg(long, env = "IRONCLAD_BLOB_RETRY_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub blob_retry_timeout: Duration,
}

impl BlobLocation {
    /// Opens the store (creating the local directory), without contacting an object store.
    pub fn open(&self) -> anyhow::Result<ironclad_blobs::BlobStore> {
        std::fs::create_dir_all(&self.blob_dir)
            .with_context(|| format!("creating blob directory {}", self.blob_dir.display()))?;
        let store = match &self.blob_url {
            None => ironclad_blobs::BlobStore::open(&self.blob_dir),
            Some(url) => ironclad_blobs::BlobStore::open_url(
                url,
                &self.blob_dir,
                ironclad_blobs::RemoteSettings {
                    retry_timeout: self.blob_retry_timeout,
                    ..Default::default()
                },
            ),
        };
        store.with_context(|| format!("opening blob store {}", self.describe()))
    }

    /// The URL if set, else the directory.
    pub fn describe(&self) -> String {
        match &self.blob_url {
            Some(url) => url.clone(),
            None => self.blob_dir.display().to_string(),
        }
    }
}

/// Settings of the long-running roles.
#[derive(Debug, Clone, Args)]
pub struct RoleSettings {
    /// Address the HTTP API listens on.
    #[arg(long, env = "IRONCLAD_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Where uploaded bytes are stored.
    #[command(flatten)]
    pub blobs: BlobLocation,
    /// Document processor, by name: `reading` (text layer + Tesseract OCR + workflow
    /// extraction), `openai` (an OpenAI-compatible model, values verified on the page),
    /// `stand-in` (verifies and counts pages only), or a test processor such as `test:sleep=5s`.
    #[arg(long, env = "IRONCLAD_PROCESSOR", default_value = "reading")]
    pub processor: String,
    /// Workflow file applied by the `reading` processor (default: the built-in trade workflow).
    #[arg(long, env = "IRONCLAD_WORKFLOW")]
    pub workflow: Option<PathBuf>,
    /// Tesseract languages for the `reading` processor.
    #[arg(long, env = "IRONCLAD_OCR_LANGUAGES", default_value = "eng+fra")]
    pub ocr_languages: String,
    /// Scale scanned pages so their body text is about this many pixels tall before OCR
    /// (faster, same accuracy; never enlarged); 0 reads them at full resolution.
    #[arg(long, env = "IRONCLAD_OCR_TEXT_HEIGHT")]
    pub ocr_text_height: Option<u32>,
    /// Read again, region by region, where a doubtful value should be (missing, conflicting,
    /// below the confidence floor, of the wrong shape); `false` keeps the first reading.
    #[arg(long, env = "IRONCLAD_SECOND_LOOK", default_value_t = true, action = clap::ArgAction::Set)]
    pub second_look: bool,
    /// Directory caching read pages by content hash (a reprocess or duplicate upload is not
    /// OCRed twice).
    #[arg(long, env = "IRONCLAD_PAGE_CACHE_DIR")]
    pub page_cache_dir: Option<PathBuf>,
    /// Base URL of an OpenAI-compatible server (`IRONCLAD_PROCESSOR=openai`), e.g.
    /// `http://127.0.0.1:8000/v1`.
    #[arg(long, env = "IRONCLAD_PROVIDER_URL")]
    pub provider_url: Option<String>,
    /// Model name for the provider.
    #[arg(long, env = "IRONCLAD_PROVIDER_MODEL")]
    pub provider_model: Option<String>,
    /// API key for the provider.
    #[arg(long, env = "IRONCLAD_PROVIDER_KEY", hide_env_values = true)]
    pub provider_key: Option<String>,
    /// Provider request timeout.
    #[arg(long, env = "IRONCLAD_PROVIDER_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub provider_timeout: Duration,
    /// How often each role seals new audit events into their tenants' hash chains
    /// (an event is protected by the append-only trigger alone until then).
    #[arg(long, env = "IRONCLAD_AUDIT_SEAL_EVERY", default_value = "200ms", value_parser = parse_duration)]
    pub audit_seal_every: Duration,
    /// Jobs one worker process runs at once.
    #[arg(long, env = "IRONCLAD_WORKER_CONCURRENCY", default_value_t = 8)]
    pub worker_concurrency: usize,
    /// Job lease (renewed every third of it).
    #[arg(long, env = "IRONCLAD_LEASE", default_value = "15s", value_parser = parse_duration)]
    pub lease: Duration,
    /// Longest single job run.
    #[arg(long, env = "IRONCLAD_JOB_TIMEOUT", default_value = "10m", value_parser = parse_duration)]
    pub job_timeout: Duration,
    /// After SIGTERM/Ctrl-C: how long in-flight work (jobs, requests, publications) may take to
    /// finish before the process exits; a job still running then is rescued when its lease
    /// lapses. Keep the supervisor's stop timeout above it plus 5 s.
    #[arg(long, env = "IRONCLAD_SHUTDOWN_GRACE", default_value = "20s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,
    /// Retry delays, comma-separated; the last repeats.
    #[arg(long, env = "IRONCLAD_RETRY_DELAYS", default_value = "30s,2m,10m,1h", value_parser = parse_delays)]
    pub retry_delays: Delays,
    /// Attempts per job, the first run included.
    #[arg(long, env = "IRONCLAD_MAX_ATTEMPTS", default_value_t = 5)]
    pub max_attempts: i32,
    /// Stream deliveries after which a message is dead-lettered.
    #[arg(long, env = "IRONCLAD_MAX_DELIVERIES", default_value_t = 5)]
    pub max_deliveries: u64,
    /// Idle time after which another worker may take a pending message (XAUTOCLAIM).
    #[arg(long, env = "IRONCLAD_CLAIM_IDLE", default_value = "10s", value_parser = parse_duration)]
    pub claim_idle: Duration,
    /// How often a worker runs XAUTOCLAIM recovery.
    #[arg(long, env = "IRONCLAD_RECLAIM_EVERY", default_value = "5s", value_parser = parse_duration)]
    pub reclaim_every: Duration,
    /// Outbox rows per dispatcher batch.
    #[arg(long, env = "IRONCLAD_DISPATCH_BATCH", default_value_t = 500)]
    pub dispatch_batch: i64,
    /// Publication attempts before an outbox row is DEAD.
    #[arg(long, env = "IRONCLAD_OUTBOX_MAX_ATTEMPTS", default_value_t = 20)]
    pub outbox_max_attempts: i32,
    /// A PUBLISHING row older than this was abandoned (its dispatcher died or lost its answer)
    /// and is published again.
    #[arg(long, env = "IRONCLAD_OUTBOX_LOCK_TIMEOUT", default_value = "15s", value_parser = parse_duration)]
    pub outbox_lock_timeout: Duration,
    /// PUBLISHED rows are pruned after this.
    #[arg(long, env = "IRONCLAD_OUTBOX_RETENTION", default_value = "7d", value_parser = parse_duration)]
    pub outbox_retention: Duration,
    /// Longest one webhook attempt may take, connecting and reading the answer included.
    #[arg(long, env = "IRONCLAD_WEBHOOK_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub webhook_timeout: Duration,
    /// Attempts per webhook delivery before it is DEAD (an admin may requeue it).
    #[arg(long, env = "IRONCLAD_WEBHOOK_MAX_ATTEMPTS", default_value_t = 8)]
    pub webhook_max_attempts: i32,
    /// Delays before the 1st, 2nd, … webhook retry (the last repeats), jittered ±20 %.
    #[arg(long, env = "IRONCLAD_WEBHOOK_RETRY_DELAYS", default_value = "10s,30s,2m,10m,30m,1h", value_parser = parse_delays)]
    pub webhook_retry_delays: Delays,
    /// Pause between the deliverer's looks for due webhook deliveries when none was due.
    #[arg(long, env = "IRONCLAD_WEBHOOK_POLL", default_value = "1s", value_parser = parse_duration)]
    pub webhook_poll: Duration,
    /// Let webhooks reach loopback, private, link-local, CGNAT and other non-public addresses
    /// (on-premise receivers). Off: such URLs are refused at creation and such addresses when
    /// the deliverer connects.
    #[arg(long, env = "IRONCLAD_WEBHOOK_ALLOW_PRIVATE", default_value_t = false, action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub webhook_allow_private: bool,
    /// Active webhook endpoints one tenant may have; creating one more is refused (409
    /// `too_many_webhooks`).
    #[arg(long, env = "IRONCLAD_WEBHOOK_MAX_ENDPOINTS", default_value_t = ironclad_store::webhooks::DEFAULT_MAX_ENDPOINTS, value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_max_endpoints: u32,
    /// A desk session unused this long ends.
    #[arg(long, env = "IRONCLAD_SESSION_IDLE", default_value = "2h", value_parser = parse_duration)]
    pub session_idle: Duration,
    /// How long a reviewer's claim on a case's review lasts unless renewed (the desk renews it
    /// while the case's page is open).
    #[arg(long, env = "IRONCLAD_REVIEW_CLAIM", default_value = "15m", value_parser = parse_duration)]
    pub review_claim: Duration,
    /// A desk session ends this long after sign-in, however used.
    #[arg(long, env = "IRONCLAD_SESSION_LIFETIME", default_value = "12h", value_parser = parse_duration)]
    pub session_lifetime: Duration,
    /// The desk's cookies are Secure and `__Host-` prefixed (`__Host-ironclad_session`).
    /// Browsers take them over HTTPS and from http://localhost or http://127.0.0.1; set false
    /// only to try the desk over plain HTTP on another address (development; `ironclad
    /// doctor` warns).
    #[arg(long, env = "IRONCLAD_SECURE_COOKIES", default_value_t = true, action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub secure_cookies: bool,
    /// Desk sign-in attempts per minute, per account and per client address (0: unlimited).
    #[arg(long, env = "IRONCLAD_LOGIN_ATTEMPTS_PER_MINUTE", default_value_t = 10)]
    pub login_attempts_per_minute: u32,
    /// Approximate stream length cap (XADD MAXLEN ~).
    #[arg(long, env = "IRONCLAD_STREAM_MAXLEN", default_value_t = 1_000_000)]
    pub stream_maxlen: usize,
    /// Reconciler sweep interval.
    #[arg(long, env = "IRONCLAD_RECONCILE_EVERY", default_value = "5s", value_parser = parse_duration)]
    pub reconcile_every: Duration,
    /// A due job whose message was published at least this long ago and no longer waits in
    /// Redis (stream or pending list) is announced again: what makes a Redis FLUSHALL a delay,
    /// not a loss.
    #[arg(long, env = "IRONCLAD_REEMIT_AFTER", default_value = "10s", value_parser = parse_duration)]
    pub reemit_after: Duration,
    /// How long a worker keeps retrying to commit a finished job's outcome while PostgreSQL
    /// is unreachable, before leaving the message to recovery.
    #[arg(long, env = "IRONCLAD_OUTCOME_PATIENCE", default_value = "10m", value_parser = parse_duration)]
    pub outcome_patience: Duration,
    /// Orphaned blobs younger than this are kept.
    #[arg(long, env = "IRONCLAD_BLOB_GRACE", default_value = "1h", value_parser = parse_duration)]
    pub blob_grace: Duration,
    /// Largest file accepted, in bytes.
    #[arg(long, env = "IRONCLAD_MAX_FILE_BYTES", default_value_t = 25 * 1024 * 1024)]
    pub max_file_bytes: u64,
    /// Most files per case.
    #[arg(long, env = "IRONCLAD_MAX_FILES", default_value_t = 50)]
    pub max_files: usize,
    /// Most pages per case.
    #[arg(long, env = "IRONCLAD_MAX_PAGES", default_value_t = 500)]
    pub max_pages: u32,
    /// Intake requests one process handles at once; one more is answered 503 `busy`.
    #[arg(long, env = "IRONCLAD_MAX_CONCURRENT_INTAKES", default_value_t = 32)]
    pub max_concurrent_intakes: usize,
    /// Intake requests one tenant may run at once, within the process's cap (default: half
    /// of it); one more is answered 503 `busy`.
    #[arg(long, env = "IRONCLAD_INTAKE_SLOTS_PER_TENANT")]
    pub intake_slots_per_tenant: Option<usize>,
    /// Slowest upload accepted, in bytes per second of waiting for the client (0 disables);
    /// a slower one is dropped with 408 `upload_too_slow`.
    #[arg(long, env = "IRONCLAD_INTAKE_MIN_BYTES_PER_SEC", default_value_t = 16 * 1024)]
    pub intake_min_bytes_per_sec: u64,
    /// How long an upload may wait for its client before its pace is judged.
    #[arg(long, env = "IRONCLAD_INTAKE_RATE_GRACE", default_value = "5s", value_parser = parse_duration)]
    pub intake_rate_grace: Duration,
    /// Reverse proxies whose X-Forwarded-For is believed: comma-separated addresses and CIDR
    /// ranges (default: none; the TCP peer is the client).
    #[arg(long, env = "IRONCLAD_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,
    /// Password hashes (desk sign-in, password changes) computed at once.
    #[arg(long, env = "IRONCLAD_PASSWORD_HASHES_AT_ONCE", default_value_t = 2)]
    pub password_hashes_at_once: usize,
    /// Password hashes that may wait for a place; one more is answered 503.
    #[arg(long, env = "IRONCLAD_PASSWORD_HASH_QUEUE", default_value_t = 16)]
    pub password_hash_queue: usize,
    /// Longest inspection of one uploaded file (then 413 `document_too_large`).
    #[arg(long, env = "IRONCLAD_INSPECT_TIMEOUT", default_value = "20s", value_parser = parse_duration)]
    pub inspect_timeout: Duration,
    /// Requests per second per API key (0 disables the limit).
    #[arg(long, env = "IRONCLAD_KEY_RATE_LIMIT", default_value_t = 200)]
    pub key_rate_limit: u32,
    /// Burst allowed per API key above its rate.
    #[arg(long, env = "IRONCLAD_KEY_RATE_BURST", default_value_t = 400)]
    pub key_rate_burst: u32,
    /// Requests per second per client address, bad keys included (0 disables the limit).
    #[arg(long, env = "IRONCLAD_ADDRESS_RATE_LIMIT", default_value_t = 100)]
    pub address_rate_limit: u32,
    /// Burst allowed per client address above its rate.
    #[arg(long, env = "IRONCLAD_ADDRESS_RATE_BURST", default_value_t = 200)]
    pub address_rate_burst: u32,
    /// Bearer token a scrape of `/metrics` must present (default: none, open).
    #[arg(long, env = "IRONCLAD_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// Serve `/metrics` on this address instead of the API listener (any role may set it, so
    /// workers and dispatchers can be scraped too).
    #[arg(long, env = "IRONCLAD_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
}

impl RoleSettings {
    /// The roles' configuration, validated.
    pub fn runtime(&self) -> anyhow::Result<RuntimeConfig> {
        let config = RuntimeConfig {
            lease: self.lease,
            lease_renew_every: self.lease / 3,
            worker_concurrency: self.worker_concurrency,
            job_timeout: self.job_timeout,
            retry: RetryPolicy {
                delays: self.retry_delays.0.clone(),
                max_attempts: self.max_attempts,
                ..RetryPolicy::default()
            },
            reclaim_every: self.reclaim_every,
            dispatch_batch: self.dispatch_batch,
            outbox_max_attempts: self.outbox_max_attempts,
            outbox_lock_timeout: self.outbox_lock_timeout,
            outbox_retention: self.outbox_retention,
            reconcile_every: self.reconcile_every,
            reemit_after: self.reemit_after,
            blob_grace: self.blob_grace,
            outcome_patience: self.outcome_patience,
            shutdown_grace: self.shutdown_grace,
            ..RuntimeConfig::default()
        };
        config
            .validate()
            .map_err(anyhow::Error::msg)
            .context("invalid configuration")?;
        anyhow::ensure!(
            self.claim_idle > self.lease / 3,
            "claim idle ({:?}) must exceed the lease renew interval ({:?}), or live jobs' messages get reclaimed",
            self.claim_idle,
            self.lease / 3
        );
        // The desk renews a review's claim every minute while its page is open.
        anyhow::ensure!(
            self.review_claim >= std::time::Duration::from_secs(120),
            "review claim ({:?}) must be at least 2 minutes: the desk renews it every minute",
            self.review_claim
        );
        Ok(config)
    }
}

impl RoleSettings {
    /// The webhook deliverer's configuration, validated. Its lock outlasts two timeouts.
    pub fn webhooks(&self) -> anyhow::Result<DeliveryConfig> {
        let defaults = DeliveryConfig::default();
        let config = DeliveryConfig {
            timeout: self.webhook_timeout,
            connect_timeout: defaults.connect_timeout.min(self.webhook_timeout),
            max_attempts: self.webhook_max_attempts,
            retry: RetryPolicy {
                delays: self.webhook_retry_delays.0.clone(),
                max_attempts: self.webhook_max_attempts,
                ..defaults.retry.clone()
            },
            lock: self.webhook_timeout * 2 + Duration::from_secs(10),
            poll: self.webhook_poll,
            allow_private: self.webhook_allow_private,
            ..defaults
        };
        config
            .validate()
            .map_err(anyhow::Error::msg)
            .context("invalid webhook configuration")?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86400)));
        assert_eq!(parse_duration("12"), Ok(Duration::from_secs(12)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5y").is_err());
        assert_eq!(
            parse_delays("1s,2m").map(|d| d.0),
            Ok(vec![Duration::from_secs(1), Duration::from_secs(120)])
        );
    }
}
