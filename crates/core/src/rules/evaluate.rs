//! Evaluating a compiled ruleset over a case's facts, and the decision that follows.
//!
//! Every rule yields one [`RuleResult`], then every built-in safeguard yields one, always, so
//! a decision shows what was checked as well as what failed. The decision is BLOCKED when a
//! rule whose `on_fail` is BLOCKED fails; else REVIEW_REQUIRED when anything asks a person
//! (a REVIEW_REQUIRED result, or a failed rule whose `on_fail` is REVIEW_REQUIRED); else READY.
//!
//! Evaluation is a pure function of the ruleset and the facts. Documents are sorted by
//! (document type, source, first page, last page, segment) before anything reads them, and
//! competing facts of one field are chosen by a total order, so the same case gives the same
//! results, messages included, in whatever order the store returned its rows.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::checks::{self, Case, Piece};
use super::facts::{CaseFacts, Evidence};
use super::safeguards;
use super::spec::{CompiledRuleset, OnFail};
use super::{RuleOutcome, RuleTemplate};
use crate::parse::Value;
use crate::DecisionStatus;

/// Ids of the built-in safeguards, in the order their results follow the rules' results.
pub const SAFEGUARD_IDS: &[&str] = &[
    safeguards::UNKNOWN_DOCUMENT,
    safeguards::EMPTY_DOCUMENT,
    safeguards::LOW_CONFIDENCE,
    safeguards::NO_RULES,
];

/// One document value a rule looked at, with its evidence.
///
/// Rules about whole documents (REQUIRED_DOCUMENT, the unknown-page and empty-document
/// safeguards) give one entry per document found, with an empty `field`, no value, and the
/// document's source and first page as evidence. An unclassified page range has the
/// document type `UNKNOWN` (never a workflow id, which is lower case).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedValue {
    /// The document's type (shared by every value of the document).
    pub document_type: Arc<str>,
    /// The field, or empty for a whole document (shared by every value of the field).
    pub field: Arc<str>,
    /// The value; `None` when missing (or for a whole document). Shared with the facts read.
    pub value: Option<Arc<Value>>,
    /// Where it was read. For a missing value, the document's source and first page.
    pub evidence: Evidence,
}

/// What one rule (or safeguard) found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleResult {
    /// The rule's id, or one of [`SAFEGUARD_IDS`] (shared with the ruleset).
    pub rule_id: Arc<str>,
    /// The rule's template ([`RuleTemplate::Safeguard`] for a safeguard).
    pub template: RuleTemplate,
    /// What it found.
    pub outcome: RuleOutcome,
    /// What a failure does to the decision; `None` for a safeguard (which never fails, it
    /// asks for review).
    pub on_fail: Option<OnFail>,
    /// What was found, naming the documents and the values as printed.
    pub message: String,
    /// Every document value the rule looked at, in document order. Shared: one document's
    /// reading of a field is built once per evaluation, however many rules show it.
    pub values: Vec<Arc<ComparedValue>>,
}

/// The decision for one case generation, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// READY, BLOCKED or REVIEW_REQUIRED.
    pub status: DecisionStatus,
    /// One sentence: the status and the rules that led to it.
    pub summary: String,
    /// The rules' results in ruleset order, then the safeguards' in [`SAFEGUARD_IDS`] order.
    pub results: Vec<RuleResult>,
}

/// Evaluates `ruleset` over `facts`.
pub fn evaluate(ruleset: &CompiledRuleset, facts: &CaseFacts) -> Evaluation {
    let case = Case::new(facts, ruleset);
    let mut results = Vec::with_capacity(ruleset.rules.len() + SAFEGUARD_IDS.len());
    for rule in &ruleset.rules {
        let verdict = checks::run(&rule.check, &case);
        results.push(RuleResult {
            rule_id: Arc::clone(&rule.id),
            template: rule.spec.template,
            outcome: verdict.outcome,
            on_fail: Some(rule.spec.on_fail),
            message: verdict.message,
            values: verdict.values,
        });
    }
    results.extend(safeguards::run(ruleset, &case));
    for result in &mut results {
        name_corrections(&mut result.message, &result.values);
    }
    let status = decide(&results);
    Evaluation {
        status,
        summary: summarize(status, &results),
        results,
    }
}

/// Appends who corrected each value a result shows, and why (once per correction):
/// `… — container_number corrected by Rita Reviewer: the B/L is right`. A person's word
/// changed what the rule saw, so the result says whose.
fn name_corrections(message: &mut String, values: &[Arc<ComparedValue>]) {
    let mut named: Vec<uuid::Uuid> = Vec::new();
    for value in values {
        let Some(note) = &value.evidence.correction else {
            continue;
        };
        if named.contains(&note.id) {
            continue;
        }
        message.push_str(if named.is_empty() { " — " } else { "; " });
        if !value.field.is_empty() {
            message.push_str(&value.field);
            message.push(' ');
        }
        message.push_str("corrected by ");
        message.push_str(&note.by);
        message.push_str(": ");
        message.push_str(&note.reason);
        named.push(note.id);
    }
}

