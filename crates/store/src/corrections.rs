//! Corrections: a reviewer fixes one value the documents were read as, and the case is
//! decided again.
//!
//! A correction is a new version of the fact, never an edit in place: the current version is
//! marked superseded and the next one written with the new value, its box (or none, when it
//! was typed) and a link to the correction, which keeps who, when, why and the old value with
//! its evidence. The same transaction cancels the open review and writes decision N+1
//! (origin `correction`) under the rules of decision N — the version the reviewer looked at —
//! so its rule results show the new value, "corrected by <name>: <reason>". Under the policy's
//! `four_eyes` the correction first waits for a second reviewer (see [`crate::reviews`]).
//!
//! Everything runs under the case lock: two reviewers correcting at once are ordered, and the
//! second one's `expected_decision_version` is then stale (409).

use ironclad_core::audit::AuditEventType;
use ironclad_core::review::FourEyesAction;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::decisions::{cancel_open_review, decide, Origin, RulesApplied, WrittenDecision};
use crate::replay::{self, ActionAnswer, ActionError, ActionKey};
use crate::reviews::{self, Proposal};
use crate::{audit_trail, claims, people, Store, StoreResult};

/// How the new value was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorrectionMethod {
    /// Typed by the reviewer.
    Typed,
    /// Read from a box the reviewer drew on the page.
    Box,
}

impl CorrectionMethod {
    fn as_str(self) -> &'static str {
        match self {
            Self::Typed => "typed",
            Self::Box => "box",
        }
    }
}

/// The new value of a field, with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct NewValue {
    /// The typed value (`{"kind", "value"}`), as the field's parser read it.
    pub value: serde_json::Value,
    /// The text it was read from: as typed, or as the box read.
    pub raw_text: String,
    /// The page of the box (0-based), for a value read from a box.
    pub page: Option<i32>,
    /// The box (`{x0, y0, x1, y1}`, page fractions).
    pub bbox: Option<serde_json::Value>,
}

/// A correction, as the API received it (the value already parsed by the field's parser).
#[derive(Debug, Clone)]
pub struct CorrectionRequest {
    /// The case.
    pub case: Uuid,
    /// The document (segment) of the case's current reading.
    pub segment: Uuid,
    /// The field.
    pub field: String,
    /// The new value.
    pub new: NewValue,
    /// Typed or read from a box.
    pub method: CorrectionMethod,
    /// Why.
    pub reason: String,
    /// The decision version the reviewer looked at.
    pub expected_decision_version: i32,
    /// Who.
    pub actor: String,
    /// With which role.
    pub actor_role: String,
}

/// A correction applied.
#[derive(Debug, Clone)]
pub struct Corrected {
    /// The correction.
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
    /// The decision the correction made (version N+1, origin `correction`).
    pub decision: WrittenDecision,
}

/// What a correction request did.
#[derive(Debug, Clone)]
pub enum CorrectionOutcome {
    /// Applied: the fact's next version and decision N+1 are written.
    Applied(Corrected),
    /// Held for a second reviewer (the policy's `four_eyes`).
    AwaitingSecond(Proposal),
}

/// What a correction needs to know about its case before its value is parsed: the case's
/// status, the document (when it is one of the case's current reading), and the decision the
/// reviewer looked at.
#[derive(Debug, Clone)]
pub struct CorrectionTarget {
    /// The case's status.
    pub case_status: String,
    /// The document, when `segment` is one of the case's current reading.
    pub document: Option<TargetDocument>,
    /// The latest decision's version.
    pub decision_version: Option<i32>,
    /// It, as a conflict's `details.current` shows it (version, status, summary, written).
    pub current_decision: serde_json::Value,
    /// Its frozen snapshot's rules (`{source, ruleset_id, ruleset_version, policy, rules}`).
    pub decision_rules: Option<serde_json::Value>,
}

/// The document a correction is about.
#[derive(Debug, Clone)]
pub struct TargetDocument {
    /// Its type (`None`: an UNKNOWN page range, which has no fields).
    pub doc_type: Option<String>,
    /// The file it lies in.
    pub source_id: Uuid,
    /// Its first page (0-based).
    pub first_page: i32,
    /// Its last page (inclusive).
    pub last_page: i32,
}

