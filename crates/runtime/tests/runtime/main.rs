//! The runtime's reliability tests against real PostgreSQL and Redis, one test binary (each
//! binary links the whole dependency tree, which on 2 cores costs more than the tests): one
//! module per promise, as they were separate files before, sharing `common`. Run one with
//! `cargo test -p ironclad-runtime --test runtime <module>::`.

mod accounting;
mod common;
mod concurrency;
mod handoff_failures;
mod lease_expiry;
mod outages;
mod persist_before_ack;
mod pipeline_steps;
mod poison;
mod redis_loss;
mod retry_exhaustion;
mod webhooks;
mod workflow_pins;
