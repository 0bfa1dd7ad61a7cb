//! Every open case can be explained, and work that gave up publishing is still delivered.
//!
//! DESIGN §3 invariant 6, **Every case is accounted for**: "One query (and `ironclad cases
//! --stuck`) lists each case that is not terminal beyond its expected time, with the reason;
//! metrics expose outbox age, retry volume, pending-message age, terminal failures, dead
//! letters and time awaiting review." Invariant 2, **Nothing is lost**.
//!
//! The first test parks three cases in three different ways (message lost, worker dead while
//! holding the job, retry scheduled) and checks the stuck-case query names each with the right
//! reason, then lets the roles run and checks the list empties. The second makes publication
//! give up (outbox row DEAD while Redis is down) and checks the gauge counts it, the stuck-case
//! reason says so, and the reconciler still gets the case decided. Both check the retry volume
//! and the reconciler's minute sample of the pilot measures (with Redis up, then down).

use crate::common;

use common::{envelope_for, source_jobs, source_of, wait_all_decided, Act, Rigged, Roles};
use ironclad_store::jobs::ClaimOutcome;
use ironclad_store::stuck::StuckScope;
use ironclad_testkit::harness::Pipeline;
use ironclad_testkit::private::PrivateRedis;
use std::collections::HashMap;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stuck_cases_name_each_open_case_and_why_until_it_is_done() -> anyhow::Result<()> {
    let mut p = Pipeline::start().await?;
    p.config.retry.delays = vec![Duration::from_secs(3)];
    let dispatcher = p.dispatcher().await?;
    let forgetful = p.queue("forgetful").await?;

    // 1. A retry is scheduled (the first run of this case's source fails retryably).
    let waiting = p.submit_case(1).await?;
    let waiting_job = source_jobs(&p, waiting).await?[0];
    let waiting_source = source_of(&p, waiting_job).await?;
    let processor = Rigged::new(move |input, n| {
        if input.source_id == waiting_source && n == 1 {
            Act::Retryable("provider answered 503".into())
        } else {
            Act::Succeed
        }
    });
    let worker = p.worker("w1", processor.clone()).await?;
    assert_eq!(dispatcher.tick().await?.published, 1);
    assert_eq!(
        worker.poll_once().await?,
        vec![ironclad_runtime::worker::Handled::RetryScheduled]
    );

    // 2. The message is lost: read and acknowledged by something that did no work.
    let lost = p.submit_case(1).await?;
    let lost_job = source_jobs(&p, lost).await?[0];
    assert_eq!(dispatcher.tick().await?.published, 1);
    let swallowed = forgetful.read_new().await?;
    forgetful
        .ack(&swallowed.iter().map(|d| d.id.clone()).collect::<Vec<_>>())
        .await?;

    // 3. A worker claimed the job and died.
    let held = p.submit_case(1).await?;
    let held_job = source_jobs(&p, held).await?[0];
    assert_eq!(dispatcher.tick().await?.published, 1);
    let swallowed = forgetful.read_new().await?;
    forgetful
        .ack(&swallowed.iter().map(|d| d.id.clone()).collect::<Vec<_>>())
        .await?;
    let claimed = p
        .store()
        .claim_job(
            &envelope_for(&p, held_job).await?,
            "dead-worker",
            Duration::from_secs(2),
        )
        .await?;
    assert!(matches!(claimed, ClaimOutcome::Claimed(_)));

    let stuck: HashMap<_, _> = p
        .store()
        .stuck_cases(StuckScope::Operator, Duration::ZERO, 10)
        .await?
        .into_iter()
        .map(|s| (s.case.id, (s.case.status, s.reason)))
        .collect();
    assert_eq!(stuck.len(), 3, "{stuck:?}");
    let (status, reason) = &stuck[&lost.0];
    assert_eq!(status, "INGESTED");
    assert_eq!(
        reason,
        &format!("process_source {lost_job} PENDING attempt 0/3, outbox PUBLISHED")
    );
    let (status, reason) = &stuck[&held.0];
    assert_eq!(status, "PROCESSING");
    assert_eq!(
        reason,
        &format!("process_source {held_job} RUNNING attempt 1/3 held by dead-worker")
    );
    let (status, reason) = &stuck[&waiting.0];
    assert_eq!(status, "PROCESSING");
    assert_eq!(
        reason,
        &format!("process_source {waiting_job} PENDING attempt 1/3 waiting for its retry time, last error: provider answered 503")
    );
    // The tenant's own view: the same cases, without who holds a job or its last error.
    let mine = p
        .store()
        .stuck_cases(StuckScope::Tenant(p.tenant), Duration::ZERO, 10)
        .await?;
    assert_eq!(mine.len(), 3);
    for s in &mine {
        assert!(!s.reason.contains("dead-worker"), "{}", s.reason);
        assert!(!s.reason.contains("503"), "{}", s.reason);
        assert!(s
            .open_jobs
            .iter()
            .all(|j| j.lease_owner.is_none() && j.last_error.is_none()));
    }
    // Another tenant's view holds none of them.
    let other = p.store().create_tenant("other").await?;
    assert!(p
        .store()
        .stuck_cases(StuckScope::Tenant(other), Duration::ZERO, 10)
        .await?
        .is_empty());
    assert!(
        p.store()
            .stuck_cases(StuckScope::Operator, Duration::from_secs(3600), 10)
            .await?
            .is_empty(),
        "none is idle that long"
    );
    // The retry volume counts the one job waiting for its retry (the lost one never ran, the
    // held one runs), and the reconciler's minute sample records it with Redis's pending age.
    assert_eq!(p.store().pipeline_gauges().await?.jobs_retry_waiting, 1);
    assert!(p.reconciler().await?.sample_pilot_measures().await?);
    let samples = p.store().pilot_samples(Duration::from_secs(120)).await?;
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].retry_waiting, 1);
    assert!(samples[0].pending_age_seconds.is_some(), "Redis answered");

    let mut roles = Roles::new();
    roles.dispatcher(dispatcher);
    roles.worker(worker);
    roles.reconciler(p.reconciler().await?);
    let done = wait_all_decided(&p, 3, Duration::from_secs(40)).await;
    roles.stop().await?;
    done?;
    assert!(p
        .store()
        .stuck_cases(StuckScope::Operator, Duration::ZERO, 10)
        .await?
        .is_empty());
    assert_eq!(p.assert_effects_once().await?, 3);
    assert_eq!(
        processor.calls(),
        4,
        "the waiting source twice, the others once"
    );
    p.finish().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_outbox_row_is_counted_explained_and_still_delivered() -> anyhow::Result<()> {
    let redis = PrivateRedis::start()?;
    let mut p = Pipeline::on_redis(&redis.url()).await?;
    p.config.outbox_max_attempts = 1;
    let dispatcher = p.dispatcher().await?;
    let sampler = p.reconciler().await?;
    redis.kill()?;
    let case = p.submit_case(1).await?;
    let id = source_jobs(&p, case).await?[0];

    let report = dispatcher.tick().await?;
    assert_eq!((report.claimed, report.released, report.dead), (1, 1, 1));
    let gauges = p.store().pipeline_gauges().await?;
    assert_eq!((gauges.outbox_dead, gauges.outbox_pending), (1, 0));
    // Redis down: the minute is still sampled, its pending age unknown, the dead row counted.
    assert!(sampler.sample_pilot_measures().await?);
    let samples = p.store().pilot_samples(Duration::from_secs(120)).await?;
    assert_eq!(samples.len(), 1);
    assert_eq!(
        (samples[0].pending_age_seconds, samples[0].terminal_failures),
        (None, 1)
    );
    let stuck = p
        .store()
        .stuck_cases(StuckScope::Operator, Duration::ZERO, 10)
        .await?;
    assert_eq!(stuck.len(), 1);
    assert_eq!(
        stuck[0].reason,
        format!("process_source {id} PENDING attempt 0/3, outbox DEAD")
    );

    redis.restart()?;
    let processor = Rigged::new(|_, _| Act::Succeed);
    let mut roles = Roles::new();
    roles.dispatcher(dispatcher);
    roles.worker(p.worker("w1", processor.clone()).await?);
    roles.reconciler(p.reconciler().await?);
    let done = wait_all_decided(&p, 1, Duration::from_secs(40)).await;
    roles.stop().await?;
    done?;
    common::assert_one_decision(&p, case).await?;
    assert_eq!(processor.calls(), 1);
    assert_eq!(
        p.store().pipeline_gauges().await?.outbox_dead,
        1,
        "the dead row stays visible until an operator acts"
    );
    assert_eq!(
        p.count("SELECT count(*) FROM outbox WHERE idempotency_key LIKE '%:reemit:%'")
            .await?,
        1
    );
    p.finish().await;
    Ok(())
}
