//! `ironclad audit verify`: walks every tenant's audit chain (or one), recomputes every hash and
//! reports rows edited, inserted or deleted behind the database's back; exit 0 if every chain
//! is unbroken, 1 if not, 2 if the check could not run.

use super::connect_store;
use crate::config::Connections;
use anyhow::Context;
use clap::{Args, Subcommand};
use ironclad_store::audit::{ChainReport, SYSTEM_CHAIN};
use std::process::ExitCode;
use uuid::Uuid;

/// Exit code when a chain is broken.
const EXIT_BROKEN: u8 = 1;
/// Exit code when the check could not run (database unreachable, no chain, unknown tenant).
const EXIT_CANNOT_CHECK: u8 = 2;

/// `ironclad audit …`
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check the hash chain of the audit trail (exit 0 unbroken, 1 broken, 2 cannot check).
    Verify(AuditVerifyArgs),
}

/// `ironclad audit verify`
#[derive(Debug, Args)]
pub struct AuditVerifyArgs {
    /// Only this tenant's chain: its name or id (the nil uuid names the chain of events that
    /// have no tenant).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(c: &Connections, cmd: AuditCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AuditCommand::Verify(args) => verify(c, &args).await,
    }
}

async fn verify(c: &Connections, args: &AuditVerifyArgs) -> anyhow::Result<ExitCode> {
    match check(c, args).await {
        Ok(report) => {
            if args.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print_report(&report);
            }
            Ok(if report.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_BROKEN)
            })
        }
        Err(err) => {
            eprintln!("ironclad audit verify: cannot check: {err:#}");
            Ok(ExitCode::from(EXIT_CANNOT_CHECK))
        }
    }
}

async fn check(c: &Connections, args: &AuditVerifyArgs) -> anyhow::Result<ChainReport> {
    let store = connect_store(c).await?;
    let chain = match args.tenant.as_deref().map(str::trim) {
        None => None,
        Some(text) => match Uuid::parse_str(text) {
            Ok(id) => Some(id),
            Err(_) => Some(
                store
                    .tenant_by_name(text)
                    .await?
                    .with_context(|| format!("no tenant named {text:?}"))?
                    .0,
            ),
        },
    };
    Ok(store.verify_audit_chain(chain).await?)
}

fn print_report(report: &ChainReport) {
    println!(
        "{:<36}  {:<20}  {:>8}  {:>8}  HEAD HASH",
        "CHAIN", "TENANT", "EVENTS", "LAST SEQ"
    );
    for chain in &report.chains {
        let name = match (&chain.tenant_name, chain.tenant == SYSTEM_CHAIN) {
            (Some(name), _) => name.as_str(),
            (None, true) => "(no tenant)",
            (None, false) => "(unknown tenant)",
        };
        println!(
            "{:<36}  {:<20}  {:>8}  {:>8}  {}",
            chain.tenant,
            name,
            chain.events,
            chain.last_seq,
            chain.last_hash.as_deref().unwrap_or("(no head)")
        );
    }
    if !report.problems.is_empty() {
        println!();
        println!(
            "{:<36}  {:>9}  {:>10}  {:<8}  DETAIL",
            "CHAIN", "CHAIN SEQ", "EVENT", "KIND"
        );
        for p in &report.problems {
            let event = p
                .event_id
                .map_or_else(|| "-".to_owned(), |id| id.to_string());
            println!(
                "{:<36}  {:>9}  {:>10}  {:<8}  {}",
                p.tenant,
                p.chain_seq,
                event,
                p.kind.as_str(),
                p.detail
            );
        }
        if report.problems_omitted > 0 {
            println!("… and {} more", report.problems_omitted);
        }
    }
    println!();
    if report.ok {
        println!(
            "audit verify: ok, {} chain(s) and {} event(s) unbroken",
            report.tenants_checked, report.events_checked
        );
        if report.events_awaiting_seal > 0 {
            println!(
                "({} event(s) committed during the check await their seal and were not walked)",
                report.events_awaiting_seal
            );
        }
    } else {
        let broken = {
            let mut chains: Vec<Uuid> = report.problems.iter().map(|p| p.tenant).collect();
            chains.dedup();
            chains.len()
        };
        println!(
            "audit verify: {} problem(s) in {broken} of {} chain(s) ({} event(s) checked)",
            report.problems.len() as u64 + report.problems_omitted,
            report.tenants_checked,
            report.events_checked
        );
    }
}
