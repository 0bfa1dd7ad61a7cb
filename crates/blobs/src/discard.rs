//! Deleting at once the blobs a failed request created, instead of leaving them to the sweep.
//!
//! A request that stores several large files and then fails (its last part is refused, its
//! transaction rolls back) would otherwise leave every blob it made durable for the hourly
//! sweep — up to the request's whole size in orphans, per failed request. The request knows
//! which blobs it *created* ([`StoredBlob::created`]), but it cannot simply unlink them: from
//! the moment a blob is at its path, another request may find the same content stored,
//! deduplicate against it and be about to commit a row naming its key — and a blob it only
//! deduplicated against may belong to other cases already. So:
//!
//! # Protocol
//!
//! Blobs with `created == false` are skipped. For each created one:
//!
//! 1. if its path no longer names the file this writer created, with the mtime it had then,
//!    keep it (cheap early exit; safety does not rest on it);
//! 2. **rename** it (atomically) to `trash/<hex>.<nonce>`;
//! 3. re-check the parked file: if it is not the inode this writer created, or its mtime has
//!    changed, a writer deduplicated against it (or replaced it) → put it back;
//! 4. ask `referenced(keys)` once for all still parked; referenced ones go back;
//! 5. re-check as in 3, then delete the trash name.
//!
//! Parking, putting back (`link` + `unlink`, never replacing a file a writer put in place
//! meanwhile) and deleting are the sweep's own code (the crate's `trash` module).
//!
//! # Why it is safe
//!
//! The sweep's argument, with "touched since creation" in place of "touched within the grace":
//! the rename in step 2 splits every concurrent `finish` of the same content in two.
//!
//! * **`finish` touched the blob before the rename.** Its inode check proves the touch landed
//!   while the file was in place; rename keeps the inode and the mtime, so step 3 sees the
//!   change. A touch always leaves the mtime strictly later than before (even on file systems
//!   with coarse timestamps), so comparing for equality with the mtime recorded at creation
//!   cannot miss it.
//! * **`finish` ran after the rename.** It finds no file (or sees its touch land on a file
//!   that has left the path) and links its own copy into place; we only ever delete our
//!   trash name, never a file at a blob path.
//!
//! Step 4 covers a row that names the key without having deduplicated against this file (a
//! row committed before the blob was created, naming content that was missing). One check,
//! after parking, suffices: from then on no writer can find the file at its path.
//!
//! The cost of this caution: a request that deduplicated against its *own* blob (the same
//! content twice) has touched it, so the blob is kept and left to the sweep.

use crate::sweep::blocking;
use crate::trash::{self, remove, restore, restore_all, Parked};
use crate::writer::CreatedStamp;
use crate::{is_valid_key, BlobError, BlobStore, StoredBlob};
use std::collections::HashSet;
use std::fmt::Display;
use std::fs;
use std::future::Future;
use std::io;
use std::path::Path;

/// Keys passed to one `referenced` call at most, as in the sweep.
const BATCH: usize = 1000;

/// A blob this writer created, to be discarded if nothing else uses it.
#[derive(Debug, Clone)]
struct Candidate {
    key: String,
    stamp: CreatedStamp,
}

/// What a check of a parked blob decided.
#[derive(Debug, PartialEq, Eq)]
enum Check {
    /// Still the file this writer created, untouched, and nothing at its path: may go.
    Untouched,
    /// Touched, replaced or re-stored since: it went back (or its copy was dropped in favour
    /// of the file now at its path).
    Kept,
    /// The trash name is gone: a sweep starting up put it back. It stays for a later sweep.
    Recovered,
}

