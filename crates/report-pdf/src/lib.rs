//! The decision report as a PDF: what [`ironclad_store::report::DecisionReport`] holds, laid out
//! for a person — title block, sources with their sha256, documents with their facts, rule
//! results with the values compared, the review and the audit trail — with page numbers.
//! The HTTP API's `GET /v1/cases/{id}/report?format=pdf` calls [`render`] on its blocking pool.
//!
//! A crate of its own so that the typesetter, its fonts and its PDF dependencies are built
//! and tested apart from the API, and the API's crate stays about HTTP.
//!
//! **The one design choice.** The PDF is written with `pdf-writer` (a low-level, dependency-free
//! writer from the Typst project) plus `ttf-parser` and `unicode-bidi`, and a small layout
//! engine of our own ([`layout`]): wrapped text, tables that run over pages, a running header.
//! The higher-level crates were weighed and refused for build time on two cores: `printpdf`
//! 0.8+ pulls in the azul layout stack, `genpdf` sits on a printpdf from 2021, and `krilla`
//! (the best of them) brings `skrifa`/`read-fonts`/`write-fonts`, `rustybuzz` and a newer
//! minimum Rust. `pdf-writer`'s own dependencies (`itoa`, `ryu`, `memchr`, `bitflags`) and
//! `ttf-parser`/`unicode-bidi`/`flate2` were already in the build.
//!
//! **Its cost.** No text shaping: no kerning or ligatures, and Arabic letters are drawn in
//! their isolated forms (right-to-left order is right, through the bidi algorithm). A
//! character DejaVu Sans has no glyph for (most emoji, CJK) is shown as `[U+XXXX]`, never
//! dropped. The fonts are embedded as subsets (only the glyphs used), 20–60 KB per report.
#![deny(missing_docs)]

mod font;
mod layout;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use ironclad_core::rules::{ComparedValue, CorrectionNote, Evidence, RuleOutcome};
use ironclad_core::DecisionStatus;
use ironclad_store::report::{DecisionOrigin, DecisionReport, ReportRulesSource, SnapshotSource};
use uuid::Uuid;

use font::Fonts;
use layout::{col, Cell, Doc, Rgb, Style};

