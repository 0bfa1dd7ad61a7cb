//! Poison messages: unreadable, orphaned, forged, or redelivered without end.
//!
//! DESIGN §3 invariant 5, **Poison is contained**: "A message that keeps failing, or cannot be
//! parsed, goes to a dead-letter stream with its reason after a bounded number of deliveries;
//! the job it names is marked FAILED with that reason. Nothing loops forever."
//!
//! These tests write junk straight into the work stream and make a real message exceed the
//! delivery limit, then check each lands in the dead-letter stream with its reason and body,
//! that a forged message never fails the real job it names, that the worker goes on to process
//! real work, and that an operator's requeue brings a dead-lettered job back to one decision.

use crate::common;

use common::{
    assert_one_decision, case_row, drive, events, job, outbox_of, publish_when_due,
    reclaim_when_idle, source_jobs, Act, Rigged,
};
use ironclad_core::{CaseId, Envelope, FailureCode, JobId, JobKind};
use ironclad_documents::processor::{Behaviour, ScriptedProcessor};
use ironclad_runtime::reconciler::SweepReport;
use ironclad_runtime::worker::Handled;
use ironclad_store::stuck::StuckScope;
use ironclad_testkit::harness::Pipeline;
use std::sync::Arc;
use std::time::Duration;

/// XADD with arbitrary fields (no `m`), as a stray producer would.
fn xadd_raw(p: &Pipeline, fields: &[&str]) -> anyhow::Result<String> {
    let out = std::process::Command::new("redis-cli")
        .args(["-u", &p.redis_url, "XADD", &p.streams.stream, "*"])
        .args(fields)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "redis-cli failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[tokio::test]
async fn unreadable_orphan_and_forged_messages_are_dead_lettered_and_real_work_goes_on(
) -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let case = p.submit_case(1).await?;
    let real = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let worker = p.worker("w1", processor.clone()).await?;
    let poisoner = p.queue("poisoner").await?;

    let unknown_job = JobId::new();
    let bodies = vec![
        "not json".to_owned(),
        // Right shape, a version this build does not know.
        format!(
            r#"{{"v":2,"job_id":"{real}","case_id":"{case}","kind":"process_source","attempt":1}}"#
        ),
        // Right shape plus a field nobody asked for (a path, say).
        format!(
            r#"{{"v":1,"job_id":"{real}","case_id":"{case}","kind":"process_source","attempt":1,"path":"/etc/passwd"}}"#
        ),
        " ".repeat(5000),
        Envelope::new(unknown_job, CaseId::new(), JobKind::ProcessSource, 1).to_json(),
        // Forged: a real job under another case, and a real job under the wrong kind.
        Envelope::new(real, CaseId::new(), JobKind::ProcessSource, 1).to_json(),
        Envelope::new(real, case, JobKind::FinalizeCase, 1).to_json(),
    ];
    let ids = poisoner.publish(&bodies).await?;
    let junk_id = xadd_raw(&p, &["junk", "1"])?;
    assert_eq!(dispatcher.tick().await?.published, 1);

    let handled = worker.poll_once().await?;
    assert_eq!(handled.len(), 9, "{handled:?}");
    let reasons: Vec<String> = handled[..8]
        .iter()
        .map(|h| match h {
            Handled::DeadLettered(reason) => reason.clone(),
            other => panic!("expected a dead letter, got {other:?} in {handled:?}"),
        })
        .collect();
    // The real message comes last and the forged ones did not fail its job.
    assert_eq!(handled[8], Handled::Succeeded);
    for (reason, expected) in reasons.iter().zip([
        "unreadable message: unparsable message",
        "unreadable message: unsupported message version 2",
        "unreadable message: unparsable message: unknown field `path`",
        "unreadable message: message of 5000 bytes exceeds the 4096-byte limit",
        &format!("message names job {unknown_job} which does not exist"),
        &format!("message for job {real} names case"),
        &format!("message for job {real} names case {case} / kind finalize_case, which do not match the stored job"),
        "unreadable message: unparsable message",
    ]) {
        assert!(reason.starts_with(expected), "reason {reason:?} should start with {expected:?}");
    }

    let dead = poisoner.dead_letters(100).await?;
    assert_eq!(dead.len(), 8);
    for (i, d) in dead.iter().enumerate() {
        assert_eq!(d.reason, reasons[i]);
        assert_eq!(d.deliveries, 1);
        if i < 7 {
            assert_eq!(
                d.body,
                bodies[i].as_bytes(),
                "the body is kept byte for byte"
            );
            assert_eq!(d.original_id, ids[i]);
        } else {
            assert_eq!(
                (d.body.as_slice(), d.original_id.as_str()),
                (&b""[..], junk_id.as_str())
            );
        }
    }
    assert_eq!(
        poisoner.pending_summary().await?.count,
        0,
        "dead letters are acknowledged"
    );

    let row = job(&p, real).await?;
    assert_eq!(
        (row.status.as_str(), row.attempt, row.last_error),
        ("SUCCEEDED", 1, None)
    );
    assert!(
        events(&p, case, "PROCESSING_FAILED").await?.is_empty(),
        "the forged messages failed nothing"
    );
    drive(&p, &dispatcher, &worker, case).await?;
    assert_one_decision(&p, case).await?;
    assert_eq!(processor.calls(), 1);
    assert_eq!(
        poisoner.dead_letters(100).await?.len(),
        8,
        "nothing else was dead-lettered"
    );
    p.finish().await;
    Ok(())
}

