//! The read side: a case with everything that happened to it, listings, and stuck cases.

use crate::{Store, StoreResult};
use chrono::{DateTime, Utc};
use ironclad_core::{CaseId, TenantId};
use serde::Serialize;
use uuid::Uuid;

/// One case as listed.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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

/// A source as shown with its case.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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

/// A job as shown with its case.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct JobView {
    /// Job id.
    pub id: Uuid,
    /// Kind.
    pub kind: String,
    /// Source, for source jobs.
    pub source_id: Option<Uuid>,
    /// Status.
    pub status: String,
    /// Generation.
    pub generation: i32,
    /// Attempts made.
    pub attempt: i32,
    /// Attempts allowed.
    pub max_attempts: i32,
    /// Next attempt time (PENDING).
    pub next_attempt_at: DateTime<Utc>,
    /// Lease holder (RUNNING) or last holder.
    pub lease_owner: Option<String>,
    /// Lease expiry (RUNNING).
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// Last error, if any: operator detail (may name hosts and paths), never shown to tenants.
    pub last_error: Option<String>,
    /// Stable failure code of a FAILED job (see `ironclad_core::FailureCode`).
    pub error_code: Option<String>,
    /// When it was dead-lettered, if it was.
    pub dead_lettered_at: Option<DateTime<Utc>>,
    /// Step result.
    pub result: Option<serde_json::Value>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Finished.
    pub finished_at: Option<DateTime<Utc>>,
}

/// A decision as shown with its case.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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
    /// The frozen snapshot of what the rules saw (documents, facts, evidence, rules); left
    /// out of JSON views (the report serves it).
    #[serde(skip)]
    pub evidence: serde_json::Value,
    /// Written.
    pub created_at: DateTime<Utc>,
    /// `finalize` or `reevaluate`.
    pub origin: String,
    /// Who wrote it.
    pub decided_by: String,
    /// The rules applied: where from, and the managed ruleset's id and version.
    #[sqlx(flatten)]
    pub ruleset: RulesetRef,
    /// One result per rule and safeguard, in evaluation order.
    #[sqlx(skip)]
    pub rule_results: Vec<RuleResultView>,
}

/// Which rules a decision applied.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RulesetRef {
    /// `workflow` (the workflow file's rules) or `ruleset` (a managed ruleset).
    #[sqlx(rename = "rules_source")]
    pub source: String,
    /// The managed ruleset.
    #[sqlx(rename = "ruleset_id")]
    pub id: Option<Uuid>,
    /// Its version.
    #[sqlx(rename = "ruleset_version")]
    pub version: Option<i32>,
}

/// One rule's result in a decision.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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

/// An audit event.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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

/// A page as shown with its case (text and words are fetched separately).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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

/// An extracted field with its evidence.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
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

/// Who corrected a field, why, and what it was before.
#[derive(Debug, Clone, Serialize)]
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

/// One row of [`CASE_FACTS`].
#[derive(sqlx::FromRow)]
struct FactRow {
    segment_id: Uuid,
    field: String,
    value: Option<serde_json::Value>,
    raw_text: Option<String>,
    page: Option<i32>,
    bbox: Option<serde_json::Value>,
    confidence: Option<f32>,
    conflict: bool,
    missing: bool,
    candidates: serde_json::Value,
    version: i32,
    correction_id: Option<Uuid>,
    corrected_by: Option<String>,
    correction_reason: Option<String>,
    corrected_at: Option<DateTime<Utc>>,
    correction_method: Option<String>,
    previous_value: Option<serde_json::Value>,
    previous_raw_text: Option<String>,
}

impl FactRow {
    fn into_view(self) -> (Uuid, FactView) {
        let correction = match (
            self.correction_id,
            self.corrected_by,
            self.correction_reason,
            self.corrected_at,
        ) {
            (Some(id), Some(by), Some(reason), Some(at)) => Some(FactCorrection {
                id,
                by,
                reason,
                at,
                method: self.correction_method.unwrap_or_default(),
                previous_value: self.previous_value.filter(|v| !v.is_null()),
                previous_raw_text: self.previous_raw_text,
            }),
            _ => None,
        };
        (
            self.segment_id,
            FactView {
                field: self.field,
                value: self.value,
                raw_text: self.raw_text,
                page: self.page,
                bbox: self.bbox,
                confidence: self.confidence,
                conflict: self.conflict,
                missing: self.missing,
                candidates: self.candidates,
                version: self.version,
                correction,
            },
        )
    }
}

