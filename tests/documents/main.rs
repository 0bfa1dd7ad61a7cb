//! End-to-end reading accuracy on the generated trade documents
//! (`tests/fixtures/generated/`, see `tests/fixtures/README.md`), and hostile inputs through
//! the same reading path.
//!
//! Every file goes through what the product does with an upload: `ironclad_inspect::sniff`,
//! `ironclad_ocr::PageReader` (English + French, default options: 300 DPI) and
//! `ironclad_extract::analyze` with `workflows/trade.yaml`. Each page's type, the split into
//! documents and every field of `truth.json` are compared with what was read.
//!
//! * `accuracy_report` prints the per-file report and totals (`--nocapture`) and writes them
//!   to `target/accuracy.json` (or `$CARGO_TARGET_DIR/accuracy.json`) for the benchmark.
//! * Scans are OCRed (~1 s a page at 300 DPI), so by default only a subset is read:
//!   [`SCAN_SUBSET`]. `IRONCLAD_FULL_ACCURACY=1` reads every scan instead, and
//!   `IRONCLAD_SCANS=forms/,set-02/` the scans whose path starts with one of the prefixes.
//! * Files are read once per run whichever tests ask for them (see `evaluate`).
//! * The hard fixtures (`tests/fixtures/hard/`: photos, faxes, stamps, monospaced and stacked
//!   forms) have their own per-kind report, `hard_accuracy_report` (see `hard`);
//!   `accuracy_report` prints its per-kind table too when `IRONCLAD_HARD` is set.
//!
//! ```sh
//! cargo test --test documents -- --nocapture                          # default subset
//! IRONCLAD_FULL_ACCURACY=1 cargo test --test documents -- --nocapture # every scan
//! IRONCLAD_SCANS=forms/ cargo test --test documents -- --nocapture     # the forms' scans
//! IRONCLAD_HARD=photo,fax cargo test --test documents -- --nocapture  # + the hard photos, faxes
//! ```

mod cli_extract;
mod control_glyphs;
mod evaluate;
mod hard;
mod hostile;
mod invoice2data;
mod report;
mod truth;

use evaluate::{evaluator, FileReport, Status};
use report::{Report, Summary};
use std::sync::Arc;
use std::time::Instant;

// Tesseract is 5–6× slower unless OMP_THREAD_LIMIT=1 is set before libgomp loads, and a test
// binary's `main` belongs to the harness: an ELF constructor re-executes the binary with the
// variable set before anything runs (as crates/ocr/tests do).
#[used]
#[link_section = ".init_array"]
static REEXEC_WITH_OMP_THREAD_LIMIT: extern "C" fn() = {
    extern "C" fn reexec() {
        ironclad_ocr::ensure_omp_thread_limit();
    }
    reexec
};

/// The scans read by default: one whole set (set 1: the 300-DPI page and the bilingual French
/// declaration), one file of each image format (gray-16 PNG, JPEG, 2-page 4-bit TIFF), both
/// rotated pages, and the scanned packet. 15 pages.
pub const SCAN_SUBSET: &[&str] = &[
    "set-01/bill-of-lading.scan.pdf",
    "set-01/commercial-invoice.scan.pdf",
    "set-01/packing-list.scan.pdf",
    "set-01/customs-declaration.scan.pdf",
    "set-01/bill-of-lading.png",
    "set-03/packing-list.jpg",
    "set-02/commercial-invoice.tiff",
    "rotation/packing-list.rot90.scan.pdf",
    "rotation/bill-of-lading.rot180.scan.pdf",
    "packet/packet.scan.pdf",
];

/// Least field accuracy accepted on text PDFs.
const TEXT_MIN_FIELD_ACCURACY: f64 = 0.99;
/// Least field accuracy accepted on scans: 99.0 % measured on the full set's `set-*` scans
/// (195/197) and 100 % on the default subset (85/85), with the second look.
const SCAN_MIN_FIELD_ACCURACY: f64 = 0.98;
/// Least field accuracy accepted on the scans of `forms/` (stacked forms and bordered tables,
/// each scan degraded its own way): a guard against regressions at 95 % measured (40/42; 86 %
/// before the second look), short of the 98 % wanted (see the README's reading figures).
const FORMS_SCAN_MIN_FIELD_ACCURACY: f64 = 0.95;

fn full_accuracy() -> bool {
    std::env::var("IRONCLAD_FULL_ACCURACY").is_ok_and(|v| v == "1")
}

fn text_files() -> Vec<String> {
    let ev = evaluator();
    ev.truth
        .files
        .iter()
        .filter(|f| !f.is_scan())
        .map(|f| f.file.clone())
        .collect()
}

