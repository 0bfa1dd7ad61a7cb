//! The worker: turns a stream delivery into exactly one committed outcome, then acknowledges.
//!
//! Order matters and is the whole point: claim the job in PostgreSQL (conditional update with a
//! lease), run the step while renewing the lease, commit the outcome (success, a delayed retry,
//! or a recorded failure), and only then XACK. If the commit fails for a passing reason it is
//! retried with the finished result kept in memory, while the lease keeper keeps the claim
//! alive, so an outage costs time, not the work already done; if the worker gives up, the
//! message stays pending and recovery redelivers it, and the claim makes the redelivery
//! harmless. Only a worker whose outcome landed acknowledges: one that lost its lease leaves
//! the message to whoever holds the job now.
//!
//! What counts towards poison: runs that started (the claim's attempt counter bounds them),
//! and deliveries that end in an error no retry can cure. A delivery that failed because
//! PostgreSQL was unreachable, or that found a live worker on the job, counts for nothing — an
//! outage is a delay, never a failure someone has to clean up.

mod finalize;

use crate::config::RuntimeConfig;
use crate::lease_keeper::LeaseKeeper;
use crate::metric_names as m;
use crate::workflows::{PinError, WorkflowCatalog};
use crate::{pause, RuntimeError};
use ironclad_blobs::BlobStore;
use ironclad_core::faults::{FaultPoint, Faults};
use ironclad_core::retry::RetryVerdict;
use ironclad_core::{Envelope, FailureCode, JobKind};
use ironclad_documents::processor::{
    DocumentProcessor, ProcessedSource, ProcessorError, SourceInput,
};
use ironclad_queue::{Delivery, Queue};
use ironclad_store::jobs::{ClaimOutcome, ClaimRefusal, ClaimedJob, Failure};
use ironclad_store::{Store, StoreError, Transition};
use rand::Rng;
use std::future::Future;
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
    /// Our lease was lost mid-run; our outcome was discarded and the message left to the
    /// job's current holder.
    LeaseLost,
}

/// One worker process's consumer.
pub struct Worker {
    store: Store,
    queue: Queue,
    blobs: BlobStore,
    processor: Arc<dyn DocumentProcessor>,
    workflows: Option<Arc<WorkflowCatalog>>,
    templates: Option<Arc<crate::templates::TemplateCatalog>>,
    config: RuntimeConfig,
    faults: Faults,
    owner: String,
}

const ACTOR: &str = "system:worker";

/// First wait before retrying a store call that failed for a passing reason; doubles.
const RETRY_FIRST: Duration = Duration::from_millis(100);
/// Longest wait between two tries of a store call.
const RETRY_MAX: Duration = Duration::from_secs(2);

