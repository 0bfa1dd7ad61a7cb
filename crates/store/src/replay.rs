//! Replay protection for case actions: a request carries an idempotency key; its first
//! successful answer is stored with a fingerprint of the request in the action's transaction,
//! so a replay gets the same answer and a different request under the same key gets a conflict.

use sha2::{Digest, Sha256};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

/// One keyed request.
#[derive(Debug, Clone)]
pub struct ActionKey {
    /// Whose key space.
    pub tenant: Uuid,
    /// Which action (`review`, `reprocess`, `correction`…): keys are scoped per action.
    pub action: &'static str,
    /// The client's `Idempotency-Key`.
    pub key: String,
    /// sha256 of what the request asks (case, body), so a reused key is told apart.
    pub fingerprint: String,
}

impl ActionKey {
    /// The key of a request about `case` asking `request`: the one fingerprint every caller
    /// (the API, the desk, the CLI) uses, so the same request is the same whoever sends it.
    ///
    /// The fingerprint is the sha256 of the case and the request's JSON. `request` holds what
    /// the action acts on, normalized as the action reads it (a trimmed comment, say), and
    /// nothing incidental: two requests with equal fingerprints must be the same request.
    pub fn new(
        tenant: Uuid,
        action: &'static str,
        key: impl Into<String>,
        case: Uuid,
        request: &serde_json::Value,
    ) -> Self {
        Self {
            tenant,
            action,
            key: key.into(),
            fingerprint: fingerprint(&serde_json::json!({ "case": case, "request": request })),
        }
    }
}

/// The fingerprint of a request: the sha256 (hex) of its canonical JSON. The one way a
/// replayed request is told from another under the same key — case actions ([`ActionKey`])
/// and the desk's create forms alike.
pub fn fingerprint(request: &serde_json::Value) -> String {
    let mut text = String::new();
    canonical(request, &mut text);
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// JSON with every object's keys in order, whatever order the value was built in (serde_json
/// keeps insertion order when a dependency turns on `preserve_order`).
fn canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// What an earlier request under the same key left.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Earlier {
    /// No request yet.
    None,
    /// The same request: its stored status and body.
    Same(u16, serde_json::Value),
    /// Another request used the key.
    Different,
}

pub(crate) async fn earlier(
    tx: &mut Transaction<'_, Postgres>,
    k: &ActionKey,
) -> Result<Earlier, sqlx::Error> {
    let row: Option<(String, i32, serde_json::Value)> = sqlx::query_as(
        "SELECT fingerprint, http_status, response FROM action_requests \
         WHERE tenant_id = $1 AND action = $2 AND idempotency_key = $3",
    )
    .bind(k.tenant)
    .bind(k.action)
    .bind(&k.key)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(match row {
        None => Earlier::None,
        Some((fp, status, body)) if fp == k.fingerprint => {
            Earlier::Same(u16::try_from(status).unwrap_or(200), body)
        }
        Some(_) => Earlier::Different,
    })
}

/// The key's primary-key constraint: the same key used at once for another case.
const ACTION_KEY_CONSTRAINT: &str = "action_requests_pkey";

pub(crate) async fn remember(
    tx: &mut Transaction<'_, Postgres>,
    k: &ActionKey,
    status: u16,
    body: &serde_json::Value,
) -> Result<(), ActionError> {
    let stored = sqlx::query(
        "INSERT INTO action_requests (tenant_id, action, idempotency_key, fingerprint, http_status, response) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(k.tenant)
    .bind(k.action)
    .bind(&k.key)
    .bind(&k.fingerprint)
    .bind(i32::from(status))
    .bind(body)
    .execute(&mut **tx)
    .await;
    match stored.map_err(crate::StoreError::from) {
        Ok(_) => Ok(()),
        // Another request (for another case, whose lock we do not hold) took the key first.
        Err(crate::StoreError::Conflict { constraint }) if constraint == ACTION_KEY_CONSTRAINT => {
            Err(ActionError::KeyReused)
        }
        Err(e) => Err(e.into()),
    }
}

/// Stores the answer under the request's key and commits the action's transaction: a replay
/// of the key gets exactly this answer, and a key taken meanwhile rolls the action back.
pub(crate) async fn commit_answer(
    mut tx: Transaction<'_, Postgres>,
    k: &ActionKey,
    status: u16,
    body: serde_json::Value,
) -> Result<ActionAnswer, ActionError> {
    remember(&mut tx, k, status, &body).await?;
    tx.commit().await?;
    Ok(ActionAnswer {
        status,
        body,
        replayed: false,
    })
}

/// The answer to a keyed action: what to send back, and whether it is a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionAnswer {
    /// HTTP status of the first answer.
    pub status: u16,
    /// Body of the first answer.
    pub body: serde_json::Value,
    /// Whether this is the stored answer of an earlier identical request.
    pub replayed: bool,
}

