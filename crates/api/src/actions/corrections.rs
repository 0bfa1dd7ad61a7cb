//! Correcting a value: a reviewer types it, or draws a box on the page and Ironclad reads the
//! box; either way the text goes through the field's own parser (refused with the parser's
//! message), the store writes the fact's next version and decides the case again as version
//! N+1 under the rules of version N (see `ironclad_store::corrections`).
//!
//! A box on a page read from its text layer takes the text layer's words inside it (exact,
//! and instant); a box on a scanned page, or on a text layer with nothing there, is read by
//! the second look's crop reader ([`RegionReader`](ironclad_documents::regions::RegionReader)).
//! [`preview`] shows what a box or a text reads as before anything is saved.

use crate::actions::{action_key, required_reason, Failure};
use crate::error::ApiError;
use crate::responses::corrections::CorrectionAnswer;
use crate::responses::decisions::ProposalAnswer;
use crate::state::AppState;
use axum::http::StatusCode;
use ironclad_core::page::{BBox, Word};
use ironclad_core::parse::Parsed;
use ironclad_core::review::ReviewStatus;
use ironclad_core::rules::{CompiledRuleset, RulesetSpec, Schema};
use ironclad_core::CaseId;
use ironclad_documents::regions::{Region, RegionError};
use ironclad_documents::workflows::CompiledWorkflow;
use ironclad_runtime::workflows::PinError;
use ironclad_store::corrections::{
    CorrectionMethod, CorrectionOutcome, CorrectionRequest, CorrectionTarget, NewValue,
    TargetDocument,
};
use ironclad_store::decisions::RulesApplied;
use ironclad_store::replay::ActionAnswer;
use ironclad_store::tenants::Principal;
use serde_json::{json, Value};
use std::sync::Arc;
use uuid::Uuid;

/// Longest field name accepted (workflow field names are short identifiers).
const MAX_FIELD_CHARS: usize = 100;
/// Longest typed value accepted.
const MAX_VALUE_CHARS: usize = 1000;
/// Smallest box, in page fractions: a dragged click is not a box.
const MIN_BOX_SIDE: f32 = 0.003;
/// The height of a line of body text when a page gives no words to measure (10 pt on A4).
const DEFAULT_LINE_HEIGHT: f32 = 0.012;

/// The new value as the reviewer gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Given {
    /// Typed.
    Typed(String),
    /// A box drawn on page `page` (0-based) of the document's file.
    Box {
        /// The page.
        page: u32,
        /// Where, in page fractions.
        bbox: BBox,
    },
}

impl Given {
    fn json(&self) -> Value {
        match self {
            Self::Typed(text) => json!({ "value": text }),
            Self::Box { page, bbox } => json!({ "box": {
                "page": page, "x0": bbox.x0, "y0": bbox.y0, "x1": bbox.x1, "y1": bbox.y1,
            }}),
        }
    }
}

/// A correction as asked for (the API's body, or the desk's form).
#[derive(Debug, Clone)]
pub(crate) struct CorrectionInput {
    /// The document.
    pub segment: Uuid,
    /// The field.
    pub field: String,
    /// The new value.
    pub given: Given,
    /// Why.
    pub reason: String,
    /// The decision version the reviewer looked at.
    pub expected_decision_version: i32,
}

/// What a text or a box reads as.
#[derive(Debug, Clone)]
pub(crate) struct ValueRead {
    /// The text: as typed, or the words read in the box.
    pub text: String,
    /// The value the field's parser read, or its message.
    pub parsed: Result<Parsed, String>,
    /// The field's parser.
    pub kind: Option<String>,
    /// The box's page and the box, for a box.
    pub page: Option<u32>,
    /// The box.
    pub bbox: Option<BBox>,
    /// The reading's confidence (the least sure word), for a box.
    pub confidence: Option<f32>,
}

/// The rules of a decision, compiled again from its frozen snapshot against the case's
/// workflow: a correction decides version N+1 under the rules that decided version N.
pub(crate) struct DecisionRules {
    ruleset: CompiledRuleset,
    managed: Option<(Uuid, i32)>,
}

