//! Four eyes (issue 25, item 2): under `policy.four_eyes: [OVERRIDE, CORRECTION]` such an
//! action leaves the review AWAITING_SECOND; another reviewer confirms or declines it; nobody
//! confirms their own; the audit names both people.

use crate::helpers::TestApp;
use crate::reading::{dossier, fact, trade_with_policy, typed};
use ironclad_core::role::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn events(
    app: &TestApp,
    case: ironclad_core::CaseId,
) -> anyhow::Result<Vec<(String, String, Value)>> {
    Ok(sqlx::query_as(
        "SELECT event_type, actor, data FROM audit_events WHERE case_id = $1 ORDER BY id",
    )
    .bind(case.0)
    .fetch_all(app.db.store.pool())
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_waits_for_a_second_reviewer_who_is_not_the_first() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let workflow = trade_with_policy(&["four_eyes: [OVERRIDE, CORRECTION]"]);
    let case = app
        .read_case(&workflow, &dossier("blocked-container")?)
        .await?;
    let (rita, sam) = (
        app.key_for(app.tenant, Role::Reviewer).await?,
        app.key_for(app.tenant, Role::Reviewer).await?,
    );
    let reviews = format!("/v1/cases/{case}/reviews");
    let second = format!("/v1/cases/{case}/reviews/second");
    let override_ = json!({"action": "OVERRIDE", "expected_decision_version": 1,
                           "comment": "the carrier confirmed the container by phone"});

    let proposed = app
        .post_as(&rita, &reviews, Some("o-1"), &override_)
        .await?;
    assert_eq!(proposed.status, StatusCode::ACCEPTED, "{}", proposed.text());
    let body = proposed.json();
    assert_eq!(body["status"], "AWAITING_SECOND");
    assert_eq!(body["proposed"]["action"], "OVERRIDE");
    assert_eq!(body["proposed"]["resolution"], "OVERRIDDEN");
    assert_eq!(app.case_json(case).await?["status"], "AWAITING_REVIEW");

    // The queue shows what waits for a second reviewer, and who proposed it.
    let waiting = app
        .get("/v1/reviews?status=AWAITING_SECOND", Some(&sam))
        .await?
        .json();
    let rows = waiting["reviews"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 1, "{waiting:#}");
    assert_eq!(rows[0]["proposed_action"], "OVERRIDE");
    assert!(rows[0]["proposed_by_name"]
        .as_str()
        .is_some_and(|n| n.starts_with("API key")));
    assert_eq!(
        app.get("/v1/reviews?status=PENDING", Some(&sam))
            .await?
            .json()["reviews"],
        json!([])
    );

    // Nobody confirms their own; nothing else happens to the case meanwhile.
    let own = app
        .post_as(
            &rita,
            &second,
            Some("s-own"),
            &json!({"opinion": "CONFIRM", "expected_decision_version": 1}),
        )
        .await?;
    assert_eq!(
        (own.status, own.code()),
        (StatusCode::FORBIDDEN, "forbidden".to_owned()),
        "{}",
        own.text()
    );
    let again = app
        .post_as(
            &sam,
            &reviews,
            Some("o-2"),
            &json!({"action": "REJECT", "expected_decision_version": 1}),
        )
        .await?;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text());
    assert!(again.json()["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("waits for a second reviewer")));

    // Sam declines: the review waits for a person again, and Rita may propose anew.
    let declined = app
        .post_as(
            &sam,
            &second,
            Some("s-1"),
            &json!({"opinion": "DECLINE", "expected_decision_version": 1,
                                                       "comment": "call the carrier again"}),
        )
        .await?;
    assert_eq!(declined.status, StatusCode::OK, "{}", declined.text());
    assert_eq!(declined.json()["status"], "PENDING");
    let proposed = app
        .post_as(&rita, &reviews, Some("o-3"), &override_)
        .await?;
    assert_eq!(proposed.status, StatusCode::ACCEPTED);

    // Sam confirms: resolved as Rita's override, confirmed by Sam.
    let confirmed = app
        .post_as(
            &sam,
            &second,
            Some("s-2"),
            &json!({"opinion": "CONFIRM", "expected_decision_version": 1}),
        )
        .await?;
    assert_eq!(confirmed.status, StatusCode::OK, "{}", confirmed.text());
    let body = confirmed.json();
    assert_eq!(
        (&body["status"], &body["resolution"]),
        (&json!("RESOLVED"), &json!("OVERRIDDEN"))
    );
    let detail = app.case_json(case).await?;
    assert_eq!(
        (&detail["status"], &detail["resolution"]),
        (&json!("RESOLVED"), &json!("OVERRIDDEN"))
    );
    let rita_actor = body["actor"].as_str().unwrap_or_default().to_owned();
    let sam_actor = body["confirmed_by"].as_str().unwrap_or_default().to_owned();
    assert!(rita_actor.starts_with("api_key:") && sam_actor.starts_with("api_key:"));
    assert_ne!(rita_actor, sam_actor);
    assert_eq!(detail["resolved_by"], rita_actor.as_str());
    // A replay answers the same.
    let replay = app
        .post_as(
            &sam,
            &second,
            Some("s-2"),
            &json!({"opinion": "CONFIRM", "expected_decision_version": 1}),
        )
        .await?;
    assert_eq!(
        (replay.status, replay.json()),
        (StatusCode::OK, body.clone())
    );

    // The audit shows both people at each step.
    let trail: Vec<(String, String)> = events(&app, case)
        .await?
        .into_iter()
        .filter(|(t, _, _)| {
            matches!(
                t.as_str(),
                "RESOLUTION_PROPOSED" | "SECOND_DECLINED" | "SECOND_CONFIRMED" | "REVIEW_RESOLVED"
            )
        })
        .map(|(t, actor, _)| (t, actor))
        .collect();
    assert_eq!(
        trail,
        vec![
            ("RESOLUTION_PROPOSED".to_owned(), rita_actor.clone()),
            ("SECOND_DECLINED".to_owned(), sam_actor.clone()),
            ("RESOLUTION_PROPOSED".to_owned(), rita_actor.clone()),
            ("SECOND_CONFIRMED".to_owned(), sam_actor.clone()),
            ("REVIEW_RESOLVED".to_owned(), rita_actor.clone()),
        ]
    );
    let resolved = events(&app, case)
        .await?
        .into_iter()
        .find(|(t, _, _)| t == "REVIEW_RESOLVED")
        .map(|(_, _, data)| data)
        .unwrap_or_default();
    assert_eq!(resolved["confirmed_by"], sam_actor.as_str());
    app.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correction_under_four_eyes_is_applied_only_when_a_second_reviewer_confirms_it(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let workflow = trade_with_policy(&["four_eyes: [CORRECTION]"]);
    let case = app
        .read_case(&workflow, &dossier("blocked-container")?)
        .await?;
    let (rita, sam) = (
        app.key_for(app.tenant, Role::Reviewer).await?,
        app.key_for(app.tenant, Role::Reviewer).await?,
    );
    let detail = app.case_json(case).await?;
    let (invoice, _) = fact(&detail, "commercial_invoice", "container_number");
    let body = typed(
        invoice,
        "container_number",
        "HLXU8072159",
        "matches the B/L",
        1,
    );
    let proposed = app
        .post_as(
            &rita,
            &format!("/v1/cases/{case}/corrections"),
            Some("c-1"),
            &body,
        )
        .await?;
    assert_eq!(proposed.status, StatusCode::ACCEPTED, "{}", proposed.text());
    assert_eq!(proposed.json()["proposed"]["action"], "CORRECTION");
    // Nothing is applied yet: one decision, the value as read.
    assert_eq!(app.count("SELECT count(*) FROM decisions").await?, 1);
    let now = app.case_json(case).await?;
    let (_, still) = fact(&now, "commercial_invoice", "container_number");
    assert_eq!(
        (
            still["version"].clone(),
            still["value"]["value"]["code"].clone()
        ),
        (json!(1), json!("HLXU8072164"))
    );

    let second = format!("/v1/cases/{case}/reviews/second");
    let own = app
        .post_as(
            &rita,
            &second,
            Some("s-0"),
            &json!({"opinion": "CONFIRM", "expected_decision_version": 1}),
        )
        .await?;
    assert_eq!(own.status, StatusCode::FORBIDDEN);
    let confirmed = app
        .post_as(
            &sam,
            &second,
            Some("s-1"),
            &json!({"opinion": "CONFIRM", "expected_decision_version": 1,
                                                       "comment": "checked the B/L"}),
        )
        .await?;
    assert_eq!(
        confirmed.status,
        StatusCode::CREATED,
        "{}",
        confirmed.text()
    );
    assert_eq!(confirmed.json()["decision"]["version"], 2);
    let after = app.case_json(case).await?;
    assert_eq!(
        (&after["decision"]["origin"], &after["decision"]["status"]),
        (&json!("correction"), &json!("READY"))
    );
    let (_, applied) = fact(&after, "commercial_invoice", "container_number");
    assert_eq!(applied["value"]["value"]["code"], "HLXU8072159");
    let (second_actor, status): (Option<String>, String) =
        sqlx::query_as("SELECT second_actor, status FROM corrections")
            .fetch_one(app.db.store.pool())
            .await?;
    assert_eq!(status, "APPLIED");
    let trail = events(&app, case).await?;
    let of = |t: &str| {
        trail
            .iter()
            .find(|(e, _, _)| e == t)
            .map(|(_, a, d)| (a.clone(), d.clone()))
    };
    let (proposer, _) = of("CORRECTION_PROPOSED").unwrap_or_default();
    let (confirmer, _) = of("SECOND_CONFIRMED").unwrap_or_default();
    let (corrector, data) = of("FACT_CORRECTED").unwrap_or_default();
    assert_eq!(corrector, proposer, "the correction stays the proposer's");
    assert_eq!(second_actor.as_deref(), Some(confirmer.as_str()));
    assert_ne!(proposer, confirmer);
    assert_eq!(data["confirmed_by"], confirmer.as_str());
    app.stop().await;
    Ok(())
}
