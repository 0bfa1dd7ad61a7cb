//! Checking the model's values against the page text before any is believed.
//!
//! A value is accepted only if it is printed in the segment's pages. Matching is done on
//! folded text ([`ironclad_core::fold`]: accents, case and compatibility forms do
//! not matter) with these whitespace rules:
//!
//! * where the value has whitespace, the page may have any amount, line breaks included, or
//!   none (`USD 1,234.56` finds `USD1,234.56`);
//! * where the value has none, the page may have spaces, but not a line break and not
//!   between two digits (`MSCU1234566` finds `MSCU 1234566`; `12` does not find `1 2`, which
//!   would join two numbers);
//! * the match may not start or end inside a word: `INV-4` does not find `INV-42`.
//!
//! The first occurrence in page order is the evidence: its words give the box and OCR
//! confidence, and the text *as printed there* — not the model's spelling — is what the
//! field's parser reads (with the field's unit and the workflow's locale hints, as the
//! built-in extraction does). Anything else is rejected with a reason, never stored as a
//! fact.
//!
//! An accepted value becomes a [`Candidate`] marked [`PROVIDER_PATTERN`], with confidence
//! `ocr confidence × parser certainty × `[`PROVIDER_CONFIDENCE_FACTOR`], so on the same
//! evidence a workflow pattern's reading ranks first. A value equal to one the patterns
//! already found adds nothing (it is reported as agreeing).

use ironclad_core::fold::{fold, fold_str, Folded};
use ironclad_core::page::{BBox, PageText};
use ironclad_core::parse::ParserKind;
use ironclad_extract::extract::{choose, read_field, round, same_value};
use ironclad_extract::workflow::DocumentTypeSpec;
use ironclad_extract::{Candidate, Fact, Workflow};
use serde::Serialize;
use serde_json::Map;
use std::ops::Range;

use crate::client::kind_of;

/// [`Candidate::pattern`] of a value the provider proposed and the text confirmed. Far above
/// any real pattern index (a field has at most 16 patterns), and below 2^32 so it survives
/// JSON readers that hold numbers as doubles.
pub const PROVIDER_PATTERN: usize = u32::MAX as usize;

/// Weight of a provider reading against a pattern reading of the same words.
pub const PROVIDER_CONFIDENCE_FACTOR: f64 = 0.9;

/// Longest value considered, in characters; field values are short.
pub const MAX_VALUE_CHARS: usize = 200;

/// Most rejections kept per segment; the rest are only counted.
pub const MAX_REJECTED: usize = 64;

/// Longest rejected value quoted in the summary, in characters.
const MAX_QUOTED_CHARS: usize = 120;

/// What became of a reply's values.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Verification {
    /// Values found in the text and parsed.
    pub accepted: Vec<Accepted>,
    /// Values refused, with the reason.
    pub rejected: Vec<Rejected>,
    /// Rejections beyond [`MAX_REJECTED`], counted only.
    pub rejected_omitted: usize,
    /// Fields the model gave as null or empty, or left out.
    pub absent: Vec<String>,
}

/// A confirmed value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accepted {
    /// Field name.
    pub field: String,
    /// The evidence, as the patterns would have recorded it.
    pub candidate: Candidate,
    /// Whether a workflow pattern already found the same value (then nothing is added).
    pub agrees_with_patterns: bool,
}

/// A refused value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejected {
    /// The key the model used.
    pub field: String,
    /// The value as the model wrote it, shortened.
    pub value: String,
    /// Why it was refused.
    #[serde(serialize_with = "display")]
    pub reason: Rejection,
}

fn display<S: serde::Serializer>(r: &Rejection, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&r.to_string())
}