/// Why a report could not be rendered. Both are bugs or a broken build rather than bad
/// input: every input string is drawable.
#[derive(Debug, thiserror::Error)]
pub enum ReportPdfError {
    /// An embedded font could not be read or subset.
    #[error("embedded font unusable: {0}")]
    Font(String),
    /// Compressing a stream failed.
    #[error("compressing a PDF stream failed: {0}")]
    Compress(#[source] std::io::Error),
}

/// The PDF of `report`.
pub fn render(report: &DecisionReport) -> Result<Vec<u8>, ReportPdfError> {
    let fonts = Fonts::load()?;
    let d = &report.decision;
    let case_label = report
        .case
        .external_reference
        .clone()
        .unwrap_or_else(|| report.case.id.to_string());
    let header = format!(
        "Ironclad decision report · {case_label} · version {}",
        d.version
    );
    let footer = format!(
        "Case {} · v{} · generated {}",
        report.case.id,
        d.version,
        report.generated_at.format("%Y-%m-%d %H:%M UTC")
    );
    let mut doc = Doc::new(&fonts, &header, &footer);
    title_block(&mut doc, report);
    sources(&mut doc, report);
    documents(&mut doc, report);
    rule_results(&mut doc, report);
    reviews(&mut doc, report);
    audit(&mut doc, report);
    doc.finish(&format!(
        "Decision report, case {}, version {}",
        report.case.id, d.version
    ))
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

fn or_dash(text: Option<&str>) -> String {
    match text {
        Some(t) if !t.trim().is_empty() => t.to_owned(),
        _ => "—".to_owned(),
    }
}

fn status_color(status: DecisionStatus) -> Rgb {
    match status {
        DecisionStatus::Ready => Rgb::GREEN,
        DecisionStatus::Blocked => Rgb::RED,
        DecisionStatus::ReviewRequired => Rgb::AMBER,
    }
}

fn outcome_color(outcome: RuleOutcome) -> Rgb {
    match outcome {
        RuleOutcome::Pass => Rgb::GREEN,
        RuleOutcome::Fail => Rgb::RED,
        RuleOutcome::ReviewRequired => Rgb::AMBER,
        RuleOutcome::NotApplicable => Rgb::GREY,
    }
}

fn title_block(doc: &mut Doc<'_>, report: &DecisionReport) {
    let d = &report.decision;
    doc.title("Decision report");
    doc.paragraph(
        d.status.as_str(),
        Style::bold(13.0).with_color(status_color(d.status)),
    );
    doc.paragraph(&d.summary, Style::regular(10.0));
    doc.space(6.0);
    if let Some(at) = d.superseded_at {
        doc.paragraph(
            &format!(
                "Version {} of {}: superseded on {}. This report shows the decision as it was \
                 then; the case's later history is left out.",
                d.version,
                d.latest_version,
                timestamp(at)
            ),
            Style::regular(9.0).with_color(Rgb::AMBER),
        );
        doc.space(4.0);
    }
    let rules = match d.rules_source {
        ReportRulesSource::Ruleset => format!(
            "managed ruleset {} version {}",
            d.ruleset_id
                .map_or_else(|| "—".to_owned(), |id| id.to_string()),
            d.ruleset_version
                .map_or_else(|| "—".to_owned(), |v| v.to_string())
        ),
        ReportRulesSource::Workflow => "the rules of the workflow file".to_owned(),
    };
    let mut rows = vec![
        ("Case", report.case.id.to_string()),
        (
            "Reference",
            or_dash(report.case.external_reference.as_deref()),
        ),
        ("Workflow", or_dash(report.case.workflow.as_deref())),
        ("Submitted", timestamp(report.case.created_at)),
        (
            "Decision",
            format!(
                "version {} of {} · generation {} · {} by {} · {}",
                d.version,
                d.latest_version,
                d.generation,
                match d.origin {
                    DecisionOrigin::Finalize => "finalized",
                    DecisionOrigin::Reevaluate => "reevaluated",
                    DecisionOrigin::Correction => "decided again after a correction",
                },
                d.decided_by,
                timestamp(d.created_at)
            ),
        ),
        ("Rules", rules),
    ];
    if let Some(policy) = report.snapshot.rules.as_ref().map(|r| &r.policy) {
        if let Some(obj) = policy.as_object() {
            rows.push(("Policy", key_values(obj)));
        }
    }
    if let Some(state) = &report.case_state {
        let mut now = state.status.to_string();
        if let Some(resolution) = state.resolution {
            now.push_str(&format!(
                " — {resolution} by {}",
                or_dash(state.resolved_by.as_deref())
            ));
            if let Some(at) = state.resolved_at {
                now.push_str(&format!(" on {}", timestamp(at)));
            }
        }
        rows.push(("Case now", now));
    }
    doc.fields(&rows);
}

fn sources(doc: &mut Doc<'_>, report: &DecisionReport) {
    doc.heading("Sources");
    let list = &report.snapshot.sources;
    if list.is_empty() {
        doc.paragraph(
            "The decision's snapshot lists no files.",
            Style::regular(9.0).with_color(Rgb::GREY),
        );
        return;
    }
    let hash_style = Style::regular(7.0);
    let rows: Vec<Vec<Cell>> = list
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // Two lines of 32 hex digits read (and compare) better than one cut anywhere.
            let hash = if s.sha256.len() == 64 && s.sha256.is_ascii() {
                format!("{}\n{}", &s.sha256[..32], &s.sha256[32..])
            } else {
                s.sha256.clone()
            };
            vec![
                Cell::new((i + 1).to_string()),
                Cell::new(s.filename.clone()),
                Cell::new(s.media_type.clone()),
                Cell::new(s.pages.to_string()),
                Cell::new(size(s.size_bytes)),
                Cell::styled(hash, hash_style),
            ]
        })
        .collect();
    doc.table(
        &[
            col("#", 0.35),
            col("File name", 3.4),
            col("Media type", 1.55),
            col("Pages", 0.6),
            col("Size", 0.9),
            col("SHA-256", 2.9),
        ],
        &rows,
    );
}

fn size(bytes: i64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}