/// A message whose every delivery fails before any outcome, with an error no retry cures (a
/// corrupt row refusing the claim, as a bug would), is dead-lettered after `max_deliveries`
/// deliveries with the reason, and its job and case are FAILED (code `dead_lettered`) and
/// marked dead-lettered. An operator's requeue then brings the job back, and the case
/// completes to exactly one decision.
#[tokio::test]
async fn delivery_limit_dead_letters_and_fails_the_job_and_requeue_recovers_it(
) -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    p.streams.max_deliveries = 2;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let worker = p.worker("w1", processor.clone()).await?;
    refuse_claims_of(&p, id).await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    let first = worker.poll_once().await;
    assert!(
        matches!(&first, Err(e) if !e.is_transient()),
        "delivery 1 fails for good and stays pending: {first:?}"
    );
    let handled = reclaim_when_idle(&worker, Duration::from_secs(15)).await?;
    let [Handled::DeadLettered(reason)] = handled.as_slice() else {
        anyhow::bail!("expected a dead letter, got {handled:?}");
    };
    assert!(
        reason.starts_with("delivered 2 times (limit 2), failing each time before an outcome")
            && reason.contains("corrupt"),
        "{reason}"
    );

    let row = job(&p, id).await?;
    assert_eq!(row.status, "FAILED");
    assert!(row.dead_lettered);
    assert_eq!(row.last_error.as_deref(), Some(reason.as_str()));
    assert_eq!(
        case_row(&p, case).await?,
        (
            "FAILED".to_owned(),
            Some(FailureCode::DeadLettered.message().to_owned())
        )
    );
    let failed = events(&p, case, "PROCESSING_FAILED").await?;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["dead_lettered"], true);
    assert_eq!(failed[0]["code"], "dead_lettered");
    assert_eq!(processor.calls(), 0, "the step never ran");
    let dead = worker_queue_dead_letters(&p).await?;
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].reason.as_str(), dead[0].deliveries),
        (reason.as_str(), 2)
    );
    assert_eq!(worker_queue_pending(&p).await?, 0);
    // Nothing loops: no role revives a dead-lettered job on its own.
    assert_eq!(p.reconciler().await?.sweep().await?, SweepReport::default());
    assert_eq!(dispatcher.tick().await?.claimed, 0);

    allow_claims(&p).await?;
    assert_eq!(p.store().requeue_dead_lettered_jobs("operator").await?, 1);
    let row = job(&p, id).await?;
    assert_eq!(
        (row.status.as_str(), row.attempt, row.dead_lettered),
        ("PENDING", 0, false)
    );
    assert_eq!(case_row(&p, case).await?.0, "PROCESSING");
    let requeued = events(&p, case, "REQUEUED").await?;
    assert_eq!(requeued.len(), 1);
    assert_eq!(requeued[0]["previous_code"], "dead_lettered");
    assert_eq!(
        p.store().requeue_dead_lettered_jobs("operator").await?,
        0,
        "requeue is one-shot"
    );

    assert_eq!(
        drive(&p, &dispatcher, &worker, case).await?,
        vec![Handled::Succeeded, Handled::Succeeded]
    );
    assert_one_decision(&p, case).await?;
    assert_eq!(processor.calls(), 1);
    assert_eq!(p.assert_effects_once().await?, 1);
    p.finish().await;
    Ok(())
}

