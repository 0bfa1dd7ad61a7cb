//! Against the real Redis at `REDIS_URL` (default `redis://127.0.0.1:6379/`). Every test uses
//! its own key prefix, so tests run in parallel with each other and with other people's, and
//! deletes its keys when done (even when it fails). Never FLUSHALL: the Redis is shared.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ironclad_queue::{PendingSummary, Queue, QueueError, StreamConfig};

fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_owned())
}

/// A fresh, isolated configuration with short blocking and claim times.
fn config(claim_idle_ms: u64) -> StreamConfig {
    let mut cfg = StreamConfig::with_prefix(&format!("t-{}", uuid::Uuid::new_v4()));
    cfg.block = Duration::from_millis(100);
    cfg.claim_idle = Duration::from_millis(claim_idle_ms);
    cfg
}

async fn open(cfg: &StreamConfig, consumer: &str) -> Queue {
    let cfg = StreamConfig {
        consumer: consumer.to_owned(),
        ..cfg.clone()
    };
    Queue::connect(&redis_url(), cfg)
        .await
        .expect("connect to REDIS_URL")
}

/// Deletes the test's keys on drop, so a failing test cleans up too.
struct Cleanup(Vec<String>);

impl Cleanup {
    fn of(cfg: &StreamConfig) -> Self {
        Self(vec![cfg.stream.clone(), cfg.dead_stream.clone()])
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let deleted = redis::Client::open(redis_url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
            .and_then(|mut c| redis::cmd("DEL").arg(&self.0).query::<i64>(&mut c));
        if let Err(e) = deleted {
            eprintln!("cleanup of {:?} failed: {e}", self.0);
        }
    }
}

/// A plain connection for poking at Redis behind the queue's back.
async fn raw() -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis_url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("raw connection")
}

fn bodies(ds: &[ironclad_queue::Delivery]) -> Vec<String> {
    ds.iter()
        .map(|d| String::from_utf8_lossy(&d.body).into_owned())
        .collect()
}

#[tokio::test]
async fn publish_read_ack_round_trip() {
    let cfg = config(10_000);
    let _cleanup = Cleanup::of(&cfg);
    let q = open(&cfg, "a").await;
    q.ping().await.expect("ping");
    q.ensure_group().await.expect("group");

    let ids = q
        .publish(&["one".to_owned(), "two".to_owned()])
        .await
        .expect("publish");
    assert_eq!(ids.len(), 2);

    let got = q.read_new().await.expect("read");
    assert_eq!(bodies(&got), ["one", "two"]);
    assert_eq!(got.iter().map(|d| d.id.clone()).collect::<Vec<_>>(), ids);
    assert!(got.iter().all(|d| d.deliveries == 1));
    assert_eq!(q.pending_summary().await.expect("pending").count, 2);

    q.ack(&ids).await.expect("ack");
    assert_eq!(
        q.pending_summary().await.expect("pending"),
        PendingSummary::default()
    );
    assert!(q.read_new().await.expect("read again").is_empty());
    assert_eq!(q.stream_len().await.expect("len"), 2);
}

#[tokio::test]
async fn ensure_group_is_idempotent() {
    let cfg = config(10_000);
    let _cleanup = Cleanup::of(&cfg);
    let q = open(&cfg, "a").await;
    q.ensure_group().await.expect("first");
    q.ensure_group().await.expect("second");
    assert_eq!(q.stream_len().await.expect("len"), 0);
    assert!(q.read_new().await.expect("read empty").is_empty());
}

#[tokio::test]
async fn read_new_creates_a_missing_group() {
    let cfg = config(10_000);
    let _cleanup = Cleanup::of(&cfg);
    let q = open(&cfg, "a").await;
    // No ensure_group: the first read finds NOGROUP and creates it.
    assert!(q.read_new().await.expect("read").is_empty());
    q.publish(&["x".to_owned()]).await.expect("publish");
    assert_eq!(bodies(&q.read_new().await.expect("read")), ["x"]);
}

