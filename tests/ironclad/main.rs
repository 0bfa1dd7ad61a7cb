//! The `ironclad` command driven as operators use it (the real binary against real
//! PostgreSQL, Redis and the services each module starts), one test binary (each binary links
//! the whole dependency tree, which on 2 cores costs more than the tests): one module per
//! command or deployment concern. Run one with `cargo test --test ironclad <module>::`.
//! The journeys that need their own process (chaos, documents, decisions, the desk's
//! browser) stay binaries of their own.

mod audit_cli;
mod doctor_cli;
mod netns_hosts;
mod pgbouncer_cli;
mod roles_cli;
mod s3_blobs;
mod verify_cli;
