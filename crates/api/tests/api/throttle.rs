//! Rate limits: a key or an address over its rate is answered 429 `rate_limited` with a JSON
//! body and a whole-second `Retry-After`; other keys and addresses go on, the health probes
//! are never limited, a router driven in-process (no peer address) is not limited by
//! address, and `X-Forwarded-For` counts only from a trusted proxy.

use crate::helpers::{Answer, TestApp};
use axum::body::Body;
use axum::http::Request;
use ironclad_api::client_address::parse_trusted_proxies;
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

/// `GET /v1/cases` as `key` from `client`, with `X-Forwarded-For: forwarded`.
async fn get_forwarded(
    app: &TestApp,
    client: &reqwest::Client,
    forwarded: &str,
) -> anyhow::Result<Answer> {
    let response = client
        .get(app.url("/v1/cases"))
        .bearer_auth(&app.key)
        .header("x-forwarded-for", forwarded)
        .send()
        .await?;
    Answer::read(response).await
}

/// Issue 26, item 10: behind a reverse proxy every client shared the proxy's bucket. From a
/// trusted proxy (here 127.0.0.1), each forwarded client has its own bucket, keyed by the
/// rightmost hop the proxy did not add itself; from any other peer (127.0.0.2) the header is
/// ignored, so a spoofed address per request cannot dodge the limit.
#[tokio::test]
async fn forwarded_addresses_are_believed_only_from_trusted_proxies() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        key_rate_limit: None,
        address_rate_limit: RateLimit::new(1, 2),
        trusted_proxies: parse_trusted_proxies("127.0.0.1")?,
        ..ApiConfig::default()
    })
    .await?;
    let proxy = reqwest::Client::new();
    for client in ["203.0.113.1", "203.0.113.2"] {
        // What the client wrote itself (left of its own address) changes nothing.
        for spoof in ["1.1.1.1", "1.1.1.2"] {
            let answer = get_forwarded(&app, &proxy, &format!("{spoof}, {client}")).await?;
            assert_eq!(answer.status, StatusCode::OK, "{client}: {}", answer.text());
        }
        let refused = get_forwarded(&app, &proxy, &format!("9.9.9.9, {client}")).await?;
        assert_rate_limited(&refused, "address");
    }

    let untrusted = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()?;
    for i in 0..2 {
        let answer = get_forwarded(&app, &untrusted, &format!("198.51.100.{i}")).await?;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    }
    let refused = get_forwarded(&app, &untrusted, "198.51.100.99").await?;
    assert_rate_limited(&refused, "address");
    app.stop().await;
    Ok(())
}
