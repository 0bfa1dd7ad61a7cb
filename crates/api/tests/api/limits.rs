//! Intake limits: each is enforced while the body streams in, answered with a JSON 413 that
//! names what broke it, and leaves no case, job or outbox row (invariant 1) and no temp file.

use crate::helpers::{Rows, TestApp};
use ironclad_api::{ApiConfig, IntakeLimits};
use ironclad_inspect::fixtures;
use reqwest::StatusCode;

fn config(limits: IntakeLimits) -> ApiConfig {
    ApiConfig {
        limits,
        ..ApiConfig::default()
    }
}

#[tokio::test]
async fn a_file_over_the_byte_limit_is_refused_by_name() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(config(IntakeLimits {
        max_file_bytes: 10 * 1024,
        ..IntakeLimits::default()
    }))
    .await?;
    let small = fixtures::pdf_with_pages(1, "fits");
    let big = fixtures::png(200, 200); // ≈ 40 KB: stored (uncompressed) deflate
    assert!(big.len() > 10 * 1024);
    let answer = app
        .submit(&[("small.pdf", &small), ("big.png", &big)])
        .await?;
    assert_eq!(
        answer.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        answer.text()
    );
    assert_eq!(answer.code(), "file_too_large");
    assert_eq!(answer.json()["error"]["details"]["filename"], "big.png");
    assert_eq!(answer.json()["error"]["details"]["max_bytes"], 10 * 1024);
    assert_eq!(app.rows().await?, Rows::default());
    assert_eq!(
        app.temp_files()?,
        0,
        "the refused upload's temp file is removed"
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn one_file_too_many_is_refused() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(config(IntakeLimits {
        max_files: 2,
        ..IntakeLimits::default()
    }))
    .await?;
    let files: Vec<Vec<u8>> = (1..=3)
        .map(|i| fixtures::pdf_with_pages(1, &format!("doc {i}")))
        .collect();
    let answer = app
        .submit(&[
            ("1.pdf", &files[0]),
            ("2.pdf", &files[1]),
            ("3.pdf", &files[2]),
        ])
        .await?;
    assert_eq!(
        answer.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        answer.text()
    );
    assert_eq!(answer.code(), "too_many_files");
    assert_eq!(answer.json()["error"]["details"]["max_files"], 2);
    assert_eq!(app.rows().await?, Rows::default());

    let two = app
        .submit(&[("1.pdf", &files[0]), ("2.pdf", &files[1])])
        .await?;
    assert_eq!(two.status, StatusCode::CREATED);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn pages_are_counted_per_file_and_across_files() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(config(IntakeLimits {
        max_total_pages: 3,
        ..IntakeLimits::default()
    }))
    .await?;
    let five = fixtures::pdf_with_pages(5, "long");
    let answer = app.submit(&[("five.pdf", &five)]).await?;
    assert_eq!(
        answer.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        answer.text()
    );
    assert_eq!(answer.code(), "too_many_pages");
    assert_eq!(answer.json()["error"]["details"]["filename"], "five.pdf");

    let two_a = fixtures::pdf_with_pages(2, "a");
    let two_b = fixtures::pdf_with_pages(2, "b");
    let across = app.submit(&[("a.pdf", &two_a), ("b.pdf", &two_b)]).await?;
    assert_eq!(across.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(across.code(), "too_many_pages");
    assert_eq!(across.json()["error"]["details"]["filename"], "b.pdf");
    assert_eq!(across.json()["error"]["details"]["pages"], 4);
    assert_eq!(app.rows().await?, Rows::default());
    app.stop().await;
    Ok(())
}

/// The body limit (all files at their maximum plus 1 MiB) is axum's; what it answers must
/// still be our JSON. Framing is the one thing the streaming checks do not see, so a
/// multi-megabyte preamble before the first boundary is what trips it.
#[tokio::test]
async fn an_oversize_body_gets_a_json_413() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(config(IntakeLimits {
        max_files: 1,
        max_file_bytes: 1024,
        ..IntakeLimits::default()
    }))
    .await?;
    let mut body = vec![b'x'; 3 * 1024 * 1024];
    body.extend_from_slice(
        b"\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\n\r\n%PDF-\r\n--XyZ--\r\n",
    );
    let response = app
        .client
        .post(app.url("/v1/cases"))
        .bearer_auth(&app.key)
        .header("Content-Type", "multipart/form-data; boundary=XyZ")
        .body(body)
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let json: serde_json::Value = response.json().await?;
    assert_eq!(json["error"]["code"], "payload_too_large");
    assert_eq!(app.rows().await?, Rows::default());
    app.stop().await;
    Ok(())
}

/// With the default limits, a 26 MiB file is refused as soon as its 25 MiB-and-first-byte
/// arrives; the client still receives the JSON answer.
#[tokio::test]
async fn a_file_over_the_default_limit_is_refused_while_streaming() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let mut big = fixtures::pdf_with_pages(1, "padded");
    big.resize(26 * 1024 * 1024, b' ');
    let answer = app.submit(&[("huge.pdf", &big)]).await?;
    assert_eq!(
        answer.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        answer.text()
    );
    assert_eq!(answer.code(), "file_too_large");
    assert_eq!(answer.json()["error"]["details"]["filename"], "huge.pdf");
    assert_eq!(app.rows().await?, Rows::default());
    assert_eq!(app.temp_files()?, 0);
    app.stop().await;
    Ok(())
}
