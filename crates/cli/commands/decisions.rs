//! Decision commands for operators and admins with database access: review, reprocess,
//! reevaluate, and managed rulesets. They run the same store transactions as the API, with
//! the actor `cli:<unix user>` and a fresh idempotency key per invocation (or the one given).

use super::admin::cli_actor;
use super::connect_store;
use crate::config::Connections;
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use ironclad_core::review::ReviewAction;
use ironclad_core::CaseId;
use ironclad_documents::rules as case_rules;
use ironclad_reading::ExtractCompiler;
use ironclad_runtime::case_rules::rules_for_case;
use ironclad_runtime::workflows::WorkflowCatalog;
use ironclad_store::decisions::RulesApplied;
use ironclad_store::replay::{ActionAnswer, ActionError, ActionKey};
use ironclad_store::reprocess::ReprocessRequest;
use ironclad_store::reviews::{ReviewOutcome, ReviewRequest};
use ironclad_store::Store;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use uuid::Uuid;

/// `ironclad review CASE`
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The case id.
    pub case: String,
    /// approve (READY only), override (not READY; needs --comment) or reject.
    #[arg(long)]
    pub action: String,
    /// The decision version you looked at (a newer one makes this fail).
    #[arg(long = "version")]
    pub expected_version: i32,
    /// Why.
    #[arg(long)]
    pub comment: Option<String>,
    /// Make a retried command apply once.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

