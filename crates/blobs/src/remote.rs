//! Blobs kept in S3-compatible object storage, so that hosts share them without a shared disk.
//!
//! The local root keeps its role for what must be a file: uploads stream into `tmp/` (hashed as
//! they go), and `sha256/` becomes a **read cache** of verified copies that `pdftoppm` and
//! Tesseract open by path. The object store holds the truth under the same key shape,
//! `<prefix>/sha256/ab/cd/<hex>`.
//!
//! # Durability
//! [`BlobWriter::finish`](crate::BlobWriter::finish) returns only after the object store
//! acknowledged the whole upload (a `PUT`, or a completed multipart upload for large files), so
//! a key handed to the intake transaction still names durable bytes. Every finish uploads,
//! even when the content is already stored: the fresh `PUT` is what tells a concurrent sweep
//! that the object is in use again (object stores have no `touch`).
//!
//! # Reading
//! A read downloads into `tmp/`, checks the size the store reported and the SHA-256 that the
//! key names, and only then renames the copy into the cache; a mismatch is
//! [`BlobError::Corrupt`] and leaves nothing behind.
//!
//! # Orphans
//! Object stores have no atomic rename, so the local sweep's "park, re-check, delete" becomes
//! a delayed delete (see [`crate::sweep`] for the local protocol):
//!
//! 1. objects under `sha256/` last written before `grace`, and not `referenced`, are
//!    **parked**: copied to `trash/<hex>`, then deleted from their key;
//! 2. objects under `trash/` parked before `grace` are asked about again: referenced ones are
//!    copied back, the rest deleted for good.
//!
//! A writer that stored the same content between the listing and the delete of step 1 lost
//! its object to the delete, but not its bytes: reads and digests fall back to `trash/` (and
//! put the object back), and step 2 restores it once its row is committed — the same contract
//! as the local store: a request commits the row naming its key within `grace` of `finish`.
//! A crash between copy and delete leaves both copies, which the next sweep sorts out.
//!
//! Incomplete multipart uploads of a crashed writer are invisible to listing; an operator
//! sets the bucket's lifecycle rule `AbortIncompleteMultipartUpload` (docs/deployment.md).

use crate::sweep::ask_referenced;
use crate::{is_valid_key, BlobDigest, BlobError, Probe, SweepReport, BLOBS_DIR, TMP_DIR};
use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::buffered::BufWriter;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fmt::Display;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where parked objects wait for their second check.
const TRASH_DIR: &str = "trash";
/// Keys passed to one `referenced` call at most, as in the local sweep.
const BATCH: usize = 1000;
/// Upload part size: large files go up as a multipart upload of parts this big.
const PART_SIZE: usize = 8 * 1024 * 1024;
/// Read buffer when streaming a cached file up.
const UPLOAD_CHUNK: usize = 256 * 1024;

/// How patient the object store client is. A request is retried (with backoff) on timeouts,
/// connection errors and 5xx answers for at most `retry_timeout`; an upload that cannot finish
/// within it fails, so intake answers 503 rather than hold a client for minutes.
#[derive(Debug, Clone)]
pub struct RemoteSettings {
    /// One request's time limit.
    pub request_timeout: Duration,
    /// Time limit of connecting.
    pub connect_timeout: Duration,
    /// How long retries of one request may go on.
    pub retry_timeout: Duration,
    /// Retries of one request at most.
    pub max_retries: usize,
    /// Object store options given in code, applied over the `AWS_*` environment: pairs such
    /// as `("aws_endpoint", "http://127.0.0.1:9000")` (names as `object_store` spells them).
    pub options: Vec<(String, String)>,
}

impl Default for RemoteSettings {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(5),
            retry_timeout: Duration::from_secs(30),
            // Bounded by `retry_timeout`, not by count: a restarting store refuses
            // connections quickly, and eight quick refusals are not an outage ridden out.
            max_retries: 1000,
            options: Vec::new(),
        }
    }
}

/// The object store side of a [`BlobStore`](crate::BlobStore).
#[derive(Debug)]
pub(crate) struct Remote {
    store: Arc<dyn ObjectStore>,
    /// Everything this installation stores lives under this prefix of the bucket.
    prefix: String,
    /// `s3://bucket/prefix`, for messages.
    url: String,
}

