//! The `ironclad` binary under test: built if needed, its admin commands, and a running role
//! process (started, waited for, stopped by its own pid).

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Environment of every child: the bench's own settings, never whatever `IRONCLAD_*` the shell
/// running the bench happens to export (`--server-env` passes extra ones on purpose).
#[derive(Debug, Clone)]
pub struct ChildEnv {
    pub vars: Vec<(String, String)>,
}

impl ChildEnv {
    pub(crate) fn apply(&self, cmd: &mut tokio::process::Command) {
        for (k, _) in std::env::vars() {
            if k.starts_with("IRONCLAD_") || k == "RUST_LOG" {
                cmd.env_remove(&k);
            }
        }
        for (k, v) in &self.vars {
            cmd.env(k, v);
        }
    }

    pub fn with(&self, key: &str, value: impl Into<String>) -> Self {
        let mut vars: Vec<_> = self
            .vars
            .iter()
            .filter(|(k, _)| k != key)
            .cloned()
            .collect();
        vars.push((key.to_owned(), value.into()));
        Self { vars }
    }
}

/// The build profile this bench was compiled in: a release bench measures a release server, and
/// CI's smoke runs (debug, to spare a second full build) drive the debug one.
pub const PROFILE: &str = if cfg!(debug_assertions) {
    "debug"
} else {
    "release"
};

/// `target/<profile>/ironclad`, built (or brought up to date) with cargo unless `skip_build`.
pub fn ensure_binary(explicit: Option<&Path>, skip_build: bool) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        anyhow::ensure!(p.exists(), "--ironclad-bin {} does not exist", p.display());
        return Ok(p.to_owned());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target"));
    let bin = target.join(PROFILE).join("ironclad");
    let mut build = vec!["build", "--bin", "ironclad"];
    if PROFILE == "release" {
        build.push("--release");
    }
    let build = build.join(" ");
    if !skip_build {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        eprintln!("bench: cargo {build} (a no-op when it is up to date)…");
        let status = std::process::Command::new(cargo)
            .args(build.split(' '))
            .current_dir(crate::workspace_root())
            .stdout(Stdio::null())
            .status()
            .context("running cargo build for the ironclad binary")?;
        anyhow::ensure!(
            status.success(),
            "cargo {build} failed (is the workspace compiling?)"
        );
    }
    anyhow::ensure!(
        bin.exists(),
        "{} is missing: run `cargo {build}`",
        bin.display()
    );
    Ok(bin)
}

/// Runs an operator command (`tenant create …`, `apikey create …`) and returns its stdout.
pub async fn admin(bin: &Path, env: &ChildEnv, args: &[&str]) -> anyhow::Result<String> {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(args).stdin(Stdio::null());
    env.apply(&mut cmd);
    let out = cmd
        .output()
        .await
        .with_context(|| format!("running ironclad {}", args.join(" ")))?;
    anyhow::ensure!(
        out.status.success(),
        "ironclad {} failed ({}): {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Creates a tenant and an operator key through the binary; returns the raw key.
pub async fn tenant_and_key(bin: &Path, env: &ChildEnv, tenant: &str) -> anyhow::Result<String> {
    admin(bin, env, &["tenant", "create", tenant]).await?;
    let out = admin(
        bin,
        env,
        &["apikey", "create", "--tenant", tenant, "--role", "operator"],
    )
    .await?;
    let key = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .to_owned();
    anyhow::ensure!(!key.is_empty(), "`ironclad apikey create` printed no key");
    Ok(key)
}

/// Pids of the role processes alive now, for the interrupt handler.
static LIVE: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Scratch directories of this run, removed by the interrupt handler too.
static SCRATCH: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Shell commands the interrupt handler runs (stopping private servers).
static CLEANUPS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Remembers a shell command for the interrupt handler.
pub fn register_cleanup(command: String) {
    CLEANUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(command);
}

/// Remembers a scratch directory for the interrupt handler.
pub fn register_scratch(path: &Path) {
    SCRATCH
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(path.to_owned());
}

pub(crate) fn live() -> std::sync::MutexGuard<'static, Vec<u32>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// On SIGINT/SIGTERM, stops the role processes this run started (by pid) before exiting, so an
/// interrupted bench leaves no server behind. (Its databases, named `ironclad_test_*`, and
/// streams, `bench-*`, are harmless leftovers.)
pub fn stop_children_on_signal() {
    tokio::spawn(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        let pids: Vec<u32> = live().clone();
        for pid in &pids {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        // Give them a moment to exit before their blob directories go.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        for dir in SCRATCH.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = std::fs::remove_dir_all(dir);
        }
        for command in CLEANUPS.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = std::process::Command::new("sh")
                .args(["-c", command])
                .status();
        }
        eprintln!(
            "bench: interrupted; stopped {} ironclad process(es)",
            pids.len()
        );
        std::process::exit(130);
    });
}

