//! `ironclad-bench chaos`: the real roles as separate processes on a private PostgreSQL and
//! Redis, a load of generated dossiers through the real API, and a seeded schedule of faults —
//! then `ironclad verify` on what is left, and a table of what each fault cost.
//!
//! ```text
//! cargo run --release -p ironclad-bench -- chaos --smoke        # CI: < 3 min, every fault type
//! cargo run --release -p ironclad-bench -- chaos                 # full: 3 seeds × 700 cases
//! ```
//!
//! Per seed: a fault-free phase (full run only) and a chaos phase submit the same dossiers
//! (same seed), each on a fresh database, so their throughputs compare. The roles run the
//! `openai` processor against an in-process fake provider that times out on ~6 % of requests
//! and answers 503 on ~3 %: those jobs are retried, never failed. The run fails (exit 1) on
//! any violated invariant: a case lost, stuck, duplicated or wrongly failed, a replayed
//! request answered with another case, bad input accepted or good input refused, or the
//! system not settling in time.

mod cluster;
mod dossiers;
mod faults;
mod load;
mod report;

use cluster::Cluster;
use dossiers::{Dossier, Fixtures};
use faults::{Fault, Pace, Probe, Struck};
use ironclad_store::ledger::{Expectation, LedgerEntry};
use load::LoadSpec;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The chaos run's options.
#[derive(Debug, Clone, clap::Args)]
pub struct ChaosArgs {
    /// The CI run: one seed, 60 cases, short timings, every fault type once (< 3 min).
    #[arg(long)]
    smoke: bool,
    /// Seeds, one run each (default: 1; full run 1,2,3).
    #[arg(long, value_delimiter = ',')]
    seeds: Vec<u64>,
    /// Dossiers per seed (default: smoke 60, full 700).
    #[arg(long)]
    cases: Option<usize>,
    /// Concurrent clients of the load generator.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Skip the fault-free phase (no throughput ratio).
    #[arg(long)]
    no_baseline: bool,
    /// Build and run the debug binary (default for --smoke, which shares the test build).
    #[arg(long)]
    debug: bool,
    /// Do not build the fault-injection binary first.
    #[arg(long)]
    no_build: bool,
    /// Use this ironclad binary (built with `--features fault-injection`).
    #[arg(long)]
    ironclad_bin: Option<PathBuf>,
    /// Where to write the JSON results (default bench/results/chaos.json; smoke: chaos-smoke.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Keep every process log in this directory.
    #[arg(long)]
    keep_logs: Option<PathBuf>,
}

/// Timings of one kind of run.
struct Plan {
    smoke: bool,
    cases: usize,
    pace: Pace,
    /// Role settings (environment).
    env: Vec<(&'static str, &'static str)>,
    provider_timeout: Duration,
    settle_timeout: Duration,
    /// Longest wait, after a fault, for the work it hit to move again before the next one.
    recovery_wait: Duration,
    give_up_after: Duration,
}

impl Plan {
    /// The gap between submissions that spreads `cases` over the fault schedule's expected
    /// length (both phases submit at this pace, so their throughputs compare).
    fn load_pace(&self, cases: usize) -> Duration {
        let p = &self.pace;
        let faults = p.kills + ironclad_core::faults::FaultPoint::ALL.len() + 9;
        let gaps = (p.gap.0 + p.gap.1) / 2 * faults as u32;
        let holds = Duration::from_secs(p.pg_stop_secs.0 + p.pg_stop_secs.1)
            + Duration::from_secs(4) * ironclad_core::faults::FaultPoint::ALL.len() as u32
            + p.claim_idle * 3
            + Duration::from_secs(2) * p.kills as u32;
        (gaps + holds) / cases.max(1) as u32
    }

