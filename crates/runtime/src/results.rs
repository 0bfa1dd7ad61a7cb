//! What a processor read, as the rows the store keeps with the job's success.

use ironclad_documents::processor::ProcessedSource;
use ironclad_store::results::{FactRow, PageRow, SegmentRow, SourceResults};
use std::collections::HashMap;

fn to_i32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// Turns what a processor read into the rows the store keeps with the job's success.
pub fn source_results(processed: &ProcessedSource) -> Option<SourceResults> {
    if processed.read.is_empty() {
        return None;
    }
    let classes: HashMap<u32, &ironclad_core::analysis::PageClass> = processed
        .analysis
        .as_ref()
        .map(|a| a.pages.iter().map(|c| (c.page, c)).collect())
        .unwrap_or_default();
    let pages = processed
        .read
        .iter()
        .map(|p| {
            let class = classes.get(&p.index);
            PageRow {
                page_index: to_i32(p.index),
                method: match p.method {
                    ironclad_core::page::ReadMethod::TextLayer => "text_layer",
                    ironclad_core::page::ReadMethod::Ocr => "ocr",
                    ironclad_core::page::ReadMethod::Provider => "provider",
                }
                .to_owned(),
                confidence: p.confidence.clamp(0.0, 1.0),
                rotation: i16::try_from(p.rotation).unwrap_or(0),
                doc_type: class.and_then(|c| c.doc_type.clone()),
                class_confidence: class.map(|c| c.confidence as f32),
                class_reason: class.and_then(|c| c.explanation()),
                text: p.text(),
                words: serde_json::to_value(&p.words).unwrap_or(serde_json::Value::Null),
            }
        })
        .collect();
    let segments = processed
        .analysis
        .as_ref()
        .map(|a| {
            a.segments
                .iter()
                .enumerate()
                .map(|(i, s)| SegmentRow {
                    ordinal: i32::try_from(i).unwrap_or(i32::MAX),
                    doc_type: s.segment.doc_type.clone(),
                    confidence: s.segment.confidence as f32,
                    first_page: to_i32(s.segment.pages.first().copied().unwrap_or(0)),
                    last_page: to_i32(s.segment.pages.last().copied().unwrap_or(0)),
                    reason: s
                        .segment
                        .doc_type
                        .is_none()
                        .then(|| {
                            s.segment
                                .pages
                                .iter()
                                .filter_map(|p| classes.get(p).and_then(|c| c.reason.clone()))
                                .next()
                        })
                        .flatten(),
                    facts: s
                        .facts
                        .iter()
                        .map(|f| FactRow {
                            field: f.field.clone(),
                            value: f
                                .chosen
                                .as_ref()
                                .and_then(|c| serde_json::to_value(&c.value).ok()),
                            raw_text: f.chosen.as_ref().map(|c| c.raw.clone()),
                            page: f.chosen.as_ref().map(|c| to_i32(c.page)),
                            bbox: f
                                .chosen
                                .as_ref()
                                .and_then(|c| serde_json::to_value(c.bbox).ok()),
                            confidence: f.chosen.as_ref().map(|c| c.confidence as f32),
                            conflict: f.conflict,
                            missing: f.missing_required,
                            candidates: serde_json::to_value(&f.candidates)
                                .unwrap_or(serde_json::Value::Null),
                        })
                        .collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(SourceResults {
        pages,
        segments,
        workflow_id: processed.workflow_id,
    })
}
