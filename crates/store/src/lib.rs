//! PostgreSQL persistence for Ironclad.
//!
//! This is the only crate that writes SQL. Every state transition is one guarded statement
//! (`UPDATE … WHERE status = … RETURNING`) or one short transaction, and a statement that
//! matches no row reports `Stale` instead of failing: "someone else won" is a normal outcome
//! under at-least-once delivery. The statements are kept as named constants next to the
//! function that runs them, checked at run time by the tests rather than at compile time
//! (sqlx's macros would need a database or a committed `.sqlx/` cache to build).
#![deny(missing_docs)]

pub mod error;
pub mod intake;
pub mod jobs;
pub mod metrics;
pub mod outbox;
pub mod read;
pub mod reconcile;
pub mod results;
pub mod tenants;
pub mod workflows;

pub use error::{StoreError, StoreResult};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgPool};
use std::str::FromStr;
use std::time::Duration;

/// Whether a guarded transition applied, or another actor had already moved the row on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The row was in the expected state and moved on.
    Applied,
    /// The row was not in the expected state (lease lost, already terminal, …); nothing changed.
    Stale,
}

/// A pool of connections to Ironclad's database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
}

/// The migrations embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Store {
    /// Connects with at most `max_connections`, failing after `connect_timeout` when
    /// PostgreSQL does not answer (so a readiness probe or CLI call never hangs).
    pub async fn connect(
        url: &str,
        max_connections: u32,
        connect_timeout: Duration,
    ) -> StoreResult<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(StoreError::from)?
            .log_statements(tracing::log::LevelFilter::Trace)
            .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(2));
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(connect_timeout)
            .connect_with(options)
            .await?;
        Ok(Self { pool })
    }

    /// Wraps an existing pool.
    pub fn from_pool(pool: PgPool) -> Self {
        Self { pool }
    }

    /// The underlying pool (for tests and benchmarks).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Applies pending migrations. Safe to run concurrently from several processes
    /// (sqlx takes an advisory lock).
    pub async fn migrate(&self) -> StoreResult<()> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Checks PostgreSQL answers.
    pub async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// Seconds as the `double precision` PostgreSQL's `make_interval(secs => …)` takes.
pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