    fn new(args: &ChaosArgs) -> Self {
        if args.smoke {
            Self {
                smoke: true,
                cases: args.cases.unwrap_or(60),
                pace: Pace {
                    gap: (Duration::from_millis(500), Duration::from_millis(1500)),
                    pg_stop_secs: (8, 12),
                    claim_idle: Duration::from_secs(2),
                    flood_requests: 300,
                    kills: 2,
                },
                // Shortened timings (as the chaos tests use), so each recovery takes seconds.
                env: vec![
                    ("IRONCLAD_LEASE", "3s"),
                    ("IRONCLAD_CLAIM_IDLE", "2s"),
                    ("IRONCLAD_RECLAIM_EVERY", "1s"),
                    ("IRONCLAD_RECONCILE_EVERY", "1s"),
                    ("IRONCLAD_REEMIT_AFTER", "2s"),
                    ("IRONCLAD_OUTBOX_LOCK_TIMEOUT", "3s"),
                    ("IRONCLAD_RETRY_DELAYS", "1s,2s,4s"),
                ],
                provider_timeout: Duration::from_secs(2),
                settle_timeout: Duration::from_secs(90),
                recovery_wait: Duration::from_secs(20),
                give_up_after: Duration::from_secs(60),
            }
        } else {
            Self {
                smoke: false,
                cases: args.cases.unwrap_or(700),
                pace: Pace {
                    gap: (Duration::from_secs(3), Duration::from_secs(8)),
                    pg_stop_secs: (30, 120),
                    claim_idle: Duration::from_secs(10),
                    flood_requests: 3000,
                    kills: 4,
                },
                // Default settings — the lease, idle threshold, reconciler period and re-announce
                // delay behind the recovery figures are the product's own — except the retry
                // backoff of the provider's failures (default 30 s, 2 min, 10 min …), which
                // would only stretch the run's tail.
                env: vec![("IRONCLAD_RETRY_DELAYS", "5s,15s,30s,60s")],
                provider_timeout: Duration::from_secs(4),
                settle_timeout: Duration::from_secs(900),
                recovery_wait: Duration::from_secs(60),
                give_up_after: Duration::from_secs(300),
            }
        }
    }
}

/// `ironclad-bench chaos`.
pub async fn main(args: ChaosArgs) -> ExitCode {
    crate::server::stop_children_on_signal();
    let started = Instant::now();
    match run(&args).await {
        Ok(0) => {
            eprintln!(
                "chaos: every invariant held; done in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Ok(n) => {
            eprintln!(
                "chaos: {n} violation(s) (see above); done in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("chaos: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &ChaosArgs) -> anyhow::Result<usize> {
    let plan = Plan::new(args);
    let seeds = if args.seeds.is_empty() {
        if plan.smoke {
            vec![1]
        } else {
            vec![1, 2, 3]
        }
    } else {
        args.seeds.clone()
    };
    let bin = match &args.ironclad_bin {
        Some(b) => b.clone(),
        None => {
            let release = !(args.debug || plan.smoke);
            tokio::task::spawn_blocking({
                let no_build = args.no_build;
                move || cluster::build_faulty_binary(release, no_build)
            })
            .await??
        }
    };
    let fixtures = Fixtures::load(&crate::workspace_root())?;
    let log_tmp = tempfile::tempdir()?;
    let logs = args
        .keep_logs
        .clone()
        .unwrap_or_else(|| log_tmp.path().to_owned());
    std::fs::create_dir_all(&logs)?;

    let mut violations = 0;
    let mut results = Vec::new();
    // One load for every phase (the first seed's dossiers): seeds vary the faults and the
    // provider's misbehaviour. The fault-free phase runs once, with the first seed, and each
    // chaos phase's throughput is compared to it.
    let dossiers = Arc::new(dossiers_for(&fixtures, seeds[0], plan.cases));
    let mut base: Option<f64> = None;
    for (i, seed) in seeds.iter().copied().enumerate() {
        let with_baseline = i == 0 && !plan.smoke && !args.no_baseline;
        let run = SeedRun {
            plan: &plan,
            args,
            bin: &bin,
            dossiers: dossiers.clone(),
            seed,
            with_baseline,
            logs: logs.join(format!("seed-{seed}")),
        };
        let (found, result) = run_seed(run, &mut base).await?;
        violations += found;
        results.push(result);
    }
    let out = args.out.clone().unwrap_or_else(|| {
        crate::workspace_root()
            .join("bench/results")
            .join(if plan.smoke {
                "chaos-smoke.json"
            } else {
                "chaos.json"
            })
    });
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&json!({ "runs": results }))?,
    )?;
    eprintln!("chaos: results in {}", out.display());
    if args.keep_logs.is_some() {
        eprintln!("chaos: logs kept in {}", logs.display());
    }
    Ok(violations)
}

/// The dossiers of one seed (identical for both phases).
fn dossiers_for(fixtures: &Fixtures, seed: u64, n: usize) -> Vec<Dossier> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| fixtures.draw(&mut rng)).collect()
}