/// $1 tenant, $2 case, $3 segment of the case's current reading (or NULL for none).
const TARGET: &str = r#"
SELECT c.status, s.id, s.doc_type, s.source_id, s.first_page, s.last_page, d.version,
       d.evidence -> 'rules',
       CASE WHEN d.version IS NOT NULL THEN
           json_build_object('version', d.version, 'status', d.status, 'summary', d.summary,
                             'created_at', d.created_at)::jsonb END
FROM cases c
LEFT JOIN segments s ON s.case_id = c.id AND s.generation = c.generation AND s.active
                    AND s.id = $3
LEFT JOIN LATERAL (SELECT version, evidence, status, summary, created_at FROM decisions
                   WHERE case_id = c.id ORDER BY version DESC LIMIT 1) d ON true
WHERE c.id = $2 AND c.tenant_id = $1
"#;

/// The current version of field $2 of segment $1 (as the correction's record of the old).
const CURRENT_FACT: &str = r#"
SELECT id, version, jsonb_build_object('value', value, 'raw_text', raw_text, 'page', page,
                                       'bbox', bbox, 'confidence', confidence,
                                       'version', version)
FROM facts WHERE segment_id = $1 AND field = $2 AND superseded_at IS NULL
"#;

/// $1 id, $2 tenant, $3 case, $4 generation, $5 segment, $6 field, $7 old, $8 new, $9 method,
/// $10 reason, $11 actor, $12 name, $13 role, $14 expected version, $15 status, $16 old fact.
const CORRECTION_INSERT: &str = r#"
INSERT INTO corrections (id, tenant_id, case_id, generation, segment_id, field, old, new, method,
                         reason, actor, actor_name, actor_role, expected_decision_version,
                         status, old_fact_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
"#;

/// The correction waiting or about to be applied: its case's segment, field and new value.
const CORRECTION_GET: &str = r#"
SELECT segment_id, field, new, actor, actor_name, reason FROM corrections
WHERE id = $1 AND status = 'AWAITING_SECOND'
"#;

/// Supersedes field $2 of segment $1 and writes its next version ($3 id, $4 case, $5 value,
/// $6 raw text, $7 page, $8 box, $9 correction), in one statement.
const FACT_NEXT_VERSION: &str = r#"
WITH old AS (
    UPDATE facts SET superseded_at = now()
    WHERE segment_id = $1 AND field = $2 AND superseded_at IS NULL
    RETURNING version
)
INSERT INTO facts (id, segment_id, case_id, field, value, raw_text, page, bbox, confidence,
                   conflict, missing, candidates, version, correction_id)
SELECT $3, $1, $4, $2, $5, $6, $7, $8, NULL, false, false, '[]'::jsonb,
       coalesce((SELECT max(version) FROM old), 0) + 1, $9
RETURNING version
"#;

/// $1 correction, $2 new fact, $3 decision version, $4 second reviewer, $5 name, $6 comment.
const CORRECTION_APPLIED: &str = r#"
UPDATE corrections SET status = 'APPLIED', new_fact_id = $2, decision_version = $3,
    second_actor = $4, second_actor_name = $5, second_comment = $6,
    second_at = CASE WHEN $4::text IS NULL THEN NULL ELSE now() END
WHERE id = $1 AND status = 'AWAITING_SECOND'
"#;

const CORRECTION_DECLINED: &str = r#"
UPDATE corrections SET status = 'DECLINED', second_actor = $2, second_actor_name = $3,
    second_comment = $4, second_at = now()
WHERE id = $1 AND status = 'AWAITING_SECOND'
"#;

/// The correction of a declined proposal is kept, DECLINED, with who declined it.
pub(crate) async fn decline(
    tx: &mut Transaction<'_, Postgres>,
    correction: Uuid,
    actor: &str,
    name: &str,
    comment: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(CORRECTION_DECLINED)
        .bind(correction)
        .bind(actor)
        .bind(name)
        .bind(comment)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Applies a recorded correction in the caller's transaction (which holds the case lock):
/// the fact's next version, the open review cancelled, decision `on_version` + 1 written under
/// `rules`, the audit event. `second`: the reviewer who confirmed it, their name and comment.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    case: Uuid,
    generation: i32,
    correction: Uuid,
    on_version: i32,
    rules: &RulesApplied<'_>,
    second: Option<(&str, &str, Option<&str>)>,
) -> Result<Corrected, ActionError> {
    type Row = (Uuid, String, serde_json::Value, String, String, String);
    // A correction applied at once is recorded AWAITING_SECOND for the moment it takes to
    // write its fact: one path for both.
    let (segment, field, new, actor, name, reason): Row = sqlx::query_as(CORRECTION_GET)
        .bind(correction)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| ActionError::Conflict {
            message: "this correction no longer waits to be applied".into(),
            current: serde_json::Value::Null,
        })?;
    let fact = Uuid::now_v7();
    let version: i32 = sqlx::query_scalar(FACT_NEXT_VERSION)
        .bind(segment)
        .bind(&field)
        .bind(fact)
        .bind(case)
        .bind(&new["value"])
        .bind(new["raw_text"].as_str())
        .bind(new["page"].as_i64().and_then(|p| i32::try_from(p).ok()))
        .bind(new.get("bbox").filter(|b| !b.is_null()))
        .bind(correction)
        .fetch_one(&mut **tx)
        .await?;
    let decision_version = on_version + 1;
    let old: Option<serde_json::Value> =
        sqlx::query_scalar("SELECT old FROM corrections WHERE id = $1")
            .bind(correction)
            .fetch_optional(&mut **tx)
            .await?;
    // Recorded before the decision it causes, so the case's history reads in that order.
    audit_trail::record(
        tx,
        tenant,
        Some(case),
        &actor,
        AuditEventType::FactCorrected,
        serde_json::json!({
            "correction_id": correction, "segment_id": segment, "field": field,
            "old": old, "new": new, "reason": reason, "corrected_by": name,
            "fact_version": version, "decision_version": decision_version,
            "confirmed_by": second.map(|s| s.0), "confirmed_by_name": second.map(|s| s.1),
        }),
    )
    .await?;
    cancel_open_review(tx, case).await?;
    // Who acts now: the second reviewer when there is one, else the corrector.
    let decider = second.map_or(actor.as_str(), |s| s.0);
    let decision = decide(tx, case, generation, Origin::Correction, decider, rules)
        .await?
        .ok_or_else(|| ActionError::Conflict {
            message: "the case changed while it was being decided again; look again".into(),
            current: serde_json::Value::Null,
        })?;
    if decision.version != decision_version {
        return Err(ActionError::Conflict {
            message: format!(
                "decision version {on_version} is not the current one; look at the newer decision"
            ),
            current: serde_json::Value::Null,
        });
    }
    sqlx::query(CORRECTION_APPLIED)
        .bind(correction)
        .bind(fact)
        .bind(decision.version)
        .bind(second.map(|s| s.0))
        .bind(second.map(|s| s.1))
        .bind(second.and_then(|s| s.2))
        .execute(&mut **tx)
        .await?;
    Ok(Corrected {
        correction_id: correction,
        case_id: case,
        segment_id: segment,
        field,
        fact_version: version,
        corrected_by: name,
        decision,
    })
}

