//! The fault schedule and how each fault is struck.
//!
//! A schedule is drawn from the seed: every fault type at least once (every crash point in
//! turn), in a shuffled order, with seeded gaps between them. Faults strike one at a time:
//! each is struck, held for its duration, cleared, and recorded with the jobs that were in
//! flight when it struck (read from PostgreSQL just before, or just after an abort), which is
//! what the report measures recovery and damage against.

use super::cluster::{aborted, Cluster};
use chrono::{DateTime, Utc};
use ironclad_core::faults::FaultPoint;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use serde::Serialize;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// One kind of fault.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Fault {
    /// kill -9 of one role process, restarted after a moment.
    Kill9 { role: String },
    /// A role process restarted with a fault point armed to abort there.
    CrashPoint { point: &'static str },
    /// Redis FLUSHALL: every stream, group and pending list gone.
    RedisFlushall,
    /// Redis killed and started again empty (no persistence).
    RedisRestart,
    /// Redis down for this long (killed), then started again empty.
    RedisDown { secs: u64 },
    /// PostgreSQL stopped (immediate) for this long, then started.
    PostgresStop { secs: u64 },
    /// PostgreSQL immediate shutdown and start.
    PostgresRestart,
    /// `pg_terminate_backend` of every role's connection.
    TerminateBackends,
    /// Already processed envelopes published to the stream again.
    DuplicateMessages,
    /// A worker whose next job sleeps past the stream's idle threshold mid-read.
    SlowJob { secs: u64 },
    /// Requests with bad keys and `/metrics` scrapes, many at once.
    Flood { requests: usize },
}

impl Fault {
    /// The row of the report this fault counts in.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Kill9 { .. } => "kill -9 of a role",
            Self::CrashPoint { .. } => "crash point (abort)",
            Self::RedisFlushall => "Redis FLUSHALL",
            Self::RedisRestart => "Redis restart, empty",
            Self::RedisDown { .. } => "Redis down, then empty",
            Self::PostgresStop { .. } => "PostgreSQL stopped",
            Self::PostgresRestart => "PostgreSQL immediate restart",
            Self::TerminateBackends => "pg_terminate_backend",
            Self::DuplicateMessages => "duplicate stream messages",
            Self::SlowJob { .. } => "job slower than the idle threshold",
            Self::Flood { .. } => "flood of bad keys and scrapes",
        }
    }
}

/// How long things last in this run.
#[derive(Debug, Clone)]
pub struct Pace {
    /// Gap between two faults (drawn between the bounds).
    pub gap: (Duration, Duration),
    /// PostgreSQL stop duration bounds, in seconds (also how long Redis stays down).
    pub pg_stop_secs: (u64, u64),
    /// The stream's idle threshold (a slow job sleeps 2.5× it).
    pub claim_idle: Duration,
    /// Requests per flood.
    pub flood_requests: usize,
    /// kill -9 faults per schedule.
    pub kills: usize,
}

/// The seeded schedule: every type at least once, every crash point once.
pub fn schedule(rng: &mut StdRng, pace: &Pace) -> Vec<Fault> {
    let roles = [
        "api",
        "dispatcher-1",
        "dispatcher-2",
        "worker-1",
        "worker-2",
        "reconciler",
    ];
    let mut faults: Vec<Fault> = (0..pace.kills.max(1))
        .map(|i| Fault::Kill9 {
            // The first kill always hits a worker (the costliest recovery).
            role: if i == 0 {
                ["worker-1", "worker-2"]
                    .choose(rng)
                    .copied()
                    .unwrap_or("worker-1")
            } else {
                roles.choose(rng).copied().unwrap_or("worker-1")
            }
            .to_owned(),
        })
        .collect();
    faults.extend(
        FaultPoint::ALL
            .iter()
            .map(|p| Fault::CrashPoint { point: p.as_str() }),
    );
    faults.extend([
        Fault::RedisFlushall,
        Fault::RedisRestart,
        Fault::RedisDown {
            secs: rng.random_range(pace.pg_stop_secs.0..=pace.pg_stop_secs.1),
        },
        Fault::PostgresStop {
            secs: rng.random_range(pace.pg_stop_secs.0..=pace.pg_stop_secs.1),
        },
        Fault::PostgresRestart,
        Fault::TerminateBackends,
        Fault::DuplicateMessages,
        Fault::SlowJob {
            secs: (pace.claim_idle.as_secs_f64() * 2.5).ceil() as u64,
        },
        Fault::Flood {
            requests: pace.flood_requests,
        },
    ]);
    faults.shuffle(rng);
    faults
}

