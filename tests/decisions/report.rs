//! The decision report of a case the real pipeline decided: `GET /v1/cases/{id}/report` as
//! JSON and as PDF. It checks that what finalize writes into a decision's snapshot (typed values
//! from the parsers, boxes, pages) reads back as a report, and that the PDF carries the
//! reference and the failing rule's message (read back with `pdftotext`).
//!
//! `IRONCLAD_REPORT_PNG_DIR=<dir>` keeps the PDF and its pages rendered at 60 dpi.

use super::{Api, Rig};
use anyhow::{ensure, Context, Result};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The variant whose report is checked: BLOCKED, so the report has a failing rule to show.
pub const VARIANT: &str = "blocked-container";

/// Checks the report of `case` (the `VARIANT` dossier, already decided).
pub async fn check(api: &Api, rig: &Rig, case: &str) -> Result<()> {
    let url = format!("{}/v1/cases/{case}/report", api.base);
    let get = |url: String| api.http.get(url).bearer_auth(&api.key).send();
    let response = get(url.clone()).await?;
    ensure!(
        response.status().is_success(),
        "report: {}",
        response.status()
    );
    let report: Value = response.json().await?;

    ensure!(report["decision"]["version"] == 1, "{report}");
    ensure!(report["decision"]["status"] == "BLOCKED", "{report}");
    ensure!(report["case"]["external_reference"] == VARIANT, "{report}");
    ensure!(
        report["snapshot"]["sources"].as_array().map(Vec::len) == Some(4),
        "sources in {report}"
    );
    let documents = report["snapshot"]["documents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure!(documents.len() == 4, "documents in {report}");
    ensure!(
        documents
            .iter()
            .flat_map(|d| d["facts"].as_array().into_iter().flatten())
            .any(|f| f["evidence"]["bbox"].is_object()),
        "no fact carries its box"
    );
    let failed = report["rule_results"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["outcome"] == "FAIL"))
        .cloned()
        .with_context(|| format!("no failing rule in {report}"))?;
    let message = failed["message"].as_str().unwrap_or_default().to_owned();

    let pdf = get(format!("{url}?format=pdf")).await?;
    ensure!(
        pdf.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            == Some("application/pdf"),
        "content type {:?}",
        pdf.headers().get("content-type")
    );
    let bytes = pdf.bytes().await?;
    ensure!(bytes.starts_with(b"%PDF-"), "not a PDF");
    let path = rig.dir.path().join("report.pdf");
    std::fs::write(&path, &bytes)?;
    let text = Command::new("pdftotext").arg(&path).arg("-").output()?;
    ensure!(text.status.success(), "pdftotext failed");
    let text = String::from_utf8_lossy(&text.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    ensure!(text.contains(VARIANT), "{text}");
    ensure!(
        text.contains("HLXU8072164") && text.contains("HLXU8072159"),
        "both containers in {text}"
    );
    let start: String = message
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    ensure!(text.contains(&start), "{start:?} not in {text}");

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
    Ok(())
}
