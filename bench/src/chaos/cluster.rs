//! The deployment a chaos run breaks: a private PostgreSQL cluster and Redis on free ports, a
//! shared blob directory, and every role as its own `ironclad` process, each restartable with
//! fault points armed.

use crate::server::ChildEnv;
use anyhow::Context;
use ironclad_testkit::private::{PrivatePostgres, PrivateRedis};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// One role process (`ironclad worker`, `serve`, …), restarted under the same name.
pub struct RoleProc {
    /// `worker-1`, `api`, …
    pub name: String,
    /// The subcommand it runs.
    pub role: &'static str,
    child: Option<tokio::process::Child>,
    /// Pid of the current process (0 when none runs).
    pub pid: u32,
    starts: usize,
}

impl RoleProc {
    fn new(name: &str, role: &'static str) -> Self {
        Self {
            name: name.to_owned(),
            role,
            child: None,
            pid: 0,
            starts: 0,
        }
    }

    /// Whether its current process still runs.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Waits up to `timeout` for the process to end by itself; its exit status.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let status = tokio::time::timeout(timeout, child.wait())
            .await
            .ok()?
            .ok()?;
        self.forget();
        Some(status)
    }

    /// kill -9 (and reap).
    pub async fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
        self.forget();
    }

    fn forget(&mut self) {
        let pid = self.pid;
        crate::server::live().retain(|p| *p != pid);
        self.child = None;
        self.pid = 0;
    }
}

/// Whether a status is the `abort()` an armed fault point ends a process with.
pub fn aborted(status: &ExitStatus) -> bool {
    status.signal() == Some(6)
}

/// Everything one chaos phase runs on.
pub struct Cluster {
    pub pg: PrivatePostgres,
    pub redis: PrivateRedis,
    /// URL of the phase's database on `pg`.
    pub db_url: String,
    pub bin: PathBuf,
    pub env: ChildEnv,
    pub api_port: u16,
    pub roles: Vec<RoleProc>,
    pub logs: PathBuf,
}

impl Cluster {
    /// Base URL of the API.
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.api_port)
    }

    /// Runs an operator command to completion (migrate, tenant, apikey, verify …); returns
    /// (exit status, stdout).
    pub async fn cli(&self, args: &[&str]) -> anyhow::Result<(ExitStatus, String)> {
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.args(args).stdin(Stdio::null()).stderr(Stdio::piped());
        self.env.apply(&mut cmd);
        let out = cmd
            .output()
            .await
            .with_context(|| format!("running ironclad {}", args.join(" ")))?;
        if !out.status.success() {
            eprintln!(
                "chaos: ironclad {} → {}: {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok((
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ))
    }

    /// Starts (or restarts) role `index` with `faults` armed (`IRONCLAD_FAULTS`), logging to
    /// its own file per start.
    pub async fn start_role(&mut self, index: usize, faults: Option<&str>) -> anyhow::Result<()> {
        let role = &mut self.roles[index];
        role.kill9().await;
        role.starts += 1;
        let log = self
            .logs
            .join(format!("{}-{:02}.log", role.name, role.starts));
        let file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.arg(role.role)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true);
        let mut env = self.env.clone();
        if let Some(spec) = faults {
            env = env.with("IRONCLAD_FAULTS", spec);
        }
        env.apply(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting ironclad {}", role.role))?;
        role.pid = child.id().unwrap_or(0);
        crate::server::live().push(role.pid);
        role.child = Some(child);
        Ok(())
    }

    /// Indexes of the roles running `role`.
    pub fn of_role(&self, role: &str) -> Vec<usize> {
        (0..self.roles.len())
            .filter(|&i| self.roles[i].role == role)
            .collect()
    }

    /// Waits until the API answers `/healthz` (after a start or restart).
    pub async fn wait_api(&self, timeout: Duration) -> anyhow::Result<()> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()?;
        let started = Instant::now();
        loop {
            if let Ok(r) = client
                .get(format!("{}/healthz", self.api_url()))
                .send()
                .await
            {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            anyhow::ensure!(
                started.elapsed() < timeout,
                "the API did not answer /healthz within {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Restarts every role that is not running (one died unexpectedly: its death is logged
    /// and counted, never hidden). Returns the names restarted.
    pub async fn revive(&mut self) -> anyhow::Result<Vec<String>> {
        let mut revived = Vec::new();
        for i in 0..self.roles.len() {
            if !self.roles[i].is_running() {
                revived.push(self.roles[i].name.clone());
                self.start_role(i, None).await?;
            }
        }
        Ok(revived)
    }

    /// Stops every role (kill -9: the run is over, the database holds the truth).
    pub async fn stop_all(&mut self) {
        for role in &mut self.roles {
            role.kill9().await;
        }
    }
}

/// The roles of a chaos deployment: 2 workers, 2 dispatchers, 1 reconciler, 1 API.
pub fn standard_roles() -> Vec<RoleProc> {
    vec![
        RoleProc::new("api", "serve"),
        RoleProc::new("dispatcher-1", "dispatcher"),
        RoleProc::new("dispatcher-2", "dispatcher"),
        RoleProc::new("worker-1", "worker"),
        RoleProc::new("worker-2", "worker"),
        RoleProc::new("reconciler", "reconciler"),
    ]
}

/// The `ironclad` binary with fault points: `cargo build [--release] -p ironclad --features
/// fault-injection --target-dir <target>/chaos`. Its own target directory, whatever the
/// profile: a build of the product in the shared one would overwrite a binary there (cargo
/// copies every build's binary to the same path), and the product's binaries never carry fault
/// points.
pub fn build_faulty_binary(release: bool, skip_build: bool) -> anyhow::Result<PathBuf> {
    let root = crate::workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("chaos");
    let profile = if release { "release" } else { "debug" };
    if !skip_build {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args([
            "build",
            "-p",
            "ironclad",
            "--bin",
            "ironclad",
            "--features",
            "fault-injection",
        ])
        .arg("--target-dir")
        .arg(&target);
        if release {
            cmd.arg("--release");
        }
        eprintln!("chaos: {cmd:?} (a no-op when up to date)…");
        let status = cmd
            .current_dir(&root)
            .stdout(Stdio::null())
            .status()
            .context("running cargo build for the fault-injection binary")?;
        anyhow::ensure!(
            status.success(),
            "building the fault-injection binary failed"
        );
    }
    let bin = target.join(profile).join("ironclad");
    anyhow::ensure!(bin.exists(), "{} is missing", bin.display());
    Ok(bin)
}

/// A fresh database `name` on the private cluster (dropped first if a previous phase left it).
pub async fn fresh_database(pg: &PrivatePostgres, name: &str) -> anyhow::Result<String> {
    let admin = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&pg.url())
        .await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&admin)
        .await?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&admin)
        .await?;
    admin.close().await;
    Ok(ironclad_testkit::with_database(&pg.url(), name))
}
