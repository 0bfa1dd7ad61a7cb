//! Outbox rows: claimed in batches, published, marked; released with backoff on failure.

use crate::jobs::applied;
use crate::{secs, Store, StoreResult, Transition};
use std::time::Duration;
use uuid::Uuid;

/// A row a dispatcher holds under its lock token.
#[derive(Debug, Clone)]
pub struct OutboxMessage {
    /// Row id.
    pub id: Uuid,
    /// The message body to publish.
    pub payload: String,
}

/// Parameters: $1 batch size, $2 lock token. SKIP LOCKED lets several dispatchers take
/// disjoint batches without waiting on each other.
const OUTBOX_CLAIM_BATCH: &str = r#"
WITH batch AS (
    SELECT id FROM outbox
    WHERE status = 'PENDING' AND available_at <= now()
    ORDER BY available_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox o SET status = 'PUBLISHING', lock_token = $2, locked_at = now(), attempts = o.attempts + 1
FROM batch WHERE o.id = batch.id
RETURNING o.id, o.payload
"#;

/// $1 ids, $2 token, $3 the stream entry id each row became (same order as $1).
const OUTBOX_MARK_PUBLISHED: &str = r#"
UPDATE outbox o SET status = 'PUBLISHED', published_at = now(), lock_token = NULL,
    last_error = NULL, stream_id = p.stream_id
FROM unnest($1::uuid[], $3::text[]) AS p(id, stream_id)
WHERE o.id = p.id AND o.status = 'PUBLISHING' AND o.lock_token = $2
"#;

/// Parameters: $1 ids, $2 token, $3 error, $4 max attempts, $5 base backoff seconds,
/// $6 max backoff seconds. Backoff doubles per attempt.
const OUTBOX_RELEASE: &str = r#"
UPDATE outbox SET
    status = CASE WHEN attempts >= $4 THEN 'DEAD' ELSE 'PENDING' END,
    available_at = now() + make_interval(secs => least($6, $5 * power(2, greatest(attempts - 1, 0)))),
    lock_token = NULL, locked_at = NULL, last_error = $3
WHERE id = ANY($1) AND status = 'PUBLISHING' AND lock_token = $2
RETURNING status
"#;

/// Rows abandoned in PUBLISHING (their dispatcher died) go back to PENDING; the claim already
/// counted the attempt. $1 lock timeout seconds, $2 max attempts.
const OUTBOX_RESET_STUCK: &str = r#"
UPDATE outbox SET
    status = CASE WHEN attempts >= $2 THEN 'DEAD' ELSE 'PENDING' END,
    lock_token = NULL, locked_at = NULL,
    last_error = 'publication abandoned: lock timed out'
WHERE id IN (SELECT id FROM outbox WHERE status = 'PUBLISHING'
             AND locked_at < now() - make_interval(secs => $1) FOR UPDATE SKIP LOCKED)
"#;

/// Small batches keep each delete short, so pruning never holds locks the claim needs.
const OUTBOX_PRUNE: &str = r#"
DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox WHERE status = 'PUBLISHED' AND published_at < now() - make_interval(secs => $1)
    LIMIT $2)
"#;

const OUTBOX_REQUEUE_DEAD: &str = r#"
UPDATE outbox SET status = 'PENDING', attempts = 0, available_at = now(), last_error = NULL
WHERE status = 'DEAD'
"#;

/// How a failed publication is retried.
#[derive(Debug, Clone, Copy)]
pub struct OutboxBackoff {
    /// Attempts before the row becomes DEAD.
    pub max_attempts: i32,
    /// First delay; doubles per attempt.
    pub base: Duration,
    /// Longest delay.
    pub max: Duration,
}

impl Store {
    /// Claims up to `limit` due rows under a fresh lock token.
    pub async fn outbox_claim_batch(&self, limit: i64) -> StoreResult<(Uuid, Vec<OutboxMessage>)> {
        let token = Uuid::new_v4();
        let rows: Vec<(Uuid, String)> = sqlx::query_as(OUTBOX_CLAIM_BATCH)
            .bind(limit)
            .bind(token)
            .fetch_all(self.pool())
            .await?;
        Ok((
            token,
            rows.into_iter()
                .map(|(id, payload)| OutboxMessage { id, payload })
                .collect(),
        ))
    }

    /// Marks rows published where the lock token is still ours, recording the stream entry
    /// id each became (`stream_ids[i]` for `ids[i]`); returns how many.
    pub async fn outbox_mark_published(
        &self,
        ids: &[Uuid],
        token: Uuid,
        stream_ids: &[String],
    ) -> StoreResult<u64> {
        let done = sqlx::query(OUTBOX_MARK_PUBLISHED)
            .bind(ids)
            .bind(token)
            .bind(stream_ids)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Releases rows after a failed publication; returns (released, now dead).
    pub async fn outbox_release(
        &self,
        ids: &[Uuid],
        token: Uuid,
        error: &str,
        backoff: OutboxBackoff,
    ) -> StoreResult<(u64, u64)> {
        let statuses: Vec<String> = sqlx::query_scalar(OUTBOX_RELEASE)
            .bind(ids)
            .bind(token)
            .bind(error)
            .bind(backoff.max_attempts)
            .bind(secs(backoff.base))
            .bind(secs(backoff.max))
            .fetch_all(self.pool())
            .await?;
        let dead = statuses.iter().filter(|s| s.as_str() == "DEAD").count() as u64;
        Ok((statuses.len() as u64, dead))
    }

    /// Returns rows stuck in PUBLISHING beyond `lock_timeout` to PENDING (or DEAD).
    pub async fn outbox_reset_stuck(
        &self,
        lock_timeout: Duration,
        max_attempts: i32,
    ) -> StoreResult<u64> {
        let done = sqlx::query(OUTBOX_RESET_STUCK)
            .bind(secs(lock_timeout))
            .bind(max_attempts)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Deletes up to `batch` PUBLISHED rows older than `retention`.
    pub async fn outbox_prune(&self, retention: Duration, batch: i64) -> StoreResult<u64> {
        let done = sqlx::query(OUTBOX_PRUNE)
            .bind(secs(retention))
            .bind(batch)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Makes every DEAD row PENDING again; returns how many.
    pub async fn outbox_requeue_dead(&self) -> StoreResult<u64> {
        Ok(sqlx::query(OUTBOX_REQUEUE_DEAD)
            .execute(self.pool())
            .await?
            .rows_affected())
    }

    /// Whether a single row is still held under `token` (for tests of the lock discipline).
    pub async fn outbox_is_held(&self, id: Uuid, token: Uuid) -> StoreResult<Transition> {
        let held: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM outbox WHERE id = $1 AND status = 'PUBLISHING' AND lock_token = $2",
        )
        .bind(id)
        .bind(token)
        .fetch_optional(self.pool())
        .await?;
        Ok(applied(u64::from(held.is_some())))
    }
}
