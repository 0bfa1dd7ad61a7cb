//! `ironclad-bench desk`: how fast the operator's desk answers, on a case of 20 pages and 200
//! facts with a decision, served by the real router on loopback with a signed-in session.
//!
//! - The case page (`GET /cases/{id}`, HTML with every rule result, fact and evidence box)
//!   against the same case as JSON (`GET /v1/cases/{id}`, the same reads without rendering)
//!   in the same run. Target: ≤ 300 ms.
//! - A page image's first view (rendered from the stored PDF, nothing cached) against the raw
//!   `pdftoppm` CLI rendering the same page at the same resolution. Target: ≤ 1 s.
//! - A page image seen again (from the server's cache). Target: ≤ 50 ms.
//! - A correction's round trip on a text-PDF case read by the built-in reader (the BLOCKED
//!   dossier of `tests/fixtures/decisions/blocked-container`): the desk's correction form
//!   saved, the case decided again, and the case page showing the new decision — as a
//!   reviewer sees it, from the click on *Save* to the page. Target: ≤ 2 s.
//!
//! Times are measured by the client on loopback, so they include HTTP and are an upper bound
//! of server time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ironclad_core::parse::ParserKind;
use ironclad_core::role::Role;
use ironclad_core::{CaseId, Envelope, JobId, JobKind};
use ironclad_store::decisions::{RulesApplied, RulesSource};
use ironclad_store::jobs::{ClaimOutcome, ClaimedJob};
use ironclad_store::results::{FactRow, SegmentRow, SourceResults};
use ironclad_store::users::SessionPolicy;
use ironclad_store::Store;
use serde_json::{json, Value};
use uuid::Uuid;

const TRADE: &str = include_str!("../../workflows/trade.yaml");
/// Pages (one-page files) and facts per page of the benchmark's case.
const PAGES: usize = 20;
const FACTS_PER_PAGE: usize = 10;
/// The targets of issue 10, in milliseconds.
const CASE_PAGE_TARGET_MS: f64 = 300.0;
const FIRST_IMAGE_TARGET_MS: f64 = 1000.0;
const CACHED_IMAGE_TARGET_MS: f64 = 50.0;
/// Issue 25's target for a correction's round trip, in milliseconds.
const CORRECTION_TARGET_MS: f64 = 2000.0;
/// The text-PDF dossier a correction is timed on.
const DOSSIER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/decisions/blocked-container"
);

/// Arguments of `ironclad-bench desk`.
#[derive(Debug, Clone, clap::Args)]
pub struct DeskArgs {
    /// A small run (CI): fewer repetitions.
    #[arg(long)]
    pub smoke: bool,
}

async fn claim(store: &Store, case: CaseId, id: Uuid, kind: JobKind) -> anyhow::Result<ClaimedJob> {
    match store
        .claim_job(
            &Envelope::new(JobId(id), case, kind, 1),
            "bench",
            Duration::from_secs(600),
        )
        .await?
    {
        ClaimOutcome::Claimed(c) => Ok(c),
        ClaimOutcome::Refused(r) => anyhow::bail!("claim refused: {r:?}"),
    }
}

/// One page's reading: a segment of the page's document type with `FACTS_PER_PAGE` facts,
/// each with its own box.
fn page_results(
    doc_type: &str,
    fields: &BTreeMap<String, ParserKind>,
    page: usize,
) -> SourceResults {
    let facts = (0..FACTS_PER_PAGE)
        .map(|i| {
            let field = fields
                .keys()
                .nth(i % fields.len().max(1))
                .cloned()
                .unwrap_or_else(|| format!("field_{i}"));
            let y = 0.1 + 0.08 * i as f64;
            FactRow {
                field: if i < fields.len() {
                    field
                } else {
                    format!("{field}_{i}")
                },
                value: Some(json!({"kind": "text", "value": format!("VALUE-{page}-{i}")})),
                raw_text: Some(format!("VALUE-{page}-{i}")),
                page: Some(0),
                bbox: Some(json!({"x0": 0.2, "y0": y, "x1": 0.6, "y1": y + 0.03})),
                confidence: Some(0.9),
                conflict: false,
                missing: false,
                candidates: json!([]),
            }
        })
        .collect();
    SourceResults {
        pages: Vec::new(),
        segments: vec![SegmentRow {
            ordinal: 0,
            doc_type: Some(doc_type.to_owned()),
            confidence: 0.9,
            first_page: 0,
            last_page: 0,
            reason: None,
            facts,
        }],
        workflow_id: None,
    }
}

