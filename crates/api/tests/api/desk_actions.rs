//! What people do on the desk (issue 25, item 4, and the reprocess rule of item 5): forms that
//! create something are applied once per rendered form, the review form preselects nothing and
//! keeps what was typed when an action is refused, a conflict names who changed what, only a
//! reviewer or an admin reads a RESOLVED case again (its resolution stays in the history),
//! the case list shows each case's decision, and `n` moves on to another case.

use crate::desk::hidden;
use crate::helpers::{form, Answer, TestApp};
use ironclad_core::role::Role;
use reqwest::StatusCode;
use serde_json::json;

/// A desk form that creates something: where it is, and what it sends.
struct CreateForm {
    page: &'static str,
    form_id: &'static str,
    action: &'static str,
    fields: Vec<(&'static str, &'static str)>,
}

#[tokio::test]
async fn a_create_form_sent_again_creates_nothing_and_shows_the_first_result() -> anyhow::Result<()>
{
    let app = TestApp::spawn_with(ironclad_api::ApiConfig {
        webhook_allow_private: true,
        ..ironclad_api::ApiConfig::default()
    })
    .await?;
    app.user(app.tenant, "boss@example.com", Role::Admin)
        .await?;
    let admin = app.sign_in("boss@example.com").await?;
    let csrf = admin.csrf.as_str();
    let keys = "SELECT count(*) FROM api_keys";
    let users = "SELECT count(*) FROM users";
    let endpoints = "SELECT count(*) FROM webhook_endpoints";
    let before = (
        app.count(keys).await?,
        app.count(users).await?,
        app.count(endpoints).await?,
    );

    // Each create form, POSTed twice with its rendered token (a double click, a re-POST
    // after a refresh): the second answer lands on the first result, without its secret.
    let forms = [
        CreateForm {
            page: "/admin",
            form_id: "new-key-form",
            action: "/admin/keys",
            fields: vec![("role", "operator"), ("label", "ERP")],
        },
        CreateForm {
            page: "/admin",
            form_id: "new-user-form",
            action: "/admin/users",
            fields: vec![
                ("email", "twice@example.com"),
                ("role", "reviewer"),
                ("name", "Tw Ice"),
            ],
        },
        CreateForm {
            page: "/admin/webhooks",
            form_id: "new-endpoint-form",
            action: "/admin/webhooks",
            fields: vec![("url", "http://127.0.0.1:9/once")],
        },
    ];
    for CreateForm {
        page,
        form_id,
        action,
        fields,
    } in forms
    {
        let token = app.form_token(&admin.cookie, page, form_id).await?;
        let mut sent: Vec<(&str, &str)> = vec![("csrf", csrf), ("form_token", &token)];
        sent.extend(fields.iter().copied());
        let first = app.post_form(&admin.cookie, action, &sent).await?;
        let again = app.post_form(&admin.cookie, action, &sent).await?;
        assert_eq!(
            first.status,
            StatusCode::SEE_OTHER,
            "{action}: {}",
            first.text()
        );
        assert_eq!(
            again.status,
            StatusCode::SEE_OTHER,
            "{action}: {}",
            again.text()
        );
        assert_eq!(
            first.header("location"),
            again.header("location"),
            "{action}"
        );
        let shown = app.follow(&admin.cookie, &first).await?;
        assert!(
            shown.text().contains("id=\"secret-value\""),
            "{action}: secret shown"
        );
        let refreshed = app.follow(&admin.cookie, &again).await?;
        assert_eq!(refreshed.status, StatusCode::OK);
        assert!(
            !refreshed.text().contains("id=\"secret-value\""),
            "{action}: the secret is shown once"
        );
        assert!(
            refreshed.text().contains("shown once"),
            "{action}: {}",
            refreshed.text()
        );
        // The same token with other fields is refused, not replayed.
        let mut changed = sent.clone();
        changed.push(("description", "other"));
        changed.retain(|(k, _)| *k != "label" && *k != "name");
        changed.push(("label", "changed"));
        changed.push(("name", "Changed"));
        let reused = app.post_form(&admin.cookie, action, &changed).await?;
        assert_eq!(
            reused.status,
            StatusCode::CONFLICT,
            "{action}: {}",
            reused.text()
        );
    }
    assert_eq!(
        (
            app.count(keys).await?,
            app.count(users).await?,
            app.count(endpoints).await?,
        ),
        (before.0 + 1, before.1 + 1, before.2 + 1),
        "one key, one user, one endpoint"
    );

    // The upload page makes its idempotency key when it renders (a new one each time); the
    // intake applies a key once, so sending the page's upload twice makes one case.
    let upload = app.page(&admin.cookie, "/upload").await?.text();
    let key = upload
        .split("data-idempotency-key=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_default()
        .to_owned();
    assert!(key.starts_with("desk-upload-"), "{upload}");
    assert!(!app
        .page(&admin.cookie, "/upload")
        .await?
        .text()
        .contains(&key));
    let pdf = ironclad_inspect::fixtures::pdf_with_pages(1, "Invoice");
    let mut cases = Vec::new();
    for _ in 0..2 {
        let answer = Answer::read(
            crate::desk::browser()?
                .post(app.url("/v1/cases"))
                .header("cookie", &admin.cookie)
                .header("x-csrf-token", csrf)
                .header("idempotency-key", &key)
                .multipart(form(&[("a.pdf", &pdf)]))
                .send()
                .await?,
        )
        .await?;
        assert!(answer.status.is_success(), "{}", answer.text());
        cases.push(answer.json()["case_id"].clone());
    }
    assert_eq!(cases[0], cases[1]);
    assert_eq!(app.count("SELECT count(*) FROM cases").await?, 1);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_review_form_preselects_nothing_and_a_refusal_keeps_the_comment() -> anyhow::Result<()>
{
    let app = TestApp::spawn().await?;
    let case = app.decided_case().await?;
    app.user(app.tenant, "rev@example.com", Role::Reviewer)
        .await?;
    let s = app.sign_in("rev@example.com").await?;
    let path = format!("/cases/{case}");
    let page = app.page(&s.cookie, &path).await?.text();
    let form = page
        .split("id=\"review-form\"")
        .nth(1)
        .and_then(|f| f.split("</form>").next())
        .unwrap_or_default()
        .to_owned();
    assert!(form.contains("value=\"OVERRIDE\""), "{form}");
    assert!(!form.contains(" checked"), "nothing is preselected: {form}");
    assert!(
        !form.contains("value=\"APPROVE\""),
        "APPROVE is offered only on a READY decision"
    );
    let fields = |action: &'static str, comment: &'static str, key: &'static str| {
        let (csrf, seen) = (s.csrf.clone(), hidden(&page, "seen_event", None));
        vec![
            ("csrf", csrf),
            ("action", action.to_owned()),
            ("expected_decision_version", "1".to_owned()),
            ("comment", comment.to_owned()),
            ("idempotency_key", key.to_owned()),
            ("seen_event", seen),
        ]
    };
    let a = &app;
    let post = |fields: Vec<(&'static str, String)>| {
        let path = format!("{path}/review");
        let cookie = s.cookie.clone();
        async move {
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            a.post_form(&cookie, &path, &fields).await
        }
    };

    // An override without a comment: the reason beside the form, the choice kept, and no
    // claim that anyone else did anything.
    let refused = post(fields("OVERRIDE", "", "k1")).await?;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.text()
    );
    let html = refused.text();
    assert!(html.contains("id=\"review-problem\""), "{html}");
    assert!(!html.contains("Someone else changed"), "{html}");
    assert!(
        html.contains("value=\"OVERRIDE\" required checked"),
        "{html}"
    );
    // Nothing chosen: said beside the form, the comment kept.
    let refused = post(fields("", "looked at the weights", "k2")).await?;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let html = refused.text();
    assert!(html.contains("Choose how to resolve"), "{html}");
    assert!(html.contains(">looked at the weights</textarea>"), "{html}");
    assert!(!html.contains("Someone else changed"), "{html}");

    // Someone else resolves it meanwhile: the stale form names them and what they did.
    app.user(app.tenant, "other@example.com", Role::Reviewer)
        .await?;
    let other = app.sign_in("other@example.com").await?;
    let theirs = app.page(&other.cookie, &path).await?.text();
    let done = app
        .post_form(
            &other.cookie,
            &format!("{path}/review"),
            &[
                ("csrf", &other.csrf),
                ("action", "REJECT"),
                ("expected_decision_version", "1"),
                ("comment", "wrong container"),
                (
                    "idempotency_key",
                    &hidden(&theirs, "idempotency_key", Some("review-form")),
                ),
                ("seen_event", &hidden(&theirs, "seen_event", None)),
            ],
        )
        .await?;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text());
    let late = post(fields("REJECT", "my own view", "k3")).await?;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.text());
    let html = late.text();
    assert!(html.contains("Someone else changed this case."), "{html}");
    assert!(
        html.contains("other@example.com resolved the review (REJECTED)"),
        "{html}"
    );
    let resolved: i64 = app
        .count("SELECT count(*) FROM audit_events WHERE event_type = 'REVIEW_RESOLVED'")
        .await?;
    assert_eq!(resolved, 1);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn only_a_reviewer_or_admin_reads_a_resolved_case_again_and_its_resolution_stays(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.decided_case().await?;
    let open_case = app.decided_case().await?;
    let reviewer_key = app.key_for(app.tenant, Role::Reviewer).await?;
    let post = |path: String, key: String, idem: &'static str, body: serde_json::Value| {
        let client = app.client.clone();
        let url = app.url(&path);
        async move {
            Answer::read(
                client
                    .post(url)
                    .bearer_auth(key)
                    .header("idempotency-key", idem)
                    .json(&body)
                    .send()
                    .await?,
            )
            .await
        }
    };
    let rejected = post(
        format!("/v1/cases/{case}/reviews"),
        reviewer_key.clone(),
        "r1",
        json!({"action": "REJECT", "expected_decision_version": 1, "comment": "forged invoice"}),
    )
    .await?;
    assert_eq!(rejected.status, StatusCode::OK, "{}", rejected.text());
    let generation = || async {
        Ok::<i32, anyhow::Error>(
            sqlx::query_scalar("SELECT generation FROM cases WHERE id = $1")
                .bind(case.0)
                .fetch_one(app.db.store.pool())
                .await?,
        )
    };

    // An operator's key: 403 with the reason, and the case is untouched.
    let path = format!("/v1/cases/{case}/reprocess");
    let refused = post(
        path.clone(),
        app.key.clone(),
        "p1",
        json!({"reason": "again"}),
    )
    .await?;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert_eq!(refused.code(), "forbidden");
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("RESOLVED") && message.contains("reviewer"),
        "{message}"
    );
    assert_eq!(generation().await?, 1);
    // On the desk: an operator sees why there is no form, and a forged one is refused too.
    app.user(app.tenant, "op@example.com", Role::Operator)
        .await?;
    let op = app.sign_in("op@example.com").await?;
    let page = app
        .page(&op.cookie, &format!("/cases/{case}"))
        .await?
        .text();
    assert!(page.contains("id=\"reprocess-refused\""), "{page}");
    assert!(!page.contains("id=\"reprocess-form\""));
    let forged = app
        .post_form(
            &op.cookie,
            &format!("/cases/{case}/reprocess"),
            &[
                ("csrf", &op.csrf),
                ("reason", "again"),
                ("idempotency_key", "d1"),
            ],
        )
        .await?;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.text());
    assert!(forged.text().contains("only a reviewer or an admin"));
    assert_eq!(generation().await?, 1);
    // A reviewer may not read again a case that is not resolved (that is an operator's).
    let not_theirs = post(
        format!("/v1/cases/{open_case}/reprocess"),
        reviewer_key.clone(),
        "p2",
        json!({"reason": "again"}),
    )
    .await?;
    assert_eq!(
        not_theirs.status,
        StatusCode::FORBIDDEN,
        "{}",
        not_theirs.text()
    );

    // A reviewer reopens it: a new generation, and the REJECT stays in the history and on
    // the page.
    let done = post(
        path,
        reviewer_key,
        "p3",
        json!({"reason": "new scan of the invoice"}),
    )
    .await?;
    assert_eq!(done.status, StatusCode::ACCEPTED, "{}", done.text());
    assert_eq!(generation().await?, 2);
    let (status, resolution): (String, Option<String>) =
        sqlx::query_as("SELECT status, resolution FROM reviews WHERE case_id = $1")
            .bind(case.0)
            .fetch_one(app.db.store.pool())
            .await?;
    assert_eq!(
        (status.as_str(), resolution.as_deref()),
        ("RESOLVED", Some("REJECTED"))
    );
    app.user(app.tenant, "rev@example.com", Role::Reviewer)
        .await?;
    let rev = app.sign_in("rev@example.com").await?;
    let page = app
        .page(&rev.cookie, &format!("/cases/{case}"))
        .await?
        .text();
    let earlier = page
        .split("id=\"earlier\"")
        .nth(1)
        .and_then(|p| p.split("</section>").next())
        .unwrap_or_default();
    assert!(earlier.contains("REJECTED"), "{page}");
    assert!(earlier.contains("forged invoice"), "{earlier}");
    assert!(
        !page.contains("api_key:"),
        "actors are named, not shown as ids"
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_list_shows_each_cases_decision_and_n_moves_to_another_case() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let first = app.decided_case().await?;
    let second = app.decided_case().await?;
    app.user(app.tenant, "rev@example.com", Role::Reviewer)
        .await?;
    let s = app.sign_in("rev@example.com").await?;
    let list = app.page(&s.cookie, "/").await?.text();
    let rows = list
        .matches("<span class=\"badge review_required\">REVIEW_REQUIRED</span>")
        .count();
    assert_eq!(rows, 2, "every waiting case shows its decision: {list}");

    let a = &app;
    let next = |after: Option<&str>| {
        let path = match after {
            Some(after) => format!("/queue/next?after={after}"),
            None => "/queue/next".to_owned(),
        };
        let cookie = s.cookie.clone();
        async move {
            Ok::<_, anyhow::Error>(
                a.page(&cookie, &path)
                    .await?
                    .header("location")
                    .unwrap_or_default(),
            )
        }
    };
    let (first, second) = (first.to_string(), second.to_string());
    assert_eq!(next(None).await?, format!("/cases/{first}"));
    assert_eq!(next(Some(&first)).await?, format!("/cases/{second}"));
    assert_eq!(
        next(Some(&second)).await?,
        format!("/cases/{first}"),
        "wraps round"
    );
    // The last one resolved: from it, no other case waits.
    let other = app.sign_in("rev@example.com").await?;
    {
        let case = &first;
        let page = app
            .page(&other.cookie, &format!("/cases/{case}"))
            .await?
            .text();
        let done = app
            .post_form(
                &other.cookie,
                &format!("/cases/{case}/review"),
                &[
                    ("csrf", &other.csrf),
                    ("action", "REJECT"),
                    ("expected_decision_version", "1"),
                    (
                        "idempotency_key",
                        &hidden(&page, "idempotency_key", Some("review-form")),
                    ),
                ],
            )
            .await?;
        assert_eq!(done.status, StatusCode::SEE_OTHER);
    }
    assert_eq!(next(Some(&second)).await?, "/queue?done=none-other");
    let queue = app.page(&s.cookie, "/queue?done=none-other").await?.text();
    assert!(queue.contains("No other case waits"));
    let list = app.page(&s.cookie, "/").await?.text();
    assert!(
        list.contains("<span class=\"badge rejected\">REJECTED</span>"),
        "REJECTED in its own colour: {list}"
    );
    app.stop().await;
    Ok(())
}
