//! Totals over a set of file reports, printed for people and written as JSON
//! (`target/accuracy.json`) for the benchmark.

use crate::evaluate::{read_options, FileReport, Status};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// Totals over some files.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Summary {
    pub files: u32,
    pub files_unread: u32,
    pub pages: u32,
    pub pages_classified_ok: u32,
    pub classification_accuracy: f64,
    pub files_segmented_ok: u32,
    pub fields_scored: u32,
    pub fields_hit: u32,
    pub field_accuracy: f64,
    pub fields_not_in_workflow: u32,
    pub rotation_pages: u32,
    pub rotation_ok: u32,
    pub read_ms: u64,
}

impl Summary {
    pub fn of<'a>(reports: impl IntoIterator<Item = &'a FileReport>) -> Summary {
        let mut s = Summary::default();
        for r in reports {
            let t = &r.totals;
            s.files += 1;
            s.files_unread += u32::from(r.error.is_some());
            s.pages += t.pages;
            s.pages_classified_ok += t.pages_classified_ok;
            s.files_segmented_ok += u32::from(r.segmentation_ok);
            s.fields_scored += t.fields_scored;
            s.fields_hit += t.fields_hit;
            s.fields_not_in_workflow += t.fields_not_in_workflow;
            s.rotation_pages += t.rotation_pages;
            s.rotation_ok += t.rotation_ok;
            s.read_ms += r.read_ms;
        }
        s.classification_accuracy = ratio(s.pages_classified_ok, s.pages);
        s.field_accuracy = ratio(s.fields_hit, s.fields_scored);
        s
    }
}

fn ratio(a: u32, b: u32) -> f64 {
    if b == 0 {
        1.0
    } else {
        f64::from(a) / f64::from(b)
    }
}

/// One missed field, flattened for the report.
#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    pub file: String,
    pub doc_type: String,
    pub field: String,
    pub status: Status,
    pub printed: Option<String>,
    pub expected: serde_json::Value,
    pub raw: Option<String>,
    pub found: Option<serde_json::Value>,
    pub confidence: Option<f64>,
    pub conflict: Option<bool>,
    pub diagnosis: Option<crate::evaluate::Diagnosis>,
    pub nearest_read: Option<String>,
    pub context: Option<String>,
}

/// The whole accuracy report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub generated_by: &'static str,
    pub truth_seed: u64,
    pub truth_count: u32,
    pub languages: String,
    pub dpi: u32,
    /// `"subset"` (the default run), `"full"` (`IRONCLAD_FULL_ACCURACY=1`) or `"selected"`
    /// (`IRONCLAD_SCANS`).
    pub scan_scope: &'static str,
    pub elapsed_ms: u64,
    /// Text-layer PDFs.
    pub text: Summary,
    /// Image-only files: scanned PDFs, PNG, JPEG, TIFF.
    pub scans: Summary,
    /// Both: classification accuracy over every page read.
    pub all: Summary,
    pub misses: Vec<Miss>,
    pub files: Vec<FileReport>,
}

impl Report {
    pub fn new(reports: &[Arc<FileReport>], scan_scope: &'static str, elapsed_ms: u64) -> Report {
        let ev = crate::evaluate::evaluator();
        let opts = read_options();
        let files: Vec<FileReport> = reports.iter().map(|r| (**r).clone()).collect();
        let misses = files
            .iter()
            .flat_map(|r| {
                r.fields
                    .iter()
                    .filter(|f| matches!(f.status, Status::Wrong | Status::Missing))
                    .map(|f| Miss {
                        file: r.file.clone(),
                        doc_type: f.doc_type.clone(),
                        field: f.field.clone(),
                        status: f.status,
                        printed: f.printed.clone(),
                        expected: f.expected.clone(),
                        raw: f.raw.clone(),
                        found: f.found.clone(),
                        confidence: f.confidence,
                        conflict: f.conflict,
                        diagnosis: f.diagnosis,
                        nearest_read: f.nearest_read.clone(),
                        context: f.context.clone(),
                    })
            })
            .collect();
        Report {
            generated_by: "cargo test --test documents accuracy_report",
            truth_seed: ev.truth.seed,
            truth_count: ev.truth.count,
            languages: opts.languages,
            dpi: opts.dpi,
            scan_scope,
            elapsed_ms,
            text: Summary::of(files.iter().filter(|r| r.kind == "text")),
            scans: Summary::of(files.iter().filter(|r| r.kind == "scan")),
            all: Summary::of(&files),
            misses,
            files,
        }
    }