impl BlobStore {
    /// Removes blobs that a request created (`created == true`) and then did not commit,
    /// at once rather than at the next sweep. Uses the sweep's safety protocol for each: park in
    /// trash, re-check that no other writer touched it since (a concurrent request deduplicating
    /// against it touches its mtime) and that `referenced` does not report it, then delete;
    /// otherwise put it back. Blobs with `created == false` are skipped. Returns how many were
    /// deleted.
    ///
    /// `referenced` has the same shape as the sweep's: given keys, it returns the subset that
    /// rows reference. It is called at most once per 1000 created blobs, and not at all when
    /// none is left to delete. If it fails, every blob parked for that call is put back and
    /// [`BlobError::ReferenceCheck`] is returned (nothing of that batch is deleted; the sweep
    /// collects them later). Other errors are returned too; whatever they leave in the trash is
    /// put back by the next sweep. A key that does not have the shape of a blob key (the fields
    /// of [`StoredBlob`] are public) fails with [`BlobError::InvalidKey`] before anything is
    /// touched. See the [module documentation](crate::discard) for the protocol and why it is
    /// safe.
    pub async fn discard_created<F, Fut, E>(
        &self,
        blobs: &[StoredBlob],
        mut referenced: F,
    ) -> Result<usize, BlobError>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: Future<Output = Result<HashSet<String>, E>>,
        E: Display,
    {
        let mut seen = HashSet::new();
        let mut candidates = Vec::new();
        for blob in blobs {
            let Some(stamp) = blob.created_stamp() else {
                continue;
            };
            if !is_valid_key(&blob.key) {
                return Err(BlobError::InvalidKey {
                    key: blob.key.clone(),
                });
            }
            if seen.insert(blob.key.as_str()) {
                candidates.push(Candidate {
                    key: blob.key.clone(),
                    stamp: *stamp,
                });
            }
        }
        let mut deleted = 0;
        for batch in candidates.chunks(BATCH) {
            deleted += self.discard_batch(batch.to_vec(), &mut referenced).await?;
        }
        Ok(deleted)
    }

    async fn discard_batch<F, Fut, E>(
        &self,
        batch: Vec<Candidate>,
        referenced: &mut F,
    ) -> Result<usize, BlobError>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: Future<Output = Result<HashSet<String>, E>>,
        E: Display,
    {
        let root = self.root.clone();
        let parked = blocking(move || park_untouched(&root, batch)).await?;
        if parked.is_empty() {
            return Ok(0);
        }
        let keys: Vec<String> = parked.iter().map(|(p, _)| p.key.clone()).collect();
        let refs = match referenced(keys).await {
            Ok(refs) => refs,
            Err(e) => {
                let failed = BlobError::ReferenceCheck(e.to_string());
                return blocking(move || give_back(parked, failed)).await;
            }
        };
        blocking(move || settle(parked, &refs)).await
    }
}

/// Steps 1 to 3: parks each candidate still untouched, and re-checks it in the trash. Returns
/// those still parked. On an I/O error, puts back what it parked.
fn park_untouched(
    root: &Path,
    batch: Vec<Candidate>,
) -> Result<Vec<(Parked, CreatedStamp)>, BlobError> {
    let mut parked: Vec<(Parked, CreatedStamp)> = Vec::new();
    for c in batch {
        let target = root.join(&c.key);
        // Step 1: a blob already touched or gone is not parked at all.
        match fs::metadata(&target).and_then(|m| c.stamp.matches(&m)) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return give_back(parked, BlobError::io("checking", &target, e)),
        }
        match trash::park(root, c.key) {
            Ok(Some(p)) => parked.push((p, c.stamp)),
            Ok(None) => {}
            Err(e) => return give_back(parked, e),
        }
    }
    let mut still = Vec::with_capacity(parked.len());
    let mut rest = parked.into_iter();
    while let Some((p, stamp)) = rest.next() {
        match check(&p, &stamp) {
            Ok(Check::Untouched) => still.push((p, stamp)),
            Ok(Check::Kept | Check::Recovered) => {}
            Err(e) => {
                still.push((p, stamp));
                still.extend(rest);
                return give_back(still, e);
            }
        }
    }
    Ok(still)
}

/// Puts back what an interrupted `park_untouched` parked, then fails with `e`.
fn give_back<T>(parked: Vec<(Parked, CreatedStamp)>, e: BlobError) -> Result<T, BlobError> {
    let parked: Vec<Parked> = parked.into_iter().map(|(p, _)| p).collect();
    restore_all(&parked)?;
    Err(e)
}

