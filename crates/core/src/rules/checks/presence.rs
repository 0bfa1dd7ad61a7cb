//! REQUIRED_DOCUMENT and FIELD_REQUIRED: whether documents and values are there at all.

use std::fmt::Write;

use super::{listing, show, Case, DocName, Observed, Verdict};
use crate::rules::RuleOutcome;

/// Fails when a listed type has fewer than `min_count` documents. Its values are the
/// documents found (field empty, first page as evidence), so a reviewer sees what was there.
pub(super) fn required_document(case: &Case<'_>, types: &[String], min_count: u32) -> Verdict {
    let mut values = Vec::new();
    let mut counts = Vec::with_capacity(types.len());
    for t in types {
        let before = values.len();
        values.extend(case.of_type(t).map(|(i, doc)| case.whole(i, doc)));
        counts.push(values.len() - before);
    }
    let short = |&(_, n): &(&String, usize)| n < min_count as usize;
    let pairs = || types.iter().zip(counts.iter().copied());
    let (outcome, message) = if pairs().any(|p| short(&p)) {
        let listed = pairs()
            .filter(short)
            .map(|(t, n)| show(move |f| write!(f, "{t} ({n} of {min_count})")));
        (
            RuleOutcome::Fail,
            msg!("missing: {}", listing(listed, ", ")),
        )
    } else {
        let listed = pairs().map(|(t, n)| show(move |f| write!(f, "{t} ×{n}")));
        (
            RuleOutcome::Pass,
            msg!("present: {}", listing(listed, ", ")),
        )
    };
    Verdict::new(outcome, message, values)
}

/// Fails when a document of the type lacks a value; asks for review when a value is
/// ambiguous or below the floor; not applicable without a document of the type.
pub(super) fn field_required(case: &Case<'_>, t: &str, fields: &[String]) -> Verdict {
    let observed: Vec<Observed<'_>> = case
        .of_type(t)
        .flat_map(|(i, doc)| fields.iter().map(move |f| case.read(i, doc, f)))
        .collect();
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
            missing
                .iter()
                .map(|o| show(move |f| write!(f, "{} is missing on {}", o.field, DocName(o.doc)))),
            "; ",
        );
        return Verdict::new(RuleOutcome::Fail, message, values);
    }
    let doubts: Vec<String> = observed
        .iter()
        .filter_map(|o| o.doubt(case.floor))
        .collect();
    if !doubts.is_empty() {
        return Verdict::new(RuleOutcome::ReviewRequired, listing(doubts, "; "), values);
    }
    let docs = observed.len() / fields.len().max(1);
    let mut message = String::with_capacity(96);
    let _ = if docs == 1 {
        write!(message, "{} has ", DocName(observed[0].doc))
    } else {
        write!(message, "all {docs} {t} documents have ")
    };
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            message.push_str(", ");
        }
        message.push_str(f);
    }
    Verdict::new(RuleOutcome::Pass, message, values)
}
