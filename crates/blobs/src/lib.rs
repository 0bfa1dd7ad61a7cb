//! Content-addressed local blob store for uploaded document bytes.
//!
//! A blob is stored once under its SHA-256: `<root>/sha256/ab/cd/<64 hex>`, and its key is that
//! path relative to the root (`sha256/ab/cd/<hex>`). Uploads stream into a temporary file under
//! `<root>/tmp`, hashed as they go; [`BlobWriter::finish`] fsyncs the file, links it into
//! place (or verifies and syncs the copy already there) and fsyncs the directories, so a key
//! handed to the intake transaction always names durable, complete bytes (design §1: bytes are
//! durable before the intake commits).
//!
//! **Design choice.** Content addressing makes a retried or duplicated upload free and lets
//! cases share identical files, with no database round trip on the write path. **Its cost:** a
//! blob cannot be deleted just because one request failed — another case may be about to
//! reference the same key — so orphans are collected by [`BlobStore::sweep`], whose protocol
//! (move to trash, re-check, then delete) is described on [`sweep`](mod@sweep). Writers help it
//! by touching an existing blob's mtime when they find their content already stored (after
//! verifying its SHA-256: a same-size copy may still be damaged).
//!
//! A failed request need not leave its blobs to the sweep: the ones it *created*
//! ([`StoredBlob::created`]) can be deleted at once with [`BlobStore::discard_created`], which
//! runs the same protocol but, instead of a grace period, checks that no other writer has
//! deduplicated against the blob since it was created.
//!
//! The store assumes a POSIX file system (atomic `rename`, hard links, directory fsync, inode
//! numbers).
//!
//! **Several hosts.** Opened with an `s3://bucket/prefix` URL ([`BlobStore::open_url`]), the
//! bytes live in S3-compatible object storage and the local directory becomes the staging area
//! of uploads and a verified read cache; see [`remote`](mod@remote) for what changes.
#![deny(missing_docs)]

pub mod discard;
mod error;
pub mod remote;
pub mod sweep;
mod trash;
mod writer;

pub use error::BlobError;
pub use remote::RemoteSettings;
pub use sweep::SweepReport;
pub use writer::{BlobWriter, StoredBlob};

/// What [`BlobStore::probe`] learned besides "writable".
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    /// How far the object store's clock is ahead of this host's (negative: behind), from the
    /// probe object's Last-Modified (whole seconds). The sweep compares those timestamps with
    /// this host's clock, so a store running behind makes fresh uploads look older. `None` for
    /// a local directory.
    pub clock_skew: Option<chrono::TimeDelta>,
}

use remote::Remote;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Directory (under the root) holding the blobs themselves.
const BLOBS_DIR: &str = "sha256";
/// Directory for uploads in progress.
const TMP_DIR: &str = "tmp";
/// Directory where the sweep parks a blob between its two reference checks.
const TRASH_DIR: &str = "trash";
/// Length of a key: `sha256/` + `ab/` + `cd/` + 64 hex digits.
const KEY_LEN: usize = 7 + 3 + 3 + 64;

/// A content-addressed blob store: one local directory, or S3-compatible object storage with
/// a local directory for staging and caching. Cheap to clone.
#[derive(Debug, Clone)]
pub struct BlobStore {
    root: PathBuf,
    /// Where the bytes really live, when not in `root`.
    remote: Option<Arc<Remote>>,
}

