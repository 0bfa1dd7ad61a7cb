//! Failures that must end, and end visibly.
//!
//! DESIGN §3 invariant 2, **Nothing is lost**: "Every committed job reaches a terminal status …
//! whatever the provider does (timeouts, 5xx)." Invariant 5, **Poison is contained**: "Nothing
//! loops forever." And §3 *Retries*: "retryable errors … schedule the next attempt with
//! exponential backoff …, max attempts per job configurable; other errors fail the job with
//! the reason. A failed source fails only its own job; the case becomes FAILED when a source
//! cannot be processed."
//!
//! These tests break the provider for good — always retryable, terminal, panicking — and check
//! the job reaches FAILED with its reason after a bounded number of runs, the case says why,
//! the failure is in the audit trail once, and no role keeps re-announcing the work.

mod common;

use common::{
    case_row, drive, events, job, jobs_of, outbox_of, publish_when_due, source_jobs, source_of,
    Act, Rigged,
};
use ironclad_core::FailureCode;
use ironclad_documents::processor::{Behaviour, ScriptedProcessor};
use ironclad_runtime::reconciler::SweepReport;
use ironclad_runtime::worker::Handled;
use ironclad_testkit::harness::Pipeline;
use std::sync::Arc;
use std::time::Duration;

/// Always-retryable provider, 3 attempts: two delayed retries, then FAILED with "attempts
/// exhausted"; afterwards the dispatcher, the reconciler and the worker find nothing to do,
/// even after the reconciler's re-emit window has passed.
#[tokio::test]
async fn retries_stop_at_max_attempts_and_nothing_loops() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    assert_eq!(p.config.retry.max_attempts, 3);
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let reconciler = p.reconciler().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Retryable(
        "provider answered 503".into(),
    )));
    let worker = p.worker("w1", processor.clone()).await?;
    let observer = p.queue("observer").await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(worker.poll_once().await?, vec![Handled::RetryScheduled]);
    assert_eq!(job(&p, id).await?.attempt, 1);
    assert_eq!(
        publish_when_due(&dispatcher, Duration::from_secs(10)).await?,
        1
    );
    assert_eq!(worker.poll_once().await?, vec![Handled::RetryScheduled]);
    assert_eq!(job(&p, id).await?.attempt, 2);
    assert_eq!(
        publish_when_due(&dispatcher, Duration::from_secs(10)).await?,
        1
    );
    assert_eq!(worker.poll_once().await?, vec![Handled::Failed]);

    let row = job(&p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("FAILED", 3));
    let reason = row.last_error.clone().unwrap_or_default();
    assert_eq!(reason, "attempts exhausted (3/3): provider answered 503");
    assert!(!row.dead_lettered);
    // The tenant-facing reason is the code's fixed message; the detail stays with the job.
    let code = FailureCode::AttemptsExhausted;
    assert_eq!(
        case_row(&p, case).await?,
        ("FAILED".to_owned(), Some(code.message().to_owned()))
    );
    let failed = events(&p, case, "PROCESSING_FAILED").await?;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["code"], code.as_str());
    assert_eq!(failed[0]["reason"], code.message());
    assert_eq!(failed[0]["attempt"], 3);
    assert_eq!(failed[0]["dead_lettered"], false);
    assert_eq!(processor.calls(), 3);
    let outbox = outbox_of(&p, id).await?;
    assert_eq!(
        outbox.len(),
        3,
        "the intake row and two retries: {outbox:?}"
    );
    assert!(outbox.iter().all(|o| o.status == "PUBLISHED"), "{outbox:?}");
    assert_eq!(observer.pending_summary().await?.count, 0);
    assert_eq!(
        jobs_of(&p, case).await?.len(),
        1,
        "no finalize for a failed case"
    );
    assert_eq!(
        p.count_for("SELECT count(*) FROM decisions WHERE case_id = $1", case)
            .await?,
        0
    );

    // Nothing loops: past the re-emit window, every role finds nothing to do.
    tokio::time::sleep(p.config.reemit_after + Duration::from_millis(500)).await;
    assert_eq!(reconciler.sweep().await?, SweepReport::default());
    assert_eq!(dispatcher.tick().await?.claimed, 0);
    assert_eq!(worker.poll_once().await?, vec![]);
    assert_eq!(worker.reclaim_once().await?, vec![]);
    assert_eq!(outbox_of(&p, id).await?.len(), 3);
    assert_eq!(processor.calls(), 3);
    assert_eq!(events(&p, case, "PROCESSING_FAILED").await?.len(), 1);
    assert!(
        p.store().stuck_cases(Duration::ZERO, 10).await?.is_empty(),
        "a FAILED case is accounted for, not stuck"
    );
    p.finish().await;
    Ok(())
}

