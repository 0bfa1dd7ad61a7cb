//! PostgreSQL outages are delays, not failures (issue 7, defects 1 and 2).
//!
//! DESIGN §3 invariant 2, **Nothing is lost**, read together with invariant 5: an outage of
//! the source of truth must never be mistaken for poison or for a dead worker. Each test runs
//! the real roles in-process against a private PostgreSQL cluster that it stops (immediate
//! shutdown, as a crash) and starts again, and the shared Redis.
//!
//! - An outage longer than `claim_idle × max_deliveries` used to pile deliveries onto every
//!   message until the delivery limit failed healthy jobs (`delivered 11 times (limit 5)`).
//! - An outage longer than the lease used to let the reconciler fail a job on its last attempt
//!   whose worker was still reading it, and a commit error after the work threw it away.

use crate::common;

use common::{wait_all_decided, Act, Rigged, Roles};
use ironclad_testkit::harness::Pipeline;
use ironclad_testkit::private::PrivatePostgres;
use ironclad_testkit::{wait_for, TestDb};
use std::time::{Duration, Instant};

/// A pipeline on its own PostgreSQL cluster.
async fn pipeline_on(pg: &PrivatePostgres) -> anyhow::Result<Pipeline> {
    let db = TestDb::on_server(&pg.url()).await?;
    Pipeline::with_db(db, &ironclad_testkit::redis_url()).await
}

/// Counts of (runs that succeeded per job > 1, jobs with a run that did not succeed).
async fn runs(p: &Pipeline) -> anyhow::Result<(i64, i64)> {
    let twice = p
        .count("SELECT count(*) FROM (SELECT job_id FROM job_runs WHERE outcome = 'SUCCEEDED' GROUP BY 1 HAVING count(*) > 1) t")
        .await?;
    let other = p
        .count("SELECT count(*) FROM job_runs WHERE outcome IS DISTINCT FROM 'SUCCEEDED'")
        .await?;
    Ok((twice, other))
}

/// Messages are delivered while PostgreSQL is down: every claim fails, each delivery is
/// reclaimed after `claim_idle` and fails again, well past `max_deliveries`. None of those
/// deliveries started the job's work, so none counts: once PostgreSQL is back every case is
/// decided, none FAILED, nothing dead-lettered, nothing done twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_longer_than_the_delivery_budget_delays_but_fails_nothing(
) -> anyhow::Result<()> {
    let pg = PrivatePostgres::start()?;
    let mut p = pipeline_on(&pg).await?;
    // Fail fast while the server is down, so each delivery ends quickly and is reclaimed.
    p.db.store = ironclad_store::Store::connect_with(
        &p.db.url,
        &ironclad_store::PoolSettings {
            acquire_timeout: Duration::from_secs(1),
            ..Default::default()
        },
    )
    .await?;
    p.streams.max_deliveries = 3;
    const CASES: i64 = 8;
    for _ in 0..CASES {
        p.submit_case(1).await?;
    }
    let dispatcher = p.dispatcher().await?;
    assert_eq!(dispatcher.tick().await?.published, CASES as u64);

    // Down for longer than claim_idle (2 s) × max_deliveries (3), reclaims every 0.5 s.
    let down = p.streams.claim_idle * 3 + Duration::from_secs(6);
    pg.stop()?;
    let processor = Rigged::new(|_, _| Act::Sleep(Duration::from_millis(300)));
    let mut roles = Roles::new();
    roles.dispatcher(dispatcher);
    roles.worker(p.worker("w1", processor.clone()).await?);
    roles.worker(p.worker("w2", processor.clone()).await?);
    roles.reconciler(p.reconciler().await?);
    tokio::time::sleep(down).await;
    let deliveries = max_deliveries(&p).await?;
    pg.start_server()?;
    let restarted = Instant::now();
    assert!(
        deliveries > p.streams.max_deliveries,
        "the outage was meant to exceed the delivery limit; the most delivered message had {deliveries}"
    );

    wait_all_decided(&p, CASES, Duration::from_secs(60)).await?;
    println!(
        "postgres down {down:?} (messages delivered up to {deliveries} times): every case decided {:?} after the restart",
        restarted.elapsed()
    );
    roles.stop().await?;
    assert_eq!(
        p.count(
            "SELECT count(*) FROM jobs WHERE status = 'FAILED' OR dead_lettered_at IS NOT NULL"
        )
        .await?,
        0
    );
    assert!(p.queue("probe").await?.dead_letters(10).await?.is_empty());
    assert_eq!(p.assert_effects_once().await?, CASES);
    assert_eq!(runs(&p).await?, (0, 0), "one run per job, each a success");
    assert_eq!(processor.calls(), CASES as u64, "every document read once");
    p.finish().await;
    Ok(())
}

/// The highest delivery count among the group's pending messages.
async fn max_deliveries(p: &Pipeline) -> anyhow::Result<u64> {
    use redis::AsyncCommands;
    let client = redis::Client::open(p.redis_url.as_str())?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let pending: redis::streams::StreamPendingCountReply = conn
        .xpending_count(&p.streams.stream, &p.streams.group, "-", "+", 100)
        .await?;
    Ok(pending
        .ids
        .iter()
        .map(|e| e.times_delivered as u64)
        .max()
        .unwrap_or(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_attempt_outlives_a_postgres_outage_and_succeeds_once() -> anyhow::Result<()> {
    let pg = PrivatePostgres::start()?;
    let mut p = pipeline_on(&pg).await?;
    // Every job has one attempt: it is on its last from the start.
    p.config.retry.max_attempts = 1;
    let case = p.submit_case(1).await?;
    // Longer than the lease (3 s): the lease runs out during the outage, mid-read.
    let processor = Rigged::new(|_, _| Act::Sleep(Duration::from_secs(6)));
    let mut roles = Roles::new();
    roles.dispatcher(p.dispatcher().await?);
    roles.worker(p.worker("w1", processor.clone()).await?);
    roles.worker(p.worker("w2", processor.clone()).await?);
    roles.reconciler(p.reconciler().await?);
    wait_for("the job to run", Duration::from_secs(30), || async {
        Ok((p
            .count("SELECT count(*) FROM jobs WHERE status = 'RUNNING'")
            .await?
            == 1)
            .then_some(()))
    })
    .await?;

    pg.stop()?;
    tokio::time::sleep(Duration::from_secs(20)).await;
    pg.start_server()?;

    wait_all_decided(&p, 1, Duration::from_secs(60)).await?;
    roles.stop().await?;
    let jobs = common::jobs_of(&p, case).await?;
    assert_eq!(
        jobs.iter()
            .map(|j| (j.kind.as_str(), j.status.as_str(), j.attempt))
            .collect::<Vec<_>>(),
        vec![
            ("process_source", "SUCCEEDED", 1),
            ("finalize_case", "SUCCEEDED", 1)
        ]
    );
    assert_eq!(processor.calls(), 1, "the document was read once");
    assert_eq!(runs(&p).await?, (0, 0), "one run per job, each a success");
    p.finish().await;
    Ok(())
}
