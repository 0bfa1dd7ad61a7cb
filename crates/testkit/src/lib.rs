//! Test support for Ironclad: real PostgreSQL and Redis, isolated per test.
//!
//! [`TestDb`] creates a fresh database per test on the shared server (`DATABASE_URL`, default
//! local trust auth) and migrates it; Redis isolation is a key prefix per test. Tests that
//! stop or flush a service start their own [`private::PrivateRedis`] or
//! [`private::PrivatePostgres`] on a free port, never touching the shared ones.

pub mod child;
pub mod harness;
pub mod netns;
pub mod pgbouncer;
pub mod private;
pub mod s3;

use ironclad_store::Store;
use sqlx::postgres::PgPoolOptions;
use sqlx::Executor;
use std::future::Future;
use std::time::{Duration, Instant};

/// Server URL tests use (any database on it; tests create their own).
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// Redis URL tests use.
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_owned())
}

/// Replaces the database name in a PostgreSQL URL.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    // postgres://user@host:port/dbname — the path after the authority is the database.
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let authority_end = base[scheme_end..]
        .find('/')
        .map(|i| i + scheme_end)
        .unwrap_or(base.len());
    let mut out = format!("{}/{}", &base[..authority_end], db);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// A freshly created and migrated database, with the status transition guard
/// (`ironclad_store::transition_guard`), dropped by [`TestDb::drop_database`].
pub struct TestDb {
    /// URL of the new database.
    pub url: String,
    /// Name of the new database.
    pub name: String,
    /// A store connected to it.
    pub store: Store,
    server_url: String,
}

impl TestDb {
    /// Creates `ironclad_test_<uuid>` on the shared server and migrates it.
    pub async fn new() -> anyhow::Result<Self> {
        Self::on_server(&database_url()).await
    }

    /// Creates a migrated database on the given server.
    pub async fn on_server(server_url: &str) -> anyhow::Result<Self> {
        let name = format!("ironclad_test_{}", uuid::Uuid::new_v4().simple());
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(&with_database(server_url, "postgres"))
            .await?;
        admin
            .execute(format!("CREATE DATABASE {name}").as_str())
            .await?;
        admin.close().await;
        let url = with_database(server_url, &name);
        let store = Store::connect(&url, 16, Duration::from_secs(10)).await?;
        store.migrate().await?;
        // Every test database refuses a status transition outside ironclad-core's tables.
        store.install_transition_guard().await?;
        Ok(Self {
            url,
            name,
            store,
            server_url: server_url.to_owned(),
        })
    }

    /// Drops the database (best effort; leftovers are harmless, named `ironclad_test_*`).
    pub async fn drop_database(self) {
        self.store.pool().close().await;
        if let Ok(admin) = PgPoolOptions::new()
            .max_connections(1)
            .connect(&with_database(&self.server_url, "postgres"))
            .await
        {
            let _ = admin
                .execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str())
                .await;
            admin.close().await;
        }
    }
}

/// A unique Redis key prefix for one test.
pub fn redis_prefix() -> String {
    format!("t-{}", uuid::Uuid::new_v4().simple())
}

/// Polls `check` until it returns `Some`, or fails after `timeout` with `what` in the message.
/// Tests wait on durable state (rows in PostgreSQL), never on log lines.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if start.elapsed() > timeout {
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A free TCP port on loopback (racy by nature, good enough for tests).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_is_replaced_in_urls() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/x", "y"),
            "postgres://postgres@127.0.0.1:5432/y"
        );
        assert_eq!(
            with_database("postgres://u:p@h/x?sslmode=disable", "y"),
            "postgres://u:p@h/y?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h:1", "y"), "postgres://u@h:1/y");
    }
}
