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
#![deny(missing_docs)]

pub mod discard;
mod error;
pub mod sweep;
mod trash;
mod writer;

pub use error::BlobError;
pub use sweep::SweepReport;
pub use writer::{BlobWriter, StoredBlob};

use std::io;
use std::path::{Path, PathBuf};

/// Directory (under the root) holding the blobs themselves.
const BLOBS_DIR: &str = "sha256";
/// Directory for uploads in progress.
const TMP_DIR: &str = "tmp";
/// Directory where the sweep parks a blob between its two reference checks.
const TRASH_DIR: &str = "trash";
/// Length of a key: `sha256/` + `ab/` + `cd/` + 64 hex digits.
const KEY_LEN: usize = 7 + 3 + 3 + 64;

/// A content-addressed blob store rooted at one local directory. Cheap to clone.
#[derive(Debug, Clone)]
pub struct BlobStore {
    root: PathBuf,
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
        Ok(Self { root })
    }

    /// The directory this store lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Starts a new upload into a uniquely named temporary file.
    pub async fn writer(&self) -> Result<BlobWriter, BlobError> {
        BlobWriter::create(self.root.clone()).await
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

    /// Reads a whole blob into memory.
    pub async fn read(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        let path = self.path_of(key)?;
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
        tokio::fs::try_exists(&path)
            .await
            .map_err(|e| BlobError::io("checking", &path, e))
    }

    /// The size and SHA-256 of the bytes stored under `key`, `None` if nothing is. The file is
    /// streamed through the hash in bounded chunks on a blocking thread, so checking a large
    /// blob costs no more memory than a small one (`ironclad verify` compares the result with
    /// what the database recorded).
    pub async fn digest(&self, key: &str) -> Result<Option<BlobDigest>, BlobError> {
        let path = self.path_of(key)?;
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
