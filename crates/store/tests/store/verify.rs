//! `Store::verify` on real PostgreSQL: a pipeline run to its decisions verifies clean, and each
//! promise broken on purpose (with SQL, or by touching the blob store) fires its own check with
//! the right case ids — and nothing else. Every test first verifies the same database before
//! breaking it, so a check that fired on a healthy database would fail the test.

use ironclad_core::CaseId;
use ironclad_store::ledger::{Expectation, LedgerEntry};
use ironclad_store::verify::{
    BlobState, VerifyOptions, VerifyReport, BLOBS, DECISIONS_PER_GENERATION, EFFECTS_ONCE,
    JOB_SUCCEEDED_TWICE, LOST, OUTBOX_OVERDUE, REFUSED_CHANGED_SOMETHING, STUCK, WRONGLY_FAILED,
};
use ironclad_testkit::harness::Pipeline;
use std::collections::BTreeSet;
use std::time::Duration;
use uuid::Uuid;

const EVERY_CHECK: [&str; 9] = [
    LOST,
    REFUSED_CHANGED_SOMETHING,
    STUCK,
    WRONGLY_FAILED,
    DECISIONS_PER_GENERATION,
    JOB_SUCCEEDED_TWICE,
    EFFECTS_ONCE,
    BLOBS,
    OUTBOX_OVERDUE,
];

/// A pipeline with `n` one-file cases, each run by the dispatcher and a stand-in worker to its
/// decision.
async fn decided(n: usize) -> anyhow::Result<(Pipeline, Vec<CaseId>)> {
    let p = Pipeline::start().await?;
    let mut cases = Vec::with_capacity(n);
    for _ in 0..n {
        cases.push(p.submit_case(1).await?);
    }
    let dispatcher = p.dispatcher().await?;
    let worker = p.standin_worker("w1").await?;
    for _ in 0..50 {
        let published = dispatcher.tick().await?.published;
        let handled = worker.poll_once().await?.len();
        let open = p
            .count("SELECT count(*) FROM cases WHERE status IN ('INGESTED', 'PROCESSING')")
            .await?;
        if open == 0 && published == 0 && handled == 0 {
            for case in &cases {
                anyhow::ensure!(p.case_status(*case).await? == "AWAITING_REVIEW");
            }
            return Ok((p, cases));
        }
    }
    anyhow::bail!("the pipeline did not settle")
}

/// Runs `Store::verify` with the pipeline's blob store as the digest function.
async fn verify_with(
    p: &Pipeline,
    ledger: Option<&[LedgerEntry]>,
    stuck_after: Duration,
) -> anyhow::Result<VerifyReport> {
    let options = VerifyOptions {
        ledger,
        stuck_after,
        outbox_bound: Duration::from_secs(300),
    };
    let blobs = p.blobs.clone();
    Ok(p.store()
        .verify(&options, |keys| {
            let blobs = blobs.clone();
            async move {
                let mut states = Vec::with_capacity(keys.len());
                for key in keys {
                    states.push(match blobs.digest(&key).await {
                        Ok(Some(d)) => BlobState::Present {
                            size: d.size,
                            sha256: d.sha256,
                        },
                        Ok(None) => BlobState::Missing,
                        Err(e) => BlobState::Unreadable(e.to_string()),
                    });
                }
                states
            }
        })
        .await?)
}

/// Verify as after quiescence: every open case counts as stuck.
async fn verify(p: &Pipeline, ledger: Option<&[LedgerEntry]>) -> anyhow::Result<VerifyReport> {
    verify_with(p, ledger, Duration::ZERO).await
}

fn violations(report: &VerifyReport, name: &str) -> u64 {
    report.check(name).map_or(u64::MAX, |c| c.violations)
}

/// Every check in order; `name` has `expected` violations and every other check none.
fn assert_only(report: &VerifyReport, name: &str, expected: u64) {
    let names: Vec<&str> = report.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, EVERY_CHECK);
    for check in &report.checks {
        let want = if check.name == name { expected } else { 0 };
        assert_eq!(
            check.violations, want,
            "check {} found {} violation(s), expected {want}: {:#?}",
            check.name, check.violations, check.examples
        );
        assert_eq!(
            check.examples.len() as u64,
            check.violations.min(10),
            "{}",
            check.name
        );
    }
    assert_eq!(report.is_ok(), expected == 0);
}

