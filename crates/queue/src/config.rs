//! Stream, group and consumer names plus the knobs of reading and recovery.

use std::time::Duration;

/// Where messages live and how they are read. `Default` gives the production names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamConfig {
    /// The work stream.
    pub stream: String,
    /// The dead-letter stream.
    pub dead_stream: String,
    /// The consumer group every worker joins.
    pub group: String,
    /// This process's consumer name within the group; must be unique per live process, or two
    /// processes would share (and touch) each other's pending messages.
    pub consumer: String,
    /// Approximate `MAXLEN ~` cap applied on every `XADD` (work and dead streams). Only a
    /// backstop against unbounded growth: PostgreSQL, not the stream, is the record of work.
    pub max_len: usize,
    /// `XREADGROUP` / `XAUTOCLAIM` `COUNT`.
    pub read_count: usize,
    /// `XREADGROUP` `BLOCK`; zero means do not block (never "block forever").
    pub block: Duration,
    /// Minimum idle time before another consumer may take a pending message (`XAUTOCLAIM`).
    pub claim_idle: Duration,
    /// Deliveries after which the worker dead-letters a message (enforced by the worker).
    pub max_deliveries: u64,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            stream: "ironclad:jobs".to_owned(),
            dead_stream: "ironclad:dead".to_owned(),
            group: "ironclad-workers".to_owned(),
            consumer: default_consumer_name(),
            max_len: 1_000_000,
            read_count: 16,
            block: Duration::from_secs(2),
            claim_idle: Duration::from_secs(10),
            max_deliveries: 5,
        }
    }
}

impl StreamConfig {
    /// The default configuration with `prefix` + `:` in front of the stream, dead stream and
    /// group names, e.g. `t-<uuid>:ironclad:jobs`, so tests (or tenants of one Redis) do not
    /// see each other's messages.
    pub fn with_prefix(prefix: &str) -> Self {
        let d = Self::default();
        Self {
            stream: format!("{prefix}:{}", d.stream),
            dead_stream: format!("{prefix}:{}", d.dead_stream),
            group: format!("{prefix}:{}", d.group),
            ..d
        }
    }

    /// `block` in whole milliseconds (0 = do not block).
    pub(crate) fn block_ms(&self) -> u64 {
        duration_ms(self.block)
    }

    /// `claim_idle` in whole milliseconds.
    pub(crate) fn claim_idle_ms(&self) -> u64 {
        duration_ms(self.claim_idle)
    }

    /// `read_count`, at least 1 (`COUNT 0` would mean "no limit" to Redis).
    pub(crate) fn count(&self) -> usize {
        self.read_count.max(1)
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `<hostname>-<pid>`: unique per live process on a host, and readable in `XINFO CONSUMERS`.
pub fn default_consumer_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "host".to_owned());
    format!("{host}-{}", std::process::id())
}
