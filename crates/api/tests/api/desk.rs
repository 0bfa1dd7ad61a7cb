//! The operator's desk over HTTP: sign-in (cookies, throttling, expiry, disabled users), CSRF
//! on forms and on the API called with a session, roles, tenant isolation, the review form
//! with its stale-version conflict, page images and the security headers.

use crate::helpers::{form, Answer, TestApp};
use ironclad_api::password::hash_password;
use ironclad_api::{ApiConfig, DeskConfig};
use ironclad_core::role::Role;
use ironclad_core::TenantId;
use ironclad_store::users::SessionPolicy;
use reqwest::StatusCode;
use std::time::Duration;

pub(crate) const PASSWORD: &str = "correct horse battery";

/// A browser without a cookie jar or redirects: the test sees every cookie and redirect.
pub(crate) fn browser() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?)
}

/// A signed-in browser's session cookie and its CSRF token.
pub(crate) struct Signed {
    pub cookie: String,
    pub csrf: String,
}

/// The value of the hidden field `name` in `html` (the first one after `after`, if given).
pub(crate) fn hidden(html: &str, name: &str, after: Option<&str>) -> String {
    let from = after.and_then(|a| html.find(a)).unwrap_or(0);
    html[from..]
        .split(&format!("name=\"{name}\" value=\""))
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned()
}

/// The `name=value` of a `Set-Cookie` header.
pub(crate) fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap_or_default().to_owned()
}

/// The sign-in form as a browser gets it: its pre-session cookie and token.
pub(crate) struct SignInForm {
    pub cookie: String,
    pub token: String,
}

impl TestApp {
    pub(crate) async fn user(
        &self,
        tenant: TenantId,
        email: &str,
        role: Role,
    ) -> anyhow::Result<()> {
        let hash = hash_password(PASSWORD)?;
        self.db
            .store
            .create_user(tenant, email, role, &hash, "test")
            .await?;
        Ok(())
    }

    /// `GET /login`, keeping what the sign-in POST must send back.
    pub(crate) async fn sign_in_form(&self) -> anyhow::Result<SignInForm> {
        let answer = Answer::read(browser()?.get(self.url("/login")).send().await?).await?;
        let set = answer.header("set-cookie").unwrap_or_default();
        let form = SignInForm {
            cookie: cookie_pair(&set),
            token: hidden(&answer.text(), "signin_token", None),
        };
        anyhow::ensure!(
            form.cookie.starts_with("__Host-ironclad_signin=") && form.token.len() == 64,
            "no pre-session token: {set}"
        );
        Ok(form)
    }

    /// Signs in through the sign-in form, as a browser does.
    pub(crate) async fn login(&self, email: &str, password: &str) -> anyhow::Result<Answer> {
        let form = self.sign_in_form().await?;
        let response = browser()?
            .post(self.url("/login"))
            .header("cookie", &form.cookie)
            .form(&[
                ("email", email),
                ("password", password),
                ("next", "/queue"),
                ("signin_token", &form.token),
            ])
            .send()
            .await?;
        Answer::read(response).await
    }

    pub(crate) async fn sign_in(&self, email: &str) -> anyhow::Result<Signed> {
        let answer = self.login(email, PASSWORD).await?;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text());
        let set = answer
            .headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|c| c.starts_with("__Host-ironclad_session="))
            .unwrap_or_default()
            .to_owned();
        let cookie = cookie_pair(&set);
        anyhow::ensure!(cookie.starts_with("__Host-ironclad_session=ics_"), "{set}");
        let page = self.page(&cookie, "/").await?;
        let csrf = hidden(&page.text(), "csrf", None);
        anyhow::ensure!(csrf.len() == 64, "no CSRF token on the page");
        Ok(Signed { cookie, csrf })
    }

    pub(crate) async fn page(&self, cookie: &str, path: &str) -> anyhow::Result<Answer> {
        let response = browser()?
            .get(self.url(path))
            .header("cookie", cookie)
            .send()
            .await?;
        Answer::read(response).await
    }

    pub(crate) async fn post_form(
        &self,
        cookie: &str,
        path: &str,
        fields: &[(&str, &str)],
    ) -> anyhow::Result<Answer> {
        let response = browser()?
            .post(self.url(path))
            .header("cookie", cookie)
            .form(fields)
            .send()
            .await?;
        Answer::read(response).await
    }

    /// The form token rendered into the form `form_id` of the page at `path`.
    pub(crate) async fn form_token(
        &self,
        cookie: &str,
        path: &str,
        form_id: &str,
    ) -> anyhow::Result<String> {
        let html = self.page(cookie, path).await?.text();
        let token = hidden(&html, "form_token", Some(&format!("id=\"{form_id}\"")));
        anyhow::ensure!(token.len() == 32, "no form token in #{form_id}: {html}");
        Ok(token)
    }

    /// The page a POST's redirect (303) sends the browser to.
    pub(crate) async fn follow(&self, cookie: &str, answer: &Answer) -> anyhow::Result<Answer> {
        anyhow::ensure!(
            answer.status == StatusCode::SEE_OTHER,
            "not a redirect: {} {}",
            answer.status,
            answer.text()
        );
        let to = answer.header("location").unwrap_or_default();
        self.page(cookie, &to).await
    }
}