fn assert_clean(report: &VerifyReport) {
    assert_only(report, LOST, 0);
    assert!(report.lost.is_empty() && report.duplicated.is_empty());
    assert!(report.wrongly_failed.is_empty() && report.stuck.is_empty());
}

fn ids(cases: &[CaseId]) -> Vec<Uuid> {
    let set: BTreeSet<Uuid> = cases.iter().map(|c| c.0).collect();
    set.into_iter().collect()
}

fn examples(report: &VerifyReport, name: &str) -> String {
    report
        .check(name)
        .map(|c| c.examples.join("\n"))
        .unwrap_or_default()
}

async fn exec(p: &Pipeline, sql: &str, case: CaseId) -> anyhow::Result<u64> {
    Ok(sqlx::query(sql)
        .bind(case.0)
        .execute(p.store().pool())
        .await?
        .rows_affected())
}

async fn sha256s(p: &Pipeline, case: CaseId) -> anyhow::Result<Vec<String>> {
    Ok(
        sqlx::query_scalar("SELECT sha256 FROM sources WHERE case_id = $1")
            .bind(case.0)
            .fetch_all(p.store().pool())
            .await?,
    )
}

fn entry(seq: u64, key: &str, expect: Expectation, status: Option<u16>) -> LedgerEntry {
    LedgerEntry {
        seq,
        tenant: "test-tenant".into(),
        idempotency_key: key.into(),
        kind: "clean".into(),
        expect,
        status,
        case_id: None,
        files: Vec::new(),
        submitted_at: "2026-12-01T00:00:00Z".into(),
        answered_at: None,
    }
}

/// The ledger line of a case the API accepted with a 201.
async fn accepted(
    p: &Pipeline,
    seq: u64,
    case: CaseId,
    expect: Expectation,
) -> anyhow::Result<LedgerEntry> {
    Ok(LedgerEntry {
        case_id: Some(case.to_string()),
        files: sha256s(p, case).await?,
        ..entry(seq, &format!("k-{seq}"), expect, Some(201))
    })
}

