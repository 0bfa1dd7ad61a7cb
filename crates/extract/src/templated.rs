//! invoice2data templates inside an analysis: a supplier's template reads the whole source
//! as invoice2data reads a PDF (its pages laid out in columns), and every value it finds
//! becomes evidence on the page it was read from.
//!
//! - A value lands in the segment holding its page. A field the segment's type declares gets
//!   the template's reading as one more candidate, read by the field's own parser, so it
//!   competes with the workflow's patterns and labels (and disagrees with them visibly). A
//!   field the type does not declare becomes a fact of its own, typed by the template.
//! - A segment the workflow could not type (or every page, with no workflow) becomes an
//!   [`TEMPLATE_DOC_TYPE`] when a value lands in it: the supplier's keywords and its required
//!   fields recognised the document.
//! - A field read from an `area` reads the words whose centre lies in that rectangle of the
//!   pages (pixels at the area's resolution, over the page's size in points), laid out the same
//!   way. A page whose size is unknown (an image without a resolution) cannot be cropped, and
//!   the field reads the whole text, as invoice2data does with readers that cannot crop.
//! - What has no place on a page (static values, the currency, line items) stays in
//!   [`TemplateUse::output`] only: a fact needs evidence.

use ironclad_core::page::PageText;
use ironclad_core::parse::{Date, Decimal, Value};
use serde_json::Value as Json;

use crate::classify::PageClass;
use crate::extract::{self, decide, round, Candidate, Unreadable};
use crate::invoice2data::{select_template, Area, Template};
use crate::layout::DocumentText;
use crate::segment::Segment;
use crate::workflow::Workflow;
use crate::{Analysis, SegmentResult};

/// The type given to a document a template recognised and the workflow did not.
pub const TEMPLATE_DOC_TYPE: &str = "invoice";

pub use ironclad_core::analysis::TemplateUse;

/// Fields of invoice2data's output that are not read from the page.
const NOT_READ: &[&str] = &["desc", "currency", "lines"];

/// One value a template read, with its evidence.
struct TemplateValue<'p> {
    field: String,
    json: Json,
    page: &'p PageText,
    candidate: Candidate,
}

/// The analysis of a source whose pages no workflow typed: every page UNKNOWN, one segment.
pub fn unclassified(pages: &[PageText], reason: &str) -> Analysis {
    let classes: Vec<PageClass> = pages
        .iter()
        .map(|p| PageClass {
            page: p.index,
            doc_type: None,
            confidence: 0.0,
            scores: Vec::new(),
            first_page: false,
            reason: Some(reason.to_owned()),
            by_labels: None,
            continues: None,
        })
        .collect();
    Analysis {
        segments: crate::segment::segment(&classes)
            .into_iter()
            .map(|segment| SegmentResult {
                segment,
                facts: Vec::new(),
            })
            .collect(),
        pages: classes,
        template: None,
    }
}

