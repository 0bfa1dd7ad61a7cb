//! Recovery: taking over messages whose consumer went quiet, and measuring the pending list.

use std::collections::{HashMap, HashSet};

use redis::Value;

use crate::error::{is_no_group, unexpected};
use crate::{reply, Delivery, Queue, QueueError};

/// At most this many `XAUTOCLAIM` pages per [`Queue::reclaim`] call: bounds the time one call
/// spends scanning a long pending list (the next call starts over from the beginning).
const MAX_RECLAIM_PAGES: usize = 4;

/// What is delivered but not yet acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PendingSummary {
    /// Pending messages in the group.
    pub count: u64,
    /// Idle time of the lowest-id (oldest) pending message, in ms; 0 when none.
    pub oldest_idle_ms: u64,
}

impl Queue {
    /// Takes over up to `read_count` messages that have been pending (delivered, not acked)
    /// for longer than `claim_idle`, whoever holds them, and returns them with their true
    /// delivery counts (this delivery included). Entries whose data was deleted from the stream
    /// are acknowledged and dropped. Recreates a lost group like [`Queue::read_new`].
    pub async fn reclaim(&self) -> Result<Vec<Delivery>, QueueError> {
        self.reclaim_up_to(self.cfg.count()).await
    }

    /// [`Queue::reclaim`], taking over at most `count` messages (at least 1): a worker passes
    /// its free slots, so that it never holds a message it cannot start.
    pub async fn reclaim_up_to(&self, count: usize) -> Result<Vec<Delivery>, QueueError> {
        match self.reclaim_once(count).await {
            Err(QueueError::Redis(e)) if is_no_group(&e) => {
                tracing::warn!(stream = %self.cfg.stream, group = %self.cfg.group,
                    "consumer group missing (redis lost its data?); recreating it");
                self.ensure_group().await?;
                self.reclaim_once(count).await
            }
            other => other,
        }
    }

    async fn reclaim_once(&self, count: usize) -> Result<Vec<Delivery>, QueueError> {
        let want = count.clamp(1, self.cfg.count());
        let mut claimed: Vec<(String, Vec<u8>)> = Vec::new();
        let mut deleted: Vec<String> = Vec::new();
        let mut cursor = "0-0".to_owned();
        for _ in 0..MAX_RECLAIM_PAGES {
            let value: Value = redis::cmd("XAUTOCLAIM")
                .arg(&self.cfg.stream)
                .arg(&self.cfg.group)
                .arg(&self.cfg.consumer)
                .arg(self.cfg.claim_idle_ms())
                .arg(&cursor)
                .arg("COUNT")
                .arg(want - claimed.len())
                .query_async(&mut self.conn())
                .await?;
            let parts = reply::items(&value);
            cursor = parts
                .first()
                .and_then(reply::text)
                .ok_or_else(|| unexpected("XAUTOCLAIM", "no cursor"))?;
            for entry in parts.get(1).map(reply::entries).unwrap_or_default() {
                match entry.fields {
                    // Redis 6.2 reports a deleted entry in place, and keeps it pending.
                    None => deleted.push(entry.id),
                    Some(_) => {
                        let body = entry.field("m").map(<[u8]>::to_vec).unwrap_or_default();
                        claimed.push((entry.id, body));
                    }
                }
            }
            // Redis 7 lists deleted entries in a third element (already dropped from the PEL;
            // the ack below is then a harmless no-op).
            deleted.extend(
                reply::items(parts.get(2).unwrap_or(&Value::Nil))
                    .iter()
                    .filter_map(reply::text),
            );
            if cursor == "0-0" || claimed.len() >= want {
                break;
            }
        }

        if claimed.is_empty() && deleted.is_empty() {
            return Ok(Vec::new());
        }

        // One round trip: ack the deleted entries and ask for each claimed entry's delivery
        // count (XAUTOCLAIM's reply does not carry it).
        let mut pipe = redis::pipe();
        if !deleted.is_empty() {
            tracing::warn!(
                count = deleted.len(),
                "acking pending entries whose data was deleted"
            );
            pipe.cmd("XACK")
                .arg(&self.cfg.stream)
                .arg(&self.cfg.group)
                .arg(&deleted)
                .ignore();
        }
        for (id, _) in &claimed {
            pipe.cmd("XPENDING")
                .arg(&self.cfg.stream)
                .arg(&self.cfg.group)
                .arg(id)
                .arg(id)
                .arg(1)
                .arg(&self.cfg.consumer);
        }
        let replies: Vec<Value> = pipe.query_async(&mut self.conn()).await?;
        let mut counts: HashMap<String, u64> = HashMap::new();
        for pending in replies.iter().flat_map(reply::items) {
            // [id, consumer, idle ms, delivery count]
            let fields = reply::items(pending);
            if let (Some(id), Some(n)) = (
                fields.first().and_then(reply::text),
                fields.get(3).and_then(reply::number),
            ) {
                counts.insert(id, n);
            }
        }

        Ok(claimed
            .into_iter()
            .filter_map(|(id, body)| match counts.get(&id) {
                Some(&deliveries) => Some(Delivery {
                    id,
                    body,
                    deliveries,
                }),
                None => {
                    // Acked (or taken) between the two commands: no longer ours to run.
                    tracing::debug!(%id, "reclaimed entry no longer pending for this consumer");
                    None
                }
            })
            .collect())
    }

