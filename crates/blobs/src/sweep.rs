//! Collecting orphan blobs without ever deleting one that a request is about to reference.
//!
//! An orphan is a blob written for a request whose transaction then failed. Blobs are
//! content-addressed and shared across cases, so "no row references it right now" is not
//! enough to delete one: another request may have just found the same content stored
//! ([`BlobWriter::finish`](crate::BlobWriter::finish) touched it) and be about to commit a row
//! naming its key.
//!
//! # Protocol
//!
//! For every blob whose mtime is older than `grace`:
//!
//! 1. ask `referenced(keys)`; referenced blobs are kept;
//! 2. **rename** each unreferenced one (atomically) to `trash/<hex>.<nonce>`;
//! 3. re-check: if the trashed file's mtime is now fresh, it goes back; if a new file now
//!    exists at the original path, the trashed copy is redundant and is removed;
//! 4. ask `referenced(keys)` again; referenced ones go back;
//! 5. only then delete the trashed file.
//!
//! Putting back uses `link` + `unlink`, which never overwrites a file that a writer has put
//! in place meanwhile. Temp files in `tmp/` older than `grace` (abandoned uploads) are
//! deleted too, and a sweep starts by putting back anything an interrupted sweep left in
//! `trash/`.
//!
//! Parking, putting back and deleting live in the crate's `trash` module, shared with
//! [`BlobStore::discard_created`], which deletes a failed request's own blobs at once by the
//! same protocol (see [`discard`](crate::discard)).
//!
//! # Why it is safe
//!
//! The rename in step 2 is the single instant at which a blob leaves its path, and it splits
//! every concurrent `finish` of the same content into two cases:
//!
//! * **`finish` touched the file before the rename.** `finish` verifies after its touch that
//!   the path still names the inode it touched, so the touch happened while the file was in
//!   place; the rename preserves the inode, so the check in step 3 (after the rename) sees
//!   the fresh mtime and puts the blob back.
//! * **`finish` ran after the rename.** It finds no file (or sees its touch land on a file
//!   that has left the path) and links its own copy into place: the content is stored
//!   again, and the sweep only ever deletes its trashed copy, never a file at a blob path.
//!
//! Step 4 covers a reference committed between the two checks by a request that did not
//! touch the blob within `grace`. The contract for callers: a request must obtain its key
//! from `finish` (which touches) and commit the row referencing it within `grace`; pick
//! `grace` well above the longest intake transaction and the longest idle gap of an upload
//! (an upload idle for longer loses its temp file and its `finish` fails cleanly).
//!
//! Run one sweep per store at a time (e.g. under a database advisory lock). Two concurrent
//! sweeps lose nothing — only trash names are ever unlinked, and the start-up recovery of one
//! merely puts back what the other parked — but they waste work.

use crate::trash::{self, recover_trash, remove, restore, restore_all, Parked};
use crate::{is_valid_key, BlobError, BlobStore, BLOBS_DIR, TMP_DIR};
use std::collections::HashSet;
use std::fmt::Display;
use std::fs;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Keys passed to one `referenced` call at most, so the caller's query stays bounded.
const BATCH: usize = 1000;

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Blobs looked at.
    pub examined: usize,
    /// Orphans deleted.
    pub deleted: usize,
    /// Old blobs kept because a row references them.
    pub kept_referenced: usize,
    /// Blobs kept because they were written or touched within the grace period (including
    /// ones re-stored by a writer while the sweep ran).
    pub kept_fresh: usize,
    /// Abandoned temp files removed.
    pub temp_removed: usize,
    /// Object store only: orphans moved to `trash/`, deleted by a later sweep if still
    /// unreferenced (see [`remote`](crate::remote)).
    pub parked: usize,
}

/// What the re-check of a parked blob decided.
enum Recheck {
    /// Touched since it was listed: it went back.
    RestoredFresh,
    /// A writer stored the same content again: the trashed copy was removed.
    Superseded,
    /// Still a candidate.
    StillOrphan,
}

