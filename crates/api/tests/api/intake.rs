//! Invariant 1 (atomic intake): a 201 means case, sources, jobs, outbox rows, submission and
//! the CASE_INGESTED audit event are all committed, and the bytes are durable in the blob
//! store under their sha256. Plus the request-shape checks that refuse before anything is
//! written.

use crate::helpers::{form, sha256_hex, Rows, TestApp};
use ironclad_inspect::fixtures;
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;

#[tokio::test]
async fn a_pdf_and_a_png_commit_everything_in_one_go() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    app.db
        .store
        .load_workflow("customs.import-v1", "name: customs.import-v1")
        .await?;
    let pdf = fixtures::pdf_with_pages(2, "Bill of lading");
    let png = fixtures::png(32, 24);
    let body = form(&[("bl.pdf", &pdf), ("scan.png", &png)])
        .text("external_reference", "REF-001")
        .text("workflow", "customs.import-v1");
    let answer = app.post_case(&app.key, body, None).await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());

    let json = answer.json();
    let case_id = json["case_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(json["status"], "INGESTED");
    assert_eq!(json["external_reference"], "REF-001");
    assert_eq!(json["workflow"], "customs.import-v1");
    assert_eq!(
        answer.header("location"),
        Some(format!("/v1/cases/{case_id}"))
    );
    let sources = json["sources"].as_array().cloned().unwrap_or_default();
    assert_eq!(sources.len(), 2);
    assert_eq!(sources[0]["filename"], "bl.pdf");
    assert_eq!(sources[0]["media_type"], "application/pdf");
    assert_eq!(sources[0]["pages"], 2);
    assert_eq!(sources[0]["size_bytes"], pdf.len());
    assert_eq!(sources[0]["sha256"], sha256_hex(&pdf));
    assert_eq!(sources[1]["filename"], "scan.png");
    assert_eq!(sources[1]["media_type"], "image/png");
    assert_eq!(sources[1]["pages"], 1);
    assert_eq!(sources[1]["sha256"], sha256_hex(&png));

    assert_eq!(
        app.rows().await?,
        Rows {
            cases: 1,
            sources: 2,
            jobs: 2,
            outbox: 2,
            audit: 1,
            submissions: 1
        }
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE event_type = 'CASE_INGESTED'")
            .await?,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE status = 'PENDING' AND kind = 'process_source'")
            .await?,
        2
    );
    assert_eq!(
        app.count("SELECT count(*) FROM outbox WHERE status = 'PENDING'")
            .await?,
        2
    );

    // Response ids are the committed ids.
    let job_ids: Vec<String> = sqlx::query_scalar("SELECT id::text FROM jobs ORDER BY id")
        .fetch_all(app.db.store.pool())
        .await?;
    let mut answered: Vec<String> = sources
        .iter()
        .filter_map(|s| s["job_id"].as_str().map(str::to_owned))
        .collect();
    answered.sort();
    assert_eq!(job_ids, answered);

    // The bytes are durable under their content address.
    let keys: Vec<(String, String)> = sqlx::query_as("SELECT blob_key, sha256 FROM sources")
        .fetch_all(app.db.store.pool())
        .await?;
    for (key, sha) in keys {
        let stored = app.blobs.read(&key).await?;
        assert_eq!(sha256_hex(&stored), sha);
    }
    assert_eq!(app.temp_files()?, 0);

    // And the case reads back.
    let detail = app
        .get(&format!("/v1/cases/{case_id}"), Some(&app.key))
        .await?;
    assert_eq!(detail.status, StatusCode::OK);
    assert_eq!(detail.json()["id"], case_id.as_str());
    assert_eq!(detail.json()["sources"].as_array().map(Vec::len), Some(2));
    assert_eq!(detail.json()["audit"][0]["event_type"], "CASE_INGESTED");
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn files_without_a_name_are_numbered_and_types_come_from_bytes() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let tiff = fixtures::tiff_pages(3);
    let jpeg = fixtures::jpeg_minimal();
    // The TIFF arrives under a misleading name and the JPEG under none.
    let answer = app.submit(&[("scan.pdf", &tiff), ("", &jpeg)]).await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let json = answer.json();
    assert_eq!(json["sources"][0]["media_type"], "image/tiff");
    assert_eq!(json["sources"][0]["pages"], 3);
    assert_eq!(json["sources"][1]["filename"], "file-2");
    assert_eq!(json["sources"][1]["media_type"], "image/jpeg");
    assert_eq!(json["external_reference"], serde_json::Value::Null);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn malformed_requests_are_refused_before_anything_is_committed() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let pdf = fixtures::pdf_with_pages(1, "x");

    let no_files = app
        .post_case(&app.key, Form::new().text("external_reference", "R"), None)
        .await?;
    assert_eq!(
        (no_files.status, no_files.code().as_str()),
        (StatusCode::BAD_REQUEST, "no_files")
    );

    let unknown = app
        .post_case(
            &app.key,
            form(&[("a.pdf", &pdf)]).text("tenant_id", "x"),
            None,
        )
        .await?;
    assert_eq!(
        (unknown.status, unknown.code().as_str()),
        (StatusCode::BAD_REQUEST, "unknown_field")
    );
    assert_eq!(unknown.json()["error"]["details"]["field"], "tenant_id");

    let bad_workflow = app
        .post_case(
            &app.key,
            form(&[("a.pdf", &pdf)]).text("workflow", "a b/c"),
            None,
        )
        .await?;
    assert_eq!(
        (bad_workflow.status, bad_workflow.code().as_str()),
        (StatusCode::BAD_REQUEST, "invalid_field")
    );

    let long_ref = "r".repeat(201);
    let too_long = app
        .post_case(
            &app.key,
            form(&[("a.pdf", &pdf)]).text("external_reference", long_ref),
            None,
        )
        .await?;
    assert_eq!(
        (too_long.status, too_long.code().as_str()),
        (StatusCode::BAD_REQUEST, "invalid_field")
    );

    let twice = app
        .post_case(
            &app.key,
            form(&[("a.pdf", &pdf)])
                .text("workflow", "a")
                .text("workflow", "b"),
            None,
        )
        .await?;
    assert_eq!(
        (twice.status, twice.code().as_str()),
        (StatusCode::BAD_REQUEST, "duplicate_field")
    );

    let bad_key = app
        .post_case(&app.key, form(&[("a.pdf", &pdf)]), Some("has space"))
        .await?;
    assert_eq!(
        (bad_key.status, bad_key.code().as_str()),
        (StatusCode::BAD_REQUEST, "invalid_idempotency_key")
    );

    let not_multipart = app
        .client
        .post(app.url("/v1/cases"))
        .bearer_auth(&app.key)
        .json(&serde_json::json!({"file": "x"}))
        .send()
        .await?;
    assert_eq!(not_multipart.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // A part that is not a file but is named like one still counts as a file.
    let textual_file = app
        .post_case(
            &app.key,
            Form::new().part("file", Part::text("hello")),
            None,
        )
        .await?;
    assert_eq!(textual_file.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    assert_eq!(app.rows().await?, Rows::default());
    app.stop().await;
    Ok(())
}

/// A workflow nobody loaded is refused at intake (422, nothing committed), not left to fail
/// the case in a worker.
#[tokio::test]
async fn an_unknown_workflow_is_refused_and_nothing_is_committed() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let pdf = fixtures::pdf_with_pages(1, "Invoice");
    let answer = app
        .post_case(
            &app.key,
            form(&[("a.pdf", &pdf)]).text("workflow", "nope"),
            None,
        )
        .await?;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.text()
    );
    assert_eq!(answer.json()["error"]["code"], "unknown_workflow");
    let cases: i64 = sqlx::query_scalar("SELECT count(*) FROM cases")
        .fetch_one(app.db.store.pool())
        .await?;
    assert_eq!(cases, 0);
    Ok(())
}
