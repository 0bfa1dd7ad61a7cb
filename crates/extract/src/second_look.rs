//! A second look at doubtful values: which fields to read again, where on the page, and what
//! the new readings change.
//!
//! After a source is analysed, a field is *doubtful* when its value is missing (and it has
//! labels to look for), its readings conflict, its chosen value is below the workflow's
//! confidence floor, does not take the field's declared `shape`, is a container number whose
//! check digit fails, or looks cut short (the next word on its row starts with a hyphen or
//! slash: OCR split the value). For each doubtful field this module names the places its
//! value should be — the rest of its label's row up to the next column, the block under the
//! label, the row of a doubtful reading, and for a missing value whose label was not found,
//! a row where the first reading kept only the label's end (`@ No.:`) — as [`Look`]s. The
//! caller (the reading crate) reads those regions again with OCR, on their own, and hands the
//! words back to [`apply`], which turns them into candidates with their own evidence box and
//! the origin [`CandidateOrigin::SecondLook`], then lets confidence and the parser choose
//! again.
//!
//! Two readings of the same spot that disagree are settled by what the parser knows, not by
//! confidence alone: a reading that is a cut-off start or end of the other, one that does not
//! take the field's shape where the other does, or a container number whose check digit
//! fails where the other's holds, is kept as evidence at a lower confidence and no longer
//! makes the fact a conflict. Anything else stays a conflict for a person.
//!
//! Pages read from their text layer are never looked at again: their text is exact. A page
//! whose fields are all clean costs nothing.

use ironclad_core::analysis::{Analysis, Candidate, CandidateOrigin, Fact};
use ironclad_core::page::{BBox, PageText, ReadMethod, Word};
use ironclad_core::parse::Value;

use crate::extract::{
    choose, labelled_pages, read, round, same_value, CONFLICT_MARGIN, DIRECTION_COST,
    LABEL_EDIT_COST,
};
use crate::fuzzy::skeleton;
use crate::keyvalue::{is_number_mark, is_rule_mark, LabelHit, LabelPage};
use crate::workflow::{CompiledField, Direction, FieldSpec, Workflow};
use ironclad_core::fold::fold_str;

/// Most regions read again on one page: the time a page's second look may take is about this
/// many single-line readings (≈50–150 ms each on two cores), on top of decoding the page again.
pub const MAX_LOOKS_PER_PAGE: usize = 12;
/// Most regions read again for one field on one page.
const MAX_LOOKS_PER_FIELD: usize = 4;
/// What a superseded reading of a spot keeps of its confidence: it stays as evidence, far
/// enough below the reading that superseded it not to be a conflict.
const SUPERSEDED: f64 = 0.5;
/// A gap on a row wider than this many character widths separates columns.
const COLUMN_GAP_CHARS: f32 = 3.0;
/// How far right of its label a value may start, in character widths (a bordered table's
/// label and value cells).
const FIRST_GAP_CHARS: f32 = 32.0;
/// Character width as a share of a line's height, when no word says better.
const CHAR_PER_LINE_HEIGHT: f32 = 0.55;

/// How a region is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookMode {
    /// One line of text.
    Line,
    /// A few lines; the first that reads as the field's value counts.
    Block,
}

/// Why a field was looked at again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Doubt {
    /// No value, though its label is on a page read by OCR.
    Missing,
    /// Readings that disagree, close in confidence.
    Conflict,
    /// The chosen value's confidence is below the workflow's floor.
    BelowFloor,
    /// The chosen value does not take the field's declared shape.
    Shape,
    /// A container number whose check digit does not hold.
    CheckDigit,
    /// The value's row goes on with what looks like the rest of it.
    CutShort,
}

/// One region to read again.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// The segment of the analysis whose fact it is for.
    pub segment: usize,
    /// The field's name.
    pub field: String,
    /// Why.
    pub doubt: Doubt,
    /// The page's index ([`PageText::index`]).
    pub page: u32,
    /// Where, on the page as stored and upright (the frame of the words' boxes).
    pub region: BBox,
    /// How to read it.
    pub mode: LookMode,
    /// The height of a line of text there, in page heights (what the crop is scaled by).
    pub line_height: f32,
    /// The candidate number a reading gets (see [`Candidate::pattern`]).
    pub pattern: usize,
    /// The label the region belongs to, the other half of the evidence.
    pub label_bbox: Option<BBox>,
    /// What a reading there keeps of its OCR confidence × certainty, as the first reading's
    /// candidates there do (a fuzzy label, a second-choice direction).
    pub factor: f64,
    /// The first reading lost the start of the label on this row (`@ No.:` for `Invoice
    /// No.:`): what is read there counts only after one of the field's labels, read whole
    /// this time, and the label's box is that reading's.
    pub after_label: bool,
}

/// What a second look changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    /// Candidates read by the second look and added to facts.
    pub candidates: usize,
    /// Facts whose chosen value, or whose conflict, changed.
    pub facts_changed: usize,
}

/// The regions to read again for every doubtful fact of `analysis`, at most
/// [`MAX_LOOKS_PER_PAGE`] per page, on pages read by OCR. `pages` are the source's pages.
pub fn plan(workflow: &Workflow, analysis: &Analysis, pages: &[PageText]) -> Vec<Look> {
    let floor = workflow.ruleset().policy.confidence_floor;
    let mut looks: Vec<Look> = Vec::new();
    for (s, seg) in analysis.segments.iter().enumerate() {
        let Some(doc_type) = seg.segment.doc_type.as_deref() else {
            continue;
        };
        let Some((spec, compiled)) = workflow.compiled_type(doc_type) else {
            continue;
        };
        let seg_pages: Vec<&PageText> = seg
            .segment
            .pages
            .iter()
            .filter_map(|i| pages.iter().find(|p| p.index == *i))
            .filter(|p| p.method == ReadMethod::Ocr)
            .collect();
        if seg_pages.is_empty() {
            continue;
        }
        let mut labelled = labelled_pages(&spec.fields, &compiled.fields, &seg_pages);
        if labelled.is_empty() {
            // No field has labels: a pattern's doubtful reading is still looked at again.
            labelled = seg_pages
                .iter()
                .map(|p| (LabelPage::new(p), Vec::new()))
                .collect();
        }
        for fact in &seg.facts {
            let Some(k) = spec.fields.iter().position(|f| f.name == fact.field) else {
                continue;
            };
            let (field, cfield) = (&spec.fields[k], &compiled.fields[k]);
            let Some(doubt) = doubt_of(fact, cfield, floor, &seg_pages) else {
                continue;
            };
            for (page, (lp, hits)) in seg_pages.iter().zip(&labelled) {
                let hits = hits.get(k).map_or(&[][..], Vec::as_slice);
                let mut mine = field_looks(s, field, cfield, fact, doubt, page, lp, hits);
                mine.truncate(MAX_LOOKS_PER_FIELD);
                for look in mine {
                    let on_page = looks.iter().filter(|l| l.page == look.page).count();
                    let seen = looks.iter().any(|l| {
                        l.page == look.page
                            && l.mode == look.mode
                            && iou(l.region, look.region) > 0.8
                            && l.segment == look.segment
                            && l.field == look.field
                    });
                    if on_page < MAX_LOOKS_PER_PAGE && !seen {
                        looks.push(look);
                    }
                }
            }
        }
    }
    looks
}