impl BlobStore {
    /// Opens (creating if needed) a store at `root`, with its `tmp`, `sha256` and `trash`
    /// directories.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, BlobError> {
        let root = root.into();
        for dir in [TMP_DIR, BLOBS_DIR, TRASH_DIR] {
            let path = root.join(dir);
            std::fs::create_dir_all(&path)
                .map_err(|e| BlobError::io("creating directory", &path, e))?;
        }
        // Blobs are only as durable as the entries of the directories that hold them.
        writer::sync_dir(&root)?;
        Ok(Self { root, remote: None })
    }

    /// Opens the store a URL names: `file:///path` (a local directory, as [`open`](Self::open))
    /// or `s3://bucket[/prefix]` (S3-compatible object storage, credentials and endpoint from
    /// the standard `AWS_*` variables), with `local` as its staging area and read cache. No
    /// request is made: [`probe`](Self::probe) checks that the store answers.
    pub fn open_url(
        url: &str,
        local: impl Into<PathBuf>,
        settings: RemoteSettings,
    ) -> Result<Self, BlobError> {
        if let Some(path) = url.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(BlobError::InvalidUrl {
                    url: url.to_owned(),
                    reason: "a file URL needs an absolute path (file:///var/lib/ironclad/blobs)"
                        .into(),
                });
            }
            return Self::open(path);
        }
        let remote = Remote::connect(url, settings)?;
        let mut store = Self::open(local)?;
        store.remote = Some(Arc::new(remote));
        Ok(store)
    }

    /// The directory this store lives in (with an object store: its staging area and cache).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the bytes live: the object store's `s3://…` URL, or the local directory.
    pub fn location(&self) -> String {
        match &self.remote {
            Some(remote) => remote.url().to_owned(),
            // Absolute, so the URL means the same thing wherever it is pasted.
            None => {
                let root = std::path::absolute(&self.root).unwrap_or_else(|_| self.root.clone());
                format!("file://{}", root.display())
            }
        }
    }

    /// Whether the bytes live in an object store (shared by hosts) rather than on this host.
    pub fn is_shared(&self) -> bool {
        self.remote.is_some()
    }

    /// Starts a new upload into a uniquely named temporary file.
    pub async fn writer(&self) -> Result<BlobWriter, BlobError> {
        BlobWriter::create(self.root.clone(), self.remote.clone()).await
    }

    /// A local file holding the blob `key`, for tools that open files by path (Tesseract,
    /// `pdftoppm`). With an object store, a blob not yet cached is downloaded and verified
    /// first (size and SHA-256); a cached one has its mtime refreshed so the cache's sweep
    /// keeps it while it is in use. Locally it is [`path_of`](Self::path_of).
    pub async fn local_path(&self, key: &str) -> Result<PathBuf, BlobError> {
        let path = self.path_of(key)?;
        let Some(remote) = &self.remote else {
            return Ok(path);
        };
        if let Ok(file) = std::fs::File::open(&path) {
            if file.set_modified(std::time::SystemTime::now()).is_ok() {
                return Ok(path);
            }
        }
        let temp = remote::download_path(&self.root);
        if let Err(err) = remote.download(key, &temp).await {
            let _ = tokio::fs::remove_file(&temp).await;
            return Err(err);
        }
        let placed = async {
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            tokio::fs::rename(&temp, &path).await
        }
        .await;
        if let Err(e) = placed {
            let _ = tokio::fs::remove_file(&temp).await;
            return Err(BlobError::io("caching a download at", &path, e));
        }
        Ok(path)
    }

    /// Checks that the store can be written and read back: a small object (or file) is
    /// written, read and removed. For `ironclad doctor`.
    pub async fn probe(&self) -> Result<Probe, BlobError> {
        let name = format!("probe-{}", uuid::Uuid::new_v4().simple());
        let bytes = format!("ironclad probe {name}").into_bytes();
        if let Some(remote) = &self.remote {
            return remote.probe(&name, bytes).await;
        }
        let mut writer = self.writer().await?;
        writer.write(&bytes).await?;
        let stored = writer.finish().await?;
        let back = self.read(&stored.key).await?;
        if back != bytes {
            return Err(BlobError::Corrupt {
                key: stored.key,
                detail: "the probe read back differs from what was written".into(),
            });
        }
        // Only a probe this call created may go; an identical one cannot exist (random name).
        self.discard_created(&[stored], |_| async {
            Ok::<_, std::convert::Infallible>(std::collections::HashSet::new())
        })
        .await?;
        Ok(Probe { clock_skew: None })
    }

    /// The file holding the blob `key`. Only keys of the exact shape `sha256/ab/cd/<64
    /// lowercase hex>` whose `ab`/`cd` are the first hex digits are accepted, so no key can
    /// name a file outside the store.
    pub fn path_of(&self, key: &str) -> Result<PathBuf, BlobError> {
        if !is_valid_key(key) {
            return Err(BlobError::InvalidKey {
                key: key.to_owned(),
            });
        }
        Ok(self.root.join(key))
    }

    /// Reads a whole blob into memory (through the verified cache, with an object store).
    pub async fn read(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        let path = self.local_path(key).await?;
        tokio::fs::read(&path).await.map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => BlobError::NotFound {
                key: key.to_owned(),
            },
            _ => BlobError::io("reading", &path, e),
        })
    }

    /// Whether a blob is stored under `key`.
    pub async fn exists(&self, key: &str) -> Result<bool, BlobError> {
        let path = self.path_of(key)?;
        if let Some(remote) = &self.remote {
            return remote.exists(key).await;
        }
        tokio::fs::try_exists(&path)
            .await
            .map_err(|e| BlobError::io("checking", &path, e))
    }

    /// The size and SHA-256 of the bytes stored under `key`, `None` if nothing is. The file is
    /// streamed through the hash in bounded chunks on a blocking thread, so checking a large
    /// blob costs no more memory than a small one (`ironclad verify` compares the result with
    /// what the database recorded).
    /// With an object store, the object itself is streamed (not the local cache).
    pub async fn digest(&self, key: &str) -> Result<Option<BlobDigest>, BlobError> {
        let path = self.path_of(key)?;
        if let Some(remote) = &self.remote {
            return remote.digest(key).await;
        }
        let file = path.clone();
        match tokio::task::spawn_blocking(move || digest_file(&file)).await {
            Ok(digest) => digest.map_err(|e| BlobError::io("hashing", &path, e)),
            Err(join) => Err(BlobError::io("hashing", &path, io::Error::other(join))),
        }
    }
}

