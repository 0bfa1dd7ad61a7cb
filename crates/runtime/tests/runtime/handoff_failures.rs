//! The four handoff failures of the background article, each forced on purpose.
//!
//! DESIGN §3 invariant 2, **Nothing is lost**: "Every committed job reaches a terminal status …
//! whatever crashes …, whatever Redis forgets …, whatever the provider does (timeouts, 5xx)."
//! Invariant 3, **Duplicates are harmless**: "Delivery is at-least-once; effects are once".
//! Invariant 4, **Persist before ack**: "A stream message is acknowledged only after its outcome
//! — success, a scheduled retry (a delayed outbox row), or a recorded failure — is committed. If
//! recording fails, the message stays pending and recovery redelivers it."
//!
//! Each test breaks one handoff and checks the case still ends with exactly one decision:
//! (a) Redis is down when intake commits, so publication fails (invariant 2);
//! (b) the dispatcher dies after XADD but before marking the rows PUBLISHED, so every message
//!     is published twice (invariant 3);
//! (c) the worker's XACK fails after the outcome is committed, so the message is redelivered
//!     (invariants 3 and 4);
//! (d) the provider times out, so the worker must commit a delayed retry before it acks
//!     (invariants 2 and 4).

use crate::common;

use common::{
    assert_one_decision, drive, envelope_for, job, outbox_of, publish_when_due, reclaim_when_idle,
    source_jobs, Act, Rigged,
};
use ironclad_core::faults::FaultPoint;
use ironclad_core::outbox::job_message_key;
use ironclad_documents::processor::{Behaviour, ScriptedProcessor};
use ironclad_runtime::worker::Handled;
use ironclad_runtime::RuntimeError;
use ironclad_testkit::harness::Pipeline;
use ironclad_testkit::private::PrivateRedis;
use ironclad_testkit::wait_for;
use std::sync::Arc;
use std::time::Duration;

/// (a) Redis is unreachable when the case is submitted. Intake only touches PostgreSQL, so it
/// commits; the dispatcher's publication fails and the rows go back to PENDING with the error,
/// the attempt counted and a backoff; once Redis is back the same components deliver the work.
#[tokio::test]
async fn redis_down_at_intake_delays_publication_but_loses_nothing() -> anyhow::Result<()> {
    let redis = PrivateRedis::start()?;
    let mut p = Pipeline::on_redis(&redis.url()).await?;
    // A backoff long enough that "available_at is in the future" is not a race.
    p.config.outbox_backoff_base = Duration::from_secs(1);
    p.config.outbox_backoff_max = Duration::from_secs(2);
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    // Built while Redis is up: these very handles must reconnect after the restart.
    let worker = p.worker("w1", processor.clone()).await?;

    redis.kill()?;
    let case = p.submit_case(2).await?;
    assert_eq!(p.case_status(case).await?, "INGESTED");
    let jobs = source_jobs(&p, case).await?;

    let report = dispatcher.tick().await?;
    assert_eq!(
        (
            report.claimed,
            report.published,
            report.released,
            report.dead
        ),
        (2, 0, 2, 0)
    );
    for id in &jobs {
        let rows = outbox_of(&p, *id).await?;
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(
            row.status, "PENDING",
            "released, not lost and not stuck in PUBLISHING"
        );
        assert_eq!(row.attempts, 1);
        assert!(
            row.last_error.as_deref().is_some_and(|e| !e.is_empty()),
            "the failure is recorded: {row:?}"
        );
        assert!(row.available_in_future, "the retry is backed off");
        assert_eq!(job(&p, *id).await?.status, "PENDING");
    }
    // Backed off: an immediate tick claims nothing.
    assert_eq!(dispatcher.tick().await?.claimed, 0);

    redis.restart()?;
    // The restarted Redis is empty: the worker's group is gone and is recreated on read.
    let handled = wait_for(
        "the case to be decided after the restart",
        Duration::from_secs(40),
        || async {
            let _ = dispatcher.tick().await;
            let _ = worker.poll_once().await;
            Ok((p.case_status(case).await? == "AWAITING_REVIEW").then_some(()))
        },
    )
    .await;
    handled?;

    assert_one_decision(&p, case).await?;
    assert_eq!(processor.calls(), 2, "each source processed once");
    for id in &jobs {
        let row = job(&p, *id).await?;
        assert_eq!((row.status.as_str(), row.attempt), ("SUCCEEDED", 1));
        let outbox = outbox_of(&p, *id).await?;
        assert_eq!(outbox.len(), 1, "the same row was retried, not duplicated");
        assert_eq!(outbox[0].status, "PUBLISHED");
        assert!(
            outbox[0].attempts >= 2,
            "the failed attempt stays counted: {:?}",
            outbox[0]
        );
        assert_eq!(outbox[0].last_error, None);
    }
    assert_eq!(p.assert_effects_once().await?, 1);
    p.finish().await;
    Ok(())
}

