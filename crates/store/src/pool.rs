//! The pool every statement goes through, and what changes behind PgBouncer in transaction
//! pooling mode.
//!
//! PgBouncer in transaction mode hands a server connection to a client for one transaction
//! only. Three things sqlx 0.8 does by default then break (measured against PgBouncer 1.18,
//! which has no `max_prepared_statements`; see `docs/pgbouncer.md`):
//! - the `options` startup parameter (our session timeouts) and `extra_float_digits` are
//!   refused at connect ("unsupported startup parameter");
//! - cached named statements (`sqlx_s_N`) live on whichever server prepared them, so the next
//!   transaction finds them missing, or another client's under the same name;
//! - a statement outside an explicit transaction is parsed (Parse, Sync) and then bound and
//!   executed (Bind, Execute, Sync) in two round trips; PgBouncer may put a different server
//!   behind the second one. `statement_cache_capacity(0)` does not help: sqlx 0.8 still
//!   names the statement and never closes it (sqlx issue #4328).
//!
//! [`Pooler::Transaction`] therefore runs every statement inside a transaction (one server
//! from Parse to Execute), starts each transaction by dropping whatever named statements the
//! server it landed on still holds (so the fresh `sqlx_s_N` names of this client cannot
//! collide), and sets the timeouts per transaction with `SET LOCAL` instead of per session.

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use sqlx::postgres::{PgQueryResult, PgRow, PgStatement, PgTypeInfo};
use sqlx::{Describe, Either, Execute, Executor, PgPool, Postgres, Transaction};
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;
use std::sync::Arc;

/// How the connections reach PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pooler {
    /// Directly (or through a pooler that keeps one server per client): session settings at
    /// connect, cached named prepared statements. Today's behaviour.
    #[default]
    Off,
    /// Through PgBouncer in `pool_mode = transaction` (any version; no prepared-statement
    /// support needed): no startup options, no statement cache, every statement in a
    /// transaction, timeouts per transaction. Migrations need a direct connection.
    Transaction,
}

impl Pooler {
    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Transaction => "transaction",
        }
    }
}

impl fmt::Display for Pooler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pooler setting that is neither `off` nor `transaction`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown PgBouncer mode {0:?} (use off or transaction)")]
pub struct UnknownPooler(String);

impl FromStr for Pooler {
    type Err = UnknownPooler;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "off" | "none" | "false" => Ok(Self::Off),
            "transaction" => Ok(Self::Transaction),
            _ => Err(UnknownPooler(s.to_owned())),
        }
    }
}

/// The statement that opens every transaction behind PgBouncer, sent as one simple query so
/// that it is one round trip on one server. `DEALLOCATE ALL` drops the statements other
/// clients left on this server; it counts as a query (it would forbid a later `SET TRANSACTION
/// ISOLATION LEVEL`), so it runs in the message's implicit transaction, which `COMMIT` ends
/// before the real `BEGIN` (its "no transaction in progress" warning silenced for that
/// implicit transaction only).
pub(crate) fn transaction_begin(
    statement_timeout_ms: &str,
    lock_timeout_ms: &str,
    idle_in_transaction_timeout_ms: &str,
) -> String {
    format!(
        "SET LOCAL client_min_messages = error; DEALLOCATE ALL; COMMIT; BEGIN; \
         SET LOCAL statement_timeout = {statement_timeout_ms}; \
         SET LOCAL lock_timeout = {lock_timeout_ms}; \
         SET LOCAL idle_in_transaction_session_timeout = {idle_in_transaction_timeout_ms}"
    )
}

/// A connection pool that is an sqlx executor: directly the pool's, or (behind PgBouncer in
/// transaction mode) each statement wrapped in its own transaction. It dereferences to the
/// underlying [`PgPool`]; a connection taken from that with `acquire()` bypasses the
/// wrapping and must not be used for more than one transaction behind PgBouncer.
#[derive(Clone)]
pub struct DbPool {
    pool: PgPool,
    /// `Some` behind PgBouncer: the statement every transaction starts with.
    begin: Option<Arc<str>>,
}