/// The scans in scope: every scan with `IRONCLAD_FULL_ACCURACY=1`, those under the prefixes
/// of `IRONCLAD_SCANS`, else [`SCAN_SUBSET`].
fn scan_files() -> (Vec<String>, &'static str) {
    let ev = evaluator();
    if let Some(prefixes) = std::env::var("IRONCLAD_SCANS")
        .ok()
        .filter(|v| !v.is_empty())
    {
        let chosen: Vec<String> = ev
            .truth
            .files
            .iter()
            .filter(|f| f.is_scan() && prefixes.split(',').any(|p| f.file.starts_with(p)))
            .map(|f| f.file.clone())
            .collect();
        assert!(
            !chosen.is_empty(),
            "IRONCLAD_SCANS={prefixes} selects no scan"
        );
        return (chosen, "selected");
    }
    if full_accuracy() {
        let all = ev.truth.files.iter().filter(|f| f.is_scan());
        (all.map(|f| f.file.clone()).collect(), "full")
    } else {
        for f in SCAN_SUBSET {
            assert!(ev.truth.file(f).is_scan(), "{f} is not a scan");
        }
        (
            SCAN_SUBSET.iter().map(|f| f.to_string()).collect(),
            "subset",
        )
    }
}

/// Every missed field of `reports`, one line each.
fn misses(reports: &[Arc<FileReport>]) -> Vec<String> {
    reports
        .iter()
        .flat_map(|r| {
            r.fields
                .iter()
                .filter(|f| matches!(f.status, Status::Wrong | Status::Missing))
                .map(move |f| {
                    format!(
                        "{} [{}] {}: expected {}, got {:?} ({:?})",
                        r.file, f.doc_type, f.field, f.expected, f.raw, f.diagnosis
                    )
                })
        })
        .collect()
}

#[test]
fn accuracy_report() {
    let started = Instant::now();
    let (scans, scope) = scan_files();
    let mut files = text_files();
    files.extend(scans);
    let reports = evaluator().reports(&files);
    let report = Report::new(&reports, scope, started.elapsed().as_millis() as u64);
    println!("{}", report.render());
    let path = report
        .write_json()
        .expect("could not write target/accuracy.json");
    println!("accuracy report written to {}", path.display());
    let unread = report::unread(reports.iter().map(|r| &**r));
    if hard::asked() {
        print!("{}", hard::report().render_kinds());
    }
    assert!(unread.is_empty(), "files not read: {unread:#?}");
}

#[test]
fn text_pdfs_are_read_exactly() {
    let reports = evaluator().reports(&text_files());
    let s = Summary::of(reports.iter().map(|r| &**r));
    println!(
        "text PDFs: {} files, pages classified {}/{}, fields {}/{} ({} not in the workflow)",
        s.files,
        s.pages_classified_ok,
        s.pages,
        s.fields_hit,
        s.fields_scored,
        s.fields_not_in_workflow
    );
    assert!(s.files >= 25, "only {} text PDFs in truth.json", s.files);
    for r in &reports {
        assert_eq!(r.error, None, "{}", r.file);
        assert!(r.sniffed_ok, "{}: sniffed as {:?}", r.file, r.sniffed);
        for p in &r.pages {
            assert_eq!(
                p.method.as_deref(),
                Some("text_layer"),
                "{} page {} was not read from its text layer",
                r.file,
                p.page + 1
            );
        }
    }
    let misclassified: Vec<_> = reports
        .iter()
        .flat_map(|r| {
            r.pages.iter().filter(|p| !p.classified_ok).map(move |p| {
                format!(
                    "{} page {}: expected {:?}, found {:?} ({:?})",
                    r.file,
                    p.page + 1,
                    p.expected_type,
                    p.found_type,
                    p.reason
                )
            })
        })
        .collect();
    assert!(
        misclassified.is_empty(),
        "text PDFs must be classified exactly: {misclassified:#?}"
    );
    let bad_split: Vec<_> = reports
        .iter()
        .filter(|r| !r.segmentation_ok)
        .map(|r| &r.file)
        .collect();
    assert!(bad_split.is_empty(), "segmentation wrong: {bad_split:?}");
    assert!(
        s.field_accuracy >= TEXT_MIN_FIELD_ACCURACY,
        "text PDF field accuracy {:.2} % < {} %: {:#?}",
        100.0 * s.field_accuracy,
        100.0 * TEXT_MIN_FIELD_ACCURACY,
        misses(&reports)
    );
}

