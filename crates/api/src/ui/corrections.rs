//! Correcting a value on the case page: each field has a Correct link that opens the
//! correction form for it — type the value, or draw a box on the page and see what Ironclad
//! reads there (`assets/ui/review.js` calls the preview route) — with a reason. Saving decides
//! the case again and shows the new decision. Without script the link opens the same form,
//! for a typed value.

use crate::actions::corrections::{correct, CorrectionInput, Given};
use crate::actions::{form_key, Failure};
use crate::error::ApiError;
use crate::state::AppState;
use crate::ui::case::{answer_with, load, DocumentItem, Typed};
use crate::ui::page::{render, DeskError, DeskForm};
use crate::ui::session::DeskUser;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ironclad_core::page::BBox;
use ironclad_core::role::Role;
use ironclad_core::CaseId;
use serde::Deserialize;
use uuid::Uuid;

/// The correction form of a case page.
#[derive(Debug, Clone, Default)]
pub(crate) struct CorrectionPanel {
    /// Shown open (a Correct link followed, or a refused correction shown again).
    pub open: bool,
    /// The document and field (empty until a field is chosen).
    pub segment: String,
    /// The field.
    pub field: String,
    /// "commercial_invoice — invoice_number", for the form's heading.
    pub label: String,
    /// The value now.
    pub current: String,
    /// What the reviewer typed (kept when refused).
    pub value: String,
    /// Why (kept when refused).
    pub reason: String,
    /// A box drawn (kept when refused): page and corners.
    pub page: String,
    /// The box's corners, `x0,y0,x1,y1`.
    pub bbox: String,
    /// Why it was refused.
    pub problem: Option<String>,
    /// The form's own `Idempotency-Key`.
    pub key: String,
}

impl CorrectionPanel {
    /// A closed panel with a fresh key.
    pub(crate) fn new() -> Self {
        Self {
            key: Uuid::new_v4().to_string(),
            ..Self::default()
        }
    }

    /// Opens the panel for `field` of document `segment`, when the page shows it.
    pub(crate) fn open_for(&mut self, documents: &[DocumentItem], segment: &str, field: &str) {
        let found = documents.iter().find_map(|d| {
            d.facts
                .iter()
                .find(|f| f.segment == segment && f.field == field)
                .map(|f| (d, f))
        });
        if let Some((document, fact)) = found {
            self.open = true;
            self.segment = fact.segment.clone();
            self.field = fact.field.clone();
            self.label = format!("{} — {}", document.kind, fact.field);
            self.current = fact.value.clone().unwrap_or_default();
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct CorrectionForm {
    #[serde(default)]
    csrf: String,
    segment: String,
    field: String,
    #[serde(default)]
    value: String,
    /// A drawn box: its page (0-based) and `x0,y0,x1,y1`, set by the page's script.
    #[serde(default)]
    page: String,
    #[serde(default)]
    bbox: String,
    #[serde(default)]
    reason: String,
    expected_decision_version: i32,
    #[serde(default)]
    idempotency_key: String,
    /// The last audit event of the page the form was on.
    #[serde(default)]
    seen_event: Option<i64>,
}

impl CorrectionForm {
    /// A drawn box wins over a typed value (the form keeps both inputs).
    fn given(&self) -> Result<Given, ApiError> {
        if self.bbox.trim().is_empty() {
            return Ok(Given::Typed(self.value.clone()));
        }
        let bad = || {
            ApiError::bad_request(
                "invalid_box",
                "the box drawn could not be read; draw it again",
            )
        };
        let corners: Vec<f32> = self
            .bbox
            .split(',')
            .map(|v| v.trim().parse::<f32>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        let [x0, y0, x1, y1] = corners[..] else {
            return Err(bad());
        };
        Ok(Given::Box {
            page: self.page.trim().parse().map_err(|_| bad())?,
            bbox: BBox { x0, y0, x1, y1 },
        })
    }
}

/// `POST /cases/{id}/corrections` (reviewers and admins).
pub(crate) async fn save(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<CorrectionForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    user.require(&[Role::Reviewer, Role::Admin], "correct values")?;
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let segment: Uuid = form
        .segment
        .parse()
        .map_err(|_| ApiError::bad_request("invalid_form", "choose a field to correct"))?;
    let key = form_key(&form.idempotency_key)?;
    let outcome = match form.given() {
        Ok(given) => {
            let input = CorrectionInput {
                segment,
                field: form.field.clone(),
                given,
                reason: form.reason.clone(),
                expected_decision_version: form.expected_decision_version,
            };
            correct(&state, &user.0.principal, &key, case.0, &input).await
        }
        Err(e) => Err(Failure::Api(e)),
    };
    match outcome {
        Ok(answer) => {
            let done = if answer.status == 202 {
                "correction-proposed"
            } else {
                "correction"
            };
            Ok(Redirect::to(&format!("/cases/{}?done={done}", case.0)).into_response())
        }
        Err(Failure::Action(e)) => {
            answer_with(&state, &user, &id, form.seen_event, Typed::Desk, e).await
        }
        // What the reviewer typed or drew was refused: the form again, as they left it,
        // with the reason beside it.
        Err(Failure::Api(ApiError::Client {
            status, message, ..
        })) if status != StatusCode::FORBIDDEN && status != StatusCode::NOT_FOUND => {
            let mut page = load(&state, &user, &id).await?;
            page.correction
                .open_for(&page.documents, &form.segment, &form.field);
            page.correction.value = form.value;
            page.correction.reason = form.reason;
            page.correction.page = form.page;
            page.correction.bbox = form.bbox;
            page.correction.problem = Some(message);
            page.correction.key = key;
            Ok(render(status, &page))
        }
        Err(Failure::Api(e)) => Err(e.into()),
    }
}
