//! Who is at the desk: the session cookie, the signed-in extractor, CSRF checks, sign-in and
//! sign-out.
//!
//! The cookie holds a random token (`ics_` + 64 hex digits); PostgreSQL keeps its hash. It is
//! `HttpOnly` (no script reads it), `SameSite=Lax` (not sent on cross-site posts) and `Secure`
//! when the deployment says it is behind TLS. Every form carries the session's CSRF token and
//! every unsafe API call from a browser the `X-CSRF-Token` header: SameSite alone does not
//! cover old browsers or a sibling subdomain.

use crate::error::ApiError;
use crate::password;
use crate::state::AppState;
use crate::throttle::RateLimiters;
use crate::ui::page::{render, DeskError, DeskForm, DeskQuery};
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use ironclad_store::users::Session;
use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};
use subtle::ConstantTimeEq;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "ironclad_session";
/// The header a browser's unsafe API calls carry the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// Whether `token` has the shape session tokens have; anything else is refused unread.
fn is_well_formed_token(token: &str) -> bool {
    token.strip_prefix("ics_").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The live session of the request's cookie, if any.
pub(crate) async fn session_of(
    headers: &HeaderMap,
    state: &AppState,
) -> Result<Option<Session>, ApiError> {
    let Some(token) = cookie(headers, SESSION_COOKIE).filter(|t| is_well_formed_token(t)) else {
        return Ok(None);
    };
    Ok(state
        .store
        .resolve_session(token, state.config.desk.sessions)
        .await?)
}

/// Whether `offered` is the session's CSRF token (constant time).
pub(crate) fn csrf_matches(session: &Session, offered: &str) -> bool {
    !offered.is_empty() && bool::from(session.csrf_token.as_bytes().ct_eq(offered.as_bytes()))
}

/// The refusal of an unsafe request without the right CSRF token.
pub(crate) fn csrf_refused() -> ApiError {
    ApiError::client(
        StatusCode::FORBIDDEN,
        "csrf_refused",
        "this request did not carry the page's CSRF token; reload the page and try again",
    )
}

/// Whether an API call authenticated by a session cookie may go on: safe methods always,
/// others only with the session's token in [`CSRF_HEADER`].
pub(crate) fn api_call_allowed(method: &Method, headers: &HeaderMap, session: &Session) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        || headers
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|offered| csrf_matches(session, offered))
}

/// A signed-in person (extractor for desk pages). Without a live session a page request is
/// sent to the sign-in page, coming back here afterwards.
#[derive(Debug, Clone)]
pub struct DeskUser(pub Session);

impl DeskUser {
    /// Refuses (403) a form whose CSRF field is not this session's token.
    pub fn check_csrf(&self, offered: &str) -> Result<(), DeskError> {
        if csrf_matches(&self.0, offered) {
            Ok(())
        } else {
            Err(DeskError::from(csrf_refused()))
        }
    }

    /// Refuses (403) unless the user's role is one of `allowed`.
    pub fn require(
        &self,
        allowed: &[ironclad_core::role::Role],
        action: &'static str,
    ) -> Result<(), DeskError> {
        crate::auth::Caller(self.0.principal)
            .require(allowed, action)
            .map_err(DeskError::from)
    }
}

impl FromRequestParts<AppState> for DeskUser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match session_of(&parts.headers, state).await {
            Ok(Some(session)) => Ok(Self(session)),
            Ok(None) => {
                let back = parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str())
                    .unwrap_or("/");
                let target = if parts.method == Method::GET && safe_next(back) {
                    format!("/login?next={}", url_encode(back))
                } else {
                    "/login".to_owned()
                };
                Err(Redirect::to(&target).into_response())
            }
            Err(e) => Err(DeskError::from(e).into_response()),
        }
    }
}

/// Where sign-in may send the browser back to: a path on this site only (no `//host`).
fn safe_next(next: &str) -> bool {
    next.starts_with('/')
        && !next.starts_with("//")
        && !next.starts_with("/\\")
        && next.len() <= 512
        && next.bytes().all(|b| b.is_ascii_graphic())
}

fn url_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The client's address, when the server knows it (`ConnectInfo`); a router driven
/// in-process has none.
pub(crate) struct PeerAddress(Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip()),
        ))
    }
}

/// The sign-in page's template.
#[derive(askama::Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    next: &'a str,
    email: &'a str,
    problem: Option<&'a str>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct NextParam {
    next: Option<String>,
}

/// `GET /login`
pub(crate) async fn login_page(DeskQuery(q): DeskQuery<NextParam>) -> Response {
    let next = q.next.as_deref().filter(|n| safe_next(n)).unwrap_or("/");
    render(
        StatusCode::OK,
        &LoginPage {
            next,
            email: "",
            problem: None,
        },
    )
}

