//! Cases read for real, for the tests of what people do with them (corrections, four eyes,
//! claims): the files are submitted through `POST /v1/cases`, published by the dispatcher,
//! read by a worker running the built-in reader (text layer, or Tesseract for a scan) under
//! `workflows/trade.yaml` — its policy varied per test — and decided by its rules.

use crate::helpers::{Answer, TestApp};
use anyhow::Context;
use ironclad_core::CaseId;
use ironclad_documents::workflows::{LoadedWorkflow, WorkflowSet};
use ironclad_extract::Workflow;
use ironclad_queue::{Queue, StreamConfig};
use ironclad_reading::{compiled_workflow, ExtractCompiler, ReaderPool, ReadingProcessor};
use ironclad_runtime::workflows::WorkflowCatalog;
use ironclad_runtime::{Dispatcher, Worker};
use ironclad_testkit::harness::test_runtime_config;
use ironclad_testkit::redis_url;
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shipped trade workflow.
pub(crate) const TRADE: &str = include_str!("../../../../workflows/trade.yaml");

/// The repository's root, for fixtures.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Longest wait for a case to be read and decided (a scanned page takes seconds in a debug
/// build on a busy 2-core host).
const SETTLE: Duration = Duration::from_secs(240);

/// The trade workflow with `lines` added to its policy (`four_eyes: [OVERRIDE]`, …).
pub(crate) fn trade_with_policy(lines: &[&str]) -> String {
    let mut yaml = TRADE.trim_end().to_owned();
    assert!(
        yaml.ends_with("auto_approve_ready: false"),
        "the workflow's policy is no longer its last lines"
    );
    for line in lines {
        yaml.push_str("\n  ");
        yaml.push_str(line);
    }
    yaml.push('\n');
    yaml
}

/// A fixture file's bytes, by its path under `tests/fixtures/`.
pub(crate) fn fixture(path: &str) -> anyhow::Result<(String, Vec<u8>)> {
    let full = Path::new(ROOT).join("tests/fixtures").join(path);
    let bytes = std::fs::read(&full).with_context(|| format!("reading {}", full.display()))?;
    let name = full
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file")
        .to_owned();
    Ok((name, bytes))
}

/// Every file of a decision dossier (`tests/fixtures/decisions/<variant>/`).
pub(crate) fn dossier(variant: &str) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let dir = Path::new(ROOT)
        .join("tests/fixtures/decisions")
        .join(variant);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("{}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "pdf" || e == "png") {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("file")
                .to_owned();
            files.push((name, std::fs::read(&path)?));
        }
    }
    files.sort();
    Ok(files)
}

