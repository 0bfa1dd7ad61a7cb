//! Parking a blob in `trash/` and putting it back: the mechanics shared by the
//! [sweep](crate::sweep) and [`BlobStore::discard_created`](crate::BlobStore::discard_created).
//!
//! Both delete a blob the same way, because only this way is safe against a writer finishing
//! the same content at the same moment: **rename** the blob out of its path (the single instant
//! at which it leaves), re-check it there, and then either unlink the trash name or put it back.
//! Only trash names are ever unlinked; a file at a blob path is never deleted or replaced by
//! this module. Trash names are `<64 hex>.<nonce>`, so a later sweep can put back whatever an
//! interrupted one left behind ([`recover_trash`]).

use crate::writer::sync_dir;
use crate::{key_for, BlobError, TRASH_DIR};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A blob moved out of its path into the trash, awaiting a decision.
#[derive(Debug)]
pub(crate) struct Parked {
    /// The blob's key.
    pub(crate) key: String,
    /// Where it lives when stored (`<root>/<key>`).
    pub(crate) target: PathBuf,
    /// Where it is parked now (`<root>/trash/<hex>.<nonce>`).
    pub(crate) trash: PathBuf,
}

/// Renames the blob `key` into the trash under a fresh name; `None` if nothing is at its path.
pub(crate) fn park(root: &Path, key: String) -> Result<Option<Parked>, BlobError> {
    let target = root.join(&key);
    let hex = &key[key.len().saturating_sub(64)..];
    let trash = root
        .join(TRASH_DIR)
        .join(format!("{hex}.{}", uuid::Uuid::new_v4().simple()));
    match fs::rename(&target, &trash) {
        Ok(()) => Ok(Some(Parked { key, target, trash })),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(BlobError::io("moving to trash", &target, e)),
    }
}

/// Puts a parked blob back without ever replacing a file a writer put there meanwhile.
pub(crate) fn restore(p: &Parked) -> Result<(), BlobError> {
    put_back(&p.trash, &p.target)
}

/// Puts back every parked blob, trying them all; returns the first error.
pub(crate) fn restore_all(parked: &[Parked]) -> Result<(), BlobError> {
    let mut first_error = None;
    for p in parked {
        if let Err(e) = restore(p) {
            tracing::error!(key = %p.key, error = %e, "could not put a parked blob back");
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// `link` then `unlink`: if the target exists already (same content, by construction), the
/// trashed copy is simply dropped. The directory is synced between the two so a crash
/// cannot lose both names. A trash name that is already gone was put back by a sweep's
/// start-up recovery ([`recover_trash`]) — the only other code that touches trash names —
/// so there is nothing left to do.
pub(crate) fn put_back(trash: &Path, target: &Path) -> Result<(), BlobError> {
    if let Some(dir) = target.parent() {
        fs::create_dir_all(dir).map_err(|e| BlobError::io("creating directory", dir, e))?;
    }
    match fs::hard_link(trash, target) {
        Ok(()) => {
            if let Some(dir) = target.parent() {
                sync_dir(dir)?;
            }
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound && !trash.exists() => return Ok(()),
        Err(e) => return Err(BlobError::io("putting back", target, e)),
    }
    remove(trash)
}

/// Unlinks `path`; a file already gone is fine.
pub(crate) fn remove(path: &Path) -> Result<(), BlobError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BlobError::io("removing", path, e)),
    }
}

/// Puts back everything an interrupted sweep (or discard) left in the trash; the next listing
/// judges it afresh.
pub(crate) fn recover_trash(root: &Path) -> Result<(), BlobError> {
    let trash_dir = root.join(TRASH_DIR);
    let mut recovered = 0usize;
    for entry in fs::read_dir(&trash_dir).map_err(|e| BlobError::io("listing", &trash_dir, e))? {
        let entry = entry.map_err(|e| BlobError::io("listing", &trash_dir, e))?;
        let name = entry.file_name();
        // Only names this module wrote (`<64 lowercase hex>.<nonce>`) are put back.
        let Some(hex) = name.to_str().and_then(|n| n.split('.').next()) else {
            continue;
        };
        if hex.len() != 64 || !hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            continue;
        }
        let key = key_for(hex);
        put_back(&entry.path(), &root.join(&key))?;
        recovered += 1;
    }
    if recovered > 0 {
        tracing::warn!(
            recovered,
            "put back blobs left in the trash by an interrupted sweep"
        );
    }
    Ok(())
}
