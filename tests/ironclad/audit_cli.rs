//! `ironclad apikey revoke` and `ironclad audit verify` as an admin calls them: the real binary
//! against a test database. Keys created and revoked through the CLI land in the tenant's
//! audit chain with the unix user as actor; `audit verify` exits 0 with `"ok": true` on the
//! untouched trail, 1 with the tampered row named in its JSON once a row is edited behind the
//! append-only trigger, and 2 when it cannot check at all.

use ironclad_blobs::BlobStore;
use ironclad_testkit::harness::commit_fixture_case;
use ironclad_testkit::TestDb;
use serde_json::Value;
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_ironclad");

async fn ironclad(url: &str, args: &[&str]) -> anyhow::Result<Output> {
    Ok(tokio::process::Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", url)
        .env("USER", "ops-tester")
        .env_remove("RUST_LOG")
        .output()
        .await?)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_of(out: &Output) -> anyhow::Result<Value> {
    serde_json::from_slice(&out.stdout).map_err(|e| {
        anyhow::anyhow!(
            "no JSON ({e}):\nstdout: {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

#[tokio::test]
async fn revoke_is_recorded_and_audit_verify_exits_0_1_or_2() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let url = db.url.clone();
    let blob_dir = tempfile::tempdir()?;
    let blobs = BlobStore::open(blob_dir.path())?;

    let out = ironclad(&url, &["tenant", "create", "acme"]).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ironclad(&url, &["apikey", "create", "--tenant", "acme"]).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let raw = text(&out.stdout).trim().to_owned();
    assert!(raw.starts_with("ick_"), "{raw}");
    let tenant = db
        .store
        .tenant_by_name("acme")
        .await?
        .ok_or_else(|| anyhow::anyhow!("no tenant"))?;
    commit_fixture_case(&db.store, &blobs, tenant, 1, 3, "cli").await?;

    // Revoke by prefix; again (nothing changes); a key that does not exist.
    let prefix = &raw[..12];
    let out = ironclad(&url, &["apikey", "revoke", prefix]).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("revoked"),
        "{}",
        text(&out.stdout)
    );
    let out = ironclad(&url, &["apikey", "revoke", prefix]).await?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("already revoked"),
        "{}",
        text(&out.stdout)
    );
    let out = ironclad(&url, &["apikey", "revoke", "ick_00000000"]).await?;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no API key"),
        "{}",
        text(&out.stderr)
    );
    assert!(db.store.authenticate(&raw).await?.is_none());

    // Sealed as the dispatcher's sealer would (no dispatcher runs in this test).
    db.store.seal_all_audit_events().await?;
    let trail: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT chain_seq, event_type, actor FROM audit_events WHERE tenant_id = $1 ORDER BY chain_seq",
    )
    .bind(tenant.0)
    .fetch_all(db.store.pool())
    .await?;
    let trail: Vec<(i64, &str, &str)> = trail
        .iter()
        .map(|(s, t, a)| (*s, t.as_str(), a.as_str()))
        .collect();
    assert_eq!(
        trail,
        [
            (1, "APIKEY_CREATED", "cli:ops-tester"),
            (2, "CASE_INGESTED", "cli"),
            (3, "APIKEY_REVOKED", "cli:ops-tester"),
        ]
    );

    // Untouched: exit 0, in JSON and as a report; one chain on its own too.
    let out = ironclad(&url, &["audit", "verify", "--json"]).await?;
    let json = json_of(&out)?;
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert_eq!(json["ok"], true);
    assert_eq!(json["tenants_checked"], 1);
    assert_eq!(json["events_checked"], 3);
    assert_eq!(json["problems"], serde_json::json!([]));
    assert_eq!(json["chains"][0]["tenant_name"], "acme");
    assert_eq!(json["chains"][0]["last_seq"], 3);
    let out = ironclad(&url, &["audit", "verify"]).await?;
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("audit verify: ok, 1 chain(s) and 3 event(s) unbroken"),
        "{}",
        text(&out.stdout)
    );
    let out = ironclad(&url, &["audit", "verify", "--tenant", "acme", "--json"]).await?;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json_of(&out)?["tenants_checked"], 1);

    // The case event's data edited behind the append-only trigger: exit 1, that row named.
    let mut conn = db.store.pool().acquire().await?;
    sqlx::raw_sql(
        "ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only;
         UPDATE audit_events SET data = '{\"sources\": 7}' WHERE event_type = 'CASE_INGESTED';
         ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only;",
    )
    .execute(&mut *conn)
    .await?;
    drop(conn);
    let edited: i64 =
        sqlx::query_scalar("SELECT id FROM audit_events WHERE event_type = 'CASE_INGESTED'")
            .fetch_one(db.store.pool())
            .await?;
    let out = ironclad(&url, &["audit", "verify", "--json"]).await?;
    let json = json_of(&out)?;
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    assert_eq!(json["ok"], false);
    let problems = json["problems"].as_array().cloned().unwrap_or_default();
    assert_eq!(problems.len(), 1, "{json:#}");
    assert_eq!(problems[0]["tenant"], tenant.0.to_string());
    assert_eq!(problems[0]["chain_seq"], 2);
    assert_eq!(problems[0]["event_id"], edited);
    assert_eq!(problems[0]["kind"], "edited");
    let out = ironclad(&url, &["audit", "verify"]).await?;
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(report.contains("edited"), "{report}");
    assert!(
        report.contains("audit verify: 1 problem(s) in 1 of 1 chain(s)"),
        "{report}"
    );

    // Cannot check: an unknown tenant, a database that is not there.
    let out = ironclad(&url, &["audit", "verify", "--tenant", "nobody"]).await?;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot check"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let port = ironclad_testkit::free_port()?;
    let nowhere = format!("postgres://postgres@127.0.0.1:{port}/ironclad");
    let out = ironclad(
        &nowhere,
        &["--db-acquire-timeout", "1s", "audit", "verify", "--json"],
    )
    .await?;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot check"),
        "{}",
        text(&out.stderr)
    );

    db.drop_database().await;
    Ok(())
}
