//! `tests/fixtures/generated/truth.json`, as `scripts/gen-fixtures` writes it (and
//! `tests/fixtures/hard/truth.json`, the same schema from `scripts/gen-hard-fixtures`), and the
//! expected value of each truth field in a form that compares with an extracted
//! [`ironclad_core::parse::Value`].

use ironclad_core::media::MediaType;
use ironclad_core::parse::{Decimal, Value};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The generated fixtures' directory.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated")
}

/// The hard fixtures' directory (phone photos, faxes, stamped, monospaced and stacked-label
/// documents, written by `scripts/gen-hard-fixtures`).
pub fn hard_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hard")
}

/// The whole truth file.
#[derive(Debug, Clone, Deserialize)]
pub struct Truth {
    pub seed: u64,
    pub count: u32,
    pub field_catalog: Vec<String>,
    pub files: Vec<TruthFile>,
}

impl Truth {
    /// Reads `truth.json` from the generated fixtures' directory.
    pub fn load() -> Truth {
        Truth::load_from(&fixtures_dir())
    }

    /// Reads `truth.json` from `dir`, whose files it lists relative to it.
    pub fn load_from(dir: &Path) -> Truth {
        let path = dir.join("truth.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let mut truth: Truth = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()));
        for f in &mut truth.files {
            f.root = dir.to_path_buf();
        }
        truth
    }

    /// The entry for `file` (relative to the fixtures' directory).
    pub fn file(&self, file: &str) -> &TruthFile {
        self.files
            .iter()
            .find(|f| f.file == file)
            .unwrap_or_else(|| panic!("{file} is not in truth.json"))
    }
}

/// One generated file.
#[derive(Debug, Clone, Deserialize)]
pub struct TruthFile {
    /// Relative to the fixtures' directory.
    pub file: String,
    pub media_type: String,
    pub pages: u32,
    pub set: String,
    /// `"text"` (text-layer PDF) or `"scan"` (image only, whatever the container).
    pub kind: String,
    /// The hard fixtures' kind: `photo`, `fax`, `stamp`, `mono` or `stacked` (none in
    /// `generated/`).
    #[serde(default)]
    pub hard_kind: Option<String>,
    /// The directory holding the truth file (set by [`Truth::load_from`]).
    #[serde(skip)]
    pub root: PathBuf,
    #[serde(default)]
    pub scan: Option<ScanInfo>,
    /// In page order, back to back.
    pub documents: Vec<TruthDocument>,
}

impl TruthFile {
    pub fn is_scan(&self) -> bool {
        self.kind == "scan"
    }

    pub fn media(&self) -> MediaType {
        self.media_type
            .parse()
            .unwrap_or_else(|_| panic!("{}: unknown media type {}", self.file, self.media_type))
    }

    pub fn path(&self) -> PathBuf {
        self.root.join(&self.file)
    }

    /// The document type the truth gives page `page` (0-based).
    pub fn doc_type_of_page(&self, page: u32) -> Option<&str> {
        self.documents
            .iter()
            .find(|d| (d.first_page..=d.last_page).contains(&page))
            .map(|d| d.doc_type.as_str())
    }

    /// The clockwise turn that makes page `page` upright (what `PageText::rotation` reports).
    pub fn upright_rotation(&self, page: u32) -> Option<u16> {
        let info = self.scan.as_ref()?.page_info.get(page as usize)?;
        Some(info.upright_rotation_cw)
    }
}

/// How a scan was made.
#[derive(Debug, Clone, Deserialize)]
pub struct ScanInfo {
    pub dpi: u32,
    pub encoding: String,
    pub page_info: Vec<ScanPage>,
}

/// One scanned page.
#[derive(Debug, Clone, Deserialize)]
pub struct ScanPage {
    pub skew_degrees_cw: f64,
    pub orientation_cw: u16,
    pub upright_rotation_cw: u16,
}

/// One document inside a file.
#[derive(Debug, Clone, Deserialize)]
pub struct TruthDocument {
    pub doc_type: String,
    pub first_page: u32,
    pub last_page: u32,
    /// Normalized values of exactly the catalogue fields printed on the document.
    pub fields: BTreeMap<String, serde_json::Value>,
    /// The same fields as printed.
    #[serde(default)]
    pub printed: BTreeMap<String, serde_json::Value>,
}

impl TruthDocument {
    pub fn pages(&self) -> std::ops::RangeInclusive<u32> {
        self.first_page..=self.last_page
    }
}

/// The workflow's name for a truth field (the truth says `gross_weight_kg`, `trade.yaml`
/// says `gross_weight`).
pub fn workflow_field(truth_field: &str) -> &str {
    match truth_field {
        "gross_weight_kg" => "gross_weight",
        other => other,
    }
}

/// A truth value, normalized the way it is compared.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// Compared exactly after trimming.
    Text(String),
    Integer(i64),
    /// Kilograms, compared numerically (within half a unit of the printed 2nd decimal).
    WeightKg(Decimal),
    /// `YYYY-MM-DD`.
    Date(String),
    /// Amount compared numerically, currency exactly.
    Money {
        amount: Decimal,
        currency: String,
    },
    /// 4 letters + 7 digits.
    Container(String),
}

