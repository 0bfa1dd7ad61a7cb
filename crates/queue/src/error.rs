//! The one error type of the crate.

use std::time::Duration;

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// Redis refused the command, or the connection to it failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Establishing the connection took longer than the hard deadline.
    #[error("connecting to redis took longer than {0:?}")]
    ConnectTimeout(Duration),
    /// Redis answered with a shape this crate does not understand (a server or protocol bug,
    /// not a bad message: bad messages are delivered, never reported as errors).
    #[error("unexpected reply to {command}: {detail}")]
    UnexpectedReply {
        /// The command whose reply was not understood.
        command: &'static str,
        /// What was wrong with it.
        detail: String,
    },
}

impl QueueError {
    /// True when retrying later may succeed: the connection dropped, was refused or timed
    /// out, or the server is loading / failing over. Callers back off and retry these; any
    /// other error is a bug or a misconfiguration.
    pub fn is_transient(&self) -> bool {
        match self {
            QueueError::Redis(e) => {
                e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || matches!(
                        e.kind(),
                        redis::ErrorKind::BusyLoadingError
                            | redis::ErrorKind::TryAgain
                            | redis::ErrorKind::MasterDown
                            | redis::ErrorKind::ClusterDown
                            | redis::ErrorKind::ReadOnly
                    )
            }
            QueueError::ConnectTimeout(_) => true,
            QueueError::UnexpectedReply { .. } => false,
        }
    }

    /// True when Redis says the stream or the consumer group does not exist, which is what
    /// happens after Redis lost its data (FLUSHALL, restart without persistence).
    pub fn is_no_group(&self) -> bool {
        matches!(self, QueueError::Redis(e) if is_no_group(e))
    }
}

pub(crate) fn is_no_group(e: &redis::RedisError) -> bool {
    e.code() == Some("NOGROUP")
}

pub(crate) fn unexpected(command: &'static str, detail: impl Into<String>) -> QueueError {
    QueueError::UnexpectedReply {
        command,
        detail: detail.into(),
    }
}
