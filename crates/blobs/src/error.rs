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
        matches!(self, Self::Io { .. } | Self::ReferenceCheck(_))
    }
}
