//! The one error type of the API, and how it becomes a JSON answer.
//!
//! Client mistakes carry a stable `code`, a human message and structured `details`. Server
//! trouble (database, storage, bugs, injected faults) is logged here with its full text and
//! answered with a fixed message, so no SQL, path or driver text ever reaches a client.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use ironclad_blobs::BlobError;
use ironclad_core::faults::InjectedFault;
use ironclad_store::webhooks::WebhookCreateError;
use ironclad_store::StoreError;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Why a request was not served.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request was wrong; it will fail the same way until the client changes it.
    #[error("{status} {code}: {message}")]
    Client {
        /// HTTP status (4xx).
        status: StatusCode,
        /// Stable machine-readable code, e.g. `file_too_large`.
        code: &'static str,
        /// Human-readable explanation.
        message: String,
        /// Structured facts (file name, limit, …); `null` when there are none.
        details: Value,
    },
    /// No usable `Authorization: Bearer` key; answered 401 with `WWW-Authenticate: Bearer`.
    #[error("missing or invalid API key")]
    Unauthenticated,
    /// The key's role may not do this.
    #[error("role {role} may not {action}")]
    Forbidden {
        /// The caller's role.
        role: &'static str,
        /// What was attempted, for the message.
        action: &'static str,
    },
    /// PostgreSQL is unreachable or too busy; retrying later may work. Answered 503.
    /// (Shared because one failed lookup may answer several coalesced requests.)
    #[error("database unavailable: {0}")]
    Unavailable(#[source] Arc<StoreError>),
    /// This caller, or the server as a whole, is doing too much right now: answered with
    /// `status` (429 or 503) and a `Retry-After` of `retry_after` rounded up to whole seconds
    /// (at least 1).
    #[error("{status} {code}: {message}")]
    Throttled {
        /// 429 (this caller is over its rate) or 503 (the server is at capacity).
        status: StatusCode,
        /// Stable code: `rate_limited` or `busy`.
        code: &'static str,
        /// Human-readable explanation.
        message: String,
        /// When trying again may succeed.
        retry_after: Duration,
        /// Structured facts (which limit); `null` when there are none.
        details: Value,
    },
    /// The request ran past the configured deadline. Answered 503.
    #[error("request timed out")]
    Timeout,
    /// Anything else on our side. The text is logged, the client sees "internal error".
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    /// A client error with no details.
    pub fn client(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self::Client {
            status,
            code,
            message: message.into(),
            details: Value::Null,
        }
    }

    /// 400 with `code`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::client(StatusCode::BAD_REQUEST, code, message)
    }

    /// 404 `not_found`: the same answer for "no such thing" and "not yours".
    pub fn not_found() -> Self {
        Self::client(StatusCode::NOT_FOUND, "not_found", "no such resource")
    }

    /// 429 `rate_limited`: `scope` (`key` or `address`) is over its rate; retry after
    /// `retry_after`.
    pub fn rate_limited(scope: &'static str, retry_after: Duration) -> Self {
        let seconds = retry_after_seconds(retry_after);
        Self::Throttled {
            status: StatusCode::TOO_MANY_REQUESTS,
            code: "rate_limited",
            message: format!(
                "too many requests for this {}; retry after {seconds} s",
                if scope == "key" { "API key" } else { "address" }
            ),
            retry_after,
            details: json!({"scope": scope, "retry_after_seconds": seconds}),
        }
    }

    /// 503 `busy`: the server is at its capacity for `what`; retry after `retry_after`.
    pub fn busy(what: &str, limit: usize, retry_after: Duration) -> Self {
        Self::Throttled {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "busy",
            message: format!(
                "the server is already handling {limit} {what}; retry after {} s",
                retry_after_seconds(retry_after)
            ),
            retry_after,
            details: json!({"limit": limit, "retry_after_seconds": retry_after_seconds(retry_after)}),
        }
    }

    /// Adds structured details (only meaningful on client errors).
    pub fn with_details(self, details: Value) -> Self {
        match self {
            Self::Client {
                status,
                code,
                message,
                ..
            } => Self::Client {
                status,
                code,
                message,
                details,
            },
            other => other,
        }
    }

    /// The status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Client { status, .. } | Self::Throttled { status, .. } => *status,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::Unavailable(_) | Self::Timeout => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code this error is answered with.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Client { code, .. } | Self::Throttled { code, .. } => code,
            Self::Unauthenticated => "unauthorized",
            Self::Forbidden { .. } => "forbidden",
            Self::Unavailable(_) => "unavailable",
            Self::Timeout => "timeout",
            Self::Internal(_) => "internal",
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        Self::from(Arc::new(err))
    }
}

impl From<Arc<StoreError>> for ApiError {
    fn from(err: Arc<StoreError>) -> Self {
        // Serialization conflicts are as transient as a lost connection: both say "retry".
        if err.is_transient() {
            Self::Unavailable(err)
        } else {
            Self::Internal(err.to_string())
        }
    }
}

