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
use ironclad_store::StoreError;
use serde_json::{json, Value};

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
    #[error("database unavailable: {0}")]
    Unavailable(#[source] StoreError),
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
            Self::Client { status, .. } => *status,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::Unavailable(_) | Self::Timeout => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code this error is answered with.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Client { code, .. } => code,
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
        // Serialization conflicts are as transient as a lost connection: both say "retry".
        if err.is_transient() {
            Self::Unavailable(err)
        } else {
            Self::Internal(err.to_string())
        }
    }
}

impl From<BlobError> for ApiError {
    fn from(err: BlobError) -> Self {
        Self::Internal(err.to_string())
    }
}

impl From<InjectedFault> for ApiError {
    fn from(err: InjectedFault) -> Self {
        Self::Internal(err.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let code = self.code();
        let (message, details) = match self {
            Self::Client {
                message, details, ..
            } => (message, details),
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
        let body = json!({"error": {"code": code, "message": message, "details": details}});
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // Tells well-behaved clients (and our CLI) to back off briefly rather than hammer.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
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
