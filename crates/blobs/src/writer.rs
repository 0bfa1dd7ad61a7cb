//! Streaming a new blob in: temp file, hash as it goes, fsync, then put it in place.
//!
//! **Placing.** The synced temp file is *linked* to its key's path, not renamed: `link` never
//! replaces a file, so of several writers finishing the same new content exactly one creates
//! the key's file ([`StoredBlob::created`]), and only that one may later delete it at once
//! ([`BlobStore::discard_created`](crate::BlobStore::discard_created)).
//!
//! **Deduplicating.** A writer that finds the key taken must not trust the copy there blindly:
//!
//! * its bytes are verified — same size *and* same SHA-256 — because a same-length file can
//!   still be damaged (bit rot, a file truncated then padded). A copy that does not match is
//!   replaced by ours (rename over it, sync the directory) with a warning naming the key;
//! * it is touched (mtime set to now, always strictly later than before) and its inode
//!   re-checked, so a concurrent sweep or discard keeps it (see [`crate::sweep`]);
//! * it is fsynced, with its directories, before we report it durable, because the writer that
//!   created it may not have synced them yet: a crash could otherwise lose bytes that our
//!   intake has committed a reference to. Every successful path goes through
//!   [`sync_placed`].

use crate::remote::Remote;
use crate::{key_for, BlobError, BLOBS_DIR, TMP_DIR};
use sha2::{Digest, Sha256};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::io::AsyncWriteExt;

/// How many times `finish` tries to link its file into place when each time the copy it found
/// there was moved away (by a sweep or a discard) before it could be used.
const PLACE_ATTEMPTS: usize = 4;

/// How far a touch moves an mtime forward when setting it to "now" did not make it later than
/// it was: enough for the coarsest POSIX timestamps (1 s on ext3, 2 s on FAT).
const MTIME_STEP: Duration = Duration::from_secs(2);

/// Read buffer for verifying a stored copy's SHA-256.
const HASH_BUFFER: usize = 64 * 1024;

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
    /// True when this writer put the bytes in place; false when the content was already stored
    /// (deduplicated) — such a blob may belong to other cases and must never be discarded by us.
    /// A writer that replaced a damaged copy also reports false: the key existed before it, so
    /// rows may already name it.
    pub created: bool,
    /// The created file's identity and mtime, `Some` exactly when this writer created it. Private,
    /// so a `StoredBlob` is built only by this crate and flipping `created` alone never lets
    /// [`BlobStore::discard_created`](crate::BlobStore::discard_created) delete anything.
    stamp: Option<CreatedStamp>,
}

impl StoredBlob {
    /// What the file looked like when this writer created it; `None` unless `created`.
    pub(crate) fn created_stamp(&self) -> Option<&CreatedStamp> {
        self.stamp.as_ref().filter(|_| self.created)
    }
}

/// Identity and mtime of a file a writer created, read just before it was linked into place.
///
/// Nothing but a deduplicating writer's touch changes a stored blob's mtime (rename and link
/// keep it), and a touch always makes it strictly later, so a file that still has this inode
/// and this mtime has not been deduplicated against since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CreatedStamp {
    dev: u64,
    ino: u64,
    mtime: SystemTime,
}

impl CreatedStamp {
    fn of(meta: &fs::Metadata) -> io::Result<Self> {
        Ok(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: meta.modified()?,
        })
    }

    /// Whether `meta` describes the very file this stamp was taken from, untouched since.
    pub(crate) fn matches(&self, meta: &fs::Metadata) -> io::Result<bool> {
        Ok(meta.dev() == self.dev && meta.ino() == self.ino && meta.modified()? == self.mtime)
    }
}

/// An upload in progress. Finish it to store the blob; dropping or aborting it removes its
/// temporary file.
#[derive(Debug)]
pub struct BlobWriter {
    root: PathBuf,
    /// The object store the finished blob is uploaded to, if any.
    remote: Option<Arc<Remote>>,
    /// `None` once finished or aborted, so `Drop` knows there is nothing left to clean.
    temp: Option<PathBuf>,
    file: Option<tokio::fs::File>,
    hasher: Sha256,
    len: u64,
    /// Set when a write failed part-way: the file may hold bytes the hash never saw.
    failed: bool,
}

