//! A private PgBouncer in front of a PostgreSQL server, for tests that prove Ironclad works
//! behind one (`pool_mode = transaction`, few server connections so clients really share
//! them).
//!
//! PgBouncer refuses to run as root, so when we are root it drops to the `postgres` user
//! (`-u postgres`), in a directory that user owns.

use crate::free_port;
use anyhow::Context;
use sqlx::postgres::PgConnectOptions;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// How the private PgBouncer pools.
#[derive(Debug, Clone)]
pub struct PgBouncerSettings {
    /// `pool_mode`: `transaction`, `session` or `statement`.
    pub pool_mode: String,
    /// `default_pool_size`: server connections per database and user.
    pub default_pool_size: u32,
    /// `max_client_conn`: client connections accepted in all.
    pub max_client_conn: u32,
}

impl Default for PgBouncerSettings {
    fn default() -> Self {
        Self {
            pool_mode: "transaction".into(),
            default_pool_size: 2,
            max_client_conn: 50,
        }
    }
}

/// A running PgBouncer of our own; stopped (and its directory removed) on drop.
pub struct PgBouncer {
    /// Port it listens on (loopback).
    pub port: u16,
    dir: PathBuf,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false)
}

impl PgBouncer {
    /// Starts one on a free port in front of the server of `upstream_url` (any database on it;
    /// every database name is passed through), trust authentication for user `postgres`, which
    /// is also its admin (the `pgbouncer` console answers `SHOW SERVERS`, …).
    pub fn start(upstream_url: &str, settings: &PgBouncerSettings) -> anyhow::Result<Self> {
        let upstream = PgConnectOptions::from_str(upstream_url)
            .with_context(|| format!("parsing {upstream_url}"))?;
        let which = Command::new("sh")
            .args(["-c", "command -v pgbouncer"])
            .output()?;
        anyhow::ensure!(
            which.status.success(),
            "pgbouncer is not installed (apt-get install -y pgbouncer)"
        );
        let dir = PathBuf::from(format!(
            "/tmp/ironclad-pgbouncer-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir)?;
        let me = Self {
            port: free_port()?,
            dir,
        };
        let d = me.dir.display();
        std::fs::write(me.dir.join("users.txt"), "\"postgres\" \"\"\n")?;
        std::fs::write(
            me.dir.join("pgbouncer.ini"),
            format!(
                "[databases]\n* = host={host} port={port}\n\n[pgbouncer]\n\
                 listen_addr = 127.0.0.1\nlisten_port = {listen}\nunix_socket_dir =\n\
                 auth_type = trust\nauth_file = {d}/users.txt\nadmin_users = postgres\n\
                 pool_mode = {mode}\ndefault_pool_size = {size}\nmin_pool_size = 0\n\
                 reserve_pool_size = 0\nmax_client_conn = {clients}\n\
                 logfile = {d}/pgbouncer.log\npidfile = {d}/pgbouncer.pid\n",
                host = upstream.get_host(),
                port = upstream.get_port(),
                listen = me.port,
                mode = settings.pool_mode,
                size = settings.default_pool_size,
                clients = settings.max_client_conn,
            ),
        )?;
        let mut cmd = Command::new("pgbouncer");
        cmd.arg("-d");
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&me.dir)
                .status()?;
            anyhow::ensure!(status.success(), "chown of the PgBouncer directory failed");
            cmd.args(["-u", "postgres"]);
        }
        let out = cmd
            .arg(me.dir.join("pgbouncer.ini"))
            .stdin(Stdio::null())
            .output()
            .context("starting pgbouncer")?;
        anyhow::ensure!(
            out.status.success(),
            "pgbouncer did not start: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            me.log()
        );
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", me.port)).is_err() {
            if start.elapsed() > Duration::from_secs(10) {
                anyhow::bail!("pgbouncer not listening after 10 s:\n{}", me.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(me)
    }

    /// URL of `database` through this PgBouncer (user `postgres`).
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Runs a command on the admin console (`SHOW SERVERS`, `SHOW POOLS`, …) and returns its
    /// rows, `|`-separated.
    pub fn admin(&self, command: &str) -> anyhow::Result<String> {
        let out = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-p"])
            .arg(self.port.to_string())
            .args(["-At", "-d", "pgbouncer", "-c", command])
            .output()
            .context("running psql against the PgBouncer console")?;
        anyhow::ensure!(
            out.status.success(),
            "{command} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Rows of `SHOW <what>` (`SERVERS` or `CLIENTS`) for `database`.
    pub fn connections_to(&self, what: &str, database: &str) -> anyhow::Result<usize> {
        // Columns: type|user|database|state|…; the database is the third.
        Ok(self
            .admin(&format!("SHOW {what}"))?
            .lines()
            .filter(|line| line.split('|').nth(2) == Some(database))
            .count())
    }

    /// Its log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }

    fn pid(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.join("pgbouncer.pid"))
            .ok()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            // SIGINT: PgBouncer's immediate shutdown.
            let _ = Command::new("kill").args(["-INT", &pid]).status();
            let start = Instant::now();
            while Command::new("kill")
                .args(["-0", &pid])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
                && start.elapsed() < Duration::from_secs(5)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
