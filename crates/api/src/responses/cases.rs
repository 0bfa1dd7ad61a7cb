//! A case as its tenant reads it (`GET /v1/cases/{id}`), and the listing (`GET /v1/cases`).

use chrono::{DateTime, Utc};
use ironclad_core::FailureCode;
use ironclad_store::read;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// One case as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct CaseSummary {
    /// Case id.
    pub id: Uuid,
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Client reference.
    pub external_reference: Option<String>,
    /// Workflow requested.
    pub workflow: Option<String>,
    /// Status.
    pub status: String,
    /// Why it is in that status (failures).
    pub status_reason: Option<String>,
    /// Current generation.
    pub generation: i32,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// How a RESOLVED case was resolved (APPROVED, REJECTED, OVERRIDDEN).
    pub resolution: Option<String>,
    /// Who resolved it.
    pub resolved_by: Option<String>,
    /// When.
    pub resolved_at: Option<DateTime<Utc>>,
}

impl From<read::CaseSummary> for CaseSummary {
    fn from(c: read::CaseSummary) -> Self {
        Self {
            id: c.id,
            tenant_id: c.tenant_id,
            external_reference: c.external_reference,
            workflow: c.workflow,
            status: c.status,
            status_reason: c.status_reason,
            generation: c.generation,
            created_at: c.created_at,
            updated_at: c.updated_at,
            resolution: c.resolution,
            resolved_by: c.resolved_by,
            resolved_at: c.resolved_at,
        }
    }
}

/// One page of the listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct CasePage {
    pub cases: Vec<CaseSummary>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// A case as its tenant sees it: everything but the operators' internals (which host and
/// process held a job, raw error text with server paths, processor results).
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantCase {
    #[serde(flatten)]
    pub case: CaseSummary,
    pub sources: Vec<SourceView>,
    pub jobs: Vec<TenantJob>,
    pub pages: Vec<PageView>,
    pub segments: Vec<SegmentView>,
    pub decision: Option<DecisionView>,
    pub audit: Vec<AuditView>,
}

impl From<read::CaseDetail> for TenantCase {
    fn from(d: read::CaseDetail) -> Self {
        Self {
            case: d.case.into(),
            sources: d.sources.into_iter().map(Into::into).collect(),
            jobs: d.jobs.into_iter().map(Into::into).collect(),
            pages: d.pages.into_iter().map(Into::into).collect(),
            segments: d.segments.into_iter().map(Into::into).collect(),
            decision: d.decision.map(Into::into),
            audit: d.audit.into_iter().map(Into::into).collect(),
        }
    }
}

/// A source as shown with its case.
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceView {
    /// Source id.
    pub id: Uuid,
    /// Client file name.
    pub filename: String,
    /// Hex sha256.
    pub sha256: String,
    /// Media type.
    pub media_type: String,
    /// Bytes.
    pub size_bytes: i64,
    /// Pages.
    pub pages: i32,
    /// Uploaded.
    pub created_at: DateTime<Utc>,
}

impl From<read::SourceView> for SourceView {
    fn from(s: read::SourceView) -> Self {
        Self {
            id: s.id,
            filename: s.filename,
            sha256: s.sha256,
            media_type: s.media_type,
            size_bytes: s.size_bytes,
            pages: s.pages,
            created_at: s.created_at,
        }
    }
}

/// A job as its tenant sees it: a failure is a stable code and a fixed message.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantJob {
    pub id: Uuid,
    pub kind: String,
    pub source_id: Option<Uuid>,
    pub status: String,
    pub generation: i32,
    pub attempt: i32,
    pub max_attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub error: Option<JobError>,
    pub dead_lettered: bool,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// Why a job failed, for tenants.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobError {
    pub code: &'static str,
    pub message: &'static str,
}