impl TestApp {
    /// Loads `workflow` (as `trade`), submits `files` as one case and reads and decides it as
    /// `ironclad all` would; the case's id once it awaits review.
    pub(crate) async fn read_case(
        &self,
        workflow: &str,
        files: &[(String, Vec<u8>)],
    ) -> anyhow::Result<CaseId> {
        let (version, _) = self.db.store.load_workflow("trade", workflow).await?;
        let form = files.iter().fold(
            Form::new().text("workflow", "trade"),
            |form, (name, bytes)| {
                form.part("file", Part::bytes(bytes.clone()).file_name(name.clone()))
            },
        );
        let answer = self.post_case(&self.key, form, None).await?;
        anyhow::ensure!(answer.status == StatusCode::CREATED, "{}", answer.text());
        let case: CaseId = answer.json()["case_id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .context("no case id")?;
        anyhow::ensure!(
            version.source_yaml == workflow,
            "another trade workflow was loaded"
        );
        self.read_pending(case).await?;
        Ok(case)
    }

    /// Reads what the case's current generation has left to read (a new case, a reprocess)
    /// with the newest `trade` workflow, and decides it; returns once it awaits review.
    pub(crate) async fn read_pending(&self, case: CaseId) -> anyhow::Result<()> {
        let version = self
            .db
            .store
            .latest_workflow("trade")
            .await?
            .context("no trade workflow loaded")?;
        let loaded = LoadedWorkflow {
            id: version.id,
            workflow: Arc::new(compiled_workflow(
                Workflow::from_yaml(&version.source_yaml).map_err(|e| anyhow::anyhow!("{e}"))?,
            )),
        };
        let processor = Arc::new(ReadingProcessor::new(
            ReaderPool::new(
                ironclad_ocr::ReadOptions {
                    threads: 1,
                    ..ironclad_ocr::ReadOptions::default()
                },
                None,
            ),
            WorkflowSet {
                by_name: [("trade".to_owned(), loaded.clone())].into(),
                default: Some("trade".into()),
            },
        ));
        let streams = self
            .state
            .queue
            .as_ref()
            .context("the test app has a queue")?
            .config()
            .clone();
        let queue = |consumer: &str| {
            let cfg = StreamConfig {
                consumer: consumer.to_owned(),
                block: Duration::from_millis(100),
                ..streams.clone()
            };
            async move {
                let q = Queue::connect(&redis_url(), cfg).await?;
                q.ensure_group().await?;
                anyhow::Ok(q)
            }
        };
        let config = test_runtime_config();
        let dispatcher = Dispatcher::new(
            self.db.store.clone(),
            queue("dispatcher").await?,
            config.clone(),
            self.faults.clone(),
        );
        let catalog = Arc::new(WorkflowCatalog::new(
            self.db.store.clone(),
            Arc::new(ExtractCompiler),
            Some("trade".into()),
            [loaded],
        ));
        let worker = Worker::new(
            self.db.store.clone(),
            queue("worker").await?,
            self.blobs.clone(),
            processor,
            config,
            self.faults.clone(),
        )
        .with_workflows(catalog);
        let started = Instant::now();
        loop {
            dispatcher.tick().await?;
            worker.poll_once().await?;
            let status: String = sqlx::query_scalar("SELECT status FROM cases WHERE id = $1")
                .bind(case.0)
                .fetch_one(self.db.store.pool())
                .await?;
            match status.as_str() {
                "AWAITING_REVIEW" | "RESOLVED" => return Ok(()),
                "FAILED" => anyhow::bail!("the case failed: {}", self.case_json(case).await?),
                _ if started.elapsed() > SETTLE => anyhow::bail!("the case is still {status}"),
                _ => {}
            }
        }
    }

    /// `GET /v1/cases/{id}` as the operator.
    pub(crate) async fn case_json(&self, case: CaseId) -> anyhow::Result<Value> {
        let answer = self
            .get(&format!("/v1/cases/{case}"), Some(&self.key))
            .await?;
        anyhow::ensure!(answer.status == StatusCode::OK, "{}", answer.text());
        Ok(answer.json())
    }

    /// `POST path` with a JSON body as `key`, with an optional `Idempotency-Key`.
    pub(crate) async fn post_as(
        &self,
        key: &str,
        path: &str,
        idempotency_key: Option<&str>,
        body: &Value,
    ) -> anyhow::Result<Answer> {
        let mut request = self.client.post(self.url(path)).bearer_auth(key).json(body);
        if let Some(k) = idempotency_key {
            request = request.header("Idempotency-Key", k);
        }
        Answer::read(request.send().await?).await
    }

    /// `DELETE path` as `key`.
    pub(crate) async fn delete_as(&self, key: &str, path: &str) -> anyhow::Result<Answer> {
        Answer::read(
            self.client
                .delete(self.url(path))
                .bearer_auth(key)
                .send()
                .await?,
        )
        .await
    }
}

/// The document of type `doc_type` in a case's JSON, and its fact `field`.
pub(crate) fn fact<'a>(case: &'a Value, doc_type: &str, field: &str) -> (&'a Value, &'a Value) {
    let segment = case["segments"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["doc_type"] == doc_type)
        .unwrap_or(&Value::Null);
    let fact = segment["facts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["field"] == field)
        .unwrap_or(&Value::Null);
    (segment, fact)
}

/// The result of rule `id` in a case's decision.
pub(crate) fn rule<'a>(case: &'a Value, id: &str) -> &'a Value {
    case["decision"]["rule_results"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["rule_id"] == id)
        .unwrap_or(&Value::Null)
}

/// The body of a correction of `field` of `segment`.
pub(crate) fn typed(
    segment: &Value,
    field: &str,
    value: &str,
    reason: &str,
    version: i64,
) -> Value {
    json!({"segment": segment["id"], "field": field, "value": value, "reason": reason,
           "expected_decision_version": version})
}
