//! PostgreSQL persistence for Ironclad.
//!
//! This is the only crate that writes SQL. Every state transition is one guarded statement
//! (`UPDATE … WHERE status = … RETURNING`) or one short transaction, and a statement that
//! matches no row reports `Stale` instead of failing: "someone else won" is a normal outcome
//! under at-least-once delivery. The statements are kept as named constants next to the
//! function that runs them, checked at run time by the tests rather than at compile time
//! (sqlx's macros would need a database or a committed `.sqlx/` cache to build).
#![deny(missing_docs)]

pub mod audit;
pub(crate) mod audit_trail;
pub mod case_glance;
pub mod claims;
pub mod corrections;
pub mod decisions;
pub mod desk_forms;
pub mod error;
pub mod intake;
pub mod jobs;
pub mod ledger;
pub mod metrics;
pub mod notifications;
pub(crate) mod notify;
pub mod outbox;
pub(crate) mod people;
pub mod pilot;
pub mod pool;
pub mod read;
pub mod reconcile;
pub mod replay;
pub mod report;
pub mod reprocess;
pub mod results;
pub mod reviews;
pub mod rulesets;
pub mod schema_status;
pub mod stuck;
pub mod templates;
pub mod tenants;
pub mod transition_guard;
pub mod users;
pub mod verify;
pub mod webhooks;
pub mod workflows;

pub use error::{StoreError, StoreResult};
pub use pool::{DbPool, Pooler};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};
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
    pool: DbPool,
    /// Connections kept for lease renewals only, so a renewal never queues behind intake,
    /// scrapes or big result inserts on the main pool (a renewal that waits longer than the
    /// lease would hand a live job to another worker).
    lease_pool: DbPool,
    /// Where migrations run when that is not the pool's own server: behind PgBouncer in
    /// transaction mode they need a session of their own (an advisory lock, `SET`).
    migrate_target: Option<MigrateTarget>,
    pooler: Pooler,
}

/// Connect options for migrations; never printed (the URL may hold a password).
#[derive(Clone)]
struct MigrateTarget(PgConnectOptions);

impl std::fmt::Debug for MigrateTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MigrateTarget(..)")
    }
}

/// The embedded migrations.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// How a process talks to PostgreSQL: pool sizes and the server-side timeouts every session
/// gets, so that no statement, lock wait or forgotten transaction can hold the pipeline up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSettings {
    /// Connections of the main pool.
    pub max_connections: u32,
    /// Connections reserved for lease renewals (opened lazily; 0 shares the main pool).
    pub lease_connections: u32,
    /// Longest wait for a connection (and for connecting); then the call fails as unavailable.
    pub acquire_timeout: Duration,
    /// `statement_timeout`: the server cancels a statement running longer. Default 60 s; the
    /// longest statement is a large dossier's result insert, well under that.
    pub statement_timeout: Duration,
    /// `lock_timeout`: a statement waiting this long for a row lock fails (and is retried)
    /// instead of queueing behind a stuck transaction. Default 10 s.
    pub lock_timeout: Duration,
    /// `idle_in_transaction_session_timeout`: the server ends a session that sits idle inside
    /// a transaction this long (a client stopped mid-transaction), releasing its locks.
    /// Default 60 s.
    pub idle_in_transaction_timeout: Duration,
    /// TCP keepalive idle time of the server's side of each connection, so a client host that
    /// vanished is noticed and its session (and locks) ended. Interval is a third of it, three
    /// probes. Default 30 s. (sqlx 0.8 cannot set client-side keepalives; the roles bound their
    /// own calls with deadlines instead.) Behind PgBouncer, its own `tcp_keep*` settings apply.
    pub keepalive_idle: Duration,
    /// PgBouncer in transaction pooling mode in front of PostgreSQL, or not (the default).
    pub pooler: Pooler,
    /// Where [`Store::migrate`] connects instead of the pool's URL: PostgreSQL itself or a
    /// session-mode pool. Required with [`Pooler::Transaction`]. May hold a password, so
    /// never log these settings.
    pub migrate_url: Option<String>,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_connections: 16,
            lease_connections: 2,
            acquire_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(60),
            lock_timeout: Duration::from_secs(10),
            idle_in_transaction_timeout: Duration::from_secs(60),
            keepalive_idle: Duration::from_secs(30),
            pooler: Pooler::Off,
            migrate_url: None,
        }
    }
}

fn millis(d: Duration) -> String {
    d.as_millis().max(1).to_string()
}

/// `options` with the session settings of a direct connection: the timeouts and keepalives.
fn session_options(options: PgConnectOptions, settings: &PoolSettings) -> PgConnectOptions {
    let keepalive = settings.keepalive_idle.as_secs().max(1);
    options.options([
        ("statement_timeout", millis(settings.statement_timeout)),
        ("lock_timeout", millis(settings.lock_timeout)),
        (
            "idle_in_transaction_session_timeout",
            millis(settings.idle_in_transaction_timeout),
        ),
        ("tcp_keepalives_idle", keepalive.to_string()),
        (
            "tcp_keepalives_interval",
            (keepalive / 3).max(1).to_string(),
        ),
        ("tcp_keepalives_count", "3".to_owned()),
    ])
}

