//! Admin commands: migrate, tenants, API keys, requeue.

use super::connect_store;
use crate::config::Connections;
use anyhow::Context;
use clap::{Args, Subcommand};
use ironclad_core::role::Role;
use ironclad_store::tenants::Revocation;
use std::process::ExitCode;

/// `ironclad tenant …`
#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant (succeeds quietly if it already exists).
    Create {
        /// Tenant name.
        name: String,
    },
}

/// `ironclad apikey …`
#[derive(Debug, Subcommand)]
pub enum ApiKeyCommand {
    /// Create a key; prints it once on the last line of stdout (only its hash is stored).
    Create {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// operator, reviewer or admin.
        #[arg(long, default_value = "operator")]
        role: String,
        /// What the key is for ("ERP connector"): how people see it on the desk.
        #[arg(long)]
        label: Option<String>,
    },
    /// Revoke a key; every API process refuses it within 1 s. Revoking twice changes nothing.
    Revoke {
        /// The key's id, its prefix (the first 12 characters, e.g. ick_1a2b3c4d), or the key.
        key: String,
    },
}

/// Who an admin command acts as in the audit trail: `cli:<unix user>`.
pub fn cli_actor() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_default();
    if user.trim().is_empty() {
        "cli:unknown".to_owned()
    } else {
        format!("cli:{}", user.trim())
    }
}

/// `ironclad requeue`
#[derive(Debug, Args)]
pub struct RequeueArgs {
    /// Requeue DEAD outbox rows, dead-lettered jobs and DEAD webhook deliveries (of enabled
    /// endpoints).
    #[arg(long)]
    pub dead: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn migrate(c: &Connections) -> anyhow::Result<ExitCode> {
    let store = connect_store(c).await?;
    store.migrate().await.context("applying migrations")?;
    println!("migrations applied");
    Ok(ExitCode::SUCCESS)
}

pub async fn tenant(c: &Connections, cmd: TenantCommand) -> anyhow::Result<ExitCode> {
    let store = connect_store(c).await?;
    match cmd {
        TenantCommand::Create { name } => {
            if let Some(id) = store.tenant_by_name(&name).await? {
                println!("tenant {name} already exists ({id})");
                return Ok(ExitCode::SUCCESS);
            }
            let id = store.create_tenant(&name).await?;
            println!("tenant {name} created ({id})");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn apikey(c: &Connections, cmd: ApiKeyCommand) -> anyhow::Result<ExitCode> {
    let store = connect_store(c).await?;
    match cmd {
        ApiKeyCommand::Create {
            tenant,
            role,
            label,
        } => {
            let role: Role = role
                .parse()
                .map_err(|e| anyhow::anyhow!("{e} (use operator, reviewer or admin)"))?;
            let tenant_id = store.tenant_by_name(&tenant).await?.with_context(|| {
                format!(
                    "no tenant named {tenant:?}; create it with `ironclad tenant create {tenant}`"
                )
            })?;
            let label = label.map(|l| l.trim().to_owned()).filter(|l| !l.is_empty());
            if label.as_ref().is_some_and(|l| l.chars().count() > 200) {
                anyhow::bail!("--label must be at most 200 characters");
            }
            let key = store
                .create_labelled_api_key(tenant_id, role, label.as_deref(), &cli_actor())
                .await?;
            eprintln!(
                "API key {} created for tenant {tenant} with role {role}; it is shown only now:",
                key.id
            );
            println!("{}", key.raw);
        }
        ApiKeyCommand::Revoke { key } => match store.revoke_api_key(&key, &cli_actor()).await? {
            Revocation::Revoked(k) => println!(
                "API key {} ({}…, role {}, tenant {}) revoked; API processes refuse it within 1 s",
                k.id, k.prefix, k.role, k.tenant_id
            ),
            Revocation::AlreadyRevoked(k) => println!(
                "API key {} ({}…) was already revoked{}; nothing changed",
                k.id,
                k.prefix,
                k.revoked_at
                    .map(|at| format!(" at {}", at.to_rfc3339()))
                    .unwrap_or_default()
            ),
            // The argument may be a whole key: it is not echoed.
            Revocation::NotFound => anyhow::bail!("no API key has that id, prefix or value"),
            Revocation::Ambiguous(ids) => anyhow::bail!(
                "{} keys share that prefix; revoke one by id: {}",
                ids.len(),
                ids.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn requeue(c: &Connections, args: RequeueArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.dead, "say what to requeue: `ironclad requeue --dead`");
    let store = connect_store(c).await?;
    let outbox = store.outbox_requeue_dead().await?;
    let jobs = store.requeue_dead_lettered_jobs("operator:cli").await?;
    let deliveries = store.webhook_requeue_all_dead(&cli_actor()).await?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "outbox_rows": outbox, "jobs": jobs, "webhook_deliveries": deliveries })
        );
    } else {
        println!(
            "requeued {outbox} dead outbox row(s), {jobs} dead-lettered job(s) and {deliveries} dead webhook delivery(ies)"
        );
    }
    Ok(ExitCode::SUCCESS)
}
