//! An in-process pipeline for reliability tests: a fresh database, a per-test Redis prefix (or
//! a private Redis), a temp blob store, and the roles built from them — each stepped by hand.

use crate::TestDb;
use ironclad_blobs::BlobStore;
use ironclad_core::faults::Faults;
use ironclad_core::{CaseId, JobId, RetryPolicy, SourceId, TenantId};
use ironclad_documents::processor::{DocumentProcessor, StandInProcessor};
use ironclad_inspect::InspectLimits;
use ironclad_queue::{Queue, StreamConfig};
use ironclad_runtime::{Dispatcher, Reconciler, RuntimeConfig, Worker};
use ironclad_store::intake::{IntakeOutcome, NewCase, NewSource};
use ironclad_store::Store;
use std::sync::Arc;
use std::time::Duration;

/// Timings short enough for tests, long enough not to flake on a busy 2-core machine.
pub fn test_runtime_config() -> RuntimeConfig {
    RuntimeConfig {
        lease: Duration::from_secs(3),
        lease_renew_every: Duration::from_secs(1),
        worker_concurrency: 4,
        job_timeout: Duration::from_secs(30),
        shutdown_grace: Duration::from_secs(5),
        retry: RetryPolicy {
            delays: vec![Duration::from_millis(200), Duration::from_millis(400)],
            max_attempts: 3,
            jitter: 0.0,
        },
        reclaim_every: Duration::from_millis(500),
        dispatch_batch: 100,
        dispatch_idle: Duration::from_millis(20),
        outbox_lock_timeout: Duration::from_secs(2),
        outbox_max_attempts: 5,
        outbox_backoff_base: Duration::from_millis(100),
        outbox_backoff_max: Duration::from_millis(500),
        outbox_retention: Duration::from_secs(7 * 24 * 3600),
        reconcile_every: Duration::from_millis(500),
        reemit_after: Duration::from_secs(2),
        blob_grace: Duration::from_secs(3600),
        blob_sweep_every: Duration::from_secs(3600),
        outcome_patience: Duration::from_secs(60),
        store_call_timeout: Duration::from_secs(10),
    }
}

/// Commits a case of `files` distinct one-page PDFs whose bytes are really in `blobs`, as
/// intake would (one statement: case, sources, jobs, outbox, audit). `label` marks the actor
/// and the PDFs' text.
pub async fn commit_fixture_case(
    store: &Store,
    blobs: &BlobStore,
    tenant: TenantId,
    files: usize,
    max_attempts: i32,
    label: &str,
) -> anyhow::Result<CaseId> {
    let case_id = CaseId::new();
    let mut sources = Vec::with_capacity(files);
    for i in 0..files {
        let bytes = ironclad_inspect::fixtures::pdf_with_pages(
            1,
            &format!("{label} case {case_id} file {i}"),
        );
        let mut w = blobs.writer().await?;
        w.write(&bytes).await?;
        let stored = w.finish().await?;
        sources.push(NewSource {
            source_id: SourceId::new(),
            job_id: JobId::new(),
            filename: format!("doc-{i}.pdf"),
            sha256: stored.sha256,
            media_type: "application/pdf".into(),
            size_bytes: i64::try_from(stored.size)?,
            pages: 1,
            blob_key: stored.key,
        });
    }
    let case = NewCase {
        tenant_id: tenant,
        case_id,
        external_reference: Some(format!("{label}-case")),
        workflow: None,
        workflow_id: None,
        idempotency_key: None,
        fingerprint: case_id.to_string(),
        sources,
        max_attempts,
        actor: label.to_owned(),
        response: serde_json::json!({ "case_id": case_id }),
    };
    anyhow::ensure!(
        store.commit_intake(&case).await? == IntakeOutcome::Created,
        "intake refused"
    );
    Ok(case_id)
}

/// Everything a reliability test needs, isolated from other tests.
pub struct Pipeline {
    /// The test's own database.
    pub db: TestDb,
    /// Redis URL (shared or private).
    pub redis_url: String,
    /// Stream names, prefixed per test.
    pub streams: StreamConfig,
    /// Blob store in a temp dir.
    pub blobs: BlobStore,
    /// Shared fault switchboard of every component built here.
    pub faults: Faults,
    /// Role timings (see [`test_runtime_config`]).
    pub config: RuntimeConfig,
    /// A tenant owning the cases the test submits.
    pub tenant: TenantId,
    _blob_dir: tempfile::TempDir,
}

impl Pipeline {
    /// A pipeline on the shared Redis (`REDIS_URL`) with a unique prefix.
    pub async fn start() -> anyhow::Result<Self> {
        Self::on_redis(&crate::redis_url()).await
    }

    /// A pipeline on the given Redis (e.g. a [`crate::private::PrivateRedis`]).
    pub async fn on_redis(redis_url: &str) -> anyhow::Result<Self> {
        Self::with_db(TestDb::new().await?, redis_url).await
    }

    /// A pipeline on a given database (e.g. one on a [`crate::private::PrivatePostgres`] that
    /// the test stops and starts) and Redis.
    pub async fn with_db(db: TestDb, redis_url: &str) -> anyhow::Result<Self> {
        let tenant = db.store.create_tenant("test-tenant").await?;
        let blob_dir = tempfile::tempdir()?;
        let streams = StreamConfig {
            claim_idle: Duration::from_secs(2),
            block: Duration::from_millis(200),
            max_deliveries: 5,
            ..StreamConfig::with_prefix(&crate::redis_prefix())
        };
        Ok(Self {
            db,
            redis_url: redis_url.to_owned(),
            streams,
            blobs: BlobStore::open(blob_dir.path())?,
            faults: Faults::none(),
            config: test_runtime_config(),
            tenant,
            _blob_dir: blob_dir,
        })
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.db.store
    }

