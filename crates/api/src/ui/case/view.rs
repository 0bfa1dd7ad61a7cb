//! The case page's content, built from what the store holds: the decision with every rule
//! result (its values side by side, the ones that disagree marked apart), every page with its
//! evidence boxes, the extracted fields, the timeline and earlier resolutions, by people's
//! and files' names.

use super::history::{earlier_resolutions, EarlierResolution};
use super::wording::{disagreeing, name_files, shown, NamedDocument};
use crate::ui::cases::when;
use crate::ui::claims::ReviewDesk;
use crate::ui::corrections::CorrectionPanel;
use crate::ui::page::Chrome;
use crate::ui::people::People;
use crate::ui::session::DeskUser;
use askama::Template;
use ironclad_core::page::BBox;
use ironclad_core::role::Role;
use ironclad_core::rules::ComparedValue;
use ironclad_core::CaseStatus;
use ironclad_store::read::{AuditView, CaseDetail, FactView};
use ironclad_store::reprocess::may_reprocess;
use serde_json::Value;
use std::collections::HashMap;
use uuid::Uuid;

/// Space left around a rule's box, in thousandths of the page: its thin outline is drawn
/// beside the printed value, not over it.
const RULE_BOX_MARGIN: u32 = 4;

/// One box over a page, in thousandths of the page's width and height.
pub(crate) struct Overlay {
    pub class: &'static str,
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
    pub label: String,
    pub rule: Option<String>,
    pub fact: Option<String>,
}

impl Overlay {
    fn new(bbox: &BBox, class: &'static str, label: String, margin: u32) -> Option<Self> {
        let ok = |v: f32| v.is_finite() && (0.0..=1.0).contains(&v);
        if !(ok(bbox.x0) && ok(bbox.y0) && ok(bbox.x1) && ok(bbox.y1)) {
            return None;
        }
        let milli = |v: f32| (v * 1000.0).round() as u32;
        let (x0, x1) = (bbox.x0.min(bbox.x1), bbox.x0.max(bbox.x1));
        let (y0, y1) = (bbox.y0.min(bbox.y1), bbox.y0.max(bbox.y1));
        let (x, y) = (
            milli(x0).saturating_sub(margin),
            milli(y0).saturating_sub(margin),
        );
        let (right, bottom) = (
            (milli(x1) + margin).min(1000),
            (milli(y1) + margin).min(1000),
        );
        Some(Self {
            class,
            x,
            y,
            w: right.saturating_sub(x).max(2),
            h: bottom.saturating_sub(y).max(2),
            label,
            rule: None,
            fact: None,
        })
    }
}

pub(crate) struct PageItem {
    pub anchor: String,
    /// The file and page (0-based), for a box drawn on it.
    pub source: Uuid,
    pub index: u32,
    pub caption: String,
    pub src: String,
    pub boxes: Vec<Overlay>,
}

pub(crate) struct ValueRow {
    pub document_type: String,
    pub field: String,
    pub value: Option<String>,
    pub raw_text: Option<String>,
    pub page_href: Option<String>,
    /// The page, as the link says it (`p. 2`).
    pub page_label: String,
    /// The file the value was read from.
    pub file: String,
    /// This value is not the one the others agree on.
    pub differs: bool,
}

pub(crate) struct RuleItem {
    pub anchor: String,
    pub rule_id: String,
    pub template: String,
    pub outcome: String,
    pub message: String,
    pub values: Vec<ValueRow>,
    /// The one field every value is of (the table then leaves its column out).
    pub common_field: Option<String>,
}

pub(crate) struct DecisionItem {
    pub version: i32,
    pub status: String,
    pub summary: String,
    pub rules: String,
    pub decided_by: String,
    pub created: String,
    pub results: Vec<RuleItem>,
}

pub(crate) struct FactItem {
    /// The document it belongs to (a correction names it).
    pub segment: String,
    pub field: String,
    /// "corrected by Rita: reason (was …)" for a corrected value.
    pub corrected: Option<String>,
    pub value: Option<String>,
    pub missing: bool,
    /// Other readings of the field, when the candidates disagreed.
    pub readings: Vec<String>,
    pub page_href: Option<String>,
    pub page_label: String,
    pub anchor: String,
}