/// Defect 1 of issue 7: deliveries that never started the job's work do not count towards
/// poison. A consumer reads the message and dies before claiming (a sibling's crash); with a
/// delivery limit of 1, the redelivery (delivery 2) used to dead-letter and fail the healthy
/// job. Now it runs it.
#[tokio::test]
async fn a_delivery_that_never_started_the_job_costs_nothing() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    p.streams.max_deliveries = 1;
    let case = p.submit_case(1).await?;
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(Behaviour::Succeed));
    let worker = p.worker("w1", processor.clone()).await?;
    let crashed = p.queue("crashed").await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(crashed.read_new().await?.len(), 1);
    assert_eq!(
        reclaim_when_idle(&worker, Duration::from_secs(15)).await?,
        vec![Handled::Succeeded]
    );
    assert!(worker_queue_dead_letters(&p).await?.is_empty());
    drive(&p, &dispatcher, &worker, case).await?;
    assert_one_decision(&p, case).await?;
    assert_eq!(processor.calls(), 1);
    p.finish().await;
    Ok(())
}

/// Makes every claim of `job` fail with an error no retry cures, as a corrupt row or a bug
/// would (a trigger raising `data_corrupted` when the job is about to become RUNNING).
async fn refuse_claims_of(p: &Pipeline, job: JobId) -> anyhow::Result<()> {
    let function = format!(
        "CREATE OR REPLACE FUNCTION refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.id = '{job}' AND NEW.status = 'RUNNING' THEN
             RAISE EXCEPTION 'row of job % is corrupt', NEW.id USING ERRCODE = 'XX001';
           END IF;
           RETURN NEW;
         END $$"
    );
    sqlx::query(&function).execute(p.store().pool()).await?;
    sqlx::query("CREATE TRIGGER refuse_claim BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_claim()")
        .execute(p.store().pool())
        .await?;
    Ok(())
}

/// Undoes [`refuse_claims_of`].
async fn allow_claims(p: &Pipeline) -> anyhow::Result<()> {
    sqlx::query("DROP TRIGGER refuse_claim ON jobs")
        .execute(p.store().pool())
        .await?;
    Ok(())
}

async fn worker_queue_pending(p: &Pipeline) -> anyhow::Result<u64> {
    Ok(p.queue("reader").await?.pending_summary().await?.count)
}

async fn worker_queue_dead_letters(
    p: &Pipeline,
) -> anyhow::Result<Vec<ironclad_queue::DeadLetter>> {
    Ok(p.queue("reader").await?.dead_letters(100).await?)
}

/// Dead-letters the job's current message: its claims fail for good until the delivery limit
/// (set to 1 by the callers) sets it aside.
async fn dead_letter_current_message(
    p: &Pipeline,
    worker: &ironclad_runtime::Worker,
    job: JobId,
) -> anyhow::Result<()> {
    refuse_claims_of(p, job).await?;
    let handled = worker.poll_once().await?;
    allow_claims(p).await?;
    anyhow::ensure!(
        matches!(handled.as_slice(), [Handled::DeadLettered(_)]),
        "expected a dead letter, got {handled:?}"
    );
    Ok(())
}