/// Why a value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The key is not a field of the document type.
    #[error("{doc_type} has no field of this name")]
    UnknownField {
        /// The document type.
        doc_type: String,
    },
    /// An array, object or boolean.
    #[error("the value is {kind}, not text")]
    NotText {
        /// What it is.
        kind: &'static str,
    },
    /// Longer than [`MAX_VALUE_CHARS`].
    #[error("the value is {chars} characters long; at most {limit} are considered")]
    TooLong {
        /// Its length.
        chars: usize,
        /// The limit.
        limit: usize,
    },
    /// Not printed in the segment's pages: invented, reformatted or computed.
    #[error("the value is not printed in the document's text")]
    NotInText,
    /// Printed, but the field's parser cannot read it.
    #[error("the text found cannot be read as {parser}: {error}")]
    Unparseable {
        /// The field's parser.
        parser: ParserKind,
        /// The parser's reason.
        error: String,
    },
}

impl Rejection {
    /// A stable code for the summary and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownField { .. } => "unknown_field",
            Self::NotText { .. } => "not_text",
            Self::TooLong { .. } => "too_long",
            Self::NotInText => "not_in_text",
            Self::Unparseable { .. } => "unparseable",
        }
    }
}

/// Checks every value of `reply` (the model's `fields` object) for `doc_type` against the
/// segment's `pages`, in the workflow's field order, then any other keys. `facts` are the built-in extraction's facts for the segment, used only
/// to tell whether an accepted value agrees with them.
pub fn verify(
    workflow: &Workflow,
    doc_type: &str,
    pages: &[&PageText],
    facts: &[Fact],
    reply: &Map<String, serde_json::Value>,
) -> Verification {
    let mut out = Verification::default();
    let spec = workflow.document_type(doc_type);
    let layouts: Vec<Layout<'_>> = pages.iter().map(|p| Layout::new(p)).collect();
    // Workflow order first, then keys that are no field, so summaries read like the workflow.
    let known = spec.map(|s| s.fields.as_slice()).unwrap_or_default();
    let ordered = known
        .iter()
        .filter_map(|f| reply.get_key_value(&f.name))
        .chain(
            reply
                .iter()
                .filter(|(k, _)| !known.iter().any(|f| &f.name == *k)),
        );
    for (name, value) in ordered {
        match check(workflow, spec, doc_type, &layouts, facts, name, value) {
            Ok(Some(accepted)) => out.accepted.push(accepted),
            Ok(None) => out.absent.push(name.clone()),
            Err(reason) if out.rejected.len() < MAX_REJECTED => out.rejected.push(Rejected {
                field: name.clone(),
                value: quote(value),
                reason,
            }),
            Err(_) => out.rejected_omitted += 1,
        }
    }
    if let Some(spec) = spec {
        out.absent.extend(
            spec.fields
                .iter()
                .filter(|f| !reply.contains_key(&f.name))
                .map(|f| f.name.clone()),
        );
    }
    out
}

