//! Decisions end to end, through the product path: trade dossiers with known outcomes
//! (`tests/fixtures/decisions/`, written by `scripts/gen-decision-dossiers`) submitted as cases
//! to the real `ironclad all` — HTTP intake, outbox, Redis stream, workers reading the text
//! layer (and decoding images), classification and extraction under `workflows/trade.yaml`,
//! finalize evaluating the workflow's rules — and the decision read back from
//! `GET /v1/cases/{id}`.
//!
//! For every variant its `truth.json` gives the expected decision status and the ids of the
//! rules (and safeguards) whose outcome is FAIL or REVIEW_REQUIRED; for some, the values the
//! failing rule compared, each with the evidence a reviewer checks against the page (source,
//! page, box, text as printed). The processing-failure variant must end FAILED, never BLOCKED,
//! with no decision and its unreadable file's job failed as `document_unreadable`.
//!
//! Needs PostgreSQL and Redis (`DATABASE_URL`, `REDIS_URL`; defaults are the local ones) and
//! poppler (`pdftotext`); the dossiers are text PDFs, so no page is OCRed. One process, seven
//! cases, a few seconds once built:
//!
//! ```text
//! cargo test --test decisions -- --nocapture
//! ```
//!
//! The BLOCKED container variant's decision is also read back as a report, JSON and PDF
//! (`report.rs`).
//!
//! On failure the tail of the server's log is printed, and its directory (log, blobs) and the
//! test database are kept for inspection.
//!
//! The hard dossiers (`tests/fixtures/hard/`: photos, faxes, stamps, monospaced and stacked
//! forms) go through the same rig in `hard.rs`, which prints their outcome table per kind.

mod hard;
mod report;
mod templates;

use anyhow::{bail, ensure, Context, Result};
use ironclad_testkit::child::die_with_parent;
use ironclad_testkit::{wait_for, TestDb};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test, built by Cargo for this test target.
const BIN: &str = env!("CARGO_BIN_EXE_ironclad");
/// The repository root.
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Longest wait for all the cases to settle: they take seconds; this is for a loaded CI host.
const SETTLE: Duration = Duration::from_secs(90);
/// Tenant owning the cases.
const TENANT: &str = "decisions";

/// A turn on the cores for a test whose server OCRs for long. The hard dossiers keep both
/// cores busy for minutes; beside them the templates test's cases (their template set compiled
/// in a debug build) outlast its patience, so the two take turns.
async fn ocr_turn() -> tokio::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::OnceLock<tokio::sync::Mutex<()>> = std::sync::OnceLock::new();
    TURN.get_or_init(|| tokio::sync::Mutex::new(()))
        .lock()
        .await
}

fn fixtures_dir() -> PathBuf {
    Path::new(ROOT).join("tests/fixtures/decisions")
}

fn workflow_path() -> PathBuf {
    Path::new(ROOT).join("workflows/trade.yaml")
}

// ── what each dossier must give ──────────────────────────────────────────────────────────

/// A variant's `truth.json` (the parts the test reads).
#[derive(Debug, Deserialize)]
struct Truth {
    variant: String,
    description: String,
    files: Vec<TruthFile>,
    expected: Expected,
}

