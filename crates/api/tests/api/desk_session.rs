//! The desk's sessions and sign-in (issue 25, item 5): the sign-in form's CSRF guard (a
//! pre-session token and an origin check), the `__Host-` cookie, background polls that do
//! not extend idle time, unknown cookies that write nothing, the sweep of expired sessions,
//! page images no cache keeps, and passwords: changed by their user, and an admin-set one
//! changed before anything else.

use crate::desk::{browser, cookie_pair, hidden, Signed, PASSWORD};
use crate::helpers::{Answer, TestApp};
use ironclad_api::password::hash_password;
use ironclad_api::{ApiConfig, AppState, DeskConfig};
use ironclad_core::role::Role;
use ironclad_store::users::{NewUser, SessionPolicy};
use ironclad_store::Store;
use reqwest::StatusCode;
use std::time::{Duration, Instant};

/// The session cookies an answer sets (name=value), ignoring the pre-session one.
fn session_cookies(answer: &Answer) -> Vec<String> {
    answer
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|c| c.contains("ironclad_session="))
        .map(str::to_owned)
        .collect()
}

async fn sessions(app: &TestApp) -> anyhow::Result<i64> {
    app.count("SELECT count(*) FROM sessions").await
}

/// A sign-in POST another site's page could make.
struct Forged {
    what: &'static str,
    cookie: Option<String>,
    token: String,
    headers: Vec<(&'static str, &'static str)>,
}

