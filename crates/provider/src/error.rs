//! What can go wrong talking to the provider, split by what the job should do about it.
//!
//! The split is the type: [`ProviderError::Retryable`] holds only [`Retryable`] kinds and
//! [`ProviderError::Terminal`] only [`Terminal`] ones, so the retry policy branches on the
//! variant and never on a message. Each kind carries its facts (status, URL, limit) and its
//! message says what the operator can do.

use ironclad_documents::processor::ProcessorError;
use std::time::Duration;

/// A failed exchange with the provider.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Another attempt later may succeed: the job should be retried with backoff.
    #[error("{0}")]
    Retryable(#[from] Retryable),
    /// Every attempt will fail the same way until someone changes something: fail the job.
    #[error("{0}")]
    Terminal(#[from] Terminal),
}

impl ProviderError {
    /// Whether the job should be retried.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Retryable(_))
    }
}

/// Failures that pass with time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Retryable {
    /// No complete answer within the configured timeout.
    #[error(
        "the provider at {url} did not answer within {after:?}; the job will be retried \
         (raise the provider timeout if the model is just slow)"
    )]
    Timeout {
        /// The endpoint.
        url: String,
        /// The timeout in force.
        after: Duration,
    },
    /// Connection refused, reset or closed before the answer was complete.
    #[error(
        "connection to the provider at {url} failed: {reason}; the job will be retried \
         (check that the server is running and the base URL is right)"
    )]
    Connection {
        /// The endpoint.
        url: String,
        /// What the network stack said.
        reason: String,
    },
    /// HTTP 429 without a quota error: too many requests for now.
    #[error(
        "the provider is rate limiting (HTTP 429{}): {message}; the job will be retried",
        retry_after.map(|d| format!(", retry after {}s", d.as_secs())).unwrap_or_default()
    )]
    RateLimited {
        /// The `Retry-After` delay the server asked for, when it gave one in seconds.
        retry_after: Option<Duration>,
        /// The server's message.
        message: String,
    },
    /// HTTP 5xx, or 408: the server failed, not the request.
    #[error("the provider failed with HTTP {status}: {message}; the job will be retried")]
    Server {
        /// The status code.
        status: u16,
        /// The server's message.
        message: String,
    },
}

/// Failures that need a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Terminal {
    /// HTTP 429 with the `insufficient_quota` code: the account has no credit left.
    #[error(
        "the provider account's quota is exhausted (HTTP 429 insufficient_quota): {message}; \
         add credit or raise the limit, then re-run the failed jobs"
    )]
    QuotaExhausted {
        /// The server's message.
        message: String,
    },
    /// HTTP 401 or 403.
    #[error(
        "the provider refused the credentials (HTTP {status}): {message}; check the API key \
         and that it may use this model"
    )]
    Unauthorized {
        /// 401 or 403.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// HTTP 404: wrong base URL, or a model the server does not have.
    #[error(
        "the provider answered 404 for {url}: {message}; check the base URL (usually ending \
         in /v1) and the model name"
    )]
    NotFound {
        /// The endpoint.
        url: String,
        /// The server's message.
        message: String,
    },
    /// Any other 4xx (400, 413, 422 …): the request itself is refused, for instance a
    /// document longer than the model's context.
    #[error(
        "the provider rejected the request (HTTP {status}): {message}; lower the page budget \
         if the document is too long for the model, or check the model's options"
    )]
    Rejected {
        /// The status code.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// A status no OpenAI-compatible server sends for this call (1xx, 3xx).
    #[error(
        "the provider answered HTTP {status}, which is not a chat-completions answer; point \
         the base URL at the API itself, not at a redirect"
    )]
    UnexpectedStatus {
        /// The status code.
        status: u16,
    },
    /// A 2xx answer that is not a chat completion carrying `{"fields": {…}}`.
    #[error(
        "the provider's answer is unusable: {reason}; the model or server does not follow \
         the JSON contract (try another model, or one that supports response_format)"
    )]
    InvalidResponse {
        /// What is wrong with it.
        reason: String,
    },
    /// The answer is longer than [`crate::client::MAX_RESPONSE_BYTES`].
    #[error("the provider's answer exceeds {limit} bytes; refusing to read more")]
    ResponseTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

impl From<ProviderError> for ProcessorError {
    fn from(e: ProviderError) -> Self {
        match e {
            ProviderError::Retryable(r) => {
                ProcessorError::Retryable(format!("openai provider: {r}"))
            }
            ProviderError::Terminal(t) => ProcessorError::Terminal(format!("openai provider: {t}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_survives_into_processor_errors() {
        let r: ProcessorError = ProviderError::from(Retryable::Server {
            status: 503,
            message: "busy".into(),
        })
        .into();
        assert!(r.is_retryable());
        assert!(r.to_string().contains("HTTP 503"), "{r}");
        let t: ProcessorError = ProviderError::from(Terminal::QuotaExhausted {
            message: "no credit".into(),
        })
        .into();
        assert!(!t.is_retryable());
        assert!(t.to_string().contains("add credit"), "{t}");
    }

    #[test]
    fn rate_limits_show_the_delay_when_known() {
        let e = Retryable::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "slow down".into(),
        };
        assert!(e.to_string().contains("retry after 7s"), "{e}");
        let e = Retryable::RateLimited {
            retry_after: None,
            message: "slow down".into(),
        };
        assert!(e.to_string().contains("(HTTP 429)"), "{e}");
    }
}
