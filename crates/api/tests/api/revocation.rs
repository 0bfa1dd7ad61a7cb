//! Revoking an API key takes effect within 1 s on every API process, though each keeps a cache
//! of keys: two routers (two processes' worth of caches) on one database both accept a key,
//! the key is revoked through the store (as `ironclad apikey revoke` does), and both must
//! answer 401 within a second. With the former 30 s cache, the warmed entries kept the key
//! working for half a minute. A key created just now works at once (no cached "unknown" hides
//! it), and the trail records both the creation and the revocation.

use crate::helpers::TestApp;
use ironclad_core::role::Role;
use ironclad_store::tenants::Revocation;
use reqwest::StatusCode;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The promise.
const WITHIN: Duration = Duration::from_secs(1);

async fn list_cases(app: &TestApp, base: &str, key: &str) -> anyhow::Result<(StatusCode, String)> {
    let response = app
        .client
        .get(format!("{base}/v1/cases"))
        .bearer_auth(key)
        .send()
        .await?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    let code = body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok((status, code))
}

#[tokio::test]
async fn a_revoked_key_is_refused_by_every_api_process_within_a_second() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    // A second API process on the same database: its own router, so its own key cache.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let second = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(ironclad_api::serve(listener, app.state.clone(), async {
        let _ = stopped.await;
    }));
    let bases = [app.base.clone(), second];

    // A key made now works at once everywhere, and is then cached everywhere.
    let key = app
        .db
        .store
        .create_api_key(app.tenant, Role::Operator)
        .await?;
    for base in &bases {
        for _ in 0..3 {
            assert_eq!(list_cases(&app, base, &key.raw).await?.0, StatusCode::OK);
        }
    }

    let revoked = app
        .db
        .store
        .revoke_api_key(&key.raw[..12], "admin:test")
        .await?;
    assert!(
        matches!(revoked, Revocation::Revoked(ref k) if k.id == key.id),
        "{revoked:?}"
    );
    let at = Instant::now();
    for base in &bases {
        loop {
            let (status, code) = list_cases(&app, base, &key.raw).await?;
            if status == StatusCode::UNAUTHORIZED {
                assert_eq!(code, "unauthorized");
                break;
            }
            assert_eq!(status, StatusCode::OK);
            assert!(
                at.elapsed() < WITHIN,
                "{base} still accepts the revoked key after {:?}",
                at.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let refused_after = at.elapsed();
    assert!(refused_after < WITHIN, "refused after {refused_after:?}");
    // And it stays refused; the tenant's other key is untouched.
    for base in &bases {
        assert_eq!(
            list_cases(&app, base, &key.raw).await?.0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(list_cases(&app, base, &app.key).await?.0, StatusCode::OK);
    }
    assert!(matches!(
        app.db
            .store
            .revoke_api_key(&key.id.to_string(), "admin:test")
            .await?,
        Revocation::AlreadyRevoked(_)
    ));

    // The admin trail: created (spawn's key, this key), revoked once, in an unbroken chain.
    let trail: Vec<(String, String)> = sqlx::query_as(
        "SELECT event_type, actor FROM audit_events
         WHERE tenant_id = $1 AND event_type LIKE 'APIKEY_%' ORDER BY id",
    )
    .bind(app.tenant.0)
    .fetch_all(app.db.store.pool())
    .await?;
    let expected = [
        ("APIKEY_CREATED", "system"),
        ("APIKEY_CREATED", "system"),
        ("APIKEY_REVOKED", "admin:test"),
    ];
    let trail: Vec<(&str, &str)> = trail
        .iter()
        .map(|(t, a)| (t.as_str(), a.as_str()))
        .collect();
    assert_eq!(trail, expected);
    assert!(app.db.store.verify_audit_chain(None).await?.ok);

    let _ = stop.send(());
    let _ = server.await;
    app.stop().await;
    Ok(())
}
