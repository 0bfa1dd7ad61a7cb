//! Field extraction with evidence.
//!
//! Every match of every pattern on every page of a segment is a candidate, kept with its
//! page, the box of the value's own words (not the whole line: a reviewer must see which
//! number was read), the raw text, the parsed value and a confidence. The best candidate is
//! chosen; the others stay as alternatives, and a close disagreement is flagged rather than
//! settled silently.

use std::collections::HashSet;
use std::ops::Range;

use ironclad_core::page::{BBox, PageText};
use ironclad_core::parse::{self, ParseError, ParserKind, Value};
use serde::{Deserialize, Serialize};

use crate::layout::PageLayout;
use crate::normalize::fold_str;
use crate::workflow::{CompiledField, FieldSpec, Workflow};

/// Most candidates (and, separately, unreadable matches) kept per field. A pattern such as
/// `(?P<value>\d)` would otherwise turn every digit of a dossier into evidence to store.
pub const MAX_CANDIDATES: usize = 64;

/// How close (in confidence) a disagreeing candidate must come to the chosen one to be a
/// conflict. Below it the alternative is kept as evidence but does not ask for review: an
/// OCR-garbled footer repeating the total should not block a clean invoice.
pub const CONFLICT_MARGIN: f64 = 0.2;

/// One value found for a field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Page index ([`PageText::index`]).
    pub page: u32,
    /// Union of the boxes of the words the value was read from.
    pub bbox: BBox,
    /// The value's text as printed.
    pub raw: String,
    /// The parsed value.
    pub value: Value,
    /// `ocr_confidence × certainty`, in `[0, 1]`.
    pub confidence: f64,
    /// Mean confidence of the value's words.
    pub ocr_confidence: f64,
    /// The parser's certainty about the reading.
    pub certainty: f64,
    /// Which of the field's patterns found it (0-based).
    pub pattern: usize,
}

/// A match whose value the parser could not read: kept so "missing" can be explained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unreadable {
    /// Page index.
    pub page: u32,
    /// Box of the words.
    pub bbox: BBox,
    /// The text as printed.
    pub raw: String,
    /// The parser's reason.
    pub error: String,
}

/// Everything found for one field of one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// Field name.
    pub field: String,
    /// Parser the field declares.
    pub parser: ParserKind,
    /// The best candidate.
    pub chosen: Option<Candidate>,
    /// Every candidate, best first (ties: earlier pattern, earlier page, earlier on the page).
    pub candidates: Vec<Candidate>,
    /// Whether a candidate with a different value comes within [`CONFLICT_MARGIN`] of the
    /// chosen one's confidence.
    pub conflict: bool,
    /// Whether the field is required and nothing was found.
    pub missing_required: bool,
    /// Matches the parser could not read.
    pub unreadable: Vec<Unreadable>,
}

/// Extracts every field of `doc_type` from a segment's pages. An unknown type has no fields.
pub fn extract(workflow: &Workflow, doc_type: &str, pages: &[&PageText]) -> Vec<Fact> {
    let layouts: Vec<PageLayout<'_>> = pages.iter().map(|p| PageLayout::new(p)).collect();
    extract_layouts(workflow, doc_type, pages, &layouts)
}

