//! Redis forgets everything (FLUSHALL) while cases are in flight: the stream, the consumer group
//! and its pending list are gone. PostgreSQL still knows every job, so the work is delayed —
//! the group is recreated on the next read, the reconciler re-announces what no message carries
//! — never lost, and never done twice.

use crate::support::{listen_addr, secs, submit_cases, Api, Rig, SETTLE};
use anyhow::{ensure, Result};
use ironclad_testkit::private::PrivateRedis;
use ironclad_testkit::wait_for;
use std::time::{Duration, Instant};

const BEFORE: usize = 15;
const AFTER: usize = 15;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos lane: cargo test --test chaos -- --ignored --test-threads=1"]
async fn redis_flushall_under_load() {
    let redis = PrivateRedis::start().expect("private redis");
    let db = ironclad_testkit::TestDb::new()
        .await
        .expect("test database");
    let rig = Rig::with("redis_flushall", db, &redis.url())
        .await
        .expect("rig");
    let outcome = scenario(&rig, &redis).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig, redis: &PrivateRedis) -> Result<()> {
    let (listen, port) = listen_addr()?;
    let _all = rig.role(
        "all",
        "all",
        &[
            ("IRONCLAD_LISTEN", &listen),
            ("IRONCLAD_PROCESSOR", "test:sleep=1s"),
        ],
    )?;
    let api = Api::new(rig, port)?;
    api.wait_live(Duration::from_secs(30)).await?;

    submit_cases(&api, "before flush", BEFORE).await?;
    wait_for("jobs in flight", Duration::from_secs(30), || async {
        Ok((rig
            .count("SELECT count(*) FROM jobs WHERE status = 'RUNNING'")
            .await?
            > 0)
        .then_some(()))
    })
    .await?;
    let decided_before = rig.count("SELECT count(*) FROM decisions").await?;
    let flushed_at = Instant::now();
    redis.flushall()?;
    println!(
        "[redis_flushall] FLUSHALL with {decided_before}/{BEFORE} cases decided; {}",
        rig.snapshot().await
    );
    ensure!(
        (decided_before as usize) < BEFORE,
        "all cases were decided before the flush; nothing was in flight"
    );

    submit_cases(&api, "after flush", AFTER).await?;
    let total = (BEFORE + AFTER) as i64;
    rig.wait_decided(total, SETTLE, false).await?;
    println!(
        "[redis_flushall] all {total} cases decided {} after the flush",
        secs(flushed_at.elapsed())
    );
    rig.wait_nothing_pending(Duration::from_secs(30)).await?;
    rig.assert_decided_exactly_once(total).await?;
    Ok(())
}
