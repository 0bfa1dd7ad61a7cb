//! Conformance with invoice2data on its own corpus (`shared/corpus/invoice2data`, beside the
//! repository): every template must load, and every example whose text we can get must give
//! the JSON invoice2data gives.
//!
//! Tests may do I/O; the crate may not. PDFs are turned into text with `pdftotext -layout`,
//! which is what invoice2data's default reader matches its regexes against. The corpus
//! directory can be moved with `IRONCLAD_I2D_CORPUS`; without it the tests say so and pass,
//! so the crate builds on a machine without the shared folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ironclad_extract::invoice2data::{select_template, Area, Template};
use serde_json::Value;

#[path = "../support/compare.rs"]
mod compare;
use compare::{corpus, differences};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yml" | "yaml" | "json")
        ) {
            out.push(p);
        }
    }
}

/// (file name, template) for each template that loads.
type Loaded = Vec<(String, Template)>;
/// (file name, reason) for each template that does not.
type Refused = Vec<(String, String)>;

/// Loads every template under `dir`.
fn load(dir: &Path) -> (Loaded, Refused) {
    let mut paths = Vec::new();
    files(dir, &mut paths);
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for p in paths {
        let name = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
        let text = std::fs::read_to_string(&p).expect("readable template");
        match Template::from_yaml(&text) {
            Ok(t) => ok.push((name, t)),
            Err(e) => failed.push((name, e.to_string())),
        }
    }
    (ok, failed)
}

/// Templates that load (of 215). The one that does not, `nl/nl.gulf.yml`, has an unbalanced
/// parenthesis in `start: (BTW type`, which Python's `re` refuses as well.
const TEMPLATES_LOADED: usize = 214;

#[test]
fn every_template_in_the_library_loads() {
    let Some(corpus) = corpus() else { return };
    let (ok, failed) = load(&corpus.join("templates"));
    let warned = ok.iter().filter(|(_, t)| !t.warnings().is_empty()).count();
    eprintln!(
        "invoice2data templates: {} loaded, {} failed, {} loaded with warnings",
        ok.len(),
        failed.len(),
        warned
    );
    for (name, reason) in &failed {
        eprintln!("  FAILED {name}: {reason}");
    }
    for (name, t) in &ok {
        for w in t.warnings() {
            eprintln!("  warning {name}: {w}");
        }
    }
    assert!(
        ok.len() >= TEMPLATES_LOADED,
        "{} templates load; expected at least {TEMPLATES_LOADED}",
        ok.len()
    );
    for (name, _) in &failed {
        assert_eq!(
            name, "nl/nl.gulf.yml",
            "only the template Python cannot compile either may fail"
        );
    }
}

fn pdftotext(pdf: &Path) -> Option<String> {
    let out = Command::new("pdftotext")
        .arg("-layout")
        .arg(pdf)
        .arg("-")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The text of an `area`, read the way invoice2data's pdftotext reader crops.
fn pdftotext_area(pdf: &Path, a: &Area) -> Option<String> {
    let n = |v: i64| v.to_string();
    let args = [
        ("-f", a.first_page),
        ("-l", a.last_page),
        ("-r", a.resolution),
        ("-x", a.x),
        ("-y", a.y),
        ("-W", a.width),
        ("-H", a.height),
    ];
    let mut cmd = Command::new("pdftotext");
    cmd.arg("-layout");
    for (flag, v) in args {
        cmd.arg(flag).arg(n(v));
    }
    let out = cmd.arg(pdf).arg("-").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs every case in `dir` (a `.json` expectation beside a `.txt` or `.pdf` input) against
/// `templates`; the verdict per case: `Ok(())` or the reason.
fn run_cases(dir: &Path, templates: &[Template]) -> BTreeMap<String, Result<(), String>> {
    let mut results = BTreeMap::new();
    let mut expectations: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    expectations.retain(|p| p.extension().and_then(|e| e.to_str()) == Some("json"));
    expectations.sort();
    for json in expectations {
        let case = json
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("readable")).expect("json");
        let expected = expected.get(0).cloned().unwrap_or(expected);
        let txt = json.with_extension("txt");
        let pdf = json.with_extension("pdf");
        let (text, source) = if txt.exists() {
            (std::fs::read_to_string(&txt).ok(), None)
        } else if pdf.exists() {
            (pdftotext(&pdf), Some(pdf))
        } else {
            (None, None)
        };
        let verdict = match text {
            None => Err("no text input (image only, or pdftotext missing)".to_owned()),
            Some(text) => match select_template(templates, &text) {
                None => Err("no template matches".to_owned()),
                Some(t) => {
                    let mut read_area =
                        |a: &Area| source.as_deref().and_then(|pdf| pdftotext_area(pdf, a));
                    match t.extract_with_areas(&text, &mut read_area) {
                        Err(e) => Err(format!("template {:?} matched but: {e}", t.issuer())),
                        Ok(got) => {
                            let mut diffs = Vec::new();
                            differences(&expected, &Value::Object(got), "", &mut diffs);
                            if diffs.is_empty() {
                                Ok(())
                            } else {
                                Err(diffs.join("; "))
                            }
                        }
                    }
                }
            },
        };
        results.insert(case, verdict);
    }
    results
}

fn report(title: &str, results: &BTreeMap<String, Result<(), String>>) {
    let passed = results.values().filter(|r| r.is_ok()).count();
    eprintln!("{title}: {passed}/{} cases pass", results.len());
    for (case, r) in results {
        match r {
            Ok(()) => eprintln!("  PASS {case}"),
            Err(why) => eprintln!("  FAIL {case}: {why}"),
        }
    }
}

fn assert_pass(results: &BTreeMap<String, Result<(), String>>, expected: &[&str]) {
    for case in expected {
        match results.get(*case) {
            Some(Ok(())) => {}
            other => panic!("case {case} should pass: {other:?}"),
        }
    }
}

/// The end-to-end cases: the real invoices of `compare/` against the whole library.
#[test]
fn compare_cases_match_invoice2data_output() {
    let Some(corpus) = corpus() else { return };
    let (loaded, _) = load(&corpus.join("templates"));
    let templates: Vec<Template> = loaded.into_iter().map(|(_, t)| t).collect();
    let results = run_cases(&corpus.join("compare"), &templates);
    report("invoice2data compare/", &results);
    let has_pdftotext = Command::new("pdftotext").arg("-v").output().is_ok();
    assert_pass(&results, &["Orlen"]);
    if has_pdftotext {
        assert_pass(&results, PDF_CASES_PASSING);
    }
}

/// PDF cases that pass (their text comes from `pdftotext -layout`).
const PDF_CASES_PASSING: &[&str] = &[
    "AmazonWebServices",
    "FlipkartInvoice",
    "NetpresseInvoice",
    "QualityHosting",
    "SammyMaystoneLinesTest",
    "coolblue1",
    "free_fiber",
    "oyo",
];

/// The parser cases of `custom/`, with their own templates.
#[test]
fn custom_cases_match_invoice2data_output() {
    let Some(corpus) = corpus() else { return };
    let (loaded, failed) = load(&corpus.join("custom/templates"));
    assert!(failed.is_empty(), "{failed:?}");
    let templates: Vec<Template> = loaded.into_iter().map(|(_, t)| t).collect();
    let results = run_cases(&corpus.join("custom"), &templates);
    report("invoice2data custom/", &results);
    assert_pass(
        &results,
        &[
            "basic",
            "lines-basic",
            "lines-blocks",
            "lines-multiple-patterns",
            "table-groups",
        ],
    );
}
