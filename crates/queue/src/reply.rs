//! Hand-written, lenient parsing of stream replies.
//!
//! redis 0.32's typed stream replies (`StreamReadReply`, `StreamAutoClaimReply`, ...) decode
//! field names into `String` and fail the whole reply on one odd entry (binary field name, nil
//! entry of a deleted message). A single junk entry must not stop a worker's loop, so replies
//! are read as raw `Value`s here and whatever cannot be understood is skipped or left empty.

use redis::Value;
use std::collections::HashMap;

/// One stream entry as Redis returned it.
#[derive(Debug)]
pub(crate) struct Entry {
    pub id: String,
    /// Field/value pairs; `None` when the entry was deleted from the stream but is still
    /// referenced (a pending-list entry whose data is gone).
    pub fields: Option<Vec<(Vec<u8>, Vec<u8>)>>,
}

impl Entry {
    /// The value of the first field called `name`.
    pub fn field(&self, name: &str) -> Option<&[u8]> {
        self.fields
            .as_deref()?
            .iter()
            .find(|(k, _)| k.as_slice() == name.as_bytes())
            .map(|(_, v)| v.as_slice())
    }

    /// The value of `name` as text (lossy), or empty.
    pub fn text(&self, name: &str) -> String {
        self.field(name)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    }

    /// The value of `name` as an unsigned integer, or 0.
    pub fn number(&self, name: &str) -> u64 {
        self.field(name)
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// The bytes of a scalar reply (bulk, simple or verbatim string, or a number).
pub(crate) fn bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b.clone()),
        Value::SimpleString(s) => Some(s.as_bytes().to_vec()),
        Value::VerbatimString { text, .. } => Some(text.as_bytes().to_vec()),
        Value::Int(i) => Some(i.to_string().into_bytes()),
        Value::Double(d) => Some(d.to_string().into_bytes()),
        Value::Okay => Some(b"OK".to_vec()),
        _ => None,
    }
}

/// A scalar reply as text (lossy).
pub(crate) fn text(v: &Value) -> Option<String> {
    bytes(v).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// A scalar reply as an unsigned integer (negative values clamp to 0).
pub(crate) fn number(v: &Value) -> Option<u64> {
    match v {
        Value::Int(i) => Some(u64::try_from(*i).unwrap_or(0)),
        other => text(other)?.trim().parse().ok(),
    }
}

/// The elements of an array-like reply; nil is an empty array.
pub(crate) fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        _ => &[],
    }
}

/// Field/value pairs: a flat array (RESP2) or a map (RESP3). A trailing odd field is dropped.
fn pairs(v: &Value) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    match v {
        Value::Nil => None,
        Value::Map(m) => Some(
            m.iter()
                .map(|(k, v)| (bytes(k).unwrap_or_default(), bytes(v).unwrap_or_default()))
                .collect(),
        ),
        Value::Array(a) => Some(
            a.chunks_exact(2)
                .map(|kv| {
                    (
                        bytes(&kv[0]).unwrap_or_default(),
                        bytes(&kv[1]).unwrap_or_default(),
                    )
                })
                .collect(),
        ),
        // Anything else is junk; keep the entry (so it is delivered and can be acked) with no
        // fields.
        _ => Some(Vec::new()),
    }
}

/// A flat `[name, value, …]` array or a map (XINFO replies) as text pairs; non-scalar values
/// are left out.
pub(crate) fn field_map(v: &Value) -> HashMap<String, String> {
    let mut out = HashMap::new();
    match v {
        Value::Map(m) => {
            for (k, v) in m {
                if let (Some(k), Some(v)) = (text(k), text(v)) {
                    out.insert(k, v);
                }
            }
        }
        Value::Array(a) => {
            for kv in a.chunks_exact(2) {
                if let (Some(k), Some(v)) = (text(&kv[0]), text(&kv[1])) {
                    out.insert(k, v);
                }
            }
        }
        _ => {}
    }
    out
}

/// One `[id, fields]` entry; `None` when not even an id can be read (nothing could ack it).
pub(crate) fn entry(v: &Value) -> Option<Entry> {
    let parts = items(v);
    let id = text(parts.first()?)?;
    let fields = pairs(parts.get(1).unwrap_or(&Value::Nil));
    Some(Entry { id, fields })
}

/// A list of entries (XRANGE, XAUTOCLAIM's second element). Unreadable entries are logged and
/// skipped.
pub(crate) fn entries(v: &Value) -> Vec<Entry> {
    items(v)
        .iter()
        .filter_map(|e| {
            let parsed = entry(e);
            if parsed.is_none() {
                tracing::warn!(entry = ?e, "skipping stream entry without a readable id");
            }
            parsed
        })
        .collect()
}

/// The entries of an XREAD/XREADGROUP reply, all streams together: `[[key, entries], ...]`
/// (RESP2) or `{key: entries}` (RESP3); nil (timeout) is no entries.
pub(crate) fn read_reply(v: &Value) -> Vec<Entry> {
    match v {
        Value::Map(m) => m.iter().flat_map(|(_, es)| entries(es)).collect(),
        _ => items(v)
            .iter()
            .flat_map(|s| items(s).get(1).map(entries).unwrap_or_default())
            .collect(),
    }
}