#[tokio::test]
async fn a_sign_in_not_from_this_sites_form_is_refused_and_sets_no_cookie() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    app.user(app.tenant, "ana@example.com", Role::Reviewer)
        .await?;
    let fields = |token: &str| {
        vec![
            ("email".to_owned(), "ana@example.com".to_owned()),
            ("password".to_owned(), PASSWORD.to_owned()),
            ("signin_token".to_owned(), token.to_owned()),
        ]
    };
    let own_origin = app.base.clone();
    let form = app.sign_in_form().await?;
    // What another site's page can send: each refused, no session, no session cookie.
    let forged = |what, cookie: Option<&str>, token: &str, headers| Forged {
        what,
        cookie: cookie.map(str::to_owned),
        token: token.to_owned(),
        headers,
    };
    let attempts = [
        forged("no token, no cookie", None, "", vec![]),
        forged("the token without its cookie", None, &form.token, vec![]),
        forged(
            "a token that is not the cookie's",
            Some(&form.cookie),
            &"0".repeat(64),
            vec![],
        ),
        forged(
            "another site's page",
            Some(&form.cookie),
            &form.token,
            vec![("origin", "https://evil.example")],
        ),
        forged(
            "a sandboxed page",
            Some(&form.cookie),
            &form.token,
            vec![("origin", "null")],
        ),
        forged(
            "a cross-site request",
            Some(&form.cookie),
            &form.token,
            vec![("sec-fetch-site", "cross-site")],
        ),
    ];
    for Forged {
        what,
        cookie,
        token,
        headers,
    } in attempts
    {
        let mut request = browser()?.post(app.url("/login")).form(&fields(&token));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let answer = Answer::read(request.send().await?).await?;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{what}");
        assert!(
            session_cookies(&answer).is_empty(),
            "{what}: a session cookie"
        );
        assert!(
            answer.text().contains("did not come from this site"),
            "{what}: {}",
            answer.text()
        );
        // The form is shown again with a fresh token, so a person can just sign in.
        assert_eq!(hidden(&answer.text(), "signin_token", None).len(), 64);
    }
    assert_eq!(
        sessions(&app).await?,
        0,
        "a refused sign-in started a session"
    );

    // The site's own form, sent from its own origin, signs in.
    let answer = Answer::read(
        browser()?
            .post(app.url("/login"))
            .header("cookie", &form.cookie)
            .header("origin", own_origin)
            .header("sec-fetch-site", "same-origin")
            .form(&fields(&form.token))
            .send()
            .await?,
    )
    .await?;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text());
    let set = session_cookies(&answer);
    assert!(
        set.len() == 1 && set[0].starts_with("__Host-ironclad_session=ics_"),
        "{set:?}"
    );
    assert_eq!(sessions(&app).await?, 1);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn insecure_dev_cookies_drop_secure_and_the_prefix_together() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        desk: DeskConfig {
            secure_cookies: false,
            ..DeskConfig::default()
        },
        ..ApiConfig::default()
    })
    .await?;
    app.user(app.tenant, "dev@example.com", Role::Reviewer)
        .await?;
    let login = Answer::read(browser()?.get(app.url("/login")).send().await?).await?;
    let signin = login.header("set-cookie").unwrap_or_default();
    assert!(
        signin.starts_with("ironclad_signin=") && !signin.contains("Secure"),
        "{signin}"
    );
    let answer = Answer::read(
        browser()?
            .post(app.url("/login"))
            .header("cookie", cookie_pair(&signin))
            .form(&[
                ("email", "dev@example.com"),
                ("password", PASSWORD),
                ("signin_token", &hidden(&login.text(), "signin_token", None)),
            ])
            .send()
            .await?,
    )
    .await?;
    let set = session_cookies(&answer);
    assert!(
        set.len() == 1 && set[0].starts_with("ironclad_session=ics_") && !set[0].contains("Secure"),
        "{set:?}"
    );
    let cookie = cookie_pair(&set[0]);
    assert_eq!(app.page(&cookie, "/").await?.status, StatusCode::OK);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn background_polls_do_not_keep_an_idle_session_alive() -> anyhow::Result<()> {
    let idle = Duration::from_secs(4);
    let app = TestApp::spawn_with(ApiConfig {
        desk: DeskConfig {
            sessions: SessionPolicy {
                idle,
                lifetime: Duration::from_secs(60),
            },
            ..DeskConfig::default()
        },
        ..ApiConfig::default()
    })
    .await?;
    app.user(app.tenant, "idle@example.com", Role::Reviewer)
        .await?;
    let polled = app.sign_in("idle@example.com").await?;
    let worked = app.sign_in("idle@example.com").await?;
    let a = &app;
    let poll = |s: &Signed| {
        let request = browser().map(|b| {
            b.get(a.url("/desk/counts"))
                .header("cookie", &s.cookie)
                .header("x-ironclad-poll", "1")
        });
        async move { Answer::read(request?.send().await?).await }
    };
    let last_seen = |s: &Signed| {
        let token = s.cookie.split_once('=').map(|(_, t)| t.to_owned());
        async move {
            Ok::<_, anyhow::Error>(
                sqlx::query_scalar::<_, chrono::DateTime<chrono::Utc>>(
                    "SELECT last_seen_at FROM sessions WHERE token_hash = $1",
                )
                .bind(ironclad_store::tenants::hash_key(
                    &token.unwrap_or_default(),
                ))
                .fetch_optional(a.db.store.pool())
                .await?,
            )
        }
    };
    let seen_before = last_seen(&polled).await?;
    // Both pages are left open; one person keeps working, the other walks away. The open
    // page polls every half second past the idle time.
    let start = Instant::now();
    let mut touched_once = false;
    while start.elapsed() < idle + Duration::from_millis(600) {
        let answer = poll(&polled).await?;
        if start.elapsed() < idle - Duration::from_millis(500) {
            assert_eq!(answer.status, StatusCode::OK, "a poll of a live session");
        }
        if !touched_once && start.elapsed() > Duration::from_secs(2) {
            let page = app.page(&worked.cookie, "/").await?;
            assert_eq!(page.status, StatusCode::OK);
            touched_once = true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        last_seen(&polled).await?,
        seen_before,
        "a poll moved the session's last activity"
    );
    // Past its idle time the polled session has ended: polls say so plainly (401), pages
    // send the browser to sign in.
    assert_eq!(poll(&polled).await?.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.page(&polled.cookie, "/").await?.status,
        StatusCode::SEE_OTHER
    );
    // The session someone used at 2 s is still live (its idle time counts from then).
    assert_eq!(app.page(&worked.cookie, "/").await?.status, StatusCode::OK);
    app.stop().await;
    Ok(())
}

/// The app's router on its own listener, with `store` in place of the app's.
async fn serve_with(
    app: &TestApp,
    store: Store,
) -> anyhow::Result<(String, tokio::task::JoinHandle<std::io::Result<()>>)> {
    let state = AppState {
        store,
        ..app.state.clone()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(ironclad_api::serve(
        listener,
        state,
        std::future::pending::<()>(),
    ));
    Ok((base, server))
}

#[tokio::test]
async fn an_unknown_cookie_and_a_poll_write_nothing() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        desk: DeskConfig {
            // Every request of a person counts: a write on each, if it wrote.
            sessions: SessionPolicy {
                idle: Duration::from_millis(5),
                lifetime: Duration::from_secs(60),
            },
            ..DeskConfig::default()
        },
        ..ApiConfig::default()
    })
    .await?;
    // The same database through connections where every transaction is read-only: any
    // UPDATE, even one that matches no row, fails there (and the page answers 500).
    let read_only = Store::connect(
        &format!(
            "{}?options=-c%20default_transaction_read_only%3Don",
            app.db.url
        ),
        4,
        Duration::from_secs(5),
    )
    .await?;
    let hash = hash_password(PASSWORD)?;
    let user = app
        .db
        .store
        .create_user(app.tenant, "ro@example.com", Role::Reviewer, &hash, "test")
        .await?;
    let session = app
        .db
        .store
        .start_session(
            user.id,
            SessionPolicy {
                idle: Duration::from_secs(60),
                lifetime: Duration::from_secs(60),
            },
        )
        .await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (base, server) = serve_with(&app, read_only).await?;
    let get = |path: &str, cookie: String, poll: bool| {
        let mut request =
            browser().map(|b| b.get(format!("{base}{path}")).header("cookie", cookie));
        if poll {
            request = request.map(|r| r.header("x-ironclad-poll", "1"));
        }
        async move { Answer::read(request?.send().await?).await }
    };
    let unknown = format!("__Host-ironclad_session=ics_{}", "ab".repeat(32));
    let page = get("/", unknown.clone(), false).await?;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.text());
    let api = get("/v1/cases", unknown, false).await?;
    assert_eq!(api.status, StatusCode::UNAUTHORIZED, "{}", api.text());
    let known = format!("__Host-ironclad_session={}", session.token);
    let polled = get("/desk/counts", known.clone(), true).await?;
    assert_eq!(polled.status, StatusCode::OK, "{}", polled.text());
    // The harness sees writes: a person's request on the same session does write (it moves
    // the idle expiry), and read-only connections refuse it.
    let worked = get("/", known, false).await?;
    assert_eq!(worked.status, StatusCode::INTERNAL_SERVER_ERROR);
    server.abort();
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_serving_process_sweeps_expired_sessions() -> anyhow::Result<()> {
    let app = TestApp::spawn_with(ApiConfig {
        desk: DeskConfig {
            session_sweep_every: Duration::from_millis(100),
            ..DeskConfig::default()
        },
        ..ApiConfig::default()
    })
    .await?;
    app.user(app.tenant, "sw@example.com", Role::Admin).await?;
    let live = app.sign_in("sw@example.com").await?;
    let user: uuid::Uuid = sqlx::query_scalar("SELECT id FROM users")
        .fetch_one(app.db.store.pool())
        .await?;
    for _ in 0..3 {
        app.db
            .store
            .start_session(
                user,
                SessionPolicy {
                    idle: Duration::ZERO,
                    lifetime: Duration::ZERO,
                },
            )
            .await?;
    }
    // A form's secret nobody came back for, older than the time it waits.
    sqlx::query(
        "INSERT INTO desk_forms (user_id, token, tenant_id, action, fingerprint, outcome, \
         sealed_secret, created_at) VALUES ($1, $2, $3, 'api_key', 'f', '{}', '\\x01', \
         now() - interval '1 hour')",
    )
    .bind(user)
    .bind("0".repeat(32))
    .bind(app.tenant.0)
    .execute(app.db.store.pool())
    .await?;
    let start = Instant::now();
    while sessions(&app).await? != 1 && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(sessions(&app).await?, 1, "expired sessions were not swept");
    assert_eq!(app.page(&live.cookie, "/").await?.status, StatusCode::OK);
    assert_eq!(
        app.count("SELECT count(*) FROM desk_forms WHERE sealed_secret IS NOT NULL")
            .await?,
        0,
        "a forgotten secret was kept"
    );
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn page_images_are_kept_by_no_cache() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.decided_case().await?;
    let source: uuid::Uuid = sqlx::query_scalar("SELECT id FROM sources WHERE case_id = $1")
        .bind(case.0)
        .fetch_one(app.db.store.pool())
        .await?;
    app.user(app.tenant, "img@example.com", Role::Reviewer)
        .await?;
    let s = app.sign_in("img@example.com").await?;
    let image = app
        .page(
            &s.cookie,
            &format!("/cases/{case}/sources/{source}/pages/1"),
        )
        .await?;
    assert_eq!(image.status, StatusCode::OK, "{}", image.text());
    assert_eq!(image.header("content-type").as_deref(), Some("image/png"));
    assert_eq!(image.header("cache-control").as_deref(), Some("no-store"));
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn users_change_their_password_and_an_admin_set_one_must_be_changed_first(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let hash = hash_password(PASSWORD)?;
    app.db
        .store
        .add_user(
            app.tenant,
            &NewUser {
                email: "rita@example.com",
                role: Role::Reviewer,
                password_hash: &hash,
                display_name: Some("Rita Reviewer"),
                must_change_password: true,
            },
            "test",
        )
        .await?;
    // Signed in, every page and API call waits for the change.
    let first = app.login("rita@example.com", PASSWORD).await?;
    assert_eq!(
        first.header("location").as_deref(),
        Some("/account/password")
    );
    let other = app.sign_in_raw("rita@example.com").await?;
    let s = app.sign_in_raw("rita@example.com").await?;
    for path in ["/", "/queue", "/admin"] {
        let page = app.page(&s, path).await?;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{path}");
        assert_eq!(
            page.header("location").as_deref(),
            Some("/account/password"),
            "{path}"
        );
    }
    let api = app.page(&s, "/v1/cases").await?;
    assert_eq!(api.status, StatusCode::FORBIDDEN);
    assert_eq!(api.code(), "password_change_required");
    let form = app.page(&s, "/account/password").await?;
    assert_eq!(form.status, StatusCode::OK);
    assert!(form.text().contains("id=\"must-change\""));
    assert!(form.text().contains("Rita Reviewer"), "named in the header");
    let csrf = hidden(&form.text(), "csrf", None);

    // Refused, each with its reason beside the form, and nothing changes.
    let new = "a brand new passphrase";
    for (current, typed, again, reason) in [
        ("not my password", new, new, "not your current password"),
        (PASSWORD, new, "another passphrase", "differ"),
        (PASSWORD, "short", "short", "10 to 256 characters"),
        (PASSWORD, PASSWORD, PASSWORD, "is the current one"),
    ] {
        let answer = app
            .post_form(
                &s,
                "/account/password",
                &[
                    ("csrf", &csrf),
                    ("current", current),
                    ("new", typed),
                    ("again", again),
                ],
            )
            .await?;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{reason}");
        assert!(
            answer.text().contains(reason),
            "{reason}: {}",
            answer.text()
        );
        for password in [current, typed, again]
            .into_iter()
            .filter(|p| p.len() >= 10)
        {
            assert!(!answer.text().contains(password), "a password was echoed");
        }
    }
    let forged = app
        .post_form(
            &s,
            "/account/password",
            &[
                ("csrf", "x"),
                ("current", PASSWORD),
                ("new", new),
                ("again", new),
            ],
        )
        .await?;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert_eq!(
        app.page(&s, "/").await?.status,
        StatusCode::SEE_OTHER,
        "still waiting for the change"
    );

    // Changed: this session goes on, the other one ended, the old password no longer works.
    let done = app
        .post_form(
            &s,
            "/account/password",
            &[
                ("csrf", &csrf),
                ("current", PASSWORD),
                ("new", new),
                ("again", new),
            ],
        )
        .await?;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text());
    assert_eq!(
        done.header("location").as_deref(),
        Some("/account/password?done=1")
    );
    assert_eq!(app.page(&s, "/").await?.status, StatusCode::OK);
    assert_eq!(app.page(&other, "/").await?.status, StatusCode::SEE_OTHER);
    assert_eq!(
        app.login("rita@example.com", PASSWORD).await?.status,
        StatusCode::UNAUTHORIZED
    );
    let again = app.login("rita@example.com", new).await?;
    assert_eq!(again.header("location").as_deref(), Some("/queue"));
    let audited: i64 = app
        .count("SELECT count(*) FROM audit_events WHERE event_type = 'USER_PASSWORD_CHANGED'")
        .await?;
    assert_eq!(audited, 1);
    app.stop().await;
    Ok(())
}

impl TestApp {
    /// Signs in and returns the session cookie, wherever the sign-in sends the browser.
    async fn sign_in_raw(&self, email: &str) -> anyhow::Result<String> {
        let answer = self.login(email, PASSWORD).await?;
        session_cookies(&answer)
            .first()
            .map(|c| cookie_pair(c))
            .ok_or_else(|| anyhow::anyhow!("no session: {}", answer.text()))
    }
}