/// Adds what the second look read (`readings[i]`: the words read in `looks[i]`, boxes on the
/// page) to the facts of `analysis`, and chooses again.
///
/// A second look settles how a spot reads, not which spot holds the value:
/// * a reading that agrees with the first reading of its spot is kept as evidence at no more
///   than that reading's confidence — unless that reading is the chosen one and below the
///   confidence floor, which the second look may lift;
/// * a reading that disagrees with the first reading of its spot competes with it, and the
///   parser settles the two where it can (see the module documentation);
/// * a reading of a spot the first reading found nothing at competes as read for a missing
///   value, and for a value of the wrong shape (or check digit) when it has the right one;
///   otherwise it stays just below the chosen value: it can ask for review, never silently
///   replace a value read elsewhere.
pub fn apply(
    workflow: &Workflow,
    analysis: &mut Analysis,
    looks: &[Look],
    readings: &[Vec<Word>],
) -> Applied {
    let floor = workflow.ruleset().policy.confidence_floor;
    let mut applied = Applied::default();
    let mut touched: Vec<(usize, String)> = Vec::new();
    for (look, words) in looks.iter().zip(readings) {
        let Some(seg) = analysis.segments.get_mut(look.segment) else {
            continue;
        };
        let Some(doc_type) = seg.segment.doc_type.as_deref() else {
            continue;
        };
        let Some((spec, compiled)) = workflow.compiled_type(doc_type) else {
            continue;
        };
        let Some(k) = spec.fields.iter().position(|f| f.name == look.field) else {
            continue;
        };
        let Some(fact) = seg.facts.iter_mut().find(|f| f.field == look.field) else {
            continue;
        };
        let cfield = &compiled.fields[k];
        let Some(mut candidate) = reading(&spec.fields[k], cfield, look, words) else {
            continue;
        };
        let known = fact.candidates.iter().any(|c| {
            c.origin == Some(CandidateOrigin::SecondLook)
                && c.page == candidate.page
                && same_value(&c.value, &candidate.value)
                && iou(c.bbox, candidate.bbox) > 0.5
        });
        if known {
            continue;
        }
        candidate.confidence = standing(fact, &candidate, look.doubt, cfield, floor);
        fact.candidates.push(candidate);
        applied.candidates += 1;
        if !touched.contains(&(look.segment, look.field.clone())) {
            touched.push((look.segment, look.field.clone()));
        }
    }
    for (s, field) in touched {
        let Some(seg) = analysis.segments.get_mut(s) else {
            continue;
        };
        let shape = seg
            .segment
            .doc_type
            .as_deref()
            .and_then(|t| workflow.compiled_type(t))
            .and_then(|(spec, compiled)| {
                let k = spec.fields.iter().position(|f| f.name == field)?;
                Some(&compiled.fields[k])
            });
        let Some(fact) = seg.facts.iter_mut().find(|f| f.field == field) else {
            continue;
        };
        let before = (fact.chosen.as_ref().map(|c| c.value.clone()), fact.conflict);
        settle_same_spots(fact, shape);
        choose(fact);
        let after = (fact.chosen.as_ref().map(|c| c.value.clone()), fact.conflict);
        if before != after {
            applied.facts_changed += 1;
        }
    }
    applied
}

/// The confidence a second-look reading competes with (see [`apply`]).
fn standing(
    fact: &Fact,
    candidate: &Candidate,
    doubt: Doubt,
    field: &CompiledField,
    floor: f64,
) -> f64 {
    let first_here: Vec<&Candidate> = fact
        .candidates
        .iter()
        .filter(|c| {
            c.origin.is_none() && c.page == candidate.page && same_spot(c.bbox, candidate.bbox)
        })
        .collect();
    let own = candidate.confidence;
    if let Some(agrees) = first_here
        .iter()
        .find(|c| same_value(&c.value, &candidate.value))
    {
        let lifts = fact.chosen.as_ref().is_some_and(|chosen| {
            chosen.confidence < floor
                && chosen.page == agrees.page
                && chosen.bbox == agrees.bbox
                && same_value(&chosen.value, &agrees.value)
        });
        return if lifts {
            own
        } else {
            own.min(agrees.confidence)
        };
    }
    if !first_here.is_empty() {
        return own;
    }
    let whole = match doubt {
        Doubt::Missing => true,
        Doubt::Shape => field
            .shape
            .as_ref()
            .is_some_and(|s| s.fit(&candidate.raw).is_some()),
        Doubt::CheckDigit => matches!(
            candidate.value,
            Value::ContainerNumber {
                check_digit_valid: true,
                ..
            }
        ),
        _ => false,
    };
    match &fact.chosen {
        Some(chosen) if !whole && !same_value(&chosen.value, &candidate.value) => {
            own.min(round((chosen.confidence - 0.01).max(0.0)))
        }
        _ => own,
    }
}

/// Why `fact` deserves a second look, if it does.
fn doubt_of(
    fact: &Fact,
    field: &CompiledField,
    floor: f64,
    ocr_pages: &[&PageText],
) -> Option<Doubt> {
    let on_ocr = |page: u32| ocr_pages.iter().any(|p| p.index == page);
    let Some(chosen) = &fact.chosen else {
        // Without a label there is nowhere to look (a label found, or its end: see
        // `lost_label_rows`).
        return (!field.labels.is_empty()).then_some(Doubt::Missing);
    };
    if !on_ocr(chosen.page) && !fact.conflict {
        return None;
    }
    if fact.conflict {
        return Some(Doubt::Conflict);
    }
    if let Value::ContainerNumber {
        check_digit_valid: false,
        ..
    } = chosen.value
    {
        return Some(Doubt::CheckDigit);
    }
    if field
        .shape
        .as_ref()
        .is_some_and(|s| s.fit(&chosen.raw).is_none())
    {
        return Some(Doubt::Shape);
    }
    if chosen.confidence < floor {
        return Some(Doubt::BelowFloor);
    }
    let page = ocr_pages.iter().find(|p| p.index == chosen.page)?;
    cut_short(chosen, page).then_some(Doubt::CutShort)
}

/// Whether the chosen value's row goes on, close after it, with a word that starts like the
/// rest of an identifier (`DPI` then `-2404-118`), or the value itself ends with a joiner.
fn cut_short(chosen: &Candidate, page: &PageText) -> bool {
    let joiner = |c: char| matches!(c, '-' | '/' | '.' | '_');
    if chosen.raw.trim_end().ends_with(joiner) && chosen.raw.trim().len() > 1 {
        return true;
    }
    let b = chosen.bbox;
    let height = b.y1 - b.y0;
    // The word the value ends in goes on with a separator the value left out (`42,` of
    // `TOTAL USD 42,` where a stamp covers `444.36`).
    let ends_open = page.words.iter().any(|w| {
        let wb = w.bbox;
        let centre = (wb.y0 + wb.y1) / 2.0;
        let text = w.text.trim_end();
        centre > b.y0
            && centre < b.y1
            && wb.x0 < b.x1
            && (wb.x1 - b.x1).abs() <= height
            && text.ends_with([',', '.', '-', '/'])
            && text
                .chars()
                .rev()
                .nth(1)
                .is_some_and(|c| c.is_ascii_alphanumeric())
            && !chosen.raw.trim_end().ends_with(text)
    });
    if ends_open {
        return true;
    }
    let chars = chosen
        .raw
        .chars()
        .filter(|c| !c.is_whitespace())
        .count()
        .max(1);
    let cw = ((b.x1 - b.x0) / chars as f32).max(height * 0.3);
    page.words
        .iter()
        .filter(|w| {
            let wb = w.bbox;
            let centre = (wb.y0 + wb.y1) / 2.0;
            wb.x0 >= b.x1 - cw / 2.0 && centre > b.y0 && centre < b.y1
        })
        .min_by(|a, c| a.bbox.x0.total_cmp(&c.bbox.x0))
        .is_some_and(|next| {
            next.bbox.x0 - b.x1 < 8.0 * cw
                && next.text.trim_start().starts_with(joiner)
                && next.text.chars().any(|c| c.is_ascii_alphanumeric())
        })
}

