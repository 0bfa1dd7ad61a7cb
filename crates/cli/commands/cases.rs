//! `ironclad cases` and `ironclad case ID`: the operator's view, straight from PostgreSQL.

use super::connect_store;
use crate::config::{parse_duration, Connections};
use anyhow::Context;
use clap::Args;
use ironclad_core::parse::show_stored;
use ironclad_core::{CaseId, CaseStatus};
use ironclad_store::stuck::{StuckScope, STUCK_AFTER};
use std::process::ExitCode;
use std::time::Duration;

/// `ironclad cases`
#[derive(Debug, Args)]
pub struct CasesArgs {
    /// Only cases in this status.
    #[arg(long)]
    pub status: Option<String>,
    /// Only open cases idle beyond `--stuck-after`, with the reason they wait.
    #[arg(long)]
    pub stuck: bool,
    /// Idle time after which an open case counts as stuck (default: 10m, the desk's and
    /// `ironclad verify`'s too).
    #[arg(long, value_parser = parse_duration)]
    pub stuck_after: Option<Duration>,
    /// Most cases shown.
    #[arg(long, default_value_t = 50)]
    pub limit: i64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `ironclad case ID`
#[derive(Debug, Args)]
pub struct CaseArgs {
    /// Case id.
    pub id: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!(
            "{}…",
            text.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
}

pub async fn list(c: &Connections, args: CasesArgs) -> anyhow::Result<ExitCode> {
    let store = connect_store(c).await?;
    if args.stuck {
        let after = args.stuck_after.unwrap_or(STUCK_AFTER);
        let stuck = store
            .stuck_cases(StuckScope::Operator, after, args.limit)
            .await?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&stuck)?);
        } else if stuck.is_empty() {
            println!("no stuck cases (open and idle for more than {after:?})");
        } else {
            println!("{:<36}  {:<11}  {:>7}  REASON", "CASE", "STATUS", "IDLE");
            for s in stuck {
                println!(
                    "{:<36}  {:<11}  {:>6}s  {}",
                    s.case.id, s.case.status, s.idle_seconds, s.reason
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(status) = &args.status {
        status.parse::<CaseStatus>().map_err(|e| {
            anyhow::anyhow!(
                "{e}; statuses: INGESTED, PROCESSING, AWAITING_REVIEW, RESOLVED, FAILED"
            )
        })?;
    }
    let cases = store
        .list_cases(None, args.status.as_deref(), None, args.limit)
        .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&cases)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<36}  {:<15}  {:<20}  {:<20}  REASON",
        "CASE", "STATUS", "REFERENCE", "CREATED"
    );
    for case in cases {
        println!(
            "{:<36}  {:<15}  {:<20}  {:<20}  {}",
            case.id,
            case.status,
            short(case.external_reference.as_deref().unwrap_or("-"), 20),
            case.created_at.format("%Y-%m-%d %H:%M:%S"),
            short(case.status_reason.as_deref().unwrap_or(""), 60)
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn show(c: &Connections, args: CaseArgs) -> anyhow::Result<ExitCode> {
    let id: CaseId = args
        .id
        .parse()
        .with_context(|| format!("{:?} is not a case id", args.id))?;
    let store = connect_store(c).await?;
    let Some(case) = store.case_detail(None, id).await? else {
        anyhow::bail!("no case {id}");
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&case)?);
        return Ok(ExitCode::SUCCESS);
    }
    let c = &case.case;
    println!("case       {}", c.id);
    println!(
        "status     {}{}",
        c.status,
        c.status_reason
            .as_ref()
            .map(|r| format!(" — {r}"))
            .unwrap_or_default()
    );
    println!(
        "reference  {}",
        c.external_reference.as_deref().unwrap_or("-")
    );
    println!("generation {}", c.generation);
    println!("created    {}", c.created_at);
    println!("\nsources:");
    for s in &case.sources {
        println!(
            "  {}  {:<30} {:<16} {:>3} page(s)  {}",
            s.id,
            short(&s.filename, 30),
            s.media_type,
            s.pages,
            &s.sha256[..12]
        );
    }
    println!("\njobs:");
    for j in &case.jobs {
        println!(
            "  {}  {:<14} {:<9} attempt {}/{}{}",
            j.id,
            j.kind,
            j.status,
            j.attempt,
            j.max_attempts,
            match (&j.error_code, &j.last_error) {
                (Some(code), Some(e)) => format!("  {code}: {}", short(e, 80)),
                (None, Some(e)) => format!("  last error: {}", short(e, 80)),
                (Some(code), None) => format!("  {code}"),
                (None, None) => String::new(),
            }
        );
    }
    if !case.pages.is_empty() {
        println!("\npages:");
        for p in &case.pages {
            println!(
                "  {}  page {:>3}  {:<10} confidence {:.2}{}  {}",
                p.source_id,
                p.page_index + 1,
                p.method,
                p.confidence,
                if p.rotation != 0 {
                    format!(" (turned {}°)", p.rotation)
                } else {
                    String::new()
                },
                match &p.doc_type {
                    Some(t) => format!("{t} ({:.2})", p.class_confidence.unwrap_or(0.0)),
                    None => format!("UNKNOWN: {}", p.class_reason.as_deref().unwrap_or("-")),
                }
            );
        }
    }
    for s in &case.segments {
        println!(
            "\nsegment {} pages {}-{} of {}: {} (confidence {:.2}){}",
            s.id,
            s.first_page + 1,
            s.last_page + 1,
            s.source_id,
            s.doc_type.as_deref().unwrap_or("UNKNOWN"),
            s.confidence,
            s.reason
                .as_ref()
                .map(|r| format!(" — {r}"))
                .unwrap_or_default()
        );
        for f in &s.facts {
            let value = f
                .value
                .as_ref()
                .map(show_stored)
                .unwrap_or_else(|| "(none)".into());
            println!(
                "  {:<20} {:<30} raw {:<22} page {:<3} confidence {}{}{}",
                f.field,
                short(&value, 30),
                format!("{:?}", f.raw_text.as_deref().unwrap_or("")),
                f.page
                    .map(|p| (p + 1).to_string())
                    .unwrap_or_else(|| "-".into()),
                f.confidence
                    .map(|c| format!("{c:.2}"))
                    .unwrap_or_else(|| "-".into()),
                if f.conflict { "  CONFLICT" } else { "" },
                if f.missing {
                    "  MISSING (required)"
                } else {
                    ""
                }
            );
        }
    }
    match &case.decision {
        Some(d) => {
            let rules = match (d.ruleset.id, d.ruleset.version) {
                (Some(id), Some(v)) => format!("ruleset v{v} ({id})"),
                _ => format!("{} rules", d.ruleset.source),
            };
            println!(
                "\ndecision   v{} {} — {}\n           {} by {}, {}",
                d.version, d.status, d.summary, d.origin, d.decided_by, rules
            );
            print_rule_results(&d.rule_results);
        }
        None => println!("\ndecision   none yet"),
    }
    if let Some(resolution) = &c.resolution {
        println!(
            "resolution {} by {}",
            resolution,
            c.resolved_by.as_deref().unwrap_or("?")
        );
    }
    println!("\nhistory:");
    for a in &case.audit {
        println!(
            "  {}  {:<20} {:<22} {}",
            a.created_at.format("%H:%M:%S%.3f"),
            a.event_type,
            a.actor,
            a.data
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The rule results as a table: outcome first, so failures stand out; then each compared
/// value with its document and page.
fn print_rule_results(results: &[ironclad_store::read::RuleResultView]) {
    if results.is_empty() {
        return;
    }
    println!(
        "\n  {:<16} {:<34} {:<21} {:<15} message",
        "outcome", "rule", "template", "on fail"
    );
    for r in results {
        println!(
            "  {:<16} {:<34} {:<21} {:<15} {}",
            r.outcome,
            short(&r.rule_id, 34),
            r.template,
            r.on_fail.as_deref().unwrap_or("-"),
            r.message
        );
        if r.outcome == "PASS" || r.outcome == "NOT_APPLICABLE" {
            continue;
        }
        for v in r.values.as_array().into_iter().flatten() {
            // what is printed on the page first: that is what a person compares
            let value = v
                .pointer("/evidence/raw_text")
                .and_then(|r| r.as_str())
                .map(|r| format!("{r:?}"))
                .or_else(|| v.get("value").filter(|x| !x.is_null()).map(show_stored))
                .unwrap_or_else(|| "(none)".into());
            let page = v
                .pointer("/evidence/page")
                .and_then(|p| p.as_u64())
                .map(|p| format!("page {}", p + 1))
                .unwrap_or_default();
            println!(
                "  {:<16}   {}.{} = {} {}",
                "",
                v.get("document_type")
                    .and_then(|x| x.as_str())
                    .unwrap_or("?"),
                v.get("field").and_then(|x| x.as_str()).unwrap_or("?"),
                short(&value, 40),
                page
            );
        }
    }
}