/// Steps 3 and 5: is the parked file still exactly what this writer created, and is its path
/// still free? If not, it goes back (dropped instead if a writer re-stored the content).
fn check(p: &Parked, stamp: &CreatedStamp) -> Result<Check, BlobError> {
    let untouched = match fs::metadata(&p.trash) {
        Ok(meta) => stamp
            .matches(&meta)
            .map_err(|e| BlobError::io("reading mtime of", &p.trash, e))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Check::Recovered),
        Err(e) => return Err(BlobError::io("checking", &p.trash, e)),
    };
    if !untouched {
        tracing::debug!(key = %p.key, "created blob was deduplicated against; keeping it");
        restore(p)?;
        return Ok(Check::Kept);
    }
    match fs::symlink_metadata(&p.target) {
        // A writer stored the content again after we parked ours: our copy is redundant.
        Ok(_) => {
            restore(p)?;
            Ok(Check::Kept)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Check::Untouched),
        Err(e) => Err(BlobError::io("checking", &p.target, e)),
    }
}

/// Steps 4 and 5: puts back what is referenced or was touched, deletes the rest. Keeps going
/// after an error (what it leaves in the trash is put back by the next sweep) and returns the
/// first.
fn settle(
    parked: Vec<(Parked, CreatedStamp)>,
    referenced: &HashSet<String>,
) -> Result<usize, BlobError> {
    let mut deleted = 0;
    let mut first_error = None;
    for (p, stamp) in parked {
        let result = if referenced.contains(&p.key) {
            restore(&p)
        } else {
            match check(&p, &stamp) {
                Ok(Check::Untouched) => remove(&p.trash).map(|()| {
                    tracing::info!(key = %p.key, "discarded a blob its failed request created");
                    deleted += 1;
                }),
                Ok(Check::Kept | Check::Recovered) => Ok(()),
                Err(e) => Err(e),
            }
        };
        if let Err(e) = result {
            tracing::error!(key = %p.key, error = %e, "discard could not settle a parked blob");
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(deleted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    async fn created(store: &BlobStore, content: &[u8]) -> StoredBlob {
        let mut w = store.writer().await.expect("writer");
        w.write(content).await.expect("write");
        let blob = w.finish().await.expect("finish");
        assert!(blob.created);
        blob
    }

    /// A writer opened our blob before we parked it and touched it after: the touch lands on
    /// the parked copy, and the re-check must put it back.
    #[tokio::test]
    async fn a_touch_landing_on_the_parked_copy_puts_it_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = BlobStore::open(dir.path()).expect("open");
        let blob = created(&store, b"hello").await;
        let stamp = *blob.created_stamp().expect("stamp");
        let handle = fs::File::open(&blob.path).expect("open blob");

        let parked = trash::park(store.root(), blob.key.clone())
            .expect("park")
            .expect("parked");
        assert_eq!(check(&parked, &stamp).expect("check"), Check::Untouched);
        handle
            .set_modified(SystemTime::now() + std::time::Duration::from_secs(1))
            .expect("touch");

        assert_eq!(check(&parked, &stamp).expect("check"), Check::Kept);
        assert_eq!(fs::read(&blob.path).expect("restored"), b"hello");
        assert!(!parked.trash.exists());
    }

    /// A writer stored the content again after we parked ours: our copy is dropped, theirs
    /// stays.
    #[tokio::test]
    async fn a_copy_stored_again_after_parking_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = BlobStore::open(dir.path()).expect("open");
        let blob = created(&store, b"hello").await;
        let stamp = *blob.created_stamp().expect("stamp");
        let parked = trash::park(store.root(), blob.key.clone())
            .expect("park")
            .expect("parked");
        let again = created(&store, b"hello").await;

        assert_eq!(check(&parked, &stamp).expect("check"), Check::Kept);
        assert!(!parked.trash.exists());
        assert_eq!(fs::read(&again.path).expect("theirs"), b"hello");
    }

    /// A sweep starting up put our parked blob back: settling neither fails nor counts it.
    #[tokio::test]
    async fn a_blob_recovered_by_a_sweep_is_not_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = BlobStore::open(dir.path()).expect("open");
        let blob = created(&store, b"hello").await;
        let stamp = *blob.created_stamp().expect("stamp");
        let parked = trash::park(store.root(), blob.key.clone())
            .expect("park")
            .expect("parked");
        trash::recover_trash(store.root()).expect("recover");

        let deleted = settle(vec![(parked, stamp)], &HashSet::new()).expect("settle");
        assert_eq!(deleted, 0);
        assert_eq!(fs::read(&blob.path).expect("back"), b"hello");
    }
}
