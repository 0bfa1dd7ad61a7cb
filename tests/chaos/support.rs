//! What every scenario shares: a [`Rig`] (one test's own database, stream prefix, blob and log
//! directories), real `ironclad` processes behind a kill-on-drop guard ([`Proc`]), and the
//! durable-state checks each scenario ends with.
//!
//! Everything here waits on PostgreSQL (and, for transport facts, Redis) — never on a process's
//! output. Process output goes to one log file per process, printed (last lines only) when a
//! test fails, and the log directory is kept on failure so the whole story can be read.

use anyhow::{bail, ensure, Context, Result};
use ironclad_blobs::BlobStore;
use ironclad_core::{CaseId, TenantId};
use ironclad_queue::{PendingSummary, Queue, StreamConfig};
use ironclad_testkit::child::die_with_parent;
use ironclad_testkit::{wait_for, TestDb};
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The binary under test, built by Cargo for this test target.
pub const BIN: &str = env!("CARGO_BIN_EXE_ironclad");

/// Signal number of SIGABRT, what `IRONCLAD_CRASH_AT` ends a process with.
pub const SIGABRT: i32 = 6;

/// Role timings for chaos runs, applied to every process a [`Rig`] starts.
///
/// Short enough that a kill -9 is recovered in seconds, long enough not to flake on a loaded
/// 2-core machine: the lease is renewed every second (a third of it), so a renewal must be
/// more than 2 s late before a live job is taken away; the message idle threshold (2 s) must
/// exceed the renew interval (the binary refuses to start otherwise).
pub const FAST: &[(&str, &str)] = &[
    ("IRONCLAD_LEASE", "3s"),
    ("IRONCLAD_CLAIM_IDLE", "2s"),
    ("IRONCLAD_RECLAIM_EVERY", "1s"),
    ("IRONCLAD_RECONCILE_EVERY", "1s"),
    ("IRONCLAD_REEMIT_AFTER", "3s"),
    ("IRONCLAD_OUTBOX_LOCK_TIMEOUT", "3s"),
    ("IRONCLAD_RETRY_DELAYS", "500ms,1s,2s"),
    ("IRONCLAD_MAX_ATTEMPTS", "5"),
    ("IRONCLAD_LOG_FORMAT", "text"),
    ("RUST_LOG", "info"),
];

/// Generous upper bound for "the pipeline settles" on a loaded CI machine; scenarios normally
/// settle in a fraction of it.
pub const SETTLE: Duration = Duration::from_secs(60);

// ── processes ────────────────────────────────────────────────────────────────────────────

/// A running `ironclad` process. Dropping it kill -9s and reaps the process, whatever path the
/// test leaves by (assertion failure, `?`, panic), so no role outlives its test and keeps
/// working on the next test's stream.
pub struct Proc {
    /// Name in messages and of the log file.
    pub label: String,
    child: Child,
    log: PathBuf,
    exited: Option<ExitStatus>,
}

