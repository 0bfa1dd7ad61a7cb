//! `/v1/webhooks` and `/v1/notifications`: admin-only webhook management with the secret shown
//! once, URL validation, the inbox for every role, and tenant isolation on every route (another
//! tenant's id, an unknown id and a malformed id all answer the same 404).

use crate::helpers::{Answer, TestApp};
use ironclad_api::ApiConfig;
use ironclad_core::notification::NotificationType;
use ironclad_core::role::Role;
use ironclad_core::TenantId;
use ironclad_store::notifications::NewNotification;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> anyhow::Result<Answer> {
    let mut request = app.client.request(method, app.url(path)).bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await?;
    Ok(Answer {
        status: response.status(),
        headers: response.headers().clone(),
        bytes: response.bytes().await?.to_vec(),
    })
}

async fn announce(app: &TestApp, tenant: TenantId, key: &str) -> anyhow::Result<Uuid> {
    app.db
        .store
        .announce(NewNotification {
            tenant,
            case: None,
            kind: NotificationType::DossierReviewRequired,
            dedup_key: key.to_owned(),
            data: json!({"key": key}),
        })
        .await?
        .ok_or_else(|| anyhow::anyhow!("{key} already announced"))
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// Create → 201 with the secret; list and get never show it; the delivery log shows the
/// delivery a notification made; disable is idempotent and kills pending deliveries; a DEAD
/// delivery can be requeued, anything else is 409.
#[tokio::test]
async fn an_admin_manages_endpoints_and_sees_their_deliveries() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let admin = app.key_for(app.tenant, Role::Admin).await?;
    let created = call(
        &app,
        Method::POST,
        "/v1/webhooks",
        &admin,
        Some(json!({"url": "https://hooks.example.com/ironclad", "description": "ERP"})),
    )
    .await?;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let body = created.json();
    let id = str_of(&body["id"]);
    let secret = str_of(&body["secret"]);
    assert!(secret.starts_with("whsec_") && secret.len() == 70);
    assert_eq!(body["description"], "ERP");
    assert_eq!(
        created.header("location"),
        Some(format!("/v1/webhooks/{id}"))
    );
    assert_eq!(created.header("cache-control").as_deref(), Some("no-store"));

    let list = call(&app, Method::GET, "/v1/webhooks", &admin, None).await?;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.json()["webhooks"].as_array().map(Vec::len), Some(1));
    let one = call(
        &app,
        Method::GET,
        &format!("/v1/webhooks/{id}"),
        &admin,
        None,
    )
    .await?;
    assert_eq!(one.status, StatusCode::OK);
    for answer in [&list, &one] {
        assert!(!answer.text().contains(&secret) && !answer.text().contains("\"secret\""));
    }

    let notification = announce(&app, app.tenant, "case:1:review").await?;
    let log = call(
        &app,
        Method::GET,
        &format!("/v1/webhooks/{id}/deliveries"),
        &admin,
        None,
    )
    .await?;
    assert_eq!(log.status, StatusCode::OK, "{}", log.text());
    let deliveries = log.json()["deliveries"].clone();
    assert_eq!(deliveries.as_array().map(Vec::len), Some(1));
    assert_eq!(deliveries[0]["notification_id"], notification.to_string());
    assert_eq!(deliveries[0]["event"], "DOSSIER_REVIEW_REQUIRED");
    assert_eq!(deliveries[0]["status"], "PENDING");
    assert_eq!(log.json()["next_cursor"], Value::Null);
    let delivery = str_of(&deliveries[0]["id"]);

    let not_dead = call(
        &app,
        Method::POST,
        &format!("/v1/webhooks/deliveries/{delivery}/requeue"),
        &admin,
        None,
    )
    .await?;
    assert_eq!(
        (not_dead.status, not_dead.code().as_str()),
        (StatusCode::CONFLICT, "not_dead")
    );

    let disabled = call(
        &app,
        Method::DELETE,
        &format!("/v1/webhooks/{id}"),
        &admin,
        None,
    )
    .await?;
    assert_eq!(disabled.status, StatusCode::OK);
    assert_eq!(disabled.json()["changed"], true);
    assert!(disabled.json()["disabled_at"].is_string());
    let again = call(
        &app,
        Method::DELETE,
        &format!("/v1/webhooks/{id}"),
        &admin,
        None,
    )
    .await?;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.json()["changed"], false);
    let log = call(
        &app,
        Method::GET,
        &format!("/v1/webhooks/{id}/deliveries"),
        &admin,
        None,
    )
    .await?;
    assert_eq!(log.json()["deliveries"][0]["status"], "DEAD");
    let refused = call(
        &app,
        Method::POST,
        &format!("/v1/webhooks/deliveries/{delivery}/requeue"),
        &admin,
        None,
    )
    .await?;
    assert_eq!(
        (refused.status, refused.code().as_str()),
        (StatusCode::CONFLICT, "endpoint_disabled")
    );
    app.stop().await;
    Ok(())
}