impl BlobWriter {
    pub(crate) async fn create(
        root: PathBuf,
        remote: Option<Arc<Remote>>,
    ) -> Result<Self, BlobError> {
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
            remote,
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
    /// With an object store, the blob is then uploaded, and `finish` returns only once the
    /// store has acknowledged it (see [`remote`](crate::remote)).
    ///
    /// The temp file is fsynced, then linked to `sha256/ab/cd/<hex>` and its directories
    /// fsynced ([`StoredBlob::created`] is true). If that key already holds a file, its size
    /// and SHA-256 are verified: a matching copy is touched (mtime set to now, so a sweep or
    /// discard running concurrently keeps it; see [`crate::sweep`]), fsynced with its
    /// directories, and the temp file removed (`created` is false); a damaged one is replaced
    /// by the uploaded bytes.
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
        let path = self.root.join(&key);
        let new = NewBlob {
            root: self.root.clone(),
            temp: temp.clone(),
            target: path.clone(),
            key: key.clone(),
            sha256: sha256.clone(),
            size: self.len,
        };
        let placement = tokio::task::spawn_blocking(move || commit(&new, file))
            .await
            .map_err(|e| BlobError::io("committing blob", &temp, io::Error::other(e)))??;
        // The temp name is gone (linked and removed, or renamed): nothing for Drop to clean.
        self.temp = None;
        let stamp = match placement {
            Placement::Created(stamp) => Some(stamp),
            Placement::Deduplicated | Placement::Replaced => None,
        };
        // With an object store the local file is only staging: the key may be handed out
        // once the store has acknowledged the whole upload. Uploading even content it already
        // holds renews the object's date, which a concurrent sweep reads as "in use".
        if let Some(remote) = &self.remote {
            remote.upload(&key, &path).await?;
        }
        Ok(StoredBlob {
            key,
            sha256,
            size: self.len,
            path,
            created: stamp.is_some(),
            stamp,
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

/// Everything the blocking half of `finish` needs to know about the upload.
struct NewBlob {
    root: PathBuf,
    temp: PathBuf,
    target: PathBuf,
    key: String,
    sha256: String,
    size: u64,
}

/// How `commit` made the blob durable.
#[derive(Debug)]
enum Placement {
    /// Our file is now the key's file; it looked like this when it was linked.
    Created(CreatedStamp),
    /// A verified copy was already stored; ours was dropped.
    Deduplicated,
    /// Our file replaced a copy that did not match its key.
    Replaced,
}

/// The blocking half of `finish`: fsync, then link into place, or verify, touch and sync the
/// copy already there, or replace it if it is damaged.
fn commit(new: &NewBlob, file: fs::File) -> Result<Placement, BlobError> {
    let (temp, target) = (new.temp.as_path(), new.target.as_path());
    file.sync_all()
        .map_err(|e| BlobError::io("syncing temp file", temp, e))?;
    // Read before linking: once the file is at its path, a deduplicating writer may touch it,
    // and the stamp must predate any such touch.
    let stamp = file
        .metadata()
        .and_then(|m| CreatedStamp::of(&m))
        .map_err(|e| BlobError::io("reading metadata of", temp, e))?;
    drop(file);
    let leaf = target
        .parent()
        .ok_or_else(|| BlobError::io("locating", target, io::ErrorKind::InvalidInput.into()))?;
    fs::create_dir_all(leaf).map_err(|e| BlobError::io("creating directory", leaf, e))?;

    for _ in 0..PLACE_ATTEMPTS {
        match fs::hard_link(temp, target) {
            Ok(()) => {
                sync_placed(&new.root, leaf)?;
                remove_temp(temp)?;
                return Ok(Placement::Created(stamp));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(BlobError::io("linking into place", target, e)),
        }
        match verify_existing(target, new.size, &new.sha256)
            .map_err(|e| BlobError::io("verifying existing blob", target, e))?
        {
            Existing::Verified(existing) => {
                // Whoever stored it may not have synced it, or its directories, yet.
                existing
                    .sync_all()
                    .map_err(|e| BlobError::io("syncing existing blob", target, e))?;
                sync_placed(&new.root, leaf)?;
                remove_temp(temp)?;
                return Ok(Placement::Deduplicated);
            }
            Existing::Damaged(problem) => {
                tracing::warn!(key = %new.key, problem = %problem,
                    "stored blob does not match its key; replacing it with the uploaded bytes");
                return replace(new, leaf);
            }
            // Moved away (by a sweep or a discard) or replaced while we looked: try again.
            Existing::Moved => {}
        }
    }
    // Every copy we found was moved away before we could use it: ours, verified by its hash
    // as it streamed in, takes the path. Renaming over a file is safe (same content) and, as
    // `created` stays false, nothing will discard it on our behalf.
    tracing::warn!(key = %new.key, "stored blob kept moving while deduplicating; replacing it");
    replace(new, leaf)
}

/// Renames our temp file over whatever is at the target, then syncs the directories.
fn replace(new: &NewBlob, leaf: &Path) -> Result<Placement, BlobError> {
    fs::rename(&new.temp, &new.target)
        .map_err(|e| BlobError::io("renaming into place", &new.target, e))?;
    sync_placed(&new.root, leaf)?;
    Ok(Placement::Replaced)
}

fn remove_temp(temp: &Path) -> Result<(), BlobError> {
    fs::remove_file(temp).map_err(|e| BlobError::io("removing temp file", temp, e))
}

/// Makes a blob's directory entry durable, whoever wrote it: its leaf directory `ab/cd`, and
/// the two above it, which this writer or another one may have created a moment ago without
/// syncing them yet. Every path on which `finish` reports a blob durable goes through here.
fn sync_placed(root: &Path, leaf: &Path) -> Result<(), BlobError> {
    sync_dir(leaf)?;
    if let Some(mid) = leaf.parent() {
        sync_dir(mid)?;
    }
    sync_dir(&root.join(BLOBS_DIR))
}

/// What `verify_existing` found at a key's path.
#[derive(Debug)]
enum Existing {
    /// A copy with the right bytes, touched while in place; the open handle, to sync it.
    Verified(fs::File),
    /// A copy with the wrong size or bytes (what is wrong, for the log).
    Damaged(String),
    /// Nothing, or the file we touched has left the path since.
    Moved,
}

/// Checks the copy already stored at `target` and, if it is good, touches it.
///
/// The copy is trusted only if it has `size` bytes hashing to `sha256`. Then it is touched
/// through the open handle and the path's inode compared after the touch. That check
/// matters: if a sweep (or discard) renamed the file into its trash just before, the touch
/// landed on the trashed copy, which it may already have inspected. Seeing the path still name
/// the touched inode proves the touch happened while the file was in place, i.e. before any
/// rename, so the re-check that follows such a rename will see it.
fn verify_existing(target: &Path, size: u64, sha256: &str) -> io::Result<Existing> {
    let existing = match fs::File::open(target) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::Moved),
        Err(e) => return Err(e),
    };
    let meta = existing.metadata()?;
    if meta.len() != size {
        return Ok(Existing::Damaged(format!(
            "{} bytes stored, {size} expected",
            meta.len()
        )));
    }
    let stored = sha256_of(&existing)?;
    if stored != sha256 {
        return Ok(Existing::Damaged(format!("stored bytes hash to {stored}")));
    }
    touch(&existing, meta.modified()?)?;
    match fs::metadata(target) {
        Ok(now) if now.dev() == meta.dev() && now.ino() == meta.ino() => {
            Ok(Existing::Verified(existing))
        }
        Ok(_) => Ok(Existing::Moved),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Existing::Moved),
        Err(e) => Err(e),
    }
}

/// SHA-256 of a file's bytes, lowercase hex, read from its start in bounded chunks.
fn sha256_of(file: &fs::File) -> io::Result<String> {
    let mut hasher = Sha256::new();
    io::copy(
        &mut io::BufReader::with_capacity(HASH_BUFFER, file),
        &mut hasher,
    )?;
    Ok(hex::encode(hasher.finalize()))
}

/// Sets a file's mtime to now, and makes sure it ends up strictly later than `before`.
///
/// Setting "now" alone may leave it unchanged — file systems with 1 s or 2 s timestamps, a
/// clock stepped back — and [`BlobStore::discard_created`](crate::BlobStore::discard_created)
/// reads an unchanged mtime as "nobody deduplicated against this blob".
fn touch(file: &fs::File, before: SystemTime) -> io::Result<()> {
    file.set_modified(SystemTime::now())?;
    if file.metadata()?.modified()? > before {
        return Ok(());
    }
    let later = before
        .checked_add(MTIME_STEP)
        .ok_or_else(|| io::Error::other("mtime out of range"))?;
    file.set_modified(later)?;
    if file.metadata()?.modified()? > before {
        return Ok(());
    }
    Err(io::Error::other(
        "the file system did not record a later mtime",
    ))
}

/// Fsyncs a directory so the entries created in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), BlobError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| BlobError::io("syncing directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Setting "now" may not make the mtime later (coarse timestamps, a clock stepped back, or
    /// as here an mtime already in the future); the touch must still move it forward.
    #[test]
    fn a_touch_always_moves_the_mtime_forward() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("blob");
        fs::write(&path, b"hello").expect("write");
        let file = fs::File::open(&path).expect("open");
        for before in [
            SystemTime::now() - Duration::from_secs(3600),
            SystemTime::now() + Duration::from_secs(3600),
        ] {
            file.set_modified(before).expect("set mtime");
            let before = file.metadata().and_then(|m| m.modified()).expect("mtime");
            touch(&file, before).expect("touch");
            let after = file.metadata().and_then(|m| m.modified()).expect("mtime");
            assert!(after > before, "{after:?} <= {before:?}");
        }
    }
}
