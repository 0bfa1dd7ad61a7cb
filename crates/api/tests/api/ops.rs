//! Operations endpoints and the router's own answers: readiness follows the dependencies,
//! metrics include the scrape-time gauges, unknown routes and methods answer JSON, and a
//! request past its deadline is cut off with a JSON 503 and leaves no temp file.

use crate::helpers::TestApp;
use futures::StreamExt;
use ironclad_api::routes::ops::READINESS_TTL;
use ironclad_api::ApiConfig;
use ironclad_inspect::fixtures;
use ironclad_queue::{Queue, StreamConfig};
use ironclad_testkit::private::PrivateRedis;
use ironclad_testkit::redis_prefix;
use reqwest::StatusCode;
use std::time::{Duration, Instant};

#[tokio::test]
async fn health_and_readiness_with_everything_up() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let health = app.get("/healthz", None).await?;
    assert_eq!(
        (health.status, health.json()),
        (StatusCode::OK, serde_json::json!({"status": "ok"}))
    );
    let ready = app.get("/readyz", None).await?;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
    assert_eq!(
        ready.json(),
        serde_json::json!({"status": "ok", "postgres": "ok", "redis": "ok"})
    );
    app.stop().await;
    Ok(())
}

/// Redis dies after the queue connected (the queue connects eagerly, so "down from the
/// start" cannot be built): readiness says `degraded` within the probe timeout but stays 200,
/// since intake needs only PostgreSQL (a load balancer keeps the process in rotation).
#[tokio::test]
async fn readiness_stays_200_but_degraded_when_redis_is_down() -> anyhow::Result<()> {
    let redis = PrivateRedis::start()?;
    let queue = Queue::connect(&redis.url(), StreamConfig::with_prefix(&redis_prefix())).await?;
    let app = TestApp::spawn_full(ApiConfig::default(), Some(queue)).await?;
    assert_eq!(app.get("/readyz", None).await?.status, StatusCode::OK);

    redis.kill()?;
    // The first answer stands for its second (one check a second, whoever asks).
    tokio::time::sleep(READINESS_TTL).await;
    let started = Instant::now();
    let ready = app.get("/readyz", None).await?;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
    assert_eq!(
        ready.json(),
        serde_json::json!({"status": "degraded", "postgres": "ok", "redis": "error"})
    );
    // …and rightly so: intake accepts a case while Redis is down.
    let answer = app
        .submit(&[("r.pdf", &fixtures::pdf_with_pages(1, "redis down"))])
        .await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );

    // Metrics still render what PostgreSQL knows: the accepted case's job waits in the outbox.
    let metrics = app.get("/metrics", None).await?;
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(
        metrics.text().contains("ironclad_outbox_pending 1"),
        "{}",
        metrics.text()
    );
    assert!(metrics
        .text()
        .contains("ironclad_scrape_source_up{source=\"redis\"} 0"));
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn metrics_include_scrape_time_gauges_and_intake_counters() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let answer = app
        .submit(&[("m.pdf", &fixtures::pdf_with_pages(1, "metrics"))])
        .await?;
    assert_eq!(answer.status, StatusCode::CREATED);
    let metrics = app.get("/metrics", None).await?;
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(metrics
        .header("content-type")
        .unwrap_or_default()
        .starts_with("text/plain"));
    let text = metrics.text();
    for line in [
        "ironclad_outbox_pending 1",
        "ironclad_outbox_dead 0",
        "ironclad_stream_pending 0",
        "ironclad_cases{status=\"INGESTED\"} 1",
        "ironclad_jobs{status=\"PENDING\"} 1",
        "ironclad_scrape_source_up{source=\"postgres\"} 1",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert!(text.contains("ironclad_outbox_oldest_pending_age_seconds"));
    assert!(text.contains("ironclad_stream_oldest_pending_age_seconds"));
    assert!(text.contains("ironclad_intake_cases_total"), "{text}");
    assert!(text.contains("ironclad_intake_duration_seconds"), "{text}");
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let missing = app.get("/v2/nothing", None).await?;
    assert_eq!(
        (missing.status, missing.code().as_str()),
        (StatusCode::NOT_FOUND, "not_found")
    );
    let wrong = app.client.delete(app.url("/v1/cases")).send().await?;
    assert_eq!(wrong.status(), StatusCode::METHOD_NOT_ALLOWED);
    let allow = wrong
        .headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        allow.contains("GET") && allow.contains("POST"),
        "Allow: {allow}"
    );
    let body: serde_json::Value = wrong.json().await?;
    assert_eq!(body["error"]["code"], "method_not_allowed");
    app.stop().await;
    Ok(())
}

/// A client that stalls mid-upload is cut off at the deadline with a JSON 503, and the
/// abandoned upload's temp file is removed.
#[tokio::test]
async fn a_stalled_upload_times_out_with_json() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        request_timeout: Duration::from_millis(500),
        ..ApiConfig::default()
    })
    .await?;
    let pdf = fixtures::pdf_with_pages(1, "slow");
    let (head, tail) = pdf.split_at(pdf.len() / 2);
    let chunks: Vec<Vec<u8>> = vec![head.to_vec(), tail.to_vec()];
    let stream = futures::stream::iter(chunks)
        .enumerate()
        .then(|(i, chunk)| async move {
            if i == 1 {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            Ok::<_, std::io::Error>(chunk)
        });
    let part =
        reqwest::multipart::Part::stream(reqwest::Body::wrap_stream(stream)).file_name("slow.pdf");
    let form = reqwest::multipart::Form::new().part("file", part);
    let started = Instant::now();
    let answer = app.post_case(&app.key, form, None).await?;
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        answer.text()
    );
    assert_eq!(answer.code(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        app.temp_files()?,
        0,
        "the cut-off upload's temp file is removed"
    );
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 0);
    app.stop().await;
    Ok(())
}