impl DecisionRules {
    /// As the store applies them (recorded on the decision as they were on version N).
    pub(crate) fn applied(&self) -> RulesApplied<'_> {
        RulesApplied::new(&self.ruleset, self.managed)
    }
}

/// The case's workflow, compiled (`None` for a case read under none): the version it is
/// pinned to, as the worker that decided it resolved it.
async fn case_workflow(
    state: &AppState,
    tenant: Uuid,
    case: Uuid,
) -> Result<Option<Arc<CompiledWorkflow>>, ApiError> {
    let context = state
        .store
        .decision_context(case, Some(tenant))
        .await?
        .ok_or_else(ApiError::not_found)?;
    match state
        .workflows()
        .for_case(
            CaseId(case),
            context.workflow.as_deref(),
            context.workflow_id,
        )
        .await
    {
        Ok(loaded) => Ok(loaded.map(|l| l.workflow)),
        Err(PinError::Store(e)) => Err(e.into()),
        Err(PinError::Unusable(problem)) => Err(ApiError::Internal(format!(
            "the case's workflow cannot be used: {problem}"
        ))),
    }
}

/// Compiles a decision snapshot's `rules` (`{source, ruleset_id, ruleset_version, policy,
/// rules}`) against `schema`.
fn snapshot_rules(rules: &Value, schema: &Schema) -> Result<DecisionRules, ApiError> {
    let ruleset = RulesetSpec::compile_json(rules.get("rules"), rules.get("policy"), schema)
        .map_err(|issues| {
            ApiError::client(
                StatusCode::CONFLICT,
                "rules_changed",
                "the rules of the decision under review no longer fit the case's workflow; \
                 reevaluate the case, then correct it",
            )
            .with_details(
                json!({ "issues": issues.iter().map(ToString::to_string).collect::<Vec<_>>() }),
            )
        })?;
    let managed = match (
        rules.get("source").and_then(Value::as_str),
        rules
            .get("ruleset_id")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok()),
        rules
            .get("ruleset_version")
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok()),
    ) {
        (Some("ruleset"), Some(id), Some(version)) => Some((id, version)),
        _ => None,
    };
    Ok(DecisionRules { ruleset, managed })
}

/// The rules of the case's latest decision (for a second reviewer confirming a correction).
pub(crate) async fn latest_rules(
    state: &AppState,
    tenant: Uuid,
    case: Uuid,
) -> Result<DecisionRules, ApiError> {
    let target = state
        .store
        .correction_target(tenant, case, None)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let workflow = case_workflow(state, tenant, case).await?;
    let schema = workflow
        .as_ref()
        .map(|w| w.schema().clone())
        .unwrap_or_default();
    snapshot_rules(
        target.decision_rules.as_ref().unwrap_or(&json!({})),
        &schema,
    )
}

fn unprocessable(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::client(StatusCode::UNPROCESSABLE_ENTITY, code, message)
}

/// The field a correction is about: its case, document and workflow.
struct FieldTarget<'f> {
    tenant: Uuid,
    case: Uuid,
    target: CorrectionTarget,
    document: TargetDocument,
    doc_type: String,
    workflow: Arc<CompiledWorkflow>,
    field: &'f str,
}

/// The document and the workflow a correction of `segment`'s `field` is read against:
/// 404 unknown case, 422 unknown document, an unrecognized one, or a field its type lacks.
async fn document_of<'f>(
    state: &AppState,
    tenant: Uuid,
    case: Uuid,
    segment: Uuid,
    field: &'f str,
) -> Result<FieldTarget<'f>, ApiError> {
    if field.trim().is_empty() || field.chars().count() > MAX_FIELD_CHARS || field.contains('\0') {
        return Err(ApiError::bad_request(
            "invalid_body",
            format!("field must name a field of the document (1 to {MAX_FIELD_CHARS} characters)"),
        ));
    }
    let target = state
        .store
        .correction_target(tenant, case, Some(segment))
        .await?
        .ok_or_else(ApiError::not_found)?;
    let document = target.document.clone().ok_or_else(|| {
        unprocessable(
            "unknown_segment",
            format!("{segment} is not a document of this case's current reading"),
        )
        .with_details(json!({ "segment": segment }))
    })?;
    let doc_type = document.doc_type.clone().ok_or_else(|| {
        unprocessable(
            "unknown_document_type",
            "these pages were not recognized as any document type, so they have no fields",
        )
    })?;
    let workflow = case_workflow(state, tenant, case).await?.ok_or_else(|| {
        unprocessable(
            "unknown_field",
            "the case was read under no workflow, so no field can be corrected",
        )
    })?;
    let fields = workflow.schema().document_types.get(&doc_type);
    if !fields.is_some_and(|f| f.contains_key(field)) {
        let known: Vec<&String> = fields.map(|f| f.keys().collect()).unwrap_or_default();
        return Err(unprocessable(
            "unknown_field",
            format!("a {doc_type} has no field {field:?}"),
        )
        .with_details(json!({ "document_type": doc_type, "fields": known })));
    }
    Ok(FieldTarget {
        tenant,
        case,
        target,
        document,
        doc_type,
        workflow,
        field,
    })
}

