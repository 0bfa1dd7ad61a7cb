//! `ironclad-bench finalize`: decisions committed per second — the whole finalize transaction
//! (case lock, job success, facts loaded, rules evaluated, decision with rule results and
//! snapshot, review, audit event, notification and its webhook delivery row) — against the
//! raw PostgreSQL commit rate of an intake-shaped transaction measured by pgbench in the same
//! run, on a fresh database.
//!
//! Setup (not timed) commits each case through intake, completes its source job with four
//! documents' facts as a reader stores them (every field `workflows/trade.yaml` extracts), and
//! claims its finalize job. The timed part runs `Store::finalize_case` for every case from
//! `--concurrency` tasks, as that many workers would.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ironclad_core::parse::ParserKind;
use ironclad_core::{Envelope, JobId, JobKind};
use ironclad_store::decisions::{RulesApplied, RulesSource};
use ironclad_store::jobs::{ClaimOutcome, ClaimedJob, FinalizeOutcome};
use ironclad_store::results::{FactRow, SegmentRow, SourceResults};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::baseline;

/// Decisions per second the finalize transaction must reach on 2 cores.
pub const TARGET_PER_SEC: f64 = 500.0;

/// Arguments of `ironclad-bench finalize`.
#[derive(Debug, Clone, clap::Args)]
pub struct FinalizeArgs {
    /// A small run (CI): 150 cases, 2 s of pgbench.
    #[arg(long)]
    pub smoke: bool,
    /// Cases finalized in the timed part (default 3000).
    #[arg(long)]
    pub cases: Option<usize>,
    /// Tenants the cases are spread over (round robin). Each tenant's audit events form one
    /// hash chain, so one tenant's decisions commit one at a time; more tenants, more at once.
    #[arg(long, default_value_t = 1)]
    pub tenants: usize,
    /// Concurrent finalizers (and pgbench clients).
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Where to write the JSON result (default bench/results/finalize.json; smoke:
    /// finalize-smoke.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

const TRADE: &str = include_str!("../../workflows/trade.yaml");

/// A value of `kind` as the reader stores it, the same in every document of a case so the
/// rules do their full comparison work.
fn value_of(kind: ParserKind, case: usize) -> (Value, String) {
    match kind {
        ParserKind::ContainerNumber => (
            json!({"kind": "container_number", "value": {"code": "MSCU1234566", "check_digit_valid": true}}),
            "MSCU 123456 6".into(),
        ),
        ParserKind::Weight => (
            json!({"kind": "weight", "value": {"kg": "12694.3", "unit": "kg"}}),
            "12,694.3 kg".into(),
        ),
        ParserKind::Money => (
            json!({"kind": "money", "value": {"amount": "48210.50", "currency": "USD"}}),
            "USD 48,210.50".into(),
        ),
        ParserKind::Decimal => (json!({"kind": "decimal", "value": "42.5"}), "42.5".into()),
        ParserKind::Integer => (json!({"kind": "integer", "value": 120}), "120".into()),
        ParserKind::Date => (
            json!({"kind": "date", "value": "2026-03-14"}),
            "14/03/2026".into(),
        ),
        ParserKind::Text => {
            let v = format!("REF-{case:06}");
            (json!({"kind": "text", "value": v}), v)
        }
    }
}

fn source_results(
    schema: &BTreeMap<String, BTreeMap<String, ParserKind>>,
    case: usize,
) -> SourceResults {
    let segments = schema
        .iter()
        .enumerate()
        .map(|(i, (doc, fields))| SegmentRow {
            ordinal: i as i32,
            doc_type: Some(doc.clone()),
            confidence: 0.93,
            first_page: i as i32,
            last_page: i as i32,
            reason: None,
            facts: fields
                .iter()
                .map(|(field, kind)| {
                    let (value, raw) = value_of(*kind, case);
                    FactRow {
                        field: field.clone(),
                        value: Some(value),
                        raw_text: Some(raw),
                        page: Some(i as i32),
                        bbox: Some(json!({"x0": 0.52, "y0": 0.21, "x1": 0.71, "y1": 0.235})),
                        confidence: Some(0.91),
                        conflict: false,
                        missing: false,
                        candidates: json!([]),
                    }
                })
                .collect(),
        })
        .collect();
    SourceResults {
        pages: Vec::new(),
        segments,
        workflow_id: None,
    }
}

/// Runs the benchmark; the JSON result.
pub async fn run(args: &FinalizeArgs) -> anyhow::Result<Value> {
    let cases = args.cases.unwrap_or(if args.smoke { 150 } else { 3000 });
    let concurrency = args.concurrency.max(1);
    let workflow = ironclad_extract::Workflow::from_yaml(TRADE)?;
    let ruleset = workflow.ruleset().clone();
    let schema = workflow.schema().document_types;

    // Baseline: pgbench's intake-shaped transaction on its own fresh database.
    let pgbench = baseline::find_pgbench()?;
    let base_db = ironclad_testkit::TestDb::new().await?;
    let base = async {
        let tenant = base_db.store.create_tenant("pgbench-baseline").await?;
        let dir = tempfile::tempdir()?;
        let script = dir.path().join("intake_shaped.sql");
        std::fs::write(&script, baseline::script(tenant.0))?;
        let secs = if args.smoke { 2 } else { 8 };
        baseline::run_pgbench(
            &pgbench,
            &base_db.url,
            &script,
            concurrency,
            secs,
            dir.path(),
        )
        .await
    }
    .await;
    base_db.drop_database().await;
    let base = base?;

    let db = ironclad_testkit::TestDb::new().await?;
    let result = async {
        let store = db.store.clone();
        let mut tenants = Vec::new();
        for t in 0..args.tenants.max(1) {
            let tenant = store.create_tenant(&format!("finalize-bench-{t}")).await?;
            // One webhook endpoint each, so each decision also writes its delivery row.
            sqlx::query(
                "INSERT INTO webhook_endpoints (id, tenant_id, url, secret, created_by) \
                 VALUES ($1, $2, 'http://127.0.0.1:9/hook', 'whsec_' || repeat('0', 64), 'bench')",
            )
            .bind(Uuid::now_v7())
            .bind(tenant.0)
            .execute(store.pool())
            .await?;
            tenants.push(tenant);
        }
        let blob_dir = tempfile::tempdir()?;
        let blobs = ironclad_blobs::BlobStore::open(blob_dir.path())?;
        let setup_started = Instant::now();
        let mut claimed: Vec<ClaimedJob> = Vec::with_capacity(cases);
        for i in 0..cases {
            let case = ironclad_testkit::harness::commit_fixture_case(
                &store,
                &blobs,
                tenants[i % tenants.len()],
                1,
                3,
                "finalize-bench",
            )
            .await?;
            let job = |kind: JobKind| {
                let store = store.clone();
                async move {
                    let id: Uuid =
                        sqlx::query_scalar("SELECT id FROM jobs WHERE case_id = $1 AND kind = $2")
                            .bind(case.0)
                            .bind(kind.as_str())
                            .fetch_one(store.pool())
                            .await?;
                    match store
                        .claim_job(
                            &Envelope::new(JobId(id), case, kind, 1),
                            "bench",
                            Duration::from_secs(600),
                        )
                        .await?
                    {
                        ClaimOutcome::Claimed(c) => Ok::<_, anyhow::Error>(c),
                        ClaimOutcome::Refused(r) => anyhow::bail!("claim refused: {r:?}"),
                    }
                }
            };
            let source = job(JobKind::ProcessSource).await?;
            store
                .complete_source_job_with(&source, &json!({}), Some(&source_results(&schema, i)), 3)
                .await?;
            claimed.push(job(JobKind::FinalizeCase).await?);
        }
        // The setup's own audit events sealed before the clock starts.
        store.seal_all_audit_events().await?;
        let setup_secs = setup_started.elapsed().as_secs_f64();

        // The dispatcher role's audit sealer runs during the timed part, as in production: its
        // work (sealing every decision's audit event) shares the machine with the finalizers.
        let stop_sealer = tokio_util::sync::CancellationToken::new();
        let sealer = tokio::spawn(
            ironclad_runtime::AuditSealer::new(
                store.clone(),
                ironclad_runtime::audit_sealer::DEFAULT_SEAL_EVERY,
            )
            .run(stop_sealer.clone()),
        );
        let queue = Arc::new(std::sync::Mutex::new(claimed));
        let ruleset = Arc::new(ruleset);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..concurrency {
            let (queue, store, ruleset) = (queue.clone(), store.clone(), ruleset.clone());
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let next = queue.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.pop();
                    let Some(job) = next else { break };
                    let rules = RulesApplied {
                        ruleset: &ruleset,
                        source: RulesSource::Workflow,
                        ruleset_id: None,
                        ruleset_version: None,
                    };
                    let t = Instant::now();
                    let outcome = store.finalize_case(&job, &rules).await?;
                    anyhow::ensure!(
                        outcome == FinalizeOutcome::Decided,
                        "finalize answered {outcome:?}"
                    );
                    latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                Ok::<_, anyhow::Error>(latencies)
            }));
        }
        let mut latencies = Vec::new();
        for t in tasks {
            latencies.extend(t.await??);
        }
        let secs = started.elapsed().as_secs_f64();
        // How long after the last decision its audit events were all in their chains.
        let unsealed_at_end = count_unsealed(&store).await?;
        let sealed_by = Instant::now();
        while count_unsealed(&store).await? > 0 && sealed_by.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let seal_lag_secs = sealed_by.elapsed().as_secs_f64();
        stop_sealer.cancel();
        sealer.await?;
        let chain = store.verify_audit_chain(None).await?;
        anyhow::ensure!(
            chain.ok && chain.events_awaiting_seal == 0,
            "audit chain after the run: {} problem(s), {} awaiting seal",
            chain.problems.len(),
            chain.events_awaiting_seal
        );
        latencies.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            latencies
                .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
                .copied()
                .unwrap_or(0.0)
        };

        // What the timed part wrote: one decision, its rule results, review, notification and
        // delivery per case — counted, not assumed.
        let count = |sql: &'static str| {
            let store = store.clone();
            async move {
                sqlx::query_scalar::<_, i64>(sql)
                    .fetch_one(store.pool())
                    .await
            }
        };
        let decisions = count("SELECT count(*) FROM decisions").await?;
        let rule_results = count("SELECT count(*) FROM rule_results").await?;
        let reviews = count("SELECT count(*) FROM reviews").await?;
        let deliveries = count("SELECT count(*) FROM webhook_deliveries").await?;
        let by_status: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, count(*) FROM decisions GROUP BY 1 ORDER BY 1")
                .fetch_all(store.pool())
                .await?;
        anyhow::ensure!(
            decisions as usize == cases,
            "{decisions} decisions for {cases} cases"
        );
        anyhow::ensure!(
            reviews as usize == cases && deliveries as usize == cases,
            "reviews {reviews}, deliveries {deliveries}"
        );
        let per_sec = cases as f64 / secs;
        let tps = base["tps"].as_f64().unwrap_or(0.0);
        Ok::<_, anyhow::Error>(json!({
            "cases": cases,
            "concurrency": concurrency,
            "tenants": tenants.len(),
            "rules": ruleset.rules.len(),
            "documents_per_case": schema.len(),
            "setup_secs": setup_secs,
            "timed_secs": secs,
            "decisions_per_sec": per_sec,
            "latency_p50_ms": pct(0.5),
            "latency_p99_ms": pct(0.99),
            "rule_results_per_decision": rule_results as f64 / decisions.max(1) as f64,
            "audit_unsealed_when_the_last_decision_committed": unsealed_at_end,
            "audit_sealed_within_secs_after": seal_lag_secs,
            "audit_chain_verified_events": chain.events_checked,
            "decisions_by_status": by_status,
            "baseline_pgbench": base,
            "ratio_to_pgbench": if tps > 0.0 { per_sec / tps } else { 0.0 },
            "target": format!("≥ {TARGET_PER_SEC} decisions/s on 2 cores"),
            "verdict": if per_sec >= TARGET_PER_SEC { "PASS" } else { "MISS" },
            "machine": crate::sys::machine_info(),
        }))
    }
    .await;
    db.drop_database().await;
    let result = result?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(if args.smoke {
            "bench/results/finalize-smoke.json"
        } else {
            "bench/results/finalize.json"
        })
    });
    crate::write_result(&out, &result)?;
    Ok(result)
}

/// Audit events committed and not yet sealed into their chains.
async fn count_unsealed(store: &ironclad_store::Store) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM audit_events WHERE hash IS NULL")
            .fetch_one(store.pool())
            .await?,
    )
}
