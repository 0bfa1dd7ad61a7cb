//! Decisions against real PostgreSQL: core's evaluation written once per generation with its
//! rule results and snapshot, reviews that one reviewer wins, replays, reprocess after a
//! failure (with a late result of the cancelled generation ignored), reevaluation, and
//! ruleset activation.

use ironclad_blobs::BlobStore;
use ironclad_core::review::ReviewAction;
use ironclad_core::rules::{CompiledRuleset, RulesetSpec, Schema};
use ironclad_core::{CaseId, Envelope, FailureCode, JobId, JobKind, TenantId};
use ironclad_store::decisions::{RulesApplied, RulesSource};
use ironclad_store::jobs::{ClaimOutcome, ClaimedJob, Failure, FinalizeOutcome};
use ironclad_store::replay::{ActionError, ActionKey};
use ironclad_store::reprocess::ReprocessRequest;
use ironclad_store::results::{FactRow, PageRow, SegmentRow, SourceResults};
use ironclad_store::reviews::{ReviewOutcome, ReviewRequest};
use ironclad_store::{Store, Transition};
use ironclad_testkit::harness::commit_fixture_case;
use ironclad_testkit::TestDb;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(60);

struct Fixture {
    db: TestDb,
    blobs: BlobStore,
    tenant: TenantId,
    _dir: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> anyhow::Result<Self> {
        let db = TestDb::new().await?;
        let dir = tempfile::tempdir()?;
        let blobs = BlobStore::open(dir.path())?;
        let tenant = db.store.create_tenant("acme").await?;
        Ok(Self {
            db,
            blobs,
            tenant,
            _dir: dir,
        })
    }

    fn store(&self) -> &Store {
        &self.db.store
    }

    async fn case(&self, files: usize) -> anyhow::Result<CaseId> {
        commit_fixture_case(
            self.store(),
            &self.blobs,
            self.tenant,
            files,
            3,
            "decisions",
        )
        .await
    }

    fn key(&self, action: &'static str, key: &str, fingerprint: &str) -> ActionKey {
        ActionKey {
            tenant: self.tenant.0,
            action,
            key: key.into(),
            fingerprint: fingerprint.into(),
        }
    }
}

async fn jobs(
    store: &Store,
    case: CaseId,
    kind: JobKind,
    generation: i32,
) -> anyhow::Result<Vec<JobId>> {
    let ids: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM jobs WHERE case_id = $1 AND kind = $2 AND generation = $3 ORDER BY created_at, id",
    )
    .bind(case.0)
    .bind(kind.as_str())
    .bind(generation)
    .fetch_all(store.pool())
    .await?;
    Ok(ids.into_iter().map(JobId).collect())
}

async fn claim(
    store: &Store,
    case: CaseId,
    job: JobId,
    kind: JobKind,
) -> anyhow::Result<ClaimedJob> {
    match store
        .claim_job(&Envelope::new(job, case, kind, 1), "w", LEASE)
        .await?
    {
        ClaimOutcome::Claimed(j) => Ok(j),
        ClaimOutcome::Refused(r) => anyhow::bail!("claim of {job} refused: {r:?}"),
    }
}

fn fact(field: &str, value: serde_json::Value, raw: &str, confidence: f32) -> FactRow {
    FactRow {
        field: field.into(),
        value: Some(value),
        raw_text: Some(raw.into()),
        page: Some(0),
        bbox: Some(json!({"x0": 0.1, "y0": 0.2, "x1": 0.3, "y1": 0.25})),
        confidence: Some(confidence),
        conflict: false,
        missing: false,
        candidates: json!([]),
    }
}

fn container(code: &str) -> serde_json::Value {
    json!({"kind": "container_number", "value": {"code": code, "check_digit_valid": true}})
}

