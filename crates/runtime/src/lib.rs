//! Ironclad's long-running roles — dispatcher, worker, reconciler — as libraries.
//!
//! Each role keeps no case progress in memory: every step's result is committed before the next
//! step starts, so any process can die at any point and another picks up from PostgreSQL. Each
//! role exposes one step (`Dispatcher::tick`, `Worker::handle`, `Reconciler::sweep`,
//! `Deliverer::tick` for webhooks) that tests drive by hand, and a `run` loop that production
//! uses.
#![deny(missing_docs)]

pub mod audit_sealer;
pub mod case_rules;
pub mod config;
pub mod dispatcher;
pub mod error;
pub mod lease_keeper;
pub mod metric_names;
pub mod reconciler;
pub mod results;
pub mod templates;
pub mod webhooks;
pub mod worker;
pub mod workflows;

pub use audit_sealer::AuditSealer;
pub use config::RuntimeConfig;
pub use dispatcher::Dispatcher;
pub use error::RuntimeError;
pub use reconciler::Reconciler;
pub use webhooks::Deliverer;
pub use worker::Worker;

/// How long a role's loop waits after its `failures`-th failure in a row: 0.4 s, doubling, at
/// most 6.4 s (PostgreSQL or Redis down is a delay, and the loop keeps asking).
pub(crate) fn retry_backoff(failures: u32) -> std::time::Duration {
    std::time::Duration::from_millis(200u64.saturating_mul(1 << failures.min(5)))
}

/// Waits for `d` or until shutdown; returns true when shutting down.
pub(crate) async fn pause(
    shutdown: &tokio_util::sync::CancellationToken,
    d: std::time::Duration,
) -> bool {
    tokio::select! {
        _ = shutdown.cancelled() => true,
        _ = tokio::time::sleep(d) => false,
    }
}

/// Reaches a fault point: aborts, fails or sleeps as armed (nothing in builds without the
/// `fault-injection` feature).
pub(crate) async fn strike(
    faults: &ironclad_core::faults::Faults,
    point: ironclad_core::faults::FaultPoint,
) -> Result<(), ironclad_core::faults::InjectedFault> {
    faults.strike(point, tokio::time::sleep).await
}