/// One seed's run.
struct SeedRun<'a> {
    plan: &'a Plan,
    args: &'a ChaosArgs,
    bin: &'a Path,
    dossiers: Arc<Vec<Dossier>>,
    seed: u64,
    with_baseline: bool,
    logs: PathBuf,
}

async fn run_seed(run: SeedRun<'_>, base: &mut Option<f64>) -> anyhow::Result<(usize, Value)> {
    let SeedRun {
        plan,
        args,
        bin,
        dossiers,
        seed,
        with_baseline,
        logs,
    } = run;
    let logs = logs.as_path();
    std::fs::create_dir_all(logs)?;
    eprintln!("chaos: seed {seed}: starting a private PostgreSQL and Redis…");
    let pg =
        tokio::task::spawn_blocking(ironclad_testkit::private::PrivatePostgres::start).await??;
    let redis =
        tokio::task::spawn_blocking(ironclad_testkit::private::PrivateRedis::start).await??;
    // An interrupted run (Ctrl-C) cannot run destructors: stop the private servers then.
    crate::server::register_cleanup(pg.kill_command());
    crate::server::register_cleanup(redis.kill_command());
    let provider = ironclad_provider::fake::FakeOpenAi::start().await?;
    provider.serve_with(provider_schedule(seed, plan.provider_timeout));
    let blobs = tempfile::Builder::new()
        .prefix("ironclad-chaos-")
        .tempdir()?;

    let mut base_env = crate::server::ChildEnv { vars: Vec::new() }
        .with("REDIS_URL", redis.url())
        .with(
            "IRONCLAD_BLOB_DIR",
            blobs.path().join("blobs").display().to_string(),
        )
        .with("IRONCLAD_PROCESSOR", "openai")
        .with("IRONCLAD_PROVIDER_URL", provider.base_url())
        .with("IRONCLAD_PROVIDER_MODEL", "fake")
        .with(
            "IRONCLAD_PROVIDER_TIMEOUT",
            format!("{}ms", plan.provider_timeout.as_millis()),
        )
        .with("IRONCLAD_DB_POOL", "8")
        .with("IRONCLAD_LOG_FORMAT", "text")
        .with("RUST_LOG", "info");
    for (k, v) in &plan.env {
        base_env = base_env.with(k, *v);
    }
    let mut cluster = Cluster {
        pg,
        redis,
        db_url: String::new(),
        bin: bin.to_owned(),
        env: base_env,
        api_port: ironclad_testkit::free_port()?,
        roles: cluster::standard_roles(),
        logs: logs.to_owned(),
    };
    cluster.env = cluster
        .env
        .with("IRONCLAD_LISTEN", format!("127.0.0.1:{}", cluster.api_port));

    let baseline = if !with_baseline {
        None
    } else {
        Some(
            phase(
                plan,
                args,
                &mut cluster,
                seed,
                "base",
                dossiers.clone(),
                false,
            )
            .await?,
        )
    };
    let chaos = phase(
        plan,
        args,
        &mut cluster,
        seed,
        "chaos",
        dossiers.clone(),
        true,
    )
    .await?;

    let mut violations = chaos.violations.len();
    if let Some(b) = &baseline {
        violations += b.violations.len();
        *base = Some(b.throughput);
    }
    let ratio = base.map(|b| chaos.throughput / b.max(f64::MIN_POSITIVE));
    println!("\n## Chaos run, seed {seed}: {} dossiers\n", plan.cases);
    println!("{}", report::markdown(&chaos.rows));
    if let (Some(b), Some(r)) = (*base, ratio) {
        println!(
            "throughput (to the 99th percentile decision): fault-free {b:.2} cases/s, under chaos {:.2} cases/s ({:.0} s; all settled after {:.0} s): {:.0} % {}",
            chaos.throughput,
            chaos.elapsed_p99,
            chaos.elapsed,
            r * 100.0,
            if r >= 0.5 { "(target ≥ 50 % PASS)" } else { "(target ≥ 50 % MISS)" }
        );
    } else {
        println!(
            "throughput under chaos (to the 99th percentile decision): {:.2} cases/s ({:.0} s; all settled after {:.0} s)",
            chaos.throughput, chaos.elapsed_p99, chaos.elapsed
        );
    }
    println!(
        "intake to decision under chaos: p50 {} s, p95 {} s, max {} s",
        chaos.latency["p50_secs"], chaos.latency["p95_secs"], chaos.latency["max_secs"]
    );
    let worst = chaos
        .rows
        .iter()
        .filter_map(|r| r.max_recovery_secs)
        .fold(0.0f64, f64::max);
    println!(
        "worst recovery after a fault: {worst:.1} s {}",
        if worst <= 30.0 {
            "(target ≤ 30 s PASS)"
        } else {
            "(target ≤ 30 s MISS)"
        }
    );
    for v in chaos
        .violations
        .iter()
        .chain(baseline.iter().flat_map(|b| b.violations.iter()))
    {
        println!("VIOLATION: {v}");
    }
    let result = json!({
        "seed": seed,
        "cases": plan.cases,
        "smoke": plan.smoke,
        "baseline": baseline.as_ref().map(PhaseResult::to_json),
        "chaos": chaos.to_json(),
        "throughput_ratio": ratio,
        "worst_recovery_secs": worst,
    });
    Ok((violations, result))
}

