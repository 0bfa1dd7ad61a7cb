//! Page classification: which document type a page belongs to, how sure that is, and
//! whether the page starts a new document.
//!
//! A page is scored against every type; the best type wins only if it reaches its
//! `min_score` and leads the runner-up by its `margin`. Anything else is UNKNOWN with the
//! reason spelled out, because a wrong type silently extracts wrong fields, while UNKNOWN
//! sends the page to a person.

use ironclad_core::page::PageText;

use crate::fuzzy::{self, Phrase};
use crate::layout::PageLayout;
use crate::workflow::{CompiledKeyword, CompiledType, Workflow};
use ironclad_core::fold::fold_str;

pub use ironclad_core::analysis::PageClass;

/// Classifies one page against the workflow's document types.
pub fn classify_page(workflow: &Workflow, page: &PageText) -> PageClass {
    let layout = PageLayout::new(page);
    classify_layout(workflow, page.index, &layout)
}

pub(crate) fn classify_layout(
    workflow: &Workflow,
    index: u32,
    layout: &PageLayout<'_>,
) -> PageClass {
    let text = layout.folded().as_str();
    let page = PageForms::new(text, layout);
    let mut scored: Vec<(String, f64, &CompiledType, f64, f64)> = workflow
        .types()
        .map(|(spec, compiled)| {
            let r = &spec.recognition;
            (
                spec.id.clone(),
                score(compiled, &page),
                compiled,
                r.min_score,
                r.margin,
            )
        })
        .collect();
    // Stable sort: equal scores keep workflow order, so results are deterministic.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let scores: Vec<(String, f64)> = scored.iter().map(|(id, s, ..)| (id.clone(), *s)).collect();
    let unknown = |reason: String| PageClass {
        page: index,
        doc_type: None,
        confidence: 0.0,
        scores: scores.clone(),
        first_page: false,
        reason: Some(reason),
        by_labels: None,
        continues: None,
    };
    // Keywords fell short (a damaged title, say): the page may still show most of one type's
    // labels and few of any other's.
    let unknown_or_labelled = |reason: String| match by_labels(workflow, layout) {
        Ok(found) => PageClass {
            page: index,
            doc_type: Some(found.doc_type.to_owned()),
            confidence: found.share(),
            scores: scores.clone(),
            // No title to go by: only an explicit "page 1 of" starts a document.
            first_page: workflow
                .compiled_type(found.doc_type)
                .is_some_and(|(_, c)| starts_document(c, text)),
            reason: None,
            by_labels: Some(found.fields),
            continues: None,
        },
        Err(why) => unknown(format!("{reason}{why}")),
    };

    if text.trim().is_empty() {
        return unknown("the page has no text".into());
    }
    let Some((best_id, best, compiled, min_score, margin)) = scored.first() else {
        return unknown("the workflow declares no document type".into());
    };
    if *best <= 0.0 {
        return unknown_or_labelled(format!(
            "no keyword of any document type was found{}",
            near_miss_title(workflow, layout, &page)
        ));
    }
    if best < min_score {
        return unknown_or_labelled(format!(
            "best match {best_id} ({best:.2}) is below its minimum score {min_score:.2}{}",
            near_miss_title(workflow, layout, &page)
        ));
    }
    if let Some((second_id, second, ..)) = scored.get(1) {
        if best - second < *margin {
            return unknown(format!(
                "ambiguous between {best_id} ({best:.2}) and {second_id} ({second:.2})"
            ));
        }
    }
    let titled = compiled.keywords.iter().any(|k| match k {
        CompiledKeyword::Title(title, _) => has_title(compiled, &page, title),
        _ => false,
    });
    let first_page = starts_document(compiled, text)
        || (titled && !compiled.continuation.iter().any(|re| re.is_match(text)));
    PageClass {
        page: index,
        doc_type: Some(best_id.clone()),
        confidence: *best,
        scores,
        first_page,
        reason: None,
        by_labels: None,
        continues: None,
    }
}