impl From<WebhookCreateError> for ApiError {
    /// The endpoint cap is the tenant's own state: 409 `too_many_webhooks` with the limit,
    /// answered alike by the API and the desk.
    fn from(err: WebhookCreateError) -> Self {
        match err {
            WebhookCreateError::TooManyEndpoints { limit } => Self::client(
                StatusCode::CONFLICT,
                "too_many_webhooks",
                format!(
                    "this tenant already has {limit} active webhook endpoints, the most allowed; \
                     disable one (DELETE /v1/webhooks/{{id}}) before adding another"
                ),
            )
            .with_details(json!({"limit": limit})),
            WebhookCreateError::Store(e) => e.into(),
        }
    }
}

impl From<BlobError> for ApiError {
    /// An object store that does not answer (after its client's retries) is a 503 the client
    /// may retry, like an unreachable database; anything else is our fault.
    fn from(err: BlobError) -> Self {
        if let BlobError::Remote { .. } = err {
            tracing::warn!(error = %err, "blob store unavailable");
            return Self::Throttled {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "storage_unavailable",
                message: "the document store is not answering; try again shortly".into(),
                retry_after: Duration::from_secs(5),
                details: Value::Null,
            };
        }
        Self::Internal(err.to_string())
    }
}

impl From<InjectedFault> for ApiError {
    fn from(err: InjectedFault) -> Self {
        Self::Internal(err.to_string())
    }
}

/// What a client may see of an error: server trouble is logged here and told as a fixed
/// message. Shared by the JSON API and the desk's HTML error page.
#[derive(Debug)]
pub(crate) struct PublicError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Value,
    pub retry_after: Duration,
}

impl ApiError {
    /// Logs server trouble and keeps what a client may see.
    pub(crate) fn into_public(self) -> PublicError {
        let status = self.status();
        let code = self.code();
        let mut retry_after = Duration::from_secs(1);
        let (message, details) = match self {
            Self::Client {
                message, details, ..
            } => (message, details),
            Self::Throttled {
                message,
                details,
                retry_after: after,
                ..
            } => {
                retry_after = after;
                (message, details)
            }
            Self::Unauthenticated | Self::Forbidden { .. } | Self::Timeout => {
                (self.to_string(), Value::Null)
            }
            Self::Unavailable(err) => {
                tracing::warn!(error = %err, "request failed: database unavailable");
                ("database unavailable".to_owned(), Value::Null)
            }
            Self::Internal(text) => {
                tracing::error!(error = %text, "request failed: internal error");
                ("internal error".to_owned(), Value::Null)
            }
        };
        PublicError {
            status,
            code,
            message,
            details,
            retry_after,
        }
    }
}

impl PublicError {
    /// Adds `WWW-Authenticate` to a 401 and `Retry-After` to a 429 or 503.
    pub(crate) fn add_headers(&self, response: &mut Response) {
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE
            || self.status == StatusCode::TOO_MANY_REQUESTS
        {
            // Tells well-behaved clients (and our CLI) to back off rather than hammer.
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_seconds(self.retry_after)),
            );
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let public = self.into_public();
        let body = json!({"error": {
            "code": public.code, "message": public.message, "details": public.details
        }});
        let mut response = (public.status, Json(body)).into_response();
        public.add_headers(&mut response);
        response
    }
}

/// `Retry-After` takes whole seconds: round up, and never say 0 (which invites a retry
/// storm at the very instant the limit still applies).
pub fn retry_after_seconds(wait: Duration) -> u64 {
    let whole = wait.as_secs();
    let rounded = if wait.subsec_nanos() > 0 {
        whole.saturating_add(1)
    } else {
        whole
    };
    rounded.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(err: ApiError) -> (StatusCode, Value) {
        let response = err.into_response();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap_or_default();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    #[tokio::test]
    async fn internal_text_never_reaches_the_client() {
        let (status, body) =
            body_of(ApiError::Internal("relation \"cases\" is broken".into())).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["error"]["message"], "internal error");
        assert!(!body.to_string().contains("cases"));
    }

    #[tokio::test]
    async fn pool_timeouts_are_503_database_unavailable() {
        let err = ApiError::from(StoreError::from(sqlx::Error::PoolTimedOut));
        let (status, body) = body_of(err).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["error"]["message"], "database unavailable");
    }

    #[tokio::test]
    async fn client_errors_keep_code_and_details() {
        let err = ApiError::bad_request("no_files", "no file parts")
            .with_details(json!({"field": "file"}));
        let (status, body) = body_of(err).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["code"], "no_files");
        assert_eq!(body["error"]["details"]["field"], "file");
    }

    #[tokio::test]
    async fn throttled_answers_carry_retry_after_in_whole_seconds() {
        let response = ApiError::rate_limited("key", Duration::from_millis(1200)).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("2"))
        );
        let (status, body) = body_of(ApiError::busy("intakes", 8, Duration::ZERO)).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["error"]["code"], "busy");
        assert_eq!(body["error"]["details"]["retry_after_seconds"], 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(3)), 3);
        assert_eq!(retry_after_seconds(Duration::from_nanos(1)), 1);
    }

    #[test]
    fn unauthenticated_carries_the_challenge() {
        let response = ApiError::Unauthenticated.into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers().get(header::WWW_AUTHENTICATE),
            Some(&HeaderValue::from_static("Bearer"))
        );
    }
}
