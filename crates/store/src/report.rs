//! The decision report: one decision version of a case, exactly as it was decided, with what
//! happened around it — the data behind `GET /v1/cases/{id}/report` (JSON and PDF).
//!
//! **One version, never a mix.** Everything comes from the chosen decision row and what hangs
//! off it: its frozen snapshot (`decisions.evidence`: the rules, sources, documents, facts and
//! evidence the rules saw), its rule results and its review. Nothing is read from the live
//! `segments`/`facts`/`sources` tables, which a reprocess has moved on since. The case's
//! history stops where the next version was written, and the case's current status and
//! resolution are only shown with the latest version, so an old version's report never
//! shows what happened after it. All reads run in one REPEATABLE READ transaction, so a
//! decision written meanwhile cannot split the report either.

use chrono::{DateTime, Utc};
use ironclad_core::review::{Resolution, ReviewStatus};
use ironclad_core::rules::{ComparedValue, DocumentFacts, OnFail, RuleOutcome, RuleTemplate};
use ironclad_core::{CaseId, CaseStatus, DecisionStatus, TenantId};
use serde::Deserialize;
use uuid::Uuid;

use crate::{Store, StoreError, StoreResult};

/// Everything a report of one decision version shows.
#[derive(Debug, Clone, PartialEq)]
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

/// The case a report is about.
#[derive(Debug, Clone, PartialEq)]
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

/// Where a case stands now.
#[derive(Debug, Clone, PartialEq)]
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

/// Why a decision version was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionOrigin {
    /// The finalize job of a generation.
    Finalize,
    /// A reevaluation under the active rules.
    Reevaluate,
    /// A correction of a value, under the rules of the version corrected.
    Correction,
}

/// Where the rules a decision applied came from, as stored in `decisions.rules_source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportRulesSource {
    /// The rules written in the workflow file.
    Workflow,
    /// A managed ruleset (see `ruleset_id`/`ruleset_version`).
    Ruleset,
}

/// The decision version reported.
#[derive(Debug, Clone, PartialEq)]
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

/// The frozen record of what a decision saw (`decisions.evidence`). Decisions written before
/// snapshots existed read as an empty one.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DecisionSnapshot {
    /// The generation the facts belong to.
    pub generation: Option<i32>,
    /// The rules and policy applied.
    pub rules: Option<SnapshotRules>,
    /// The case's files.
    pub sources: Vec<SnapshotSource>,
    /// Its documents (typed page ranges) with their facts and evidence.
    pub documents: Vec<DocumentFacts>,
}

/// The rules a decision applied, as written in the snapshot.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
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

/// One file of the case, as the decision saw it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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

/// What one rule found.
#[derive(Debug, Clone, PartialEq)]
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
    pub values: Vec<ComparedValue>,
}

/// The review a decision opened.
#[derive(Debug, Clone, PartialEq)]
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

/// One event of the case's history.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
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

const REPORT_CASE: &str = r#"
SELECT id, external_reference, workflow, created_at, status, resolution, resolved_by, resolved_at
FROM cases WHERE id = $1 AND ($2::uuid IS NULL OR tenant_id = $2)
"#;

/// The decision of version $2 (the latest when NULL) of case $1, the case's latest version,
/// and when the next version after it was written.
const REPORT_DECISION: &str = r#"
SELECT d.id, d.version, d.generation, d.status, d.summary, d.origin, d.decided_by,
       d.rules_source, d.ruleset_id, d.ruleset_version, d.created_at, d.evidence,
       (SELECT max(version) FROM decisions WHERE case_id = $1) AS latest_version,
       (SELECT n.created_at FROM decisions n WHERE n.case_id = $1 AND n.version > d.version
        ORDER BY n.version LIMIT 1) AS superseded_at
FROM decisions d
WHERE d.case_id = $1
  AND d.version = coalesce($2, (SELECT max(version) FROM decisions WHERE case_id = $1))
"#;

const REPORT_RULE_RESULTS: &str = r#"
SELECT ordinal, rule_id, template, outcome, on_fail, message, "values"
FROM rule_results WHERE decision_id = $1 ORDER BY ordinal
"#;

const REPORT_REVIEWS: &str = r#"
SELECT id, status, resolution, actor, actor_role, comment, created_at, resolved_at
FROM reviews WHERE decision_id = $1 ORDER BY created_at, id
"#;

/// The case's events before $2 (all when NULL). The next version's own events carry its
/// transaction's timestamp, equal to its `created_at`, so `<` leaves them out.
const REPORT_AUDIT: &str = r#"
SELECT id, actor, event_type, data, created_at, hash
FROM audit_events WHERE case_id = $1 AND ($2::timestamptz IS NULL OR created_at < $2)
ORDER BY id
"#;

type CaseRow = (
    Uuid,
    Option<String>,
    Option<String>,
    DateTime<Utc>,
    String,
    Option<String>,
    Option<String>,
    Option<DateTime<Utc>>,
);

type DecisionRow = (
    Uuid,
    i32,
    i32,
    String,
    String,
    String,
    String,
    String,
    Option<Uuid>,
    Option<i32>,
    DateTime<Utc>,
    serde_json::Value,
    i32,
    Option<DateTime<Utc>>,
);