/// A requeued job starts again at attempt 0. Its first retry after the requeue must still be
/// announced by a delayed outbox row before the message is acknowledged (invariant 4), even
/// though the job's first life already used the outbox key `job:<id>:attempt:2`.
#[tokio::test]
async fn a_retry_after_a_requeue_is_announced_before_the_ack() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    p.streams.max_deliveries = 1;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    // Calls 1 and 2 fail retryably, then success.
    let processor = Rigged::new(|_, n| {
        if n <= 2 {
            Act::Retryable(format!("provider 503 #{n}"))
        } else {
            Act::Succeed
        }
    });
    let worker = p.worker("w1", processor.clone()).await?;

    // First life: attempt 1 fails retryably (outbox key job:<id>:attempt:2), then the retry's
    // message is swallowed by a crashing consumer and dead-lettered.
    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(worker.poll_once().await?, vec![Handled::RetryScheduled]);
    assert_eq!(
        publish_when_due(&dispatcher, Duration::from_secs(10)).await?,
        1
    );
    dead_letter_current_message(&p, &worker, id).await?;
    assert!(job(&p, id).await?.dead_lettered);

    // Second life.
    assert_eq!(p.store().requeue_dead_lettered_jobs("operator").await?, 1);
    assert_eq!(dispatcher.tick().await?.published, 1);
    let handled = worker.poll_once().await?;
    let row = job(&p, id).await?;
    let pending_retry = outbox_of(&p, id)
        .await?
        .into_iter()
        .filter(|o| o.status == "PENDING")
        .count();
    assert_eq!(
        (handled, row.status.as_str(), pending_retry),
        (vec![Handled::RetryScheduled], "PENDING", 1),
        "the retry must be committed as a delayed outbox row before the ack"
    );
    assert_eq!(
        publish_when_due(&dispatcher, Duration::from_secs(10)).await?,
        1
    );
    assert_eq!(worker.poll_once().await?, vec![Handled::Succeeded]);
    drive(&p, &dispatcher, &worker, case).await?;
    assert_one_decision(&p, case).await?;
    p.finish().await;
    Ok(())
}

/// Requeueing a dead-lettered job must not reopen a case whose other source FAILED for good:
/// such a case can never be finalized (finalize needs every source SUCCEEDED), so it would sit
/// in PROCESSING forever with every job terminal (invariants 2 and 6).
#[tokio::test]
async fn requeue_does_not_reopen_a_case_another_source_failed() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    p.streams.max_deliveries = 1;
    // One message per read, in publication order.
    p.streams.read_count = 1;
    let case = p.submit_case(2).await?;
    let jobs = source_jobs(&p, case).await?;
    let doomed_source = common::source_of(&p, jobs[0]).await?;
    let dispatcher = p.dispatcher().await?;
    let processor = Rigged::new(move |input, _| {
        if input.source_id == doomed_source {
            Act::Terminal("unreadable scan".into())
        } else {
            Act::Succeed
        }
    });
    let worker = p.worker("w1", processor.clone()).await?;
    let unreadable = (
        "FAILED".to_owned(),
        Some(FailureCode::DocumentUnreadable.message().to_owned()),
    );

    assert_eq!(dispatcher.tick().await?.published, 2);
    assert_eq!(worker.poll_once().await?, vec![Handled::Failed]);
    assert_eq!(case_row(&p, case).await?, unreadable);
    // The other source's message cannot be claimed (a corrupt row) and is dead-lettered.
    dead_letter_current_message(&p, &worker, jobs[1]).await?;
    let rows = common::jobs_of(&p, case).await?;
    assert_eq!(rows.iter().filter(|j| j.status == "FAILED").count(), 2);
    assert_eq!(rows.iter().filter(|j| j.dead_lettered).count(), 1);

    // The operator requeues: only the dead letter (a file that cannot be read stays failed);
    // it runs and succeeds.
    assert_eq!(p.store().requeue_dead_lettered_jobs("operator").await?, 1);
    drive_until_idle(&dispatcher, &worker).await?;
    let rows = common::jobs_of(&p, case).await?;
    let statuses: Vec<&str> = rows.iter().map(|j| j.status.as_str()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == "SUCCEEDED").count(),
        1,
        "{rows:?}"
    );
    assert_eq!(rows.len(), 2, "no finalize job: {rows:?}");
    // Every job is terminal, so the case must be terminal too: it stays FAILED, with the reason
    // of the source that could not be processed, and nothing reports it stuck.
    assert_eq!(case_row(&p, case).await?, unreadable);
    assert!(p
        .store()
        .stuck_cases(StuckScope::Operator, Duration::ZERO, 10)
        .await?
        .is_empty());
    assert_eq!(processor.calls(), 2);
    p.finish().await;
    Ok(())
}