/// A DEAD delivery of a live endpoint is requeued with the same id and a fresh budget.
#[tokio::test]
async fn requeue_keeps_the_id_and_gives_a_fresh_budget() -> anyhow::Result<()> {
    // The endpoint is on 127.0.0.1, as an on-premise receiver would be.
    let app = TestApp::spawn_with(ApiConfig {
        webhook_allow_private: true,
        ..ApiConfig::default()
    })
    .await?;
    let admin = app.key_for(app.tenant, Role::Admin).await?;
    let created = call(
        &app,
        Method::POST,
        "/v1/webhooks",
        &admin,
        Some(json!({"url": "http://127.0.0.1:9/hook"})),
    )
    .await?;
    assert_eq!(created.status, StatusCode::CREATED);
    let notification = announce(&app, app.tenant, "k").await?;
    // As a deliverer would leave it after 8 failed attempts.
    let delivery: Uuid = sqlx::query_scalar(
        "UPDATE webhook_deliveries SET status = 'DEAD', attempts = 8, last_error = 'refused' \
         WHERE notification_id = $1 RETURNING id",
    )
    .bind(notification)
    .fetch_one(app.db.store.pool())
    .await?;
    let requeued = call(
        &app,
        Method::POST,
        &format!("/v1/webhooks/deliveries/{delivery}/requeue"),
        &admin,
        None,
    )
    .await?;
    assert_eq!(requeued.status, StatusCode::OK, "{}", requeued.text());
    let body = requeued.json();
    assert_eq!(body["id"], delivery.to_string());
    assert_eq!(body["status"], "PENDING");
    assert_eq!(
        (body["attempts"].as_i64(), body["max_attempts"].as_i64()),
        (Some(8), Some(16))
    );
    assert!(body["requeued_by"]
        .as_str()
        .unwrap_or_default()
        .starts_with("api_key:"));
    app.stop().await;
    Ok(())
}

/// Only http(s) URLs with a host and without credentials or fragment; a readable 400 for each
/// mistake, and nothing stored.
#[tokio::test]
async fn bad_webhook_requests_are_400_and_store_nothing() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let admin = app.key_for(app.tenant, Role::Admin).await?;
    let long = format!("https://example.com/{}", "a".repeat(2000));
    for (body, code) in [
        (json!({"url": "ftp://example.com/x"}), "invalid_url"),
        (
            json!({"url": "https://user:pw@example.com/x"}),
            "invalid_url",
        ),
        (json!({"url": "https://example.com/x#frag"}), "invalid_url"),
        (json!({"url": "not a url"}), "invalid_url"),
        (json!({"url": "file:///etc/passwd"}), "invalid_url"),
        (json!({"url": long}), "invalid_url"),
        (
            json!({"url": "https://example.com", "description": "x".repeat(501)}),
            "invalid_description",
        ),
        (
            json!({"url": "https://example.com", "description": "a\u{0}b"}),
            "invalid_description",
        ),
        (json!({"description": "no url"}), "invalid_body"),
        (
            json!({"url": "https://example.com", "secret": "mine"}),
            "invalid_body",
        ),
        (json!(["https://example.com"]), "invalid_body"),
    ] {
        let answer = call(
            &app,
            Method::POST,
            "/v1/webhooks",
            &admin,
            Some(body.clone()),
        )
        .await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::BAD_REQUEST, code),
            "{body}: {}",
            answer.text()
        );
    }
    assert_eq!(
        app.count("SELECT count(*) FROM webhook_endpoints").await?,
        0
    );
    app.stop().await;
    Ok(())
}