    /// A plain-text rendering: one line per file, the misses, the totals.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "== accuracy: {} text + {} scan files (scans: {}), languages {}, {} DPI, {:.1} s ==",
            self.text.files,
            self.scans.files,
            self.scan_scope,
            self.languages,
            self.dpi,
            self.elapsed_ms as f64 / 1000.0
        );
        let _ = writeln!(
            out,
            "{:<42} {:>5} {:>6} {:>4} {:>7} {:>4} {:>7}",
            "file", "kind", "class", "seg", "fields", "rot", "read"
        );
        for r in &self.files {
            let t = &r.totals;
            let rot = if t.rotation_pages > 0 {
                format!("{}/{}", t.rotation_ok, t.rotation_pages)
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "{:<42} {:>5} {:>6} {:>4} {:>7} {:>4} {:>6}ms{}",
                r.file,
                r.kind,
                format!("{}/{}", t.pages_classified_ok, t.pages),
                if r.segmentation_ok { "ok" } else { "BAD" },
                format!("{}/{}", t.fields_hit, t.fields_scored),
                rot,
                r.read_ms,
                r.error
                    .as_ref()
                    .map(|e| format!("  ERROR {e}"))
                    .unwrap_or_default()
            );
            if !r.segmentation_ok && r.error.is_none() {
                let show = |s: &[crate::evaluate::SegmentReport]| {
                    s.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let _ = writeln!(
                    out,
                    "    segments: expected [{}], found [{}]",
                    show(&r.segments_expected),
                    show(&r.segments_found)
                );
            }
            for p in r.pages.iter().filter(|p| !p.classified_ok) {
                let _ = writeln!(
                    out,
                    "    page {}: expected {:?}, found {:?} ({:.2}){}",
                    p.page + 1,
                    p.expected_type,
                    p.found_type,
                    p.confidence,
                    p.reason
                        .as_ref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                );
            }
        }
        if !self.misses.is_empty() {
            let _ = writeln!(out, "-- missed fields ({}) --", self.misses.len());
            for m in &self.misses {
                let _ = writeln!(
                    out,
                    "{} [{}] {}: printed {:?}, got {} -> {:?}; read {:?} in {:?}",
                    m.file,
                    m.doc_type,
                    m.field,
                    m.printed.as_deref().unwrap_or("?"),
                    match (&m.raw, m.confidence) {
                        (Some(r), Some(c)) => format!(
                            "{r:?} (confidence {c:.2}{})",
                            if m.conflict == Some(true) {
                                ", conflict flagged"
                            } else {
                                ""
                            }
                        ),
                        _ => "nothing".into(),
                    },
                    m.diagnosis,
                    m.nearest_read.as_deref().unwrap_or(""),
                    m.context.as_deref().unwrap_or("")
                );
            }
        }
        for (name, s) in [("text PDFs", &self.text), ("scans", &self.scans)] {
            if s.files == 0 {
                continue;
            }
            let _ = writeln!(
                out,
                "{name:>9}: fields {}/{} = {:.1} %, pages classified {}/{} = {:.1} %, \
                 segmentation {}/{} files, rotation {}/{} pages, {} not-in-workflow fields skipped",
                s.fields_hit,
                s.fields_scored,
                100.0 * s.field_accuracy,
                s.pages_classified_ok,
                s.pages,
                100.0 * s.classification_accuracy,
                s.files_segmented_ok,
                s.files,
                s.rotation_ok,
                s.rotation_pages,
                s.fields_not_in_workflow
            );
        }
        let _ = writeln!(
            out,
            "      all: pages classified {}/{} = {:.1} %",
            self.all.pages_classified_ok,
            self.all.pages,
            100.0 * self.all.classification_accuracy
        );
        out
    }

    /// Writes the report as JSON to `<target dir>/accuracy.json` and returns the path.
    pub fn write_json(&self) -> std::io::Result<PathBuf> {
        let dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("accuracy.json");
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        // Written whole then renamed, so a reader never sees half a report.
        let tmp = dir.join(format!("accuracy.json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, &path)?;
        Ok(path)
    }
}
