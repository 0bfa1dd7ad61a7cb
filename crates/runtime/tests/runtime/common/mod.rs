//! Helpers shared by the reliability tests: reading job, outbox and audit rows, driving the
//! roles by hand, spawning their `run` loops, and a rigged processor whose behaviour depends
//! on the source and on how many times it was called for it.
#![allow(dead_code)]

use ironclad_core::{CaseId, Envelope, JobId, JobKind, SourceId};
use ironclad_documents::processor::{
    DocumentProcessor, ProcessFuture, ProcessorError, SourceInput, StandInProcessor,
};
use ironclad_runtime::worker::Handled;
use ironclad_runtime::{Dispatcher, Reconciler, Worker};
use ironclad_store::stuck::StuckScope;
use ironclad_testkit::harness::Pipeline;
use ironclad_testkit::wait_for;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// A job as the tests look at it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: Uuid,
    pub case_id: Uuid,
    pub source_id: Option<Uuid>,
    pub kind: String,
    pub status: String,
    pub attempt: i32,
    pub max_attempts: i32,
    pub last_error: Option<String>,
    pub lease_owner: Option<String>,
    pub lease_token: Option<Uuid>,
    pub lease_live: Option<bool>,
    pub next_attempt_in_future: bool,
    pub dead_lettered: bool,
    pub result: Option<serde_json::Value>,
}

const JOB_ROW: &str = "SELECT id, case_id, source_id, kind, status, attempt, max_attempts, last_error, lease_owner, \
     lease_token, lease_expires_at > now() AS lease_live, next_attempt_at > now() AS next_attempt_in_future, \
     dead_lettered_at IS NOT NULL AS dead_lettered, result FROM jobs";

/// One job.
pub async fn job(p: &Pipeline, id: JobId) -> anyhow::Result<JobRow> {
    let sql = format!("{JOB_ROW} WHERE id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id.0)
        .fetch_one(p.store().pool())
        .await?)
}

/// Every job of a case, source jobs first, oldest first.
pub async fn jobs_of(p: &Pipeline, case: CaseId) -> anyhow::Result<Vec<JobRow>> {
    let sql = format!("{JOB_ROW} WHERE case_id = $1 ORDER BY kind DESC, created_at, id");
    Ok(sqlx::query_as(&sql)
        .bind(case.0)
        .fetch_all(p.store().pool())
        .await?)
}

/// The `process_source` job ids of a case, in creation order.
pub async fn source_jobs(p: &Pipeline, case: CaseId) -> anyhow::Result<Vec<JobId>> {
    let ids: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM jobs WHERE case_id = $1 AND kind = 'process_source' ORDER BY created_at, id")
            .bind(case.0)
            .fetch_all(p.store().pool())
            .await?;
    Ok(ids.into_iter().map(JobId).collect())
}

/// The envelope a real message for this job would carry.
pub async fn envelope_for(p: &Pipeline, id: JobId) -> anyhow::Result<Envelope> {
    let row = job(p, id).await?;
    Ok(Envelope::new(
        id,
        CaseId(row.case_id),
        row.kind.parse()?,
        row.attempt + 1,
    ))
}

/// An outbox row as the tests look at it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OutboxRow {
    pub idempotency_key: String,
    pub status: String,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub available_in_future: bool,
    pub available_at_is_next_attempt: bool,
}

/// Every outbox row of a job, oldest first.
pub async fn outbox_of(p: &Pipeline, id: JobId) -> anyhow::Result<Vec<OutboxRow>> {
    Ok(sqlx::query_as(
        "SELECT o.idempotency_key, o.status, o.attempts, o.last_error, o.available_at > now() AS available_in_future, \
         o.available_at = j.next_attempt_at AS available_at_is_next_attempt \
         FROM outbox o JOIN jobs j ON j.id = o.job_id WHERE o.job_id = $1 ORDER BY o.created_at, o.id",
    )
    .bind(id.0)
    .fetch_all(p.store().pool())
    .await?)
}

