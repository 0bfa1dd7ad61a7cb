//! `POST /v1/cases/{id}/corrections`: a reviewer corrects a value the documents were read as
//! — typed, or read from a box drawn on the page — and the case is decided again; and
//! `POST /v1/cases/{id}/corrections/preview`: what a text or a box reads as, before saving.
//! The work is in [`crate::actions::corrections`].

use crate::actions::corrections::{self, CorrectionInput, Given};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::responses::corrections::{CorrectionAnswer, CorrectionPreview};
use crate::responses::decisions::ProposalAnswer;
use crate::routes::decisions::{case_id, invalid_body, reply, required_key};
use crate::state::AppState;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use ironclad_core::page::BBox;
use ironclad_core::role::Role;
use serde::Deserialize;
use serde_json::json;

/// The correction routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/cases/{id}/corrections", post(correct))
        .route("/v1/cases/{id}/corrections/preview", post(preview))
}

/// A box drawn on a page: its page (0-based, as facts give it) and its corners in fractions
/// of the page (0 top-left, 1 bottom-right).
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BoxBody {
    /// The page of the document's file, counted from 0.
    #[schema(minimum = 0)]
    page: u32,
    /// Left edge.
    #[schema(minimum = 0, maximum = 1)]
    x0: f32,
    /// Top edge.
    #[schema(minimum = 0, maximum = 1)]
    y0: f32,
    /// Right edge.
    #[schema(minimum = 0, maximum = 1)]
    x1: f32,
    /// Bottom edge.
    #[schema(minimum = 0, maximum = 1)]
    y1: f32,
}

/// Body of `POST /v1/cases/{id}/corrections`: `value` or `box`, not both.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CorrectionBody {
    /// The document (a segment of the case's current reading).
    segment: uuid::Uuid,
    /// The field, as the workflow names it.
    #[schema(min_length = 1, max_length = 100)]
    field: String,
    /// The value as printed, read by the field's parser (422 `unparseable` with its message).
    #[serde(default)]
    #[schema(max_length = 1000)]
    value: Option<String>,
    /// Or: a box on the page, read by Ironclad, then by the field's parser.
    #[serde(default, rename = "box")]
    region: Option<BoxBody>,
    /// Why (shown with the value in the rule results and reports).
    #[schema(min_length = 1, max_length = 4000)]
    reason: String,
    /// The decision version the reviewer looked at (409 when a newer one exists).
    expected_decision_version: i32,
}

/// Body of `POST /v1/cases/{id}/corrections/preview`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PreviewBody {
    /// The document.
    segment: uuid::Uuid,
    /// The field.
    #[schema(min_length = 1, max_length = 100)]
    field: String,
    /// A text to read as the field's value.
    #[serde(default)]
    #[schema(max_length = 1000)]
    value: Option<String>,
    /// Or a box to read.
    #[serde(default, rename = "box")]
    region: Option<BoxBody>,
}

fn given(value: Option<String>, region: Option<BoxBody>) -> Result<Given, ApiError> {
    match (value, region) {
        (Some(text), None) => Ok(Given::Typed(text)),
        (None, Some(b)) => Ok(Given::Box {
            page: b.page,
            bbox: BBox {
                x0: b.x0,
                y0: b.y0,
                x1: b.x1,
                y1: b.y1,
            },
        }),
        _ => Err(ApiError::bad_request(
            "invalid_body",
            "give either value (as printed) or box (where it is printed), not both",
        )),
    }
}

/// `POST /v1/cases/{id}/corrections` (reviewer or admin).
#[utoipa::path(
    post,
    path = "/v1/cases/{id}/corrections",
    tag = "decisions",
    params(
        ("id" = uuid::Uuid, Path, description = "Case id"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "Required: a retried request is applied once and answered the same"),
    ),
    request_body = CorrectionBody,
    responses(
        (status = 201, description = "Corrected: the fact's next version is current and the case is decided again (version N+1, origin `correction`)", body = CorrectionAnswer),
        (status = 202, description = "The policy's `four_eyes` holds the correction for a second reviewer (AWAITING_SECOND)", body = ProposalAnswer),
        (status = 400, description = "A bad body or box, both or neither of value and box, or a missing or malformed `Idempotency-Key`", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not correct values", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 409, description = "The decision is not the current one or the case does not await review (`conflict`), another reviewer holds it (`claimed`), or the `Idempotency-Key` was used for another request", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = crate::openapi::ErrorBody),
        (status = 422, description = "The value does not parse (`unparseable`, with the parser's message), the box holds nothing (`nothing_read`), or the document or field is unknown", body = crate::openapi::ErrorBody),
    ),
)]
async fn correct(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
    body: Result<Json<CorrectionBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Reviewer, Role::Admin], "correct values")?;
    let case = case_id(id)?;
    let Json(body) = body.map_err(invalid_body)?;
    let key = required_key(&headers)?;
    let input = CorrectionInput {
        segment: body.segment,
        field: body.field,
        given: given(body.value, body.region)?,
        reason: body.reason,
        expected_decision_version: body.expected_decision_version,
    };
    let answer = corrections::correct(&state, &caller.0, &key, case.0, &input).await?;
    Ok(reply(answer))
}

/// `POST /v1/cases/{id}/corrections/preview` (reviewer or admin): what a text or a box reads
/// as — the text, the value the field's parser reads, or its message — saving nothing.
#[utoipa::path(
    post,
    path = "/v1/cases/{id}/corrections/preview",
    tag = "decisions",
    params(("id" = uuid::Uuid, Path, description = "Case id")),
    request_body = PreviewBody,
    responses(
        (status = 200, description = "What it reads as (`problem` is the parser's message when it does not parse)", body = CorrectionPreview),
        (status = 400, description = "A bad body or box, or both or neither of value and box", body = crate::openapi::ErrorBody),
        (status = 403, description = "The key's role may not correct values", body = crate::openapi::ErrorBody),
        (status = 404, description = "No such case for this tenant", body = crate::openapi::ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = crate::openapi::ErrorBody),
        (status = 422, description = "The document or field is unknown, or the page cannot be read", body = crate::openapi::ErrorBody),
    ),
)]
async fn preview(
    State(state): State<AppState>,
    caller: Caller,
    id: Result<Path<String>, PathRejection>,
    body: Result<Json<PreviewBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Reviewer, Role::Admin], "correct values")?;
    let case = case_id(id)?;
    let Json(body) = body.map_err(invalid_body)?;
    let given = given(body.value, body.region)?;
    let read =
        corrections::preview(&state, &caller.0, case.0, body.segment, &body.field, &given).await?;
    // Sent as a JSON value, as it always was: its f32s (box, confidence) are written widened
    // to f64 digits (0.1 as 0.10000000149011612), not shortened.
    Ok(Json(json!(CorrectionPreview::from(&read))).into_response())
}
