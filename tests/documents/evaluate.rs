//! The accuracy evaluator: reads a fixture file through the production reading path
//! (sniff → `PageReader` → `analyze` with `workflows/trade.yaml`, all in
//! [`Evaluator::evaluate`]) and compares every page's type, the segmentation and every truth
//! field with what was read. One evaluator per fixture root: [`evaluator`] for
//! `tests/fixtures/generated`, [`hard_evaluator`] for `tests/fixtures/hard`.
//!
//! Each file is read at most once per test binary: results are memoized, so the tests and the
//! report share the work (a test asking for a file another test is reading waits for it).

use crate::truth::{
    fixtures_dir, hard_fixtures_dir, workflow_field, Expected, Truth, TruthDocument, TruthFile,
};
use ironclad_core::page::{BBox, PageText};
use ironclad_extract::{Analysis, Workflow};
use ironclad_ocr::{PageReader, ReadOptions};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The workflow the product ships.
pub const TRADE_YAML: &str = include_str!("../../workflows/trade.yaml");

/// The reading options under test: the product's defaults (300 DPI) with English and French,
/// as the `reading` processor is configured for the trade workflow.
/// `IRONCLAD_RULE_LINES=keep|drop-marks|erase` changes what becomes of rule lines, to measure
/// what each is worth.
pub fn read_options() -> ReadOptions {
    ReadOptions {
        languages: "eng+fra".into(),
        rule_lines: std::env::var("IRONCLAD_RULE_LINES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_default(),
        text_height_px: ironclad_ocr::text_height_setting(
            std::env::var("IRONCLAD_OCR_TEXT_HEIGHT")
                .ok()
                .and_then(|v| v.parse().ok()),
        ),
        ..ReadOptions::default()
    }
}

/// Shared state of one test binary: truth, workflow, one reader, memoized results.
pub struct Evaluator {
    pub truth: Truth,
    pub workflow: Workflow,
    pub reader: PageReader,
    done: Mutex<HashMap<String, Arc<OnceLock<Arc<FileReport>>>>>,
}

/// The binary's evaluator of the generated fixtures (`tests/fixtures/generated`).
pub fn evaluator() -> &'static Evaluator {
    static EVALUATOR: OnceLock<Evaluator> = OnceLock::new();
    EVALUATOR.get_or_init(|| Evaluator::new(&fixtures_dir()))
}

/// The binary's evaluator of the hard fixtures (`tests/fixtures/hard`): the same reading and
/// comparison, another truth.
pub fn hard_evaluator() -> &'static Evaluator {
    static HARD: OnceLock<Evaluator> = OnceLock::new();
    HARD.get_or_init(|| Evaluator::new(&hard_fixtures_dir()))
}

impl Evaluator {
    /// An evaluator of the fixtures under `root` (the directory holding their `truth.json`).
    pub fn new(root: &Path) -> Evaluator {
        Evaluator {
            truth: Truth::load_from(root),
            workflow: Workflow::from_yaml(TRADE_YAML).expect("workflows/trade.yaml must load"),
            reader: PageReader::new(read_options(), None),
            done: Mutex::new(HashMap::new()),
        }
    }

    /// The report of `file` (relative to the fixtures' directory), reading it if no test has.
    pub fn report(&self, file: &str) -> Arc<FileReport> {
        let cell = {
            let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
            done.entry(file.to_owned()).or_default().clone()
        };
        cell.get_or_init(|| Arc::new(self.evaluate(self.truth.file(file))))
            .clone()
    }

