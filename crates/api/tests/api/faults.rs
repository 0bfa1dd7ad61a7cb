//! Invariant 1, broken on purpose: a failure injected after every blob is durable but before
//! the commit answers a generic 500 and leaves no case — and, since the request knows which
//! blobs it created, not its blob either. What a process that dies mid-intake leaves behind is
//! the sweep's: it collects the orphan and keeps a blob that a committed source references.

use crate::helpers::{blob_key, Rows, TestApp};
use ironclad_core::faults::FaultPoint;
use ironclad_inspect::fixtures;
use reqwest::StatusCode;
use std::time::Duration;

#[tokio::test]
async fn a_failure_after_the_blob_writes_leaves_no_case_and_no_blob() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let kept = fixtures::pdf_with_pages(1, "committed earlier");
    let first = app.submit(&[("kept.pdf", &kept)]).await?;
    assert_eq!(first.status, StatusCode::CREATED);
    let rows_before = app.rows().await?;

    app.faults.arm_error(FaultPoint::IntakeAfterBlobWrite);
    let orphan = fixtures::pdf_with_pages(2, "never committed");
    let failed = app
        .submit(&[("orphan.pdf", &orphan), ("kept.pdf", &kept)])
        .await?;
    assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(failed.code(), "internal");
    assert_eq!(failed.json()["error"]["message"], "internal error");
    assert!(
        !failed.text().contains("fault"),
        "no internal text leaks: {}",
        failed.text()
    );
    app.faults.disarm(FaultPoint::IntakeAfterBlobWrite);
    assert_eq!(
        app.rows().await?,
        rows_before,
        "no row of the failed intake exists"
    );
    assert_ne!(rows_before, Rows::default());
    assert_eq!(
        app.blob_keys()?,
        vec![blob_key(&kept)],
        "the failed intake's own blob is deleted at once; the shared one stays"
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn what_a_dead_intake_leaves_is_collected_by_the_sweep() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let kept = fixtures::pdf_with_pages(1, "committed earlier");
    let first = app.submit(&[("kept.pdf", &kept)]).await?;
    assert_eq!(first.status, StatusCode::CREATED);

    // A process that died between its blob write and its commit: the blob is durable, no row
    // names it, and no request is left to delete it.
    let orphan = fixtures::pdf_with_pages(2, "never committed");
    let mut writer = app.blobs.writer().await?;
    writer.write(&orphan).await?;
    let stored = writer.finish().await?;
    assert_eq!(stored.key, blob_key(&orphan));

    let store = app.db.store.clone();
    let report = app
        .blobs
        .sweep(Duration::ZERO, |keys| {
            let store = store.clone();
            async move { store.referenced_blobs(keys).await }
        })
        .await?;
    assert_eq!(report.deleted, 1, "{report:?}");
    assert_eq!(
        app.blob_keys()?,
        vec![blob_key(&kept)],
        "a referenced blob stays"
    );
    app.stop().await;
    Ok(())
}
