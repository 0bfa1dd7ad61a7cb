//! Workers that die or stall while holding a job.
//!
//! DESIGN §3 invariant 3, **Duplicates are harmless**: "a job is claimed by a conditional update
//! with a lease, terminal jobs are never redone … Two workers never process the same job at the
//! same time while a lease is live (long OCR renews its lease)." Invariant 2, **Nothing is
//! lost**: "Every committed job reaches a terminal status … whatever crashes".
//!
//! These tests let a lease lapse — a claim nobody finishes, a worker task aborted mid-run, a
//! stalled worker whose lease is taken over — and check the reconciler or another worker
//! rescues the job exactly once, that a live lease is never touched, that a worker holding a
//! stale lease cannot overwrite the outcome, and that a lease lost on the last attempt fails
//! the job rather than looping.

use crate::common;

use common::{
    assert_one_decision, drive, envelope_for, events, job, outbox_of, reclaim_until_outcome,
    reclaim_when_idle, source_jobs, Act, Rigged,
};
use ironclad_core::faults::FaultPoint;
use ironclad_core::outbox::job_message_key;
use ironclad_core::{FailureCode, JobId};
use ironclad_documents::processor::{Behaviour, ScriptedProcessor};
use ironclad_runtime::reconciler::SweepReport;
use ironclad_runtime::worker::Handled;
use ironclad_runtime::RuntimeError;
use ironclad_store::jobs::{ClaimOutcome, ClaimedJob, Failure};
use ironclad_store::Transition;
use ironclad_testkit::harness::Pipeline;
use ironclad_testkit::wait_for;
use std::sync::Arc;
use std::time::Duration;

/// Claims a job directly in the store, as a worker would just before dying.
async fn claim(
    p: &Pipeline,
    id: JobId,
    owner: &str,
    lease: Duration,
) -> anyhow::Result<ClaimedJob> {
    match p
        .store()
        .claim_job(&envelope_for(p, id).await?, owner, lease)
        .await?
    {
        ClaimOutcome::Claimed(j) => Ok(j),
        ClaimOutcome::Refused(r) => anyhow::bail!("claim of {id} refused: {r:?}"),
    }
}

/// Sweeps until the reconciler repairs something.
async fn sweep_until_repaired(p: &Pipeline) -> anyhow::Result<SweepReport> {
    let reconciler = p.reconciler().await?;
    wait_for("an expired lease", Duration::from_secs(15), || async {
        let report = reconciler.sweep().await?;
        Ok((report != SweepReport::default()).then_some(report))
    })
    .await
}