/// Classifies a source's pages, in order: each page on its own ([`classify_layout`]), then
/// each page left UNKNOWN that continues the document of the page before it
/// ([`continuation`]).
pub(crate) fn classify_source(workflow: &Workflow, layouts: &[PageLayout<'_>]) -> Vec<PageClass> {
    let mut classes: Vec<PageClass> = layouts
        .iter()
        .map(|l| classify_layout(workflow, l.page().index, l))
        .collect();
    // In order, so that a third page may continue a second that continued the first.
    for (k, layout) in layouts.iter().enumerate().skip(1) {
        let (before, after) = classes.split_at_mut(k);
        if let (Some(previous), Some(page)) = (before.last(), after.first_mut()) {
            if let Some(continued) = continuation(workflow, previous, page, layout) {
                *page = continued;
            }
        }
    }
    classes
}

/// Fewest of a type's fields whose labels a page must show to continue a document of it.
const CONTINUATION_MIN_FIELDS: usize = 2;
/// Least share of a type's labelled fields a page must show to continue a document of it.
const CONTINUATION_MIN_SHARE: f64 = 0.25;

/// The class of `page`, UNKNOWN for want of evidence, as the continuation of the document of
/// type T on `previous`, the page before it in its source: page 2 of a declaration without a
/// title or a "page 2 of 2" still shows the declaration's labels. It continues T when
///
/// - it has text, and its keywords are short of every type's `min_score` (an ambiguous page
///   has strong evidence of two types and stays UNKNOWN);
/// - it shows no title of any type, no type's `first_page` marker, and no line near another
///   type's title (a first page whose title is damaged is another document);
/// - it shows the labels of at least [`CONTINUATION_MIN_FIELDS`] of T's fields and
///   [`CONTINUATION_MIN_SHARE`] of its labelled ones, at least one of them T's own (declared
///   by no other type), and more fields' labels than any other type shows: labels every type
///   prints (`container no`) tell nothing apart.
///
/// The page's confidence is the share of T's labelled fields it shows, as for a page
/// recognized by labels, and it never starts a document. `None` when it does not continue T.
fn continuation(
    workflow: &Workflow,
    previous: &PageClass,
    page: &PageClass,
    layout: &PageLayout<'_>,
) -> Option<PageClass> {
    let doc_type = previous.doc_type.as_deref()?;
    let text = layout.folded().as_str();
    if page.doc_type.is_some() || text.trim().is_empty() {
        return None;
    }
    // An UNKNOWN page whose best score reaches its minimum is ambiguous.
    let (best, score) = page.scores.first()?;
    if workflow
        .compiled_type(best)
        .is_some_and(|(spec, _)| *score >= spec.recognition.min_score)
    {
        return None;
    }
    let forms = PageForms::new(text, layout);
    let titled = workflow.types().any(|(_, compiled)| {
        starts_document(compiled, text)
            || compiled.keywords.iter().any(|k| match k {
                CompiledKeyword::Title(title, _) => has_title(compiled, &forms, title),
                _ => false,
            })
    });
    let near_other_title =
        closest_title(workflow, layout, &forms).is_some_and(|m| m.doc_type != doc_type);
    if titled || near_other_title {
        return None;
    }
    let mut matches = label_matches(workflow, layout);
    let k = matches.iter().position(|m| m.doc_type == doc_type)?;
    let ours = matches.swap_remove(k);
    let found = ours.fields.len();
    let leads = matches.iter().all(|m| m.fields.len() < found);
    if found < CONTINUATION_MIN_FIELDS
        || ours.share() < CONTINUATION_MIN_SHARE
        || ours.own == 0
        || !leads
    {
        return None;
    }
    Some(PageClass {
        page: page.page,
        doc_type: Some(doc_type.to_owned()),
        confidence: ours.share(),
        scores: page.scores.clone(),
        first_page: false,
        reason: None,
        by_labels: Some(ours.fields),
        continues: Some(previous.page),
    })
}

/// Whether the page's text says it is a document's first page (`page 1 of 3`) and not a
/// continuation.
fn starts_document(compiled: &CompiledType, text: &str) -> bool {
    compiled.first_page.iter().any(|re| re.is_match(text))
        && !compiled.continuation.iter().any(|re| re.is_match(text))
}

/// Fewest of a type's fields whose labels must be printed on a page to recognize it by them.
const LABELS_MIN_FIELDS: usize = 3;

/// What one type's labels found on a page.
struct LabelMatch<'w> {
    doc_type: &'w str,
    /// Its fields whose labels were found.
    fields: Vec<String>,
    /// How many of those labels no other type declares (`date of issue` on a bill of
    /// lading): trade documents quote each other's numbers, so most labels are shared.
    own: usize,
    /// Its fields with labels.
    labelled: usize,
}