    /// Reports for `files`, read on two threads (the files of a selection are independent;
    /// a multi-page file's pages are read in parallel by the reader as well).
    pub fn reports(&self, files: &[String]) -> Vec<Arc<FileReport>> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut out: Vec<(usize, Arc<FileReport>)> = std::thread::scope(|s| {
            let work = || {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(f) = files.get(i) else { break };
                    mine.push((i, self.report(f)));
                }
                mine
            };
            let handles: Vec<_> = (0..2).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("an evaluation thread panicked"))
                .collect()
        });
        out.sort_by_key(|(i, _)| *i);
        out.into_iter().map(|(_, r)| r).collect()
    }

    /// Reads `truth`'s file and analyses it — the one place a fixture is read — then compares
    /// what was read with the truth.
    fn evaluate(&self, truth: &TruthFile) -> FileReport {
        let started = Instant::now();
        let bytes = std::fs::read(truth.path())
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", truth.path().display()));
        let sniffed = ironclad_inspect::sniff(&bytes);
        // The product's one reading path (what the worker and `ironclad extract` run): pages,
        // analysis, and the second look at doubtful values.
        let read = match sniffed {
            Some(media) => ironclad_reading::read_document(
                &self.reader,
                ironclad_reading::Document {
                    bytes: &bytes,
                    media,
                    path: None,
                },
                Some(&self.workflow),
                &[],
                None,
            )
            .map_err(|e| format!("{e:?}")),
            None => Err("sniff: not a supported type".to_owned()),
        };
        // Reading includes the analysis and the second look: one clock.
        let read_ms = started.elapsed().as_millis() as u64;
        let analyze_ms = 0;
        let (pages, analysis, error) = match read {
            Ok(reading) => (reading.pages, reading.analysis, None),
            Err(e) => (Vec::new(), None, Some(e)),
        };
        let mut report = compare(
            truth,
            &self.truth.field_catalog,
            &self.workflow,
            sniffed.map(|m| m.as_str().to_owned()),
            &pages,
            analysis.as_ref(),
            error,
            read_ms,
            analyze_ms,
        );
        if let Some(twin) = self.text_twin(truth) {
            judge_missing_by_twin(&mut report, &self.report(&twin.file), truth, &pages);
        }
        report
    }

    /// The text PDF a scan was made from (same set, same documents in the same order).
    fn text_twin(&self, scan: &TruthFile) -> Option<&TruthFile> {
        if !scan.is_scan() {
            return None;
        }
        let types = |f: &TruthFile| -> Vec<String> {
            f.documents.iter().map(|d| d.doc_type.clone()).collect()
        };
        self.truth
            .files
            .iter()
            .find(|f| !f.is_scan() && f.set == scan.set && types(f) == types(scan))
    }
}

/// Re-judges the scan's missing fields at their labelled spot. Nothing was chosen, so the
/// labelled line is not known from the scan; its text twin says where the workflow took the
/// value (`found_line`), and the scan's read line closest to that one is where the label is.
/// Judging the whole text instead would call a value misread at its label but clean in a
/// footer a pattern gap.
fn judge_missing_by_twin(
    report: &mut FileReport,
    twin: &FileReport,
    truth: &TruthFile,
    pages: &[PageText],
) {
    for f in report.fields.iter_mut() {
        if f.status != Status::Missing
            || !matches!(
                f.diagnosis,
                Some(Diagnosis::OcrSlip | Diagnosis::PatternGap)
            )
        {
            continue;
        }
        let reference = twin
            .fields
            .iter()
            .find(|t| t.doc_type == f.doc_type && t.field == f.field)
            .and_then(|t| t.found_line.as_deref());
        let Some(reference) = reference else { continue };
        let Some(doc) = truth.documents.iter().find(|d| d.doc_type == f.doc_type) else {
            continue;
        };
        let text = document_text(pages, doc);
        // The line holding the stretch of words closest to the reference line: OCR may have
        // run two columns into one line, or split one.
        let Some(line) = text.lines().min_by_key(|l| nearest_span(l, reference).1) else {
            continue;
        };
        let printed = f.printed.clone().unwrap_or_else(|| f.expected.to_string());
        let (nearest, distance, context) = nearest_span(line, &printed);
        f.diagnosis = Some(if distance == 0 {
            Diagnosis::PatternGap
        } else {
            Diagnosis::OcrSlip
        });
        f.nearest_read = nearest;
        f.context = context;
    }
}

/// What was found for one file, compared with its truth.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub file: String,
    /// `set-01` … or `packet`; a rotation file names its source set (the dossier, for the
    /// hard fixtures).
    pub set: String,
    /// `"text"` or `"scan"`.
    pub kind: String,
    /// The hard fixtures' kind (`photo`, `fax`, `stamp`, `mono`, `stacked`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hard_kind: Option<String>,
    pub media_type: String,
    /// What `ironclad_inspect::sniff` made of the bytes, and whether it is `media_type`.
    pub sniffed: Option<String>,
    pub sniffed_ok: bool,
    /// `jpeg-in-pdf`, `png-gray16`, … for scans.
    pub encoding: Option<String>,
    pub scan_dpi: Option<u32>,
    pub read_ms: u64,
    pub analyze_ms: u64,
    /// The reading error, if the file could not be read at all.
    pub error: Option<String>,
    pub pages: Vec<PageReport>,
    pub segments_expected: Vec<SegmentReport>,
    pub segments_found: Vec<SegmentReport>,
    pub segmentation_ok: bool,
    pub fields: Vec<FieldReport>,
    pub totals: FileTotals,
}