/// Audit events of one type for a case.
pub async fn events(
    p: &Pipeline,
    case: CaseId,
    event_type: &str,
) -> anyhow::Result<Vec<serde_json::Value>> {
    Ok(sqlx::query_scalar(
        "SELECT data FROM audit_events WHERE case_id = $1 AND event_type = $2 ORDER BY id",
    )
    .bind(case.0)
    .bind(event_type)
    .fetch_all(p.store().pool())
    .await?)
}

/// `(status, status_reason)` of a case.
pub async fn case_row(p: &Pipeline, case: CaseId) -> anyhow::Result<(String, Option<String>)> {
    Ok(
        sqlx::query_as("SELECT status, status_reason FROM cases WHERE id = $1")
            .bind(case.0)
            .fetch_one(p.store().pool())
            .await?,
    )
}

/// Decisions of a case.
pub async fn decisions(p: &Pipeline, case: CaseId) -> anyhow::Result<i64> {
    p.count_for("SELECT count(*) FROM decisions WHERE case_id = $1", case)
        .await
}

/// Checks the case ended with exactly one decision and exactly one DECISION_GENERATED event.
pub async fn assert_one_decision(p: &Pipeline, case: CaseId) -> anyhow::Result<()> {
    assert_eq!(p.case_status(case).await?, "AWAITING_REVIEW", "case {case}");
    assert_eq!(decisions(p, case).await?, 1, "decisions of case {case}");
    assert_eq!(
        events(p, case, "DECISION_GENERATED").await?.len(),
        1,
        "DECISION_GENERATED of case {case}"
    );
    assert_eq!(
        p.count_for(
            "SELECT count(*) FROM jobs WHERE case_id = $1 AND kind = 'finalize_case'",
            case
        )
        .await?,
        1,
        "finalize jobs of case {case}"
    );
    Ok(())
}

/// Ticks the dispatcher and polls the worker until the case is settled (AWAITING_REVIEW or
/// FAILED); returns everything the worker reported.
pub async fn drive(
    p: &Pipeline,
    dispatcher: &Dispatcher,
    worker: &Worker,
    case: CaseId,
) -> anyhow::Result<Vec<Handled>> {
    let mut seen = Vec::new();
    for _ in 0..100 {
        dispatcher.tick().await?;
        seen.extend(worker.poll_once().await?);
        let status = p.case_status(case).await?;
        if status == "AWAITING_REVIEW" || status == "FAILED" {
            return Ok(seen);
        }
    }
    anyhow::bail!("case {case} did not settle; worker reported {seen:?}")
}

/// Ticks until the dispatcher publishes something (a delayed row becoming due); returns how
/// many rows it published.
pub async fn publish_when_due(dispatcher: &Dispatcher, timeout: Duration) -> anyhow::Result<u64> {
    wait_for("a due outbox row", timeout, || async {
        let published = dispatcher.tick().await?.published;
        Ok((published > 0).then_some(published))
    })
    .await
}

/// Runs `reclaim_once` until it hands back something (messages become reclaimable after
/// `claim_idle`).
pub async fn reclaim_when_idle(worker: &Worker, timeout: Duration) -> anyhow::Result<Vec<Handled>> {
    wait_for("a reclaimable message", timeout, || async {
        let handled = worker.reclaim_once().await?;
        Ok((!handled.is_empty()).then_some(handled))
    })
    .await
}

/// Reclaims until the worker reports something other than LeftPending (a lease held by a
/// worker that is gone must expire first); returns everything it reported, in order.
pub async fn reclaim_until_outcome(worker: &Worker) -> anyhow::Result<Vec<Handled>> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while !seen.iter().any(|h| *h != Handled::LeftPending) {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no redelivery led to an outcome: {seen:?}"
        );
        seen.extend(worker.reclaim_once().await?);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(seen)
}

/// Role loops spawned on the runtime, stopped together.
pub struct Roles {
    pub shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Roles {
    pub fn new() -> Self {
        Self {
            shutdown: CancellationToken::new(),
            tasks: Vec::new(),
        }
    }

    pub fn dispatcher(&mut self, d: Dispatcher) {
        self.tasks.push(tokio::spawn(d.run(self.shutdown.clone())));
    }

    pub fn worker(&mut self, w: Worker) {
        self.tasks
            .push(tokio::spawn(Arc::new(w).run(self.shutdown.clone())));
    }

    pub fn reconciler(&mut self, r: Reconciler) {
        self.tasks.push(tokio::spawn(r.run(self.shutdown.clone())));
    }

    /// Cancels every loop and waits for them (a worker waits up to its shutdown grace).
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        for t in self.tasks {
            t.await?;
        }
        Ok(())
    }
}