/// A typed page range of a source with its facts.
#[derive(Debug, Clone, Serialize)]
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

/// A case with everything that happened to it.
#[derive(Debug, Clone, Serialize)]
pub struct CaseDetail {
    /// The case.
    #[serde(flatten)]
    pub case: CaseSummary,
    /// Its files.
    pub sources: Vec<SourceView>,
    /// Its jobs, every generation.
    pub jobs: Vec<JobView>,
    /// Pages of the current generation, as read and classified.
    pub pages: Vec<PageView>,
    /// Typed segments of the current generation, with their facts.
    pub segments: Vec<SegmentView>,
    /// The latest decision, if any.
    pub decision: Option<DecisionView>,
    /// Its history, oldest first.
    pub audit: Vec<AuditView>,
}

/// Where a page to show is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSource {
    /// The source's blob.
    pub blob_key: String,
    /// Its media type.
    pub media_type: String,
    /// Its page count.
    pub pages: i32,
    /// How the current reading turned the page (degrees clockwise).
    pub rotation: i16,
}

/// A page of a case's current reading, as a correction's box is read on it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PageReading {
    /// The source's blob.
    pub blob_key: String,
    /// Its media type.
    pub media_type: String,
    /// Its page count.
    pub pages: i32,
    /// How the reading turned the page (degrees clockwise).
    pub rotation: i16,
    /// `text_layer`, `ocr` or `provider`; `None` when the page was not stored.
    pub method: Option<String>,
    /// Its words with their boxes (`[]` when not stored).
    pub words: serde_json::Value,
}

const CASE_GET: &str =
    "SELECT id, tenant_id, external_reference, workflow, status, status_reason, generation, \
     created_at, updated_at, resolution, resolved_by, resolved_at FROM cases WHERE id = $1 AND ($2::uuid IS NULL OR tenant_id = $2)";
const CASE_SOURCES: &str =
    "SELECT id, filename, sha256, media_type, size_bytes, pages, created_at \
     FROM sources WHERE case_id = $1 ORDER BY created_at, id";
const CASE_JOBS: &str =
    "SELECT id, kind, source_id, status, generation, attempt, max_attempts, next_attempt_at, \
     lease_owner, lease_expires_at, last_error, error_code, dead_lettered_at, result, created_at, \
     finished_at FROM jobs WHERE case_id = $1 ORDER BY generation, kind DESC, created_at, id";
const CASE_DECISION: &str =
    "SELECT id, generation, version, status, summary, evidence, created_at, origin, decided_by, \
     rules_source, ruleset_id, ruleset_version \
     FROM decisions d WHERE case_id = $1 \
       AND generation = (SELECT generation FROM cases WHERE id = $1) \
     ORDER BY version DESC LIMIT 1";
const DECISION_RULE_RESULTS: &str =
    "SELECT rule_id, template, outcome, on_fail, message, \"values\" FROM rule_results \
     WHERE decision_id = $1 ORDER BY ordinal";
const CASE_PAGES: &str =
    "SELECT source_id, page_index, method, confidence, rotation, doc_type, class_confidence, \
     class_reason FROM pages WHERE case_id = $1 AND generation = $2 ORDER BY source_id, page_index";
const CASE_SEGMENTS: &str =
    "SELECT id, source_id, generation, doc_type, confidence, first_page, last_page, reason \
     FROM segments WHERE case_id = $1 AND generation = $2 AND active ORDER BY source_id, ordinal";
/// The case's current facts (each field's latest version), with the correction that wrote a
/// corrected one.
const CASE_FACTS: &str = "SELECT f.segment_id, f.field, f.value, f.raw_text, f.page, f.bbox, \
     f.confidence, f.conflict, f.missing, f.candidates, f.version, k.id AS correction_id, \
     k.actor_name AS corrected_by, k.reason AS correction_reason, k.created_at AS corrected_at, \
     k.method AS correction_method, k.old -> 'value' AS previous_value, \
     k.old ->> 'raw_text' AS previous_raw_text \
     FROM facts f LEFT JOIN corrections k ON k.id = f.correction_id \
     WHERE f.case_id = $1 AND f.superseded_at IS NULL ORDER BY f.field";
