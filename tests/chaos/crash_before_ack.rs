//! The worker dies after committing a job's outcome but before XACK. The message stays pending,
//! goes idle, is reclaimed by the next worker, and is acknowledged as a duplicate: the job is
//! not run again.

use crate::support::{Rig, SETTLE};
use anyhow::{ensure, Result};
use std::time::Duration;

const CASES: i64 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos lane: cargo test --test chaos -- --ignored --test-threads=1"]
async fn smoke_crash_before_ack() {
    let rig = Rig::new("crash_before_ack").await.expect("rig");
    let outcome = scenario(&rig).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig) -> Result<()> {
    for _ in 0..CASES {
        rig.commit_case(1).await?;
    }
    let _dispatcher = rig.role("dispatcher", "dispatcher", &[])?;
    let _reconciler = rig.role("reconciler", "reconciler", &[])?;
    // One message at a time, so exactly one outcome is committed when it aborts.
    let mut crasher = rig.role(
        "worker-crash",
        "worker",
        &[
            ("IRONCLAD_CRASH_AT", "worker_before_ack"),
            ("IRONCLAD_WORKER_CONCURRENCY", "1"),
        ],
    )?;
    let crasher_pid = crasher.pid();
    crasher.expect_abort(Duration::from_secs(30)).await?;

    // Persisted, not acknowledged.
    let jobs = rig.jobs().await?;
    let done: Vec<_> = jobs.iter().filter(|j| j.status == "SUCCEEDED").collect();
    ensure!(
        done.len() == 1,
        "expected exactly one job committed before the crash, found {jobs:?}"
    );
    let committed = done[0].clone();
    ensure!(
        committed.kind == "process_source"
            && committed.attempt == 1
            && committed.owned_by(crasher_pid),
        "unexpected committed job {committed:?}"
    );
    let unacked = rig.pending_jobs().await?;
    ensure!(
        unacked == vec![committed.id],
        "only the committed job's message should be pending (unacknowledged); pending messages name {unacked:?}"
    );

    let _worker = rig.role("worker", "worker", &[])?;
    rig.wait_decided(CASES, SETTLE, false).await?;
    // The orphaned message is reclaimed after the 2 s idle threshold and acked as a duplicate.
    rig.wait_nothing_pending(Duration::from_secs(30)).await?;

    rig.assert_decided_exactly_once(CASES).await?;
    let after = rig.job(committed.id).await?;
    ensure!(
        after.attempt == 1 && after.owned_by(crasher_pid),
        "the job committed before the crash was run again: {after:?}"
    );
    let reruns = rig
        .count("SELECT count(*) FROM jobs WHERE attempt <> 1")
        .await?;
    ensure!(reruns == 0, "{reruns} job(s) ran more than once");
    Ok(())
}
