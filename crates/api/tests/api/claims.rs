//! A queue several people share (issue 25, item 3): claims (claim, renew, others refused,
//! taken over with a reason, an admin's release, expiry), the queue's filters (mine,
//! unclaimed, awaiting a second reviewer, overdue) and the `ironclad_reviews_overdue` gauge.

use crate::helpers::TestApp;
use crate::reading::{dossier, fact, trade_with_policy, typed, TRADE};
use ironclad_core::role::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

fn ids(page: &Value) -> Vec<String> {
    page["reviews"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["case_id"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_keeps_others_from_acting_until_taken_over_released_or_expired(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.read_case(TRADE, &dossier("blocked-container")?).await?;
    let (rita, sam, admin) = (
        app.key_for(app.tenant, Role::Reviewer).await?,
        app.key_for(app.tenant, Role::Reviewer).await?,
        app.key_for(app.tenant, Role::Admin).await?,
    );
    let claim = format!("/v1/cases/{case}/claim");
    let none = json!(null);

    // Rita claims it (15 min), and renews it.
    let claimed = app.post_as(&rita, &claim, None, &none).await?;
    assert_eq!(claimed.status, StatusCode::OK, "{}", claimed.text());
    let first = claimed.json();
    assert_eq!(
        (&first["change"], &first["yours"]),
        (&json!("claimed"), &json!(true))
    );
    let minutes: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM expires_at - claimed_at)::float8 / 60 FROM review_claims",
    )
    .fetch_one(app.db.store.pool())
    .await?;
    assert!((minutes - 15.0).abs() < 0.1, "{minutes}");
    let renewed = app.post_as(&rita, &claim, None, &none).await?.json();
    assert_eq!(renewed["change"], "renewed");
    assert_eq!(renewed["claimed_at"], first["claimed_at"]);
    assert!(renewed["expires_at"].as_str() >= first["expires_at"].as_str());

    // Sam sees who holds it, and may not claim, resolve or correct it.
    let refused = app.post_as(&sam, &claim, None, &none).await?;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::CONFLICT, "claimed".to_owned())
    );
    let holder = refused.json()["error"]["details"]["claimed_by"].clone();
    assert_eq!(holder, first["holder_name"]);
    assert!(refused.json()["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("is reviewing this case")));
    let reject = json!({"action": "REJECT", "expected_decision_version": 1});
    let acted = app
        .post_as(
            &sam,
            &format!("/v1/cases/{case}/reviews"),
            Some("r-1"),
            &reject,
        )
        .await?;
    assert_eq!(
        (acted.status, acted.code()),
        (StatusCode::CONFLICT, "claimed".to_owned())
    );
    let detail = app.case_json(case).await?;
    let (invoice, _) = fact(&detail, "commercial_invoice", "container_number");
    let correct = app
        .post_as(
            &sam,
            &format!("/v1/cases/{case}/corrections"),
            Some("c-1"),
            &typed(invoice, "container_number", "HLXU8072159", "x", 1),
        )
        .await?;
    assert_eq!(
        (correct.status, correct.code()),
        (StatusCode::CONFLICT, "claimed".to_owned())
    );
    assert_eq!(app.count("SELECT count(*) FROM decisions").await?, 1);
    // Sam may not release Rita's claim; an operator may not claim.
    let release = app.delete_as(&sam, &claim).await?;
    assert_eq!(
        (release.status, release.code()),
        (StatusCode::FORBIDDEN, "forbidden".to_owned())
    );
    let op = app.post_as(&app.key, &claim, None, &none).await?;
    assert_eq!(op.status, StatusCode::FORBIDDEN);

    // Sam takes it over, saying why; the audit names both.
    let takeover = format!("{claim}/takeover");
    let reasonless = app
        .post_as(&sam, &takeover, None, &json!({"reason": " "}))
        .await?;
    assert_eq!(reasonless.status, StatusCode::BAD_REQUEST);
    let taken = app
        .post_as(
            &sam,
            &takeover,
            None,
            &json!({"reason": "Rita is off sick"}),
        )
        .await?;
    assert_eq!(taken.status, StatusCode::OK, "{}", taken.text());
    assert_eq!(taken.json()["change"], "taken_over");
    let (actor, data): (String, Value) = sqlx::query_as(
        "SELECT actor, data FROM audit_events WHERE event_type = 'REVIEW_TAKEN_OVER'",
    )
    .fetch_one(app.db.store.pool())
    .await?;
    assert_eq!(data["from"], first["holder"]);
    assert_eq!(actor, taken.json()["holder"].as_str().unwrap_or_default());
    assert_eq!(data["reason"], "Rita is off sick");
    let rita_now = app
        .post_as(
            &rita,
            &format!("/v1/cases/{case}/reviews"),
            Some("r-2"),
            &reject,
        )
        .await?;
    assert_eq!(rita_now.code(), "claimed");

    // An admin releases Sam's claim; Rita claims it again.
    let released = app.delete_as(&admin, &claim).await?;
    assert_eq!(released.json()["released"], true);
    assert_eq!(
        app.delete_as(&admin, &claim).await?.json()["released"],
        false
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE event_type = 'REVIEW_RELEASED'")
            .await?,
        1
    );
    assert_eq!(
        app.post_as(&rita, &claim, None, &none).await?.json()["change"],
        "claimed"
    );

    // A claim lapses on its own: with Rita's claim run out (the database's clock moved on),
    // Sam claims it without taking anything over.
    sqlx::query(
        "UPDATE review_claims SET claimed_at = now() - interval '20 minutes', \
         expires_at = now() - interval '5 minutes'",
    )
    .execute(app.db.store.pool())
    .await?;
    let lapsed = app.post_as(&sam, &claim, None, &none).await?;
    assert_eq!(lapsed.json()["change"], "claimed", "{}", lapsed.text());
    // The holder acts: resolving ends the claim.
    let resolved = app
        .post_as(
            &sam,
            &format!("/v1/cases/{case}/reviews"),
            Some("r-3"),
            &reject,
        )
        .await?;
    assert_eq!(resolved.status, StatusCode::OK, "{}", resolved.text());
    assert_eq!(app.count("SELECT count(*) FROM review_claims").await?, 0);
    let closed = app.post_as(&sam, &claim, None, &none).await?;
    assert_eq!(
        (closed.status, closed.code()),
        (StatusCode::CONFLICT, "conflict".to_owned())
    );
    app.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_filters_by_claim_second_reviewer_and_sla_and_counts_the_overdue(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let workflow = trade_with_policy(&["four_eyes: [OVERRIDE]", "review_sla: 4h"]);
    let (mine, free, waiting) = (
        app.read_case(&workflow, &dossier("blocked-container")?)
            .await?,
        app.read_case(&workflow, &dossier("blocked-invoice-reference")?)
            .await?,
        app.read_case(&workflow, &dossier("review-gross-weight-6pct")?)
            .await?,
    );
    let (rita, sam) = (
        app.key_for(app.tenant, Role::Reviewer).await?,
        app.key_for(app.tenant, Role::Reviewer).await?,
    );
    let ok = app
        .post_as(
            &rita,
            &format!("/v1/cases/{mine}/claim"),
            None,
            &json!(null),
        )
        .await?;
    assert_eq!(ok.status, StatusCode::OK);
    let proposed = app
        .post_as(
            &sam,
            &format!("/v1/cases/{waiting}/reviews"),
            Some("o-1"),
            &json!({"action": "OVERRIDE", "expected_decision_version": 1, "comment": "weighed again"}),
        )
        .await?;
    assert_eq!(proposed.status, StatusCode::ACCEPTED, "{}", proposed.text());

    let list = |key: &str, query: &str| {
        let (app, key, query) = (&app, key.to_owned(), query.to_owned());
        async move {
            anyhow::Ok(
                app.get(&format!("/v1/reviews?{query}"), Some(&key))
                    .await?
                    .json(),
            )
        }
    };
    assert_eq!(
        ids(&list(&rita, "claim=mine").await?),
        vec![mine.to_string()]
    );
    assert_eq!(ids(&list(&sam, "claim=mine").await?), Vec::<String>::new());
    assert_eq!(
        ids(&list(&rita, "claim=unclaimed").await?),
        vec![free.to_string()]
    );
    assert_eq!(
        ids(&list(&rita, "status=AWAITING_SECOND").await?),
        vec![waiting.to_string()]
    );
    let all = list(&rita, "").await?;
    let claimed_row = all["reviews"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["case_id"] == mine.to_string())
        .cloned()
        .unwrap_or_default();
    assert!(claimed_row["claimed_by_name"]
        .as_str()
        .is_some_and(|n| n.starts_with("API key")));
    assert!(claimed_row["due_at"].is_string() && claimed_row["overdue"] == false);
    let bad = app.get("/v1/reviews?claim=theirs", Some(&rita)).await?;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::BAD_REQUEST, "invalid_claim".to_owned())
    );

    // Pagination: next_cursor only when more rows exist.
    let page = list(&rita, "status=PENDING&limit=1").await?;
    assert!(page["next_cursor"].is_string());
    let cursor = page["next_cursor"].as_str().unwrap_or_default().to_owned();
    let last = list(&rita, &format!("status=PENDING&limit=1&cursor={cursor}")).await?;
    assert_eq!(ids(&last).len(), 1);
    assert!(last["next_cursor"].is_null(), "{last:#}");
    assert!(list(&rita, "status=PENDING&limit=2").await?["next_cursor"].is_null());

    // Under the SLA of 4 h nothing is overdue; once two reviews are past it (the database's
    // clock moved on), the filter and the gauge say so.
    assert_eq!(
        ids(&list(&rita, "overdue=true").await?),
        Vec::<String>::new()
    );
    sqlx::query("UPDATE reviews SET due_at = now() - interval '1 minute' WHERE case_id = ANY($1)")
        .bind(vec![free.0, waiting.0])
        .execute(app.db.store.pool())
        .await?;
    // (`status` is PENDING unless asked otherwise, as everywhere in the listing.)
    assert_eq!(
        ids(&list(&rita, "overdue=true").await?),
        vec![free.to_string()]
    );
    assert_eq!(
        ids(&list(&rita, "overdue=true&status=AWAITING_SECOND").await?),
        vec![waiting.to_string()]
    );
    let metrics = app.get("/metrics", None).await?.text();
    assert!(
        metrics.contains("# TYPE ironclad_reviews_overdue gauge\nironclad_reviews_overdue 2\n"),
        "{metrics}"
    );
    app.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reviewers_claiming_at_once_one_holds_it_and_the_other_is_told_who(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.decided_case().await?;
    let (rita, sam) = (
        app.key_for(app.tenant, Role::Reviewer).await?,
        app.key_for(app.tenant, Role::Reviewer).await?,
    );
    let claim = format!("/v1/cases/{case}/claim");
    let (a, b) = tokio::join!(
        app.post_as(&rita, &claim, None, &json!(null)),
        app.post_as(&sam, &claim, None, &json!(null))
    );
    let (a, b) = (a?, b?);
    let mut statuses = vec![a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, vec![StatusCode::OK, StatusCode::CONFLICT]);
    let (won, lost) = if a.status == StatusCode::OK {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(lost.code(), "claimed");
    assert_eq!(
        lost.json()["error"]["details"]["claimed_by"],
        won.json()["holder_name"]
    );
    assert_eq!(app.count("SELECT count(*) FROM review_claims").await?, 1);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE event_type = 'REVIEW_CLAIMED'")
            .await?,
        1
    );
    app.stop().await;
    Ok(())
}