/// A worker reads two messages, claims both jobs and dies holding them: one claim's lease
/// runs out, the other's is still live. The reconciler rescues only the expired one (back to
/// PENDING with an outbox row for attempt 2); another worker runs it once. The dead worker's
/// pending messages are then reclaimed: the finished job's is a duplicate, the live job's is
/// left alone.
#[tokio::test]
async fn expired_lease_is_rescued_by_the_reconciler_and_a_live_one_is_left_alone(
) -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let lost_case = p.submit_case(1).await?;
    let live_case = p.submit_case(1).await?;
    let lost = source_jobs(&p, lost_case).await?[0];
    let live = source_jobs(&p, live_case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let worker = p.worker("w2", processor.clone()).await?;

    assert_eq!(dispatcher.tick().await?.published, 2);
    let dead_worker = p.queue("dead-worker").await?;
    assert_eq!(dead_worker.read_new().await?.len(), 2);
    claim(&p, lost, "dead-worker", Duration::from_secs(2)).await?;
    let held = claim(&p, live, "live-worker", Duration::from_secs(120)).await?;

    let report = sweep_until_repaired(&p).await?;
    assert_eq!(
        report,
        SweepReport {
            rescued: 1,
            reemitted: 0,
            failed: 0,
            still_queued: 0
        }
    );
    let row = job(&p, lost).await?;
    assert_eq!(
        (row.status.as_str(), row.attempt, row.lease_token),
        ("PENDING", 1, None)
    );
    assert_eq!(
        row.last_error.as_deref(),
        Some("lease lapsed: worker dead-worker was lost")
    );
    let outbox = outbox_of(&p, lost).await?;
    assert_eq!(outbox.len(), 2);
    assert_eq!(
        (outbox[1].idempotency_key.clone(), outbox[1].status.as_str()),
        (job_message_key(lost, 2), "PENDING")
    );
    let untouched = job(&p, live).await?;
    assert_eq!(
        (
            untouched.status.as_str(),
            untouched.attempt,
            untouched.lease_owner.as_deref(),
            untouched.lease_token
        ),
        ("RUNNING", 1, Some("live-worker"), Some(held.lease_token)),
        "a live lease is never taken"
    );
    assert_eq!(outbox_of(&p, live).await?.len(), 1);

    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(worker.poll_once().await?, vec![Handled::Succeeded]);
    let row = job(&p, lost).await?;
    assert_eq!(
        (row.status.as_str(), row.attempt, row.lease_owner.as_deref()),
        ("SUCCEEDED", 2, Some("w2"))
    );
    assert_eq!(processor.calls(), 1);

    // The dead worker's two pending messages: a duplicate of a finished job, and one whose job a
    // live worker holds through another claim. Both are duplicates and acknowledged (a message
    // is kept pending only when the live lease was taken through that very message).
    let reclaimed = reclaim_when_idle(&worker, Duration::from_secs(15)).await?;
    assert_eq!(reclaimed, vec![Handled::Duplicate, Handled::Duplicate]);
    assert_eq!(processor.calls(), 1, "neither was run");
    assert_eq!(job(&p, live).await?.lease_token, Some(held.lease_token));
    assert_eq!(p.reconciler().await?.sweep().await?, SweepReport::default());

    assert_eq!(
        drive(&p, &dispatcher, &worker, lost_case).await?,
        vec![Handled::Succeeded]
    );
    assert_one_decision(&p, lost_case).await?;
    assert_eq!(p.case_status(live_case).await?, "PROCESSING");
    p.finish().await;
    Ok(())
}

/// A worker task is aborted mid-run (its lease keeper dies with it). Another worker's
/// XAUTOCLAIM finds the message: while the lease is live it leaves it pending, once the lease
/// has expired its own claim takes the job over (attempt 2) and runs it once.
#[tokio::test]
async fn aborted_worker_is_taken_over_after_its_lease_expires() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    // A lease well beyond claim_idle (2 s): the first reclaim surely meets a live lease.
    p.config.lease = Duration::from_secs(6);
    p.config.lease_renew_every = Duration::from_secs(2);
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let slow = Rigged::new(|_, _| Act::Sleep(Duration::from_secs(600)));
    let doomed = Arc::new(p.worker("doomed", slow.clone()).await?);
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let rescuer = p.worker("rescuer", processor.clone()).await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    let run = tokio::spawn({
        let doomed = doomed.clone();
        async move { doomed.poll_once().await }
    });
    wait_for(
        "the doomed worker to hold the job",
        Duration::from_secs(10),
        || async {
            let row = job(&p, id).await?;
            Ok((row.status == "RUNNING" && slow.calls() == 1).then_some(()))
        },
    )
    .await?;
    run.abort();
    assert!(run.await.is_err_and(|e| e.is_cancelled()));

    let seen = reclaim_until_outcome(&rescuer).await?;
    let (last, before) = seen.split_last().expect("at least one outcome");
    assert_eq!(*last, Handled::Succeeded);
    assert!(
        !before.is_empty() && before.iter().all(|h| *h == Handled::LeftPending),
        "only LeftPending before the lease expired: {seen:?}"
    );
    let row = job(&p, id).await?;
    assert_eq!(
        (row.status.as_str(), row.attempt, row.lease_owner.as_deref()),
        ("SUCCEEDED", 2, Some("rescuer"))
    );
    assert_eq!((slow.calls(), processor.calls()), (1, 1));

    assert_eq!(
        drive(&p, &dispatcher, &rescuer, case).await?,
        vec![Handled::Succeeded]
    );
    assert_one_decision(&p, case).await?;
    assert_eq!(p.assert_effects_once().await?, 1);
    p.finish().await;
    Ok(())
}