type ReviewRow = (
    Uuid,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

type RuleResultRow = (
    i32,
    String,
    String,
    String,
    Option<String>,
    String,
    serde_json::Value,
);

impl Store {
    /// The report of decision `version` (the latest when `None`) of a case. `None` when the
    /// case is unknown, belongs to another tenant than `tenant` (when given), or has no such
    /// version — indistinguishable on purpose.
    pub async fn decision_report(
        &self,
        tenant: Option<TenantId>,
        case: CaseId,
        version: Option<i32>,
    ) -> StoreResult<Option<DecisionReport>> {
        let mut tx = self.pool().begin().await?;
        // One snapshot of the database for every read below.
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        let case_row: Option<CaseRow> = sqlx::query_as(REPORT_CASE)
            .bind(case.0)
            .bind(tenant.map(|t| t.0))
            .fetch_optional(&mut *tx)
            .await?;
        let Some(case_row) = case_row else {
            return Ok(None);
        };
        let decision_row: Option<DecisionRow> = sqlx::query_as(REPORT_DECISION)
            .bind(case.0)
            .bind(version)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(decision_row) = decision_row else {
            return Ok(None);
        };
        let (decision, snapshot) = decision_from_row(decision_row)?;
        let rule_rows: Vec<RuleResultRow> = sqlx::query_as(REPORT_RULE_RESULTS)
            .bind(decision.id)
            .fetch_all(&mut *tx)
            .await?;
        let rule_results = rule_rows
            .into_iter()
            .map(rule_result_from_row)
            .collect::<StoreResult<Vec<_>>>()?;
        let review_rows: Vec<ReviewRow> = sqlx::query_as(REPORT_REVIEWS)
            .bind(decision.id)
            .fetch_all(&mut *tx)
            .await?;
        let reviews = review_rows
            .into_iter()
            .map(review_from_row)
            .collect::<StoreResult<Vec<_>>>()?;
        let audit: Vec<ReportAuditEvent> = sqlx::query_as(REPORT_AUDIT)
            .bind(case.0)
            .bind(decision.superseded_at)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;

        let (id, external_reference, workflow, created_at, status, resolution, by, at) = case_row;
        let case_state = if decision.superseded_at.is_none() {
            Some(CaseState {
                status: status.parse()?,
                resolution: resolution.as_deref().map(str::parse).transpose()?,
                resolved_by: by,
                resolved_at: at,
            })
        } else {
            None
        };
        Ok(Some(DecisionReport {
            case: ReportCase {
                id,
                external_reference,
                workflow,
                created_at,
            },
            case_state,
            decision,
            snapshot,
            rule_results,
            reviews,
            audit,
            generated_at: Utc::now(),
        }))
    }
}

fn decision_from_row(row: DecisionRow) -> StoreResult<(ReportDecision, DecisionSnapshot)> {
    let (
        id,
        version,
        generation,
        status,
        summary,
        origin,
        decided_by,
        rules_source,
        ruleset_id,
        ruleset_version,
        created_at,
        evidence,
        latest_version,
        superseded_at,
    ) = row;
    let origin = match origin.as_str() {
        "finalize" => DecisionOrigin::Finalize,
        "reevaluate" => DecisionOrigin::Reevaluate,
        "correction" => DecisionOrigin::Correction,
        other => {
            return Err(StoreError::Corrupt(format!(
                "decision {id}: unknown origin {other:?}"
            )))
        }
    };
    let rules_source = match rules_source.as_str() {
        "workflow" => ReportRulesSource::Workflow,
        "ruleset" => ReportRulesSource::Ruleset,
        other => {
            return Err(StoreError::Corrupt(format!(
                "decision {id}: unknown rules source {other:?}"
            )))
        }
    };
    let snapshot: DecisionSnapshot = serde_json::from_value(evidence)
        .map_err(|e| StoreError::Corrupt(format!("decision {id}: unreadable snapshot: {e}")))?;
    let decision = ReportDecision {
        id,
        version,
        latest_version,
        superseded_at,
        generation,
        status: status.parse()?,
        summary,
        origin,
        decided_by,
        rules_source,
        ruleset_id,
        ruleset_version,
        created_at,
    };
    Ok((decision, snapshot))
}

fn rule_result_from_row(row: RuleResultRow) -> StoreResult<ReportRuleResult> {
    let (ordinal, rule_id, template, outcome, on_fail, message, values) = row;
    let values: Vec<ComparedValue> = serde_json::from_value(values).map_err(|e| {
        StoreError::Corrupt(format!("rule result {rule_id}: unreadable values: {e}"))
    })?;
    Ok(ReportRuleResult {
        ordinal,
        template: template.parse()?,
        outcome: outcome.parse()?,
        on_fail: on_fail.as_deref().map(str::parse).transpose()?,
        rule_id,
        message,
        values,
    })
}

fn review_from_row(row: ReviewRow) -> StoreResult<ReportReview> {
    let (id, status, resolution, actor, actor_role, comment, created_at, resolved_at) = row;
    Ok(ReportReview {
        id,
        status: status.parse()?,
        resolution: resolution.as_deref().map(str::parse).transpose()?,
        actor,
        actor_role,
        comment,
        created_at,
        resolved_at,
    })
}
