//! Segmentation: consecutive pages of one document form a segment, so a packet PDF holding
//! several documents back to back is split into them.
//!
//! A segment ends where the type changes or where a page is marked as a document's first page
//! (its title, "page 1 of"), so two invoices in a row stay two invoices. Consecutive UNKNOWN
//! pages form one UNKNOWN segment: they cannot be told apart, and one segment is what a
//! reviewer resolves.

use crate::classify::PageClass;

pub use ironclad_core::analysis::Segment;

/// Groups classified pages, in the order given, into segments.
pub fn segment(pages: &[PageClass]) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    for p in pages {
        let continues = match out.last() {
            Some(current) => {
                current.doc_type == p.doc_type && !(p.first_page && p.doc_type.is_some())
            }
            None => false,
        };
        match out.last_mut() {
            Some(current) if continues => {
                current.pages.push(p.page);
                current.confidence = current.confidence.min(p.confidence);
            }
            _ => out.push(Segment {
                doc_type: p.doc_type.clone(),
                pages: vec![p.page],
                confidence: p.confidence,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(page: u32, doc_type: Option<&str>, first_page: bool, confidence: f64) -> PageClass {
        PageClass {
            page,
            doc_type: doc_type.map(str::to_owned),
            confidence,
            scores: vec![],
            first_page,
            reason: doc_type
                .is_none()
                .then(|| "no keyword of any document type was found".to_owned()),
            by_labels: None,
            continues: None,
        }
    }

    fn summary(segments: &[Segment]) -> Vec<(Option<&str>, Vec<u32>)> {
        segments
            .iter()
            .map(|s| (s.doc_type.as_deref(), s.pages.clone()))
            .collect()
    }

    #[test]
    fn a_packet_is_split_into_its_documents() {
        let pages = [
            page(0, Some("bill_of_lading"), true, 1.0),
            page(1, Some("commercial_invoice"), true, 0.9),
            page(2, Some("commercial_invoice"), false, 0.7),
            page(3, Some("packing_list"), true, 1.0),
            page(4, Some("customs_declaration"), true, 0.8),
        ];
        let segments = segment(&pages);
        assert_eq!(
            summary(&segments),
            [
                (Some("bill_of_lading"), vec![0]),
                (Some("commercial_invoice"), vec![1, 2]),
                (Some("packing_list"), vec![3]),
                (Some("customs_declaration"), vec![4]),
            ]
        );
        assert_eq!(segments[1].confidence, 0.7);
    }

    #[test]
    fn a_first_page_starts_a_new_document_of_the_same_type() {
        let pages = [
            page(0, Some("commercial_invoice"), true, 1.0),
            page(1, Some("commercial_invoice"), false, 1.0),
            page(2, Some("commercial_invoice"), true, 1.0),
        ];
        assert_eq!(
            summary(&segment(&pages)),
            [
                (Some("commercial_invoice"), vec![0, 1]),
                (Some("commercial_invoice"), vec![2])
            ]
        );
    }

    #[test]
    fn a_continued_page_joins_the_document_before_it_and_the_next_title_starts_another() {
        let mut continued = page(1, Some("customs_declaration"), false, 0.25);
        continued.by_labels = Some(vec!["declaration_number".into(), "invoice_number".into()]);
        continued.continues = Some(0);
        let pages = [
            page(0, Some("customs_declaration"), true, 0.9),
            continued,
            page(2, Some("customs_declaration"), true, 0.9),
        ];
        let segments = segment(&pages);
        assert_eq!(
            summary(&segments),
            [
                (Some("customs_declaration"), vec![0, 1]),
                (Some("customs_declaration"), vec![2])
            ]
        );
        assert_eq!(segments[0].confidence, 0.25, "as sure as its weakest page");
    }

    #[test]
    fn unknown_pages_form_their_own_segment() {
        let pages = [
            page(0, Some("packing_list"), true, 1.0),
            page(1, None, false, 0.0),
            page(2, None, false, 0.0),
            page(3, Some("packing_list"), false, 1.0),
        ];
        assert_eq!(
            summary(&segment(&pages)),
            [
                (Some("packing_list"), vec![0]),
                (None, vec![1, 2]),
                (Some("packing_list"), vec![3])
            ]
        );
        assert!(segment(&[]).is_empty());
    }
}