impl BlobStore {
    /// Deletes orphan blobs older than `grace`, asking `referenced` (twice) which of a batch
    /// of keys rows still reference; it returns the referenced subset. See the
    /// [module documentation](self) for the protocol and why it never loses a blob that a
    /// concurrent request is about to reference.
    ///
    /// If `referenced` fails, every blob parked for that batch is put back and the sweep
    /// stops with [`BlobError::ReferenceCheck`].
    pub async fn sweep<F, Fut, E>(
        &self,
        grace: Duration,
        mut referenced: F,
    ) -> Result<SweepReport, BlobError>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: Future<Output = Result<HashSet<String>, E>>,
        E: Display,
    {
        let mut report = SweepReport::default();
        let root = self.root.clone();
        blocking(move || recover_trash(&root)).await?;
        let root = self.root.clone();
        report.temp_removed = blocking(move || remove_old_temps(&root, grace)).await?;
        if let Some(remote) = self.remote.clone() {
            // The local blobs are a cache of the object store: unused ones simply go.
            let root = self.root.clone();
            blocking(move || prune_cache(&root, grace)).await?;
            remote.sweep(grace, &mut referenced, &mut report).await?;
            return Ok(report);
        }

        let root = self.root.clone();
        let top_dirs = blocking(move || subdirs(&root.join(BLOBS_DIR))).await?;
        // Listing one top-level directory at a time and settling full batches as they fill
        // keeps memory small on big stores and the number of reference queries low.
        let mut candidates = Vec::new();
        for dir in top_dirs {
            let (examined, fresh, old) = blocking(move || list_old_blobs(&dir, grace)).await?;
            report.examined += examined;
            report.kept_fresh += fresh;
            candidates.extend(old);
            while candidates.len() >= BATCH {
                let rest = candidates.split_off(BATCH);
                let batch = std::mem::replace(&mut candidates, rest);
                self.sweep_batch(batch, grace, &mut referenced, &mut report)
                    .await?;
            }
        }
        if !candidates.is_empty() {
            self.sweep_batch(candidates, grace, &mut referenced, &mut report)
                .await?;
        }
        Ok(report)
    }

    async fn sweep_batch<F, Fut, E>(
        &self,
        keys: Vec<String>,
        grace: Duration,
        referenced: &mut F,
        report: &mut SweepReport,
    ) -> Result<(), BlobError>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: Future<Output = Result<HashSet<String>, E>>,
        E: Display,
    {
        let first = ask_referenced(referenced, keys.clone()).await?;
        let (kept, unreferenced): (Vec<String>, Vec<String>) =
            keys.into_iter().partition(|k| first.contains(k));
        report.kept_referenced += kept.len();
        if unreferenced.is_empty() {
            return Ok(());
        }

        let root = self.root.clone();
        let (parked, fresh) = blocking(move || park_all(&root, unreferenced, grace)).await?;
        report.kept_fresh += fresh;
        if parked.is_empty() {
            return Ok(());
        }

        let pending: Vec<String> = parked.iter().map(|p| p.key.clone()).collect();
        let second = match referenced(pending).await {
            Ok(second) => second,
            Err(e) => {
                blocking(move || restore_all(&parked)).await?;
                return Err(BlobError::ReferenceCheck(e.to_string()));
            }
        };
        let outcome = blocking(move || finish_all(parked, &second, grace)).await?;
        report.kept_referenced += outcome.kept_referenced;
        report.kept_fresh += outcome.kept_fresh;
        report.deleted += outcome.deleted;
        Ok(())
    }
}

/// Which of `keys` the caller's references still hold; its failure stops the sweep.
pub(crate) async fn ask_referenced<F, Fut, E>(
    referenced: &mut F,
    keys: Vec<String>,
) -> Result<HashSet<String>, BlobError>
where
    F: FnMut(Vec<String>) -> Fut,
    Fut: Future<Output = Result<HashSet<String>, E>>,
    E: Display,
{
    referenced(keys)
        .await
        .map_err(|e| BlobError::ReferenceCheck(e.to_string()))
}

/// Runs blocking file-system work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BlobError> + Send + 'static,
) -> Result<T, BlobError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| BlobError::io("sweeping", PathBuf::new(), io::Error::other(e)))?
}

