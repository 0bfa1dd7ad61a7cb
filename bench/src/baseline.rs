//! Phase 1: the raw PostgreSQL commit rate of an intake-shaped transaction, with pgbench.
//!
//! The custom script is one statement shaped like `INTAKE_COMMIT` (crates/store/src/intake.rs):
//! data-modifying CTEs inserting a case, 1 source, 1 job, 1 outbox row, 1 audit event and 1
//! submission row into the real, migrated tables of a fresh database (same indexes, foreign
//! keys, CHECKs and triggers), with payloads of the sizes intake writes. It runs with
//! `-M prepared` because sqlx prepares and caches statements too. Every transaction commits
//! (fsync of the WAL), exactly like one intake.

use crate::Mode;
use anyhow::Context;
use ironclad_core::{CaseId, Envelope, JobId, JobKind, SourceId};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Finds pgbench on PATH or in Debian's versioned directory.
pub fn find_pgbench() -> anyhow::Result<PathBuf> {
    if let Ok(out) = std::process::Command::new("sh")
        .args(["-c", "command -v pgbench"])
        .output()
    {
        let p = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && !p.is_empty() {
            return Ok(PathBuf::from(p));
        }
    }
    if let Ok(dir) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut found: Vec<PathBuf> = dir
            .flatten()
            .map(|e| e.path().join("bin/pgbench"))
            .filter(|p| p.exists())
            .collect();
        found.sort();
        if let Some(p) = found.pop() {
            return Ok(p);
        }
    }
    anyhow::bail!("pgbench not found: install it (Debian: apt-get install postgresql-client or postgresql-contrib)")
}

/// The pgbench script for `tenant`, with realistic payload sizes taken from the real types.
pub fn script(tenant: uuid::Uuid) -> String {
    // The same shapes intake writes: an Envelope in the outbox, the 201 receipt as the stored
    // response, the audit data.
    let envelope = Envelope::new(JobId::new(), CaseId::new(), JobKind::ProcessSource, 1).to_json();
    let sha = "0".repeat(64);
    let receipt = json!({
        "case_id": CaseId::new(), "status": "INGESTED", "external_reference": null, "workflow": null,
        "sources": [{ "source_id": SourceId::new(), "filename": "bench-000000.pdf", "sha256": sha,
                      "media_type": "application/pdf", "size_bytes": 700, "pages": 1, "job_id": JobId::new() }],
    })
    .to_string();
    let audit =
        json!({ "sources": 1, "external_reference": null, "idempotency_key": null }).to_string();
    let blob_key = format!("sha256/00/00/{sha}");
    // pgbench reads `:name` as a variable (and `-M prepared` turns it into `$n`), JSON's
    // `"key":value` included: a space after each colon keeps the text literal.
    let (envelope, receipt, audit) = (
        envelope.replace("\":", "\": "),
        receipt.replace("\":", "\": "),
        audit.replace("\":", "\": "),
    );
    format!(
        r#"WITH ids AS (
    SELECT gen_random_uuid() AS c, gen_random_uuid() AS s, gen_random_uuid() AS j,
           gen_random_uuid() AS o, gen_random_uuid() AS sub, md5(random()::text) || md5(random()::text) AS sha
), new_case AS (
    INSERT INTO cases (id, tenant_id, external_reference, workflow, status)
    SELECT c, '{tenant}', NULL, NULL, 'INGESTED' FROM ids RETURNING id
), new_sources AS (
    INSERT INTO sources (id, case_id, filename, sha256, media_type, size_bytes, pages, blob_key)
    SELECT s, c, 'bench-000000.pdf', sha, 'application/pdf', 700, 1, '{blob_key}' FROM ids RETURNING id
), new_jobs AS (
    INSERT INTO jobs (id, case_id, source_id, kind, status, generation, max_attempts)
    SELECT j, c, s, 'process_source', 'PENDING', 1, 5 FROM ids RETURNING id
), new_outbox AS (
    INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
    SELECT o, 'job:' || j || ':1', j, '{envelope}', 'PENDING' FROM ids RETURNING id
), audit AS (
    INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data)
    SELECT c, '{tenant}', 'api_key:' || '00000000-0000-0000-0000-000000000000', 'CASE_INGESTED', '{audit}'::jsonb FROM ids RETURNING id
), submission AS (
    INSERT INTO intake_submissions (id, tenant_id, idempotency_key, fingerprint, case_id, response)
    SELECT sub, '{tenant}', NULL, sha, c, '{receipt}'::jsonb FROM ids RETURNING id
)
SELECT (SELECT count(*) FROM new_sources) + (SELECT count(*) FROM new_jobs)
     + (SELECT count(*) FROM new_outbox) + (SELECT count(*) FROM audit)
     + (SELECT count(*) FROM submission) + (SELECT count(*) FROM new_case);