#[derive(Debug, Clone, Serialize)]
pub struct PageReport {
    pub page: u32,
    pub expected_type: Option<String>,
    pub found_type: Option<String>,
    pub classified_ok: bool,
    pub confidence: f64,
    /// Why the page is UNKNOWN, when it is.
    pub reason: Option<String>,
    /// `text_layer` or `ocr`.
    pub method: Option<String>,
    pub ocr_confidence: Option<f32>,
    /// For scans: how the page image was skewed and turned clockwise when it was made, the
    /// turn the truth says makes it upright, and what the reader did.
    pub skew_degrees_cw: Option<f64>,
    pub orientation_cw: Option<u16>,
    pub rotation_expected: Option<u16>,
    pub rotation_found: Option<u16>,
}

impl PageReport {
    pub fn rotation_ok(&self) -> Option<bool> {
        Some(self.rotation_expected? == self.rotation_found?)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentReport {
    pub doc_type: Option<String>,
    pub first_page: u32,
    pub last_page: u32,
}

impl std::fmt::Display for SegmentReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.doc_type.as_deref().unwrap_or("UNKNOWN");
        if self.first_page == self.last_page {
            write!(f, "{t} p{}", self.first_page + 1)
        } else {
            write!(f, "{t} p{}-{}", self.first_page + 1, self.last_page + 1)
        }
    }
}

/// How one truth field came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The chosen value equals the truth.
    Hit,
    /// A value was chosen, and it is wrong.
    Wrong,
    /// Nothing was chosen.
    Missing,
    /// The workflow declares no such field for the document's type (`currency`, the
    /// declaration's `packing_list_number`): not scored.
    NotInWorkflow,
}

/// Why a scored field was missed, judged from the page text the reader produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Diagnosis {
    /// The printed value is not, as printed, on the line it should have been read from: OCR
    /// changed it. That line is the one the wrong value was taken from; for a missing value,
    /// the read line closest to the one the text-PDF twin's value was taken from (or, with no
    /// twin, the whole text).
    OcrSlip,
    /// The printed value is verbatim on that line, but the workflow did not take it (its
    /// pattern, or OCR of the label the pattern anchors on: see `context`).
    PatternGap,
    /// No segment of the document's type covers its pages, so nothing could be extracted.
    Segmentation,
    /// The file could not be read.
    ReadError,
}