/// A job in flight when a fault struck: running, or due and waiting to run (a job waiting for
/// a later retry time is not in flight: its next run says nothing about recovery).
#[derive(Debug, Clone, Serialize)]
pub struct InFlight {
    pub job: Uuid,
    pub case: Uuid,
    pub status: String,
    /// Consumer holding its open run (`<host>-<pid>`), if running.
    pub owner: Option<String>,
}

/// What one fault did.
#[derive(Debug, Clone, Serialize)]
pub struct Struck {
    pub fault: Fault,
    /// False when the fault could not be made to happen (a crash point never reached).
    pub injected: bool,
    pub detail: String,
    pub struck_at: DateTime<Utc>,
    pub cleared_at: DateTime<Utc>,
    /// The work it hit.
    pub hit: Vec<InFlight>,
}

/// Extra submissions made while a crash point is armed; their ledger entries go to `entries`.
pub struct Probe {
    pub spec: super::load::LoadSpec,
    /// Sequence number of the first probe (the next ones follow).
    pub first_seq: u64,
    pub dossier: super::dossiers::Dossier,
    pub entries: std::sync::Arc<std::sync::Mutex<Vec<ironclad_store::ledger::LedgerEntry>>>,
}

impl Probe {
    /// Submits one dossier every `every` (each retried until answered, concurrently), at most
    /// `most`, until aborted.
    async fn run_until(self, every: Duration, most: u64) {
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..most {
            let (spec, dossier, entries) = (
                self.spec.clone(),
                self.dossier.clone(),
                self.entries.clone(),
            );
            let seq = self.first_seq + n;
            tasks.spawn(async move {
                let entry = super::load::submit_one(&spec, seq, &dossier).await;
                entries
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(entry);
            });
            tokio::time::sleep(every).await;
        }
        while tasks.join_next().await.is_some() {}
    }
}

const IN_FLIGHT: &str = r#"
SELECT j.id, j.case_id, j.status,
       (SELECT r.owner FROM job_runs r WHERE r.job_id = j.id AND r.outcome IS NULL LIMIT 1)
FROM jobs j
WHERE j.status = 'RUNNING' OR (j.status = 'PENDING' AND j.next_attempt_at <= now())
"#;

/// Jobs in flight now (empty if PostgreSQL does not answer within 5 s).
async fn in_flight(db: &sqlx::PgPool) -> Vec<InFlight> {
    type Row = (Uuid, Uuid, String, Option<String>);
    let rows = tokio::time::timeout(
        Duration::from_secs(5),
        sqlx::query_as::<_, Row>(IN_FLIGHT).fetch_all(db),
    )
    .await;
    rows.ok()
        .and_then(Result::ok)
        .unwrap_or_default()
        .into_iter()
        .map(|(job, case, status, owner)| InFlight {
            job,
            case,
            status,
            owner,
        })
        .collect()
}

/// Keeps only the work a process held (its running jobs), for faults that hit one worker.
fn held_by(hit: Vec<InFlight>, pid: u32) -> Vec<InFlight> {
    let suffix = format!("-{pid}");
    hit.into_iter()
        .filter(|j| j.owner.as_deref().is_some_and(|o| o.ends_with(&suffix)))
        .collect()
}

/// Keeps the waiting work (for faults that hit announcement: a dispatcher, the API, the
/// reconciler).
fn waiting(hit: Vec<InFlight>) -> Vec<InFlight> {
    hit.into_iter().filter(|j| j.status == "PENDING").collect()
}

