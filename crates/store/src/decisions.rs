//! Decisions: what core decided about a case generation, written with everything that must
//! agree with it — the rule results, a frozen snapshot of the facts and evidence the rules saw,
//! the review it opens (or the auto-resolution the policy allows), the audit event and the
//! notification — in one transaction. The store decides nothing: [`ironclad_core::rules`]
//! does, from the facts this module loads.

use ironclad_core::audit::AuditEventType;
use ironclad_core::notification::{
    DossierDecided, DossierResolved, NotificationData, NotificationType,
};
use ironclad_core::page::{BBox, ReadMethod};
use ironclad_core::parse::Value;
use ironclad_core::review::{Resolution, ReviewStatus};
use ironclad_core::rules::{
    evaluate, CaseFacts, CompiledRuleset, CorrectionNote, DocumentFacts, Evidence, FactInput,
};
use ironclad_core::DecisionStatus;
use serde::Serialize;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::notify::{announce_resolved, notify_ctes, WEBHOOK_MAX_ATTEMPTS};
use crate::replay::{self, ActionAnswer, ActionError, ActionKey};
use crate::{audit_trail, Store, StoreResult};

/// Where the rules a decision applied came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RulesSource {
    /// The rules written in the case's workflow file.
    Workflow,
    /// The tenant's active managed ruleset for the workflow.
    Ruleset,
}

impl RulesSource {
    /// Spelling stored in `decisions.rules_source`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Workflow => "workflow",
            Self::Ruleset => "ruleset",
        }
    }
}

/// The rules a decision is computed with, and where they came from (recorded on it).
#[derive(Debug, Clone, Copy)]
pub struct RulesApplied<'a> {
    /// Compiled rules and policy.
    pub ruleset: &'a CompiledRuleset,
    /// Workflow file or managed ruleset.
    pub source: RulesSource,
    /// The managed ruleset's id and version, when `source` is `Ruleset`.
    pub ruleset_id: Option<Uuid>,
    /// Its version.
    pub ruleset_version: Option<i32>,
}

impl<'a> RulesApplied<'a> {
    /// The rules of a case: a managed ruleset's `(id, version)`, or `None` for the workflow's.
    pub fn new(ruleset: &'a CompiledRuleset, managed: Option<(Uuid, i32)>) -> Self {
        Self {
            ruleset,
            source: if managed.is_some() {
                RulesSource::Ruleset
            } else {
                RulesSource::Workflow
            },
            ruleset_id: managed.map(|m| m.0),
            ruleset_version: managed.map(|m| m.1),
        }
    }
}

/// Why a decision is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The finalize job of a generation (exactly once per generation).
    Finalize,
    /// A reevaluation under the active rules (a new version of the same generation).
    Reevaluate,
    /// A person corrected a value: a new version of the same generation under the rules of
    /// the version they looked at.
    Correction,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Self::Finalize => "finalize",
            Self::Reevaluate => "reevaluate",
            Self::Correction => "correction",
        }
    }

    /// Case statuses this origin may decide from.
    fn decides_from(self) -> &'static [&'static str] {
        match self {
            Self::Finalize => &["INGESTED", "PROCESSING"],
            Self::Reevaluate | Self::Correction => &["AWAITING_REVIEW"],
        }
    }
}

/// What a case's rules need to know about it.
#[derive(Debug, Clone)]
pub struct DecisionContext {
    /// Owner.
    pub tenant_id: Uuid,
    /// Workflow name the case asked for (or was pinned to).
    pub workflow: Option<String>,
    /// Pinned workflow version.
    pub workflow_id: Option<Uuid>,
    /// The tenant's ACTIVE ruleset for that workflow, if any: (id, version, spec).
    pub active_ruleset: Option<(Uuid, i32, serde_json::Value)>,
}

const DECISION_CONTEXT: &str = r#"
SELECT c.tenant_id, coalesce(w.name, c.workflow), c.workflow_id, r.id, r.version, r.spec
FROM cases c
LEFT JOIN workflows w ON w.id = c.workflow_id
LEFT JOIN rulesets r ON r.tenant_id = c.tenant_id AND r.workflow = coalesce(w.name, c.workflow)
                     AND r.status = 'ACTIVE'
WHERE c.id = $1 AND ($2::uuid IS NULL OR c.tenant_id = $2)
"#;