/// (b) The dispatcher's XADD succeeds, then it dies before marking the rows PUBLISHED. The rows
/// stay PUBLISHING until the lock times out, `maintain` returns them to PENDING, and they are
/// published again: two messages per job. The worker's conditional claim makes the second
/// delivery of each a harmless duplicate.
#[tokio::test]
async fn dispatcher_crash_after_xadd_publishes_twice_and_the_duplicate_is_harmless(
) -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(2).await?;
    let jobs = source_jobs(&p, case).await?;
    let dispatcher = p.dispatcher().await?;
    let observer = p.queue("observer").await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let worker = p.worker("w1", processor.clone()).await?;

    p.faults.arm_error(FaultPoint::DispatcherAfterPublish);
    assert!(matches!(
        dispatcher.tick().await,
        Err(RuntimeError::Injected(_))
    ));
    p.faults.disarm(FaultPoint::DispatcherAfterPublish);
    assert_eq!(observer.stream_len().await?, 2, "XADD happened");
    for id in &jobs {
        let rows = outbox_of(&p, *id).await?;
        assert_eq!((rows.len(), rows[0].status.as_str()), (1, "PUBLISHING"));
    }
    // Held rows are neither claimable nor reset before the lock timeout.
    assert_eq!(dispatcher.tick().await?.claimed, 0);
    assert_eq!(dispatcher.maintain().await?.0, 0);

    let reset = wait_for(
        "the abandoned rows to be reset",
        Duration::from_secs(15),
        || async {
            let (reset, _) = dispatcher.maintain().await?;
            Ok((reset > 0).then_some(reset))
        },
    )
    .await?;
    assert_eq!(reset, 2);
    for id in &jobs {
        let rows = outbox_of(&p, *id).await?;
        assert_eq!(rows[0].status, "PENDING");
        assert_eq!(rows[0].attempts, 1);
        assert_eq!(
            rows[0].last_error.as_deref(),
            Some("publication abandoned: lock timed out")
        );
    }

    assert_eq!(dispatcher.tick().await?.published, 2);
    assert_eq!(observer.stream_len().await?, 4, "two messages per job");
    assert_eq!(
        worker.poll_once().await?,
        vec![
            Handled::Succeeded,
            Handled::Succeeded,
            Handled::Duplicate,
            Handled::Duplicate
        ]
    );
    assert_eq!(dispatcher.tick().await?.published, 1, "finalize, once");
    assert_eq!(worker.poll_once().await?, vec![Handled::Succeeded]);

    assert_one_decision(&p, case).await?;
    assert_eq!(
        processor.calls(),
        2,
        "one run per source job despite two deliveries each"
    );
    assert_eq!(
        observer.pending_summary().await?.count,
        0,
        "duplicates are acknowledged"
    );
    for id in &jobs {
        assert_eq!(
            job(&p, *id).await?.attempt,
            1,
            "the duplicate did not start a second attempt"
        );
    }
    assert_eq!(p.assert_effects_once().await?, 1);
    p.finish().await;
    Ok(())
}

/// (c) The worker commits the outcome, then its XACK fails. The message stays pending (nothing
/// was acknowledged before the commit, and the failed ack leaves it there); after `claim_idle`
/// another worker reclaims it, finds the job SUCCEEDED and acknowledges it without running it
/// again.
#[tokio::test]
async fn failed_ack_after_commit_is_redelivered_and_not_redone() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(1).await?;
    let jobs = source_jobs(&p, case).await?;
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let w1 = p.worker("w1", processor.clone()).await?;
    let w2 = p.worker("w2", processor.clone()).await?;
    let observer = p.queue("observer").await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    p.faults.arm_error(FaultPoint::WorkerBeforeAck);
    assert!(matches!(
        w1.poll_once().await,
        Err(RuntimeError::Injected(_))
    ));
    p.faults.disarm(FaultPoint::WorkerBeforeAck);

    let row = job(&p, jobs[0]).await?;
    assert_eq!(
        (row.status.as_str(), row.attempt),
        ("SUCCEEDED", 1),
        "the outcome was committed first"
    );
    assert_eq!(processor.calls(), 1);
    assert_eq!(
        observer.pending_summary().await?.count,
        1,
        "not acknowledged: still pending"
    );

    let redelivered = reclaim_when_idle(&w2, Duration::from_secs(15)).await?;
    assert_eq!(redelivered, vec![Handled::Duplicate]);
    assert_eq!(processor.calls(), 1, "a terminal job is never redone");
    assert_eq!(job(&p, jobs[0]).await?.attempt, 1);
    assert_eq!(observer.pending_summary().await?.count, 0);

    // The commit also enqueued finalize (same transaction as the success).
    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(w2.poll_once().await?, vec![Handled::Succeeded]);
    assert_one_decision(&p, case).await?;
    assert_eq!(p.assert_effects_once().await?, 1);
    p.finish().await;
    Ok(())
}

