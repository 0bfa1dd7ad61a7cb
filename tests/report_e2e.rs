//! The decision report end to end: a trade dossier (`tests/fixtures/decisions/blocked-container`)
//! submitted to the real `ironclad all` — intake, outbox, Redis, workers reading the text layer,
//! classification and extraction under `workflows/trade.yaml`, finalize evaluating the
//! workflow's rules — then `GET /v1/cases/{id}/report` as JSON and as PDF. It checks that what
//! the real pipeline writes into a decision's snapshot (typed values from the parsers, boxes,
//! pages) reads back as a report, and that the PDF carries the reference and the failing
//! rule's message (read back with `pdftotext`).
//!
//! Needs PostgreSQL, Redis and poppler, like `tests/decisions`:
//!
//! ```text
//! cargo test --test report_e2e
//! ```
//!
//! `IRONCLAD_REPORT_PNG_DIR=<dir>` keeps the PDF and its pages rendered at 60 dpi.

use anyhow::{ensure, Context, Result};
use ironclad_testkit::{wait_for, TestDb};
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_ironclad");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Longest wait for the server and the decision (seconds in practice; this is for loaded CI).
const SETTLE: Duration = Duration::from_secs(120);
const VARIANT: &str = "blocked-container";
const FILES: [&str; 4] = [
    "bill-of-lading.pdf",
    "commercial-invoice.pdf",
    "packing-list.pdf",
    "customs-declaration.pdf",
];

/// `ironclad all`, killed and reaped when dropped.
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
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

struct Rig {
    db: TestDb,
    dir: tempfile::TempDir,
    prefix: String,
    port: u16,
}

impl Rig {
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
            .env(
                "IRONCLAD_WORKFLOW",
                Path::new(ROOT).join("workflows/trade.yaml"),
            )
            .env("IRONCLAD_PROCESSOR", "reading")
            .env("IRONCLAD_RETRY_DELAYS", "500ms,1s,2s")
            .env("IRONCLAD_LOG_FORMAT", "text")
            .env("OMP_THREAD_LIMIT", "1")
            .stdin(Stdio::null());
        cmd
    }

    fn cli(&self, args: &[&str]) -> Result<String> {
        let out = self.command(args).output()?;
        ensure!(
            out.status.success(),
            "ironclad {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn start(&self) -> Result<Server> {
        let log = self.dir.path().join("ironclad-all.log");
        let out = File::create(&log)?;
        let mut cmd = self.command(&["all"]);
        cmd.stdout(out.try_clone()?).stderr(out);
        let child = cmd.spawn().context("starting ironclad all")?;
        Ok(Server { child, log })
    }
}

async fn get(http: &reqwest::Client, url: &str, key: &str) -> Result<reqwest::Response> {
    Ok(http.get(url).bearer_auth(key).send().await?)
}

#[tokio::test]
async fn a_real_decision_reads_back_as_a_report() -> Result<()> {
    let rig = Rig {
        db: TestDb::new().await?,
        dir: tempfile::tempdir()?,
        prefix: ironclad_testkit::redis_prefix(),
        port: ironclad_testkit::free_port()?,
    };
    rig.cli(&["tenant", "create", "reports"])?;
    let out = rig.cli(&[
        "apikey", "create", "--tenant", "reports", "--role", "operator",
    ])?;
    let key = out
        .lines()
        .last()
        .map(str::trim)
        .unwrap_or_default()
        .to_owned();
    ensure!(!key.is_empty(), "apikey create printed no key");
    let server = rig.start()?;
    let base = format!("http://127.0.0.1:{}", rig.port);
    let http = reqwest::Client::new();
    wait_for("the API to be ready", SETTLE, || async {
        Ok(http
            .get(format!("{base}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
            .then_some(()))
    })
    .await
    .with_context(|| server.log_tail())?;

    let dossier = Path::new(ROOT)
        .join("tests/fixtures/decisions")
        .join(VARIANT);
    let mut form = reqwest::multipart::Form::new()
        .text("workflow", "trade")
        .text("external_reference", VARIANT);
    for file in FILES {
        let bytes = std::fs::read(dossier.join(file))?;
        form = form.part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(file),
        );
    }
    let created: Value = http
        .post(format!("{base}/v1/cases"))
        .bearer_auth(&key)
        .multipart(form)
        .send()
        .await?
        .json()
        .await?;
    let case = created["case_id"]
        .as_str()
        .with_context(|| format!("intake answered {created}"))?
        .to_owned();

    let report_url = format!("{base}/v1/cases/{case}/report");
    let report: Value = wait_for("the case's decision", SETTLE, || async {
        let response = get(&http, &report_url, &key).await?;
        Ok(if response.status().is_success() {
            Some(response.json::<Value>().await?)
        } else {
            None
        })
    })
    .await
    .with_context(|| server.log_tail())?;

    assert_eq!(report["decision"]["version"], 1);
    assert_eq!(report["decision"]["status"], "BLOCKED", "{report}");
    assert_eq!(report["case"]["external_reference"], VARIANT);
    assert_eq!(
        report["snapshot"]["sources"].as_array().map(Vec::len),
        Some(4)
    );
    let documents = report["snapshot"]["documents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(documents.len(), 4, "{report}");
    let facts: Vec<&Value> = documents
        .iter()
        .flat_map(|d| d["facts"].as_array().into_iter().flatten())
        .collect();
    assert!(
        facts.iter().any(|f| f["evidence"]["bbox"].is_object()),
        "no fact carries its box"
    );
    let failed = report["rule_results"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["outcome"] == "FAIL"))
        .cloned()
        .with_context(|| format!("no failing rule in {report}"))?;
    let message = failed["message"].as_str().unwrap_or_default().to_owned();

    let pdf = get(&http, &format!("{report_url}?format=pdf"), &key).await?;
    assert_eq!(
        pdf.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/pdf")
    );
    let bytes = pdf.bytes().await?;
    assert!(bytes.starts_with(b"%PDF-"));
    let path = rig.dir.path().join("report.pdf");
    std::fs::write(&path, &bytes)?;
    let text = Command::new("pdftotext").arg(&path).arg("-").output()?;
    ensure!(text.status.success(), "pdftotext failed");
    let text = String::from_utf8_lossy(&text.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains(VARIANT), "{text}");
    assert!(
        text.contains("HLXU8072164") && text.contains("HLXU8072159"),
        "{text}"
    );
    let start: String = message
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains(&start), "{start:?} not in {text}");

    let pages = rig.dir.path().join("pages");
    std::fs::create_dir_all(&pages)?;
    let status = Command::new("pdftoppm")
        .args(["-png", "-r", "60"])
        .arg(&path)
        .arg(pages.join("page"))
        .status()?;
    ensure!(status.success(), "pdftoppm failed");
    if let Ok(keep) = std::env::var("IRONCLAD_REPORT_PNG_DIR") {
        std::fs::create_dir_all(&keep)?;
        std::fs::copy(&path, Path::new(&keep).join("report.pdf"))?;
        for entry in std::fs::read_dir(&pages)? {
            let entry = entry?;
            std::fs::copy(entry.path(), Path::new(&keep).join(entry.file_name()))?;
        }
    }
    drop(server);
    rig.db.drop_database().await;
    Ok(())
}
