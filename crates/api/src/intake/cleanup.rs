//! A failed intake's own blobs, deleted at once instead of being left for the sweep.
//!
//! Every blob a request makes durable is recorded in an [`Uncommitted`]. Unless the request
//! commits, its blobs are handed to
//! [`BlobStore::discard_created`](ironclad_blobs::BlobStore::discard_created), which deletes
//! only those this request *created* and that no other request touched or row references
//! since (content-addressed blobs may be shared: a replayed or conflicting idempotent request
//! stores the original case's content; `store.referenced_blobs` protects those).
//!
//! | how the request ends | its blobs |
//! |---|---|
//! | committed (201 created) | kept |
//! | refused or failed before the commit (4xx, 5xx) | discarded before the answer |
//! | replay or idempotency conflict (the commit created nothing) | discarded before the answer |
//! | the commit statement failed with a definite answer (conflict, rejected data) | discarded |
//! | the commit's outcome is unknown (connection lost, no answer in time) | left to the sweep |
//! | dropped before the commit (deadline, client gone) | discarded in the background |
//! | dropped while a blob was being made durable | that one blob is left to the sweep |
//! | dropped during the commit | left to the sweep |
//! | the process dies | left to the sweep |
//!
//! "Unknown outcome" is left alone on purpose: the statement may still commit after we gave
//! up on it, and its rows would then name blobs we had deleted.

use ironclad_blobs::{BlobStore, StoredBlob};
use ironclad_store::{Store, StoreError};

/// Where the request stands with respect to its commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing of this request is committed: its blobs go if it ends now.
    Open,
    /// The commit statement is in flight: if the request is dropped now, nobody knows.
    Committing,
    /// Committed, or unknown: the blobs stay (the sweep decides later if they are orphans).
    Kept,
}

/// The blobs one intake made durable, discarded unless it commits.
#[derive(Debug)]
pub(super) struct Uncommitted {
    blobs: BlobStore,
    store: Store,
    made: Vec<StoredBlob>,
    phase: Phase,
}

impl Uncommitted {
    pub(super) fn new(blobs: BlobStore, store: Store) -> Self {
        Self {
            blobs,
            store,
            made: Vec::new(),
            phase: Phase::Open,
        }
    }

    /// Records a blob this request made durable (only created ones can ever be discarded).
    pub(super) fn add(&mut self, blob: &StoredBlob) {
        if blob.created {
            self.made.push(blob.clone());
        }
    }

    /// The commit statement is about to be sent.
    pub(super) fn committing(&mut self) {
        self.phase = Phase::Committing;
    }

    /// The commit answered: `Ok(true)` it created the case (keep), `Ok(false)` it created
    /// nothing (replay, key conflict: discard), `Err` it failed — definitely when PostgreSQL
    /// refused the statement (discard), possibly not when the answer was lost (keep).
    pub(super) fn settle(&mut self, outcome: Result<bool, &StoreError>) {
        self.phase = match outcome {
            Ok(true) => Phase::Kept,
            Ok(false) => Phase::Open,
            Err(err) if outcome_unknown(err) => {
                tracing::warn!(error = %err, blobs = self.made.len(),
                    "intake commit outcome unknown; its blobs are left for the sweep");
                Phase::Kept
            }
            Err(_) => Phase::Open,
        };
    }

    /// Ends the request: deletes its blobs unless they are to be kept. Errors are logged
    /// (the sweep collects whatever this could not delete); the answer does not change.
    ///
    /// The deletion runs on a task of its own, awaited here: the answer waits for it, but a
    /// request dropped meanwhile (deadline) does not cut it off half-way.
    pub(super) async fn finish(mut self) {
        if self.phase == Phase::Open && !self.made.is_empty() {
            let made = std::mem::take(&mut self.made);
            let (blobs, store) = (self.blobs.clone(), self.store.clone());
            let task = tokio::spawn(async move { discard(&blobs, &store, made).await });
            if let Err(e) = task.await {
                tracing::warn!(error = %e, "discarding a failed intake's blobs did not finish");
            }
        }
        self.phase = Phase::Kept;
    }
}

impl Drop for Uncommitted {
    /// A request dropped before its commit (deadline, client gone) never reaches `finish`:
    /// discard its blobs on a task of their own.
    fn drop(&mut self) {
        if self.phase != Phase::Open || self.made.is_empty() {
            return;
        }
        let made = std::mem::take(&mut self.made);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let (blobs, store) = (self.blobs.clone(), self.store.clone());
                runtime.spawn(async move { discard(&blobs, &store, made).await });
            }
            Err(_) => tracing::warn!(
                blobs = made.len(),
                "abandoned intake outside a runtime; its blobs are left for the sweep"
            ),
        }
    }
}

/// Whether a failed commit may nevertheless have committed: the connection broke or we
/// stopped waiting, after the statement may have reached PostgreSQL. A statement PostgreSQL
/// answered with an error (conflict, serialization failure, rejected data) did not commit.
fn outcome_unknown(err: &StoreError) -> bool {
    err.is_transient() && !matches!(err, StoreError::Retry(_))
}

async fn discard(blobs: &BlobStore, store: &Store, made: Vec<StoredBlob>) {
    let referenced = |keys: Vec<String>| {
        let store = store.clone();
        async move { store.referenced_blobs(keys).await }
    };
    match blobs.discard_created(&made, referenced).await {
        Ok(deleted) => {
            tracing::debug!(
                deleted,
                created = made.len(),
                "failed intake's blobs discarded"
            );
        }
        Err(e) => tracing::warn!(error = %e, blobs = made.len(),
            "could not discard a failed intake's blobs; the sweep will collect them"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lost_answers_leave_the_outcome_unknown() {
        assert!(outcome_unknown(&StoreError::Unavailable(
            sqlx::Error::PoolTimedOut
        )));
        assert!(!outcome_unknown(&StoreError::Retry(
            sqlx::Error::RowNotFound
        )));
        assert!(!outcome_unknown(&StoreError::Conflict {
            constraint: "x".into()
        }));
        assert!(!outcome_unknown(&StoreError::Corrupt("x".into())));
    }
}
