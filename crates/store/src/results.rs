//! What reading a source produced — pages, typed segments, facts — stored in the same
//! transaction as the job's success, so a case never shows a succeeded job without its results.

use serde::Serialize;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

/// One page as read and classified.
#[derive(Debug, Clone, Serialize)]
pub struct PageRow {
    /// 0-based index in the source.
    pub page_index: i32,
    /// `text_layer`, `ocr` or `provider`.
    pub method: String,
    /// Mean word confidence, 0..=1.
    pub confidence: f32,
    /// Rotation applied before reading (degrees).
    pub rotation: i16,
    /// Document type the page was classified as, if any.
    pub doc_type: Option<String>,
    /// Classification confidence.
    pub class_confidence: Option<f32>,
    /// Why the page is UNKNOWN or ambiguous.
    pub class_reason: Option<String>,
    /// Plain text.
    pub text: String,
    /// Words with boxes and confidences (JSON array).
    pub words: serde_json::Value,
}

/// One extracted field of a segment.
#[derive(Debug, Clone, Serialize)]
pub struct FactRow {
    /// Field name.
    pub field: String,
    /// Chosen typed value (JSON), if any.
    pub value: Option<serde_json::Value>,
    /// Raw text of the chosen value.
    pub raw_text: Option<String>,
    /// Page of the chosen value.
    pub page: Option<i32>,
    /// Box of the value span (JSON).
    pub bbox: Option<serde_json::Value>,
    /// Confidence of the chosen value.
    pub confidence: Option<f32>,
    /// Candidates disagree.
    pub conflict: bool,
    /// A required field with no candidate.
    pub missing: bool,
    /// Every candidate (JSON array).
    pub candidates: serde_json::Value,
}

/// A typed page range and its facts.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentRow {
    /// Position among the source's segments.
    pub ordinal: i32,
    /// Document type, `None` for UNKNOWN.
    pub doc_type: Option<String>,
    /// Classification confidence.
    pub confidence: f32,
    /// First page (0-based).
    pub first_page: i32,
    /// Last page (0-based, inclusive).
    pub last_page: i32,
    /// Why UNKNOWN, if it is.
    pub reason: Option<String>,
    /// Extracted fields.
    pub facts: Vec<FactRow>,
}

/// Everything reading one source produced.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SourceResults {
    /// Pages in order.
    pub pages: Vec<PageRow>,
    /// Segments in order.
    pub segments: Vec<SegmentRow>,
    /// The workflow version the analysis ran under; recorded on the case (first writer wins).
    pub workflow_id: Option<Uuid>,
}

const PAGES_INSERT: &str = r#"
INSERT INTO pages (id, case_id, source_id, generation, page_index, method, confidence, rotation,
                   doc_type, class_confidence, class_reason, text, words)
SELECT gen_random_uuid(), $1, $2, $3, p.page_index, p.method, p.confidence, p.rotation,
       p.doc_type, p.class_confidence, p.class_reason, p.text, p.words
FROM unnest($4::int[], $5::text[], $6::real[], $7::smallint[], $8::text[], $9::real[], $10::text[],
            $11::text[], $12::jsonb[])
    AS p(page_index, method, confidence, rotation, doc_type, class_confidence, class_reason, text, words)
ON CONFLICT (source_id, generation, page_index) DO NOTHING
"#;

const SEGMENT_INSERT: &str = r#"
INSERT INTO segments (id, case_id, source_id, generation, ordinal, doc_type, confidence, first_page, last_page, reason)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
"#;

const FACTS_INSERT: &str = r#"
INSERT INTO facts (id, segment_id, case_id, field, value, raw_text, page, bbox, confidence, conflict, missing, candidates)
SELECT gen_random_uuid(), $1, $2, f.field, f.value, f.raw_text, f.page, f.bbox, f.confidence, f.conflict, f.missing, f.candidates
FROM unnest($3::text[], $4::jsonb[], $5::text[], $6::int[], $7::jsonb[], $8::real[], $9::bool[], $10::bool[], $11::jsonb[])
    AS f(field, value, raw_text, page, bbox, confidence, conflict, missing, candidates)
"#;

/// Inserts a source's results inside the caller's transaction.
pub(crate) async fn insert(
    tx: &mut Transaction<'_, Postgres>,
    case_id: Uuid,
    source_id: Uuid,
    generation: i32,
    results: &SourceResults,
) -> Result<(), sqlx::Error> {
    if let Some(workflow) = results.workflow_id {
        sqlx::query("UPDATE cases SET workflow_id = $2 WHERE id = $1 AND workflow_id IS NULL")
            .bind(case_id)
            .bind(workflow)
            .execute(&mut **tx)
            .await?;
    }
    let p = &results.pages;
    sqlx::query(PAGES_INSERT)
        .bind(case_id)
        .bind(source_id)
        .bind(generation)
        .bind(p.iter().map(|r| r.page_index).collect::<Vec<_>>())
        .bind(p.iter().map(|r| r.method.clone()).collect::<Vec<_>>())
        .bind(p.iter().map(|r| r.confidence).collect::<Vec<_>>())
        .bind(p.iter().map(|r| r.rotation).collect::<Vec<_>>())
        .bind(p.iter().map(|r| r.doc_type.clone()).collect::<Vec<_>>())
        .bind(p.iter().map(|r| r.class_confidence).collect::<Vec<_>>())
        .bind(p.iter().map(|r| r.class_reason.clone()).collect::<Vec<_>>())
        .bind(p.iter().map(|r| r.text.clone()).collect::<Vec<_>>())
        .bind(p.iter().map(|r| r.words.clone()).collect::<Vec<_>>())
        .execute(&mut **tx)
        .await?;
    for s in &results.segments {
        let segment_id = Uuid::now_v7();
        sqlx::query(SEGMENT_INSERT)
            .bind(segment_id)
            .bind(case_id)
            .bind(source_id)
            .bind(generation)
            .bind(s.ordinal)
            .bind(&s.doc_type)
            .bind(s.confidence)
            .bind(s.first_page)
            .bind(s.last_page)
            .bind(&s.reason)
            .execute(&mut **tx)
            .await?;
        let f = &s.facts;
        if f.is_empty() {
            continue;
        }
        sqlx::query(FACTS_INSERT)
            .bind(segment_id)
            .bind(case_id)
            .bind(f.iter().map(|r| r.field.clone()).collect::<Vec<_>>())
            .bind(f.iter().map(|r| r.value.clone()).collect::<Vec<_>>())
            .bind(f.iter().map(|r| r.raw_text.clone()).collect::<Vec<_>>())
            .bind(f.iter().map(|r| r.page).collect::<Vec<_>>())
            .bind(f.iter().map(|r| r.bbox.clone()).collect::<Vec<_>>())
            .bind(f.iter().map(|r| r.confidence).collect::<Vec<_>>())
            .bind(f.iter().map(|r| r.conflict).collect::<Vec<_>>())
            .bind(f.iter().map(|r| r.missing).collect::<Vec<_>>())
            .bind(f.iter().map(|r| r.candidates.clone()).collect::<Vec<_>>())
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}
