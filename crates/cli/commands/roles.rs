//! The long-running roles, alone or all in one process.

use super::{connect_store, redact};
use crate::config::{Connections, RoleSettings};
use anyhow::Context;
use ironclad_api::client_address::parse_trusted_proxies;
use ironclad_api::{ApiConfig, AppState, DeskConfig, IntakeLimits, RateLimit};
use ironclad_core::faults::Faults;
use ironclad_documents::compiler::ReadingCompiler;
use ironclad_documents::registry::{no_arguments, ProcessorRegistry};
use ironclad_documents::workflows::CompiledWorkflow;
use ironclad_queue::{Queue, StreamConfig};
use ironclad_runtime::templates::TemplateCatalog;
use ironclad_runtime::workflows::WorkflowCatalog;
use ironclad_runtime::{AuditSealer, Deliverer, Dispatcher, Reconciler, Worker};
use ironclad_store::users::SessionPolicy;
use ironclad_store::Store;
use metrics_exporter_prometheus::Matcher;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Which roles this process runs.
#[derive(Debug, Clone, Copy)]
pub struct Roles {
    api: bool,
    dispatcher: bool,
    worker: bool,
    reconciler: bool,
    migrate: bool,
}

impl Roles {
    pub fn all() -> Self {
        Self {
            api: true,
            dispatcher: true,
            worker: true,
            reconciler: true,
            migrate: true,
        }
    }
    pub fn only_api() -> Self {
        Self {
            api: true,
            dispatcher: false,
            worker: false,
            reconciler: false,
            migrate: false,
        }
    }
    pub fn only_dispatcher() -> Self {
        Self {
            api: false,
            dispatcher: true,
            worker: false,
            reconciler: false,
            migrate: false,
        }
    }
    pub fn only_worker() -> Self {
        Self {
            api: false,
            dispatcher: false,
            worker: true,
            reconciler: false,
            migrate: false,
        }
    }
    pub fn only_reconciler() -> Self {
        Self {
            api: false,
            dispatcher: false,
            worker: false,
            reconciler: true,
            migrate: false,
        }
    }
}

/// Services may still be starting (a fresh machine, a restart): wait a while, then give up
/// with the reason rather than crash-looping.
const STARTUP_PATIENCE: Duration = Duration::from_secs(30);

async fn with_patience<T, E: std::fmt::Display, F, Fut>(
    what: &str,
    mut attempt: F,
) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let start = Instant::now();
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(err) if start.elapsed() < STARTUP_PATIENCE => {
                tracing::warn!(error = %err, "{what} not reachable yet; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(err) => anyhow::bail!("{what} not reachable after {STARTUP_PATIENCE:?}: {err}"),
        }
    }
}

pub(crate) fn stream_config(c: &Connections, s: &RoleSettings) -> StreamConfig {
    let base = match &c.stream_prefix {
        Some(p) => StreamConfig::with_prefix(p),
        None => StreamConfig::default(),
    };
    StreamConfig {
        max_len: s.stream_maxlen,
        read_count: s.worker_concurrency,
        claim_idle: s.claim_idle,
        max_deliveries: s.max_deliveries,
        ..base
    }
}