#[derive(Debug, Clone, Serialize)]
pub struct FieldReport {
    pub doc_type: String,
    /// The truth's name.
    pub field: String,
    pub status: Status,
    pub expected: serde_json::Value,
    pub printed: Option<String>,
    /// The chosen value (`{"kind", "value"}`), raw text, confidence and page.
    pub found: Option<serde_json::Value>,
    pub raw: Option<String>,
    pub confidence: Option<f64>,
    pub found_page: Option<u32>,
    /// The read line the chosen value was taken from.
    pub found_line: Option<String>,
    /// Whether the extractor flagged a close disagreement between candidates (a wrong value
    /// so flagged goes to review rather than through).
    pub conflict: Option<bool>,
    /// How many candidates the extractor kept.
    pub candidates: usize,
    pub diagnosis: Option<Diagnosis>,
    /// For a miss: the stretch of read text closest to what was printed, and its line.
    pub nearest_read: Option<String>,
    pub context: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct FileTotals {
    pub pages: u32,
    pub pages_classified_ok: u32,
    /// Truth fields the workflow declares (scored).
    pub fields_scored: u32,
    pub fields_hit: u32,
    /// Truth fields the workflow does not declare (not scored).
    pub fields_not_in_workflow: u32,
    pub rotation_pages: u32,
    pub rotation_ok: u32,
}

#[allow(clippy::too_many_arguments)]
fn compare(
    truth: &TruthFile,
    catalog: &[String],
    workflow: &Workflow,
    sniffed: Option<String>,
    pages: &[PageText],
    analysis: Option<&Analysis>,
    error: Option<String>,
    read_ms: u64,
    analyze_ms: u64,
) -> FileReport {
    let mut totals = FileTotals::default();
    let page_reports: Vec<PageReport> = (0..truth.pages)
        .map(|i| {
            let expected_type = truth.doc_type_of_page(i).map(str::to_owned);
            let class = analysis.and_then(|a| a.pages.get(i as usize));
            let read = pages.get(i as usize);
            let found_type = class.and_then(|c| c.doc_type.clone());
            let classified_ok = class.is_some() && found_type == expected_type;
            let rotation_expected = truth.upright_rotation(i);
            let scan_page = truth
                .scan
                .as_ref()
                .and_then(|s| s.page_info.get(i as usize));
            let rotation_found = read.map(|p| p.rotation);
            totals.pages += 1;
            totals.pages_classified_ok += u32::from(classified_ok);
            if let (Some(e), Some(f)) = (rotation_expected, rotation_found) {
                totals.rotation_pages += 1;
                totals.rotation_ok += u32::from(e == f);
            }
            PageReport {
                page: i,
                expected_type,
                found_type,
                classified_ok,
                confidence: class.map_or(0.0, |c| c.confidence),
                reason: class.and_then(|c| c.reason.clone()),
                method: read.map(|p| {
                    serde_json::to_value(p.method)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_else(|| format!("{:?}", p.method))
                }),
                ocr_confidence: read.map(|p| p.confidence),
                skew_degrees_cw: scan_page.map(|s| s.skew_degrees_cw),
                orientation_cw: scan_page.map(|s| s.orientation_cw),
                rotation_expected,
                rotation_found: rotation_expected.and(rotation_found),
            }
        })
        .collect();

    let segments_expected: Vec<SegmentReport> = truth
        .documents
        .iter()
        .map(|d| SegmentReport {
            doc_type: Some(d.doc_type.clone()),
            first_page: d.first_page,
            last_page: d.last_page,
        })
        .collect();
    let segments_found: Vec<SegmentReport> = analysis
        .map(|a| {
            a.segments
                .iter()
                .map(|s| SegmentReport {
                    doc_type: s.segment.doc_type.clone(),
                    first_page: s.segment.pages.first().copied().unwrap_or(0),
                    last_page: s.segment.pages.last().copied().unwrap_or(0),
                })
                .collect()
        })
        .unwrap_or_default();
    let segmentation_ok = analysis.is_some() && segments_found == segments_expected;

    let mut fields = Vec::new();
    for doc in &truth.documents {
        let text = document_text(pages, doc);
        if let Some(stray) = doc.fields.keys().find(|k| !catalog.contains(k)) {
            panic!(
                "{}: truth field {stray} is not in the field catalogue",
                truth.file
            );
        }
        // Catalogue order, so every report lists fields the same way.
        let in_order = catalog
            .iter()
            .filter_map(|name| Some((name, doc.fields.get(name)?)));
        for (name, value) in in_order {
            let report = compare_field(workflow, analysis, pages, doc, name, value, &text, &error);
            match report.status {
                Status::NotInWorkflow => totals.fields_not_in_workflow += 1,
                Status::Hit => {
                    totals.fields_scored += 1;
                    totals.fields_hit += 1;
                }
                Status::Wrong | Status::Missing => totals.fields_scored += 1,
            }
            fields.push(report);
        }
    }

    FileReport {
        file: truth.file.clone(),
        set: truth.set.clone(),
        kind: truth.kind.clone(),
        hard_kind: truth.hard_kind.clone(),
        media_type: truth.media_type.clone(),
        sniffed_ok: sniffed.as_deref() == Some(truth.media().as_str()),
        sniffed,
        encoding: truth.scan.as_ref().map(|s| s.encoding.clone()),
        scan_dpi: truth.scan.as_ref().map(|s| s.dpi),
        read_ms,
        analyze_ms,
        error,
        pages: page_reports,
        segments_expected,
        segments_found,
        segmentation_ok,
        fields,
        totals,
    }
}

/// The read text of a document's pages, one line per read line.
fn document_text(pages: &[PageText], doc: &TruthDocument) -> String {
    pages
        .iter()
        .filter(|p| doc.pages().contains(&p.index))
        .map(|p| p.text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[allow(clippy::too_many_arguments)]
fn compare_field(
    workflow: &Workflow,
    analysis: Option<&Analysis>,
    pages: &[PageText],
    doc: &TruthDocument,
    name: &str,
    value: &serde_json::Value,
    text: &str,
    error: &Option<String>,
) -> FieldReport {
    let wf_name = workflow_field(name);
    let printed = doc.printed.get(name).map(|p| match p {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let mut report = FieldReport {
        doc_type: doc.doc_type.clone(),
        field: name.to_owned(),
        status: Status::Missing,
        expected: value.clone(),
        printed: printed.clone(),
        found: None,
        raw: None,
        confidence: None,
        found_page: None,
        found_line: None,
        conflict: None,
        candidates: 0,
        diagnosis: None,
        nearest_read: None,
        context: None,
    };
    let declared = workflow
        .document_type(&doc.doc_type)
        .is_some_and(|t| t.fields.iter().any(|f| f.name == wf_name));
    if !declared {
        report.status = Status::NotInWorkflow;
        return report;
    }
    let expected = match Expected::from_truth(name, value) {
        Ok(e) => e,
        Err(e) => panic!("truth.json: {e}"),
    };
    let Some(analysis) = analysis else {
        report.diagnosis = Some(Diagnosis::ReadError);
        report.context = error.clone();
        return report;
    };
    // The segment of this document: of its type, starting on its first page (a wrong split
    // that still starts there keeps its fields comparable; one that does not, loses them).
    let segment = analysis.segments.iter().find(|s| {
        s.segment.doc_type.as_deref() == Some(doc.doc_type.as_str())
            && s.segment.pages.first() == Some(&doc.first_page)
    });
    let Some(segment) = segment else {
        report.diagnosis = Some(Diagnosis::Segmentation);
        return report;
    };
    let fact = segment.facts.iter().find(|f| f.field == wf_name);
    report.conflict = fact.map(|f| f.conflict);
    report.candidates = fact.map_or(0, |f| f.candidates.len());
    let chosen = fact.and_then(|f| f.chosen.as_ref());
    if let Some(c) = chosen {
        report.found_line = pages
            .iter()
            .find(|p| p.index == c.page)
            .and_then(|p| line_at(p, c.bbox));
        report.found = serde_json::to_value(&c.value).ok();
        report.raw = Some(c.raw.clone());
        report.confidence = Some(c.confidence);
        report.found_page = Some(c.page);
        report.status = if expected.matches(&c.value) {
            Status::Hit
        } else {
            Status::Wrong
        };
    }
    if report.status != Status::Hit {
        let printed = printed.unwrap_or_else(|| value.to_string());
        // Where a value was chosen, judge the line it was read from: the printed value may
        // well be clean elsewhere (a footer) while the labelled spot was misread.
        let scope = report.found_line.as_deref().unwrap_or(text);
        let (nearest, distance, line) = nearest_span(scope, &printed);
        report.diagnosis = Some(if distance == 0 {
            Diagnosis::PatternGap
        } else {
            Diagnosis::OcrSlip
        });
        report.nearest_read = nearest;
        report.context = line;
    }
    report
}

/// The read line of the first word whose centre lies in `bbox` (a candidate's box).
fn line_at(page: &PageText, bbox: BBox) -> Option<String> {
    let inside = |b: BBox| {
        let (x, y) = ((b.x0 + b.x1) / 2.0, (b.y0 + b.y1) / 2.0);
        bbox.x0 <= x && x <= bbox.x1 && bbox.y0 <= y && y <= bbox.y1
    };
    let line = page.words.iter().find(|w| inside(w.bbox))?.line;
    let words: Vec<&str> = page
        .words
        .iter()
        .filter(|w| w.line == line)
        .map(|w| w.text.as_str())
        .collect();
    Some(words.join(" "))
}

/// The run of whitespace-separated words in `text` closest (by edit distance) to `printed`,
/// its distance, and the line it is on. Runs have as many words as `printed`, or one fewer
/// or more (OCR splits and joins words), and never cross a line.
fn nearest_span(text: &str, printed: &str) -> (Option<String>, usize, Option<String>) {
    let want: String = printed.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = want.split(' ').count();
    let mut best: Option<(usize, String, &str)> = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for len in n.saturating_sub(1).max(1)..=n + 1 {
            for start in 0..words.len().saturating_sub(len - 1) {
                let span = words[start..start + len].join(" ");
                let d = levenshtein(&span, &want);
                if best.as_ref().is_none_or(|(bd, ..)| d < *bd) {
                    best = Some((d, span, line));
                }
            }
        }
    }
    match best {
        Some((d, span, line)) => (Some(span), d, Some(line.trim().to_owned())),
        None => (None, usize::MAX, None),
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_span_tells_a_clean_value_from_a_misread_one() {
        let text = "Invoice No.: 2024.746.1053.\nTotal packages: 31\nB/L No.: COSU1 248198616";
        assert_eq!(nearest_span(text, "31").1, 0);
        let (span, d, line) = nearest_span(text, "2024.746.1053");
        assert_eq!((span.as_deref(), d), (Some("2024.746.1053."), 1));
        assert_eq!(line.as_deref(), Some("Invoice No.: 2024.746.1053."));
        let (span, d, _) = nearest_span(text, "COSU1248198616");
        assert_eq!((span.as_deref(), d), (Some("COSU1 248198616"), 1));
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}
