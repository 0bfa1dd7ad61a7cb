//! The decision report as JSON (`GET /v1/cases/{id}/report`): one decision version exactly as
//! it was decided (see `ironclad_store::report`; the PDF is drawn from the store's report).

use chrono::{DateTime, Utc};
use ironclad_core::review::{Resolution, ReviewStatus};
use ironclad_core::rules::{ComparedValue, DocumentFacts, OnFail, RuleOutcome, RuleTemplate};
use ironclad_core::{CaseStatus, DecisionStatus};
use ironclad_store::report;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// Everything a report of one decision version shows.
#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionReport {
    /// The case (what does not change over its life).
    pub case: ReportCase,
    /// Where the case stands now; only with the latest version (for an older one it would
    /// be later history).
    pub case_state: Option<CaseState>,
    /// The decision version reported.
    pub decision: ReportDecision,
    /// What the rules saw, frozen when the decision was written.
    pub snapshot: DecisionSnapshot,
    /// One result per rule (then the safeguards), in evaluation order.
    pub rule_results: Vec<ReportRuleResult>,
    /// The review this decision opened (none for decisions older than reviews).
    pub reviews: Vec<ReportReview>,
    /// The case's history, oldest first, up to the moment the next version was written
    /// (see [`ReportDecision::superseded_at`]); all of it for the latest version.
    pub audit: Vec<ReportAuditEvent>,
    /// When this report was read.
    pub generated_at: DateTime<Utc>,
}

impl From<report::DecisionReport> for DecisionReport {
    fn from(r: report::DecisionReport) -> Self {
        Self {
            case: r.case.into(),
            case_state: r.case_state.map(Into::into),
            decision: r.decision.into(),
            snapshot: r.snapshot.into(),
            rule_results: r.rule_results.into_iter().map(Into::into).collect(),
            reviews: r.reviews.into_iter().map(Into::into).collect(),
            audit: r.audit.into_iter().map(Into::into).collect(),
            generated_at: r.generated_at,
        }
    }
}

/// The case a report is about.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportCase {
    /// Case id.
    pub id: Uuid,
    /// The client's reference, as submitted.
    pub external_reference: Option<String>,
    /// Workflow requested at intake.
    pub workflow: Option<String>,
    /// When it was submitted.
    pub created_at: DateTime<Utc>,
}

impl From<report::ReportCase> for ReportCase {
    fn from(c: report::ReportCase) -> Self {
        Self {
            id: c.id,
            external_reference: c.external_reference,
            workflow: c.workflow,
            created_at: c.created_at,
        }
    }
}

/// Where a case stands now.
#[derive(Debug, Serialize, ToSchema)]
pub struct CaseState {
    /// Its status.
    pub status: CaseStatus,
    /// How it was resolved (RESOLVED only).
    pub resolution: Option<Resolution>,
    /// By whom.
    pub resolved_by: Option<String>,
    /// When.
    pub resolved_at: Option<DateTime<Utc>>,
}

impl From<report::CaseState> for CaseState {
    fn from(s: report::CaseState) -> Self {
        Self {
            status: s.status,
            resolution: s.resolution,
            resolved_by: s.resolved_by,
            resolved_at: s.resolved_at,
        }
    }
}

/// Why a decision version was written.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionOrigin {
    /// The finalize job of a generation.
    Finalize,
    /// A reevaluation under the active rules.
    Reevaluate,
    /// A correction of a value, under the rules of the version corrected.
    Correction,
}

impl From<report::DecisionOrigin> for DecisionOrigin {
    fn from(o: report::DecisionOrigin) -> Self {
        match o {
            report::DecisionOrigin::Finalize => Self::Finalize,
            report::DecisionOrigin::Reevaluate => Self::Reevaluate,
            report::DecisionOrigin::Correction => Self::Correction,
        }
    }
}

/// Where the rules a decision applied came from, as stored in `decisions.rules_source`.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportRulesSource {
    /// The rules written in the workflow file.
    Workflow,
    /// A managed ruleset (see `ruleset_id`/`ruleset_version`).
    Ruleset,
}

impl From<report::ReportRulesSource> for ReportRulesSource {
    fn from(s: report::ReportRulesSource) -> Self {
        match s {
            report::ReportRulesSource::Workflow => Self::Workflow,
            report::ReportRulesSource::Ruleset => Self::Ruleset,
        }
    }
}

/// The decision version reported.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportDecision {
    /// Decision id.
    pub id: Uuid,
    /// Version (1, 2, … per case).
    pub version: i32,
    /// The case's newest version when the report was read.
    pub latest_version: i32,
    /// When the next version was written; `None` for the latest.
    pub superseded_at: Option<DateTime<Utc>>,
    /// The case generation (read of the documents) it decides.
    pub generation: i32,
    /// READY, BLOCKED or REVIEW_REQUIRED.
    pub status: DecisionStatus,
    /// One sentence: the status and the rules that led to it.
    pub summary: String,
    /// Finalize or reevaluation.
    pub origin: DecisionOrigin,
    /// Who wrote it (`system:finalize` or the reevaluating key).
    pub decided_by: String,
    /// Workflow file or managed ruleset.
    pub rules_source: ReportRulesSource,
    /// The managed ruleset, if any.
    pub ruleset_id: Option<Uuid>,
    /// Its version.
    pub ruleset_version: Option<i32>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

impl From<report::ReportDecision> for ReportDecision {
    fn from(d: report::ReportDecision) -> Self {
        Self {
            id: d.id,
            version: d.version,
            latest_version: d.latest_version,
            superseded_at: d.superseded_at,
            generation: d.generation,
            status: d.status,
            summary: d.summary,
            origin: d.origin.into(),
            decided_by: d.decided_by,
            rules_source: d.rules_source.into(),
            ruleset_id: d.ruleset_id,
            ruleset_version: d.ruleset_version,
            created_at: d.created_at,
        }
    }
}