/// What one phase measured.
struct PhaseResult {
    name: String,
    accepted: usize,
    elapsed: f64,
    /// Seconds from the first submission to the 99th percentile decision.
    elapsed_p99: f64,
    /// Decisions per second up to the 99th percentile decision.
    throughput: f64,
    rows: Vec<report::FaultRow>,
    struck: Vec<Struck>,
    recoveries: Vec<Option<report::Recovery>>,
    latency: Value,
    verify: Value,
    /// `ironclad audit verify` after the phase: ok, events checked, awaiting seal.
    audit: Value,
    load: Value,
    violations: Vec<String>,
    revived: Vec<String>,
}

impl PhaseResult {
    fn to_json(&self) -> Value {
        json!({
            "phase": self.name,
            "accepted_cases": self.accepted,
            "elapsed_secs": self.elapsed,
            "elapsed_to_p99_decision_secs": self.elapsed_p99,
            "cases_per_sec_to_p99": self.throughput,
            "faults": self.rows,
            "struck": self.struck.iter().zip(&self.recoveries).map(|(s, r)| json!({
                "fault": s.fault,
                "injected": s.injected,
                "detail": s.detail,
                "struck_at": s.struck_at,
                "cleared_at": s.cleared_at,
                "jobs_hit": s.hit.len(),
                "recovery": r,
            })).collect::<Vec<_>>(),
            "intake_to_decision": self.latency,
            "verify": self.verify,
            "audit_chain": self.audit,
            "load": self.load,
            "violations": self.violations,
            "roles_revived": self.revived,
        })
    }
}

