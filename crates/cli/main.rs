//! `ironclad`: every role and operator command of the pipeline in one binary.

mod commands;
mod config;

use clap::{Parser, Subcommand};
use config::{Connections, RoleSettings};

/// Ironclad: document dossiers in, accountable decisions out.
#[derive(Debug, Parser)]
#[command(name = "ironclad", version, about)]
struct Cli {
    #[command(flatten)]
    connections: Connections,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every role in one process (the default for one machine); migrates first.
    All(RoleSettings),
    /// Run the HTTP API.
    Serve(RoleSettings),
    /// Run the outbox dispatcher.
    Dispatcher(RoleSettings),
    /// Run a worker.
    Worker(RoleSettings),
    /// Run the reconciler.
    Reconciler(RoleSettings),
    /// Apply database migrations.
    Migrate,
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(commands::admin::TenantCommand),
    /// Manage API keys.
    #[command(subcommand)]
    Apikey(commands::admin::ApiKeyCommand),
    /// Manage the people who sign in to the operator's desk.
    #[command(subcommand)]
    User(commands::users::UserCommand),
    /// Upload files as a new case through the API.
    Submit(commands::submit::SubmitArgs),
    /// List cases (reads the database).
    Cases(commands::cases::CasesArgs),
    /// Show one case with its jobs, decision and history (reads the database).
    Case(commands::cases::CaseArgs),
    /// Requeue dead work.
    Requeue(commands::admin::RequeueArgs),
    /// Resolve a case's pending review (approve, override or reject).
    Review(commands::decisions::ReviewArgs),
    /// Read a case again as a new generation (old jobs cancelled).
    Reprocess(commands::decisions::ReprocessArgs),
    /// Write a new decision version under the active rules, without re-reading documents.
    Reevaluate(commands::decisions::ReevaluateArgs),
    /// Manage versioned rulesets (create, list, show, validate, activate, diff).
    #[command(subcommand)]
    Rulesets(commands::decisions::RulesetsCommand),
    /// Check every reliability promise against the database and blob store (exit 1 if broken).
    Verify(commands::verify::VerifyArgs),
    /// Check a deployment's configuration and the engines it names, and say what to fix
    /// (exit 1 when a check fails).
    Doctor(commands::doctor::DoctorArgs),
    /// Check the audit trail's hash chain.
    #[command(subcommand)]
    Audit(commands::audit::AuditCommand),
    /// Read files and print pages, segments and fields (no database needed).
    Extract(commands::documents::ExtractArgs),
    /// Validate or load workflow files.
    #[command(subcommand)]
    Workflow(commands::documents::WorkflowCommand),
    /// Read invoice2data templates.
    #[command(subcommand)]
    Templates(commands::documents::TemplatesCommand),
}

/// mimalloc: decisions, JSON bodies and page text allocate many small short-lived values, and
/// glibc malloc was about 30 % of a rule evaluation (`ironclad-bench rules`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // Tesseract is 5-6x slower on 2 cores unless OpenMP is limited before libgomp loads: this
    // re-executes the binary with OMP_THREAD_LIMIT=1 when it is not set, then caps malloc
    // arenas so many reading threads do not multiply the memory kept.
    ironclad_ocr::prepare_process();
    let cli = Cli::parse();
    commands::init_logging(matches!(
        cli.command,
        Command::All(_)
            | Command::Serve(_)
            | Command::Dispatcher(_)
            | Command::Worker(_)
            | Command::Reconciler(_)
    ));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("ironclad: cannot start the async runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let c = cli.connections;
        match cli.command {
            Command::All(s) => commands::roles::run(&c, &s, commands::roles::Roles::all()).await,
            Command::Serve(s) => {
                commands::roles::run(&c, &s, commands::roles::Roles::only_api()).await
            }
            Command::Dispatcher(s) => {
                commands::roles::run(&c, &s, commands::roles::Roles::only_dispatcher()).await
            }
            Command::Worker(s) => {
                commands::roles::run(&c, &s, commands::roles::Roles::only_worker()).await
            }
            Command::Reconciler(s) => {
                commands::roles::run(&c, &s, commands::roles::Roles::only_reconciler()).await
            }
            Command::Migrate => commands::admin::migrate(&c).await,
            Command::Tenant(t) => commands::admin::tenant(&c, t).await,
            Command::Apikey(k) => commands::admin::apikey(&c, k).await,
            Command::User(u) => commands::users::user(&c, u).await,
            Command::Submit(a) => commands::submit::run(a).await,
            Command::Cases(a) => commands::cases::list(&c, a).await,
            Command::Case(a) => commands::cases::show(&c, a).await,
            Command::Requeue(a) => commands::admin::requeue(&c, a).await,
            Command::Review(a) => commands::decisions::review(&c, a).await,
            Command::Reprocess(a) => commands::decisions::reprocess(&c, a).await,
            Command::Reevaluate(a) => commands::decisions::reevaluate(&c, a).await,
            Command::Rulesets(r) => commands::decisions::rulesets(&c, r).await,
            Command::Verify(a) => commands::verify::run(&c, a).await,
            Command::Doctor(a) => commands::doctor::run(&c, a).await,
            Command::Audit(a) => commands::audit::run(&c, a).await,
            Command::Extract(a) => commands::documents::extract(a).await,
            Command::Workflow(w) => commands::documents::workflow(&c, w).await,
            Command::Templates(t) => commands::documents::templates(&c, t).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("ironclad: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
