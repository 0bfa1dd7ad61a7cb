//! Invariant 3 at the edge: a retried submission with the same `Idempotency-Key` answers
//! exactly what the first one answered and creates nothing more; the key reused for another
//! payload is 409; two identical submissions raced with `join!` make one case.

use crate::helpers::{form, TestApp};
use ironclad_inspect::fixtures;
use reqwest::StatusCode;

#[tokio::test]
async fn a_replay_answers_byte_for_byte_and_creates_nothing() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let pdf = fixtures::pdf_with_pages(2, "invoice");
    let png = fixtures::png(8, 8);
    let send = || {
        app.post_case(
            &app.key,
            form(&[("inv.pdf", &pdf), ("stamp.png", &png)]).text("external_reference", "PO-7"),
            Some("order-7"),
        )
    };
    let first = send().await?;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    assert_eq!(first.header("idempotent-replayed"), None);
    let second = send().await?;
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.text());
    assert_eq!(
        second.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    assert_eq!(
        first.bytes, second.bytes,
        "the replay must answer byte-identically"
    );
    assert_eq!(first.header("location"), second.header("location"));
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 1);
    assert_eq!(app.count("SELECT count(*) FROM jobs").await?, 2);

    // Same key, different payload: refused, still one case.
    let other = app
        .post_case(
            &app.key,
            form(&[("inv.pdf", &pdf)]).text("external_reference", "PO-7"),
            Some("order-7"),
        )
        .await?;
    assert_eq!(other.status, StatusCode::CONFLICT, "{}", other.text());
    assert_eq!(other.code(), "idempotency_key_reused");
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 1);

    // The key belongs to the tenant: another tenant may use the same one.
    let tenant_b = app.db.store.create_tenant("tenant-b").await?;
    let key_b = app
        .key_for(tenant_b, ironclad_core::role::Role::Operator)
        .await?;
    let b = app
        .post_case(&key_b, form(&[("inv.pdf", &pdf)]), Some("order-7"))
        .await?;
    assert_eq!(b.status, StatusCode::CREATED, "{}", b.text());
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 2);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn two_identical_submissions_raced_make_one_case() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let pdf = fixtures::pdf_with_pages(3, "race");
    let send = || app.post_case(&app.key, form(&[("race.pdf", &pdf)]), Some("race-1"));
    let (a, b) = tokio::join!(send(), send());
    let (a, b) = (a?, b?);
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text());
    assert_eq!(b.status, StatusCode::CREATED, "{}", b.text());
    assert_eq!(a.bytes, b.bytes);
    let replayed = [&a, &b]
        .iter()
        .filter(|x| x.header("idempotent-replayed").is_some())
        .count();
    assert_eq!(replayed, 1, "exactly one of the two is the replay");
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 1);
    assert_eq!(app.count("SELECT count(*) FROM outbox").await?, 1);
    assert_eq!(app.temp_files()?, 0);
    app.stop().await;
    Ok(())
}