/// One long-running `ironclad <role>` process. Killed (SIGKILL) if dropped without `stop`.
pub struct Server {
    child: tokio::process::Child,
    pub pid: u32,
    pub base_url: String,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        // kill_on_drop sends SIGKILL; forget the pid either way.
        let pid = self.pid;
        live().retain(|p| *p != pid);
    }
}

impl Server {
    /// Starts `ironclad <role>` listening on a free loopback port, logging to `log`.
    pub async fn start(
        bin: &Path,
        role: &str,
        env: &ChildEnv,
        log: PathBuf,
    ) -> anyhow::Result<Self> {
        let port = ironclad_testkit::free_port()?;
        let listen = format!("127.0.0.1:{port}");
        let file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = tokio::process::Command::new(bin);
        cmd.arg(role)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true);
        env.with("IRONCLAD_LISTEN", &listen).apply(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {} {role}", bin.display()))?;
        let pid = child.id().context("child has no pid")?;
        live().push(pid);
        let mut me = Self {
            child,
            pid,
            base_url: format!("http://{listen}"),
            log,
        };
        me.wait_ready(Duration::from_secs(60)).await?;
        Ok(me)
    }

    /// Polls `/healthz` until it answers 200, failing early if the process exits.
    async fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()?;
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                anyhow::bail!(
                    "ironclad exited during startup ({status}); log tail:\n{}",
                    self.log_tail(20)
                );
            }
            if let Ok(r) = client
                .get(format!("{}/healthz", self.base_url))
                .send()
                .await
            {
                if r.status().is_success() {
                    return Ok(());
                }
            }
            if start.elapsed() > timeout {
                anyhow::bail!(
                    "ironclad not healthy after {timeout:?}; log tail:\n{}",
                    self.log_tail(20)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Log lines at WARN or ERROR level (JSON logs carry `"level":"WARN"`).
    pub fn warnings(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"level\":\"WARN\"") || l.contains("\"level\":\"ERROR\""))
            .map(str::to_owned)
            .collect()
    }

    /// SIGTERM to its pid, then waits for a graceful exit (SIGKILL after 30 s).
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let pid = self.pid;
        let result = self.stop_inner().await;
        live().retain(|p| *p != pid);
        result
    }

    async fn stop_inner(&mut self) -> anyhow::Result<()> {
        if self.child.try_wait()?.is_some() {
            anyhow::bail!(
                "ironclad had already exited; log tail:\n{}",
                self.log_tail(20)
            );
        }
        let _ = tokio::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .await;
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                anyhow::ensure!(
                    status.success(),
                    "ironclad exited with {status}; log tail:\n{}",
                    self.log_tail(20)
                );
            }
            Err(_) => {
                self.child.kill().await?;
                anyhow::bail!("ironclad did not stop within 30 s of SIGTERM (killed)");
            }
        }
        Ok(())
    }
}
