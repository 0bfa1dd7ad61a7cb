//! `GET /v1/cases/{id}/report`: JSON and PDF of one decision version, tenant-scoped.
//!
//! Cases are submitted over HTTP and decided through the store's real write path (source
//! results stored with the job's success, `finalize_case` under a compiled ruleset, then
//! `reevaluate_case` and `resolve_review`), so the snapshots read here are the ones
//! `decisions::decide` writes. The worker is not run: these tests are about the report.
//!
//! The PDF checks read the text back with `pdftotext` and rasterise the pages with
//! `pdftoppm` (poppler-utils, installed by `.ci/run`). `IRONCLAD_REPORT_PNG_DIR=<dir>` keeps
//! a copy of the rendered pages for a person to look at.

use crate::helpers::{form, Answer, TestApp};
use ironclad_core::parse::ParserKind;
use ironclad_core::review::ReviewAction;
use ironclad_core::role::Role;
use ironclad_core::rules::{RulesetSpec, Schema};
use ironclad_core::{CaseId, Envelope, JobId, JobKind};
use ironclad_inspect::fixtures;
use ironclad_store::decisions::{RulesApplied, RulesSource};
use ironclad_store::jobs::{ClaimOutcome, ClaimedJob};
use ironclad_store::replay::ActionKey;
use ironclad_store::results::{FactRow, SegmentRow, SourceResults};
use ironclad_store::reviews::ReviewRequest;
use reqwest::StatusCode;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// One uploaded document and what "reading" it found.
struct Doc<'a> {
    filename: &'a str,
    doc_type: &'a str,
    container: &'a str,
}

/// What a seeded case is made of.
struct Seed<'a> {
    reference: &'a str,
    docs: [Doc<'a>; 2],
    comment: &'a str,
}

impl Default for Seed<'_> {
    fn default() -> Self {
        Self {
            reference: "PO-2026-0042",
            docs: [
                Doc {
                    filename: "bill-of-lading.pdf",
                    doc_type: "bill_of_lading",
                    container: "MSCU1234566",
                },
                Doc {
                    filename: "commercial-invoice.pdf",
                    doc_type: "commercial_invoice",
                    container: "MSCU7654321",
                },
            ],
            comment: "Carrier confirmed by phone that MSCU1234566 is right; the invoice is wrong.",
        }
    }
}

fn schema() -> Schema {
    let fields = || BTreeMap::from([("container_number".to_owned(), ParserKind::Text)]);
    Schema {
        document_types: BTreeMap::from([
            ("bill_of_lading".to_owned(), fields()),
            ("commercial_invoice".to_owned(), fields()),
        ]),
    }
}

/// Both documents required; their container numbers must agree (`on_fail` as given).
fn rules(on_fail: &str) -> anyhow::Result<ironclad_core::rules::CompiledRuleset> {
    let spec: RulesetSpec = serde_json::from_value(json!({
        "rules": [
            {"id": "documents_present", "template": "REQUIRED_DOCUMENT",
             "params": {"document_types": ["bill_of_lading", "commercial_invoice"]},
             "on_fail": "BLOCKED"},
            {"id": "container_matches", "template": "EXACT_MATCH",
             "params": {"left": {"document_type": "bill_of_lading", "field": "container_number"},
                        "right": {"document_type": "commercial_invoice", "field": "container_number"}},
             "on_fail": on_fail, "description": "The container on the invoice is the one shipped."}
        ]
    }))?;
    spec.compile(&schema())
        .map_err(|issues| anyhow::anyhow!("ruleset refused: {issues:?}"))
}

fn applied(ruleset: &ironclad_core::rules::CompiledRuleset) -> RulesApplied<'_> {
    RulesApplied {
        ruleset,
        source: RulesSource::Workflow,
        ruleset_id: None,
        ruleset_version: None,
    }
}

async fn claim(
    app: &TestApp,
    job: JobId,
    case: CaseId,
    kind: JobKind,
) -> anyhow::Result<ClaimedJob> {
    let envelope = Envelope::new(job, case, kind, 1);
    match app
        .db
        .store
        .claim_job(&envelope, "test-worker", Duration::from_secs(60))
        .await?
    {
        ClaimOutcome::Claimed(job) => Ok(job),
        ClaimOutcome::Refused(why) => anyhow::bail!("claim refused: {why:?}"),
    }
}