/// Records `key` as the case's intake idempotency key, as an API intake with that
/// `Idempotency-Key` header would have.
async fn set_key(p: &Pipeline, case: CaseId, key: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE intake_submissions SET idempotency_key = $2 WHERE case_id = $1")
        .bind(case.0)
        .bind(key)
        .execute(p.store().pool())
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_clean_pipeline_verifies_ok_with_and_without_its_ledger() -> anyhow::Result<()> {
    let (p, cases) = decided(3).await?;
    assert_clean(&verify(&p, None).await?);

    set_key(&p, cases[2], "k-unanswered-but-committed").await?;
    let ledger = vec![
        accepted(&p, 1, cases[0], Expectation::Decided).await?,
        accepted(&p, 2, cases[1], Expectation::MayFail).await?,
        // The client never heard back, yet the case was committed (and decided): fine.
        entry(3, "k-unanswered-but-committed", Expectation::Decided, None),
        // The client never heard back and nothing was committed: fine too.
        entry(4, "k-unanswered", Expectation::Decided, None),
        // Bad input refused, nothing committed.
        entry(5, "k-refused", Expectation::Refused, Some(422)),
    ];
    let report = verify(&p, Some(&ledger)).await?;
    assert_clean(&report);
    let t = &report.totals;
    assert_eq!(
        (t.cases, t.awaiting_review, t.resolved, t.failed),
        (3, 3, 0, 0)
    );
    assert_eq!((t.unacknowledged, t.refused, t.dead_outbox_rows), (2, 1, 0));
    assert_eq!(t.failed_by_code.get("document_unreadable"), Some(&0));

    let json = serde_json::to_value(&report)?;
    assert_eq!(json["ok"], serde_json::json!(true));
    assert_eq!(json["checks"].as_array().map(Vec::len), Some(9));
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_second_succeeded_run_and_a_success_without_one_are_jobs_that_succeeded_twice(
) -> anyhow::Result<()> {
    let (p, cases) = decided(3).await?;
    assert_clean(&verify(&p, None).await?);

    // Case 0: its finalize job ran (and succeeded) a second time.
    let twice = exec(
        &p,
        "INSERT INTO job_runs (lease_token, job_id, attempt, owner, finished_at, outcome)
         SELECT gen_random_uuid(), id, 2, 'w2', now(), 'SUCCEEDED'
         FROM jobs WHERE case_id = $1 AND kind = 'finalize_case'",
        cases[0],
    )
    .await?;
    assert_eq!(twice, 1);
    // Case 1: its source job is SUCCEEDED, but its only run says it was lost.
    let lost = exec(
        &p,
        "UPDATE job_runs SET outcome = 'LOST' WHERE job_id IN
         (SELECT id FROM jobs WHERE case_id = $1 AND kind = 'process_source')",
        cases[1],
    )
    .await?;
    assert_eq!(lost, 1);

    let report = verify(&p, None).await?;
    assert_only(&report, JOB_SUCCEEDED_TWICE, 2);
    assert_eq!(report.duplicated, ids(&cases[..2]));
    let text = examples(&report, JOB_SUCCEEDED_TWICE);
    assert!(text.contains("has 2 SUCCEEDED runs"), "{text}");
    assert!(
        text.contains("is SUCCEEDED but none of its runs is"),
        "{text}"
    );
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn missing_extra_and_future_decisions_break_one_decision_per_generation() -> anyhow::Result<()>
{
    let (p, cases) = decided(4).await?;
    assert_clean(&verify(&p, None).await?);

    // Case 0: awaiting review, but its decision is gone.
    for table in [
        "rule_results WHERE decision_id IN (SELECT id FROM decisions WHERE case_id = $1)",
        "reviews WHERE case_id = $1",
        "decisions WHERE case_id = $1",
    ] {
        exec(&p, &format!("DELETE FROM {table}"), cases[0]).await?;
    }
    // Case 1: a second decision for generation 1 (the constraint that forbids it dropped, as a
    // migration gone wrong would).
    sqlx::query("DROP INDEX decisions_one_finalize_per_generation")
        .execute(p.store().pool())
        .await?;
    let add_decision = "INSERT INTO decisions (id, case_id, generation, version, status, summary)
                        VALUES (gen_random_uuid(), $1, $2, 2, 'READY', 'again')";
    for (case, generation) in [(cases[1], 1), (cases[2], 2)] {
        sqlx::query(add_decision)
            .bind(case.0)
            .bind(generation)
            .execute(p.store().pool())
            .await?;
    }
    // Case 2 now has a decision for generation 2, which it never reached. Case 3 is untouched.

    let report = verify(&p, None).await?;
    assert_only(&report, DECISIONS_PER_GENERATION, 3);
    assert_eq!(report.duplicated, ids(&cases[..3]));
    let text = examples(&report, DECISIONS_PER_GENERATION);
    for (case, problem) in [
        (
            cases[0],
            "AWAITING_REVIEW without a decision for its generation 1",
        ),
        (cases[1], "generation 1 has 2 finalize decisions"),
        (
            cases[2],
            "is for generation 2 but the case is at generation 1",
        ),
    ] {
        assert!(
            text.contains(&format!("case {case}: ")) && text.contains(problem),
            "{text}"
        );
    }
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_second_source_job_finalize_job_or_decision_event_breaks_effects_once(
) -> anyhow::Result<()> {
    let (p, cases) = decided(4).await?;
    assert_clean(&verify(&p, None).await?);

    // Case 0: its source got a second job in generation 1.
    exec(
        &p,
        "INSERT INTO jobs (id, case_id, source_id, kind, status, generation, max_attempts, finished_at)
         SELECT gen_random_uuid(), case_id, id, 'process_source', 'CANCELLED', 1, 3, now()
         FROM sources WHERE case_id = $1",
        cases[0],
    )
    .await?;
    // Case 1: a second finalize job for generation 1.
    sqlx::query("DROP INDEX jobs_one_finalize_per_generation")
        .execute(p.store().pool())
        .await?;
    exec(
        &p,
        "INSERT INTO jobs (id, case_id, kind, status, generation, max_attempts, finished_at)
         VALUES (gen_random_uuid(), $1, 'finalize_case', 'CANCELLED', 1, 3, now())",
        cases[1],
    )
    .await?;
    // Case 2: its decision was announced twice.
    exec(
        &p,
        "INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
         SELECT case_id, tenant_id, actor, event_type, data FROM audit_events
         WHERE case_id = $1 AND event_type = 'DECISION_GENERATED'",
        cases[2],
    )
    .await?;

    let report = verify(&p, None).await?;
    assert_only(&report, EFFECTS_ONCE, 3);
    assert_eq!(report.duplicated, ids(&cases[..3]));
    let text = examples(&report, EFFECTS_ONCE);
    assert!(
        text.contains("process_source jobs in generation 1"),
        "{text}"
    );
    assert!(text.contains("has 2 finalize_case jobs"), "{text}");
    assert!(text.contains("has 2 DECISION_GENERATED events"), "{text}");
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn technical_failures_and_failures_of_cases_owed_a_decision_are_wrongly_failed(
) -> anyhow::Result<()> {
    let (p, cases) = decided(3).await?;
    assert_clean(&verify(&p, None).await?);

    // Decided cases made FAILED: a state no scenario reaches, which verify must still name.
    p.store().remove_transition_guard().await?;
    let fail = "UPDATE cases SET status = 'FAILED', failure_code = $2, status_reason = 'broken'
                WHERE id = $1";
    for (case, code) in [(cases[0], "worker_lost"), (cases[1], "document_unreadable")] {
        sqlx::query(fail)
            .bind(case.0)
            .bind(code)
            .execute(p.store().pool())
            .await?;
    }

    // Without a ledger only the technical failure is wrong: an unreadable file is an outcome.
    let report = verify(&p, None).await?;
    assert_only(&report, WRONGLY_FAILED, 1);
    assert_eq!(report.wrongly_failed, vec![cases[0].0]);
    assert!(examples(&report, WRONGLY_FAILED).contains("worker_lost"));
    let t = &report.totals;
    assert_eq!((t.cases, t.awaiting_review, t.failed), (3, 1, 2));
    assert_eq!(t.failed_by_code.get("worker_lost"), Some(&1));
    assert_eq!(t.failed_by_code.get("document_unreadable"), Some(&1));

    // The unreadable case's submitter may expect a failure: still only the technical one.
    let mut ledger = vec![
        accepted(&p, 1, cases[0], Expectation::MayFail).await?,
        accepted(&p, 2, cases[1], Expectation::MayFail).await?,
        accepted(&p, 3, cases[2], Expectation::Decided).await?,
    ];
    let report = verify(&p, Some(&ledger)).await?;
    assert_only(&report, WRONGLY_FAILED, 1);
    assert_eq!(report.wrongly_failed, vec![cases[0].0]);

    // A healthy dossier owed a decision: any failure is wrong, document_unreadable included.
    ledger[1].expect = Expectation::Decided;
    let report = verify(&p, Some(&ledger)).await?;
    assert_only(&report, WRONGLY_FAILED, 2);
    assert_eq!(report.wrongly_failed, vec![cases[0].0, cases[1].0]);
    assert!(examples(&report, WRONGLY_FAILED).contains("owed a decision"));

    // The same when the client never got its answer but the case was committed under its key.
    set_key(&p, cases[1], "k-unanswered").await?;
    ledger[1] = entry(2, "k-unanswered", Expectation::Decided, None);
    let report = verify(&p, Some(&ledger)).await?;
    assert_only(&report, WRONGLY_FAILED, 2);
    assert_eq!(report.wrongly_failed, vec![cases[0].0, cases[1].0]);
    assert_eq!(report.totals.unacknowledged, 1);
    ledger[1].expect = Expectation::MayFail;
    let report = verify(&p, Some(&ledger)).await?;
    assert_eq!(report.wrongly_failed, vec![cases[0].0]);
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn open_cases_without_activity_beyond_the_threshold_are_stuck() -> anyhow::Result<()> {
    let (p, decided_cases) = decided(1).await?;
    // A new case nobody works on.
    let idle = p.submit_case(2).await?;
    let quarter_hour = Duration::from_secs(15 * 60);
    assert_clean(&verify_with(&p, None, quarter_hour).await?);

    // After quiescence (threshold 0) every open case is stuck, with what it waits for.
    let report = verify(&p, None).await?;
    assert_only(&report, STUCK, 1);
    assert_eq!(report.stuck, vec![idle.0]);
    assert!(examples(&report, STUCK).contains("process_source"));

    // An hour without any change is stuck under a quarter-hour threshold too…
    exec(
        &p,
        "UPDATE cases SET updated_at = now() - interval '1 hour' WHERE id = $1",
        idle,
    )
    .await?;
    exec(
        &p,
        "UPDATE jobs SET updated_at = now() - interval '1 hour' WHERE case_id = $1",
        idle,
    )
    .await?;
    let report = verify_with(&p, None, quarter_hour).await?;
    assert_only(&report, STUCK, 1);
    assert_eq!(report.stuck, vec![idle.0]);
    assert!(!report.stuck.contains(&decided_cases[0].0));

    // …unless one of its jobs moved (a running job renewing its lease is activity).
    exec(
        &p,
        "UPDATE jobs SET updated_at = now() WHERE id =
         (SELECT id FROM jobs WHERE case_id = $1 ORDER BY id LIMIT 1)",
        idle,
    )
    .await?;
    assert_clean(&verify_with(&p, None, quarter_hour).await?);
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn missing_and_corrupted_blobs_are_reported_apart() -> anyhow::Result<()> {
    let (p, cases) = decided(3).await?;
    assert_clean(&verify(&p, None).await?);

    let key_of = |case: CaseId| {
        sqlx::query_as::<_, (String, Uuid)>("SELECT blob_key, id FROM sources WHERE case_id = $1")
            .bind(case.0)
            .fetch_one(p.store().pool())
    };
    let (missing_key, missing_source) = key_of(cases[0]).await?;
    let (damaged_key, damaged_source) = key_of(cases[1]).await?;
    std::fs::remove_file(p.blobs.path_of(&missing_key)?)?;
    let damaged = p.blobs.path_of(&damaged_key)?;
    let mut bytes = std::fs::read(&damaged)?;
    if let Some(b) = bytes.last_mut() {
        *b ^= 0xff;
    }
    std::fs::write(&damaged, &bytes)?;

    let report = verify(&p, None).await?;
    assert_only(&report, BLOBS, 2);
    let text = examples(&report, BLOBS);
    assert!(
        text.contains(&format!(
            "missing: blob {missing_key} of source {missing_source} (case {})",
            cases[0]
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("of source {damaged_source} (case {})", cases[1]))
            && text.contains("mismatched (recorded sha256"),
        "{text}"
    );
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn overdue_outbox_rows_are_violations_and_dead_rows_are_counted() -> anyhow::Result<()> {
    let (p, cases) = decided(2).await?;
    assert_clean(&verify(&p, None).await?);

    let add_row = "INSERT INTO outbox (id, idempotency_key, job_id, payload, status, available_at,
                                       lock_token, locked_at, created_at)
                   SELECT gen_random_uuid(), 'test:' || gen_random_uuid(), id, '{}', $2,
                          now() + $3::interval,
                          CASE WHEN $2 = 'PUBLISHING' THEN gen_random_uuid() END,
                          CASE WHEN $2 = 'PUBLISHING' THEN now() + $3::interval END,
                          now() - interval '1 hour'
                   FROM jobs WHERE case_id = $1 AND kind = 'finalize_case'";
    let mut rows = Vec::new();
    for (case, status, offset) in [
        // due ten minutes ago and never published: overdue
        (cases[0], "PENDING", "-10 minutes"),
        // claimed by a dispatcher ten minutes ago: overdue
        (cases[1], "PUBLISHING", "-10 minutes"),
        // created an hour ago but due only in an hour (a delayed retry): fine
        (cases[0], "PENDING", "1 hour"),
        // dead: counted, not a violation
        (cases[1], "DEAD", "-10 minutes"),
    ] {
        let id: Uuid = sqlx::query_scalar(&format!("{add_row} RETURNING id"))
            .bind(case.0)
            .bind(status)
            .bind(offset)
            .fetch_one(p.store().pool())
            .await?;
        rows.push(id);
    }

    let report = verify(&p, None).await?;
    assert_only(&report, OUTBOX_OVERDUE, 2);
    assert_eq!(report.totals.dead_outbox_rows, 1);
    let text = examples(&report, OUTBOX_OVERDUE);
    for (row, case) in [(rows[0], cases[0]), (rows[1], cases[1])] {
        assert!(text.contains(&format!("outbox row {row} (job ")), "{text}");
        assert!(text.contains(&format!("case {case})")), "{text}");
    }
    assert!(!text.contains(&rows[2].to_string()) && !text.contains(&rows[3].to_string()));
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn accepted_entries_that_vanished_are_lost_and_refused_ones_that_committed_are_reported(
) -> anyhow::Result<()> {
    let (p, cases) = decided(3).await?;
    let good = vec![
        accepted(&p, 1, cases[0], Expectation::Decided).await?,
        accepted(&p, 2, cases[1], Expectation::Decided).await?,
        entry(3, "k-refused-clean", Expectation::Refused, Some(422)),
        entry(4, "k-no-answer", Expectation::Decided, None),
    ];
    assert_clean(&verify(&p, Some(&good)).await?);

    let ghost = Uuid::now_v7();
    let mut ledger = good.clone();
    // A 201 naming a case that does not exist.
    ledger.push(LedgerEntry {
        case_id: Some(ghost.to_string()),
        files: sha256s(&p, cases[0]).await?,
        ..entry(5, "k-ghost", Expectation::Decided, Some(201))
    });
    // A 201 for a case that does not hold the files sent.
    ledger.push(LedgerEntry {
        files: vec!["0".repeat(64)],
        ..accepted(&p, 6, cases[1], Expectation::Decided).await?
    });
    // A 201 without a case id.
    ledger.push(entry(7, "k-no-case-id", Expectation::Decided, Some(201)));
    // A 201 for a tenant that does not exist.
    ledger.push(LedgerEntry {
        tenant: "nobody".into(),
        ..accepted(&p, 8, cases[2], Expectation::Decided).await?
    });
    // Refused with 422, yet a submission exists under its key…
    set_key(&p, cases[2], "k-refused-but-committed").await?;
    ledger.push(entry(
        9,
        "k-refused-but-committed",
        Expectation::Refused,
        Some(422),
    ));
    // …or a case whose intake event names the key.
    exec(
        &p,
        "INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
         SELECT id, tenant_id, 'test', 'CASE_INGESTED', '{\"idempotency_key\": \"k-refused-audit\"}'
         FROM cases WHERE id = $1",
        cases[0],
    )
    .await?;
    ledger.push(entry(
        10,
        "k-refused-audit",
        Expectation::Refused,
        Some(400),
    ));

    let report = verify(&p, Some(&ledger)).await?;
    assert_eq!(violations(&report, LOST), 4, "{:#?}", report.checks);
    assert_eq!(
        violations(&report, REFUSED_CHANGED_SOMETHING),
        2,
        "{:#?}",
        report.checks
    );
    for name in [
        STUCK,
        WRONGLY_FAILED,
        DECISIONS_PER_GENERATION,
        JOB_SUCCEEDED_TWICE,
        EFFECTS_ONCE,
        BLOBS,
        OUTBOX_OVERDUE,
    ] {
        assert_eq!(violations(&report, name), 0, "{name}");
    }
    assert_eq!(
        report.lost,
        vec![
            ghost.to_string(),
            cases[1].to_string(),
            "k-no-case-id".to_owned(),
            cases[2].to_string()
        ]
    );
    let lost = examples(&report, LOST);
    assert!(
        lost.contains(&format!("case {ghost} does not exist")),
        "{lost}"
    );
    assert!(lost.contains("does not hold the files sent"), "{lost}");
    assert!(lost.contains("tenant \"nobody\" does not exist"), "{lost}");
    let refused = examples(&report, REFUSED_CHANGED_SOMETHING);
    assert!(
        refused.contains(&format!(
            "key k-refused-but-committed): answered 422 but case {} exists",
            cases[2]
        )),
        "{refused}"
    );
    assert!(
        refused.contains(&format!(
            "key k-refused-audit): answered 400 but case {} exists",
            cases[0]
        )),
        "{refused}"
    );
    assert_eq!(
        (report.totals.refused, report.totals.unacknowledged),
        (3, 1)
    );
    assert!(report.duplicated.is_empty() && report.wrongly_failed.is_empty());
    p.finish().await;
    Ok(())
}