/// A URL at localhost or at a loopback, private, link-local, CGNAT, multicast or unspecified
/// address is refused 400 `invalid_url` with the reason, and nothing is stored, unless the
/// deployment allows private destinations. Breaks: a tenant admin aiming the deliverer at our
/// own network or the cloud metadata service (SSRF).
#[tokio::test]
async fn webhooks_to_our_own_network_are_refused_unless_allowed() -> anyhow::Result<()> {
    let urls = [
        ("http://127.0.0.1:8080/hook", "127.0.0.1", "loopback"),
        ("http://10.1.2.3/hook", "10.1.2.3", "private"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254",
            "link-local",
        ),
        ("http://[::1]:9000/hook", "[::1]", "loopback"),
        ("http://localhost:8080/hook", "localhost", "loopback"),
        ("https://hooks.localhost/x", "hooks.localhost", "loopback"),
        ("http://[fd12::1]/hook", "[fd12::1]", "private"),
        ("http://[fe80::1]/hook", "[fe80::1]", "link-local"),
        (
            "http://100.64.1.1/hook",
            "100.64.1.1",
            "shared address space (CGNAT)",
        ),
        ("http://0.0.0.0/hook", "0.0.0.0", "unspecified"),
        ("http://239.1.2.3/hook", "239.1.2.3", "multicast"),
    ];
    let app = TestApp::spawn().await?;
    let admin = app.key_for(app.tenant, Role::Admin).await?;
    for (url, host, range) in urls {
        let answer = call(
            &app,
            Method::POST,
            "/v1/webhooks",
            &admin,
            Some(json!({ "url": url })),
        )
        .await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::BAD_REQUEST, "invalid_url"),
            "{url}: {}",
            answer.text()
        );
        assert_eq!(
            answer.json()["error"]["message"],
            format!("the host {host} is {range}; webhooks may only reach public addresses"),
            "{url}"
        );
    }
    assert_eq!(
        app.count("SELECT count(*) FROM webhook_endpoints").await?,
        0
    );
    app.stop().await;

    let on_premise = TestApp::spawn_with(ApiConfig {
        webhook_allow_private: true,
        ..ApiConfig::default()
    })
    .await?;
    let admin = on_premise.key_for(on_premise.tenant, Role::Admin).await?;
    for (url, ..) in urls {
        let answer = call(
            &on_premise,
            Method::POST,
            "/v1/webhooks",
            &admin,
            Some(json!({ "url": url })),
        )
        .await?;
        assert_eq!(
            answer.status,
            StatusCode::CREATED,
            "{url}: {}",
            answer.text()
        );
    }
    assert_eq!(
        on_premise
            .count("SELECT count(*) FROM webhook_endpoints")
            .await?,
        urls.len() as i64
    );
    on_premise.stop().await;
    Ok(())
}

/// Operators and reviewers may not touch webhooks: 403 JSON on every route, before any lookup
/// (so a 403 says nothing about whether an id exists).
#[tokio::test]
async fn only_admins_manage_webhooks() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let any = Uuid::new_v4();
    for key in [&app.key, &reviewer] {
        for (method, path, body) in [
            (
                Method::POST,
                "/v1/webhooks".to_owned(),
                Some(json!({"url": "https://example.com"})),
            ),
            (Method::GET, "/v1/webhooks".to_owned(), None),
            (Method::GET, format!("/v1/webhooks/{any}"), None),
            (Method::DELETE, format!("/v1/webhooks/{any}"), None),
            (Method::GET, format!("/v1/webhooks/{any}/deliveries"), None),
            (
                Method::POST,
                format!("/v1/webhooks/deliveries/{any}/requeue"),
                None,
            ),
        ] {
            let answer = call(&app, method.clone(), &path, key, body).await?;
            assert_eq!(
                (answer.status, answer.code().as_str()),
                (StatusCode::FORBIDDEN, "forbidden"),
                "{method} {path}"
            );
        }
    }
    assert_eq!(
        app.count("SELECT count(*) FROM webhook_endpoints").await?,
        0
    );
    app.stop().await;
    Ok(())
}

