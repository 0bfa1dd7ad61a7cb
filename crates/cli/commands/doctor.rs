//! `ironclad doctor`: checks a deployment's configuration against the engines it names and
//! says what to fix. It reads and probes; it applies no migration and creates no group.

use super::redact;
use crate::config::{Connections, RoleSettings};
use ironclad_queue::Queue;
use ironclad_store::Store;
use serde::Serialize;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `ironclad doctor`
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print the findings as JSON instead of lines of text.
    #[arg(long)]
    pub json: bool,
    /// The settings of the roles being checked (the same variables the roles read).
    #[command(flatten)]
    pub settings: RoleSettings,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Warn,
    Fail,
}

/// One check's result: what was looked at, what was found, and what to do.
#[derive(Debug, Serialize)]
struct Finding {
    check: &'static str,
    level: Level,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn ok(&mut self, check: &'static str, detail: impl Into<String>) {
        self.push(check, Level::Ok, detail, None::<String>);
    }
    fn warn(&mut self, check: &'static str, detail: impl Into<String>, fix: impl Into<String>) {
        self.push(check, Level::Warn, detail, Some(fix));
    }
    fn fail(&mut self, check: &'static str, detail: impl Into<String>, fix: impl Into<String>) {
        self.push(check, Level::Fail, detail, Some(fix));
    }
    fn push(
        &mut self,
        check: &'static str,
        level: Level,
        detail: impl Into<String>,
        fix: Option<impl Into<String>>,
    ) {
        self.0.push(Finding {
            check,
            level,
            detail: detail.into(),
            fix: fix.map(Into::into),
        });
    }
}

/// Clock difference with PostgreSQL beyond which leases and grace periods are misjudged.
const SKEW_WARN: Duration = Duration::from_millis(500);
const SKEW_FAIL: Duration = Duration::from_secs(5);

