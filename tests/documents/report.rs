//! Totals over a set of file reports, printed for people and written as JSON
//! (`target/accuracy.json`, and `target/accuracy-hard.json` for the hard fixtures' per-kind
//! report) for the benchmark.

use crate::evaluate::{read_options, Evaluator, FileReport, Status};
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
        let misses = misses_of(&files);
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
        render_files(&mut out, &self.files, 42);
        render_misses(&mut out, &self.misses);
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
        write_json(self, "accuracy.json")
    }
}

/// Writes `value` as JSON to `<target dir>/<name>` (`$CARGO_TARGET_DIR`, else `target/`) and
/// returns the path.
fn write_json(value: &impl Serialize, name: &str) -> std::io::Result<PathBuf> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(name);
    let json = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    // Written whole then renamed, so a reader never sees half a report.
    let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// The files that could not be read at all, each with its error.
pub fn unread<'a>(files: impl IntoIterator<Item = &'a FileReport>) -> Vec<String> {
    files
        .into_iter()
        .filter_map(|r| Some(format!("{}: {}", r.file, r.error.as_ref()?)))
        .collect()
}

/// Every missed field of `files`, flattened.
fn misses_of(files: &[FileReport]) -> Vec<Miss> {
    files
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
        .collect()
}

/// One line per file (classification, segmentation, fields, rotation, reading time), with the
/// pages typed wrongly and a wrong split under it; `width` is the file column's.
fn render_files(out: &mut String, files: &[FileReport], width: usize) {
    let _ = writeln!(
        out,
        "{:<width$} {:>5} {:>6} {:>4} {:>7} {:>4} {:>7}",
        "file", "kind", "class", "seg", "fields", "rot", "read"
    );
    for r in files {
        let t = &r.totals;
        let rot = if t.rotation_pages > 0 {
            format!("{}/{}", t.rotation_ok, t.rotation_pages)
        } else {
            "-".into()
        };
        let _ = writeln!(
            out,
            "{:<width$} {:>5} {:>6} {:>4} {:>7} {:>4} {:>6}ms{}",
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
}

/// The missed fields, one line each, under a heading (nothing when none was missed).
fn render_misses(out: &mut String, misses: &[Miss]) {
    if !misses.is_empty() {
        let _ = writeln!(out, "-- missed fields ({}) --", misses.len());
        for m in misses {
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
}

/// Totals over the files of one hard kind.
#[derive(Debug, Clone, Serialize)]
pub struct KindSummary {
    pub kind: String,
    pub summary: Summary,
}

/// The hard fixtures' report: per kind, fields right, pages typed right, files unread.
#[derive(Debug, Clone, Serialize)]
pub struct HardReport {
    pub generated_by: &'static str,
    pub truth_seed: u64,
    pub dossiers: u32,
    pub languages: String,
    pub dpi: u32,
    /// `"subset"` (one dossier per kind, the default), `"full"` (`IRONCLAD_FULL_ACCURACY=1`) or
    /// `"selected: …"` (`IRONCLAD_HARD`).
    pub scope: String,
    pub elapsed_ms: u64,
    /// In the order of [`crate::hard::HARD_KINDS`], the kinds present only.
    pub kinds: Vec<KindSummary>,
    pub all: Summary,
    pub misses: Vec<Miss>,
    pub files: Vec<FileReport>,
}

impl HardReport {
    pub fn new(
        ev: &Evaluator,
        reports: &[Arc<FileReport>],
        scope: String,
        elapsed_ms: u64,
    ) -> HardReport {
        let opts = read_options();
        let files: Vec<FileReport> = reports.iter().map(|r| (**r).clone()).collect();
        let kinds = crate::hard::HARD_KINDS
            .iter()
            .filter_map(|k| {
                let of_kind: Vec<&FileReport> = files
                    .iter()
                    .filter(|r| r.hard_kind.as_deref() == Some(*k))
                    .collect();
                (!of_kind.is_empty()).then(|| KindSummary {
                    kind: (*k).to_owned(),
                    summary: Summary::of(of_kind),
                })
            })
            .collect();
        HardReport {
            generated_by: "cargo test --test documents hard_accuracy_report",
            truth_seed: ev.truth.seed,
            dossiers: ev.truth.count,
            languages: opts.languages,
            dpi: opts.dpi,
            scope,
            elapsed_ms,
            kinds,
            all: Summary::of(&files),
            misses: misses_of(&files),
            files,
        }
    }

    /// The totals of `kind`, if any of its files was read.
    pub fn kind(&self, kind: &str) -> Option<&Summary> {
        self.kinds
            .iter()
            .find(|k| k.kind == kind)
            .map(|k| &k.summary)
    }

    /// Every file, the misses, then the per-kind table.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "== hard fixtures ({}): {} files, {} pages, languages {}, {} DPI, {:.1} s ==",
            self.scope,
            self.all.files,
            self.all.pages,
            self.languages,
            self.dpi,
            self.elapsed_ms as f64 / 1000.0
        );
        render_files(&mut out, &self.files, 48);
        render_misses(&mut out, &self.misses);
        out.push_str(&self.render_kinds());
        out
    }

    /// The per-kind table: fields right / scored, pages typed right / pages, files unread.
    pub fn render_kinds(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "-- hard fixtures per kind ({}) --\n{:<8} {:>5} {:>5} {:>16} {:>15} {:>6} {:>8}",
            self.scope, "kind", "files", "pages", "fields right", "pages typed", "unread", "read"
        );
        let rows = self
            .kinds
            .iter()
            .map(|k| (k.kind.as_str(), &k.summary))
            .chain([("all", &self.all)]);
        for (kind, s) in rows {
            let _ = writeln!(
                out,
                "{kind:<8} {:>5} {:>5} {:>16} {:>15} {:>6} {:>7.1}s",
                s.files,
                s.pages,
                format!(
                    "{}/{} {:.1}%",
                    s.fields_hit,
                    s.fields_scored,
                    100.0 * s.field_accuracy
                ),
                format!(
                    "{}/{} {:.1}%",
                    s.pages_classified_ok,
                    s.pages,
                    100.0 * s.classification_accuracy
                ),
                s.files_unread,
                s.read_ms as f64 / 1000.0
            );
        }
        out
    }

    /// Writes the report as JSON to `<target dir>/accuracy-hard.json` and returns the path.
    pub fn write_json(&self) -> std::io::Result<PathBuf> {
        write_json(self, "accuracy-hard.json")
    }
}