/// Tenant B's admin gets the same 404 for A's endpoint and delivery ids as for unknown and
/// malformed ones, on every route, and changes nothing; B's listings show none of A's.
#[tokio::test]
async fn another_tenants_ids_are_404_on_every_webhook_route() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let admin_a = app.key_for(app.tenant, Role::Admin).await?;
    let tenant_b = app.db.store.create_tenant("tenant-b").await?;
    let admin_b = app.key_for(tenant_b, Role::Admin).await?;
    let created = call(
        &app,
        Method::POST,
        "/v1/webhooks",
        &admin_a,
        Some(json!({"url": "https://a.example.com/hook"})),
    )
    .await?;
    let endpoint = str_of(&created.json()["id"]);
    let notification = announce(&app, app.tenant, "k").await?;
    let delivery: Uuid = sqlx::query_scalar(
        "UPDATE webhook_deliveries SET status = 'DEAD' WHERE notification_id = $1 RETURNING id",
    )
    .bind(notification)
    .fetch_one(app.db.store.pool())
    .await?;

    let unknown = Uuid::new_v4().to_string();
    for target in [endpoint.as_str(), unknown.as_str(), "not-a-uuid"] {
        for (method, path) in [
            (Method::GET, format!("/v1/webhooks/{target}")),
            (Method::DELETE, format!("/v1/webhooks/{target}")),
            (Method::GET, format!("/v1/webhooks/{target}/deliveries")),
        ] {
            let answer = call(&app, method.clone(), &path, &admin_b, None).await?;
            assert_eq!(
                (answer.status, answer.code().as_str()),
                (StatusCode::NOT_FOUND, "not_found"),
                "{method} {path}"
            );
        }
    }
    for target in [delivery.to_string(), unknown.clone(), "nope".to_owned()] {
        let answer = call(
            &app,
            Method::POST,
            &format!("/v1/webhooks/deliveries/{target}/requeue"),
            &admin_b,
            None,
        )
        .await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "requeue {target}"
        );
    }
    let listed = call(&app, Method::GET, "/v1/webhooks", &admin_b, None).await?;
    assert_eq!(listed.json()["webhooks"], json!([]));
    // Nothing of A's moved.
    assert_eq!(
        app.count("SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NULL")
            .await?,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) FROM webhook_deliveries WHERE status = 'DEAD'")
            .await?,
        1
    );
    app.stop().await;
    Ok(())
}

