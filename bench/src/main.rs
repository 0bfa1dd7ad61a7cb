//! `ironclad-bench`: the pipeline's throughput on this machine, in one run, next to the raw
//! PostgreSQL commit rate of an intake-shaped transaction measured in the same run.
//!
//! `cargo run --release -p ironclad-bench` (full, ≈2 min) or `… -- --smoke` (a few seconds,
//! every phase, for CI). Exits non-zero when a phase errors (a non-201, a lost row, a crash);
//! targets are reported PASS/MISS, never asserted: shared machines are noisy.
//!
//! `… -- ocr` (or `-- ocr --smoke`) benchmarks the OCR path instead: see `ocr.rs`.
//! `… -- rules` (or `-- rules --smoke`) benchmarks the rules engine alone: see `rules.rs`.

mod baseline;
mod chaos;
mod desk;
mod finalize;
mod load;
mod ocr;
mod phases;
mod rules;
mod scaling;
mod server;
mod sys;

/// The allocator the `ironclad` binary uses, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Benchmark of the Ironclad pipeline (stand-in processor).
#[derive(Debug, Parser)]
#[command(name = "ironclad-bench", args_conflicts_with_subcommands = true)]
struct Cli {
    /// Without a subcommand: the pipeline benchmark (the flags below).
    #[command(subcommand)]
    command: Option<Sub>,
    /// A bounded few-second run of every phase (CI): exits non-zero only if a phase errors.
    #[arg(long)]
    smoke: bool,
    /// Concurrent HTTP clients (intake and end-to-end) and pgbench clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Timed intake window in seconds (default 15; smoke 2).
    #[arg(long)]
    intake_secs: Option<f64>,
    /// End-to-end cases (default 3000; smoke 100).
    #[arg(long)]
    e2e_cases: Option<usize>,
    /// IRONCLAD_WORKER_CONCURRENCY of the end-to-end process.
    #[arg(long, default_value_t = 16)]
    worker_concurrency: usize,
    /// Outbox rows per dispatcher tick.
    #[arg(long, default_value_t = 500)]
    dispatch_batch: i64,
    /// Dispatchers draining the outbox at once in phase 3.
    #[arg(long, default_value_t = 1)]
    dispatchers: usize,
    /// Phases to run (comma-separated): baseline, intake, dispatch, e2e. Ratios need baseline.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "baseline,intake,dispatch,e2e"
    )]
    only: Vec<String>,
    /// Extra environment for the ironclad processes, e.g. `--server-env IRONCLAD_DB_POOL=32`.
    #[arg(long = "server-env", value_parser = parse_kv)]
    server_env: Vec<(String, String)>,
    /// Use this ironclad binary instead of building target/release/ironclad.
    #[arg(long)]
    ironclad_bin: Option<PathBuf>,
    /// Do not run `cargo build --release --bin ironclad` first.
    #[arg(long)]
    no_build: bool,
    /// Where to write the JSON results (default bench/results/latest.json; smoke: smoke.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the blob directories go (default: the system temp dir). An experiment knob: e.g.
    /// /dev/shm shows what the blob store's fsyncs cost.
    #[arg(long)]
    scratch_root: Option<PathBuf>,
    /// Keep the ironclad logs in this directory (default: a temp dir, removed).
    #[arg(long)]
    keep_logs: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// OCR throughput: Ironclad's PageReader against the tesseract CLI and ocrmypdf on the same
    /// scanned pages, text-layer pages/s, peak RSS, field accuracy (bench/results/ocr.json).
    Ocr(ocr::OcrArgs),
    /// The chaos run: real roles as processes, generated dossiers, a seeded fault schedule,
    /// then `ironclad verify` and a table of what each fault cost (see chaos/mod.rs).
    Chaos(chaos::ChaosArgs),
    /// Rules engine throughput: evaluations/s of a 10-document, 40-rule case on one thread
    /// (bench/results/rules.json).
    Rules(rules::RulesArgs),
    /// Finalization throughput: decisions committed per second (evaluate, decision, rule
    /// results, snapshot, review, audit, notification, delivery row) against pgbench in the
    /// same run (bench/results/finalize.json).
    Finalize(finalize::FinalizeArgs),
    /// The operator's desk: a 20-page, 200-fact case page against the same case as JSON, and
    /// page images (first view against the pdftoppm CLI, cached) (bench/results/desk.json).
    Desk(desk::DeskArgs),
    /// Worker scaling: OCR pages/s with 1, 2, 4 `ironclad worker` processes (one core each)
    /// against the tesseract CLI with 1 and 2 processes (bench/results/scaling.json).
    Scaling(scaling::ScalingArgs),
    /// Internal: one PageReader job in its own process (for its peak RSS).
    #[command(hide = true)]
    OcrWorker(ocr::WorkerArgs),
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))
}

