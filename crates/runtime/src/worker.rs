//! The worker: turns a stream delivery into exactly one committed outcome, then acknowledges.
//!
//! Order matters and is the whole point: claim the job in PostgreSQL (conditional update with a
//! lease), run the step while renewing the lease, commit the outcome (success, a delayed retry,
//! or a recorded failure), and only then XACK. If the commit fails the message stays pending
//! and recovery redelivers it; the claim makes the redelivery harmless.

use crate::config::RuntimeConfig;
use crate::lease_keeper::LeaseKeeper;
use crate::metric_names as m;
use crate::{pause, RuntimeError};
use ironclad_blobs::BlobStore;
use ironclad_core::faults::{FaultPoint, Faults};
use ironclad_core::retry::RetryVerdict;
use ironclad_core::{Envelope, JobKind};
use ironclad_documents::processor::{
    DocumentProcessor, ProcessedSource, ProcessorError, SourceInput,
};
use ironclad_queue::{Delivery, Queue};
use ironclad_store::jobs::{ClaimOutcome, ClaimRefusal, ClaimedJob, FinalizeOutcome};
use ironclad_store::{Store, Transition};
use rand::Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// What handling one delivery came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// The job ran and succeeded (for finalize: a decision exists).
    Succeeded,
    /// The job failed retryably; a delayed retry is committed.
    RetryScheduled,
    /// The job failed for good; the reason is recorded.
    Failed,
    /// Nothing to do (terminal job, not yet due): acknowledged.
    Duplicate,
    /// The message went to the dead-letter stream, with this reason.
    DeadLettered(String),
    /// A live worker holds the job: left pending, recovery will look again.
    LeftPending,
    /// Our lease was lost mid-run; our outcome was discarded.
    LeaseLost,
}

/// One worker process's consumer.
pub struct Worker {
    store: Store,
    queue: Queue,
    blobs: BlobStore,
    processor: Arc<dyn DocumentProcessor>,
    config: RuntimeConfig,
    faults: Faults,
    owner: String,
}

const ACTOR: &str = "system:worker";

enum StepOutcome {
    Done(Box<ProcessedSource>),
    Retryable(String),
    Terminal(String),
}

impl Worker {
    /// A worker consuming `queue` as its configured consumer.
    pub fn new(
        store: Store,
        queue: Queue,
        blobs: BlobStore,
        processor: Arc<dyn DocumentProcessor>,
        config: RuntimeConfig,
        faults: Faults,
    ) -> Self {
        let owner = queue.config().consumer.clone();
        Self {
            store,
            queue,
            blobs,
            processor,
            config,
            faults,
            owner,
        }
    }

    /// Handles one delivery to the end, acknowledging it when its outcome is committed.
    /// An `Err` means nothing was acknowledged and the message will come back.
    pub async fn handle(&self, delivery: &Delivery) -> Result<Handled, RuntimeError> {
        let envelope = match Envelope::parse(&delivery.body) {
            Ok(e) => e,
            Err(err) => {
                return self
                    .dead_letter(delivery, &format!("unreadable message: {err}"))
                    .await
            }
        };
        let max = self.queue.config().max_deliveries;
        if delivery.deliveries > max {
            let reason = format!(
                "delivered {} times (limit {max}) without an outcome",
                delivery.deliveries
            );
            // Record the failure first: if that fails, the message stays and we try again.
            if self
                .store
                .fail_dead_lettered(&envelope, &reason, ACTOR)
                .await?
                == Transition::Applied
            {
                metrics::counter!(m::JOBS_FAILED_TOTAL).increment(1);
            }
            return self.dead_letter(delivery, &reason).await;
        }
        let claim = self
            .store
            .claim_job_via(
                &envelope,
                Some(&delivery.id),
                &self.owner,
                self.config.lease,
            )
            .await?;
        let job = match claim {
            ClaimOutcome::Claimed(job) => job,
            ClaimOutcome::Refused(refusal) => {
                return self.refused(delivery, &envelope, refusal).await
            }
        };
        tracing::info!(job_id = %job.id, case_id = %job.case_id, kind = %job.kind, attempt = job.attempt, "job claimed");
        let started = Instant::now();
        let keeper = LeaseKeeper::start(
            self.store.clone(),
            self.queue.clone(),
            job.clone(),
            delivery.id.clone(),
            self.config.lease,
            self.config.lease_renew_every,
        );
        self.faults.check(FaultPoint::WorkerBeforeProcess)?;
        let handled = match job.kind {
            JobKind::ProcessSource => {
                let outcome = self.run_source_step(&job).await;
                // Stop renewing before committing: the lease stays valid for at least two
                // thirds of its length, and a renewal racing the commit would only report a
                // "lost" lease that the commit itself just released.
                let lost = keeper.lost();
                drop(keeper);
                if lost {
                    Handled::LeaseLost
                } else {
                    self.commit(&job, outcome?).await?
                }
            }
            JobKind::FinalizeCase => {
                drop(keeper);
                match self.store.finalize_case(&job).await? {
                    FinalizeOutcome::Decided | FinalizeOutcome::AlreadyDecided => {
                        Handled::Succeeded
                    }
                    FinalizeOutcome::Stale => Handled::LeaseLost,
                }
            }
        };
        metrics::histogram!(m::JOB_DURATION_SECONDS, "kind" => job.kind.as_str())
            .record(started.elapsed().as_secs_f64());
        if handled == Handled::Succeeded {
            metrics::counter!(m::JOBS_SUCCEEDED_TOTAL).increment(1);
        }
        self.faults.check(FaultPoint::WorkerBeforeAck)?;
        self.queue.ack(std::slice::from_ref(&delivery.id)).await?;
        Ok(handled)
    }

