//! `ironclad verify` as an operator (or the chaos run) calls it: the real binary against a test
//! database and blob store — exit 0 and `"ok": true` on a clean pipeline, exit 1 with every
//! violation in the JSON once promises are broken, exit 2 when it cannot verify at all.

use ironclad_core::CaseId;
use ironclad_store::ledger::{Expectation, LedgerEntry};
use ironclad_testkit::harness::Pipeline;
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use uuid::Uuid;

const BIN: &str = env!("CARGO_BIN_EXE_ironclad");

const CHECKS: [&str; 9] = [
    "lost",
    "refused_changed_something",
    "stuck",
    "wrongly_failed",
    "decisions_per_generation",
    "job_succeeded_twice",
    "effects_once",
    "blobs",
    "outbox_overdue",
];

/// Runs `ironclad verify ARGS` against the pipeline's database and blob store.
async fn run_verify(p: &Pipeline, args: &[&str]) -> anyhow::Result<Output> {
    Ok(tokio::process::Command::new(BIN)
        .arg("verify")
        .args(args)
        .env("DATABASE_URL", &p.db.url)
        .env("IRONCLAD_BLOB_DIR", p.blobs.root())
        .env_remove("RUST_LOG")
        .output()
        .await?)
}

fn json_of(out: &Output) -> anyhow::Result<Value> {
    serde_json::from_slice(&out.stdout).map_err(|e| {
        anyhow::anyhow!(
            "verify printed no JSON ({e}):\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn violations(json: &Value) -> Vec<(String, u64)> {
    json["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("?").to_owned(),
                c["violations"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect()
}

fn expected(broken: &[(&str, u64)]) -> Vec<(String, u64)> {
    CHECKS
        .iter()
        .map(|name| {
            let n = broken
                .iter()
                .find(|(b, _)| b == name)
                .map_or(0, |(_, n)| *n);
            ((*name).to_owned(), n)
        })
        .collect()
}

fn strings(json: &Value, key: &str) -> Vec<String> {
    json[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

async fn ledger_line(p: &Pipeline, seq: u64, case: CaseId) -> anyhow::Result<LedgerEntry> {
    let files: Vec<String> = sqlx::query_scalar("SELECT sha256 FROM sources WHERE case_id = $1")
        .bind(case.0)
        .fetch_all(p.store().pool())
        .await?;
    Ok(LedgerEntry {
        seq,
        tenant: "test-tenant".into(),
        idempotency_key: format!("k-{seq}"),
        kind: "clean".into(),
        expect: Expectation::Decided,
        status: Some(201),
        case_id: Some(case.to_string()),
        files,
        submitted_at: "2026-12-01T00:00:00Z".into(),
        answered_at: Some("2026-12-01T00:00:01Z".into()),
    })
}

fn write_ledger(path: &Path, entries: &[LedgerEntry]) -> anyhow::Result<()> {
    let text: String = entries.iter().map(|e| e.to_line() + "\n").collect();
    std::fs::write(path, text)?;
    Ok(())
}

#[tokio::test]
async fn verify_exits_0_on_a_clean_pipeline_and_1_with_every_violation_in_its_json(
) -> anyhow::Result<()> {
    let p = Pipeline::start().await?;
    let cases = [p.submit_case(1).await?, p.submit_case(2).await?];
    let dispatcher = p.dispatcher().await?;
    let worker = p.standin_worker("w1").await?;
    for _ in 0..50 {
        let published = dispatcher.tick().await?.published;
        let handled = worker.poll_once().await?.len();
        if published == 0 && handled == 0 {
            break;
        }
    }
    for case in cases {
        assert_eq!(p.case_status(case).await?, "AWAITING_REVIEW");
    }
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.jsonl");
    let mut entries = vec![
        ledger_line(&p, 1, cases[0]).await?,
        ledger_line(&p, 2, cases[1]).await?,
    ];
    write_ledger(&ledger, &entries)?;
    let ledger_arg = ledger.display().to_string();
    let args = [
        "--json",
        "--ledger",
        ledger_arg.as_str(),
        "--stuck-after",
        "0s",
        "--outbox-bound",
        "2m",
    ];

    // Clean: exit 0, every check present and quiet.
    let out = run_verify(&p, &args).await?;
    let json = json_of(&out)?;
    assert_eq!(out.status.code(), Some(0), "{json:#}");
    assert_eq!(json["ok"], Value::Bool(true));
    assert_eq!(violations(&json), expected(&[]));
    for key in ["lost", "duplicated", "wrongly_failed", "stuck"] {
        assert_eq!(json[key], serde_json::json!([]), "{key}");
    }
    let totals = &json["totals"];
    assert_eq!(totals["cases"], 2);
    assert_eq!(totals["awaiting_review"], 2);
    assert_eq!(totals["failed"], 0);
    assert_eq!(totals["failed_by_code"]["document_unreadable"], 0);
    assert_eq!(totals["unacknowledged"], 0);
    assert_eq!(totals["refused"], 0);
    assert_eq!(totals["dead_outbox_rows"], 0);

    // Broken: case 0's finalize job succeeded a second time, and the ledger holds a 201 for a
    // case that does not exist.
    sqlx::query(
        "INSERT INTO job_runs (lease_token, job_id, attempt, owner, finished_at, outcome)
         SELECT gen_random_uuid(), id, 2, 'w2', now(), 'SUCCEEDED'
         FROM jobs WHERE case_id = $1 AND kind = 'finalize_case'",
    )
    .bind(cases[0].0)
    .execute(p.store().pool())
    .await?;
    let ghost = Uuid::now_v7();
    entries.push(LedgerEntry {
        case_id: Some(ghost.to_string()),
        ..ledger_line(&p, 3, cases[1]).await?
    });
    write_ledger(&ledger, &entries)?;

    let out = run_verify(&p, &args).await?;
    let json = json_of(&out)?;
    assert_eq!(out.status.code(), Some(1), "{json:#}");
    assert_eq!(json["ok"], Value::Bool(false));
    assert_eq!(
        violations(&json),
        expected(&[("lost", 1), ("job_succeeded_twice", 1)])
    );
    assert_eq!(strings(&json, "lost"), vec![ghost.to_string()]);
    assert_eq!(strings(&json, "duplicated"), vec![cases[0].to_string()]);
    assert!(strings(&json, "wrongly_failed").is_empty());
    assert!(strings(&json, "stuck").is_empty());
    let twice = &json["checks"][5];
    assert_eq!(twice["name"], "job_succeeded_twice");
    let example = twice["examples"][0].as_str().unwrap_or_default();
    assert!(
        example.starts_with(&format!("case {}: job ", cases[0])),
        "{example}"
    );

    // The table says the same to a person, with the same exit code.
    let out = run_verify(&p, &["--ledger", ledger_arg.as_str()]).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("job_succeeded_twice"), "{text}");
    assert!(
        text.contains(&format!("case {ghost} does not exist")),
        "{text}"
    );
    assert!(
        text.contains("dead outbox rows: 0 (requeue with `ironclad requeue --dead`)"),
        "{text}"
    );
    assert!(
        text.contains("verify: 2 violation(s) in 2 check(s)"),
        "{text}"
    );
    p.finish().await;
    Ok(())
}

#[tokio::test]
async fn verify_exits_2_when_it_cannot_verify() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let bad = dir.path().join("ledger.jsonl");
    std::fs::write(&bad, "{\"seq\": 1}\n")?;
    for args in [
        vec!["--ledger".to_owned(), bad.display().to_string()],
        vec![
            "--ledger".to_owned(),
            dir.path().join("absent.jsonl").display().to_string(),
        ],
    ] {
        let out = tokio::process::Command::new(BIN)
            .arg("verify")
            .args(&args)
            .env("IRONCLAD_BLOB_DIR", dir.path())
            .output()
            .await?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("cannot verify"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    Ok(())
}