/// One source holding a bill of lading and an invoice, each naming a container.
fn results(bl_container: &str, invoice_container: &str) -> SourceResults {
    let segment = |ordinal, doc: &str, code: &str| SegmentRow {
        ordinal,
        doc_type: Some(doc.into()),
        confidence: 0.95,
        first_page: ordinal,
        last_page: ordinal,
        reason: None,
        facts: vec![fact("container_number", container(code), code, 0.95)],
    };
    SourceResults {
        pages: Vec::new(),
        segments: vec![
            segment(0, "bill_of_lading", bl_container),
            segment(1, "commercial_invoice", invoice_container),
        ],
        workflow_id: None,
    }
}

/// EXACT_MATCH on the container across both document types, BLOCKED on failure.
fn container_rules() -> anyhow::Result<CompiledRuleset> {
    let spec: RulesetSpec = serde_json::from_value(json!({
        "rules": [{
            "id": "container_agrees", "template": "EXACT_MATCH", "on_fail": "BLOCKED",
            "params": {"field": "container_number",
                       "document_types": ["bill_of_lading", "commercial_invoice"]}
        }],
        "policy": {"confidence_floor": 0.6, "auto_approve_ready": false}
    }))?;
    let mut types = BTreeMap::new();
    for t in ["bill_of_lading", "commercial_invoice"] {
        types.insert(
            t.to_owned(),
            BTreeMap::from([(
                "container_number".to_owned(),
                ironclad_core::parse::ParserKind::ContainerNumber,
            )]),
        );
    }
    spec.compile(&Schema {
        document_types: types,
    })
    .map_err(|issues| anyhow::anyhow!("{issues:?}"))
}

fn applied(ruleset: &CompiledRuleset) -> RulesApplied<'_> {
    RulesApplied {
        ruleset,
        source: RulesSource::Workflow,
        ruleset_id: None,
        ruleset_version: None,
    }
}

/// Reads the case's one source (with `results`) and returns its claimed finalize job.
async fn read_case(
    f: &Fixture,
    case: CaseId,
    generation: i32,
    r: &SourceResults,
) -> anyhow::Result<ClaimedJob> {
    let store = f.store();
    let job = jobs(store, case, JobKind::ProcessSource, generation).await?[0];
    let claimed = claim(store, case, job, JobKind::ProcessSource).await?;
    let (t, finalize) = store
        .complete_source_job_with(&claimed, &json!({}), Some(r), 3)
        .await?;
    anyhow::ensure!(t == Transition::Applied && finalize, "source not completed");
    let fin = jobs(store, case, JobKind::FinalizeCase, generation).await?[0];
    claim(store, case, fin, JobKind::FinalizeCase).await
}

async fn scalar_i64(store: &Store, sql: &str, case: CaseId) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(sql)
        .bind(case.0)
        .fetch_one(store.pool())
        .await?)
}

