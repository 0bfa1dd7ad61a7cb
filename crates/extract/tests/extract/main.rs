//! The extract crate's integration tests, in one binary (one link of the crate and its
//! dependencies instead of one per file): `cargo test -p ironclad-extract --test extract`.

mod invoice2data_corpus;
mod trade_decisions;
mod trade_workflow;
