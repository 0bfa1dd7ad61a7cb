//! Who is at the desk: the desk's cookies, the signed-in extractor and CSRF checks.
//!
//! The session cookie holds a random token (`ics_` + 64 hex digits); PostgreSQL keeps its
//! hash. It is `__Host-ironclad_session`: `Secure`, `Path=/`, no `Domain`, so no sibling
//! subdomain and no plain-HTTP page can set or overwrite it (browsers treat `http://localhost`
//! and `http://127.0.0.1` as secure, so a developer's machine works as it is). It is
//! `HttpOnly` (no script reads it) and `SameSite=Lax` (not sent on cross-site posts). Every
//! form carries the session's CSRF token and every unsafe API call from a browser the
//! `X-CSRF-Token` header: SameSite alone does not cover old browsers or a sibling subdomain.
//! `IRONCLAD_SECURE_COOKIES=false` (plain HTTP on a LAN address, for development only) drops
//! `Secure` and with it the `__Host-` prefix.
//!
//! A page's background refresh sends [`POLL_HEADER`]: its session is checked but its idle
//! time is not reset, so a page left open does not keep an idle session alive. A user whose
//! password an admin set is sent to change it from every page until they do.

use crate::client_address::ClientAddress;
use crate::error::ApiError;
use crate::state::{AppState, DeskConfig};
use crate::ui::page::DeskError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use ironclad_store::users::{Session, SessionUse};
use std::net::IpAddr;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The session cookie's name (with `IRONCLAD_SECURE_COOKIES=false`: `ironclad_session`).
pub const SESSION_COOKIE: &str = "__Host-ironclad_session";
/// The header a browser's unsafe API calls carry the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// The header a page's background refresh carries: it does not count as activity.
pub const POLL_HEADER: &str = "x-ironclad-poll";
/// Where a user whose password must change is sent.
pub const CHANGE_PASSWORD_PATH: &str = "/account/password";

/// The desk's cookies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeskCookie {
    /// The signed-in session.
    Session,
    /// The sign-in form's pre-session token (double submit: cookie and form field).
    SignIn,
}

impl DeskCookie {
    /// The cookie's name: `__Host-` prefixed unless the desk runs with insecure cookies.
    pub fn name(self, desk: &DeskConfig) -> &'static str {
        match (self, desk.secure_cookies) {
            (Self::Session, true) => SESSION_COOKIE,
            (Self::Session, false) => "ironclad_session",
            (Self::SignIn, true) => "__Host-ironclad_signin",
            (Self::SignIn, false) => "ironclad_signin",
        }
    }

    /// Its value in the request, if sent.
    pub(crate) fn read(self, headers: &HeaderMap, desk: &DeskConfig) -> Option<String> {
        cookie(headers, self.name(desk)).map(str::to_owned)
    }

    /// A `Set-Cookie` value giving it `value` for `max_age`.
    pub(crate) fn set(self, desk: &DeskConfig, value: &str, max_age: Duration) -> HeaderValue {
        let same_site = match self {
            // Lax: a link to a case from an email or a chat opens signed in.
            Self::Session => "Lax",
            // Strict: only this site's own sign-in form is ever sent with it.
            Self::SignIn => "Strict",
        };
        let text = format!(
            "{}={value}; Path=/; HttpOnly; SameSite={same_site}; Max-Age={}{}",
            self.name(desk),
            max_age.as_secs(),
            if desk.secure_cookies { "; Secure" } else { "" }
        );
        // Tokens are hex: the value is always a valid header.
        HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("x=; Max-Age=0"))
    }

    /// A `Set-Cookie` value removing it.
    pub(crate) fn clear(self, desk: &DeskConfig) -> HeaderValue {
        self.set(desk, "", Duration::ZERO)
    }
}

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

/// The raw session token of a request: needed to seal a secret for its own eyes and to keep
/// this session when a password changes. Never printed.
#[derive(Clone)]
pub struct SessionToken(String);

impl SessionToken {
    /// The token.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionToken(…)")
    }
}

/// How the request uses its session: a background poll is not activity.
fn session_use(headers: &HeaderMap) -> SessionUse {
    if headers.contains_key(POLL_HEADER) {
        SessionUse::Poll
    } else {
        SessionUse::Active
    }
}

