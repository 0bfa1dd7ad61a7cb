//! Rate limits: a key or an address over its rate is answered 429 `rate_limited` with a JSON
//! body and a whole-second `Retry-After`; other keys and addresses go on, the health probes
//! are never limited, and a router driven in-process (no peer address) is not limited by
//! address.

use crate::helpers::{Answer, TestApp};
use axum::body::Body;
use axum::http::Request;
use ironclad_api::{ApiConfig, RateLimit};
use ironclad_core::role::Role;
use reqwest::StatusCode;
use tower::ServiceExt;

fn assert_rate_limited(answer: &Answer, scope: &str) {
    assert_eq!(
        answer.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        answer.text()
    );
    assert_eq!(answer.code(), "rate_limited");
    assert_eq!(answer.json()["error"]["details"]["scope"], scope);
    let retry_after = answer.header("retry-after").unwrap_or_default();
    let seconds: u64 = retry_after.parse().unwrap_or(0);
    assert!(
        seconds >= 1,
        "Retry-After {retry_after:?} is whole seconds ≥ 1"
    );
    assert_eq!(
        answer.json()["error"]["details"]["retry_after_seconds"],
        seconds
    );
}

#[tokio::test]
async fn a_key_over_its_rate_gets_429_and_other_keys_do_not() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        key_rate_limit: RateLimit::new(1, 2),
        address_rate_limit: None,
        ..ApiConfig::default()
    })
    .await?;
    // A bad key is not a key: its requests never reach the per-key rate.
    let unknown = format!("ick_{}", "ab".repeat(24));
    for _ in 0..4 {
        let answer = app.get("/v1/cases", Some(&unknown)).await?;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    for _ in 0..2 {
        let answer = app.get("/v1/cases", Some(&app.key)).await?;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    }
    let refused = app.get("/v1/cases", Some(&app.key)).await?;
    assert_rate_limited(&refused, "key");

    let other = app.key_for(app.tenant, Role::Reviewer).await?;
    let answer = app.get("/v1/cases", Some(&other)).await?;
    assert_eq!(answer.status, StatusCode::OK, "another key is unaffected");
    assert_eq!(app.get("/healthz", None).await?.status, StatusCode::OK);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn an_address_over_its_rate_gets_429_and_other_addresses_do_not() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        key_rate_limit: None,
        address_rate_limit: RateLimit::new(1, 3),
        ..ApiConfig::default()
    })
    .await?;
    // Requests with a bad key and without any count against the address.
    let bad = app.get("/v1/cases", Some("ick_junk")).await?;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
    let anonymous = app.get("/v1/cases", None).await?;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let good = app.get("/v1/cases", Some(&app.key)).await?;
    assert_eq!(good.status, StatusCode::OK);
    let refused = app.get("/v1/cases", Some(&app.key)).await?;
    assert_rate_limited(&refused, "address");
    let unknown_route = app.get("/nowhere", None).await?;
    assert_eq!(unknown_route.status, StatusCode::TOO_MANY_REQUESTS);

    // The probes answer whatever the rate.
    for _ in 0..5 {
        assert_eq!(app.get("/healthz", None).await?.status, StatusCode::OK);
        assert_eq!(app.get("/readyz", None).await?.status, StatusCode::OK);
    }

    // Another address (the whole of 127/8 is loopback) has its own bucket.
    let elsewhere = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()?;
    let answer = elsewhere
        .get(app.url("/v1/cases"))
        .bearer_auth(&app.key)
        .send()
        .await?;
    assert_eq!(answer.status(), StatusCode::OK);
    app.stop().await;
    Ok(())
}

/// `oneshot` carries no peer address: such requests are not limited by address at all
/// (rather than all sharing one bucket), and still answer normally.
#[tokio::test]
async fn a_router_without_peer_addresses_is_not_limited_by_address() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        address_rate_limit: RateLimit::new(1, 1),
        ..ApiConfig::default()
    })
    .await?;
    let router = ironclad_api::router(app.state.clone());
    for _ in 0..5 {
        let request = Request::get("/v1/cases")
            .header("authorization", format!("Bearer {}", app.key))
            .body(Body::empty())?;
        let response = router.clone().oneshot(request).await?;
        assert_eq!(response.status(), StatusCode::OK);
    }
    app.stop().await;
    Ok(())
}