// The lease holder, the raw error and the step result stay with operators: they name hosts,
// paths and processor internals.
impl From<read::JobView> for TenantJob {
    fn from(j: read::JobView) -> Self {
        let error = j
            .error_code
            .as_deref()
            .and_then(|c| c.parse::<FailureCode>().ok())
            // A failure recorded before codes existed is shown as internal, never as its text.
            .or_else(|| (j.status == "FAILED").then_some(FailureCode::Internal))
            .map(|code| JobError {
                code: code.as_str(),
                message: code.message(),
            });
        Self {
            id: j.id,
            kind: j.kind,
            source_id: j.source_id,
            status: j.status,
            generation: j.generation,
            attempt: j.attempt,
            max_attempts: j.max_attempts,
            next_attempt_at: j.next_attempt_at,
            error,
            dead_lettered: j.dead_lettered_at.is_some(),
            created_at: j.created_at,
            finished_at: j.finished_at,
        }
    }
}

/// A page as shown with its case (text and words are fetched separately).
#[derive(Debug, Serialize, ToSchema)]
pub struct PageView {
    /// Source it belongs to.
    pub source_id: Uuid,
    /// 0-based index.
    pub page_index: i32,
    /// How it was read.
    pub method: String,
    /// Mean word confidence.
    pub confidence: f32,
    /// Rotation applied (degrees).
    pub rotation: i16,
    /// Classified document type.
    pub doc_type: Option<String>,
    /// Classification confidence.
    pub class_confidence: Option<f32>,
    /// Why UNKNOWN or ambiguous.
    pub class_reason: Option<String>,
}

impl From<read::PageView> for PageView {
    fn from(p: read::PageView) -> Self {
        Self {
            source_id: p.source_id,
            page_index: p.page_index,
            method: p.method,
            confidence: p.confidence,
            rotation: p.rotation,
            doc_type: p.doc_type,
            class_confidence: p.class_confidence,
            class_reason: p.class_reason,
        }
    }
}

/// A typed page range of a source with its facts.
#[derive(Debug, Serialize, ToSchema)]
pub struct SegmentView {
    /// Segment id.
    pub id: Uuid,
    /// Source it belongs to.
    pub source_id: Uuid,
    /// Generation.
    pub generation: i32,
    /// Document type, `None` for UNKNOWN.
    pub doc_type: Option<String>,
    /// Classification confidence.
    pub confidence: f32,
    /// First page (0-based).
    pub first_page: i32,
    /// Last page (0-based).
    pub last_page: i32,
    /// Why UNKNOWN.
    pub reason: Option<String>,
    /// Extracted fields.
    pub facts: Vec<FactView>,
}

impl From<read::SegmentView> for SegmentView {
    fn from(s: read::SegmentView) -> Self {
        Self {
            id: s.id,
            source_id: s.source_id,
            generation: s.generation,
            doc_type: s.doc_type,
            confidence: s.confidence,
            first_page: s.first_page,
            last_page: s.last_page,
            reason: s.reason,
            facts: s.facts.into_iter().map(Into::into).collect(),
        }
    }
}

/// An extracted field with its evidence.
#[derive(Debug, Serialize, ToSchema)]
pub struct FactView {
    /// Field name.
    pub field: String,
    /// Chosen typed value.
    pub value: Option<serde_json::Value>,
    /// Raw text of the chosen value.
    pub raw_text: Option<String>,
    /// Page of the chosen value (0-based).
    pub page: Option<i32>,
    /// Box of the value span.
    pub bbox: Option<serde_json::Value>,
    /// Confidence.
    pub confidence: Option<f32>,
    /// Candidates disagree.
    pub conflict: bool,
    /// Required but not found.
    pub missing: bool,
    /// Every candidate.
    pub candidates: serde_json::Value,
    /// Which version of the field this is (1 as read; each correction adds one).
    pub version: i32,
    /// The correction that wrote this version, if a person corrected the field.
    pub correction: Option<FactCorrection>,
}

impl From<read::FactView> for FactView {
    fn from(f: read::FactView) -> Self {
        Self {
            field: f.field,
            value: f.value,
            raw_text: f.raw_text,
            page: f.page,
            bbox: f.bbox,
            confidence: f.confidence,
            conflict: f.conflict,
            missing: f.missing,
            candidates: f.candidates,
            version: f.version,
            correction: f.correction.map(Into::into),
        }
    }
}

