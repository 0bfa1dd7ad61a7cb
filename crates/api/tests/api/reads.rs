//! The case listing: keyset pages that neither skip nor repeat a case, and a 400 for each bad
//! parameter.

use crate::helpers::TestApp;
use ironclad_documents::fixtures;
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