    /// A queue handle acting as consumer `consumer`.
    pub async fn queue(&self, consumer: &str) -> anyhow::Result<Queue> {
        let cfg = StreamConfig {
            consumer: consumer.to_owned(),
            ..self.streams.clone()
        };
        let q = Queue::connect(&self.redis_url, cfg).await?;
        q.ensure_group().await?;
        Ok(q)
    }

    /// A dispatcher.
    pub async fn dispatcher(&self) -> anyhow::Result<Dispatcher> {
        Ok(Dispatcher::new(
            self.store().clone(),
            self.queue("dispatcher").await?,
            self.config.clone(),
            self.faults.clone(),
        ))
    }

    /// A worker named `consumer` running `processor`.
    pub async fn worker(
        &self,
        consumer: &str,
        processor: Arc<dyn DocumentProcessor>,
    ) -> anyhow::Result<Worker> {
        Ok(Worker::new(
            self.store().clone(),
            self.queue(consumer).await?,
            self.blobs.clone(),
            processor,
            self.config.clone(),
            self.faults.clone(),
        ))
    }

    /// A worker with the stand-in processor.
    pub async fn standin_worker(&self, consumer: &str) -> anyhow::Result<Worker> {
        self.worker(
            consumer,
            Arc::new(StandInProcessor::new(InspectLimits::default())),
        )
        .await
    }

    /// A reconciler.
    pub async fn reconciler(&self) -> anyhow::Result<Reconciler> {
        Ok(Reconciler::new(
            self.store().clone(),
            self.queue("reconciler").await?,
            self.blobs.clone(),
            self.config.clone(),
            self.faults.clone(),
        ))
    }

    /// Commits a case of `files` distinct small PDFs whose bytes are really in the blob store,
    /// as intake would.
    pub async fn submit_case(&self, files: usize) -> anyhow::Result<CaseId> {
        commit_fixture_case(
            self.store(),
            &self.blobs,
            self.tenant,
            files,
            self.config.retry.max_attempts,
            "test",
        )
        .await
    }

    /// `SELECT count(*) …` with the case id as `$1`.
    pub async fn count_for(&self, sql: &'static str, case: CaseId) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(sql)
            .bind(case.0)
            .fetch_one(self.store().pool())
            .await?)
    }

    /// `SELECT count(*) …` with no parameter.
    pub async fn count(&self, sql: &'static str) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(sql)
            .fetch_one(self.store().pool())
            .await?)
    }

    /// The case's status.
    pub async fn case_status(&self, case: CaseId) -> anyhow::Result<String> {
        Ok(sqlx::query_scalar("SELECT status FROM cases WHERE id = $1")
            .bind(case.0)
            .fetch_one(self.store().pool())
            .await?)
    }

    /// Checks the accountability invariants over every case: each settled case has exactly one
    /// decision per generation if decided, and exactly one DECISION_GENERATED event per decision;
    /// no job has more than one success. Returns the number of decided cases.
    pub async fn assert_effects_once(&self) -> anyhow::Result<i64> {
        let dup_decisions = self
            .count("SELECT count(*) FROM (SELECT case_id, generation FROM decisions GROUP BY 1, 2 HAVING count(*) > 1) d")
            .await?;
        anyhow::ensure!(
            dup_decisions == 0,
            "{dup_decisions} case generation(s) with more than one decision"
        );
        let dup_events = self
            .count("SELECT count(*) FROM (SELECT case_id FROM audit_events WHERE event_type = 'DECISION_GENERATED' GROUP BY 1 HAVING count(*) > 1) d")
            .await?;
        anyhow::ensure!(
            dup_events == 0,
            "{dup_events} case(s) with more than one DECISION_GENERATED event"
        );
        let undecided_awaiting = self
            .count("SELECT count(*) FROM cases c WHERE c.status = 'AWAITING_REVIEW' AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.case_id = c.id)")
            .await?;
        anyhow::ensure!(
            undecided_awaiting == 0,
            "{undecided_awaiting} case(s) awaiting review without a decision"
        );
        let finalize_dups = self
            .count("SELECT count(*) FROM (SELECT case_id, generation FROM jobs WHERE kind = 'finalize_case' GROUP BY 1, 2 HAVING count(*) > 1) d")
            .await?;
        anyhow::ensure!(finalize_dups == 0, "duplicate finalize jobs");
        self.count("SELECT count(*) FROM decisions").await
    }

    /// Drops the test database.
    pub async fn finish(self) {
        self.db.drop_database().await;
    }
}

/// The rules of a case without a workflow: none (the decision then asks for review). For
/// store tests that finalize directly.
pub fn no_rules() -> ironclad_store::decisions::RulesApplied<'static> {
    static EMPTY: std::sync::OnceLock<ironclad_core::rules::CompiledRuleset> =
        std::sync::OnceLock::new();
    ironclad_store::decisions::RulesApplied {
        ruleset: EMPTY.get_or_init(ironclad_documents::rules::no_rules),
        source: ironclad_store::decisions::RulesSource::Workflow,
        ruleset_id: None,
        ruleset_version: None,
    }
}