impl LabelMatch<'_> {
    /// Found fields ÷ labelled fields, rounded to three decimals: the page's confidence.
    fn share(&self) -> f64 {
        if self.labelled == 0 {
            return 0.0;
        }
        (self.fields.len() as f64 / self.labelled as f64 * 1000.0).round() / 1000.0
    }
}

/// The type whose labels the page shows, at least [`LABELS_MIN_FIELDS`] of them and more of
/// its own than any other type shows of its own, or why there is none (`; by labels, …`).
fn by_labels<'w>(
    workflow: &'w Workflow,
    layout: &PageLayout<'_>,
) -> Result<LabelMatch<'w>, String> {
    let mut matches = label_matches(workflow, layout);
    // Stable: ties keep workflow order.
    matches.sort_by_key(|m| std::cmp::Reverse((m.own, m.fields.len())));
    let mut ranked = matches.into_iter();
    let Some(best) = ranked.next() else {
        return Err(String::new());
    };
    let runner_up = ranked.next();
    let rival_own = runner_up.as_ref().map_or(0, |m| m.own);
    if best.own >= 1 && best.fields.len() >= LABELS_MIN_FIELDS && best.own > rival_own {
        return Ok(best);
    }
    let tie = match &runner_up {
        Some(m) if best.own >= 1 && m.own == best.own => {
            format!(", as many of its own as {}", m.doc_type)
        }
        _ => String::new(),
    };
    Err(format!(
        "; by labels, {} shows {} of {} fields' labels, {} of them its own{tie}",
        best.doc_type,
        best.fields.len(),
        best.labelled,
        best.own
    ))
}

/// What each type's labels find on the page, in workflow order; empty when no type declares
/// labels.
fn label_matches<'w>(workflow: &'w Workflow, layout: &PageLayout<'_>) -> Vec<LabelMatch<'w>> {
    // Each type's labels, to tell a type's own labels from shared ones.
    let labels_of: Vec<Vec<String>> = workflow
        .types()
        .map(|(spec, _)| {
            spec.fields
                .iter()
                .flat_map(|f| f.labels.iter().map(|l| fold_str(l)))
                .collect()
        })
        .collect();
    if labels_of.iter().all(Vec::is_empty) {
        return Vec::new();
    }
    let page = crate::keyvalue::LabelPage::new(layout.page());
    workflow
        .types()
        .enumerate()
        .map(|(t, (spec, compiled))| {
            let own_field = |labels: &[String]| {
                labels.iter().all(|l| {
                    let l = fold_str(l);
                    labels_of
                        .iter()
                        .enumerate()
                        .all(|(other, set)| other == t || !set.contains(&l))
                })
            };
            let mut found = LabelMatch {
                doc_type: &spec.id,
                fields: Vec::new(),
                own: 0,
                labelled: 0,
            };
            for (field, compiled_field) in spec.fields.iter().zip(&compiled.fields) {
                if compiled_field.labels.is_empty() {
                    continue;
                }
                found.labelled += 1;
                if !page.find_labels(compiled_field, field.region).is_empty() {
                    found.fields.push(field.name.clone());
                    found.own += usize::from(own_field(&field.labels));
                }
            }
            found
        })
        .collect()
}

/// The forms of one page's folded text that keywords are looked for in.
struct PageForms<'t> {
    text: &'t str,
    /// The whole page's skeleton ([`fuzzy::skeleton`]).
    skeleton: Vec<u8>,
    /// Which lines may hold a title: printed at least [`MIN_TITLE_SCALE`] of the page's
    /// typical word ([`PageLayout::line_scales`]), and not starting with a small letter (the
    /// tail of a sentence: `… contre copie du connaissement`).
    may_title: Vec<bool>,
}

impl<'t> PageForms<'t> {
    fn new(text: &'t str, layout: &PageLayout<'_>) -> Self {
        let may_title = layout
            .text()
            .lines()
            .zip(layout.line_scales())
            .map(|(line, scale)| {
                scale >= MIN_TITLE_SCALE
                    && !line
                        .chars()
                        .find(|c| c.is_alphabetic())
                        .is_some_and(char::is_lowercase)
            })
            .collect();
        PageForms {
            text,
            skeleton: fuzzy::skeleton(text),
            may_title,
        }
    }
}

