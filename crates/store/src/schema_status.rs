//! How the database's schema compares with the migrations this binary carries, for
//! `ironclad doctor` (read-only: it never applies anything).

use crate::{Store, StoreResult, MIGRATOR};

/// The database's migrations against this binary's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaStatus {
    /// Migrations of this binary the database has not applied (`version description`).
    pub pending: Vec<String>,
    /// Versions the database applied that this binary does not know: it is older than the
    /// schema (a rollback of the binary without one of the database).
    pub unknown: Vec<i64>,
    /// Versions whose applied text differs from this binary's (an edited migration).
    pub changed: Vec<i64>,
    /// Versions recorded as failed part-way.
    pub failed: Vec<i64>,
    /// Versions applied and matching.
    pub applied: usize,
}

impl SchemaStatus {
    /// Whether the schema is exactly what this binary expects.
    pub fn is_current(&self) -> bool {
        self.pending.is_empty()
            && self.unknown.is_empty()
            && self.changed.is_empty()
            && self.failed.is_empty()
    }
}

impl Store {
    /// Compares `_sqlx_migrations` with the migrations compiled into this binary.
    pub async fn schema_status(&self) -> StoreResult<SchemaStatus> {
        let table: Option<String> =
            sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
                .fetch_one(self.pool())
                .await?;
        let rows: Vec<(i64, Vec<u8>, bool)> = match table {
            None => Vec::new(),
            Some(_) => {
                sqlx::query_as("SELECT version, checksum, success FROM _sqlx_migrations")
                    .fetch_all(self.pool())
                    .await?
            }
        };
        let mut status = SchemaStatus::default();
        let ours = MIGRATOR
            .iter()
            .filter(|m| !m.migration_type.is_down_migration());
        for migration in ours.clone() {
            match rows.iter().find(|(v, _, _)| *v == migration.version) {
                None => status
                    .pending
                    .push(format!("{} {}", migration.version, migration.description)),
                Some((v, _, false)) => status.failed.push(*v),
                Some((v, checksum, true)) if checksum[..] != migration.checksum[..] => {
                    status.changed.push(*v)
                }
                Some(_) => status.applied += 1,
            }
        }
        for (version, _, _) in &rows {
            if !ours.clone().any(|m| m.version == *version) {
                status.unknown.push(*version);
            }
        }
        Ok(status)
    }

    /// PostgreSQL's clock, for comparing with this host's.
    pub async fn database_now(&self) -> StoreResult<chrono::DateTime<chrono::Utc>> {
        Ok(sqlx::query_scalar("SELECT now()")
            .fetch_one(self.pool())
            .await?)
    }
}