/// Runs every check; exit 1 when any failed, 0 otherwise (warnings included).
pub async fn run(c: &Connections, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut found = Findings::default();
    check_settings(c, &args.settings, &mut found);
    let store = check_postgres(c, &mut found).await;
    if let Some(store) = &store {
        check_schema(store, &mut found).await;
        check_clock(store, &mut found).await;
    }
    check_redis(c, &args.settings, &mut found).await;
    check_blobs(&args.settings, &mut found).await;

    let failed = found.0.iter().any(|f| f.level == Level::Fail);
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "ok": !failed, "findings": found.0 })
        );
    } else {
        for f in &found.0 {
            let tag = match f.level {
                Level::Ok => "ok  ",
                Level::Warn => "WARN",
                Level::Fail => "FAIL",
            };
            println!("{tag}  {:<11} {}", f.check, f.detail);
            if let Some(fix) = &f.fix {
                println!("      {:<11} fix: {fix}", "");
            }
        }
        let (warns, fails) = found.0.iter().fold((0, 0), |(w, f), x| match x.level {
            Level::Warn => (w + 1, f),
            Level::Fail => (w, f + 1),
            Level::Ok => (w, f),
        });
        println!(
            "\n{} checks: {fails} failed, {warns} warnings",
            found.0.len()
        );
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Settings that are invalid on their own or contradict each other.
fn check_settings(c: &Connections, s: &RoleSettings, found: &mut Findings) {
    let mut clean = true;
    if let Err(err) = s.runtime() {
        clean = false;
        found.fail(
            "settings",
            format!("{err:#}"),
            "change the settings named above",
        );
    }
    if let Err(err) = s.webhooks() {
        clean = false;
        found.fail(
            "settings",
            format!("{err:#}"),
            "change the webhook settings",
        );
    }
    // A blob must be committed within the grace of its upload, and an upload may retry for
    // the whole retry budget before the intake transaction even starts.
    let upload_to_commit = s.blobs.blob_retry_timeout + c.db_statement_timeout;
    if s.blob_grace <= upload_to_commit * 2 {
        clean = false;
        found.fail(
            "settings",
            format!(
                "IRONCLAD_BLOB_GRACE ({:?}) is not well above an upload's retries plus a commit ({:?}): the sweep could delete bytes a case is about to reference",
                s.blob_grace, upload_to_commit
            ),
            format!("set IRONCLAD_BLOB_GRACE to at least {:?} (1h is the default)", upload_to_commit * 4),
        );
    }
    if c.pgbouncer == ironclad_store::Pooler::Transaction && c.migrate_database_url.is_none() {
        clean = false;
        found.warn(
            "settings",
            "IRONCLAD_PGBOUNCER=transaction without IRONCLAD_MIGRATE_DATABASE_URL: migrations need one session (an advisory lock) and will be refused",
            "set IRONCLAD_MIGRATE_DATABASE_URL to PostgreSQL itself (or a session-mode pool)",
        );
    }
    let public = !s.listen.starts_with("127.") && !s.listen.starts_with("localhost");
    if public && !s.secure_cookies {
        clean = false;
        found.warn(
            "settings",
            format!(
                "the API listens on {} but desk cookies are not Secure",
                s.listen
            ),
            "serve the desk over HTTPS and leave IRONCLAD_SECURE_COOKIES at its default (true)",
        );
    }
    if public && s.metrics_token.is_none() && s.metrics_listen.is_none() {
        clean = false;
        found.warn(
            "settings",
            format!("/metrics is open to anyone who can reach {}", s.listen),
            "set IRONCLAD_METRICS_TOKEN or IRONCLAD_METRICS_LISTEN",
        );
    }
    if clean {
        found.ok("settings", "no setting contradicts another");
    }
}

async fn check_postgres(c: &Connections, found: &mut Findings) -> Option<Store> {
    let started = Instant::now();
    match Store::connect_with(&c.database_url, &c.pool()).await {
        Ok(store) => match store.ping().await {
            Ok(()) => {
                found.ok(
                    "postgres",
                    format!(
                        "{} answers ({} ms)",
                        redact(&c.database_url),
                        started.elapsed().as_millis()
                    ),
                );
                Some(store)
            }
            Err(err) => {
                found.fail(
                    "postgres",
                    format!("{} does not answer: {err}", redact(&c.database_url)),
                    "check DATABASE_URL, that PostgreSQL runs and accepts this host",
                );
                None
            }
        },
        Err(err) => {
            found.fail(
                "postgres",
                format!("cannot connect to {}: {err}", redact(&c.database_url)),
                "check DATABASE_URL, that PostgreSQL runs and accepts this host",
            );
            None
        }
    }
}

async fn check_schema(store: &Store, found: &mut Findings) {
    match store.schema_status().await {
        Ok(status) if status.is_current() => found.ok(
            "migrations",
            format!("all {} migrations applied", status.applied),
        ),
        Ok(status) => {
            if !status.pending.is_empty() {
                found.fail(
                    "migrations",
                    format!("not applied: {}", status.pending.join(", ")),
                    "run `ironclad migrate` once (before the new roles start)",
                );
            }
            if !status.unknown.is_empty() {
                found.fail(
                    "migrations",
                    format!(
                        "the database has migrations this binary does not know: {:?} (it is older than the schema)",
                        status.unknown
                    ),
                    "deploy the binary the schema was migrated with, or a newer one",
                );
            }
            if !status.changed.is_empty() || !status.failed.is_empty() {
                found.fail(
                    "migrations",
                    format!(
                        "edited since applied: {:?}; failed part-way: {:?}",
                        status.changed, status.failed
                    ),
                    "restore the original migration files; repair a failed one by hand, then rerun `ironclad migrate`",
                );
            }
        }
        Err(err) => found.fail(
            "migrations",
            format!("cannot read the applied migrations: {err}"),
            "grant this role SELECT on _sqlx_migrations",
        ),
    }
}

async fn check_clock(store: &Store, found: &mut Findings) {
    let before = chrono::Utc::now();
    let db_now = match store.database_now().await {
        Ok(now) => now,
        Err(err) => {
            found.fail(
                "clock",
                format!("cannot read PostgreSQL's clock: {err}"),
                "",
            );
            return;
        }
    };
    let after = chrono::Utc::now();
    // The database read its clock somewhere within the round trip: compare with its middle.
    let local = before + (after - before) / 2;
    let skew = (local - db_now).abs().to_std().unwrap_or(Duration::MAX);
    let detail = format!(
        "this host is {} ms {} PostgreSQL (round trip {} ms)",
        skew.as_millis(),
        if local >= db_now {
            "ahead of"
        } else {
            "behind"
        },
        (after - before).num_milliseconds()
    );
    let fix = "run NTP (chrony or systemd-timesyncd) on every host and on PostgreSQL's";
    if skew >= SKEW_FAIL {
        found.fail("clock", detail, fix);
    } else if skew >= SKEW_WARN {
        found.warn("clock", detail, fix);
    } else {
        found.ok("clock", detail);
    }
}

async fn check_redis(c: &Connections, s: &RoleSettings, found: &mut Findings) {
    let streams = super::roles::stream_config(c, s);
    let queue = match Queue::connect(&c.redis_url, streams.clone()).await {
        Ok(q) => q,
        Err(err) => {
            found.fail(
                "redis",
                format!("cannot connect to {}: {err}", redact(&c.redis_url)),
                "check REDIS_URL and that Redis runs and accepts this host",
            );
            return;
        }
    };
    if let Err(err) = queue.ping().await {
        found.fail(
            "redis",
            format!("{} does not answer: {err}", redact(&c.redis_url)),
            "check REDIS_URL and that Redis runs",
        );
        return;
    }
    found.ok("redis", format!("{} answers", redact(&c.redis_url)));
    match queue.server_setting("maxmemory-policy").await {
        Ok(Some(policy)) if policy != "noeviction" => found.warn(
            "redis",
            format!("maxmemory-policy is {policy}: under memory pressure Redis deletes stream entries, which the reconciler must then re-announce"),
            "set maxmemory-policy noeviction (and size maxmemory for the stream's MAXLEN)",
        ),
        Ok(_) => {}
        Err(err) => found.warn("redis", format!("cannot read its settings: {err}"), ""),
    }
    if let Ok(Some(aof)) = queue.server_setting("appendonly").await {
        if aof == "no" {
            found.warn(
                "redis",
                format!(
                    "appendonly is no: a Redis restart forgets queued messages; they are re-announced from PostgreSQL after IRONCLAD_REEMIT_AFTER ({:?}), so work is delayed, not lost",
                    s.reemit_after
                ),
                "for shorter recoveries set appendonly yes, appendfsync everysec (docs/redis.md)",
            );
        }
    }
    match queue.group_info().await {
        Ok(None) => found.warn(
            "stream",
            format!(
                "no consumer group {} on stream {} yet",
                streams.group, streams.stream
            ),
            "start a worker (it creates the group), and check IRONCLAD_STREAM_PREFIX matches the other roles'",
        ),
        Ok(Some(info)) if info.consumers == 0 => found.warn(
            "stream",
            format!(
                "group {} has never had a consumer; {} entries wait",
                streams.group,
                info.lag.map_or("?".into(), |l| l.to_string())
            ),
            "start workers with the same REDIS_URL and IRONCLAD_STREAM_PREFIX",
        ),
        Ok(Some(info)) => found.ok(
            "stream",
            format!(
                "group {} on {}: {} consumers, {} pending, lag {}",
                streams.group,
                streams.stream,
                info.consumers,
                info.pending,
                info.lag.map_or("unknown".into(), |l| l.to_string())
            ),
        ),
        Err(err) => found.fail(
            "stream",
            format!("cannot read the consumer group: {err}"),
            "check the Redis user may run XINFO",
        ),
    }
}

async fn check_blobs(s: &RoleSettings, found: &mut Findings) {
    let blobs = match s.blobs.open() {
        Ok(b) => b,
        Err(err) => {
            found.fail(
                "blobs",
                format!("{err:#}"),
                "fix IRONCLAD_BLOB_URL / IRONCLAD_BLOB_DIR (file:///absolute/path or s3://bucket/prefix)",
            );
            return;
        }
    };
    let started = Instant::now();
    match blobs.probe().await {
        Ok(probe) => {
            found.ok(
                "blobs",
                format!(
                    "{} is writable: a probe was stored, read back and removed ({} ms)",
                    blobs.location(),
                    started.elapsed().as_millis()
                ),
            );
            if let Some(skew) = probe.clock_skew {
                check_store_clock(skew, s.blob_grace, found);
            }
        }
        Err(err) => {
            found.fail(
                "blobs",
                format!("{}: {err}", blobs.location()),
                "check the bucket exists and the AWS_* credentials may put, get, list and delete in it (or the directory's owner and free space)",
            );
            return;
        }
    }
    if let Some(fs) = volatile_file_system(blobs.root()) {
        let role = if blobs.is_shared() {
            "staging area"
        } else {
            "blob store"
        };
        let message = format!(
            "the {role} {} is on {fs}, which a reboot empties",
            blobs.root().display()
        );
        if blobs.is_shared() {
            found.warn(
                "blobs",
                message,
                "harmless for a cache; give uploads a disk to stage on if memory is short",
            );
        } else {
            found.fail(
                "blobs",
                message,
                "put IRONCLAD_BLOB_DIR on a durable disk, or use IRONCLAD_BLOB_URL=s3://…",
            );
        }
    }
    if !blobs.is_shared() {
        found.warn(
            "blobs",
            "blobs are in a local directory: only roles on this host (or sharing this disk) can read them",
            "for several hosts set IRONCLAD_BLOB_URL=s3://bucket/prefix",
        );
    }
}

/// The sweep judges an object's age by the store's Last-Modified against this host's clock:
/// a store running behind by a good part of the grace lets the sweep park uploads whose commit
/// is still on its way (they come back when referenced, but reads of them fall back meanwhile).
fn check_store_clock(skew: chrono::TimeDelta, grace: Duration, found: &mut Findings) {
    let off = skew.abs().to_std().unwrap_or(Duration::MAX);
    let direction = if skew < chrono::TimeDelta::zero() {
        "behind"
    } else {
        "ahead of"
    };
    let detail = format!(
        "the object store's clock is {} s {direction} this host's (from the probe's Last-Modified, ±1 s)",
        off.as_secs()
    );
    let fix = "run NTP (chrony, systemd-timesyncd) on this host; a store's clock is its operator's to fix";
    if off >= grace / 4 {
        found.fail(
            "blobs",
            format!("{detail}: a quarter of IRONCLAD_BLOB_GRACE ({grace:?}) or more"),
            fix,
        );
    } else if off > Duration::from_secs(5) {
        found.warn("blobs", detail, fix);
    } else {
        found.ok("blobs", detail);
    }
}

/// The file system type holding `dir` when it does not survive a reboot (tmpfs, ramfs).
fn volatile_file_system(dir: &std::path::Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    // The longest mount point that holds the directory is the one it lives on.
    let (_, fs) = mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, point, fs) = (fields.next()?, fields.next()?, fields.next()?);
            dir.starts_with(point).then(|| (point.len(), fs.to_owned()))
        })
        .max_by_key(|(len, _)| *len)?;
    matches!(fs.as_str(), "tmpfs" | "ramfs").then_some(fs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level_for(skew_secs: i64, grace: Duration) -> (Level, String) {
        let mut found = Findings::default();
        check_store_clock(chrono::TimeDelta::seconds(skew_secs), grace, &mut found);
        let f = &found.0[0];
        (f.level, f.detail.clone())
    }

    #[test]
    fn store_clock_skew_is_judged_against_the_blob_grace() {
        let hour = Duration::from_secs(3600);
        assert_eq!(level_for(-1, hour).0, Level::Ok);
        let (level, detail) = level_for(-60, hour);
        assert_eq!(level, Level::Warn);
        assert!(detail.contains("60 s behind"), "{detail}");
        assert_eq!(level_for(120, hour).0, Level::Warn);
        let (level, detail) = level_for(-900, hour);
        assert_eq!(level, Level::Fail);
        assert!(detail.contains("IRONCLAD_BLOB_GRACE"), "{detail}");
        assert_eq!(level_for(30, Duration::from_secs(60)).0, Level::Fail);
    }
}