impl Store {
    /// What a correction of `segment` of the tenant's `case` needs before its value is read
    /// (`segment` `None`: only the case and its decision); `None` when the case is unknown or
    /// another tenant's.
    pub async fn correction_target(
        &self,
        tenant: Uuid,
        case: Uuid,
        segment: Option<Uuid>,
    ) -> StoreResult<Option<CorrectionTarget>> {
        type Row = (
            String,
            Option<Uuid>,
            Option<String>,
            Option<Uuid>,
            Option<i32>,
            Option<i32>,
            Option<i32>,
            Option<serde_json::Value>,
            Option<serde_json::Value>,
        );
        let row: Option<Row> = sqlx::query_as(TARGET)
            .bind(tenant)
            .bind(case)
            .bind(segment)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(
            |(case_status, id, doc_type, source_id, first, last, version, rules, current)| {
                CorrectionTarget {
                    case_status,
                    document: match (id, source_id, first, last) {
                        (Some(_), Some(source_id), Some(first_page), Some(last_page)) => {
                            Some(TargetDocument {
                                doc_type,
                                source_id,
                                first_page,
                                last_page,
                            })
                        }
                        _ => None,
                    },
                    decision_version: version,
                    current_decision: current.unwrap_or_default(),
                    decision_rules: rules,
                }
            },
        ))
    }

    /// Corrects a field (see the module doc): applied at once, or held for a second reviewer
    /// when the policy of the decision under review says so. `rules` are that decision's.
    /// `respond` turns the outcome into the body stored for replays and returned (201
    /// applied, 202 held).
    pub async fn correct_fact(
        &self,
        key: &ActionKey,
        req: &CorrectionRequest,
        rules: &RulesApplied<'_>,
        respond: impl FnOnce(&CorrectionOutcome) -> serde_json::Value,
    ) -> Result<ActionAnswer, ActionError> {
        let mut tx = self.pool().begin().await?;
        let (status, generation) = replay::lock_case(&mut tx, key.tenant, req.case).await?;
        if let Some(answer) = replay::replayed(&mut tx, key).await? {
            return Ok(answer);
        }
        if status != "AWAITING_REVIEW" {
            return Err(ActionError::Conflict {
                message: format!(
                    "only a case awaiting review can be corrected; this one is {status}"
                ),
                current: reviews::current_decision(&mut tx, req.case).await?,
            });
        }
        claims::check_claim(&mut tx, req.case, &req.actor).await?;
        let open =
            reviews::pending_on(&mut tx, req.case, &status, req.expected_decision_version).await?;
        let in_reading: Option<Uuid> = sqlx::query_scalar(
            "SELECT id FROM segments WHERE id = $1 AND case_id = $2 AND generation = $3 AND active",
        )
        .bind(req.segment)
        .bind(req.case)
        .bind(generation)
        .fetch_optional(&mut *tx)
        .await?;
        if in_reading.is_none() {
            return Err(ActionError::Conflict {
                message: "this document is not part of the case's current reading; reload the case"
                    .into(),
                current: reviews::current_decision(&mut tx, req.case).await?,
            });
        }
        let old: Option<(Uuid, i32, serde_json::Value)> = sqlx::query_as(CURRENT_FACT)
            .bind(req.segment)
            .bind(&req.field)
            .fetch_optional(&mut *tx)
            .await?;
        let name = people::name_of(&mut *tx, key.tenant, &req.actor).await?;
        let reason = crate::storable(req.reason.trim()).into_owned();
        let raw_text = crate::storable(&req.new.raw_text).into_owned();
        let new = serde_json::json!({
            "value": req.new.value, "raw_text": raw_text, "page": req.new.page,
            "bbox": req.new.bbox,
        });
        let correction = Uuid::now_v7();
        sqlx::query(CORRECTION_INSERT)
            .bind(correction)
            .bind(key.tenant)
            .bind(req.case)
            .bind(generation)
            .bind(req.segment)
            .bind(&req.field)
            .bind(old.as_ref().map_or(serde_json::json!({}), |o| o.2.clone()))
            .bind(&new)
            .bind(req.method.as_str())
            .bind(&reason)
            .bind(crate::storable(&req.actor).as_ref())
            .bind(&name)
            .bind(&req.actor_role)
            .bind(req.expected_decision_version)
            .bind("AWAITING_SECOND")
            .bind(old.as_ref().map(|o| o.0))
            .execute(&mut *tx)
            .await?;
        let (outcome, http) = if open.needs_second(FourEyesAction::Correction) {
            let proposal = reviews::propose(
                &mut tx,
                key.tenant,
                req.case,
                &open,
                FourEyesAction::Correction,
                None,
                Some(&reason),
                Some(correction),
                &req.actor,
                &req.actor_role,
            )
            .await?;
            (CorrectionOutcome::AwaitingSecond(proposal), 202)
        } else {
            let corrected = apply(
                &mut tx,
                key.tenant,
                req.case,
                generation,
                correction,
                open.decision_version,
                rules,
                None,
            )
            .await?;
            (CorrectionOutcome::Applied(corrected), 201)
        };
        replay::commit_answer(tx, key, http, respond(&outcome)).await
    }
}