pub(crate) struct DocumentItem {
    pub title: String,
    /// Its document type, its file and pages (0-based), for a correction's box.
    pub kind: String,
    pub source: Uuid,
    pub first_page: i32,
    pub last_page: i32,
    pub facts: Vec<FactItem>,
}

pub(crate) struct TimelineItem {
    pub at: String,
    pub at_iso: String,
    pub event: String,
    pub actor: String,
    pub detail: String,
}

/// The review form: what it resolves, what it offers, and what was typed before a refusal.
pub(crate) struct ReviewItem {
    pub version: i32,
    pub idempotency_key: String,
    /// READY: APPROVE is offered (and OVERRIDE is not).
    pub ready: bool,
    pub action: String,
    pub comment: String,
    /// Why the last attempt was refused, beside the form.
    pub problem: Option<String>,
}

/// The reprocess form, or why this person may not use it.
pub(crate) struct ReprocessItem {
    pub allowed: bool,
    pub why_not: Option<&'static str>,
    pub idempotency_key: String,
    pub reason: String,
    pub problem: Option<String>,
}

pub(crate) struct Newer {
    pub version: i64,
    pub status: String,
    pub summary: String,
}

/// Someone changed the case under the person's form: who and what, and the decision now.
pub(crate) struct Conflict {
    pub changes: Vec<String>,
    pub by_someone_else: bool,
    pub message: String,
    pub newer: Option<Newer>,
    /// The comment the person typed, when no form is left to keep it in.
    pub kept_comment: Option<String>,
}

#[derive(Template)]
#[template(path = "case.html")]
pub(crate) struct CasePage {
    pub chrome: Chrome,
    pub id: Uuid,
    pub reference: String,
    pub status: String,
    pub status_reason: Option<String>,
    pub resolution: Option<String>,
    pub notice: Option<String>,
    /// A refusal with no form of this person's to show it beside.
    pub problem: Option<String>,
    pub conflict: Option<Conflict>,
    pub decision: Option<DecisionItem>,
    pub review: Option<ReviewItem>,
    pub reprocess: Option<ReprocessItem>,
    pub documents: Vec<DocumentItem>,
    pub timeline: Vec<TimelineItem>,
    pub earlier: Vec<EarlierResolution>,
    pub pages: Vec<PageItem>,
    /// What the page shows of the case's state; its script reloads when the server's differs.
    pub live_state: String,
    /// The last audit event shown: a refused action tells what happened since.
    pub seen_event: i64,
    /// Who reviews the case, what waits for a second reviewer.
    pub desk: ReviewDesk,
    /// The correction form.
    pub correction: CorrectionPanel,
}

/// What a case page's state is compared by: status, generation and decision version.
pub(crate) fn live_state(status: &str, generation: i32, decision: Option<i32>) -> String {
    format!(
        "{status}:{generation}:{}",
        decision.map(|v| v.to_string()).unwrap_or_default()
    )
}

