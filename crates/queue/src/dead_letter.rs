//! The dead-letter stream: where poison messages end, with their reason.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::{reply, Delivery, Queue, QueueError};

/// A message moved to the dead-letter stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Entry id in the dead-letter stream.
    pub id: String,
    /// The original body, byte for byte.
    pub body: Vec<u8>,
    /// Why it was dead-lettered.
    pub reason: String,
    /// Its entry id in the work stream.
    pub original_id: String,
    /// How many times it had been delivered.
    pub deliveries: u64,
    /// When it was dead-lettered, Unix time in ms.
    pub at_ms: u64,
}

impl Queue {
    /// Copies the message, with `reason`, to the dead-letter stream and acknowledges the
    /// original, in one MULTI/EXEC, so it is never both dead and still pending, nor acked
    /// without a trace. (XACK answers 0, not an error, when the group is gone.)
    pub async fn dead_letter(&self, delivery: &Delivery, reason: &str) -> Result<(), QueueError> {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let _: () = redis::pipe()
            .atomic()
            .cmd("XADD")
            .arg(&self.cfg.dead_stream)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.cfg.max_len)
            .arg("*")
            .arg("m")
            .arg(&delivery.body)
            .arg("reason")
            .arg(reason)
            .arg("original_id")
            .arg(&delivery.id)
            .arg("deliveries")
            .arg(delivery.deliveries)
            .arg("at")
            .arg(at_ms)
            .ignore()
            .cmd("XACK")
            .arg(&self.cfg.stream)
            .arg(&self.cfg.group)
            .arg(&delivery.id)
            .ignore()
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// The first `count` dead letters, oldest first.
    pub async fn dead_letters(&self, count: usize) -> Result<Vec<DeadLetter>, QueueError> {
        let value: redis::Value = redis::cmd("XRANGE")
            .arg(&self.cfg.dead_stream)
            .arg("-")
            .arg("+")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.conn())
            .await?;
        Ok(reply::entries(&value)
            .into_iter()
            .map(|e| DeadLetter {
                body: e.field("m").map(<[u8]>::to_vec).unwrap_or_default(),
                reason: e.text("reason"),
                original_id: e.text("original_id"),
                deliveries: e.number("deliveries"),
                at_ms: e.number("at"),
                id: e.id,
            })
            .collect())
    }
}