/// Strikes one fault, holds it, clears it.
pub async fn strike(
    cluster: &mut Cluster,
    db: &sqlx::PgPool,
    fault: &Fault,
    rng: &mut StdRng,
    probe: Option<Probe>,
) -> anyhow::Result<Struck> {
    let mut record = Struck {
        fault: fault.clone(),
        injected: true,
        detail: String::new(),
        struck_at: Utc::now(),
        cleared_at: Utc::now(),
        hit: Vec::new(),
    };
    match fault {
        Fault::Kill9 { role } => {
            let index = cluster
                .roles
                .iter()
                .position(|r| &r.name == role)
                .unwrap_or(0);
            let pid = cluster.roles[index].pid;
            let all = in_flight(db).await;
            record.struck_at = Utc::now();
            cluster.roles[index].kill9().await;
            record.hit = if cluster.roles[index].role == "worker" {
                held_by(all, pid)
            } else {
                waiting(all)
            };
            tokio::time::sleep(Duration::from_millis(rng.random_range(1000..3000))).await;
            cluster.start_role(index, None).await?;
            record.cleared_at = Utc::now();
            record.detail = format!("{role} (pid {pid})");
        }
        Fault::CrashPoint { point } => {
            let point_role = FaultPoint::parse(point)
                .map(|p| p.role())
                .unwrap_or("worker");
            let subcommand = if point_role == "api" {
                "serve"
            } else {
                point_role
            };
            let candidates = cluster.of_role(subcommand);
            let index = *candidates.choose(rng).unwrap_or(&0);
            cluster
                .start_role(index, Some(&format!("{point}=abort")))
                .await?;
            let pid = cluster.roles[index].pid;
            // Fresh cases flow through every point (intake, dispatch, read, finalize), one every
            // 2 s until the point is reached, so it is reached even when the main load has
            // drained and whichever worker takes the jobs.
            let probing = probe.map(|p| tokio::spawn(p.run_until(Duration::from_secs(2), 20)));
            let status = cluster.roles[index]
                .wait_exit(Duration::from_secs(45))
                .await;
            if let Some(p) = &probing {
                p.abort();
            }
            record.struck_at = Utc::now();
            let all = in_flight(db).await;
            record.hit = if subcommand == "worker" {
                held_by(all, pid)
            } else {
                waiting(all)
            };
            record.injected = status.as_ref().is_some_and(aborted);
            record.detail = match &status {
                Some(s) if aborted(s) => {
                    format!("{} aborted at {point}", cluster.roles[index].name)
                }
                Some(s) => format!(
                    "{} ended with {s} before reaching {point}",
                    cluster.roles[index].name
                ),
                None => format!("{point} not reached within 45 s"),
            };
            cluster.start_role(index, None).await?;
            record.cleared_at = Utc::now();
            if let Some(probing) = probing {
                // Aborted on purpose once the point was reached; what it submitted so far is
                // in the shared list.
                let _ = probing.await;
            }
        }
        Fault::RedisFlushall => {
            record.hit = in_flight(db).await;
            record.struck_at = Utc::now();
            cluster.redis.flushall()?;
            record.cleared_at = Utc::now();
        }
        Fault::RedisRestart => {
            record.hit = in_flight(db).await;
            record.struck_at = Utc::now();
            cluster.redis.kill()?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            cluster.redis.restart()?;
            record.cleared_at = Utc::now();
        }
        Fault::RedisDown { secs } => {
            record.hit = in_flight(db).await;
            record.struck_at = Utc::now();
            cluster.redis.kill()?;
            tokio::time::sleep(Duration::from_secs(*secs)).await;
            cluster.redis.restart()?;
            record.cleared_at = Utc::now();
            record.detail = format!("down {secs} s");
        }
        Fault::PostgresStop { secs } => {
            record.hit = in_flight(db).await;
            record.struck_at = Utc::now();
            cluster.pg.stop()?;
            tokio::time::sleep(Duration::from_secs(*secs)).await;
            cluster.pg.start_server()?;
            record.cleared_at = Utc::now();
            record.detail = format!("down {secs} s");
        }
        Fault::PostgresRestart => {
            record.hit = in_flight(db).await;
            record.struck_at = Utc::now();
            cluster.pg.stop()?;
            cluster.pg.start_server()?;
            record.cleared_at = Utc::now();
        }
        Fault::TerminateBackends => {
            record.hit = in_flight(db).await;
            record.struck_at = Utc::now();
            let killed: Vec<bool> = sqlx::query_scalar(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
            )
            .fetch_all(db)
            .await?;
            record.cleared_at = Utc::now();
            record.detail = format!("{} connection(s) terminated", killed.len());
        }
        Fault::DuplicateMessages => {
            record.hit = in_flight(db).await;
            record.struck_at = Utc::now();
            let n = duplicate_messages(&cluster.redis.url(), rng).await?;
            record.cleared_at = Utc::now();
            record.detail = format!("{n} envelope(s) published again");
        }
        Fault::SlowJob { secs } => {
            let workers = cluster.of_role("worker");
            let index = *workers.choose(rng).unwrap_or(&0);
            cluster
                .start_role(index, Some(&format!("worker_mid_read=sleep:{secs}s")))
                .await?;
            record.struck_at = Utc::now();
            record.cleared_at = record.struck_at + chrono::Duration::seconds(*secs as i64);
            let pid = cluster.roles[index].pid;
            record.detail = format!(
                "{} (pid {pid}) sleeps {secs} s inside its next job",
                cluster.roles[index].name
            );
            // Mid-sleep, the job it holds is the one that outlives the idle threshold.
            tokio::time::sleep(Duration::from_secs(*secs) / 2).await;
            record.hit = held_by(in_flight(db).await, pid);
            tokio::time::sleep(Duration::from_secs(*secs) / 2 + Duration::from_secs(1)).await;
        }
        Fault::Flood { requests } => {
            record.struck_at = Utc::now();
            record.detail = flood(&cluster.api_url(), *requests, rng).await;
            record.cleared_at = Utc::now();
        }
    }
    Ok(record)
}

