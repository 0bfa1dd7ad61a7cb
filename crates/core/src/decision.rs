//! Decisions: the outcome a person reviews.

use crate::spelled_enum;

spelled_enum! {
    /// The outcome of checking a case generation.
    pub enum DecisionStatus: "decision status" {
        /// Every rule passed and the evidence is confident.
        Ready = "READY",
        /// A blocking rule failed: a business finding.
        Blocked = "BLOCKED",
        /// A person must look.
        ReviewRequired = "REVIEW_REQUIRED",
    }
}

/// Summary of the decision written while no ruleset exists for the case's workflow.
pub const NO_RULESET_SUMMARY: &str = "no ruleset";

/// The first decision version of every generation.
pub const FIRST_VERSION: i32 = 1;