/// Words whose middle lies in `bbox`, in reading order, as one line of text.
fn words_in(words: &[Word], bbox: &BBox) -> (String, Option<f32>) {
    let mut inside: Vec<&Word> = words
        .iter()
        .filter(|w| {
            let (cx, cy) = ((w.bbox.x0 + w.bbox.x1) / 2.0, (w.bbox.y0 + w.bbox.y1) / 2.0);
            cx >= bbox.x0 && cx <= bbox.x1 && cy >= bbox.y0 && cy <= bbox.y1
        })
        .collect();
    inside.sort_by(|a, b| a.line.cmp(&b.line).then(a.bbox.x0.total_cmp(&b.bbox.x0)));
    let text = inside
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let confidence = inside.iter().map(|w| w.confidence).reduce(f32::min);
    (text, confidence)
}

/// The median height of a page's words (what a crop of it is scaled by).
fn line_height(words: &[Word]) -> f32 {
    let mut heights: Vec<f32> = words
        .iter()
        .map(|w| w.bbox.y1 - w.bbox.y0)
        .filter(|h| h.is_finite() && *h > 0.0)
        .collect();
    if heights.is_empty() {
        return DEFAULT_LINE_HEIGHT;
    }
    heights.sort_by(f32::total_cmp);
    heights[heights.len() / 2]
}

/// A box the API accepts: inside the page, wider and taller than a click.
fn checked_box(bbox: BBox) -> Result<BBox, ApiError> {
    let ok = |v: f32| v.is_finite() && (0.0..=1.0).contains(&v);
    if !(ok(bbox.x0) && ok(bbox.y0) && ok(bbox.x1) && ok(bbox.y1))
        || bbox.x1 - bbox.x0 < MIN_BOX_SIDE
        || bbox.y1 - bbox.y0 < MIN_BOX_SIDE
    {
        return Err(ApiError::bad_request(
            "invalid_box",
            "box needs 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1 (fractions of the page), \
             larger than a click",
        ));
    }
    Ok(bbox)
}

/// Reads the words printed in `bbox` on `page` of the document's file.
async fn read_box(
    state: &AppState,
    tenant: Uuid,
    case: Uuid,
    document: &TargetDocument,
    page: u32,
    bbox: BBox,
) -> Result<(String, Option<f32>), ApiError> {
    let bbox = checked_box(bbox)?;
    let index = i32::try_from(page).unwrap_or(i32::MAX);
    if index < document.first_page || index > document.last_page {
        return Err(ApiError::bad_request(
            "invalid_box",
            format!(
                "page {page} is not a page of this document (pages {} to {}, counted from 0)",
                document.first_page, document.last_page
            ),
        ));
    }
    let reading = state
        .store
        .page_reading(
            ironclad_core::TenantId(tenant),
            CaseId(case),
            document.source_id,
            index,
        )
        .await?
        .ok_or_else(ApiError::not_found)?;
    let words: Vec<Word> = serde_json::from_value(reading.words.clone()).unwrap_or_default();
    if reading.method.as_deref() == Some("text_layer") {
        let (text, confidence) = words_in(&words, &bbox);
        if !text.trim().is_empty() {
            return Ok((text, confidence));
        }
    }
    // A scanned page (or a text layer with nothing there): the crop reader reads the pixels.
    let media = reading
        .media_type
        .parse()
        .map_err(|_| ApiError::Internal(format!("stored media type {}", reading.media_type)))?;
    let path = state.blobs.local_path(&reading.blob_key).await?;
    let region = Region {
        page,
        page_count: u32::try_from(reading.pages).unwrap_or(0),
        rotation: u16::try_from(reading.rotation.rem_euclid(360)).unwrap_or(0),
        bbox,
        line_height: line_height(&words),
    };
    let reader = state.regions.clone();
    let read = tokio::task::spawn_blocking(move || reader.read_region(&path, media, &region))
        .await
        .map_err(|e| ApiError::Internal(format!("reading a box crashed: {e}")))?
        .map_err(|e| match e {
            RegionError::Unreadable(m) => {
                unprocessable("page_unreadable", format!("this page cannot be read: {m}"))
            }
            RegionError::Unavailable(m) => ApiError::Internal(format!("reading a box: {m}")),
        })?;
    let (text, confidence) = words_in(
        &read,
        &BBox {
            x0: 0.0,
            y0: 0.0,
            x1: 1.0,
            y1: 1.0,
        },
    );
    Ok((text, confidence))
}

