//! The dispatcher dies between XADD and marking its batch PUBLISHED. The rows stay PUBLISHING
//! until the lock timeout, then another dispatcher publishes them again: the stream carries
//! every message twice, and the worker's conditional claim makes the second copy a no-op.

use crate::support::{Rig, SETTLE};
use anyhow::{ensure, Result};
use std::time::Duration;

const CASES: i64 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos lane: cargo test --test chaos -- --ignored --test-threads=1"]
async fn smoke_crash_after_publish() {
    let rig = Rig::new("crash_after_publish").await.expect("rig");
    let outcome = scenario(&rig).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig) -> Result<()> {
    // Committed before any dispatcher runs, so the crashing one takes all of them in its
    // first (and only) batch.
    for _ in 0..CASES {
        rig.commit_case(1).await?;
    }

    let mut crasher = rig.role(
        "dispatcher-crash",
        "dispatcher",
        &[("IRONCLAD_CRASH_AT", "dispatcher_after_publish")],
    )?;
    crasher.expect_abort(Duration::from_secs(30)).await?;

    // What the crash left: the batch is in the stream, yet PostgreSQL still says PUBLISHING.
    let publishing = rig
        .count("SELECT count(*) FROM outbox WHERE status = 'PUBLISHING'")
        .await?;
    ensure!(
        publishing == CASES,
        "expected {CASES} outbox rows stuck PUBLISHING, found {publishing}"
    );
    let published_once = rig.stream_len().await?;
    ensure!(
        published_once == CASES as u64,
        "expected {CASES} stream entries after the crash, found {published_once}"
    );

    let _dispatcher = rig.role("dispatcher", "dispatcher", &[])?;
    let _worker = rig.role("worker", "worker", &[])?;
    let _reconciler = rig.role("reconciler", "reconciler", &[])?;

    rig.wait_decided(CASES, SETTLE, false).await?;
    // The abandoned rows come back after the 3 s lock timeout and are published a second time.
    rig.wait_count(
        "the abandoned outbox rows to be published again",
        "SELECT count(*) FROM outbox WHERE status = 'PUBLISHED' AND attempts = 2",
        CASES,
        SETTLE,
    )
    .await?;
    rig.wait_count(
        "every outbox row PUBLISHED",
        "SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'",
        0,
        SETTLE,
    )
    .await?;
    // Every copy, the duplicates included, is eventually acknowledged.
    rig.wait_nothing_pending(Duration::from_secs(30)).await?;

    let jobs = rig.count("SELECT count(*) FROM jobs").await?;
    let stream_len = rig.stream_len().await?;
    ensure!(
        stream_len > jobs as u64,
        "the stream should hold duplicates ({stream_len} entries for {jobs} jobs)"
    );
    println!("[crash_after_publish] {stream_len} stream entries for {jobs} jobs");

    rig.assert_decided_exactly_once(CASES).await?;
    // The duplicate deliveries did not re-run anything.
    let reruns = rig
        .count("SELECT count(*) FROM jobs WHERE attempt <> 1")
        .await?;
    ensure!(reruns == 0, "{reruns} job(s) ran more than once");
    Ok(())
}
