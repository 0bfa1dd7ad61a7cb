//! The HTTP API's response bodies: what clients read, and what `/openapi.json` describes.
//!
//! The store's rows have the database's shape; these have the API's. Each body is built from
//! its row in one place (a `From`, or a constructor where the caller matters), so renaming a
//! column, or adding one for operators, changes the API only when a type here changes too.
//! Fields the API never showed (a job's lease holder and raw error, a decision's frozen
//! snapshot) have no place here.
//!
//! Doc comments are the document's descriptions: a body or field commented with `//` rather
//! than `///` never had one, and a `///` would add it.

pub mod cases;
pub mod claims;
pub mod corrections;
pub mod decisions;
pub mod notifications;
pub mod report;
pub mod rulesets;
pub mod webhooks;