/// The frozen record of what a decision saw (`decisions.evidence`). Decisions written before
/// snapshots existed read as an empty one.
#[derive(Debug, Default, Serialize, ToSchema)]
// Every field may be missing from an old snapshot: `default` says so in the schema.
#[serde(default)]
pub struct DecisionSnapshot {
    /// The generation the facts belong to.
    pub generation: Option<i32>,
    /// The rules and policy applied.
    pub rules: Option<SnapshotRules>,
    /// The case's files.
    pub sources: Vec<SnapshotSource>,
    /// Its documents (typed page ranges) with their facts and evidence.
    // Described as objects: the engine's fact types stay free of the OpenAPI crate.
    #[schema(value_type = Vec<Object>)]
    pub documents: Vec<DocumentFacts>,
}

impl From<report::DecisionSnapshot> for DecisionSnapshot {
    fn from(s: report::DecisionSnapshot) -> Self {
        Self {
            generation: s.generation,
            rules: s.rules.map(Into::into),
            sources: s.sources.into_iter().map(Into::into).collect(),
            documents: s.documents,
        }
    }
}

/// The rules a decision applied, as written in the snapshot.
#[derive(Debug, Default, Serialize, ToSchema)]
// As for the snapshot: every field may be missing.
#[serde(default)]
pub struct SnapshotRules {
    /// `workflow` or `ruleset`.
    pub source: Option<String>,
    /// The managed ruleset, if any.
    pub ruleset_id: Option<Uuid>,
    /// Its version.
    pub ruleset_version: Option<i32>,
    /// The decision policy, as written.
    pub policy: serde_json::Value,
    /// The rule specifications, as written.
    pub rules: Vec<serde_json::Value>,
}

impl From<report::SnapshotRules> for SnapshotRules {
    fn from(r: report::SnapshotRules) -> Self {
        Self {
            source: r.source,
            ruleset_id: r.ruleset_id,
            ruleset_version: r.ruleset_version,
            policy: r.policy,
            rules: r.rules,
        }
    }
}

/// One file of the case, as the decision saw it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SnapshotSource {
    /// Source id.
    pub id: Uuid,
    /// The client's file name.
    pub filename: String,
    /// Hex sha256 of the bytes.
    pub sha256: String,
    /// Media type.
    pub media_type: String,
    /// Size in bytes.
    pub size_bytes: i64,
    /// Page count.
    pub pages: i32,
}

impl From<report::SnapshotSource> for SnapshotSource {
    fn from(s: report::SnapshotSource) -> Self {
        Self {
            id: s.id,
            filename: s.filename,
            sha256: s.sha256,
            media_type: s.media_type,
            size_bytes: s.size_bytes,
            pages: s.pages,
        }
    }
}

/// What one rule found.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportRuleResult {
    /// Position in evaluation order.
    pub ordinal: i32,
    /// The rule's id (or a safeguard's).
    pub rule_id: String,
    /// How the rule checks.
    pub template: RuleTemplate,
    /// PASS, FAIL, REVIEW_REQUIRED or NOT_APPLICABLE.
    pub outcome: RuleOutcome,
    /// What a failure does to the decision.
    pub on_fail: Option<OnFail>,
    /// What was found.
    pub message: String,
    /// The document values compared, with their evidence.
    #[schema(value_type = Vec<Object>)]
    pub values: Vec<ComparedValue>,
}

impl From<report::ReportRuleResult> for ReportRuleResult {
    fn from(r: report::ReportRuleResult) -> Self {
        Self {
            ordinal: r.ordinal,
            rule_id: r.rule_id,
            template: r.template,
            outcome: r.outcome,
            on_fail: r.on_fail,
            message: r.message,
            values: r.values,
        }
    }
}

/// The review a decision opened.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportReview {
    /// Review id.
    pub id: Uuid,
    /// PENDING, RESOLVED or CANCELLED.
    pub status: ReviewStatus,
    /// How it was resolved.
    pub resolution: Option<Resolution>,
    /// By whom.
    pub actor: Option<String>,
    /// With which role.
    pub actor_role: Option<String>,
    /// The reviewer's comment.
    pub comment: Option<String>,
    /// When it opened (the decision was written).
    pub created_at: DateTime<Utc>,
    /// When it was resolved.
    pub resolved_at: Option<DateTime<Utc>>,
}

impl From<report::ReportReview> for ReportReview {
    fn from(r: report::ReportReview) -> Self {
        Self {
            id: r.id,
            status: r.status,
            resolution: r.resolution,
            actor: r.actor,
            actor_role: r.actor_role,
            comment: r.comment,
            created_at: r.created_at,
            resolved_at: r.resolved_at,
        }
    }
}

/// One event of the case's history.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReportAuditEvent {
    /// Sequence number.
    pub id: i64,
    /// Who.
    pub actor: String,
    /// What (`CASE_INGESTED`, `DECISION_GENERATED`, …).
    pub event_type: String,
    /// Details.
    pub data: serde_json::Value,
    /// When.
    pub created_at: DateTime<Utc>,
    /// Its hash in the tenant's audit chain (`ironclad audit verify` recomputes it), so a
    /// printed report can be checked against the database later; `None` for an event
    /// committed a moment ago and not yet sealed into the chain.
    pub hash: Option<String>,
}

impl From<report::ReportAuditEvent> for ReportAuditEvent {
    fn from(e: report::ReportAuditEvent) -> Self {
        Self {
            id: e.id,
            actor: e.actor,
            event_type: e.event_type,
            data: e.data,
            created_at: e.created_at,
            hash: e.hash,
        }
    }
}