#[tokio::test]
async fn nogroup_after_redis_lost_the_stream_is_recovered() {
    let cfg = config(10_000);
    let _cleanup = Cleanup::of(&cfg);
    let q = open(&cfg, "a").await;
    q.ensure_group().await.expect("group");
    q.publish(&["old".to_owned()]).await.expect("publish old");

    // What FLUSHALL does to our keys.
    let _: i64 = redis::cmd("DEL")
        .arg(&cfg.stream)
        .query_async(&mut raw().await)
        .await
        .expect("del");

    q.publish(&["new".to_owned()]).await.expect("publish new");
    let got = q.read_new().await.expect("read recreates the group");
    assert_eq!(bodies(&got), ["new"]);
    assert_eq!(got[0].deliveries, 1);
}

#[tokio::test]
async fn reclaim_takes_over_an_idle_message_with_its_delivery_count() {
    let cfg = config(200);
    let _cleanup = Cleanup::of(&cfg);
    let a = open(&cfg, "a").await;
    let b = open(&cfg, "b").await;
    a.ensure_group().await.expect("group");
    a.publish(&["job".to_owned()]).await.expect("publish");

    let first = a.read_new().await.expect("a reads");
    assert_eq!(bodies(&first), ["job"]);
    assert!(b.reclaim().await.expect("too early").is_empty());

    tokio::time::sleep(Duration::from_millis(300)).await;
    let taken = b.reclaim().await.expect("b reclaims");
    assert_eq!(bodies(&taken), ["job"]);
    assert_eq!(taken[0].id, first[0].id);
    assert_eq!(taken[0].deliveries, 2);

    b.ack(&[taken[0].id.clone()]).await.expect("ack");
    assert_eq!(b.pending_summary().await.expect("pending").count, 0);
}

#[tokio::test]
async fn touch_prevents_reclaim_without_counting_a_delivery() {
    let cfg = config(250);
    let _cleanup = Cleanup::of(&cfg);
    let a = open(&cfg, "a").await;
    let b = open(&cfg, "b").await;
    a.ensure_group().await.expect("group");
    a.publish(&["long".to_owned()]).await.expect("publish");
    let held = a.read_new().await.expect("a reads");
    assert_eq!(held.len(), 1);

    tokio::time::sleep(Duration::from_millis(150)).await;
    a.touch(&[held[0].id.clone()]).await.expect("touch");
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(b.reclaim().await.expect("reclaim at 300 ms").is_empty());

    // Once a stops touching, b gets it; the touch did not count as a delivery.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let taken = b.reclaim().await.expect("reclaim later");
    assert_eq!(bodies(&taken), ["long"]);
    assert_eq!(taken[0].deliveries, 2);
}

#[tokio::test]
async fn reclaim_acks_and_drops_entries_whose_data_was_deleted() {
    let cfg = config(100);
    let _cleanup = Cleanup::of(&cfg);
    let a = open(&cfg, "a").await;
    let b = open(&cfg, "b").await;
    a.ensure_group().await.expect("group");
    a.publish(&["gone".to_owned(), "kept".to_owned()])
        .await
        .expect("publish");
    let held = a.read_new().await.expect("read");
    assert_eq!(held.len(), 2);
    let _: i64 = redis::cmd("XDEL")
        .arg(&cfg.stream)
        .arg(&held[0].id)
        .query_async(&mut raw().await)
        .await
        .expect("xdel");

    tokio::time::sleep(Duration::from_millis(200)).await;
    let taken = b.reclaim().await.expect("reclaim");
    assert_eq!(bodies(&taken), ["kept"]);
    assert_eq!(b.pending_summary().await.expect("pending").count, 1);
}

#[tokio::test]
async fn dead_letter_moves_body_and_reason_and_clears_pending() {
    let cfg = config(10_000);
    let _cleanup = Cleanup::of(&cfg);
    let q = open(&cfg, "a").await;
    q.ensure_group().await.expect("group");
    q.publish(&["poison".to_owned()]).await.expect("publish");
    let got = q.read_new().await.expect("read");
    assert_eq!(got.len(), 1);

    q.dead_letter(&got[0], "unparsable message")
        .await
        .expect("dead letter");
    assert_eq!(q.pending_summary().await.expect("pending").count, 0);

    let dead = q.dead_letters(10).await.expect("dead letters");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body, b"poison");
    assert_eq!(dead[0].reason, "unparsable message");
    assert_eq!(dead[0].original_id, got[0].id);
    assert_eq!(dead[0].deliveries, 1);
    assert!(dead[0].at_ms > 0);
}

