//! Publishing: many bodies, one round trip.

use crate::{reply, Queue, QueueError};

impl Queue {
    /// Appends each body to the work stream (field `m`, `MAXLEN ~ max_len`) in one pipelined
    /// round trip and returns the new entry ids, in order. Not atomic: on error some bodies
    /// may have been added; the caller republishes, and duplicates are harmless downstream.
    pub async fn publish(&self, bodies: &[String]) -> Result<Vec<String>, QueueError> {
        if bodies.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for body in bodies {
            pipe.cmd("XADD")
                .arg(&self.cfg.stream)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.cfg.max_len)
                .arg("*")
                .arg("m")
                .arg(body);
        }
        let replies: Vec<redis::Value> = pipe.query_async(&mut self.conn()).await?;
        let ids: Vec<String> = replies.iter().filter_map(reply::text).collect();
        if ids.len() != bodies.len() {
            return Err(crate::error::unexpected(
                "XADD",
                format!("{} ids for {} bodies", ids.len(), bodies.len()),
            ));
        }
        Ok(ids)
    }
}
