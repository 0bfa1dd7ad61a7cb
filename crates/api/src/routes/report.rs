//! `GET /v1/cases/{id}/report?format=json|pdf[&version=N]`: one decision version of a case as a
//! report, built from that version's frozen snapshot (see `ironclad_store::report`).
//!
//! Any role of the owning tenant may read it. Another tenant's case, an unknown or malformed
//! id and a version the case does not have all get the same 404; a bad `format` or `version`
//! is 400. The PDF is rendered on the blocking pool (it is CPU work), at most
//! [`REPORTS_AT_ONCE`] at a time per application, and sent as an attachment named
//! `case-<id>-v<N>.pdf`.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::responses::report::DecisionReport;
use crate::state::AppState;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use ironclad_core::CaseId;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// PDF reports rendered at once by one application. Each takes a core for tens of
/// milliseconds to a few seconds (a long case); without a cap, any key able to read a case
/// could ask for hundreds at once and take every core of the blocking pool from intake's
/// inspections and the desk's previews. Waiting requests are bounded by the request deadline.
pub const REPORTS_AT_ONCE: usize = 2;

/// The places to render reports in; clones share them.
#[derive(Debug, Clone)]
pub struct ReportRenders(Arc<Semaphore>);

impl ReportRenders {
    /// [`REPORTS_AT_ONCE`] places.
    pub fn new() -> Self {
        Self(Arc::new(Semaphore::new(REPORTS_AT_ONCE)))
    }

    /// Runs `render` on the blocking pool once a place is free. The place moves into the
    /// task: a request dropped mid-render (deadline, client gone) keeps it until the render it
    /// started ends.
    async fn run<T: Send + 'static>(
        &self,
        render: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let place = Arc::clone(&self.0)
            .acquire_owned()
            .await
            .map_err(|e| ApiError::Internal(format!("report renders closed: {e}")))?;
        tokio::task::spawn_blocking(move || {
            let done = render();
            drop(place);
            done
        })
        .await
        .map_err(|e| ApiError::Internal(format!("report rendering stopped: {e}")))
    }
}

impl Default for ReportRenders {
    fn default() -> Self {
        Self::new()
    }
}

/// The report route.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/cases/{id}/report", get(report))
}

/// What the report is sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Pdf,
}

impl Format {
    const ALLOWED: [&'static str; 2] = ["json", "pdf"];

    fn parse(raw: Option<&str>) -> Result<Self, ApiError> {
        match raw {
            None | Some("json") => Ok(Self::Json),
            Some("pdf") => Ok(Self::Pdf),
            Some(other) => Err(ApiError::bad_request(
                "invalid_format",
                format!("unknown report format {other:?}"),
            )
            .with_details(json!({"allowed": Self::ALLOWED}))),
        }
    }
}

/// A decision version: a whole number from 1.
fn parse_version(raw: Option<&str>) -> Result<Option<i32>, ApiError> {
    raw.map(|v| {
        v.parse::<i32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_version",
                "version must be a decision version number (1, 2, …)",
            )
        })
    })
    .transpose()
}

/// Query of the report; everything arrives as text so each mistake gets its own 400.
#[derive(Debug, Deserialize)]
struct ReportParams {
    format: Option<String>,
    version: Option<String>,
}

/// One decision version of a case as a report: JSON, or a PDF attachment.
#[utoipa::path(
    get,
    path = "/v1/cases/{id}/report",
    tag = "cases",
    params(
        ("id" = uuid::Uuid, Path, description = "Case id"),
        ("format" = Option<String>, Query, description = "`json` (default) or `pdf`"),
        ("version" = Option<i32>, Query, minimum = 1, description = "Decision version (default: the latest)"),
    ),
    responses(
        (status = 200, description = "The report (`Cache-Control: private, no-store`)",
            content(
                (DecisionReport = "application/json"),
                (crate::openapi::Pdf = "application/pdf"),
            ),
            headers(("Content-Disposition" = String, description = "PDF only: `attachment; filename=\"case-<id>-v<N>.pdf\"`"))),
        (status = 400, description = "A bad `format` or `version`", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant, or no such decision version", body = crate::openapi::ErrorBody),
    ),
)]
async fn report(
    State(state): State<AppState>,
    Extension(renders): Extension<ReportRenders>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
    params: Result<Query<ReportParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id: CaseId = id
        .ok()
        .and_then(|Path(raw)| raw.parse().ok())
        .ok_or_else(ApiError::not_found)?;
    let Query(params) = params.map_err(|_| {
        ApiError::bad_request("invalid_query", "the query string could not be parsed")
    })?;
    let format = Format::parse(params.format.as_deref())?;
    let version = parse_version(params.version.as_deref())?;
    let report = state
        .store
        .decision_report(Some(caller.0.tenant_id), id, version)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let mut response = match format {
        Format::Json => Json(DecisionReport::from(report)).into_response(),
        Format::Pdf => {
            let filename = format!("case-{}-v{}.pdf", report.case.id, report.decision.version);
            let pdf = renders
                .run(move || ironclad_report_pdf::render(&report))
                .await?
                .map_err(|e| ApiError::Internal(e.to_string()))?;
            let mut response = pdf.into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/pdf"),
            );
            // The name is a uuid and a number: nothing to quote or escape.
            if let Ok(value) =
                HeaderValue::from_str(&format!("attachment; filename=\"{filename}\""))
            {
                headers.insert(header::CONTENT_DISPOSITION, value);
            }
            response
        }
    };
    // A report holds a tenant's business data: no shared cache may keep it.
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_reports_render_at_once_than_the_places_and_every_one_renders() {
        let renders = ReportRenders::new();
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let asked: Vec<_> = (0..3 * REPORTS_AT_ONCE)
            .map(|i| {
                let (renders, now, most) = (renders.clone(), now.clone(), most.clone());
                tokio::spawn(async move {
                    renders
                        .run(move || {
                            let rendering = now.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(rendering, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(40));
                            now.fetch_sub(1, Ordering::SeqCst);
                            i
                        })
                        .await
                })
            })
            .collect();
        let mut rendered = Vec::new();
        for request in asked {
            rendered.push(request.await.expect("the request ran").expect("rendered"));
        }
        assert_eq!(rendered, (0..3 * REPORTS_AT_ONCE).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), REPORTS_AT_ONCE);
    }

    #[test]
    fn formats_and_versions_are_checked() {
        assert_eq!(Format::parse(None).ok(), Some(Format::Json));
        assert_eq!(Format::parse(Some("pdf")).ok(), Some(Format::Pdf));
        for bad in ["PDF", "html", ""] {
            assert_eq!(
                Format::parse(Some(bad)).err().map(|e| e.code()),
                Some("invalid_format")
            );
        }
        assert_eq!(parse_version(None).ok(), Some(None));
        assert_eq!(parse_version(Some("3")).ok(), Some(Some(3)));
        for bad in ["0", "-1", "x", "1.5", "99999999999"] {
            assert_eq!(
                parse_version(Some(bad)).err().map(|e| e.code()),
                Some("invalid_version"),
                "{bad}"
            );
        }
    }
}