#[test]
fn scans_are_read_accurately() {
    let (files, scope) = scan_files();
    let reports = evaluator().reports(&files);
    let s = Summary::of(reports.iter().map(|r| &**r));
    println!(
        "scans ({scope}): {} files, {} pages, pages classified {}/{}, fields {}/{} = {:.1} %, \
         rotation {}/{}, OCR {:.1} s",
        s.files,
        s.pages,
        s.pages_classified_ok,
        s.pages,
        s.fields_hit,
        s.fields_scored,
        100.0 * s.field_accuracy,
        s.rotation_ok,
        s.rotation_pages,
        s.read_ms as f64 / 1000.0
    );
    for m in misses(&reports) {
        println!("  miss: {m}");
    }
    for r in &reports {
        assert_eq!(r.error, None, "{}", r.file);
        assert!(r.sniffed_ok, "{}: sniffed as {:?}", r.file, r.sniffed);
        assert!(
            r.pages.iter().all(|p| p.method.as_deref() == Some("ocr")),
            "{}: a scan page was not OCRed",
            r.file
        );
    }
    // The rotated fixtures: the reader must say how it turned them (90° clockwise on the
    // page means a 270° turn back; upside down, 180°), and read them as their type.
    let ev = evaluator();
    for file in [
        "rotation/packing-list.rot90.scan.pdf",
        "rotation/bill-of-lading.rot180.scan.pdf",
    ] {
        let truth = ev.truth.file(file);
        let r = reports
            .iter()
            .find(|r| r.file == file)
            .expect("the rotated pages are in every scan selection");
        for p in &r.pages {
            assert_eq!(
                p.rotation_found,
                truth.upright_rotation(p.page),
                "{file} page {}: rotation",
                p.page + 1
            );
            assert_ne!(
                p.rotation_found,
                Some(0),
                "{file}: test needs a turned page"
            );
            assert!(p.classified_ok, "{file} page {}: {p:?}", p.page + 1);
        }
    }
    let wrong_rotation: Vec<_> = reports
        .iter()
        .flat_map(|r| {
            r.pages
                .iter()
                .filter(|p| p.rotation_ok() == Some(false))
                .map(move |p| format!("{} page {}: {p:?}", r.file, p.page + 1))
        })
        .collect();
    assert!(
        wrong_rotation.is_empty(),
        "pages turned wrongly: {wrong_rotation:#?}"
    );
    let misclassified: Vec<_> = reports
        .iter()
        .flat_map(|r| {
            r.pages
                .iter()
                .filter(|p| !p.classified_ok)
                .map(move |p| format!("{} page {}: {p:?}", r.file, p.page + 1))
        })
        .collect();
    assert!(
        misclassified.is_empty(),
        "scan pages misclassified: {misclassified:#?}"
    );
    // The degraded forms (speckle, a photo at an angle, JPEG at quality 15…) have their own,
    // lower floor until the issue that added them is done; the established sets keep theirs.
    let (forms, sets): (Vec<_>, Vec<_>) =
        reports.iter().partition(|r| r.file.starts_with("forms/"));
    for (name, reports, floor) in [
        ("sets", sets, SCAN_MIN_FIELD_ACCURACY),
        ("forms", forms, FORMS_SCAN_MIN_FIELD_ACCURACY),
    ] {
        if reports.is_empty() {
            continue;
        }
        let s = Summary::of(reports.iter().map(|r| &***r));
        let owned: Vec<Arc<FileReport>> = reports.into_iter().cloned().collect();
        assert!(
            s.field_accuracy >= floor,
            "scan field accuracy ({scope}, {name}) {:.2} % < {} %: {:#?}",
            100.0 * s.field_accuracy,
            100.0 * floor,
            misses(&owned)
        );
    }
}

#[test]
fn packet_is_split() {
    let ev = evaluator();
    let files = ["packet/packet.pdf", "packet/packet.scan.pdf"].map(String::from);
    for r in ev.reports(&files) {
        let truth = ev.truth.file(&r.file);
        assert_eq!(r.error, None, "{}", r.file);
        let found: Vec<String> = r.segments_found.iter().map(|s| s.to_string()).collect();
        println!("{}: {}", r.file, found.join(", "));
        // The generator's packet: invoice pp. 1–2, packing list p. 3, B/L p. 4, declaration p. 5.
        assert_eq!(truth.documents.len(), 4, "{}: truth changed", r.file);
        assert_eq!(
            found,
            [
                "commercial_invoice p1-2",
                "packing_list p3",
                "bill_of_lading p4",
                "customs_declaration p5"
            ],
            "{}",
            r.file
        );
        assert!(r.segmentation_ok, "{}: {:?}", r.file, r.segments_found);
    }
}