/// `ironclad reprocess CASE`: read a case again as a new generation. The command line acts
/// with an admin's rights, so it may also reopen a RESOLVED case (which the API and the desk
/// allow only reviewers and admins); the earlier resolution stays in the case's history.
#[derive(Debug, Args)]
pub struct ReprocessArgs {
    /// The case id.
    pub case: String,
    /// Why it is read again.
    #[arg(long)]
    pub reason: String,
    /// Read only these sources again (others are carried over); repeatable.
    #[arg(long = "source")]
    pub sources: Vec<Uuid>,
    /// Make a retried command apply once.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

/// `ironclad reevaluate CASE`
#[derive(Debug, Args)]
pub struct ReevaluateArgs {
    /// The case id.
    pub case: String,
    /// Make a retried command apply once.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

/// `ironclad rulesets …`
#[derive(Debug, Subcommand)]
pub enum RulesetsCommand {
    /// Store a YAML file `{rules: [...], policy: {...}}` as the next DRAFT version.
    Create {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// Workflow name the rules are for.
        #[arg(long)]
        workflow: String,
        /// The rules file.
        file: PathBuf,
    },
    /// List a tenant's rulesets.
    List {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// Only this workflow's.
        #[arg(long)]
        workflow: Option<String>,
    },
    /// Print one ruleset.
    Show {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// Ruleset id.
        id: Uuid,
    },
    /// Check a ruleset against its workflow's latest version (exit 1 if invalid).
    Validate {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// Ruleset id.
        id: Uuid,
    },
    /// Make a DRAFT the ACTIVE ruleset (the previous one is RETIRED).
    Activate {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// Ruleset id.
        id: Uuid,
        /// Why these rules go live (recorded).
        #[arg(long)]
        comment: String,
    },
    /// Differences from another ruleset (default: the workflow's ACTIVE one).
    Diff {
        /// Tenant name.
        #[arg(long)]
        tenant: String,
        /// Ruleset id.
        id: Uuid,
        /// Compare against this ruleset.
        #[arg(long)]
        against: Option<Uuid>,
    },
}

fn case_id(raw: &str) -> anyhow::Result<CaseId> {
    raw.parse()
        .with_context(|| format!("{raw:?} is not a case id"))
}

/// The case's tenant (the CLI acts with database rights, on the tenant that owns the case).
async fn case_tenant(
    store: &Store,
    case: CaseId,
) -> anyhow::Result<ironclad_store::decisions::DecisionContext> {
    store
        .decision_context(case.0, None)
        .await?
        .with_context(|| format!("no case {case}"))
}

/// The command's replay key: the one given, or a fresh one (the command then applies once
/// per invocation), with the fingerprint the API and the desk use.
fn key(
    tenant: Uuid,
    action: &'static str,
    given: Option<String>,
    case: CaseId,
    request: serde_json::Value,
) -> ActionKey {
    let given = given.unwrap_or_else(|| format!("cli-{}", Uuid::now_v7()));
    ActionKey::new(tenant, action, given, case.0, &request)
}

fn print_answer(result: Result<ActionAnswer, ActionError>) -> anyhow::Result<ExitCode> {
    match result {
        Ok(a) => {
            println!("{}", serde_json::to_string_pretty(&a.body)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(ActionError::Store(e)) => Err(e.into()),
        Err(ActionError::Conflict { message, current }) => {
            eprintln!("ironclad: {message}");
            if !current.is_null() {
                eprintln!("current: {current}");
            }
            Ok(ExitCode::FAILURE)
        }
        Err(e) => {
            eprintln!("ironclad: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `ironclad review`.
pub async fn review(c: &Connections, args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let case = case_id(&args.case)?;
    let action: ReviewAction = args.action.to_ascii_uppercase().parse()?;
    let store = connect_store(c).await?;
    let ctx = case_tenant(&store, case).await?;
    let k = key(
        ctx.tenant_id,
        "review",
        args.idempotency_key,
        case,
        json!({"action": action, "expected_decision_version": args.expected_version,
               "comment": args.comment}),
    );
    let req = ReviewRequest {
        case: case.0,
        action,
        expected_decision_version: args.expected_version,
        comment: args.comment,
        actor: cli_actor(),
        actor_role: "admin".into(),
    };
    print_answer(
        store
            .resolve_review(&k, &req, |outcome| match outcome {
                ReviewOutcome::Resolved(r) => json!(r),
                ReviewOutcome::AwaitingSecond(p) => {
                    json!({"status": "AWAITING_SECOND", "proposed": p})
                }
            })
            .await,
    )
}

/// `ironclad reprocess`.
pub async fn reprocess(c: &Connections, args: ReprocessArgs) -> anyhow::Result<ExitCode> {
    let case = case_id(&args.case)?;
    let store = connect_store(c).await?;
    let ctx = case_tenant(&store, case).await?;
    let sources = (!args.sources.is_empty()).then_some(args.sources);
    let before = store
        .case_state(ironclad_core::TenantId(ctx.tenant_id), case.0)
        .await?;
    if before.as_ref().is_some_and(|s| s.status == "RESOLVED") {
        eprintln!(
            "ironclad: case {case} is RESOLVED: on the API and the desk only a reviewer or an \
             admin may read it again; the command line acts as an admin. Its resolution stays \
             in its history."
        );
    }
    let k = key(
        ctx.tenant_id,
        "reprocess",
        args.idempotency_key,
        case,
        json!({"source_ids": sources, "reason": args.reason.trim()}),
    );
    let req = ReprocessRequest {
        case: case.0,
        source_ids: sources,
        reason: args.reason,
        actor: cli_actor(),
        actor_role: ironclad_core::role::Role::Admin,
        max_attempts: ironclad_core::RetryPolicy::default().max_attempts,
    };
    print_answer(store.reprocess_case(&k, &req, |r| json!(r)).await)
}

/// `ironclad reevaluate`.
pub async fn reevaluate(c: &Connections, args: ReevaluateArgs) -> anyhow::Result<ExitCode> {
    let case = case_id(&args.case)?;
    let store = connect_store(c).await?;
    let ctx = case_tenant(&store, case).await?;
    let workflows = WorkflowCatalog::new(store.clone(), Arc::new(ExtractCompiler), None, []);
    let chosen = rules_for_case(&store, Some(&workflows), case, None)
        .await?
        .with_context(|| format!("no case {case}"))?;
    if let Some(problem) = &chosen.problem {
        eprintln!("ironclad: warning: {problem}");
    }
    let applied = RulesApplied::new(&chosen.ruleset, chosen.managed);
    let k = key(
        ctx.tenant_id,
        "reevaluate",
        args.idempotency_key,
        case,
        json!({}),
    );
    print_answer(
        store
            .reevaluate_case(&k, case.0, &applied, &cli_actor(), |d| json!(d))
            .await,
    )
}

/// `ironclad rulesets …`.
pub async fn rulesets(c: &Connections, cmd: RulesetsCommand) -> anyhow::Result<ExitCode> {
    let store = connect_store(c).await?;
    let tenant_of = |name: String| {
        let store = store.clone();
        async move {
            store
                .tenant_by_name(&name)
                .await?
                .map(|t| t.0)
                .with_context(|| format!("no tenant {name:?}"))
        }
    };
    match cmd {
        RulesetsCommand::Create {
            tenant,
            workflow,
            file,
        } => {
            let tenant = tenant_of(tenant).await?;
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let spec: serde_json::Value = serde_yaml::from_str(&text)
                .with_context(|| format!("{} is not YAML", file.display()))?;
            serde_json::from_value::<ironclad_core::rules::RulesetSpec>(spec.clone())
                .with_context(|| format!("{} is not a ruleset", file.display()))?;
            let yaml = latest_yaml(&store, &workflow).await?;
            let row = store
                .create_ruleset(tenant, &workflow, &spec, &cli_actor())
                .await?;
            println!(
                "created ruleset {} ({} version {}, DRAFT)",
                row.id, workflow, row.version
            );
            Ok(report_validation(case_rules::validate_for_yaml(
                &ExtractCompiler,
                &yaml,
                &row.spec,
            )))
        }
        RulesetsCommand::List { tenant, workflow } => {
            let tenant = tenant_of(tenant).await?;
            for r in store.list_rulesets(tenant, workflow.as_deref()).await? {
                println!(
                    "{}  {:<20} v{:<4} {:<8} {} rules  {}",
                    r.id,
                    r.workflow,
                    r.version,
                    r.status,
                    r.spec["rules"].as_array().map(Vec::len).unwrap_or(0),
                    r.activation_comment.unwrap_or_default()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        RulesetsCommand::Show { tenant, id } => {
            let tenant = tenant_of(tenant).await?;
            let row = store
                .get_ruleset(tenant, id)
                .await?
                .context("no such ruleset")?;
            println!("{}", serde_json::to_string_pretty(&row)?);
            Ok(ExitCode::SUCCESS)
        }
        RulesetsCommand::Validate { tenant, id } => {
            let tenant = tenant_of(tenant).await?;
            let row = store
                .get_ruleset(tenant, id)
                .await?
                .context("no such ruleset")?;
            let yaml = latest_yaml(&store, &row.workflow).await?;
            Ok(report_validation(case_rules::validate_for_yaml(
                &ExtractCompiler,
                &yaml,
                &row.spec,
            )))
        }
        RulesetsCommand::Activate {
            tenant,
            id,
            comment,
        } => {
            let tenant = tenant_of(tenant).await?;
            let row = store
                .get_ruleset(tenant, id)
                .await?
                .context("no such ruleset")?;
            let yaml = latest_yaml(&store, &row.workflow).await?;
            if report_validation(case_rules::validate_for_yaml(
                &ExtractCompiler,
                &yaml,
                &row.spec,
            )) != ExitCode::SUCCESS
            {
                bail!("not activated: the ruleset is invalid");
            }
            if comment.trim().is_empty() {
                bail!("--comment must say why these rules go live");
            }
            let r = store
                .activate_ruleset(tenant, id, &cli_actor(), &comment)
                .await?;
            println!(
                "ruleset {} ({} version {}) is ACTIVE",
                r.id, r.workflow, r.version
            );
            Ok(ExitCode::SUCCESS)
        }
        RulesetsCommand::Diff {
            tenant,
            id,
            against,
        } => {
            let tenant = tenant_of(tenant).await?;
            let row = store
                .get_ruleset(tenant, id)
                .await?
                .context("no such ruleset")?;
            let base = match against {
                Some(other) => Some(
                    store
                        .get_ruleset(tenant, other)
                        .await?
                        .context("no such ruleset")?,
                ),
                None => store.default_diff_base(tenant, &row).await?,
            };
            let empty = json!({"rules": []});
            let d = case_rules::diff(base.as_ref().map(|b| &b.spec).unwrap_or(&empty), &row.spec);
            println!("{}", serde_json::to_string_pretty(&d)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn latest_yaml(store: &Store, workflow: &str) -> anyhow::Result<String> {
    Ok(store
        .latest_workflow(workflow)
        .await?
        .with_context(|| {
            format!("no workflow named {workflow:?} is loaded (ironclad workflow load)")
        })?
        .source_yaml)
}

fn report_validation(
    result: Result<ironclad_core::rules::CompiledRuleset, Vec<ironclad_core::rules::RuleIssue>>,
) -> ExitCode {
    match result {
        Ok(r) => {
            println!("valid: {} rules", r.rules.len());
            ExitCode::SUCCESS
        }
        Err(issues) => {
            println!("invalid ({} problem(s)):", issues.len());
            for i in issues {
                println!("  {i}");
            }
            ExitCode::FAILURE
        }
    }
}
