//! Roles an API key can carry.

use crate::spelled_enum;

spelled_enum! {
    /// What an API key may do.
    pub enum Role: "role" {
        /// Submits cases and follows them.
        Operator = "operator",
        /// Resolves decisions.
        Reviewer = "reviewer",
        /// Everything, including rulesets and requeue.
        Admin = "admin",
    }
}
