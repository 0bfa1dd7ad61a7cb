//! Ironclad on several "hosts": every role in a network namespace of its own (api,
//! dispatcher, worker-a, worker-b; the reconciler shares the dispatcher's host), PostgreSQL
//! and Redis private to the test in an "infra" namespace, all joined by veth links to one
//! bridge. Nothing leaves the machine, nothing touches the shared PostgreSQL or Redis.
//!
//! While worker-a is reading a 5-page scan (its job RUNNING under its own consumer,
//! `worker-a-<pid>`), its only link goes down: worker-b must take the job over once the lease
//! lapses, every case must be decided, and `ironclad verify` must find nothing lost or done
//! twice. Then worker-a comes back with its finished reading still in memory: it must not
//! commit it (its lease token no longer matches — fencing).
//!
//! Needs root and iproute2: `cargo test --test ironclad netns_hosts:: -- --ignored --nocapture`.

use anyhow::{ensure, Context, Result};
use ironclad_testkit::netns::{HostProc, InfraPostgres, InfraRedis, InfraS3, Lan};
use ironclad_testkit::wait_for;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use uuid::Uuid;

const BIN: &str = env!("CARGO_BIN_EXE_ironclad");

/// Short timings (as the chaos tests use) so the takeover takes seconds.
const FAST: &[(&str, &str)] = &[
    ("IRONCLAD_LEASE", "3s"),
    ("IRONCLAD_CLAIM_IDLE", "2s"),
    ("IRONCLAD_RECLAIM_EVERY", "1s"),
    ("IRONCLAD_RECONCILE_EVERY", "1s"),
    ("IRONCLAD_REEMIT_AFTER", "3s"),
    ("IRONCLAD_OUTBOX_LOCK_TIMEOUT", "3s"),
    ("IRONCLAD_RETRY_DELAYS", "500ms,1s,2s"),
    ("IRONCLAD_DB_ACQUIRE_TIMEOUT", "3s"),
    // worker-a must still hold its result when its link returns.
    ("IRONCLAD_OUTCOME_PATIENCE", "10m"),
    ("IRONCLAD_PROCESSOR", "reading"),
    ("IRONCLAD_OCR_LANGUAGES", "eng"),
    ("IRONCLAD_LOG_FORMAT", "text"),
    ("RUST_LOG", "info"),
];

/// Where the hosts keep the uploaded bytes: the one place that says so.
///
/// `s3` (the default when s3rver is installed, see `ironclad_testkit::s3`): an S3 server in
/// the infra namespace, reached over the hosts' links like PostgreSQL and Redis, with
/// `IRONCLAD_BLOB_URL=s3://…` (the local directory then holds only staging and the page
/// cache). `file` (`IRONCLAD_NETNS_BLOBS=file`, or no s3rver): one directory every host
/// shares, as hosts on one machine can.
enum Blobs {
    Dir(tempfile::TempDir),
    S3 {
        server: InfraS3,
        prefix: String,
        local: tempfile::TempDir,
    },
}

impl Blobs {
    fn start(lan: &Lan) -> Result<Self> {
        let wanted = std::env::var("IRONCLAD_NETNS_BLOBS").ok();
        let s3 = match wanted.as_deref() {
            Some("s3") => true,
            Some("file") => false,
            Some(other) => anyhow::bail!("IRONCLAD_NETNS_BLOBS={other}: expected s3 or file"),
            None => ironclad_testkit::s3::s3rver_bin().is_ok(),
        };
        if !s3 {
            println!("[netns_hosts] blobs: a shared directory (file)");
            return Ok(Self::Dir(tempfile::tempdir()?));
        }
        let server = InfraS3::start(lan)?;
        println!(
            "[netns_hosts] blobs: s3rver at {} in the infra namespace",
            server.endpoint()
        );
        Ok(Self::S3 {
            server,
            prefix: format!("netns-{}", Uuid::new_v4().simple()),
            local: tempfile::tempdir()?,
        })
    }

