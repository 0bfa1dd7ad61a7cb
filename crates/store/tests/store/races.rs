//! Races between transitions, run on purpose with a barrier in PostgreSQL itself, and the
//! timeouts every session carries (issue 7, defects 5, 12 and 14).
//!
//! A barrier is a trigger that sleeps after a statement has done its work and before its
//! transaction commits, which is exactly the window where READ COMMITTED lets another
//! transaction act on what it cannot see yet.

use ironclad_blobs::BlobStore;
use ironclad_core::{CaseId, Envelope, FailureCode, JobId, JobKind};
use ironclad_store::jobs::{ClaimOutcome, ClaimedJob, Failure, FinalizeOutcome};
use ironclad_store::{PoolSettings, Store, StoreError, Transition};
use ironclad_testkit::harness::commit_fixture_case;
use ironclad_testkit::{wait_for, TestDb};
use std::time::Duration;
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(60);

async fn jobs_of(store: &Store, case: CaseId, kind: JobKind) -> anyhow::Result<Vec<JobId>> {
    let ids: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM jobs WHERE case_id = $1 AND kind = $2 ORDER BY created_at, id",
    )
    .bind(case.0)
    .bind(kind.as_str())
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

/// Makes every transaction that moves a job from `from` to `to` sleep `secs` after its
/// statement, before its commit.
async fn hold_transition(store: &Store, from: &str, to: &str, secs: f64) -> anyhow::Result<()> {
    sqlx::query(&format!(
        "CREATE FUNCTION hold_transition() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN PERFORM pg_sleep({secs}); RETURN NULL; END $$"
    ))
    .execute(store.pool())
    .await?;
    sqlx::query(&format!(
        "CREATE TRIGGER hold_transition AFTER UPDATE ON jobs FOR EACH ROW
         WHEN (OLD.status = '{from}' AND NEW.status = '{to}') EXECUTE FUNCTION hold_transition()"
    ))
    .execute(store.pool())
    .await?;
    Ok(())
}

/// Waits until some session of this database waits in `wait_event` (`PgSleep`, `transactionid`).
async fn wait_until_waiting(store: &Store, wait_event: &str) -> anyhow::Result<()> {
    wait_for(
        &format!("a session waiting on {wait_event}"),
        Duration::from_secs(10),
        || async {
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = $1",
            )
            .bind(wait_event)
            .fetch_one(store.pool())
            .await?;
            Ok((n > 0).then_some(()))
        },
    )
    .await
}

/// Defect 5: an operator's requeue racing a sibling job's failure. The dead-lettered job A is
/// requeued while job B's failure has run its statement but not committed. Under READ
/// COMMITTED the requeue could not see B failed and reopened the case, while B's statement had
/// found the case already FAILED and left it: the case sat in PROCESSING forever, B failed and
/// nothing due. Both now take the case lock first, so the requeue waits and sees B's failure.
/// Returns (jobs requeued, case status, failure code, FAILED jobs left in the generation).
async fn requeue_racing_a_failure(
    code: FailureCode,
) -> anyhow::Result<(u64, String, Option<String>, i64)> {
    let db = TestDb::new().await?;
    let store = db.store.clone();
    let tenant = store.create_tenant("race").await?;
    let dir = tempfile::tempdir()?;
    let blobs = BlobStore::open(dir.path())?;
    let case = commit_fixture_case(&store, &blobs, tenant, 2, 3, "race").await?;
    let jobs = jobs_of(&store, case, JobKind::ProcessSource).await?;
    let (a, b) = (jobs[0], jobs[1]);

    let poison = Envelope::new(a, case, JobKind::ProcessSource, 1);
    assert_eq!(
        store.fail_dead_lettered(&poison, "poison", "test").await?,
        Transition::Applied
    );
    let running = claim(&store, case, b, JobKind::ProcessSource).await?;
    hold_transition(&store, "RUNNING", "FAILED", 2.0).await?;

    let failing = tokio::spawn({
        let store = store.clone();
        async move {
            let failure = Failure::new(code, "the sibling's failure");
            store.fail_held_job(&running, &failure, "worker").await
        }
    });
    wait_until_waiting(&store, "PgSleep").await?;
    let requeued = store.requeue_dead_lettered_jobs("operator").await?;
    assert_eq!(failing.await??, Transition::Applied);

    let (status, failure_code): (String, Option<String>) =
        sqlx::query_as("SELECT status, failure_code FROM cases WHERE id = $1")
            .bind(case.0)
            .fetch_one(store.pool())
            .await?;
    let failed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM jobs WHERE case_id = $1 AND status = 'FAILED'")
            .bind(case.0)
            .fetch_one(store.pool())
            .await?;
    db.drop_database().await;
    Ok((requeued, status, failure_code, failed))
}

/// ... the sibling failed for a technical reason: the requeue sees it and requeues it too, so
/// the reopened case has every job due again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeue_racing_a_technical_failure_requeues_it_too() -> anyhow::Result<()> {
    let (requeued, status, code, failed) =
        requeue_racing_a_failure(FailureCode::AttemptsExhausted).await?;
    assert_eq!(
        (requeued, status.as_str(), code, failed),
        (2, "PROCESSING", None, 0),
        "a PROCESSING case must not keep a FAILED job: nothing would ever finish it"
    );
    Ok(())
}

/// ... the sibling's file cannot be read: the case stays FAILED, with that reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeue_racing_a_final_failure_leaves_the_case_failed() -> anyhow::Result<()> {
    let (requeued, status, code, failed) =
        requeue_racing_a_failure(FailureCode::DocumentUnreadable).await?;
    assert_eq!(
        (requeued, status.as_str(), code.as_deref(), failed),
        (1, "FAILED", Some("document_unreadable"), 1),
        "a case with a source that failed for good must not be reopened"
    );
    Ok(())
}

