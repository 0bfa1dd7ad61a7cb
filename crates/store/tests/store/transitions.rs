//! Store transitions against a real PostgreSQL: the guarded statements do what their names say,
//! and the schema refuses what the design says is impossible.

use ironclad_core::{CaseId, Envelope, FailureCode, JobId, JobKind, SourceId, TenantId};
use ironclad_store::intake::{IntakeOutcome, NewCase, NewSource};
use ironclad_store::jobs::{ClaimOutcome, ClaimRefusal, Failure, FinalizeOutcome};
use ironclad_store::{Store, Transition};
use ironclad_testkit::TestDb;
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

fn new_case(tenant: TenantId, files: usize, key: Option<&str>) -> NewCase {
    let sources = (0..files)
        .map(|i| NewSource {
            source_id: SourceId::new(),
            job_id: JobId::new(),
            filename: format!("f{i}.pdf"),
            sha256: format!("{:064x}", i + 1),
            media_type: "application/pdf".into(),
            size_bytes: 100,
            pages: 1,
            blob_key: format!("sha256/00/00/{:064x}", i + 1),
        })
        .collect();
    NewCase {
        tenant_id: tenant,
        case_id: CaseId::new(),
        external_reference: None,
        workflow: None,
        workflow_id: None,
        idempotency_key: key.map(str::to_owned),
        fingerprint: format!("fp-{files}"),
        sources,
        max_attempts: 3,
        actor: "test".into(),
        response: serde_json::json!({"ok": true}),
    }
}

async fn count(store: &Store, sql: &'static str, case: CaseId) -> i64 {
    sqlx::query_scalar(sql)
        .bind(case.0)
        .fetch_one(store.pool())
        .await
        .unwrap_or(-1)
}

async fn claim(store: &Store, env: &Envelope) -> anyhow::Result<ironclad_store::jobs::ClaimedJob> {
    match store.claim_job(env, "w1", LEASE).await? {
        ClaimOutcome::Claimed(j) => Ok(j),
        ClaimOutcome::Refused(r) => anyhow::bail!("refused: {r:?}"),
    }
}

