//! The case listing: keyset pages that neither skip nor repeat a case, and a 400 for each bad
//! parameter.

use crate::helpers::TestApp;
use ironclad_inspect::fixtures;
use reqwest::StatusCode;
use std::collections::HashSet;

#[tokio::test]
async fn five_cases_page_by_two_in_three_pages() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let mut created = HashSet::new();
    for i in 0..5 {
        let answer = app
            .submit(&[("d.pdf", &fixtures::pdf_with_pages(1, &format!("case {i}")))])
            .await?;
        assert_eq!(answer.status, StatusCode::CREATED);
        created.insert(
            answer.json()["case_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }

    let mut seen = Vec::new();
    let mut pages = 0;
    let mut path = "/v1/cases?limit=2".to_owned();
    loop {
        let page = app.get(&path, Some(&app.key)).await?;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text());
        pages += 1;
        let json = page.json();
        let cases = json["cases"].as_array().cloned().unwrap_or_default();
        assert!(cases.len() <= 2);
        seen.extend(
            cases
                .iter()
                .filter_map(|c| c["id"].as_str().map(str::to_owned)),
        );
        match json["next_cursor"].as_str() {
            Some(cursor) => path = format!("/v1/cases?limit=2&cursor={cursor}"),
            None => break,
        }
        assert!(pages < 10, "pagination does not end");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 5, "no duplicates: {seen:?}");
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), created);

    let ingested = app.get("/v1/cases?status=INGESTED", Some(&app.key)).await?;
    assert_eq!(ingested.json()["cases"].as_array().map(Vec::len), Some(5));
    assert_eq!(ingested.json()["next_cursor"], serde_json::Value::Null);
    let resolved = app.get("/v1/cases?status=RESOLVED", Some(&app.key)).await?;
    assert_eq!(resolved.json()["cases"].as_array().map(Vec::len), Some(0));
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn bad_listing_parameters_are_400() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    for (query, code) in [
        ("status=DONE", "invalid_status"),
        ("status=ingested", "invalid_status"),
        ("limit=501", "invalid_limit"),
        ("limit=0", "invalid_limit"),
        ("limit=ten", "invalid_limit"),
        ("cursor=garbage", "invalid_cursor"),
    ] {
        let answer = app
            .get(&format!("/v1/cases?{query}"), Some(&app.key))
            .await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::BAD_REQUEST, code),
            "{query}"
        );
    }
    let max = app.get("/v1/cases?limit=500", Some(&app.key)).await?;
    assert_eq!(max.status, StatusCode::OK);
    app.stop().await;
    Ok(())
}

/// Issue 7, defect 13: a tenant never sees which host and process held a job, nor the raw
/// error text (server paths, driver messages): a failure is a stable code and a fixed message.
/// The operator's detail stays in the database for the CLI and the logs.
#[tokio::test]
async fn tenants_see_failure_codes_not_internals() -> anyhow::Result<()> {
    use ironclad_core::{Envelope, FailureCode, JobId, JobKind};
    use ironclad_store::jobs::{ClaimOutcome, Failure};

    let app = TestApp::spawn().await?;
    let answer = app
        .submit(&[("d.pdf", &fixtures::pdf_with_pages(1, "internals"))])
        .await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let body = answer.json();
    let case_id = body["case_id"].as_str().unwrap_or_default().to_owned();
    let job_id: uuid::Uuid = body["sources"][0]["job_id"]
        .as_str()
        .unwrap_or_default()
        .parse()?;
    let envelope = Envelope::new(JobId(job_id), case_id.parse()?, JobKind::ProcessSource, 1);
    let ClaimOutcome::Claimed(job) = app
        .db
        .store
        .claim_job(
            &envelope,
            "worker-host-7-4242",
            std::time::Duration::from_secs(30),
        )
        .await?
    else {
        anyhow::bail!("claim refused");
    };
    let detail = "pdftoppm failed on /var/lib/ironclad/blobs/sha256/ab/cd/secret: exit 1";
    app.db
        .store
        .fail_held_job(
            &job,
            &Failure::new(FailureCode::DocumentUnreadable, detail),
            "test",
        )
        .await?;

    let shown = app
        .get(&format!("/v1/cases/{case_id}"), Some(&app.key))
        .await?;
    assert_eq!(shown.status, StatusCode::OK);
    let text = shown.text();
    for internal in [
        "worker-host-7",
        "4242",
        "/var/lib",
        "pdftoppm",
        "lease_owner",
        "last_error",
    ] {
        assert!(!text.contains(internal), "{internal:?} leaked: {text}");
    }
    let json = shown.json();
    let code = FailureCode::DocumentUnreadable;
    assert_eq!(json["status"], "FAILED");
    assert_eq!(json["status_reason"], code.message());
    assert_eq!(json["jobs"][0]["error"]["code"], code.as_str());
    assert_eq!(json["jobs"][0]["error"]["message"], code.message());
    let listed = app.get("/v1/cases", Some(&app.key)).await?;
    assert!(!listed.text().contains("/var/lib"), "{}", listed.text());

    // The operator's view (the store, which the CLI reads) keeps the detail.
    let operator = app
        .db
        .store
        .case_detail(None, case_id.parse()?)
        .await?
        .ok_or_else(|| anyhow::anyhow!("case vanished"))?;
    assert_eq!(operator.jobs[0].last_error.as_deref(), Some(detail));
    assert_eq!(
        operator.jobs[0].lease_owner.as_deref(),
        Some("worker-host-7-4242")
    );
    app.stop().await;
    Ok(())
}

/// Issue 7, defect 11: intake pins each case to the newest stored version of its workflow, so
/// a version loaded while the case is being read cannot mix into it.
#[tokio::test]
async fn intake_pins_the_case_to_the_newest_workflow_version() -> anyhow::Result<()> {
    let config = ironclad_api::ApiConfig {
        default_workflow: Some("trade".into()),
        ..Default::default()
    };
    let app = TestApp::spawn_with(config).await?;
    let yaml = include_str!("../../../../workflows/trade.yaml");
    let (v1, _) = app.db.store.load_workflow("trade", yaml).await?;
    let named = app
        .post_case(
            &app.key,
            crate::helpers::form(&[("a.pdf", &fixtures::pdf_with_pages(1, "named"))])
                .text("workflow", "trade"),
            None,
        )
        .await?;
    assert_eq!(named.status, StatusCode::CREATED, "{}", named.text());
    let (v2, created) = app
        .db
        .store
        .load_workflow("trade", &format!("{yaml}\n# v2\n"))
        .await?;
    assert!(created && v2.version == v1.version + 1);
    let defaulted = app
        .submit(&[("b.pdf", &fixtures::pdf_with_pages(1, "default"))])
        .await?;
    assert_eq!(
        defaulted.status,
        StatusCode::CREATED,
        "{}",
        defaulted.text()
    );

    for (answer, version) in [(&named, &v1), (&defaulted, &v2)] {
        let case: uuid::Uuid = answer.json()["case_id"]
            .as_str()
            .unwrap_or_default()
            .parse()?;
        let pinned: Option<uuid::Uuid> =
            sqlx::query_scalar("SELECT workflow_id FROM cases WHERE id = $1")
                .bind(case)
                .fetch_one(app.db.store.pool())
                .await?;
        assert_eq!(pinned, Some(version.id));
    }
    app.stop().await;
    Ok(())
}