impl fmt::Debug for DbPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbPool")
            .field("pool", &self.pool)
            .field("pgbouncer_transaction_mode", &self.begin.is_some())
            .finish()
    }
}

impl DbPool {
    /// Statements go to the pool as they are.
    pub fn direct(pool: PgPool) -> Self {
        Self { pool, begin: None }
    }

    /// Every statement and transaction starts with `begin` (see [`transaction_begin`]).
    pub(crate) fn behind_pgbouncer(pool: PgPool, begin: String) -> Self {
        Self {
            pool,
            begin: Some(begin.into()),
        }
    }

    /// Whether statements are wrapped for PgBouncer's transaction mode.
    pub fn pgbouncer_transaction_mode(&self) -> bool {
        self.begin.is_some()
    }

    /// Starts a transaction (behind PgBouncer, with the per-transaction settings).
    pub async fn begin(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        match &self.begin {
            None => self.pool.begin().await,
            Some(begin) => self.pool.begin_with(begin.to_string()).await,
        }
    }
}

impl Deref for DbPool {
    type Target = PgPool;

    fn deref(&self) -> &PgPool {
        &self.pool
    }
}

/// Commits after success; after a failure rolls back and reports the statement's error (a
/// rollback that fails too means a broken connection, which the pool discards).
async fn finish<T>(
    tx: Transaction<'static, Postgres>,
    result: Result<T, sqlx::Error>,
) -> Result<T, sqlx::Error> {
    match result {
        Ok(value) => {
            tx.commit().await?;
            Ok(value)
        }
        Err(err) => {
            let _ = tx.rollback().await;
            Err(err)
        }
    }
}

impl<'p> Executor<'p> for &'_ DbPool {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<PgQueryResult, PgRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Postgres>,
    {
        if self.begin.is_none() {
            return (&self.pool).fetch_many(query);
        }
        let db = self.clone();
        // The results are gathered inside the transaction and handed out after COMMIT: a
        // caller must never see the effect of a statement that may still roll back.
        let gathered = async move {
            let mut tx = db.begin().await?;
            let result = (&mut *tx).fetch_many(query).try_collect::<Vec<_>>().await;
            finish(tx, result).await
        };
        futures::stream::once(gathered)
            .map_ok(|items| futures::stream::iter(items.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Postgres>,
    {
        if self.begin.is_none() {
            return (&self.pool).fetch_optional(query);
        }
        let db = self.clone();
        Box::pin(async move {
            let mut tx = db.begin().await?;
            let result = (&mut *tx).fetch_optional(query).await;
            finish(tx, result).await
        })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement<'q>, sqlx::Error>> {
        if self.begin.is_none() {
            return (&self.pool).prepare_with(sql, parameters);
        }
        let db = self.clone();
        Box::pin(async move {
            let mut tx = db.begin().await?;
            let result = (&mut *tx).prepare_with(sql, parameters).await;
            finish(tx, result).await
        })
    }

    fn describe<'e, 'q: 'e>(
        self,
        sql: &'q str,
    ) -> BoxFuture<'e, Result<Describe<Postgres>, sqlx::Error>> {
        if self.begin.is_none() {
            return (&self.pool).describe(sql);
        }
        let db = self.clone();
        Box::pin(async move {
            let mut tx = db.begin().await?;
            let result = (&mut *tx).describe(sql).await;
            finish(tx, result).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_parses_and_prints_back() {
        assert_eq!("off".parse::<Pooler>(), Ok(Pooler::Off));
        assert_eq!("Transaction".parse::<Pooler>(), Ok(Pooler::Transaction));
        assert!("session".parse::<Pooler>().is_err());
        for p in [Pooler::Off, Pooler::Transaction] {
            assert_eq!(p.to_string().parse::<Pooler>(), Ok(p));
        }
    }
}