/// Whether `result` asks a person to look.
fn needs_review(result: &RuleResult) -> bool {
    match result.outcome {
        RuleOutcome::ReviewRequired => true,
        RuleOutcome::Fail => result.on_fail != Some(OnFail::Blocked),
        RuleOutcome::Pass | RuleOutcome::NotApplicable => false,
    }
}

fn blocks(result: &RuleResult) -> bool {
    result.outcome == RuleOutcome::Fail && result.on_fail == Some(OnFail::Blocked)
}

/// The decision rule of DESIGN §5.
fn decide(results: &[RuleResult]) -> DecisionStatus {
    if results.iter().any(blocks) {
        DecisionStatus::Blocked
    } else if results.iter().any(needs_review) {
        DecisionStatus::ReviewRequired
    } else {
        DecisionStatus::Ready
    }
}

/// How many rule ids a summary names before it counts the rest.
const NAMED_IN_SUMMARY: usize = 3;

/// `BLOCKED: container_agrees failed; 2 need review (a, b)` / `READY: 4 rules passed`.
fn summarize(status: DecisionStatus, results: &[RuleResult]) -> String {
    let ids = |outcome: RuleOutcome| -> Vec<&str> {
        results
            .iter()
            .filter(|r| r.outcome == outcome)
            .map(|r| &*r.rule_id)
            .collect()
    };
    let failed = ids(RuleOutcome::Fail);
    let review = ids(RuleOutcome::ReviewRequired);
    let mut text = String::with_capacity(160);
    text.push_str(status.as_str());
    text.push_str(": ");
    if !failed.is_empty() {
        name_some(&mut text, &failed);
        text.push_str(" failed");
    }
    if !review.is_empty() {
        if !failed.is_empty() {
            text.push_str("; ");
        }
        if let [one] = review[..] {
            text.push_str(one);
            text.push_str(" needs review");
        } else {
            review.len().push_to(&mut text);
            text.push_str(" need review (");
            name_some(&mut text, &review);
            text.push(')');
        }
    }
    if failed.is_empty() && review.is_empty() {
        let passed = results
            .iter()
            .filter(|r| r.template != RuleTemplate::Safeguard && r.outcome == RuleOutcome::Pass)
            .count();
        let na = results
            .iter()
            .filter(|r| r.outcome == RuleOutcome::NotApplicable)
            .count();
        passed.push_to(&mut text);
        text.push_str(if passed == 1 {
            " rule passed"
        } else {
            " rules passed"
        });
        if na > 0 {
            text.push_str(", ");
            na.push_to(&mut text);
            text.push_str(" not applicable");
        }
    }
    text
}

/// Appends the first [`NAMED_IN_SUMMARY`] ids, then `and N more`.
fn name_some(text: &mut String, ids: &[&str]) {
    for (i, id) in ids.iter().take(NAMED_IN_SUMMARY).enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        text.push_str(id);
    }
    if ids.len() > NAMED_IN_SUMMARY {
        text.push_str(" and ");
        (ids.len() - NAMED_IN_SUMMARY).push_to(text);
        text.push_str(" more");
    }
}

