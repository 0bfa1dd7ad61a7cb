//! invoice2data's corpus and what its output and ours must agree on; shared by the
//! template-engine tests here and the product-path tests of `ironclad extract`
//! (`tests/documents/invoice2data.rs`).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The compare cases the product gets right, of the eight invoice2data passes, by `ironclad
/// extract --templates` and through the pipeline alike: all of them. `AmazonWebServices` came
/// last: its line items need exactly four leading spaces, which only poppler's block-by-block
/// placing of columns gives.
#[allow(dead_code)] // not every test binary that includes this file uses it
pub const PASSING_THROUGH_THE_PRODUCT: &[&str] = &[
    "AmazonWebServices",
    "FlipkartInvoice",
    "NetpresseInvoice",
    "QualityHosting",
    "SammyMaystoneLinesTest",
    "coolblue1",
    "free_fiber",
    "oyo",
];

/// invoice2data's corpus (`shared/corpus/invoice2data` beside the repository, or
/// `IRONCLAD_I2D_CORPUS`); `None`, said on stderr, when absent, so the tests pass on a machine
/// without the shared folder.
pub fn corpus() -> Option<PathBuf> {
    let dir = match std::env::var_os("IRONCLAD_I2D_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|a| a.join("shared/corpus/invoice2data"))
            .find(|d| d.is_dir())
            .unwrap_or_else(|| PathBuf::from("../shared/corpus/invoice2data")),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    eprintln!(
        "invoice2data corpus not found at {}; skipping",
        dir.display()
    );
    None
}

/// Compares our output with invoice2data's: same keys, equal strings, numbers within 1e-6.
pub fn differences(expected: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    match (expected, got) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            if (a - b).abs() > 1e-6 {
                out.push(format!("{path}: expected {a}, got {b}"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => differences(v, w, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}: missing (expected {v})")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{path}.{k}: not expected (got {})", b[k]));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                differences(v, w, &format!("{path}[{i}]"), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: expected {a}, got {b}")),
    }
}
