//! Intake bounded across requests: a cap on concurrent intakes answered 503 `busy` at once
//! (never queued), each tenant's share of it, the slowest upload waited for, and a time
//! budget per file inspection whose parse, if it runs on, still counts against the cap.

use crate::helpers::{form, Rows, TestApp};
use ironclad_api::{ApiConfig, IntakeLimits};
use ironclad_core::role::Role;
use ironclad_inspect::fixtures;
use ironclad_testkit::wait_for;
use reqwest::multipart::{Form, Part};
use reqwest::StatusCode;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A one-file form whose second half is sent only once `gate` opens: the request holds its
/// intake slot (and a temp file) until then.
fn gated_form(pdf: Vec<u8>, name: &str, gate: watch::Receiver<bool>) -> Form {
    use futures::StreamExt;
    let tail = pdf[pdf.len() / 2..].to_vec();
    let mut head = pdf;
    head.truncate(head.len() / 2);
    let stream = futures::stream::iter([head, tail])
        .enumerate()
        .then(move |(i, chunk)| {
            let mut gate = gate.clone();
            async move {
                if i == 1 {
                    let _ = gate.wait_for(|open| *open).await;
                }
                Ok::<_, std::io::Error>(chunk)
            }
        });
    let part = Part::stream(reqwest::Body::wrap_stream(stream)).file_name(name.to_owned());
    Form::new().part("file", part)
}

#[tokio::test]
async fn intakes_beyond_the_cap_get_503_busy_until_one_finishes() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        max_concurrent_intakes: 2,
        // One tenant may fill the cap here: this is the shared cap's test.
        intake_slots_per_tenant: Some(2),
        // The held uploads stall on purpose.
        intake_min_bytes_per_sec: 0,
        ..ApiConfig::default()
    })
    .await?;
    let (open, gate) = watch::channel(false);
    let mut held = Vec::new();
    for i in 0..2 {
        let body = gated_form(
            fixtures::pdf_with_pages(1, &format!("held {i}")),
            &format!("held-{i}.pdf"),
            gate.clone(),
        );
        let request = app
            .client
            .post(app.url("/v1/cases"))
            .bearer_auth(&app.key)
            .multipart(body);
        held.push(tokio::spawn(async move {
            let response = request.send().await?;
            anyhow::Ok(response.status())
        }));
    }
    // Each held request has its slot once its upload has started (one temp file each).
    wait_for(
        "two uploads in progress",
        Duration::from_secs(10),
        || async { Ok((app.temp_files()? == 2).then_some(())) },
    )
    .await?;

    let third = app
        .submit(&[("third.pdf", &fixtures::pdf_with_pages(1, "third"))])
        .await?;
    assert_eq!(
        third.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        third.text()
    );
    assert_eq!(third.code(), "busy");
    assert_eq!(third.json()["error"]["details"]["limit"], 2);
    assert_eq!(third.header("retry-after").as_deref(), Some("2"));
    // A refused request is not queued: it created nothing.
    assert_eq!(app.rows().await?, Rows::default());

    let _ = open.send(true);
    for request in held {
        assert_eq!(request.await??, StatusCode::CREATED);
    }
    let after = app
        .submit(&[("after.pdf", &fixtures::pdf_with_pages(1, "after"))])
        .await?;
    assert_eq!(after.status, StatusCode::CREATED, "{}", after.text());
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 3);
    app.stop().await;
    Ok(())
}

/// A PDF whose load is slow by construction: `lopdf` 0.38 rescans the bytes before each
/// object it reads, so `pages` page objects behind `padding` bytes cost pages × padding
/// (5,000 × 4 MiB ≈ 1 s here, in the test profile).
fn slow_pdf(pages: usize, padding: usize) -> Vec<u8> {
    let kids: String = (0..pages).map(|i| format!("{} 0 R ", 4 + i)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{kids}] /Count {pages} >>").into_bytes(),
        fixtures::pdf_stream("", &vec![b'\n'; padding]),
    ];
    for _ in 0..pages {
        objects.push(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>".to_vec());
    }
    fixtures::pdf_from_objects(&objects, "")
}