    /// The settings a process on `host` gets (roles, and `ironclad verify` on "operator").
    fn env(&self, host: &str) -> Vec<(String, String)> {
        match self {
            Self::Dir(dir) => vec![(
                "IRONCLAD_BLOB_DIR".into(),
                dir.path().join("blobs").display().to_string(),
            )],
            Self::S3 {
                server,
                prefix,
                local,
            } => {
                let mut env = server.env();
                env.push(("IRONCLAD_BLOB_URL".into(), server.url(prefix)));
                // Each host its own local directory (staging, cache), as on separate
                // machines: a worker can only read what the API stored in the bucket.
                env.push((
                    "IRONCLAD_BLOB_DIR".into(),
                    local.path().join(host).join("blobs").display().to_string(),
                ));
                env
            }
        }
    }
}

/// The test's world: the LAN, the infra services, the blob store, settings, logs.
struct World {
    // Fields drop in this order: the servers before the namespaces they run in.
    // Kept for its Drop (the server stops with the world).
    _pg: InfraPostgres,
    redis: InfraRedis,
    blobs: Blobs,
    db_url: String,
    prefix: String,
    logs: tempfile::TempDir,
    lan: Lan,
}

impl World {
    fn env(&self, host: &str) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = FAST
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        env.push(("DATABASE_URL".into(), self.db_url.clone()));
        env.push(("REDIS_URL".into(), self.redis.url()));
        env.push(("IRONCLAD_STREAM_PREFIX".into(), self.prefix.clone()));
        env.extend(self.blobs.env(host));
        env
    }

    /// `ironclad ARGS` with the world's settings plus `extra`, on no particular host.
    fn apply(&self, cmd: &mut Command, host: &str, extra: &[(&str, String)]) {
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("IRONCLAD_") {
                cmd.env_remove(&key);
            }
        }
        for (k, v) in self.env(host) {
            cmd.env(k, v);
        }
        for (k, v) in extra {
            cmd.env(k, v);
        }
    }

    /// Starts `ironclad ROLE` on `host`.
    fn role(&self, host: &str, role: &str, extra: &[(&str, String)]) -> Result<HostProc> {
        let mut cmd = self.lan.command(host, Path::new(BIN))?;
        cmd.arg(role);
        self.apply(&mut cmd, host, extra);
        HostProc::spawn(
            &format!("{role}@{host}"),
            cmd,
            &self.logs.path().join(format!("{host}-{role}.log")),
        )
    }

    /// An operator command from the root namespace (over its own link to the bridge).
    fn cli(&self, args: &[&str]) -> Result<(std::process::ExitStatus, String)> {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        self.apply(&mut cmd, "operator", &[]);
        let out = cmd
            .output()
            .with_context(|| format!("running ironclad {args:?}"))?;
        if !out.status.success() {
            eprintln!(
                "ironclad {args:?} → {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok((
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ))
    }
}

fn fixture(rel: &str) -> Result<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/generated")
        .join(rel);
    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
}

