//! Store errors, and the one place that turns PostgreSQL errors into them.

/// What went wrong talking to PostgreSQL, in terms the caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the row (the constraint's name says which).
    #[error("conflict on {constraint}")]
    Conflict {
        /// Name of the violated constraint.
        constraint: String,
    },
    /// PostgreSQL could not be reached or the connection broke; retry later.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// The caller stopped waiting for an answer (a server that vanished without closing its
    /// connections never answers); retry on a fresh connection.
    #[error("no answer from the database within {0:?}")]
    TimedOut(std::time::Duration),
    /// A serialization failure or deadlock; the transaction can simply be retried.
    #[error("transaction conflict, retry: {0}")]
    Retry(#[source] sqlx::Error),
    /// PostgreSQL refused the data itself (a character it cannot store, a value a constraint
    /// forbids): sending the same data again will fail the same way.
    #[error("data refused by the database: {0}")]
    Rejected(#[source] sqlx::Error),
    /// A value read back did not make sense (a status outside the known set, …).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// Migrations could not be applied.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Migrations were asked of a pool behind PgBouncer in transaction mode without a direct
    /// connection to run them on (they need one session: an advisory lock, `SET`).
    #[error("migrations cannot run through PgBouncer in transaction mode: set a direct PostgreSQL URL for them (IRONCLAD_MIGRATE_DATABASE_URL)")]
    MigrateNeedsSession,
    /// Anything else PostgreSQL said; a bug or a broken invariant.
    #[error("database error: {0}")]
    Other(#[source] sqlx::Error),
}

impl StoreError {
    /// Whether the database refused the data itself, so that retrying cannot succeed.
    pub fn is_rejected_data(&self) -> bool {
        matches!(self, Self::Rejected(_))
    }

    /// Whether trying again later may succeed (connection trouble, serialization conflicts).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Unavailable(_) | Self::Retry(_) | Self::TimedOut(_)
        )
    }

    /// The violated constraint, when this is a conflict.
    pub fn conflict_constraint(&self) -> Option<&str> {
        match self {
            Self::Conflict { constraint } => Some(constraint),
            _ => None,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::Database(db) => match db.code().as_deref() {
                Some("23505") => Self::Conflict {
                    constraint: db.constraint().unwrap_or("unknown").to_owned(),
                },
                // serialization failure, deadlock, lock_timeout
                Some("40001") | Some("40P01") | Some("55P03") => Self::Retry(err),
                // data exceptions (22xxx: e.g. 22P05 a NUL in text/jsonb) and integrity
                // violations other than uniqueness (23xxx: check, not-null, foreign key)
                Some(code) if code.starts_with("22") || code.starts_with("23") => {
                    Self::Rejected(err)
                }
                // statement_timeout or a cancel: the server was slow, not the data wrong
                Some("57014") => Self::Unavailable(err),
                // admin shutdown or terminated backend, connection exceptions, insufficient
                // resources (too many connections, disk full), idle-in-transaction timeout
                Some(code)
                    if code.starts_with("57P")
                        || code.starts_with("08")
                        || code.starts_with("53")
                        || code == "25P03" =>
                {
                    Self::Unavailable(err)
                }
                _ => Self::Other(err),
            },
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => Self::Unavailable(err),
            sqlx::Error::Protocol(_) => Self::Unavailable(err),
            _ => Self::Other(err),
        }
    }
}

impl From<ironclad_core::UnknownVariant> for StoreError {
    fn from(err: ironclad_core::UnknownVariant) -> Self {
        Self::Corrupt(err.to_string())
    }
}

/// Result alias for store operations.
pub type StoreResult<T> = Result<T, StoreError>;
