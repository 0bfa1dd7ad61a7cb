//! What reading one source against a workflow found: every page's classification, the
//! documents (segments) the pages form, and each document's facts with their evidence.
//!
//! Plain data, shared by the processors that produce it (the built-in reader, the HTTP
//! provider) and the worker that stores it, so neither depends on the other's
//! implementation. The serde forms are what PostgreSQL keeps with a job's result: change them
//! only compatibly (new fields optional), or stored analyses stop reading back.

use crate::page::BBox;
use crate::parse::{ParserKind, Value};
use serde::{Deserialize, Serialize};

/// The result of reading one source against a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Every page's classification, in input order.
    pub pages: Vec<PageClass>,
    /// The documents found, in page order, with their facts.
    pub segments: Vec<SegmentResult>,
    /// The invoice2data template that read the source, when one matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateUse>,
}

/// One segment and what was extracted from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentResult {
    /// The pages and type.
    pub segment: Segment,
    /// One fact per field of the type, in workflow order; empty for an UNKNOWN segment.
    pub facts: Vec<Fact>,
}

/// One page's classification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageClass {
    /// The page's index within its source ([`crate::page::PageText::index`]).
    pub page: u32,
    /// The recognised document type, or `None` (UNKNOWN; see `reason`).
    pub doc_type: Option<String>,
    /// The winning score, in `[0, 1]`; 0 when UNKNOWN.
    pub confidence: f64,
    /// Every type's score, best first (ties in workflow order).
    pub scores: Vec<(String, f64)>,
    /// Whether the page starts a new document of its type (a title or "page 1 of", and no
    /// continuation marker).
    pub first_page: bool,
    /// Why the page is UNKNOWN; `None` when it was classified.
    pub reason: Option<String>,
    /// When the page was recognized by its fields' labels rather than its keywords (a
    /// damaged title): the fields whose labels were found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_labels: Option<Vec<String>>,
    /// When the page continues the document of the page before it (its index), having no
    /// title or keywords enough of its own but that type's labels (`by_labels`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<u32>,
}

impl PageClass {
    /// What a reader of the page's row should know of how it was classified: why it is
    /// UNKNOWN, that it continues the document before it, or that it was recognized by its
    /// labels alone.
    pub fn explanation(&self) -> Option<String> {
        self.reason.clone().or_else(|| {
            let fields = self.by_labels.as_ref()?.join(", ");
            Some(match (self.continues, &self.doc_type) {
                (Some(previous), Some(doc_type)) => format!(
                    "continues the {doc_type} of page {}: no title or keywords enough, and shows \
                     its labels of {fields}",
                    previous + 1
                ),
                _ => format!("no title or keywords enough; recognized by the labels of {fields}"),
            })
        })
    }
}

/// A run of pages holding one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// The document type, or `None` for unrecognised pages.
    pub doc_type: Option<String>,
    /// Page indices ([`PageClass::page`]), in order.
    pub pages: Vec<u32>,
    /// The lowest page confidence in the segment: a document is as sure as its weakest page.
    pub confidence: f64,
}

/// One value found for a field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Page index ([`crate::page::PageText::index`]).
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
    /// Which of the field's patterns found it (0-based); a label's candidates are numbered
    /// after the patterns (`patterns.len() + k` for label `k`); a value found by the field's
    /// shape alone, its label lost, is `4294967294` (`ironclad_extract::SHAPE_ALONE_PATTERN`).
    pub pattern: usize,
    /// For a value found beside or under its label: the label's box, the other half of the
    /// evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_bbox: Option<BBox>,
    /// For a value an invoice2data template read: the template's issuer. Its `pattern` is
    /// then numbered after the field's patterns and labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// How the value was read when not by the page's first reading (absent: it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<CandidateOrigin>,
}

/// How a candidate was read, when not by its page's first reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateOrigin {
    /// A region where the value should be, read again on its own because the first reading
    /// left the field doubtful (missing, in conflict, below the confidence floor, or not of
    /// its declared shape).
    SecondLook,
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
    /// Whether a candidate with a different value comes close enough to the chosen one's
    /// confidence to ask for review (the reader's conflict margin).
    pub conflict: bool,
    /// Whether the field is required and nothing was found.
    pub missing_required: bool,
    /// Matches the parser could not read.
    pub unreadable: Vec<Unreadable>,
}

/// Which template read a source, and what it gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateUse {
    /// The template's `issuer`.
    pub issuer: String,
    /// invoice2data's JSON output; `None` when the template matched but could not extract.
    pub output: Option<serde_json::Value>,
    /// Why a matched template gave nothing (a required field missing, a value it could not
    /// convert).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An analysis as PostgreSQL keeps it (optional fields absent, one of each present):
    /// it must read back and print byte for byte the same.
    const STORED: &str = r#"{"pages":[{"page":0,"doc_type":"invoice","confidence":0.9,"scores":[["invoice",0.9],["packing_list",0.1]],"first_page":true,"reason":null},{"page":1,"doc_type":null,"confidence":0.0,"scores":[],"first_page":false,"reason":null,"by_labels":["number"]}],"segments":[{"segment":{"doc_type":"invoice","pages":[0],"confidence":0.9},"facts":[{"field":"number","parser":"text","chosen":{"page":0,"bbox":{"x0":0.25,"y0":0.5,"x1":0.75,"y1":0.625},"raw":"A-1","value":{"kind":"text","value":"A-1"},"confidence":0.9,"ocr_confidence":0.9,"certainty":1.0,"pattern":0,"label_bbox":{"x0":0.0,"y0":0.5,"x1":0.25,"y1":0.625}},"candidates":[{"page":0,"bbox":{"x0":0.25,"y0":0.5,"x1":0.75,"y1":0.625},"raw":"A-1","value":{"kind":"text","value":"A-1"},"confidence":0.9,"ocr_confidence":0.9,"certainty":1.0,"pattern":2,"template":"Acme"}],"conflict":false,"missing_required":false,"unreadable":[{"page":0,"bbox":{"x0":0.0,"y0":0.0,"x1":1.0,"y1":1.0},"raw":"x","error":"no digits"}]}]}],"template":{"issuer":"Acme","output":{"amount":1},"error":"bad date"}}"#;

    #[test]
    fn stored_json_reads_back_and_prints_the_same() {
        let analysis: Analysis = serde_json::from_str(STORED).expect("stored analysis reads");
        assert_eq!(serde_json::to_string(&analysis).expect("prints"), STORED);
        assert_eq!(
            analysis.pages[1].explanation().as_deref(),
            Some("no title or keywords enough; recognized by the labels of number")
        );
    }

    /// A page that continues the document before it says so, and the field is absent from
    /// every other page (so analyses stored before it read back unchanged, as above).
    #[test]
    fn a_continuation_page_reads_back_and_explains_itself() {
        const PAGE: &str = r#"{"page":2,"doc_type":"invoice","confidence":0.5,"scores":[["invoice",0.2]],"first_page":false,"reason":null,"by_labels":["number","total"],"continues":1}"#;
        let page: PageClass = serde_json::from_str(PAGE).expect("reads");
        assert_eq!(page.continues, Some(1));
        assert_eq!(serde_json::to_string(&page).expect("prints"), PAGE);
        assert_eq!(
            page.explanation().as_deref(),
            Some(
                "continues the invoice of page 2: no title or keywords enough, and shows its \
                 labels of number, total"
            )
        );
    }
}