/// Sizes and durations of one run.
#[derive(Debug, Clone)]
pub struct Mode {
    pub smoke: bool,
    pub clients: usize,
    pub pgbench_secs: u64,
    pub pgbench_one_secs: u64,
    pub intake_warmup: Duration,
    pub intake_secs: Duration,
    pub dispatch_topup_below: i64,
    pub dispatch_min_rows: i64,
    pub dispatch_batch: i64,
    pub dispatchers: usize,
    pub e2e_cases: usize,
    pub e2e_timeout: Duration,
    pub worker_concurrency: usize,
}

impl Mode {
    fn from_cli(cli: &Cli) -> Self {
        let smoke = cli.smoke;
        Self {
            smoke,
            clients: cli.clients.max(1),
            pgbench_secs: if smoke { 2 } else { 10 },
            pgbench_one_secs: if smoke { 1 } else { 5 },
            intake_warmup: Duration::from_secs_f64(if smoke { 0.5 } else { 3.0 }),
            intake_secs: Duration::from_secs_f64(cli.intake_secs.unwrap_or(if smoke {
                2.0
            } else {
                15.0
            })),
            dispatch_topup_below: if smoke { 5_000 } else { 20_000 },
            dispatch_min_rows: if smoke { 5_000 } else { 50_000 },
            dispatch_batch: cli.dispatch_batch,
            dispatchers: cli.dispatchers.max(1),
            e2e_cases: cli.e2e_cases.unwrap_or(if smoke { 100 } else { 3000 }),
            e2e_timeout: Duration::from_secs(if smoke { 60 } else { 300 }),
            worker_concurrency: cli.worker_concurrency,
        }
    }
}

/// What every phase needs: the binary, the child environment, where logs go.
pub struct Ctx {
    pub bin: PathBuf,
    pub env: server::ChildEnv,
    pub redis_url: String,
    pub logs: PathBuf,
    /// Blob directories, removed only when the whole run is over: deleting tens of thousands of
    /// files between phases would slow the next phase's file creation (ext4 without a journal
    /// scans recently deleted inodes when it allocates one).
    scratch: std::sync::Mutex<Vec<tempfile::TempDir>>,
    scratch_root: Option<PathBuf>,
}

impl Ctx {
    /// A fresh directory that lives until the end of the run.
    pub fn scratch_dir(&self) -> anyhow::Result<PathBuf> {
        let builder = {
            let mut b = tempfile::Builder::new();
            b.prefix("ironclad-bench-");
            b
        };
        let dir = match &self.scratch_root {
            Some(root) => builder.tempdir_in(root)?,
            None => builder.tempdir()?,
        };
        let path = dir.path().to_owned();
        server::register_scratch(&path);
        self.scratch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(dir);
        Ok(path)
    }
}