/// One phase on a fresh database: roles up, the load (and, if `faults`, the schedule),
/// quiescence, `ironclad verify`, the table.
async fn phase(
    plan: &Plan,
    args: &ChaosArgs,
    cluster: &mut Cluster,
    seed: u64,
    name: &str,
    dossiers: Arc<Vec<Dossier>>,
    faults: bool,
) -> anyhow::Result<PhaseResult> {
    let db_name = format!("ironclad_chaos_{name}");
    cluster.db_url = cluster::fresh_database(&cluster.pg, &db_name).await?;
    cluster.env = cluster.env.with("DATABASE_URL", &cluster.db_url);
    cluster.redis.flushall()?;
    let (status, _) = cluster.cli(&["migrate"]).await?;
    anyhow::ensure!(status.success(), "ironclad migrate failed");
    let tenant = format!("chaos-{seed}");
    let key = crate::server::tenant_and_key(&cluster.bin, &cluster.env, &tenant).await?;
    for i in 0..cluster.roles.len() {
        cluster.start_role(i, None).await?;
    }
    cluster.wait_api(Duration::from_secs(60)).await?;
    let db = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&cluster.db_url)
        .await?;
    eprintln!(
        "chaos: seed {seed}, phase {name}: {} dossiers, {} clients{}",
        dossiers.len(),
        args.clients,
        if faults { ", faults on" } else { "" }
    );

    let spec = LoadSpec {
        api: cluster.api_url(),
        tenant,
        key,
        clients: args.clients,
        key_prefix: format!("chaos-{seed}-{name}"),
        give_up_after: plan.give_up_after,
        replay_every: 20,
        pace: plan.load_pace(dossiers.len()),
    };
    let started = Instant::now();
    let started_wall = chrono::Utc::now();
    let load = tokio::spawn({
        let (spec, dossiers) = (spec.clone(), dossiers.clone());
        async move { load::run(&spec, dossiers).await }
    });
    let mut struck = Vec::new();
    let mut revived = Vec::new();
    let probes = Arc::new(std::sync::Mutex::new(Vec::new()));
    if faults {
        let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(7919));
        let schedule = faults::schedule(&mut rng, &plan.pace);
        let mut probe_seq = 1_000_000u64;
        for fault in schedule {
            let gap = rng.random_range(plan.pace.gap.0..=plan.pace.gap.1);
            tokio::time::sleep(gap).await;
            revived.extend(cluster.revive().await?);
            let probe = matches!(fault, Fault::CrashPoint { .. }).then(|| {
                probe_seq += 100;
                Probe {
                    spec: spec.clone(),
                    first_seq: probe_seq,
                    // A healthy dossier (the first clean one), so that it reaches every point.
                    dossier: dossiers
                        .iter()
                        .find(|d| d.expect == Expectation::Decided)
                        .unwrap_or(&dossiers[0])
                        .clone(),
                    entries: probes.clone(),
                }
            });
            eprintln!(
                "chaos: [{:>5.1} s] {fault:?}",
                started.elapsed().as_secs_f64()
            );
            let record = faults::strike(cluster, &db, &fault, &mut rng, probe).await?;
            if !record.detail.is_empty() {
                eprintln!("chaos:           {}", record.detail);
            }
            // The next fault waits until this one's work moves again (or a bound passes), so
            // each recovery is measured alone rather than through the next outage.
            let waited = Instant::now();
            while waited.elapsed() < plan.recovery_wait
                && !report::moved_again(&db, &record).await.unwrap_or(false)
            {
                revived.extend(cluster.revive().await?);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            struck.push(record);
        }
    }
    let outcome = load.await??;
    let settled = settle(cluster, &db, plan.settle_timeout, &mut revived).await;
    let elapsed = started.elapsed().as_secs_f64();
    let mut ledger = outcome.ledger.clone();
    ledger.extend(probes.lock().unwrap_or_else(|p| p.into_inner()).drain(..));
    let ledger_path = cluster.logs.join(format!("ledger-{name}.jsonl"));
    load::write_ledger(&ledger_path, &ledger)?;

    let ledger_arg = ledger_path.display().to_string();
    let (_, verify_out) = cluster
        .cli(&[
            "verify",
            "--json",
            "--ledger",
            &ledger_arg,
            "--stuck-after",
            "0s",
            "--outbox-bound",
            "2m",
        ])
        .await?;
    let verify: Value = serde_json::from_str(&verify_out).unwrap_or_else(
        |e| json!({"ok": false, "error": format!("unreadable verify output: {e}: {verify_out}")}),
    );
    // The audit trail after the faults: dispatchers (which seal it) were killed and PostgreSQL
    // stopped mid-run; every event must be in an unbroken chain.
    let (_, audit_out) = cluster.cli(&["audit", "verify", "--json"]).await?;
    let audit: Value = serde_json::from_str(&audit_out).unwrap_or_else(
        |e| json!({"ok": false, "error": format!("unreadable audit verify output: {e}: {audit_out}")}),
    );
    let damage = report::Damage::from_verify(&verify);
    let (rows, recoveries) = report::table(&db, &struck, &damage).await?;
    let latency = report::latency(&db).await?;
    let (p99_at, decided) = report::decided_p99(&db).await?;
    let elapsed_p99 = p99_at
        .map(|t| (t - started_wall).num_milliseconds() as f64 / 1000.0)
        .unwrap_or(elapsed);
    cluster.stop_all().await;

    let mut violations = Vec::new();
    if let Err(e) = settled {
        violations.push(format!("{name}: {e}"));
    }
    if verify["ok"] != Value::Bool(true) {
        for check in verify["checks"].as_array().into_iter().flatten() {
            if check["violations"].as_u64().unwrap_or(0) > 0 {
                violations.push(format!(
                    "{name}: verify {}: {} ({})",
                    check["name"].as_str().unwrap_or("?"),
                    check["violations"],
                    check["examples"]
                ));
            }
        }
        if let Some(e) = verify.get("error") {
            violations.push(format!("{name}: {e}"));
        }
    }
    if audit["ok"] != Value::Bool(true) {
        violations.push(format!(
            "{name}: audit verify: {} problem(s): {}",
            audit["problems"].as_array().map_or(0, Vec::len),
            audit.get("error").unwrap_or(&audit["problems"])
        ));
    }
    violations.extend(
        outcome
            .replay_mismatches
            .iter()
            .map(|m| format!("{name}: replay answered another case: {m}")),
    );
    violations.extend(
        wrong_answers(&ledger)
            .into_iter()
            .map(|m| format!("{name}: {m}")),
    );
    let accepted = load::accepted(&ledger);
    Ok(PhaseResult {
        name: name.to_owned(),
        accepted,
        elapsed,
        elapsed_p99,
        throughput: decided as f64 * 0.99 / elapsed_p99.max(0.001),
        rows,
        struck,
        recoveries,
        latency,
        verify,
        audit: json!({
            "ok": audit["ok"],
            "events_checked": audit["events_checked"],
            "events_awaiting_seal": audit["events_awaiting_seal"],
        }),
        load: json!({
            "statuses": outcome.statuses,
            "retries": outcome.retries,
            "replays": outcome.replays,
            "submitted_in_secs": outcome.elapsed.as_secs_f64(),
        }),
        violations,
        revived,
    })
}