#[derive(Debug, Deserialize)]
pub(crate) struct LoginForm {
    email: String,
    password: String,
    #[serde(default)]
    next: String,
}

/// Longest address accepted at sign-in.
const MAX_EMAIL_CHARS: usize = 254;

/// `POST /login`: checks the password (throttled per address and per account), starts a
/// session and sets its cookie. The sign-in form needs no CSRF token: it creates the session,
/// and a forged sign-in into the attacker's own account is blocked by `SameSite` on the
/// answer's cookie plus the per-account throttle.
pub(crate) async fn login(
    State(state): State<AppState>,
    Extension(limiters): Extension<RateLimiters>,
    PeerAddress(peer): PeerAddress,
    headers: HeaderMap,
    DeskForm(form): DeskForm<LoginForm>,
) -> Response {
    let next = if safe_next(&form.next) {
        form.next.as_str()
    } else {
        "/"
    };
    let email = form.email.trim();
    let refuse = |status: StatusCode, problem: &str| {
        render(
            status,
            &LoginPage {
                next,
                email: if email.chars().count() <= MAX_EMAIL_CHARS {
                    email
                } else {
                    ""
                },
                problem: Some(problem),
            },
        )
    };
    if email.is_empty() || email.chars().count() > MAX_EMAIL_CHARS || form.password.is_empty() {
        return refuse(
            StatusCode::BAD_REQUEST,
            "Enter your email address and password.",
        );
    }
    if let Err(wait) = limiters.check_login(&email.to_lowercase(), peer) {
        tracing::warn!("sign-in throttled");
        let mut response = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many sign-in attempts. Wait a minute and try again.",
        );
        if let Ok(v) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return response;
    }
    let credentials = match state.store.user_credentials(email).await {
        Ok(c) => c,
        Err(e) => return DeskError::from(ApiError::from(e)).into_response(),
    };
    let password = form.password.clone();
    let stored = credentials
        .as_ref()
        .map(|c| c.password_hash.clone())
        .unwrap_or_else(|| password::decoy_hash().to_owned());
    let verified =
        tokio::task::spawn_blocking(move || password::verify_password(&password, &stored))
            .await
            .unwrap_or(false);
    let Some(user) = credentials.filter(|_| verified).map(|c| c.user) else {
        tracing::info!("sign-in refused");
        return refuse(
            StatusCode::UNAUTHORIZED,
            "That email address and password do not match.",
        );
    };
    let session = match state
        .store
        .start_session(user.id, state.config.desk.sessions)
        .await
    {
        Ok(s) => s,
        Err(e) => return DeskError::from(ApiError::from(e)).into_response(),
    };
    tracing::info!(user_id = %user.id, "signed in");
    let mut response = Redirect::to(next).into_response();
    let secure = state.config.desk.secure_cookies || behind_tls(&headers);
    let cookie = format!(
        "{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{}",
        session.token,
        state.config.desk.sessions.lifetime.as_secs(),
        if secure { "; Secure" } else { "" }
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// Whether the request reached a TLS-terminating proxy (the cookie then gets `Secure`).
fn behind_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

#[derive(Debug, Deserialize)]
pub(crate) struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /logout`: ends the session (CSRF-checked, so no other site can sign a user out) and
/// clears the cookie.
pub(crate) async fn logout(
    State(state): State<AppState>,
    user: DeskUser,
    headers: HeaderMap,
    DeskForm(form): DeskForm<CsrfForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    if let Some(token) = cookie(&headers, SESSION_COOKIE) {
        state
            .store
            .end_session(token)
            .await
            .map_err(ApiError::from)?;
    }
    let mut response = Redirect::to("/login").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("ironclad_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_among_others() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; ironclad_session=ics_x ; b=2"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("ics_x"));
        assert_eq!(cookie(&h, "b"), Some("2"));
        assert_eq!(cookie(&h, "c"), None);
    }

    #[test]
    fn only_local_paths_are_returned_to() {
        assert!(safe_next("/cases/1?x=2"));
        assert!(!safe_next("//evil.example/"));
        assert!(!safe_next("/\\evil.example"));
        assert!(!safe_next("https://evil.example/"));
        assert!(!safe_next("/a b"));
    }

    #[test]
    fn only_the_shape_of_real_tokens_is_looked_up() {
        assert!(is_well_formed_token(&format!("ics_{}", "ab".repeat(32))));
        assert!(!is_well_formed_token(&format!("ics_{}", "AB".repeat(32))));
        assert!(!is_well_formed_token("ics_"));
        assert!(!is_well_formed_token(&format!("ick_{}", "ab".repeat(32))));
    }
}
