//! PostgreSQL goes away (immediate shutdown: in-flight transactions are lost, as in a crash)
//! while jobs run, twice:
//!
//! 1. for ~3 s — shorter than the 10 s pool acquire timeout, so most statements just wait for a
//!    connection and go through once the server is back, while leases (3 s) expire meanwhile;
//! 2. for ~12 s — longer than that timeout, so every role sees errors: commits fail, messages
//!    stay unacknowledged, renewals fail, the reconciler's sweep fails.
//!
//! The process must ride both out (no exit, no restart), and every case ends decided exactly
//! once, none lost.

use crate::support::{secs, Proc, Rig, SETTLE};
use anyhow::{ensure, Result};
use ironclad_testkit::private::PrivatePostgres;
use ironclad_testkit::{wait_for, TestDb};
use std::time::{Duration, Instant};

/// Cases committed before each outage.
const WAVE: i64 = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos lane: cargo test --test chaos -- --ignored --test-threads=1"]
async fn postgres_restart() {
    let pg = PrivatePostgres::start().expect("private postgres");
    let db = TestDb::on_server(&pg.url())
        .await
        .expect("test database on the private server");
    let rig = Rig::with("postgres_restart", db, &ironclad_testkit::redis_url())
        .await
        .expect("rig");
    let outcome = scenario(&rig, &pg).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig, pg: &PrivatePostgres) -> Result<()> {
    let (listen, _port) = crate::support::listen_addr()?;
    let mut all = rig.role(
        "all",
        "all",
        &[
            ("IRONCLAD_LISTEN", &listen),
            ("IRONCLAD_PROCESSOR", "test:sleep=2s"),
        ],
    )?;
    outage(rig, pg, &mut all, 1, Duration::from_secs(3)).await?;
    outage(rig, pg, &mut all, 2, Duration::from_secs(12)).await?;
    rig.wait_nothing_pending(Duration::from_secs(30)).await?;
    rig.assert_decided_exactly_once(2 * WAVE).await?;
    ensure!(
        all.is_running(),
        "`ironclad all` did not survive the PostgreSQL restarts"
    );
    Ok(())
}

/// Commits a wave of cases, stops PostgreSQL for `down` once jobs run, starts it again, and
/// waits until every case so far is decided.
async fn outage(
    rig: &Rig,
    pg: &PrivatePostgres,
    all: &mut Proc,
    wave: i64,
    down: Duration,
) -> Result<()> {
    for _ in 0..WAVE {
        rig.commit_case(1).await?;
    }
    wait_for("jobs in flight", Duration::from_secs(30), || async {
        Ok((rig
            .count("SELECT count(*) FROM jobs WHERE status = 'RUNNING'")
            .await?
            > 0)
        .then_some(()))
    })
    .await?;
    let decided_before = rig.count("SELECT count(*) FROM decisions").await?;
    ensure!(
        decided_before < wave * WAVE,
        "every case was decided before the stop; nothing was in flight"
    );

    let stopped_at = Instant::now();
    pg.stop()?;
    tokio::time::sleep(down).await;
    ensure!(
        all.is_running(),
        "`ironclad all` exited while PostgreSQL was down\n{}",
        all.log_tail(30)
    );
    pg.start_server()?;
    let restarted_at = Instant::now();
    println!(
        "[postgres_restart] outage {wave}: PostgreSQL down {} with {decided_before}/{} cases decided",
        secs(restarted_at.duration_since(stopped_at)),
        wave * WAVE
    );
    rig.wait_decided(wave * WAVE, SETTLE, true).await?;
    println!(
        "[postgres_restart] outage {wave}: all cases decided {} after the restart",
        secs(restarted_at.elapsed())
    );
    Ok(())
}