/// POST /v1/cases with these files; the case id.
async fn submit(client: &reqwest::Client, api: &str, key: &str, files: &[&str]) -> Result<Uuid> {
    let mut form = reqwest::multipart::Form::new();
    for rel in files {
        form = form.part(
            "file",
            reqwest::multipart::Part::bytes(fixture(rel)?).file_name(rel.replace('/', "-")),
        );
    }
    let r = client
        .post(format!("{api}/v1/cases"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .context("POST /v1/cases")?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.context("intake answered non-JSON")?;
    ensure!(status.as_u16() == 201, "intake answered {status}: {body}");
    Ok(body["case_id"].as_str().context("no case_id")?.parse()?)
}

/// `name{labels} value` from a Prometheus text page (0 when absent).
fn metric(page: &str, series: &str) -> f64 {
    page.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.trim().parse().ok()))
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and iproute2: cargo test --test ironclad netns_hosts:: -- --ignored --nocapture"]
async fn a_worker_cut_off_mid_ocr_is_taken_over_and_cannot_commit_when_it_returns() {
    // Declared first so it is dropped last: processes, then servers, then namespaces.
    let lan = Lan::create(&["api", "dispatcher", "worker-a", "worker-b"]).expect("the LAN");
    let world = match setup(lan).await {
        Ok(w) => w,
        Err(e) => panic!("setting up: {e:#}"),
    };
    let mut procs: Vec<HostProc> = Vec::new();
    let outcome = scenario(&world, &mut procs).await;
    if let Err(e) = outcome {
        for p in &procs {
            eprintln!("{}", p.log_tail(30));
        }
        panic!("{e:#}");
    }
}

async fn setup(lan: Lan) -> Result<World> {
    let pg = InfraPostgres::start(&lan)?;
    let redis = InfraRedis::start(&lan)?;
    let blobs = Blobs::start(&lan)?;
    let admin = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&pg.url("postgres"))
        .await
        .context("reaching PostgreSQL in the infra namespace")?;
    sqlx::query("CREATE DATABASE ironclad")
        .execute(&admin)
        .await?;
    admin.close().await;
    let world = World {
        db_url: pg.url("ironclad"),
        lan,
        _pg: pg,
        redis,
        blobs,
        prefix: format!("netns-{}", Uuid::new_v4().simple()),
        logs: tempfile::Builder::new()
            .prefix("ironclad-netns-")
            .tempdir()?,
    };
    let (status, _) = world.cli(&["migrate"])?;
    ensure!(status.success(), "ironclad migrate failed");
    Ok(world)
}

