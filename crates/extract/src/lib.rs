//! Ironclad's document-understanding engine: from pages of words to typed documents and
//! facts with evidence.
//!
//! Given a workflow (YAML text the caller loaded) and the pages of one source (words with
//! boxes and confidences, however they were read), [`analyze`] classifies each page,
//! splits the pages into segments (one per document), and extracts every declared field of
//! each segment with all its candidates, the chosen value, its page, the box of the value's
//! own words, its raw text and a confidence. [`invoice2data`] reads invoice2data's template
//! library into the same kind of extraction.
//!
//! The design choice: the crate is pure. It reads no file, opens no connection and spawns
//! no task; workflows arrive as text and pages as values, and the answer is a serializable
//! value the caller stores. That is why it can be tested exhaustively on synthetic pages
//! and why a worker can run it on any thread. The cost is that the caller does all the
//! plumbing (reading PDFs, OCR, storing facts), and that anything needing the document
//! itself — re-rendering a region at higher resolution, invoice2data's `area` option — is
//! out of reach here and must be done before the call.
//!
//! Matching is accent- and case-insensitive throughout ([`ironclad_core::fold`]); value parsing is
//! `ironclad_core::parse`, shared with the rules engine, so a value means the same thing
//! wherever it is read.
#![deny(missing_docs)]

pub mod classify;
pub mod extract;
mod fuzzy;
pub mod invoice2data;
mod keyvalue;
mod layout;
pub mod second_look;
pub mod segment;
pub mod shape;
pub mod templated;
pub mod workflow;
mod yaml_budget;

use ironclad_core::page::PageText;

pub use classify::{classify_page, PageClass};
pub use extract::{extract, Candidate, Fact, Unreadable, SHAPE_ALONE_PATTERN};
pub use segment::{segment, Segment};
pub use templated::{apply_templates, TemplateUse};
pub use workflow::{Issue, Workflow, WorkflowError, WorkflowSpec};

pub use ironclad_core::analysis::{Analysis, SegmentResult};

/// The pages as `pdftotext -layout` prints a PDF (each page ended by a form feed), rebuilt from
/// the words' boxes, so text layers and OCR alike: what invoice2data templates are written
/// against.
pub fn layout_text(pages: &[PageText]) -> String {
    layout::DocumentText::columnar(pages).into_text()
}

/// Classifies, segments and extracts `pages` (one source, in page order).
pub fn analyze(workflow: &Workflow, pages: &[PageText]) -> Analysis {
    // Each page is laid out and folded once, for classification and extraction alike.
    let layouts: Vec<layout::PageLayout<'_>> = pages.iter().map(layout::PageLayout::new).collect();
    let classes = classify::classify_source(workflow, &layouts);
    let mut next = 0;
    let segments = segment::segment(&classes)
        .into_iter()
        .map(|segment| {
            // Segments cover the classes in order, so the k-th page of a segment is the
            // next unconsumed input page.
            let range = next..next + segment.pages.len();
            next = range.end;
            let facts = match &segment.doc_type {
                Some(t) => {
                    let seg_pages: Vec<&PageText> = pages[range.clone()].iter().collect();
                    extract::extract_layouts(workflow, t, &seg_pages, &layouts[range])
                }
                None => Vec::new(),
            };
            SegmentResult { segment, facts }
        })
        .collect();
    Analysis {
        pages: classes,
        segments,
        template: None,
    }
}

/// A source's analysis: the workflow's, with what the first matching template of
/// `templates` reads added ([`apply_templates`]); the templates' alone when there is no
/// workflow; `None` when neither applies.
pub fn analyze_source(
    workflow: Option<&Workflow>,
    templates: &[invoice2data::Template],
    pages: &[PageText],
) -> Option<Analysis> {
    let mut analysis = workflow.map(|w| analyze(w, pages));
    if !templates.is_empty() {
        let analysis =
            analysis.get_or_insert_with(|| templated::unclassified(pages, "no workflow"));
        apply_templates(analysis, workflow, templates, pages);
    }
    analysis
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::grid_page;

    const WF: &str = r#"
name: t
version: 1
document_types:
  - id: invoice
    title: Invoice
    recognition:
      keywords: [{text: invoice, weight: 0.6}]
      first_page: ['page 1 of']
    fields:
      - {name: number, parser: text, required: true, patterns: ['invoice no:\s*(?P<value>\S+)']}
  - id: packing_list
    title: Packing list
    recognition:
      keywords: [{text: packing list, weight: 0.6}]
    fields:
      - {name: packages, parser: integer, patterns: ['packages:\s*(?P<value>\d+)']}
"#;

    #[test]
    fn analyze_splits_a_packet_and_extracts_each_document() {
        let wf = Workflow::from_yaml(WF).unwrap();
        let mut pages = vec![
            grid_page(&["INVOICE", "Invoice no: A-1", "page 1 of 2"], 1.0),
            grid_page(&["INVOICE", "page 2 of 2"], 1.0),
            grid_page(&["INVOICE", "Invoice no: B-2", "page 1 of 1"], 1.0),
            grid_page(&["lorem ipsum"], 1.0),
            grid_page(&["PACKING LIST", "Packages: 12"], 1.0),
        ];
        for (i, p) in pages.iter_mut().enumerate() {
            p.index = i as u32;
        }
        let a = analyze(&wf, &pages);
        let summary: Vec<(Option<&str>, &[u32], usize)> = a
            .segments
            .iter()
            .map(|s| {
                (
                    s.segment.doc_type.as_deref(),
                    s.segment.pages.as_slice(),
                    s.facts.len(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (Some("invoice"), &[0, 1][..], 1),
                (Some("invoice"), &[2][..], 1),
                (None, &[3][..], 0),
                (Some("packing_list"), &[4][..], 1),
            ]
        );
        let raw = |s: usize| {
            a.segments[s].facts[0]
                .chosen
                .as_ref()
                .map(|c| c.raw.clone())
        };
        assert_eq!(raw(0).as_deref(), Some("A-1"));
        assert_eq!(raw(1).as_deref(), Some("B-2"));
        assert_eq!(raw(3).as_deref(), Some("12"));
        assert_eq!(
            a.pages[3].reason.as_deref(),
            Some("no keyword of any document type was found")
        );
        // The whole analysis is plain data: it survives JSON for storage.
        let back: Analysis = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }
}