#[tokio::test]
async fn sign_in_sets_a_guarded_cookie_and_wrong_passwords_are_refused() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    app.user(app.tenant, "Ana@Example.com", Role::Reviewer)
        .await?;

    // Signed out, a page sends the browser to sign in and back.
    let answer = app.page("", "/queue").await?;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(
        answer.header("location").as_deref(),
        Some("/login?next=%2Fqueue")
    );

    for (email, password) in [
        ("ana@example.com", "wrong password here"),
        ("nobody@example.com", PASSWORD),
        ("", ""),
    ] {
        let answer = app.login(email, password).await?;
        assert!(
            matches!(
                answer.status,
                StatusCode::UNAUTHORIZED | StatusCode::BAD_REQUEST
            ),
            "{email}: {}",
            answer.status
        );
        // Only a fresh sign-in form's token, never a session.
        assert!(answer
            .headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .all(|c| c.starts_with("__Host-ironclad_signin=")));
        assert!(
            answer.text().contains("role=\"alert\""),
            "{}",
            answer.text()
        );
    }

    // The address is matched whatever its case; the cookie is __Host- prefixed (Secure,
    // Path=/, no Domain), HttpOnly and SameSite, and the pre-session cookie is cleared.
    let answer = app.login("ANA@example.COM", PASSWORD).await?;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text());
    assert_eq!(answer.header("location").as_deref(), Some("/queue"));
    let sets: Vec<String> = answer
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let set = sets
        .iter()
        .find(|c| c.starts_with("__Host-ironclad_session="))
        .cloned()
        .unwrap_or_default();
    for flag in ["; Path=/;", "; HttpOnly", "; SameSite=Lax", "; Secure"] {
        assert!(set.contains(flag), "{flag} missing: {set}");
    }
    assert!(!set.contains("Domain"), "{set}");
    assert!(
        sets.iter()
            .any(|c| c.starts_with("__Host-ironclad_signin=;") && c.contains("Max-Age=0")),
        "{sets:?}"
    );
    let cookie = cookie_pair(&set);
    let queue = app.page(&cookie, "/queue").await?;
    assert_eq!(queue.status, StatusCode::OK);
    assert!(queue.text().contains("Ana@Example.com"));
    assert_eq!(queue.header("cache-control").as_deref(), Some("no-store"));
    // The same token under the old, unprefixed name (which a sibling subdomain could set)
    // is not a session.
    let unprefixed = cookie.replacen("__Host-", "", 1);
    assert_eq!(
        app.page(&unprefixed, "/queue").await?.status,
        StatusCode::SEE_OTHER
    );

    // An open redirect through `next` is not followed.
    let form = app.sign_in_form().await?;
    let response = browser()?
        .post(app.url("/login"))
        .header("cookie", &form.cookie)
        .form(&[
            ("email", "ana@example.com"),
            ("password", PASSWORD),
            ("next", "//evil.example/"),
            ("signin_token", &form.token),
        ])
        .send()
        .await?;
    assert_eq!(
        Answer::read(response).await?.header("location").as_deref(),
        Some("/")
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn forms_and_api_calls_without_the_csrf_token_are_refused_and_change_nothing(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    app.user(app.tenant, "op@example.com", Role::Operator)
        .await?;
    let s = app.sign_in("op@example.com").await?;
    let before = app.rows().await?;

    // The API, called with the session cookie: reads work, writes need the header.
    let list = app.page(&s.cookie, "/v1/cases").await?;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text());
    let pdf = ironclad_inspect::fixtures::pdf_with_pages(1, "Invoice");
    for token in [None, Some("0".repeat(64))] {
        let mut request = browser()?
            .post(app.url("/v1/cases"))
            .header("cookie", &s.cookie)
            .multipart(form(&[("a.pdf", &pdf)]));
        if let Some(t) = &token {
            request = request.header("x-csrf-token", t);
        }
        let answer = Answer::read(request.send().await?).await?;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text());
        assert_eq!(answer.code(), "csrf_refused");
    }
    assert_eq!(app.rows().await?, before, "a refused upload left rows");
    let answer = Answer::read(
        browser()?
            .post(app.url("/v1/cases"))
            .header("cookie", &s.cookie)
            .header("x-csrf-token", &s.csrf)
            .multipart(form(&[("a.pdf", &pdf)]))
            .send()
            .await?,
    )
    .await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let case = answer.json()["case_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let actor: String = sqlx::query_scalar(
        "SELECT actor FROM audit_events WHERE case_id = $1::uuid AND event_type = 'CASE_INGESTED'",
    )
    .bind(&case)
    .fetch_one(app.db.store.pool())
    .await?;
    assert!(actor.starts_with("user:"), "{actor}");

    // Desk forms: sign-out and reprocess without the token are refused.
    let out = app.post_form(&s.cookie, "/logout", &[]).await?;
    assert_eq!(out.status, StatusCode::FORBIDDEN);
    let reprocess = app
        .post_form(
            &s.cookie,
            &format!("/cases/{case}/reprocess"),
            &[
                ("reason", "again"),
                ("idempotency_key", "k1"),
                ("csrf", "nope"),
            ],
        )
        .await?;
    assert_eq!(reprocess.status, StatusCode::FORBIDDEN);
    assert!(reprocess.text().contains("CSRF"), "{}", reprocess.text());
    let generation: i32 = sqlx::query_scalar("SELECT generation FROM cases WHERE id = $1::uuid")
        .bind(&case)
        .fetch_one(app.db.store.pool())
        .await?;
    assert_eq!(generation, 1, "a refused form changed the case");

    // With the token, sign-out ends the session: the cookie no longer works anywhere.
    let out = app
        .post_form(&s.cookie, "/logout", &[("csrf", &s.csrf)])
        .await?;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(out
        .header("set-cookie")
        .is_some_and(|c| c.contains("Max-Age=0")));
    assert_eq!(
        app.page(&s.cookie, "/").await?.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        app.page(&s.cookie, "/v1/cases").await?.status,
        StatusCode::UNAUTHORIZED
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn roles_and_tenants_bound_what_a_user_reaches() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.decided_case().await?;
    let source: uuid::Uuid = sqlx::query_scalar("SELECT id FROM sources WHERE case_id = $1")
        .bind(case.0)
        .fetch_one(app.db.store.pool())
        .await?;
    app.user(app.tenant, "rev@example.com", Role::Reviewer)
        .await?;
    let other = app.db.store.create_tenant("tenant-b").await?;
    app.user(other, "spy@example.com", Role::Admin).await?;
    let reviewer = app.sign_in("rev@example.com").await?;
    let spy = app.sign_in("spy@example.com").await?;

    // A reviewer sees the case and its page, but not the operator's pages or actions.
    let page = app
        .page(&reviewer.cookie, &format!("/cases/{case}"))
        .await?;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("id=\"review-form\""));
    assert!(!page.text().contains("href=\"/admin\""));
    let image = app
        .page(
            &reviewer.cookie,
            &format!("/cases/{case}/sources/{source}/pages/1"),
        )
        .await?;
    assert_eq!(image.status, StatusCode::OK, "{}", image.text());
    assert_eq!(image.header("content-type").as_deref(), Some("image/png"));
    assert!(image.bytes.starts_with(b"\x89PNG"));
    assert_eq!(
        app.page(&reviewer.cookie, "/upload").await?.status,
        StatusCode::FORBIDDEN
    );
    let upload = Answer::read(
        browser()?
            .post(app.url("/v1/cases"))
            .header("cookie", &reviewer.cookie)
            .header("x-csrf-token", &reviewer.csrf)
            .multipart(form(&[("a.pdf", b"%PDF-1.4")]))
            .send()
            .await?,
    )
    .await?;
    assert_eq!(upload.status, StatusCode::FORBIDDEN);

    // Another tenant's admin gets 404s: the case, its page, a page past the end.
    for path in [
        format!("/cases/{case}"),
        format!("/cases/{case}/sources/{source}/pages/1"),
        format!("/v1/cases/{case}"),
    ] {
        let answer = app.page(&spy.cookie, &path).await?;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}");
    }
    assert_eq!(
        app.page(
            &reviewer.cookie,
            &format!("/cases/{case}/sources/{source}/pages/2")
        )
        .await?
        .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.page(&reviewer.cookie, "/cases/not-a-case")
            .await?
            .status,
        StatusCode::NOT_FOUND
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_review_from_the_desk_resolves_once_and_a_stale_one_shows_the_conflict(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.decided_case().await?;
    app.user(app.tenant, "rev@example.com", Role::Reviewer)
        .await?;
    let s = app.sign_in("rev@example.com").await?;

    // A stale version: the page says what changed and nothing is resolved.
    let stale = app
        .post_form(
            &s.cookie,
            &format!("/cases/{case}/review"),
            &[
                ("csrf", &s.csrf),
                ("action", "REJECT"),
                ("expected_decision_version", "7"),
                ("idempotency_key", "form-1"),
            ],
        )
        .await?;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.text());
    assert!(stale.text().contains("id=\"conflict\""));
    assert!(stale.text().contains("The current decision is version 1"));
    assert_eq!(
        app.db
            .store
            .case_detail(None, case)
            .await?
            .map(|d| d.case.status)
            .as_deref(),
        Some("AWAITING_REVIEW")
    );

    // A comment PostgreSQL cannot store is a clear 400, as on the API, not a 500.
    let nul = app
        .post_form(
            &s.cookie,
            &format!("/cases/{case}/review"),
            &[
                ("csrf", &s.csrf),
                ("action", "REJECT"),
                ("expected_decision_version", "1"),
                ("comment", "bad\u{0}comment"),
                ("idempotency_key", "form-0"),
            ],
        )
        .await?;
    assert_eq!(nul.status, StatusCode::BAD_REQUEST, "{}", nul.text());

    // The current version: resolved, and the same form sent twice is applied once.
    let fields = [
        ("csrf", s.csrf.as_str()),
        ("action", "REJECT"),
        ("expected_decision_version", "1"),
        ("comment", "documents do not match"),
        ("idempotency_key", "form-2"),
    ];
    for _ in 0..2 {
        let done = app
            .post_form(&s.cookie, &format!("/cases/{case}/review"), &fields)
            .await?;
        assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text());
    }
    let resolved: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_events WHERE case_id = $1 AND event_type = 'REVIEW_RESOLVED'",
    )
    .bind(case.0)
    .fetch_one(app.db.store.pool())
    .await?;
    assert_eq!(resolved, 1);
    let page = app
        .page(&s.cookie, &format!("/cases/{case}?done=review"))
        .await?;
    let html = page.text();
    assert!(html.contains("id=\"case-status\">RESOLVED"), "{html}");
    assert!(
        html.contains("by rev@example.com"),
        "timeline names the user: {html}"
    );
    assert!(!html.contains("id=\"review-form\""));
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn sign_in_is_throttled_and_sessions_expire_and_end_with_their_user() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        desk: DeskConfig {
            sessions: SessionPolicy {
                idle: Duration::from_secs(2),
                lifetime: Duration::from_secs(60),
            },
            login_attempts_per_minute: 6,
            ..DeskConfig::default()
        },
        ..ApiConfig::default()
    })
    .await?;
    app.user(app.tenant, "a@example.com", Role::Reviewer)
        .await?;

    // A session unused past its idle time ends.
    let s = app.sign_in("a@example.com").await?;
    assert_eq!(app.page(&s.cookie, "/").await?.status, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        app.page(&s.cookie, "/").await?.status,
        StatusCode::SEE_OTHER
    );

    // Disabling a user ends their sessions at once.
    let s = app.sign_in("a@example.com").await?;
    let users = app.db.store.users_of(app.tenant).await?;
    app.db
        .store
        .disable_user(app.tenant, users[0].id, "test")
        .await?;
    assert_eq!(
        app.page(&s.cookie, "/").await?.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        app.login("a@example.com", PASSWORD).await?.status,
        StatusCode::UNAUTHORIZED
    );

    // Guessing: after the burst, attempts are refused with Retry-After, right or wrong.
    app.user(app.tenant, "b@example.com", Role::Reviewer)
        .await?;
    let mut throttled = None;
    for attempt in 0..8 {
        let answer = app.login("b@example.com", "wrong guess number").await?;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            throttled = Some((attempt, answer));
            break;
        }
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    let (attempt, answer) = throttled.ok_or_else(|| anyhow::anyhow!("never throttled"))?;
    assert!(attempt <= 5, "throttled only at attempt {attempt}");
    assert!(answer.header("retry-after").is_some());
    assert_eq!(
        app.login("b@example.com", PASSWORD).await?.status,
        StatusCode::TOO_MANY_REQUESTS,
        "the right password is throttled too, or throttling tells a guesser it was right"
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    for path in [
        "/login",
        "/healthz",
        "/v1/cases",
        "/assets/desk.js",
        "/no-such-page",
    ] {
        let answer = app.get(path, None).await?;
        let csp = answer.header("content-security-policy").unwrap_or_default();
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(
            answer.header("x-content-type-options").as_deref(),
            Some("nosniff")
        );
        assert_eq!(answer.header("x-frame-options").as_deref(), Some("DENY"));
    }
    // No page holds an inline script the CSP would block.
    let login = app.get("/login", None).await?.text();
    assert!(!login.contains("<script>") && !login.contains(" onclick="));
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn admin_pages_manage_users_and_keys_of_their_own_tenant_only() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    app.user(app.tenant, "boss@example.com", Role::Admin)
        .await?;
    app.user(app.tenant, "rev@example.com", Role::Reviewer)
        .await?;
    let other = app.db.store.create_tenant("tenant-b").await?;
    let foreign_key = app.db.store.create_api_key(other, Role::Operator).await?;
    let admin = app.sign_in("boss@example.com").await?;
    let reviewer = app.sign_in("rev@example.com").await?;

    // A reviewer may not open or post to admin.
    assert_eq!(
        app.page(&reviewer.cookie, "/admin").await?.status,
        StatusCode::FORBIDDEN
    );
    let refused = app
        .post_form(
            &reviewer.cookie,
            "/admin/keys",
            &[("csrf", &reviewer.csrf), ("role", "admin")],
        )
        .await?;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    // The admin makes a key, shown once on the page the form's redirect lands on, that works
    // at once; then revokes it.
    let token = app
        .form_token(&admin.cookie, "/admin", "new-key-form")
        .await?;
    let fields = [
        ("csrf", admin.csrf.as_str()),
        ("role", "operator"),
        ("label", "ERP connector"),
        ("form_token", token.as_str()),
    ];
    let made = app.post_form(&admin.cookie, "/admin/keys", &fields).await?;
    let shown = app.follow(&admin.cookie, &made).await?;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.text());
    let html = shown.text();
    let raw = html
        .split("id=\"secret-value\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap_or_default()
        .to_owned();
    assert!(raw.starts_with("ick_"), "{html}");
    assert!(
        html.contains("ERP connector"),
        "the key is named by its label"
    );
    assert_eq!(
        app.get("/v1/cases", Some(&raw)).await?.status,
        StatusCode::OK
    );
    assert!(!app
        .page(&admin.cookie, "/admin")
        .await?
        .text()
        .contains(&raw));
    let keys = app.db.store.api_keys_of(app.tenant).await?;
    let made_id = keys
        .iter()
        .find(|k| raw.starts_with(&k.prefix))
        .map(|k| k.id)
        .ok_or_else(|| anyhow::anyhow!("key not listed"))?;
    let revoked = app
        .post_form(
            &admin.cookie,
            &format!("/admin/keys/{made_id}/revoke"),
            &[("csrf", &admin.csrf)],
        )
        .await?;
    let after = app.follow(&admin.cookie, &revoked).await?;
    assert!(after.text().contains("is revoked"), "{}", after.text());
    // Another tenant's key is not found, and stays live.
    let foreign = app
        .post_form(
            &admin.cookie,
            &format!("/admin/keys/{}/revoke", foreign_key.id),
            &[("csrf", &admin.csrf)],
        )
        .await?;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    assert!(app.db.store.authenticate(&foreign_key.raw).await?.is_some());

    // A new user gets a random password, shown once, which signs in and must be changed.
    let token = app
        .form_token(&admin.cookie, "/admin", "new-user-form")
        .await?;
    let created = app
        .post_form(
            &admin.cookie,
            "/admin/users",
            &[
                ("csrf", &admin.csrf),
                ("name", "Nora New"),
                ("email", "new@example.com"),
                ("role", "operator"),
                ("form_token", &token),
            ],
        )
        .await?;
    let shown = app.follow(&admin.cookie, &created).await?;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.text());
    let password = shown
        .text()
        .split("id=\"secret-value\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(password.len(), 20);
    assert!(shown.text().contains("Nora New"));
    let signed = app.login("new@example.com", &password).await?;
    assert_eq!(signed.status, StatusCode::SEE_OTHER);
    assert_eq!(
        signed.header("location").as_deref(),
        Some("/account/password"),
        "a password an admin knows must be changed first"
    );
    // The same address again (another form): 409 as a page, nothing created.
    let token = app
        .form_token(&admin.cookie, "/admin", "new-user-form")
        .await?;
    let again = app
        .post_form(
            &admin.cookie,
            "/admin/users",
            &[
                ("csrf", &admin.csrf),
                ("email", "NEW@example.com"),
                ("role", "admin"),
                ("form_token", &token),
            ],
        )
        .await?;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(again.text().contains("already exists"), "{}", again.text());
    app.stop().await;
    Ok(())
}