pub async fn run(c: &Connections, s: &RoleSettings, roles: Roles) -> anyhow::Result<ExitCode> {
    let runtime_config = s.runtime()?;
    let webhook_config = s.webhooks()?;
    let faults = armed_faults()?;
    // Buckets turn the duration metrics into Prometheus histograms (summaries cannot be
    // aggregated across processes).
    let buckets = [
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
    ];
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &buckets)
        .context("configuring metric buckets")?
        .install_recorder()
        .context("installing the metrics recorder")?;

    let store: Store = with_patience("PostgreSQL", || connect_store(c)).await?;
    if roles.migrate {
        store.migrate().await.context("applying migrations")?;
    }
    let streams = stream_config(c, s);
    let queue = with_patience(&format!("Redis at {}", redact(&c.redis_url)), || {
        Queue::connect(&c.redis_url, streams.clone())
    })
    .await?;
    let blobs = s.blobs.open()?;

    let shutdown = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();

    // The workflow of cases that name none, stored (idempotently) so that intake can pin
    // cases to a version before any worker has started.
    let default_workflow = if roles.api || roles.worker {
        Some(load_configured_workflow(&store, s).await?)
    } else {
        None
    };
    let state = AppState {
        store: store.clone(),
        blobs: blobs.clone(),
        queue: Some(queue.clone()),
        config: Arc::new(ApiConfig {
            limits: IntakeLimits {
                max_file_bytes: s.max_file_bytes,
                max_files: s.max_files,
                max_total_pages: s.max_pages,
            },
            max_attempts: s.max_attempts,
            max_concurrent_intakes: s.max_concurrent_intakes,
            intake_slots_per_tenant: s.intake_slots_per_tenant,
            intake_min_bytes_per_sec: s.intake_min_bytes_per_sec,
            intake_rate_grace: s.intake_rate_grace,
            trusted_proxies: parse_trusted_proxies(&s.trusted_proxies)
                .context("IRONCLAD_TRUSTED_PROXIES")?,
            password_hashes_at_once: s.password_hashes_at_once,
            password_hash_queue: s.password_hash_queue,
            inspect_timeout: s.inspect_timeout,
            key_rate_limit: RateLimit::new(s.key_rate_limit, s.key_rate_burst),
            address_rate_limit: RateLimit::new(s.address_rate_limit, s.address_rate_burst),
            metrics_token: s.metrics_token.clone().filter(|t| !t.is_empty()),
            metrics_on_api_listener: s.metrics_listen.is_none(),
            default_workflow,
            webhook_allow_private: s.webhook_allow_private,
            webhook_max_endpoints: s.webhook_max_endpoints,
            review_claim: s.review_claim,
            desk: DeskConfig {
                sessions: SessionPolicy {
                    idle: s.session_idle,
                    lifetime: s.session_lifetime,
                },
                secure_cookies: s.secure_cookies,
                login_attempts_per_minute: s.login_attempts_per_minute,
                ..DeskConfig::default()
            },
            ..ApiConfig::default()
        }),
        metrics: Some(metrics.clone()),
        faults: faults.clone(),
        compiler: reading_compiler(),
        previews: Arc::new(ironclad_reading::OcrPreviews),
        // A box a reviewer draws is read in the languages the workers read pages in.
        regions: Arc::new(ironclad_reading::OcrRegions::new(
            ironclad_ocr::ReadOptions {
                languages: s.ocr_languages.clone(),
                ..ironclad_ocr::ReadOptions::default()
            },
        )),
    };
    if let Some(address) = &s.metrics_listen {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("binding the metrics listener {address}"))?;
        tracing::info!(listen = %address, "metrics listening");
        let (state, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move {
            let stopped = async move { stop.cancelled().await };
            if let Err(err) = ironclad_api::serve_metrics(listener, state, stopped).await {
                tracing::error!(error = %err, "metrics server stopped");
            }
        });
    }
    if roles.api {
        let listener = tokio::net::TcpListener::bind(&s.listen)
            .await
            .with_context(|| format!("binding {}", s.listen))?;
        tracing::info!(listen = %s.listen, "HTTP API listening");
        if s.metrics_listen.is_none() && s.metrics_token.is_none() && !is_loopback(&s.listen) {
            tracing::warn!(listen = %s.listen, "/metrics is open to anyone who can reach this address; set IRONCLAD_METRICS_TOKEN or IRONCLAD_METRICS_LISTEN");
        }
        let (state, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move {
            if let Err(err) =
                ironclad_api::serve(listener, state, async move { stop.cancelled().await }).await
            {
                tracing::error!(error = %err, "HTTP server stopped");
            }
        });
    }
    if roles.dispatcher {
        let d = Dispatcher::new(
            store.clone(),
            queue.clone(),
            runtime_config.clone(),
            faults.clone(),
        );
        tasks.spawn(d.run(shutdown.clone()));
        // Webhooks are an outbox too: the dispatcher role delivers them.
        let deliverer = Deliverer::new(store.clone(), webhook_config)
            .context("starting the webhook deliverer")?;
        tasks.spawn(deliverer.run(shutdown.clone()));
    }
    // Audit events arrive unsealed (no writer waits on a chain head); every role seals them, so
    // sealing goes on while any process runs (sealers skip the chains another one holds).
    let sealer = AuditSealer::new(store.clone(), s.audit_seal_every);
    tasks.spawn(sealer.run(shutdown.clone()));
    if roles.worker {
        let (processor, catalog) = build_processor(&store, s).await?;
        let mut w = Worker::new(
            store.clone(),
            queue.clone(),
            blobs.clone(),
            processor,
            runtime_config.clone(),
            faults.clone(),
        );
        if let Some(catalog) = catalog {
            // Cases read under a workflow also get the newest invoice2data template set
            // loaded with `ironclad templates load` (the built-in reader applies it).
            w = w
                .with_workflows(catalog)
                .with_templates(Arc::new(TemplateCatalog::new(
                    store.clone(),
                    reading_compiler(),
                )));
        }
        let w = Arc::new(w);
        tasks.spawn(w.run(shutdown.clone()));
    }
    if roles.reconciler {
        let r = Reconciler::new(
            store.clone(),
            queue.clone(),
            blobs.clone(),
            runtime_config.clone(),
            faults.clone(),
        );
        tasks.spawn(r.run(shutdown.clone()));
    }
    tracing::info!(?roles, consumer = %queue.config().consumer, "ironclad started");

    wait_for_signal().await;
    tracing::info!("shutting down: no new work is taken; in-flight jobs get the grace period");
    shutdown.cancel();
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(
        runtime_config.shutdown_grace + Duration::from_secs(5),
        drain,
    )
    .await
    .is_err()
    {
        tracing::warn!(
            "roles did not stop in time; exiting anyway (leases expire and work is rescued)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What this binary hands each processor factory: its settings and, for a processor that
/// applies workflows, the stored workflows.
struct ProcessorContext<'a> {
    settings: &'a RoleSettings,
    workflows: Option<ironclad_reading::WorkflowSet>,
}

impl ProcessorContext<'_> {
    fn workflows(&self) -> Result<ironclad_reading::WorkflowSet, String> {
        self.workflows
            .clone()
            .ok_or_else(|| "the stored workflows were not loaded".to_owned())
    }

    /// Tesseract's options and the page cache: by default beside the blob store, so a
    /// reprocess or a duplicate upload is never OCRed twice.
    fn reading(
        &self,
    ) -> Result<
        (
            ironclad_ocr::ReadOptions,
            Option<Arc<dyn ironclad_ocr::PageCache>>,
        ),
        String,
    > {
        let s = self.settings;
        let cache_dir = s
            .page_cache_dir
            .clone()
            .unwrap_or_else(|| s.blobs.blob_dir.with_file_name("page-cache"));
        let cache = ironclad_ocr::DirPageCache::new(&cache_dir)
            .map_err(|e| format!("opening page cache {}: {e}", cache_dir.display()))?;
        let options = ironclad_ocr::ReadOptions {
            languages: s.ocr_languages.clone(),
            text_height_px: ironclad_ocr::text_height_setting(s.ocr_text_height),
            second_look: s.second_look,
            ..ironclad_ocr::ReadOptions::default()
        };
        Ok((options, Some(Arc::new(cache))))
    }
}