/// Ticks and polls until a round does nothing.
async fn drive_until_idle(
    dispatcher: &ironclad_runtime::Dispatcher,
    worker: &ironclad_runtime::Worker,
) -> anyhow::Result<()> {
    for _ in 0..20 {
        let published = dispatcher.tick().await?.published;
        let handled = worker.poll_once().await?;
        if published == 0 && handled.is_empty() {
            return Ok(());
        }
    }
    anyhow::bail!("the pipeline did not go idle")
}

/// A duplicate message (a dispatcher crash after XADD, a re-emit) that meets a live lease taken
/// through another claim was never a failing message. It used to stay pending and pile up
/// deliveries until the delivery limit failed the healthy job (finding B in
/// docs/invariants.md); now it is acknowledged at once. Then the lease holder schedules a retry
/// `retry_in` from now; returns what the worker made of the duplicate.
async fn stale_duplicate_after_a_retry(
    retry_in: Duration,
) -> anyhow::Result<(Pipeline, CaseId, Vec<Handled>)> {
    let mut p = Pipeline::start().await?;
    p.streams.max_deliveries = 2;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let worker = p
        .worker("w1", Arc::new(ScriptedProcessor::new(Behaviour::Succeed)))
        .await?;

    // A live worker holds the job for a long run.
    let env = common::envelope_for(&p, id).await?;
    let ironclad_store::jobs::ClaimOutcome::Claimed(held) = p
        .store()
        .claim_job(&env, "long-ocr", Duration::from_secs(120))
        .await?
    else {
        anyhow::bail!("claim refused")
    };
    // Meanwhile the intake message arrives and meets the live lease: a duplicate, acknowledged.
    assert_eq!(dispatcher.tick().await?.published, 1);
    let handled = worker.poll_once().await?;
    assert_eq!(handled, vec![Handled::Duplicate]);
    assert_eq!(p.queue("probe").await?.pending_summary().await?.count, 0);
    // The long run ends with a retryable failure: a delayed retry is committed.
    let retry = p
        .store()
        .schedule_retry(&held, "provider answered 503", retry_in)
        .await?;
    assert_eq!(retry, ironclad_store::Transition::Applied);
    // Nothing is left to be reclaimed and dead-lettered.
    tokio::time::sleep(p.streams.claim_idle + Duration::from_millis(200)).await;
    assert_eq!(worker.reclaim_once().await?, vec![]);
    Ok((p, case, handled))
}

/// ... and the job is still waiting for its retry time: it must not be failed.
#[tokio::test]
async fn a_stale_duplicate_does_not_fail_a_job_waiting_for_its_retry() -> anyhow::Result<()> {
    let (p, case, handled) = stale_duplicate_after_a_retry(Duration::from_secs(60)).await?;
    let row = common::jobs_of(&p, case).await?.remove(0);
    assert_eq!(
        (
            row.status.as_str(),
            row.dead_lettered,
            p.case_status(case).await?.as_str()
        ),
        ("PENDING", false, "PROCESSING"),
        "the job waits for its retry; the duplicate ({handled:?}) must not fail it"
    );
    assert_eq!(
        outbox_of(&p, JobId(row.id))
            .await?
            .iter()
            .filter(|o| o.status == "PENDING")
            .count(),
        1
    );
    p.finish().await;
    Ok(())
}

/// ... and the job's retry is already due (its delayed row not yet published): the job is
/// healthy and free to run, so the duplicate must not fail it either (it may run it).
#[tokio::test]
async fn a_stale_duplicate_does_not_fail_a_job_due_for_its_retry() -> anyhow::Result<()> {
    let (p, case, handled) = stale_duplicate_after_a_retry(Duration::from_millis(100)).await?;
    let row = common::jobs_of(&p, case).await?.remove(0);
    assert!(
        !row.dead_lettered && row.status != "FAILED",
        "the duplicate ({handled:?}) failed a healthy job: {row:?}"
    );
    assert_ne!(p.case_status(case).await?, "FAILED");
    p.finish().await;
    Ok(())
}