impl TestApp {
    /// A case of `key`'s tenant, referenced `reference`, whose source job was dead-lettered
    /// (as a worker does with a message past its delivery limit). Returns the job.
    async fn dead_lettered_case(&self, key: &str, reference: &str) -> anyhow::Result<uuid::Uuid> {
        use ironclad_core::{CaseId, Envelope, JobId, JobKind};
        let mut files = form(&[(
            "bl.pdf",
            &ironclad_inspect::fixtures::pdf_with_pages(1, "Bill of Lading"),
        )]);
        files = files.text("external_reference", reference.to_owned());
        let answer = self.post_case(key, files, None).await?;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
        let case: CaseId = answer.json()["case_id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("no case id"))?;
        let job: uuid::Uuid = sqlx::query_scalar("SELECT id FROM jobs WHERE case_id = $1")
            .bind(case.0)
            .fetch_one(self.db.store.pool())
            .await?;
        let envelope = Envelope::new(JobId(job), case, JobKind::ProcessSource, 1);
        self.db
            .store
            .fail_dead_lettered(&envelope, "poison message", "test")
            .await?;
        Ok(job)
    }

    async fn job_status(&self, job: uuid::Uuid) -> anyhow::Result<String> {
        Ok(sqlx::query_scalar("SELECT status FROM jobs WHERE id = $1")
            .bind(job)
            .fetch_one(self.db.store.pool())
            .await?)
    }
}

#[tokio::test]
async fn operations_show_charts_and_requeue_only_the_tenants_dead_letters() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let other = app.db.store.create_tenant("tenant-b").await?;
    let other_key = app.key_for(other, Role::Operator).await?;
    let ours = app.dead_lettered_case(&app.key, "OURS-DEAD-1").await?;
    let theirs = app.dead_lettered_case(&other_key, "THEIRS-DEAD-1").await?;
    app.user(app.tenant, "ops@example.com", Role::Operator)
        .await?;
    app.user(app.tenant, "rev@example.com", Role::Reviewer)
        .await?;
    let ops = app.sign_in("ops@example.com").await?;
    let reviewer = app.sign_in("rev@example.com").await?;

