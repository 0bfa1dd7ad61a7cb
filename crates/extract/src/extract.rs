//! Field extraction with evidence.
//!
//! Every match of every pattern on every page of a segment is a candidate, kept with its
//! page, the box of the value's own words (not the whole line: a reviewer must see which
//! number was read), the raw text, the parsed value and a confidence. The best candidate is
//! chosen; the others stay as alternatives, and a close disagreement is flagged rather than
//! settled silently.

use std::collections::HashSet;
use std::ops::Range;

use ironclad_core::page::{BBox, PageText, Word};
use ironclad_core::parse::{self, ParseError, ParserKind, Value};

use crate::keyvalue::{LabelHit, LabelPage};
use crate::layout::PageLayout;
use crate::shape::Shape;
use crate::workflow::{CompiledField, FieldSpec, Workflow};
use ironclad_core::fold::fold_str;

/// Most candidates (and, separately, unreadable matches) kept per field. A pattern such as
/// `(?P<value>\d)` would otherwise turn every digit of a dossier into evidence to store.
pub const MAX_CANDIDATES: usize = 64;

/// How close (in confidence) a disagreeing candidate must come to the chosen one to be a
/// conflict. Below it the alternative is kept as evidence but does not ask for review: an
/// OCR-garbled footer repeating the total should not block a clean invoice.
pub const CONFLICT_MARGIN: f64 = 0.2;

pub use ironclad_core::analysis::{Candidate, Fact, Unreadable};

/// Extracts every field of `doc_type` from a segment's pages. An unknown type has no fields.
pub fn extract(workflow: &Workflow, doc_type: &str, pages: &[&PageText]) -> Vec<Fact> {
    let layouts: Vec<PageLayout<'_>> = pages.iter().map(|p| PageLayout::new(p)).collect();
    extract_layouts(workflow, doc_type, pages, &layouts)
}

