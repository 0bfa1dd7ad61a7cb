//! Streaming a new blob in: temp file, hash as it goes, fsync, rename into place.

use crate::{key_for, BlobError, BLOBS_DIR, TMP_DIR};
use sha2::{Digest, Sha256};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tokio::io::AsyncWriteExt;

/// A blob that is durably stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    /// The store key, `sha256/ab/cd/<hex>`.
    pub key: String,
    /// SHA-256 of the content, lowercase hex.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Where the blob lives on disk.
    pub path: PathBuf,
}

/// An upload in progress. Finish it to store the blob; dropping or aborting it removes its
/// temporary file.
#[derive(Debug)]
pub struct BlobWriter {
    root: PathBuf,
    /// `None` once finished or aborted, so `Drop` knows there is nothing left to clean.
    temp: Option<PathBuf>,
    file: Option<tokio::fs::File>,
    hasher: Sha256,
    len: u64,
    /// Set when a write failed part-way: the file may hold bytes the hash never saw.
    failed: bool,
}

impl BlobWriter {
    pub(crate) async fn create(root: PathBuf) -> Result<Self, BlobError> {
        // A random name, created exclusively: concurrent writers never share a temp file.
        let temp = root
            .join(TMP_DIR)
            .join(format!("{}.part", uuid::Uuid::new_v4().simple()));
        let file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .await
            .map_err(|e| BlobError::io("creating temp file", &temp, e))?;
        Ok(Self {
            root,
            temp: Some(temp),
            file: Some(file),
            hasher: Sha256::new(),
            len: 0,
            failed: false,
        })
    }

    /// Appends a chunk.
    pub async fn write(&mut self, chunk: &[u8]) -> Result<(), BlobError> {
        let (Some(file), Some(temp), false) = (self.file.as_mut(), self.temp.as_ref(), self.failed)
        else {
            return Err(BlobError::WriterFailed);
        };
        // tokio runs the last write in the background; flushing waits for it, so errors
        // surface on this call and the temp file's mtime says when data last arrived.
        let written = match file.write_all(chunk).await {
            Ok(()) => file.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            self.failed = true;
            return Err(BlobError::io("writing temp file", temp, e));
        }
        self.hasher.update(chunk);
        self.len += chunk.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing has been written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes the blob durable under its content key.
    ///
    /// The temp file is fsynced, then renamed to `sha256/ab/cd/<hex>` and the directory
    /// fsynced. If that key already holds the same content (same size), the temp file is
    /// removed instead and the existing blob's mtime is set to now, so a sweep running
    /// concurrently sees it as fresh and keeps it (see [`crate::sweep`]).
    pub async fn finish(mut self) -> Result<StoredBlob, BlobError> {
        let (Some(mut file), Some(temp), false) =
            (self.file.take(), self.temp.clone(), self.failed)
        else {
            return Err(BlobError::WriterFailed);
        };
        file.flush()
            .await
            .map_err(|e| BlobError::io("flushing temp file", &temp, e))?;
        let file = file.into_std().await;
        let sha256 = hex::encode(std::mem::take(&mut self.hasher).finalize());
        let key = key_for(&sha256);
        let target = self.root.join(&key);
        let size = self.len;
        let root = self.root.clone();
        let moved_temp = temp.clone();
        tokio::task::spawn_blocking(move || commit(&root, file, &moved_temp, &target, size))
            .await
            .map_err(|e| BlobError::io("committing blob", &temp, io::Error::other(e)))??;
        // The temp name is gone (renamed or removed): nothing for Drop to clean.
        self.temp = None;
        let path = self.root.join(&key);
        Ok(StoredBlob {
            key,
            sha256,
            size,
            path,
        })
    }

    /// Gives up the upload and removes its temp file.
    pub async fn abort(mut self) {
        drop(self.file.take());
        if let Some(temp) = self.temp.take() {
            if let Err(e) = tokio::fs::remove_file(&temp).await {
                tracing::warn!(path = %temp.display(), error = %e, "could not remove aborted upload");
            }
        }
    }
}

impl Drop for BlobWriter {
    fn drop(&mut self) {
        // Best effort: a sweep removes whatever this misses once it is older than the grace.
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

/// The blocking half of `finish`: fsync, then rename into place (or touch the existing copy).
fn commit(
    root: &Path,
    file: fs::File,
    temp: &Path,
    target: &Path,
    size: u64,
) -> Result<(), BlobError> {
    file.sync_all()
        .map_err(|e| BlobError::io("syncing temp file", temp, e))?;
    drop(file);
    let leaf = target
        .parent()
        .ok_or_else(|| BlobError::io("locating", target, io::ErrorKind::InvalidInput.into()))?;
    let created = !leaf.is_dir();
    fs::create_dir_all(leaf).map_err(|e| BlobError::io("creating directory", leaf, e))?;

    if refresh_existing(target, size)
        .map_err(|e| BlobError::io("touching existing blob", target, e))?
    {
        fs::remove_file(temp).map_err(|e| BlobError::io("removing duplicate upload", temp, e))?;
        return Ok(());
    }
    fs::rename(temp, target).map_err(|e| BlobError::io("renaming into place", target, e))?;
    // The rename is durable only once the directory entry is; new directories need their
    // own entries synced in their parents too.
    sync_dir(leaf)?;
    if created {
        if let Some(mid) = leaf.parent() {
            sync_dir(mid)?;
        }
        sync_dir(&root.join(BLOBS_DIR))?;
    }
    Ok(())
}

/// If `target` already holds a blob of `size` bytes, sets its mtime to now and returns true.
///
/// Returns false when there is no usable copy: absent, a different size (damaged; the caller
/// replaces it), or moved away by a sweep while we touched it. That last check matters: the
/// touch goes through an open handle, so if a sweep renamed the file into its trash just
/// before, the touch landed on the trashed copy, which the sweep may already have inspected.
/// Comparing the path's inode after the touch proves the touch happened while the file was
/// still in place, i.e. before the sweep's rename, so the sweep's post-rename mtime check
/// will see it.
fn refresh_existing(target: &Path, size: u64) -> io::Result<bool> {
    let existing = match fs::File::open(target) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let meta = existing.metadata()?;
    if meta.len() != size {
        tracing::warn!(path = %target.display(), stored = meta.len(), expected = size,
            "stored blob has the wrong size; replacing it");
        return Ok(false);
    }
    existing.set_modified(SystemTime::now())?;
    match fs::metadata(target) {
        Ok(now) => Ok(now.dev() == meta.dev() && now.ino() == meta.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Fsyncs a directory so the entries created in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), BlobError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| BlobError::io("syncing directory", dir, e))
}
