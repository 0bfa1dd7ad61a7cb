//! A running API on a fresh database, plus the calls tests make against it.

use anyhow::Context;
use ironclad_api::{serve, ApiConfig, AppState};
use ironclad_blobs::BlobStore;
use ironclad_core::faults::Faults;
use ironclad_core::role::Role;
use ironclad_core::TenantId;
use ironclad_queue::{Queue, StreamConfig};
use ironclad_testkit::{redis_prefix, redis_url, TestDb};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use reqwest::header::HeaderMap;
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde_json::Value;
use sqlx::postgres::PgPoolOptions;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The process-wide Prometheus recorder (one per test binary; `None` if another one won).
fn prometheus() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| PrometheusBuilder::new().install_recorder().ok())
        .clone()
}

/// An answer, read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub bytes: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }

    /// `error.code` of an error body.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    pub async fn read(response: reqwest::Response) -> anyhow::Result<Self> {
        Ok(Self {
            status: response.status(),
            headers: response.headers().clone(),
            bytes: response.bytes().await?.to_vec(),
        })
    }
}

/// Row counts of the intake tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rows {
    pub cases: i64,
    pub sources: i64,
    pub jobs: i64,
    pub outbox: i64,
    pub audit: i64,
    pub submissions: i64,
}

pub struct TestApp {
    pub db: TestDb,
    pub blobs: BlobStore,
    pub faults: Faults,
    pub base: String,
    pub client: reqwest::Client,
    pub tenant: TenantId,
    /// An operator key of `tenant`.
    pub key: String,
    /// What the server was given (to serve it again elsewhere, e.g. metrics on their own
    /// listener).
    pub state: AppState,
    /// Connections the server's store handed out: one per statement the API ran. Counted
    /// only for apps made by [`TestApp::spawn_counted`]; zero otherwise.
    pub acquired: Arc<AtomicUsize>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
    _blob_dir: tempfile::TempDir,
}

impl TestApp {
    /// Default limits, a queue on the shared Redis under a fresh prefix.
    pub async fn spawn() -> anyhow::Result<Self> {
        Self::spawn_with(ApiConfig::default()).await
    }

    pub async fn spawn_with(config: ApiConfig) -> anyhow::Result<Self> {
        let queue = Queue::connect(&redis_url(), StreamConfig::with_prefix(&redis_prefix()))
            .await
            .context("connecting to the shared redis")?;
        Self::spawn_full(config, Some(queue)).await
    }

    pub async fn spawn_full(config: ApiConfig, queue: Option<Queue>) -> anyhow::Result<Self> {
        Self::spawn_inner(config, queue, false).await
    }

    /// Like [`TestApp::spawn_with`], with a server whose store counts in `acquired` every
    /// connection it hands out, i.e. every statement the API sends to PostgreSQL. (Seeding
    /// through `db.store` is not counted.)
    pub async fn spawn_counted(config: ApiConfig) -> anyhow::Result<Self> {
        let queue = Queue::connect(&redis_url(), StreamConfig::with_prefix(&redis_prefix()))
            .await
            .context("connecting to the shared redis")?;
        Self::spawn_inner(config, Some(queue), true).await
    }

    /// Acquisitions counted so far (see [`TestApp::spawn_counted`]).
    pub fn queries(&self) -> usize {
        self.acquired.load(Ordering::SeqCst)
    }

