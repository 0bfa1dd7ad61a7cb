//! Recording the outcome fails: the message must stay pending.
//!
//! DESIGN §3 invariant 4, **Persist before ack**: "A stream message is acknowledged only after
//! its outcome — success, a scheduled retry (a delayed outbox row), or a recorded failure — is
//! committed. If recording fails, the message stays pending and recovery redelivers it."
//!
//! A trigger in the test's own database refuses every job transition out of RUNNING, so the
//! worker's commit of a success, of a retry or of a failure errors. Each test checks nothing
//! was acknowledged and nothing was half-written (no delayed outbox row, no audit event, no
//! finalize job), then removes the trigger and checks recovery redelivers the message and the
//! outcome is committed and acknowledged once.

use crate::common;

use common::{
    assert_one_decision, drive, events, job, jobs_of, outbox_of, reclaim_until_outcome, source_jobs,
};
use ironclad_core::CaseId;
use ironclad_documents::processor::{Behaviour, ScriptedProcessor};
use ironclad_runtime::worker::Handled;
use ironclad_runtime::RuntimeError;
use ironclad_testkit::harness::Pipeline;
use std::sync::Arc;

async fn refuse_outcomes(p: &Pipeline) -> anyhow::Result<()> {
    sqlx::query(
        "CREATE FUNCTION test_refuse_outcome() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN RAISE EXCEPTION 'injected: outcome refused'; END $$",
    )
    .execute(p.store().pool())
    .await?;
    sqlx::query(
        "CREATE TRIGGER test_refuse_outcome BEFORE UPDATE ON jobs FOR EACH ROW \
         WHEN (OLD.status = 'RUNNING' AND NEW.status <> 'RUNNING') EXECUTE FUNCTION test_refuse_outcome()",
    )
    .execute(p.store().pool())
    .await?;
    Ok(())
}

async fn allow_outcomes(p: &Pipeline) -> anyhow::Result<()> {
    sqlx::query("DROP TRIGGER test_refuse_outcome ON jobs")
        .execute(p.store().pool())
        .await?;
    Ok(())
}

/// Runs the first delivery with outcomes refused and checks it was left pending and nothing
/// was written; returns the redelivery's outcome once outcomes are allowed again.
async fn refused_then_redelivered(
    p: &Pipeline,
    behaviour: Behaviour,
) -> anyhow::Result<(Handled, CaseId)> {
    let case = p.submit_case(1).await?;
    let id = source_jobs(p, case).await?[0];
    let dispatcher = p.dispatcher().await?;
    let processor = Arc::new(ScriptedProcessor::new(behaviour));
    let worker = p.worker("w1", processor.clone()).await?;
    let observer = p.queue("observer").await?;

    assert_eq!(dispatcher.tick().await?.published, 1);
    refuse_outcomes(p).await?;
    let first = worker.poll_once().await;
    assert!(matches!(first, Err(RuntimeError::Store(_))), "{first:?}");
    assert_eq!(processor.calls(), 1);
    assert_eq!(
        observer.pending_summary().await?.count,
        1,
        "not acknowledged"
    );
    let row = job(p, id).await?;
    assert_eq!((row.status.as_str(), row.attempt), ("RUNNING", 1));
    assert_eq!(
        outbox_of(p, id).await?.len(),
        1,
        "no delayed retry row was half-written"
    );
    assert_eq!(
        jobs_of(p, case).await?.len(),
        1,
        "no finalize job was half-written"
    );
    assert!(
        events(p, case, "PROCESSING_FAILED").await?.is_empty(),
        "no failure event was half-written"
    );
    assert_eq!(p.case_status(case).await?, "PROCESSING");

    allow_outcomes(p).await?;
    let seen = reclaim_until_outcome(&worker).await?;
    let (last, before) = seen.split_last().expect("an outcome");
    assert!(
        before.iter().all(|h| *h == Handled::LeftPending),
        "{seen:?}"
    );
    assert_eq!(
        observer.pending_summary().await?.count,
        0,
        "acknowledged once recorded"
    );
    assert_eq!(
        job(p, id).await?.attempt,
        2,
        "the unrecorded run counts as an attempt"
    );
    assert_eq!(
        processor.calls(),
        2,
        "the work whose outcome was never recorded is redone"
    );
    Ok((last.clone(), case))
}

#[tokio::test]
async fn a_success_that_cannot_be_recorded_stays_pending_and_is_redelivered() -> anyhow::Result<()>
{
    let p = Pipeline::start().await?;
    let (outcome, case) = refused_then_redelivered(&p, Behaviour::Succeed).await?;
    assert_eq!(outcome, Handled::Succeeded);
    let dispatcher = p.dispatcher().await?;
    let worker = p.standin_worker("w2").await?;
    drive(&p, &dispatcher, &worker, case).await?;
    assert_one_decision(&p, case).await?;
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_retry_that_cannot_be_recorded_stays_pending_and_is_redelivered() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let behaviour = Behaviour::FailTimes {
        times: 1,
        then: Box::new(Behaviour::Succeed),
    };
    let (outcome, _) = refused_then_redelivered(&p, behaviour).await?;
    assert_eq!(
        outcome,
        Handled::Succeeded,
        "the redelivery ran the next attempt"
    );
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_failure_that_cannot_be_recorded_stays_pending_and_is_redelivered() -> anyhow::Result<()>
{
    let p = Pipeline::start().await?;
    let (outcome, case) =
        refused_then_redelivered(&p, Behaviour::Terminal("corrupt page".into())).await?;
    assert_eq!(outcome, Handled::Failed);
    assert_eq!(p.case_status(case).await?, "FAILED");
    assert_eq!(events(&p, case, "PROCESSING_FAILED").await?.len(), 1);
    p.finish().await;
    Ok(())
}