/// Submissions answered wrongly: a good dossier refused, or bad input accepted.
fn wrong_answers(ledger: &[LedgerEntry]) -> Vec<String> {
    ledger
        .iter()
        .filter_map(|e| match (e.expect, e.status) {
            (Expectation::Refused, Some(s)) if s < 400 => Some(format!(
                "bad input {} ({}) was accepted with {s}",
                e.idempotency_key, e.kind
            )),
            (Expectation::Decided, Some(s)) if (400..500).contains(&s) && s != 409 => {
                Some(format!(
                    "good dossier {} ({}) was refused with {s}",
                    e.idempotency_key, e.kind
                ))
            }
            _ => None,
        })
        .collect()
}

/// Waits until nothing is open or due: every case decided or failed, no job pending or
/// running, no announcement waiting. Roles that died meanwhile are restarted (and named).
async fn settle(
    cluster: &mut Cluster,
    db: &sqlx::PgPool,
    timeout: Duration,
    revived: &mut Vec<String>,
) -> anyhow::Result<()> {
    const OPEN: &str =
        "SELECT (SELECT count(*) FROM cases WHERE status IN ('INGESTED', 'PROCESSING'))
                              + (SELECT count(*) FROM jobs WHERE status IN ('PENDING', 'RUNNING'))";
    let started = Instant::now();
    let mut quiet = 0;
    loop {
        revived.extend(cluster.revive().await?);
        let open: Option<i64> = sqlx::query_scalar(OPEN).fetch_one(db).await.ok();
        quiet = if open == Some(0) { quiet + 1 } else { 0 };
        if quiet >= 2 {
            return Ok(());
        }
        if started.elapsed() > timeout {
            anyhow::bail!("not settled after {timeout:?}: {open:?} case(s) and job(s) still open");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The fake provider's behaviour, by request number: it thinks for 15–75 % of the client's
/// timeout before answering (a model takes seconds, so jobs are in flight when faults strike),
/// ~6 % of requests sleep past the timeout, ~3 % answer 503; answers carry no fields (the
/// workflow's own extraction stands).
fn provider_schedule(seed: u64, timeout: Duration) -> ironclad_provider::fake::Fallback {
    use ironclad_provider::fake::Reply;
    Arc::new(move |n: u64| {
        let mut rng = StdRng::seed_from_u64(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let roll: f64 = rng.random();
        let think = timeout.mul_f64(rng.random_range(0.15..0.75));
        if roll < 0.06 {
            Reply::sleep(timeout + Duration::from_secs(1), Reply::fields(&[]))
        } else if roll < 0.09 {
            Reply::sleep(think / 4, Reply::Status(503))
        } else {
            Reply::sleep(think, Reply::fields(&[]))
        }
    })
}
