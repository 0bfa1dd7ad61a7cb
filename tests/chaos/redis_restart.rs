//! Redis is killed (SIGKILL) while cases are in flight and comes back empty (no persistence,
//! as in production). While it is down, intake keeps accepting cases (PostgreSQL is the record)
//! and the roles keep retrying; once it is back, every case is decided exactly once.

use crate::support::{listen_addr, secs, submit_cases, Api, Rig, SETTLE};
use anyhow::{ensure, Result};
use ironclad_testkit::private::PrivateRedis;
use ironclad_testkit::wait_for;
use std::time::{Duration, Instant};

const BEFORE: usize = 15;
const DURING: usize = 15;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos lane: cargo test --test chaos -- --ignored --test-threads=1"]
async fn redis_restart_without_persistence() {
    let redis = PrivateRedis::start().expect("private redis");
    let db = ironclad_testkit::TestDb::new()
        .await
        .expect("test database");
    let rig = Rig::with("redis_restart", db, &redis.url())
        .await
        .expect("rig");
    let outcome = scenario(&rig, &redis).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig, redis: &PrivateRedis) -> Result<()> {
    let (listen, port) = listen_addr()?;
    let mut all = rig.role(
        "all",
        "all",
        &[
            ("IRONCLAD_LISTEN", &listen),
            ("IRONCLAD_PROCESSOR", "test:sleep=1s"),
        ],
    )?;
    let api = Api::new(rig, port)?;
    api.wait_live(Duration::from_secs(30)).await?;

    submit_cases(&api, "before restart", BEFORE).await?;
    wait_for("jobs in flight", Duration::from_secs(30), || async {
        Ok((rig
            .count("SELECT count(*) FROM jobs WHERE status = 'RUNNING'")
            .await?
            > 0)
        .then_some(()))
    })
    .await?;
    let decided_before = rig.count("SELECT count(*) FROM decisions").await?;
    let killed_at = Instant::now();
    redis.kill()?;
    println!("[redis_restart] Redis killed with {decided_before}/{BEFORE} cases decided");
    ensure!(
        (decided_before as usize) < BEFORE,
        "all cases were decided before the kill; nothing was in flight"
    );

    // Intake does not need Redis: a 201 is a PostgreSQL commit.
    submit_cases(&api, "while redis is down", DURING).await?;
    let down_for = Duration::from_secs(3).saturating_sub(killed_at.elapsed());
    tokio::time::sleep(down_for).await;
    redis.restart()?;
    let restarted_at = Instant::now();
    println!(
        "[redis_restart] Redis back (empty) after {}",
        secs(killed_at.elapsed())
    );

    let total = (BEFORE + DURING) as i64;
    rig.wait_decided(total, SETTLE, false).await?;
    println!(
        "[redis_restart] all {total} cases decided {} after the restart",
        secs(restarted_at.elapsed())
    );
    rig.wait_nothing_pending(Duration::from_secs(30)).await?;
    rig.assert_decided_exactly_once(total).await?;
    ensure!(
        all.is_running(),
        "`ironclad all` did not survive the Redis restart"
    );
    Ok(())
}