/// Each source's number in the Sources table ("source 2"), which is shorter and safer to
/// repeat than a client's file name.
fn source_numbers(sources: &[SnapshotSource]) -> HashMap<Uuid, usize> {
    sources
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id, i + 1))
        .collect()
}

fn source_label(numbers: &HashMap<Uuid, usize>, source: Uuid) -> String {
    numbers
        .get(&source)
        .map_or_else(|| "unlisted source".to_owned(), |n| format!("source {n}"))
}

fn documents(doc: &mut Doc<'_>, report: &DecisionReport) {
    doc.heading("Documents and facts");
    let numbers = source_numbers(&report.snapshot.sources);
    if report.snapshot.documents.is_empty() {
        doc.paragraph(
            "The decision's snapshot holds no documents.",
            Style::regular(9.0).with_color(Rgb::GREY),
        );
        return;
    }
    for (i, d) in report.snapshot.documents.iter().enumerate() {
        let pages = if d.first_page == d.last_page {
            format!("page {}", d.first_page + 1)
        } else {
            format!("pages {}–{}", d.first_page + 1, d.last_page + 1)
        };
        doc.subheading(&format!(
            "{}. {} — {}, {pages}",
            i + 1,
            d.document_type.as_deref().unwrap_or("UNKNOWN"),
            source_label(&numbers, d.source_id),
        ));
        if d.facts.is_empty() {
            doc.paragraph(
                "No fields were extracted from this document.",
                Style::regular(8.5).with_color(Rgb::GREY),
            );
            continue;
        }
        let rows: Vec<Vec<Cell>> = d
            .facts
            .iter()
            .map(|f| {
                let mut notes = Vec::new();
                if f.missing {
                    notes.push("missing".to_owned());
                }
                if f.conflict {
                    notes.push("conflicting readings".to_owned());
                }
                if let Some(note) = &f.evidence.correction {
                    notes.push(corrected(note));
                }
                let value = match (&f.value, f.missing) {
                    (Some(v), _) => Cell::new(v.to_string()),
                    (None, _) => Cell::styled("—", Style::regular(8.0).with_color(Rgb::GREY)),
                };
                vec![
                    Cell::new(f.field.clone()),
                    value,
                    Cell::new(page(&f.evidence)),
                    Cell::new(confidence(&f.evidence)),
                    Cell::new(or_dash(f.evidence.raw_text.as_deref())),
                    if notes.is_empty() {
                        Cell::new("")
                    } else {
                        Cell::styled(notes.join(", "), Style::regular(8.0).with_color(Rgb::AMBER))
                    },
                ]
            })
            .collect();
        doc.table(
            &[
                col("Field", 1.5),
                col("Value", 2.0),
                col("Page", 0.55),
                col("Confidence", 0.95),
                col("As printed", 2.0),
                col("Notes", 1.9),
            ],
            &rows,
        );
    }
}

/// The evidence's page, 1-based as people count.
fn page(evidence: &Evidence) -> String {
    evidence
        .page
        .map_or_else(|| "—".to_owned(), |p| (u64::from(p) + 1).to_string())
}

fn confidence(evidence: &Evidence) -> String {
    match evidence.confidence {
        Some(c) if c.is_finite() => format!("{:.0} %", c * 100.0),
        Some(_) => "?".to_owned(),
        // A value entered by a person carries no confidence and is taken as confident.
        None => "—".to_owned(),
    }
}

fn compared(value: &ComparedValue, numbers: &HashMap<Uuid, usize>) -> String {
    let what = if value.field.is_empty() {
        value.document_type.to_string()
    } else {
        format!("{}.{}", value.document_type, value.field)
    };
    let shown = match &value.value {
        Some(v) => format!(" = {v}"),
        None if value.field.is_empty() => String::new(),
        None => " missing".to_owned(),
    };
    let mut place = Vec::new();
    if let Some(source) = value.evidence.source_id {
        place.push(source_label(numbers, source));
    }
    if value.evidence.page.is_some() {
        place.push(format!("p. {}", page(&value.evidence)));
    }
    if value.evidence.confidence.is_some() {
        place.push(confidence(&value.evidence));
    }
    if let Some(note) = &value.evidence.correction {
        place.push(corrected(note));
    }
    if place.is_empty() {
        format!("{what}{shown}")
    } else {
        format!("{what}{shown} ({})", place.join(", "))
    }
}