/// Lines printed smaller than this, against the page's typical word, are not titles: a
/// stacked form's small-capital label (`N° DE CONNAISSEMENT` over the B/L number on an
/// invoice) may end its line with a title's words.
const MIN_TITLE_SCALE: f32 = 0.85;

/// Whether a line of the page ends with `title`, once the type's continuation markers are taken off
/// it (`Commercial invoice (continued)` still shows the invoice's title).
fn has_title(compiled: &CompiledType, page: &PageForms<'_>, title: &Phrase) -> bool {
    let may_title = page.may_title.iter().chain(std::iter::repeat(&true));
    page.text.lines().zip(may_title).any(|(line, &may_title)| {
        if !may_title {
            return false;
        }
        let mut line = line.to_owned();
        for marker in &compiled.continuation {
            line = marker.replace_all(&line, " ").into_owned();
        }
        title.ends_line(&fuzzy::skeleton(&line))
    })
}

/// Edits beyond a title's tolerance still reported as a near miss: further off, a line is
/// not a damaged title but other text (`billing period` is 5 edits from `bill of lading`).
const NEAR_MISS_EXTRA_EDITS: u32 = 1;

/// For an UNKNOWN page: the line that came closest to some type's title and why it did not
/// count (`; the closest line to a title is …`), or nothing when no line comes near. This is
/// what tells a reader whether the page is another kind of document or a damaged one.
fn near_miss_title(workflow: &Workflow, layout: &PageLayout<'_>, page: &PageForms<'_>) -> String {
    closest_title(workflow, layout, page).map_or_else(String::new, |m| {
        let line: String = m.line.trim().chars().take(60).collect();
        format!(
            "; the closest line to a title is {line:?}, like {}'s {:?} ({})",
            m.doc_type, m.title, m.why
        )
    })
}

/// A line that comes near a type's title without counting as it.
struct Miss<'a> {
    excess: u32,
    line: &'a str,
    doc_type: &'a str,
    title: &'a str,
    why: String,
}

/// The line of the page closest to some type's title that did not count as it, if any comes
/// within [`NEAR_MISS_EXTRA_EDITS`] of a title's tolerance (see [`near_miss_title`]).
fn closest_title<'a>(
    workflow: &'a Workflow,
    layout: &'a PageLayout<'_>,
    page: &PageForms<'_>,
) -> Option<Miss<'a>> {
    let mut best: Option<Miss<'_>> = None;
    let printed = layout.text().lines();
    let lines = page.text.lines().zip(printed).zip(&page.may_title);
    for ((folded, printed), &may_title) in lines {
        let skeleton = fuzzy::skeleton(folded);
        if skeleton.is_empty() {
            continue;
        }
        for (spec, compiled) in workflow.types() {
            let titles = spec.recognition.keywords.iter().zip(&compiled.keywords);
            for (keyword, compiled_keyword) in titles {
                let (CompiledKeyword::Title(phrase, _), Some(title)) =
                    (compiled_keyword, keyword.text.as_deref())
                else {
                    continue;
                };
                // A title that was found counted already: the page is short of something else.
                if has_title(compiled, page, phrase) {
                    continue;
                }
                let tolerance = Phrase::title_tolerance(&fold_str(title));
                let edits = phrase.distance_in(&skeleton);
                let excess = edits.saturating_sub(tolerance);
                // A damaged title is a line of its own, printed like one; a word of a
                // sentence that happens to look like it is not.
                let title_like = may_title
                    && skeleton.len() <= 2 * phrase.len()
                    && 3 * edits as usize <= phrase.len();
                if excess > NEAR_MISS_EXTRA_EDITS
                    || (excess > 0 && !title_like)
                    || best.as_ref().is_some_and(|b| b.excess <= excess)
                {
                    continue;
                }
                let why = if excess > 0 {
                    format!("{edits} edits, {tolerance} allowed")
                } else if !may_title {
                    "printed smaller than the page's text, or starting in lower case".into()
                } else {
                    "the line goes on after it".into()
                };
                best = Some(Miss {
                    excess,
                    line: printed,
                    doc_type: &spec.id,
                    title,
                    why,
                });
            }
        }
    }
    best
}