/// (d) The provider fails retryably (a timeout) on the first attempt. The worker commits the
/// retry — job back to PENDING with a future `next_attempt_at` and a delayed outbox row keyed
/// `job:<id>:attempt:2` — and only then acknowledges the delivery. The dispatcher publishes the
/// retry when it is due and the second attempt succeeds.
#[tokio::test]
async fn provider_timeout_commits_a_delayed_retry_before_the_ack() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    // Long enough that "in the future" is not a race with the assertions.
    p.config.retry.delays = vec![Duration::from_secs(1), Duration::from_secs(2)];
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::FailTimes {
        times: 1,
        then: Box::new(Behaviour::Succeed),
    }));
    let worker = p.worker("w1", processor.clone()).await?;
    let observer = p.queue("observer").await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(worker.poll_once().await?, vec![Handled::RetryScheduled]);

    let row = job(&p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("PENDING", 1));
    assert!(row.next_attempt_in_future);
    assert_eq!(row.last_error.as_deref(), Some("scripted failure 1 of 1"));
    assert_eq!(
        (row.lease_token, row.lease_live),
        (None, None),
        "the lease is released"
    );
    let outbox = outbox_of(&p, id).await?;
    assert_eq!(
        outbox.len(),
        2,
        "the intake row and the delayed retry: {outbox:?}"
    );
    let retry = &outbox[1];
    assert_eq!(retry.idempotency_key, job_message_key(id, 2));
    assert_eq!(retry.status, "PENDING");
    assert!(retry.available_in_future, "the retry is delayed");
    assert!(
        retry.available_at_is_next_attempt,
        "announced exactly when the job becomes due"
    );
    assert_eq!(
        observer.pending_summary().await?.count,
        0,
        "the original delivery was acknowledged"
    );
    assert_eq!(p.case_status(case).await?, "PROCESSING");

    // Not due yet.
    assert_eq!(dispatcher.tick().await?.claimed, 0);
    assert_eq!(
        publish_when_due(&dispatcher, Duration::from_secs(10)).await?,
        1
    );
    assert_eq!(worker.poll_once().await?, vec![Handled::Succeeded]);
    let row = job(&p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("SUCCEEDED", 2));
    assert_eq!(processor.calls(), 2);

    assert_eq!(
        drive(&p, &dispatcher, &worker, case).await?,
        vec![Handled::Succeeded]
    );
    assert_one_decision(&p, case).await?;
    assert_eq!(p.assert_effects_once().await?, 1);
    p.finish().await;
    Ok(())
}

/// (d, hung provider) A provider that never answers is cut off by the job timeout: the run is
/// aborted, the timeout becomes a retryable failure with a delayed retry, and the second
/// attempt succeeds.
#[tokio::test]
async fn hung_provider_is_cut_off_by_the_job_timeout_and_retried() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    p.config.job_timeout = Duration::from_millis(500);
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    // First call hangs far beyond the job timeout; later calls succeed.
    let processor = Rigged::new(|_, n| {
        if n == 1 {
            Act::Sleep(Duration::from_secs(600))
        } else {
            Act::Succeed
        }
    });
    let worker = p.worker("w1", processor.clone()).await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(worker.poll_once().await?, vec![Handled::RetryScheduled]);
    let row = job(&p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("PENDING", 1));
    assert_eq!(row.last_error.as_deref(), Some("job timed out after 500ms"));
    assert_eq!(
        outbox_of(&p, id).await?[1].idempotency_key,
        job_message_key(id, 2)
    );

    assert_eq!(
        publish_when_due(&dispatcher, Duration::from_secs(10)).await?,
        1
    );
    assert_eq!(worker.poll_once().await?, vec![Handled::Succeeded]);
    assert_eq!(job(&p, id).await?.attempt, 2);
    assert_eq!(processor.calls(), 2);
    drive(&p, &dispatcher, &worker, case).await?;
    assert_one_decision(&p, case).await?;
    // A stale copy of the first message (say, redelivered late) is now a harmless duplicate.
    let stale = envelope_for(&p, id).await?;
    p.queue("late").await?.publish(&[stale.to_json()]).await?;
    assert_eq!(worker.poll_once().await?, vec![Handled::Duplicate]);
    assert_eq!(processor.calls(), 2);
    p.finish().await;
    Ok(())
}
