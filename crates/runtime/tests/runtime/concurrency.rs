//! Many cases, several dispatchers and workers at once.
//!
//! DESIGN §3 invariant 3, **Duplicates are harmless**: "Delivery is at-least-once; effects are
//! once: a job is claimed by a conditional update with a lease, terminal jobs are never redone,
//! one decision per case generation … Two workers never process the same job at the same time
//! while a lease is live." And §1: "Every role is stateless: scale out by starting more
//! processes".
//!
//! The test races 200 concurrent intakes against two dispatchers (SKIP LOCKED batches) and two
//! workers of 4 slots each, all running their real `run` loops, and checks every case gets
//! exactly one decision, every job ran exactly once, and no message was published twice.

use crate::common;

use common::{wait_all_decided, Roles};
use ironclad_documents::processor::{Behaviour, ScriptedProcessor};
use ironclad_testkit::harness::Pipeline;
use ironclad_testkit::wait_for;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

const CASES: i64 = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_cases_through_two_dispatchers_and_two_workers_decide_once_each(
) -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    // No dispatcher dies here: a lock timeout far beyond a slow tick means any second
    // publication would be a real double publication, not a recovered abandoned batch.
    p.config.outbox_lock_timeout = Duration::from_secs(120);
    assert_eq!(p.config.worker_concurrency, 4);
    let p = Arc::new(p);
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let mut roles = Roles::new();
    roles.dispatcher(p.dispatcher().await?);
    roles.dispatcher(p.dispatcher().await?);
    roles.worker(p.worker("w1", processor.clone()).await?);
    roles.worker(p.worker("w2", processor.clone()).await?);

    let started = Instant::now();
    let mut intakes = JoinSet::new();
    for _ in 0..CASES {
        let p = p.clone();
        intakes.spawn(async move { p.submit_case(1).await });
    }
    while let Some(done) = intakes.join_next().await {
        done??;
    }
    let decided = wait_all_decided(&p, CASES, Duration::from_secs(120)).await;
    let observer = p.queue("observer").await?;
    // Acks follow the last commits by a moment.
    let acked = wait_for(
        "every delivery to be acknowledged",
        Duration::from_secs(20),
        || async { Ok((observer.pending_summary().await?.count == 0).then_some(())) },
    )
    .await;
    roles.stop().await?;
    decided?;
    acked?;
    eprintln!("{CASES} cases decided in {:?}", started.elapsed());

    assert_eq!(p.assert_effects_once().await?, CASES);
    assert_eq!(
        p.count("SELECT count(*) FROM cases WHERE status = 'AWAITING_REVIEW'")
            .await?,
        CASES
    );
    assert_eq!(
        p.count("SELECT count(*) FROM audit_events WHERE event_type = 'DECISION_GENERATED'")
            .await?,
        CASES
    );
    assert_eq!(
        p.count("SELECT count(*) FROM jobs WHERE status = 'SUCCEEDED' AND attempt = 1")
            .await?,
        2 * CASES
    );
    assert_eq!(p.count("SELECT count(*) FROM jobs").await?, 2 * CASES);
    assert_eq!(
        processor.calls(),
        CASES as u64,
        "every source processed exactly once"
    );
    assert_eq!(
        p.count("SELECT count(*) FROM outbox").await?,
        2 * CASES,
        "one announcement per job"
    );
    assert_eq!(
        p.count("SELECT count(*) FROM outbox WHERE status = 'PUBLISHED' AND attempts = 1")
            .await?,
        2 * CASES
    );
    assert_eq!(
        observer.stream_len().await?,
        2 * CASES as u64,
        "no row was published twice"
    );
    assert!(observer.dead_letters(10).await?.is_empty());

    drop(observer);
    match Arc::try_unwrap(p) {
        Ok(p) => p.finish().await,
        Err(_) => anyhow::bail!("pipeline still shared"),
    }
    Ok(())
}