impl Proc {
    /// Process id (the worker's consumer name, and so its jobs' `lease_owner`, ends in `-<pid>`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status if the process has ended (reaping it), `None` while it runs.
    pub fn try_status(&mut self) -> Result<Option<ExitStatus>> {
        if self.exited.is_none() {
            self.exited = self
                .child
                .try_wait()
                .with_context(|| format!("polling {}", self.label))?;
        }
        Ok(self.exited)
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.try_status(), Ok(None))
    }

    /// kill -9, then reap. Returns the exit status (a signal, unless it had already ended).
    pub fn kill9(&mut self) -> Result<ExitStatus> {
        if let Some(status) = self.try_status()? {
            return Ok(status);
        }
        // std's `kill` is SIGKILL on Unix.
        self.child
            .kill()
            .with_context(|| format!("kill -9 {}", self.label))?;
        let status = self.child.wait()?;
        self.exited = Some(status);
        Ok(status)
    }

    /// Sends a signal by name (`TERM`, `INT`, …) to the process, if it is still running.
    pub fn signal(&mut self, name: &str) -> Result<()> {
        ensure!(
            self.try_status()?.is_none(),
            "{} already exited; not signalling a reaped pid",
            self.label
        );
        let ok = Command::new("kill")
            .args(["-s", name, &self.pid().to_string()])
            .status()?
            .success();
        ensure!(ok, "kill -s {name} {} failed", self.pid());
        Ok(())
    }

    /// Waits for the process to end on its own.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.try_status()? {
                return Ok(status);
            }
            if start.elapsed() > timeout {
                bail!(
                    "{} (pid {}) still running after {timeout:?}\n{}",
                    self.label,
                    self.pid(),
                    self.log_tail(30)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Asserts the process ended by `abort()` (SIGABRT), as an armed crash point does.
    pub async fn expect_abort(&mut self, timeout: Duration) -> Result<()> {
        let status = self.wait_exit(timeout).await?;
        ensure!(
            status.signal() == Some(SIGABRT),
            "{} was expected to abort at its crash point, but ended with {status}\n{}",
            self.label,
            self.log_tail(30)
        );
        Ok(())
    }

    /// The last `lines` lines of the process's output.
    pub fn log_tail(&self, lines: usize) -> String {
        format!(
            "{} (pid {}): {}",
            self.label,
            self.child.id(),
            tail(&self.log, lines)
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.try_status(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

// ── one test's world ─────────────────────────────────────────────────────────────────────

/// One test's isolated world: a fresh migrated database, a stream prefix, a blob directory
/// every process of the test shares, a log directory, and a tenant to own committed cases.
pub struct Rig {
    /// Scenario name (messages, tenant).
    pub name: &'static str,
    /// The test's database.
    pub db: TestDb,
    /// Redis every process of the test uses.
    pub redis_url: String,
    /// Prefix of the stream, dead-letter stream and group names.
    pub prefix: String,
    /// The blob store the processes read (same directory as `IRONCLAD_BLOB_DIR`).
    pub blobs: BlobStore,
    /// Tenant owning committed cases (API keys are created for it too).
    pub tenant: TenantId,
    blob_dir: PathBuf,
    log_dir: PathBuf,
    dir: KeepOnFailure,
    spawned: AtomicUsize,
}

impl Rig {
    /// A rig on the shared PostgreSQL server and the shared Redis.
    pub async fn new(name: &'static str) -> Result<Self> {
        let db = TestDb::new()
            .await
            .context("creating the test database (is PostgreSQL up? DATABASE_URL)")?;
        Self::with(name, db, &ironclad_testkit::redis_url()).await
    }

    /// A rig on a given database (e.g. on a private PostgreSQL) and Redis.
    pub async fn with(name: &'static str, db: TestDb, redis_url: &str) -> Result<Self> {
        let tenant = db.store.create_tenant(name).await?;
        let db_name = db.name.clone();
        let dir = tempfile::Builder::new()
            .prefix(&format!("ironclad-chaos-{name}-"))
            .tempdir()?;
        let blob_dir = dir.path().join("blobs");
        let log_dir = dir.path().join("logs");
        std::fs::create_dir_all(&log_dir)?;
        Ok(Self {
            name,
            db,
            redis_url: redis_url.to_owned(),
            prefix: ironclad_testkit::redis_prefix(),
            blobs: BlobStore::open(&blob_dir)?,
            tenant,
            blob_dir,
            log_dir,
            dir: KeepOnFailure {
                dir: Some(dir),
                note: format!("[{name}] database {}", db_name),
            },
            spawned: AtomicUsize::new(0),
        })
    }

    /// The `ironclad` command with this rig's connections, blob directory and [`FAST`] timings,
    /// plus `env` (which wins). Inherited `IRONCLAD_*` settings are removed so a developer's
    /// shell (a stray `IRONCLAD_CRASH_AT`, say) cannot change what a scenario tests.
    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("IRONCLAD_") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("DATABASE_URL", &self.db.url)
            .env("REDIS_URL", &self.redis_url)
            .env("IRONCLAD_STREAM_PREFIX", &self.prefix)
            .env("IRONCLAD_BLOB_DIR", &self.blob_dir);
        for (k, v) in FAST.iter().chain(env) {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null());
        die_with_parent(&mut cmd);
        cmd
    }

    /// Starts `ironclad ARGS` (e.g. `["worker"]`) in the background, output to its log file.
    pub fn spawn(&self, label: &str, args: &[&str], env: &[(&str, &str)]) -> Result<Proc> {
        let n = self.spawned.fetch_add(1, Ordering::SeqCst);
        let log = self.log_dir.join(format!("{n:02}-{label}.log"));
        let out = File::create(&log)?;
        let child = self
            .command(args, env)
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {BIN} {args:?}"))?;
        Ok(Proc {
            label: label.to_owned(),
            child,
            log,
            exited: None,
        })
    }

    /// A role process with extra settings (`role` is `dispatcher`, `worker`, `reconciler`, `all`).
    pub fn role(&self, label: &str, role: &str, env: &[(&str, &str)]) -> Result<Proc> {
        self.spawn(label, &[role], env)
    }

    /// Runs an operator command to completion and returns its stdout.
    pub fn cli(&self, args: &[&str]) -> Result<String> {
        self.cli_with(args, &[])
    }

    /// [`cli`](Self::cli) with extra settings (`env` wins).
    pub fn cli_with(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
        let out = self
            .command(args, env)
            .output()
            .with_context(|| format!("running ironclad {args:?}"))?;
        ensure!(
            out.status.success(),
            "ironclad {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Creates an operator API key for the rig's tenant with the real CLI; the raw key is the
    /// last line of stdout.
    pub fn operator_key(&self) -> Result<String> {
        let out = self.cli(&[
            "apikey", "create", "--tenant", self.name, "--role", "operator",
        ])?;
        let key = out
            .lines()
            .last()
            .map(str::trim)
            .unwrap_or_default()
            .to_owned();
        ensure!(!key.is_empty(), "apikey create printed no key");
        Ok(key)
    }

    /// Commits a case of `files` distinct one-page PDFs whose bytes are in the shared blob
    /// directory, exactly as intake would (one statement: case, sources, jobs, outbox, audit).
    pub async fn commit_case(&self, files: usize) -> Result<CaseId> {
        ironclad_testkit::harness::commit_fixture_case(
            &self.db.store,
            &self.blobs,
            self.tenant,
            files,
            5,
            &format!("chaos-{}", self.name),
        )
        .await
    }

    // ── reading durable state ────────────────────────────────────────────────────────────

    /// `SELECT count(*) …` (or any single bigint).
    pub async fn count(&self, sql: &'static str) -> Result<i64> {
        sqlx::query_scalar(sql)
            .fetch_one(self.db.store.pool())
            .await
            .with_context(|| format!("query: {sql}"))
    }

    /// The job rows, oldest first.
    pub async fn jobs(&self) -> Result<Vec<JobRow>> {
        Ok(sqlx::query_as(
            "SELECT id, case_id, kind, status, attempt, lease_owner, last_error FROM jobs ORDER BY created_at, id",
        )
        .fetch_all(self.db.store.pool())
        .await?)
    }

    /// One job.
    pub async fn job(&self, id: Uuid) -> Result<JobRow> {
        self.jobs()
            .await?
            .into_iter()
            .find(|j| j.id == id)
            .with_context(|| format!("no job {id}"))
    }

    /// The first job RUNNING under the consumer of process `pid`, once there is one (≤ 30 s).
    pub async fn wait_busy(&self, pid: u32) -> Result<Uuid> {
        wait_for(
            &format!("a job RUNNING under pid {pid}"),
            Duration::from_secs(30),
            || async { Ok(self.running_under(pid).await?.first().copied()) },
        )
        .await
    }

    /// Waits until `worker` runs a job, sends it SIGTERM and waits (up to `timeout`) for it to
    /// exit 0; the job it was running and how long the exit took after the signal.
    pub async fn terminate_when_busy(
        &self,
        worker: &mut Proc,
        timeout: Duration,
    ) -> Result<(Uuid, Duration)> {
        let busy = self.wait_busy(worker.pid()).await?;
        let signalled_at = Instant::now();
        worker.signal("TERM")?;
        let status = worker.wait_exit(timeout).await?;
        let exit_after = signalled_at.elapsed();
        ensure!(
            status.code() == Some(0),
            "worker should exit 0 on SIGTERM, got {status}\n{}",
            worker.log_tail(30)
        );
        Ok((busy, exit_after))
    }

    /// Ids of the jobs RUNNING under the consumer of process `pid` (`<hostname>-<pid>`).
    pub async fn running_under(&self, pid: u32) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM jobs WHERE status = 'RUNNING' AND lease_owner LIKE $1 ORDER BY id",
        )
        .bind(format!("%-{pid}"))
        .fetch_all(self.db.store.pool())
        .await?)
    }

    /// A one-line picture of the pipeline, for failure messages.
    pub async fn snapshot(&self) -> String {
        const SQL: &str = r#"
SELECT
  (SELECT coalesce(string_agg(status || '=' || n, ' '), '-') FROM (SELECT status, count(*) n FROM cases GROUP BY 1 ORDER BY 1) s),
  (SELECT coalesce(string_agg(kind || ':' || status || '=' || n, ' '), '-') FROM (SELECT kind, status, count(*) n FROM jobs GROUP BY 1, 2 ORDER BY 1, 2) s),
  (SELECT coalesce(string_agg(status || '=' || n, ' '), '-') FROM (SELECT status, count(*) n FROM outbox GROUP BY 1 ORDER BY 1) s),
  (SELECT count(*) FROM decisions),
  (SELECT coalesce(string_agg(DISTINCT last_error, ' | '), '-') FROM jobs WHERE last_error IS NOT NULL)
"#;
        let db = match sqlx::query_as::<_, (String, String, String, i64, String)>(SQL)
            .fetch_one(self.db.store.pool())
            .await
        {
            Ok((cases, jobs, outbox, decisions, errors)) => {
                format!("cases [{cases}] jobs [{jobs}] outbox [{outbox}] decisions {decisions}; job errors: {errors}")
            }
            Err(e) => format!("(database unreadable: {e})"),
        };
        let redis = match (self.stream_len().await, self.pending().await) {
            (Ok(len), Ok(p)) => format!(
                "stream len {len}, pending {} (oldest idle {} ms)",
                p.count, p.oldest_idle_ms
            ),
            (Err(e), _) | (_, Err(e)) => format!("(redis unreadable: {e})"),
        };
        format!("{db}; {redis}")
    }

    /// Polls until `n` cases are AWAITING_REVIEW; fails at once, with the reasons, if a case
    /// FAILED (a technical failure is never an acceptable outcome of these scenarios).
    /// `tolerate_db_errors` lets the poll ride out a PostgreSQL restart.
    pub async fn wait_decided(
        &self,
        n: i64,
        timeout: Duration,
        tolerate_db_errors: bool,
    ) -> Result<()> {
        let waited = wait_for(&format!("{n} case(s) AWAITING_REVIEW"), timeout, || async {
            let counts: Result<(i64, i64, Option<String>), sqlx::Error> = sqlx::query_as(
                "SELECT count(*) FILTER (WHERE status = 'AWAITING_REVIEW'), count(*) FILTER (WHERE status = 'FAILED'),
                        string_agg(status_reason, ' | ') FILTER (WHERE status = 'FAILED')
                 FROM cases",
            )
            .fetch_one(self.db.store.pool())
            .await;
            match counts {
                Ok((_, failed, reasons)) if failed > 0 => {
                    bail!("{failed} case(s) FAILED: {}", reasons.unwrap_or_default())
                }
                Ok((decided, _, _)) => Ok((decided >= n).then_some(())),
                Err(_) if tolerate_db_errors => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
        .await;
        match waited {
            Ok(()) => Ok(()),
            Err(e) => Err(e.context(self.snapshot().await)),
        }
    }

    /// Polls until `sql` (a single bigint) equals `want`.
    pub async fn wait_count(
        &self,
        what: &str,
        sql: &'static str,
        want: i64,
        timeout: Duration,
    ) -> Result<()> {
        let waited = wait_for(what, timeout, || async {
            Ok((self.count(sql).await? == want).then_some(()))
        })
        .await;
        match waited {
            Ok(()) => Ok(()),
            Err(e) => Err(e.context(self.snapshot().await)),
        }
    }

    /// The jobs named by the messages delivered but not yet acknowledged (empty when the group
    /// does not exist).
    pub async fn pending_jobs(&self) -> Result<Vec<Uuid>> {
        use redis::streams::{StreamPendingCountReply, StreamRangeReply};
        use redis::AsyncCommands;
        let cfg = StreamConfig::with_prefix(&self.prefix);
        let client = redis::Client::open(self.redis_url.as_str())?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let pending: redis::RedisResult<StreamPendingCountReply> = conn
            .xpending_count(&cfg.stream, &cfg.group, "-", "+", 1000)
            .await;
        let pending = match pending {
            Ok(p) => p,
            Err(e) if e.code() == Some("NOGROUP") => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut jobs = Vec::new();
        for entry in pending.ids {
            let range: StreamRangeReply = conn.xrange(&cfg.stream, &entry.id, &entry.id).await?;
            for message in range.ids {
                let body: String = message.get("m").context("stream entry without field m")?;
                let envelope: serde_json::Value = serde_json::from_str(&body)?;
                jobs.push(
                    envelope["job_id"]
                        .as_str()
                        .context("message without job_id")?
                        .parse()?,
                );
            }
        }
        Ok(jobs)
    }

    /// Polls until every stream message has been acknowledged (the pending list is empty).
    pub async fn wait_nothing_pending(&self, timeout: Duration) -> Result<()> {
        let waited = wait_for("every stream message acknowledged", timeout, || async {
            Ok((self.pending().await?.count == 0).then_some(()))
        })
        .await;
        match waited {
            Ok(()) => Ok(()),
            Err(e) => Err(e.context(self.snapshot().await)),
        }
    }

    /// The promise every scenario ends with, read from PostgreSQL: exactly `cases` cases, each
    /// AWAITING_REVIEW with exactly one decision and one DECISION_GENERATED event; every job
    /// SUCCEEDED; one process_source job per source and one finalize job per case; no technical
    /// failure recorded anywhere.
    pub async fn assert_decided_exactly_once(&self, cases: i64) -> Result<()> {
        let checks: &[(&str, &'static str, i64)] = &[
            ("cases", "SELECT count(*) FROM cases", cases),
            ("cases AWAITING_REVIEW", "SELECT count(*) FROM cases WHERE status = 'AWAITING_REVIEW'", cases),
            ("decisions", "SELECT count(*) FROM decisions", cases),
            (
                "cases without exactly one decision",
                "SELECT count(*) FROM cases c WHERE (SELECT count(*) FROM decisions d WHERE d.case_id = c.id) <> 1",
                0,
            ),
            (
                "cases without exactly one DECISION_GENERATED event",
                "SELECT count(*) FROM cases c WHERE (SELECT count(*) FROM audit_events a
                   WHERE a.case_id = c.id AND a.event_type = 'DECISION_GENERATED') <> 1",
                0,
            ),
            ("jobs not SUCCEEDED", "SELECT count(*) FROM jobs WHERE status <> 'SUCCEEDED'", 0),
            (
                "sources without exactly one process_source job",
                "SELECT count(*) FROM sources s WHERE (SELECT count(*) FROM jobs j
                   WHERE j.source_id = s.id AND j.kind = 'process_source') <> 1",
                0,
            ),
            (
                "cases without exactly one finalize job",
                "SELECT count(*) FROM cases c WHERE (SELECT count(*) FROM jobs j
                   WHERE j.case_id = c.id AND j.kind = 'finalize_case') <> 1",
                0,
            ),
            ("PROCESSING_FAILED events", "SELECT count(*) FROM audit_events WHERE event_type = 'PROCESSING_FAILED'", 0),
            ("dead outbox rows", "SELECT count(*) FROM outbox WHERE status = 'DEAD'", 0),
            ("dead-lettered jobs", "SELECT count(*) FROM jobs WHERE dead_lettered_at IS NOT NULL", 0),
        ];
        for (what, sql, want) in checks {
            let got = self.count(sql).await?;
            if got != *want {
                bail!(
                    "{what}: expected {want}, found {got}\n{}",
                    self.snapshot().await
                );
            }
        }
        Ok(())
    }

    // ── reading the transport ────────────────────────────────────────────────────────────

    /// A fresh read-only handle on the rig's stream (fresh each time: Redis may have restarted).
    async fn queue(&self) -> Result<Queue> {
        Ok(Queue::connect(&self.redis_url, StreamConfig::with_prefix(&self.prefix)).await?)
    }

    /// XLEN of the work stream.
    pub async fn stream_len(&self) -> Result<u64> {
        Ok(self.queue().await?.stream_len().await?)
    }

    /// The group's pending-entries summary.
    pub async fn pending(&self) -> Result<PendingSummary> {
        Ok(self.queue().await?.pending_summary().await?)
    }

    /// Ends the test: on success drops the database and the temp directory; on failure panics
    /// with the error while the rig is still alive, so the unwinding prints the tail of every
    /// process log and keeps the directory and the database for inspection. Call it with the
    /// outcome of the scenario body, after the body's process guards are gone.
    pub async fn conclude(self, outcome: Result<()>) {
        if let Err(err) = outcome {
            let snapshot = self.snapshot().await;
            panic!("[{}] {err:#}\nstate at failure: {snapshot}", self.name);
        }
        let Rig { db, dir, .. } = self;
        drop(dir);
        db.drop_database().await;
    }
}

/// The rig's temp directory (blobs and logs): removed normally, kept when the test fails or
/// when `CHAOS_KEEP_LOGS` is set.
struct KeepOnFailure {
    dir: Option<tempfile::TempDir>,
    note: String,
}

impl Drop for KeepOnFailure {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            if std::env::var_os("CHAOS_KEEP_LOGS").is_some() && !std::thread::panicking() {
                eprintln!("logs kept in {}", dir.keep().join("logs").display());
            } else if std::thread::panicking() {
                let kept = dir.keep();
                let logs = kept.join("logs");
                let mut files: Vec<PathBuf> = std::fs::read_dir(&logs)
                    .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                    .unwrap_or_default();
                files.sort();
                for file in files {
                    eprintln!("{}", tail(&file, 25));
                }
                eprintln!("{}; logs kept in {}", self.note, logs.display());
            }
        }
    }
}

/// A job as the tests look at it (every field shows in failure messages through `Debug`).
#[derive(Debug, Clone, sqlx::FromRow)]
#[allow(dead_code)]
pub struct JobRow {
    /// Job id.
    pub id: Uuid,
    /// Its case.
    pub case_id: Uuid,
    /// `process_source` or `finalize_case`.
    pub kind: String,
    /// Status.
    pub status: String,
    /// Runs started so far.
    pub attempt: i32,
    /// Consumer that claimed it last.
    pub lease_owner: Option<String>,
    /// Last recorded error.
    pub last_error: Option<String>,
}

impl JobRow {
    /// Whether the consumer of process `pid` claimed it last.
    pub fn owned_by(&self, pid: u32) -> bool {
        self.lease_owner
            .as_deref()
            .is_some_and(|o| o.ends_with(&format!("-{pid}")))
    }
}

// ── the HTTP API ─────────────────────────────────────────────────────────────────────────

/// A client of a running `ironclad all`/`serve`.
pub struct Api {
    base: String,
    key: String,
    client: reqwest::Client,
}

impl Api {
    /// A client of the API at `127.0.0.1:port`, with an operator key for the rig's tenant.
    pub fn new(rig: &Rig, port: u16) -> Result<Self> {
        Ok(Self {
            base: format!("http://127.0.0.1:{port}"),
            key: rig.operator_key()?,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()?,
        })
    }

    /// Waits for `/healthz` to answer (the process is up and listening).
    pub async fn wait_live(&self, timeout: Duration) -> Result<()> {
        wait_for("the API to answer /healthz", timeout, || async {
            let ok = self
                .client
                .get(format!("{}/healthz", self.base))
                .send()
                .await
                .map(|r| r.status().is_success());
            Ok(ok.unwrap_or(false).then_some(()))
        })
        .await
    }

    /// `POST /v1/cases` with one small PDF; returns the case id from the 201.
    pub async fn submit_pdf(&self, text: &str) -> Result<Uuid> {
        let (status, body) = self.post_pdf(text).await?;
        ensure!(status == 201, "intake answered {status}: {body}");
        let id = body["case_id"].as_str().context("no case_id in the 201")?;
        Ok(id.parse()?)
    }

    /// `POST /v1/cases` with one small PDF; the status and JSON body, whatever they are.
    pub async fn post_pdf(&self, text: &str) -> Result<(u16, serde_json::Value)> {
        let pdf = ironclad_inspect::fixtures::pdf_with_pages(1, text);
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(pdf).file_name("invoice.pdf"),
        );
        let response = self
            .client
            .post(format!("{}/v1/cases", self.base))
            .bearer_auth(&self.key)
            .multipart(form)
            .send()
            .await
            .context("POST /v1/cases")?;
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.context("intake answered non-JSON")?;
        Ok((status, body))
    }
}

/// The last `lines` lines of a log file, headed by its path.
fn tail(path: &std::path::Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let from = all.len().saturating_sub(lines);
    format!(
        "--- last {} line(s) of {} ---\n{}",
        all.len() - from,
        path.display(),
        all[from..].join("\n")
    )
}

/// Submits `n` one-PDF cases through the API, labelled for the logs.
pub async fn submit_cases(api: &Api, label: &str, n: usize) -> Result<Vec<Uuid>> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        ids.push(
            api.submit_pdf(&format!("{label} case {i} {}", Uuid::new_v4()))
                .await?,
        );
    }
    Ok(ids)
}

/// `127.0.0.1:<free port>` and the port.
pub fn listen_addr() -> Result<(String, u16)> {
    let port = ironclad_testkit::free_port()?;
    Ok((format!("127.0.0.1:{port}"), port))
}

/// Seconds with one decimal, for the timing lines the scenarios print.
pub fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}