/// The current facts (the latest version of each field) of a generation's active segments,
/// segment by segment, each with how its page was read (`pages.method`: the rules let OCR's
/// confusions ask for review rather than block) and, for a corrected value, who corrected it
/// and why. $1 case, $2 generation. The page is found by the `pages` unique key (source,
/// generation, page index), so the join costs one index probe per fact; a fact without a
/// page, or whose page was not stored, gets no method (taken as written), and so does a
/// corrected one: a person's value is taken as written, wherever its box lies.
const GENERATION_FACTS: &str = r#"
SELECT s.id AS segment_id, s.source_id, s.doc_type, s.first_page, s.last_page,
       f.field, f.value, f.raw_text, f.page, f.bbox, f.confidence, f.conflict, f.missing,
       CASE WHEN f.correction_id IS NULL THEN p.method END AS method,
       k.id AS correction_id, k.actor_name AS corrected_by, k.reason AS correction_reason
FROM segments s
LEFT JOIN facts f ON f.segment_id = s.id AND f.superseded_at IS NULL
LEFT JOIN pages p ON p.source_id = s.source_id AND p.generation = s.generation
                 AND p.page_index = f.page
LEFT JOIN corrections k ON k.id = f.correction_id
WHERE s.case_id = $1 AND s.generation = $2 AND s.active
ORDER BY s.source_id, s.ordinal, f.field
"#;

/// Inserts the decision under the case's next version and moves the case to AWAITING_REVIEW
/// (DECISION_GENERATED is recorded last, see [`decide`]). A finalize decision exists once per generation (a rerun finds
/// it and writes nothing). $1 case, $2 generation, $3 id, $4 status, $5 summary, $6 ruleset id,
/// $7 ruleset version, $8 snapshot (the case's sources are added here, saving a round trip),
/// $9 origin, $10 actor, $11 rules source, $12 statuses the case may be decided from.
const DECISION_WRITE: &str = r#"
WITH decision AS (
    INSERT INTO decisions (id, case_id, generation, version, status, summary, ruleset_id,
                           ruleset_version, evidence, origin, decided_by, rules_source, workflow_id)
    SELECT $3, c.id, $2,
           (SELECT coalesce(max(version), 0) + 1 FROM decisions WHERE case_id = $1),
           $4, $5, $6, $7,
           $8::jsonb || jsonb_build_object('sources', (
               SELECT coalesce(jsonb_agg(jsonb_build_object('id', s.id, 'filename', s.filename,
                          'sha256', s.sha256, 'media_type', s.media_type,
                          'size_bytes', s.size_bytes, 'pages', s.pages)
                      ORDER BY s.created_at, s.id), '[]')
               FROM sources s WHERE s.case_id = $1)),
           $9, $10, $11, c.workflow_id
    FROM cases c WHERE c.id = $1 AND c.generation = $2 AND c.status = ANY($12)
    ON CONFLICT (case_id, generation) WHERE origin = 'finalize' DO NOTHING
    RETURNING id, case_id, version, status
), moved AS (
    UPDATE cases SET status = 'AWAITING_REVIEW', status_reason = NULL, updated_at = now()
    WHERE id IN (SELECT case_id FROM decision)
)
SELECT d.version, c.tenant_id, c.external_reference
FROM decision d JOIN cases c ON c.id = d.case_id
"#;

/// Everything a written decision brings, in one statement (one round trip): its rule results
/// ($1 decision, $2–$8 one array per column), its review ($9 id, $10 tenant, $11 case, $12
/// version, $13 decision status, $14 review status, $15 resolution, $16 actor and role, $25
/// the policy's review SLA in seconds or NULL), its audit event ($17 actor, $18 type, $19
/// data) and its notification with the deliveries ($20 id, $21 type, $22 dedup key, $23 data,
/// $24 max attempts).
const DECISION_RECORDS: &str = concat!(
    r#"WITH results AS (
    INSERT INTO rule_results (decision_id, ordinal, rule_id, template, outcome, on_fail, message, "values")
    SELECT $1, r.ordinal, r.rule_id, r.template, r.outcome, r.on_fail, r.message, r.vals
    FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::jsonb[])
        AS r(ordinal, rule_id, template, outcome, on_fail, message, vals)
), review AS (
    INSERT INTO reviews (id, tenant_id, case_id, decision_id, decision_version, decision_status,
                         status, resolution, actor, actor_role, resolved_at, due_at)
    VALUES ($9, $10, $11, $1, $12, $13, $14, $15, $16, $16,
            CASE WHEN $14 = 'RESOLVED' THEN now() END,
            now() + make_interval(secs => $25::float8))
), audited AS (
    INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
    VALUES ($11, $10, $17, $18, $19)
), "#,
    notify_ctes!("$20", "$10", "$11", "$21", "$22", "$23", "$24"),
    "\nSELECT count(*) FROM n"
);