/// Commits the dossier as one case pinned to the trade workflow (version `workflow`), reads
/// every file with the built-in reader as a worker would, and decides it under the
/// workflow's rules.
async fn read_dossier(
    store: &Store,
    blobs: &ironclad_blobs::BlobStore,
    tenant: ironclad_core::TenantId,
    workflow: &ironclad_store::workflows::WorkflowVersion,
) -> anyhow::Result<CaseId> {
    use ironclad_documents::processor::{DocumentProcessor, SourceInput};
    use ironclad_documents::workflows::{LoadedWorkflow, WorkflowSet};
    use ironclad_store::intake::{NewCase, NewSource};
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(DOSSIER)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pdf"))
        .collect();
    files.sort();
    let case = CaseId::new();
    let mut sources = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path)?;
        let mut w = blobs.writer().await?;
        w.write(&bytes).await?;
        let stored = w.finish().await?;
        sources.push(NewSource {
            source_id: ironclad_core::SourceId::new(),
            job_id: JobId::new(),
            filename: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256: stored.sha256,
            media_type: "application/pdf".into(),
            size_bytes: i64::try_from(stored.size)?,
            pages: i32::try_from(
                ironclad_inspect::inspect(&bytes, &Default::default())
                    .map_err(|e| anyhow::anyhow!("{e}"))?
                    .pages,
            )?,
            blob_key: stored.key,
        });
    }
    store
        .commit_intake(&NewCase {
            tenant_id: tenant,
            case_id: case,
            external_reference: Some("blocked-container".into()),
            workflow: Some("trade".into()),
            workflow_id: Some(workflow.id),
            idempotency_key: None,
            fingerprint: case.to_string(),
            sources: sources.clone(),
            max_attempts: 3,
            actor: "bench".into(),
            response: json!({}),
        })
        .await?;
    let loaded = LoadedWorkflow {
        id: workflow.id,
        workflow: Arc::new(ironclad_reading::compiled_workflow(
            ironclad_extract::Workflow::from_yaml(TRADE)?,
        )),
    };
    let processor = ironclad_reading::ReadingProcessor::new(
        ironclad_reading::ReaderPool::new(ironclad_ocr::ReadOptions::default(), None),
        WorkflowSet {
            by_name: [("trade".to_owned(), loaded.clone())].into(),
            default: Some("trade".into()),
        },
    );
    for source in &sources {
        let claimed = claim(store, case, source.job_id.0, JobKind::ProcessSource).await?;
        let processed = processor
            .process(SourceInput {
                source_id: source.source_id,
                case_id: case,
                media_type: "application/pdf".parse()?,
                sha256: source.sha256.clone(),
                pages: u32::try_from(source.pages)?,
                blob_path: blobs.path_of(&source.blob_key)?,
                workflow: Some("trade".into()),
                pinned_workflow: Some(loaded.clone()),
                templates: None,
            })
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let results = ironclad_runtime::results::source_results(&processed);
        store
            .complete_source_job_with(&claimed, &processed.summary, results.as_ref(), 3)
            .await?;
    }
    let finalize: Uuid = sqlx::query_scalar("SELECT id FROM jobs WHERE case_id = $1 AND kind = $2")
        .bind(case.0)
        .bind(JobKind::FinalizeCase.as_str())
        .fetch_one(store.pool())
        .await?;
    let claimed = claim(store, case, finalize, JobKind::FinalizeCase).await?;
    let workflow = loaded.workflow.ruleset().clone();
    store
        .finalize_case(&claimed, &RulesApplied::new(&workflow, None))
        .await?;
    Ok(case)
}

/// Times `rounds` corrections of the case's invoice container number through the desk's form,
/// each followed to the case page showing the decision it made; the times in ms.
async fn correction_round_trips(
    client: &reqwest::Client,
    base: &str,
    case: CaseId,
    segment: Uuid,
    cookie: &str,
    csrf: &str,
    rounds: usize,
) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        // Alternate the two container numbers, so every round changes the value.
        let value = if round % 2 == 0 {
            "HLXU8072159"
        } else {
            "HLXU8072164"
        };
        let version = (round + 1).to_string();
        let key = Uuid::new_v4().to_string();
        let form = [
            ("csrf", csrf),
            ("segment", &segment.to_string()),
            ("field", "container_number"),
            ("value", value),
            ("reason", "bench: the B/L is right"),
            ("expected_decision_version", &version),
            ("idempotency_key", &key),
        ];
        let t = Instant::now();
        let saved = client
            .post(format!("{base}/cases/{case}/corrections"))
            .header("cookie", cookie)
            .header("origin", base)
            .form(&form)
            .send()
            .await?;
        anyhow::ensure!(saved.status() == 303, "correction: {}", saved.status());
        let location = saved
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let page = client
            .get(format!("{base}{location}"))
            .header("cookie", cookie)
            .send()
            .await?
            .text()
            .await?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        let shown = format!("Decision <span class=\"muted\">v{}</span>", round + 2);
        anyhow::ensure!(
            page.contains(&shown),
            "the page does not show decision v{}",
            round + 2
        );
    }
    Ok(times)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn p95(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 * 0.95).ceil() as usize).saturating_sub(1);
    v.get(i).copied().unwrap_or(f64::NAN)
}

