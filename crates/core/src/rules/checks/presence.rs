//! REQUIRED_DOCUMENT and FIELD_REQUIRED: whether documents and values are there at all.

use std::fmt::Write;

use super::{listing, push, Case, Observed, Piece, Verdict};
use crate::rules::names::Name;
use crate::rules::RuleOutcome;

/// Fails when a listed type has fewer than `min_count` documents. Its values are the
/// documents found (field empty, first page as evidence), so a reviewer sees what was there.
pub(super) fn required_document(case: &Case<'_>, types: &[Name], min_count: u32) -> Verdict {
    let mut values = Vec::new();
    let mut counts = Vec::with_capacity(types.len());
    for t in types {
        let before = values.len();
        values.extend(case.of_type(t).map(|(i, doc)| case.whole(i, doc)));
        counts.push(values.len() - before);
    }
    let short = |&(_, n): &(&Name, usize)| n < min_count as usize;
    let pairs = || types.iter().zip(counts.iter().copied());
    let (outcome, message) = if pairs().any(|p| short(&p)) {
        let listed = pairs().filter(short).map(|(t, n)| {
            push(move |out| {
                let _ = write!(out, "{t} ({n} of {min_count})");
            })
        });
        (
            RuleOutcome::Fail,
            msg!("missing: {}", listing(listed, ", ")),
        )
    } else {
        let listed = pairs().map(|(t, n)| {
            push(move |out| {
                out.push_str(t);
                out.push_str(" ×");
                n.push_to(out);
            })
        });
        (RuleOutcome::Pass, text!("present: ", listing(listed, ", ")))
    };
    Verdict::new(outcome, message, values)
}

/// Fails when a document of the type lacks a value; asks for review when a value is
/// ambiguous or below the floor; not applicable without a document of the type.
pub(super) fn field_required(case: &Case<'_>, t: &Name, fields: &[Name]) -> Verdict {
    let mut observed = Vec::with_capacity(case.of_type(t).count() * fields.len());
    for (i, doc) in case.of_type(t) {
        observed.extend(fields.iter().map(|f| case.read(i, doc, f)));
    }
    if observed.is_empty() {
        return Verdict::new(
            RuleOutcome::NotApplicable,
            msg!("no {t} document"),
            Vec::new(),
        );
    }
    let values = observed.iter().map(Observed::compared).collect();
    let missing: Vec<&Observed<'_>> = observed.iter().filter(|o| o.value().is_none()).collect();
    if !missing.is_empty() {
        let message = listing(
            missing.iter().map(|o| {
                push(move |out| {
                    out.push_str(o.field());
                    out.push_str(" is missing on ");
                    out.push_str(o.doc_name());
                })
            }),
            "; ",
        );
        return Verdict::new(RuleOutcome::Fail, message, values);
    }
    let doubts: Vec<_> = observed
        .iter()
        .filter_map(|o| o.doubt(case.floor))
        .collect();
    if !doubts.is_empty() {
        return Verdict::new(RuleOutcome::ReviewRequired, listing(doubts, "; "), values);
    }
    let docs = observed.len() / fields.len().max(1);
    let mut message = if docs == 1 {
        text!(observed[0].doc_name(), " has ")
    } else {
        text!("all ", docs, " ", t, " documents have ")
    };
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            message.push_str(", ");
        }
        message.push_str(f);
    }
    Verdict::new(RuleOutcome::Pass, message, values)
}