/// Resolves an AWAITING_REVIEW case. $1 case, $2 resolution, $3 actor.
pub(crate) const CASE_RESOLVE: &str = r#"
UPDATE cases SET status = 'RESOLVED', resolution = $2, resolved_by = $3, resolved_at = now(),
    updated_at = now()
WHERE id = $1 AND status = 'AWAITING_REVIEW'
"#;

/// Actor of decisions and resolutions the system makes on its own.
pub const SYSTEM_ACTOR: &str = "system";

/// A decision that was written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WrittenDecision {
    /// Its id.
    pub id: Uuid,
    /// Its version (1, 2, … per case).
    pub version: i32,
    /// What core decided.
    pub status: DecisionStatus,
    /// Whether the policy resolved it without a person.
    pub auto_resolved: bool,
}

impl Store {
    /// What a case's rules depend on (tenant-scoped when `tenant` is given).
    pub async fn decision_context(
        &self,
        case: Uuid,
        tenant: Option<Uuid>,
    ) -> StoreResult<Option<DecisionContext>> {
        type Row = (
            Uuid,
            Option<String>,
            Option<Uuid>,
            Option<Uuid>,
            Option<i32>,
            Option<serde_json::Value>,
        );
        let row: Option<Row> = sqlx::query_as(DECISION_CONTEXT)
            .bind(case)
            .bind(tenant)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(
            |(tenant_id, workflow, workflow_id, rid, rver, spec)| DecisionContext {
                tenant_id,
                workflow,
                workflow_id,
                active_ruleset: match (rid, rver, spec) {
                    (Some(id), Some(v), Some(s)) => Some((id, v, s)),
                    _ => None,
                },
            },
        ))
    }
}

/// One row of [`GENERATION_FACTS`]: a segment, and one of its facts (absent for a segment
/// without facts).
#[derive(sqlx::FromRow)]
struct GenerationFact {
    segment_id: Uuid,
    source_id: Uuid,
    doc_type: Option<String>,
    first_page: i32,
    last_page: i32,
    field: Option<String>,
    value: Option<serde_json::Value>,
    raw_text: Option<String>,
    page: Option<i32>,
    bbox: Option<serde_json::Value>,
    confidence: Option<f32>,
    conflict: Option<bool>,
    missing: Option<bool>,
    method: Option<String>,
    correction_id: Option<Uuid>,
    corrected_by: Option<String>,
    correction_reason: Option<String>,
}

/// Loads the facts of a generation as core sees them.
pub(crate) async fn generation_facts(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
    generation: i32,
) -> Result<CaseFacts, sqlx::Error> {
    let rows: Vec<GenerationFact> = sqlx::query_as(GENERATION_FACTS)
        .bind(case)
        .bind(generation)
        .fetch_all(&mut **tx)
        .await?;
    let mut documents: Vec<DocumentFacts> = Vec::new();
    for row in rows {
        if documents
            .last()
            .is_none_or(|d| d.segment_id != row.segment_id)
        {
            documents.push(DocumentFacts {
                segment_id: row.segment_id,
                source_id: row.source_id,
                document_type: row.doc_type,
                first_page: row.first_page.max(0) as u32,
                last_page: row.last_page.max(0) as u32,
                facts: Vec::new(),
            });
        }
        let (Some(field), Some(doc)) = (row.field, documents.last_mut()) else {
            continue;
        };
        doc.facts.push(FactInput {
            field,
            // A value this build cannot read is treated as absent (the rule then asks for
            // review) rather than failing the whole decision.
            value: row
                .value
                .and_then(|v| serde_json::from_value::<Value>(v).ok())
                .map(std::sync::Arc::new),
            evidence: Evidence {
                source_id: Some(row.source_id),
                page: row.page.and_then(|p| u32::try_from(p).ok()),
                bbox: row
                    .bbox
                    .and_then(|b| serde_json::from_value::<BBox>(b).ok()),
                raw_text: row.raw_text.map(Into::into),
                confidence: row.confidence.map(f64::from),
                read_method: row.method.as_deref().and_then(read_method),
                correction: match (row.correction_id, row.corrected_by, row.correction_reason) {
                    (Some(id), Some(by), Some(reason)) => Some(CorrectionNote { id, by, reason }),
                    _ => None,
                },
            },
            conflict: row.conflict.unwrap_or(false),
            missing: row.missing.unwrap_or(false),
        });
    }
    Ok(CaseFacts { documents })
}