/// Every role reads its tenant's inbox, newest first in keyset pages, filtered by `unread`;
/// marking read is idempotent; another tenant's, unknown and malformed ids are the same 404.
#[tokio::test]
async fn the_inbox_is_per_tenant_for_every_role() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let tenant_b = app.db.store.create_tenant("tenant-b").await?;
    let key_b = app.key_for(tenant_b, Role::Admin).await?;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(announce(&app, app.tenant, &format!("a{i}")).await?);
    }
    let theirs = announce(&app, tenant_b, "b0").await?;

    let page = call(
        &app,
        Method::GET,
        "/v1/notifications?limit=2",
        &reviewer,
        None,
    )
    .await?;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text());
    let first = page.json();
    assert_eq!(first["notifications"][0]["id"], ids[2].to_string());
    assert_eq!(first["notifications"][0]["type"], "DOSSIER_REVIEW_REQUIRED");
    let cursor = str_of(&first["next_cursor"]);
    let rest = call(
        &app,
        Method::GET,
        &format!("/v1/notifications?limit=2&cursor={cursor}"),
        &reviewer,
        None,
    )
    .await?;
    assert_eq!(rest.json()["notifications"][0]["id"], ids[0].to_string());
    assert_eq!(rest.json()["next_cursor"], Value::Null);

    let read = call(
        &app,
        Method::POST,
        &format!("/v1/notifications/{}/read", ids[1]),
        &app.key,
        None,
    )
    .await?;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.json()["changed"], true);
    let read_at = read.json()["read_at"].clone();
    assert!(read_at.is_string());
    let again = call(
        &app,
        Method::POST,
        &format!("/v1/notifications/{}/read", ids[1]),
        &reviewer,
        None,
    )
    .await?;
    assert_eq!(again.json()["changed"], false);
    assert_eq!(again.json()["read_at"], read_at);
    let unread = call(
        &app,
        Method::GET,
        "/v1/notifications?unread=true",
        &reviewer,
        None,
    )
    .await?;
    let unread_ids: Vec<String> = unread.json()["notifications"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|n| str_of(&n["id"]))
        .collect();
    assert_eq!(unread_ids, vec![ids[2].to_string(), ids[0].to_string()]);

    for target in [
        ids[0].to_string(),
        Uuid::new_v4().to_string(),
        "x".to_owned(),
    ] {
        let answer = call(
            &app,
            Method::POST,
            &format!("/v1/notifications/{target}/read"),
            &key_b,
            None,
        )
        .await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{target}"
        );
    }
    let b_list = call(&app, Method::GET, "/v1/notifications", &key_b, None).await?;
    let b_ids: Vec<String> = b_list.json()["notifications"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|n| str_of(&n["id"]))
        .collect();
    assert_eq!(b_ids, vec![theirs.to_string()]);
    assert_eq!(
        app.count("SELECT count(*) FROM notifications WHERE read_at IS NOT NULL")
            .await?,
        1
    );
    for (query, code) in [
        ("unread=yes", "invalid_unread"),
        ("limit=0", "invalid_limit"),
        ("limit=501", "invalid_limit"),
        ("cursor=garbage", "invalid_cursor"),
    ] {
        let answer = call(
            &app,
            Method::GET,
            &format!("/v1/notifications?{query}"),
            &reviewer,
            None,
        )
        .await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::BAD_REQUEST, code),
            "{query}"
        );
    }
    let anonymous = app.get("/v1/notifications", None).await?;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    app.stop().await;
    Ok(())
}

/// Issue 26 item 8: a tenant has at most 20 active endpoints (`IRONCLAD_WEBHOOK_MAX_ENDPOINTS`,
/// default). The 21st is 409 `too_many_webhooks` with the limit, and nothing is created or
/// audited; disabling one makes room again. Breaks: an uncapped create.
#[tokio::test]
async fn the_twenty_first_endpoint_is_refused_and_nothing_is_created() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let admin = app.key_for(app.tenant, Role::Admin).await?;
    let create = |n: usize| {
        call(
            &app,
            Method::POST,
            "/v1/webhooks",
            &admin,
            Some(json!({"url": format!("https://hooks.example.com/{n}")})),
        )
    };
    let mut first = None;
    for n in 0..20 {
        let created = create(n).await?;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{n}: {}",
            created.text()
        );
        first.get_or_insert_with(|| str_of(&created.json()["id"]));
    }
    let refused = create(20).await?;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text());
    let error = &refused.json()["error"];
    assert_eq!(error["code"], "too_many_webhooks");
    assert_eq!(error["details"]["limit"], 20);
    assert!(
        str_of(&error["message"]).contains("already has 20 active webhook endpoints"),
        "{error}"
    );
    let list = call(&app, Method::GET, "/v1/webhooks", &admin, None).await?;
    assert_eq!(list.json()["webhooks"].as_array().map(Vec::len), Some(20));
    assert!(!list.text().contains("hooks.example.com/20\""));
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND event_type = 'WEBHOOK_CREATED'",
    )
    .bind(app.tenant.0)
    .fetch_one(app.db.store.pool())
    .await?;
    assert_eq!(audited, 20);

    let first = first.unwrap_or_default();
    let disabled = call(
        &app,
        Method::DELETE,
        &format!("/v1/webhooks/{first}"),
        &admin,
        None,
    )
    .await?;
    assert!(disabled.status.is_success(), "{}", disabled.text());
    assert_eq!(create(20).await?.status, StatusCode::CREATED);
    Ok(())
}