impl Remote {
    /// Connects (lazily: no request is made) to `s3://bucket[/prefix]`. Credentials, region
    /// and endpoint come from the standard `AWS_*` environment variables (`AWS_ENDPOINT_URL`
    /// and `AWS_ALLOW_HTTP=true` for a local S3-compatible server).
    pub(crate) fn connect(url: &str, settings: RemoteSettings) -> Result<Self, BlobError> {
        let invalid = |reason: String| BlobError::InvalidUrl {
            url: url.to_owned(),
            reason,
        };
        let parsed = url::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
        if parsed.scheme() != "s3" {
            return Err(invalid("expected s3://bucket/prefix".into()));
        }
        let bucket = parsed
            .host_str()
            .filter(|b| !b.is_empty())
            .ok_or_else(|| invalid("no bucket name".into()))?;
        let prefix = parsed.path().trim_matches('/').to_owned();
        if prefix.split('/').any(|part| part == "." || part == "..") {
            return Err(invalid("the prefix may not hold . or ..".into()));
        }
        let secs = |d: Duration| format!("{}ms", d.as_millis());
        let mut builder = AmazonS3Builder::from_env();
        for (name, value) in &settings.options {
            let key: AmazonS3ConfigKey = name
                .to_ascii_lowercase()
                .parse()
                .map_err(|e: object_store::Error| invalid(e.to_string()))?;
            builder = builder.with_config(key, value);
        }
        let store = builder
            .with_bucket_name(bucket)
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
                secs(settings.request_timeout),
            )
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                secs(settings.connect_timeout),
            )
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(2),
                    base: 2.0,
                },
                max_retries: settings.max_retries,
                retry_timeout: settings.retry_timeout,
            })
            .build()
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Self {
            store: Arc::new(store),
            prefix,
            url: url.to_owned(),
        })
    }

    /// `s3://bucket/prefix` as configured.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    fn path(&self, relative: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(relative)
        } else {
            ObjectPath::from(format!("{}/{relative}", self.prefix))
        }
    }

    fn trash_path(&self, key: &str) -> ObjectPath {
        self.path(&format!("{TRASH_DIR}/{}", hex_of(key)))
    }

    fn error(&self, action: &'static str, key: &str, source: object_store::Error) -> BlobError {
        match source {
            object_store::Error::NotFound { .. } => BlobError::NotFound {
                key: key.to_owned(),
            },
            source => BlobError::Remote {
                action,
                key: key.to_owned(),
                source: Box::new(source),
            },
        }
    }

    /// Uploads the local file `file` as the object `key` and returns once the store has
    /// acknowledged all of it.
    pub(crate) async fn upload(&self, key: &str, file: &Path) -> Result<(), BlobError> {
        let mut source = tokio::fs::File::open(file)
            .await
            .map_err(|e| BlobError::io("opening for upload", file, e))?;
        let mut upload = BufWriter::with_capacity(self.store.clone(), self.path(key), PART_SIZE);
        let mut chunk = vec![0u8; UPLOAD_CHUNK];
        loop {
            let n = source
                .read(&mut chunk)
                .await
                .map_err(|e| BlobError::io("reading for upload", file, e))?;
            if n == 0 {
                break;
            }
            if let Err(e) = upload.write_all(&chunk[..n]).await {
                // Abort the multipart upload, if one started, so it holds no storage.
                let _ = upload.abort().await;
                return Err(self.io_error("uploading", key, e));
            }
        }
        upload
            .shutdown()
            .await
            .map_err(|e| self.io_error("completing the upload of", key, e))
    }

    /// `BufWriter` reports through `io::Error`; keep the object store's error when it is one.
    fn io_error(&self, action: &'static str, key: &str, e: std::io::Error) -> BlobError {
        match e.downcast::<object_store::Error>() {
            Ok(source) => self.error(action, key, source),
            Err(e) => BlobError::Remote {
                action,
                key: key.to_owned(),
                source: Box::new(e),
            },
        }
    }

    /// Downloads `key` to `dest` (a new file under the local `tmp/`), verifying size and
    /// SHA-256. Falls back to the parked copy in `trash/`, which it puts back.
    pub(crate) async fn download(&self, key: &str, dest: &Path) -> Result<(), BlobError> {
        let result = match self.store.get(&self.path(key)).await {
            Err(object_store::Error::NotFound { .. }) => {
                let parked = self.trash_path(key);
                let got = self
                    .store
                    .get(&parked)
                    .await
                    .map_err(|e| self.error("downloading", key, e))?;
                tracing::warn!(
                    key,
                    "blob was parked by a sweep while referenced; putting it back"
                );
                self.store
                    .copy(&parked, &self.path(key))
                    .await
                    .map_err(|e| self.error("putting back", key, e))?;
                got
            }
            other => other.map_err(|e| self.error("downloading", key, e))?,
        };
        let expected_size = result.meta.size;
        let mut file = tokio::fs::File::create(dest)
            .await
            .map_err(|e| BlobError::io("creating download file", dest, e))?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut body = result.into_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| self.error("downloading", key, e))?;
            hasher.update(&chunk);
            size += chunk.len() as u64;
            file.write_all(&chunk)
                .await
                .map_err(|e| BlobError::io("writing download file", dest, e))?;
        }
        file.sync_all()
            .await
            .map_err(|e| BlobError::io("syncing download file", dest, e))?;
        let sha256 = hex::encode(hasher.finalize());
        if size != expected_size || sha256 != hex_of(key) {
            return Err(BlobError::Corrupt {
                key: key.to_owned(),
                detail: format!(
                    "the store holds {size} bytes hashing to {sha256}; it announced {expected_size} bytes"
                ),
            });
        }
        Ok(())
    }

    /// Whether `key` (or its parked copy) is stored.
    pub(crate) async fn exists(&self, key: &str) -> Result<bool, BlobError> {
        for path in [self.path(key), self.trash_path(key)] {
            match self.store.head(&path).await {
                Ok(_) => return Ok(true),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.error("checking", key, e)),
            }
        }
        Ok(false)
    }

    /// Size and SHA-256 of what the store holds under `key` (or its parked copy), streamed.
    pub(crate) async fn digest(&self, key: &str) -> Result<Option<BlobDigest>, BlobError> {
        for path in [self.path(key), self.trash_path(key)] {
            let got = match self.store.get(&path).await {
                Ok(got) => got,
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(self.error("hashing", key, e)),
            };
            let mut hasher = Sha256::new();
            let mut size = 0u64;
            let mut body = got.into_stream();
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| self.error("hashing", key, e))?;
                hasher.update(&chunk);
                size += chunk.len() as u64;
            }
            return Ok(Some(BlobDigest {
                size,
                sha256: hex::encode(hasher.finalize()),
            }));
        }
        Ok(None)
    }

    /// Stores a small object under a name of its own (not a blob key), for `ironclad doctor`'s
    /// write probe, and removes it again.
    pub(crate) async fn probe(&self, name: &str, bytes: Vec<u8>) -> Result<Probe, BlobError> {
        let path = self.path(&format!("{TMP_DIR}/{name}"));
        let len = bytes.len() as u64;
        let sent = chrono::Utc::now();
        self.store
            .put(&path, bytes.into())
            .await
            .map_err(|e| self.error("writing a probe to", name, e))?;
        let meta = self
            .store
            .head(&path)
            .await
            .map_err(|e| self.error("reading back a probe from", name, e))?;
        let answered = chrono::Utc::now();
        // The store stamped the object somewhere between the two; take the middle.
        let local = sent + (answered - sent) / 2;
        let clock_skew = Some(meta.last_modified - local);
        self.store
            .delete(&path)
            .await
            .map_err(|e| self.error("deleting a probe from", name, e))?;
        if meta.size != len {
            return Err(BlobError::Corrupt {
                key: name.to_owned(),
                detail: format!("wrote {len} bytes, the store reports {}", meta.size),
            });
        }
        Ok(Probe { clock_skew })
    }

    /// The object-store half of a sweep; see the module documentation.
    pub(crate) async fn sweep<F, Fut, E>(
        &self,
        grace: Duration,
        referenced: &mut F,
        report: &mut SweepReport,
    ) -> Result<(), BlobError>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: Future<Output = Result<HashSet<String>, E>>,
        E: Display,
    {
        let cutoff =
            chrono::Utc::now() - chrono::Duration::from_std(grace).unwrap_or(chrono::Duration::MAX);

        // Step 2 first: what earlier sweeps parked long enough ago.
        let parked = self.list_before(TRASH_DIR, cutoff, |name| {
            let hex = name.rsplit('/').next().unwrap_or_default();
            let key = crate::key_for(hex);
            is_valid_key(&key).then_some(key)
        });
        let mut parked = std::pin::pin!(parked);
        let mut batch = Vec::new();
        while let Some(item) = parked.next().await {
            match item? {
                Listed::Old(key) => batch.push(key),
                Listed::Fresh => {}
            }
            if batch.len() >= BATCH {
                self.settle_parked(std::mem::take(&mut batch), referenced, report)
                    .await?;
            }
        }
        if !batch.is_empty() {
            self.settle_parked(batch, referenced, report).await?;
        }

        // Step 1: park old, unreferenced objects.
        let live = self.list_before(BLOBS_DIR, cutoff, |name| {
            let key = name.to_owned();
            is_valid_key(&key).then_some(key)
        });
        let mut live = std::pin::pin!(live);
        let mut batch = Vec::new();
        while let Some(item) = live.next().await {
            report.examined += 1;
            match item? {
                Listed::Old(key) => batch.push(key),
                Listed::Fresh => report.kept_fresh += 1,
            }
            if batch.len() >= BATCH {
                self.park_unreferenced(std::mem::take(&mut batch), referenced, report)
                    .await?;
            }
        }
        if !batch.is_empty() {
            self.park_unreferenced(batch, referenced, report).await?;
        }
        Ok(())
    }

    /// Lists `<prefix>/<dir>/`, mapping each name (relative to the prefix) to a key with
    /// `key_of`; names it refuses are skipped (they are not ours).
    fn list_before<'a>(
        &'a self,
        dir: &'static str,
        cutoff: chrono::DateTime<chrono::Utc>,
        key_of: impl Fn(&str) -> Option<String> + 'a,
    ) -> impl futures::Stream<Item = Result<Listed, BlobError>> + 'a {
        let root = self.path(dir);
        let strip = if self.prefix.is_empty() {
            0
        } else {
            self.prefix.len() + 1
        };
        self.store
            .list(Some(&root))
            .map_err(move |e| BlobError::Remote {
                action: "listing",
                key: dir_label(dir),
                source: Box::new(e),
            })
            .try_filter_map(move |meta| {
                let name = meta.location.as_ref().get(strip..).unwrap_or_default();
                let listed = key_of(name).map(|key| {
                    if meta.last_modified < cutoff {
                        Listed::Old(key)
                    } else {
                        Listed::Fresh
                    }
                });
                futures::future::ready(Ok(listed))
            })
    }

    async fn park_unreferenced<F, Fut, E>(
        &self,
        keys: Vec<String>,
        referenced: &mut F,
        report: &mut SweepReport,
    ) -> Result<(), BlobError>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: Future<Output = Result<HashSet<String>, E>>,
        E: Display,
    {
        let used = ask_referenced(referenced, keys.clone()).await?;
        for key in keys {
            if used.contains(&key) {
                report.kept_referenced += 1;
                continue;
            }
            // Copy first: a crash in between leaves two copies, never none.
            self.store
                .copy(&self.path(&key), &self.trash_path(&key))
                .await
                .map_err(|e| self.error("parking", &key, e))?;
            self.store
                .delete(&self.path(&key))
                .await
                .map_err(|e| self.error("parking", &key, e))?;
            report.parked += 1;
        }
        Ok(())
    }

    async fn settle_parked<F, Fut, E>(
        &self,
        keys: Vec<String>,
        referenced: &mut F,
        report: &mut SweepReport,
    ) -> Result<(), BlobError>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: Future<Output = Result<HashSet<String>, E>>,
        E: Display,
    {
        let used = ask_referenced(referenced, keys.clone()).await?;
        for key in keys {
            let parked = self.trash_path(&key);
            if used.contains(&key) {
                // Referenced after all: put it back (identical bytes if a writer re-stored it).
                self.store
                    .copy(&parked, &self.path(&key))
                    .await
                    .map_err(|e| self.error("putting back", &key, e))?;
                report.kept_referenced += 1;
            } else {
                report.deleted += 1;
            }
            self.store
                .delete(&parked)
                .await
                .map_err(|e| self.error("deleting", &key, e))?;
        }
        Ok(())
    }
}

/// What listing found for one object.
enum Listed {
    /// Written (or parked) before the cut-off.
    Old(String),
    /// Written within the grace period.
    Fresh,
}

fn dir_label(dir: &str) -> String {
    format!("{dir}/")
}

/// The hex digest a (valid) key ends with.
fn hex_of(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// A unique name for a download in progress under the local `tmp/`.
pub(crate) fn download_path(root: &Path) -> PathBuf {
    root.join(TMP_DIR)
        .join(format!("{}.download", uuid::Uuid::new_v4().simple()))
}