#[tokio::test]
async fn garbage_entries_are_delivered_not_errors() {
    let cfg = config(10_000);
    let _cleanup = Cleanup::of(&cfg);
    let q = open(&cfg, "a").await;
    q.ensure_group().await.expect("group");
    let mut r = raw().await;
    let _: String = redis::cmd("XADD")
        .arg(&cfg.stream)
        .arg("*")
        .arg("x")
        .arg("y")
        .query_async(&mut r)
        .await
        .expect("xadd junk");
    let _: String = redis::cmd("XADD")
        .arg(&cfg.stream)
        .arg("*")
        .arg(&b"\xff\xfe"[..])
        .arg(&b"\x00\x01"[..])
        .arg("m")
        .arg(&b"\xc3\x28not utf8"[..])
        .query_async(&mut r)
        .await
        .expect("xadd binary junk");
    q.publish(&["fine".to_owned()]).await.expect("publish");

    let got = q.read_new().await.expect("junk does not fail the read");
    assert_eq!(got.len(), 3);
    assert!(got[0].body.is_empty());
    assert_eq!(got[1].body, b"\xc3\x28not utf8");
    assert_eq!(got[2].body, b"fine");
    let ids: Vec<String> = got.iter().map(|d| d.id.clone()).collect();
    q.ack(&ids).await.expect("ack junk");
    assert_eq!(q.pending_summary().await.expect("pending").count, 0);
}

#[tokio::test]
async fn pending_summary_counts_and_ages() {
    let cfg = config(10_000);
    let _cleanup = Cleanup::of(&cfg);
    let q = open(&cfg, "a").await;
    // No group yet: zeros, not an error.
    assert_eq!(
        q.pending_summary().await.expect("no group"),
        PendingSummary::default()
    );

    q.ensure_group().await.expect("group");
    assert_eq!(
        q.pending_summary().await.expect("empty"),
        PendingSummary::default()
    );
    q.publish(&["1".to_owned(), "2".to_owned(), "3".to_owned()])
        .await
        .expect("publish");
    let got = q.read_new().await.expect("read");
    q.ack(&[got[0].id.clone()]).await.expect("ack");
    tokio::time::sleep(Duration::from_millis(120)).await;

    let summary = q.pending_summary().await.expect("pending");
    assert_eq!(summary.count, 2);
    assert!(summary.oldest_idle_ms >= 100, "{summary:?}");
}

#[tokio::test]
async fn publish_a_thousand_in_one_pipeline() {
    let cfg = config(10_000);
    let _cleanup = Cleanup::of(&cfg);
    let q = open(&cfg, "a").await;
    let batch: Vec<String> = (0..1000).map(|i| format!("{{\"n\":{i}}}")).collect();
    let ids = q.publish(&batch).await.expect("publish");
    assert_eq!(ids.len(), 1000);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 1000);
    assert_eq!(q.stream_len().await.expect("len"), 1000);
    assert!(q.publish(&[]).await.expect("empty publish").is_empty());
}

#[tokio::test]
async fn connect_to_a_closed_port_fails_fast() {
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(15),
        Queue::connect(
            "redis://127.0.0.1:1/",
            StreamConfig::with_prefix("t-closed"),
        ),
    )
    .await
    .expect("connect must not hang");
    let err: QueueError = outcome.expect_err("nothing listens on port 1");
    assert!(err.is_transient(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn connect_to_a_server_that_never_answers_times_out() {
    // Accepts TCP connections and never says a word: a hung Redis.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });

    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        Queue::connect(
            &format!("redis://{addr}/"),
            StreamConfig::with_prefix("t-silent"),
        ),
    )
    .await
    .expect("connect must not hang");
    silent.abort();
    let err = outcome.expect_err("a silent server is not a Redis");
    assert!(err.is_transient(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}
