//! Reading new messages, acknowledging them, and keeping in-flight ones fresh.

use crate::error::is_no_group;
use crate::{open_manager, reply, Delivery, Queue, QueueError, BLOCK_MARGIN};

impl Queue {
    /// Reads up to `read_count` never-delivered messages for this consumer, blocking up to
    /// `block` when there are none. If Redis lost the group (FLUSHALL, restart without
    /// persistence) it recreates it and reads once more.
    ///
    /// Dropping the future mid-read (shutdown) loses nothing: whatever Redis already handed
    /// out stays pending for this consumer and comes back through [`Queue::reclaim`].
    pub async fn read_new(&self) -> Result<Vec<Delivery>, QueueError> {
        self.read_new_up_to(self.cfg.count()).await
    }

    /// [`Queue::read_new`], taking at most `count` messages (at least 1). A worker passes its
    /// free slots: a message it read but could not start would sit in its pending list, idle,
    /// until another worker reclaims it — a delivery that counts against nothing but delay.
    pub async fn read_new_up_to(&self, count: usize) -> Result<Vec<Delivery>, QueueError> {
        match self.read_new_once(count).await {
            Err(QueueError::Redis(e)) if is_no_group(&e) => {
                tracing::warn!(stream = %self.cfg.stream, group = %self.cfg.group,
                    "consumer group missing (redis lost its data?); recreating it");
                self.ensure_group().await?;
                self.read_new_once(count).await
            }
            other => other,
        }
    }

    async fn read_new_once(&self, count: usize) -> Result<Vec<Delivery>, QueueError> {
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(&self.cfg.group)
            .arg(&self.cfg.consumer)
            .arg("COUNT")
            .arg(count.clamp(1, self.cfg.count()));
        let block_ms = self.cfg.block_ms();
        // BLOCK 0 would mean "forever"; a zero `block` means "do not block".
        if block_ms > 0 {
            cmd.arg("BLOCK").arg(block_ms);
        }
        cmd.arg("STREAMS").arg(&self.cfg.stream).arg(">");

        let mut slot = self.reader.lock().await;
        let reader = match slot.as_mut() {
            Some(reader) => reader,
            None => slot.insert(open_manager(&self.client, self.cfg.block + BLOCK_MARGIN).await?),
        };
        let value: redis::Value = cmd.query_async(reader).await?;
        drop(slot);

        Ok(reply::read_reply(&value)
            .into_iter()
            .map(|entry| Delivery {
                body: entry.field("m").map(<[u8]>::to_vec).unwrap_or_default(),
                id: entry.id,
                deliveries: 1,
            })
            .collect())
    }

    /// Acknowledges messages: they leave the pending list for good. Call only after the
    /// outcome they announce is committed.
    pub async fn ack(&self, ids: &[String]) -> Result<(), QueueError> {
        if ids.is_empty() {
            return Ok(());
        }
        let _: u64 = redis::cmd("XACK")
            .arg(&self.cfg.stream)
            .arg(&self.cfg.group)
            .arg(ids)
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// Resets the idle time of messages this worker is still working on, so that
    /// [`Queue::reclaim`] elsewhere does not take them (`XCLAIM ... 0 ids JUSTID`; JUSTID
    /// leaves the delivery count alone). Ids no longer pending are ignored by Redis; a missing
    /// group (Redis lost its data) is not an error: there is nothing left to keep fresh.
    /// XCLAIM also makes this consumer the owner, so touch only what this worker is running.
    pub async fn touch(&self, ids: &[String]) -> Result<(), QueueError> {
        if ids.is_empty() {
            return Ok(());
        }
        let touched: redis::RedisResult<redis::Value> = redis::cmd("XCLAIM")
            .arg(&self.cfg.stream)
            .arg(&self.cfg.group)
            .arg(&self.cfg.consumer)
            .arg(0)
            .arg(ids)
            .arg("JUSTID")
            .query_async(&mut self.conn())
            .await;
        match touched {
            Ok(_) => Ok(()),
            Err(e) if is_no_group(&e) => {
                tracing::warn!(stream = %self.cfg.stream, "touch: consumer group missing");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}