/// What `given` reads as for `field` of the document: the text (typed, or read in the box)
/// through the field's parser.
async fn read_given(
    state: &AppState,
    at: &FieldTarget<'_>,
    given: &Given,
) -> Result<ValueRead, ApiError> {
    let (doc_type, workflow, field) = (at.doc_type.as_str(), &at.workflow, at.field);
    let (text, page, bbox, confidence) = match given {
        Given::Typed(text) => {
            if text.chars().count() > MAX_VALUE_CHARS || text.contains('\0') {
                return Err(ApiError::bad_request(
                    "invalid_body",
                    format!("value must be at most {MAX_VALUE_CHARS} characters, without U+0000"),
                ));
            }
            (text.trim().to_owned(), None, None, None)
        }
        Given::Box { page, bbox } => {
            let (text, confidence) =
                read_box(state, at.tenant, at.case, &at.document, *page, *bbox).await?;
            (text, Some(*page), Some(*bbox), confidence)
        }
    };
    let kind = workflow
        .schema()
        .document_types
        .get(doc_type)
        .and_then(|f| f.get(field))
        .map(|k| k.as_str().to_owned());
    let parsed = match state.compiler.read_field(workflow, doc_type, field, &text) {
        None => Err(format!("a {doc_type} has no field {field:?}")),
        Some(Ok(parsed)) => Ok(parsed),
        Some(Err(e)) => Err(e.to_string()),
    };
    Ok(ValueRead {
        text,
        parsed,
        kind,
        page,
        bbox,
        confidence,
    })
}

/// What `given` would be read as, before anything is saved (reviewers and admins).
pub(crate) async fn preview(
    state: &AppState,
    who: &Principal,
    case: Uuid,
    segment: Uuid,
    field: &str,
    given: &Given,
) -> Result<ValueRead, ApiError> {
    let at = document_of(state, who.tenant_id.0, case, segment, field).await?;
    read_given(state, &at, given).await
}