/// The regions to read for one doubtful field on one page: where its labels (`hits`) say its
/// value is, the rows of the readings in doubt that no label placed, and for a missing value
/// whose label was not found, the rows where the first reading may have lost its start.
#[allow(clippy::too_many_arguments)]
fn field_looks(
    segment: usize,
    field: &FieldSpec,
    compiled: &CompiledField,
    fact: &Fact,
    doubt: Doubt,
    page: &PageText,
    lp: &LabelPage<'_>,
    hits: &[LabelHit],
) -> Vec<Look> {
    let look = |region: BBox, mode, line_height: f32, pattern, label_bbox, factor: f64| Look {
        segment,
        field: field.name.clone(),
        doubt,
        page: page.index,
        region: region.normalized(),
        mode,
        line_height,
        pattern,
        label_bbox,
        factor: factor.clamp(0.0, 1.0),
        after_label: false,
    };
    let mut out = Vec::new();
    for hit in hits {
        let l = hit.bbox;
        let h = l.y1 - l.y0;
        let pattern = compiled.patterns.len() + hit.label;
        let from = label_end(
            page,
            &hit.words,
            &field.labels[hit.label.min(field.labels.len().saturating_sub(1))],
        );
        let (right, words_right) = row_region(page, l, from, &hit.words);
        let label_factor = 1.0 - LABEL_EDIT_COST * f64::from(hit.edits);
        for (k, direction) in compiled.value_at.iter().enumerate() {
            let factor = label_factor * (1.0 - DIRECTION_COST * k as f64);
            match direction {
                Direction::Right => {
                    out.push(look(right, LookMode::Line, h, pattern, Some(l), factor))
                }
                // Under the label only where the workflow looks there first, or where nothing
                // follows the label on its row: on a `Label: value` row, the row below holds
                // another field.
                Direction::Below if k == 0 || !words_right => out.push(look(
                    below_region(page, l, &hit.words),
                    LookMode::Block,
                    h,
                    pattern,
                    Some(l),
                    factor,
                )),
                Direction::Below => {}
            }
        }
    }
    if doubt == Doubt::Missing && hits.is_empty() && compiled.value_at.contains(&Direction::Right) {
        for (label, region, h) in lost_label_rows(field, page, lp) {
            out.push(Look {
                after_label: true,
                ..look(
                    region,
                    LookMode::Line,
                    h,
                    compiled.patterns.len() + label,
                    None,
                    1.0,
                )
            });
        }
    }
    // Readings no label placed (a pattern's): their own row.
    let doubtful: Vec<&Candidate> = match doubt {
        Doubt::Missing => Vec::new(),
        Doubt::Conflict => {
            let best = fact.chosen.as_ref().map_or(0.0, |c| c.confidence);
            fact.candidates
                .iter()
                .filter(|c| c.confidence >= best - CONFLICT_MARGIN)
                .collect()
        }
        _ => fact.chosen.iter().collect(),
    };
    for c in doubtful {
        if c.page != page.index
            || c.label_bbox.is_some()
            || c.origin == Some(CandidateOrigin::SecondLook)
        {
            continue;
        }
        let b = c.bbox;
        let chars = c
            .raw
            .chars()
            .filter(|ch| !ch.is_whitespace())
            .count()
            .max(1);
        let cw = (b.x1 - b.x0) / chars as f32;
        let (mut region, _) = row_region(page, b, b.x0 - cw, &[]);
        region.x0 = (b.x0 - 2.0 * cw).max(0.0);
        if doubt == Doubt::CutShort {
            // What cut it (a stamp, a fold) may hide the rest from the first reading's words:
            // read on past them, as far as the value had already come.
            region.x1 = (region.x1 + (b.x1 - b.x0).max(12.0 * cw)).min(1.0);
        }
        // The structural part of the reading's confidence (what it lost to a fuzzy label or
        // a second-choice direction) carries over to what is read there again.
        let base = c.ocr_confidence * c.certainty;
        let factor = if base > 0.0 { c.confidence / base } else { 1.0 };
        out.push(look(
            region,
            LookMode::Line,
            b.y1 - b.y0,
            c.pattern,
            None,
            factor,
        ));
    }
    out
}

/// Most letters or digits the first reading may have kept of a label's lost start: `@` of
/// `Invoice`. A longer word there is another label (`Booking No.:`), not this one.
const LOST_START_KEPT: usize = 2;
/// Fewest letters of a label's end that stand for the whole label when the rest is lost
/// (`ckages` of `Total packages`); a label's last word itself (`No.`) may be shorter.
const MIN_LABEL_END: usize = 4;
/// A lost label character's width, in the line's average characters
/// ([`CHAR_PER_LINE_HEIGHT`]): the room is made generous, the reading finds the label in it.
const LOST_CHAR_WIDTH: f32 = 1.3;

/// Rows where a missing field's label may be printed though the first reading lost its start:
/// a word that is one of the field's labels' last word (`@ No.:` for `Invoice No.:`) or a
/// cut-off end of it (`ckages:` for `Total packages:`), that no other field's label claims,
/// with nothing before it where the rest of the label would be but [`LOST_START_KEPT`]
/// letters or a piece of the label itself (Tesseract may read `Total pack` as a line of its
/// own), and something after it. For each: the label's index, the row from where the
/// label would start to the end of what follows it, and the row's height. What is read
/// there counts only after the label, read whole (see [`Look::after_label`]), so a row that
/// holds another label costs a reading and changes nothing.
fn lost_label_rows(
    field: &FieldSpec,
    page: &PageText,
    lp: &LabelPage<'_>,
) -> Vec<(usize, BBox, f32)> {
    // Each label's skeleton and its last word's, shortest first: a row is read once, for the
    // label that leaves the least to have been lost.
    let mut labels: Vec<(usize, Vec<u8>, Vec<u8>)> = field
        .labels
        .iter()
        .enumerate()
        .map(|(k, text)| {
            let folded = fold_str(text);
            let last = folded
                .split_whitespace()
                .last()
                .map(skeleton)
                .unwrap_or_default();
            (k, skeleton(&folded), last)
        })
        .collect();
    labels.sort_by_key(|(_, whole, _)| whole.len());
    let mut out = Vec::new();
    for (i, w) in page.words.iter().enumerate() {
        let kept = skeleton(&fold_str(&w.text));
        if kept.is_empty() || lp.is_label_word(i) {
            continue;
        }
        let b = w.bbox;
        let h = b.y1 - b.y0;
        let cw = h * CHAR_PER_LINE_HEIGHT;
        let centre = (b.y0 + b.y1) / 2.0;
        for (label, whole, last) in &labels {
            let is_end = kept.len() < whole.len()
                && whole.ends_with(&kept)
                && (kept.len() >= MIN_LABEL_END || kept == *last);
            if !is_end {
                continue;
            }
            // Room for the lost start (capitals and spaces are wider than the line's
            // average character), and a character or two more.
            let start =
                (b.x0 - (whole.len() - kept.len() + 3) as f32 * cw * LOST_CHAR_WIDTH).max(0.0);
            let mut before: Vec<(usize, &Word)> = page
                .words
                .iter()
                .enumerate()
                .filter(|&(k, o)| {
                    let c = (o.bbox.y0 + o.bbox.y1) / 2.0;
                    k != i
                        && (c - centre).abs() < 0.6 * h
                        && o.bbox.x1 > start
                        && o.bbox.x1 <= b.x0 + cw / 2.0
                })
                .collect();
            before.sort_by(|a, c| a.1.bbox.x0.total_cmp(&c.1.bbox.x0));
            let before_text: Vec<u8> = before
                .iter()
                .flat_map(|(_, o)| skeleton(&fold_str(&o.text)))
                .collect();
            // The lost start may also have been read, as a line of its own (`Invoic` in
            // another block): then it is part of the label.
            let lost = before_text.len() <= LOST_START_KEPT
                || whole
                    .windows(before_text.len())
                    .any(|part| part == before_text.as_slice());
            if !lost || before.iter().any(|&(k, _)| lp.is_label_word(k)) {
                continue;
            }
            let (mut region, found) = row_region(page, b, b.x1, &[i]);
            if found {
                region.x0 = start;
                out.push((*label, region.normalized(), h));
            }
            break;
        }
    }
    out
}

