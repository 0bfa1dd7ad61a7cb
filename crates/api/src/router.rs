//! The application: every route group, the JSON fallbacks, load shedding, the request
//! deadline and tracing; and the metrics-only application for a separate listener.

use crate::auth::AuthCache;
use crate::client_address::{resolve_client_address, TrustedProxies};
use crate::error::ApiError;
use crate::routes;
use crate::routes::ops::{ReadyCache, ScrapeCache};
use crate::state::AppState;
use crate::throttle::{limit_by_address, IntakeSlots, RateLimiters};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tower_http::trace::TraceLayer;

/// Builds the application for `state`: the API, the health probes and (unless
/// [`ApiConfig::metrics_on_api_listener`](crate::ApiConfig) is false) `/metrics`.
///
/// Every cache, rate bucket and intake slot belongs to the router built here, not to a
/// global: several apps in one process (tests) never see each other's entries, and a key
/// revoked in one database is not remembered for another.
pub fn router(state: AppState) -> Router {
    let config = &state.config;
    let limiters = RateLimiters::new(config);
    let mut app = Router::new()
        .merge(routes::cases::router(&config.limits))
        .merge(routes::decisions::router())
        .merge(routes::corrections::router())
        .merge(routes::claims::router())
        .merge(routes::rulesets::router())
        .merge(routes::report::router())
        .merge(routes::notifications::router())
        .merge(routes::webhooks::router())
        .merge(routes::ops::router())
        .merge(crate::ui::router())
        .merge(crate::openapi::router());
    if config.metrics_on_api_listener {
        app = app.merge(routes::ops::metrics_routes());
    }
    let app = app
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(middleware::from_fn_with_state(
            limiters.clone(),
            limit_by_address,
        ))
        // Outside the limit: it reads the address this resolves.
        .layer(middleware::from_fn_with_state(
            TrustedProxies::new(&config.trusted_proxies),
            resolve_client_address,
        ))
        .layer(Extension(limiters))
        .layer(Extension(AuthCache::new()))
        .layer(Extension(IntakeSlots::new(
            config.max_concurrent_intakes,
            config.intake_tenant_share(),
        )))
        .layer(Extension(ScrapeCache::new()))
        .layer(Extension(ReadyCache::new()))
        .layer(Extension(routes::report::ReportRenders::new()))
        .layer(Extension(crate::password::HashGate::new(
            config.password_hashes_at_once,
            config.password_hash_queue,
        )))
        .layer(Extension(crate::ui::PreviewCache::new(
            config.desk.preview_cache_mib,
        )));
    finish(app, state)
}

/// Builds an application that serves only `/metrics` (with the same token rule and gauge
/// cache), for a listener of its own: an address only Prometheus can reach, while the API's
/// listener answers 404 for `/metrics` when `metrics_on_api_listener` is false.
pub fn metrics_router(state: AppState) -> Router {
    let app = Router::new()
        .merge(routes::ops::metrics_routes())
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(Extension(ScrapeCache::new()));
    finish(app, state)
}

/// The layers every application gets: the deadline, then tracing outermost.
fn finish(app: Router<AppState>, state: AppState) -> Router {
    let deadline = state.config.request_timeout;
    app.layer(middleware::from_fn_with_state(deadline, enforce_deadline))
        .layer(middleware::from_fn(crate::ui::security_headers))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Serves the application on `listener` until `shutdown` resolves, then lets in-flight
/// requests finish (graceful shutdown). Each request knows its peer's address (for the
/// per-address rate limit).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        tracing::debug!(%addr, "http api serving");
    }
    // Whoever serves the desk deletes its expired sessions; the sweep ends with the server.
    let sweeper = tokio::spawn(crate::ui::sweep_sessions_every(
        state.store.clone(),
        state.config.desk.session_sweep_every,
    ));
    let served = axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await;
    sweeper.abort();
    served
}

/// Serves [`metrics_router`] on `listener` until `shutdown` resolves.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        tracing::debug!(%addr, "metrics serving");
    }
    axum::serve(
        listener,
        metrics_router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
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