    /// Which of `ids` (entry ids of the work stream) still carry work: the entry exists and
    /// either has not been delivered to the group yet or is delivered and unacknowledged (in
    /// some consumer's pending list, where recovery will find it). An entry acknowledged,
    /// trimmed, or lost with Redis' data (FLUSHALL, restart without persistence) is not live.
    /// One pipelined round trip; a missing stream or group means nothing is live.
    pub async fn live_entries(&self, ids: &[String]) -> Result<HashSet<String>, QueueError> {
        let mut live = HashSet::new();
        if ids.is_empty() {
            return Ok(live);
        }
        let last_delivered = match self.last_delivered_id().await? {
            Some(id) => id,
            None => return Ok(live),
        };
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("XRANGE")
                .arg(&self.cfg.stream)
                .arg(id)
                .arg(id)
                .arg("COUNT")
                .arg(1);
            pipe.cmd("XPENDING")
                .arg(&self.cfg.stream)
                .arg(&self.cfg.group)
                .arg(id)
                .arg(id)
                .arg(1);
        }
        let replies: Vec<Value> = match pipe.query_async(&mut self.conn()).await {
            Ok(r) => r,
            Err(e) if is_no_group(&e) => return Ok(live),
            Err(e) => return Err(e.into()),
        };
        for (id, pair) in ids.iter().zip(replies.chunks(2)) {
            let exists = pair.first().is_some_and(|v| !reply::items(v).is_empty());
            let pending = pair.get(1).is_some_and(|v| !reply::items(v).is_empty());
            let undelivered = StreamId::parse(id)
                .zip(StreamId::parse(&last_delivered))
                .is_some_and(|(entry, last)| entry > last);
            if exists && (pending || undelivered) {
                live.insert(id.clone());
            }
        }
        Ok(live)
    }

    /// The group's last-delivered id (`None` when the stream or the group does not exist).
    async fn last_delivered_id(&self) -> Result<Option<String>, QueueError> {
        let groups: redis::RedisResult<Value> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&self.cfg.stream)
            .query_async(&mut self.conn())
            .await;
        let groups = match groups {
            Ok(v) => v,
            // "ERR no such key": the stream itself is gone.
            Err(e) if is_no_group(&e) || e.to_string().contains("no such key") => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        for group in reply::items(&groups) {
            let fields = reply::field_map(group);
            if fields.get("name").map(String::as_str) == Some(self.cfg.group.as_str()) {
                return Ok(fields.get("last-delivered-id").cloned());
            }
        }
        Ok(None)
    }

    /// Count of pending messages and the idle time of the oldest; zeros when the group does
    /// not exist.
    pub async fn pending_summary(&self) -> Result<PendingSummary, QueueError> {
        let replies: redis::RedisResult<(Value, Value)> = redis::pipe()
            .cmd("XPENDING")
            .arg(&self.cfg.stream)
            .arg(&self.cfg.group)
            .cmd("XPENDING")
            .arg(&self.cfg.stream)
            .arg(&self.cfg.group)
            .arg("-")
            .arg("+")
            .arg(1)
            .query_async(&mut self.conn())
            .await;
        let (summary, oldest) = match replies {
            Ok(r) => r,
            Err(e) if is_no_group(&e) => return Ok(PendingSummary::default()),
            Err(e) => return Err(e.into()),
        };
        let count = reply::items(&summary)
            .first()
            .and_then(reply::number)
            .unwrap_or(0);
        let oldest_idle_ms = reply::items(&oldest)
            .first()
            .and_then(|e| reply::items(e).get(2).and_then(reply::number))
            .unwrap_or(0);
        Ok(PendingSummary {
            count,
            oldest_idle_ms: if count == 0 { 0 } else { oldest_idle_ms },
        })
    }
}

/// A stream entry id (`<ms>-<seq>`), ordered as Redis orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct StreamId(u64, u64);

impl StreamId {
    fn parse(id: &str) -> Option<Self> {
        let (ms, seq) = id.split_once('-')?;
        Some(Self(ms.parse().ok()?, seq.parse().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::StreamId;

    #[test]
    fn stream_ids_order_numerically() {
        assert!(StreamId::parse("10-0") > StreamId::parse("9-5"));
        assert!(StreamId::parse("9-10") > StreamId::parse("9-9"));
        assert_eq!(StreamId::parse("x"), None);
    }
}