/// A `pages.method` as core names it; `None` for a spelling this build does not know (the
/// table's CHECK allows none), which the rules take as a value read as written.
fn read_method(method: &str) -> Option<ReadMethod> {
    match method {
        "text_layer" => Some(ReadMethod::TextLayer),
        "ocr" => Some(ReadMethod::Ocr),
        "provider" => Some(ReadMethod::Provider),
        _ => None,
    }
}

/// Evaluates and writes a decision of `origin` for the case generation, inside the caller's
/// transaction (which holds the case lock). `None`: nothing written (the generation already
/// has its finalize decision, or the case is not in a status this origin decides from).
pub(crate) async fn decide(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
    generation: i32,
    origin: Origin,
    actor: &str,
    rules: &RulesApplied<'_>,
) -> Result<Option<WrittenDecision>, sqlx::Error> {
    let facts = generation_facts(tx, case, generation).await?;
    let evaluation = evaluate(rules.ruleset, &facts);
    let snapshot = snapshot(generation, rules, &facts);
    let id = Uuid::now_v7();
    let statuses: Vec<String> = origin
        .decides_from()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let written: Option<(i32, Uuid, Option<String>)> = sqlx::query_as(DECISION_WRITE)
        .bind(case)
        .bind(generation)
        .bind(id)
        .bind(evaluation.status.as_str())
        .bind(crate::storable(&evaluation.summary).as_ref())
        .bind(rules.ruleset_id)
        .bind(rules.ruleset_version)
        .bind(snapshot)
        .bind(origin.as_str())
        .bind(actor)
        .bind(rules.source.as_str())
        .bind(&statuses)
        .fetch_optional(&mut **tx)
        .await?;
    let Some((version, tenant, reference)) = written else {
        return Ok(None);
    };
    let auto =
        evaluation.status == DecisionStatus::Ready && rules.ruleset.policy.auto_approve_ready;
    let (review_status, resolution, review_actor) = if auto {
        (
            ReviewStatus::Resolved,
            Some(Resolution::Approved.as_str()),
            Some(SYSTEM_ACTOR),
        )
    } else {
        (ReviewStatus::Pending, None, None)
    };
    let about = DossierDecided {
        case_id: case,
        external_reference: reference.as_deref(),
        decision_id: id,
        decision_version: version,
        status: evaluation.status,
        summary: &evaluation.summary,
    }
    .to_json();
    let r = &evaluation.results;
    sqlx::query(DECISION_RECORDS)
        .bind(id)
        .bind((0..r.len() as i32).collect::<Vec<_>>())
        .bind(r.iter().map(|x| x.rule_id.to_string()).collect::<Vec<_>>())
        .bind(r.iter().map(|x| x.template.as_str()).collect::<Vec<_>>())
        .bind(r.iter().map(|x| x.outcome.as_str()).collect::<Vec<_>>())
        .bind(
            r.iter()
                .map(|x| x.on_fail.map(|o| o.as_str()))
                .collect::<Vec<_>>(),
        )
        .bind(
            r.iter()
                .map(|x| crate::storable(&x.message).into_owned())
                .collect::<Vec<_>>(),
        )
        .bind(
            r.iter()
                .map(|x| serde_json::to_value(&x.values).unwrap_or(serde_json::Value::Null))
                .collect::<Vec<_>>(),
        )
        .bind(Uuid::now_v7())
        .bind(tenant)
        .bind(case)
        .bind(version)
        .bind(evaluation.status.as_str())
        .bind(review_status.as_str())
        .bind(resolution)
        .bind(review_actor)
        .bind(crate::storable(actor).as_ref())
        .bind(AuditEventType::DecisionGenerated.as_str())
        .bind(serde_json::json!({"decision_id": id, "version": version, "status": evaluation.status,
                                 "generation": generation, "origin": origin.as_str(),
                                 "ruleset_id": rules.ruleset_id, "ruleset_version": rules.ruleset_version}))
        .bind(Uuid::now_v7())
        .bind(NotificationType::for_decision(evaluation.status).as_str())
        .bind(format!("case:{case}:decision:{version}"))
        .bind(about)
        .bind(WEBHOOK_MAX_ATTEMPTS)
        .bind(
            rules
                .ruleset
                .policy
                .review_sla
                .as_ref()
                .map(|sla| sla.seconds() as f64),
        )
        .execute(&mut **tx)
        .await?;
    if auto {
        sqlx::query(CASE_RESOLVE)
            .bind(case)
            .bind(Resolution::Approved.as_str())
            .bind(SYSTEM_ACTOR)
            .execute(&mut **tx)
            .await?;
        announce_resolved(
            tx,
            tenant,
            DossierResolved {
                case_id: case,
                external_reference: reference.as_deref(),
                decision_version: version,
                resolution: Resolution::Approved,
                actor: SYSTEM_ACTOR,
                confirmed_by: None,
            },
        )
        .await?;
        audit_trail::record(
            tx,
            tenant,
            Some(case),
            SYSTEM_ACTOR,
            AuditEventType::AutoResolved,
            serde_json::json!({"decision_id": id, "version": version, "resolution": "APPROVED",
                               "policy": "auto_approve_ready"}),
        )
        .await?;
    }
    Ok(Some(WrittenDecision {
        id,
        version,
        status: evaluation.status,
        auto_resolved: auto,
    }))
}

