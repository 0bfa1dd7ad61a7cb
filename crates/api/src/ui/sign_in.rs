//! Signing in and out.
//!
//! The sign-in form is guarded twice against a cross-site POST that would sign a victim into
//! the attacker's account (login CSRF; SameSite limits when a cookie is *sent*, not whether a
//! cross-site answer may *set* one):
//! - a pre-session token: `GET /login` sets a random token in the `__Host-ironclad_signin`
//!   cookie (`SameSite=Strict`) and renders the same token into the form; `POST /login`
//!   needs both, equal. Another site can neither read the cookie nor set a `__Host-` one.
//! - an origin check: a browser's `Origin` (or `Sec-Fetch-Site`) must name this site.
//!
//! A refused sign-in sets no session cookie and shows the form again with a fresh token.

use crate::error::ApiError;
use crate::password::{self, GateError, HashGate, HASH_BUSY_RETRY_AFTER};
use crate::state::AppState;
use crate::throttle::RateLimiters;
use crate::ui::page::{render, CsrfOnly, DeskError, DeskForm, DeskQuery};
use crate::ui::session::{safe_next, DeskCookie, DeskUser, PeerAddress, CHANGE_PASSWORD_PATH};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use rand::Rng;
use serde::Deserialize;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// How long a sign-in form stays usable.
const SIGN_IN_FORM_LIFETIME: Duration = Duration::from_secs(3600);
/// Longest address accepted at sign-in.
const MAX_EMAIL_CHARS: usize = 254;

/// The sign-in page's template.
#[derive(askama::Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    next: &'a str,
    email: &'a str,
    problem: Option<&'a str>,
    signin_token: &'a str,
}

/// A fresh pre-session token (32 random bytes, hex).
fn new_signin_token() -> String {
    let bytes: [u8; 32] = rand::rng().random();
    hex::encode(bytes)
}

/// The sign-in page with a fresh pre-session token, in its cookie and in the form.
fn sign_in_page(
    state: &AppState,
    status: StatusCode,
    next: &str,
    email: &str,
    problem: Option<&str>,
) -> Response {
    let token = new_signin_token();
    let mut response = render(
        status,
        &LoginPage {
            next,
            email,
            problem,
            signin_token: &token,
        },
    );
    response.headers_mut().append(
        header::SET_COOKIE,
        DeskCookie::SignIn.set(&state.config.desk, &token, SIGN_IN_FORM_LIFETIME),
    );
    response
}

#[derive(Debug, Deserialize)]
pub(crate) struct NextParam {
    next: Option<String>,
}

/// `GET /login`
pub(crate) async fn login_page(
    State(state): State<AppState>,
    DeskQuery(q): DeskQuery<NextParam>,
) -> Response {
    let next = q.next.as_deref().filter(|n| safe_next(n)).unwrap_or("/");
    sign_in_page(&state, StatusCode::OK, next, "", None)
}

#[derive(Debug, Deserialize)]
pub(crate) struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
    #[serde(default)]
    signin_token: String,
}

/// Whether a browser says this POST comes from a page of this site: `Sec-Fetch-Site`
/// (`same-origin`, or `none` for a typed URL) and `Origin` (its host and port those the
/// request was sent to). A client that sends neither is left to the pre-session token.
pub(crate) fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        if !matches!(site, "same-origin" | "none") {
            return false;
        }
    }
    let Some(origin) = text("origin") else {
        return true;
    };
    let Ok(origin) = url::Url::parse(origin) else {
        return false; // "null" (a sandboxed frame, a data: page) included
    };
    let Some(host) = origin.host_str() else {
        return false;
    };
    let authority = match origin.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    // Behind a proxy that rewrites Host, the host the browser used is X-Forwarded-Host.
    [text("host"), text("x-forwarded-host")]
        .into_iter()
        .flatten()
        .any(|sent| sent.trim().eq_ignore_ascii_case(&authority))
}

/// Whether the form's pre-session token is the cookie's (constant time).
fn signin_token_matches(form: &str, cookie: Option<&str>) -> bool {
    match cookie {
        Some(cookie) if !form.is_empty() => bool::from(form.as_bytes().ct_eq(cookie.as_bytes())),
        _ => false,
    }
}

