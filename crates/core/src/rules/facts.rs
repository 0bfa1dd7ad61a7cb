//! What the rules read: a case's documents and the facts extracted from each, with the
//! evidence a reviewer needs to check a value against the page.
//!
//! The store builds these from the active segments and facts of a case generation; the engine
//! never sees where they came from, so a decision can be recomputed from a frozen snapshot.

use std::cmp::Ordering;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::compare::{self, Relation};
use crate::page::{BBox, ReadMethod};
use crate::parse::Value;

/// Where a value was read, and how sure the reading is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The source (uploaded file) it was read from.
    pub source_id: Option<Uuid>,
    /// The page within the source, 0-based (messages show it 1-based).
    pub page: Option<u32>,
    /// Where on the page.
    pub bbox: Option<BBox>,
    /// The text as printed (shared: every result that shows the value holds it).
    pub raw_text: Option<Arc<str>>,
    /// How sure the extraction is, in `[0, 1]`. `None` (a value entered by a person) is
    /// taken as confident.
    pub confidence: Option<f64>,
    /// How the page the value came from was read; `None` for a value a person entered, or
    /// one recorded before this was kept. OCR (and a provider, which reads OCR text) may
    /// confuse characters, so a difference it could explain asks for review instead of
    /// blocking; a text layer is taken as printed. Left out of JSON when unknown, so frozen
    /// snapshots written without it read back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_method: Option<ReadMethod>,
    /// Set when a person corrected the value: who and why. Rule results that show the value
    /// say so, and reports mark it. Left out of JSON when absent, like `read_method`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction: Option<CorrectionNote>,
}

/// Who corrected a value, and why: a reviewer's correction is a new version of the fact,
/// and every result and report that shows the value names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorrectionNote {
    /// The correction (its record keeps the old value and its evidence).
    pub id: Uuid,
    /// Who corrected it, as people read it (`Rita Reviewer`).
    pub by: String,
    /// Why, in their words.
    pub reason: String,
}

/// One extracted field of one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactInput {
    /// The field name, as the workflow declares it.
    pub field: String,
    /// The typed value; `None` when nothing could be read. Shared: every result that shows
    /// the value holds it.
    pub value: Option<Arc<Value>>,
    /// Where it was read.
    pub evidence: Evidence,
    /// Whether another reading came close to this one, so the value is ambiguous.
    pub conflict: bool,
    /// Whether the field is absent from the document.
    pub missing: bool,
}

/// One document of a case: a typed segment (page range) of a source, and its facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentFacts {
    /// The segment.
    pub segment_id: Uuid,
    /// The source it lies in.
    pub source_id: Uuid,
    /// Its document type; `None` for pages no type recognised (an UNKNOWN segment).
    pub document_type: Option<String>,
    /// First page, 0-based.
    pub first_page: u32,
    /// Last page, 0-based, inclusive.
    pub last_page: u32,
    /// Its facts, in any order; several facts for one field are read as competing readings.
    pub facts: Vec<FactInput>,
}

/// Every document of one case generation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseFacts {
    /// The documents, in any order (evaluation sorts them).
    pub documents: Vec<DocumentFacts>,
}

/// What a document says for one field, as the rules read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading<'a> {
    /// The chosen fact (the most confident one with a value), or any fact of the field when
    /// none has a value; `None` when the document has no fact for the field.
    pub fact: Option<&'a FactInput>,
    /// The value; `None` when the field is missing.
    pub value: Option<&'a Value>,
    /// The chosen fact is flagged as conflicting, or another fact of the field disagrees.
    pub conflict: bool,
    /// The chosen value's confidence, when it is below the floor.
    pub below_floor: Option<f64>,
}

impl Reading<'_> {
    /// A value that may decide a rule: present, unambiguous and above the floor.
    pub fn is_confident(&self) -> bool {
        self.value.is_some() && !self.conflict && self.below_floor.is_none()
    }
}

/// Whether `confidence` is below `floor`; an unknown confidence is not, a NaN one is.
pub(crate) fn below_floor(confidence: Option<f64>, floor: f64) -> Option<f64> {
    // A NaN confidence is not a confidence: it counts as below, as `c < floor` would not say.
    confidence.filter(|c| c.is_nan() || *c < floor)
}

impl DocumentFacts {
    /// What this document says for `field`.
    pub(crate) fn reading(&self, field: &str, floor: f64) -> Reading<'_> {
        let mut chosen: Option<&FactInput> = None;
        let mut any: Option<&FactInput> = None;
        let mut rivals = false;
        for fact in self.facts.iter().filter(|f| f.field == field) {
            if !has_value(fact) {
                any = Some(any.map_or(fact, |a| first_of(a, fact)));
                continue;
            }
            chosen = Some(match chosen {
                None => fact,
                Some(best) => {
                    rivals = true;
                    first_of(best, fact)
                }
            });
        }
        let Some(best) = chosen else {
            return Reading {
                fact: any,
                value: None,
                conflict: false,
                below_floor: None,
            };
        };
        let value = best.value.as_deref();
        // Competing facts for one field that do not say the same thing make it ambiguous.
        let disagreed = rivals
            && self.facts.iter().any(|f| {
                f.field == field
                    && has_value(f)
                    && match (f.value.as_deref(), value) {
                        (Some(a), Some(b)) => !matches!(compare::same(a, b), Relation::Holds),
                        _ => false,
                    }
            });
        Reading {
            fact: Some(best),
            value,
            conflict: best.conflict || disagreed,
            below_floor: below_floor(best.evidence.confidence, floor),
        }
    }

    /// Whether at least one fact has a value.
    pub(crate) fn has_any_value(&self) -> bool {
        self.facts.iter().any(has_value)
    }

    /// The sort key that makes evaluation independent of input order.
    pub(crate) fn order(a: &DocumentFacts, b: &DocumentFacts) -> Ordering {
        (
            &a.document_type,
            a.source_id,
            a.first_page,
            a.last_page,
            a.segment_id,
        )
            .cmp(&(
                &b.document_type,
                b.source_id,
                b.first_page,
                b.last_page,
                b.segment_id,
            ))
    }
}