/// Every document processor this binary can run, by name: this crate's dependencies each
/// provide one, and `--processor` chooses.
fn processor_registry<'a>() -> ProcessorRegistry<ProcessorContext<'a>> {
    let mut registry = ProcessorRegistry::with_builtins();
    registry.register(
        "reading",
        "text layer or Tesseract, then the case's workflow and template set (default)",
        true,
        |args, cx: &ProcessorContext<'_>| {
            no_arguments(args)?;
            let (options, cache) = cx.reading()?;
            let readers = ironclad_reading::ReaderPool::new(options, cache);
            Ok(Arc::new(ironclad_reading::ReadingProcessor::new(
                readers,
                cx.workflows()?,
            )))
        },
    );
    registry.register(
        "openai",
        "fields from an OpenAI-compatible model, verified against the page text",
        true,
        |args, cx: &ProcessorContext<'_>| {
            no_arguments(args)?;
            let s = cx.settings;
            let url = s
                .provider_url
                .clone()
                .ok_or("IRONCLAD_PROVIDER_URL is required with IRONCLAD_PROCESSOR=openai")?;
            let model = s
                .provider_model
                .clone()
                .ok_or("IRONCLAD_PROVIDER_MODEL is required with IRONCLAD_PROCESSOR=openai")?;
            let mut config = ironclad_provider::ProviderConfig::new(url, model);
            config.api_key = s.provider_key.clone().filter(|k| !k.is_empty());
            config.timeout = s.provider_timeout;
            let (options, cache) = cx.reading()?;
            let readers = ironclad_reading::ReaderPool::new(options, cache);
            let provider = ironclad_provider::OpenAiProvider::new(config, readers, cx.workflows()?)
                .map_err(|e| e.to_string())?;
            Ok(Arc::new(provider))
        },
    );
    registry
}