/// A worker stalls, its lease lapses and another claimant takes the job. The stalled worker
/// learns it lost the lease (renewal refused) and discards its result: `LeaseLost`, and the
/// job keeps the new holder's lease; only the new holder's outcome is stored.
#[tokio::test]
async fn a_stale_lease_cannot_overwrite_the_outcome() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let slow = Rigged::new(|_, _| Act::Sleep(Duration::from_secs(2)));
    let stalled = Arc::new(p.worker("stalled", slow.clone()).await?);
    let observer = p.queue("observer").await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    let run = tokio::spawn({
        let stalled = stalled.clone();
        async move { stalled.poll_once().await }
    });
    let first = wait_for(
        "the stalled worker to hold the job",
        Duration::from_secs(10),
        || async {
            let row = job(&p, id).await?;
            Ok((row.status == "RUNNING").then_some(row))
        },
    )
    .await?;
    // Its lease lapses (a long pause or a partition), and someone else claims the job.
    let thief = wait_for("the lease to be taken over", Duration::from_secs(10), || async {
        sqlx::query("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1 AND lease_token = $2")
            .bind(id.0)
            .bind(first.lease_token)
            .execute(p.store().pool())
            .await?;
        Ok(match p.store().claim_job(&envelope_for(&p, id).await?, "thief", Duration::from_secs(60)).await? {
            ClaimOutcome::Claimed(j) => Some(j),
            ClaimOutcome::Refused(_) => None,
        })
    })
    .await?;
    assert_eq!(thief.attempt, 2);

    assert_eq!(run.await??, vec![Handled::LeaseLost]);
    let row = job(&p, id).await?;
    assert_eq!(
        (
            row.status.as_str(),
            row.lease_owner.as_deref(),
            row.lease_token,
            row.result
        ),
        ("RUNNING", Some("thief"), Some(thief.lease_token), None),
        "the stale worker wrote nothing"
    );
    // Only the holder acknowledges: the stale worker's message may be the one the job's
    // holder runs it through (XAUTOCLAIM hands messages over), so it stays for recovery.
    assert_eq!(
        observer.pending_summary().await?.count,
        1,
        "a worker that lost its lease acknowledged the message"
    );

    // Every finishing statement refuses the stale token, whatever the worker believes.
    let stale = ClaimedJob {
        lease_token: first.lease_token.expect("a running job has a token"),
        ..thief.clone()
    };
    let store = p.store();
    assert_eq!(
        store.renew_lease(&stale, Duration::from_secs(60)).await?,
        Transition::Stale
    );
    assert_eq!(
        store
            .complete_source_job(&stale, &serde_json::json!({ "by": "stale" }), 3)
            .await?,
        (Transition::Stale, false)
    );
    assert_eq!(
        store
            .schedule_retry(&stale, "stale retry", Duration::from_secs(1))
            .await?,
        Transition::Stale
    );
    assert_eq!(
        store
            .fail_held_job(
                &stale,
                &Failure::new(FailureCode::Internal, "stale failure"),
                "test"
            )
            .await?,
        Transition::Stale
    );
    let row = job(&p, id).await?;
    assert_eq!(
        (row.status.as_str(), row.lease_token, row.result),
        ("RUNNING", Some(thief.lease_token), None)
    );
    assert_eq!(
        outbox_of(&p, id).await?.len(),
        1,
        "no retry row from the stale token"
    );
    assert!(events(&p, case, "PROCESSING_FAILED").await?.is_empty());

    let result = serde_json::json!({ "by": "thief" });
    let (transition, finalize_enqueued) = p.store().complete_source_job(&thief, &result, 3).await?;
    assert_eq!(
        (transition, finalize_enqueued),
        (ironclad_store::Transition::Applied, true)
    );
    let row = job(&p, id).await?;
    assert_eq!(
        (row.status.as_str(), row.result),
        ("SUCCEEDED", Some(result))
    );
    assert_eq!(slow.calls(), 1);

    let finisher = p
        .worker(
            "finisher",
            Arc::new(ScriptedProcessor::new(Behaviour::Succeed)),
        )
        .await?;
    assert_eq!(
        drive(&p, &dispatcher, &finisher, case).await?,
        vec![Handled::Succeeded]
    );
    assert_one_decision(&p, case).await?;
    p.finish().await;
    Ok(())
}