/// Who corrected a field, why, and what it was before.
#[derive(Debug, Serialize, ToSchema)]
pub struct FactCorrection {
    /// The correction.
    pub id: Uuid,
    /// Who corrected it, as people read it.
    pub by: String,
    /// Why.
    pub reason: String,
    /// When.
    pub at: DateTime<Utc>,
    /// `typed` or `box`.
    pub method: String,
    /// The value before.
    pub previous_value: Option<serde_json::Value>,
    /// The text it was read from before.
    pub previous_raw_text: Option<String>,
}

impl From<read::FactCorrection> for FactCorrection {
    fn from(c: read::FactCorrection) -> Self {
        Self {
            id: c.id,
            by: c.by,
            reason: c.reason,
            at: c.at,
            method: c.method,
            previous_value: c.previous_value,
            previous_raw_text: c.previous_raw_text,
        }
    }
}

/// A decision as shown with its case.
#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionView {
    /// Decision id.
    pub id: Uuid,
    /// Generation it decides.
    pub generation: i32,
    /// Version (1 for the first).
    pub version: i32,
    /// READY / BLOCKED / REVIEW_REQUIRED.
    pub status: String,
    /// One-line summary.
    pub summary: String,
    /// Written.
    pub created_at: DateTime<Utc>,
    /// `finalize` or `reevaluate`.
    pub origin: String,
    /// Who wrote it.
    pub decided_by: String,
    /// The rules applied: where from, and the managed ruleset's id and version.
    pub ruleset: RulesetRef,
    /// One result per rule and safeguard, in evaluation order.
    pub rule_results: Vec<RuleResultView>,
}

// The frozen snapshot (`evidence`) is left out: the report serves it.
impl From<read::DecisionView> for DecisionView {
    fn from(d: read::DecisionView) -> Self {
        Self {
            id: d.id,
            generation: d.generation,
            version: d.version,
            status: d.status,
            summary: d.summary,
            created_at: d.created_at,
            origin: d.origin,
            decided_by: d.decided_by,
            ruleset: d.ruleset.into(),
            rule_results: d.rule_results.into_iter().map(Into::into).collect(),
        }
    }
}

/// Which rules a decision applied.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesetRef {
    /// `workflow` (the workflow file's rules) or `ruleset` (a managed ruleset).
    pub source: String,
    /// The managed ruleset.
    pub id: Option<Uuid>,
    /// Its version.
    pub version: Option<i32>,
}

impl From<read::RulesetRef> for RulesetRef {
    fn from(r: read::RulesetRef) -> Self {
        Self {
            source: r.source,
            id: r.id,
            version: r.version,
        }
    }
}

/// One rule's result in a decision.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleResultView {
    /// The rule (or safeguard) id.
    pub rule_id: String,
    /// Its template.
    pub template: String,
    /// PASS, FAIL, REVIEW_REQUIRED or NOT_APPLICABLE.
    pub outcome: String,
    /// What a failure makes the decision (rules only).
    pub on_fail: Option<String>,
    /// What was found.
    pub message: String,
    /// The compared values, each with its evidence.
    pub values: serde_json::Value,
}

impl From<read::RuleResultView> for RuleResultView {
    fn from(r: read::RuleResultView) -> Self {
        Self {
            rule_id: r.rule_id,
            template: r.template,
            outcome: r.outcome,
            on_fail: r.on_fail,
            message: r.message,
            values: r.values,
        }
    }
}

/// An audit event.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditView {
    /// Sequence number.
    pub id: i64,
    /// Who.
    pub actor: String,
    /// What.
    pub event_type: String,
    /// Details.
    pub data: serde_json::Value,
    /// When.
    pub created_at: DateTime<Utc>,
}

impl From<read::AuditView> for AuditView {
    fn from(a: read::AuditView) -> Self {
        Self {
            id: a.id,
            actor: a.actor,
            event_type: a.event_type,
            data: a.data,
            created_at: a.created_at,
        }
    }
}