/// Submits the case as `key`, stores each document's reading, and writes version 1 with
/// finalize (the containers differ: BLOCKED), then version 2 by reevaluating under rules that
/// only ask for review, and resolves v2's review with an override and `seed.comment`.
async fn decided_case(app: &TestApp, seed: &Seed<'_>) -> anyhow::Result<String> {
    let files: Vec<(&str, Vec<u8>)> = seed
        .docs
        .iter()
        .map(|d| (d.filename, fixtures::pdf_with_pages(1, d.filename)))
        .collect();
    let parts: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let answer = app
        .post_case(
            &app.key,
            form(&parts).text("external_reference", seed.reference.to_owned()),
            None,
        )
        .await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let body = answer.json();
    let case_id: CaseId = body["case_id"].as_str().unwrap_or_default().parse()?;
    let store = &app.db.store;
    for (i, doc) in seed.docs.iter().enumerate() {
        let job_id: uuid::Uuid = body["sources"][i]["job_id"]
            .as_str()
            .unwrap_or_default()
            .parse()?;
        let job = claim(app, JobId(job_id), case_id, JobKind::ProcessSource).await?;
        let results = SourceResults {
            segments: vec![SegmentRow {
                ordinal: 0,
                doc_type: Some(doc.doc_type.to_owned()),
                confidence: 0.95,
                first_page: 0,
                last_page: 0,
                reason: None,
                facts: vec![FactRow {
                    field: "container_number".into(),
                    value: Some(json!({"kind": "text", "value": doc.container})),
                    raw_text: Some(doc.container.to_owned()),
                    page: Some(0),
                    bbox: Some(json!({"x0": 0.12, "y0": 0.3, "x1": 0.4, "y1": 0.33})),
                    confidence: Some(0.93),
                    conflict: false,
                    missing: false,
                    candidates: json!([]),
                }],
            }],
            ..SourceResults::default()
        };
        store
            .complete_source_job_with(&job, &json!({"pages": 1}), Some(&results), 3)
            .await?;
    }
    let finalize: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM jobs WHERE case_id = $1 AND kind = 'finalize_case'")
            .bind(case_id.0)
            .fetch_one(store.pool())
            .await?;
    let job = claim(app, JobId(finalize), case_id, JobKind::FinalizeCase).await?;
    let blocking = rules("BLOCKED")?;
    store.finalize_case(&job, &applied(&blocking)).await?;

    let tenant = app.tenant.0;
    let key = |action: &'static str| ActionKey {
        tenant,
        action,
        key: format!("{action}-{}", case_id.0),
        fingerprint: "test".into(),
    };
    let lenient = rules("REVIEW_REQUIRED")?;
    store
        .reevaluate_case(
            &key("reevaluate"),
            case_id.0,
            &applied(&lenient),
            "api_key:reevaluator",
            |_| json!({}),
        )
        .await
        .map_err(|e| anyhow::anyhow!("reevaluate: {e:?}"))?;
    let review = ReviewRequest {
        case: case_id.0,
        action: ReviewAction::Override,
        expected_decision_version: 2,
        comment: Some(seed.comment.to_owned()),
        actor: "reviewer@acme".into(),
        actor_role: "reviewer".into(),
    };
    store
        .resolve_review(&key("review"), &review, |_| json!({}))
        .await
        .map_err(|e| anyhow::anyhow!("review: {e:?}"))?;
    Ok(case_id.to_string())
}

async fn report(app: &TestApp, case: &str, query: &str, key: &str) -> anyhow::Result<Answer> {
    app.get(&format!("/v1/cases/{case}/report{query}"), Some(key))
        .await
}

/// `pdftotext` of `pdf`, whitespace collapsed (wrapped lines join with one space).
fn pdf_text(pdf: &[u8], dir: &Path) -> anyhow::Result<String> {
    let path = dir.join("report.pdf");
    std::fs::write(&path, pdf)?;
    let out = Command::new("pdftotext")
        .arg("-enc")
        .arg("UTF-8")
        .arg(&path)
        .arg("-")
        .output()?;
    anyhow::ensure!(out.status.success(), "pdftotext failed: {out:?}");
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" "))
}

/// Rasterises every page at 60 dpi into `dir` (`page-N.png`) and returns the files.
fn pages_as_png(pdf: &[u8], dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let path = dir.join("report.pdf");
    std::fs::write(&path, pdf)?;
    let out = Command::new("pdftoppm")
        .args(["-png", "-r", "60"])
        .arg(&path)
        .arg(dir.join("page"))
        .output()?;
    anyhow::ensure!(out.status.success(), "pdftoppm failed: {out:?}");
    let mut pngs: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .collect();
    pngs.sort();
    if let Ok(keep) = std::env::var("IRONCLAD_REPORT_PNG_DIR") {
        std::fs::create_dir_all(&keep)?;
        std::fs::copy(&path, Path::new(&keep).join("report.pdf"))?;
        for png in &pngs {
            if let Some(name) = png.file_name() {
                std::fs::copy(png, Path::new(&keep).join(name))?;
            }
        }
    }
    Ok(pngs)
}