    // No sample yet: the page says so instead of drawing an empty chart.
    let page = app.page(&ops.cookie, "/operations").await?;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text());
    assert!(page.text().contains("No samples yet"));
    assert!(!page.text().contains("data-chart="));
    // The retry volume counts jobs waiting for a retry, not the outbox.
    let metrics = app.get("/metrics", None).await?;
    assert!(
        metrics.text().contains("ironclad_jobs_retry_waiting 0\n"),
        "{}",
        metrics.text()
    );

    // A minute is sampled once, whoever asks twice; then every measure has its chart.
    assert!(app.db.store.record_pilot_sample(Some(4.0)).await?);
    assert!(!app.db.store.record_pilot_sample(Some(9.0)).await?);
    let samples = app
        .db
        .store
        .pilot_samples(Duration::from_secs(3600))
        .await?;
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].pending_age_seconds, Some(4.0));
    assert_eq!(samples[0].terminal_failures, 2, "both tenants' failed jobs");
    let page = app.page(&ops.cookie, "/operations").await?;
    let text = page.text();
    for key in [
        "outbox_age",
        "retries",
        "pending_age",
        "failures",
        "review_wait",
    ] {
        assert!(text.contains(&format!("data-chart=\"{key}\"")), "{key}");
    }
    assert!(text.contains("peak 4 s"), "the pending-age chart's peak");

    // Dead letters: ours, not the other tenant's.
    assert!(text.contains("OURS-DEAD-1"));
    assert!(!text.contains("THEIRS-DEAD-1"));
    assert!(text.contains("dead_lettered: poison message"), "{text}");

    // Without the CSRF token, or as a reviewer, the requeue is refused and changes nothing.
    let forged = app
        .post_form(&ops.cookie, "/operations/requeue", &[("csrf", "forged")])
        .await?;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let reviewed = app
        .post_form(
            &reviewer.cookie,
            "/operations/requeue",
            &[("csrf", reviewer.csrf.as_str())],
        )
        .await?;
    assert_eq!(reviewed.status, StatusCode::FORBIDDEN);
    assert_eq!(
        app.page(&reviewer.cookie, "/operations").await?.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(app.job_status(ours).await?, "FAILED");

    // The operator's requeue starts our job over, leaves theirs, and names the user.
    let done = app
        .post_form(
            &ops.cookie,
            "/operations/requeue",
            &[("csrf", ops.csrf.as_str())],
        )
        .await?;
    assert_eq!(done.status, StatusCode::OK, "{}", done.text());
    assert!(done.text().contains("1 job requeued."));
    assert!(done.text().contains("id=\"no-dead\""));
    assert_eq!(app.job_status(ours).await?, "PENDING");
    assert_eq!(app.job_status(theirs).await?, "FAILED");
    let actor: String = sqlx::query_scalar(
        "SELECT actor FROM audit_events WHERE event_type = 'REQUEUED' ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(app.db.store.pool())
    .await?;
    assert!(actor.starts_with("user:"), "{actor}");
    // Replayed, the form finds nothing left to do.
    let again = app
        .post_form(
            &ops.cookie,
            "/operations/requeue",
            &[("csrf", ops.csrf.as_str())],
        )
        .await?;
    assert!(again.text().contains("Nothing to requeue"));
    assert_eq!(app.job_status(theirs).await?, "FAILED");
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn admins_check_compare_and_activate_rulesets_from_the_desk() -> anyhow::Result<()> {
    use serde_json::json;
    let app = TestApp::spawn().await?;
    app.db
        .store
        .load_workflow("trade", crate::decisions::TRADE)
        .await?;
    let key = app.key_for(app.tenant, Role::Admin).await?;
    let create = |body: serde_json::Value| {
        let key = key.clone();
        let url = app.url("/v1/rulesets");
        async move {
            let r = reqwest::Client::new()
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await?;
            let answer = Answer::read(r).await?;
            anyhow::ensure!(answer.status == StatusCode::CREATED, "{}", answer.text());
            Ok::<String, anyhow::Error>(
                answer.json()["ruleset"]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        }
    };
    let rule = |on_fail: &str| {
        json!({"id": "documents_present", "template": "REQUIRED_DOCUMENT", "on_fail": on_fail,
               "params": {"document_types": ["bill_of_lading", "commercial_invoice"]}})
    };
    let v1 = create(json!({"workflow": "trade", "rules": [rule("REVIEW_REQUIRED")]})).await?;
    let v2 = create(json!({"workflow": "trade", "rules": [rule("BLOCKED"), {
        "id": "ghost", "template": "FIELD_REQUIRED", "on_fail": "BLOCKED",
        "params": {"document_type": "bill_of_lading", "field": "no_such_field"}}]}))
    .await?;
    let other = app.db.store.create_tenant("tenant-b").await?;
    app.user(app.tenant, "admin@example.com", Role::Admin)
        .await?;
    app.user(app.tenant, "ops@example.com", Role::Operator)
        .await?;
    app.user(other, "spy@example.com", Role::Admin).await?;
    let admin = app.sign_in("admin@example.com").await?;
    let ops = app.sign_in("ops@example.com").await?;
    let spy = app.sign_in("spy@example.com").await?;
    let pool = app.db.store.pool().clone();
    let status_of = |id: String| {
        let pool = pool.clone();
        async move {
            Ok::<String, anyhow::Error>(
                sqlx::query_scalar("SELECT status FROM rulesets WHERE id = $1::uuid")
                    .bind(id)
                    .fetch_one(&pool)
                    .await?,
            )
        }
    };

    let list = app.page(&admin.cookie, "/admin/rulesets").await?;
    assert_eq!(list.status, StatusCode::OK, "{}", list.text());
    assert!(list.text().contains(&format!("/admin/rulesets/{v1}")));
    assert!(list.text().contains(&format!("/admin/rulesets/{v2}")));

    // Version 2 is invalid (the issue named) and shows what it changes against version 1.
    let page = app
        .page(&admin.cookie, &format!("/admin/rulesets/{v2}"))
        .await?;
    let text = page.text();
    assert!(text.contains("data-valid=\"false\""), "{text}");
    assert!(text.contains("no_such_field"));
    assert!(text.contains("against version 1 (DRAFT)"), "{text}");
    assert!(text.contains("<code class=\"added\">ghost</code>"));
    assert!(text.contains("Changed: <code>documents_present</code>"));
    let refused = app
        .post_form(
            &admin.cookie,
            &format!("/admin/rulesets/{v2}/activate"),
            &[("csrf", admin.csrf.as_str()), ("comment", "try it")],
        )
        .await?;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().contains("id=\"problem\""));
    assert!(
        refused.text().contains("try it"),
        "the typed comment is kept"
    );
    assert_eq!(status_of(v2.clone()).await?, "DRAFT");

    // Version 1: no comment, a forged token, an operator, another tenant: all refused.
    let path = format!("/admin/rulesets/{v1}/activate");
    let silent = app
        .post_form(
            &admin.cookie,
            &path,
            &[("csrf", admin.csrf.as_str()), ("comment", " ")],
        )
        .await?;
    assert_eq!(silent.status, StatusCode::BAD_REQUEST);
    assert!(silent.text().contains("comment is required"));
    let forged = app
        .post_form(&admin.cookie, &path, &[("csrf", "x"), ("comment", "go")])
        .await?;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let operator = app
        .post_form(
            &ops.cookie,
            &path,
            &[("csrf", ops.csrf.as_str()), ("comment", "go")],
        )
        .await?;
    assert_eq!(operator.status, StatusCode::FORBIDDEN);
    assert_eq!(
        app.page(&ops.cookie, "/admin/rulesets").await?.status,
        StatusCode::FORBIDDEN
    );
    let foreign = app
        .post_form(
            &spy.cookie,
            &path,
            &[("csrf", spy.csrf.as_str()), ("comment", "go")],
        )
        .await?;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    assert_eq!(status_of(v1.clone()).await?, "DRAFT");

    // Activated with a comment: ACTIVE, the comment and the user in the row and on the page;
    // activating it again is a conflict that shows the current state.
    let done = app
        .post_form(
            &admin.cookie,
            &path,
            &[
                ("csrf", admin.csrf.as_str()),
                ("comment", "pilot rules go live"),
            ],
        )
        .await?;
    assert_eq!(done.status, StatusCode::OK, "{}", done.text());
    assert!(done.text().contains("id=\"notice\""));
    assert!(done.text().contains("pilot rules go live"));
    assert_eq!(status_of(v1.clone()).await?, "ACTIVE");
    let by: String = sqlx::query_scalar("SELECT activated_by FROM rulesets WHERE id = $1::uuid")
        .bind(&v1)
        .fetch_one(app.db.store.pool())
        .await?;
    assert!(by.starts_with("user:"), "{by}");
    let again = app
        .post_form(
            &admin.cookie,
            &path,
            &[("csrf", admin.csrf.as_str()), ("comment", "again")],
        )
        .await?;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(again.text().contains("only a DRAFT can be activated"));
    assert!(
        !again.text().contains("id=\"activate\""),
        "no form on an ACTIVE version"
    );

    // Any two versions compare: version 1 against version 2 (the picker shows it chosen); an
    // id that is not a ruleset of ours is a 404.
    let picked = app
        .page(&admin.cookie, &format!("/admin/rulesets/{v1}?against={v2}"))
        .await?;
    assert_eq!(picked.status, StatusCode::OK);
    assert!(
        picked.text().contains("against version 2 (DRAFT)"),
        "{}",
        picked.text()
    );
    assert!(picked
        .text()
        .contains("<code class=\"removed\">ghost</code>"));
    assert!(picked
        .text()
        .contains(&format!("<option value=\"{v2}\" selected>")));
    for against in ["nonsense", "00000000-0000-0000-0000-000000000000"] {
        let answer = app
            .page(
                &admin.cookie,
                &format!("/admin/rulesets/{v1}?against={against}"),
            )
            .await?;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{against}");
    }
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn admins_manage_webhooks_and_requeue_dead_deliveries_from_the_desk() -> anyhow::Result<()> {
    use ironclad_core::notification::NotificationType;
    use ironclad_store::notifications::NewNotification;
    // The receiver is on 127.0.0.1, as an on-premise one would be.
    let app = TestApp::spawn_with(ApiConfig {
        webhook_allow_private: true,
        ..ApiConfig::default()
    })
    .await?;
    let other = app.db.store.create_tenant("tenant-b").await?;
    app.user(app.tenant, "admin@example.com", Role::Admin)
        .await?;
    app.user(app.tenant, "rev@example.com", Role::Reviewer)
        .await?;
    app.user(other, "spy@example.com", Role::Admin).await?;
    let admin = app.sign_in("admin@example.com").await?;
    let reviewer = app.sign_in("rev@example.com").await?;
    let spy = app.sign_in("spy@example.com").await?;
    let csrf = admin.csrf.as_str();

    // A refused URL stores nothing and keeps what was typed.
    let refused = app
        .post_form(
            &admin.cookie,
            "/admin/webhooks",
            &[
                ("csrf", csrf),
                ("url", "ftp://example.com/x"),
                ("description", "ours"),
            ],
        )
        .await?;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.text().contains("id=\"problem\""));
    assert!(refused.text().contains("value=\"ftp://example.com/x\""));
    assert_eq!(
        app.count("SELECT count(*) FROM webhook_endpoints").await?,
        0
    );
    // A reviewer may not create one.
    let denied = app
        .post_form(
            &reviewer.cookie,
            "/admin/webhooks",
            &[
                ("csrf", reviewer.csrf.as_str()),
                ("url", "http://127.0.0.1:9/hook"),
            ],
        )
        .await?;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);

    // Created: the secret is on the page the form's redirect lands on, once, which no cache
    // may keep.
    let token = app
        .form_token(&admin.cookie, "/admin/webhooks", "new-endpoint-form")
        .await?;
    let created = app
        .post_form(
            &admin.cookie,
            "/admin/webhooks",
            &[
                ("csrf", csrf),
                ("url", "http://127.0.0.1:9/hook"),
                ("description", "ERP"),
                ("form_token", &token),
            ],
        )
        .await?;
    let shown = app.follow(&admin.cookie, &created).await?;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.text());
    assert_eq!(shown.header("cache-control").as_deref(), Some("no-store"));
    let secret = shown
        .text()
        .split("<code id=\"secret-value\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_default()
        .to_owned();
    anyhow::ensure!(secret.len() >= 32, "no secret shown");
    let list = app.page(&admin.cookie, "/admin/webhooks").await?;
    assert!(list.text().contains("http://127.0.0.1:9/hook"));
    assert!(!list.text().contains(&secret), "the secret is shown once");
    let refreshed = app.follow(&admin.cookie, &created).await?;
    assert!(
        !refreshed.text().contains(&secret),
        "a refresh of the result page shows the secret no more"
    );
    let endpoint: uuid::Uuid = sqlx::query_scalar("SELECT id FROM webhook_endpoints")
        .fetch_one(app.db.store.pool())
        .await?;

    // A delivery the deliverer gave up on shows DEAD with a requeue.
    let notification = app
        .db
        .store
        .announce(NewNotification {
            tenant: app.tenant,
            case: None,
            kind: NotificationType::DossierReviewRequired,
            dedup_key: "k".into(),
            data: serde_json::json!({"key": "k"}),
        })
        .await?
        .ok_or_else(|| anyhow::anyhow!("not announced"))?;
    let delivery: uuid::Uuid = sqlx::query_scalar(
        "UPDATE webhook_deliveries SET status = 'DEAD', attempts = 8, last_error = 'connection refused' \
         WHERE notification_id = $1 RETURNING id",
    )
    .bind(notification)
    .fetch_one(app.db.store.pool())
    .await?;
    let page_path = format!("/admin/webhooks/{endpoint}");
    let page = app.page(&admin.cookie, &page_path).await?;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("connection refused"));
    assert!(page.text().contains("8/"), "{}", page.text());
    let requeue = format!("{page_path}/deliveries/{delivery}/requeue");
    assert!(page.text().contains(&format!("action=\"{requeue}\"")));
    assert_eq!(
        app.page(&spy.cookie, &page_path).await?.status,
        StatusCode::NOT_FOUND
    );
    let delivery_status = || async {
        Ok::<String, anyhow::Error>(
            sqlx::query_scalar("SELECT status FROM webhook_deliveries WHERE id = $1")
                .bind(delivery)
                .fetch_one(app.db.store.pool())
                .await?,
        )
    };
    let forged = app
        .post_form(&admin.cookie, &requeue, &[("csrf", "x")])
        .await?;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let foreign = app
        .post_form(&spy.cookie, &requeue, &[("csrf", spy.csrf.as_str())])
        .await?;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    assert_eq!(delivery_status().await?, "DEAD");

    let done = app
        .post_form(&admin.cookie, &requeue, &[("csrf", csrf)])
        .await?;
    let shown = app.follow(&admin.cookie, &done).await?;
    assert!(shown.text().contains("requeued"), "{}", shown.text());
    assert_eq!(delivery_status().await?, "PENDING");
    // Replayed: it is no longer DEAD, and the page says so.
    let again = app
        .post_form(&admin.cookie, &requeue, &[("csrf", csrf)])
        .await?;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(again
        .text()
        .contains("only a DEAD delivery can be requeued"));

    // Disabled: no more deliveries, no disable button, and the pending one is dropped; a
    // second click lands on the same page.
    for _ in 0..2 {
        let disabled = app
            .post_form(
                &admin.cookie,
                &format!("{page_path}/disable"),
                &[("csrf", csrf)],
            )
            .await?;
        let shown = app.follow(&admin.cookie, &disabled).await?;
        assert_eq!(shown.status, StatusCode::OK, "{}", shown.text());
        assert!(!shown.text().contains("id=\"disable-endpoint\""));
        assert!(shown.text().contains("is disabled"));
    }
    let off: Option<chrono::DateTime<chrono::Utc>> =
        sqlx::query_scalar("SELECT disabled_at FROM webhook_endpoints WHERE id = $1")
            .bind(endpoint)
            .fetch_one(app.db.store.pool())
            .await?;
    assert!(off.is_some());
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn unreadable_queries_and_forms_get_the_desks_error_page() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    app.user(app.tenant, "admin@example.com", Role::Admin)
        .await?;
    let admin = app.sign_in("admin@example.com").await?;
    let html = |a: &Answer| {
        a.header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
    };
    for path in ["/?status=READY&status=BLOCKED", "/login?next=a&next=b"] {
        let answer = app.page(&admin.cookie, path).await?;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(html(&answer), "{path}: {:?}", answer.header("content-type"));
        assert!(
            answer.text().contains("data-code=\"invalid_query\""),
            "{path}"
        );
    }
    // A form sent as JSON: 415 as a page, and no user made.
    let answer = Answer::read(
        browser()?
            .post(app.url("/admin/users"))
            .header("cookie", &admin.cookie)
            .json(
                &serde_json::json!({"csrf": admin.csrf, "email": "x@example.com", "role": "admin"}),
            )
            .send()
            .await?,
    )
    .await?;
    assert_eq!(answer.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(html(&answer));
    assert!(answer.text().contains("data-code=\"invalid_form\""));
    assert_eq!(
        app.count("SELECT count(*) FROM users WHERE email = 'x@example.com'")
            .await?,
        0
    );
    app.stop().await;
    Ok(())
}

/// A sign-in POST with the form `form`, through a proxy that forwards `forwarded`.
async fn login_forwarded(
    app: &TestApp,
    form: &SignInForm,
    forwarded: &str,
    email: &str,
    password: &str,
) -> anyhow::Result<Answer> {
    let response = browser()?
        .post(app.url("/login"))
        .header("cookie", &form.cookie)
        .header("x-forwarded-for", forwarded)
        .form(&[
            ("email", email),
            ("password", password),
            ("next", "/queue"),
            ("signin_token", &form.token),
        ])
        .send()
        .await?;
    Answer::read(response).await
}

/// Issue 26, item 10: sign-in throttling keyed by the account alone let anyone who knows an
/// email address lock its owner out. Keyed by address and account together, a stranger's
/// failed attempts as alice from X (a client forwarded by the trusted proxy, as the rate
/// limits see it) are throttled, and alice still signs in from Y.
#[tokio::test]
async fn failed_sign_ins_from_one_address_do_not_lock_the_account_out_elsewhere(
) -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        trusted_proxies: ironclad_api::client_address::parse_trusted_proxies("127.0.0.1")?,
        ..ApiConfig::default()
    })
    .await?;
    app.user(app.tenant, "alice@example.com", Role::Reviewer)
        .await?;
    let mut throttled = false;
    for _ in 0..12 {
        let form = app.sign_in_form().await?;
        let answer = login_forwarded(
            &app,
            &form,
            "203.0.113.10",
            "alice@example.com",
            "a stranger's guess",
        )
        .await?;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            throttled = true;
            break;
        }
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.text());
    }
    assert!(throttled, "guessing from one address is throttled");
    let form = app.sign_in_form().await?;
    let from_x =
        login_forwarded(&app, &form, "203.0.113.10", "alice@example.com", PASSWORD).await?;
    assert_eq!(from_x.status, StatusCode::TOO_MANY_REQUESTS);
    let form = app.sign_in_form().await?;
    let from_y =
        login_forwarded(&app, &form, "198.51.100.20", "alice@example.com", PASSWORD).await?;
    assert_eq!(from_y.status, StatusCode::SEE_OTHER, "{}", from_y.text());
    app.stop().await;
    Ok(())
}

