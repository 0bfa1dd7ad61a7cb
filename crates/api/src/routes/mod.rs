//! Route groups, one module per resource; [`crate::router()`] merges them.

pub mod cases;
pub mod claims;
pub mod corrections;
pub mod decisions;
pub mod notifications;
pub mod ops;
pub mod report;
pub mod rulesets;
pub mod webhooks;