/// Runs the migrations on one session.
async fn migrate_on(conn: &mut sqlx::PgConnection) -> StoreResult<()> {
    // A migration may legitimately run longer than the statement timeout every other
    // session gets (an index build on a big table).
    sqlx::query("SET statement_timeout = 0")
        .execute(&mut *conn)
        .await?;
    MIGRATOR.run(conn).await?;
    Ok(())
}

impl Store {
    /// Connects with at most `max_connections`, failing after `connect_timeout` when
    /// PostgreSQL does not answer (so a readiness probe or CLI call never hangs). The other
    /// settings are [`PoolSettings`]' defaults.
    pub async fn connect(
        url: &str,
        max_connections: u32,
        connect_timeout: Duration,
    ) -> StoreResult<Self> {
        Self::connect_with(
            url,
            &PoolSettings {
                max_connections,
                acquire_timeout: connect_timeout,
                ..PoolSettings::default()
            },
        )
        .await
    }

    /// Connects with `settings`; every session (behind PgBouncer: every transaction) gets
    /// the statement, lock and idle-in-transaction timeouts, and direct sessions the
    /// keepalives.
    pub async fn connect_with(url: &str, settings: &PoolSettings) -> StoreResult<Self> {
        let parsed = PgConnectOptions::from_str(url).map_err(StoreError::from)?;
        let options = match settings.pooler {
            Pooler::Off => session_options(parsed, settings),
            // PgBouncer refuses the `options` and `extra_float_digits` startup parameters,
            // and a statement cached on one server is unknown to the next (see `pool`).
            Pooler::Transaction => parsed.statement_cache_capacity(0).extra_float_digits(None),
        }
        .log_statements(tracing::log::LevelFilter::Trace)
        .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(2));
        let wrap = |pool: PgPool| match settings.pooler {
            Pooler::Off => DbPool::direct(pool),
            Pooler::Transaction => DbPool::behind_pgbouncer(
                pool,
                pool::transaction_begin(
                    &millis(settings.statement_timeout),
                    &millis(settings.lock_timeout),
                    &millis(settings.idle_in_transaction_timeout),
                ),
            ),
        };
        let migrate_target = match &settings.migrate_url {
            Some(url) => Some(MigrateTarget(session_options(
                PgConnectOptions::from_str(url).map_err(StoreError::from)?,
                settings,
            ))),
            None => None,
        };
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections.max(1))
            .acquire_timeout(settings.acquire_timeout)
            .connect_with(options.clone())
            .await?;
        let lease_pool = if settings.lease_connections == 0 {
            pool.clone()
        } else {
            PgPoolOptions::new()
                .max_connections(settings.lease_connections)
                .acquire_timeout(settings.acquire_timeout)
                .connect_lazy_with(options)
        };
        Ok(Self {
            pool: wrap(pool),
            lease_pool: wrap(lease_pool),
            migrate_target,
            pooler: settings.pooler,
        })
    }

    /// Wraps an existing pool.
    pub fn from_pool(pool: PgPool) -> Self {
        Self {
            lease_pool: DbPool::direct(pool.clone()),
            pool: DbPool::direct(pool),
            migrate_target: None,
            pooler: Pooler::Off,
        }
    }

    /// The pool every statement goes through (for tests and benchmarks; it dereferences to
    /// the sqlx pool).
    pub fn pool(&self) -> &DbPool {
        &self.pool
    }

    /// Applies pending migrations. Safe to run concurrently from several processes
    /// (sqlx takes an advisory lock). With [`PoolSettings::migrate_url`] they run over a
    /// connection of their own to it: behind PgBouncer in transaction mode the session
    /// advisory lock and `SET statement_timeout` need one server for the whole run.
    pub async fn migrate(&self) -> StoreResult<()> {
        match (&self.migrate_target, self.pooler) {
            (Some(MigrateTarget(options)), _) => {
                let mut conn = sqlx::PgConnection::connect_with(options).await?;
                migrate_on(&mut conn).await?;
                conn.close().await?;
                Ok(())
            }
            (None, Pooler::Transaction) => Err(StoreError::MigrateNeedsSession),
            (None, Pooler::Off) => {
                let mut conn = self.pool.acquire().await?;
                migrate_on(&mut conn).await
            }
        }
    }

    /// The pool lease renewals use.
    pub(crate) fn lease_pool(&self) -> &DbPool {
        &self.lease_pool
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

/// Text PostgreSQL can store: `text` and `jsonb` refuse U+0000, which an error message quoting
/// a file's bytes may carry. Replaced rather than dropped, so the operator sees where it was.
pub(crate) fn storable(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}
