//! The API described as OpenAPI 3.1, served at `GET /openapi.json` (no key needed).
//!
//! The document is derived from the code: each handler carries a `#[utoipa::path]` with its
//! parameters, body and the errors it can answer, and the bodies it answers are the API's own
//! types (`crate::responses`), which derive `utoipa::ToSchema`; the store's rows never do. What
//! every route can answer — 401 without a key, 429, 500, 503 — is added here once, by
//! [`CommonAnswers`], rather than repeated on every handler. `tests/api/openapi.rs` keeps the
//! document and the router in step, and `scripts/schemathesis` checks the answers against it.
//!
//! The types below are described here only: the error body, the health probes' answers
//! (built with `json!` in their handlers; the schemathesis run is what catches one of them
//! drifting), the PDF and the multipart intake.

use crate::state::AppState;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use std::sync::OnceLock;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi, ToSchema};

/// Name of the API-key security scheme (spelled out again in [`ApiDoc`]'s `security(...)`,
/// which takes only a literal).
pub const API_KEY: &str = "api_key";
/// The name of the desk session's cookie scheme in the document.
pub const DESK_SESSION: &str = "desk_session";

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Ironclad",
        description = "Document dossiers: intake, reading, rules and decisions, reviews, \
                       reports, notifications and webhooks. Every error is \
                       `{\"error\": {\"code\", \"message\", \"details\"}}`.",
    ),
    paths(
        crate::routes::cases::create_case,
        crate::routes::cases::list_cases,
        crate::routes::cases::get_case,
        crate::routes::decisions::list_reviews,
        crate::routes::decisions::review_case,
        crate::routes::decisions::second_opinion,
        crate::routes::corrections::correct,
        crate::routes::corrections::preview,
        crate::routes::claims::claim,
        crate::routes::claims::take_over,
        crate::routes::claims::release,
        crate::routes::decisions::reprocess_case,
        crate::routes::decisions::reevaluate_case,
        crate::routes::report::report,
        crate::routes::rulesets::list,
        crate::routes::rulesets::create,
        crate::routes::rulesets::show,
        crate::routes::rulesets::validate,
        crate::routes::rulesets::activate,
        crate::routes::rulesets::diff,
        crate::routes::notifications::list,
        crate::routes::notifications::mark_read,
        crate::routes::webhooks::list,
        crate::routes::webhooks::create,
        crate::routes::webhooks::get_one,
        crate::routes::webhooks::disable,
        crate::routes::webhooks::deliveries,
        crate::routes::webhooks::requeue,
        crate::routes::ops::healthz,
        crate::routes::ops::readyz,
        crate::routes::ops::metrics,
        openapi_json,
    ),
    components(schemas(ErrorBody)),
    security(("api_key" = []), ("desk_session" = [])),
    modifiers(&CommonAnswers),
    tags(
        (name = "cases", description = "Intake and reads of cases"),
        (name = "decisions", description = "Reviews (claims, four eyes), corrections, reprocessing and reevaluation"),
        (name = "rulesets", description = "Managed rules per workflow (admin)"),
        (name = "notifications", description = "The tenant's inbox"),
        (name = "webhooks", description = "Endpoints and their deliveries (admin)"),
        (name = "ops", description = "Health, readiness, metrics and this document"),
    )
)]
pub struct ApiDoc;

/// The document, built once: it is the same for the life of the process.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOC: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    DOC.get_or_init(ApiDoc::openapi)
}

/// The `/openapi.json` route.
pub fn router() -> Router<AppState> {
    Router::new().route("/openapi.json", get(openapi_json))
}

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "ops",
    security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json", body = serde_json::Value)),
)]
async fn openapi_json() -> Json<&'static utoipa::openapi::OpenApi> {
    Json(document())
}

/// Every error answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The error of an [`ErrorBody`].
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: `not_found`, `invalid_limit`, `rate_limited`, …
    pub code: String,
    /// For people; never database or storage text.
    pub message: String,
    /// Structured facts (the field, the limit, …); `null` when there are none.
    #[schema(value_type = Object, nullable)]
    pub details: serde_json::Value,
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
}