async fn scenario(w: &World, procs: &mut Vec<HostProc>) -> Result<()> {
    let (status, _) = w.cli(&["tenant", "create", "netns"])?;
    ensure!(status.success(), "tenant create failed");
    let (status, out) = w.cli(&[
        "apikey", "create", "--tenant", "netns", "--role", "operator",
    ])?;
    ensure!(status.success(), "apikey create failed");
    let key = out.lines().last().unwrap_or_default().trim().to_owned();
    ensure!(!key.is_empty(), "apikey create printed no key");

    let api_addr = format!("{}:8080", w.lan.host("api")?.addr);
    let a_metrics = format!("{}:9464", w.lan.host("worker-a")?.addr);
    procs.push(w.role("api", "serve", &[("IRONCLAD_LISTEN", api_addr.clone())])?);
    procs.push(w.role("dispatcher", "dispatcher", &[])?);
    procs.push(w.role("dispatcher", "reconciler", &[])?);
    // worker-a: one job at a time on one core, so its job is one long read, page after page.
    let worker_a = w.role(
        "worker-a",
        "worker",
        &[
            ("IRONCLAD_WORKER_CONCURRENCY", "1".into()),
            ("IRONCLAD_METRICS_LISTEN", a_metrics.clone()),
        ],
    )?;
    let a_pid = worker_a.pid();
    procs.push(worker_a);
    let api = format!("http://{api_addr}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    wait_for("the API on its host", Duration::from_secs(60), || async {
        let ok = client.get(format!("{api}/healthz")).send().await;
        Ok(ok
            .map(|r| r.status().is_success())
            .unwrap_or(false)
            .then_some(()))
    })
    .await?;

    let db = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect(&w.db_url)
        .await?;
    // The 5-page scanned packet: the job worker-a will be reading when it is cut off.
    let packet = submit(&client, &api, &key, &["packet/packet.scan.pdf"]).await?;
    let a_owner = format!("worker-a-{a_pid}");
    let job: Uuid = wait_for(
        "the packet's job RUNNING under worker-a's consumer",
        Duration::from_secs(60),
        || async {
            Ok(sqlx::query_scalar(
                "SELECT id FROM jobs WHERE case_id = $1 AND kind = 'process_source'
                   AND status = 'RUNNING' AND lease_owner = $2",
            )
            .bind(packet)
            .bind(&a_owner)
            .fetch_optional(&db)
            .await?)
        },
    )
    .await?;

    w.lan.cut("worker-a")?;
    let cut_at = Instant::now();
    // Still worker-a's, unfinished, at the cut: the cut landed mid-read.
    let (status, owner, open_runs): (String, Option<String>, i64) = sqlx::query_as(
        "SELECT status, lease_owner,
                (SELECT count(*) FROM job_runs r WHERE r.job_id = j.id AND r.outcome IS NULL)
         FROM jobs j WHERE id = $1",
    )
    .bind(job)
    .fetch_one(&db)
    .await?;
    ensure!(
        status == "RUNNING" && owner.as_deref() == Some(a_owner.as_str()) && open_runs == 1,
        "worker-a finished before the cut ({status}, {owner:?}): the cut must land mid-OCR"
    );
    let pages_at_cut: i64 = sqlx::query_scalar("SELECT count(*) FROM pages WHERE case_id = $1")
        .bind(packet)
        .fetch_one(&db)
        .await?;
    ensure!(
        pages_at_cut == 0,
        "pages of the packet committed before the cut"
    );

    let worker_b = w.role("worker-b", "worker", &[])?;
    let b_pid = worker_b.pid();
    procs.push(worker_b);
    let b_owner = format!("worker-b-{b_pid}");
    // More dossiers while worker-a is gone: worker-b reads them all.
    let mut cases = vec![packet];
    for rel in [
        "set-01/commercial-invoice.scan.pdf",
        "set-01/packing-list.scan.pdf",
        "set-02/bill-of-lading.scan.pdf",
    ] {
        cases.push(submit(&client, &api, &key, &[rel]).await?);
    }

    wait_for(
        "worker-b to claim worker-a's job",
        Duration::from_secs(60),
        || async {
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM job_runs WHERE job_id = $1 AND owner = $2",
            )
            .bind(job)
            .bind(&b_owner)
            .fetch_one(&db)
            .await?;
            Ok((n > 0).then_some(()))
        },
    )
    .await?;
    let takeover = cut_at.elapsed();
    wait_for("every case decided", Duration::from_secs(240), || async {
        let (decided, failed): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE status IN ('AWAITING_REVIEW', 'RESOLVED')),
                        count(*) FILTER (WHERE status = 'FAILED') FROM cases",
        )
        .fetch_one(&db)
        .await?;
        ensure!(failed == 0, "{failed} case(s) FAILED");
        Ok((decided == cases.len() as i64).then_some(()))
    })
    .await?;
    let decided_after = cut_at.elapsed();

    // worker-a comes back, its reading finished in memory and its commit still being retried.
    w.lan.restore("worker-a")?;
    let restored_at = Instant::now();
    let scrape = |addr: String| {
        let client = client.clone();
        async move {
            let page = client
                .get(format!("http://{addr}/metrics"))
                .send()
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            Some(page)
        }
    };
    // Done with its job (the run's duration recorded) without counting a success: its
    // outcome was refused by the fence and discarded.
    let page = wait_for(
        "worker-a, back on the network, to be done with its stale job",
        Duration::from_secs(180),
        || {
            let scraped = scrape(a_metrics.clone());
            async move {
                Ok(scraped.await.filter(|p| {
                    metric(
                        p,
                        "ironclad_job_duration_seconds_count{kind=\"process_source\"}",
                    ) >= 1.0
                }))
            }
        },
    )
    .await?;
    let settled_after_restore = restored_at.elapsed();
    let handled = metric(
        &page,
        "ironclad_job_duration_seconds_count{kind=\"process_source\"}",
    );
    let succeeded = metric(&page, "ironclad_jobs_succeeded_total");
    ensure!(
        handled == 1.0 && succeeded == 0.0,
        "worker-a handled {handled} job(s) and counted {succeeded} success(es); expected its one stale job, no success"
    );

    // The durable record: the job was worker-b's second attempt; worker-a's run ended LOST.
    let runs: Vec<(String, i32, Option<String>)> = sqlx::query_as(
        "SELECT owner, attempt, outcome FROM job_runs WHERE job_id = $1 ORDER BY started_at",
    )
    .bind(job)
    .fetch_all(&db)
    .await?;
    ensure!(
        runs.first()
            .is_some_and(|(o, a, out)| o == &a_owner && *a == 1 && out.as_deref() == Some("LOST")),
        "worker-a's run should be attempt 1 and LOST: {runs:?}"
    );
    let successes: Vec<&(String, i32, Option<String>)> = runs
        .iter()
        .filter(|(_, _, out)| out.as_deref() == Some("SUCCEEDED"))
        .collect();
    ensure!(
        successes.len() == 1 && successes[0].0 == b_owner,
        "exactly one run of the job may succeed, worker-b's: {runs:?}"
    );
    let (status, attempt): (String, i32) =
        sqlx::query_as("SELECT status, attempt FROM jobs WHERE id = $1")
            .bind(job)
            .fetch_one(&db)
            .await?;
    ensure!(
        status == "SUCCEEDED" && attempt == 2,
        "the job is {status} after {attempt} attempt(s)"
    );
    // Nothing done twice, nothing lost, counted as verify does.
    let checks: &[(&str, &str, i64)] = &[
        ("cases", "SELECT count(*) FROM cases", cases.len() as i64),
        (
            "cases without exactly one decision",
            "SELECT count(*) FROM cases c WHERE (SELECT count(*) FROM decisions d WHERE d.case_id = c.id) <> 1",
            0,
        ),
        ("jobs not SUCCEEDED", "SELECT count(*) FROM jobs WHERE status <> 'SUCCEEDED'", 0),
        (
            "jobs with more than one SUCCEEDED run",
            "SELECT count(*) FROM (SELECT job_id FROM job_runs WHERE outcome = 'SUCCEEDED' GROUP BY job_id HAVING count(*) > 1) d",
            0,
        ),
        (
            "sources without exactly one process_source job",
            "SELECT count(*) FROM sources s WHERE (SELECT count(*) FROM jobs j WHERE j.source_id = s.id AND j.kind = 'process_source') <> 1",
            0,
        ),
        ("dead outbox rows", "SELECT count(*) FROM outbox WHERE status = 'DEAD'", 0),
        ("dead-lettered jobs", "SELECT count(*) FROM jobs WHERE dead_lettered_at IS NOT NULL", 0),
    ];
    for (what, sql, want) in checks {
        let got: i64 = sqlx::query_scalar(sql).fetch_one(&db).await?;
        ensure!(got == *want, "{what}: expected {want}, found {got}");
    }
    let packet_pages: i64 = sqlx::query_scalar("SELECT count(*) FROM pages WHERE case_id = $1")
        .bind(packet)
        .fetch_one(&db)
        .await?;
    ensure!(
        packet_pages == 5,
        "the packet has {packet_pages} page rows, expected 5"
    );
    ensure!(
        procs.iter_mut().all(HostProc::is_running),
        "a role died during the partition"
    );
    // For the reader: what worker-a said about its stale job (the assertions above are on
    // durable state and its counters, not on this).
    if let Some(a) = procs.iter().find(|p| p.label == "worker@worker-a") {
        let log = std::fs::read_to_string(&a.log).unwrap_or_default();
        let about_job = |l: &&str| l.contains(&job.to_string());
        let failed = log
            .lines()
            .filter(about_job)
            .filter(|l| l.contains("renewal failed"))
            .count();
        println!("[worker-a] {failed} lease renewal(s) failed while cut off");
        for line in log
            .lines()
            .filter(about_job)
            .filter(|l| l.contains("lease lost"))
        {
            println!("[worker-a] {line}");
        }
    }
    // Every promise, from the operator's host.
    let (status, out) = w.cli(&["verify", "--stuck-after", "0s"])?;
    println!("{out}");
    ensure!(status.success(), "ironclad verify exited {status}");
    println!(
        "[netns_hosts] takeover by worker-b {:.1}s after the cut; every case decided {:.1}s after it; \
         worker-a back and fenced {:.1}s after its link returned; verify: exit 0",
        takeover.as_secs_f64(),
        decided_after.as_secs_f64(),
        settled_after_restore.as_secs_f64()
    );
    db.close().await;
    // Stop the roles before the servers and namespaces go.
    procs.clear();
    Ok(())
}