/// One value: `Ok(None)` when the model said it is not there.
fn check(
    workflow: &Workflow,
    spec: Option<&DocumentTypeSpec>,
    doc_type: &str,
    layouts: &[Layout<'_>],
    facts: &[Fact],
    name: &str,
    value: &serde_json::Value,
) -> Result<Option<Accepted>, Rejection> {
    let Some((spec, field)) =
        spec.and_then(|s| Some((s, s.fields.iter().find(|f| f.name == name)?)))
    else {
        return Err(Rejection::UnknownField {
            doc_type: doc_type.to_owned(),
        });
    };
    let text = match value {
        serde_json::Value::Null => return Ok(None),
        serde_json::Value::String(s) if s.trim().is_empty() => return Ok(None),
        serde_json::Value::String(s) => s.clone(),
        // A count is often given as a bare number; it must still be printed as written.
        serde_json::Value::Number(n) => n.to_string(),
        other => {
            return Err(Rejection::NotText {
                kind: kind_of(other),
            })
        }
    };
    let chars = text.chars().count();
    if chars > MAX_VALUE_CHARS {
        return Err(Rejection::TooLong {
            chars,
            limit: MAX_VALUE_CHARS,
        });
    }
    let (layout, range) = layouts
        .iter()
        .find_map(|l| l.find(&text).map(|r| (l, r)))
        .ok_or(Rejection::NotInText)?;
    let (bbox, ocr_confidence) = layout.evidence(range.clone()).ok_or(Rejection::NotInText)?;
    let raw = layout.text[range].trim();
    let parsed = read_field(workflow, &spec.id, name, raw)
        .ok_or_else(|| Rejection::UnknownField {
            doc_type: doc_type.to_owned(),
        })?
        .map_err(|e| Rejection::Unparseable {
            parser: field.parser,
            error: e.to_string(),
        })?;
    let agrees_with_patterns = facts.iter().filter(|f| f.field == name).any(|f| {
        f.candidates
            .iter()
            .any(|c| c.pattern != PROVIDER_PATTERN && same_value(&c.value, &parsed.value))
    });
    Ok(Some(Accepted {
        field: name.to_owned(),
        candidate: Candidate {
            page: layout.page.index,
            bbox,
            raw: raw.to_owned(),
            confidence: round(ocr_confidence * parsed.certainty * PROVIDER_CONFIDENCE_FACTOR),
            ocr_confidence: round(ocr_confidence),
            certainty: parsed.certainty,
            value: parsed.value,
            pattern: PROVIDER_PATTERN,
            label_bbox: None,
            template: None,
            origin: None,
        },
        agrees_with_patterns,
    }))
}

/// Adds the accepted values that the patterns did not already find to the segment's facts,
/// then chooses again exactly as the built-in extraction does (best confidence first, ties
/// to the earlier pattern; a close disagreement is a conflict).
pub fn merge(facts: &mut [Fact], accepted: &[Accepted]) {
    for a in accepted.iter().filter(|a| !a.agrees_with_patterns) {
        let Some(fact) = facts.iter_mut().find(|f| f.field == a.field) else {
            continue;
        };
        // Idempotent: a second merge replaces the provider's earlier value.
        fact.candidates.retain(|c| c.pattern != PROVIDER_PATTERN);
        fact.candidates.push(a.candidate.clone());
        choose(fact);
    }
}

fn quote(value: &serde_json::Value) -> String {
    let text = match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// A page's text rebuilt from its words as [`PageText::text`] does, remembering each word's
/// bytes (the same construction as `ironclad_extract`'s private layout, so evidence boxes
/// agree with the patterns').
struct Layout<'p> {
    page: &'p PageText,
    text: String,
    /// Byte range of each kept word in `text`, with its index in `page.words`.
    spans: Vec<(Range<usize>, usize)>,
    folded: Folded,
}

impl<'p> Layout<'p> {
    fn new(page: &'p PageText) -> Self {
        let mut text = String::new();
        let mut spans = Vec::with_capacity(page.words.len());
        let mut current: Option<u32> = None;
        for (i, w) in page.words.iter().enumerate() {
            if w.text.trim().is_empty() {
                continue;
            }
            match current {
                Some(l) if l == w.line => text.push(' '),
                Some(_) => text.push('\n'),
                None => {}
            }
            let start = text.len();
            text.extend(
                w.text
                    .chars()
                    .map(|c| if c == '\n' || c == '\r' { ' ' } else { c }),
            );
            spans.push((start..text.len(), i));
            current = Some(w.line);
        }
        let folded = fold(&text);
        Self {
            page,
            text,
            spans,
            folded,
        }
    }

    /// The byte range of `value`'s first occurrence in [`Self::text`], under the rules in
    /// the module documentation.
    fn find(&self, value: &str) -> Option<Range<usize>> {
        // The value's characters, folded, each with whether whitespace preceded it.
        let mut want: Vec<(char, bool)> = Vec::new();
        let mut gap = false;
        for c in fold_str(value).chars() {
            if c.is_whitespace() {
                gap = true;
            } else {
                want.push((c, gap));
                gap = false;
            }
        }
        let (first, _) = *want.first()?;
        let (last, _) = *want.last()?;
        let hay = self.folded.as_str();
        for (start, c) in hay.char_indices() {
            if c != first
                || (first.is_alphanumeric()
                    && hay[..start]
                        .chars()
                        .next_back()
                        .is_some_and(char::is_alphanumeric))
            {
                continue;
            }
            let Some(end) = match_at(hay, start, &want) else {
                continue;
            };
            if last.is_alphanumeric()
                && hay[end..].chars().next().is_some_and(char::is_alphanumeric)
            {
                continue;
            }
            return Some(self.folded.original_range(start..end));
        }
        None
    }

    /// Box (union) and mean confidence of the words `range` overlaps.
    fn evidence(&self, range: Range<usize>) -> Option<(BBox, f64)> {
        let mut bbox: Option<BBox> = None;
        let (mut sum, mut n) = (0.0f64, 0u32);
        for (r, i) in &self.spans {
            if r.end <= range.start || r.start >= range.end {
                continue;
            }
            let w = self.page.words.get(*i)?;
            let b = w.bbox.normalized();
            bbox = Some(bbox.map_or(b, |acc| acc.union(b)));
            sum += f64::from(w.confidence).clamp(0.0, 1.0);
            n += 1;
        }
        bbox.map(|b| (b, sum / f64::from(n)))
    }
}

/// Matches `want` at `start` of `hay`; returns the end offset.
fn match_at(hay: &str, start: usize, want: &[(char, bool)]) -> Option<usize> {
    let mut pos = start;
    let mut previous: Option<char> = None;
    for &(w, gap) in want {
        let mut line_break = false;
        let mut spaced = false;
        loop {
            let c = hay[pos..].chars().next()?;
            if previous.is_some() && c.is_whitespace() {
                line_break |= c == '\n';
                spaced = true;
                pos += c.len_utf8();
                continue;
            }
            if c != w {
                return None;
            }
            break;
        }
        if !gap
            && spaced
            && (line_break || (w.is_ascii_digit() && previous.is_some_and(|p| p.is_ascii_digit())))
        {
            return None;
        }
        pos += w.len_utf8();
        previous = Some(w);
    }
    Some(pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironclad_core::page::{ReadMethod, Word};
    use serde_json::json;

    /// Word `j` of line `i` spans x = j*0.1 .. j*0.1+0.08, y = i*0.02.
    fn page(lines: &[&str], confidence: f32) -> PageText {
        let mut words = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            for (j, t) in line.split_whitespace().enumerate() {
                let (x, y) = (j as f32 * 0.1, i as f32 * 0.02);
                words.push(Word {
                    text: t.to_owned(),
                    bbox: BBox {
                        x0: x,
                        y0: y,
                        x1: x + 0.08,
                        y1: y + 0.015,
                    },
                    confidence,
                    line: i as u32,
                });
            }
        }
        PageText {
            line_blocks: Vec::new(),
            index: 0,
            method: ReadMethod::TextLayer,
            confidence,
            rotation: 0,
            size_pt: None,
            words,
        }
    }

    fn found(lines: &[&str], value: &str) -> Option<String> {
        let p = page(lines, 1.0);
        let l = Layout::new(&p);
        l.find(value).map(|r| l.text[r].to_owned())
    }

    #[test]
    fn matching_ignores_accents_case_and_spacing() {
        let lines = ["Valeur déclarée: 39.004,00 EUR", "Container: MSCU 1234566"];
        assert_eq!(
            found(&lines, "VALEUR DECLAREE").as_deref(),
            Some("Valeur déclarée")
        );
        assert_eq!(
            found(&lines, "39.004,00   eur").as_deref(),
            Some("39.004,00 EUR")
        );
        assert_eq!(
            found(&lines, "39.004,00EUR").as_deref(),
            Some("39.004,00 EUR")
        );
        assert_eq!(
            found(&lines, "MSCU1234566").as_deref(),
            Some("MSCU 1234566")
        );
        // A value spread over two lines only where it has a space itself.
        assert_eq!(
            found(&lines, "EUR Container").as_deref(),
            Some("EUR\nContainer")
        );
        assert_eq!(found(&lines, "EURContainer"), None);
    }

    #[test]
    fn matching_refuses_partial_words_and_joined_numbers() {
        let lines = ["Invoice No.: INV-42", "Qty 1 2"];
        assert_eq!(found(&lines, "INV-4"), None);
        assert_eq!(found(&lines, "NV-42"), None);
        assert_eq!(found(&lines, "INV-42").as_deref(), Some("INV-42"));
        assert_eq!(found(&lines, "12"), None);
        assert_eq!(found(&lines, "1 2").as_deref(), Some("1 2"));
        assert_eq!(found(&lines, "INV-99"), None);
        assert_eq!(found(&lines, "  "), None);
        // Punctuation at the edge needs no word boundary.
        assert_eq!(found(&lines, "No.:").as_deref(), Some("No.:"));
    }

    const WF: &str = r#"
name: t
version: 1
parse_hints: {default_currency: EUR}
document_types:
  - id: invoice
    title: Invoice
    recognition:
      keywords: [{text: invoice, weight: 1}]
    fields:
      - {name: number, parser: text, required: true, patterns: ['invoice no:\s*(?P<value>\S+)']}
      - {name: total, parser: money, patterns: ['total:\s*(?P<value>[\d.,]+)']}
      - {name: weight, parser: weight, unit: kg, patterns: ['weight:\s*(?P<value>[\d.,]+)']}
"#;

    fn analyse(lines: &[&str]) -> (Workflow, PageText, Vec<Fact>) {
        let wf = Workflow::from_yaml(WF).unwrap_or_else(|e| panic!("{e}"));
        let p = page(lines, 0.8);
        let facts = ironclad_extract::extract(&wf, "invoice", &[&p]);
        (wf, p, facts)
    }

    #[test]
    fn values_are_accepted_only_with_evidence() {
        let (wf, p, facts) = analyse(&["INVOICE", "Reference A-17", "Total: 1.234,50", "Mass 7,5"]);
        let reply = json!({
            "number": "a-17",
            "total": "1.234,50",
            "weight": "7,5",
            "bank": "A-17",
        });
        let reply = reply.as_object().cloned().unwrap_or_default();
        let v = verify(&wf, "invoice", &[&p], &facts, &reply);
        let accepted: Vec<(&str, &str, bool)> = v
            .accepted
            .iter()
            .map(|a| {
                (
                    a.field.as_str(),
                    a.candidate.raw.as_str(),
                    a.agrees_with_patterns,
                )
            })
            .collect();
        assert_eq!(
            accepted,
            [
                ("number", "A-17", false),
                ("total", "1.234,50", true),
                ("weight", "7,5", false)
            ]
        );
        let number = &v.accepted[0].candidate;
        assert_eq!(number.pattern, PROVIDER_PATTERN);
        assert_eq!(
            number.bbox,
            BBox {
                x0: 0.1,
                y0: 0.02,
                x1: 0.18,
                y1: 0.035
            }
        );
        assert!((number.confidence - 0.8 * 0.9).abs() < 1e-9, "{number:?}");
        // The field's unit completes the bare weight, and the workflow's currency the total.
        assert!(
            matches!(&v.accepted[2].candidate.value, ironclad_core::parse::Value::Weight { unit, .. } if unit == "kg")
        );
        let codes: Vec<(&str, &str)> = v
            .rejected
            .iter()
            .map(|r| (r.field.as_str(), r.reason.code()))
            .collect();
        assert_eq!(codes, [("bank", "unknown_field")]);
        assert!(v.absent.is_empty());
    }

    #[test]
    fn invented_and_unreadable_values_are_rejected() {
        let (wf, p, facts) = analyse(&["INVOICE", "Invoice no: B-2", "Total: 10,00 EUR"]);
        let reply = json!({"number": "B-3", "total": "B-2", "weight": null});
        let v = verify(
            &wf,
            "invoice",
            &[&p],
            &facts,
            reply.as_object().unwrap_or(&Map::new()),
        );
        assert!(v.accepted.is_empty(), "{:?}", v.accepted);
        assert_eq!(v.rejected[0].reason, Rejection::NotInText);
        assert!(matches!(
            v.rejected[1].reason,
            Rejection::Unparseable {
                parser: ParserKind::Money,
                ..
            }
        ));
        assert_eq!(v.absent, ["weight"]);
        let long = json!({"number": "x".repeat(500)});
        let v = verify(
            &wf,
            "invoice",
            &[&p],
            &facts,
            long.as_object().unwrap_or(&Map::new()),
        );
        assert!(matches!(
            v.rejected[0].reason,
            Rejection::TooLong { chars: 500, .. }
        ));
        assert!(v.rejected[0].value.chars().count() <= MAX_QUOTED_CHARS + 1);
        let list = json!({"weight": ["7,5"]});
        let v = verify(
            &wf,
            "invoice",
            &[&p],
            &facts,
            list.as_object().unwrap_or(&Map::new()),
        );
        assert_eq!(
            v.rejected[0].reason,
            Rejection::NotText { kind: "an array" }
        );
        // Fields the model left out are absent, and an unknown type has no fields.
        let v = verify(&wf, "invoice", &[&p], &facts, &Map::new());
        assert_eq!(v.absent, ["number", "total", "weight"]);
        let v = verify(
            &wf,
            "nope",
            &[&p],
            &facts,
            long.as_object().unwrap_or(&Map::new()),
        );
        assert_eq!(v.rejected[0].reason.code(), "unknown_field");
    }

    #[test]
    fn merging_fills_missing_facts_and_flags_disagreement() {
        let (wf, p, mut facts) =
            analyse(&["INVOICE", "Ref B-2", "Total: 10,00", "Amount due 12,00"]);
        assert!(facts[0].missing_required);
        let reply = json!({"number": "B-2", "total": "12,00"});
        let v = verify(
            &wf,
            "invoice",
            &[&p],
            &facts,
            reply.as_object().unwrap_or(&Map::new()),
        );
        assert!(v.accepted.iter().all(|a| !a.agrees_with_patterns));
        merge(&mut facts, &v.accepted);
        merge(&mut facts, &v.accepted);
        let number = &facts[0];
        assert!(!number.missing_required && !number.conflict);
        assert_eq!(number.candidates.len(), 1, "merging twice adds once");
        assert_eq!(number.chosen.as_ref().map(|c| c.raw.as_str()), Some("B-2"));
        // The pattern's total stays chosen; the provider's other reading is close enough
        // to be a conflict a person settles.
        let total = &facts[1];
        assert_eq!(total.candidates.len(), 2);
        assert_eq!(total.chosen.as_ref().map(|c| c.raw.as_str()), Some("10,00"));
        assert_eq!(total.candidates[1].pattern, PROVIDER_PATTERN);
        assert!(total.conflict);

        // The provider agreeing with a pattern adds nothing.
        let (wf, p, mut facts) = analyse(&["INVOICE", "Total: 10,00"]);
        let before = facts.clone();
        let reply = json!({"total": "10,00 "});
        let v = verify(
            &wf,
            "invoice",
            &[&p],
            &facts,
            reply.as_object().unwrap_or(&Map::new()),
        );
        assert!(v.accepted[0].agrees_with_patterns);
        merge(&mut facts, &v.accepted);
        assert_eq!(facts, before);
    }
}