#[tokio::test]
async fn json_and_pdf_of_the_latest_and_of_an_earlier_version() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = decided_case(&app, &Seed::default()).await?;

    let latest = report(&app, &case, "", &app.key).await?;
    assert_eq!(latest.status, StatusCode::OK, "{}", latest.text());
    let json = latest.json();
    assert_eq!(json["decision"]["version"], 2);
    assert_eq!(json["decision"]["status"], "REVIEW_REQUIRED");
    assert_eq!(json["decision"]["origin"], "reevaluate");
    assert_eq!(json["case"]["external_reference"], "PO-2026-0042");
    assert_eq!(json["case_state"]["status"], "RESOLVED");
    assert_eq!(json["case_state"]["resolution"], "OVERRIDDEN");
    assert_eq!(json["reviews"][0]["status"], "RESOLVED");
    assert_eq!(
        json["snapshot"]["sources"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        json["snapshot"]["documents"].as_array().map(Vec::len),
        Some(2)
    );
    let matches = |j: &serde_json::Value| -> serde_json::Value {
        j["rule_results"]
            .as_array()
            .and_then(|r| r.iter().find(|x| x["rule_id"] == "container_matches"))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(matches(&json)["outcome"], "FAIL");
    assert_eq!(matches(&json)["on_fail"], "REVIEW_REQUIRED");
    assert_eq!(matches(&json)["values"][0]["evidence"]["page"], 0);
    let events: Vec<&str> = json["audit"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["event_type"].as_str()).collect())
        .unwrap_or_default();
    assert!(events.contains(&"REVIEW_RESOLVED"), "{events:?}");
    assert_eq!(
        latest.header("cache-control").as_deref(),
        Some("private, no-store")
    );

    // Version 1: its own (blocking) rule results, and no history from version 2 on.
    let first = report(&app, &case, "?version=1&format=json", &app.key).await?;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text());
    let v1 = first.json();
    assert_eq!(v1["decision"]["version"], 1);
    assert_eq!(v1["decision"]["status"], "BLOCKED");
    assert_eq!(v1["decision"]["latest_version"], 2);
    assert_eq!(matches(&v1)["on_fail"], "BLOCKED");
    assert_eq!(v1["case_state"], serde_json::Value::Null);
    assert_eq!(v1["reviews"][0]["status"], "CANCELLED");
    let v1_events: Vec<&str> = v1["audit"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["event_type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        v1_events,
        ["CASE_INGESTED", "DECISION_GENERATED"],
        "{v1_events:?}"
    );

    // The PDF of version 2.
    let pdf = report(&app, &case, "?format=pdf", &app.key).await?;
    assert_eq!(pdf.status, StatusCode::OK, "{}", pdf.text());
    assert_eq!(
        pdf.header("content-type").as_deref(),
        Some("application/pdf")
    );
    assert_eq!(
        pdf.header("content-disposition"),
        Some(format!("attachment; filename=\"case-{case}-v2.pdf\""))
    );
    assert!(pdf.bytes.starts_with(b"%PDF-"));
    let dir = tempfile::tempdir()?;
    let text = pdf_text(&pdf.bytes, dir.path())?;
    assert!(text.contains("PO-2026-0042"), "{text}");
    assert!(text.contains("container_matches"), "{text}");
    let message = matches(&json)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let start: String = message
        .split_whitespace()
        .take(4)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        !start.is_empty() && text.contains(&start),
        "{start:?} not in {text}"
    );
    for expected in [
        "MSCU1234566",
        "commercial-invoice.pdf",
        "Carrier confirmed by phone",
    ] {
        assert!(text.contains(expected), "{expected} not in {text}");
    }
    let pngs = pages_as_png(&pdf.bytes, dir.path())?;
    assert!(!pngs.is_empty());

    // Version 1's PDF says so and stops before version 2.
    let old = report(&app, &case, "?format=pdf&version=1", &app.key).await?;
    assert_eq!(
        old.header("content-disposition"),
        Some(format!("attachment; filename=\"case-{case}-v1.pdf\""))
    );
    let old_text = pdf_text(&old.bytes, dir.path())?;
    assert!(old_text.contains("superseded"), "{old_text}");
    assert!(!old_text.contains("Carrier confirmed"), "{old_text}");
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn other_tenants_unknown_versions_and_bad_parameters() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = decided_case(&app, &Seed::default()).await?;
    let other = app.db.store.create_tenant("tenant-b").await?;
    let foreign = app.key_for(other, Role::Admin).await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;

    // Any role of the owning tenant reads it.
    let read = report(&app, &case, "?format=pdf", &reviewer).await?;
    assert_eq!(read.status, StatusCode::OK);

    for (path_case, query, key) in [
        (case.as_str(), "", foreign.as_str()),
        (case.as_str(), "?format=pdf", foreign.as_str()),
        (case.as_str(), "?version=1", foreign.as_str()),
        (case.as_str(), "?version=3", app.key.as_str()),
        (case.as_str(), "?version=3&format=pdf", app.key.as_str()),
        ("not-a-uuid", "", app.key.as_str()),
        ("00000000-0000-0000-0000-000000000000", "", app.key.as_str()),
    ] {
        let answer = report(&app, path_case, query, key).await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{path_case}{query}"
        );
        assert!(answer
            .header("content-type")
            .unwrap_or_default()
            .contains("json"));
    }
    for (query, code) in [
        ("?format=html", "invalid_format"),
        ("?format=PDF", "invalid_format"),
        ("?version=0", "invalid_version"),
        ("?version=two", "invalid_version"),
        ("?version=-1&format=pdf", "invalid_version"),
    ] {
        let answer = report(&app, &case, query, &app.key).await?;
        assert_eq!(
            (answer.status, answer.code().as_str()),
            (StatusCode::BAD_REQUEST, code),
            "{query}"
        );
    }
    let anonymous = app.get(&format!("/v1/cases/{case}/report"), None).await?;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    app.stop().await;
    Ok(())
}