"#
    )
}

/// Runs pgbench with `clients` for `secs`; returns tps, latency figures and failures.
pub async fn run_pgbench(
    pgbench: &Path,
    url: &str,
    script: &Path,
    clients: usize,
    secs: u64,
    logdir: &Path,
) -> anyhow::Result<Value> {
    let jobs = clients.min(2);
    let prefix = logdir.join(format!("pgbench_c{clients}"));
    let out = tokio::process::Command::new(pgbench)
        .args(["-n", "-M", "prepared"])
        .args([
            "-c",
            &clients.to_string(),
            "-j",
            &jobs.to_string(),
            "-T",
            &secs.to_string(),
        ])
        .arg("-f")
        .arg(script)
        .arg("-l")
        .arg(format!("--log-prefix={}", prefix.display()))
        .arg(url)
        .current_dir(logdir)
        .output()
        .await
        .context("running pgbench")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let cut = |s: &str| s.chars().take(2000).collect::<String>();
    anyhow::ensure!(
        out.status.success(),
        "pgbench failed ({}):\n{}\n{}",
        out.status,
        cut(&stdout),
        cut(&stderr)
    );
    let find = |prefix: &str| -> Option<f64> {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .and_then(|l| {
                l.split('=')
                    .nth(1)
                    .or_else(|| l.split(':').nth(1))
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse().ok())
            })
    };
    let tps = find("tps").with_context(|| format!("no tps in pgbench output:\n{stdout}"))?;
    let failed = stdout
        .lines()
        .find(|l| l.starts_with("number of failed transactions"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let processed = stdout
        .lines()
        .find(|l| l.starts_with("number of transactions actually processed"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.split('/').next())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    anyhow::ensure!(
        failed == 0,
        "pgbench reported {failed} failed transactions:\n{stdout}\n{stderr}"
    );
    // Per-transaction latencies from the -l logs: field 3 is the elapsed time in µs.
    let mut lat_us: Vec<u64> = Vec::new();
    for entry in std::fs::read_dir(logdir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&format!("pgbench_c{clients}.")) {
            let text = std::fs::read_to_string(entry.path())?;
            lat_us.extend(
                text.lines()
                    .filter_map(|l| l.split_whitespace().nth(2))
                    .filter_map(|v| v.parse::<u64>().ok()),
            );
        }
    }
    lat_us.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat_us.is_empty() {
            return 0.0;
        }
        let i = ((lat_us.len() as f64 - 1.0) * p).round() as usize;
        lat_us[i] as f64 / 1000.0
    };
    Ok(json!({
        "clients": clients,
        "threads": jobs,
        "duration_s": secs,
        "transactions": processed,
        "tps": tps,
        "latency_avg_ms": find("latency average"),
        "latency_p50_ms": pct(0.50),
        "latency_p99_ms": pct(0.99),
        "failed": failed,
    }))
}

/// Phase 1 on a fresh database: 32 clients, then 1 client.
pub async fn phase(mode: &Mode) -> anyhow::Result<Value> {
    let pgbench = find_pgbench()?;
    let db = ironclad_testkit::TestDb::new().await?;
    let result = async {
        let tenant = db.store.create_tenant("pgbench-baseline").await?;
        let dir = tempfile::tempdir()?;
        let script_path = dir.path().join("intake_shaped.sql");
        std::fs::write(&script_path, script(tenant.0))?;
        let many = run_pgbench(&pgbench, &db.url, &script_path, mode.clients, mode.pgbench_secs, dir.path()).await?;
        let one = run_pgbench(&pgbench, &db.url, &script_path, 1, mode.pgbench_one_secs, dir.path()).await?;
        let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM cases").fetch_one(db.store.pool()).await?;
        Ok::<_, anyhow::Error>(json!({
            "pgbench": pgbench.display().to_string(),
            "script": "one statement: case + 1 source + 1 job + 1 outbox + 1 audit + 1 submission (real schema, -M prepared)",
            "many": many,
            "one": one,
            "cases_committed": rows,
        }))
    }
    .await;
    db.drop_database().await;
    result
}
