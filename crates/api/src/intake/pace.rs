//! The slowest upload intake waits for.
//!
//! An intake holds one of a few slots for as long as its body takes to arrive, so a client
//! that sends a byte a second holds a slot until the request deadline. Every read from the
//! body therefore gets a deadline: after a grace period, the client must have sent at least
//! `min_bytes_per_sec` for every second we spent waiting for it. Only time spent waiting for
//! the client counts; our own inspection and disk writes do not, so a slow server never
//! blames its client.

use crate::error::ApiError;
use axum::http::StatusCode;
use serde_json::json;
use std::future::Future;
use std::time::{Duration, Instant};

/// The pace of one request's body.
#[derive(Debug)]
pub(super) struct UploadPace {
    /// 0: no minimum.
    min_bytes_per_sec: u64,
    grace: Duration,
    received: u64,
    waited: Duration,
}

impl UploadPace {
    pub(super) fn new(min_bytes_per_sec: u64, grace: Duration) -> Self {
        Self {
            min_bytes_per_sec,
            grace,
            received: 0,
            waited: Duration::ZERO,
        }
    }

    /// Waiting the client has earned so far: the grace period, or the time its bytes would
    /// take at the minimum rate, whichever is longer.
    fn allowance(&self) -> Duration {
        let seconds = self.received as f64 / self.min_bytes_per_sec.max(1) as f64;
        let earned = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX);
        self.grace.max(earned)
    }

    /// Awaits `read` (the next part or chunk of the body) for at most what the client has
    /// left of its allowance; 408 `upload_too_slow` when it runs out first.
    pub(super) async fn read<T>(&mut self, read: impl Future<Output = T>) -> Result<T, ApiError> {
        if self.min_bytes_per_sec == 0 {
            return Ok(read.await);
        }
        let left = self.allowance().saturating_sub(self.waited);
        let started = Instant::now();
        let outcome = tokio::time::timeout(left, read).await;
        self.waited += started.elapsed();
        outcome.map_err(|_| self.too_slow())
    }

    /// Counts `bytes` received.
    pub(super) fn count(&mut self, bytes: usize) {
        self.received = self.received.saturating_add(bytes as u64);
    }

    fn too_slow(&self) -> ApiError {
        tracing::info!(
            received = self.received,
            waited = ?self.waited,
            min_bytes_per_sec = self.min_bytes_per_sec,
            "intake dropped: upload too slow"
        );
        ApiError::client(
            StatusCode::REQUEST_TIMEOUT,
            "upload_too_slow",
            format!(
                "the upload was slower than {} bytes per second; nothing was stored, send it again on a faster connection",
                self.min_bytes_per_sec
            ),
        )
        .with_details(json!({
            "min_bytes_per_sec": self.min_bytes_per_sec,
            "received_bytes": self.received,
            "waited_seconds": self.waited.as_secs(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_trickle_is_cut_off_after_the_grace_and_a_steady_upload_is_not() {
        let tick = Duration::from_millis(50);
        let mut steady = UploadPace::new(1000, Duration::from_millis(200));
        for _ in 0..10 {
            // 100 bytes every 50 ms: twice the minimum.
            assert!(steady.read(tokio::time::sleep(tick)).await.is_ok());
            steady.count(100);
        }
        let mut trickle = UploadPace::new(1000, Duration::from_millis(200));
        let mut reads = 0;
        let refused = loop {
            match trickle.read(tokio::time::sleep(tick)).await {
                Ok(()) => {
                    trickle.count(1);
                    reads += 1;
                }
                Err(e) => break e,
            }
        };
        assert!(
            (3..=4).contains(&reads),
            "only the grace is allowed: {reads}"
        );
        assert_eq!(refused.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(refused.code(), "upload_too_slow");
        let mut off = UploadPace::new(0, Duration::ZERO);
        assert!(off.read(tokio::time::sleep(tick)).await.is_ok());
    }
}
