//! Who may call: no key or an unknown key is 401 with a Bearer challenge, a reviewer may read
//! but not submit, and a tenant cannot tell another tenant's case from a case that does not
//! exist.

use crate::helpers::{form, TestApp};
use ironclad_core::role::Role;
use ironclad_inspect::fixtures;
use reqwest::StatusCode;

#[tokio::test]
async fn keys_and_roles_are_enforced() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let pdf = fixtures::pdf_with_pages(1, "auth");

    let missing = app
        .client
        .post(app.url("/v1/cases"))
        .multipart(form(&[("a.pdf", &pdf)]))
        .send()
        .await?;
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        missing
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Bearer")
    );
    let body: serde_json::Value = missing.json().await?;
    assert_eq!(body["error"]["code"], "unauthorized");

    let unknown = app
        .post_case("ick_not_a_real_key", form(&[("a.pdf", &pdf)]), None)
        .await?;
    assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
    let basic = app
        .client
        .get(app.url("/v1/cases"))
        .header("Authorization", "Basic dXNlcjpwYXNz")
        .send()
        .await?;
    assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);

    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let refused = app
        .post_case(&reviewer, form(&[("a.pdf", &pdf)]), None)
        .await?;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert_eq!(refused.code(), "forbidden");
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 0);

    let admin = app.key_for(app.tenant, Role::Admin).await?;
    let created = app
        .post_case(&admin, form(&[("a.pdf", &pdf)]), None)
        .await?;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let id = created.json()["case_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let read = app.get(&format!("/v1/cases/{id}"), Some(&reviewer)).await?;
    assert_eq!(
        read.status,
        StatusCode::OK,
        "a reviewer reads its tenant's cases"
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn another_tenants_case_is_indistinguishable_from_none() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let created = app
        .submit(&[("a.pdf", &fixtures::pdf_with_pages(1, "mine"))])
        .await?;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.json()["case_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    let tenant_b = app.db.store.create_tenant("tenant-b").await?;
    let key_b = app.key_for(tenant_b, Role::Admin).await?;
    let foreign = app.get(&format!("/v1/cases/{id}"), Some(&key_b)).await?;
    let random = app
        .get(&format!("/v1/cases/{}", uuid::Uuid::new_v4()), Some(&key_b))
        .await?;
    let malformed = app.get("/v1/cases/not-a-uuid", Some(&key_b)).await?;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    assert_eq!(foreign.code(), "not_found");
    assert_eq!(
        (random.status, &random.bytes),
        (foreign.status, &foreign.bytes)
    );
    assert_eq!(
        (malformed.status, &malformed.bytes),
        (foreign.status, &foreign.bytes)
    );

    let listing = app.get("/v1/cases", Some(&key_b)).await?;
    assert_eq!(listing.json()["cases"], serde_json::json!([]));
    app.stop().await;
    Ok(())
}

/// Anonymous load stays off PostgreSQL: a key without the shape of a real key is refused
/// unread, and a well-formed unknown key is looked up once, then remembered — even when the
/// requests arrive together.
#[tokio::test]
async fn unknown_keys_cost_at_most_one_query() -> anyhow::Result<()> {
    let app = TestApp::spawn_counted(ironclad_api::ApiConfig::default()).await?;
    let unknown = format!("ick_{}", "0123456789abcdef".repeat(3));
    assert_ne!(unknown, app.key);

    let before = app.queries();
    let together = futures::future::join_all((0..10).map(|_| app.get("/v1/cases", Some(&unknown))));
    for answer in together.await {
        let answer = answer?;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.text());
        assert_eq!(answer.code(), "unauthorized");
    }
    for _ in 0..10 {
        let answer = app.get("/v1/cases", Some(&unknown)).await?;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    let spent = app.queries() - before;
    assert!(
        spent <= 1,
        "20 requests with one unknown key ran {spent} statements"
    );

    let before = app.queries();
    for junk in [
        "ick_not_a_real_key",
        "ick_0123456789ABCDEF0123456789abcdef0123456789abcdef",
        "ick_0123456789abcdef0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123",
    ] {
        for _ in 0..5 {
            let answer = app.get("/v1/cases", Some(junk)).await?;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{junk}");
            assert_eq!(answer.code(), "unauthorized");
        }
    }
    assert_eq!(
        app.queries() - before,
        0,
        "malformed keys are refused unread"
    );

    // A real key still works, and is looked up once for several requests (a malformed case
    // id is answered 404 without reading anything, so only the key lookup is counted).
    let before = app.queries();
    for _ in 0..5 {
        let answer = app.get("/v1/cases/not-a-uuid", Some(&app.key)).await?;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.text());
    }
    assert_eq!(app.queries() - before, 1, "one lookup for five requests");
    app.stop().await;
    Ok(())
}