/// Sum of the weights of the keywords found (each counted once), clamped to `[0, 1]` and
/// rounded to three decimals so that reported scores and margin checks agree exactly.
fn score(compiled: &CompiledType, page: &PageForms<'_>) -> f64 {
    let sum: f64 = compiled
        .keywords
        .iter()
        .filter(|k| match k {
            CompiledKeyword::Pattern(re, _) => re.is_match(page.text),
            CompiledKeyword::Phrase(re, phrase, _) => {
                re.is_match(page.text) || phrase.found_in(&page.skeleton)
            }
            CompiledKeyword::Title(title, _) => has_title(compiled, page, title),
        })
        .map(CompiledKeyword::weight)
        .sum();
    // `+ 0.0` turns the empty sum's -0.0 into 0.0, which reads better in JSON.
    (sum.clamp(0.0, 1.0) * 1000.0).round() / 1000.0 + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::grid_page;

    const TWO_TYPES: &str = r#"
name: t
version: 1
document_types:
  - id: invoice
    title: Invoice
    recognition:
      keywords:
        - {text: commercial invoice, weight: 0.6}
        - {text: unit price, weight: 0.2}
        - {regex: 'total\s+(usd|eur)', weight: 0.2}
      min_score: 0.5
      margin: 0.15
      first_page: ['commercial invoice\s*$', 'page 1 of']
      continuation: ['\(continued\)']
  - id: packing_list
    title: Packing list
    recognition:
      keywords:
        - {text: packing list, weight: 0.6}
        - {text: gross kg, weight: 0.2}
        - {text: unit price, weight: 0.15}
      min_score: 0.5
      first_page: ['page 1 of']
"#;

    fn wf() -> Workflow {
        Workflow::from_yaml(TWO_TYPES).unwrap()
    }

    #[test]
    fn a_clear_page_gets_its_type_and_score() {
        let page = grid_page(
            &[
                "ACME COMMERCIAL INVOICE",
                "Unit price 2.00",
                "TOTAL USD 10.00",
                "Page 1 of 2",
            ],
            1.0,
        );
        let c = classify_page(&wf(), &page);
        assert_eq!(c.doc_type.as_deref(), Some("invoice"));
        assert_eq!(c.confidence, 1.0);
        assert_eq!(
            c.scores,
            [
                ("invoice".to_owned(), 1.0),
                ("packing_list".to_owned(), 0.15)
            ]
        );
        assert!(c.first_page);
        assert_eq!(c.reason, None);
    }

    #[test]
    fn a_continuation_marker_vetoes_first_page() {
        let page = grid_page(
            &[
                "ACME COMMERCIAL INVOICE (continued)",
                "TOTAL USD 10.00",
                "Page 1 of 2",
            ],
            1.0,
        );
        let c = classify_page(&wf(), &page);
        assert_eq!(c.doc_type.as_deref(), Some("invoice"));
        assert!(!c.first_page);
    }

    fn trade() -> Workflow {
        Workflow::from_yaml(include_str!("../../../workflows/trade.yaml")).unwrap()
    }

    #[test]
    fn a_page_whose_title_is_lost_is_recognized_by_its_labels() {
        // The title is torn off and the B/L's keywords with it; the cells' labels remain.
        let lines = [
            "B/L No. COSU6182273510",
            "Container No. MSCU1234565",
            "Number of packages 1,250",
            "Gross weight (kg) 12,694.3",
            "Date of issue 12/06/2024",
        ];
        let c = classify_page(&trade(), &grid_page(&lines, 1.0));
        assert_eq!(c.doc_type.as_deref(), Some("bill_of_lading"), "{c:?}");
        assert_eq!(c.reason, None);
        let fields = c.by_labels.clone().expect("recognized by labels");
        for f in [
            "bl_number",
            "container_number",
            "package_count",
            "gross_weight",
            "bl_date",
        ] {
            assert!(fields.iter().any(|x| x == f), "{f} missing from {fields:?}");
        }
        assert!(
            c.confidence >= 0.6 && c.confidence <= 1.0,
            "{}",
            c.confidence
        );
        assert!(
            !c.first_page,
            "no title and no \"page 1 of\": not known to start a document"
        );
        let note = c.explanation().expect("explained");
        assert!(
            note.contains("recognized by the labels of bl_number"),
            "{note}"
        );

        // Labels every type prints (weight, packages, container) tell nothing apart.
        let shared = ["Container No. MSCU1234565", "Gross weight (kg) 12,694.3"];
        let c = classify_page(&trade(), &grid_page(&shared, 1.0));
        assert_eq!(c.doc_type, None, "{c:?}");
        let reason = c.reason.expect("why UNKNOWN");
        assert!(reason.contains("; by labels, "), "{reason}");

        // A page found by its keywords never consults labels.
        let titled = ["BILL OF LADING", "B/L No. COSU6182273510", "Shipper: ACME"];
        let c = classify_page(&trade(), &grid_page(&titled, 1.0));
        assert_eq!(c.doc_type.as_deref(), Some("bill_of_lading"));
        assert_eq!(c.by_labels, None);
    }

    /// `classify_source` over pages given as lines, numbered in order.
    fn classify_lines(wf: &Workflow, pages: &[&[&str]]) -> Vec<PageClass> {
        let pages: Vec<PageText> = pages
            .iter()
            .enumerate()
            .map(|(i, lines)| {
                let mut page = grid_page(lines, 1.0);
                page.index = i as u32;
                page
            })
            .collect();
        let layouts: Vec<PageLayout<'_>> = pages.iter().map(PageLayout::new).collect();
        classify_source(wf, &layouts)
    }

    const DECLARATION: &[&str] = &[
        "CUSTOMS DECLARATION",
        "Declaration No.: 25DER3NPXCTCB49A93",
        "Customs office: DE004851 Hamburg",
        "Declarant: Hamburg Customs Services Ltd.",
    ];
    /// Page 2 of that declaration: no title, no "page 2 of 2", two of its fields' labels (one
    /// its own): too little to be recognized alone, enough after its page 1.
    const SECOND_PAGE: &[&str] = &[
        "47 CALCULATION OF TAXES",
        "Declaration No. 25DER3NPXCTCB49A93",
        "Invoice No. 2025.167.9648",
        "Method of payment: deferred",
    ];

    fn types(classes: &[PageClass]) -> Vec<Option<&str>> {
        classes.iter().map(|c| c.doc_type.as_deref()).collect()
    }

    #[test]
    fn a_page_without_title_or_marker_continues_the_document_whose_labels_it_shows() {
        let wf = trade();
        let alone = classify_page(&wf, &grid_page(SECOND_PAGE, 1.0));
        assert_eq!(alone.doc_type, None, "alone it is UNKNOWN: {alone:?}");
        let classes = classify_lines(&wf, &[DECLARATION, SECOND_PAGE, SECOND_PAGE]);
        let cd = Some("customs_declaration");
        assert_eq!(types(&classes), [cd, cd, cd], "{classes:#?}");
        let second = &classes[1];
        assert!(!second.first_page);
        assert_eq!(second.continues, Some(0));
        assert_eq!(second.reason, None);
        assert_eq!(
            second.confidence, 0.25,
            "2 of the declaration's 8 labelled fields"
        );
        assert_eq!(
            second.explanation().as_deref(),
            Some(
                "continues the customs_declaration of page 1: no title or keywords enough, and \
                 shows its labels of declaration_number, invoice_number"
            )
        );
        assert_eq!(
            classes[2].continues,
            Some(1),
            "a third page continues the second"
        );
        let segments = crate::segment::segment(&classes);
        assert_eq!(segments.len(), 1, "{segments:?}");
        assert_eq!(segments[0].pages, [0, 1, 2]);
    }

    #[test]
    fn a_blank_page_another_type_or_too_little_evidence_is_not_swallowed() {
        let wf = trade();
        let unknown = |pages: &[&[&str]]| {
            let classes = classify_lines(&wf, pages);
            let last = classes.last().cloned().expect("pages");
            assert_eq!(last.continues, None, "{last:?}");
            last
        };
        // A blank page.
        assert_eq!(unknown(&[DECLARATION, &[]]).doc_type, None);
        // A page of another type keeps its type.
        let invoice: &[&str] = &[
            "COMMERCIAL INVOICE",
            "Invoice No.: INV-1",
            "Unit price 2.00",
        ];
        let c = unknown(&[DECLARATION, invoice]);
        assert_eq!(c.doc_type.as_deref(), Some("commercial_invoice"));
        assert!(c.first_page);
        // One label only.
        let one: &[&str] = &["Declaration No. 25DER3NPXCTCB49A93", "Method of payment"];
        assert_eq!(unknown(&[DECLARATION, one]).doc_type, None);
        // Labels every type prints tell nothing apart.
        let shared: &[&str] = &["Container No. MSCU1234565", "Gross weight (kg) 12,694.3"];
        assert_eq!(unknown(&[DECLARATION, shared]).doc_type, None);
        // Another type's title, damaged: the first page of another document.
        let titled: &[&str] = &["BIXX OF LAXING", SECOND_PAGE[1], SECOND_PAGE[2]];
        assert_eq!(unknown(&[DECLARATION, titled]).doc_type, None);
        // A first-page marker starts a document, of whatever type.
        let first: &[&str] = &[SECOND_PAGE[1], SECOND_PAGE[2], "Page 1 of 2"];
        assert_eq!(unknown(&[DECLARATION, first]).doc_type, None);
        // Nothing to continue: after an UNKNOWN page, or after a page of another type.
        assert_eq!(unknown(&[&["lorem ipsum"], SECOND_PAGE]).doc_type, None);
        assert_eq!(unknown(&[invoice, SECOND_PAGE]).doc_type, None);
    }

    #[test]
    fn an_ambiguous_page_is_not_continued() {
        let yaml = format!(
            "{TWO_TYPES}    fields:\n      - {{name: n, parser: text, labels: [packing no]}}\n      - {{name: m, parser: text, labels: [list no]}}\n"
        );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let first: &[&str] = &["PACKING LIST", "gross kg"];
        let both: &[&str] = &[
            "Commercial invoice and packing list",
            "unit price",
            "packing no 1",
            "list no 2",
        ];
        let classes = classify_lines(&wf, &[first, both]);
        assert_eq!(classes[1].doc_type, None, "{:?}", classes[1]);
        assert!(classes[1]
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("ambiguous")));
    }

    #[test]
    fn close_scores_are_reported_as_ambiguous() {
        // invoice: 0.6 + 0.2 = 0.8; packing list: 0.6 + 0.15 = 0.75.
        let page = grid_page(&["Commercial invoice and packing list", "unit price"], 1.0);
        let c = classify_page(&wf(), &page);
        assert_eq!(c.doc_type, None);
        assert_eq!(
            c.reason.as_deref(),
            Some("ambiguous between invoice (0.80) and packing_list (0.75)")
        );
        assert_eq!(c.confidence, 0.0);
        assert!(!c.first_page);
    }

    #[test]
    fn weak_evidence_is_unknown_with_the_reason() {
        let c = classify_page(&wf(), &grid_page(&["unit price list"], 1.0));
        assert_eq!(c.doc_type, None);
        assert_eq!(
            c.reason.as_deref(),
            Some("best match invoice (0.20) is below its minimum score 0.50")
        );
        let c = classify_page(&wf(), &grid_page(&["lorem ipsum"], 1.0));
        assert_eq!(
            c.reason.as_deref(),
            Some("no keyword of any document type was found")
        );
        let c = classify_page(&wf(), &grid_page(&[], 1.0));
        assert_eq!(c.reason.as_deref(), Some("the page has no text"));
    }

    #[test]
    fn negative_weights_count_against_a_type() {
        let yaml = TWO_TYPES.replace(
            "{text: gross kg, weight: 0.2}",
            "{text: gross kg, weight: 0.2}\n        - {text: draft, weight: -0.5}",
        );
        let page = grid_page(&["PACKING LIST draft", "gross kg"], 1.0);
        let c = classify_page(&Workflow::from_yaml(&yaml).unwrap(), &page);
        assert_eq!(c.scores[0], ("packing_list".to_owned(), 0.3));
        assert_eq!(c.doc_type, None);
    }

    const TITLED: &str = r#"
