//! The application: every route group, the JSON fallbacks, the request deadline and tracing.

use crate::auth::AuthCache;
use crate::error::ApiError;
use crate::routes;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use std::future::Future;
use std::time::Duration;
use tower_http::trace::TraceLayer;

/// Builds the application for `state`.
pub fn router(state: AppState) -> Router {
    let deadline = state.config.request_timeout;
    Router::new()
        .merge(routes::cases::router(&state.config.limits))
        .merge(routes::ops::router())
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        // One cache per application, not a global: tests running several apps in one process
        // (and a key revoked in one database) never see each other's entries.
        .layer(Extension(AuthCache::new()))
        .layer(middleware::from_fn_with_state(deadline, enforce_deadline))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Serves the application on `listener` until `shutdown` resolves, then lets in-flight
/// requests finish (graceful shutdown).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        tracing::debug!(%addr, "http api serving");
    }
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Answers 503 `timeout` when a request runs past `limit`. Dropping the handler aborts its
/// unfinished blob writers (their temp files are removed); an intake whose commit raced the
/// deadline may have committed, which a retry with the same `Idempotency-Key` reveals.
async fn enforce_deadline(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(timeout = ?limit, "request timed out");
            ApiError::Timeout.into_response()
        }
    }
}

async fn unknown_route() -> ApiError {
    ApiError::not_found()
}

/// axum adds the `Allow` header to this answer itself.
async fn wrong_method() -> ApiError {
    ApiError::client(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this method is not allowed on this resource",
    )
}