/// The workspace root (bench/..).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Deletes a prefix's streams (work and dead letter; the group lives in the stream).
async fn drop_streams(redis_url: &str, prefix: &str) -> anyhow::Result<()> {
    let cfg = ironclad_queue::StreamConfig::with_prefix(prefix);
    let client = redis::Client::open(redis_url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let _: i64 = redis::cmd("DEL")
        .arg(&cfg.stream)
        .arg(&cfg.dead_stream)
        .query_async(&mut conn)
        .await?;
    Ok(())
}

async fn versions(redis_url: &str) -> Value {
    let pg: Option<String> = async {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect(&ironclad_testkit::with_database(
                &ironclad_testkit::database_url(),
                "postgres",
            ))
            .await
            .ok()?;
        let v: Option<String> = sqlx::query_scalar("SHOW server_version")
            .fetch_one(&pool)
            .await
            .ok();
        let sc: Option<String> = sqlx::query_scalar("SHOW synchronous_commit")
            .fetch_one(&pool)
            .await
            .ok();
        pool.close().await;
        Some(format!(
            "{} (synchronous_commit={})",
            v?,
            sc.unwrap_or_default()
        ))
    }
    .await;
    let redis: Option<String> = async {
        let client = redis::Client::open(redis_url).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map(|v| v.trim().to_owned())
    }
    .await;
    json!({ "postgresql": pg, "redis": redis })
}

fn fmt_int(v: f64) -> String {
    let n = v.round() as i64;
    let digits: Vec<char> = n.unsigned_abs().to_string().chars().rev().collect();
    let groups: Vec<String> = digits.chunks(3).map(|c| c.iter().rev().collect()).collect();
    let body = groups.into_iter().rev().collect::<Vec<_>>().join(",");
    if n < 0 {
        format!("-{body}")
    } else {
        body
    }
}

/// Builds the summary rows (figure, ratio to pgbench 32 clients, target, verdict) and prints
/// them as a Markdown table.
fn summarize(results: &Value) -> (Value, String) {
    let f = |path: &[&str]| -> Option<f64> {
        let mut v = results;
        for p in path {
            v = v.get(*p)?;
        }
        v.as_f64()
    };
    let base = f(&["baseline", "many", "tps"]);
    let ratio = |x: Option<f64>| match (x, base) {
        (Some(x), Some(b)) if b > 0.0 => Some((x / b * 1000.0).round() / 1000.0),
        _ => None,
    };
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "PASS",
        Some(false) => "MISS",
        None => "n/a",
    };
    let intake = f(&["intake", "cases_per_s"]);
    let p50 = f(&["intake", "latency_p50_ms"]);
    let p99 = f(&["intake", "latency_p99_ms"]);
    let dispatch = f(&["dispatch", "events_per_s"]);
    let e2e = f(&["e2e", "cases_per_s"]);
    let clients = results["mode"]["clients"].as_u64().unwrap_or(32);
    let rows = vec![
        json!({"figure": format!("baseline: pgbench intake-shaped tx, {clients} clients"), "value": base, "unit": "tx/s", "ratio": ratio(base), "target": "", "verdict": ""}),
        json!({"figure": "baseline: pgbench intake-shaped tx, 1 client", "value": f(&["baseline", "one", "tps"]), "unit": "tx/s", "ratio": ratio(f(&["baseline", "one", "tps"])), "target": "", "verdict": ""}),
        json!({"figure": format!("intake over HTTP, {clients} clients"), "value": intake, "unit": "cases/s", "ratio": ratio(intake), "target": "≥ 1,000 cases/s", "verdict": verdict(intake.map(|v| v >= 1000.0))}),
        json!({"figure": "intake latency p50", "value": p50, "unit": "ms", "ratio": null, "target": "", "verdict": ""}),
        json!({"figure": "intake latency p99", "value": p99, "unit": "ms", "ratio": null, "target": "≤ 50 ms", "verdict": verdict(p99.map(|v| v <= 50.0))}),
        json!({"figure": "outbox dispatch (1 dispatcher, batch 500)", "value": dispatch, "unit": "events/s", "ratio": ratio(dispatch), "target": "≥ 20,000 events/s", "verdict": verdict(dispatch.map(|v| v >= 20000.0))}),
        json!({"figure": "end-to-end, intake → decision", "value": e2e, "unit": "cases/s", "ratio": ratio(e2e), "target": "≥ 500 cases/s", "verdict": verdict(e2e.map(|v| v >= 500.0))}),
    ];
    let mut table = String::from("| figure | value | ratio to pgbench (32 clients) | target | result |\n|---|---:|---:|---|---|\n");
    for r in &rows {
        let value = match r["value"].as_f64() {
            Some(v) if r["unit"] == "ms" => format!("{v:.1} {}", r["unit"].as_str().unwrap_or("")),
            Some(v) => format!("{} {}", fmt_int(v), r["unit"].as_str().unwrap_or("")),
            None => "—".into(),
        };
        let ratio = r["ratio"]
            .as_f64()
            .map(|v| format!("{v:.2}×"))
            .unwrap_or_default();
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r["figure"].as_str().unwrap_or(""),
            value,
            ratio,
            r["target"].as_str().unwrap_or(""),
            r["verdict"].as_str().unwrap_or("")
        ));
    }
    (Value::Array(rows), table)
}