#[derive(Debug, Deserialize)]
struct TruthFile {
    file: String,
    /// The document the file holds (text PDFs; absent for the unreadable file).
    document_type: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Expected {
    /// `FAILED` for the processing failure; `null` when the case is decided.
    case_status: Option<String>,
    /// READY / BLOCKED / REVIEW_REQUIRED; `null` when there must be no decision.
    decision: Option<String>,
    /// Every rule or safeguard whose outcome is FAIL or REVIEW_REQUIRED.
    failing_rules: Vec<String>,
    /// Rule id → the values it must show, with their evidence.
    compared: BTreeMap<String, Vec<ExpectedValue>>,
    /// For the processing failure: which file failed, and the job's failure code.
    failure: Option<ExpectedFailure>,
}

#[derive(Debug, Deserialize)]
struct ExpectedValue {
    document_type: String,
    field: String,
    /// Normalized: text, container code, or a decimal number (kg, amount).
    value: String,
    /// As printed on the page.
    raw_text: String,
    /// 0-based page within the document's file.
    page: u64,
}

#[derive(Debug, Deserialize)]
struct ExpectedFailure {
    file: String,
    code: String,
}

fn load_truths() -> Result<Vec<(PathBuf, Truth)>> {
    let dir = fixtures_dir();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| {
        format!(
            "reading {} (run scripts/gen-decision-dossiers)",
            dir.display()
        )
    })? {
        let path = entry?.path();
        let truth = path.join("truth.json");
        if truth.is_file() {
            let text = std::fs::read_to_string(&truth)?;
            let parsed: Truth = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", truth.display()))?;
            out.push((path, parsed));
        }
    }
    out.sort_by(|a, b| a.1.variant.cmp(&b.1.variant));
    ensure!(
        out.len() >= 7,
        "expected the 7 variants of scripts/gen-decision-dossiers in {}, found {}",
        dir.display(),
        out.len()
    );
    Ok(out)
}

/// The rule ids `workflows/trade.yaml` declares.
fn workflow_rule_ids() -> Result<BTreeSet<String>> {
    let text = std::fs::read_to_string(workflow_path())?;
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text)?;
    Ok(yaml
        .get("rules")
        .and_then(|r| r.as_sequence())
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("id").and_then(|i| i.as_str()).map(str::to_owned))
        .collect())
}

// ── the server ───────────────────────────────────────────────────────────────────────────

/// `ironclad all`, kill -9ed and reaped when dropped.
struct Server {
    child: Child,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        let from = all.len().saturating_sub(lines);
        format!(
            "--- last {} line(s) of {} ---\n{}",
            all.len() - from,
            self.log.display(),
            all[from..].join("\n")
        )
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// One test's world: its database, stream prefix, blob directory and log.
struct Rig {
    db: TestDb,
    dir: tempfile::TempDir,
    prefix: String,
    port: u16,
}

impl Rig {
    async fn new() -> Result<Self> {
        let db = TestDb::new()
            .await
            .context("creating the test database (is PostgreSQL up? DATABASE_URL)")?;
        Ok(Self {
            db,
            dir: tempfile::Builder::new()
                .prefix("ironclad-decisions-")
                .tempdir()?,
            prefix: ironclad_testkit::redis_prefix(),
            port: ironclad_testkit::free_port()?,
        })
    }

