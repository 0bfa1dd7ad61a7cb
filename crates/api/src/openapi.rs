//! The API described as OpenAPI 3.1, served at `GET /openapi.json` (no key needed).
//!
//! The document is derived from the code: each handler carries a `#[utoipa::path]` with its
//! parameters, body and the errors it can answer, and the types it shows derive
//! `utoipa::ToSchema` (the store's rows through its `openapi` feature). What every route can
//! answer — 401 without a key, 429, 500, 503 — is added here once, by [`CommonAnswers`],
//! rather than repeated on every handler. `tests/api/openapi.rs` keeps the document and the
//! router in step, and `scripts/schemathesis` checks the answers against it.
//!
//! The few answers built with `json!` in their handler are described by the schema-only
//! types below; the schemathesis run is what catches one of them drifting.

use crate::state::AppState;
use axum::routing::get;
use axum::{Json, Router};
use ironclad_store::decisions::WrittenDecision;
use ironclad_store::reviews::ReviewRow;
use ironclad_store::rulesets::RulesetRow;
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

/// A page of the review queue.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewPage {
    /// Oldest first.
    pub reviews: Vec<ReviewRow>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// A resolved review (`POST /v1/cases/{id}/reviews`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewAnswer {
    /// The review.
    pub review_id: uuid::Uuid,
    /// The case, now RESOLVED.
    pub case_id: uuid::Uuid,
    /// Always `RESOLVED`.
    pub status: String,
    /// How it was resolved.
    pub resolution: ironclad_core::review::Resolution,
    /// The decision version resolved.
    pub decision_version: i32,
    /// Who resolved it (who proposed it, under four eyes).
    pub actor: String,
    /// The second reviewer who confirmed it, under the policy's `four_eyes`.
    pub confirmed_by: Option<String>,
    /// When.
    pub resolved_at: chrono::DateTime<chrono::Utc>,
    /// How long the decision waited for a person.
    pub waited_seconds: f64,
}

/// An action held for a second reviewer (202 `AWAITING_SECOND`), or a proposal a second
/// reviewer declined (the review `PENDING` again).
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposalAnswer {
    /// The review.
    pub review_id: uuid::Uuid,
    /// The case.
    pub case_id: uuid::Uuid,
    /// `AWAITING_SECOND`, or `PENDING` once declined.
    pub status: ironclad_core::review::ReviewStatus,
    /// The decision version it is about.
    pub decision_version: i32,
    /// What was proposed.
    pub proposed: ProposedView,
}

/// What a reviewer proposed under four eyes.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProposedView {
    /// APPROVE, OVERRIDE, REJECT or CORRECTION.
    pub action: ironclad_core::review::FourEyesAction,
    /// The resolution it records (resolutions only).
    pub resolution: Option<ironclad_core::review::Resolution>,
    /// The proposer's comment (or the correction's reason).
    pub comment: Option<String>,
    /// The correction it applies (corrections only).
    pub correction_id: Option<uuid::Uuid>,
    /// Who proposed it.
    pub by: String,
    /// Their name, as people read it.
    pub by_name: String,
    /// When.
    pub at: chrono::DateTime<chrono::Utc>,
}

/// A second reviewer's answer: the case resolved, or the proposal declined.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SecondAnswer {
    /// A resolution confirmed.
    Resolved(ReviewAnswer),
    /// The proposal declined.
    Declined(ProposalAnswer),
}

/// A correction applied (`POST /v1/cases/{id}/corrections`, or a second reviewer's CONFIRM).
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectionAnswer {
    /// Always `APPLIED`.
    pub status: String,
    /// The correction (its record keeps the old value and its evidence).
    pub correction_id: uuid::Uuid,
    /// The case.
    pub case_id: uuid::Uuid,
    /// The document.
    pub segment_id: uuid::Uuid,
    /// The field.
    pub field: String,
    /// The fact version now current.
    pub fact_version: i32,
    /// Who corrected it, as people read it.
    pub corrected_by: String,
    /// The decision written: version N+1, origin `correction`.
    pub decision: WrittenDecision,
}

/// What a text or a box reads as (`POST /v1/cases/{id}/corrections/preview`).
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectionPreview {
    /// The text: as typed, or the words read in the box.
    pub text: String,
    /// The value the field's parser read (`{"kind", "value"}`); `null` when it did not parse.
    #[schema(value_type = Object, nullable)]
    pub value: serde_json::Value,
    /// The value as the desk shows it.
    pub shown: Option<String>,
    /// The field's parser (`text`, `money`, `date`, …).
    pub kind: Option<String>,
    /// The parser's message when the text does not parse.
    pub problem: Option<String>,
    /// The box's page (0-based), for a box.
    pub page: Option<u32>,
    /// The box, for a box.
    #[serde(rename = "box")]
    pub region: Option<BoxView>,
    /// How sure the reading is (its least sure word), for a box.
    pub confidence: Option<f32>,
}

/// A box on a page, in fractions of the page.
#[derive(Debug, Serialize, ToSchema)]
pub struct BoxView {
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
}

/// A claim on a case's review.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClaimAnswer {
    /// The case.
    pub case_id: uuid::Uuid,
    /// Who holds it.
    pub holder: String,
    /// Their name, as people read it.
    pub holder_name: String,
    /// Since when.
    pub claimed_at: chrono::DateTime<chrono::Utc>,
    /// Until when, unless renewed.
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// Whether the caller holds it.
    pub yours: bool,
    /// What this call did.
    pub change: ironclad_store::claims::ClaimChange,
}

/// Whether a claim was released.
#[derive(Debug, Serialize, ToSchema)]
pub struct Released {
    /// The case.
    pub case_id: uuid::Uuid,
    /// False when no claim was live.
    pub released: bool,
}

/// A new decision version (`POST /v1/cases/{id}/reevaluate`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Reevaluated {
    /// The case.
    pub case_id: uuid::Uuid,
    /// The decision written.
    pub decision: WrittenDecision,
}

/// One ruleset (`GET /v1/rulesets/{id}`, activation).
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetOne {
    /// The ruleset.
    pub ruleset: RulesetRow,
}

/// The tenant's rulesets.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetList {
    /// Newest version first.
    pub rulesets: Vec<RulesetRow>,
}

/// A new DRAFT and whether it is valid against its workflow.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetCreated {
    /// The DRAFT stored.
    pub ruleset: RulesetRow,
    /// Its validation.
    pub validation: Validation,
}

/// Whether a ruleset is valid against its workflow's latest version.
#[derive(Debug, Serialize, ToSchema)]
pub struct Validation {
    /// True when it can be activated.
    pub valid: bool,
    /// How many rules it has (valid rulesets only).
    #[schema(required = false)]
    pub rules: Option<u32>,
    /// Every problem found.
    pub issues: Vec<RuleIssueView>,
}

/// One problem of a ruleset.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleIssueView {
    /// Where in the spec.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// What changed between two rulesets.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetDiff {
    /// The ruleset asked about.
    pub ruleset: RulesetVersion,
    /// What it is compared with; `null` when there is nothing before it.
    pub against: Option<RulesetVersion>,
    /// The rules added, removed and changed.
    #[schema(value_type = Object)]
    pub diff: serde_json::Value,
}

/// A ruleset named by id and version.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetVersion {
    /// Id.
    pub id: uuid::Uuid,
    /// Version.
    pub version: i32,
    /// DRAFT, ACTIVE or RETIRED (only for the ruleset compared with).
    #[schema(required = false)]
    pub status: Option<String>,
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