/// Cancels the case's open review (a newer decision opens its own): PENDING, or
/// AWAITING_SECOND when a reprocess supersedes what waited for a second reviewer.
pub(crate) async fn cancel_open_review(
    tx: &mut Transaction<'_, Postgres>,
    case: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE reviews SET status = 'CANCELLED' \
         WHERE case_id = $1 AND status IN ('PENDING', 'AWAITING_SECOND')",
    )
    .bind(case)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The frozen record of what a decision saw: a report of this version is built from it alone.
/// DECISION_WRITE adds the case's sources to it.
fn snapshot(generation: i32, rules: &RulesApplied<'_>, facts: &CaseFacts) -> serde_json::Value {
    serde_json::json!({
        "generation": generation,
        "rules": {
            "source": rules.source,
            "ruleset_id": rules.ruleset_id,
            "ruleset_version": rules.ruleset_version,
            "policy": rules.ruleset.policy,
            "rules": rules.ruleset.rules.iter().map(|r| &r.spec).collect::<Vec<_>>(),
        },
        "documents": facts.documents,
    })
}

impl Store {
    /// Writes a new decision version for the case's current generation under `rules`, from
    /// the facts already read (nothing is read again). Only a case AWAITING_REVIEW is
    /// reevaluated; its pending review is cancelled and the new decision opens its own.
    pub async fn reevaluate_case(
        &self,
        key: &ActionKey,
        case: Uuid,
        rules: &RulesApplied<'_>,
        actor: &str,
        respond: impl FnOnce(&WrittenDecision) -> serde_json::Value,
    ) -> Result<ActionAnswer, ActionError> {
        let mut tx = self.pool().begin().await?;
        let (status, generation) = replay::lock_case(&mut tx, key.tenant, case).await?;
        if let Some(answer) = replay::replayed(&mut tx, key).await? {
            return Ok(answer);
        }
        if status != "AWAITING_REVIEW" {
            return Err(ActionError::Conflict {
                message: format!(
                    "only a case awaiting review can be reevaluated; this one is {status} \
                     (reprocess it to read it again)"
                ),
                current: serde_json::json!({ "status": status }),
            });
        }
        crate::claims::check_claim(&mut tx, case, actor).await?;
        if let Some(waiting) = crate::reviews::awaiting_second(&mut tx, case).await? {
            return Err(waiting);
        }
        cancel_open_review(&mut tx, case).await?;
        let written = decide(&mut tx, case, generation, Origin::Reevaluate, actor, rules)
            .await?
            .ok_or_else(|| ActionError::Conflict {
                message: "the case changed while it was being reevaluated; try again".into(),
                current: serde_json::Value::Null,
            })?;
        audit_trail::record(
            &mut tx,
            key.tenant,
            Some(case),
            actor,
            AuditEventType::Reevaluated,
            serde_json::json!({
                "decision_id": written.id, "version": written.version, "status": written.status,
                "rules_source": rules.source, "ruleset_id": rules.ruleset_id,
                "ruleset_version": rules.ruleset_version,
            }),
        )
        .await?;
        replay::commit_answer(tx, key, 201, respond(&written)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_read_method_reads_back_from_its_pages_spelling() {
        // The runtime writes `pages.method` in core's serde spelling; a method this mapping
        // missed would make OCR's values look printed and let a misreading block.
        for m in [ReadMethod::TextLayer, ReadMethod::Ocr, ReadMethod::Provider] {
            let spelled = serde_json::to_value(m).ok();
            let spelled = spelled.as_ref().and_then(|v| v.as_str()).unwrap_or("");
            assert_eq!(read_method(spelled), Some(m), "{spelled}");
        }
        assert_eq!(read_method("typed"), None);
    }
}
