//! `ironclad extract`, the real binary: several files read at once, reported in the order
//! given, each failure named with its file and the others still read.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

#[test]
fn extract_reports_every_file_in_order_and_names_the_failures() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated");
    let files = [
        fixtures.join("set-01/commercial-invoice.scan.pdf"),
        fixtures.join("set-02/does-not-exist.pdf"),
        fixtures.join("set-02/packing-list.pdf"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"),
        fixtures.join("set-02/bill-of-lading.pdf"),
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_ironclad"))
        .arg("extract")
        .arg("--json")
        .args(&files)
        .output()
        .expect("ironclad runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a failed file makes exit 2\n{stderr}"
    );
    let reported: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let names: Vec<&str> = reported
        .iter()
        .map(|r| r["file"].as_str().unwrap_or(""))
        .collect();
    let expected: Vec<String> = [&files[0], &files[2], &files[4]]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(names, expected, "readable files, in the order given");
    let doc_type = |r: &Value| r["analysis"]["segments"][0]["segment"]["doc_type"].clone();
    assert_eq!(doc_type(&reported[0]), "commercial_invoice");
    assert_eq!(reported[0]["pages"][0]["method"], "ocr");
    assert_eq!(doc_type(&reported[1]), "packing_list");
    assert_eq!(reported[1]["pages"][0]["method"], "text_layer");
    assert_eq!(doc_type(&reported[2]), "bill_of_lading");
    assert!(
        stderr.contains("does-not-exist.pdf: cannot read it"),
        "{stderr}"
    );
    assert!(
        stderr.contains("README.md: not a PDF, PNG, JPEG or TIFF"),
        "{stderr}"
    );
}

#[test]
fn extract_reads_a_pipe() {
    // /dev/stdin can be read once only: poppler must get the bytes, not the path.
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/generated/set-02/packing-list.pdf");
    let out = Command::new(env!("CARGO_BIN_EXE_ironclad"))
        .args(["extract", "--json", "/dev/stdin"])
        .stdin(std::fs::File::open(&file).expect("fixture"))
        .output()
        .expect("ironclad runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        report["analysis"]["segments"][0]["segment"]["doc_type"],
        "packing_list"
    );
}