/// What a blob holds: its size and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobDigest {
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex SHA-256 of the bytes.
    pub sha256: String,
}

/// Read buffer of [`digest_file`].
const DIGEST_BUFFER: usize = 256 * 1024;

/// Size and SHA-256 of the file at `path`, `None` if there is none.
fn digest_file(path: &Path) -> io::Result<Option<BlobDigest>> {
    use sha2::{Digest, Sha256};
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut hasher = Sha256::new();
    let size = io::copy(
        &mut io::BufReader::with_capacity(DIGEST_BUFFER, file),
        &mut hasher,
    )?;
    Ok(Some(BlobDigest {
        size,
        sha256: hex::encode(hasher.finalize()),
    }))
}

/// The key of the blob whose SHA-256 is `hex` (64 lowercase hex digits).
pub(crate) fn key_for(hex: &str) -> String {
    format!("{BLOBS_DIR}/{}/{}/{hex}", &hex[0..2], &hex[2..4])
}

/// Whether `key` is exactly `sha256/ab/cd/<hex>` with `ab`, `cd` the hash's first digits.
pub(crate) fn is_valid_key(key: &str) -> bool {
    let b = key.as_bytes();
    if b.len() != KEY_LEN || !key.starts_with("sha256/") {
        return false;
    }
    let hex = &b[13..];
    let lower_hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    b[9] == b'/'
        && b[12] == b'/'
        && hex.iter().all(lower_hex)
        && b[7..9] == hex[0..2]
        && b[10..12] == hex[2..4]
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    #[test]
    fn keys_have_exactly_one_shape() {
        let store = BlobStore {
            root: PathBuf::from("/store"),
            remote: None,
        };
        let key = key_for(HEX);
        assert_eq!(key, format!("sha256/2c/f2/{HEX}"));
        assert_eq!(
            store.path_of(&key).ok(),
            Some(PathBuf::from(format!("/store/sha256/2c/f2/{HEX}")))
        );
        let bad = [
            String::new(),
            "../x".into(),
            "sha256/../../etc/passwd".into(),
            format!("sha256/2c/f2/{}", &HEX[1..]),
            format!("sha256/2c/f2/{HEX}0"),
            format!("sha256/2c/f2/{}", HEX.to_uppercase()),
            format!("sha256/2C/F2/{}", HEX.to_uppercase()),
            format!("sha256/aa/f2/{HEX}"),
            format!("sha256/2c/ff/{HEX}"),
            format!("sha256/2cf2/{HEX}/"),
            format!("sha512/2c/f2/{HEX}"),
            format!("/sha256/2c/f2/{}", &HEX[1..]),
            format!("sha256/2c/f2/{}..", &HEX[2..]),
            format!("sha256/2c/f2/{}é", &HEX[2..]),
        ];
        for key in bad {
            assert!(
                matches!(store.path_of(&key), Err(BlobError::InvalidKey { .. })),
                "accepted {key:?}"
            );
        }
    }

    #[tokio::test]
    async fn digest_reports_what_is_stored() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = BlobStore::open(dir.path())?;
        let mut w = store.writer().await?;
        w.write(b"hello").await?;
        let stored = w.finish().await?;
        assert_eq!(stored.sha256, HEX);
        let intact = BlobDigest {
            size: 5,
            sha256: HEX.to_owned(),
        };
        assert_eq!(store.digest(&stored.key).await?, Some(intact));

        // Damaged bytes hash to something else; a missing blob is `None`, not an error.
        let path = store.path_of(&stored.key)?;
        std::fs::write(&path, b"hellO")?;
        let damaged = store.digest(&stored.key).await?;
        assert_eq!(damaged.as_ref().map(|d| d.size), Some(5));
        assert_ne!(damaged.map(|d| d.sha256), Some(HEX.to_owned()));
        std::fs::remove_file(&path)?;
        assert_eq!(store.digest(&stored.key).await?, None);
        assert!(matches!(
            store.digest("../etc/passwd").await,
            Err(BlobError::InvalidKey { .. })
        ));
        Ok(())
    }
}
