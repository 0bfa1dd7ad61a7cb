//! Invariant 1, broken on purpose: a failure injected after every blob is durable but before
//! the commit answers a generic 500 and leaves no case. The blob it wrote is not deleted
//! inline (it is content-addressed and could be shared); the sweep collects it, and keeps a
//! blob that a committed source references.

use crate::helpers::{sha256_hex, Rows, TestApp};
use ironclad_core::faults::FaultPoint;
use ironclad_documents::fixtures;
use reqwest::StatusCode;
use std::time::Duration;

#[tokio::test]
async fn a_failure_after_the_blob_writes_leaves_an_orphan_the_sweep_collects() -> anyhow::Result<()>
{
    let app = TestApp::spawn().await?;
    let kept = fixtures::pdf_with_pages(1, "committed earlier");
    let first = app.submit(&[("kept.pdf", &kept)]).await?;
    assert_eq!(first.status, StatusCode::CREATED);
    let rows_before = app.rows().await?;

    app.faults.arm_error(FaultPoint::IntakeAfterBlobWrite);
    let orphan = fixtures::pdf_with_pages(2, "never committed");
    let failed = app.submit(&[("orphan.pdf", &orphan)]).await?;
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

    let key_of = |bytes: &[u8]| {
        let hex = sha256_hex(bytes);
        format!("sha256/{}/{}/{hex}", &hex[0..2], &hex[2..4])
    };
    let orphan_path = app.blobs.path_of(&key_of(&orphan))?;
    let kept_path = app.blobs.path_of(&key_of(&kept))?;
    assert!(
        orphan_path.exists(),
        "the failed intake's bytes were durable before the commit"
    );

    let store = app.db.store.clone();
    let report = app
        .blobs
        .sweep(Duration::ZERO, |keys| {
            let store = store.clone();
            async move { store.referenced_blobs(keys).await }
        })
        .await?;
    assert_eq!(report.deleted, 1, "{report:?}");
    assert!(!orphan_path.exists(), "the orphan is swept");
    assert!(kept_path.exists(), "a referenced blob stays");
    app.stop().await;
    Ok(())
}
