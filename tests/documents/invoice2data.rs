//! invoice2data's own compare cases through the product: `ironclad extract --templates` reads
//! each PDF as a user's upload is read (text layer, or OCR) and applies the template library to
//! the pages' layout text. The expected JSON is what invoice2data gives with its default reader
//! (`pdftotext -layout`). The corpus lives beside the repository (`shared/corpus/invoice2data`,
//! or `IRONCLAD_I2D_CORPUS`); without it the test says so and passes.

use std::process::Command;

use serde_json::Value;

#[path = "../../crates/extract/tests/support/compare.rs"]
pub(crate) mod compare;

#[test]
fn invoice2data_compare_cases_through_ironclad_extract() {
    let Some(corpus) = compare::corpus() else {
        return;
    };
    let mut verdicts = Vec::new();
    for case in compare::PASSING_THROUGH_THE_PRODUCT {
        let pdf = corpus.join("compare").join(format!("{case}.pdf"));
        let out = Command::new(env!("CARGO_BIN_EXE_ironclad"))
            .args(["extract", "--json", "--templates"])
            .arg(corpus.join("templates"))
            .arg(&pdf)
            .output()
            .expect("ironclad runs");
        assert!(
            out.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(pdf.with_extension("json")).expect("expectation"),
        )
        .expect("JSON");
        let expected = expected.get(0).cloned().unwrap_or(expected);
        let got = &report["invoice2data"];
        let mut diffs = Vec::new();
        if got.is_null() {
            diffs.push("no template matched".to_owned());
        } else {
            compare::differences(&expected, &got["fields"], "", &mut diffs);
        }
        verdicts.push((case, diffs));
    }
    let failed: Vec<String> = verdicts
        .iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|(case, d)| format!("{case}: {}", d.join("; ")))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}