fn has_value(fact: &FactInput) -> bool {
    !fact.missing && fact.value.is_some()
}

/// The preferred of two facts of one field: the more confident, then a total order on
/// everything else, so the choice never depends on the order the facts arrived in.
fn first_of<'a>(a: &'a FactInput, b: &'a FactInput) -> &'a FactInput {
    if fact_order(a, b) == Ordering::Greater {
        b
    } else {
        a
    }
}

fn fact_order(a: &FactInput, b: &FactInput) -> Ordering {
    let conf = |f: &FactInput| f.evidence.confidence.unwrap_or(1.0);
    let (ea, eb) = (&a.evidence, &b.evidence);
    // Higher confidence first; `total_cmp` orders NaN too.
    conf(b)
        .total_cmp(&conf(a))
        .then_with(|| a.conflict.cmp(&b.conflict))
        .then_with(|| ea.page.cmp(&eb.page))
        .then_with(|| ea.source_id.cmp(&eb.source_id))
        .then_with(|| ea.raw_text.cmp(&eb.raw_text))
        .then_with(|| ea.confidence.is_some().cmp(&eb.confidence.is_some()))
        .then_with(|| bbox_order(ea.bbox, eb.bbox))
        .then_with(|| a.missing.cmp(&b.missing))
        // The method decides whether a difference may be OCR's: part of the order, so the
        // choice between two facts alike in all else never depends on their arrival.
        .then_with(|| method_rank(ea.read_method).cmp(&method_rank(eb.read_method)))
        .then_with(|| {
            // Rare (two facts alike in everything above): compare the values' JSON.
            let json = |f: &FactInput| serde_json::to_string(&f.value).unwrap_or_default();
            json(a).cmp(&json(b))
        })
}

fn method_rank(method: Option<ReadMethod>) -> u8 {
    match method {
        None => 0,
        Some(ReadMethod::TextLayer) => 1,
        Some(ReadMethod::Ocr) => 2,
        Some(ReadMethod::Provider) => 3,
    }
}

fn bbox_order(a: Option<BBox>, b: Option<BBox>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => [a.x0, a.y0, a.x1, a.y1]
            .iter()
            .zip([b.x0, b.y0, b.x1, b.y1].iter())
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{doc, fact, text};

    #[test]
    fn the_most_confident_reading_is_chosen_whatever_the_order() {
        let a = fact("bl_number", text("MAEU1"), 0.7);
        let b = fact("bl_number", text("MAEU2"), 0.9);
        for facts in [vec![a.clone(), b.clone()], vec![b.clone(), a.clone()]] {
            let d = DocumentFacts {
                facts,
                ..doc("bill_of_lading", 1)
            };
            let r = d.reading("bl_number", 0.6);
            assert_eq!(r.value, Some(&text("MAEU2")));
            assert!(r.conflict, "two facts with different values are ambiguous");
        }
    }

    #[test]
    fn agreeing_readings_are_not_a_conflict_and_missing_is_missing() {
        let d = DocumentFacts {
            facts: vec![
                fact("bl_number", text("MAEU 1"), 0.7),
                fact("bl_number", text("maeu1"), 0.9),
                FactInput {
                    missing: true,
                    ..fact("container_number", text("x"), 0.9)
                },
            ],
            ..doc("bill_of_lading", 1)
        };
        let r = d.reading("bl_number", 0.8);
        assert!(!r.conflict && r.is_confident());
        let r = d.reading("container_number", 0.6);
        assert!(r.value.is_none() && r.fact.is_some());
        assert!(d.reading("nothing", 0.6).fact.is_none());
    }

    #[test]
    fn snapshots_written_before_the_read_method_read_back_and_new_ones_keep_it() {
        // A frozen snapshot's evidence, as decisions stored it before `read_method` existed.
        let old = serde_json::json!({"source_id": null, "page": 0, "bbox": null,
                                     "raw_text": "INV-1", "confidence": 0.9});
        let e: Evidence = serde_json::from_value(old.clone()).expect("old evidence reads");
        assert_eq!((e.read_method, e.confidence), (None, Some(0.9)));
        // Unknown stays out of the JSON, so an old snapshot writes back unchanged.
        assert_eq!(serde_json::to_value(&e).ok(), Some(old));
        let ocr = Evidence {
            read_method: Some(ReadMethod::Ocr),
            ..e
        };
        let json = serde_json::to_value(&ocr).expect("evidence writes");
        assert_eq!(json["read_method"], "ocr");
        assert_eq!(serde_json::from_value::<Evidence>(json).ok(), Some(ocr));
    }

    #[test]
    fn nan_confidence_is_below_any_floor_and_unknown_is_not() {
        assert_eq!(below_floor(None, 0.6), None);
        assert!(below_floor(Some(f64::NAN), 0.0).is_some());
        assert_eq!(below_floor(Some(0.5), 0.6), Some(0.5));
        assert_eq!(below_floor(Some(0.6), 0.6), None);
    }
}
