//! Starting a role with a processor spec, as an operator configures one: the real binary
//! against a fresh database. A spec that names nothing, or gives a processor arguments it
//! refuses, stops the role at start with a message naming the known processors, and a valid
//! one starts. A worker started alone (no dispatcher anywhere) still seals the audit trail.

use ironclad_testkit::TestDb;
use std::process::{Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_ironclad");

/// Runs `ironclad worker --processor SPEC` for at most `limit`; `None` when it was still
/// running then (it started), else its output.
async fn worker(db: &TestDb, spec: &str, limit: Duration) -> anyhow::Result<Option<Output>> {
    let blobs = tempfile::tempdir()?;
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["worker", "--processor", spec])
        .env("DATABASE_URL", &db.url)
        .env("IRONCLAD_STREAM_PREFIX", ironclad_testkit::redis_prefix())
        .env("IRONCLAD_BLOB_DIR", blobs.path())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn()?;
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(out) => Ok(Some(out?)),
        Err(_) => Ok(None),
    }
}

#[tokio::test]
async fn a_worker_refuses_a_processor_it_does_not_know_and_says_which_it_knows(
) -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let limit = Duration::from_secs(30);
    for (spec, expected) in [
        (
            "ocr",
            "unknown document processor \"ocr\"; known: openai, reading, stand-in, test",
        ),
        (
            "test:nope",
            "invalid document processor \"test:nope\": unknown test behaviour \"nope\"",
        ),
        (
            "reading:fast",
            "invalid document processor \"reading:fast\": takes no arguments",
        ),
        (
            "openai",
            "invalid document processor \"openai\": IRONCLAD_PROVIDER_URL is required",
        ),
    ] {
        let out = worker(&db, spec, limit)
            .await?
            .ok_or_else(|| anyhow::anyhow!("{spec}: the worker started"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{spec}: {stderr}");
        assert!(stderr.contains(expected), "{spec}: {stderr}");
    }
    // A known one starts and keeps running.
    assert!(
        worker(&db, "stand-in", Duration::from_secs(3))
            .await?
            .is_none(),
        "stand-in did not keep running"
    );
    db.drop_database().await;
    Ok(())
}

/// Sealing does not depend on the dispatcher role (issue 26, item 11): with only a worker
/// running, an audit event written meanwhile is sealed into its tenant's chain. Before, only
/// the dispatcher sealed, and a deployment whose dispatcher was down left every event unsealed.
#[tokio::test]
async fn a_worker_alone_seals_the_audit_trail() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let tenant = db.store.create_tenant("acme").await?;
    db.store
        .create_api_key(tenant, ironclad_core::role::Role::Operator)
        .await?;
    let unsealed = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM audit_events WHERE hash IS NULL")
            .fetch_one(db.store.pool())
            .await
    };
    assert_eq!(unsealed().await?, 1, "the key's event arrives unsealed");
    let running = worker(&db, "stand-in", Duration::from_secs(20));
    let sealed = async {
        for _ in 0..60 {
            if unsealed().await? == 0 {
                return anyhow::Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        anyhow::Ok(false)
    };
    tokio::select! {
        out = running => anyhow::bail!("the worker stopped: {out:?}"),
        sealed = sealed => assert!(sealed?, "the worker did not seal the event within 15 s"),
    }
    let report = db.store.verify_audit_chain(None).await?;
    assert!(report.ok, "{report:#?}");
    db.drop_database().await;
    Ok(())
}