/// Largest difference, in kg, still counted as the same weight: half a unit of the second
/// decimal every generated kilogram figure is printed with. Pounds converted to kilograms
/// land within it; a misread digit does not.
pub const WEIGHT_TOLERANCE_KG: f64 = 0.005;

impl Expected {
    /// Normalizes truth field `field`'s JSON value.
    pub fn from_truth(field: &str, value: &serde_json::Value) -> Result<Expected, String> {
        let text = || {
            value
                .as_str()
                .map(|s| s.trim().to_owned())
                .ok_or_else(|| format!("{field}: expected a string, got {value}"))
        };
        let decimal = |s: &str| {
            s.parse::<Decimal>()
                .map_err(|e| format!("{field}: bad decimal {s:?}: {e}"))
        };
        Ok(match field {
            "package_count" => Expected::Integer(
                value
                    .as_i64()
                    .ok_or_else(|| format!("{field}: expected an integer, got {value}"))?,
            ),
            "gross_weight_kg" => Expected::WeightKg(decimal(&text()?)?),
            "bl_date" | "invoice_date" | "acceptance_date" => Expected::Date(text()?),
            "invoice_total" | "declared_value" => {
                let part = |k: &str| {
                    value
                        .get(k)
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{field}: no {k} in {value}"))
                };
                Expected::Money {
                    amount: decimal(&part("amount")?)?,
                    currency: part("currency")?,
                }
            }
            "container_number" => Expected::Container(text()?),
            _ => Expected::Text(text()?),
        })
    }

    /// Whether an extracted value means the same.
    pub fn matches(&self, got: &Value) -> bool {
        match (self, got) {
            (Expected::Text(e), Value::Text(g)) => g.trim() == e,
            (Expected::Integer(e), Value::Integer(g)) => g == e,
            (Expected::WeightKg(e), Value::Weight { kg, .. }) => {
                (kg.to_f64() - e.to_f64()).abs() < WEIGHT_TOLERANCE_KG
            }
            (Expected::Date(e), Value::Date(g)) => g.to_string() == *e,
            (
                Expected::Money { amount, currency },
                Value::Money {
                    amount: a,
                    currency: c,
                },
            ) => a == amount && c.as_deref() == Some(currency.as_str()),
            (Expected::Container(e), Value::ContainerNumber { code, .. }) => code == e,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn expected_values_compare_with_extracted_ones() {
        let money = Expected::from_truth(
            "invoice_total",
            &json!({"amount": "39004.00", "currency": "USD"}),
        )
        .unwrap();
        assert!(money.matches(&Value::Money {
            amount: d("39004"),
            currency: Some("USD".into())
        }));
        assert!(!money.matches(&Value::Money {
            amount: d("39004"),
            currency: Some("EUR".into())
        }));
        assert!(!money.matches(&Value::Money {
            amount: d("39004"),
            currency: None
        }));
        let kg = Expected::from_truth("gross_weight_kg", &json!("21230")).unwrap();
        assert!(kg.matches(&Value::Weight {
            kg: d("21230.000"),
            unit: "MT".into()
        }));
        assert!(!kg.matches(&Value::Weight {
            kg: d("21230.01"),
            unit: "KGS".into()
        }));
        let count = Expected::from_truth("package_count", &json!(152)).unwrap();
        assert!(count.matches(&Value::Integer(152)));
        assert!(!count.matches(&Value::Text("152".into())));
        let text = Expected::from_truth("invoice_number", &json!("ABC-24-0123")).unwrap();
        assert!(text.matches(&Value::Text("ABC-24-0123".into())));
        assert!(!text.matches(&Value::Text("ABC-24-0123.".into())));
    }
}