#[tokio::test]
async fn intake_to_single_decision() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("acme").await?;
    let case = new_case(tenant, 2, Some("k1"));
    assert_eq!(store.commit_intake(&case).await?, IntakeOutcome::Created);
    assert_eq!(
        count(
            store,
            "SELECT count(*) FROM outbox o JOIN jobs j ON j.id = o.job_id WHERE j.case_id = $1",
            case.case_id
        )
        .await,
        2
    );

    // Replay and key reuse.
    let mut replay = case.clone();
    replay.case_id = CaseId::new();
    for s in &mut replay.sources {
        s.source_id = SourceId::new();
        s.job_id = JobId::new();
    }
    assert_eq!(
        store.commit_intake(&replay).await?,
        IntakeOutcome::Replayed(serde_json::json!({"ok": true}))
    );
    replay.fingerprint = "other".into();
    assert_eq!(
        store.commit_intake(&replay).await?,
        IntakeOutcome::KeyReused
    );
    assert_eq!(
        count(
            store,
            "SELECT count(*) FROM cases WHERE id = $1",
            replay.case_id
        )
        .await,
        0
    );

    let envs: Vec<Envelope> = case
        .sources
        .iter()
        .map(|s| Envelope::new(s.job_id, case.case_id, JobKind::ProcessSource, 1))
        .collect();
    let j1 = claim(store, &envs[0]).await?;
    // A duplicate message while leased is refused; a forged one is a mismatch.
    assert!(matches!(
        store.claim_job(&envs[0], "w2", LEASE).await?,
        ClaimOutcome::Refused(ClaimRefusal::Leased)
    ));
    let forged = Envelope::new(j1.id, CaseId::new(), JobKind::ProcessSource, 1);
    assert!(matches!(
        store.claim_job(&forged, "w2", LEASE).await?,
        ClaimOutcome::Refused(ClaimRefusal::Mismatch)
    ));
    let j2 = claim(store, &envs[1]).await?;
    assert_eq!(store.renew_lease(&j1, LEASE).await?, Transition::Applied);

    let (t, finalize) = store
        .complete_source_job(&j1, &serde_json::json!({}), 3)
        .await?;
    assert_eq!((t, finalize), (Transition::Applied, false));
    // Stale token cannot finish twice.
    assert_eq!(
        store
            .complete_source_job(&j1, &serde_json::json!({}), 3)
            .await?
            .0,
        Transition::Stale
    );
    let (t, finalize) = store
        .complete_source_job(&j2, &serde_json::json!({}), 3)
        .await?;
    assert_eq!((t, finalize), (Transition::Applied, true));
    assert!(matches!(
        store.claim_job(&envs[0], "w2", LEASE).await?,
        ClaimOutcome::Refused(ClaimRefusal::Terminal(ironclad_core::JobStatus::Succeeded))
    ));

    let (fid,): (uuid::Uuid,) =
        sqlx::query_as("SELECT id FROM jobs WHERE case_id = $1 AND kind = 'finalize_case'")
            .bind(case.case_id.0)
            .fetch_one(store.pool())
            .await?;
    let fin = claim(
        store,
        &Envelope::new(JobId(fid), case.case_id, JobKind::FinalizeCase, 1),
    )
    .await?;
    assert_eq!(
        store
            .finalize_case(&fin, &ironclad_testkit::harness::no_rules())
            .await?,
        FinalizeOutcome::Decided
    );
    assert_eq!(
        count(
            store,
            "SELECT count(*) FROM decisions WHERE case_id = $1",
            case.case_id
        )
        .await,
        1
    );
    assert_eq!(count(store, "SELECT count(*) FROM audit_events WHERE case_id = $1 AND event_type = 'DECISION_GENERATED'", case.case_id).await, 1);
    let detail = store
        .case_detail(Some(tenant), case.case_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("missing"))?;
    assert_eq!(detail.case.status, "AWAITING_REVIEW");
    assert_eq!(detail.jobs.len(), 3);
    // The transition guard saw each step, every one in ironclad-core's tables.
    let recorded = store.recorded_transitions().await?;
    for (entity, old, new) in [
        ("case", "INGESTED", "PROCESSING"),
        ("case", "PROCESSING", "AWAITING_REVIEW"),
        ("job", "PENDING", "RUNNING"),
        ("job", "RUNNING", "SUCCEEDED"),
    ] {
        assert!(
            recorded.contains(&(entity.into(), old.into(), new.into())),
            "{entity} {old} -> {new} not recorded in {recorded:?}"
        );
    }
    // Another tenant sees nothing.
    let other = store.create_tenant("other").await?;
    assert!(store
        .case_detail(Some(other), case.case_id)
        .await?
        .is_none());
    db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn retry_then_exhaustion_fails_case() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("acme").await?;
    let case = new_case(tenant, 1, None);
    store.commit_intake(&case).await?;
    let env = Envelope::new(
        case.sources[0].job_id,
        case.case_id,
        JobKind::ProcessSource,
        1,
    );
    let j = claim(store, &env).await?;
    assert_eq!(
        store
            .schedule_retry(&j, "timeout", Duration::from_secs(60))
            .await?,
        Transition::Applied
    );
    assert!(matches!(
        store.claim_job(&env, "w1", LEASE).await?,
        ClaimOutcome::Refused(ClaimRefusal::NotDue)
    ));
    assert_eq!(count(store, "SELECT count(*) FROM outbox o JOIN jobs j ON j.id = o.job_id WHERE j.case_id = $1 AND o.available_at > now()", case.case_id).await, 1);
    let failure = Failure::new(
        FailureCode::DocumentUnreadable,
        "provider said no: /srv/x.pdf",
    );
    assert_eq!(
        store.fail_held_job(&j, &failure, "t").await?,
        Transition::Stale
    );
    sqlx::query("UPDATE jobs SET next_attempt_at = now()")
        .execute(store.pool())
        .await?;
    let j = claim(store, &env).await?;
    assert_eq!(j.attempt, 2);
    assert_eq!(
        store.fail_held_job(&j, &failure, "worker").await?,
        Transition::Applied
    );
    let detail = store
        .case_detail(None, case.case_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("missing"))?;
    assert_eq!(detail.case.status, "FAILED");
    // Tenants see the code's safe message; the detail (with its server path) stays with the job.
    assert_eq!(
        detail.case.status_reason.as_deref(),
        Some(FailureCode::DocumentUnreadable.message())
    );
    let last_error: Option<String> =
        sqlx::query_scalar("SELECT last_error FROM jobs WHERE id = $1")
            .bind(j.id.0)
            .fetch_one(store.pool())
            .await?;
    assert_eq!(last_error.as_deref(), Some("provider said no: /srv/x.pdf"));
    assert!(detail
        .audit
        .iter()
        .any(|a| a.event_type == "PROCESSING_FAILED"));
    db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn schema_refuses_the_impossible() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("acme").await?;
    let case = new_case(tenant, 1, None);
    store.commit_intake(&case).await?;
    // The CHECKs themselves are tested here, with statuses set in orders no scenario follows.
    store.remove_transition_guard().await?;
    // audit is append-only
    assert!(sqlx::query("UPDATE audit_events SET actor = 'x'")
        .execute(store.pool())
        .await
        .is_err());
    assert!(sqlx::query("DELETE FROM audit_events")
        .execute(store.pool())
        .await
        .is_err());
    // a RUNNING job without a lease, a terminal job without finished_at, unknown statuses
    assert!(sqlx::query("UPDATE jobs SET status = 'RUNNING'")
        .execute(store.pool())
        .await
        .is_err());
    assert!(sqlx::query("UPDATE jobs SET status = 'SUCCEEDED'")
        .execute(store.pool())
        .await
        .is_err());
    assert!(sqlx::query("UPDATE cases SET status = 'DONE'")
        .execute(store.pool())
        .await
        .is_err());
    // every core spelling is accepted by the CHECKs
    for s in ironclad_core::CaseStatus::ALL {
        let sql = "UPDATE cases SET status = $1, status_reason = 'r', \
                   resolution = CASE WHEN $1 = 'RESOLVED' THEN 'APPROVED' END, \
                   resolved_at = CASE WHEN $1 = 'RESOLVED' THEN now() END WHERE id = $2";
        sqlx::query(sql)
            .bind(s.as_str())
            .bind(case.case_id.0)
            .execute(store.pool())
            .await?;
    }
    // the decision-side enums agree with their CHECKs too: each spelling is accepted, and an
    // unknown one refused, by the column's own constraint
    let spellings: [(&str, &str, Vec<&str>); 7] = [
        (
            "reviews",
            "status",
            ironclad_core::review::ReviewStatus::ALL
                .iter()
                .map(|s| s.as_str())
                .collect(),
        ),
        (
            "reviews",
            "resolution",
            ironclad_core::review::Resolution::ALL
                .iter()
                .map(|s| s.as_str())
                .collect(),
        ),
        (
            "notifications",
            "type",
            ironclad_core::notification::NotificationType::ALL
                .iter()
                .map(|s| s.as_str())
                .collect(),
        ),
        (
            "webhook_deliveries",
            "status",
            ironclad_core::notification::DeliveryStatus::ALL
                .iter()
                .map(|s| s.as_str())
                .collect(),
        ),
        (
            "rulesets",
            "status",
            ironclad_core::notification::RulesetStatus::ALL
                .iter()
                .map(|s| s.as_str())
                .collect(),
        ),
        (
            "rule_results",
            "outcome",
            ironclad_core::rules::RuleOutcome::ALL
                .iter()
                .map(|s| s.as_str())
                .collect(),
        ),
        (
            "rule_results",
            "template",
            ironclad_core::rules::RuleTemplate::ALL
                .iter()
                .map(|s| s.as_str())
                .collect(),
        ),
    ];
    for (table, column, values) in spellings {
        let check: String = sqlx::query_scalar(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid \
             WHERE t.relname = $1 AND c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE '%' || $2 || '%' \
             AND pg_get_constraintdef(c.oid) LIKE '%ANY%' LIMIT 1",
        )
        .bind(table)
        .bind(format!("({column}"))
        .fetch_one(store.pool())
        .await?;
        for v in &values {
            assert!(
                check.contains(&format!("'{v}'")),
                "{table}.{column} CHECK lacks {v}: {check}"
            );
        }
        let listed = check.matches("::text").count();
        assert_eq!(
            listed,
            values.len(),
            "{table}.{column} CHECK lists other values: {check}"
        );
    }
    for s in ironclad_core::JobStatus::ALL {
        let sql = "UPDATE jobs SET status = $1, lease_owner = 'o', lease_token = gen_random_uuid(), lease_expires_at = now(), \
                   last_error = 'e', finished_at = CASE WHEN $1 IN ('SUCCEEDED','FAILED','CANCELLED') THEN now() END WHERE case_id = $2";
        sqlx::query(sql)
            .bind(s.as_str())
            .bind(case.case_id.0)
            .execute(store.pool())
            .await?;
    }
    for s in ironclad_core::OutboxStatus::ALL {
        let sql =
            "UPDATE outbox SET status = $1, lock_token = gen_random_uuid(), locked_at = now(), \
                   published_at = CASE WHEN $1 = 'PUBLISHED' THEN now() END";
        sqlx::query(sql)
            .bind(s.as_str())
            .execute(store.pool())
            .await?;
    }
    for s in ironclad_core::DecisionStatus::ALL {
        let sql = "INSERT INTO decisions (id, case_id, generation, version, status, summary) \
                   VALUES (gen_random_uuid(), $2, (SELECT coalesce(max(generation),0)+1 FROM decisions), (SELECT coalesce(max(version),0)+1 FROM decisions), $1, 's')";
        sqlx::query(sql)
            .bind(s.as_str())
            .bind(case.case_id.0)
            .execute(store.pool())
            .await?;
    }
    // duplicate sha256 within a case
    let dup = "INSERT INTO sources (id, case_id, filename, sha256, media_type, size_bytes, pages, blob_key) \
               SELECT gen_random_uuid(), case_id, 'x', sha256, media_type, 1, 1, blob_key FROM sources WHERE case_id = $1";
    assert!(sqlx::query(dup)
        .bind(case.case_id.0)
        .execute(store.pool())
        .await
        .is_err());
    db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn results_are_stored_with_the_success_and_workflows_are_versioned() -> anyhow::Result<()> {
    use ironclad_store::results::{FactRow, PageRow, SegmentRow, SourceResults};
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("acme").await?;
    let case = new_case(tenant, 1, None);
    store.commit_intake(&case).await?;
    let env = Envelope::new(
        case.sources[0].job_id,
        case.case_id,
        JobKind::ProcessSource,
        1,
    );
    let job = claim(store, &env).await?;
    let results = SourceResults {
        pages: vec![PageRow {
            page_index: 0,
            method: "text_layer".into(),
            confidence: 1.0,
            rotation: 0,
            doc_type: Some("commercial_invoice".into()),
            class_confidence: Some(0.9),
            class_reason: None,
            text: "INVOICE No. 42".into(),
            words: serde_json::json!([]),
        }],
        segments: vec![SegmentRow {
            ordinal: 0,
            doc_type: Some("commercial_invoice".into()),
            confidence: 0.9,
            first_page: 0,
            last_page: 0,
            reason: None,
            facts: vec![FactRow {
                field: "invoice_number".into(),
                value: Some(serde_json::json!({"text": "42"})),
                raw_text: Some("42".into()),
                page: Some(0),
                bbox: Some(serde_json::json!({"x0": 0.5, "y0": 0.1, "x1": 0.6, "y1": 0.12})),
                confidence: Some(0.95),
                conflict: false,
                missing: false,
                candidates: serde_json::json!([]),
            }],
        }],
        workflow_id: None,
    };
    let (t, _) = store
        .complete_source_job_with(&job, &serde_json::json!({}), Some(&results), 3)
        .await?;
    assert_eq!(t, Transition::Applied);
    // A stale rerun stores nothing more.
    let (t, _) = store
        .complete_source_job_with(&job, &serde_json::json!({}), Some(&results), 3)
        .await?;
    assert_eq!(t, Transition::Stale);
    let detail = store
        .case_detail(Some(tenant), case.case_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("missing"))?;
    assert_eq!(detail.pages.len(), 1);
    assert_eq!(detail.segments.len(), 1);
    assert_eq!(detail.segments[0].facts.len(), 1);
    assert_eq!(detail.segments[0].facts[0].raw_text.as_deref(), Some("42"));

    let (v1, new1) = store.load_workflow("trade", "a: 1").await?;
    let (again, new_again) = store.load_workflow("trade", "a: 1").await?;
    let (v2, new2) = store.load_workflow("trade", "a: 2").await?;
    assert_eq!(
        (v1.version, new1, again.version, new_again, v2.version, new2),
        (1, true, 1, false, 2, true)
    );
    store.record_case_workflow(case.case_id, v1.id).await?;
    store.record_case_workflow(case.case_id, v2.id).await?;
    let recorded: Option<uuid::Uuid> =
        sqlx::query_scalar("SELECT workflow_id FROM cases WHERE id = $1")
            .bind(case.case_id.0)
            .fetch_one(store.pool())
            .await?;
    assert_eq!(recorded, Some(v1.id));
    db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn template_sets_are_versioned_and_a_case_keeps_the_set_it_was_first_read_with(
) -> anyhow::Result<()> {
    use ironclad_store::templates::TemplateFile;
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("acme").await?;
    let (early, late) = (new_case(tenant, 1, None), new_case(tenant, 1, None));
    store.commit_intake(&early).await?;
    store.commit_intake(&late).await?;
    // No set loaded: nothing to pin.
    assert_eq!(store.case_template_set(early.case_id).await?, None);

    let file = |name: &str, yaml: &str| TemplateFile {
        name: name.into(),
        yaml: yaml.into(),
    };
    let (v1, created) = store
        .load_template_set(vec![file("b.yml", "issuer: B"), file("a.yml", "issuer: A")])
        .await?;
    assert!(created);
    assert_eq!(v1.version, 1);
    assert_eq!(v1.files[0].name, "a.yml", "stored in name order");
    // The same files, listed in another order: the same version.
    let (again, created) = store
        .load_template_set(vec![file("a.yml", "issuer: A"), file("b.yml", "issuer: B")])
        .await?;
    assert!(!created);
    assert_eq!(again.id, v1.id);

    assert_eq!(store.case_template_set(early.case_id).await?, Some(v1.id));
    let (v2, _) = store
        .load_template_set(vec![file("a.yml", "issuer: A2")])
        .await?;
    assert_eq!(v2.version, 2);
    // A set loaded mid-case does not change the case; a case first read now gets it.
    assert_eq!(store.case_template_set(early.case_id).await?, Some(v1.id));
    assert_eq!(store.case_template_set(late.case_id).await?, Some(v2.id));
    let stored = store
        .template_set_by_id(v2.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("v2 missing"))?;
    assert_eq!(stored.files, vec![file("a.yml", "issuer: A2")]);
    db.drop_database().await;
    Ok(())
}

/// A statement that makes a transition ironclad-core's tables do not hold fails in a test
/// database, naming it; one they hold goes through.
#[tokio::test]
async fn the_transition_guard_refuses_what_the_tables_do_not_hold() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("acme").await?;
    let case = new_case(tenant, 1, None);
    store.commit_intake(&case).await?;
    let refused = sqlx::query("UPDATE cases SET status = 'RESOLVED' WHERE id = $1")
        .bind(case.case_id.0)
        .execute(store.pool())
        .await
        .expect_err("INGESTED -> RESOLVED is not a transition");
    assert!(
        refused
            .to_string()
            .contains("transition guard: case INGESTED -> RESOLVED"),
        "{refused}"
    );
    let refused = sqlx::query("UPDATE jobs SET status = 'SUCCEEDED' WHERE case_id = $1")
        .bind(case.case_id.0)
        .execute(store.pool())
        .await
        .expect_err("PENDING -> SUCCEEDED is not a transition");
    assert!(
        refused
            .to_string()
            .contains("transition guard: job PENDING -> SUCCEEDED"),
        "{refused}"
    );
    sqlx::query(
        "UPDATE cases SET status = 'FAILED', failure_code = 'internal_error', \
         status_reason = 'r' WHERE id = $1",
    )
    .bind(case.case_id.0)
    .execute(store.pool())
    .await?;
    assert_eq!(
        store.recorded_transitions().await?,
        vec![(
            "case".to_owned(),
            "INGESTED".to_owned(),
            "FAILED".to_owned()
        )]
    );
    db.drop_database().await;
    Ok(())
}