const CASE_AUDIT: &str =
    "SELECT id, actor, event_type, data, created_at FROM audit_events WHERE case_id = $1 ORDER BY id";

/// Keyset page: newest first, strictly after the cursor (created_at, id).
const CASE_LIST: &str =
    "SELECT id, tenant_id, external_reference, workflow, status, status_reason, generation, \
     created_at, updated_at, resolution, resolved_by, resolved_at FROM cases \
     WHERE ($1::uuid IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR status = $2) \
       AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4)) \
       AND ($6::text IS NULL OR strpos(lower(external_reference), lower($6)) > 0) \
     ORDER BY created_at DESC, id DESC LIMIT $5";

/// Where page $4 of source $2 of the tenant's ($3) case $1 is stored, and how its current
/// reading turned it.
const PAGE_SOURCE: &str =
    "SELECT s.blob_key, s.media_type, s.pages, coalesce(p.rotation, 0::smallint) \
     FROM sources s JOIN cases c ON c.id = s.case_id \
     LEFT JOIN pages p ON p.source_id = s.id AND p.generation = c.generation AND p.page_index = $4 \
     WHERE s.case_id = $1 AND s.id = $2 AND c.tenant_id = $3";

/// Page $4 of source $2 of the tenant's ($3) case $1 as its current reading read it.
const PAGE_READING: &str =
    "SELECT s.blob_key, s.media_type, s.pages, coalesce(p.rotation, 0::smallint) AS rotation, \
     p.method, coalesce(p.words, '[]'::jsonb) AS words \
     FROM sources s JOIN cases c ON c.id = s.case_id \
     LEFT JOIN pages p ON p.source_id = s.id AND p.generation = c.generation AND p.page_index = $4 \
     WHERE s.case_id = $1 AND s.id = $2 AND c.tenant_id = $3";

/// How many of the tenant's cases are in each status.
const CASE_COUNTS: &str =
    "SELECT status, count(*) FROM cases WHERE tenant_id = $1 GROUP BY status ORDER BY status";

/// An opaque listing cursor: the last row's creation time and id.
pub fn encode_cursor(created_at: DateTime<Utc>, id: Uuid) -> String {
    format!("{}_{}", created_at.timestamp_micros(), id)
}

/// Parses a cursor made by [`encode_cursor`].
pub fn decode_cursor(cursor: &str) -> Option<(DateTime<Utc>, Uuid)> {
    let (micros, id) = cursor.split_once('_')?;
    let at = DateTime::from_timestamp_micros(micros.parse().ok()?)?;
    Some((at, id.parse().ok()?))
}

impl Store {
    /// A case with sources, jobs, decision and audit trail; `None` if unknown or (when a tenant
    /// is given) another tenant's — the two are indistinguishable on purpose.
    pub async fn case_detail(
        &self,
        tenant: Option<TenantId>,
        id: CaseId,
    ) -> StoreResult<Option<CaseDetail>> {
        let case: Option<CaseSummary> = sqlx::query_as(CASE_GET)
            .bind(id.0)
            .bind(tenant.map(|t| t.0))
            .fetch_optional(self.pool())
            .await?;
        let Some(case) = case else { return Ok(None) };
        let sources = sqlx::query_as(CASE_SOURCES)
            .bind(id.0)
            .fetch_all(self.pool())
            .await?;
        let jobs = sqlx::query_as(CASE_JOBS)
            .bind(id.0)
            .fetch_all(self.pool())
            .await?;
        let pages = sqlx::query_as(CASE_PAGES)
            .bind(id.0)
            .bind(case.generation)
            .fetch_all(self.pool())
            .await?;
        type SegmentRow = (
            Uuid,
            Uuid,
            i32,
            Option<String>,
            f32,
            i32,
            i32,
            Option<String>,
        );
        let segment_rows: Vec<SegmentRow> = sqlx::query_as(CASE_SEGMENTS)
            .bind(id.0)
            .bind(case.generation)
            .fetch_all(self.pool())
            .await?;
        let mut facts: Vec<(Uuid, FactView)> = Vec::new();
        if !segment_rows.is_empty() {
            let rows: Vec<FactRow> = sqlx::query_as(CASE_FACTS)
                .bind(id.0)
                .fetch_all(self.pool())
                .await?;
            facts = rows.into_iter().map(FactRow::into_view).collect();
        }
        let segments = segment_rows
            .into_iter()
            .map(
                |(
                    sid,
                    source_id,
                    generation,
                    doc_type,
                    confidence,
                    first_page,
                    last_page,
                    reason,
                )| SegmentView {
                    id: sid,
                    source_id,
                    generation,
                    doc_type,
                    confidence,
                    first_page,
                    last_page,
                    reason,
                    facts: facts
                        .iter()
                        .filter(|(s, _)| *s == sid)
                        .map(|(_, f)| f.clone())
                        .collect(),
                },
            )
            .collect();
        let mut decision: Option<DecisionView> = sqlx::query_as(CASE_DECISION)
            .bind(id.0)
            .fetch_optional(self.pool())
            .await?;
        if let Some(d) = decision.as_mut() {
            d.rule_results = sqlx::query_as(DECISION_RULE_RESULTS)
                .bind(d.id)
                .fetch_all(self.pool())
                .await?;
        }
        let audit = sqlx::query_as(CASE_AUDIT)
            .bind(id.0)
            .fetch_all(self.pool())
            .await?;
        Ok(Some(CaseDetail {
            case,
            sources,
            jobs,
            pages,
            segments,
            decision,
            audit,
        }))
    }

