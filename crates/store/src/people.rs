//! Who an actor is, as people read it: a desk user's display name (else address) for
//! `user:<id>`, a key's label (else prefix) for `api_key:<id>`, the actor as recorded
//! otherwise (`system`, `cli:…`).
//!
//! Corrections, claims and second opinions record the name beside the actor when they are
//! written, so a rule result or a report says "corrected by rita@example.com" even after the
//! user is disabled.

use sqlx::{Executor, Postgres};
use uuid::Uuid;

/// $1 tenant, $2 actor: a user by display name (else address), a key by label (else prefix),
/// as the desk names them (`ui/people.rs`).
const NAME_OF: &str = r#"
SELECT coalesce(
    (SELECT coalesce(u.display_name, u.email) FROM users u
     WHERE u.tenant_id = $1 AND $2 LIKE 'user:%' AND u.id::text = substr($2, 6)),
    (SELECT CASE WHEN k.label IS NOT NULL THEN 'API key “' || k.label || '”'
                 ELSE 'API key ' || k.prefix || '…' END
     FROM api_keys k
     WHERE k.tenant_id = $1 AND $2 LIKE 'api_key:%' AND k.id::text = substr($2, 9)),
    $2)
"#;

/// The name people read for `actor` of `tenant`.
pub(crate) async fn name_of<'e>(
    executor: impl Executor<'e, Database = Postgres>,
    tenant: Uuid,
    actor: &str,
) -> Result<String, sqlx::Error> {
    sqlx::query_scalar(NAME_OF)
        .bind(tenant)
        .bind(crate::storable(actor).as_ref())
        .fetch_one(executor)
        .await
}

impl crate::Store {
    /// The name people read for `actor` of `tenant` (see the module doc).
    pub async fn actor_name(&self, tenant: Uuid, actor: &str) -> crate::StoreResult<String> {
        Ok(name_of(self.pool(), tenant, actor).await?)
    }
}