/// The gauges are full-table counts: 50 scrapes at once cost one read (three statements),
/// not fifty, and a scrape within the next 5 s reads nothing.
#[tokio::test]
async fn concurrent_scrapes_share_one_gauge_read() -> anyhow::Result<()> {
    let app = TestApp::spawn_counted(ApiConfig::default()).await?;
    let before = app.queries();
    let scrapes = futures::future::join_all((0..50).map(|_| app.get("/metrics", None))).await;
    for scrape in scrapes {
        let scrape = scrape?;
        assert_eq!(scrape.status, StatusCode::OK, "{}", scrape.text());
        assert!(scrape.text().contains("ironclad_outbox_pending 0"));
        assert!(scrape.text().contains("ironclad_scrape_gauges_age_seconds"));
    }
    let again = app.get("/metrics", None).await?;
    assert_eq!(again.status, StatusCode::OK);
    let spent = app.queries() - before;
    assert!(
        spent <= 3,
        "51 scrapes ran {spent} statements; one gauge read is 3"
    );
    app.stop().await;
    Ok(())
}

/// Issue 26, item 10: `/readyz` is anonymous and pinged PostgreSQL and Redis on every call.
/// Fifty probes at once make one check (one PostgreSQL round trip, not fifty); a probe a
/// second later checks again.
#[tokio::test]
async fn concurrent_readiness_probes_share_one_check() -> anyhow::Result<()> {
    let app = TestApp::spawn_counted(ApiConfig::default()).await?;
    let before = app.queries();
    let started = Instant::now();
    let probes = futures::future::join_all((0..50).map(|_| app.get("/readyz", None))).await;
    let took = started.elapsed();
    for probe in probes {
        let probe = probe?;
        assert_eq!(probe.status, StatusCode::OK, "{}", probe.text());
        assert_eq!(probe.json()["status"], "ok");
    }
    let checks = app.queries() - before;
    if took < READINESS_TTL {
        assert_eq!(checks, 1, "50 probes within a second made {checks} checks");
    } else {
        // A machine too loaded to answer 50 probes within the second may check once more.
        assert!(checks <= 2, "50 probes over {took:?} made {checks} checks");
    }
    tokio::time::sleep(READINESS_TTL).await;
    let before = app.queries();
    assert_eq!(app.get("/readyz", None).await?.status, StatusCode::OK);
    assert_eq!(app.queries() - before, 1, "a stale answer is checked again");
    app.stop().await;
    Ok(())
}

/// With a token configured, a scrape without it (or with another) is a JSON 401; the health
/// probes stay open.
#[tokio::test]
async fn a_metrics_token_guards_the_scrape() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        metrics_token: Some("scrape-s3cret".into()),
        ..ApiConfig::default()
    })
    .await?;
    let bare = app.get("/metrics", None).await?;
    assert_eq!(bare.status, StatusCode::UNAUTHORIZED, "{}", bare.text());
    assert_eq!(bare.code(), "unauthorized");
    assert_eq!(bare.header("www-authenticate").as_deref(), Some("Bearer"));
    assert!(!bare.text().contains("ironclad_"), "{}", bare.text());
    let wrong = app.get("/metrics", Some("scrape-s3cret2")).await?;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let api_key = app.get("/metrics", Some(&app.key)).await?;
    assert_eq!(
        api_key.status,
        StatusCode::UNAUTHORIZED,
        "an API key is no scrape token"
    );
    let right = app.get("/metrics", Some("scrape-s3cret")).await?;
    assert_eq!(right.status, StatusCode::OK, "{}", right.text());
    assert!(right.text().contains("ironclad_outbox_pending 0"));
    assert_eq!(app.get("/healthz", None).await?.status, StatusCode::OK);
    assert_eq!(app.get("/readyz", None).await?.status, StatusCode::OK);
    app.stop().await;
    Ok(())
}

/// `/metrics` moves to a listener of its own: there it is served (with the same token rule),
/// and the API's listener no longer knows the route.
#[tokio::test]
async fn metrics_can_be_served_on_their_own_listener() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        metrics_on_api_listener: false,
        ..ApiConfig::default()
    })
    .await?;
    let on_api = app.get("/metrics", None).await?;
    assert_eq!(on_api.status, StatusCode::NOT_FOUND, "{}", on_api.text());
    assert_eq!(on_api.code(), "not_found");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(ironclad_api::serve_metrics(
        listener,
        app.state.clone(),
        async {
            let _ = stopped.await;
        },
    ));
    let scrape = app.client.get(format!("{base}/metrics")).send().await?;
    assert_eq!(scrape.status(), StatusCode::OK);
    let text = scrape.text().await?;
    assert!(text.contains("ironclad_outbox_pending 0"), "{text}");
    assert!(text.contains("ironclad_scrape_source_up{source=\"postgres\"} 1"));
    let other = app.client.get(format!("{base}/v1/cases")).send().await?;
    assert_eq!(other.status(), StatusCode::NOT_FOUND, "only metrics there");
    let _ = stop.send(());
    server.await??;
    app.stop().await;
    Ok(())
}
