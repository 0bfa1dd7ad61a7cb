//! Rendering desk pages: a template becomes an HTML answer, an error becomes an HTML error
//! page with the same status and message the JSON API would give.

use crate::error::ApiError;
use crate::ui::session::DeskUser;
use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use ironclad_core::role::Role;

/// A form that carries nothing but its CSRF token (a button).
#[derive(Debug, serde::Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default)]
    pub csrf: String,
}

/// A client error's status and message, for a form to show on its own page again (what was
/// refused and why, with what the person typed); anything else stays an error page.
pub(crate) fn refusal(error: ApiError) -> Result<(StatusCode, String), DeskError> {
    match error {
        ApiError::Client {
            status, message, ..
        } => Ok((status, message)),
        other => Err(other.into()),
    }
}

/// Renders `page` with `status`; a template that cannot render is a logged 500.
pub(crate) fn render(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => {
            let mut response = (status, Html(html)).into_response();
            // Pages show tenant data: never kept by a shared cache or the back button's disk.
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => DeskError(ApiError::Internal(format!("template: {e}"))).into_response(),
    }
}

/// What every signed-in page shows around its content: who is signed in, the navigation
/// their role may use, and the CSRF token its forms carry.
#[derive(Debug, Clone)]
pub(crate) struct Chrome {
    /// The user's display name (else address).
    pub name: String,
    pub role: &'static str,
    pub csrf: String,
    pub admin: bool,
    pub operator: bool,
    /// Which navigation entry is current.
    pub here: &'static str,
}

impl Chrome {
    pub(crate) fn of(user: &DeskUser, here: &'static str) -> Self {
        let role = user.0.principal.role;
        Self {
            name: user.0.name.clone(),
            role: role.as_str(),
            csrf: user.0.csrf_token.clone(),
            admin: role == Role::Admin,
            operator: matches!(role, Role::Operator | Role::Admin),
            here,
        }
    }

    /// `aria-current` for the navigation entry `name`.
    pub(crate) fn current(&self, name: &str) -> &'static str {
        if self.here == name {
            "page"
        } else {
            "false"
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    status: u16,
    title: &'a str,
    message: &'a str,
    code: &'a str,
}

/// An error on a desk page: rendered as HTML with the API's status, code and message.
#[derive(Debug)]
pub struct DeskError(pub ApiError);

impl From<ApiError> for DeskError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl From<axum::extract::rejection::QueryRejection> for DeskError {
    fn from(e: axum::extract::rejection::QueryRejection) -> Self {
        Self(ApiError::bad_request("invalid_query", e.body_text()))
    }
}

impl From<axum::extract::rejection::FormRejection> for DeskError {
    fn from(e: axum::extract::rejection::FormRejection) -> Self {
        Self(ApiError::client(e.status(), "invalid_form", e.body_text()))
    }
}

/// A desk page's query string: one that cannot be read is an HTML 400 like any desk error
/// (axum's own answer would be plain text).
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(DeskError))]
pub(crate) struct DeskQuery<T>(pub T);

/// A desk form's body: a wrong type or a field that cannot be read is an HTML error page.
#[derive(axum::extract::FromRequest)]
#[from_request(via(axum::Form), rejection(DeskError))]
pub(crate) struct DeskForm<T>(pub T);

impl From<ironclad_store::StoreError> for DeskError {
    fn from(e: ironclad_store::StoreError) -> Self {
        Self(e.into())
    }
}

impl From<ironclad_blobs::BlobError> for DeskError {
    fn from(e: ironclad_blobs::BlobError) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for DeskError {
    fn into_response(self) -> Response {
        let public = self.0.into_public();
        let page = ErrorPage {
            status: public.status.as_u16(),
            title: public.status.canonical_reason().unwrap_or("Error"),
            message: &public.message,
            code: public.code,
        };
        let html = page
            .render()
            .unwrap_or_else(|_| "<!doctype html><title>Error</title><p>Error</p>".to_owned());
        let mut response = (public.status, Html(html)).into_response();
        public.add_headers(&mut response);
        response
    }
}

/// A duration in seconds as people read it: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`.
pub(crate) fn age(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_naturally() {
        assert_eq!(age(-3.0), "0 s");
        assert_eq!(age(59.9), "59 s");
        assert_eq!(age(600.0), "10 min");
        assert_eq!(age(3600.0 * 3.0 + 300.0), "3 h 5 min");
        assert_eq!(age(86_400.0 * 2.0 + 3600.0 * 4.0), "2 d 4 h");
    }
}
