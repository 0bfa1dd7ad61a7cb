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

use crate::common;

use common::{
    case_row, drive, events, job, jobs_of, outbox_of, publish_when_due, source_jobs, source_of,
    Act, Rigged,
};
use ironclad_core::FailureCode;
use ironclad_documents::processor::{Behaviour, ScriptedProcessor};
use ironclad_runtime::reconciler::SweepReport;
use ironclad_runtime::worker::Handled;
use ironclad_store::stuck::StuckScope;
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
        p.store()
            .stuck_cases(StuckScope::Operator, Duration::ZERO, 10)
            .await?
            .is_empty(),
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

/// Issue 7, defect 3: a requeued job gets a fresh retry budget. Its attempts ran out on
/// retryable errors; the operator requeues it; its next retryable error schedules a retry (with
/// the first backoff delay again) instead of failing it for good, and the failure it may end
/// with is requeueable again.
#[tokio::test]
async fn a_requeued_job_retries_with_a_fresh_budget() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    // Three failing calls exhaust the first budget; the fourth fails again after the requeue;
    // the fifth succeeds.
    let processor = Rigged::new(|_, n| {
        if n <= 4 {
            Act::Retryable(format!("provider answered 503 (call {n})"))
        } else {
            Act::Succeed
        }
    });
    let worker = p.worker("w1", processor.clone()).await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(worker.poll_once().await?, vec![Handled::RetryScheduled]);
    for _ in 0..2 {
        publish_when_due(&dispatcher, Duration::from_secs(10)).await?;
        worker.poll_once().await?;
    }
    let row = job(&p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("FAILED", 3));

    assert_eq!(p.store().requeue_dead_lettered_jobs("operator").await?, 1);
    let row = job(&p, id).await?;
    assert_eq!(
        (row.status.as_str(), row.attempt, row.max_attempts),
        ("PENDING", 3, 6)
    );
    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(
        worker.poll_once().await?,
        vec![Handled::RetryScheduled],
        "the first failure after a requeue is retried"
    );
    let delay: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM next_attempt_at - updated_at)::float8 FROM jobs WHERE id = $1",
    )
    .bind(id.0)
    .fetch_one(p.store().pool())
    .await?;
    let first = p.config.retry.delays[0].as_secs_f64();
    assert!(
        (delay - first).abs() < 0.05,
        "the backoff restarts with the new budget: waited {delay}s, first delay {first}s"
    );
    publish_when_due(&dispatcher, Duration::from_secs(10)).await?;
    assert_eq!(worker.poll_once().await?, vec![Handled::Succeeded]);
    drive(&p, &dispatcher, &worker, case).await?;
    assert_eq!(p.case_status(case).await?, "AWAITING_REVIEW");
    assert_eq!(processor.calls(), 5);
    p.finish().await;
    Ok(())
}

/// Issue 7, defect 4: a result PostgreSQL refuses for good (here a NUL in the job's summary,
/// which `jsonb` cannot hold) fails the job at once with that cause, code `result_rejected`.
/// It used to be read again on every redelivery and end as "worker lost".
#[tokio::test]
async fn a_result_the_database_refuses_fails_the_job_with_its_cause() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor =
        Rigged::new(|_, _| Act::SucceedWith(serde_json::json!({ "text": "Ship\u{0}per" })));
    let worker = p.worker("w1", processor.clone()).await?;

    assert_eq!(
        drive(&p, &dispatcher, &worker, case).await?,
        vec![Handled::Failed]
    );
    let row = job(&p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("FAILED", 1));
    let detail = row.last_error.unwrap_or_default();
    assert!(
        detail.starts_with("the result could not be stored")
            && detail.contains("unsupported Unicode escape sequence"),
        "{detail}"
    );
    let code = FailureCode::ResultRejected;
    assert_eq!(
        case_row(&p, case).await?,
        ("FAILED".to_owned(), Some(code.message().to_owned()))
    );
    assert_eq!(processor.calls(), 1, "read once, not once per redelivery");
    assert_eq!(p.queue("probe").await?.pending_summary().await?.count, 0);
    p.finish().await;
    Ok(())
}