/// Where a label's text ends on the page: the right edge of its last word, or inside that
/// word when OCR glued the value to it (`No.:.2025.949.7426`), estimated from how many of
/// the word's characters the label's last word takes.
fn label_end(page: &PageText, words: &[usize], label: &str) -> f32 {
    let Some(word) = words.last().and_then(|&i| page.words.get(i)) else {
        return 0.0;
    };
    let b = word.bbox;
    let printed = word.text.chars().count();
    // The label's last word and the punctuation that ends a label (`No.:`).
    let own = label
        .split_whitespace()
        .last()
        .map_or(0, |t| t.chars().count())
        + 2;
    if printed > own + 2 {
        b.x0 + (b.x1 - b.x0) * own as f32 / printed as f32
    } else {
        b.x1
    }
}

/// The rest of `row`'s line right of `from`: the words on the row after it up to the first
/// gap wider than a column break — except a gap before what looks like the rest of an
/// identifier — with a margin; some room to the right when the row holds no word there.
/// `skip` are words not to count (the label's own). Also whether any word was found there.
fn row_region(page: &PageText, row: BBox, from: f32, skip: &[usize]) -> (BBox, bool) {
    let h = row.y1 - row.y0;
    let cw = h * CHAR_PER_LINE_HEIGHT;
    let centre = (row.y0 + row.y1) / 2.0;
    let mut on_row: Vec<&Word> = page
        .words
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            let c = (w.bbox.y0 + w.bbox.y1) / 2.0;
            !skip.contains(i) && (c - centre).abs() < 0.6 * h && w.bbox.x0 >= from - cw / 2.0
        })
        .map(|(_, w)| w)
        .collect();
    on_row.sort_by(|a, b| a.bbox.x0.total_cmp(&b.bbox.x0));
    let mut end = from;
    let mut top = row.y0;
    let mut bottom = row.y1;
    for w in &on_row {
        let gap = w.bbox.x0 - end;
        let continues = w.text.trim_start().starts_with(['-', '/', '.']);
        if end > from && gap > COLUMN_GAP_CHARS * cw && !(continues && gap < 8.0 * cw) {
            break;
        }
        // A bordered table's value cell may start far right of its label cell.
        if end == from && gap > FIRST_GAP_CHARS * cw {
            break;
        }
        end = w.bbox.x1;
        top = top.min(w.bbox.y0);
        bottom = bottom.max(w.bbox.y1);
    }
    let found = end > from + cw;
    if !found {
        // Nothing read there: the value may be what the first reading lost. A word that
        // starts in that room is read to its end, and so is each word starting inside it: a
        // bordered table's value cell (`USD 79.142,60` from 0.37 to 0.47 of a fax's width,
        // after a label ending at 0.18) is not cut at the room's edge.
        end = (from + (FIRST_GAP_CHARS * cw).max(0.25)).min(1.0);
        for w in &on_row {
            if w.bbox.x0 > end {
                break;
            }
            end = end.max(w.bbox.x1.min(1.0));
            top = top.min(w.bbox.y0);
            bottom = bottom.max(w.bbox.y1);
        }
    }
    let region = BBox {
        x0: from - 0.3 * cw,
        y0: top - 0.45 * h,
        x1: end + 1.5 * cw,
        y1: bottom + 0.45 * h,
    }
    .normalized();
    (region, found)
}

/// The block under a label: from its left edge (a little before) to where the next column's
/// label starts on its row, down to about two and a half lines.
fn below_region(page: &PageText, label: BBox, skip: &[usize]) -> BBox {
    let h = label.y1 - label.y0;
    let cw = h * CHAR_PER_LINE_HEIGHT;
    let centre = (label.y0 + label.y1) / 2.0;
    let next_column = page
        .words
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            let c = (w.bbox.y0 + w.bbox.y1) / 2.0;
            !skip.contains(i) && (c - centre).abs() < 0.6 * h && w.bbox.x0 > label.x1 + 2.5 * cw
        })
        .map(|(_, w)| w.bbox.x0)
        .fold(f32::INFINITY, f32::min);
    let x1 = if next_column.is_finite() {
        next_column - 0.5 * cw
    } else {
        label.x1 + (label.x1 - label.x0).max(16.0 * cw)
    };
    BBox {
        x0: label.x0 - cw,
        y0: label.y1 + 0.05 * h,
        x1: x1.max(label.x1),
        y1: label.y1 + 2.8 * h,
    }
    .normalized()
}