    async fn spawn_inner(
        config: ApiConfig,
        queue: Option<Queue>,
        counted: bool,
    ) -> anyhow::Result<Self> {
        let db = TestDb::new().await?;
        let blob_dir = tempfile::tempdir()?;
        let blobs = BlobStore::open(blob_dir.path())?;
        let faults = Faults::none();
        let tenant = db.store.create_tenant("tenant-a").await?;
        let key = db.store.create_api_key(tenant, Role::Operator).await?.raw;
        let acquired = Arc::new(AtomicUsize::new(0));
        let store = if counted {
            counting_store(&db.url, &acquired).await?
        } else {
            db.store.clone()
        };
        let state = AppState {
            store,
            blobs: blobs.clone(),
            queue,
            config: Arc::new(config),
            metrics: prometheus(),
            faults: faults.clone(),
            compiler: Arc::new(ironclad_reading::ExtractCompiler),
            previews: Arc::new(ironclad_reading::OcrPreviews),
            regions: Arc::new(ironclad_reading::OcrRegions::new(
                ironclad_ocr::ReadOptions::default(),
            )),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, state.clone(), async {
            let _ = rx.await;
        }));
        Ok(Self {
            db,
            blobs,
            faults,
            base,
            client: reqwest::Client::new(),
            tenant,
            key,
            state,
            acquired,
            shutdown: Some(tx),
            server: Some(server),
            _blob_dir: blob_dir,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A new key of `role` for `tenant`.
    pub async fn key_for(&self, tenant: TenantId, role: Role) -> anyhow::Result<String> {
        Ok(self.db.store.create_api_key(tenant, role).await?.raw)
    }

    /// `POST /v1/cases` with `form`, as `key`, with an optional `Idempotency-Key`.
    pub async fn post_case(
        &self,
        key: &str,
        form: Form,
        idempotency_key: Option<&str>,
    ) -> anyhow::Result<Answer> {
        let mut request = self
            .client
            .post(self.url("/v1/cases"))
            .bearer_auth(key)
            .multipart(form);
        if let Some(k) = idempotency_key {
            request = request.header("Idempotency-Key", k);
        }
        Answer::read(request.send().await?).await
    }

    /// `POST /v1/cases` as the operator, without an idempotency key.
    pub async fn submit(&self, files: &[(&str, &[u8])]) -> anyhow::Result<Answer> {
        self.post_case(&self.key, form(files), None).await
    }

    /// `GET path` as `key` (`None`: no Authorization header).
    pub async fn get(&self, path: &str, key: Option<&str>) -> anyhow::Result<Answer> {
        let mut request = self.client.get(self.url(path));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        Answer::read(request.send().await?).await
    }

    pub async fn count(&self, sql: &'static str) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(sql)
            .fetch_one(self.db.store.pool())
            .await?)
    }

    pub async fn rows(&self) -> anyhow::Result<Rows> {
        Ok(Rows {
            cases: self.count("SELECT count(*) FROM cases").await?,
            sources: self.count("SELECT count(*) FROM sources").await?,
            jobs: self.count("SELECT count(*) FROM jobs").await?,
            outbox: self.count("SELECT count(*) FROM outbox").await?,
            // Case history only: creating the test's API keys records APIKEY_CREATED too.
            audit: self
                .count("SELECT count(*) FROM audit_events WHERE case_id IS NOT NULL")
                .await?,
            submissions: self
                .count("SELECT count(*) FROM intake_submissions")
                .await?,
        })
    }

    /// Uploads in progress (or abandoned) in the blob store.
    pub fn temp_files(&self) -> anyhow::Result<usize> {
        Ok(std::fs::read_dir(self.blobs.root().join("tmp"))?.count())
    }

    /// Stops the server and drops the database.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        self.state.store.pool().close().await;
        self.db.drop_database().await;
    }

    /// Every blob in the store (keys), wherever it came from.
    pub fn blob_keys(&self) -> anyhow::Result<Vec<String>> {
        let mut keys = Vec::new();
        let root = self.blobs.root().to_path_buf();
        let mut dirs = vec![root.join("sha256")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir)? {
                let path = entry?.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if let Ok(rel) = path.strip_prefix(&root) {
                    keys.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        keys.sort();
        Ok(keys)
    }
}

/// A store on `url` whose pool counts in `acquired` every connection it hands out: new ones
/// (`after_connect`) and reused ones (`before_acquire`).
async fn counting_store(
    url: &str,
    acquired: &Arc<AtomicUsize>,
) -> anyhow::Result<ironclad_store::Store> {
    let (on_connect, on_acquire) = (acquired.clone(), acquired.clone());
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .after_connect(move |_, _| {
            on_connect.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        })
        .before_acquire(move |_, _| {
            on_acquire.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(true) })
        })
        .connect(url)
        .await?;
    Ok(ironclad_store::Store::from_pool(pool))
}

/// The blob key of `bytes`.
pub fn blob_key(bytes: &[u8]) -> String {
    let hex = sha256_hex(bytes);
    format!("sha256/{}/{}/{hex}", &hex[0..2], &hex[2..4])
}

/// A multipart form with one `file` part per entry (an empty name sends no file name).
pub fn form(files: &[(&str, &[u8])]) -> Form {
    files.iter().fold(Form::new(), |form, (name, bytes)| {
        let part = Part::bytes(bytes.to_vec());
        let part = if name.is_empty() {
            part
        } else {
            part.file_name(name.to_string())
        };
        form.part("file", part)
    })
}

/// Lowercase hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