    async fn refused(
        &self,
        delivery: &Delivery,
        envelope: &Envelope,
        refusal: ClaimRefusal,
    ) -> Result<Handled, RuntimeError> {
        match refusal {
            ClaimRefusal::UnknownJob => {
                self.dead_letter(
                    delivery,
                    &format!("message names job {} which does not exist", envelope.job_id),
                )
                .await
            }
            ClaimRefusal::Mismatch => {
                let reason = format!(
                    "message for job {} names case {} / kind {}, which do not match the stored job",
                    envelope.job_id, envelope.case_id, envelope.kind
                );
                self.dead_letter(delivery, &reason).await
            }
            // A duplicate of a job another delivery is running: acknowledged, so it cannot pile
            // up deliveries and be dead-lettered on behalf of a healthy job.
            ClaimRefusal::Terminal(_) | ClaimRefusal::NotDue | ClaimRefusal::LeasedElsewhere => {
                metrics::counter!(m::DUPLICATES_TOTAL).increment(1);
                self.queue.ack(std::slice::from_ref(&delivery.id)).await?;
                Ok(Handled::Duplicate)
            }
            ClaimRefusal::Leased => Ok(Handled::LeftPending),
            ClaimRefusal::Exhausted => {
                if self.store.fail_exhausted(envelope.job_id, ACTOR).await? == Transition::Applied {
                    metrics::counter!(m::JOBS_FAILED_TOTAL).increment(1);
                }
                self.queue.ack(std::slice::from_ref(&delivery.id)).await?;
                Ok(Handled::Failed)
            }
        }
    }

    async fn dead_letter(
        &self,
        delivery: &Delivery,
        reason: &str,
    ) -> Result<Handled, RuntimeError> {
        tracing::warn!(message_id = %delivery.id, reason, "dead-lettering message");
        self.queue.dead_letter(delivery, reason).await?;
        metrics::counter!(m::DEAD_LETTERS_TOTAL).increment(1);
        Ok(Handled::DeadLettered(reason.to_owned()))
    }

    /// Runs the document step on its own task, so a panic in a processor fails the job instead
    /// of the worker, and a hung processor is bounded by the job timeout.
    async fn run_source_step(&self, job: &ClaimedJob) -> Result<StepOutcome, RuntimeError> {
        let Some(source_id) = job.source_id else {
            return Ok(StepOutcome::Terminal(
                "process_source job has no source".into(),
            ));
        };
        let Some(source) = self.store.source_record(source_id).await? else {
            return Ok(StepOutcome::Terminal(format!(
                "source {source_id} not found"
            )));
        };
        let blob_path = match self.blobs.path_of(&source.blob_key) {
            Ok(p) => p,
            Err(err) => return Ok(StepOutcome::Terminal(format!("invalid blob key: {err}"))),
        };
        let media_type = match source.media_type.parse() {
            Ok(t) => t,
            Err(err) => return Ok(StepOutcome::Terminal(format!("{err}"))),
        };
        let input = SourceInput {
            source_id,
            case_id: job.case_id,
            media_type,
            sha256: source.sha256,
            pages: u32::try_from(source.pages).unwrap_or(0),
            blob_path,
            workflow: source.workflow,
        };
        let processor = self.processor.clone();
        let task = tokio::spawn(async move { processor.process(input).await });
        let abort = task.abort_handle();
        Ok(
            match tokio::time::timeout(self.config.job_timeout, task).await {
                Ok(Ok(Ok(processed))) => StepOutcome::Done(Box::new(processed)),
                Ok(Ok(Err(ProcessorError::Retryable(msg)))) => StepOutcome::Retryable(msg),
                Ok(Ok(Err(ProcessorError::Terminal(msg)))) => StepOutcome::Terminal(msg),
                Ok(Err(join)) if join.is_panic() => {
                    StepOutcome::Terminal(format!("processor {} panicked", self.processor.name()))
                }
                Ok(Err(join)) => StepOutcome::Retryable(format!("processor task ended: {join}")),
                Err(_) => {
                    abort.abort();
                    StepOutcome::Retryable(format!(
                        "job timed out after {:?}",
                        self.config.job_timeout
                    ))
                }
            },
        )
    }