/// Defect 14: the decision version is `max(version) + 1`; a version taken concurrently by a
/// writer without the case lock used to make the insert a silent no-op (a bare `ON CONFLICT DO
/// NOTHING`), so the finalize job SUCCEEDED with no decision. Now only the one-per-generation
/// rule is a no-op; a version conflict is retried with the next version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_version_taken_concurrently_is_not_a_silent_no_op() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = db.store.clone();
    let tenant = store.create_tenant("versions").await?;
    let dir = tempfile::tempdir()?;
    let blobs = BlobStore::open(dir.path())?;
    let case = commit_fixture_case(&store, &blobs, tenant, 1, 3, "versions").await?;
    let source = jobs_of(&store, case, JobKind::ProcessSource).await?[0];
    let source = claim(&store, case, source, JobKind::ProcessSource).await?;
    let (done, enqueued) = store
        .complete_source_job(&source, &serde_json::json!({}), 3)
        .await?;
    assert!(done == Transition::Applied && enqueued);
    let finalize = jobs_of(&store, case, JobKind::FinalizeCase).await?[0];
    let finalize = claim(&store, case, finalize, JobKind::FinalizeCase).await?;

    // Another writer (a future reprocess, say) takes version 1 and has not committed yet.
    let mut other = store.pool().begin().await?;
    sqlx::query(
        "INSERT INTO decisions (id, case_id, generation, version, status, summary)
         VALUES ($1, $2, 99, 1, 'REVIEW_REQUIRED', 'another writer')",
    )
    .bind(Uuid::now_v7())
    .bind(case.0)
    .execute(&mut *other)
    .await?;
    let finalizing = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .finalize_case(&finalize, &ironclad_testkit::harness::no_rules())
                .await
        }
    });
    wait_until_waiting(&store, "transactionid").await?;
    other.commit().await?;
    assert_eq!(finalizing.await??, FinalizeOutcome::Decided);

    let decisions: Vec<(i32, i32)> = sqlx::query_as(
        "SELECT generation, version FROM decisions WHERE case_id = $1 ORDER BY version",
    )
    .bind(case.0)
    .fetch_all(store.pool())
    .await?;
    assert_eq!(decisions, vec![(99, 1), (1, 2)]);
    let status: String = sqlx::query_scalar("SELECT status FROM cases WHERE id = $1")
        .bind(case.0)
        .fetch_one(store.pool())
        .await?;
    assert_eq!(status, "AWAITING_REVIEW");
    db.drop_database().await;
    Ok(())
}

/// Defect 12: every session carries a statement timeout, a lock timeout, an
/// idle-in-transaction timeout and server-side TCP keepalives, from the pool settings. A
/// statement that would wait on a stuck lock fails (as a conflict to retry) instead of
/// queueing, and a session abandoned inside a transaction is ended by the server.
#[tokio::test]
async fn every_session_carries_the_configured_timeouts() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let settings = PoolSettings {
        statement_timeout: Duration::from_millis(1500),
        lock_timeout: Duration::from_millis(300),
        idle_in_transaction_timeout: Duration::from_millis(700),
        keepalive_idle: Duration::from_secs(45),
        ..PoolSettings::default()
    };
    let store = Store::connect_with(&db.url, &settings).await?;
    for (name, want) in [
        ("statement_timeout", "1500ms"),
        ("lock_timeout", "300ms"),
        ("idle_in_transaction_session_timeout", "700ms"),
        ("tcp_keepalives_idle", "45"),
        ("tcp_keepalives_interval", "15"),
        ("tcp_keepalives_count", "3"),
    ] {
        let got: String = sqlx::query_scalar(&format!("SHOW {name}"))
            .fetch_one(store.pool())
            .await?;
        assert_eq!(got, want, "{name}");
    }

    let slow = sqlx::query("SELECT pg_sleep(3)")
        .execute(store.pool())
        .await
        .map_err(StoreError::from);
    assert!(
        matches!(&slow, Err(e) if e.is_transient()),
        "a statement past the timeout is cancelled: {slow:?}"
    );

    // A transaction holds a job's row; a claim of that job gives up after the lock timeout.
    let tenant = db.store.create_tenant("locks").await?;
    let dir = tempfile::tempdir()?;
    let blobs = BlobStore::open(dir.path())?;
    let case = commit_fixture_case(&db.store, &blobs, tenant, 1, 3, "locks").await?;
    let job = jobs_of(&db.store, case, JobKind::ProcessSource).await?[0];
    let mut holder = db.store.pool().begin().await?;
    sqlx::query("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE")
        .bind(job.0)
        .execute(&mut *holder)
        .await?;
    let started = std::time::Instant::now();
    let blocked = store
        .claim_job(
            &Envelope::new(job, case, JobKind::ProcessSource, 1),
            "w",
            LEASE,
        )
        .await;
    assert!(
        matches!(&blocked, Err(StoreError::Retry(_))),
        "a lock wait past lock_timeout is a conflict to retry: {blocked:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    holder.rollback().await?;

    // A session left idle inside a transaction is ended by the server.
    let mut idle = store.pool().begin().await?;
    sqlx::query("SELECT 1").execute(&mut *idle).await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = sqlx::query("SELECT 1").execute(&mut *idle).await;
    assert!(after.is_err(), "the idle transaction was ended");
    drop(idle);
    db.drop_database().await;
    Ok(())
}
