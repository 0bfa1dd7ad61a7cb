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

use crate::common;

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

/// Issue 7, defect 9: a backlog that waits in the stream is not lost, and must not be
/// announced again. 200 due jobs are published while no worker runs; the reconciler sweeps for
/// five times its re-announce window: not one job gets a second outbox row (each sweep reports
/// them still queued). Then the stream itself is lost (as FLUSHALL loses it): the next sweep
/// announces each job exactly once more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_waiting_in_the_stream_is_never_announced_again() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    const JOBS: i64 = 200;
    for _ in 0..JOBS {
        p.submit_case(1).await?;
    }
    let dispatcher = p.dispatcher().await?;
    let mut published = 0;
    while published < JOBS as u64 {
        published += dispatcher.tick().await?.published;
    }
    let reconciler = p.reconciler().await?;
    let most_rows_per_job =
        "SELECT coalesce(max(n), 0) FROM (SELECT job_id, count(*) n FROM outbox GROUP BY 1) t";

    let until = std::time::Instant::now() + p.config.reemit_after * 5;
    let (mut sweeps, mut still_queued) = (0, 0);
    while std::time::Instant::now() < until {
        let report = reconciler.sweep().await?;
        assert_eq!(
            report.reemitted, 0,
            "sweep {sweeps} announced a waiting job again"
        );
        still_queued = still_queued.max(report.still_queued);
        sweeps += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        p.count(most_rows_per_job).await?,
        1,
        "after {sweeps} sweeps"
    );
    assert_eq!(
        still_queued, JOBS as u64,
        "every job was looked at and found waiting"
    );

    // The stream is gone: every job is announced once, and only once.
    let _: () = redis::cmd("DEL")
        .arg(&p.streams.stream)
        .query_async(
            &mut redis::Client::open(p.redis_url.as_str())?
                .get_multiplexed_async_connection()
                .await?,
        )
        .await?;
    assert_eq!(reconciler.sweep().await?.reemitted, JOBS as u64);
    assert_eq!(reconciler.sweep().await?.reemitted, 0);
    assert_eq!(p.count(most_rows_per_job).await?, 2);
    assert_eq!(
        p.count("SELECT count(*) FROM outbox WHERE status = 'PENDING'")
            .await?,
        JOBS
    );
    p.finish().await;
    Ok(())
}
