//! The case page: the decision with every rule result, the values a rule compared side by
//! side, every page with evidence boxes, the review and reprocess forms, and the timeline.

use crate::actions::reviews::resolve as resolve_review;
use crate::actions::{action_error, action_key, check_text, form_key};
use crate::error::ApiError;
use crate::state::AppState;
use crate::ui::cases::when;
use crate::ui::claims::ReviewDesk;
use crate::ui::corrections::CorrectionPanel;
use crate::ui::page::{render, Chrome, DeskError, DeskForm, DeskQuery};
use crate::ui::session::DeskUser;
use crate::ui::values::{shown, shown_typed};
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ironclad_core::page::BBox;
use ironclad_core::review::ReviewAction;
use ironclad_core::role::Role;
use ironclad_core::rules::ComparedValue;
use ironclad_core::{CaseId, CaseStatus};
use ironclad_store::read::{AuditView, CaseDetail};
use ironclad_store::replay::ActionError;
use ironclad_store::reviews::ReviewRequest;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use uuid::Uuid;

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
    fn new(bbox: &BBox, class: &'static str, label: String) -> Option<Self> {
        let ok = |v: f32| v.is_finite() && (0.0..=1.0).contains(&v);
        if !(ok(bbox.x0) && ok(bbox.y0) && ok(bbox.x1) && ok(bbox.y1)) {
            return None;
        }
        let milli = |v: f32| (v * 1000.0).round() as u32;
        let (x0, x1) = (bbox.x0.min(bbox.x1), bbox.x0.max(bbox.x1));
        let (y0, y1) = (bbox.y0.min(bbox.y1), bbox.y0.max(bbox.y1));
        Some(Self {
            class,
            x: milli(x0),
            y: milli(y0),
            w: milli(x1).saturating_sub(milli(x0)).max(2),
            h: milli(y1).saturating_sub(milli(y0)).max(2),
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
    pub page_label: String,
    /// The file and page, for the link's tooltip.
    pub page_title: String,
}

pub(crate) struct RuleItem {
    pub anchor: String,
    pub rule_id: String,
    pub template: String,
    pub outcome: String,
    pub message: String,
    pub values: Vec<ValueRow>,
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
    pub flag: &'static str,
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

pub(crate) struct ReviewItem {
    pub version: i32,
    pub idempotency_key: String,
}

pub(crate) struct Newer {
    pub version: i64,
    pub status: String,
    pub summary: String,
}

pub(crate) struct Conflict {
    pub message: String,
    pub newer: Option<Newer>,
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
    pub conflict: Option<Conflict>,
    pub decision: Option<DecisionItem>,
    pub review: Option<ReviewItem>,
    pub can_reprocess: bool,
    pub reprocess_key: String,
    pub documents: Vec<DocumentItem>,
    pub timeline: Vec<TimelineItem>,
    pub pages: Vec<PageItem>,
    /// Who reviews the case, what waits for a second reviewer.
    pub desk: ReviewDesk,
    /// The correction form.
    pub correction: CorrectionPanel,
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

/// Builds the case page from what the store holds; `actors` names users on the timeline.
pub(crate) fn build(
    detail: CaseDetail,
    user: &DeskUser,
    actors: &HashMap<Uuid, String>,
) -> CasePage {
    let case_id = detail.case.id;
    let source_names: HashMap<Uuid, (usize, String)> = detail
        .sources
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id, (i, s.filename.clone())))
        .collect();
    let page_label = |source: Uuid, page: u32| match source_names.get(&source) {
        Some((_, name)) => format!("{name}, page {}", page + 1),
        None => format!("page {}", page + 1),
    };
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
            source_names
                .get(&segment.source_id)
                .map(|(_, n)| n.as_str())
                .unwrap_or("?"),
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
                    if let Some(mut overlay) = Overlay::new(&bbox, "fact", label) {
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
                flag: if fact.missing {
                    "missing"
                } else if fact.conflict {
                    "conflicting"
                } else {
                    ""
                },
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
                let values = compared
                    .iter()
                    .map(|v| {
                        let ev = &v.evidence;
                        let at = ev.source_id.zip(ev.page);
                        if let (true, Some((source, page)), Some(bbox)) = (failed, at, ev.bbox) {
                            if let Some(slot) = page_slot.get(&(source, page)) {
                                let label = format!(
                                    "{}: {} {}",
                                    r.rule_id,
                                    v.field,
                                    v.value.as_deref().map(shown_typed).unwrap_or_default()
                                );
                                if let Some(mut overlay) = Overlay::new(&bbox, "rule-fail", label) {
                                    overlay.rule = Some(rule_anchor.clone());
                                    pages[*slot].boxes.push(overlay);
                                }
                            }
                        }
                        ValueRow {
                            document_type: v.document_type.to_string(),
                            field: v.field.to_string(),
                            value: v.value.as_deref().map(shown_typed),
                            // The printed text only when it says more than the value.
                            raw_text: ev
                                .raw_text
                                .as_deref()
                                .filter(|raw| {
                                    v.value.as_deref().map(shown_typed).as_deref() != Some(*raw)
                                })
                                .map(str::to_owned),
                            page_href: at.map(|(s, p)| format!("#{}", page_anchor(s, p))),
                            page_label: at
                                .map(|(_, p)| format!("page {}", p + 1))
                                .unwrap_or_default(),
                            page_title: at.map(|(s, p)| page_label(s, p)).unwrap_or_default(),
                        }
                    })
                    .collect();
                RuleItem {
                    anchor: rule_anchor,
                    rule_id: r.rule_id.clone(),
                    template: r.template.clone(),
                    outcome: r.outcome.clone(),
                    message: r.message.clone(),
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
            decided_by: d.decided_by.clone(),
            created: when(d.created_at),
            results,
        }
    });
    let role = user.0.principal.role;
    let awaiting = detail.case.status == CaseStatus::AwaitingReview.as_str();
    let review = match (&detail.decision, awaiting) {
        (Some(d), true) if matches!(role, Role::Reviewer | Role::Admin) => Some(ReviewItem {
            version: d.version,
            idempotency_key: Uuid::new_v4().to_string(),
        }),
        _ => None,
    };
    let timeline = detail
        .audit
        .iter()
        .map(|e| timeline_item(e, actors))
        .collect();
    CasePage {
        chrome: Chrome::of(user, "cases"),
        id: case_id,
        reference: detail
            .case
            .external_reference
            .clone()
            .unwrap_or_else(|| case_id.to_string()),
        status: detail.case.status.clone(),
        status_reason: detail.case.status_reason.clone(),
        resolution: detail.case.resolution.clone(),
        notice: None,
        conflict: None,
        decision,
        review,
        can_reprocess: matches!(role, Role::Operator | Role::Admin),
        reprocess_key: Uuid::new_v4().to_string(),
        documents,
        timeline,
        pages,
        desk: ReviewDesk::of(Default::default(), user),
        correction: CorrectionPanel::new(),
    }
}

/// An audit event as a line: who by name when the actor is a desk user.
fn timeline_item(e: &AuditView, actors: &HashMap<Uuid, String>) -> TimelineItem {
    let actor = e
        .actor
        .strip_prefix("user:")
        .and_then(|id| id.parse::<Uuid>().ok())
        .and_then(|id| actors.get(&id).cloned())
        .unwrap_or_else(|| e.actor.clone());
    let pick = |k: &str| e.data.get(k).map(shown);
    let detail = [
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
        actor,
        detail,
    }
}

/// Loads the page of case `id` for `user`: 404 for an unknown or another tenant's case.
pub(crate) async fn load(
    state: &AppState,
    user: &DeskUser,
    id: &str,
) -> Result<CasePage, DeskError> {
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let tenant = user.0.principal.tenant_id;
    let detail = state
        .store
        .case_detail(Some(tenant), case)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let user_ids: Vec<Uuid> = detail
        .audit
        .iter()
        .filter_map(|e| e.actor.strip_prefix("user:")?.parse().ok())
        .collect();
    let actors = state
        .store
        .user_emails(tenant, &user_ids)
        .await?
        .into_iter()
        .collect();
    let mut page = build(detail, user, &actors);
    let review = state.store.review_state(tenant.0, case.0).await?;
    page.desk = ReviewDesk::of(review, user);
    if !page.desk.may_act {
        // Someone else holds the review, or an action waits for a second reviewer.
        page.review = None;
    }
    Ok(page)
}

#[derive(Debug, Deserialize)]
pub(crate) struct ShowParams {
    done: Option<String>,
    /// `<segment>:<field>`: open the correction form for that field.
    correct: Option<String>,
}

/// `GET /cases/{id}` (`?done=review|reprocess` after an action, to say it was done).
pub(crate) async fn show(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskQuery(params): DeskQuery<ShowParams>,
) -> Result<Response, DeskError> {
    let mut page = load(&state, &user, &id).await?;
    page.notice = match params.done.as_deref() {
        Some("review") => Some("Your review was recorded.".to_owned()),
        Some("reprocess") => Some("Every document of the case is being read again.".to_owned()),
        Some(done) => crate::ui::claims::notice(done, page.decision.as_ref().map(|d| d.version)),
        None => None,
    };
    if let Some((segment, field)) = params.correct.as_deref().and_then(|c| c.split_once(':')) {
        page.correction.open_for(&page.documents, segment, field);
    }
    Ok(render(StatusCode::OK, &page))
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReviewForm {
    #[serde(default)]
    csrf: String,
    action: String,
    expected_decision_version: i32,
    #[serde(default)]
    comment: String,
    #[serde(default)]
    idempotency_key: String,
}

/// Re-renders the case page with what went wrong with the action, instead of an error page:
/// the reviewer sees the conflict next to the current decision.
pub(crate) async fn answer_with(
    state: &AppState,
    user: &DeskUser,
    id: &str,
    error: ActionError,
) -> Result<Response, DeskError> {
    let (status, conflict) = match error {
        ActionError::Conflict { message, current } => {
            let newer = Some(current).and_then(|c| {
                Some(Newer {
                    version: c.get("version")?.as_i64()?,
                    status: c.get("status")?.as_str()?.to_owned(),
                    summary: c
                        .get("summary")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
            });
            (StatusCode::CONFLICT, Conflict { message, newer })
        }
        ActionError::Refused(message) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Conflict {
                message,
                newer: None,
            },
        ),
        claimed @ ActionError::Claimed { .. } => (
            StatusCode::CONFLICT,
            Conflict {
                message: claimed.to_string(),
                newer: None,
            },
        ),
        ActionError::Forbidden(message) => (
            StatusCode::FORBIDDEN,
            Conflict {
                message,
                newer: None,
            },
        ),
        other => return Err(action_error(other).into()),
    };
    let mut page = load(state, user, id).await?;
    page.conflict = Some(conflict);
    Ok(render(status, &page))
}

/// `POST /cases/{id}/review` (reviewers and admins).
pub(crate) async fn review(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<ReviewForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    user.require(&[Role::Reviewer, Role::Admin], "resolve reviews")?;
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let action: ReviewAction = form.action.parse().map_err(|_| {
        ApiError::bad_request("invalid_body", "action must be APPROVE, OVERRIDE or REJECT")
    })?;
    let comment = form.comment.trim();
    check_text("comment", Some(comment))?;
    let comment = (!comment.is_empty()).then(|| comment.to_owned());
    let key = action_key(
        &user.0.principal,
        "review",
        &form_key(&form.idempotency_key)?,
        case.0,
        &serde_json::json!({"action": action, "comment": comment,
                            "expected_decision_version": form.expected_decision_version}),
    );
    let req = ReviewRequest {
        case: case.0,
        action,
        expected_decision_version: form.expected_decision_version,
        comment,
        actor: user.0.principal.actor(),
        actor_role: user.0.principal.role.as_str().to_owned(),
    };
    match resolve_review(&state, &key, &req).await {
        Ok(answer) => {
            // Held for a second reviewer (four eyes) says so.
            let done = if answer.status == 202 {
                "review-proposed"
            } else {
                "review"
            };
            Ok(Redirect::to(&format!("/cases/{}?done={done}", case.0)).into_response())
        }
        Err(e) => answer_with(&state, &user, &id, e).await,
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReprocessForm {
    #[serde(default)]
    csrf: String,
    reason: String,
    #[serde(default)]
    idempotency_key: String,
}

/// `POST /cases/{id}/reprocess` (operators and admins).
pub(crate) async fn reprocess(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<ReprocessForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    user.require(&[Role::Operator, Role::Admin], "reprocess cases")?;
    let case: CaseId = id.parse().map_err(|_| ApiError::not_found())?;
    let key = form_key(&form.idempotency_key)?;
    let reprocessed = crate::actions::reprocess::reprocess(
        &state,
        &user.0.principal,
        &key,
        case.0,
        None,
        &form.reason,
    )
    .await?;
    match reprocessed {
        Ok(_) => Ok(Redirect::to(&format!("/cases/{}?done=reprocess", case.0)).into_response()),
        Err(e) => answer_with(&state, &user, &id, e).await,
    }
}