/// Publishes up to 50 envelopes already in the stream again; how many.
async fn duplicate_messages(redis_url: &str, rng: &mut StdRng) -> anyhow::Result<usize> {
    let client = redis::Client::open(redis_url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let stream = ironclad_queue::StreamConfig::default().stream;
    let entries: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
        .arg(&stream)
        .arg("-")
        .arg("+")
        .arg("COUNT")
        .arg(500)
        .query_async(&mut conn)
        .await
        .unwrap_or_default();
    let mut bodies: Vec<String> = entries
        .ids
        .iter()
        .filter_map(|e| e.get::<String>("m"))
        .collect();
    bodies.shuffle(rng);
    bodies.truncate(50);
    for body in &bodies {
        let _: String = redis::cmd("XADD")
            .arg(&stream)
            .arg("*")
            .arg("m")
            .arg(body)
            .query_async(&mut conn)
            .await?;
    }
    Ok(bodies.len())
}

/// `requests` requests, 32 at a time: unknown and malformed keys on `/v1/cases`, and `/metrics`
/// scrapes. Returns the statuses seen and how long it took.
async fn flood(api: &str, requests: usize, rng: &mut StdRng) -> String {
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(c) => c,
        Err(e) => return format!("no client: {e}"),
    };
    let plan: Vec<u8> = (0..requests).map(|_| rng.random_range(0..3)).collect();
    let started = Instant::now();
    let statuses = std::sync::Arc::new(std::sync::Mutex::new(
        std::collections::BTreeMap::<u16, u64>::new(),
    ));
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in plan.chunks(requests.div_ceil(32).max(1)) {
        let (client, api, chunk, statuses) = (
            client.clone(),
            api.to_owned(),
            chunk.to_vec(),
            statuses.clone(),
        );
        tasks.spawn(async move {
            for kind in chunk {
                let request = match kind {
                    0 => {
                        // Well-formed (ick_ + 48 hex) but unknown.
                        let hex = format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
                        client
                            .get(format!("{api}/v1/cases"))
                            .bearer_auth(format!("ick_{}", &hex[..48]))
                    }
                    1 => client
                        .get(format!("{api}/v1/cases"))
                        .bearer_auth("not-a-key"),
                    _ => client.get(format!("{api}/metrics")),
                };
                let status = request
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0);
                *statuses
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(status)
                    .or_default() += 1;
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let statuses = statuses.lock().unwrap_or_else(|p| p.into_inner()).clone();
    format!(
        "{requests} requests in {:.1} s, statuses {statuses:?}",
        started.elapsed().as_secs_f64()
    )
}