/// Waits until `n` cases are AWAITING_REVIEW, failing early (with the stuck-case report) if
/// any case FAILED.
pub async fn wait_all_decided(p: &Pipeline, n: i64, timeout: Duration) -> anyhow::Result<()> {
    let result = wait_for("every case to be decided", timeout, || async {
        let failed = p
            .count("SELECT count(*) FROM cases WHERE status = 'FAILED'")
            .await?;
        anyhow::ensure!(failed == 0, "{failed} case(s) FAILED");
        let decided = p
            .count("SELECT count(*) FROM cases WHERE status = 'AWAITING_REVIEW'")
            .await?;
        Ok((decided == n).then_some(()))
    })
    .await;
    if result.is_err() {
        for stuck in p
            .store()
            .stuck_cases(StuckScope::Operator, Duration::ZERO, 20)
            .await?
        {
            eprintln!(
                "stuck: {} {}: {}",
                stuck.case.id, stuck.case.status, stuck.reason
            );
        }
    }
    result
}

/// What a [`Rigged`] processor does on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Act {
    /// Verify and count pages (the stand-in).
    Succeed,
    /// Sleep, then succeed.
    Sleep(Duration),
    /// Fail retryably.
    Retryable(String),
    /// Fail for good.
    Terminal(String),
    /// Panic.
    Panic,
    /// Succeed, reporting this summary (e.g. one PostgreSQL cannot store).
    SucceedWith(serde_json::Value),
}

type Script = dyn Fn(&SourceInput, u32) -> Act + Send + Sync;

/// A processor that asks a script what to do, given the input and the 1-based number of this
/// call for the input's source.
pub struct Rigged {
    script: Box<Script>,
    stand_in: StandInProcessor,
    calls: AtomicU64,
    per_source: Mutex<HashMap<SourceId, u32>>,
}

impl Rigged {
    pub fn new(script: impl Fn(&SourceInput, u32) -> Act + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            script: Box::new(script),
            stand_in: StandInProcessor::default(),
            calls: AtomicU64::new(0),
            per_source: Mutex::new(HashMap::new()),
        })
    }

    /// Every call so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Calls so far for one source.
    pub fn calls_for(&self, source: SourceId) -> u32 {
        self.per_source
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&source)
            .copied()
            .unwrap_or(0)
    }
}

impl DocumentProcessor for Rigged {
    fn process(&self, input: SourceInput) -> ProcessFuture<'_> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let n = {
            let mut counts = self
                .per_source
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let n = counts.entry(input.source_id).or_insert(0);
            *n += 1;
            *n
        };
        let act = (self.script)(&input, n);
        Box::pin(async move {
            let mut summary = None;
            match act {
                Act::Succeed => {}
                Act::SucceedWith(s) => summary = Some(s),
                Act::Sleep(d) => tokio::time::sleep(d).await,
                Act::Retryable(m) => return Err(ProcessorError::Retryable(m)),
                Act::Terminal(m) => return Err(ProcessorError::Terminal(m)),
                Act::Panic => panic!("rigged panic for source {}", input.source_id),
            }
            let mut done = self.stand_in.process(input).await?;
            if let Some(summary) = summary {
                done.summary = summary;
            }
            Ok(done)
        })
    }

    fn name(&self) -> &'static str {
        "rigged"
    }
}

/// The source id of a `process_source` job.
pub async fn source_of(p: &Pipeline, id: JobId) -> anyhow::Result<SourceId> {
    let row = job(p, id).await?;
    anyhow::ensure!(
        row.kind == JobKind::ProcessSource.as_str(),
        "job {id} is not a source job"
    );
    Ok(SourceId(row.source_id.ok_or_else(|| {
        anyhow::anyhow!("job {id} has no source")
    })?))
}
