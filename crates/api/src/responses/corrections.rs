//! A correction applied, and what a text or a box reads as before it is saved.

use crate::actions::corrections::ValueRead;
use crate::responses::decisions::WrittenDecision;
use ironclad_store::corrections::Corrected;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// A correction applied (`POST /v1/cases/{id}/corrections`, or a second reviewer's CONFIRM).
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectionAnswer {
    /// Always `APPLIED`.
    pub status: String,
    /// The correction (its record keeps the old value and its evidence).
    pub correction_id: Uuid,
    /// The case.
    pub case_id: Uuid,
    /// The document.
    pub segment_id: Uuid,
    /// The field.
    pub field: String,
    /// The fact version now current.
    pub fact_version: i32,
    /// Who corrected it, as people read it.
    pub corrected_by: String,
    /// The decision written: version N+1, origin `correction`.
    pub decision: WrittenDecision,
}

impl From<&Corrected> for CorrectionAnswer {
    fn from(c: &Corrected) -> Self {
        Self {
            status: "APPLIED".to_owned(),
            correction_id: c.correction_id,
            case_id: c.case_id,
            segment_id: c.segment_id,
            field: c.field.clone(),
            fact_version: c.fact_version,
            corrected_by: c.corrected_by.clone(),
            decision: (&c.decision).into(),
        }
    }
}

/// What a text or a box reads as (`POST /v1/cases/{id}/corrections/preview`).
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectionPreview {
    /// The text: as typed, or the words read in the box.
    pub text: String,
    /// The value the field's parser read (`{"kind", "value"}`); `null` when it did not parse.
    #[schema(value_type = Object, nullable)]
    pub value: Value,
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

impl From<&ValueRead> for CorrectionPreview {
    fn from(read: &ValueRead) -> Self {
        let (value, shown, problem) = match &read.parsed {
            Ok(p) => {
                let value = serde_json::to_value(&p.value).unwrap_or(Value::Null);
                let shown = crate::ui::case::wording::shown(&value);
                (value, Some(shown), None)
            }
            Err(message) => (Value::Null, None, Some(message.clone())),
        };
        Self {
            text: read.text.clone(),
            value,
            shown,
            kind: read.kind.clone(),
            problem,
            page: read.page,
            region: read.bbox.map(|b| BoxView {
                x0: b.x0,
                y0: b.y0,
                x1: b.x1,
                y1: b.y1,
            }),
            confidence: read.confidence,
        }
    }
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
