//! Business rules: what a case's documents must say, checked against each other.
//!
//! A ruleset (rules plus decision policy) is data: it is written in a workflow file or managed
//! as a versioned ruleset, validated against the workflow's document types and fields
//! ([`RulesetSpec::compile`]), then evaluated over the facts a case's documents yielded
//! ([`evaluate`]). Evaluation is pure and deterministic: the same ruleset and the same facts,
//! in any order, give the same decision, so a decision can be recomputed and explained.

mod checks;
mod compare;
mod evaluate;
mod facts;
mod names;
mod ocr_confusion;
mod params;
mod safeguards;
mod spec;
#[cfg(test)]
mod testkit;

pub use evaluate::{evaluate, ComparedValue, Evaluation, RuleResult, SAFEGUARD_IDS};
pub use facts::{CaseFacts, CorrectionNote, DocumentFacts, Evidence, FactInput};
pub use spec::{
    CompiledRule, CompiledRuleset, OnFail, Policy, RuleIssue, RuleSpec, RulesetSpec, Schema,
    Severity,
};

use crate::spelled_enum;

spelled_enum! {
    /// How a rule checks the documents.
    pub enum RuleTemplate: "rule template" {
        /// Each named document type is present (at least `min_count` of it).
        RequiredDocument = "REQUIRED_DOCUMENT",
        /// Each named field has a value in every document of the named type.
        FieldRequired = "FIELD_REQUIRED",
        /// A field agrees across document types, or one type's field equals another's.
        ExactMatch = "EXACT_MATCH",
        /// Two numbers agree within an absolute and/or relative tolerance.
        NumericTolerance = "NUMERIC_TOLERANCE",
        /// The days between two dates lie within `min_days..=max_days`.
        DateWindow = "DATE_WINDOW",
        /// The authoritative document's value wins; the others must agree or are flagged.
        AuthorityPrecedence = "AUTHORITY_PRECEDENCE",
        /// A built-in check that always runs (unknown pages, empty documents, low confidence).
        Safeguard = "SAFEGUARD",
    }
}

spelled_enum! {
    /// What one rule found.
    pub enum RuleOutcome: "rule outcome" {
        /// The documents satisfy the rule.
        Pass = "PASS",
        /// The documents contradict the rule: the decision takes the rule's `on_fail`.
        Fail = "FAIL",
        /// A value is missing, ambiguous or below the confidence floor: a person must look.
        ReviewRequired = "REVIEW_REQUIRED",
        /// The rule does not concern this case (its document types are absent).
        NotApplicable = "NOT_APPLICABLE",
    }
}
