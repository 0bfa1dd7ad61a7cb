//! The shipped trade workflow's rules on the decision dossiers (`tests/fixtures/decisions`,
//! written by `scripts/gen-decision-dossiers`): every dossier whose truth expects a decision
//! is read from its PDFs' text layer (`pdftotext -bbox-layout`; the test may do I/O, the crate
//! may not), analysed, turned into rule facts and evaluated. The decision, the rules that did
//! not pass and the values the failing rule shows must be the ones its `truth.json` states.
//!
//! Pure: no database or queue, so a change to `workflows/trade.yaml` that breaks a fixture
//! fails here first. The HTTP path is tested against the same truths elsewhere.

use std::path::{Path, PathBuf};
use std::process::Command;

use ironclad_core::page::{BBox, PageText, ReadMethod, Word};
use ironclad_core::parse::Value;
use ironclad_core::rules::{evaluate, CaseFacts, DocumentFacts, Evidence, FactInput, RuleOutcome};
use ironclad_extract::{analyze, Fact, Workflow};
use uuid::Uuid;

const TRADE: &str = include_str!("../../../../workflows/trade.yaml");

fn dossiers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/decisions")
}

fn attr(tag: &str, name: &str) -> f32 {
    let key = format!("{name}=\"");
    tag.find(&key)
        .and_then(|at| tag[at + key.len()..].split('"').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// A PDF's text-layer pages, in `pdftotext`'s block order, boxes normalised to the page.
fn pages(pdf: &Path) -> Option<Vec<PageText>> {
    let out = Command::new("pdftotext")
        .arg("-bbox-layout")
        .arg(pdf)
        .arg("-")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let html = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut result = Vec::new();
    for (index, page) in html.split("<page ").skip(1).enumerate() {
        let (w, h) = (attr(page, "width"), attr(page, "height"));
        let mut words = Vec::new();
        for (line_no, line) in page.split("<line ").skip(1).enumerate() {
            for word in line.split("<word ").skip(1) {
                let Some((tag, rest)) = word.split_once('>') else {
                    continue;
                };
                let text = rest.split("</word>").next().unwrap_or("");
                let text = text
                    .replace("&apos;", "'")
                    .replace("&quot;", "\"")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&amp;", "&");
                words.push(Word {
                    text,
                    bbox: BBox {
                        x0: attr(tag, "xMin") / w,
                        y0: attr(tag, "yMin") / h,
                        x1: attr(tag, "xMax") / w,
                        y1: attr(tag, "yMax") / h,
                    },
                    confidence: 1.0,
                    line: line_no as u32,
                });
            }
        }
        result.push(PageText {
            line_blocks: Vec::new(),
            index: index as u32,
            method: ReadMethod::TextLayer,
            confidence: 1.0,
            rotation: 0,
            size_pt: None,
            words,
        });
    }
    Some(result)
}

/// What the store keeps of an extracted fact, as the rules read it.
fn fact_input(source_id: Uuid, f: &Fact) -> FactInput {
    FactInput {
        field: f.field.clone(),
        value: f.chosen.as_ref().map(|c| c.value.clone().into()),
        evidence: f
            .chosen
            .as_ref()
            .map(|c| Evidence {
                source_id: Some(source_id),
                page: Some(c.page),
                bbox: Some(c.bbox),
                raw_text: Some(c.raw.as_str().into()),
                confidence: Some(c.confidence),
                // Every page here is read from its text layer (`pages` above).
                read_method: Some(ReadMethod::TextLayer),
                correction: None,
            })
            .unwrap_or_default(),
        conflict: f.conflict,
        missing: f.chosen.is_none(),
    }
}

/// Every PDF of a dossier analysed, one source each.
fn case_facts(workflow: &Workflow, dir: &Path) -> Option<CaseFacts> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pdf"))
        .collect();
    files.sort();
    let mut documents = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let source_id = Uuid::from_u128((i as u128 + 1) << 96);
        let analysis = analyze(workflow, &pages(file)?);
        for (k, s) in analysis.segments.iter().enumerate() {
            documents.push(DocumentFacts {
                segment_id: Uuid::from_u128(((i as u128 + 1) << 32) | k as u128),
                source_id,
                document_type: s.segment.doc_type.clone(),
                first_page: s.segment.pages.first().copied().unwrap_or(0),
                last_page: s.segment.pages.last().copied().unwrap_or(0),
                facts: s.facts.iter().map(|f| fact_input(source_id, f)).collect(),
            });
        }
    }
    Some(CaseFacts { documents })
}