/// The live session of the request's cookie, if any, with its token.
pub(crate) async fn session_of(
    headers: &HeaderMap,
    state: &AppState,
) -> Result<Option<(Session, SessionToken)>, ApiError> {
    let desk = &state.config.desk;
    let Some(token) = DeskCookie::Session
        .read(headers, desk)
        .filter(|t| is_well_formed_token(t))
    else {
        return Ok(None);
    };
    let session = state
        .store
        .resolve_session(&token, desk.sessions, session_use(headers))
        .await?;
    Ok(session.map(|s| (s, SessionToken(token))))
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

/// The refusal of a call by a user who must first change the password an admin set.
pub(crate) fn password_change_required() -> ApiError {
    ApiError::client(
        StatusCode::FORBIDDEN,
        "password_change_required",
        "your password was set by an administrator: change it on the desk first",
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
/// sent to the sign-in page, coming back here afterwards; with a password to change, to
/// [`CHANGE_PASSWORD_PATH`].
#[derive(Debug, Clone)]
pub struct DeskUser(pub Session, pub SessionToken);

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

/// Pages a user whose password must change may still reach.
fn reachable_before_password_change(path: &str) -> bool {
    matches!(path, CHANGE_PASSWORD_PATH | "/logout")
}

impl FromRequestParts<AppState> for DeskUser {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match session_of(&parts.headers, state).await {
            Ok(Some((session, _)))
                if session.must_change_password
                    && !reachable_before_password_change(parts.uri.path()) =>
            {
                Err(Redirect::to(CHANGE_PASSWORD_PATH).into_response())
            }
            Ok(Some((session, token))) => Ok(Self(session, token)),
            // A page's background refresh is told plainly; the page decides what to show.
            Ok(None) if parts.headers.contains_key(POLL_HEADER) => {
                Err(ApiError::Unauthenticated.into_response())
            }
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
pub(crate) fn safe_next(next: &str) -> bool {
    next.starts_with('/')
        && !next.starts_with("//")
        && !next.starts_with("/\\")
        && next.len() <= 512
        && next.bytes().all(|b| b.is_ascii_graphic())
}

fn url_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The client's address, when the server knows it: the [`ClientAddress`] the rate limits
/// use too (the peer, or what a trusted proxy forwarded). A router driven in-process has none.
pub(crate) struct PeerAddress(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(
            parts
                .extensions
                .get::<ClientAddress>()
                .map(|ClientAddress(ip)| *ip),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_among_others() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; __Host-ironclad_session=ics_x ; b=2"),
        );
        assert_eq!(cookie(&h, "__Host-ironclad_session"), Some("ics_x"));
        assert_eq!(cookie(&h, "b"), Some("2"));
        assert_eq!(cookie(&h, "c"), None);
        // The unprefixed name is another cookie (one a subdomain could have planted).
        assert_eq!(cookie(&h, "ironclad_session"), None);
    }

    #[test]
    fn cookies_are_host_prefixed_and_secure_unless_told_otherwise() {
        let desk = DeskConfig::default();
        let set = DeskCookie::Session.set(&desk, "ics_1", Duration::from_secs(60));
        let set = set.to_str().unwrap_or_default();
        assert!(
            set.starts_with("__Host-ironclad_session=ics_1; Path=/;"),
            "{set}"
        );
        assert!(
            set.ends_with("; Secure") && !set.contains("Domain"),
            "{set}"
        );
        let signin = DeskCookie::SignIn.set(&desk, "t", Duration::from_secs(60));
        assert!(signin
            .to_str()
            .unwrap_or_default()
            .contains("SameSite=Strict"));
        let dev = DeskConfig {
            secure_cookies: false,
            ..desk
        };
        let set = DeskCookie::Session.clear(&dev);
        let set = set.to_str().unwrap_or_default();
        assert!(
            set.starts_with("ironclad_session=;") && !set.contains("Secure"),
            "{set}"
        );
        assert!(set.contains("Max-Age=0"), "{set}");
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

    #[test]
    fn polls_are_not_activity() {
        let mut h = HeaderMap::new();
        assert_eq!(session_use(&h), SessionUse::Active);
        h.insert(POLL_HEADER, HeaderValue::from_static("1"));
        assert_eq!(session_use(&h), SessionUse::Poll);
    }

    #[test]
    fn a_user_who_must_change_their_password_reaches_only_that_page() {
        assert!(reachable_before_password_change(CHANGE_PASSWORD_PATH));
        assert!(reachable_before_password_change("/logout"));
        assert!(!reachable_before_password_change("/"));
        assert!(!reachable_before_password_change("/account/password/x"));
    }
}
