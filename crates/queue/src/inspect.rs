//! Read-only looks at the stream and the server, for `ironclad doctor`: nothing here creates
//! or changes anything.

use crate::{Queue, QueueError};

/// The workers' consumer group as Redis reports it (`XINFO GROUPS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// Consumers that have read from it.
    pub consumers: u64,
    /// Messages delivered and not yet acknowledged.
    pub pending: u64,
    /// Entries not yet delivered to the group (`None` when Redis cannot tell, e.g. after
    /// deletions, or before Redis 7).
    pub lag: Option<u64>,
}

impl Queue {
    /// The consumer group of this queue's stream, `None` when the stream or the group does
    /// not exist (yet).
    pub async fn group_info(&self) -> Result<Option<GroupInfo>, QueueError> {
        let reply: redis::RedisResult<Vec<redis::Value>> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&self.cfg.stream)
            .query_async(&mut self.conn())
            .await;
        let groups = match reply {
            Ok(groups) => groups,
            // "ERR no such key": the stream does not exist.
            Err(e) if e.code() == Some("ERR") => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        for group in groups {
            let fields: std::collections::HashMap<String, redis::Value> =
                redis::from_redis_value(&group).map_err(|e| QueueError::UnexpectedReply {
                    command: "XINFO GROUPS",
                    detail: e.to_string(),
                })?;
            let text = |name: &str| {
                fields
                    .get(name)
                    .and_then(|v| redis::from_redis_value::<String>(v).ok())
            };
            let number = |name: &str| {
                fields
                    .get(name)
                    .and_then(|v| redis::from_redis_value::<u64>(v).ok())
            };
            if text("name").as_deref() == Some(self.cfg.group.as_str()) {
                return Ok(Some(GroupInfo {
                    consumers: number("consumers").unwrap_or(0),
                    pending: number("pending").unwrap_or(0),
                    lag: number("lag"),
                }));
            }
        }
        Ok(None)
    }

    /// A server setting (`CONFIG GET name`), `None` when the server does not say (a managed
    /// Redis may refuse `CONFIG`).
    pub async fn server_setting(&self, name: &str) -> Result<Option<String>, QueueError> {
        let reply: redis::RedisResult<Vec<String>> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query_async(&mut self.conn())
            .await;
        match reply {
            Ok(pair) => Ok(pair.into_iter().nth(1)),
            Err(e) if !e.is_io_error() && !e.is_timeout() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
