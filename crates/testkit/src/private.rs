//! Private PostgreSQL and Redis instances for tests that stop, restart or flush them.
//!
//! PostgreSQL refuses to run as root, so when we are root the cluster is created and run as
//! the `postgres` user, in a directory that user can reach.

use crate::free_port;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false)
}

fn wait_until(
    what: &str,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() > timeout {
            anyhow::bail!("{what} not ready after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// A Redis server of our own, without persistence (like production's).
pub struct PrivateRedis {
    /// Port it listens on.
    pub port: u16,
    dir: tempfile::TempDir,
}

impl PrivateRedis {
    /// Starts one on a free port.
    pub fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let me = Self {
            port: free_port()?,
            dir,
        };
        me.launch()?;
        Ok(me)
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn pidfile(&self) -> PathBuf {
        self.dir.path().join("redis.pid")
    }

    fn launch(&self) -> anyhow::Result<()> {
        let status = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--daemonize",
                "yes",
            ])
            .arg("--pidfile")
            .arg(self.pidfile())
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--save", "", "--appendonly", "no", "--logfile", "redis.log"])
            .stdout(Stdio::null())
            .status()
            .context("starting redis-server")?;
        anyhow::ensure!(status.success(), "redis-server failed to start");
        wait_until("redis", Duration::from_secs(10), || {
            self.cli(&["ping"])
                .map(|o| o.contains("PONG"))
                .unwrap_or(false)
        })
    }

    /// Runs a redis-cli command against it and returns stdout.
    pub fn cli(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Forgets everything, as a FLUSHALL by an operator would.
    pub fn flushall(&self) -> anyhow::Result<()> {
        self.cli(&["FLUSHALL"])?;
        Ok(())
    }

    /// Stops the server abruptly (SIGKILL).
    pub fn kill(&self) -> anyhow::Result<()> {
        if let Ok(pid) = std::fs::read_to_string(self.pidfile()) {
            let _ = Command::new("kill").args(["-9", pid.trim()]).status();
        }
        wait_until("redis to stop", Duration::from_secs(10), || {
            self.cli(&["ping"])
                .map(|o| !o.contains("PONG"))
                .unwrap_or(true)
        })?;
        let _ = std::fs::remove_file(self.pidfile());
        Ok(())
    }

    /// Starts it again on the same port, empty (no persistence).
    pub fn restart(&self) -> anyhow::Result<()> {
        self.launch()
    }

    /// A shell command that stops it, for a process's interrupt handler (which cannot run
    /// destructors).
    pub fn kill_command(&self) -> String {
        format!("kill -9 $(cat {}) 2>/dev/null", self.pidfile().display())
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.pidfile()) {
            let _ = Command::new("kill").args(["-9", pid.trim()]).status();
        }
    }
}

/// A PostgreSQL cluster of our own, in a temp directory.
pub struct PrivatePostgres {
    /// Port it listens on.
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
}

fn pg_bin() -> anyhow::Result<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(root)
        .context("PostgreSQL server binaries not found under /usr/lib/postgresql")?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop().context("no pg_ctl found")
}

impl PrivatePostgres {
    /// Creates and starts a cluster on a free port (trust auth, fsync off: tests need speed,
    /// not durability of the test cluster itself).
    pub fn start() -> anyhow::Result<Self> {
        let as_postgres = is_root();
        let dir = PathBuf::from(format!(
            "/tmp/ironclad-pg-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir)?;
        let me = Self {
            port: free_port()?,
            dir,
            bin: pg_bin()?,
            as_postgres,
        };
        if as_postgres {
            let status = Command::new("chown")
                .arg("postgres:postgres")
                .arg(&me.dir)
                .status()?;
            anyhow::ensure!(status.success(), "chown of the cluster directory failed");
        }
        me.run(&format!(
            "{}/initdb -D {}/data -U postgres --auth=trust -E UTF8 --no-sync >{}/initdb.log 2>&1",
            me.bin.display(),
            me.dir.display(),
            me.dir.display()
        ))?;
        me.start_server()?;
        Ok(me)
    }

    fn run(&self, script: &str) -> anyhow::Result<()> {
        let status = if self.as_postgres {
            Command::new("su")
                .args(["postgres", "-s", "/bin/sh", "-c", script])
                .status()?
        } else {
            Command::new("sh").args(["-c", script]).status()?
        };
        anyhow::ensure!(status.success(), "command failed: {script}");
        Ok(())
    }

    /// The server URL (database `postgres`).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again).
    pub fn start_server(&self) -> anyhow::Result<()> {
        self.run(&format!(
            "{}/pg_ctl -D {d}/data -l {d}/server.log -w -t 30 -o \"-p {} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200\" start >/dev/null",
            self.bin.display(),
            self.port,
            d = self.dir.display()
        ))
    }

    /// A shell command that stops it and removes its directory, for a process's interrupt
    /// handler (which cannot run destructors).
    pub fn kill_command(&self) -> String {
        let stop = format!(
            "{}/pg_ctl -D {}/data -m immediate -w stop >/dev/null 2>&1",
            self.bin.display(),
            self.dir.display()
        );
        let stop = if self.as_postgres {
            format!("su postgres -s /bin/sh -c '{stop}'")
        } else {
            stop
        };
        format!("{stop}; rm -rf {}", self.dir.display())
    }

    /// Stops the server immediately (in-flight transactions are lost, as in a crash).
    pub fn stop(&self) -> anyhow::Result<()> {
        self.run(&format!(
            "{}/pg_ctl -D {}/data -m immediate -w stop >/dev/null",
            self.bin.display(),
            self.dir.display()
        ))
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
