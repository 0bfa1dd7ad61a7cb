//! kill -9 of a worker in the middle of a job: its lease expires, the job is taken over (by
//! XAUTOCLAIM of the dead consumer's message or by the reconciler's rescue) and finished by
//! another worker, exactly once.

use crate::support::{secs, Rig, SETTLE};
use anyhow::{ensure, Result};
use ironclad_testkit::wait_for;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos lane: cargo test --test chaos -- --ignored --test-threads=1"]
async fn smoke_kill9_worker_mid_job() {
    let rig = Rig::new("kill9_worker").await.expect("rig");
    let outcome = scenario(&rig).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig) -> Result<()> {
    let _dispatcher = rig.role("dispatcher", "dispatcher", &[])?;
    let _reconciler = rig.role("reconciler", "reconciler", &[])?;
    // Worker A takes one message at a time (COUNT 1), so exactly one job is in its hands when
    // it dies and the other cases' messages stay unread for worker B.
    let mut worker_a = rig.role(
        "worker-a",
        "worker",
        &[
            ("IRONCLAD_PROCESSOR", "test:sleep=6s"),
            ("IRONCLAD_WORKER_CONCURRENCY", "1"),
        ],
    )?;

    let mut cases = Vec::new();
    for _ in 0..3 {
        cases.push(rig.commit_case(1).await?);
    }

    let a_pid = worker_a.pid();
    let killed = rig.wait_busy(a_pid).await?;
    let killed_at = Instant::now();
    let status = worker_a.kill9()?;
    ensure!(
        !status.success(),
        "worker A should have died from SIGKILL, got {status}"
    );

    let held = rig.running_under(a_pid).await?;
    ensure!(
        held == vec![killed],
        "worker A held {held:?} when killed; expected only {killed}"
    );
    let before = rig.job(killed).await?;
    ensure!(
        before.attempt == 1,
        "killed job should be on its first attempt, is on {}",
        before.attempt
    );

    let _worker_b = rig.role(
        "worker-b",
        "worker",
        &[("IRONCLAD_PROCESSOR", "test:sleep=1s")],
    )?;

    wait_for(
        "the killed job to succeed",
        Duration::from_secs(45),
        || async { Ok((rig.job(killed).await?.status == "SUCCEEDED").then_some(())) },
    )
    .await?;
    let recovery = killed_at.elapsed();
    // Two rescue paths race: worker B taking the dead consumer's idle message (XAUTOCLAIM,
    // claimable once the lease expired) or the reconciler returning the expired lease to
    // PENDING with a new message (it records why in last_error).
    let path = match rig.job(killed).await?.last_error {
        Some(e) if e.contains("lease expired") => "reconciler rescue",
        _ => "XAUTOCLAIM of the dead consumer's message",
    };
    println!(
        "[kill9_worker] recovery (kill -9 -> killed job SUCCEEDED): {} via {path}",
        secs(recovery)
    );

    rig.wait_decided(3, SETTLE, false).await?;
    rig.wait_nothing_pending(Duration::from_secs(30)).await?;
    rig.assert_decided_exactly_once(3).await?;

    for job in rig.jobs().await? {
        let expected = if job.id == killed { 2 } else { 1 };
        ensure!(
            job.attempt == expected,
            "{} job {} ran {} time(s), expected {expected} (killed job: {killed})",
            job.kind,
            job.id,
            job.attempt
        );
        ensure!(
            !job.owned_by(a_pid),
            "job {} still names the dead worker A as its owner",
            job.id
        );
    }
    ensure!(
        recovery < Duration::from_secs(30),
        "recovery took {} (limit 30s)",
        secs(recovery)
    );
    Ok(())
}