pub(crate) fn extract_layouts(
    workflow: &Workflow,
    doc_type: &str,
    pages: &[&PageText],
    layouts: &[PageLayout<'_>],
) -> Vec<Fact> {
    let Some((spec, compiled)) = workflow.compiled_type(doc_type) else {
        return Vec::new();
    };
    let labelled = labelled_pages(&spec.fields, &compiled.fields, pages);
    spec.fields
        .iter()
        .zip(&compiled.fields)
        .enumerate()
        .map(|(k, (field, c))| extract_field(field, c, pages, layouts, &labelled, k))
        .collect()
}

/// Each page with the label hits of every field (by field index), every label's words
/// marked so that no value runs into another field's label. Empty when no field has labels.
pub(crate) fn labelled_pages<'p>(
    specs: &[FieldSpec],
    fields: &[CompiledField],
    pages: &[&'p PageText],
) -> Vec<(LabelPage<'p>, Vec<Vec<LabelHit>>)> {
    if fields.iter().all(|f| f.labels.is_empty()) {
        return Vec::new();
    }
    pages
        .iter()
        .map(|page| {
            let mut lp = LabelPage::new(page);
            let hits: Vec<Vec<LabelHit>> = specs
                .iter()
                .zip(fields)
                .map(|(s, f)| lp.find_labels(f, s.region))
                .collect();
            for h in &hits {
                lp.mark(h);
            }
            (lp, hits)
        })
        .collect()
}

fn extract_field(
    spec: &FieldSpec,
    compiled: &CompiledField,
    pages: &[&PageText],
    layouts: &[PageLayout<'_>],
    labelled: &[(LabelPage<'_>, Vec<Vec<LabelHit>>)],
    index: usize,
) -> Fact {
    let mut found = Found::default();
    for (k, (page, full)) in pages.iter().zip(layouts).enumerate() {
        // A region gets its own layout: only its words, so a pattern cannot reach outside.
        let regional = spec.region.map(|r| PageLayout::within(page, r));
        let layout = regional.as_ref().unwrap_or(full);
        let labels = labelled.get(k).map(|(lp, _)| lp);
        for (p, re) in compiled.patterns.iter().enumerate() {
            for caps in re.captures_iter(layout.folded().as_str()) {
                found.add(
                    spec.parser,
                    compiled,
                    page.index,
                    (layout, labels),
                    &caps,
                    p,
                );
            }
        }
    }
    // After the patterns, so that words a pattern already read are not a second vote.
    for (page, (lp, hits)) in pages.iter().zip(labelled) {
        for hit in hits.get(index).into_iter().flatten() {
            found.add_labelled(spec.parser, compiled, page.index, lp, hit);
        }
    }
    found.settle_other_columns();
    if found.candidates.is_empty() {
        if let Some(evident) = SelfEvident::of(spec.parser, compiled.shape.as_ref()) {
            for page in pages {
                found.add_self_evident(spec, compiled, &evident, page);
            }
        }
    }
    let Found {
        candidates,
        unreadable,
        ..
    } = found;
    decide(
        &spec.name,
        spec.parser,
        spec.required,
        candidates,
        unreadable,
    )
}

/// The fact a field's candidates make (see [`choose`]).
pub(crate) fn decide(
    field: &str,
    parser: ParserKind,
    required: bool,
    candidates: Vec<Candidate>,
    unreadable: Vec<Unreadable>,
) -> Fact {
    let mut fact = Fact {
        field: field.to_owned(),
        parser,
        missing_required: required,
        chosen: None,
        candidates,
        conflict: false,
        unreadable,
    };
    choose(&mut fact);
    fact
}

/// Chooses among a fact's candidates, as every reader of a field does (patterns, labels,
/// templates, a provider): the most confident, ties to the earlier pattern; at most
/// [`MAX_CANDIDATES`] kept; a disagreeing candidate within [`CONFLICT_MARGIN`] of the
/// chosen one is a conflict. A required field is missing only while nothing is chosen.
pub fn choose(fact: &mut Fact) {
    // Stable sort on confidence alone: equal confidences keep discovery order, which is
    // pattern order, then page, then position.
    fact.candidates.sort_by_key(|c| c.pattern);
    fact.candidates
        .sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    fact.candidates.truncate(MAX_CANDIDATES);
    fact.chosen = fact.candidates.first().cloned();
    fact.conflict = fact.chosen.as_ref().is_some_and(|best| {
        fact.candidates.iter().any(|c| {
            !same_value(&c.value, &best.value) && c.confidence >= best.confidence - CONFLICT_MARGIN
        })
    });
    fact.missing_required &= fact.chosen.is_none();
}

/// Reads `raw` as field `field` of document type `doc_type` would be: its parser, with the
/// unit its label states and the workflow's locale hints layered as compiled. `None` when the
/// type has no such field.
pub fn read_field(
    workflow: &Workflow,
    doc_type: &str,
    field: &str,
    raw: &str,
) -> Option<Result<parse::Parsed, ParseError>> {
    let (spec, compiled) = workflow.compiled_type(doc_type)?;
    let k = spec.fields.iter().position(|f| f.name == field)?;
    Some(read(spec.fields[k].parser, &compiled.fields[k], raw))
}

/// The first line of a pattern's match when the match crosses a line break before its value
/// (`label\s*(?P<value>…)` running onto the next line): the label as printed, in the folded
/// text. `None` when the value is on the line the match's text starts on (blanks a leading
/// `\s*` took from the lines before do not count).
fn label_line(folded: &str, whole: Range<usize>, value: &Range<usize>) -> Option<Range<usize>> {
    let before = folded.get(whole.start..value.start)?;
    let start = whole.start + (before.len() - before.trim_start().len());
    let end = before.trim_start().find('\n')?;
    Some(start..start + end)
}

/// Whether a value's box sits under its label's: overlapping it horizontally and starting
/// below the label's middle. A stacked cell prints its value so; a value beside the label's
/// column, or above it (a text layer read on into another block), is another cell's.
fn sits_under(label: BBox, value: BBox) -> bool {
    value.x0 < label.x1 && value.x1 > label.x0 && value.y0 > (label.y0 + label.y1) / 2.0
}

/// Confidence kept by a pattern's value that a line break separates from its label and that
/// does not sit under it: in a row of stacked cells (`CNTR NO   BILL OF LADING NO.` over
/// `MSCU6394177   COSU6384120577`) reading order puts the neighbouring column's value first
/// on the next line, so such a value is more likely another field's than this one's. Kept as
/// evidence (a reviewer sees what the pattern matched), but at half its confidence it stays
/// under the default confidence floor (0.6): alone, it asks for review rather than decides.
const OTHER_COLUMN_FACTOR: f64 = 0.5;

/// A field's candidates as they are found, before [`choose`].
#[derive(Default)]
struct Found {
    candidates: Vec<Candidate>,
    /// For each candidate: whether it is a pattern's value from another column (see
    /// [`OTHER_COLUMN_FACTOR`]).
    other_column: Vec<bool>,
    /// What the field's labels read by geometry, per page, whether or not it became a
    /// candidate of its own (the same words may have been a pattern's already).
    geometry: Vec<(u32, Value, f64)>,
    unreadable: Vec<Unreadable>,
    /// (page, original byte range) already taken: two patterns matching one place are one
    /// candidate, not two votes.
    seen: HashSet<(u32, usize, usize)>,
}

impl Found {
    /// A pattern's match (on the layout's folded text): its `value` group is the candidate.
    fn add(
        &mut self,
        kind: ParserKind,
        field: &CompiledField,
        page: u32,
        (layout, labels): (&PageLayout<'_>, Option<&LabelPage<'_>>),
        caps: &regex::Captures<'_>,
        pattern: usize,
    ) {
        let (Some(whole), Some(value)) = (caps.get(0), caps.name("value")) else {
            return;
        };
        let folded = value.range();
        let label = label_line(layout.folded().as_str(), whole.range(), &folded);
        let mut range = layout.folded().original_range(folded);
        // A shaped value the pattern cut short (OCR put a space inside it) takes the rest of
        // its line that completes it.
        if let Some(shape) = &field.shape {
            let text = layout.text();
            if let Some(more) = shape.completion(text[range.clone()].trim(), &text[range.end..]) {
                range.end += more;
            }
        }
        let raw = layout.text()[range.clone()].trim();
        if raw.is_empty() || !self.seen.insert((page, range.start, range.end)) {
            return;
        }
        let Some(evidence) = layout.evidence(range) else {
            return;
        };
        // A label is never a value: the pattern's blanks ran past an empty cell or a value
        // printed off its line (`Packing list No.:` then `Invoice No.: …` under it).
        if labels.is_some_and(|lp| lp.holds_label_word(evidence.bbox)) {
            return;
        }
        // A label with no words on its line (the match began with the break) has no column.
        let other_column = label
            .and_then(|l| layout.evidence(layout.folded().original_range(l)))
            .is_some_and(|l| !sits_under(l.bbox, evidence.bbox));
        let factor = if other_column {
            OTHER_COLUMN_FACTOR
        } else {
            1.0
        };
        match read(kind, field, raw) {
            Ok(parsed) => self.push(
                Candidate {
                    page,
                    bbox: evidence.bbox,
                    raw: raw.to_owned(),
                    confidence: round(evidence.confidence * parsed.certainty * factor),
                    ocr_confidence: round(evidence.confidence),
                    certainty: parsed.certainty,
                    value: parsed.value,
                    pattern,
                    label_bbox: None,
                    template: None,
                    origin: None,
                },
                other_column,
            ),
            Err(ParseError::Empty) => {}
            Err(e) => self.push_unreadable(page, evidence.bbox, raw, &e),
        }
    }

    /// The value a label points at: the longest start of the first run (in the field's order
    /// of directions) that the parser reads; a fuzzy label or a second-choice direction costs
    /// a little confidence. When no run reads, the first run is what is unreadable.
    fn add_labelled(
        &mut self,
        kind: ParserKind,
        field: &CompiledField,
        page: u32,
        lp: &LabelPage<'_>,
        hit: &LabelHit,
    ) {
        let mut first_error = None;
        for run in lp.values(hit, &field.value_at) {
            // Free text takes the run as it is; a value its parser checks may skip the
            // label's other-language caption (each word skipped a guess, like a label's edit).
            let captions = if kind == ParserKind::Text {
                0
            } else {
                run.caption
            };
            let reading = (0..=captions)
                .map(|skip| (skip, longest_reading(kind, field, lp, &run.words[skip..])))
                .find(|(_, r)| r.is_ok())
                .unwrap_or_else(|| (0, longest_reading(kind, field, lp, &run.words)));
            match reading {
                (skipped, Ok((words, raw, parsed))) => {
                    let preference = field.value_at.iter().position(|d| *d == run.direction);
                    let factor = (1.0 - LABEL_EDIT_COST * f64::from(hit.edits))
                        * (1.0 - LABEL_EDIT_COST * skipped as f64)
                        * (1.0 - DIRECTION_COST * preference.unwrap_or(0) as f64);
                    let ocr_confidence = lp.confidence(words);
                    let confidence = round(ocr_confidence * parsed.certainty * factor);
                    self.geometry.push((page, parsed.value.clone(), confidence));
                    self.add_once(Candidate {
                        page,
                        bbox: lp.union(words),
                        raw,
                        confidence,
                        ocr_confidence: round(ocr_confidence),
                        certainty: parsed.certainty,
                        value: parsed.value,
                        pattern: field.patterns.len() + hit.label,
                        label_bbox: Some(hit.bbox),
                        template: None,
                        origin: None,
                    });
                    return;
                }
                (_, Err((raw, e))) => {
                    if first_error.is_none() {
                        first_error = Some((lp.union(&run.words), raw, e));
                    }
                }
            }
        }
        if let Some((bbox, raw, e)) = first_error {
            if e != ParseError::Empty {
                self.push_unreadable(page, bbox, &raw, &e);
            }
        }
    }

    /// Adds a label's candidate unless the same words were read to the same value already (by
    /// a pattern, or by another of the field's labels): one candidate, the better-founded. A
    /// pattern's value from another column that a label finds under itself is the label's.
    fn add_once(&mut self, candidate: Candidate) {
        let same = self.candidates.iter().position(|c| {
            c.page == candidate.page
                && c.bbox == candidate.bbox
                && same_value(&c.value, &candidate.value)
        });
        match same {
            Some(k)
                if self.other_column[k]
                    || (self.candidates[k].label_bbox.is_some()
                        && self.candidates[k].confidence < candidate.confidence) =>
            {
                self.candidates[k] = candidate;
                self.other_column[k] = false;
            }
            Some(_) => {}
            None => self.push(candidate, false),
        }
    }

    /// Where the field's own labels read a different value on the page of a pattern's value
    /// from another column, the labels' reading is the page's: the pattern's stays as evidence,
    /// below the label's by more than [`CONFLICT_MARGIN`], so it neither wins nor makes the
    /// fact a conflict.
    fn settle_other_columns(&mut self) {
        let mut keep = Vec::with_capacity(self.candidates.len());
        for (c, &other) in self.candidates.iter_mut().zip(&self.other_column) {
            let geometry = self
                .geometry
                .iter()
                .filter(|(page, value, _)| *page == c.page && !same_value(value, &c.value))
                .map(|(_, _, confidence)| *confidence)
                .reduce(f64::max);
            match (other, geometry) {
                // Under a label read so poorly that nothing fits below the margin: dropped.
                (true, Some(g)) if g <= CONFLICT_MARGIN => keep.push(false),
                (true, Some(g)) => {
                    // One rounding step under the margin, so `choose`'s comparison is strict.
                    c.confidence = round(c.confidence.min(round(g - CONFLICT_MARGIN) - 1e-4));
                    keep.push(true);
                }
                _ => keep.push(true),
            }
        }
        let mut keep = keep.into_iter();
        self.candidates.retain(|_| keep.next().unwrap_or(true));
    }

    /// Where neither a pattern nor a label found the field (its label lost on a fax: `ET
    /// No.` for `B/L No.`, a stamp over `CONTAINER / SEAL`), each distinct word of the page
    /// that is evidently such a value ([`SelfEvident`]). A carrier's B/L number, an MRN or a
    /// container number whose check digit holds is specific enough to be found so, but
    /// without its label it is a guess: its confidence is [`SHAPE_ALONE_FACTOR`] of the
    /// reading's, and two such words on a page disagree, which asks for review.
    fn add_self_evident(
        &mut self,
        spec: &FieldSpec,
        field: &CompiledField,
        evident: &SelfEvident<'_>,
        page: &PageText,
    ) {
        let split = match evident {
            SelfEvident::Shape(shape) => split_in_two(shape, &page.words),
            SelfEvident::CheckDigit => Vec::new(),
        };
        for word in page.words.iter().chain(&split) {
            if spec.region.is_some_and(|r| !r.contains_centre(word.bbox)) {
                continue;
            }
            let raw = without_stray_marks(&word.text);
            if let SelfEvident::Shape(shape) = evident {
                if shape.fit(raw).is_none_or(|f| f.repairs != 0) {
                    continue;
                }
            }
            let Ok(parsed) = read(spec.parser, field, raw) else {
                continue;
            };
            if matches!(evident, SelfEvident::CheckDigit)
                && !matches!(
                    parsed.value,
                    Value::ContainerNumber {
                        check_digit_valid: true,
                        ..
                    }
                )
            {
                continue;
            }
            if self
                .candidates
                .iter()
                .any(|c| c.page == page.index && same_value(&c.value, &parsed.value))
            {
                continue;
            }
            let ocr_confidence = f64::from(word.confidence);
            self.push(
                Candidate {
                    page: page.index,
                    bbox: word.bbox,
                    raw: word.text.trim().to_owned(),
                    confidence: round(ocr_confidence * parsed.certainty * SHAPE_ALONE_FACTOR),
                    ocr_confidence: round(ocr_confidence),
                    certainty: parsed.certainty,
                    value: parsed.value,
                    pattern: SHAPE_ALONE_PATTERN,
                    label_bbox: None,
                    template: None,
                    origin: None,
                },
                false,
            );
        }
    }

    fn push(&mut self, candidate: Candidate, other_column: bool) {
        if self.candidates.len() < MAX_CANDIDATES {
            self.candidates.push(candidate);
            self.other_column.push(other_column);
        }
    }

    fn push_unreadable(&mut self, page: u32, bbox: BBox, raw: &str, error: &ParseError) {
        if self.unreadable.len() < MAX_CANDIDATES {
            self.unreadable.push(Unreadable {
                page,
                bbox,
                raw: raw.to_owned(),
                error: error.to_string(),
            });
        }
    }
}

/// What makes a word evidently a field's value with no label or pattern to say so.
enum SelfEvident<'a> {
    /// Exactly the field's declared shape, as printed (no character read as the other class).
    Shape(&'a Shape),
    /// A container number whose ISO 6346 check digit holds: one word in about ten of that
    /// form passes by chance, and no other value of the trade has it.
    CheckDigit,
}

impl<'a> SelfEvident<'a> {
    fn of(parser: ParserKind, shape: Option<&'a Shape>) -> Option<Self> {
        match (shape, parser) {
            (Some(shape), _) => Some(Self::Shape(shape)),
            (None, ParserKind::ContainerNumber) => Some(Self::CheckDigit),
            (None, _) => None,
        }
    }
}

/// Widest gap, in characters, inside a value OCR split in two ([`split_in_two`]).
const SPLIT_GAP_CHARS: f32 = 1.5;

/// Values of `shape` that OCR split in two (`COSU44809436 71` on a fax): each word that is
/// not of the shape alone but is with the next word of its line, when the gap between them is
/// at most [`SPLIT_GAP_CHARS`] of the first word's characters wide (a space read inside the
/// value, not the next column), as one word over both boxes, as sure as the less sure.
fn split_in_two(shape: &Shape, words: &[Word]) -> Vec<Word> {
    let whole = |raw: &str| shape.fit(raw).is_some_and(|f| f.repairs == 0);
    words
        .windows(2)
        .filter_map(|pair| {
            let [first, next] = pair else { return None };
            let (a, b) = (first.bbox.normalized(), next.bbox.normalized());
            let char_width = (a.x1 - a.x0) / first.text.chars().count().max(1) as f32;
            let gap = b.x0 - a.x1;
            let close =
                first.line == next.line && gap >= 0.0 && gap <= SPLIT_GAP_CHARS * char_width;
            let head = without_stray_marks(&first.text);
            let text = format!("{head} {}", without_stray_marks(&next.text));
            (close && !whole(head) && whole(&text)).then(|| Word {
                text,
                bbox: a.union(b),
                confidence: first.confidence.min(next.confidence),
                line: first.line,
            })
        })
        .collect()
}

/// Confidence kept by a value found by its shape alone ([`Found::add_self_evident`]): a clean
/// reading (0.9) stays above the default confidence floor (0.6), a doubtful one (under 0.75)
/// falls below it and asks for review.
const SHAPE_ALONE_FACTOR: f64 = 0.8;

/// The `pattern` number of a value found by its shape alone, apart from every pattern,
/// label and template.
pub const SHAPE_ALONE_PATTERN: usize = u32::MAX as usize - 1;

/// Confidence a label's candidate loses per edit between the label and what is printed.
pub(crate) const LABEL_EDIT_COST: f64 = 0.05;
/// Confidence a label's candidate loses when found in its second-choice direction.
pub(crate) const DIRECTION_COST: f64 = 0.05;

/// The longest start of `run` (word indices) that the field's parser reads, with its text; or
/// the whole run's text and why it could not be read.
fn longest_reading<'r>(
    kind: ParserKind,
    field: &CompiledField,
    lp: &LabelPage<'_>,
    run: &'r [usize],
) -> Result<(&'r [usize], String, parse::Parsed), (String, ParseError)> {
    let mut whole = None;
    for n in (1..=run.len()).rev() {
        let raw = lp.text(&run[..n]);
        match read(kind, field, &raw) {
            Ok(parsed) => return Ok((&run[..n], raw, parsed)),
            Err(e) => {
                if whole.is_none() {
                    whole = Some((raw, e));
                }
            }
        }
    }
    Err(whole.unwrap_or((String::new(), ParseError::Empty)))
}

/// Parses a value as the field declares; a unit stated by the label completes a bare number
/// (the candidate keeps the text as printed).
pub(crate) fn read(
    kind: ParserKind,
    field: &CompiledField,
    raw: &str,
) -> Result<parse::Parsed, ParseError> {
    let raw = without_stray_marks(raw);
    // A value of the field's shape is read into it; one of another shape is kept as read
    // (a national number beside the EU's, a value cut short: the rules and a person judge).
    if let Some(fitted) = field.shape.as_ref().and_then(|s| s.fit(raw)) {
        // Each character read as the other class is a guess: the value is that much less sure.
        let mut parsed = parse::parse(kind, &fitted.text, &field.hints)?;
        parsed.certainty *= SHAPE_REPAIR_CERTAINTY.powi(fitted.repairs as i32);
        return Ok(parsed);
    }
    // A value of the shape beside a stray fragment OCR glued to it: the fragment is dropped,
    // a guess like a repair.
    if let Some(fitted) = field.shape.as_ref().and_then(|s| s.fit_within(raw)) {
        let mut parsed = parse::parse(kind, &fitted.text, &field.hints)?;
        parsed.certainty *= SHAPE_REPAIR_CERTAINTY.powi(fitted.repairs as i32 + 1);
        return Ok(parsed);
    }
    let with_unit = match &field.unit {
        Some(unit) if !raw.contains(char::is_alphabetic) => Some(format!("{raw} {unit}")),
        _ => None,
    };
    parse::parse(kind, with_unit.as_deref().unwrap_or(raw), &field.hints)
}

/// `raw` without the specks OCR reads around a value on a coarse page: leading dots, commas
/// and quotes (`..INV2562755`), and a dot, comma, colon or semicolon after its last digit
/// (`USD 79,142.60.`, `25FRULRDGMZ2F3C9E4.`). A value never starts with them, and none ends a
/// number or a code; a dot after a letter (`Pvt. Ltd.`) is kept.
fn without_stray_marks(raw: &str) -> &str {
    let raw = raw
        .trim()
        .trim_start_matches(['.', ',', ':', ';', '\'', '"', '‘', '’', '`', '·']);
    let bare = raw.trim_end_matches(['.', ',', ':', ';']);
    if bare.ends_with(|c: char| c.is_ascii_digit()) {
        bare
    } else {
        raw
    }
}

/// Certainty kept per character a shape read as the other class (`O` as `0`).
const SHAPE_REPAIR_CERTAINTY: f64 = 0.9;

/// Four decimals: enough to order candidates, short enough to read in JSON.
pub fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Whether two readings mean the same thing for conflict purposes: text ignores case,
/// accents and spaces, and an amount without a currency agrees with the same amount in any currency.
/// Shared with every source of candidates (patterns, an external provider).
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // A space OCR put inside an identifier (`DPI -2404-118`) does not make another value.
        (Value::Text(x), Value::Text(y)) => {
            let key = |s: &str| {
                fold_str(s)
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
            };
            key(x) == key(y)
        }
        (
            Value::Money {
                amount: x,
                currency: cx,
            },
            Value::Money {
                amount: y,
                currency: cy,
            },
        ) => x == y && (cx.is_none() || cy.is_none() || cx == cy),
        (Value::Weight { kg: x, .. }, Value::Weight { kg: y, .. }) => x == y,
        (Value::ContainerNumber { code: x, .. }, Value::ContainerNumber { code: y, .. }) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::tests::{grid_page, placed_page};
    use crate::workflow::WorkflowError;

    const WF: &str = r#"
name: t
version: 1
document_types:
  - id: customs_declaration
    title: Customs declaration
    recognition:
      keywords: [{text: douane, weight: 1}]
    fields:
      - name: declared_value
        parser: money
        required: true
        patterns: ['valeur declaree[^:\n]*:\s*(?P<value>[\d.,]+\s*[a-z]{3})']
      - name: gross_weight
        parser: weight
        patterns: ['gross weight:\s*(?P<value>[\d.,]+\s*kgs?)']
      - name: invoice_number
        parser: text
        required: true
        patterns: ['invoice no\.?:\s*(?P<value>\S+)', 'facture\s*:\s*(?P<value>\S+)']
      - name: reference
        parser: text
        required: true
        patterns: ['ref:\s*(?P<value>\S+)']
"#;

    fn wf() -> Workflow {
        Workflow::from_yaml(WF).unwrap()
    }

    fn fact<'a>(facts: &'a [Fact], name: &str) -> &'a Fact {
        facts.iter().find(|f| f.field == name).unwrap()
    }

    #[test]
    fn accented_labels_match_unaccented_text_and_back() {
        for line in [
            "Valeur déclarée / Declared value: 39.004,00 USD",
            "VALEUR DECLAREE / DECLARED VALUE: 39.004,00 USD",
        ] {
            let page = grid_page(&[line], 1.0);
            let facts = extract(&wf(), "customs_declaration", &[&page]);
            let chosen = fact(&facts, "declared_value").chosen.clone().unwrap();
            assert_eq!(chosen.raw, "39.004,00 USD", "{line}");
            assert_eq!(
                serde_json::to_value(&chosen.value).unwrap()["value"]["amount"],
                "39004.00"
            );
        }
    }

    #[test]
    fn specks_around_a_coarse_value_are_not_part_of_it() {
        for (raw, want) in [
            ("..INV2562755", "INV2562755"),
            ("25FRULRDGMZ2F3C9E4.", "25FRULRDGMZ2F3C9E4"),
            ("USD 79,142.60.", "USD 79,142.60"),
            ("Pvt. Ltd.", "Pvt. Ltd."),
            ("'24/04/2025;", "24/04/2025"),
        ] {
            assert_eq!(without_stray_marks(raw), want, "{raw}");
        }
        // Through a label: the value is read bare, the evidence keeps what was printed.
        let yaml = WF.replace(
            "        patterns: ['ref:\\s*(?P<value>\\S+)']",
            "        labels: ['reference']",
        );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let page = grid_page(&["Reference ..INV2562755 ."], 0.9);
        let facts = extract(&wf, "customs_declaration", &[&page]);
        let chosen = fact(&facts, "reference").chosen.clone().expect("read");
        assert_eq!(chosen.value, Value::Text("INV2562755".into()));
        assert!(chosen.raw.starts_with("..INV2562755"), "{}", chosen.raw);
    }

    #[test]
    fn a_checked_value_skips_the_labels_other_language_caption() {
        // OCR lost the colon of `Date d'acceptation / Date: 24/04/2025`.
        let page = grid_page(&["Date d'acceptation / Date 24/04/2025"], 0.9);
        let with = |parser: &str| {
            let yaml = WF.replace(
                "        parser: text\n        required: true\n        patterns: ['ref:\\s*(?P<value>\\S+)']",
                &format!("        parser: {parser}\n        labels: [\"date d'acceptation\"]"),
            );
            let facts = extract(
                &Workflow::from_yaml(&yaml).unwrap(),
                "customs_declaration",
                &[&page],
            );
            fact(&facts, "reference").chosen.clone()
        };
        let date = with("date").expect("the date after the caption");
        assert_eq!(date.raw, "24/04/2025");
        assert!(
            (date.confidence - 0.9 * 0.95).abs() < 1e-9,
            "{}",
            date.confidence
        );
        // Free text takes what follows the label as it is.
        assert_eq!(with("text").map(|c| c.raw), Some("Date 24/04/2025".into()));
    }

    #[test]
    fn a_value_of_the_fields_shape_is_found_where_its_label_was_lost() {
        let yaml = WF.replace(
            "        patterns: ['ref:\\s*(?P<value>\\S+)']",
            "        labels: ['b/l no']\n        shape: ['MAEU#########', 'COSU##########']",
        );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let reference = |lines: &[&str]| {
            let page = grid_page(lines, 0.9);
            fact(&extract(&wf, "customs_declaration", &[&page]), "reference").clone()
        };
        // A fax turned `B/L No.` into `ET No.`: the value alone, at 0.8 of its reading.
        let f = reference(&["Vessel MAERSK ESSEN", "ET No. MAEU129827288"]);
        let chosen = f.chosen.clone().expect("found by its shape");
        assert_eq!(chosen.value, Value::Text("MAEU129827288".into()));
        assert_eq!(chosen.pattern, SHAPE_ALONE_PATTERN);
        assert!(
            (chosen.confidence - 0.72).abs() < 1e-9,
            "{}",
            chosen.confidence
        );
        assert!(!f.conflict);
        // Printed twice, one value; two different values disagree.
        let f = reference(&["MAEU129827288 x", "MAEU129827288."]);
        assert_eq!(f.candidates.len(), 1);
        let f = reference(&["MAEU129827288", "COSU2783692408"]);
        assert!(f.conflict, "{:?}", f.candidates);
        // Only a word of the shape as printed: one needing a repair (`O` for `0`) is not.
        assert!(reference(&["MAEU12982728O"]).chosen.is_none());
        // Where the label is read, its value is the field's and nothing else is looked for.
        let f = reference(&["B/L No. MAEU129827288", "COSU2783692408"]);
        assert_eq!(f.candidates.len(), 1);
        assert_ne!(f.candidates[0].pattern, SHAPE_ALONE_PATTERN);
    }

    #[test]
    fn a_value_of_the_fields_shape_split_by_a_space_is_found_whole() {
        let yaml = WF.replace(
            "        patterns: ['ref:\\s*(?P<value>\\S+)']",
            "        labels: ['b/l no']\n        shape: ['COSU##########']",
        );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let reference = |words: &[(&str, f32, f32, f32, u32)]| {
            let page = placed_page(words, 0.9);
            fact(&extract(&wf, "customs_declaration", &[&page]), "reference").clone()
        };
        // A fax read `B/L No.` as `Bit Nu.` and a space inside the number: 12 characters over
        // 0.12, then a gap of one character.
        let f = reference(&[
            ("Bit", 0.10, 0.3, 0.13, 0),
            ("Nu.", 0.14, 0.3, 0.17, 0),
            ("COSU44809436", 0.20, 0.3, 0.32, 0),
            ("71", 0.33, 0.3, 0.35, 0),
        ]);
        let chosen = f.chosen.clone().expect("found whole by its shape");
        assert_eq!(chosen.value, Value::Text("COSU4480943671".into()));
        assert_eq!(chosen.raw, "COSU44809436 71");
        assert!((chosen.bbox.x0 - 0.20).abs() < 1e-6 && (chosen.bbox.x1 - 0.35).abs() < 1e-6);
        // Two columns apart (five characters), or on two lines, they are two values.
        assert!(reference(&[
            ("COSU44809436", 0.20, 0.3, 0.32, 0),
            ("71", 0.37, 0.3, 0.39, 0)
        ])
        .chosen
        .is_none());
        assert!(reference(&[
            ("COSU44809436", 0.20, 0.3, 0.32, 0),
            ("71", 0.33, 0.3, 0.35, 1)
        ])
        .chosen
        .is_none());
    }

    #[test]
    fn a_container_number_whose_check_digit_holds_is_found_where_its_label_was_lost() {
        let yaml = WF.replace(
            "        parser: text\n        required: true\n        patterns: ['ref:\\s*(?P<value>\\S+)']",
            "        parser: container_number\n        required: true\n        labels: ['container no']",
        );
        assert_ne!(yaml, WF);
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let container = |lines: &[&str]| {
            let page = grid_page(lines, 0.9);
            fact(&extract(&wf, "customs_declaration", &[&page]), "reference").clone()
        };
        // A stamp over `CONTAINER / SEAL`: the number under it, check digit valid, at 0.8.
        let f = container(&["CONTAINER tea | les", "SEGU9574349 69 CRATES"]);
        let chosen = f.chosen.clone().expect("found by its check digit");
        assert_eq!(chosen.raw, "SEGU9574349");
        assert_eq!(chosen.pattern, SHAPE_ALONE_PATTERN);
        assert!(
            (chosen.confidence - 0.72).abs() < 1e-9,
            "{}",
            chosen.confidence
        );
        // One digit off (the check digit no longer holds): not evidently a container number.
        assert!(container(&["CONTAINER tea | les", "SEGU9574348 69 CRATES"])
            .chosen
            .is_none());
        // Where the label is read, its value is the field's and nothing else is looked for.
        let f = container(&["Container No. SEGU9574349", "MSKU8120522"]);
        assert_eq!(f.candidates.len(), 1);
        assert_ne!(f.candidates[0].pattern, SHAPE_ALONE_PATTERN);
    }

    #[test]
    fn the_value_box_covers_the_value_words_not_the_line() {
        let mut page = grid_page(&["Masse brute / Gross weight: 7.774,40 kg"], 1.0);
        page.words[5].confidence = 0.8;
        let facts = extract(&wf(), "customs_declaration", &[&page]);
        let c = fact(&facts, "gross_weight").chosen.clone().unwrap();
        // Words: Masse brute / Gross weight: 7.774,40 kg → the value is words 5 and 6.
        assert_eq!(
            c.bbox,
            BBox {
                x0: 0.5,
                y0: 0.0,
                x1: 0.68,
                y1: 0.015
            }
        );
        let line = page
            .words
            .iter()
            .fold(page.words[0].bbox, |b, w| b.union(w.bbox));
        assert!(c.bbox.x1 - c.bbox.x0 < line.x1 - line.x0);
        assert!((c.ocr_confidence - 0.9).abs() < 1e-9);
        assert!((c.confidence - 0.9 * c.certainty).abs() < 1e-3);
    }

    #[test]
    fn disagreeing_candidates_are_kept_and_flagged() {
        let p0 = grid_page(&["Invoice No.: SOF/2024/0571"], 1.0);
        let mut p1 = grid_page(&["Invoice No.: SOF/2024/0517"], 0.95);
        p1.index = 1;
        let facts = extract(&wf(), "customs_declaration", &[&p0, &p1]);
        let f = fact(&facts, "invoice_number");
        assert_eq!(f.candidates.len(), 2);
        assert_eq!(f.chosen.as_ref().unwrap().raw, "SOF/2024/0571");
        assert_eq!(f.chosen.as_ref().unwrap().page, 0);
        assert!(f.conflict);
    }

    #[test]
    fn agreeing_or_distant_candidates_are_not_a_conflict() {
        let p0 = grid_page(
            &["Invoice No.: SOF/2024/0571", "Facture : sof/2024/0571"],
            1.0,
        );
        let facts = extract(&wf(), "customs_declaration", &[&p0]);
        let f = fact(&facts, "invoice_number");
        assert_eq!(f.candidates.len(), 2);
        assert_eq!(f.candidates[0].pattern, 0);
        assert!(!f.conflict);

        let mut p1 = grid_page(&["Invoice No.: S0F/2024/O571"], 0.4);
        p1.index = 1;
        let facts = extract(&wf(), "customs_declaration", &[&p0, &p1]);
        let f = fact(&facts, "invoice_number");
        assert_eq!(f.candidates.len(), 3);
        assert!(
            !f.conflict,
            "a low-confidence OCR misread is evidence, not a conflict"
        );
    }

    #[test]
    fn missing_and_unreadable_values_are_explained() {
        let page = grid_page(&["Valeur déclarée: abc,de xyz"], 1.0);
        let facts = extract(&wf(), "customs_declaration", &[&page]);
        let f = fact(&facts, "reference");
        assert!(f.missing_required);
        assert!(f.chosen.is_none());
        let f = fact(&facts, "declared_value");
        assert!(f.chosen.is_none() && f.missing_required);
        assert_eq!(
            f.unreadable.len(),
            0,
            "the pattern needs digits, so nothing matched"
        );
        let f = fact(&facts, "gross_weight");
        assert!(!f.missing_required, "not required");
        assert!(extract(&wf(), "no_such_type", &[&page]).is_empty());
    }

    #[test]
    fn regions_restrict_the_search() {
        let yaml = WF.replace(
            "        parser: weight\n",
            "        parser: weight\n        region: {x0: 0, y0: 0.025, x1: 1, y1: 1}\n",
        );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let page = grid_page(&["Gross weight: 1.00 kg", "Gross weight: 2.00 kg"], 1.0);
        let facts = extract(&wf, "customs_declaration", &[&page]);
        let f = fact(&facts, "gross_weight");
        assert_eq!(f.candidates.len(), 1);
        assert_eq!(f.chosen.as_ref().unwrap().raw, "2.00 kg");
    }

    #[test]
    fn a_unit_in_the_label_completes_a_bare_weight() {
        let yaml = WF
            .replace(
                "        parser: weight\n",
                "        parser: weight\n        unit: kg\n",
            )
            .replace(
                r"gross weight:\s*(?P<value>[\d.,]+\s*kgs?)",
                r"gross weight(?:\s*\(kg\))?:\s*(?P<value>[\d.,]+(?:\s*(?:kgs?|lb))?)",
            );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let page = grid_page(
            &["Gross weight (kg): 26,070.00", "Gross weight: 26,070.00 lb"],
            1.0,
        );
        let facts = extract(&wf, "customs_declaration", &[&page]);
        let f = fact(&facts, "gross_weight");
        let raws: Vec<&str> = f.candidates.iter().map(|c| c.raw.as_str()).collect();
        assert_eq!(raws, ["26,070.00", "26,070.00 lb"]);
        assert!(matches!(&f.candidates[0].value, Value::Weight { unit, .. } if unit == "kg"));
        assert!(f.conflict, "26,070 kg and 26,070 lb disagree");
        let bad = WF.replace(
            "        parser: money\n",
            "        parser: money\n        unit: kg\n",
        );
        assert!(Workflow::from_yaml(&bad).is_err());
    }

    fn with_labels(labels: &str) -> Workflow {
        let yaml = WF.replace(
            "        patterns: ['gross weight:\\s*(?P<value>[\\d.,]+\\s*kgs?)']\n",
            &format!("        unit: kg\n        patterns: ['gross weight:\\s*(?P<value>[\\d.,]+\\s*kgs?)']\n{labels}"),
        );
        assert_ne!(yaml, WF);
        Workflow::from_yaml(&yaml).unwrap()
    }

    #[test]
    fn a_value_under_its_label_is_found_where_no_pattern_can_pair_them() {
        let wf = with_labels("        labels: ['gross weight (kg)']\n");
        // A stacked form: reading order pairs the label row with the value row.
        let page = grid_page(
            &["GROSS WEIGHT (KG) CONTAINER", "12,694.3 TGHU9458075"],
            0.9,
        );
        let facts = extract(&wf, "customs_declaration", &[&page]);
        let f = fact(&facts, "gross_weight");
        let c = f.chosen.clone().expect("the value under the label");
        assert_eq!(c.raw, "12,694.3", "the container beside it is not a weight");
        assert!(matches!(&c.value, Value::Weight { unit, .. } if unit == "kg"));
        assert_eq!(c.pattern, 1, "labels are numbered after the one pattern");
        let label = c.label_bbox.expect("the label is evidence too");
        assert_eq!((label.x0, label.y0, label.x1), (0.0, 0.0, 0.28));
        assert_eq!((c.bbox.x0, c.bbox.y0, c.bbox.x1), (0.0, 0.02, 0.08));
        // Found in the second direction (right holds CONTAINER, not a weight): 5 % less.
        assert!((c.confidence - 0.9 * c.certainty * 0.95).abs() < 1e-3);
    }

    #[test]
    fn a_pattern_and_a_label_finding_the_same_words_count_once() {
        let wf = with_labels("        labels: ['gross weight']\n        value_at: [right]\n");
        let page = grid_page(&["Gross weight: 7.774,40 kg"], 1.0);
        let facts = extract(&wf, "customs_declaration", &[&page]);
        let f = fact(&facts, "gross_weight");
        assert_eq!(f.candidates.len(), 1, "{:?}", f.candidates);
        assert_eq!(f.candidates[0].pattern, 0, "the pattern found it first");
        assert!(!f.conflict);
    }

    #[test]
    fn a_label_whose_value_cannot_be_read_is_explained() {
        let wf = with_labels("        labels: ['gross weight']\n        value_at: [right]\n");
        let page = grid_page(&["Gross weight about twelve"], 1.0);
        let facts = extract(&wf, "customs_declaration", &[&page]);
        let f = fact(&facts, "gross_weight");
        assert!(f.chosen.is_none());
        assert_eq!(f.unreadable.len(), 1);
        assert_eq!(f.unreadable[0].raw, "about twelve");
    }

    #[test]
    fn labels_are_validated_with_the_rest() {
        let only_labels = WF.replace(
            "        patterns: ['ref:\\s*(?P<value>\\S+)']\n",
            "        labels: [reference, ref]\n        value_at: [below]\n",
        );
        assert_ne!(only_labels, WF);
        assert!(Workflow::from_yaml(&only_labels).is_ok());
        let bad = WF.replace(
            "        patterns: ['ref:\\s*(?P<value>\\S+)']\n",
            "        value_at: [below, below]\n",
        );
        let Err(WorkflowError::Invalid(issues)) = Workflow::from_yaml(&bad) else {
            panic!("refused");
        };
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "document_types[0].fields[3].patterns",
                "document_types[0].fields[3].value_at",
                "document_types[0].fields[3].value_at",
            ]
        );
        let blank = only_labels.replace("[reference, ref]", "['— | —']");
        assert!(Workflow::from_yaml(&blank).is_err());
    }

    /// A workflow whose `bl_number` pattern lets `\s*` run across the line break after its
    /// label, as a user might write it; `labels` adds the label's geometry when given.
    fn stacked(labels: &str) -> Workflow {
        let yaml = format!(
            r#"
name: t
version: 1
document_types:
  - id: bill_of_lading
    title: Bill of lading
    recognition:
      keywords: [{{text: bill of lading, weight: 1}}]
    fields:
      - name: bl_number
        parser: text
        patterns: ['bill of lading no\.?\s*:?\s*(?P<value>[a-z]{{4}}\d{{6,}})']
{labels}"#
        );
        Workflow::from_yaml(&yaml).unwrap()
    }

    /// A row of stacked cells, each `(x, label, value)`: the labels' words on one reader line
    /// at y = 0.30, the values' under them on the next, 0.01 of the page per character.
    fn stacked_cells(cells: &[(f32, &str, &str)]) -> PageText {
        let mut words = Vec::new();
        for (line, y) in [(0, 0.30), (1, 0.316)] {
            for &(x, label, value) in cells {
                let mut x = x;
                for word in [label, value][line as usize].split_whitespace() {
                    let x1 = x + 0.01 * word.chars().count() as f32;
                    words.push((word, x, y, x1, line));
                    x = x1 + 0.01;
                }
            }
        }
        placed_page(&words, 0.9)
    }

    const CNTR: &str = "MSCU6394177";
    const BL: &str = "COSU6384120577";

    /// `CNTR NO   BILL OF LADING NO.` over `MSCU6394177   COSU6384120577`: the pattern's
    /// `\s*` crosses the line to the container printed under the left column's label.
    fn two_columns() -> PageText {
        stacked_cells(&[(0.10, "CNTR NO", CNTR), (0.50, "BILL OF LADING NO.", BL)])
    }

    fn raws(f: &Fact) -> Vec<(&str, f64)> {
        f.candidates
            .iter()
            .map(|c| (c.raw.as_str(), c.confidence))
            .collect()
    }

    #[test]
    fn the_label_geometry_wins_over_a_pattern_that_crossed_into_another_column() {
        let wf = stacked("        labels: ['bill of lading no']\n        value_at: [below]\n");
        let facts = extract(&wf, "bill_of_lading", &[&two_columns()]);
        let f = fact(&facts, "bl_number");
        let chosen = f.chosen.clone().expect("a value");
        assert_eq!(chosen.raw, BL, "{:?}", raws(f));
        assert!(chosen.label_bbox.is_some(), "read under its label");
        assert!(
            !f.conflict,
            "the other column's value is no conflict: {:?}",
            raws(f)
        );
        let other = f.candidates.iter().find(|c| c.raw == CNTR).expect("kept");
        assert!(
            other.confidence < chosen.confidence - CONFLICT_MARGIN,
            "{:?}",
            raws(f)
        );
    }

    #[test]
    fn a_pattern_running_past_an_empty_cell_does_not_take_the_next_label() {
        // Packing list No.:              (its value printed off the line, unread)
        // Invoice No.: IO-25-2104        (mono-05: the pattern took `Invoice`)
        let wf = Workflow::from_yaml(
            r#"
name: t
version: 1
document_types:
  - id: packing_list
    title: Packing list
    recognition:
      keywords: [{text: packing list, weight: 1}]
    fields:
      - name: packing_list_number
        parser: text
        patterns: ['packing list no\.?\s*:\s*(?P<value>[a-z0-9][a-z0-9/.-]{2,30})']
        labels: ['packing list no']
      - name: invoice_number
        parser: text
        patterns: ['invoice no\.?\s*:\s*(?P<value>[a-z0-9][a-z0-9/.-]{2,30})']
        labels: ['invoice no']
"#,
        )
        .unwrap();
        let page = placed_page(
            &[
                ("Packing", 0.50, 0.20, 0.56, 0),
                ("list", 0.57, 0.20, 0.60, 0),
                ("No.:", 0.61, 0.20, 0.64, 0),
                ("Invoice", 0.50, 0.215, 0.56, 1),
                ("No.:", 0.57, 0.215, 0.60, 1),
                ("IO-25-2104", 0.62, 0.215, 0.71, 1),
            ],
            0.9,
        );
        let facts = extract(&wf, "packing_list", &[&page]);
        let f = fact(&facts, "packing_list_number");
        assert!(f.chosen.is_none(), "{:?}", raws(f));
        let invoice = fact(&facts, "invoice_number").chosen.clone();
        assert_eq!(invoice.map(|c| c.raw).as_deref(), Some("IO-25-2104"));
    }

    #[test]
    fn three_columns_the_label_takes_the_value_under_it() {
        let wf = stacked("        labels: ['bill of lading no']\n        value_at: [below]\n");
        // The B/L's cell on the right: the pattern crosses the line to the first value of
        // the next, two columns away or (the first cell empty) in the middle.
        for cells in [
            [
                (0.05, "CNTR NO", CNTR),
                (0.35, "VESSEL", "EVER ACE"),
                (0.70, "BILL OF LADING NO.", BL),
            ],
            [
                (0.05, "MARKS", ""),
                (0.35, "CNTR NO", CNTR),
                (0.70, "BILL OF LADING NO.", BL),
            ],
        ] {
            let facts = extract(&wf, "bill_of_lading", &[&stacked_cells(&cells)]);
            let f = fact(&facts, "bl_number");
            let chosen = f.chosen.as_ref().map(|c| c.raw.as_str());
            assert_eq!(chosen, Some(BL), "{:?}", raws(f));
            assert!(!f.conflict, "{:?}", raws(f));
            let other = f.candidates.iter().find(|c| c.raw == CNTR);
            assert!(other.is_some(), "kept as evidence: {:?}", raws(f));
        }
    }

    #[test]
    fn a_value_under_its_label_on_the_next_line_stays_as_it_was() {
        // BILL OF LADING NO.
        // COSU6384120577
        let page = stacked_cells(&[(0.50, "BILL OF LADING NO.", BL)]);
        for labels in [
            "",
            "        labels: ['bill of lading no']\n        value_at: [below]\n",
        ] {
            let facts = extract(&stacked(labels), "bill_of_lading", &[&page]);
            let f = fact(&facts, "bl_number");
            assert_eq!(
                f.candidates.len(),
                1,
                "pattern and label read it once: {:?}",
                raws(f)
            );
            let c = &f.candidates[0];
            assert_eq!(
                (c.raw.as_str(), c.pattern),
                (BL, 0),
                "the pattern found it first"
            );
            assert!(
                (c.confidence - 0.9).abs() < 1e-9,
                "full confidence: {}",
                c.confidence
            );
        }
    }

    #[test]
    fn a_text_layer_read_on_into_another_block_is_not_under_the_label() {
        // A text layer reads block by block: the B/L cell's label ends a block, and the next
        // block in reading order is the right-hand column higher up the page.
        let mut page = placed_page(
            &[
                ("BILL", 0.10, 0.40, 0.14, 0),
                ("OF", 0.15, 0.40, 0.17, 0),
                ("LADING", 0.18, 0.40, 0.24, 0),
                ("NO.", 0.25, 0.40, 0.28, 0),
                (CNTR, 0.60, 0.10, 0.72, 1),
                ("Shipper", 0.60, 0.12, 0.67, 2),
                (BL, 0.10, 0.416, 0.24, 3),
            ],
            1.0,
        );
        page.line_blocks = vec![0, 1, 1, 2];
        let facts = extract(&stacked(""), "bill_of_lading", &[&page]);
        let f = fact(&facts, "bl_number");
        assert_eq!(f.candidates.len(), 1, "{:?}", raws(f));
        assert_eq!(f.candidates[0].raw, CNTR);
        assert_eq!(f.candidates[0].confidence, OTHER_COLUMN_FACTOR);
        // With the label's geometry, the value under it is read and the pattern's is evidence.
        let wf = stacked("        labels: ['bill of lading no']\n        value_at: [below]\n");
        let facts = extract(&wf, "bill_of_lading", &[&page]);
        let f = fact(&facts, "bl_number");
        assert_eq!(f.chosen.as_ref().map(|c| c.raw.as_str()), Some(BL));
        assert!(!f.conflict, "{:?}", raws(f));
    }

    #[test]
    fn without_labels_another_columns_value_is_not_taken_with_full_confidence() {
        let facts = extract(&stacked(""), "bill_of_lading", &[&two_columns()]);
        let f = fact(&facts, "bl_number");
        let chosen = f.chosen.clone().expect("kept as the only reading");
        assert_eq!(chosen.raw, CNTR);
        assert_eq!(chosen.ocr_confidence, 0.9);
        assert!(
            (chosen.confidence - 0.9 * OTHER_COLUMN_FACTOR).abs() < 1e-9,
            "below the default confidence floor (0.6): {}",
            chosen.confidence
        );
        // A pattern that keeps to its line ([ \t]*) finds nothing there instead.
        let yaml = WF.replace(
            r"ref:\s*(?P<value>\S+)",
            r"bill of lading no\.?[ \t]*:?[ \t]*(?P<value>[a-z]{4}\d{6,})",
        );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let facts = extract(&wf, "customs_declaration", &[&two_columns()]);
        assert!(fact(&facts, "reference").candidates.is_empty());
    }

    #[test]
    fn the_label_of_a_match_is_its_first_line_with_text() {
        let text = "x\n\n bill of lading no.\nmscu6394177";
        let (start, value) = (1, text.len() - 11..text.len());
        let label = label_line(text, start..text.len(), &value).expect("crosses a line");
        assert_eq!(&text[label], "bill of lading no.");
        let text = "bill of lading no. mscu6394177";
        assert_eq!(label_line(text, 0..text.len(), &(19..text.len())), None);
    }

    #[test]
    fn candidates_are_capped() {
        let yaml = WF.replace(r"ref:\s*(?P<value>\S+)", r"(?P<value>\d)");
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let line = "1 ".repeat(200);
        let page = grid_page(&[&line], 1.0);
        let facts = extract(&wf, "customs_declaration", &[&page]);
        assert_eq!(fact(&facts, "reference").candidates.len(), MAX_CANDIDATES);
    }
}