/// User text is text: markup, quotes, PDF syntax, emoji, right-to-left scripts and very long
/// unbroken runs render without a panic, wrapped to the page, and read back with pdftotext.
/// Intake keeps references to 200 characters and file names to 255, and comments are at most
/// 4,000: the 5,000-character run goes in a value read from a document.
#[tokio::test]
async fn hostile_text_renders_and_reads_back() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let markers = "<script>alert(\"x\")</script> 'single' \"double\" %PDF-1.4 %%EOF endobj";
    let reference = format!("REF {markers} 😀 שלום עולם مرحبا");
    // Intake keeps what follows the last '/' or '\\' of a file name, so no closing tag here.
    let filename = format!(
        "<img src=x onerror='alert(1)'> \"q\" %PDF-1.4 😀🚀 עברית {}.pdf",
        "F".repeat(150)
    );
    let comment = format!("Comment {markers} 😀 שלום {}", "C".repeat(3_800));
    let long_value = format!("V{}", "0123456789".repeat(500));
    let seed = Seed {
        reference: &reference,
        docs: [
            Doc {
                filename: &filename,
                doc_type: "bill_of_lading",
                container: &long_value,
            },
            Doc {
                filename: "ordinary.pdf",
                doc_type: "commercial_invoice",
                container: "MSCU7654321",
            },
        ],
        comment: &comment,
    };
    let case = decided_case(&app, &seed).await?;
    let pdf = report(&app, &case, "?format=pdf", &app.key).await?;
    assert_eq!(pdf.status, StatusCode::OK, "{}", pdf.text());
    assert!(pdf.bytes.starts_with(b"%PDF-"));
    // No user text appears as PDF syntax: it is drawn as glyph ids in compressed streams.
    let raw = String::from_utf8_lossy(&pdf.bytes);
    assert!(!raw.contains("<script>") && !raw.contains("alert"));
    assert_eq!(raw.matches("%%EOF").count(), 1);

    let dir = tempfile::tempdir()?;
    let text = pdf_text(&pdf.bytes, dir.path())?;
    for expected in [
        "<script>alert(\"x\")</script>",
        "'single' \"double\"",
        "%PDF-1.4 %%EOF endobj",
        "😀",
        "[U+1F680]",
        "שלום",
        "עברית",
        "<img src=x onerror='alert(1)'>",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} not found in the PDF's text"
        );
    }
    let pngs = pages_as_png(&pdf.bytes, dir.path())?;
    // Long runs are hard-wrapped, never cut (the layout's unit tests check that every
    // character stays, in order). A cell taller than a page continues on the next one, so
    // its lines interleave with the other cells' in pdftotext's output: count characters.
    let joined: String = text.split(' ').collect();
    assert!(
        joined.contains(&"F".repeat(150)),
        "the long file name was cut"
    );
    let count = |c: char| text.chars().filter(|x| *x == c).count();
    assert!(count('C') >= 3_800, "the long comment was cut");
    assert!(count('7') >= 500, "the 5,000-character value was cut");
    assert!(text.contains("V0123456789"));
    assert!(pngs.len() >= 3, "{} pages", pngs.len());
    for png in &pngs {
        assert!(std::fs::metadata(png)?.len() > 1_000, "{png:?} is empty");
    }
    app.stop().await;
    Ok(())
}