#[tokio::test]
async fn finalize_writes_what_core_decided_once_with_results_snapshot_review_and_notice(
) -> anyhow::Result<()> {
    let f = Fixture::new().await?;
    let store = f.store();
    let rules = container_rules()?;
    let case = f.case(1).await?;
    let fin = read_case(&f, case, 1, &results("MSCU1234566", "TGHU9458075")).await?;

    // Two finalizers with the same claim at once (a redelivery racing the first run).
    let rules = applied(&rules);
    let (a, b) = tokio::join!(
        store.finalize_case(&fin, &rules),
        store.finalize_case(&fin, &rules)
    );
    let mut outcomes = vec![a?, b?];
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(
        outcomes,
        vec![FinalizeOutcome::Decided, FinalizeOutcome::Stale]
    );
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM decisions WHERE case_id = $1",
            case
        )
        .await?,
        1
    );

    let detail = store
        .case_detail(None, case)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no case"))?;
    assert_eq!(detail.case.status, "AWAITING_REVIEW");
    let d = detail
        .decision
        .ok_or_else(|| anyhow::anyhow!("no decision"))?;
    assert_eq!((d.version, d.status.as_str()), (1, "BLOCKED"));
    let failed: Vec<_> = d
        .rule_results
        .iter()
        .filter(|r| r.outcome == "FAIL")
        .collect();
    assert_eq!(failed.len(), 1, "{:?}", d.rule_results);
    assert_eq!(failed[0].rule_id, "container_agrees");
    assert_eq!(failed[0].on_fail.as_deref(), Some("BLOCKED"));
    let values = failed[0].values.as_array().cloned().unwrap_or_default();
    assert_eq!(values.len(), 2, "{values:?}");
    for v in &values {
        assert_eq!(v["evidence"]["page"], 0);
        assert!(v["evidence"]["bbox"].is_object(), "{v}");
        assert!(v["evidence"]["raw_text"].is_string(), "{v}");
    }
    // one row per rule and safeguard
    assert!(d.rule_results.len() > 1);
    assert!(d.rule_results.iter().any(|r| r.template == "SAFEGUARD"));
    // the snapshot holds what the rules saw
    assert_eq!(d.evidence["documents"].as_array().map(Vec::len), Some(2));
    assert_eq!(d.evidence["rules"]["rules"][0]["id"], "container_agrees");
    assert_eq!(d.evidence["sources"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM reviews WHERE case_id = $1 AND status = 'PENDING'",
            case
        )
        .await?,
        1
    );
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM notifications WHERE case_id = $1 AND type = 'DOSSIER_BLOCKED'",
            case
        )
        .await?,
        1
    );
    assert_eq!(scalar_i64(store, "SELECT count(*) FROM audit_events WHERE case_id = $1 AND event_type = 'DECISION_GENERATED'", case).await?, 1);
    f.db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn two_reviewers_one_wins_replays_answer_the_same_and_stale_versions_conflict(
) -> anyhow::Result<()> {
    let f = Fixture::new().await?;
    let store = f.store();
    let rules = container_rules()?;
    let case = f.case(1).await?;
    let fin = read_case(&f, case, 1, &results("MSCU1234566", "MSCU1234566")).await?;
    store.finalize_case(&fin, &applied(&rules)).await?;
    let detail = store
        .case_detail(None, case)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no case"))?;
    assert_eq!(
        detail.decision.as_ref().map(|d| d.status.as_str()),
        Some("READY")
    );

    let req = |action, comment: Option<&str>, version| ReviewRequest {
        case: case.0,
        action,
        expected_decision_version: version,
        comment: comment.map(str::to_owned),
        actor: "apikey:r1".into(),
        actor_role: "reviewer".into(),
    };
    // Refused outright: OVERRIDE of a READY decision; a stale version; another tenant.
    let refused = store
        .resolve_review(
            &f.key("review", "k0", "o"),
            &req(ReviewAction::Override, Some("x"), 1),
            |_| json!({}),
        )
        .await;
    assert!(
        matches!(refused, Err(ActionError::Refused(_))),
        "{refused:?}"
    );
    let stale = store
        .resolve_review(
            &f.key("review", "k0", "s"),
            &req(ReviewAction::Approve, None, 2),
            |_| json!({}),
        )
        .await;
    assert!(
        matches!(stale, Err(ActionError::Conflict { .. })),
        "{stale:?}"
    );
    let other = store.create_tenant("other").await?;
    let foreign = store
        .resolve_review(
            &ActionKey {
                tenant: other.0,
                action: "review",
                key: "k9".into(),
                fingerprint: "f".into(),
            },
            &req(ReviewAction::Approve, None, 1),
            |_| json!({}),
        )
        .await;
    assert!(matches!(foreign, Err(ActionError::NotFound)), "{foreign:?}");

    // Two reviewers at once, different keys: one wins, the other is told it is settled.
    let (k1, k2) = (
        f.key("review", "k1", "approve"),
        f.key("review", "k2", "reject"),
    );
    let (r1, r2) = (
        req(ReviewAction::Approve, None, 1),
        req(ReviewAction::Reject, Some("no"), 1),
    );
    let (a, b) = tokio::join!(
        store.resolve_review(&k1, &r1, |o| match o {
            ReviewOutcome::Resolved(r) =>
                json!({"resolution": r.resolution, "review_id": r.review_id}),
            ReviewOutcome::AwaitingSecond(p) => json!({"awaiting": p.review_id}),
        }),
        store.resolve_review(&k2, &r2, |o| match o {
            ReviewOutcome::Resolved(r) =>
                json!({"resolution": r.resolution, "review_id": r.review_id}),
            ReviewOutcome::AwaitingSecond(p) => json!({"awaiting": p.review_id}),
        })
    );
    let (won, lost) = match (a, b) {
        (Ok(w), Err(l)) => ((w, &k1, &r1), l),
        (Err(l), Ok(w)) => ((w, &k2, &r2), l),
        other => anyhow::bail!("expected one winner: {other:?}"),
    };
    assert!(matches!(lost, ActionError::Conflict { .. }), "{lost:?}");
    assert!(!won.0.replayed);
    // The winner's replay gets the stored answer; the same key with another payload is 409.
    let replay = store
        .resolve_review(won.1, won.2, |_| json!({"fresh": true}))
        .await?;
    assert!(replay.replayed);
    assert_eq!(replay.body, won.0.body);
    let reused = store
        .resolve_review(
            &ActionKey {
                fingerprint: "other".into(),
                ..won.1.clone()
            },
            won.2,
            |_| json!({}),
        )
        .await;
    assert!(matches!(reused, Err(ActionError::KeyReused)), "{reused:?}");

    let detail = store
        .case_detail(None, case)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no case"))?;
    assert_eq!(detail.case.status, "RESOLVED");
    assert_eq!(
        detail.case.resolution.as_deref(),
        won.0.body["resolution"].as_str()
    );
    assert_eq!(scalar_i64(store, "SELECT count(*) FROM audit_events WHERE case_id = $1 AND event_type = 'REVIEW_RESOLVED'", case).await?, 1);
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM notifications WHERE case_id = $1 AND type = 'DOSSIER_RESOLVED'",
            case
        )
        .await?,
        1
    );
    // A resolution names the case as the caller knows it, as its decision's notification did.
    let carries_reference: bool = sqlx::query_scalar(
        "SELECT n.data ? 'external_reference' AND n.data->>'external_reference' \
                IS NOT DISTINCT FROM c.external_reference \
         FROM notifications n JOIN cases c ON c.id = n.case_id \
         WHERE n.case_id = $1 AND n.type = 'DOSSIER_RESOLVED'",
    )
    .bind(case.0)
    .fetch_one(store.pool())
    .await?;
    assert!(
        carries_reference,
        "DOSSIER_RESOLVED lacks the external_reference"
    );
    let stored: i64 =
        sqlx::query_scalar("SELECT count(*) FROM action_requests WHERE tenant_id = $1")
            .bind(f.tenant.0)
            .fetch_one(store.pool())
            .await?;
    assert_eq!(stored, 1, "only the winner's answer is stored");
    f.db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn reprocess_after_failure_decides_and_a_late_result_of_the_old_generation_changes_nothing(
) -> anyhow::Result<()> {
    let f = Fixture::new().await?;
    let store = f.store();
    let rules = container_rules()?;
    let case = f.case(2).await?;
    let gen1 = jobs(store, case, JobKind::ProcessSource, 1).await?;
    // Source 1 fails for good: the case is FAILED. Source 2 is still being read (RUNNING).
    let broken = claim(store, case, gen1[0], JobKind::ProcessSource).await?;
    store
        .fail_held_job(
            &broken,
            &Failure::new(FailureCode::DocumentUnreadable, "bad"),
            "w",
        )
        .await?;
    let slow = claim(store, case, gen1[1], JobKind::ProcessSource).await?;
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM cases WHERE id = $1 AND status = 'FAILED'",
            case
        )
        .await?,
        1
    );
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM notifications WHERE case_id = $1 AND type = 'PROCESSING_FAILED'",
            case
        )
        .await?,
        1
    );

    let req = ReprocessRequest {
        case: case.0,
        source_ids: None,
        reason: "file replaced by the broker".into(),
        actor: "apikey:op".into(),
        actor_role: ironclad_core::role::Role::Operator,
        max_attempts: 3,
    };
    let answer = store
        .reprocess_case(&f.key("reprocess", "r1", "all"), &req, |r| json!(r))
        .await?;
    assert_eq!(answer.status, 202);
    assert_eq!(answer.body["generation"], 2);
    assert_eq!(answer.body["cancelled_jobs"], 1);
    let replay = store
        .reprocess_case(&f.key("reprocess", "r1", "all"), &req, |r| json!(r))
        .await?;
    assert!(replay.replayed);
    assert_eq!(
        scalar_i64(
            store,
            "SELECT generation::bigint FROM cases WHERE id = $1",
            case
        )
        .await?,
        2
    );

    // The late result of the cancelled run is refused and leaves nothing behind.
    let (t, _) = store
        .complete_source_job_with(
            &slow,
            &json!({}),
            Some(&results("AAAU0000000", "AAAU0000000")),
            3,
        )
        .await?;
    assert_eq!(t, Transition::Stale);
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM segments WHERE case_id = $1",
            case
        )
        .await?,
        0
    );

    // Generation 2 reads both sources and is decided.
    let gen2 = jobs(store, case, JobKind::ProcessSource, 2).await?;
    assert_eq!(gen2.len(), 2);
    for (i, job) in gen2.iter().enumerate() {
        let c = claim(store, case, *job, JobKind::ProcessSource).await?;
        let r = if i == 0 {
            results("MSCU1234566", "MSCU1234566")
        } else {
            SourceResults::default()
        };
        store
            .complete_source_job_with(&c, &json!({}), Some(&r), 3)
            .await?;
    }
    let fin = jobs(store, case, JobKind::FinalizeCase, 2).await?[0];
    let fin = claim(store, case, fin, JobKind::FinalizeCase).await?;
    assert_eq!(
        store.finalize_case(&fin, &applied(&rules)).await?,
        FinalizeOutcome::Decided
    );
    let detail = store
        .case_detail(None, case)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no case"))?;
    assert_eq!(detail.case.status, "AWAITING_REVIEW");
    let d = detail
        .decision
        .ok_or_else(|| anyhow::anyhow!("no decision"))?;
    assert_eq!((d.generation, d.status.as_str()), (2, "READY"));
    f.db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn reevaluation_writes_a_new_version_and_makes_the_old_one_stale() -> anyhow::Result<()> {
    let f = Fixture::new().await?;
    let store = f.store();
    let rules = container_rules()?;
    let case = f.case(1).await?;
    let fin = read_case(&f, case, 1, &results("MSCU1234566", "TGHU9458075")).await?;
    store
        .finalize_case(&fin, &ironclad_testkit::harness::no_rules())
        .await?;
    let v1 = store
        .case_detail(None, case)
        .await?
        .and_then(|d| d.decision)
        .ok_or_else(|| anyhow::anyhow!("no decision"))?;
    assert_eq!(v1.status, "REVIEW_REQUIRED", "no rules: a person must look");

    let answer = store
        .reevaluate_case(
            &f.key("reevaluate", "e1", "x"),
            case.0,
            &applied(&rules),
            "apikey:admin",
            |d| json!(d),
        )
        .await?;
    assert_eq!(answer.body["version"], 2);
    assert_eq!(answer.body["status"], "BLOCKED");
    let stale = store
        .resolve_review(
            &f.key("review", "k1", "x"),
            &ReviewRequest {
                case: case.0,
                action: ReviewAction::Reject,
                expected_decision_version: 1,
                comment: None,
                actor: "apikey:r".into(),
                actor_role: "reviewer".into(),
            },
            |_| json!({}),
        )
        .await;
    assert!(
        matches!(stale, Err(ActionError::Conflict { .. })),
        "{stale:?}"
    );
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM reviews WHERE case_id = $1 AND status = 'CANCELLED'",
            case
        )
        .await?,
        1
    );
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM reviews WHERE case_id = $1 AND status = 'PENDING'",
            case
        )
        .await?,
        1
    );
    assert_eq!(
        scalar_i64(
            store,
            "SELECT count(*) FROM decisions WHERE case_id = $1",
            case
        )
        .await?,
        2
    );
    f.db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn activation_keeps_one_active_ruleset_retires_the_previous_and_is_audited(
) -> anyhow::Result<()> {
    let f = Fixture::new().await?;
    let store = f.store();
    let spec = json!({"rules": [{"id": "a", "template": "REQUIRED_DOCUMENT", "on_fail": "REVIEW_REQUIRED",
                                 "params": {"document_types": ["bill_of_lading"]}}]});
    let r1 = store
        .create_ruleset(f.tenant.0, "trade", &spec, "admin")
        .await?;
    let r2 = store
        .create_ruleset(f.tenant.0, "trade", &spec, "admin")
        .await?;
    assert_eq!((r1.version, r2.version), (1, 2));
    store
        .activate_ruleset(f.tenant.0, r1.id, "admin", "go live")
        .await?;
    store
        .activate_ruleset(f.tenant.0, r2.id, "admin", "tighter")
        .await?;
    let all = store.list_rulesets(f.tenant.0, Some("trade")).await?;
    let status: Vec<_> = all.iter().map(|r| (r.version, r.status.as_str())).collect();
    assert_eq!(status, vec![(2, "ACTIVE"), (1, "RETIRED")]);
    assert!(store
        .activate_ruleset(f.tenant.0, r1.id, "admin", "back")
        .await
        .is_err());
    let other = store.create_tenant("other").await?;
    assert!(store.get_ruleset(other.0, r1.id).await?.is_none());
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND event_type IN ('RULESET_CREATED', 'RULESET_ACTIVATED')",
    )
    .bind(f.tenant.0)
    .fetch_one(store.pool())
    .await?;
    assert_eq!(audited, 4);
    f.db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn a_partial_reprocess_carries_the_other_sources_over_and_verify_accepts_it(
) -> anyhow::Result<()> {
    use ironclad_store::verify::{BlobState, VerifyOptions, EFFECTS_ONCE};
    let f = Fixture::new().await?;
    let store = f.store();
    let rules = container_rules()?;
    let case = f.case(2).await?;
    // Generation 1: source 0 holds both documents, source 1 nothing typed.
    for (i, job) in jobs(store, case, JobKind::ProcessSource, 1)
        .await?
        .iter()
        .enumerate()
    {
        let c = claim(store, case, *job, JobKind::ProcessSource).await?;
        let r = if i == 0 {
            results("MSCU1234566", "TGHU9458075")
        } else {
            SourceResults::default()
        };
        store
            .complete_source_job_with(&c, &json!({}), Some(&r), 3)
            .await?;
    }
    let fin = claim(
        store,
        case,
        jobs(store, case, JobKind::FinalizeCase, 1).await?[0],
        JobKind::FinalizeCase,
    )
    .await?;
    store.finalize_case(&fin, &applied(&rules)).await?;

    // Read only source 1 again: source 0's reading (both documents) is carried over.
    let sources: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM sources WHERE case_id = $1 ORDER BY created_at, id")
            .bind(case.0)
            .fetch_all(store.pool())
            .await?;
    let req = ReprocessRequest {
        case: case.0,
        source_ids: Some(vec![sources[1]]),
        reason: "second file replaced".into(),
        actor: "apikey:op".into(),
        actor_role: ironclad_core::role::Role::Operator,
        max_attempts: 3,
    };
    let answer = store
        .reprocess_case(&f.key("reprocess", "p1", "one"), &req, |r| json!(r))
        .await?;
    assert_eq!(answer.body["carried_over"], json!([sources[0]]));
    assert_eq!(answer.body["jobs"].as_array().map(Vec::len), Some(1));
    let gen2 = jobs(store, case, JobKind::ProcessSource, 2).await?;
    let c = claim(store, case, gen2[0], JobKind::ProcessSource).await?;
    store
        .complete_source_job_with(&c, &json!({}), Some(&SourceResults::default()), 3)
        .await?;
    let fin = claim(
        store,
        case,
        jobs(store, case, JobKind::FinalizeCase, 2).await?[0],
        JobKind::FinalizeCase,
    )
    .await?;
    store.finalize_case(&fin, &applied(&rules)).await?;
    let d = store
        .case_detail(None, case)
        .await?
        .and_then(|d| d.decision)
        .ok_or_else(|| anyhow::anyhow!("no decision"))?;
    // The carried-over documents decided generation 2 as they did generation 1.
    assert_eq!((d.generation, d.status.as_str()), (2, "BLOCKED"));
    assert_eq!(d.evidence["documents"].as_array().map(Vec::len), Some(2));

    // A source carried over has no job in generation 2, and that is not a lost effect.
    let options = VerifyOptions {
        ledger: None,
        stuck_after: Duration::from_secs(3600),
        outbox_bound: Duration::from_secs(300),
    };
    let report = store
        .verify(&options, |keys| async move {
            keys.iter().map(|_| BlobState::Missing).collect()
        })
        .await?;
    let effects = report.check(EFFECTS_ONCE).map(|c| c.violations);
    assert_eq!(effects, Some(0), "{:?}", report.check(EFFECTS_ONCE));
    f.db.drop_database().await;
    Ok(())
}