/// `GET /readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ok`, `degraded` (Redis does not answer: intake works, publication waits) or
    /// `unavailable` (PostgreSQL does not answer).
    pub status: String,
    /// `ok` or `error`.
    pub postgres: String,
    /// `ok`, `error` or `not_configured`.
    pub redis: String,
}

/// A PDF file, as bytes (the report's `?format=pdf`).
#[derive(Debug, ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct Pdf(pub Vec<u8>);

/// A `multipart/form-data` intake (`POST /v1/cases`).
#[derive(Debug, ToSchema)]
pub struct CaseSubmission {
    /// The files (PDF, PNG, JPEG or TIFF): one part named `file` per file, at least one.
    #[schema(value_type = Vec<String>, format = Binary)]
    pub file: Vec<Vec<u8>>,
    /// The client's reference for the case (up to 200 characters, no control characters).
    #[schema(max_length = 200)]
    pub external_reference: Option<String>,
    /// The workflow to read the case with (up to 100 characters).
    #[schema(max_length = 100)]
    pub workflow: Option<String>,
}

/// Adds the API-key scheme and the answers every route can give: 401 where a key is needed,
/// 429 (rate limits; the health probes are exempt), 500 and 503 (database down, timeout,
/// server at capacity).
struct CommonAnswers;

const COMMON: [(&str, &str, &str); 4] = [
    (
        "401",
        "Unauthorized",
        "No usable `Authorization: Bearer` API key (with `WWW-Authenticate: Bearer`)",
    ),
    (
        "429",
        "RateLimited",
        "Too many requests from this address or key (`rate_limited`, with `Retry-After`)",
    ),
    ("500", "Internal", "A fault on the server (`internal`)"),
    (
        "503",
        "Unavailable",
        "The database is unavailable, the request ran past its deadline, or the server is at \
         capacity (`unavailable`, `timeout`, `busy`; with `Retry-After`)",
    ),
];

impl Modify for CommonAnswers {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.security_schemes.insert(
            API_KEY.to_owned(),
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("ick_<48 hex digits>")
                    .description(Some(
                        "An API key made by `ironclad apikey create` or on the desk's admin page; its tenant and role decide \
                         what the caller sees and may do.",
                    ))
                    .build(),
            ),
        );
        // A browser signed in at the desk calls the same routes with its session cookie; any
        // method but GET/HEAD/OPTIONS then needs the session's CSRF token in `X-CSRF-Token`.
        components.security_schemes.insert(
            DESK_SESSION.to_owned(),
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::ui::session::SESSION_COOKIE,
                "The desk's session cookie (sign in at /login; `ironclad_session` when the server runs \
                 with IRONCLAD_SECURE_COOKIES=false). Unsafe methods also need the session's CSRF \
                 token in the X-CSRF-Token header, else 403 csrf_refused.",
            ))),
        );
        for (_, name, description) in COMMON {
            let error = Content::new(Some(Ref::from_schema_name("ErrorBody")));
            components.responses.insert(
                name.to_owned(),
                ResponseBuilder::new()
                    .description(description)
                    .content("application/json", error)
                    .into(),
            );
        }
        for (path, item) in openapi.paths.paths.iter_mut() {
            let probe = matches!(path.as_str(), "/healthz" | "/readyz");
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                add_common(operation, probe);
            }
        }
    }
}

/// Adds the common answers `operation` does not describe itself.
fn add_common(operation: &mut Operation, probe: bool) {
    // No `security` of its own means the document's: the API key.
    let needs_key = operation
        .security
        .as_ref()
        .is_none_or(|s| !s.contains(&SecurityRequirement::default()));
    for (status, name, _) in COMMON {
        let applies = match status {
            "401" => needs_key,
            "429" => !probe,
            _ => true,
        };
        if applies {
            operation
                .responses
                .responses
                .entry(status.to_owned())
                .or_insert_with(|| RefOr::Ref(Ref::from_response_name(name)));
        }
    }
}
