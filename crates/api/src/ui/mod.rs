//! The operator's desk: server-rendered pages (askama templates, compiled in) for the people
//! who review dossiers, with one stylesheet and one script embedded in the binary (no CDN,
//! no build step). Pages are tenant-scoped through the signed-in user's session; the upload
//! and other scripted calls go to the JSON API with the session cookie and a CSRF header.

mod account;
mod admin;
pub(crate) mod case;
mod cases;
mod chart;
mod claims;
mod corrections;
mod forms;
mod operations;
pub(crate) mod page;
mod people;
mod previews;
mod queue;
mod rulesets;
pub mod session;
mod sign_in;
mod sweep;
mod webhooks;

use crate::state::AppState;
use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

pub use previews::PreviewCache;
pub use sweep::sweep_sessions_every;

/// The desk's routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(cases::list))
        .route("/desk/counts", get(cases::counts))
        .route("/login", get(sign_in::login_page).post(sign_in::login))
        .route("/logout", post(sign_in::logout))
        .route(
            session::CHANGE_PASSWORD_PATH,
            get(account::password_page).post(account::change_password),
        )
        .route("/cases/{id}", get(case::show))
        .route("/cases/{id}/state", get(case::live))
        .route("/cases/{id}/review", post(case::review))
        .route("/cases/{id}/reprocess", post(case::reprocess))
        .route("/cases/{id}/corrections", post(corrections::save))
        .route("/cases/{id}/claim", post(claims::claim))
        .route("/cases/{id}/second", post(claims::second))
        .route(
            "/cases/{id}/sources/{source}/pages/{page}",
            get(previews::page_image),
        )
        .route("/queue", get(queue::list))
        .route("/queue/next", get(queue::next))
        .route("/upload", get(cases::upload_page))
        .route("/operations", get(operations::show))
        .route("/operations/requeue", post(operations::requeue))
        .route("/admin", get(admin::show))
        .route("/admin/users", post(admin::create_user))
        .route("/admin/users/{id}/disable", post(admin::disable_user))
        .route("/admin/keys", post(admin::create_key))
        .route("/admin/keys/{id}/revoke", post(admin::revoke_key))
        .route("/admin/rulesets", get(rulesets::list))
        .route("/admin/rulesets/{id}", get(rulesets::show))
        .route("/admin/rulesets/{id}/activate", post(rulesets::activate))
        .route(
            "/admin/webhooks",
            get(webhooks::list).post(webhooks::create),
        )
        .route("/admin/webhooks/{id}", get(webhooks::show))
        .route("/admin/webhooks/{id}/disable", post(webhooks::disable))
        .route(
            "/admin/webhooks/{id}/deliveries/{delivery}/requeue",
            post(webhooks::requeue),
        )
        .route("/assets/desk.css", get(stylesheet))
        .route("/assets/desk.js", get(script))
        .route("/assets/review.css", get(review_stylesheet))
        .route("/assets/review.js", get(review_script))
}

const STYLESHEET: &str = include_str!("../../assets/ui/desk.css");
const SCRIPT: &str = include_str!("../../assets/ui/desk.js");

async fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", STYLESHEET)
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// The review desk's own pieces (claims, four eyes, corrections): kept apart from the desk's
/// general stylesheet and script.
const REVIEW_STYLESHEET: &str = include_str!("../../assets/ui/review.css");
const REVIEW_SCRIPT: &str = include_str!("../../assets/ui/review.js");

async fn review_stylesheet() -> Response {
    asset("text/css; charset=utf-8", REVIEW_STYLESHEET)
}

async fn review_script() -> Response {
    asset("text/javascript; charset=utf-8", REVIEW_SCRIPT)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Not versioned by name: a short cache keeps a deploy's change visible within minutes.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}

/// The Content-Security-Policy of every answer: nothing but this origin's own files, no
/// inline script or style, no framing, forms only to this origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// Middleware: security headers on every answer, API and desk alike.
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    response
}