/// Whether `mtime` is within `grace` of now (a future mtime, from clock skew, counts as fresh).
fn is_fresh(mtime: SystemTime, grace: Duration) -> bool {
    match SystemTime::now().checked_sub(grace) {
        Some(cutoff) => mtime > cutoff,
        None => true,
    }
}

fn mtime_of(path: &Path) -> io::Result<SystemTime> {
    fs::metadata(path)?.modified()
}

/// Sub-directories of `dir`, sorted so sweeps walk the store in a stable order.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, BlobError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| BlobError::io("listing", dir, e))? {
        let entry = entry.map_err(|e| BlobError::io("listing", dir, e))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Walks `sha256/ab/*/*`: returns (blobs seen, fresh blobs, keys of old blobs).
fn list_old_blobs(top: &Path, grace: Duration) -> Result<(usize, usize, Vec<String>), BlobError> {
    let (mut examined, mut fresh, mut old) = (0, 0, Vec::new());
    for leaf in subdirs(top)? {
        for entry in fs::read_dir(&leaf).map_err(|e| BlobError::io("listing", &leaf, e))? {
            let entry = entry.map_err(|e| BlobError::io("listing", &leaf, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let key = format!("{BLOBS_DIR}/{}/{name}", relative_dirs(&leaf));
            // Stray files that are not blobs are not ours to judge.
            if !is_valid_key(&key) {
                continue;
            }
            let mtime = match entry.metadata().and_then(|m| m.modified()) {
                Ok(m) => m,
                // Gone since the listing (another sweep): nothing to do.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(BlobError::io("reading mtime of", entry.path(), e)),
            };
            examined += 1;
            if is_fresh(mtime, grace) {
                fresh += 1;
            } else {
                old.push(key);
            }
        }
    }
    Ok((examined, fresh, old))
}

/// `ab/cd` for the leaf directory `<root>/sha256/ab/cd`.
fn relative_dirs(leaf: &Path) -> String {
    let cd = leaf.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ab = leaf
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("");
    format!("{ab}/{cd}")
}

/// Step 2 and 3: parks each candidate in the trash, then re-checks it. Returns the blobs still
/// parked and how many turned out fresh. On an I/O error, puts back what it parked.
fn park_all(
    root: &Path,
    keys: Vec<String>,
    grace: Duration,
) -> Result<(Vec<Parked>, usize), BlobError> {
    let mut parked = Vec::new();
    let mut fresh = 0;
    for key in keys {
        match park(root, key, grace) {
            Ok(Some(p)) => parked.push(p),
            Ok(None) => fresh += 1,
            Err(e) => {
                restore_all(&parked)?;
                return Err(e);
            }
        }
    }
    let mut still = Vec::with_capacity(parked.len());
    for p in parked {
        match recheck(&p, grace) {
            Ok(Recheck::StillOrphan) => still.push(p),
            Ok(Recheck::RestoredFresh | Recheck::Superseded) => fresh += 1,
            Err(e) => {
                still.push(p);
                restore_all(&still)?;
                return Err(e);
            }
        }
    }
    Ok((still, fresh))
}

/// Moves one old blob into the trash; `None` if it is fresh again or already gone.
fn park(root: &Path, key: String, grace: Duration) -> Result<Option<Parked>, BlobError> {
    let target = root.join(&key);
    // Cheap early exit for blobs touched since the listing; safety does not rest on it.
    match mtime_of(&target) {
        Ok(m) if is_fresh(m, grace) => return Ok(None),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BlobError::io("reading mtime of", &target, e)),
    }
    trash::park(root, key)
}

/// Step 3 (and again before deleting): has a writer touched or re-stored this blob?
fn recheck(p: &Parked, grace: Duration) -> Result<Recheck, BlobError> {
    let mtime = mtime_of(&p.trash).map_err(|e| BlobError::io("reading mtime of", &p.trash, e))?;
    if is_fresh(mtime, grace) {
        restore(p)?;
        return Ok(Recheck::RestoredFresh);
    }
    match fs::symlink_metadata(&p.target) {
        Ok(_) => {
            remove(&p.trash)?;
            Ok(Recheck::Superseded)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Recheck::StillOrphan),
        Err(e) => Err(BlobError::io("checking", &p.target, e)),
    }
}

/// Counts from the last stage of a batch.
#[derive(Default)]
struct Outcome {
    kept_referenced: usize,
    kept_fresh: usize,
    deleted: usize,
}

/// Steps 4 and 5: puts back what is referenced or fresh, deletes the rest. Keeps going after
/// an error (what it leaves in the trash is put back by the next sweep) and returns the first.
fn finish_all(
    parked: Vec<Parked>,
    referenced: &HashSet<String>,
    grace: Duration,
) -> Result<Outcome, BlobError> {
    let mut out = Outcome::default();
    let mut first_error = None;
    for p in parked {
        let result = if referenced.contains(&p.key) {
            restore(&p).map(|()| out.kept_referenced += 1)
        } else {
            match recheck(&p, grace) {
                Ok(Recheck::StillOrphan) => remove(&p.trash).map(|()| {
                    tracing::info!(key = %p.key, "swept orphan blob");
                    out.deleted += 1;
                }),
                Ok(Recheck::RestoredFresh | Recheck::Superseded) => {
                    out.kept_fresh += 1;
                    Ok(())
                }
                Err(e) => Err(e),
            }
        };
        if let Err(e) = result {
            tracing::error!(key = %p.key, error = %e, "sweep could not settle a parked blob");
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Deletes temp files (abandoned uploads) not written to within `grace`.
/// With an object store: deletes cached copies not used within `grace` (each read refreshes
/// the mtime of the copy it hands out). Returns how many went.
fn prune_cache(root: &Path, grace: Duration) -> Result<usize, BlobError> {
    let mut removed = 0;
    for top in subdirs(&root.join(BLOBS_DIR))? {
        let (_, _, old) = list_old_blobs(&top, grace)?;
        for key in old {
            remove(&root.join(key))?;
            removed += 1;
        }
    }
    Ok(removed)
}

fn remove_old_temps(root: &Path, grace: Duration) -> Result<usize, BlobError> {
    let tmp = root.join(TMP_DIR);
    let mut removed = 0;
    for entry in fs::read_dir(&tmp).map_err(|e| BlobError::io("listing", &tmp, e))? {
        let entry = entry.map_err(|e| BlobError::io("listing", &tmp, e))?;
        let mtime = match entry.metadata().and_then(|m| m.modified()) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(BlobError::io("reading mtime of", entry.path(), e)),
        };
        if !is_fresh(mtime, grace) && entry.file_type().is_ok_and(|t| t.is_file()) {
            remove(&entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_for;

    const HEX: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    const GRACE: Duration = Duration::from_secs(600);

    fn old_blob(root: &Path) -> String {
        let key = key_for(HEX);
        let path = root.join(&key);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, b"hello").expect("write");
        let old = SystemTime::now() - Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(old))
            .expect("age");
        key
    }

    /// `finish` opened the blob before the sweep parked it and touched it after: the touch
    /// lands on the parked copy, and the re-check must put it back.
    #[test]
    fn a_touch_landing_on_the_parked_copy_puts_it_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = BlobStore::open(dir.path()).expect("open");
        let key = old_blob(store.root());
        let target = store.root().join(&key);
        let handle = fs::File::open(&target).expect("open blob");

        let parked = park(store.root(), key, GRACE)
            .expect("park")
            .expect("old blob is parked");
        assert!(!target.exists());
        handle.set_modified(SystemTime::now()).expect("touch");

        assert!(matches!(
            recheck(&parked, GRACE),
            Ok(Recheck::RestoredFresh)
        ));
        assert_eq!(fs::read(&target).expect("restored"), b"hello");
        assert!(!parked.trash.exists());
    }

    #[test]
    fn putting_back_never_replaces_a_new_copy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = BlobStore::open(dir.path()).expect("open");
        let key = old_blob(store.root());
        let parked = park(store.root(), key, GRACE)
            .expect("park")
            .expect("parked");
        fs::write(&parked.target, b"hello").expect("writer re-stores");
        let new_mtime = mtime_of(&parked.target).expect("mtime");

        restore(&parked).expect("restore");
        assert_eq!(mtime_of(&parked.target).expect("mtime"), new_mtime);
        assert!(!parked.trash.exists());
    }
}