/// The arrows of `docs/state-machines.md`'s case and job diagrams, as (from, to).
fn drawn_arrows(doc: &str, heading: &str) -> std::collections::BTreeSet<(String, String)> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_default();
    section
        .lines()
        .filter_map(|line| {
            let (from, rest) = line.trim().split_once(" --> ")?;
            let to = rest.split(':').next()?.trim();
            (from != "[*]" && to != "[*]").then(|| (from.to_owned(), to.to_owned()))
        })
        .collect()
}

/// `docs/state-machines.md` draws exactly the tables: no arrow the code refuses, no transition
/// the code allows that the diagram leaves out.
#[test]
fn the_state_machine_document_draws_the_tables() {
    use ironclad_core::{CaseStatus, JobStatus};
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/state-machines.md"
    ))
    .expect("docs/state-machines.md is readable");
    let cases = CaseStatus::transitions()
        .into_iter()
        .map(|(a, b)| (a.as_str().to_owned(), b.as_str().to_owned()))
        .collect();
    assert_eq!(drawn_arrows(&doc, "Case"), cases);
    let jobs = JobStatus::transitions()
        .into_iter()
        .map(|(a, b)| (a.as_str().to_owned(), b.as_str().to_owned()))
        .collect();
    assert_eq!(drawn_arrows(&doc, "Job"), jobs);
}