/// Why a case action was refused; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    /// No such case for this tenant.
    #[error("case not found")]
    NotFound,
    /// The idempotency key was used by a different request.
    #[error("this Idempotency-Key was already used for a different request")]
    KeyReused,
    /// The case is not in a state that allows the action (stale version, nothing pending…).
    #[error("{message}")]
    Conflict {
        /// What is in the way.
        message: String,
        /// What the client should look at instead (e.g. the current decision).
        current: serde_json::Value,
    },
    /// The request is well-formed but not allowed (e.g. APPROVE on a BLOCKED decision).
    #[error("{0}")]
    Refused(String),
    /// Another person holds a live claim on the case's review: they may act, others may read
    /// (or take the claim over with a reason).
    #[error("{holder_name} is reviewing this case (claimed until {expires_at}); take it over with a reason to act")]
    Claimed {
        /// Who holds it, as people read it.
        holder_name: String,
        /// Until when, unless renewed.
        expires_at: chrono::DateTime<chrono::Utc>,
    },
    /// The caller may not do this to this case: their role in its current state (an operator
    /// reprocessing a RESOLVED case), or who they are (confirming their own proposal,
    /// releasing someone else's claim).
    #[error("{0}")]
    Forbidden(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] crate::StoreError),
}

impl From<sqlx::Error> for ActionError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(e.into())
    }
}

/// Locks the tenant's case (the order every case transaction takes) and returns its status
/// and generation, or `NotFound`.
pub(crate) async fn lock_case(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    case: Uuid,
) -> Result<(String, i32), ActionError> {
    sqlx::query_as(
        "SELECT status, generation FROM cases WHERE id = $1 AND tenant_id = $2 FOR UPDATE",
    )
    .bind(case)
    .bind(tenant)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(ActionError::NotFound)
}

impl crate::Store {
    /// The stored answer of an earlier request under `key`, read without the case lock: for
    /// an action that checks its input against the case before acting (a replay must get
    /// the first answer even after the case moved on). The action's own transaction looks
    /// again under the lock.
    pub async fn earlier_answer(
        &self,
        key: &ActionKey,
    ) -> Result<Option<ActionAnswer>, ActionError> {
        let mut tx = self.pool().begin().await?;
        let answer = replayed(&mut tx, key).await;
        tx.rollback().await?;
        answer
    }
}

/// Looks up the key after the case lock: `Some(answer)` to return at once.
pub(crate) async fn replayed(
    tx: &mut Transaction<'_, Postgres>,
    k: &ActionKey,
) -> Result<Option<ActionAnswer>, ActionError> {
    match earlier(tx, k).await? {
        Earlier::None => Ok(None),
        Earlier::Same(status, body) => Ok(Some(ActionAnswer {
            status,
            body,
            replayed: true,
        })),
        Earlier::Different => Err(ActionError::KeyReused),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_fingerprint_for_the_same_request_and_another_for_any_change() {
        let (tenant, case) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let key = |case: Uuid, request: serde_json::Value| {
            ActionKey::new(tenant, "review", "k", case, &request).fingerprint
        };
        let a = key(
            case,
            json!({"action": "OVERRIDE", "comment": "ok", "version": 1}),
        );
        // Built in another order (a desk form and an API body), the same request is the same.
        let b = key(
            case,
            json!({"version": 1, "comment": "ok", "action": "OVERRIDE"}),
        );
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        assert_ne!(
            a,
            key(
                case,
                json!({"action": "OVERRIDE", "comment": "ok.", "version": 1})
            )
        );
        assert_ne!(
            a,
            key(
                Uuid::from_u128(3),
                json!({"action": "OVERRIDE", "comment": "ok", "version": 1})
            )
        );
        // Text that looks like a separator cannot make two requests collide.
        assert_ne!(
            key(case, json!({"a": "x:y", "b": ""})),
            key(case, json!({"a": "x", "b": "y:"}))
        );
    }
}