/// A value as `truth.json` writes it: identifiers as printed, numbers without trailing zeros.
fn plain(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        Value::ContainerNumber { code, .. } => code.clone(),
        Value::Integer(n) => n.to_string(),
        Value::Decimal(d) => d.normalized().to_string(),
        Value::Money { amount, .. } => amount.normalized().to_string(),
        Value::Weight { kg, .. } => kg.normalized().to_string(),
        Value::Date(d) => d.to_string(),
    }
}

#[test]
fn every_decision_dossier_gets_the_decision_its_truth_states() {
    let workflow = Workflow::from_yaml(TRADE).unwrap_or_else(|e| panic!("trade.yaml: {e}"));
    let Ok(entries) = std::fs::read_dir(dossiers()) else {
        eprintln!("no tests/fixtures/decisions; skipping");
        return;
    };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    let mut checked = 0;
    for dir in dirs {
        let Ok(text) = std::fs::read_to_string(dir.join("truth.json")) else {
            continue;
        };
        let truth: serde_json::Value = serde_json::from_str(&text).expect("truth.json");
        let expected = &truth["expected"];
        let Some(decision) = expected["decision"].as_str() else {
            continue; // a processing failure: no decision to check
        };
        let Some(case) = case_facts(&workflow, &dir) else {
            eprintln!("pdftotext unavailable; skipping");
            return;
        };
        let ev = evaluate(workflow.ruleset(), &case);
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        let not_passed: Vec<&str> = ev
            .results
            .iter()
            .filter(|r| !matches!(r.outcome, RuleOutcome::Pass | RuleOutcome::NotApplicable))
            .map(|r| &*r.rule_id)
            .collect();
        let failing: Vec<&str> = expected["failing_rules"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        let detail = ev
            .results
            .iter()
            .map(|r| format!("  {} {}: {}", r.rule_id, r.outcome, r.message))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            (ev.status.as_str(), &not_passed),
            (decision, &failing),
            "{name}: {}\n{detail}",
            ev.summary
        );
        for (rule, values) in expected["compared"].as_object().into_iter().flatten() {
            let result = ev
                .results
                .iter()
                .find(|r| *r.rule_id == **rule)
                .expect("rule");
            for want in values.as_array().into_iter().flatten() {
                let shown = result.values.iter().any(|v| {
                    want["document_type"].as_str() == Some(&*v.document_type)
                        && want["field"].as_str() == Some(&*v.field)
                        && v.value.as_deref().map(plain).as_deref() == want["value"].as_str()
                        && v.evidence.raw_text.as_deref() == want["raw_text"].as_str()
                        && v.evidence.page.map(u64::from) == want["page"].as_u64()
                });
                assert!(
                    shown,
                    "{name}: {rule} does not show {want}: {:#?}",
                    result.values
                );
            }
        }
        checked += 1;
    }
    eprintln!("{checked} decision dossier(s) checked");
}

/// `cargo test -p ironclad-extract --test extract trade_decisions:: -- --ignored --nocapture`.
#[test]
#[ignore = "prints every dossier's rule results for a person to read"]
fn dump_decisions() {
    let workflow = Workflow::from_yaml(TRADE).unwrap_or_else(|e| panic!("trade.yaml: {e}"));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dossiers())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    for dir in dirs {
        let Some(case) = case_facts(&workflow, &dir) else {
            continue;
        };
        let ev = evaluate(workflow.ruleset(), &case);
        println!("{}: {}", dir.display(), ev.summary);
        for r in &ev.results {
            println!("  {} {}: {}", r.rule_id, r.outcome, r.message);
        }
    }
}
