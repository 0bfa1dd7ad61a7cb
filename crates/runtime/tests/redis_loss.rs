//! Redis forgets everything, with work in flight.
//!
//! DESIGN §3 invariant 2, **Nothing is lost**: "Every committed job reaches a terminal status
//! while PostgreSQL is up and at least one worker, dispatcher and reconciler run — … whatever
//! Redis forgets (FLUSHALL, restart without persistence)". And §1: "losing the whole Redis
//! dataset must delay work, never lose it."
//!
//! Each test runs a private Redis without persistence, gets messages into it, then loses them:
//! a FLUSHALL after every job was published but before any worker read, and a kill + restart
//! while jobs are RUNNING. The roles run their real `run` loops; PostgreSQL alone must bring
//! every case to exactly one decision (the reconciler re-announces what no message carries),
//! and no source is processed twice.

mod common;

use common::{wait_all_decided, Roles};
use ironclad_documents::processor::{Behaviour, ScriptedProcessor};
use ironclad_testkit::harness::Pipeline;
use ironclad_testkit::private::PrivateRedis;
use ironclad_testkit::wait_for;
use std::sync::Arc;
use std::time::Duration;

const CASES: usize = 20;

/// 20 cases of 1 or 2 files: 30 source jobs.
async fn submit_all(p: &Pipeline) -> anyhow::Result<i64> {
    let mut jobs = 0;
    for i in 0..CASES {
        let files = 1 + i % 2;
        p.submit_case(files).await?;
        jobs += files as i64;
    }
    Ok(jobs)
}

async fn assert_every_case_decided_once(p: &Pipeline, source_jobs: i64) -> anyhow::Result<()> {
    let cases = CASES as i64;
    assert_eq!(p.assert_effects_once().await?, cases);
    assert_eq!(
        p.count("SELECT count(*) FROM cases WHERE status = 'AWAITING_REVIEW'")
            .await?,
        cases
    );
    assert_eq!(
        p.count("SELECT count(*) FROM audit_events WHERE event_type = 'DECISION_GENERATED'")
            .await?,
        cases
    );
    assert_eq!(
        p.count("SELECT count(*) FROM jobs WHERE status = 'SUCCEEDED'")
            .await?,
        source_jobs + cases,
        "every source job and one finalize per case succeeded"
    );
    assert_eq!(
        p.count("SELECT count(*) FROM jobs WHERE status <> 'SUCCEEDED'")
            .await?,
        0
    );
    Ok(())
}

/// Every job is published, then FLUSHALL before any worker reads: the stream, the group and
/// every message are gone. The reconciler re-emits each job after `reemit_after`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushall_after_publication_delays_but_loses_nothing() -> anyhow::Result<()> {
    let redis = PrivateRedis::start()?;
    let p = Pipeline::on_redis(&redis.url()).await?;
    let source_jobs = submit_all(&p).await?;
    let dispatcher = p.dispatcher().await?;
    let observer = p.queue("observer").await?;
    assert_eq!(dispatcher.tick().await?.published, source_jobs as u64);
    assert_eq!(observer.stream_len().await?, source_jobs as u64);

    redis.flushall()?;
    assert_eq!(observer.stream_len().await?, 0, "every message is gone");
    assert_eq!(
        p.count("SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'")
            .await?,
        0,
        "PG thinks all were sent"
    );

    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let mut roles = Roles::new();
    roles.dispatcher(dispatcher);
    roles.worker(p.worker("w1", processor.clone()).await?);
    roles.reconciler(p.reconciler().await?);
    let done = wait_all_decided(&p, CASES as i64, Duration::from_secs(60)).await;
    roles.stop().await?;
    done?;

    assert_every_case_decided_once(&p, source_jobs).await?;
    assert_eq!(
        processor.calls(),
        source_jobs as u64,
        "each source processed exactly once"
    );
    assert!(
        p.count("SELECT count(*) FROM outbox WHERE idempotency_key LIKE '%:reemit:%'")
            .await?
            >= source_jobs,
        "the reconciler re-announced every lost job"
    );
    p.finish().await;
    Ok(())
}

/// Redis is killed while jobs are RUNNING and restarted empty. Running jobs commit their
/// outcome in PostgreSQL (their XACK fails: harmless), publication fails and is retried (rows
/// may even go DEAD), messages already in Redis are lost; every case still ends with exactly
/// one decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restart_without_persistence_mid_flight_loses_nothing() -> anyhow::Result<()> {
    let redis = PrivateRedis::start()?;
    let p = Pipeline::on_redis(&redis.url()).await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Sleep(
        Duration::from_secs(1),
    )));
    let mut roles = Roles::new();
    roles.dispatcher(p.dispatcher().await?);
    roles.worker(p.worker("w1", processor.clone()).await?);
    roles.reconciler(p.reconciler().await?);
    let source_jobs = submit_all(&p).await?;

    wait_for("jobs to be running", Duration::from_secs(20), || async {
        let running = p
            .count("SELECT count(*) FROM jobs WHERE status = 'RUNNING'")
            .await?;
        Ok((running >= 2).then_some(()))
    })
    .await?;
    redis.kill()?;
    // Long enough for the running jobs to finish (and fail to ack) while Redis is down.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    redis.restart()?;

    let done = wait_all_decided(&p, CASES as i64, Duration::from_secs(90)).await;
    roles.stop().await?;
    done?;
    assert_every_case_decided_once(&p, source_jobs).await?;
    assert_eq!(
        processor.calls(),
        source_jobs as u64,
        "no source was processed twice"
    );
    // The scenario really lost messages: unread ones died with Redis and were re-announced.
    assert!(
        p.count("SELECT count(*) FROM outbox WHERE idempotency_key LIKE '%:reemit:%'")
            .await?
            > 0
    );
    p.finish().await;
    Ok(())
}