/// Corrects a field (see the module doc): the one path the API and the desk share. `key` is
/// the request's `Idempotency-Key` (or the desk form's own): a replay gets the first answer,
/// however the case moved on since.
pub(crate) async fn correct(
    state: &AppState,
    who: &Principal,
    key: &str,
    case: Uuid,
    input: &CorrectionInput,
) -> Result<ActionAnswer, Failure> {
    let tenant = who.tenant_id.0;
    let request = json!({
        "segment": input.segment, "field": input.field, "given": input.given.json(),
        "reason": input.reason.trim(), "expected_decision_version": input.expected_decision_version,
    });
    let key = action_key(who, "correction", key, case, &request);
    if let Some(answer) = state.store.earlier_answer(&key).await? {
        return Ok(answer);
    }
    required_reason(
        "reason",
        &input.reason,
        "say why the value is corrected (it is shown with the value)",
    )?;
    let at = document_of(state, tenant, case, input.segment, &input.field).await?;
    let target = &at.target;
    if target.case_status != "AWAITING_REVIEW" {
        return Err(Failure::Action(
            ironclad_store::replay::ActionError::Conflict {
                message: format!(
                    "only a case awaiting review can be corrected; this one is {}",
                    target.case_status
                ),
                current: json!({ "status": target.case_status }),
            },
        ));
    }
    if target.decision_version != Some(input.expected_decision_version) {
        // Stale already: say so before reading a box (the store checks again under the lock).
        return Err(Failure::Action(
            ironclad_store::replay::ActionError::Conflict {
                message: format!(
                    "decision version {} is not the current one ({}); look at the newer decision",
                    input.expected_decision_version,
                    target.decision_version.unwrap_or_default()
                ),
                current: target.current_decision.clone(),
            },
        ));
    }
    let read = read_given(state, &at, &input.given).await?;
    let parsed = read.parsed.map_err(|message| {
        if read.text.is_empty() && matches!(input.given, Given::Box { .. }) {
            unprocessable(
                "nothing_read",
                "nothing could be read in that box; draw it around the printed value",
            )
        } else {
            unprocessable("unparseable", message).with_details(json!({
                "field": input.field, "kind": read.kind, "text": read.text,
            }))
        }
    })?;
    let rules = snapshot_rules(
        target.decision_rules.as_ref().unwrap_or(&json!({})),
        at.workflow.schema(),
    )?;
    let req = CorrectionRequest {
        case,
        segment: input.segment,
        field: input.field.clone(),
        new: NewValue {
            value: serde_json::to_value(&parsed.value)
                .map_err(|e| ApiError::Internal(format!("a parsed value: {e}")))?,
            raw_text: read.text.clone(),
            page: read.page.and_then(|p| i32::try_from(p).ok()),
            bbox: read.bbox.map(|b| json!(b)),
        },
        method: match input.given {
            Given::Typed(_) => CorrectionMethod::Typed,
            Given::Box { .. } => CorrectionMethod::Box,
        },
        reason: input.reason.trim().to_owned(),
        expected_decision_version: input.expected_decision_version,
        actor: who.actor(),
        actor_role: who.role.as_str().to_owned(),
    };
    let applied = rules.applied();
    Ok(state
        .store
        .correct_fact(&key, &req, &applied, |outcome| match outcome {
            CorrectionOutcome::Applied(c) => json!(CorrectionAnswer::from(c)),
            CorrectionOutcome::AwaitingSecond(p) => {
                json!(ProposalAnswer::new(p, ReviewStatus::AwaitingSecond))
            }
        })
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, line: u32, x0: f32, y0: f32) -> Word {
        Word {
            text: text.into(),
            bbox: BBox {
                x0,
                y0,
                x1: x0 + 0.05,
                y1: y0 + 0.02,
            },
            confidence: 0.9,
            line,
        }
    }

    #[test]
    fn a_box_takes_the_words_whose_middle_it_holds_in_reading_order() {
        let words = [
            word("No.", 0, 0.10, 0.10),
            word("MSCU", 0, 0.30, 0.10),
            word("1234566", 0, 0.36, 0.10),
            word("Total", 1, 0.10, 0.20),
        ];
        let bbox = BBox {
            x0: 0.28,
            y0: 0.09,
            x1: 0.5,
            y1: 0.13,
        };
        assert_eq!(words_in(&words, &bbox), ("MSCU 1234566".into(), Some(0.9)));
        assert_eq!(words_in(&[], &bbox), (String::new(), None));
        assert!((line_height(&words) - 0.02).abs() < 1e-6);
        assert_eq!(line_height(&[]), DEFAULT_LINE_HEIGHT);
    }

    #[test]
    fn boxes_are_inside_the_page_and_more_than_a_click() {
        let b = |x0, y0, x1, y1| BBox { x0, y0, x1, y1 };
        assert!(checked_box(b(0.1, 0.1, 0.3, 0.12)).is_ok());
        for bad in [
            b(0.3, 0.1, 0.1, 0.12),
            b(0.1, 0.1, 0.1005, 0.12),
            b(-0.1, 0.1, 0.3, 0.12),
            b(0.1, 0.1, 1.3, 0.12),
            b(0.1, f32::NAN, 0.3, 0.12),
        ] {
            assert!(checked_box(bad).is_err(), "{bad:?}");
        }
    }
}