/// A corrected value's note: who corrected it and why.
fn corrected(note: &CorrectionNote) -> String {
    format!("corrected by {}: {}", note.by, note.reason)
}

fn rule_results(doc: &mut Doc<'_>, report: &DecisionReport) {
    doc.heading("Rule results");
    let results = &report.rule_results;
    if results.is_empty() {
        doc.paragraph(
            "No rule results were recorded for this decision.",
            Style::regular(9.0).with_color(Rgb::GREY),
        );
        return;
    }
    let count = |o: RuleOutcome| results.iter().filter(|r| r.outcome == o).count();
    doc.paragraph(
        &format!(
            "{} passed · {} failed · {} need review · {} not applicable",
            count(RuleOutcome::Pass),
            count(RuleOutcome::Fail),
            count(RuleOutcome::ReviewRequired),
            count(RuleOutcome::NotApplicable)
        ),
        Style::regular(9.0).with_color(Rgb::GREY),
    );
    doc.space(3.0);
    let numbers = source_numbers(&report.snapshot.sources);
    let rows: Vec<Vec<Cell>> = results
        .iter()
        .map(|r| {
            let mut rule = format!("{}\n{}", r.rule_id, r.template);
            if let Some(on_fail) = r.on_fail {
                rule.push_str(&format!("\non fail: {on_fail}"));
            }
            let values = if r.values.is_empty() {
                "—".to_owned()
            } else {
                r.values
                    .iter()
                    // A no-break space keeps the bullet with its entry.
                    .map(|v| format!("•\u{a0}{}", compared(v, &numbers)))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            vec![
                Cell::new((r.ordinal + 1).to_string()),
                Cell::new(rule),
                Cell::styled(
                    r.outcome.to_string(),
                    Style::bold(7.5).with_color(outcome_color(r.outcome)),
                ),
                Cell::new(r.message.clone()),
                Cell::new(values),
            ]
        })
        .collect();
    doc.table(
        &[
            col("#", 0.35),
            col("Rule", 2.1),
            col("Outcome", 1.75),
            col("Message", 3.2),
            col("Values compared (source, page, confidence)", 3.4),
        ],
        &rows,
    );
}

fn reviews(doc: &mut Doc<'_>, report: &DecisionReport) {
    doc.heading("Review");
    if report.reviews.is_empty() {
        doc.paragraph(
            "No review was opened for this decision.",
            Style::regular(9.0).with_color(Rgb::GREY),
        );
        return;
    }
    let rows: Vec<Vec<Cell>> = report
        .reviews
        .iter()
        .map(|r| {
            let by = match (&r.actor, &r.actor_role) {
                (Some(a), Some(role)) => format!("{a} ({role})"),
                (Some(a), None) => a.clone(),
                _ => "—".to_owned(),
            };
            vec![
                Cell::new(r.status.to_string()),
                Cell::new(
                    r.resolution
                        .map_or_else(|| "—".to_owned(), |x| x.to_string()),
                ),
                Cell::new(by),
                Cell::new(timestamp(r.created_at)),
                Cell::new(r.resolved_at.map_or_else(|| "—".to_owned(), timestamp)),
                Cell::new(or_dash(r.comment.as_deref())),
            ]
        })
        .collect();
    doc.table(
        &[
            col("Status", 1.1),
            col("Resolution", 1.2),
            col("By", 1.5),
            col("Opened", 1.35),
            col("Resolved", 1.35),
            col("Comment", 3.5),
        ],
        &rows,
    );
}

fn audit(doc: &mut Doc<'_>, report: &DecisionReport) {
    doc.heading("Audit trail");
    if let Some(at) = report.decision.superseded_at {
        doc.paragraph(
            &format!(
                "Events up to {}, when version {} was written.",
                timestamp(at),
                report.decision.version + 1
            ),
            Style::regular(9.0).with_color(Rgb::GREY),
        );
        doc.space(3.0);
    }
    if report.audit.is_empty() {
        doc.paragraph("No events.", Style::regular(9.0).with_color(Rgb::GREY));
        return;
    }
    let hash_style = Style::regular(7.0).with_color(Rgb::GREY);
    let rows: Vec<Vec<Cell>> = report
        .audit
        .iter()
        .map(|e| {
            let details = match e.data.as_object() {
                Some(obj) => key_values(obj),
                None => e.data.to_string(),
            };
            vec![
                Cell::new(timestamp(e.created_at)),
                Cell::new(e.actor.clone()),
                Cell::new(e.event_type.clone()),
                Cell::new(details),
                Cell::styled(
                    e.hash.as_deref().map_or_else(
                        || "(being sealed)".to_owned(),
                        |h| h.chars().take(16).collect::<String>(),
                    ),
                    hash_style,
                ),
            ]
        })
        .collect();
    doc.table(
        &[
            col("When", 1.4),
            col("Actor", 1.4),
            col("Event", 2.0),
            col("Details", 3.75),
            col("Chain hash", 1.55),
        ],
        &rows,
    );
}

/// A JSON object as `key: value` pairs, strings unquoted, nulls left out.
fn key_values(obj: &serde_json::Map<String, serde_json::Value>) -> String {
    obj.iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use ironclad_core::page::BBox;
    use ironclad_core::parse::Value;
    use ironclad_core::review::{Resolution, ReviewStatus};
    use ironclad_core::rules::{DocumentFacts, FactInput, OnFail, RuleTemplate};
    use ironclad_core::CaseStatus;
    use ironclad_store::report::{
        CaseState, DecisionSnapshot, ReportAuditEvent, ReportCase, ReportDecision, ReportReview,
        ReportRuleResult, SnapshotRules,
    };
    use serde_json::json;

    /// Text meant to break a renderer: markup, quotes, PDF syntax, emoji (one DejaVu has, one
    /// it has not), right-to-left scripts, a bidi override, a control character and a
    /// 5,000-character line without a space.
    pub(crate) fn hostile(tag: &str) -> String {
        format!(
            "{tag} <script>alert(\"x\")</script> 'q' (paren) \\ %PDF-1.7 %%EOF endobj 😀🚀 \
             שלום עולם مرحبا بالعالم a\u{202E}fdp.exe \u{7} {}",
            "W".repeat(5000)
        )
    }

    pub(crate) fn sample_report(superseded: bool) -> DecisionReport {
        let at = |h: u32| {
            Utc.with_ymd_and_hms(2026, 11, 30, 9 + h, 15, 0)
                .single()
                .unwrap_or_default()
        };
        let source = Uuid::from_u128(0x5eed);
        let evidence = |page: u32, raw: &str, confidence: f64| Evidence {
            source_id: Some(source),
            page: Some(page),
            bbox: Some(BBox {
                x0: 0.1,
                y0: 0.2,
                x1: 0.4,
                y1: 0.23,
            }),
            raw_text: Some(raw.into()),
            confidence: Some(confidence),
            read_method: None,
            correction: None,
        };
        let fact = |field: &str, value: Option<Value>, raw: &str, confidence: f64| FactInput {
            field: field.to_owned(),
            missing: value.is_none(),
            value: value.map(Into::into),
            evidence: evidence(1, raw, confidence),
            conflict: field == "gross_weight",
        };
        DecisionReport {
            case: ReportCase {
                id: Uuid::from_u128(0xca5e),
                external_reference: Some(hostile("REF")),
                workflow: Some("trade".into()),
                created_at: at(0),
            },
            case_state: (!superseded).then_some(CaseState {
                status: CaseStatus::Resolved,
                resolution: Some(Resolution::Overridden),
                resolved_by: Some("reviewer@acme".into()),
                resolved_at: Some(at(3)),
            }),
            decision: ReportDecision {
                id: Uuid::from_u128(0xdec1),
                version: 1,
                latest_version: if superseded { 2 } else { 1 },
                superseded_at: superseded.then(|| at(2)),
                generation: 1,
                status: DecisionStatus::Blocked,
                summary: "BLOCKED: container_matches failed".into(),
                origin: DecisionOrigin::Finalize,
                decided_by: "system:finalize".into(),
                rules_source: ReportRulesSource::Workflow,
                ruleset_id: None,
                ruleset_version: None,
                created_at: at(1),
            },
            snapshot: DecisionSnapshot {
                generation: Some(1),
                rules: Some(SnapshotRules {
                    source: Some("workflow".into()),
                    policy: json!({"confidence_floor": 0.6, "auto_approve_ready": false}),
                    ..SnapshotRules::default()
                }),
                sources: vec![SnapshotSource {
                    id: source,
                    filename: hostile("file"),
                    sha256: "ab".repeat(32),
                    media_type: "application/pdf".into(),
                    size_bytes: 123_456,
                    pages: 3,
                }],
                documents: vec![DocumentFacts {
                    segment_id: Uuid::from_u128(0x5e6),
                    source_id: source,
                    document_type: Some("bill_of_lading".into()),
                    first_page: 0,
                    last_page: 2,
                    facts: vec![
                        fact(
                            "container_number",
                            Some(Value::ContainerNumber {
                                code: "MSCU1234566".into(),
                                check_digit_valid: true,
                            }),
                            "MSCU 123456-6",
                            0.97,
                        ),
                        fact(
                            "consignee",
                            Some(Value::Text(hostile("consignee"))),
                            &hostile("raw"),
                            0.71,
                        ),
                        fact("gross_weight", None, "", 0.4),
                    ],
                }],
            },
            rule_results: vec![
                ReportRuleResult {
                    ordinal: 0,
                    rule_id: "container_matches".into(),
                    template: RuleTemplate::ExactMatch,
                    outcome: RuleOutcome::Fail,
                    on_fail: Some(OnFail::Blocked),
                    message: format!("container differs: {}", hostile("message")),
                    values: vec![ComparedValue {
                        document_type: "bill_of_lading".into(),
                        field: "container_number".into(),
                        value: Some(Value::Text("MSCU1234566".into()).into()),
                        evidence: evidence(0, "MSCU1234566", 0.97),
                    }],
                },
                ReportRuleResult {
                    ordinal: 1,
                    rule_id: "safeguard_low_confidence".into(),
                    template: RuleTemplate::Safeguard,
                    outcome: RuleOutcome::ReviewRequired,
                    on_fail: None,
                    message: "gross_weight read at 40 %, below the floor of 60 %".into(),
                    values: vec![],
                },
            ],
            reviews: vec![ReportReview {
                id: Uuid::from_u128(0x7e7),
                status: ReviewStatus::Resolved,
                resolution: Some(Resolution::Overridden),
                actor: Some("reviewer@acme".into()),
                actor_role: Some("reviewer".into()),
                comment: Some(hostile("comment")),
                created_at: at(1),
                resolved_at: Some(at(3)),
            }],
            audit: (0..3)
                .map(|i| ReportAuditEvent {
                    id: i,
                    actor: "system:finalize".into(),
                    event_type: "DECISION_GENERATED".into(),
                    data: json!({"version": 1, "status": "BLOCKED", "note": hostile("audit")}),
                    created_at: at(1),
                    hash: Some("0f".repeat(32)),
                })
                .collect(),
            generated_at: at(4),
        }
    }

    #[test]
    fn hostile_text_renders_without_panic_and_values_read_as_people_write_them() {
        let pdf = render(&sample_report(true)).expect("renders");
        assert!(pdf.starts_with(b"%PDF-"));
        // User text travels as glyph ids in compressed streams, never as PDF syntax.
        let text = String::from_utf8_lossy(&pdf);
        assert!(!text.contains("<script>") && !text.contains("fdp.exe"));
        assert_eq!(text.matches("%%EOF").count(), 1);
        if let Ok(dir) = std::env::var("IRONCLAD_REPORT_SAMPLE") {
            std::fs::write(dir, &pdf).expect("sample written");
        }
        assert_eq!(
            Value::Weight {
                kg: "453.59".parse().expect("decimal"),
                unit: "lb".into()
            }
            .to_string(),
            "453.59 kg (written in lb)"
        );
        assert_eq!(size(123_456), "120.6 KB");
    }
}