fn main() -> ExitCode {
    // libgomp reads OMP_THREAD_LIMIT when it loads: re-exec with it set before anything else
    // (Tesseract is linked in for the `ocr` mode; without it OCR is 5–6× slower on 2 cores),
    // and cap malloc arenas as the `ironclad` binary does.
    ironclad_ocr::prepare_process();
    let cli = Cli::parse();
    if let Some(Sub::OcrWorker(args)) = &cli.command {
        return ocr::worker(args);
    }
    if let Some(Sub::Rules(args)) = &cli.command {
        return rules_main(args);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match &cli.command {
        Some(Sub::Ocr(args)) => rt.block_on(ocr_main(args.clone())),
        Some(Sub::Chaos(args)) => rt.block_on(chaos::main(args.clone())),
        Some(Sub::Finalize(args)) => rt.block_on(finalize_main(args.clone())),
        Some(Sub::Desk(args)) => rt.block_on(desk_main(args.clone())),
        Some(Sub::Scaling(args)) => rt.block_on(scaling::main(args.clone())),
        _ => rt.block_on(pipeline_main(cli)),
    }
}

/// `ironclad-bench finalize`: prints the JSON and a one-line verdict.
/// Writes a benchmark's JSON result to `out`, creating its folder.
pub(crate) fn write_result(
    out: &std::path::Path,
    result: &serde_json::Value,
) -> anyhow::Result<()> {
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(out, serde_json::to_string_pretty(result)?)?;
    Ok(())
}

async fn desk_main(args: desk::DeskArgs) -> ExitCode {
    match desk::run(&args).await {
        Ok(r) => {
            println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
            let ms = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
            println!(
                "desk: case page {:.1} ms median ({} pages, {} facts; JSON {:.1} ms, ratio {:.2}); \
                 page image first {:.0} ms (pdftoppm alone {:.0} ms), cached {:.1} ms; correction \
                 round trip {:.0} ms median, {:.0} ms p95; targets 300/1000/50/2000 ms: {}",
                ms("case_page_ms_median"),
                r["pages"],
                r["facts"],
                ms("case_json_ms_median"),
                ms("case_page_vs_json"),
                ms("image_first_ms_median"),
                ms("pdftoppm_cli_ms_median"),
                ms("image_cached_ms_median"),
                ms("correction_round_trip_ms_median"),
                ms("correction_round_trip_ms_p95"),
                r["verdict"].as_str().unwrap_or("")
            );
            if r["verdict"] == "PASS" || args.smoke {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("bench desk: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn finalize_main(args: finalize::FinalizeArgs) -> ExitCode {
    match finalize::run(&args).await {
        Ok(r) => {
            println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
            println!(
                "finalize: {:.0} decisions/s ({} cases, {} rules, {} finalizers; p99 {:.1} ms); pgbench intake-shaped {:.0} tps → ratio {:.2}; target {}: {}",
                r["decisions_per_sec"].as_f64().unwrap_or(0.0),
                r["cases"],
                r["rules"],
                r["concurrency"],
                r["latency_p99_ms"].as_f64().unwrap_or(0.0),
                r["baseline_pgbench"]["tps"].as_f64().unwrap_or(0.0),
                r["ratio_to_pgbench"].as_f64().unwrap_or(0.0),
                r["target"].as_str().unwrap_or(""),
                r["verdict"].as_str().unwrap_or("")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench finalize: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `ironclad-bench rules`: pure CPU, so no runtime and no services.
fn rules_main(args: &rules::RulesArgs) -> ExitCode {
    match rules::run(args) {
        Ok(result) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&result).unwrap_or_default()
            );
            println!(
                "rules: {} evaluations/s ({} documents, {} rules, 1 thread), target {}: {}",
                fmt_int(result["evaluations_per_sec"].as_f64().unwrap_or(0.0)),
                result["documents"],
                result["rules"],
                result["target"].as_str().unwrap_or(""),
                result["verdict"].as_str().unwrap_or("")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench rules: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `ironclad-bench ocr`.
async fn ocr_main(args: ocr::OcrArgs) -> ExitCode {
    ocr::stop_children_on_signal();
    let started = Instant::now();
    let r = tokio::task::spawn_blocking(move || ocr::run(&args)).await;
    match r {
        Ok(Ok(0)) => {
            eprintln!(
                "bench ocr: done in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Ok(Ok(failed)) => {
            eprintln!(
                "bench ocr: {failed} contender(s) errored (see above); done in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            ExitCode::FAILURE
        }
        Ok(Err(e)) => {
            eprintln!("bench ocr: {e:#}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("bench ocr: crashed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The pipeline benchmark (no subcommand).
async fn pipeline_main(cli: Cli) -> ExitCode {
    let mode = Mode::from_cli(&cli);
    let started = Instant::now();
    match run(&cli, &mode).await {
        Ok(0) => {
            eprintln!("bench: done in {:.0} s", started.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Ok(failed) => {
            eprintln!(
                "bench: {failed} phase(s) errored (see above); done in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the selected phases; returns how many errored.
async fn run(cli: &Cli, mode: &Mode) -> anyhow::Result<usize> {
    let want = |p: &str| cli.only.iter().any(|x| x.trim() == p);
    server::stop_children_on_signal();
    let redis_url = ironclad_testkit::redis_url();
    let needs_bin = want("intake") || want("e2e");
    let bin = if needs_bin {
        server::ensure_binary(cli.ironclad_bin.as_deref(), cli.no_build)?
    } else {
        PathBuf::new()
    };
    let log_tmp = tempfile::tempdir()?;
    let logs = match &cli.keep_logs {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => log_tmp.path().to_owned(),
    };
    let mut vars = vec![
        ("REDIS_URL".to_owned(), redis_url.clone()),
        ("IRONCLAD_LOG_FORMAT".to_owned(), "json".to_owned()),
    ];
    vars.extend(cli.server_env.iter().cloned());
    let ctx = Ctx {
        bin,
        env: server::ChildEnv { vars },
        redis_url: redis_url.clone(),
        logs,
        scratch: Default::default(),
        scratch_root: cli.scratch_root.clone(),
    };
    // Databases and streams are dropped at the very end too (DROP DATABASE forces a checkpoint).
    let mut dbs: Vec<ironclad_testkit::TestDb> = Vec::new();
    let mut prefixes: Vec<String> = Vec::new();

    let mut results = json!({
        "kind": if mode.smoke { "smoke" } else { "full" },
        "command": if mode.smoke { "cargo run --release -p ironclad-bench -- --smoke" } else { "cargo run --release -p ironclad-bench" },
        "machine": sys::machine_info(),
        "services": versions(&redis_url).await,
        "mode": {
            "clients": mode.clients, "pgbench_secs": mode.pgbench_secs, "pgbench_one_client_secs": mode.pgbench_one_secs,
            "intake_warmup_s": mode.intake_warmup.as_secs_f64(), "intake_s": mode.intake_secs.as_secs_f64(),
            "dispatch_min_rows": mode.dispatch_min_rows, "dispatch_batch": mode.dispatch_batch, "dispatchers": mode.dispatchers,
            "e2e_cases": mode.e2e_cases, "worker_concurrency": mode.worker_concurrency,
            "scratch_root": cli.scratch_root.as_ref().map(|p| p.display().to_string()),
            "server_env": cli.server_env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        },
    });
    eprintln!(
        "bench: {} run on {} core(s), PostgreSQL {}, Redis {}",
        results["kind"].as_str().unwrap_or(""),
        results["machine"]["nproc"],
        results["services"]["postgresql"].as_str().unwrap_or("?"),
        results["services"]["redis"].as_str().unwrap_or("?")
    );
    let idle = sys::background_load(1.0).await;
    let busy = idle["machine_busy_cores"].as_f64().unwrap_or(0.0);
    eprintln!("bench: before starting, {}", sys::split_line(&idle));
    if busy > 0.3 {
        eprintln!("bench: WARNING: the machine is already {busy:.2} cores busy: figures will be low and noisy");
    }
    results["machine"]["busy_before_start"] = idle;
    let disk = sys::disk_probe(cli.scratch_root.as_deref());
    eprintln!("bench: disk probe: {disk}");
    results["machine"]["disk_probe"] = disk;
    let mut failed = 0usize;
    let mut record = |name: &str, r: anyhow::Result<Value>, results: &mut Value| {
        let v = match r {
            Ok(v) => v,
            Err(e) => json!({ "error": format!("{e:#}") }),
        };
        if let Some(e) = v.get("error") {
            failed += 1;
            eprintln!("bench: phase {name} ERRORED: {}", e.as_str().unwrap_or(""));
        } else {
            eprintln!("bench: phase {name} ok: {}", short(name, &v));
        }
        if let Some(cpu) = v.get("cpu") {
            eprintln!("        {}", sys::split_line(cpu));
        }
        results[name] = v;
    };

    // 1. Baseline.
    if want("baseline") {
        eprintln!(
            "bench: [1/4] pgbench baseline ({} clients × {} s, then 1 client × {} s)…",
            mode.clients, mode.pgbench_secs, mode.pgbench_one_secs
        );
        let r = baseline::phase(mode).await;
        record("baseline", r, &mut results);
    }

    // 2 + 3 share a database: intake leaves PENDING outbox rows, dispatch drains them.
    if want("intake") || want("dispatch") {
        match ironclad_testkit::TestDb::new().await {
            Ok(db) => {
                let prefix = format!("bench-{}", uuid::Uuid::new_v4().simple());
                if want("intake") {
                    eprintln!(
                        "bench: [2/4] intake over HTTP ({} clients, {:?} warm-up + {:?})…",
                        mode.clients, mode.intake_warmup, mode.intake_secs
                    );
                    let r = phases::intake(&ctx, mode, &db, &prefix).await;
                    record("intake", r, &mut results);
                }
                if want("dispatch") {
                    eprintln!(
                        "bench: [3/4] outbox dispatch ({} dispatcher(s), batch {})…",
                        mode.dispatchers, mode.dispatch_batch
                    );
                    let r = phases::dispatch(&ctx, mode, &db, &prefix).await;
                    record("dispatch", r, &mut results);
                }
                dbs.push(db);
                prefixes.push(prefix);
            }
            Err(e) => {
                let name = if want("intake") { "intake" } else { "dispatch" };
                record(name, Err(e.context("creating the database")), &mut results);
            }
        }
    }

    // 4. End-to-end on a fresh database.
    if want("e2e") {
        eprintln!(
            "bench: [4/4] end-to-end ({} cases, {} clients, worker concurrency {})…",
            mode.e2e_cases, mode.clients, mode.worker_concurrency
        );
        match ironclad_testkit::TestDb::new().await {
            Ok(db) => {
                let prefix = format!("bench-{}", uuid::Uuid::new_v4().simple());
                let r = phases::end_to_end(&ctx, mode, &db, &prefix).await;
                record("e2e", r, &mut results);
                dbs.push(db);
                prefixes.push(prefix);
            }
            Err(e) => record("e2e", Err(e.context("creating the database")), &mut results),
        }
    }

    // Clean up: databases, streams, blob directories (logs unless kept).
    for db in dbs {
        db.drop_database().await;
    }
    for prefix in prefixes {
        if let Err(e) = drop_streams(&redis_url, &prefix).await {
            eprintln!("bench: cleaning up streams {prefix}: {e:#}");
        }
    }
    drop(ctx);

    // 5. Summary.
    let (rows, table) = summarize(&results);
    results["summary"] = rows;
    results["phases_errored"] = json!(failed);
    println!();
    println!(
        "Ironclad benchmark ({}), {} · {} cores · {} · commit {}",
        results["kind"].as_str().unwrap_or(""),
        results["machine"]["date"].as_str().unwrap_or(""),
        results["machine"]["nproc"],
        results["machine"]["cpu_model"].as_str().unwrap_or(""),
        results["machine"]["git_commit"].as_str().unwrap_or("")
    );
    println!();
    print!("{table}");
    println!();
    for name in ["intake", "dispatch", "e2e"] {
        if let Some(cpu) = results.get(name).and_then(|v| v.get("cpu")) {
            println!("{name:>8}: {}", sys::split_line(cpu));
        }
    }
    println!(
        "  before: {}",
        sys::split_line(&results["machine"]["busy_before_start"])
    );
    println!("    disk: {}", results["machine"]["disk_probe"]);
    println!();
    let out = cli.out.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results")
            .join(if mode.smoke {
                "smoke.json"
            } else {
                "latest.json"
            })
    });
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&out, serde_json::to_string_pretty(&results)? + "\n")?;
    println!("results written to {}", out.display());
    Ok(failed)
}

/// A one-line digest of a phase for the progress log.
fn short(name: &str, v: &Value) -> String {
    let g = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    match name {
        "baseline" => format!(
            "{} tx/s with {} clients (p50 {:.1} ms, p99 {:.1} ms), {} tx/s with 1",
            fmt_int(v["many"]["tps"].as_f64().unwrap_or(0.0)),
            v["many"]["clients"],
            v["many"]["latency_p50_ms"].as_f64().unwrap_or(0.0),
            v["many"]["latency_p99_ms"].as_f64().unwrap_or(0.0),
            fmt_int(v["one"]["tps"].as_f64().unwrap_or(0.0))
        ),
        "intake" => format!(
            "{} cases/s, p50 {:.1} ms, p99 {:.1} ms, {} errors, {} pending outbox rows",
            fmt_int(g("cases_per_s")),
            g("latency_p50_ms"),
            g("latency_p99_ms"),
            g("errors"),
            g("pending_outbox_rows")
        ),
        "dispatch" => format!(
            "{} events/s ({} rows in {:.2} s)",
            fmt_int(g("events_per_s")),
            g("published"),
            g("wall_s")
        ),
        "e2e" => format!(
            "{} cases/s ({} cases in {:.2} s)",
            fmt_int(g("cases_per_s")),
            g("cases"),
            g("wall_s")
        ),
        _ => String::new(),
    }
}