/// The candidate a region's words make: the first line (in reading order) whose longest
/// start the field's parser reads, skipping what is left of a label (`:`, `No.:`).
fn reading(
    field: &FieldSpec,
    compiled: &CompiledField,
    look: &Look,
    words: &[Word],
) -> Option<Candidate> {
    let (words, label_bbox, factor) = if look.after_label {
        let (after, label, edits) = after_label(compiled, look, words)?;
        let factor = look.factor * (1.0 - LABEL_EDIT_COST * f64::from(edits));
        (after, Some(label), factor)
    } else {
        (words.iter().collect(), look.label_bbox, look.factor)
    };
    let mut lines: Vec<Vec<&Word>> = Vec::new();
    let mut sorted: Vec<&Word> = words
        .into_iter()
        .filter(|w| !w.text.trim().is_empty())
        .collect();
    sorted.sort_by(|a, b| a.line.cmp(&b.line).then(a.bbox.x0.total_cmp(&b.bbox.x0)));
    for w in sorted {
        match lines.last_mut() {
            Some(line) if look.mode == LookMode::Line || line[0].line == w.line => line.push(w),
            _ => lines.push(vec![w]),
        }
    }
    if look.mode == LookMode::Line {
        for line in &mut lines {
            line.sort_by(|a, b| a.bbox.x0.total_cmp(&b.bbox.x0));
        }
    }
    // A word ending in a colon, or a number mark (`No.`, `N°`) with the word before it, is a
    // label (`Invoice total:`, `Packing list No.`); a bar is a cell's border.
    let is_label = |w: &&Word| w.text.trim_end().ends_with(':') || is_number_mark(&w.text);
    for line in lines {
        // Under a label, a row holding a label is another field's.
        if look.mode == LookMode::Block && line.iter().any(is_label) {
            continue;
        }
        let start = line
            .iter()
            .position(|w| {
                let t = w.text.trim();
                t.chars()
                    .any(|c| c.is_alphanumeric() || matches!(c, '$' | '€' | '£'))
                    && !is_label(w)
                    && !is_rule_mark(w)
            })
            .unwrap_or(line.len());
        // A value ends where a border or the next label starts (`INV-1 Date: …`,
        // `INV-1 Booking No. …`: the name before a number mark is the label's too).
        let end = line[start..]
            .iter()
            .enumerate()
            .find_map(|(k, w)| {
                if is_number_mark(&w.text) {
                    Some(start + k.saturating_sub(1))
                } else if is_label(w) || is_rule_mark(w) {
                    Some(start + k)
                } else {
                    None
                }
            })
            .unwrap_or(line.len());
        let line = &line[start..end];
        // A border's remnant before the value (`| oo USD 79.142,60` in a fax's table cell)
        // is skipped when the parser refuses what starts with it: at most two such words,
        // each of at most two letters and no digit.
        let junk = |w: &&&Word| {
            let t = w.text.trim();
            t.chars().filter(|c| c.is_alphanumeric()).count() <= 2
                && !t.chars().any(|c| c.is_ascii_digit())
        };
        let skippable = line.iter().take(2).take_while(junk).count();
        let starts =
            (0..=skippable).flat_map(|skip| (1..=line.len() - skip).rev().map(move |n| (skip, n)));
        for (skip, n) in starts {
            let used = &line[skip..skip + n];
            let raw = used
                .iter()
                .map(|w| w.text.trim())
                .collect::<Vec<_>>()
                .join(" ");
            let raw = after_glued_label(&raw)
                .trim_start_matches([':', '|'])
                .trim()
                .to_owned();
            if raw.is_empty() {
                continue;
            }
            let Ok(parsed) = read(field.parser, compiled, &raw) else {
                continue;
            };
            let ocr: f64 = used
                .iter()
                .map(|w| f64::from(w.confidence).clamp(0.0, 1.0))
                .sum::<f64>()
                / used.len() as f64;
            let bbox = used
                .iter()
                .map(|w| w.bbox)
                .reduce(BBox::union)
                .unwrap_or(look.region);
            return Some(Candidate {
                page: look.page,
                bbox,
                raw,
                confidence: round(ocr * parsed.certainty * factor),
                ocr_confidence: round(ocr),
                certainty: parsed.certainty,
                value: parsed.value,
                pattern: look.pattern,
                label_bbox,
                template: None,
                origin: Some(CandidateOrigin::SecondLook),
            });
        }
    }
    None
}

/// The words of a reading that follow one of the field's labels on its line, with the
/// label's box and edits: what counts of a row whose label lost its start at the first
/// reading ([`Look::after_label`]). `None` when the reading shows none of the labels.
fn after_label<'w>(
    compiled: &CompiledField,
    look: &Look,
    words: &'w [Word],
) -> Option<(Vec<&'w Word>, BBox, u32)> {
    let read = PageText {
        index: look.page,
        method: ReadMethod::Ocr,
        confidence: 0.0,
        rotation: 0,
        size_pt: None,
        words: words.to_vec(),
        line_blocks: Vec::new(),
    };
    let hit = LabelPage::new(&read)
        .find_labels(compiled, None)
        .into_iter()
        .min_by_key(|h| h.edits)?;
    let last = *hit.words.last()?;
    let (end, line) = (words[last].bbox.x1, words[last].line);
    // `No.:SBE-25-4387`: the label's last word holds the value too.
    let glued = after_glued_label(&words[last].text) != words[last].text;
    let after = words
        .iter()
        .enumerate()
        .filter(|&(k, w)| {
            w.line == line
                && ((k == last && glued)
                    || (!hit.words.contains(&k) && (w.bbox.x0 + w.bbox.x1) / 2.0 > end))
        })
        .map(|(_, w)| w)
        .collect();
    Some((after, hit.bbox, hit.edits))
}

/// What follows a label OCR glued to its value (`No.:.2025.949.7426` → `2025.949.7426`): the
/// text after the first word's last colon, when a label's letters come before it and letters
/// or digits follow it (`10:30` is a time).
fn after_glued_label(raw: &str) -> &str {
    let first = raw.split_whitespace().next().unwrap_or("");
    match first.rfind(':') {
        Some(at)
            if first[..at].chars().any(char::is_alphabetic)
                && first[at + 1..].chars().any(char::is_alphanumeric) =>
        {
            raw[at + 1..]
                .trim_start_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '$' | '€' | '£'))
        }
        _ => raw,
    }
}

/// Two readings of one spot that disagree, settled where the parser can tell which is whole
/// (see the module documentation): the loser keeps [`SUPERSEDED`] of its confidence.
fn settle_same_spots(fact: &mut Fact, field: Option<&CompiledField>) {
    let n = fact.candidates.len();
    let mut demote = vec![false; n];
    for i in 0..n {
        let s = &fact.candidates[i];
        if s.origin != Some(CandidateOrigin::SecondLook) {
            continue;
        }
        for j in 0..n {
            let c = &fact.candidates[j];
            if i == j || c.origin == Some(CandidateOrigin::SecondLook) || c.page != s.page {
                continue;
            }
            if !same_spot(s.bbox, c.bbox) || same_value(&s.value, &c.value) {
                continue;
            }
            match better_of(s, c, field) {
                Some(true) => demote[j] = true,
                Some(false) => demote[i] = true,
                None => {}
            }
        }
    }
    for (c, d) in fact.candidates.iter_mut().zip(demote) {
        if d {
            c.confidence = round(c.confidence * SUPERSEDED);
        }
    }
}

