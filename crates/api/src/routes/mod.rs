//! Route groups, one module per resource; [`crate::router()`] merges them.

pub mod cases;
pub mod ops;
