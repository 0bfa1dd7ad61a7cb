//! A request that does not commit deletes the blobs it created at once — before it answers,
//! or right after it is dropped — instead of leaving them for the hourly sweep. Blobs it only
//! shared with a committed case stay.

use crate::helpers::{blob_key, form, Rows, TestApp};
use ironclad_api::ApiConfig;
use ironclad_inspect::fixtures;
use ironclad_testkit::wait_for;
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use std::time::Duration;

#[tokio::test]
async fn a_refused_last_part_deletes_the_requests_own_blobs_at_once() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let shared = fixtures::pdf_with_pages(1, "committed earlier");
    let first = app.submit(&[("shared.pdf", &shared)]).await?;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let rows = app.rows().await?;

    let new_a = fixtures::pdf_with_pages(2, "only in the failed request");
    let new_b = fixtures::png(16, 16);
    let answer = app
        .submit(&[
            ("a.pdf", &new_a),
            ("b.png", &new_b),
            ("shared.pdf", &shared),
            ("page.jpg", &fixtures::html_as_jpeg()),
        ])
        .await?;
    assert_eq!(
        answer.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "{}",
        answer.text()
    );
    assert_eq!(answer.json()["error"]["details"]["filename"], "page.jpg");
    // At once: the answer came after the deletion, no sweep ran.
    assert_eq!(
        app.blob_keys()?,
        vec![blob_key(&shared)],
        "the failed request's own blobs are gone, the committed case's blob stays"
    );
    assert_eq!(app.temp_files()?, 0);
    assert_eq!(app.rows().await?, rows);
    let stored = app.blobs.read(&blob_key(&shared)).await?;
    assert_eq!(stored, shared);
    app.stop().await;
    Ok(())
}

/// Failures after every file is durable: an unknown workflow, an idempotency conflict. A
/// replay creates nothing and deletes nothing of the original's.
#[tokio::test]
async fn requests_that_commit_nothing_delete_only_their_own_blobs() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let lonely = fixtures::pdf_with_pages(1, "for a workflow nobody loaded");
    let unknown = app
        .post_case(
            &app.key,
            form(&[("a.pdf", &lonely)]).text("workflow", "nope"),
            None,
        )
        .await?;
    assert_eq!(unknown.code(), "unknown_workflow", "{}", unknown.text());
    assert_eq!(app.blob_keys()?, Vec::<String>::new());

    let original = fixtures::pdf_with_pages(1, "original");
    let extra = fixtures::pdf_with_pages(1, "extra");
    let first = app
        .post_case(&app.key, form(&[("o.pdf", &original)]), Some("K-1"))
        .await?;
    assert_eq!(first.status, StatusCode::CREATED);
    let conflict = app
        .post_case(
            &app.key,
            form(&[("o.pdf", &original), ("e.pdf", &extra)]),
            Some("K-1"),
        )
        .await?;
    assert_eq!(conflict.status, StatusCode::CONFLICT, "{}", conflict.text());
    assert_eq!(
        app.blob_keys()?,
        vec![blob_key(&original)],
        "the conflicting request's own blob is gone, the original's stays"
    );
    let replay = app
        .post_case(&app.key, form(&[("o.pdf", &original)]), Some("K-1"))
        .await?;
    assert_eq!(
        replay.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    assert_eq!(app.blob_keys()?, vec![blob_key(&original)]);
    assert_eq!(app.blobs.read(&blob_key(&original)).await?, original);
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 1);
    app.stop().await;
    Ok(())
}

/// A request cut by the deadline after its first file was durable leaves no case, no temp
/// file, and — once its background cleanup ran — not that file's blob either.
#[tokio::test]
async fn a_request_cut_by_the_deadline_leaves_no_blob_temp_file_or_case() -> anyhow::Result<()> {
    use futures::StreamExt;
    let app = TestApp::spawn_with(ApiConfig {
        request_timeout: Duration::from_secs(3),
        ..ApiConfig::default()
    })
    .await?;
    let done = fixtures::pdf_with_pages(1, "durable before the deadline");
    let slow = fixtures::pdf_with_pages(1, "never finished");
    let (head, tail) = slow.split_at(slow.len() / 2);
    let chunks = vec![head.to_vec(), tail.to_vec()];
    let stream = futures::stream::iter(chunks)
        .enumerate()
        .then(|(i, chunk)| async move {
            if i == 1 {
                tokio::time::sleep(Duration::from_secs(6)).await;
            }
            Ok::<_, std::io::Error>(chunk)
        });
    let body = form(&[("done.pdf", &done)]).part(
        "file",
        Part::stream(reqwest::Body::wrap_stream(stream)).file_name("slow.pdf"),
    );
    let request = app
        .client
        .post(app.url("/v1/cases"))
        .bearer_auth(&app.key)
        .multipart(body);
    let answer = tokio::spawn(async move { anyhow::Ok(request.send().await?.status()) });

    // The first file is durable while the second still uploads.
    wait_for("the first blob", Duration::from_millis(2500), || async {
        Ok(app.blob_keys()?.contains(&blob_key(&done)).then_some(()))
    })
    .await?;
    assert_eq!(answer.await??, StatusCode::SERVICE_UNAVAILABLE);
    wait_for(
        "the abandoned blob to go",
        Duration::from_secs(5),
        || async { Ok(app.blob_keys()?.is_empty().then_some(())) },
    )
    .await?;
    assert_eq!(app.temp_files()?, 0);
    assert_eq!(app.rows().await?, Rows::default());
    app.stop().await;
    Ok(())
}

/// Text parts after the files count too: a bad one refuses the request and its blobs go.
#[tokio::test]
async fn a_bad_text_field_after_the_files_deletes_them() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let pdf = fixtures::pdf_with_pages(1, "before a bad field");
    let body: Form = form(&[("a.pdf", &pdf)]).text("external_reference", "bad\u{7}ref");
    let answer = app.post_case(&app.key, body, None).await?;
    assert_eq!(answer.code(), "invalid_field", "{}", answer.text());
    assert_eq!(app.blob_keys()?, Vec::<String>::new());
    app.stop().await;
    Ok(())
}