enum StepOutcome {
    Done(Box<ProcessedSource>),
    Retryable(String),
    Terminal(Failure),
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
            workflows: None,
            templates: None,
            config,
            faults,
            owner,
        }
    }

    /// Reads every source under the workflow version its case is pinned to (see
    /// [`WorkflowCatalog`]); without a catalog the processor resolves workflows itself.
    pub fn with_workflows(mut self, catalog: Arc<WorkflowCatalog>) -> Self {
        self.workflows = Some(catalog);
        self
    }

    /// Reads every source with the invoice2data template set its case is pinned to (see
    /// [`crate::templates::TemplateCatalog`]); without a catalog no template is applied.
    pub fn with_templates(mut self, catalog: Arc<crate::templates::TemplateCatalog>) -> Self {
        self.templates = Some(catalog);
        self
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
        match self.handle_job(delivery, &envelope).await {
            // An error no retry cures (a corrupt row, a bug), met again and again before any
            // outcome: set the message aside rather than loop on it forever. Passing errors
            // (PostgreSQL or Redis unreachable) never get here, however many deliveries.
            Err(err) if !err.is_transient() && delivery.deliveries >= max => {
                let reason = format!(
                    "delivered {} times (limit {max}), failing each time before an outcome: {err}",
                    delivery.deliveries
                );
                self.dead_letter_job(delivery, &envelope, &reason).await
            }
            other => other,
        }
    }

    async fn handle_job(
        &self,
        delivery: &Delivery,
        envelope: &Envelope,
    ) -> Result<Handled, RuntimeError> {
        let claim = self
            .store
            .claim_job_via(envelope, Some(&delivery.id), &self.owner, self.config.lease)
            .await?;
        let job = match claim {
            ClaimOutcome::Claimed(job) => job,
            ClaimOutcome::Refused(refusal) => {
                return self.refused(delivery, envelope, refusal).await
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
        crate::strike(&self.faults, FaultPoint::WorkerBeforeProcess).await?;
        let handled = match job.kind {
            JobKind::ProcessSource => {
                let outcome = self.run_source_step(&job).await?;
                if keeper.lost() {
                    // Lost to a rescue, or the job was cancelled by a reprocess: its run's
                    // record says which (a cancelled job's message is acknowledged).
                    self.settled(&job, Transition::Stale, Handled::LeaseLost)
                        .await?
                } else {
                    self.commit(&job, &outcome).await?
                }
            }
            JobKind::FinalizeCase => self.finalize(&job).await?,
        };
        drop(keeper);
        metrics::histogram!(m::JOB_DURATION_SECONDS, "kind" => job.kind.as_str())
            .record(started.elapsed().as_secs_f64());
        match handled {
            // Someone else holds the job now; the message may be theirs (XAUTOCLAIM hands a
            // message to whoever reclaims it): only the holder acknowledges.
            Handled::LeaseLost => return Ok(Handled::LeaseLost),
            Handled::Succeeded => metrics::counter!(m::JOBS_SUCCEEDED_TOTAL).increment(1),
            _ => {}
        }
        if job.kind == JobKind::FinalizeCase {
            crate::strike(&self.faults, FaultPoint::FinalizeAfterCommit).await?;
        }
        crate::strike(&self.faults, FaultPoint::WorkerBeforeAck).await?;
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
            // A duplicate of a job that is finished, waiting for its retry, or run by another
            // delivery: acknowledged, so it cannot pile up deliveries. None of these is the
            // message a live holder claimed through.
            ClaimRefusal::Terminal(_) | ClaimRefusal::NotDue | ClaimRefusal::LeasedElsewhere => {
                metrics::counter!(m::DUPLICATES_TOTAL).increment(1);
                self.queue.ack(std::slice::from_ref(&delivery.id)).await?;
                Ok(Handled::Duplicate)
            }
            ClaimRefusal::Leased => Ok(Handled::LeftPending),
            // Every attempt started and none reached an outcome (each run's worker was lost):
            // the job is poison for this deployment. Fail it, and keep the message's trace.
            ClaimRefusal::Exhausted => {
                if self.store.fail_exhausted(envelope.job_id, ACTOR).await? == Transition::Applied {
                    metrics::counter!(m::JOBS_FAILED_TOTAL).increment(1);
                }
                self.dead_letter(
                    delivery,
                    &format!(
                        "job {} exhausted its attempts without an outcome",
                        envelope.job_id
                    ),
                )
                .await?;
                Ok(Handled::Failed)
            }
        }
    }

    /// Dead-letters a message that names a real job, failing the job unless a live worker
    /// holds it. If that worker claimed it through this very message, the message is theirs
    /// to acknowledge: it stays pending.
    async fn dead_letter_job(
        &self,
        delivery: &Delivery,
        envelope: &Envelope,
        reason: &str,
    ) -> Result<Handled, RuntimeError> {
        match self
            .store
            .fail_dead_lettered(envelope, reason, ACTOR)
            .await?
        {
            Transition::Applied => metrics::counter!(m::JOBS_FAILED_TOTAL).increment(1),
            Transition::Stale => {
                if self
                    .store
                    .job_held_via(envelope.job_id, &delivery.id)
                    .await?
                {
                    return Ok(Handled::LeftPending);
                }
            }
        }
        self.dead_letter(delivery, reason).await
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
        let internal =
            |detail: String| StepOutcome::Terminal(Failure::new(FailureCode::Internal, detail));
        let Some(source_id) = job.source_id else {
            return Ok(internal("process_source job has no source".into()));
        };
        let source = self
            .patiently("reading the source record", || {
                self.store.source_record(source_id)
            })
            .await?;
        let Some(source) = source else {
            return Ok(internal(format!("source {source_id} not found")));
        };
        // With an object store this downloads (and verifies) the bytes; a store that does not
        // answer is retried like any transient failure, within the job's attempts.
        let blob_path = match self.blobs.local_path(&source.blob_key).await {
            Ok(p) => p,
            Err(err) if err.is_retryable() => {
                return Ok(StepOutcome::Retryable(format!("blob store: {err}")))
            }
            Err(err) => return Ok(internal(format!("blob {}: {err}", source.blob_key))),
        };
        let media_type = match source.media_type.parse() {
            Ok(t) => t,
            Err(err) => return Ok(internal(format!("{err}"))),
        };
        let pinned_workflow = match &self.workflows {
            None => None,
            Some(catalog) => {
                let resolved = self
                    .patiently("resolving the case's workflow", || {
                        pinned_workflow_of(
                            catalog,
                            job.case_id,
                            source.workflow.as_deref(),
                            source.workflow_id,
                        )
                    })
                    .await?;
                match resolved {
                    Ok(w) => w,
                    Err(message) => return Ok(internal(message)),
                }
            }
        };
        let templates = match &self.templates {
            None => None,
            Some(catalog) => {
                let resolved = self
                    .patiently("resolving the case's templates", || {
                        templates_of(catalog, job.case_id)
                    })
                    .await?;
                match resolved {
                    Ok(t) => t,
                    Err(message) => return Ok(internal(message)),
                }
            }
        };
        let input = SourceInput {
            source_id,
            case_id: job.case_id,
            media_type,
            sha256: source.sha256,
            pages: u32::try_from(source.pages).unwrap_or(0),
            blob_path,
            workflow: source.workflow,
            pinned_workflow,
            templates,
        };
        let processor = self.processor.clone();
        let task = tokio::spawn(async move { processor.process(input).await });
        let abort = task.abort_handle();
        // The step runs on its own task meanwhile: an abort here dies mid-read, a sleep makes
        // the job outlive the stream's idle threshold, an error is a failed read.
        if let Err(fault) = crate::strike(&self.faults, FaultPoint::WorkerMidRead).await {
            abort.abort();
            return Ok(StepOutcome::Retryable(fault.to_string()));
        }
        Ok(
            match tokio::time::timeout(self.config.job_timeout, task).await {
                Ok(Ok(Ok(processed))) => StepOutcome::Done(Box::new(processed)),
                Ok(Ok(Err(ProcessorError::Retryable(msg)))) => StepOutcome::Retryable(msg),
                Ok(Ok(Err(ProcessorError::Terminal(msg)))) => {
                    StepOutcome::Terminal(Failure::new(FailureCode::DocumentUnreadable, msg))
                }
                Ok(Err(join)) if join.is_panic() => StepOutcome::Terminal(Failure::new(
                    FailureCode::ProcessorCrashed,
                    format!("processor {} panicked", self.processor.name()),
                )),
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

    /// Commits the step's outcome, retrying while PostgreSQL is unreachable (the result stays
    /// in memory and the lease keeper keeps the claim). A result the database refuses for good
    /// fails the job with that cause instead of being read again on every redelivery.
    async fn commit(
        &self,
        job: &ClaimedJob,
        outcome: &StepOutcome,
    ) -> Result<Handled, RuntimeError> {
        let (committed, handled) = match outcome {
            StepOutcome::Done(processed) => {
                let result =
                    serde_json::json!({ "pages": processed.pages, "summary": processed.summary });
                let results = crate::results::source_results(processed);
                let finalize_attempts = self.config.retry.max_attempts;
                let stored = self
                    .patiently("committing the result", || {
                        self.store.complete_source_job_with(
                            job,
                            &result,
                            results.as_ref(),
                            finalize_attempts,
                        )
                    })
                    .await;
                match stored {
                    Ok((t, _)) => (t, Handled::Succeeded),
                    Err(StoreError::Rejected(err)) => {
                        let failure = Failure::new(
                            FailureCode::ResultRejected,
                            format!("the result could not be stored: {err}"),
                        );
                        (self.fail(job, &failure).await?, Handled::Failed)
                    }
                    Err(err) => return Err(err.into()),
                }
            }
            StepOutcome::Retryable(msg) => {
                let unit: f64 = rand::rng().random();
                match self.config.retry.after_failure(job.attempts(), unit) {
                    RetryVerdict::RetryAfter(delay) => {
                        tracing::info!(job_id = %job.id, attempt = job.attempt, ?delay, error = %msg, "retry scheduled");
                        let t = self
                            .patiently("scheduling the retry", || {
                                self.store.schedule_retry(job, msg, delay)
                            })
                            .await?;
                        if t == Transition::Applied {
                            metrics::counter!(m::RETRIES_SCHEDULED_TOTAL).increment(1);
                        }
                        (t, Handled::RetryScheduled)
                    }
                    RetryVerdict::GiveUp => {
                        let failure = Failure::new(
                            FailureCode::AttemptsExhausted,
                            format!(
                                "attempts exhausted ({}/{}): {msg}",
                                job.attempt, job.max_attempts
                            ),
                        );
                        (self.fail(job, &failure).await?, Handled::Failed)
                    }
                }
            }
            StepOutcome::Terminal(failure) => (self.fail(job, failure).await?, Handled::Failed),
        };
        self.settled(job, committed, handled).await
    }

    /// What a commit came to. `Stale` usually means another run holds the job; but when an
    /// earlier try of this very commit landed and only its answer was lost (the connection
    /// broke after COMMIT), the run's own record says so, and the outcome is ours after all.
    pub(super) async fn settled(
        &self,
        job: &ClaimedJob,
        committed: Transition,
        handled: Handled,
    ) -> Result<Handled, RuntimeError> {
        if committed == Transition::Applied {
            return Ok(handled);
        }
        let recorded = self
            .patiently("reading the run's record", || {
                self.store.run_outcome(job.lease_token)
            })
            .await?;
        Ok(match recorded.as_deref() {
            Some("SUCCEEDED") => Handled::Succeeded,
            // a reprocess cancelled the job: its result is ignored, the message is done
            Some("CANCELLED") => Handled::Duplicate,
            Some("RETRY_SCHEDULED") => Handled::RetryScheduled,
            Some("FAILED") => Handled::Failed,
            _ => Handled::LeaseLost,
        })
    }

    async fn fail(&self, job: &ClaimedJob, failure: &Failure) -> Result<Transition, RuntimeError> {
        tracing::warn!(job_id = %job.id, case_id = %job.case_id, code = %failure.code, reason = %failure.detail, "job failed");
        let t = self
            .patiently("recording the failure", || {
                self.store.fail_held_job(job, failure, ACTOR)
            })
            .await?;
        if t == Transition::Applied {
            metrics::counter!(m::JOBS_FAILED_TOTAL).increment(1);
        }
        Ok(t)
    }

    /// Runs a store call until it answers or fails for good: errors that may pass (PostgreSQL
    /// unreachable, a dropped connection, a serialization conflict, no answer within
    /// `store_call_timeout`) are retried with backoff for up to `outcome_patience`. Used
    /// while the worker holds a claim, whose lease keeper keeps it alive meanwhile.
    pub(super) async fn patiently<T, F, Fut>(
        &self,
        what: &str,
        mut call: F,
    ) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let started = Instant::now();
        let mut wait = RETRY_FIRST;
        let mut tries: u32 = 0;
        loop {
            tries += 1;
            let error = match tokio::time::timeout(self.config.store_call_timeout, call()).await {
                Ok(Ok(value)) => {
                    if tries > 1 {
                        tracing::info!(tries, waited = ?started.elapsed(), "{what}: succeeded after retrying");
                    }
                    return Ok(value);
                }
                Ok(Err(err)) if !err.is_transient() => return Err(err),
                Ok(Err(err)) => err,
                Err(_) => StoreError::TimedOut(self.config.store_call_timeout),
            };
            if started.elapsed() >= self.config.outcome_patience {
                tracing::warn!(tries, error = %error, "{what}: giving up; the message stays pending");
                return Err(error);
            }
            if tries == 1 || tries.is_multiple_of(10) {
                tracing::warn!(tries, error = %error, "{what} failed; retrying");
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(RETRY_MAX);
        }
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

    /// Consumes until `shutdown`, at most `worker_concurrency` jobs at once, reading only as
    /// many messages as it has free slots; then stops reading and gives in-flight jobs
    /// `shutdown_grace` to finish. Jobs still running after that keep their lease until it
    /// lapses, and the reconciler hands them to another worker.
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
            let free = permits.available_permits();
            if free == 0 {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = in_flight.join_next() => continue,
                }
            }
            let batch = if last_reclaim.elapsed() >= self.config.reclaim_every {
                last_reclaim = Instant::now();
                self.queue.reclaim_up_to(free).await
            } else {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    r = self.queue.read_new_up_to(free) => r,
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
                    if pause(&shutdown, crate::retry_backoff(failures)).await {
                        break;
                    }
                    continue;
                }
            };
            for delivery in deliveries {
                // Never waits: the batch was no bigger than the free slots, and only this
                // loop takes permits.
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
                "shutdown grace elapsed; unfinished jobs will be rescued when their lease lapses"
            );
        }
    }
}

/// The template set a case reads with, with store errors (retried by the caller) kept apart
/// from an unusable set (the job fails).
async fn templates_of(
    catalog: &crate::templates::TemplateCatalog,
    case: ironclad_core::CaseId,
) -> Result<Result<Option<ironclad_documents::workflows::LoadedTemplates>, String>, StoreError> {
    match catalog.for_case(case).await {
        Ok(t) => Ok(Ok(t)),
        Err(PinError::Store(e)) => Err(e),
        Err(PinError::Unusable(m)) => Ok(Err(m)),
    }
}

/// The catalog's answer for a case, with store errors (retried by the caller) kept apart from
/// an unusable workflow (the job fails).
async fn pinned_workflow_of(
    catalog: &WorkflowCatalog,
    case: ironclad_core::CaseId,
    requested: Option<&str>,
    pinned: Option<uuid::Uuid>,
) -> Result<Result<Option<ironclad_documents::workflows::LoadedWorkflow>, String>, StoreError> {
    match catalog.for_case(case, requested, pinned).await {
        Ok(w) => Ok(Ok(w)),
        Err(PinError::Store(e)) => Err(e),
        Err(PinError::Unusable(m)) => Ok(Err(m)),
    }
}