/// `POST /login`: checks where the form came from and its pre-session token, then the
/// password (throttled per address and per account); starts a session and sets its cookie.
pub(crate) async fn login(
    State(state): State<AppState>,
    Extension(limiters): Extension<RateLimiters>,
    Extension(hashing): Extension<HashGate>,
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
    let shown_email = if email.chars().count() <= MAX_EMAIL_CHARS {
        email
    } else {
        ""
    };
    let refuse = |status: StatusCode, problem: &str| {
        sign_in_page(&state, status, next, shown_email, Some(problem))
    };
    let desk = &state.config.desk;
    let cookie_token = DeskCookie::SignIn.read(&headers, desk);
    if !same_origin(&headers) || !signin_token_matches(&form.signin_token, cookie_token.as_deref())
    {
        tracing::warn!("sign-in refused: not from this site's own sign-in form");
        return refuse(
            StatusCode::FORBIDDEN,
            "This sign-in form expired or did not come from this site. Sign in again here.",
        );
    }
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
    let stored = credentials.as_ref().map(|c| c.password_hash.clone());
    let verified = hashing
        .run(move || {
            let stored = stored.unwrap_or_else(|| password::decoy_hash().to_owned());
            password::verify_password(&password, &stored)
        })
        .await;
    let verified = match verified {
        Ok(verified) => verified,
        Err(GateError::Busy(_)) => {
            // Info, not warn: a flood of sign-ins would otherwise be a flood of warnings.
            tracing::info!("sign-in refused: too many password checks waiting");
            let mut response = refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "The server is busy checking other sign-ins. Try again in a moment.",
            );
            if let Ok(v) = HeaderValue::from_str(&HASH_BUSY_RETRY_AFTER.as_secs().to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return response;
        }
        Err(GateError::Stopped(m)) => {
            tracing::error!(error = %m, "sign-in: password check stopped");
            false
        }
    };
    let Some(user) = credentials.filter(|_| verified).map(|c| c.user) else {
        tracing::info!("sign-in refused");
        return refuse(
            StatusCode::UNAUTHORIZED,
            "That email address and password do not match.",
        );
    };
    let session = match state.store.start_session(user.id, desk.sessions).await {
        Ok(s) => s,
        Err(e) => return DeskError::from(ApiError::from(e)).into_response(),
    };
    tracing::info!(user_id = %user.id, "signed in");
    let target = if user.must_change_password {
        CHANGE_PASSWORD_PATH
    } else {
        next
    };
    let mut response = Redirect::to(target).into_response();
    let headers = response.headers_mut();
    headers.append(
        header::SET_COOKIE,
        DeskCookie::Session.set(desk, &session.token, desk.sessions.lifetime),
    );
    headers.append(header::SET_COOKIE, DeskCookie::SignIn.clear(desk));
    response
}

/// `POST /logout`: ends the session (CSRF-checked, so no other site can sign a user out) and
/// clears the cookie.
pub(crate) async fn logout(
    State(state): State<AppState>,
    user: DeskUser,
    DeskForm(form): DeskForm<CsrfOnly>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    state
        .store
        .end_session(user.1.expose())
        .await
        .map_err(ApiError::from)?;
    let mut response = Redirect::to("/login").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        DeskCookie::Session.clear(&state.config.desk),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_this_sites_pages_may_post_the_sign_in_form() {
        let host = ("host", "desk.example:8080");
        assert!(
            same_origin(&headers(&[host])),
            "no Origin: the token decides"
        );
        assert!(same_origin(&headers(&[
            host,
            ("origin", "https://desk.example:8080"),
            ("sec-fetch-site", "same-origin"),
        ])));
        assert!(!same_origin(&headers(&[
            host,
            ("origin", "https://evil.example")
        ])));
        assert!(!same_origin(&headers(&[host, ("origin", "null")])));
        assert!(!same_origin(&headers(&[
            host,
            ("origin", "https://desk.example:8080"),
            ("sec-fetch-site", "cross-site"),
        ])));
        assert!(!same_origin(&headers(&[
            host,
            ("sec-fetch-site", "same-site")
        ])));
        assert!(same_origin(&headers(&[
            ("host", "10.0.0.5:8080"),
            ("x-forwarded-host", "desk.example"),
            ("origin", "https://desk.example"),
        ])));
    }

    #[test]
    fn the_form_token_must_be_the_cookies() {
        let token = new_signin_token();
        assert_eq!(token.len(), 64);
        assert!(signin_token_matches(&token, Some(&token)));
        assert!(!signin_token_matches(&token, Some(&new_signin_token())));
        assert!(!signin_token_matches(&token, None));
        assert!(!signin_token_matches("", Some("")));
    }
}