/// Whether `a` (a second look) is the whole reading and `b` not (`Some(true)`), the reverse
/// (`Some(false)`), or neither can be told (`None`).
fn better_of(a: &Candidate, b: &Candidate, field: Option<&CompiledField>) -> Option<bool> {
    let key = |c: &Candidate| -> String {
        c.raw
            .chars()
            .filter(|ch| ch.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let (ka, kb) = (key(a), key(b));
    let cut = |short: &str, long: &str| {
        !short.is_empty()
            && short.len() < long.len()
            && (long.starts_with(short) || long.ends_with(short))
    };
    if cut(&kb, &ka) {
        return Some(true);
    }
    if cut(&ka, &kb) {
        return Some(false);
    }
    if let Some(shape) = field.and_then(|f| f.shape.as_ref()) {
        match (shape.fit(&a.raw).is_some(), shape.fit(&b.raw).is_some()) {
            (true, false) => return Some(true),
            (false, true) => return Some(false),
            _ => {}
        }
    }
    let valid = |c: &Candidate| match c.value {
        Value::ContainerNumber {
            check_digit_valid, ..
        } => Some(check_digit_valid),
        _ => None,
    };
    match (valid(a), valid(b)) {
        (Some(true), Some(false)) => Some(true),
        (Some(false), Some(true)) => Some(false),
        _ => None,
    }
}

/// Whether two boxes cover the same printed spot: they overlap on the same row.
fn same_spot(a: BBox, b: BBox) -> bool {
    let across = a.x1.min(b.x1) - a.x0.max(b.x0);
    let down = a.y1.min(b.y1) - a.y0.max(b.y0);
    let height = (a.y1 - a.y0).min(b.y1 - b.y0);
    across > 0.0 && down > 0.3 * height
}

/// Intersection over union of two boxes.
fn iou(a: BBox, b: BBox) -> f32 {
    let w = (a.x1.min(b.x1) - a.x0.max(b.x0)).max(0.0);
    let h = (a.y1.min(b.y1) - a.y0.max(b.y0)).max(0.0);
    let inter = w * h;
    let area = |r: BBox| (r.x1 - r.x0).max(0.0) * (r.y1 - r.y0).max(0.0);
    let union = area(a) + area(b) - inter;
    if union <= 0.0 {
        0.0
    } else {
        inter / union
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze;
    use crate::layout::tests::grid_page;

    const WF: &str = r#"
name: t
version: 1
document_types:
  - id: customs_declaration
    title: Customs declaration
    recognition:
      keywords: [{text: customs declaration, weight: 1}]
    fields:
      - name: invoice_number
        parser: text
        required: true
        patterns: ['invoice no\.?\s*:\s*(?P<value>[a-z0-9][a-z0-9/.-]{2,30})']
        labels: ["invoice no"]
      - name: container_number
        parser: container_number
        required: true
        labels: ["container no"]
policy:
  confidence_floor: 0.6
"#;

    fn wf() -> Workflow {
        Workflow::from_yaml(WF).expect("workflow")
    }

    fn ocr(mut page: PageText) -> PageText {
        page.method = ReadMethod::Ocr;
        page
    }

    fn word(text: &str, x0: f32, y0: f32, x1: f32, confidence: f32) -> Word {
        Word {
            text: text.into(),
            bbox: BBox {
                x0,
                y0,
                x1,
                y1: y0 + 0.015,
            },
            confidence,
            line: 0,
        }
    }

    fn fact<'a>(a: &'a Analysis, field: &str) -> &'a Fact {
        a.segments[0]
            .facts
            .iter()
            .find(|f| f.field == field)
            .expect("the field")
    }

    /// The sample declaration's split line, read by OCR: `Invoice No.: DPI` and, a column
    /// away, `-2404-118`.
    fn split_declaration() -> PageText {
        let mut page = ocr(grid_page(
            &["CUSTOMS DECLARATION", "Invoice No.: DPI"],
            0.92,
        ));
        let row = page
            .words
            .iter()
            .find(|w| w.text == "DPI")
            .map(|w| w.bbox)
            .expect("DPI");
        page.words.push(Word {
            text: "-2404-118".into(),
            bbox: BBox {
                x0: row.x1 + 0.06,
                x1: row.x1 + 0.15,
                ..row
            },
            confidence: 0.9,
            line: 2,
        });
        page
    }

    /// The sample declaration's split line: `Invoice No.: DPI` and, a column away,
    /// `-2404-118`. The value looks cut short; its row is read again and the whole reading
    /// supersedes the cut one, without a conflict.
    #[test]
    fn a_value_cut_short_is_read_again_and_the_whole_reading_wins() {
        let page = split_declaration();
        let row = page
            .words
            .iter()
            .find(|w| w.text == "DPI")
            .map(|w| w.bbox)
            .expect("DPI");
        let wf = wf();
        let mut a = analyze(&wf, std::slice::from_ref(&page));
        assert_eq!(
            fact(&a, "invoice_number")
                .chosen
                .as_ref()
                .map(|c| c.raw.as_str()),
            Some("DPI")
        );
        let looks = plan(&wf, &a, std::slice::from_ref(&page));
        let mine: Vec<&Look> = looks
            .iter()
            .filter(|l| l.field == "invoice_number")
            .collect();
        assert!(!mine.is_empty(), "{looks:?}");
        assert!(mine.iter().all(|l| l.doubt == Doubt::CutShort));
        // The region covers the cut reading and the rest of it.
        let right = mine
            .iter()
            .find(|l| l.mode == LookMode::Line)
            .expect("a row");
        assert!(
            right.region.x0 <= row.x0 && right.region.x1 >= row.x1 + 0.15,
            "{right:?}"
        );
        // What OCR reads there, alone: the whole number.
        let readings: Vec<Vec<Word>> = looks
            .iter()
            .map(|l| {
                if l.field == "invoice_number" && l.mode == LookMode::Line {
                    vec![word("DPI-2404-118", row.x0, row.y0, row.x1 + 0.15, 0.88)]
                } else {
                    Vec::new()
                }
            })
            .collect();
        let applied = apply(&wf, &mut a, &looks, &readings);
        assert_eq!(applied.candidates, 1);
        assert_eq!(applied.facts_changed, 1);
        let f = fact(&a, "invoice_number");
        let chosen = f.chosen.as_ref().expect("chosen");
        assert_eq!(chosen.raw, "DPI-2404-118");
        assert_eq!(chosen.origin, Some(CandidateOrigin::SecondLook));
        assert!(!f.conflict, "the cut reading is superseded: {f:?}");
        assert!(f
            .candidates
            .iter()
            .any(|c| c.raw == "DPI" && c.confidence < 0.5));
    }

    /// A container number whose check digit fails, read again: the valid reading wins; a
    /// text-layer page is never looked at again.
    #[test]
    fn a_bad_check_digit_is_read_again_only_on_ocr_pages() {
        let text = grid_page(&["CUSTOMS DECLARATION", "Container No.: MSCU1234567"], 1.0);
        let wf = wf();
        let a = analyze(&wf, std::slice::from_ref(&text));
        assert!(plan(&wf, &a, std::slice::from_ref(&text)).is_empty());

        let page = ocr(text);
        let mut a = analyze(&wf, std::slice::from_ref(&page));
        let looks = plan(&wf, &a, std::slice::from_ref(&page));
        let mine: Vec<&Look> = looks
            .iter()
            .filter(|l| l.field == "container_number")
            .collect();
        assert!(!mine.is_empty());
        assert_eq!(mine[0].doubt, Doubt::CheckDigit);
        let value = fact(&a, "container_number").chosen.clone().expect("read");
        let readings: Vec<Vec<Word>> = looks
            .iter()
            .map(|l| {
                if l.field == "container_number" {
                    vec![word(
                        "MSCU1234566",
                        value.bbox.x0,
                        value.bbox.y0,
                        value.bbox.x1,
                        0.9,
                    )]
                } else {
                    Vec::new()
                }
            })
            .collect();
        apply(&wf, &mut a, &looks, &readings);
        let f = fact(&a, "container_number");
        assert_eq!(
            f.chosen.as_ref().map(|c| c.raw.as_str()),
            Some("MSCU1234566")
        );
        assert!(!f.conflict);
    }

    /// A missing value under its label (a stacked form the first reading lost) is found by
    /// reading the block under the label.
    #[test]
    fn a_missing_value_is_looked_for_under_its_label() {
        let page = ocr(grid_page(&["CUSTOMS DECLARATION", "CONTAINER NO"], 0.9));
        let wf = wf();
        let mut a = analyze(&wf, std::slice::from_ref(&page));
        assert!(fact(&a, "container_number").chosen.is_none());
        let looks = plan(&wf, &a, std::slice::from_ref(&page));
        let below = looks
            .iter()
            .find(|l| l.field == "container_number" && l.mode == LookMode::Block)
            .expect("the block under the label");
        assert_eq!(below.doubt, Doubt::Missing);
        let label = below.label_bbox.expect("label");
        assert!(below.region.y0 >= label.y1 && below.region.x0 <= label.x0);
        let readings: Vec<Vec<Word>> = looks
            .iter()
            .map(|l| {
                if l == below {
                    vec![word(
                        "TGHU9458075",
                        label.x0,
                        label.y1 + 0.005,
                        label.x1,
                        0.85,
                    )]
                } else {
                    Vec::new()
                }
            })
            .collect();
        let applied = apply(&wf, &mut a, &looks, &readings);
        assert_eq!(applied.facts_changed, 1);
        let f = fact(&a, "container_number");
        let c = f.chosen.as_ref().expect("found");
        assert_eq!(c.raw, "TGHU9458075");
        assert_eq!(c.label_bbox, Some(label));
        assert!(!f.missing_required);
    }

    /// Clean fields cost nothing: no look is planned.
    #[test]
    fn clean_fields_are_not_looked_at() {
        let page = ocr(grid_page(
            &[
                "CUSTOMS DECLARATION",
                "Invoice No.: DPI-2404-118",
                "Container No.: MSCU1234566",
            ],
            0.95,
        ));
        let wf = wf();
        let a = analyze(&wf, std::slice::from_ref(&page));
        assert!(plan(&wf, &a, std::slice::from_ref(&page)).is_empty());
    }

    /// Two spots that disagree (a declaration's gross weight and a goods line's gross mass
    /// under a column label): reading each again, however confidently, does not move the
    /// choice from one spot to the other.
    #[test]
    fn reading_a_spot_again_does_not_move_the_choice_to_another_spot() {
        let page = ocr(grid_page(
            &[
                "CUSTOMS DECLARATION",
                "Invoice No.: DPI-2404-118",
                "Invoice No.: DPI-2404-181",
            ],
            0.9,
        ));
        let wf = wf();
        let mut a = analyze(&wf, std::slice::from_ref(&page));
        let before = fact(&a, "invoice_number").clone();
        assert!(before.conflict, "{before:?}");
        let chosen = before.chosen.clone().expect("chosen");
        let looks = plan(&wf, &a, std::slice::from_ref(&page));
        assert!(looks.iter().all(|l| l.doubt == Doubt::Conflict));
        // Every spot reads again as it read, the rival one far more confidently.
        let readings: Vec<Vec<Word>> = looks
            .iter()
            .map(|l| {
                before
                    .candidates
                    .iter()
                    .find(|c| same_spot(c.bbox, l.region))
                    .map(|c| {
                        vec![word(
                            &c.raw,
                            c.bbox.x0,
                            c.bbox.y0,
                            c.bbox.x1,
                            if c.raw == chosen.raw { 0.9 } else { 0.99 },
                        )]
                    })
                    .unwrap_or_default()
            })
            .collect();
        apply(&wf, &mut a, &looks, &readings);
        let after = fact(&a, "invoice_number");
        assert_eq!(after.chosen.as_ref().map(|c| &c.raw), Some(&chosen.raw));
        assert!(after.conflict, "still two values for a person: {after:?}");
    }

    /// A low-confidence reading confirmed by a clean second reading of the same spot is
    /// lifted above the floor.
    #[test]
    fn a_reading_below_the_floor_confirmed_again_is_lifted() {
        let page = ocr(grid_page(
            &["CUSTOMS DECLARATION", "Invoice No.: DPI-2404-118"],
            0.5,
        ));
        let wf = wf();
        let mut a = analyze(&wf, std::slice::from_ref(&page));
        let c = fact(&a, "invoice_number").chosen.clone().expect("read");
        assert!(c.confidence < 0.6);
        let looks = plan(&wf, &a, std::slice::from_ref(&page));
        let readings: Vec<Vec<Word>> = looks
            .iter()
            .map(|_| vec![word("DPI-2404-118", c.bbox.x0, c.bbox.y0, c.bbox.x1, 0.93)])
            .collect();
        apply(&wf, &mut a, &looks, &readings);
        let f = fact(&a, "invoice_number");
        let chosen = f.chosen.as_ref().expect("chosen");
        assert!(chosen.confidence >= 0.6, "{f:?}");
        assert_eq!(chosen.origin, Some(CandidateOrigin::SecondLook));
        assert!(!f.conflict);
    }

    /// Under a label, a row holding another label (`Packing list No. | DPI-PL-4045`,
    /// `Invoice total: EUR …`) is not the value.
    #[test]
    fn rows_holding_labels_are_not_values() {
        let look = Look {
            segment: 0,
            field: "invoice_number".into(),
            doubt: Doubt::Missing,
            page: 0,
            region: BBox {
                x0: 0.0,
                y0: 0.0,
                x1: 1.0,
                y1: 0.1,
            },
            mode: LookMode::Block,
            line_height: 0.015,
            pattern: 1,
            label_bbox: None,
            factor: 1.0,
            after_label: false,
        };
        let wf = wf();
        let (spec, compiled) = wf.compiled_type("customs_declaration").expect("type");
        let line = |texts: &[&str], line: u32| -> Vec<Word> {
            texts
                .iter()
                .enumerate()
                .map(|(k, t)| Word {
                    line,
                    ..word(
                        t,
                        k as f32 * 0.1,
                        line as f32 * 0.02,
                        k as f32 * 0.1 + 0.08,
                        0.9,
                    )
                })
                .collect()
        };
        let mut words = line(&["Packing", "list", "No.", "|", "DPI-PL-4045"], 0);
        words.extend(line(&["Invoice", "total:", "EUR"], 1));
        assert!(reading(&spec.fields[0], &compiled.fields[0], &look, &words).is_none());
        words.extend(line(&["DPI/2024/8266", "|", "x"], 2));
        let c =
            reading(&spec.fields[0], &compiled.fields[0], &look, &words).expect("the value row");
        assert_eq!(c.raw, "DPI/2024/8266");
        // On one line: the value stops at the next label.
        let line_look = Look {
            mode: LookMode::Line,
            ..look
        };
        let words = line(&["No.:", "INV-1", "Booking", "No.", "B-2"], 0);
        let c = reading(&spec.fields[0], &compiled.fields[0], &line_look, &words).expect("a value");
        assert_eq!(c.raw, "INV-1");
    }

    #[test]
    fn a_value_glued_to_its_label_is_read_after_the_colon() {
        assert_eq!(after_glued_label("No.:.2025.949.7426"), "2025.949.7426");
        assert_eq!(after_glued_label("No.:EUR 12.00"), "EUR 12.00");
        assert_eq!(after_glued_label("10:30"), "10:30");
        assert_eq!(after_glued_label("INV-1"), "INV-1");
        assert_eq!(after_glued_label("No.:"), "No.:");
        // The crop starts inside the glued word, after the label's own characters.
        let mut page = ocr(grid_page(&["Invoice No.:.2025.949.7426"], 0.9));
        page.words[1].bbox.x1 = 0.3;
        let end = label_end(&page, &[0, 1], "invoice no");
        assert!(end > 0.1 && end < 0.15, "{end}");
    }

    #[test]
    fn a_value_cell_far_right_of_its_label_is_read_to_its_end() {
        // A fax's bordered table: the label ends at 0.182, its value cell holds `ISD 79,142 60`
        // from 0.371 to 0.472 (too far to be the label's row run), then another column.
        let page = crate::layout::tests::placed_page(
            &[
                ("Declared", 0.076, 0.485, 0.138, 0),
                ("value", 0.143, 0.485, 0.182, 0),
                ("ISD", 0.371, 0.482, 0.396, 0),
                ("79,142", 0.401, 0.481, 0.471, 0),
                ("60", 0.455, 0.481, 0.472, 0),
                ("Other", 0.55, 0.482, 0.60, 0),
            ],
            0.9,
        );
        let label = BBox {
            x0: 0.076,
            y0: 0.485,
            x1: 0.182,
            y1: 0.494,
        };
        let (region, found) = row_region(&page, label, 0.182, &[0, 1]);
        assert!(!found);
        assert!(region.x1 >= 0.472 && region.x1 < 0.55, "{region:?}");
    }

    /// A workflow of patterns only (no field has labels) still has its doubtful readings
    /// looked at again.
    #[test]
    fn a_pattern_only_workflow_still_gets_a_second_look() {
        let wf = Workflow::from_yaml(
            &WF.replace("        labels: [\"invoice no\"]\n", "")
                .replace(
                    "        labels: [\"container no\"]\n",
                    "        patterns: ['container no\\.?\\s*:\\s*(?P<value>[a-z]{4}\\d{7})']\n",
                ),
        )
        .expect("workflow");
        let (spec, _) = wf.compiled_type("customs_declaration").expect("type");
        assert!(spec.fields.iter().all(|f| f.labels.is_empty()));
        let page = split_declaration();
        let a = analyze(&wf, std::slice::from_ref(&page));
        let looks = plan(&wf, &a, std::slice::from_ref(&page));
        assert!(
            looks
                .iter()
                .any(|l| l.field == "invoice_number" && l.doubt == Doubt::CutShort),
            "{looks:?}"
        );
    }

    /// A missing value whose label lost its start at the first reading (`@ No.:`, or `Invoic`
    /// read as a line of its own) is looked for on its row, and what is read there counts
    /// only after the label; a row holding another label (`Booking No.:`) is not read.
    #[test]
    fn a_label_whose_start_the_first_reading_lost_is_read_again_on_its_row() {
        let page = ocr(crate::layout::tests::placed_page(
            &[
                ("CUSTOMS", 0.10, 0.05, 0.20, 0),
                ("DECLARATION", 0.21, 0.05, 0.35, 0),
                ("@", 0.10, 0.20, 0.115, 1),
                ("No.:", 0.12, 0.20, 0.16, 1),
                ("SBE-25-4387", 0.17, 0.20, 0.27, 1),
                ("Booking", 0.10, 0.25, 0.17, 2),
                ("No.:", 0.175, 0.25, 0.21, 2),
                ("B-2", 0.22, 0.25, 0.26, 2),
                ("No.:", 0.16, 0.30, 0.19, 3),
                ("INV-77", 0.20, 0.30, 0.26, 3),
                ("Invoic", 0.10, 0.30, 0.15, 4),
            ],
            0.9,
        ));
        let wf = wf();
        let mut a = analyze(&wf, std::slice::from_ref(&page));
        assert!(fact(&a, "invoice_number").chosen.is_none());
        let looks = plan(&wf, &a, std::slice::from_ref(&page));
        let rows: Vec<f32> = looks
            .iter()
            .filter(|l| l.field == "invoice_number" && l.after_label)
            .map(|l| (l.region.y0 + l.region.y1) / 2.0)
            .collect();
        assert!(rows.iter().any(|y| (y - 0.206).abs() < 0.01), "{looks:?}");
        assert!(rows.iter().any(|y| (y - 0.306).abs() < 0.01), "{looks:?}");
        assert!(!rows.iter().any(|y| (y - 0.256).abs() < 0.02), "{looks:?}");
        // Read again: the `@` row shows its label whole, the other row does not.
        let readings: Vec<Vec<Word>> = looks
            .iter()
            .map(|l| {
                if l.field == "invoice_number" && l.region.y0 < 0.2 && l.region.y1 > 0.2 {
                    vec![
                        word("Invoice", 0.06, 0.20, 0.11, 0.9),
                        word("No.:", 0.12, 0.20, 0.16, 0.9),
                        word("SBE-25-4387", 0.17, 0.20, 0.27, 0.93),
                    ]
                } else {
                    vec![
                        word("Booking", 0.06, l.region.y0, 0.11, 0.9),
                        word("No.:", 0.12, l.region.y0, 0.16, 0.9),
                        word("INV-77", 0.20, l.region.y0, 0.26, 0.9),
                    ]
                }
            })
            .collect();
        apply(&wf, &mut a, &looks, &readings);
        let f = fact(&a, "invoice_number");
        let chosen = f.chosen.as_ref().expect("read after its label");
        assert_eq!(chosen.raw, "SBE-25-4387");
        assert_eq!(chosen.origin, Some(CandidateOrigin::SecondLook));
        assert!(chosen.label_bbox.is_some_and(|b| b.x0 < 0.07), "{chosen:?}");
        assert_eq!(f.candidates.len(), 1, "{f:?}");
    }

    /// A border's remnant before a value in a line crop is skipped when the parser refuses it.
    #[test]
    fn a_border_remnant_before_a_value_is_skipped() {
        let look = Look {
            segment: 0,
            field: "container_number".into(),
            doubt: Doubt::Missing,
            page: 0,
            region: BBox {
                x0: 0.0,
                y0: 0.0,
                x1: 1.0,
                y1: 0.05,
            },
            mode: LookMode::Line,
            line_height: 0.015,
            pattern: 0,
            label_bbox: None,
            factor: 1.0,
            after_label: false,
        };
        let wf = wf();
        let (spec, compiled) = wf.compiled_type("customs_declaration").expect("type");
        let words = [
            word("|", 0.0, 0.01, 0.01, 0.9),
            word("oo", 0.02, 0.01, 0.05, 0.5),
            word("MSCU6394171", 0.06, 0.01, 0.2, 0.9),
        ];
        let c = reading(&spec.fields[1], &compiled.fields[1], &look, &words).expect("a value");
        assert_eq!(c.raw, "MSCU6394171");
        assert!(c.bbox.x0 >= 0.06, "{c:?}");
    }

    /// Two different whole readings of one spot stay a conflict for a person.
    #[test]
    fn readings_the_parser_cannot_tell_apart_stay_a_conflict() {
        let page = ocr(grid_page(
            &["CUSTOMS DECLARATION", "Invoice No.: DPI-2404-118"],
            0.5,
        ));
        let wf = wf();
        let mut a = analyze(&wf, std::slice::from_ref(&page));
        let looks = plan(&wf, &a, std::slice::from_ref(&page));
        assert!(looks.iter().any(|l| l.doubt == Doubt::BelowFloor));
        let chosen = fact(&a, "invoice_number").chosen.clone().expect("read");
        let readings: Vec<Vec<Word>> = looks
            .iter()
            .map(|_| {
                vec![word(
                    "DPI-2404-116",
                    chosen.bbox.x0,
                    chosen.bbox.y0,
                    chosen.bbox.x1,
                    0.6,
                )]
            })
            .collect();
        apply(&wf, &mut a, &looks, &readings);
        let f = fact(&a, "invoice_number");
        assert!(f.conflict, "{f:?}");
    }
}