/// A terminal error fails the job on its first attempt with the provider's reason.
#[tokio::test]
async fn terminal_error_fails_on_the_first_attempt() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Terminal(
        "page 1 is not a document".into(),
    )));
    let worker = p.worker("w1", processor.clone()).await?;

    assert_eq!(
        drive(&p, &dispatcher, &worker, case).await?,
        vec![Handled::Failed]
    );
    let row = job(&p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("FAILED", 1));
    assert_eq!(row.last_error.as_deref(), Some("page 1 is not a document"));
    assert_eq!(
        case_row(&p, case).await?,
        (
            "FAILED".to_owned(),
            Some(FailureCode::DocumentUnreadable.message().to_owned())
        )
    );
    assert_eq!(events(&p, case, "PROCESSING_FAILED").await?.len(), 1);
    assert_eq!(processor.calls(), 1);
    assert_eq!(outbox_of(&p, id).await?.len(), 1, "no retry was scheduled");
    assert_eq!(dispatcher.tick().await?.claimed, 0);
    assert_eq!(p.reconciler().await?.sweep().await?, SweepReport::default());
    p.finish().await;
    Ok(())
}

/// A processor panic fails its job ("panicked") instead of the worker, and the same worker
/// handles the next case in the same batch normally.
#[tokio::test]
async fn processor_panic_fails_the_job_and_the_worker_carries_on() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let doomed = p.submit_case(1).await?;
    let healthy = p.submit_case(1).await?;
    let doomed_job = source_jobs(&p, doomed).await?[0];
    let doomed_source = source_of(&p, doomed_job).await?;
    let dispatcher = p.dispatcher().await?;
    let processor = Rigged::new(move |input, _| {
        if input.source_id == doomed_source {
            Act::Panic
        } else {
            Act::Succeed
        }
    });
    let worker = p.worker("w1", processor.clone()).await?;

    assert_eq!(dispatcher.tick().await?.published, 2);
    assert_eq!(
        worker.poll_once().await?,
        vec![Handled::Failed, Handled::Succeeded]
    );
    let row = job(&p, doomed_job).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("FAILED", 1));
    assert_eq!(row.last_error.as_deref(), Some("processor rigged panicked"));
    assert_eq!(case_row(&p, doomed).await?.0, "FAILED");
    assert_eq!(events(&p, doomed, "PROCESSING_FAILED").await?.len(), 1);

    assert_eq!(
        drive(&p, &dispatcher, &worker, healthy).await?,
        vec![Handled::Succeeded]
    );
    common::assert_one_decision(&p, healthy).await?;
    assert_eq!(processor.calls(), 2, "the panicking job is not retried");
    assert_eq!(p.assert_effects_once().await?, 1);
    p.finish().await;
    Ok(())
}

/// A failed source fails only its own job: its sibling still succeeds, the case is FAILED
/// with the failing source's reason, and no decision is written.
#[tokio::test]
async fn one_failed_source_fails_the_case_but_not_its_sibling() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(2).await?;
    let jobs = source_jobs(&p, case).await?;
    let bad = source_of(&p, jobs[0]).await?;
    let dispatcher = p.dispatcher().await?;
    let processor = Rigged::new(move |input, _| {
        if input.source_id == bad {
            Act::Terminal("unreadable scan".into())
        } else {
            Act::Succeed
        }
    });
    let worker = p.worker("w1", processor.clone()).await?;

    assert_eq!(
        drive(&p, &dispatcher, &worker, case).await?,
        vec![Handled::Failed, Handled::Succeeded]
    );
    assert_eq!(job(&p, jobs[0]).await?.status, "FAILED");
    assert_eq!(job(&p, jobs[1]).await?.status, "SUCCEEDED");
    assert_eq!(
        case_row(&p, case).await?,
        (
            "FAILED".to_owned(),
            Some(FailureCode::DocumentUnreadable.message().to_owned())
        )
    );
    assert_eq!(jobs_of(&p, case).await?.len(), 2, "no finalize job");
    assert_eq!(dispatcher.tick().await?.claimed, 0);
    assert_eq!(
        p.count_for("SELECT count(*) FROM decisions WHERE case_id = $1", case)
            .await?,
        0
    );
    p.finish().await;
    Ok(())
}