async fn timed_get(
    client: &reqwest::Client,
    url: &str,
    header: (&str, &str),
) -> anyhow::Result<(f64, usize)> {
    let t = Instant::now();
    let response = client.get(url).header(header.0, header.1).send().await?;
    anyhow::ensure!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    let bytes = response.bytes().await?;
    Ok((t.elapsed().as_secs_f64() * 1000.0, bytes.len()))
}

/// Runs the benchmark; the JSON result.
pub async fn run(args: &DeskArgs) -> anyhow::Result<Value> {
    let rounds = if args.smoke { 5 } else { 40 };
    let db = ironclad_testkit::TestDb::new().await?;
    let blob_dir = tempfile::tempdir()?;
    let blobs = ironclad_blobs::BlobStore::open(blob_dir.path())?;
    let result = async {
        let store = db.store.clone();
        let tenant = store.create_tenant("desk-bench").await?;
        let workflow = ironclad_extract::Workflow::from_yaml(TRADE)?;
        let ruleset = workflow.ruleset().clone();
        let schema = workflow.schema().document_types;
        let doc_types: Vec<(&String, &BTreeMap<String, ParserKind>)> = schema.iter().collect();

        // The case: 20 one-page PDFs, each read as one document with 10 facts, then decided.
        let case = ironclad_testkit::harness::commit_fixture_case(
            &store, &blobs, tenant, PAGES, 3, "desk-bench",
        )
        .await?;
        let sources: Vec<Uuid> = sqlx::query_scalar(
            "SELECT id FROM jobs WHERE case_id = $1 AND kind = $2 ORDER BY created_at, id",
        )
        .bind(case.0)
        .bind(JobKind::ProcessSource.as_str())
        .fetch_all(store.pool())
        .await?;
        for (i, job) in sources.iter().enumerate() {
            let claimed = claim(&store, case, *job, JobKind::ProcessSource).await?;
            let (doc, fields) = doc_types[i % doc_types.len()];
            store
                .complete_source_job_with(&claimed, &json!({}), Some(&page_results(doc, fields, i)), 3)
                .await?;
        }
        let finalize: Uuid =
            sqlx::query_scalar("SELECT id FROM jobs WHERE case_id = $1 AND kind = $2")
                .bind(case.0)
                .bind(JobKind::FinalizeCase.as_str())
                .fetch_one(store.pool())
                .await?;
        let claimed = claim(&store, case, finalize, JobKind::FinalizeCase).await?;
        let rules = RulesApplied {
            ruleset: &ruleset,
            source: RulesSource::Workflow,
            ruleset_id: None,
            ruleset_version: None,
        };
        store.finalize_case(&claimed, &rules).await?;
        let facts: i64 = sqlx::query_scalar("SELECT count(*) FROM facts WHERE case_id = $1")
            .bind(case.0)
            .fetch_one(store.pool())
            .await?;

        // The real router with a signed-in reviewer and an API key.
        let state = ironclad_api::AppState {
            store: store.clone(),
            blobs: blobs.clone(),
            queue: None,
            config: Arc::new(ironclad_api::ApiConfig::default()),
            metrics: None,
            faults: ironclad_core::faults::Faults::none(),
            compiler: Arc::new(ironclad_reading::ExtractCompiler),
            previews: Arc::new(ironclad_reading::OcrPreviews),
            regions: Arc::new(ironclad_reading::OcrRegions::new(ironclad_ocr::ReadOptions::default())),
        };
        let user = store
            .create_user(tenant, "bench@example.com", Role::Reviewer, "$argon2id$unused", "bench")
            .await?;
        let session = store
            .start_session(
                user.id,
                SessionPolicy {
                    idle: Duration::from_secs(3600),
                    lifetime: Duration::from_secs(3600),
                },
            )
            .await?;
        let cookie = format!(
            "{}={}",
            ironclad_api::ui::session::SESSION_COOKIE,
            session.token
        );
        let key = store.create_api_key(tenant, Role::Reviewer).await?.raw;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(ironclad_api::serve(listener, state, async {
            let _ = stopped.await;
        }));
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;

        // Case page against the same case as JSON (one warm-up each).
        let page_url = format!("{base}/cases/{case}");
        let json_url = format!("{base}/v1/cases/{case}");
        let bearer = format!("Bearer {key}");
        let (_, html_bytes) = timed_get(&client, &page_url, ("cookie", &cookie)).await?;
        timed_get(&client, &json_url, ("authorization", &bearer)).await?;
        let (mut page_ms, mut json_ms) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            page_ms.push(timed_get(&client, &page_url, ("cookie", &cookie)).await?.0);
            json_ms.push(timed_get(&client, &json_url, ("authorization", &bearer)).await?.0);
        }

        // Page images: first views (each page rendered once), then views from the cache,
        // against pdftoppm rendering the same pages by itself.
        let image_sources: Vec<(Uuid, String)> = sqlx::query_as(
            "SELECT id, blob_key FROM sources WHERE case_id = $1 ORDER BY created_at, id",
        )
        .bind(case.0)
        .fetch_all(store.pool())
        .await?;
        let sample = image_sources.len().min(if args.smoke { 3 } else { 10 });
        let (mut first_ms, mut cached_ms, mut cli_ms) = (Vec::new(), Vec::new(), Vec::new());
        for (source, blob_key) in image_sources.iter().take(sample) {
            let url = format!("{base}/cases/{case}/sources/{source}/pages/1");
            first_ms.push(timed_get(&client, &url, ("cookie", &cookie)).await?.0);
            for _ in 0..rounds.min(10) {
                cached_ms.push(timed_get(&client, &url, ("cookie", &cookie)).await?.0);
            }
            let path = blobs.path_of(blob_key)?;
            let t = Instant::now();
            let out = tokio::process::Command::new("pdftoppm")
                .args(["-r", "120", "-gray", "-cropbox", "-f", "1", "-l", "1"])
                .arg(&path)
                .output()
                .await?;
            anyhow::ensure!(out.status.success(), "pdftoppm failed");
            cli_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        // A correction's round trip on a text-PDF case read for real.
        let (trade, _) = store.load_workflow("trade", TRADE).await?;
        let real = read_dossier(&store, &blobs, tenant, &trade).await?;
        let segment: Uuid = sqlx::query_scalar(
            "SELECT id FROM segments WHERE case_id = $1 AND doc_type = 'commercial_invoice'",
        )
        .bind(real.0)
        .fetch_one(store.pool())
        .await?;
        let correction_ms = correction_round_trips(
            &client,
            &base,
            real,
            segment,
            &cookie,
            &session.csrf_token,
            if args.smoke { 3 } else { 20 },
        )
        .await?;
        let _ = stop.send(());
        let _ = server.await;

        let (page_med, json_med) = (median(page_ms.clone()), median(json_ms.clone()));
        let (first_med, cached_med, cli_med) =
            (median(first_ms.clone()), median(cached_ms.clone()), median(cli_ms));
        let verdict = page_med <= CASE_PAGE_TARGET_MS
            && p95(first_ms.clone()) <= FIRST_IMAGE_TARGET_MS
            && p95(cached_ms.clone()) <= CACHED_IMAGE_TARGET_MS
            && p95(correction_ms.clone()) <= CORRECTION_TARGET_MS;
        Ok::<_, anyhow::Error>(json!({
            "bench": "desk",
            "pages": PAGES,
            "facts": facts,
            "rounds": rounds,
            "case_page_html_bytes": html_bytes,
            "case_page_ms_median": page_med,
            "case_page_ms_p95": p95(page_ms),
            "case_json_ms_median": json_med,
            "case_page_vs_json": page_med / json_med,
            "image_first_ms_median": first_med,
            "image_first_ms_p95": p95(first_ms),
            "image_cached_ms_median": cached_med,
            "image_cached_ms_p95": p95(cached_ms),
            "pdftoppm_cli_ms_median": cli_med,
            "image_first_vs_cli": first_med / cli_med,
            "correction_round_trips": correction_ms.len(),
            "correction_round_trip_ms_median": median(correction_ms.clone()),
            "correction_round_trip_ms_p95": p95(correction_ms),
            "targets": {"case_page_ms": CASE_PAGE_TARGET_MS, "image_first_ms": FIRST_IMAGE_TARGET_MS,
                        "image_cached_ms": CACHED_IMAGE_TARGET_MS,
                        "correction_round_trip_ms": CORRECTION_TARGET_MS},
            "verdict": if verdict { "PASS" } else { "MISS" },
            "machine": crate::sys::machine_info(),
        }))
    }
    .await;
    db.drop_database().await;
    let result = result?;
    let out = std::path::PathBuf::from(if args.smoke {
        "bench/results/desk-smoke.json"
    } else {
        "bench/results/desk.json"
    });
    crate::write_result(&out, &result)?;
    Ok(result)
}