    async fn commit(
        &self,
        job: &ClaimedJob,
        outcome: StepOutcome,
    ) -> Result<Handled, RuntimeError> {
        let finalize_attempts = self.config.retry.max_attempts;
        let (transition, handled) = match outcome {
            StepOutcome::Done(processed) => {
                let result =
                    serde_json::json!({ "pages": processed.pages, "summary": processed.summary });
                let results = crate::reading::source_results(&processed);
                let (t, _) = self
                    .store
                    .complete_source_job_with(job, &result, results.as_ref(), finalize_attempts)
                    .await?;
                (t, Handled::Succeeded)
            }
            StepOutcome::Retryable(msg) => {
                let unit: f64 = rand::rng().random();
                match self.config.retry.after_failure(job.attempt, unit) {
                    RetryVerdict::RetryAfter(delay) => {
                        tracing::info!(job_id = %job.id, attempt = job.attempt, ?delay, error = %msg, "retry scheduled");
                        let t = self.store.schedule_retry(job, &msg, delay).await?;
                        if t == Transition::Applied {
                            metrics::counter!(m::RETRIES_SCHEDULED_TOTAL).increment(1);
                        }
                        (t, Handled::RetryScheduled)
                    }
                    RetryVerdict::GiveUp => {
                        let reason = format!(
                            "attempts exhausted ({}/{}): {msg}",
                            job.attempt, job.max_attempts
                        );
                        (self.fail(job, &reason).await?, Handled::Failed)
                    }
                }
            }
            StepOutcome::Terminal(msg) => (self.fail(job, &msg).await?, Handled::Failed),
        };
        Ok(if transition == Transition::Stale {
            Handled::LeaseLost
        } else {
            handled
        })
    }

    async fn fail(&self, job: &ClaimedJob, reason: &str) -> Result<Transition, RuntimeError> {
        tracing::warn!(job_id = %job.id, case_id = %job.case_id, reason, "job failed");
        let t = self.store.fail_held_job(job, reason, ACTOR).await?;
        if t == Transition::Applied {
            metrics::counter!(m::JOBS_FAILED_TOTAL).increment(1);
        }
        Ok(t)
    }

    /// Reads one batch of new messages and handles them one by one (for tests).
    pub async fn poll_once(&self) -> Result<Vec<Handled>, RuntimeError> {
        let mut out = Vec::new();
        for d in self.queue.read_new().await? {
            out.push(self.handle(&d).await?);
        }
        Ok(out)
    }

    /// Runs XAUTOCLAIM recovery once and handles what it returns (for tests).
    pub async fn reclaim_once(&self) -> Result<Vec<Handled>, RuntimeError> {
        let mut out = Vec::new();
        for d in self.queue.reclaim().await? {
            out.push(self.handle(&d).await?);
        }
        Ok(out)
    }

    /// Consumes until `shutdown`, at most `worker_concurrency` jobs at once; then stops reading
    /// and gives in-flight jobs `shutdown_grace` to finish. Jobs still running after that keep
    /// their lease until it expires, and the reconciler hands them to another worker.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        if let Err(err) = self.queue.ensure_group().await {
            tracing::warn!(error = %err, "could not create the consumer group yet; will retry on read");
        }
        let permits = Arc::new(Semaphore::new(self.config.worker_concurrency));
        let mut in_flight = JoinSet::new();
        let mut last_reclaim = Instant::now();
        let mut failures: u32 = 0;
        while !shutdown.is_cancelled() {
            while in_flight.try_join_next().is_some() {}
            if permits.available_permits() == 0 {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = in_flight.join_next() => continue,
                }
            }
            let batch = if last_reclaim.elapsed() >= self.config.reclaim_every {
                last_reclaim = Instant::now();
                self.queue.reclaim().await
            } else {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    r = self.queue.read_new() => r,
                }
            };
            let deliveries = match batch {
                Ok(d) => {
                    failures = 0;
                    d
                }
                Err(err) => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(error = %err, "reading the stream failed");
                    if pause(
                        &shutdown,
                        Duration::from_millis(200u64.saturating_mul(1 << failures.min(5))),
                    )
                    .await
                    {
                        break;
                    }
                    continue;
                }
            };
            for delivery in deliveries {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    break;
                };
                let me = self.clone();
                in_flight.spawn(async move {
                    let _permit = permit;
                    if let Err(err) = me.handle(&delivery).await {
                        tracing::warn!(message_id = %delivery.id, error = %err, "delivery not acknowledged; it will be redelivered");
                    }
                });
            }
        }
        let drain = async { while in_flight.join_next().await.is_some() {} };
        if tokio::time::timeout(self.config.shutdown_grace, drain)
            .await
            .is_err()
        {
            tracing::warn!(
                "shutdown grace elapsed; unfinished jobs will be rescued when their lease expires"
            );
        }
    }
}
