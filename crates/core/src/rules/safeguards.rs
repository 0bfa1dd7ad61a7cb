//! The built-in checks that run on every case, whatever the ruleset says (DESIGN §5).
//!
//! Rules only see the fields they name, so a page nobody could classify, a document nothing
//! could be read from, or a value read at 30 % would otherwise pass silently. Each safeguard
//! either passes or asks for review; none fails, because none is a business finding.

use std::sync::Arc;

use super::checks::{listing, msg, text, Case, DocName, Observed};
use super::evaluate::{ComparedValue, RuleResult};
use super::facts::{below_floor, DocumentFacts};
use super::spec::CompiledRuleset;
use super::{RuleOutcome, RuleTemplate};

/// A page range no document type recognised.
pub(crate) const UNKNOWN_DOCUMENT: &str = "safeguard_unknown_document";
/// A typed document without a single value.
pub(crate) const EMPTY_DOCUMENT: &str = "safeguard_empty_document";
/// A value below the policy's confidence floor.
pub(crate) const LOW_CONFIDENCE: &str = "safeguard_low_confidence";
/// A ruleset without rules, so that an unconfigured workflow never reads READY.
pub(crate) const NO_RULES: &str = "safeguard_no_rules";

/// Every safeguard's result, in [`super::SAFEGUARD_IDS`] order.
pub(crate) fn run(ruleset: &CompiledRuleset, case: &Case<'_>) -> [RuleResult; 4] {
    [
        unknown_document(case),
        empty_document(case),
        low_confidence(case),
        no_rules(ruleset),
    ]
}

fn result(id: &str, review: bool, message: String, values: Vec<Arc<ComparedValue>>) -> RuleResult {
    RuleResult {
        rule_id: Arc::from(id),
        template: RuleTemplate::Safeguard,
        outcome: if review {
            RuleOutcome::ReviewRequired
        } else {
            RuleOutcome::Pass
        },
        on_fail: None,
        message,
        values,
    }
}

fn unknown_document(case: &Case<'_>) -> RuleResult {
    let unknown: Vec<(usize, &DocumentFacts)> = case
        .docs()
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, d)| d.document_type.is_none())
        .collect();
    if unknown.is_empty() {
        return result(
            UNKNOWN_DOCUMENT,
            false,
            "every page was recognised as a document type".into(),
            Vec::new(),
        );
    }
    let names = listing(unknown.iter().map(|(_, d)| DocName(d)), ", ");
    result(
        UNKNOWN_DOCUMENT,
        true,
        msg!("no document type recognised for {names}"),
        unknown.iter().map(|&(i, d)| case.whole(i, d)).collect(),
    )
}

fn empty_document(case: &Case<'_>) -> RuleResult {
    let empty: Vec<(usize, &DocumentFacts)> = case
        .docs()
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, d)| d.document_type.is_some() && !d.has_any_value())
        .collect();
    if empty.is_empty() {
        return result(
            EMPTY_DOCUMENT,
            false,
            "every document has at least one value".into(),
            Vec::new(),
        );
    }
    let names = listing(empty.iter().map(|(_, d)| DocName(d)), ", ");
    result(
        EMPTY_DOCUMENT,
        true,
        msg!("no field could be read on {names}"),
        empty.iter().map(|&(i, d)| case.whole(i, d)).collect(),
    )
}

fn low_confidence(case: &Case<'_>) -> RuleResult {
    let mut low = Vec::new();
    let mut fields: Vec<&str> = Vec::new();
    for (i, &doc) in case.docs().iter().enumerate() {
        // A reading below the floor is one of the document's facts below it: most documents
        // have none, and need no reading at all.
        let doubtful = doc
            .facts
            .iter()
            .any(|f| below_floor(f.evidence.confidence, case.floor).is_some());
        if doc.document_type.is_none() || !doubtful {
            continue;
        }
        // Field names sorted, so the listing does not follow the facts' arrival order.
        fields.clear();
        fields.extend(doc.facts.iter().map(|f| f.field.as_str()));
        fields.sort_unstable();
        fields.dedup();
        for &field in &fields {
            let o = case.read_named(i, doc, field);
            if o.reading().value.is_some() && o.reading().below_floor.is_some() {
                low.push(o);
            }
        }
    }
    let floor = case.floor;
    if low.is_empty() {
        return result(
            LOW_CONFIDENCE,
            false,
            msg!("every value is at or above the confidence floor {floor}"),
            Vec::new(),
        );
    }
    let listed = listing(
        low.iter().map(|o| {
            let c = o.reading().below_floor.unwrap_or(f64::NAN);
            msg!("{} ({c:.2})", o.described())
        }),
        ", ",
    );
    let n = low.len();
    let values = if n == 1 { "value" } else { "values" };
    result(
        LOW_CONFIDENCE,
        true,
        msg!("{n} {values} below the confidence floor {floor}: {listed}"),
        low.iter().map(Observed::compared).collect(),
    )
}

fn no_rules(ruleset: &CompiledRuleset) -> RuleResult {
    let n = ruleset.rules.len();
    if n == 0 {
        result(NO_RULES, true, "no rules configured".into(), Vec::new())
    } else {
        let rules = if n == 1 { "rule" } else { "rules" };
        result(
            NO_RULES,
            false,
            text!(n, " ", rules, " configured"),
            Vec::new(),
        )
    }
}