/// A lease lost on the job's last attempt: the reconciler fails the job (and its case) with the
/// reason instead of rescuing it again, and the dead worker's message becomes a duplicate.
#[tokio::test]
async fn lease_lost_on_the_last_attempt_fails_the_job_instead_of_looping() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    p.config.retry.max_attempts = 1;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let worker = p.worker("w2", processor.clone()).await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(p.queue("dead-worker").await?.read_new().await?.len(), 1);
    claim(&p, id, "dead-worker", Duration::from_secs(1)).await?;

    assert_eq!(
        sweep_until_repaired(&p).await?,
        SweepReport {
            rescued: 0,
            reemitted: 0,
            failed: 1,
            still_queued: 0
        }
    );
    let row = job(&p, id).await?;
    let reason = "lease lapsed on the last attempt: the worker was lost";
    assert_eq!(
        (row.status.as_str(), row.attempt, row.last_error.as_deref()),
        ("FAILED", 1, Some(reason))
    );
    assert_eq!(
        common::case_row(&p, case).await?,
        (
            "FAILED".to_owned(),
            Some(FailureCode::WorkerLost.message().to_owned())
        )
    );
    assert_eq!(events(&p, case, "PROCESSING_FAILED").await?.len(), 1);

    assert_eq!(
        reclaim_when_idle(&worker, Duration::from_secs(15)).await?,
        vec![Handled::Duplicate]
    );
    assert_eq!(processor.calls(), 0);
    assert_eq!(p.reconciler().await?.sweep().await?, SweepReport::default());
    assert_eq!(dispatcher.tick().await?.claimed, 0);
    p.finish().await;
    Ok(())
}

/// The same situation found by a worker first: its claim is refused as exhausted and it fails
/// the job itself, once.
#[tokio::test]
async fn a_worker_finding_an_exhausted_expired_job_fails_it() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    p.config.retry.max_attempts = 1;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let worker = p.worker("w2", processor.clone()).await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(p.queue("dead-worker").await?.read_new().await?.len(), 1);
    claim(&p, id, "dead-worker", Duration::from_secs(1)).await?;
    // claim_idle (2 s) outlasts the 1 s lease, so the first reclaim sees an expired lease.
    assert_eq!(
        reclaim_when_idle(&worker, Duration::from_secs(15)).await?,
        vec![Handled::Failed]
    );
    let row = job(&p, id).await?;
    assert_eq!(row.status, "FAILED");
    assert_eq!(
        row.last_error.as_deref(),
        Some("attempts exhausted: the worker running the last attempt was lost")
    );
    assert_eq!(p.case_status(case).await?, "FAILED");
    assert_eq!(events(&p, case, "PROCESSING_FAILED").await?.len(), 1);
    assert_eq!(processor.calls(), 0);
    assert_eq!(p.reconciler().await?.sweep().await?, SweepReport::default());
    p.finish().await;
    Ok(())
}

/// The worker fails right after its claim, before running the step (a crash at
/// `worker_before_process`): nothing is acknowledged, the lease runs out, and a redelivery
/// takes the job over as attempt 2 and runs it once.
#[tokio::test]
async fn a_worker_failing_between_claim_and_process_is_recovered_after_its_lease(
) -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let worker = p.worker("w1", processor.clone()).await?;
    let observer = p.queue("observer").await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    p.faults.arm_error(FaultPoint::WorkerBeforeProcess);
    assert!(matches!(
        worker.poll_once().await,
        Err(RuntimeError::Injected(_))
    ));
    p.faults.disarm(FaultPoint::WorkerBeforeProcess);
    let row = job(&p, id).await?;
    assert_eq!(
        (row.status.as_str(), row.attempt, row.lease_owner.as_deref()),
        ("RUNNING", 1, Some("w1"))
    );
    assert_eq!(observer.pending_summary().await?.count, 1);

    let seen = reclaim_until_outcome(&worker).await?;
    assert_eq!(seen.last(), Some(&Handled::Succeeded), "{seen:?}");
    let row = job(&p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("SUCCEEDED", 2));
    assert_eq!(processor.calls(), 1);
    assert_eq!(observer.pending_summary().await?.count, 0);
    drive(&p, &dispatcher, &worker, case).await?;
    assert_one_decision(&p, case).await?;
    p.finish().await;
    Ok(())
}
