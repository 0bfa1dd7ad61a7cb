//! SIGTERM to a worker whose job outlasts the shutdown grace (`IRONCLAD_SHUTDOWN_GRACE=1s`, a
//! 10 s job): the worker exits 0 soon after the grace, not after the job, committing nothing for
//! it; the job's lease lapses and another worker runs it again. The case is decided once and the
//! abandoned run leaves no outcome behind.

use crate::support::{secs, Rig, SETTLE};
use anyhow::{ensure, Result};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_past_grace() {
    let rig = Rig::new("sigterm_past_grace").await.expect("rig");
    let outcome = scenario(&rig).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig) -> Result<()> {
    let _dispatcher = rig.role("dispatcher", "dispatcher", &[])?;
    let _reconciler = rig.role("reconciler", "reconciler", &[])?;
    let mut worker = rig.role(
        "worker",
        "worker",
        &[
            ("IRONCLAD_PROCESSOR", "test:sleep=10s"),
            ("IRONCLAD_SHUTDOWN_GRACE", "1s"),
        ],
    )?;
    let pid = worker.pid();
    rig.commit_case(1).await?;

    let (busy, exit_after) = rig
        .terminate_when_busy(&mut worker, Duration::from_secs(15))
        .await?;
    println!(
        "[sigterm_past_grace] worker exited 0 {} after SIGTERM (grace 1 s, job 10 s)",
        secs(exit_after)
    );
    // Bounded by the grace (+ the 5 s the role tasks get on top), never by the 10 s job.
    ensure!(
        exit_after < Duration::from_secs(7),
        "worker took {} to exit with a 1 s grace\n{}",
        secs(exit_after),
        worker.log_tail(30)
    );
    let abandoned = rig.job(busy).await?;
    ensure!(
        abandoned.status == "RUNNING" && abandoned.owned_by(pid),
        "the abandoned job should still be RUNNING under the exited worker's lease: {abandoned:?}"
    );

    // A successor runs it again once the lease lapses, and finalizes the case.
    let successor = rig.role(
        "worker-2",
        "worker",
        &[("IRONCLAD_PROCESSOR", "test:sleep=1s")],
    )?;
    rig.wait_decided(1, SETTLE, false).await?;
    rig.wait_nothing_pending(Duration::from_secs(30)).await?;
    rig.assert_decided_exactly_once(1).await?;
    let rerun = rig.job(busy).await?;
    ensure!(
        rerun.status == "SUCCEEDED" && rerun.attempt == 2 && rerun.owned_by(successor.pid()),
        "the abandoned job should have succeeded on its second run, under the successor: {rerun:?}"
    );
    Ok(())
}