/// An inspection past its budget is refused at the budget (not when the parse ends), stores
/// nothing, and the parse it leaves running keeps its intake slot until it ends.
#[tokio::test]
async fn an_inspection_past_its_budget_is_refused_and_keeps_its_slot() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        limits: IntakeLimits {
            max_total_pages: 10_000,
            ..IntakeLimits::default()
        },
        max_concurrent_intakes: 1,
        inspect_timeout: Duration::from_millis(100),
        ..ApiConfig::default()
    })
    .await?;
    let slow = slow_pdf(5000, 4 << 20);
    let refused = app.submit(&[("slow.pdf", &slow)]).await?;
    assert_eq!(
        refused.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        refused.text()
    );
    assert_eq!(refused.code(), "document_too_large");
    assert_eq!(refused.json()["error"]["details"]["filename"], "slow.pdf");
    let reason = refused.json()["error"]["details"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.contains("inspection took longer than 100 ms"),
        "{reason}"
    );

    // The abandoned parse still runs, holding the only slot.
    let small = fixtures::pdf_with_pages(1, "small");
    let busy = app.submit(&[("small.pdf", &small)]).await?;
    assert_eq!(
        busy.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        busy.text()
    );
    assert_eq!(busy.code(), "busy");

    // Once it ends, intake works again; the slow file left nothing behind.
    let created = wait_for("the slot to free", Duration::from_secs(60), || async {
        let answer = app.submit(&[("small.pdf", &small)]).await?;
        Ok((answer.status == StatusCode::CREATED).then_some(answer))
    })
    .await?;
    assert_eq!(created.json()["sources"][0]["filename"], "small.pdf");
    assert_eq!(app.temp_files()?, 0);
    assert_eq!(app.blob_keys()?.len(), 1, "only the small file is stored");
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 1);
    app.stop().await;
    Ok(())
}

/// The cap counts intakes only: reads go on while every intake slot is taken.
#[tokio::test]
async fn reads_are_not_held_up_by_busy_intakes() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        max_concurrent_intakes: 1,
        intake_min_bytes_per_sec: 0,
        ..ApiConfig::default()
    })
    .await?;
    let (open, gate) = watch::channel(false);
    let body = gated_form(fixtures::pdf_with_pages(1, "held"), "held.pdf", gate);
    let request = app
        .client
        .post(app.url("/v1/cases"))
        .bearer_auth(&app.key)
        .multipart(body);
    let held = tokio::spawn(async move { anyhow::Ok(request.send().await?.status()) });
    wait_for(
        "the upload in progress",
        Duration::from_secs(10),
        || async { Ok((app.temp_files()? == 1).then_some(())) },
    )
    .await?;
    let listing = app.get("/v1/cases", Some(&app.key)).await?;
    assert_eq!(listing.status, StatusCode::OK);
    let busy = app
        .post_case(&app.key, form(&[("x.pdf", &b"%PDF-"[..])]), None)
        .await?;
    assert_eq!(busy.code(), "busy");
    let _ = open.send(true);
    assert_eq!(held.await??, StatusCode::CREATED);
    app.stop().await;
    Ok(())
}

/// Sends `form` as `key` in a task; the task's answer is the status.
fn send_held(
    app: &TestApp,
    key: &str,
    form: Form,
) -> tokio::task::JoinHandle<anyhow::Result<StatusCode>> {
    let request = app
        .client
        .post(app.url("/v1/cases"))
        .bearer_auth(key)
        .multipart(form);
    tokio::spawn(async move { anyhow::Ok(request.send().await?.status()) })
}

