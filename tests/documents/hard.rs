//! Reading accuracy on the hard fixtures (`tests/fixtures/hard/`, written by
//! `scripts/gen-hard-fixtures`): phone photos, faxes, stamped scans, documents in a monospaced
//! font, stacked-caption forms. The same evaluator as the generated fixtures' (one reading
//! function, [`crate::evaluate::Evaluator`]), another truth; the report is per kind.
//!
//! * Default: a bounded subset for CI, every file of the first dossier of each kind
//!   (`<kind>-01`, the mixed dossier included).
//! * `IRONCLAD_FULL_ACCURACY=1`: every file.
//! * `IRONCLAD_HARD=photo,fax` (kinds), `IRONCLAD_HARD=stamp-03,dossiers/mono-` (dossier or path
//!   prefixes), `IRONCLAD_HARD=all`: a selection. With `IRONCLAD_HARD` set, `accuracy_report`
//!   prints the per-kind table of the selection too.
//!
//! ```sh
//! cargo test --test documents hard_accuracy_report -- --nocapture
//! IRONCLAD_FULL_ACCURACY=1 cargo test --test documents hard_accuracy_report -- --nocapture
//! IRONCLAD_HARD=photo,fax cargo test --test documents hard_accuracy_report -- --nocapture
//! ```
//!
//! The per-kind figures are written to `target/accuracy-hard.json` (or
//! `$CARGO_TARGET_DIR/accuracy-hard.json`).

use crate::evaluate::hard_evaluator;
use crate::report::HardReport;
use std::sync::OnceLock;
use std::time::Instant;

/// The kinds of hard fixture, in report order (a file's `hard_kind`).
pub const HARD_KINDS: [&str; 5] = ["photo", "fax", "stamp", "mono", "stacked"];

// Floors: the least share of fields read right and of pages typed right, per kind, over the
// files read (subset or full set): the lesser of the subset's and the full set's figures as
// last measured, rounded down to a percent (the figures are in tests/fixtures/README.md);
// raise them as the reading improves. The reading is deterministic (the second look's budget
// is processor time, not the clock's), so a busy CI host measures what an idle one does.
// The targets of issue 24: 95 % on photos and on faxes, 97 % overall, every page typed;
// faxes and stamped scans are still short of them.

/// Phone photos: fields read right.
const PHOTO_MIN_FIELD_ACCURACY: f64 = 0.98;
/// Phone photos: pages typed right.
const PHOTO_MIN_PAGES_TYPED: f64 = 1.0;
/// Faxes: fields read right.
const FAX_MIN_FIELD_ACCURACY: f64 = 0.93;
/// Faxes: pages typed right.
const FAX_MIN_PAGES_TYPED: f64 = 1.0;
/// Stamped scans: fields read right.
const STAMP_MIN_FIELD_ACCURACY: f64 = 0.96;
/// Stamped scans: pages typed right.
const STAMP_MIN_PAGES_TYPED: f64 = 1.0;
/// Monospaced documents: fields read right.
const MONO_MIN_FIELD_ACCURACY: f64 = 0.89;
/// Monospaced documents: pages typed right.
const MONO_MIN_PAGES_TYPED: f64 = 1.0;
/// Stacked-caption forms (text PDFs and scans): fields read right.
const STACKED_MIN_FIELD_ACCURACY: f64 = 0.99;
/// Stacked-caption forms: pages typed right.
const STACKED_MIN_PAGES_TYPED: f64 = 1.0;

/// (kind, least field accuracy, least share of pages typed right).
const FLOORS: [(&str, f64, f64); 5] = [
    ("photo", PHOTO_MIN_FIELD_ACCURACY, PHOTO_MIN_PAGES_TYPED),
    ("fax", FAX_MIN_FIELD_ACCURACY, FAX_MIN_PAGES_TYPED),
    ("stamp", STAMP_MIN_FIELD_ACCURACY, STAMP_MIN_PAGES_TYPED),
    ("mono", MONO_MIN_FIELD_ACCURACY, MONO_MIN_PAGES_TYPED),
    (
        "stacked",
        STACKED_MIN_FIELD_ACCURACY,
        STACKED_MIN_PAGES_TYPED,
    ),
];

/// Whether `accuracy_report` was asked for the hard set too (`IRONCLAD_HARD` set).
pub fn asked() -> bool {
    std::env::var("IRONCLAD_HARD").is_ok_and(|v| !v.is_empty())
}

/// The hard files in scope and how they were chosen: `IRONCLAD_HARD`'s selection, every file
/// with `IRONCLAD_FULL_ACCURACY=1`, else the first dossier of each kind.
pub fn selection() -> (Vec<String>, String) {
    let ev = hard_evaluator();
    let files = ev.truth.files.iter();
    if let Some(items) = std::env::var("IRONCLAD_HARD")
        .ok()
        .filter(|v| !v.is_empty() && v != "all")
    {
        let wanted: Vec<&str> = items.split(',').map(str::trim).collect();
        let chosen: Vec<String> = files
            .filter(|f| {
                wanted.iter().any(|w| {
                    f.hard_kind.as_deref() == Some(*w)
                        || f.set.starts_with(w)
                        || f.file.starts_with(w)
                })
            })
            .map(|f| f.file.clone())
            .collect();
        assert!(
            !chosen.is_empty(),
            "IRONCLAD_HARD={items} selects no file (kinds: {HARD_KINDS:?}, or dossier/path prefixes)"
        );
        return (chosen, format!("selected: {items}"));
    }
    if crate::full_accuracy() || std::env::var("IRONCLAD_HARD").is_ok_and(|v| v == "all") {
        return (files.map(|f| f.file.clone()).collect(), "full".into());
    }
    let subset: Vec<String> = files
        .filter(|f| f.set.ends_with("-01"))
        .map(|f| f.file.clone())
        .collect();
    (subset, "subset: the -01 dossier of each kind".into())
}

/// The report of the selection, read once per test binary (the files themselves are memoized
/// by the evaluator too).
pub fn report() -> &'static HardReport {
    static REPORT: OnceLock<HardReport> = OnceLock::new();
    REPORT.get_or_init(|| {
        let started = Instant::now();
        let (files, scope) = selection();
        let ev = hard_evaluator();
        let reports = ev.reports(&files);
        HardReport::new(ev, &reports, scope, started.elapsed().as_millis() as u64)
    })
}

#[test]
fn hard_accuracy_report() {
    let report = report();
    println!("{}", report.render());
    let path = report
        .write_json()
        .expect("could not write target/accuracy-hard.json");
    println!("hard accuracy report written to {}", path.display());
    let unread = crate::report::unread(&report.files);
    assert!(unread.is_empty(), "hard files not read: {unread:#?}");
    let mut below = Vec::new();
    for (kind, fields, typed) in FLOORS {
        let Some(s) = report.kind(kind) else { continue };
        if s.field_accuracy < fields {
            below.push(format!(
                "{kind}: fields {}/{} = {:.1} % < {:.1} %",
                s.fields_hit,
                s.fields_scored,
                100.0 * s.field_accuracy,
                100.0 * fields
            ));
        }
        if s.classification_accuracy < typed {
            below.push(format!(
                "{kind}: pages typed {}/{} = {:.1} % < {:.1} %",
                s.pages_classified_ok,
                s.pages,
                100.0 * s.classification_accuracy,
                100.0 * typed
            ));
        }
    }
    assert!(
        below.is_empty(),
        "hard fixtures below their floors ({}): {below:#?}",
        report.scope
    );
}