name: t
version: 1
document_types:
  - id: bill_of_lading
    title: Bill of lading
    recognition:
      keywords:
        - {text: bill of lading, title: true, weight: 0.5}
        - {text: notify party, weight: 0.2}
      min_score: 0.5
      continuation: ['\(continued\)']
  - id: invoice
    title: Invoice
    recognition:
      keywords:
        - {text: commercial invoice, title: true, weight: 0.6}
      continuation: ['\(continued\)']
"#;

    #[test]
    fn an_unknown_page_names_the_line_closest_to_a_title_and_why_it_missed() {
        let wf = Workflow::from_yaml(TITLED).unwrap();
        // Three slips in `bill of lading` (two allowed).
        let c = classify_page(&wf, &grid_page(&["BIXX OF LAXING", "shipper"], 1.0));
        assert_eq!(
            c.reason.as_deref(),
            Some(
                "no keyword of any document type was found; the closest line to a title is \
                 \"BIXX OF LAXING\", like bill_of_lading's \"bill of lading\" (3 edits, 2 allowed)"
            )
        );
        // The title's words, but a reference follows them on the line.
        let c = classify_page(&wf, &grid_page(&["Bill of lading 12345678"], 1.0));
        assert!(
            c.reason
                .as_deref()
                .is_some_and(|r| r.ends_with("(the line goes on after it)")),
            "{c:?}"
        );
        // Nothing like a title, or a word of a sentence: the reason stays short.
        let c = classify_page(
            &wf,
            &grid_page(
                &["lorem ipsum dolor", "This is for the billing period"],
                1.0,
            ),
        );
        assert_eq!(
            c.reason.as_deref(),
            Some("no keyword of any document type was found")
        );
    }

    #[test]
    fn a_noisy_title_still_names_the_page_and_starts_a_document() {
        let wf = Workflow::from_yaml(TITLED).unwrap();
        for title in [
            "BILL OF LADING",
            "Bill of Lading —",
            "| Bill of Lading |",
            "BILLOF LADING",
            "Bill of Lad ing",
            "Bi11 of Lading",
            "OCEAN NETWORK EXPRESS BILL OF LADING",
        ] {
            let c = classify_page(&wf, &grid_page(&[title, "Shipper: ACME"], 1.0));
            assert_eq!(c.doc_type.as_deref(), Some("bill_of_lading"), "{title}");
            assert!(c.first_page, "{title}");
        }
        // A reference to a bill of lading is not its title.
        let c = classify_page(&wf, &grid_page(&["Bill of lading: MSCU1234567"], 1.0));
        assert_eq!(c.doc_type, None);
        // The title of a continuation page still names it, without starting a document.
        let c = classify_page(
            &wf,
            &grid_page(&["COMMERCIAL INVOICE (continued)", "Total"], 1.0),
        );
        assert_eq!(c.doc_type.as_deref(), Some("invoice"));
        assert!(!c.first_page);
    }

    #[test]
    fn joined_words_still_count_for_a_phrase() {
        let wf = Workflow::from_yaml(TITLED).unwrap();
        let c = classify_page(&wf, &grid_page(&["BILL OF LADING", "NOTIFYPARTY"], 1.0));
        assert_eq!(c.scores[0], ("bill_of_lading".to_owned(), 0.7));
    }

    #[test]
    fn a_title_must_be_text() {
        let yaml = TITLED.replace(
            "{text: notify party, weight: 0.2}",
            "{regex: 'notify', title: true, weight: 0.2}",
        );
        let Err(err) = Workflow::from_yaml(&yaml) else {
            panic!("a regex title is refused");
        };
        let err = err.to_string();
        assert!(err.contains("keywords[1].title"), "{err}");
    }

    #[test]
    fn matching_ignores_accents_and_case() {
        let yaml = r#"
name: t
version: 1
document_types:
  - id: customs_declaration
    title: Customs declaration
    recognition:
      keywords: [{text: Déclaration en douane, weight: 0.7}]
"#;
        let wf = Workflow::from_yaml(yaml).unwrap();
        for line in [
            "DECLARATION EN DOUANE",
            "Déclaration en Douane",
            "déclaration en douane",
        ] {
            let c = classify_page(&wf, &grid_page(&[line], 1.0));
            assert_eq!(c.doc_type.as_deref(), Some("customs_declaration"), "{line}");
        }
    }
}