/// The document processor named by `--processor` (see [`processor_registry`]) and, for the
/// processors that apply workflows, the catalog that pins each case to one workflow version.
async fn build_processor(
    store: &Store,
    s: &RoleSettings,
) -> anyhow::Result<(
    Arc<dyn ironclad_documents::processor::DocumentProcessor>,
    Option<Arc<WorkflowCatalog>>,
)> {
    let registry = processor_registry();
    let (registration, _) = registry.lookup(&s.processor)?;
    if !registration.uses_workflows {
        let cx = ProcessorContext {
            settings: s,
            workflows: None,
        };
        return Ok((registry.build(&s.processor, &cx)?, None));
    }
    let compiler = reading_compiler();
    let (yaml, workflow) = configured_workflow(compiler.as_ref(), s)?;
    let name = workflow.name().to_owned();
    let (version, _) = store
        .load_workflow(&name, &yaml)
        .await
        .context("storing the workflow")?;
    tracing::info!(workflow = %name, version = version.version, "workflow loaded");
    // Every workflow loaded so far (its newest version) can be asked for by a case; one loaded
    // later is picked up when the worker restarts.
    let mut set = ironclad_reading::WorkflowSet {
        default: Some(name.clone()),
        ..Default::default()
    };
    for stored in store
        .latest_workflows()
        .await
        .context("reading stored workflows")?
    {
        match compiler.compile_workflow(&stored.source_yaml) {
            Ok(w) => {
                set.by_name.insert(
                    stored.name.clone(),
                    ironclad_reading::LoadedWorkflow {
                        id: stored.id,
                        workflow: Arc::new(w),
                    },
                );
            }
            Err(err) => {
                tracing::warn!(workflow = %stored.name, error = %err, "stored workflow no longer parses; skipped")
            }
        }
    }
    // An explicitly configured file wins; the built-in one yields to a newer loaded version.
    if s.workflow.is_some() || !set.by_name.contains_key(&name) {
        set.by_name.insert(
            name,
            ironclad_reading::LoadedWorkflow {
                id: version.id,
                workflow: Arc::new(workflow),
            },
        );
    }
    let catalog = Arc::new(WorkflowCatalog::new(
        store.clone(),
        compiler,
        set.default.clone(),
        set.by_name.values().cloned(),
    ));
    let cx = ProcessorContext {
        settings: s,
        workflows: Some(set),
    };
    Ok((registry.build(&s.processor, &cx)?, Some(catalog)))
}

/// How this binary compiles workflow files and template sets: with `ironclad-extract`, whose
/// compiled forms both of its workflow processors (`reading`, `openai`) read.
fn reading_compiler() -> Arc<dyn ReadingCompiler> {
    Arc::new(ironclad_reading::ExtractCompiler)
}

/// The workflow file this process is configured with (`IRONCLAD_WORKFLOW`, else the built-in
/// trade workflow), compiled.
fn configured_workflow(
    compiler: &dyn ReadingCompiler,
    s: &RoleSettings,
) -> anyhow::Result<(String, CompiledWorkflow)> {
    let yaml = match &s.workflow {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading workflow {}", path.display()))?,
        None => super::documents::DEFAULT_WORKFLOW_YAML.to_owned(),
    };
    let workflow = compiler
        .compile_workflow(&yaml)
        .map_err(|e| anyhow::anyhow!("invalid workflow: {e}"))?;
    Ok((yaml, workflow))
}

/// Stores the configured workflow (a new version only if its text changed) and returns its
/// name.
async fn load_configured_workflow(store: &Store, s: &RoleSettings) -> anyhow::Result<String> {
    let (yaml, workflow) = configured_workflow(reading_compiler().as_ref(), s)?;
    let name = workflow.name().to_owned();
    store
        .load_workflow(&name, &yaml)
        .await
        .context("storing the workflow")?;
    Ok(name)
}

/// Whether a listen address is a loopback one (`127.0.0.1:8080`, `[::1]:8080`, `localhost:…`).
fn is_loopback(listen: &str) -> bool {
    match listen.parse::<std::net::SocketAddr>() {
        Ok(addr) => addr.ip().is_loopback(),
        Err(_) => listen.starts_with("localhost:"),
    }
}

/// Fault points armed by `IRONCLAD_FAULTS` (`point=abort|error|sleep:5s[*count]`, comma
/// separated) or the older `IRONCLAD_CRASH_AT` (point names, each an abort). Test builds only:
/// a release binary refuses to start with either set rather than silently ignore it.
fn armed_faults() -> anyhow::Result<Faults> {
    let spec = [
        std::env::var("IRONCLAD_FAULTS").unwrap_or_default(),
        std::env::var("IRONCLAD_CRASH_AT").unwrap_or_default(),
    ]
    .join(",");
    let faults = Faults::from_spec(&spec).context("IRONCLAD_FAULTS / IRONCLAD_CRASH_AT")?;
    if !faults.is_empty() {
        tracing::warn!(spec = %spec.trim_matches(','), "fault points armed (testing only)");
    }
    Ok(faults)
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
