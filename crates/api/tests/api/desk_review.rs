//! The desk's review work over HTTP, as a signed-in person does it: claiming a case, the
//! correction form (refused with the parser's message and what was typed kept; saved, then
//! the new decision shown with "corrected by" and the person's name), what another reviewer
//! sees meanwhile, the queue's tabs with an overdue review, and `n` never reopening the same
//! case.

use crate::desk::Signed;
use crate::helpers::{Answer, TestApp};
use crate::reading::{dossier, fact, trade_with_policy};
use ironclad_core::role::Role;
use reqwest::StatusCode;

impl TestApp {
    /// A reviewer of the test's tenant, signed in through the sign-in form.
    async fn person(&self, email: &str, role: Role) -> anyhow::Result<Signed> {
        self.user(self.tenant, email, role).await?;
        self.sign_in(email).await
    }

    /// Posts a desk form as `who`, with their CSRF token.
    async fn submit_form(
        &self,
        who: &Signed,
        path: &str,
        fields: &[(&str, &str)],
    ) -> anyhow::Result<Answer> {
        let mut fields = fields.to_vec();
        fields.push(("csrf", &who.csrf));
        self.post_form(&who.cookie, path, &fields).await
    }
}

/// The value of `name="<field>" value="…"` in a form of `html`.
fn form_value(html: &str, field: &str) -> String {
    html.split(&format!("name=\"{field}\" value=\""))
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_claims_a_case_corrects_a_value_and_sees_the_new_decision() -> anyhow::Result<()>
{
    let app = TestApp::spawn().await?;
    let case = app
        .read_case(&trade_with_policy(&[]), &dossier("blocked-container")?)
        .await?;
    let rita = app.person("rita@example.com", Role::Reviewer).await?;
    let sam = app.person("sam@example.com", Role::Reviewer).await?;
    let detail = app.case_json(case).await?;
    let (invoice, _) = fact(&detail, "commercial_invoice", "container_number");
    let segment = invoice["id"].as_str().unwrap_or_default().to_owned();
    let page = format!("/cases/{case}");

    // Unclaimed: Rita sees Correct links and claims the review.
    let html = app.page(&rita.cookie, &page).await?.text();
    assert!(html.contains("Nobody is reviewing this case."), "{html}");
    assert!(html.contains(&format!("?correct={segment}:container_number")));
    assert!(html.contains("id=\"correction\" aria-labelledby=\"correction-h\" hidden"));
    let claimed = app
        .submit_form(&rita, &format!("{page}/claim"), &[("what", "claim")])
        .await?;
    assert_eq!(claimed.status, StatusCode::SEE_OTHER, "{}", claimed.text());
    let html = app
        .page(&rita.cookie, &format!("{page}?done=claimed"))
        .await?
        .text();
    assert!(html.contains("You are reviewing this case until"), "{html}");
    assert!(html.contains("data-renew=\"true\""));
    // What the open page does every minute: a background renewal with the session.
    let renewed = Answer::read(
        reqwest::Client::new()
            .post(app.url(&format!("/v1/cases/{case}/claim")))
            .header("cookie", &rita.cookie)
            .header("x-csrf-token", &rita.csrf)
            .header("x-ironclad-poll", "1")
            .send()
            .await?,
    )
    .await?;
    assert_eq!(renewed.status, StatusCode::OK, "{}", renewed.text());
    assert_eq!(renewed.json()["change"], "renewed");

    // Sam reads it but may not act: no review form, no Correct link, the take-over form.
    let html = app.page(&sam.cookie, &page).await?.text();
    assert!(
        html.contains("rita@example.com is reviewing this case"),
        "{html}"
    );
    assert!(!html.contains("id=\"review-form\"") && !html.contains("class=\"correct\""));
    assert!(html.contains("id=\"takeover-form\""));

    // The Correct link opens the form for the field, without script.
    let html = app
        .page(
            &rita.cookie,
            &format!("{page}?correct={segment}:container_number"),
        )
        .await?
        .text();
    assert!(!html.contains("id=\"correction\" aria-labelledby=\"correction-h\" hidden"));
    assert!(html.contains("commercial_invoice — container_number"));
    let key = form_value(
        html.split("id=\"correction-form\"")
            .nth(1)
            .unwrap_or_default(),
        "idempotency_key",
    );
    let correction = |value: &'static str, reason: &'static str| {
        [
            ("segment", segment.clone()),
            ("field", "container_number".to_owned()),
            ("value", value.to_owned()),
            ("reason", reason.to_owned()),
            ("expected_decision_version", "1".to_owned()),
            ("idempotency_key", key.clone()),
        ]
    };
    // A value the parser refuses: the form again, the parser's message beside it, the typed
    // value and reason kept.
    let fields = correction("HLXU80721", "typo on the invoice");
    let refs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = app
        .submit_form(&rita, &format!("{page}/corrections"), &refs)
        .await?;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.text()
    );
    let html = refused.text();
    assert!(html.contains("id=\"correction-problem\""), "{html}");
    assert!(html.contains("not a valid container_number"), "{html}");
    assert!(
        html.contains("value=\"HLXU80721\"") && html.contains(">typo on the invoice</textarea>")
    );
    assert_eq!(app.count("SELECT count(*) FROM decisions").await?, 1);

    // Saved: the case is decided again and the page says by whom and why.
    let fields = correction("HLXU8072159", "typo on the invoice");
    let refs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let saved = app
        .submit_form(&rita, &format!("{page}/corrections"), &refs)
        .await?;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.text());
    let location = saved.header("location").unwrap_or_default();
    assert_eq!(location, format!("{page}?done=correction"));
    let html = app.page(&rita.cookie, &location).await?.text();
    assert!(
        html.contains("Your correction was saved. The case was decided again: decision v2 below."),
        "{html}"
    );
    assert!(html.contains("Decision <span class=\"muted\">v2</span>"));
    assert!(html.contains("container_number corrected by rita@example.com: typo on the invoice"));
    assert!(html.contains("corrected by rita@example.com: typo on the invoice (was HLXU8072164)"));
    // Submitted twice (a double click, the back button): applied once.
    let again = app
        .submit_form(&rita, &format!("{page}/corrections"), &refs)
        .await?;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
    assert_eq!(app.count("SELECT count(*) FROM decisions").await?, 2);
    app.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_tabs_show_claims_second_reviews_and_overdue_cases_and_n_moves_on(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let workflow = trade_with_policy(&["four_eyes: [OVERRIDE]", "review_sla: 2h"]);
    let first = app
        .read_case(&workflow, &dossier("blocked-container")?)
        .await?;
    let second = app
        .read_case(&workflow, &dossier("blocked-invoice-reference")?)
        .await?;
    let rita = app.person("rita@example.com", Role::Reviewer).await?;
    let sam = app.person("sam@example.com", Role::Reviewer).await?;
    let claimed = app
        .submit_form(
            &rita,
            &format!("/cases/{first}/claim"),
            &[("what", "claim")],
        )
        .await?;
    assert_eq!(claimed.status, StatusCode::SEE_OTHER);
    sqlx::query("UPDATE reviews SET due_at = now() - interval '5 minutes' WHERE case_id = $1")
        .bind(second.0)
        .execute(app.db.store.pool())
        .await?;

    let queue = app.page(&sam.cookie, "/queue").await?.text();
    assert!(queue.contains("rita@example.com is reviewing"), "{queue}");
    assert!(queue.contains("class=\"overdue\"") && queue.contains("badge overdue"));
    let mine = app.page(&rita.cookie, "/queue?show=mine").await?.text();
    assert!(mine.contains(&first.to_string()) && !mine.contains(&second.to_string()));
    assert!(mine.contains("You are reviewing"));
    let unclaimed = app
        .page(&rita.cookie, "/queue?show=unclaimed")
        .await?
        .text();
    assert!(unclaimed.contains(&second.to_string()) && !unclaimed.contains(&first.to_string()));
    // The operations page counts it with the pilot measures.
    let ada = app.person("ada@example.com", Role::Admin).await?;
    let operations = app.page(&ada.cookie, "/operations").await?.text();
    assert!(operations.contains("· 1 overdue"), "{operations}");
    let overdue = app.page(&rita.cookie, "/queue?show=overdue").await?.text();
    assert!(overdue.contains(&second.to_string()) && !overdue.contains(&first.to_string()));

    // `n` from a case goes on to another case, never the same one; Sam skips Rita's.
    let next = app
        .page(&rita.cookie, &format!("/queue/next?after={first}"))
        .await?;
    assert_eq!(next.header("location"), Some(format!("/cases/{second}")));
    let next = app
        .page(&rita.cookie, &format!("/queue/next?after={second}"))
        .await?;
    assert_eq!(next.header("location"), Some(format!("/cases/{first}")));
    let next = app.page(&sam.cookie, "/queue/next").await?;
    assert_eq!(next.header("location"), Some(format!("/cases/{second}")));
    let next = app
        .page(&sam.cookie, &format!("/queue/next?after={second}"))
        .await?;
    assert_eq!(
        next.header("location").as_deref(),
        Some("/queue?done=none-other")
    );

    // Sam overrides the overdue case: it waits for a second reviewer, which Rita's queue
    // shows; Sam's own page says someone else must confirm.
    let html = app
        .page(&sam.cookie, &format!("/cases/{second}"))
        .await?
        .text();
    let key = form_value(
        html.split("id=\"review-form\"").nth(1).unwrap_or_default(),
        "idempotency_key",
    );
    let proposed = app
        .submit_form(
            &sam,
            &format!("/cases/{second}/review"),
            &[
                ("action", "OVERRIDE"),
                ("expected_decision_version", "1"),
                ("comment", "the invoice was reissued"),
                ("idempotency_key", &key),
            ],
        )
        .await?;
    assert_eq!(
        proposed.status,
        StatusCode::SEE_OTHER,
        "{}",
        proposed.text()
    );
    let html = app
        .page(
            &sam.cookie,
            &format!("/cases/{second}?done=review-proposed"),
        )
        .await?
        .text();
    assert!(
        html.contains("Your resolution waits for a second reviewer"),
        "{html}"
    );
    assert!(html.contains("id=\"second-own\""));
    let waiting = app.page(&rita.cookie, "/queue?show=second").await?.text();
    assert!(
        waiting.contains("OVERRIDE by sam@example.com waits for a second reviewer"),
        "{waiting}"
    );
    let html = app
        .page(&rita.cookie, &format!("/cases/{second}"))
        .await?
        .text();
    assert!(html.contains("id=\"second-form\""));
    app.stop().await;
    Ok(())
}