/// Issue 26, item 10: argon2 hashing was unbounded, so a burst of sign-ins took every core and
/// a few hundred MiB. With one hash at a time and no queue, of eight sign-ins at once some
/// are answered 503 with `Retry-After` at once; the others are checked as usual.
#[tokio::test]
async fn sign_ins_beyond_the_hashing_cap_get_503_with_retry_after() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        password_hashes_at_once: 1,
        password_hash_queue: 0,
        desk: DeskConfig {
            login_attempts_per_minute: 0,
            ..DeskConfig::default()
        },
        ..ApiConfig::default()
    })
    .await?;
    app.user(app.tenant, "b@example.com", Role::Reviewer)
        .await?;
    let mut forms = Vec::new();
    for _ in 0..8 {
        forms.push(app.sign_in_form().await?);
    }
    let answers = futures::future::join_all(
        forms
            .iter()
            .map(|form| login_forwarded(&app, form, "", "b@example.com", "a wrong password")),
    )
    .await;
    let (mut busy, mut checked) = (0, 0);
    for answer in answers {
        let answer = answer?;
        match answer.status {
            StatusCode::SERVICE_UNAVAILABLE => {
                busy += 1;
                assert_eq!(answer.header("retry-after").as_deref(), Some("1"));
            }
            StatusCode::UNAUTHORIZED => checked += 1,
            other => anyhow::bail!("unexpected {other}: {}", answer.text()),
        }
    }
    assert!(busy >= 1 && checked >= 1, "{busy} busy, {checked} checked");
    // Once the burst is over, sign-in works.
    assert_eq!(
        app.login("b@example.com", PASSWORD).await?.status,
        StatusCode::SEE_OTHER
    );
    app.stop().await;
    Ok(())
}
