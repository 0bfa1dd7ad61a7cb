//! What can go wrong in the blob store.

use std::io;
use std::path::PathBuf;

/// A blob store failure. See [`BlobError::is_retryable`] for which ones may pass on their own.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The key is not of the form `sha256/ab/cd/<64 lowercase hex>` (and so might point
    /// outside the store).
    #[error("invalid blob key {key:?}: expected sha256/xx/yy/<64 lowercase hex digits>")]
    InvalidKey {
        /// The key as given.
        key: String,
    },
    /// No blob is stored under this key.
    #[error("blob {key} not found")]
    NotFound {
        /// The key looked up.
        key: String,
    },
    /// The file system refused an operation.
    #[error("blob store I/O error while {action} {}: {source}", path.display())]
    Io {
        /// What the store was doing, e.g. "renaming into place".
        action: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An earlier `write` on this writer failed, so its hash no longer matches its file.
    #[error("blob writer is unusable after an earlier write error; abort it and start over")]
    WriterFailed,
    /// `IRONCLAD_BLOB_URL` (or its object store settings) cannot be used.
    #[error("blob store URL {url:?} cannot be used: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why not.
        reason: String,
    },
    /// The object store refused or could not be reached (after its own retries).
    #[error("object store error while {action} {key}: {source}")]
    Remote {
        /// What the store was doing, e.g. "uploading".
        action: &'static str,
        /// The blob (or probe) involved.
        key: String,
        /// The client's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The bytes stored under a key are not the ones the key names (size or SHA-256 differ).
    #[error("blob {key} is damaged in the store: {detail}")]
    Corrupt {
        /// The key read.
        key: String,
        /// What differed.
        detail: String,
    },
    /// The `referenced` callback of a sweep failed; nothing was deleted for that batch.
    #[error("sweep aborted: checking which blobs are referenced failed: {0}")]
    ReferenceCheck(String),
}

impl BlobError {
    /// Builds an [`BlobError::Io`] from an action, a path and the error.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// Whether trying again later may succeed (storage I/O, a failed reference query), as
    /// opposed to a request that will fail the same way every time.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Io { .. } | Self::Remote { .. } | Self::ReferenceCheck(_)
        )
    }
}