/// Applies the first template (by priority) whose keywords match the source's layout text, as
/// invoice2data would, and adds what it read to `analysis` (see the module docs). `pages` are
/// the pages `analysis` was made from, in the same order.
pub fn apply_templates(
    analysis: &mut Analysis,
    workflow: Option<&Workflow>,
    templates: &[Template],
    pages: &[PageText],
) {
    if templates.is_empty() || pages.is_empty() {
        return;
    }
    let document = DocumentText::columnar(pages);
    let Some(template) = select_template(templates, document.text()) else {
        return;
    };
    let cropped: Vec<(Area, Vec<PageText>)> = template
        .areas()
        .filter_map(|area| Some((*area, crop(pages, area)?)))
        .collect();
    let areas: Vec<(Area, DocumentText<'_>)> = cropped
        .iter()
        .map(|(area, pages)| (*area, DocumentText::columnar(pages)))
        .collect();
    let area_text = |area: &Area| {
        let (_, text) = areas.iter().find(|(a, _)| a == area)?;
        Some(text.text().to_owned())
    };
    let extraction = match template.extract_traced(document.text(), &mut |a| area_text(a)) {
        Ok(extraction) => extraction,
        Err(e) => {
            analysis.template = Some(TemplateUse {
                issuer: template.issuer().to_owned(),
                output: None,
                error: Some(e.to_string()),
            });
            return;
        }
    };
    let issuer = template.issuer().to_owned();
    let values: Vec<TemplateValue<'_>> = extraction
        .evidence
        .iter()
        .filter(|e| !NOT_READ.contains(&e.field.as_str()))
        .filter_map(|e| {
            let field = &e.field;
            let json = extraction.fields.get(field)?.clone();
            let text = match &e.area {
                Some(area) => &areas.iter().find(|(a, _)| a == area)?.1,
                None => &document,
            };
            let (page, evidence, raw) = text.evidence(e.range.clone())?;
            let value = value_of(&json)?;
            Some(TemplateValue {
                field: field.clone(),
                json,
                page,
                candidate: Candidate {
                    page: page.index,
                    bbox: evidence.bbox,
                    raw: raw.to_owned(),
                    value,
                    confidence: round(evidence.confidence),
                    ocr_confidence: round(evidence.confidence),
                    certainty: 1.0,
                    pattern: 0,
                    label_bbox: None,
                    template: Some(issuer.clone()),
                    origin: None,
                },
            })
        })
        .collect();
    for value in values {
        add_to_segment(analysis, workflow, pages, value);
    }
    analysis.template = Some(TemplateUse {
        issuer,
        output: Some(Json::Object(extraction.fields)),
        error: None,
    });
}

/// Puts one template value into the segment that holds its page.
fn add_to_segment(
    analysis: &mut Analysis,
    workflow: Option<&Workflow>,
    pages: &[PageText],
    value: TemplateValue<'_>,
) {
    let Some(s) = analysis
        .segments
        .iter()
        .position(|s| s.segment.pages.contains(&value.page.index))
    else {
        return;
    };
    if analysis.segments[s].segment.doc_type.is_none() {
        recognise(analysis, s, workflow, pages);
    }
    let result = &mut analysis.segments[s];
    let doc_type = result.segment.doc_type.clone().unwrap_or_default();
    let mut candidate = value.candidate;
    let declared = workflow.and_then(|w| {
        let fact = result.facts.iter_mut().find(|f| f.field == value.field)?;
        let reading = extract::read_field(w, &doc_type, &value.field, &candidate.raw)?;
        let (spec, compiled) = w.compiled_type(&doc_type)?;
        let k = spec.fields.iter().position(|f| f.name == value.field)?;
        let after = compiled.fields[k].patterns.len() + compiled.fields[k].labels.len();
        Some((fact, reading, after))
    });
    match declared {
        Some((fact, Ok(parsed), after)) => {
            candidate.pattern = after;
            candidate.certainty = parsed.certainty;
            candidate.confidence = round(candidate.ocr_confidence * parsed.certainty);
            candidate.value = parsed.value;
            fact.candidates.push(candidate);
            extract::choose(fact);
        }
        Some((fact, Err(e), _)) => fact.unreadable.push(Unreadable {
            page: candidate.page,
            bbox: candidate.bbox,
            raw: candidate.raw,
            error: format!("template {}: {e}", value.json),
        }),
        None => {
            result.facts.retain(|f| f.field != value.field);
            let parser = candidate.value.kind();
            result.facts.push(decide(
                &value.field,
                parser,
                false,
                vec![candidate],
                Vec::new(),
            ));
        }
    }
}

/// The pages an area covers, each keeping only the words whose centre lies in its rectangle;
/// `None` when a page it covers has no known size (or the area is empty or makes no sense).
fn crop(pages: &[PageText], area: &Area) -> Option<Vec<PageText>> {
    if area.resolution <= 0 || area.width <= 0 || area.height <= 0 {
        return None;
    }
    let points = |px: i64| px as f64 * 72.0 / area.resolution as f64;
    let (x0, y0) = (points(area.x), points(area.y));
    let (x1, y1) = (x0 + points(area.width), y0 + points(area.height));
    let covered = |p: &&PageText| {
        let number = i64::from(p.index) + 1;
        area.first_page <= number && number <= area.last_page
    };
    pages
        .iter()
        .filter(covered)
        .map(|page| {
            let [w, h] = page.size_pt?;
            let (w, h) = (f64::from(w), f64::from(h));
            let mut kept = page.clone();
            kept.words.retain(|word| {
                let b = word.bbox.normalized();
                let cx = f64::from(b.x0 + b.x1) / 2.0 * w;
                let cy = f64::from(b.y0 + b.y1) / 2.0 * h;
                (x0..x1).contains(&cx) && (y0..y1).contains(&cy)
            });
            Some(kept)
        })
        .collect()
}

/// Types an UNKNOWN segment as [`TEMPLATE_DOC_TYPE`], with the workflow's fields of that
/// type when it has them; the segment is as sure as its least legible page.
fn recognise(analysis: &mut Analysis, s: usize, workflow: Option<&Workflow>, pages: &[PageText]) {
    let segment = &analysis.segments[s].segment;
    let seg_pages: Vec<&PageText> = pages
        .iter()
        .filter(|p| segment.pages.contains(&p.index))
        .collect();
    let confidence = seg_pages
        .iter()
        .map(|p| f64::from(p.confidence).clamp(0.0, 1.0))
        .fold(1.0, f64::min);
    for class in analysis
        .pages
        .iter_mut()
        .filter(|c| segment.pages.contains(&c.page))
    {
        class.doc_type = Some(TEMPLATE_DOC_TYPE.to_owned());
        class.confidence = round(confidence);
        class.reason = None;
    }
    let facts = workflow
        .map(|w| extract::extract(w, TEMPLATE_DOC_TYPE, &seg_pages))
        .unwrap_or_default();
    let result = &mut analysis.segments[s];
    result.segment = Segment {
        doc_type: Some(TEMPLATE_DOC_TYPE.to_owned()),
        pages: std::mem::take(&mut result.segment.pages),
        confidence: round(confidence),
    };
    result.facts = facts;
}

/// invoice2data's output value as a typed value: numbers, and dates (which its output
/// writes as `YYYY-MM-DD`), and text. Lists and objects are not single values.
fn value_of(json: &Json) -> Option<Value> {
    match json {
        Json::Number(n) => match n.as_i64() {
            Some(i) => Some(Value::Integer(i)),
            None => n.to_string().parse::<Decimal>().ok().map(Value::Decimal),
        },
        Json::String(s) => Some(match s.parse::<Date>() {
            Ok(d) if s.len() == 10 => Value::Date(d),
            _ => Value::Text(s.trim().to_owned()),
        }),
        Json::Bool(_) | Json::Null | Json::Array(_) | Json::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::grid_page;

    const TEMPLATE: &str = r#"
issuer: Acme Corp
keywords: [Acme]
fields:
  invoice_number: Invoice\s+number:\s+(\S+)
  amount:
    parser: regex
    regex: Total:\s+([\d,.]+)
    type: float
  date:
    parser: regex
    regex: Date:\s+(\S+)
    type: date
  static_vat: FR123
options:
  date_formats: ["%d.%m.%Y"]
"#;

    const WORKFLOW: &str = r#"
name: t
version: 1
document_types:
  - id: invoice
    title: Invoice
    recognition:
      keywords: [{text: invoice, weight: 0.6}]
    fields:
      - {name: invoice_number, parser: text, patterns: ['invoice no\.?\s*(?P<value>\S+)']}
"#;

    fn page() -> PageText {
        grid_page(
            &[
                "Acme Corp",
                "Invoice number: INV-42",
                "Date: 02.03.2024",
                "Total: 1,234.50",
            ],
            0.9,
        )
    }

    fn fact<'a>(analysis: &'a Analysis, field: &str) -> &'a crate::Fact {
        analysis.segments[0]
            .facts
            .iter()
            .find(|f| f.field == field)
            .unwrap_or_else(|| panic!("no fact {field}: {:#?}", analysis.segments))
    }

    #[test]
    fn a_template_value_joins_the_declared_field_and_adds_the_others_with_evidence() {
        let workflow = Workflow::from_yaml(WORKFLOW).unwrap();
        let templates = [Template::from_yaml(TEMPLATE).unwrap()];
        let pages = [page()];
        let mut analysis = crate::analyze(&workflow, &pages);
        assert_eq!(
            analysis.segments[0].segment.doc_type.as_deref(),
            Some("invoice")
        );
        apply_templates(&mut analysis, Some(&workflow), &templates, &pages);

        let number = fact(&analysis, "invoice_number");
        let chosen = number.chosen.as_ref().unwrap();
        assert_eq!(chosen.value, Value::Text("INV-42".into()));
        assert_eq!(chosen.template.as_deref(), Some("Acme Corp"));
        assert_eq!(chosen.pattern, 1, "numbered after the field's one pattern");
        // The value's own word: third word of the second line.
        assert_eq!(chosen.bbox, pages[0].words[4].bbox);

        let amount = fact(&analysis, "amount");
        assert_eq!(amount.parser, ironclad_core::parse::ParserKind::Decimal);
        let chosen = amount.chosen.as_ref().unwrap();
        assert_eq!(chosen.value, Value::Decimal("1234.5".parse().unwrap()));
        assert_eq!(chosen.raw, "1,234.50");
        assert_eq!(chosen.page, 0);
        let date = fact(&analysis, "date").chosen.as_ref().unwrap();
        assert_eq!(date.value, Value::Date(Date::new(2024, 3, 2).unwrap()));
        let issuer = fact(&analysis, "issuer").chosen.as_ref().unwrap();
        assert_eq!(issuer.raw, "Acme", "the keyword is the issuer's evidence");

        // Printed nowhere: kept in the output, not as a fact.
        assert!(analysis.segments[0].facts.iter().all(|f| f.field != "vat"));
        let used = analysis.template.as_ref().unwrap();
        assert_eq!(used.output.as_ref().unwrap()["vat"], "FR123");
    }

    #[test]
    fn a_page_no_type_recognised_becomes_an_invoice_when_a_template_reads_it() {
        let templates = [Template::from_yaml(TEMPLATE).unwrap()];
        let mut p = page();
        p.words.retain(|w| w.text != "Invoice");
        let pages = [p];
        let mut analysis = unclassified(&pages, "no workflow");
        apply_templates(&mut analysis, None, &templates, &pages);
        // Without "Invoice" the number is gone, and a required field is missing.
        let used = analysis.template.as_ref().unwrap();
        assert!(used.output.is_none());
        assert!(used.error.as_deref().unwrap().contains("invoice_number"));
        assert_eq!(analysis.segments[0].segment.doc_type, None);

        let pages = [page()];
        let mut analysis = unclassified(&pages, "no workflow");
        apply_templates(&mut analysis, None, &templates, &pages);
        assert_eq!(
            analysis.segments[0].segment.doc_type.as_deref(),
            Some(TEMPLATE_DOC_TYPE)
        );
        assert_eq!(
            analysis.pages[0].doc_type.as_deref(),
            Some(TEMPLATE_DOC_TYPE)
        );
        assert_eq!(analysis.pages[0].reason, None);
        assert_eq!(
            fact(&analysis, "invoice_number")
                .chosen
                .as_ref()
                .unwrap()
                .value,
            Value::Text("INV-42".into())
        );
    }

    #[test]
    fn values_read_after_the_options_transform_the_text_keep_their_words() {
        let yaml = TEMPLATE.replace(
            "options:",
            "options:\n  remove_whitespace: true\n  lowercase: true",
        );
        let yaml = yaml
            .replace(r"Invoice\s+number:\s+(\S+)", r"invoicenumber:(\S+)")
            .replace(r"Total:\s+([\d,.]+)", r"total:([\d,.]+)")
            .replace(r"Date:\s+(\S+)", r"date:(\S+)");
        let templates = [Template::from_yaml(&yaml).unwrap()];
        let pages = [page()];
        let mut analysis = unclassified(&pages, "no workflow");
        apply_templates(&mut analysis, None, &templates, &pages);
        let number = fact(&analysis, "invoice_number").chosen.as_ref().unwrap();
        assert_eq!(number.value, Value::Text("inv-42".into()));
        assert_eq!(number.raw, "INV-42", "as printed");
        assert_eq!(number.bbox, pages[0].words[4].bbox);
    }

    #[test]
    fn an_area_reads_only_the_words_inside_its_rectangle() {
        // Dates on lines 1 (y = 0.02) and 5 (y = 0.10); the area, at 72 DPI on a 100 × 100
        // point page, covers y from 8 to 20 points: only the second date.
        let yaml = r#"
issuer: Acme Corp
keywords: [Acme]
required_fields: [date]
fields:
  date:
    parser: regex
    area: {f: 1, l: 1, r: 72, x: 0, y: 8, W: 100, H: 12}
    regex: (\d{2}\.\d{2}\.\d{4})
    type: date
options:
  date_formats: ["%d.%m.%Y"]
"#;
        let templates = [Template::from_yaml(yaml).unwrap()];
        let lines = [
            "Acme Corp",
            "Issued 01.02.2024",
            "x",
            "x",
            "x",
            "Due 15.03.2024",
        ];
        let mut page = grid_page(&lines, 1.0);
        page.size_pt = Some([100.0, 100.0]);
        let pages = [page];
        let mut analysis = unclassified(&pages, "no workflow");
        apply_templates(&mut analysis, None, &templates, &pages);
        let date = fact(&analysis, "date").chosen.as_ref().unwrap();
        assert_eq!(date.value, Value::Date(Date::new(2024, 3, 15).unwrap()));
        assert_eq!(date.bbox, pages[0].words.last().unwrap().bbox);

        // Without the page's size the area cannot be cropped: the whole text is read, and
        // both dates make a list, as invoice2data gives — not one value with a place.
        let mut page = pages[0].clone();
        page.size_pt = None;
        let pages = [page];
        let mut analysis = unclassified(&pages, "no workflow");
        apply_templates(&mut analysis, None, &templates, &pages);
        let output = analysis.template.as_ref().unwrap().output.as_ref().unwrap();
        assert_eq!(
            output["date"],
            serde_json::json!(["2024-02-01", "2024-03-15"])
        );
        assert!(analysis.segments[0].facts.iter().all(|f| f.field != "date"));
    }
}