/// An id safe in an HTML id and a CSS selector.
fn anchor(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn page_anchor(source: Uuid, page: u32) -> String {
    format!("p-{}-{}", source.simple(), page + 1)
}

fn parse_bbox(value: &Value) -> Option<BBox> {
    serde_json::from_value(value.clone()).ok()
}

/// The other readings of a field whose candidates disagreed: their text and confidence.
fn other_readings(fact: &FactView) -> Vec<String> {
    if !fact.conflict {
        return Vec::new();
    }
    let chosen = fact.value.as_ref().map(shown);
    let mut readings: Vec<String> = Vec::new();
    for c in fact.candidates.as_array().into_iter().flatten() {
        let value = c.get("value").map(shown);
        if value.is_none() || value == chosen {
            continue;
        }
        let text = value.unwrap_or_default();
        let sure = c
            .get("confidence")
            .and_then(Value::as_f64)
            .map(|p| format!(" ({:.0} % sure)", p * 100.0))
            .unwrap_or_default();
        let line = format!("{text}{sure}");
        if !readings.iter().any(|r| r.starts_with(&text)) {
            readings.push(line);
        }
        if readings.len() == 3 {
            break;
        }
    }
    readings
}

/// Builds the case page for `user`, naming actors through `people`.
pub(crate) fn build(detail: CaseDetail, user: &DeskUser, people: &People) -> CasePage {
    let case_id = detail.case.id;
    let file_of: HashMap<Uuid, &str> = detail
        .sources
        .iter()
        .map(|s| (s.id, s.filename.as_str()))
        .collect();
    let file = |source: Uuid| file_of.get(&source).copied().unwrap_or("a file");
    let named: Vec<NamedDocument> = detail
        .segments
        .iter()
        .map(|s| NamedDocument {
            doc_type: s
                .doc_type
                .clone()
                .unwrap_or_else(|| "unclassified pages".to_owned()),
            source: s.source_id,
            first_page: u32::try_from(s.first_page).unwrap_or(0),
            last_page: u32::try_from(s.last_page).unwrap_or(0),
            filename: file(s.source_id).to_owned(),
        })
        .collect();
    // Every page of every file, in upload order, each with its boxes.
    let rotations: HashMap<(Uuid, i32), i16> = detail
        .pages
        .iter()
        .map(|p| ((p.source_id, p.page_index), p.rotation))
        .collect();
    let mut pages: Vec<PageItem> = Vec::new();
    let mut page_slot: HashMap<(Uuid, u32), usize> = HashMap::new();
    for source in &detail.sources {
        for index in 0..source.pages.max(0) as u32 {
            let rotation = rotations
                .get(&(source.id, index as i32))
                .copied()
                .unwrap_or(0)
                .rem_euclid(360);
            page_slot.insert((source.id, index), pages.len());
            pages.push(PageItem {
                anchor: page_anchor(source.id, index),
                source: source.id,
                index,
                caption: format!(
                    "{} — page {} of {}",
                    source.filename,
                    index + 1,
                    source.pages
                ),
                src: format!(
                    "/cases/{case_id}/sources/{}/pages/{}?r={rotation}",
                    source.id,
                    index + 1
                ),
                boxes: Vec::new(),
            });
        }
    }
    let mut documents = Vec::new();
    for segment in &detail.segments {
        let title = format!(
            "{} — {}, pages {}–{}",
            segment.doc_type.as_deref().unwrap_or("Unknown document"),
            file(segment.source_id),
            segment.first_page + 1,
            segment.last_page + 1
        );
        let mut facts = Vec::new();
        for fact in &segment.facts {
            let fact_anchor = anchor(&format!("{}-{}", segment.id.simple(), fact.field));
            let page = fact.page.and_then(|p| u32::try_from(p).ok());
            if let (Some(page), Some(bbox)) = (page, fact.bbox.as_ref().and_then(parse_bbox)) {
                if let Some(slot) = page_slot.get(&(segment.source_id, page)) {
                    let label = format!(
                        "{}: {}",
                        fact.field,
                        fact.value.as_ref().map(shown).unwrap_or_default()
                    );
                    if let Some(mut overlay) = Overlay::new(&bbox, "fact", label, 0) {
                        overlay.fact = Some(fact_anchor.clone());
                        pages[*slot].boxes.push(overlay);
                    }
                }
            }
            facts.push(FactItem {
                segment: segment.id.to_string(),
                field: fact.field.clone(),
                corrected: fact.correction.as_ref().map(|c| {
                    let was = c
                        .previous_value
                        .as_ref()
                        .map(|v| format!(" (was {})", shown(v)))
                        .unwrap_or_default();
                    format!("corrected by {}: {}{was}", c.by, c.reason)
                }),
                value: fact.value.as_ref().map(shown),
                missing: fact.missing,
                readings: other_readings(fact),
                page_href: page.map(|p| format!("#{}", page_anchor(segment.source_id, p))),
                page_label: page.map(|p| format!("page {}", p + 1)).unwrap_or_default(),
                anchor: fact_anchor,
            });
        }
        documents.push(DocumentItem {
            title,
            kind: segment
                .doc_type
                .clone()
                .unwrap_or_else(|| "Unknown document".to_owned()),
            source: segment.source_id,
            first_page: segment.first_page,
            last_page: segment.last_page,
            facts,
        });
    }
    let decision = detail.decision.as_ref().map(|d| {
        let results = d
            .rule_results
            .iter()
            .map(|r| {
                let rule_anchor = anchor(&r.rule_id);
                let failed = matches!(r.outcome.as_str(), "FAIL" | "REVIEW_REQUIRED");
                let compared: Vec<ComparedValue> =
                    serde_json::from_value(r.values.clone()).unwrap_or_default();
                let texts: Vec<Option<String>> = compared
                    .iter()
                    .map(|v| v.value.as_deref().map(ToString::to_string))
                    .collect();
                let differs = if failed {
                    disagreeing(&texts)
                } else {
                    vec![false; texts.len()]
                };
                let values = compared
                    .iter()
                    .zip(texts)
                    .zip(differs)
                    .map(|((v, text), differs)| {
                        let ev = &v.evidence;
                        let at = ev.source_id.zip(ev.page);
                        if let (true, Some((source, page)), Some(bbox)) = (failed, at, ev.bbox) {
                            if let Some(slot) = page_slot.get(&(source, page)) {
                                let label = format!(
                                    "{}: {} {}{}",
                                    r.rule_id,
                                    v.field,
                                    text.as_deref().unwrap_or_default(),
                                    if differs { " (differs)" } else { "" }
                                );
                                let class = if differs { "rule-odd" } else { "rule-agree" };
                                if let Some(mut overlay) =
                                    Overlay::new(&bbox, class, label, RULE_BOX_MARGIN)
                                {
                                    overlay.rule = Some(rule_anchor.clone());
                                    pages[*slot].boxes.push(overlay);
                                }
                            }
                        }
                        ValueRow {
                            document_type: v.document_type.to_string(),
                            field: v.field.to_string(),
                            // The printed text only when it says more than the value.
                            raw_text: ev
                                .raw_text
                                .as_deref()
                                .filter(|raw| text.as_deref() != Some(*raw))
                                .map(str::to_owned),
                            value: text,
                            page_href: at.map(|(s, p)| format!("#{}", page_anchor(s, p))),
                            page_label: at
                                .map(|(_, p)| format!("p. {}", p + 1))
                                .unwrap_or_default(),
                            file: ev.source_id.map(file).unwrap_or_default().to_owned(),
                            differs,
                        }
                    })
                    .collect::<Vec<ValueRow>>();
                let common_field = match values.first() {
                    Some(first) if values.iter().all(|v| v.field == first.field) => {
                        Some(first.field.clone())
                    }
                    _ => None,
                };
                RuleItem {
                    common_field,
                    anchor: rule_anchor,
                    rule_id: r.rule_id.clone(),
                    template: r.template.clone(),
                    outcome: r.outcome.clone(),
                    message: name_files(&r.message, &named),
                    values,
                }
            })
            .collect();
        DecisionItem {
            version: d.version,
            status: d.status.clone(),
            summary: d.summary.clone(),
            rules: match (d.ruleset.id, d.ruleset.version) {
                (Some(_), Some(v)) => format!("ruleset v{v}"),
                _ => "the workflow's rules".to_owned(),
            },
            decided_by: people.name(&d.decided_by),
            created: when(d.created_at),
            results,
        }
    });
    let role = user.0.principal.role;
    let status = detail.case.status.parse::<CaseStatus>().ok();
    let review = match (&detail.decision, status) {
        (Some(d), Some(CaseStatus::AwaitingReview))
            if matches!(role, Role::Reviewer | Role::Admin) =>
        {
            Some(ReviewItem {
                version: d.version,
                idempotency_key: Uuid::new_v4().to_string(),
                ready: d.status == "READY",
                action: String::new(),
                comment: String::new(),
                problem: None,
            })
        }
        _ => None,
    };
    let reprocess = status.and_then(|status| reprocess_item(role, status));
    let timeline = detail
        .audit
        .iter()
        .map(|e| timeline_item(e, people))
        .collect();
    CasePage {
        chrome: Chrome::of(user, "cases"),
        id: case_id,
        reference: detail
            .case
            .external_reference
            .clone()
            .unwrap_or_else(|| case_id.to_string()),
        live_state: live_state(
            &detail.case.status,
            detail.case.generation,
            detail.decision.as_ref().map(|d| d.version),
        ),
        seen_event: detail.audit.iter().map(|e| e.id).max().unwrap_or(0),
        earlier: earlier_resolutions(&detail.audit, people),
        status: detail.case.status.clone(),
        status_reason: detail.case.status_reason.clone(),
        resolution: detail.case.resolution.clone(),
        notice: None,
        problem: None,
        conflict: None,
        decision,
        review,
        reprocess,
        documents,
        timeline,
        pages,
        desk: ReviewDesk::of(Default::default(), user),
        correction: CorrectionPanel::new(),
    }
}

/// The reprocess form for `role` on a case in `status`: offered when the role may use it,
/// explained when a role that could act on other cases may not on this one.
fn reprocess_item(role: Role, status: CaseStatus) -> Option<ReprocessItem> {
    let allowed = may_reprocess(role, status);
    match (allowed, role, status) {
        (Ok(()), _, _) => Some(ReprocessItem {
            allowed: true,
            why_not: None,
            idempotency_key: Uuid::new_v4().to_string(),
            reason: String::new(),
            problem: None,
        }),
        (Err(why), Role::Operator, _) => Some(ReprocessItem {
            allowed: false,
            why_not: Some(why),
            idempotency_key: String::new(),
            reason: String::new(),
            problem: None,
        }),
        _ => None,
    }
}

/// An audit event as a line, its actor by name.
fn timeline_item(e: &AuditView, people: &People) -> TimelineItem {
    let pick = |k: &str| e.data.get(k).map(shown);
    let detail = [
        pick("field"),
        pick("resolution"),
        pick("comment"),
        pick("status"),
        pick("reason"),
        pick("summary"),
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.is_empty() && s != "null")
    .collect::<Vec<_>>()
    .join(" · ");
    TimelineItem {
        at: when(e.created_at),
        at_iso: e.created_at.to_rfc3339(),
        event: e.event_type.replace('_', " ").to_lowercase(),
        actor: people.name(&e.actor),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fact(conflict: bool, candidates: Value) -> FactView {
        FactView {
            field: "container_number".into(),
            value: Some(
                json!({"kind": "container_number", "value": {"code": "CBHU6394177", "check_digit_valid": true}}),
            ),
            raw_text: None,
            page: Some(0),
            bbox: None,
            confidence: Some(0.9),
            conflict,
            missing: false,
            candidates,
            version: 1,
            correction: None,
        }
    }

    #[test]
    fn a_field_read_differently_lists_its_other_readings_once() {
        let candidate = |code: &str, confidence: f64| {
            json!({"value": {"kind": "container_number", "value": {"code": code, "check_digit_valid": true}},
                   "confidence": confidence, "raw": code, "page": 0})
        };
        let candidates = json!([
            candidate("CBHU6394177", 0.9),
            candidate("CBHU6394171", 0.42),
            candidate("CBHU6394171", 0.40),
        ]);
        assert_eq!(
            other_readings(&fact(true, candidates.clone())),
            vec!["CBHU6394171 (42 % sure)".to_owned()]
        );
        assert!(other_readings(&fact(false, candidates)).is_empty());
    }

    #[test]
    fn live_state_names_status_generation_and_version() {
        assert_eq!(live_state("PROCESSING", 1, None), "PROCESSING:1:");
        assert_eq!(
            live_state("AWAITING_REVIEW", 2, Some(3)),
            "AWAITING_REVIEW:2:3"
        );
    }
}