#[cfg(test)]
#[path = "evaluate_props.rs"]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{compile, container, doc, facts, text, with};
    use serde_json::json;

    fn result(id: &str, outcome: RuleOutcome, on_fail: Option<OnFail>) -> RuleResult {
        RuleResult {
            rule_id: id.into(),
            template: if on_fail.is_some() {
                RuleTemplate::ExactMatch
            } else {
                RuleTemplate::Safeguard
            },
            outcome,
            on_fail,
            message: String::new(),
            values: Vec::new(),
        }
    }

    #[test]
    fn the_decision_follows_design_section_5() {
        use OnFail::Blocked;
        use RuleOutcome::{Fail, NotApplicable, Pass};
        let ok = result("a", Pass, Some(Blocked));
        let na = result("n", NotApplicable, Some(Blocked));
        let soft_fail = result("s", Fail, Some(OnFail::ReviewRequired));
        let hard_fail = result("h", Fail, Some(Blocked));
        let review = result("r", RuleOutcome::ReviewRequired, Some(Blocked));
        let guard = result("g", RuleOutcome::ReviewRequired, None);
        assert_eq!(decide(&[ok.clone(), na.clone()]), DecisionStatus::Ready);
        assert_eq!(
            decide(&[ok.clone(), soft_fail.clone()]),
            DecisionStatus::ReviewRequired
        );
        assert_eq!(
            decide(std::slice::from_ref(&review)),
            DecisionStatus::ReviewRequired
        );
        assert_eq!(
            decide(std::slice::from_ref(&guard)),
            DecisionStatus::ReviewRequired
        );
        assert_eq!(
            decide(&[soft_fail, review, guard, hard_fail]),
            DecisionStatus::Blocked
        );
    }

    #[test]
    fn summaries_name_what_led_to_the_decision() {
        use OnFail::Blocked;
        use RuleOutcome::{Fail, NotApplicable, Pass};
        let rs = [
            result("container_agrees", Fail, Some(Blocked)),
            result("weight", RuleOutcome::ReviewRequired, Some(Blocked)),
            result(
                "safeguard_low_confidence",
                RuleOutcome::ReviewRequired,
                None,
            ),
        ];
        assert_eq!(
            summarize(DecisionStatus::Blocked, &rs),
            "BLOCKED: container_agrees failed; 2 need review (weight, safeguard_low_confidence)"
        );
        let rs = [
            result("a", Pass, Some(Blocked)),
            result("b", Pass, Some(Blocked)),
            result("c", NotApplicable, Some(Blocked)),
            result("safeguard_no_rules", Pass, None),
        ];
        assert_eq!(
            summarize(DecisionStatus::Ready, &rs),
            "READY: 2 rules passed, 1 not applicable"
        );
        let many: Vec<RuleResult> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|id| result(id, Fail, Some(OnFail::ReviewRequired)))
            .collect();
        assert_eq!(
            summarize(DecisionStatus::ReviewRequired, &many),
            "REVIEW_REQUIRED: a, b, c and 2 more failed"
        );
    }

    #[test]
    fn a_corrected_value_is_named_with_who_corrected_it_and_why() {
        use crate::rules::CorrectionNote;
        let rules = compile(json!([{
            "id": "container_agrees", "template": "EXACT_MATCH", "on_fail": "BLOCKED",
            "params": {"field": "container_number", "document_types": ["bill_of_lading", "customs_declaration"]}
        }]));
        let mut case = facts(vec![
            with(
                doc("bill_of_lading", 1),
                &[("container_number", container("MSCU1234566"), 0.95)],
            ),
            with(
                doc("customs_declaration", 2),
                &[("container_number", container("MSCU1234566"), 0.9)],
            ),
        ]);
        let before = evaluate(&rules, &case);
        assert!(!before.results[0].message.contains("corrected"));
        let note = CorrectionNote {
            id: uuid::Uuid::from_u128(7),
            by: "Rita Reviewer".into(),
            reason: "the stamp hid the last digit".into(),
        };
        case.documents[1].facts[0].evidence.correction = Some(note.clone());
        let after = evaluate(&rules, &case);
        assert_eq!(after.status, before.status);
        assert_eq!(
            after.results[0].message,
            format!(
                "{} — container_number corrected by Rita Reviewer: the stamp hid the last digit",
                before.results[0].message
            )
        );
        // The note travels with the value into the result's evidence (reports show it).
        let noted: Vec<_> = after.results[0]
            .values
            .iter()
            .filter_map(|v| v.evidence.correction.as_ref())
            .collect();
        assert_eq!(noted, vec![&note]);
    }

    #[test]
    fn an_unconfigured_workflow_never_reads_ready() {
        let case = facts(vec![with(
            doc("bill_of_lading", 1),
            &[("bl_number", text("MAEU1"), 0.99)],
        )]);
        let ev = evaluate(&CompiledRuleset::default(), &case);
        assert_eq!(ev.status, DecisionStatus::ReviewRequired);
        assert_eq!(
            ev.summary,
            "REVIEW_REQUIRED: safeguard_no_rules needs review"
        );
        let ids: Vec<&str> = ev.results.iter().map(|r| &*r.rule_id).collect();
        assert_eq!(ids, SAFEGUARD_IDS);
        let no_rules = &ev.results[3];
        assert_eq!(no_rules.message, "no rules configured");
        assert_eq!(no_rules.on_fail, None);
        assert_eq!(no_rules.template, RuleTemplate::Safeguard);
    }

    #[test]
    fn a_clean_case_is_ready_and_every_safeguard_passes() {
        let rules = compile(json!([{
            "id": "container_agrees", "template": "EXACT_MATCH", "on_fail": "BLOCKED",
            "params": {"field": "container_number", "document_types": ["bill_of_lading", "customs_declaration"]}
        }]));
        let case = facts(vec![
            with(
                doc("bill_of_lading", 1),
                &[("container_number", container("MSCU1234566"), 0.95)],
            ),
            with(
                doc("customs_declaration", 2),
                &[("container_number", container("MSCU1234566"), 0.9)],
            ),
        ]);
        let ev = evaluate(&rules, &case);
        assert_eq!(ev.status, DecisionStatus::Ready, "{ev:#?}");
        assert_eq!(ev.summary, "READY: 1 rule passed");
        assert!(ev.results.iter().all(|r| r.outcome == RuleOutcome::Pass));
        assert_eq!(ev.results.len(), 1 + SAFEGUARD_IDS.len());
    }
}
