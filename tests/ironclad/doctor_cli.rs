//! `ironclad doctor` as an operator runs it: the real binary against a test database, Redis
//! and an object store (s3rver). A sound deployment passes (exit 0); each broken thing — a
//! setting that contradicts another, a schema newer than the binary, an object store that is
//! down, a wrong bucket — fails with the check named and a fix given (exit 1).

use anyhow::{ensure, Context, Result};
use ironclad_testkit::s3::S3Server;
use ironclad_testkit::TestDb;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ironclad");

/// Runs `ironclad doctor --json` with `env`; the exit code and the findings.
async fn doctor(db: &TestDb, s3: &S3Server, env: &[(&str, String)]) -> Result<(i32, Value)> {
    let cache = tempfile::tempdir()?;
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["doctor", "--json"])
        .env("DATABASE_URL", &db.url)
        .env("REDIS_URL", ironclad_testkit::redis_url())
        .env("IRONCLAD_STREAM_PREFIX", ironclad_testkit::redis_prefix())
        .env("IRONCLAD_BLOB_DIR", cache.path())
        .env("IRONCLAD_BLOB_URL", s3.url("doctor"))
        .env("IRONCLAD_BLOB_RETRY_TIMEOUT", "1s")
        .env_remove("RUST_LOG");
    for (k, v) in s3.env() {
        cmd.env(k, v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await?;
    let json: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "doctor printed no JSON: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    Ok((out.status.code().unwrap_or(-1), json))
}

/// The findings of `check` at `level`, as "detail | fix" lines.
fn findings(json: &Value, check: &str, level: &str) -> Vec<String> {
    json["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == check && f["level"] == level)
        .map(|f| format!("{} | {}", f["detail"], f["fix"]))
        .collect()
}

#[tokio::test]
async fn doctor_passes_a_sound_deployment_and_names_each_broken_thing() -> Result<()> {
    let db = TestDb::new().await?;
    let s3 = S3Server::start()?;

    let (code, json) = doctor(&db, &s3, &[]).await?;
    ensure!(
        code == 0 && json["ok"] == true,
        "a sound deployment failed: {json:#}"
    );
    for check in [
        "settings",
        "postgres",
        "migrations",
        "clock",
        "redis",
        "blobs",
    ] {
        ensure!(
            !findings(&json, check, "ok").is_empty(),
            "{check} not checked: {json:#}"
        );
    }
    ensure!(findings(&json, "blobs", "ok")[0].contains("s3://ironclad/doctor is writable"));
    // s3rver runs on this host: its clock agrees to the second of Last-Modified.
    let clock = findings(&json, "blobs", "ok");
    ensure!(
        clock
            .iter()
            .any(|f| f.contains("object store's clock is 0 s")
                || f.contains("object store's clock is 1 s")),
        "no object store clock finding: {json:#}"
    );

    // A grace shorter than an upload's retries plus a commit contradicts them.
    let (code, json) = doctor(
        &db,
        &s3,
        &[
            ("IRONCLAD_BLOB_GRACE", "20s".into()),
            ("IRONCLAD_BLOB_RETRY_TIMEOUT", "30s".into()),
        ],
    )
    .await?;
    let failed = findings(&json, "settings", "fail");
    ensure!(
        code == 1 && failed.iter().any(|f| f.contains("IRONCLAD_BLOB_GRACE")),
        "{json:#}"
    );

    // A bucket that does not exist.
    let (code, json) = doctor(
        &db,
        &s3,
        &[("IRONCLAD_BLOB_URL", "s3://no-such-bucket/x".into())],
    )
    .await?;
    ensure!(
        code == 1 && !findings(&json, "blobs", "fail").is_empty(),
        "{json:#}"
    );

    // A schema migrated by a newer binary.
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (99990001, 'from the future', true, '\\x00', 0)",
    )
    .execute(db.store.pool())
    .await?;
    let (code, json) = doctor(&db, &s3, &[]).await?;
    let failed = findings(&json, "migrations", "fail");
    ensure!(
        code == 1 && failed.iter().any(|f| f.contains("99990001")),
        "{json:#}"
    );

    // The object store down.
    s3.kill()?;
    let (code, json) = doctor(&db, &s3, &[]).await?;
    ensure!(
        code == 1 && !findings(&json, "blobs", "fail").is_empty(),
        "{json:#}"
    );

    // PostgreSQL unreachable: named, and the rest still checked.
    let (code, json) = doctor(
        &db,
        &s3,
        &[(
            "DATABASE_URL",
            "postgres://postgres@127.0.0.1:1/nowhere".into(),
        )],
    )
    .await?;
    ensure!(
        code == 1 && !findings(&json, "postgres", "fail").is_empty(),
        "{json:#}"
    );
    ensure!(!findings(&json, "redis", "ok").is_empty(), "{json:#}");
    db.drop_database().await;
    Ok(())
}
