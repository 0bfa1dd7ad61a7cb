//! One case, one workflow version (issue 7, defect 11).
//!
//! During a rolling restart two workers may hold different versions of a workflow; a case read
//! partly by each would mix them. Every case is pinned to one version (at intake, or by the
//! first source read) and every worker reads with the pinned version, loading it from the
//! database when it holds another. Real reading: the text layer of a generated bill of lading,
//! classified by the shipped trade workflow (v1) or by a v2 that renames the document type.

use ironclad_core::{CaseId, JobId, SourceId};
use ironclad_documents::workflows::{LoadedWorkflow, WorkflowSet};
use ironclad_extract::Workflow;
use ironclad_reading::{compiled_workflow, ExtractCompiler, ReaderPool, ReadingProcessor};
use ironclad_runtime::worker::Handled;
use ironclad_runtime::workflows::WorkflowCatalog;
use ironclad_store::intake::{IntakeOutcome, NewCase, NewSource};
use ironclad_testkit::harness::Pipeline;
use std::sync::Arc;
use uuid::Uuid;

const TRADE: &str = include_str!("../../../../workflows/trade.yaml");
const BILL_OF_LADING: &[u8] =
    include_bytes!("../../../../tests/fixtures/generated/set-01/bill-of-lading.pdf");

/// Commits a one-file case (the bill of lading), pinned to `workflow` when given.
async fn commit_case(p: &Pipeline, workflow: Option<Uuid>) -> anyhow::Result<CaseId> {
    let mut writer = p.blobs.writer().await?;
    writer.write(BILL_OF_LADING).await?;
    let blob = writer.finish().await?;
    let case_id = CaseId::new();
    let case = NewCase {
        tenant_id: p.tenant,
        case_id,
        external_reference: None,
        workflow: None,
        workflow_id: workflow,
        idempotency_key: None,
        fingerprint: case_id.to_string(),
        sources: vec![NewSource {
            source_id: SourceId::new(),
            job_id: JobId::new(),
            filename: "bill-of-lading.pdf".into(),
            sha256: blob.sha256,
            media_type: "application/pdf".into(),
            size_bytes: i64::try_from(blob.size)?,
            pages: 1,
            blob_key: blob.key,
        }],
        max_attempts: 3,
        actor: "test".into(),
        response: serde_json::json!({}),
    };
    anyhow::ensure!(p.store().commit_intake(&case).await? == IntakeOutcome::Created);
    Ok(case_id)
}

async fn doc_types(p: &Pipeline, case: CaseId) -> anyhow::Result<Vec<Option<String>>> {
    Ok(
        sqlx::query_scalar("SELECT doc_type FROM segments WHERE case_id = $1 ORDER BY ordinal")
            .bind(case.0)
            .fetch_all(p.store().pool())
            .await?,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_source_is_read_under_the_version_its_case_is_pinned_to() -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let (v1, _) = p.store().load_workflow("trade", TRADE).await?;
    let pinned_to_v1 = commit_case(&p, Some(v1.id)).await?;
    // A new version is loaded; this worker started with it.
    let v2_yaml = TRADE.replace("bill_of_lading", "bol_v2");
    let (v2, _) = p.store().load_workflow("trade", &v2_yaml).await?;
    let unpinned = commit_case(&p, None).await?;
    let v2_loaded = LoadedWorkflow {
        id: v2.id,
        workflow: Arc::new(compiled_workflow(
            Workflow::from_yaml(&v2_yaml).map_err(|e| anyhow::anyhow!("{e}"))?,
        )),
    };
    let set = WorkflowSet {
        by_name: [("trade".to_owned(), v2_loaded.clone())].into(),
        default: Some("trade".into()),
    };
    let processor = Arc::new(ReadingProcessor::new(
        ReaderPool::new(ironclad_ocr::ReadOptions::default(), None),
        set,
    ));
    let catalog = Arc::new(WorkflowCatalog::new(
        p.store().clone(),
        Arc::new(ExtractCompiler),
        Some("trade".into()),
        [v2_loaded],
    ));
    let worker = p.worker("w-v2", processor).await?.with_workflows(catalog);
    let dispatcher = p.dispatcher().await?;

    assert_eq!(dispatcher.tick().await?.published, 2);
    let mut handled = worker.poll_once().await?;
    while handled.len() < 2 {
        handled.extend(worker.poll_once().await?);
    }
    assert_eq!(handled, vec![Handled::Succeeded, Handled::Succeeded]);

    assert_eq!(
        doc_types(&p, pinned_to_v1).await?,
        vec![Some("bill_of_lading".to_owned())],
        "read under v1, the version the case is pinned to, though the worker holds v2"
    );
    assert_eq!(
        doc_types(&p, unpinned).await?,
        vec![Some("bol_v2".to_owned())]
    );
    let pins: Vec<(Uuid, Option<Uuid>)> =
        sqlx::query_as("SELECT id, workflow_id FROM cases ORDER BY created_at")
            .fetch_all(p.store().pool())
            .await?;
    assert_eq!(
        pins,
        vec![(pinned_to_v1.0, Some(v1.id)), (unpinned.0, Some(v2.id))],
        "the unpinned case is pinned by its first read, to the newest version"
    );
    p.finish().await;
    Ok(())
}