    /// The `ironclad` command against this rig; inherited `IRONCLAD_*` settings are removed so
    /// a developer's shell cannot change what is tested.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("IRONCLAD_") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("DATABASE_URL", &self.db.url)
            .env("REDIS_URL", ironclad_testkit::redis_url())
            .env("IRONCLAD_STREAM_PREFIX", &self.prefix)
            .env("IRONCLAD_BLOB_DIR", self.dir.path().join("blobs"))
            .env(
                "IRONCLAD_PAGE_CACHE_DIR",
                self.dir.path().join("page-cache"),
            )
            .env("IRONCLAD_LISTEN", format!("127.0.0.1:{}", self.port))
            .env("IRONCLAD_WORKFLOW", workflow_path())
            .env("IRONCLAD_PROCESSOR", "reading")
            // A transient error is retried in seconds, not after the default 30 s.
            .env("IRONCLAD_RETRY_DELAYS", "500ms,1s,2s")
            .env("IRONCLAD_LOG_FORMAT", "text")
            .env("RUST_LOG", "info")
            .env("OMP_THREAD_LIMIT", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs an operator command to completion; its stdout.
    fn cli(&self, args: &[&str]) -> Result<String> {
        let out = self
            .command(args)
            .output()
            .with_context(|| format!("running ironclad {args:?}"))?;
        ensure!(
            out.status.success(),
            "ironclad {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A tenant and an operator key for it, made with the CLI as an admin would.
    fn operator_key(&self) -> Result<String> {
        self.cli(&["tenant", "create", TENANT])?;
        let out = self.cli(&["apikey", "create", "--tenant", TENANT, "--role", "operator"])?;
        let key = out.lines().last().map(str::trim).unwrap_or_default();
        ensure!(!key.is_empty(), "apikey create printed no key");
        Ok(key.to_owned())
    }

    /// Ends a test: a failure panics with the tail of the server's log and keeps the rig's
    /// directory (log, blobs) and database for inspection; success cleans them up.
    async fn finish(self, server: Server, outcome: Result<()>) {
        if let Err(err) = outcome {
            let tail = server.log_tail(60);
            drop(server);
            let kept = self.dir.keep();
            panic!(
                "{err:#}\n{tail}\nkept: {} and database {}",
                kept.display(),
                self.db.name
            );
        }
        drop(server);
        self.db.drop_database().await;
    }

    fn start(&self) -> Result<Server> {
        let log = self.dir.path().join("ironclad-all.log");
        let out = File::create(&log)?;
        let mut cmd = self.command(&["all"]);
        cmd.stdout(out.try_clone()?).stderr(out);
        die_with_parent(&mut cmd);
        let child = cmd.spawn().with_context(|| format!("starting {BIN} all"))?;
        Ok(Server { child, log })
    }
}

// ── the API ──────────────────────────────────────────────────────────────────────────────

struct Api {
    base: String,
    key: String,
    http: reqwest::Client,
}

impl Api {
    /// The rig's API with a new operator key, once it answers `/readyz`.
    async fn ready(rig: &Rig, server: &mut Server) -> Result<Api> {
        let api = Api {
            base: format!("http://127.0.0.1:{}", rig.port),
            key: rig.operator_key()?,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()?,
        };
        api.wait_ready(server).await?;
        Ok(api)
    }

    async fn wait_ready(&self, server: &mut Server) -> Result<()> {
        let deadline = Instant::now() + SETTLE;
        loop {
            ensure!(
                server.running(),
                "ironclad all exited\n{}",
                server.log_tail(40)
            );
            let ready = self
                .http
                .get(format!("{}/readyz", self.base))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return Ok(());
            }
            ensure!(
                Instant::now() < deadline,
                "the API did not answer /readyz within {SETTLE:?}\n{}",
                server.log_tail(40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `POST /v1/cases` with the dossier's files, as `ironclad submit` sends them.
    async fn submit(&self, dir: &Path, truth: &Truth) -> Result<String> {
        let mut form = reqwest::multipart::Form::new()
            .text("workflow", "trade")
            .text("external_reference", truth.variant.clone());
        for f in &truth.files {
            let bytes = std::fs::read(dir.join(&f.file))
                .with_context(|| format!("reading {}/{}", dir.display(), f.file))?;
            form = form.part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name(f.file.clone()),
            );
        }
        let response = self
            .http
            .post(format!("{}/v1/cases", self.base))
            .bearer_auth(&self.key)
            .header("Idempotency-Key", format!("decisions-{}", truth.variant))
            .multipart(form)
            .send()
            .await
            .context("POST /v1/cases")?;
        let status = response.status();
        let body: Value = response.json().await.context("intake answered non-JSON")?;
        ensure!(
            status.as_u16() == 201,
            "[{}] intake answered {status}: {body}",
            truth.variant
        );
        body["case_id"]
            .as_str()
            .map(str::to_owned)
            .context("no case_id in the 201")
    }

    async fn case(&self, id: &str) -> Result<Value> {
        let response = self
            .http
            .get(format!("{}/v1/cases/{id}", self.base))
            .bearer_auth(&self.key)
            .send()
            .await
            .with_context(|| format!("GET /v1/cases/{id}"))?;
        let status = response.status();
        let body: Value = response.json().await?;
        ensure!(status.is_success(), "GET /v1/cases/{id}: {status}: {body}");
        Ok(body)
    }

    /// Polls the case until nothing more will happen to it: decided, or FAILED, and every job
    /// terminal.
    async fn settled(&self, id: &str) -> Result<Value> {
        wait_for(
            &format!("case {id} to be decided or FAILED"),
            SETTLE,
            || async {
                let case = self.case(id).await?;
                Ok(is_settled(&case).then_some(case))
            },
        )
        .await
    }
}

/// Whether nothing more will happen to a case: decided, or FAILED, and every job terminal.
fn is_settled(case: &Value) -> bool {
    let jobs_done = case["jobs"].as_array().is_some_and(|jobs| {
        jobs.iter().all(|j| {
            matches!(
                j["status"].as_str(),
                Some("SUCCEEDED" | "FAILED" | "CANCELLED")
            )
        })
    });
    let over = case["status"] == "FAILED" || !case["decision"].is_null();
    over && jobs_done
}

// ── checking one case ────────────────────────────────────────────────────────────────────

/// A typed value as rules compare it, normalized like the truth: text and container codes as
/// they are, numbers (weights in kg, amounts, counts) without trailing zeros.
fn scalar(value: &Value) -> Option<String> {
    let inner = &value["value"];
    match value["kind"].as_str()? {
        "text" | "date" => inner.as_str().map(str::to_owned),
        "container_number" => inner["code"].as_str().map(str::to_owned),
        "weight" => inner["kg"].as_str().map(decimal),
        "money" => inner["amount"].as_str().map(decimal),
        "decimal" => inner.as_str().map(decimal),
        "integer" => inner.as_i64().map(|n| n.to_string()),
        _ => None,
    }
}

/// `"26070.00"` → `"26070"`, `"27634.20"` → `"27634.2"`.
fn decimal(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s.to_owned()
    }
}

/// The ids of the rules and safeguards that moved the decision away from READY.
fn failing_rules(decision: &Value) -> BTreeSet<String> {
    decision["rule_results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| matches!(r["outcome"].as_str(), Some("FAIL" | "REVIEW_REQUIRED")))
        .filter_map(|r| r["rule_id"].as_str().map(str::to_owned))
        .collect()
}

/// One line per rule result, for messages.
fn describe_results(decision: &Value) -> String {
    decision["rule_results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "    {} {} {}: {}",
                r["rule_id"].as_str().unwrap_or("?"),
                r["template"].as_str().unwrap_or("?"),
                r["outcome"].as_str().unwrap_or("?"),
                r["message"].as_str().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The document types the case's segments were classified as, for messages.
fn describe_segments(case: &Value) -> String {
    let names: BTreeMap<String, String> = case["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            Some((
                s["id"].as_str()?.to_owned(),
                s["filename"].as_str()?.to_owned(),
            ))
        })
        .collect();
    case["segments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let file = s["source_id"]
                .as_str()
                .and_then(|id| names.get(id))
                .map_or("?", String::as_str);
            format!("{file}: {}", s["doc_type"].as_str().unwrap_or("UNKNOWN"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What was observed for one variant, for the closing table.
struct Observed {
    variant: String,
    status: String,
    decision: String,
    failing: String,
}

/// Every way `case` differs from `truth`, as messages.
fn check_case(truth: &Truth, case: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let expected = &truth.expected;
    let status = case["status"].as_str().unwrap_or("?");
    let decision = &case["decision"];
    let source_of = |file: &str| -> Option<String> {
        case["sources"]
            .as_array()?
            .iter()
            .find(|s| s["filename"] == file)
            .and_then(|s| s["id"].as_str().map(str::to_owned))
    };

    if expected.case_status.as_deref() == Some("FAILED") {
        if status != "FAILED" {
            problems.push(format!("case status is {status}, expected FAILED"));
        }
        if !decision.is_null() {
            problems.push(format!(
                "a technical failure must give no decision, found {} ({})",
                decision["status"], decision["summary"]
            ));
        }
        if let Some(failure) = &expected.failure {
            let source = source_of(&failure.file);
            let job = case["jobs"].as_array().and_then(|jobs| {
                jobs.iter()
                    .find(|j| source.is_some() && j["source_id"].as_str() == source.as_deref())
            });
            match job {
                None => problems.push(format!("no job for {}", failure.file)),
                Some(j) => {
                    if j["status"] != "FAILED" || j["error"]["code"] != failure.code.as_str() {
                        problems.push(format!(
                            "{}'s job is {} with error {}, expected FAILED with {}",
                            failure.file, j["status"], j["error"], failure.code
                        ));
                    }
                }
            }
            // Only the unreadable file fails: the others are read.
            for j in case["jobs"].as_array().into_iter().flatten() {
                let other_source =
                    j["kind"] == "process_source" && j["source_id"].as_str() != source.as_deref();
                if other_source && j["status"] != "SUCCEEDED" {
                    problems.push(format!("a readable file's job ended {}", j["status"]));
                }
            }
        }
        return problems;
    }

    if status == "FAILED" {
        problems.push(format!(
            "case FAILED ({}), expected a {} decision",
            case["status_reason"],
            expected.decision.as_deref().unwrap_or("?")
        ));
        return problems;
    }
    if decision.is_null() {
        problems.push(format!("case is {status} with no decision"));
        return problems;
    }
    for j in case["jobs"].as_array().into_iter().flatten() {
        if j["status"] != "SUCCEEDED" {
            problems.push(format!(
                "{} job {} ended {} ({})",
                j["kind"], j["id"], j["status"], j["error"]
            ));
        }
    }
    if decision["ruleset"]["source"] != "workflow" {
        problems.push(format!(
            "the decision applied {} rules, expected workflows/trade.yaml's",
            decision["ruleset"]
        ));
    }
    let got = decision["status"].as_str().unwrap_or("?");
    if Some(got) != expected.decision.as_deref() {
        problems.push(format!(
            "decision {got}, expected {}",
            expected.decision.as_deref().unwrap_or("none")
        ));
    }
    let failing = failing_rules(decision);
    let want: BTreeSet<String> = expected.failing_rules.iter().cloned().collect();
    if failing != want {
        problems.push(format!("failing rules {failing:?}, expected {want:?}"));
    }

    // The values a failing rule compared, each with the evidence a reviewer checks.
    for (rule_id, values) in &expected.compared {
        let Some(result) = decision["rule_results"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["rule_id"] == rule_id.as_str()))
        else {
            problems.push(format!("no result for rule {rule_id}"));
            continue;
        };
        let shown = result["values"].as_array().cloned().unwrap_or_default();
        for want in values {
            let found = shown.iter().find(|v| {
                v["document_type"] == want.document_type.as_str()
                    && v["field"] == want.field.as_str()
            });
            let Some(v) = found else {
                problems.push(format!(
                    "{rule_id} shows no {}.{} (it shows {})",
                    want.document_type,
                    want.field,
                    Value::Array(shown.clone())
                ));
                continue;
            };
            let what = format!("{rule_id}: {}.{}", want.document_type, want.field);
            let value = scalar(&v["value"]);
            if value.as_deref() != Some(want.value.as_str()) {
                problems.push(format!("{what} is {}, expected {}", v["value"], want.value));
            }
            let ev = &v["evidence"];
            if ev["raw_text"] != want.raw_text.as_str() {
                problems.push(format!(
                    "{what} evidence text {}, expected {:?}",
                    ev["raw_text"], want.raw_text
                ));
            }
            if ev["page"].as_u64() != Some(want.page) {
                problems.push(format!(
                    "{what} evidence page {}, expected {}",
                    ev["page"], want.page
                ));
            }
            let file = truth
                .files
                .iter()
                .find(|f| f.document_type.as_deref() == Some(want.document_type.as_str()));
            let source = file.and_then(|f| source_of(&f.file));
            if source.is_none() || ev["source_id"].as_str() != source.as_deref() {
                problems.push(format!(
                    "{what} evidence names source {}, expected {:?}'s ({source:?})",
                    ev["source_id"],
                    file.map(|f| f.file.as_str())
                ));
            }
            let coord = |k: &str| ev["bbox"][k].as_f64();
            match (coord("x0"), coord("y0"), coord("x1"), coord("y1")) {
                (Some(x0), Some(y0), Some(x1), Some(y1))
                    if (0.0..x1).contains(&x0)
                        && x1 <= 1.0
                        && (0.0..y1).contains(&y0)
                        && y1 <= 1.0 => {}
                _ => problems.push(format!(
                    "{what} evidence box {} is not a page region",
                    ev["bbox"]
                )),
            }
        }
    }
    problems
}

// ── the test ─────────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dossier_gets_its_known_decision_through_the_api() {
    let rig = Rig::new().await.expect("rig");
    let mut server = rig.start().expect("starting ironclad all");
    let outcome = scenario(&rig, &mut server).await;
    rig.finish(server, outcome).await;
}

async fn scenario(rig: &Rig, server: &mut Server) -> Result<()> {
    let started = Instant::now();
    let truths = load_truths()?;

    // The truth names the rules of workflows/trade.yaml; a renamed rule is a stale fixture.
    let declared = workflow_rule_ids()?;
    for (_, t) in &truths {
        for id in t
            .expected
            .failing_rules
            .iter()
            .chain(t.expected.compared.keys())
            .filter(|id| !id.starts_with("safeguard_"))
        {
            ensure!(
                declared.contains(id),
                "[{}] expects rule {id}, which workflows/trade.yaml does not declare \
                 (its rules: {declared:?}); update scripts/gen-decision-dossiers",
                t.variant
            );
        }
    }

    let api = Api::ready(rig, server).await?;

    let mut cases = Vec::new();
    for (dir, truth) in &truths {
        cases.push(api.submit(dir, truth).await?);
    }
    let submitted = started.elapsed();

    let mut problems = Vec::new();
    let mut observed = Vec::new();
    for ((_, truth), id) in truths.iter().zip(&cases) {
        let case = api
            .settled(id)
            .await
            .map_err(|e| e.context(format!("[{}] {}", truth.variant, truth.description)))?;
        let decision = &case["decision"];
        observed.push(Observed {
            variant: truth.variant.clone(),
            status: case["status"].as_str().unwrap_or("?").to_owned(),
            decision: decision["status"].as_str().unwrap_or("-").to_owned(),
            failing: failing_rules(decision)
                .into_iter()
                .collect::<Vec<_>>()
                .join(", "),
        });
        let mut found = check_case(truth, &case);
        if truth.variant == report::VARIANT && found.is_empty() {
            if let Err(e) = report::check(&api, rig, id).await {
                found.push(format!("its report: {e:#}"));
            }
        }
        if !found.is_empty() {
            problems.push(format!(
                "[{}] {}\n  case {id}: {} — {}\n  segments: {}\n  - {}\n  rule results:\n{}",
                truth.variant,
                truth.description,
                case["status"],
                decision["summary"],
                describe_segments(&case),
                found.join("\n  - "),
                describe_results(decision)
            ));
        }
    }

    println!(
        "{:<32} {:<16} {:<16} failing rules",
        "variant", "case", "decision"
    );
    for o in &observed {
        println!(
            "{:<32} {:<16} {:<16} {}",
            o.variant, o.status, o.decision, o.failing
        );
    }
    println!(
        "{} cases submitted in {:.1}s, all settled after {:.1}s",
        cases.len(),
        submitted.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    if !problems.is_empty() {
        bail!(
            "{} of {} dossier(s) did not get their known outcome:\n\n{}",
            problems.len(),
            truths.len(),
            problems.join("\n\n")
        );
    }
    Ok(())
}
