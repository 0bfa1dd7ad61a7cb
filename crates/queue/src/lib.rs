//! Ironclad's Redis Streams transport.
//!
//! **What.** Moves opaque message bodies (the worker parses them as
//! `ironclad_core::envelope::Envelope`) through one stream and one consumer group:
//! [`Queue::publish`] (pipelined `XADD`), [`Queue::read_new`] (`XREADGROUP`), [`Queue::ack`],
//! [`Queue::touch`], recovery of stalled messages with [`Queue::reclaim`] (`XAUTOCLAIM`), and a
//! dead-letter stream ([`Queue::dead_letter`]). No PostgreSQL here: the database is the source
//! of truth and this stream is only a fast, loss-tolerated way to say "job X is due".
//!
//! **The one design choice.** Delivery state lives only in Redis' pending-entries list (PEL) of
//! the consumer group; this crate keeps none in memory. A message stays pending until the caller
//! acks it after committing its outcome; any consumer may take over a message that has been
//! idle longer than `claim_idle`, and a live worker keeps its in-flight messages fresh with
//! [`Queue::touch`] so they are not taken. A crashed worker therefore needs no cleanup: its
//! messages simply go idle and are reclaimed, with their true delivery counts.
//!
//! **Its cost.** Delivery is at-least-once: a worker that stalls longer than `claim_idle`
//! without touching (pause, partition) has its message processed by another worker too, and
//! the database's conditional claim with a lease must make that harmless. The PEL also dies
//! with Redis' data (FLUSHALL, restart without persistence): then pending messages are simply
//! gone — the group is recreated on the next read ([`QueueError::is_no_group`]) and the
//! reconciler re-emits, from PostgreSQL, the work no message carries any more.
//!
//! Blocking reads use a second, lazily opened connection, serialised per [`Queue`] (and its
//! clones): a blocking `XREADGROUP` on the shared multiplexed connection would hold up every
//! `ack`/`touch`/`publish` behind it for up to `block`. Run several readers in parallel by
//! connecting several `Queue`s.

#![deny(missing_docs)]

mod config;
mod consume;
mod dead_letter;
mod error;
mod inspect;
mod publish;
mod recover;
mod reply;

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

pub use config::{default_consumer_name, StreamConfig};
pub use dead_letter::DeadLetter;
pub use error::QueueError;
pub use inspect::GroupInfo;
pub use recover::PendingSummary;

/// Each TCP connect attempt gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Hard deadline for [`Queue::connect`] (and for opening the reader), whatever the retries do.
const CONNECT_DEADLINE: Duration = Duration::from_secs(8);
/// Non-blocking commands (including a 1000-entry pipeline) answer well within this.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// A blocking read may take `block` plus this before it counts as timed out.
const BLOCK_MARGIN: Duration = Duration::from_secs(3);
/// Reconnect attempts after the first failure. Kept at one so that, while Redis is down,
/// commands fail within seconds (the callers back off and retry) instead of queueing behind a
/// long reconnect loop.
const RECONNECT_RETRIES: usize = 1;

/// A message handed to a consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Stream entry id (what [`Queue::ack`], [`Queue::touch`] and [`Queue::dead_letter`] take).
    pub id: String,
    /// The value of the entry's `m` field; empty when the entry has none (junk is still
    /// delivered, so the worker can dead-letter it).
    pub body: Vec<u8>,
    /// How many times the group has delivered this entry, this delivery included.
    pub deliveries: u64,
}

/// A handle on the job stream for one consumer. Cheap to clone; clones share the connections.
#[derive(Clone)]
pub struct Queue {
    /// Shared multiplexed connection for every non-blocking command.
    conn: ConnectionManager,
    /// Connection for blocking reads, opened on the first read; the lock makes reads take turns.
    reader: Arc<tokio::sync::Mutex<Option<ConnectionManager>>>,
    client: redis::Client,
    cfg: Arc<StreamConfig>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("config", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Queue {
    /// Connects to Redis at `url`. Fails (rather than hanging) within a few seconds when Redis
    /// is unreachable. Does not create the group: call [`Queue::ensure_group`] (readers do it
    /// themselves when the group is missing).
    pub async fn connect(url: &str, cfg: StreamConfig) -> Result<Self, QueueError> {
        let client = redis::Client::open(url)?;
        let conn = open_manager(&client, RESPONSE_TIMEOUT).await?;
        Ok(Self {
            conn,
            reader: Arc::new(tokio::sync::Mutex::new(None)),
            client,
            cfg: Arc::new(cfg),
        })
    }

    /// The configuration this queue was opened with.
    pub fn config(&self) -> &StreamConfig {
        &self.cfg
    }

    /// Round trip to Redis (readiness checks).
    pub async fn ping(&self) -> Result<(), QueueError> {
        let _: String = redis::cmd("PING").query_async(&mut self.conn()).await?;
        Ok(())
    }

    /// Creates the stream and the consumer group (reading from the start of the stream) if
    /// missing. Idempotent.
    pub async fn ensure_group(&self) -> Result<(), QueueError> {
        let created: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&self.cfg.stream)
            .arg(&self.cfg.group)
            // "0", not "$": after Redis lost its data, entries published before the group was
            // recreated must still be read.
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut self.conn())
            .await;
        match created {
            Ok(()) => Ok(()),
            Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Number of entries in the work stream (0 when it does not exist).
    pub async fn stream_len(&self) -> Result<u64, QueueError> {
        Ok(redis::cmd("XLEN")
            .arg(&self.cfg.stream)
            .query_async(&mut self.conn())
            .await?)
    }

    /// A handle on the shared connection (an `Arc` clone; commands need `&mut`).
    fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }
}

/// Opens a connection manager with bounded connect and response times.
async fn open_manager(
    client: &redis::Client,
    response_timeout: Duration,
) -> Result<ConnectionManager, QueueError> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(CONNECT_TIMEOUT)
        .set_response_timeout(response_timeout)
        .set_number_of_retries(RECONNECT_RETRIES)
        // redis 0.32 hands `factor` to backon as the growth multiplier (first delay is a fixed
        // 1 s); its default of 100 would make the second delay 100 s.
        .set_factor(2)
        .set_max_delay(2_000);
    let opening = ConnectionManager::new_with_config(client.clone(), config);
    match tokio::time::timeout(CONNECT_DEADLINE, opening).await {
        Ok(manager) => Ok(manager?),
        Err(_) => Err(QueueError::ConnectTimeout(CONNECT_DEADLINE)),
    }
}