pub(crate) fn extract_layouts(
    workflow: &Workflow,
    doc_type: &str,
    pages: &[&PageText],
    layouts: &[PageLayout<'_>],
) -> Vec<Fact> {
    let Some((spec, compiled)) = workflow.compiled_type(doc_type) else {
        return Vec::new();
    };
    spec.fields
        .iter()
        .zip(&compiled.fields)
        .map(|(field, c)| extract_field(field, c, pages, layouts))
        .collect()
}

fn extract_field(
    spec: &FieldSpec,
    compiled: &CompiledField,
    pages: &[&PageText],
    layouts: &[PageLayout<'_>],
) -> Fact {
    let mut found = Found::default();
    for (page, full) in pages.iter().zip(layouts) {
        // A region gets its own layout: only its words, so a pattern cannot reach outside.
        let regional = spec.region.map(|r| PageLayout::within(page, r));
        let layout = regional.as_ref().unwrap_or(full);
        for (p, re) in compiled.patterns.iter().enumerate() {
            for caps in re.captures_iter(layout.folded().as_str()) {
                let Some(m) = caps.name("value") else {
                    continue;
                };
                found.add(spec.parser, compiled, page.index, layout, m.range(), p);
            }
        }
    }
    let Found {
        mut candidates,
        unreadable,
        ..
    } = found;
    // Stable sort on confidence alone: equal confidences keep discovery order, which is
    // pattern order, then page, then position.
    candidates.sort_by_key(|c| c.pattern);
    candidates.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    let chosen = candidates.first().cloned();
    let conflict = chosen.as_ref().is_some_and(|best| {
        candidates.iter().any(|c| {
            !same_value(&c.value, &best.value) && c.confidence >= best.confidence - CONFLICT_MARGIN
        })
    });
    Fact {
        field: spec.name.clone(),
        parser: spec.parser,
        missing_required: spec.required && chosen.is_none(),
        chosen,
        candidates,
        conflict,
        unreadable,
    }
}

#[derive(Default)]
struct Found {
    candidates: Vec<Candidate>,
    unreadable: Vec<Unreadable>,
    /// (page, original byte range) already taken: two patterns matching one place are one
    /// candidate, not two votes.
    seen: HashSet<(u32, usize, usize)>,
}

impl Found {
    fn add(
        &mut self,
        kind: ParserKind,
        field: &CompiledField,
        page: u32,
        layout: &PageLayout<'_>,
        folded: Range<usize>,
        pattern: usize,
    ) {
        let range = layout.folded().original_range(folded);
        let raw = layout.text()[range.clone()].trim();
        if raw.is_empty() || !self.seen.insert((page, range.start, range.end)) {
            return;
        }
        let Some(evidence) = layout.evidence(range) else {
            return;
        };
        // A unit stated by the label completes a bare number; the candidate keeps `raw`.
        let with_unit = match &field.unit {
            Some(unit) if !raw.contains(char::is_alphabetic) => Some(format!("{raw} {unit}")),
            _ => None,
        };
        match parse::parse(kind, with_unit.as_deref().unwrap_or(raw), &field.hints) {
            Ok(parsed) if self.candidates.len() < MAX_CANDIDATES => {
                let ocr_confidence = evidence.confidence;
                self.candidates.push(Candidate {
                    page,
                    bbox: evidence.bbox,
                    raw: raw.to_owned(),
                    value: parsed.value,
                    confidence: round(ocr_confidence * parsed.certainty),
                    ocr_confidence: round(ocr_confidence),
                    certainty: parsed.certainty,
                    pattern,
                });
            }
            Ok(_) => {}
            Err(ParseError::Empty) => {}
            Err(e) if self.unreadable.len() < MAX_CANDIDATES => {
                self.unreadable.push(Unreadable {
                    page,
                    bbox: evidence.bbox,
                    raw: raw.to_owned(),
                    error: e.to_string(),
                });
            }
            Err(_) => {}
        }
    }
}

/// Four decimals: enough to order candidates, short enough to read in JSON.
pub fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Whether two readings mean the same thing for conflict purposes: text ignores case and
/// accents, and an amount without a currency agrees with the same amount in any currency.
/// Shared with every source of candidates (patterns, an external provider).
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Text(x), Value::Text(y)) => fold_str(x) == fold_str(y),
        (
            Value::Money {
                amount: x,
                currency: cx,
            },
            Value::Money {
                amount: y,
                currency: cy,
            },
        ) => x == y && (cx.is_none() || cy.is_none() || cx == cy),
        (Value::Weight { kg: x, .. }, Value::Weight { kg: y, .. }) => x == y,
        (Value::ContainerNumber { code: x, .. }, Value::ContainerNumber { code: y, .. }) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::grid_page;

    const WF: &str = r#"
name: t
version: 1
document_types:
  - id: customs_declaration
    title: Customs declaration
    recognition:
      keywords: [{text: douane, weight: 1}]
    fields:
      - name: declared_value
        parser: money
        required: true
        patterns: ['valeur declaree[^:\n]*:\s*(?P<value>[\d.,]+\s*[a-z]{3})']
      - name: gross_weight
        parser: weight
        patterns: ['gross weight:\s*(?P<value>[\d.,]+\s*kgs?)']
      - name: invoice_number
        parser: text
        required: true
        patterns: ['invoice no\.?:\s*(?P<value>\S+)', 'facture\s*:\s*(?P<value>\S+)']
      - name: reference
        parser: text
        required: true
        patterns: ['ref:\s*(?P<value>\S+)']
"#;

    fn wf() -> Workflow {
        Workflow::from_yaml(WF).unwrap()
    }

    fn fact<'a>(facts: &'a [Fact], name: &str) -> &'a Fact {
        facts.iter().find(|f| f.field == name).unwrap()
    }

    #[test]
    fn accented_labels_match_unaccented_text_and_back() {
        for line in [
            "Valeur déclarée / Declared value: 39.004,00 USD",
            "VALEUR DECLAREE / DECLARED VALUE: 39.004,00 USD",
        ] {
            let page = grid_page(&[line], 1.0);
            let facts = extract(&wf(), "customs_declaration", &[&page]);
            let chosen = fact(&facts, "declared_value").chosen.clone().unwrap();
            assert_eq!(chosen.raw, "39.004,00 USD", "{line}");
            assert_eq!(
                serde_json::to_value(&chosen.value).unwrap()["value"]["amount"],
                "39004.00"
            );
        }
    }

    #[test]
    fn the_value_box_covers_the_value_words_not_the_line() {
        let mut page = grid_page(&["Masse brute / Gross weight: 7.774,40 kg"], 1.0);
        page.words[5].confidence = 0.8;
        let facts = extract(&wf(), "customs_declaration", &[&page]);
        let c = fact(&facts, "gross_weight").chosen.clone().unwrap();
        // Words: Masse brute / Gross weight: 7.774,40 kg → the value is words 5 and 6.
        assert_eq!(
            c.bbox,
            BBox {
                x0: 0.5,
                y0: 0.0,
                x1: 0.68,
                y1: 0.015
            }
        );
        let line = page
            .words
            .iter()
            .fold(page.words[0].bbox, |b, w| b.union(w.bbox));
        assert!(c.bbox.x1 - c.bbox.x0 < line.x1 - line.x0);
        assert!((c.ocr_confidence - 0.9).abs() < 1e-9);
        assert!((c.confidence - 0.9 * c.certainty).abs() < 1e-3);
    }

    #[test]
    fn disagreeing_candidates_are_kept_and_flagged() {
        let p0 = grid_page(&["Invoice No.: SOF/2024/0571"], 1.0);
        let mut p1 = grid_page(&["Invoice No.: SOF/2024/0517"], 0.95);
        p1.index = 1;
        let facts = extract(&wf(), "customs_declaration", &[&p0, &p1]);
        let f = fact(&facts, "invoice_number");
        assert_eq!(f.candidates.len(), 2);
        assert_eq!(f.chosen.as_ref().unwrap().raw, "SOF/2024/0571");
        assert_eq!(f.chosen.as_ref().unwrap().page, 0);
        assert!(f.conflict);
    }

    #[test]
    fn agreeing_or_distant_candidates_are_not_a_conflict() {
        let p0 = grid_page(
            &["Invoice No.: SOF/2024/0571", "Facture : sof/2024/0571"],
            1.0,
        );
        let facts = extract(&wf(), "customs_declaration", &[&p0]);
        let f = fact(&facts, "invoice_number");
        assert_eq!(f.candidates.len(), 2);
        assert_eq!(f.candidates[0].pattern, 0);
        assert!(!f.conflict);

        let mut p1 = grid_page(&["Invoice No.: S0F/2024/O571"], 0.4);
        p1.index = 1;
        let facts = extract(&wf(), "customs_declaration", &[&p0, &p1]);
        let f = fact(&facts, "invoice_number");
        assert_eq!(f.candidates.len(), 3);
        assert!(
            !f.conflict,
            "a low-confidence OCR misread is evidence, not a conflict"
        );
    }

    #[test]
    fn missing_and_unreadable_values_are_explained() {
        let page = grid_page(&["Valeur déclarée: abc,de xyz"], 1.0);
        let facts = extract(&wf(), "customs_declaration", &[&page]);
        let f = fact(&facts, "reference");
        assert!(f.missing_required);
        assert!(f.chosen.is_none());
        let f = fact(&facts, "declared_value");
        assert!(f.chosen.is_none() && f.missing_required);
        assert_eq!(
            f.unreadable.len(),
            0,
            "the pattern needs digits, so nothing matched"
        );
        let f = fact(&facts, "gross_weight");
        assert!(!f.missing_required, "not required");
        assert!(extract(&wf(), "no_such_type", &[&page]).is_empty());
    }

    #[test]
    fn regions_restrict_the_search() {
        let yaml = WF.replace(
            "        parser: weight\n",
            "        parser: weight\n        region: {x0: 0, y0: 0.025, x1: 1, y1: 1}\n",
        );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let page = grid_page(&["Gross weight: 1.00 kg", "Gross weight: 2.00 kg"], 1.0);
        let facts = extract(&wf, "customs_declaration", &[&page]);
        let f = fact(&facts, "gross_weight");
        assert_eq!(f.candidates.len(), 1);
        assert_eq!(f.chosen.as_ref().unwrap().raw, "2.00 kg");
    }

    #[test]
    fn a_unit_in_the_label_completes_a_bare_weight() {
        let yaml = WF
            .replace(
                "        parser: weight\n",
                "        parser: weight\n        unit: kg\n",
            )
            .replace(
                r"gross weight:\s*(?P<value>[\d.,]+\s*kgs?)",
                r"gross weight(?:\s*\(kg\))?:\s*(?P<value>[\d.,]+(?:\s*(?:kgs?|lb))?)",
            );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let page = grid_page(
            &["Gross weight (kg): 26,070.00", "Gross weight: 26,070.00 lb"],
            1.0,
        );
        let facts = extract(&wf, "customs_declaration", &[&page]);
        let f = fact(&facts, "gross_weight");
        let raws: Vec<&str> = f.candidates.iter().map(|c| c.raw.as_str()).collect();
        assert_eq!(raws, ["26,070.00", "26,070.00 lb"]);
        assert!(matches!(&f.candidates[0].value, Value::Weight { unit, .. } if unit == "kg"));
        assert!(f.conflict, "26,070 kg and 26,070 lb disagree");
        let bad = WF.replace(
            "        parser: money\n",
            "        parser: money\n        unit: kg\n",
        );
        assert!(Workflow::from_yaml(&bad).is_err());
    }

    #[test]
    fn candidates_are_capped() {
        let yaml = WF.replace(r"ref:\s*(?P<value>\S+)", r"(?P<value>\d)");
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let line = "1 ".repeat(200);
        let page = grid_page(&[&line], 1.0);
        let facts = extract(&wf, "customs_declaration", &[&page]);
        assert_eq!(fact(&facts, "reference").candidates.len(), MAX_CANDIDATES);
    }
}
