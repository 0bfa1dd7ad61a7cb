//! `ironclad verify`: every promise checked against PostgreSQL and the blob store; exit 1 if
//! any is broken, 0 if none, 2 if the check itself could not run.

use super::connect_store;
use crate::config::{parse_duration, BlobLocation, Connections};
use anyhow::Context;
use clap::Args;
use ironclad_blobs::{BlobError, BlobStore};
use ironclad_store::ledger::LedgerEntry;
use ironclad_store::verify::{BlobState, VerifyOptions, VerifyReport};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tokio::task::JoinSet;

/// Exit code when a promise is broken.
const EXIT_VIOLATED: u8 = 1;
/// Exit code when the verification could not run (database unreachable, unreadable ledger).
const EXIT_CANNOT_VERIFY: u8 = 2;

/// `ironclad verify`
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Ledger of a load run (one JSON submission per line): also check that every accepted
    /// submission exists with its files, and that every refused one committed nothing.
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// An open case without activity for longer than this is stuck (0s after quiescence;
    /// default: 10m, as `ironclad cases --stuck` and the desk).
    #[arg(long, value_parser = parse_duration)]
    pub stuck_after: Option<Duration>,
    /// A due PENDING or a PUBLISHING outbox row older than this is overdue.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub outbox_bound: Duration,
    /// The blob store whose blobs are checked (with an object store, the objects themselves).
    #[command(flatten)]
    pub blobs: BlobLocation,
    /// Blobs hashed at once.
    #[arg(long, default_value_t = 4)]
    pub hash_concurrency: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(c: &Connections, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    match verify(c, &args).await {
        Ok(report) => {
            if args.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print_table(&report);
            }
            Ok(if report.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_VIOLATED)
            })
        }
        Err(err) => {
            eprintln!("ironclad verify: cannot verify: {err:#}");
            Ok(ExitCode::from(EXIT_CANNOT_VERIFY))
        }
    }
}

async fn verify(c: &Connections, args: &VerifyArgs) -> anyhow::Result<VerifyReport> {
    let ledger = match &args.ledger {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the ledger {}", path.display()))?;
            Some(
                LedgerEntry::parse_lines(&text)
                    .with_context(|| format!("reading the ledger {}", path.display()))?,
            )
        }
        None => None,
    };
    anyhow::ensure!(
        args.blobs.blob_url.is_some() || args.blobs.blob_dir.is_dir(),
        "blob directory {} does not exist (set --blob-dir or IRONCLAD_BLOB_DIR, or --blob-url)",
        args.blobs.blob_dir.display()
    );
    let blobs = args.blobs.open()?;
    let store = connect_store(c).await?;
    let options = VerifyOptions {
        ledger: ledger.as_deref(),
        stuck_after: args
            .stuck_after
            .unwrap_or(ironclad_store::stuck::STUCK_AFTER),
        outbox_bound: args.outbox_bound,
    };
    let concurrency = args.hash_concurrency.max(1);
    let report = store
        .verify(&options, |keys| {
            digest_all(blobs.clone(), keys, concurrency)
        })
        .await
        .context("verifying")?;
    Ok(report)
}

/// What the blob store holds under each of `keys`, in order, hashing `concurrency` at once.
async fn digest_all(blobs: BlobStore, keys: Vec<String>, concurrency: usize) -> Vec<BlobState> {
    let mut states: Vec<Option<BlobState>> = vec![None; keys.len()];
    let mut running = JoinSet::new();
    for (i, key) in keys.into_iter().enumerate() {
        if running.len() >= concurrency {
            collect_one(&mut running, &mut states).await;
        }
        let blobs = blobs.clone();
        running.spawn(async move { (i, state_of(blobs.digest(&key).await)) });
    }
    while !running.is_empty() {
        collect_one(&mut running, &mut states).await;
    }
    states
        .into_iter()
        .map(|s| s.unwrap_or_else(|| BlobState::Unreadable("hashing task failed".into())))
        .collect()
}

async fn collect_one(running: &mut JoinSet<(usize, BlobState)>, states: &mut [Option<BlobState>]) {
    // A task that panicked leaves its slot empty: reported as unreadable.
    if let Some(Ok((i, state))) = running.join_next().await {
        if let Some(slot) = states.get_mut(i) {
            *slot = Some(state);
        }
    }
}

fn state_of(digest: Result<Option<ironclad_blobs::BlobDigest>, BlobError>) -> BlobState {
    match digest {
        Ok(Some(d)) => BlobState::Present {
            size: d.size,
            sha256: d.sha256,
        },
        Ok(None) => BlobState::Missing,
        Err(err) => BlobState::Unreadable(err.to_string()),
    }
}

fn print_table(report: &VerifyReport) {
    println!("{:<26}  {:>10}  DESCRIPTION", "CHECK", "VIOLATIONS");
    for check in &report.checks {
        println!(
            "{:<26}  {:>10}  {}",
            check.name, check.violations, check.description
        );
        for example in &check.examples {
            println!("{:<26}  {:>10}    {example}", "", "");
        }
        if check.violations > check.examples.len() as u64 {
            println!(
                "{:<26}  {:>10}    … and {} more",
                "",
                "",
                check.violations - check.examples.len() as u64
            );
        }
    }
    println!("audit_chain: checked by `ironclad audit verify` (every hash recomputed, edits, insertions and deletions named)");
    let t = &report.totals;
    let failed_by_code = t
        .failed_by_code
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(code, n)| format!("{code} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    println!();
    println!(
        "cases: {}  awaiting review: {}  resolved: {}  failed: {}{}",
        t.cases,
        t.awaiting_review,
        t.resolved,
        t.failed,
        if failed_by_code.is_empty() {
            String::new()
        } else {
            format!(" ({failed_by_code})")
        }
    );
    println!(
        "ledger: unacknowledged: {}  refused: {}",
        t.unacknowledged, t.refused
    );
    println!(
        "dead outbox rows: {} (requeue with `ironclad requeue --dead`)",
        t.dead_outbox_rows
    );
    if report.is_ok() {
        println!("verify: ok, every promise holds");
    } else {
        println!(
            "verify: {} violation(s) in {} check(s)",
            report.violations(),
            report.checks.iter().filter(|c| c.violations > 0).count()
        );
    }
}