/// Issue 24: the facts the rules read carry how their page was read (`pages.method`, joined in
/// the one facts statement), so a container number OCR may have misread (`M5CU` for `MSCU`)
/// asks for review instead of blocking, and the snapshot and rule results show the method.
/// The same two values from text layers still block.
#[tokio::test]
async fn a_difference_ocr_can_explain_asks_for_review_and_the_snapshot_says_how_values_were_read(
) -> anyhow::Result<()> {
    let f = Fixture::new().await?;
    let store = f.store();
    let rules = container_rules()?;
    let page = |page_index: i32, method: &str| PageRow {
        page_index,
        method: method.into(),
        confidence: 0.9,
        rotation: 0,
        doc_type: None,
        class_confidence: None,
        class_reason: None,
        text: String::new(),
        words: json!([]),
    };
    let read = |invoice_page: &str| {
        let mut r = results("MSCU1234566", "M5CU1234566");
        // Each fact on its own segment's page: the bill of lading on page 1, the invoice on 2.
        for s in &mut r.segments {
            for fact in &mut s.facts {
                fact.page = Some(s.first_page);
            }
        }
        r.pages = vec![page(0, "text_layer"), page(1, invoice_page)];
        r
    };
    for (invoice_page, status) in [("ocr", "REVIEW_REQUIRED"), ("text_layer", "BLOCKED")] {
        let case = f.case(1).await?;
        let fin = read_case(&f, case, 1, &read(invoice_page)).await?;
        assert_eq!(
            store.finalize_case(&fin, &applied(&rules)).await?,
            FinalizeOutcome::Decided
        );
        let d = store
            .case_detail(None, case)
            .await?
            .and_then(|detail| detail.decision)
            .ok_or_else(|| anyhow::anyhow!("no decision"))?;
        assert_eq!(
            d.status.as_str(),
            status,
            "{invoice_page}: {:?}",
            d.rule_results
        );
        let rule = d
            .rule_results
            .iter()
            .find(|r| r.rule_id == "container_agrees")
            .ok_or_else(|| anyhow::anyhow!("no container_agrees"))?;
        if invoice_page == "ocr" {
            assert_eq!(rule.outcome, "REVIEW_REQUIRED");
            assert!(
                rule.message.ends_with(
                    "readings differ only where OCR confuses characters: MSCU1234566 vs M5CU1234566"
                ),
                "{}",
                rule.message
            );
        } else {
            assert_eq!(rule.outcome, "FAIL", "{}", rule.message);
        }
        let methods: Vec<&serde_json::Value> = rule
            .values
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| &v["evidence"]["read_method"])
            .collect();
        assert_eq!(methods, [&json!("text_layer"), &json!(invoice_page)]);
        let snapshot: Vec<&serde_json::Value> = d.evidence["documents"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|doc| &doc["facts"][0]["evidence"]["read_method"])
            .collect();
        assert_eq!(snapshot, [&json!("text_layer"), &json!(invoice_page)]);
    }
    f.db.drop_database().await;
    Ok(())
}