/// Issue 26, item 9: one operator key could hold every intake slot (slow uploads up to the
/// deadline) while every other tenant got 503. A tenant holds at most its share (half the
/// slots by default): tenant A, holding its share with uploads that stall, is refused
/// another one (503 `busy`, scope `tenant`), and tenant B still gets in.
#[tokio::test]
async fn a_tenant_holding_its_share_of_intakes_leaves_room_for_others() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        max_concurrent_intakes: 4,
        // A's uploads stall on purpose, as a slow client's would: the pace rule has its own test.
        intake_min_bytes_per_sec: 0,
        ..ApiConfig::default()
    })
    .await?;
    let (open, gate) = watch::channel(false);
    let mut held = Vec::new();
    for i in 0..2 {
        let body = gated_form(
            fixtures::pdf_with_pages(1, &format!("a held {i}")),
            &format!("a-{i}.pdf"),
            gate.clone(),
        );
        held.push(send_held(&app, &app.key, body));
        let (app, expected) = (&app, i + 1);
        wait_for(
            "A's upload in progress",
            Duration::from_secs(10),
            move || async move { Ok((app.temp_files()? == expected).then_some(())) },
        )
        .await?;
    }

    let more = app
        .submit(&[("a-more.pdf", &fixtures::pdf_with_pages(1, "a more"))])
        .await?;
    assert_eq!(
        more.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        more.text()
    );
    assert_eq!(more.code(), "busy");
    assert_eq!(more.json()["error"]["details"]["scope"], "tenant");
    assert_eq!(more.json()["error"]["details"]["limit"], 2);
    assert_eq!(more.header("retry-after").as_deref(), Some("2"));

    let tenant_b = app.db.store.create_tenant("tenant-b").await?;
    let key_b = app.key_for(tenant_b, Role::Operator).await?;
    let b = app
        .post_case(
            &key_b,
            form(&[("b.pdf", &fixtures::pdf_with_pages(1, "b gets in"))]),
            None,
        )
        .await?;
    assert_eq!(b.status, StatusCode::CREATED, "{}", b.text());

    let _ = open.send(true);
    for request in held {
        assert_eq!(request.await??, StatusCode::CREATED);
    }
    // A's places came back with its uploads.
    let again = app
        .submit(&[("a-again.pdf", &fixtures::pdf_with_pages(1, "a again"))])
        .await?;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text());
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 4);
    app.stop().await;
    Ok(())
}

/// Issue 26, item 9: an upload trickled at a few bytes a second held its slot until the
/// request deadline. Past the grace period it is dropped with a JSON 408 `upload_too_slow`,
/// stores nothing (no case, no blob, no temp file), and the same file sent at once is taken.
#[tokio::test]
async fn an_upload_slower_than_the_minimum_is_dropped_and_stores_nothing() -> anyhow::Result<()> {
    use futures::StreamExt;
    let app = TestApp::spawn_with(ApiConfig {
        intake_min_bytes_per_sec: 16 * 1024,
        intake_rate_grace: Duration::from_millis(1500),
        ..ApiConfig::default()
    })
    .await?;
    let pdf = fixtures::pdf_with_pages(1, "trickled");
    // Half at once, then a byte every 100 ms (10 bytes/s) for 6 s, then the rest: a server
    // without a minimum pace waits for all of it and takes the file.
    let (head, tail) = pdf.split_at(pdf.len() / 2);
    let (drip, rest) = tail.split_at(60.min(tail.len()));
    let mut chunks: Vec<(bool, Vec<u8>)> = vec![(false, head.to_vec())];
    chunks.extend(drip.iter().map(|b| (true, vec![*b])));
    chunks.push((false, rest.to_vec()));
    let stream = futures::stream::iter(chunks).then(|(slow, chunk)| async move {
        if slow {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok::<_, std::io::Error>(chunk)
    });
    let part = Part::stream(reqwest::Body::wrap_stream(stream)).file_name("trickled.pdf");
    let started = Instant::now();
    let answer = app
        .post_case(&app.key, Form::new().part("file", part), None)
        .await?;
    assert_eq!(
        answer.status,
        StatusCode::REQUEST_TIMEOUT,
        "{}",
        answer.text()
    );
    assert_eq!(answer.code(), "upload_too_slow");
    let message = answer.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("16384 bytes per second"), "{message}");
    assert_eq!(
        answer.json()["error"]["details"]["min_bytes_per_sec"],
        16 * 1024
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "dropped after {:?}",
        started.elapsed()
    );
    assert_eq!(app.rows().await?, Rows::default());
    assert_eq!(app.temp_files()?, 0);
    assert_eq!(app.blob_keys()?, Vec::<String>::new());

    let whole = app.submit(&[("trickled.pdf", &pdf)]).await?;
    assert_eq!(whole.status, StatusCode::CREATED, "{}", whole.text());
    app.stop().await;
    Ok(())
}