    /// A page of cases, newest first; pass the last row's cursor to continue.
    pub async fn list_cases(
        &self,
        tenant: Option<TenantId>,
        status: Option<&str>,
        cursor: Option<(DateTime<Utc>, Uuid)>,
        limit: i64,
    ) -> StoreResult<Vec<CaseSummary>> {
        self.search_cases(tenant, status, None, cursor, limit).await
    }

    /// [`Store::list_cases`] narrowed to cases whose external reference contains `reference`
    /// (ignoring case; no wildcards, so user text is taken literally).
    pub async fn search_cases(
        &self,
        tenant: Option<TenantId>,
        status: Option<&str>,
        reference: Option<&str>,
        cursor: Option<(DateTime<Utc>, Uuid)>,
        limit: i64,
    ) -> StoreResult<Vec<CaseSummary>> {
        Ok(sqlx::query_as(CASE_LIST)
            .bind(tenant.map(|t| t.0))
            .bind(status)
            .bind(cursor.map(|c| c.0))
            .bind(cursor.map(|c| c.1))
            .bind(limit)
            .bind(reference)
            .fetch_all(self.pool())
            .await?)
    }

    /// Where page `index` of a source of the tenant's case is stored; `None` when the case is
    /// unknown, another tenant's, or has no such source.
    pub async fn page_source(
        &self,
        tenant: TenantId,
        case: CaseId,
        source: Uuid,
        index: i32,
    ) -> StoreResult<Option<PageSource>> {
        let row: Option<(String, String, i32, i16)> = sqlx::query_as(PAGE_SOURCE)
            .bind(case.0)
            .bind(source)
            .bind(tenant.0)
            .bind(index)
            .fetch_optional(self.pool())
            .await?;
        Ok(
            row.map(|(blob_key, media_type, pages, rotation)| PageSource {
                blob_key,
                media_type,
                pages,
                rotation,
            }),
        )
    }

    /// Page `index` of a source of the tenant's case as its current reading read it (words
    /// and all); `None` when the case is unknown, another tenant's, or has no such source.
    pub async fn page_reading(
        &self,
        tenant: TenantId,
        case: CaseId,
        source: Uuid,
        index: i32,
    ) -> StoreResult<Option<PageReading>> {
        Ok(sqlx::query_as(PAGE_READING)
            .bind(case.0)
            .bind(source)
            .bind(tenant.0)
            .bind(index)
            .fetch_optional(self.pool())
            .await?)
    }

    /// How many of the tenant's cases are in each status (statuses with none are absent).
    pub async fn case_counts(&self, tenant: TenantId) -> StoreResult<Vec<(String, i64)>> {
        Ok(sqlx::query_as(CASE_COUNTS)
            .bind(tenant.0)
            .fetch_all(self.pool())
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips() {
        let at = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap_or_default();
        let id = Uuid::now_v7();
        assert_eq!(decode_cursor(&encode_cursor(at, id)), Some((at, id)));
        assert_eq!(decode_cursor("garbage"), None);
        assert_eq!(decode_cursor("12_notauuid"), None);
    }
}
