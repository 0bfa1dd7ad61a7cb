//! The store's integration tests against real PostgreSQL, one test binary (each binary links
//! the whole dependency tree, which on 2 cores costs more than the tests): one module per
//! concern, as they were separate files before. Run one with `cargo test -p ironclad-store
//! --test store <module>::`.

mod audit_chain;
mod decisions;
mod races;
mod report;
mod transitions;
mod verify;
mod webhooks;
