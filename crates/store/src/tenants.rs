//! Tenants and API keys. Keys are shown once and stored as a sha256 hash; creating and
//! revoking one is recorded in the tenant's audit trail.

use crate::{Store, StoreError, StoreResult};
use chrono::{DateTime, Utc};
use ironclad_core::audit::AuditEventType;
use ironclad_core::role::Role;
use ironclad_core::TenantId;
use rand::Rng;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Who is calling: resolved from an API key or a desk session, never from the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Principal {
    /// The credential's tenant.
    pub tenant_id: TenantId,
    /// The credential's role.
    pub role: Role,
    /// The key's id, or the user's id for a session (for the audit trail and rate limits).
    pub key_id: Uuid,
    /// Which kind of credential `key_id` names.
    pub credential: Credential,
}

/// How a caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// An `Authorization: Bearer` API key (machines).
    ApiKey,
    /// A desk session cookie (people).
    User,
}

impl Principal {
    /// Who did it, as the audit trail and the case record it: `api_key:<id>` or `user:<id>`.
    pub fn actor(&self) -> String {
        match self.credential {
            Credential::ApiKey => format!("api_key:{}", self.key_id),
            Credential::User => format!("user:{}", self.key_id),
        }
    }
}

/// A freshly created key: the only time the raw secret exists.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    /// The key's id.
    pub id: Uuid,
    /// The secret to hand to the client.
    pub raw: String,
}

/// Characters of a key kept in clear (`ick_` and 8 hex digits) to name it to people.
pub const KEY_PREFIX_LEN: usize = 12;

/// An API key as an admin sees it (never its secret or hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyInfo {
    /// The key's id.
    pub id: Uuid,
    /// Its tenant.
    pub tenant_id: TenantId,
    /// Its first characters, as stored.
    pub prefix: String,
    /// Its role.
    pub role: Role,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was revoked.
    pub revoked_at: Option<DateTime<Utc>>,
    /// What it is for, as an admin named it.
    pub label: Option<String>,
}

impl ApiKeyInfo {
    /// How people see the key: its label, else its prefix.
    pub fn name(&self) -> String {
        match &self.label {
            Some(label) => label.clone(),
            None => format!("{}…", self.prefix),
        }
    }
}

/// What [`Store::revoke_api_key`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revocation {
    /// The key was live and is now revoked (APIKEY_REVOKED recorded).
    Revoked(ApiKeyInfo),
    /// The key had been revoked before; nothing changed.
    AlreadyRevoked(ApiKeyInfo),
    /// No key has that id, prefix or value.
    NotFound,
    /// Several keys share that prefix: name one by id.
    Ambiguous(Vec<Uuid>),
}

/// id, tenant, prefix, role, created, revoked, label.
type KeyRow = (
    Uuid,
    Uuid,
    String,
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    Option<String>,
);

impl TryFrom<KeyRow> for ApiKeyInfo {
    type Error = StoreError;

    fn try_from(
        (id, tenant, prefix, role, created_at, revoked_at, label): KeyRow,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            id,
            tenant_id: TenantId(tenant),
            prefix,
            role: role.parse()?,
            created_at,
            revoked_at,
            label,
        })
    }
}

/// The stored form of a raw key.
pub fn hash_key(raw: &str) -> String {
    hex::encode(Sha256::digest(raw.as_bytes()))
}

const TENANT_CREATE: &str = "INSERT INTO tenants (id, name) VALUES ($1, $2) RETURNING id";
const TENANT_BY_NAME: &str = "SELECT id FROM tenants WHERE name = $1";
/// The key and its APIKEY_CREATED event in one statement. $6 actor, $7 event type, $8 label.
const API_KEY_CREATE: &str = r#"
WITH created AS (
    INSERT INTO api_keys (id, tenant_id, key_hash, prefix, role, label)
    VALUES ($1, $2, $3, $4, $5, $8)
    RETURNING id, tenant_id, prefix, role, label
)
INSERT INTO audit_events (tenant_id, actor, event_type, data)
SELECT tenant_id, $6, $7,
       jsonb_build_object('key_id', id, 'prefix', prefix, 'role', role, 'label', label)
FROM created
"#;
/// Keys a revocation may mean: $1 the id (NULL when the argument is no uuid), $2 the prefix,
/// $3 the hash of a whole key.
const API_KEY_FIND: &str = r#"
SELECT id, tenant_id, prefix, role, created_at, revoked_at, label FROM api_keys
WHERE id = $1 OR prefix = $2 OR key_hash = $3
ORDER BY created_at, id LIMIT 20
"#;
/// Revokes a live key and records APIKEY_REVOKED, in one statement; no row when the key was
/// already revoked (by this call's loser in a race, too). $1 id, $2 actor, $3 event type.
const API_KEY_REVOKE: &str = r#"
WITH revoked AS (
    UPDATE api_keys SET revoked_at = now()
    WHERE id = $1 AND revoked_at IS NULL
    RETURNING id, tenant_id, prefix, role, created_at, revoked_at, label
), audit AS (
    INSERT INTO audit_events (tenant_id, actor, event_type, data)
    SELECT tenant_id, $2, $3, jsonb_build_object('key_id', id, 'prefix', prefix, 'role', role)
    FROM revoked
)
SELECT id, tenant_id, prefix, role, created_at, revoked_at, label FROM revoked
"#;
const API_KEY_BY_ID: &str =
    "SELECT id, tenant_id, prefix, role, created_at, revoked_at, label FROM api_keys WHERE id = $1";
const API_KEYS_OF_TENANT: &str = "SELECT id, tenant_id, prefix, role, created_at, revoked_at, \
     label FROM api_keys WHERE tenant_id = $1 ORDER BY created_at DESC, id LIMIT 500";
/// [`API_KEY_REVOKE`] for a key of tenant $4 only.
const API_KEY_REVOKE_OF_TENANT: &str = r#"
WITH revoked AS (
    UPDATE api_keys SET revoked_at = now()
    WHERE id = $1 AND tenant_id = $4 AND revoked_at IS NULL
    RETURNING id, tenant_id, prefix, role, created_at, revoked_at, label
), audit AS (
    INSERT INTO audit_events (tenant_id, actor, event_type, data)
    SELECT tenant_id, $2, $3, jsonb_build_object('key_id', id, 'prefix', prefix, 'role', role)
    FROM revoked
)
SELECT id, tenant_id, prefix, role, created_at, revoked_at, label FROM revoked
"#;
const API_KEY_AUTHENTICATE: &str =
    "SELECT id, tenant_id, role FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL";

impl Store {
    /// The tenant's API keys, newest first (at most 500).
    pub async fn api_keys_of(&self, tenant: TenantId) -> StoreResult<Vec<ApiKeyInfo>> {
        let rows: Vec<KeyRow> = sqlx::query_as(API_KEYS_OF_TENANT)
            .bind(tenant.0)
            .fetch_all(self.pool())
            .await?;
        rows.into_iter().map(ApiKeyInfo::try_from).collect()
    }

    /// Revokes the live key `id` of `tenant`, recording APIKEY_REVOKED by `actor`; `None`
    /// when the tenant has no live key with that id.
    pub async fn revoke_tenant_api_key(
        &self,
        tenant: TenantId,
        id: Uuid,
        actor: &str,
    ) -> StoreResult<Option<ApiKeyInfo>> {
        let row: Option<KeyRow> = sqlx::query_as(API_KEY_REVOKE_OF_TENANT)
            .bind(id)
            .bind(crate::storable(actor).as_ref())
            .bind(AuditEventType::ApiKeyRevoked.as_str())
            .bind(tenant.0)
            .fetch_optional(self.pool())
            .await?;
        row.map(ApiKeyInfo::try_from).transpose()
    }

    /// Creates a tenant; a taken name is a `Conflict`.
    pub async fn create_tenant(&self, name: &str) -> StoreResult<TenantId> {
        let id: Uuid = sqlx::query_scalar(TENANT_CREATE)
            .bind(Uuid::now_v7())
            .bind(name)
            .fetch_one(self.pool())
            .await?;
        Ok(TenantId(id))
    }

    /// Finds a tenant by name.
    pub async fn tenant_by_name(&self, name: &str) -> StoreResult<Option<TenantId>> {
        let id: Option<Uuid> = sqlx::query_scalar(TENANT_BY_NAME)
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        Ok(id.map(TenantId))
    }

    /// Creates an API key for a tenant and returns its secret, which is not stored; the
    /// APIKEY_CREATED event names `system` as the actor (see [`Store::create_api_key_by`]).
    pub async fn create_api_key(&self, tenant: TenantId, role: Role) -> StoreResult<NewApiKey> {
        self.create_api_key_by(tenant, role, "system").await
    }

    /// Creates an API key for a tenant, recording APIKEY_CREATED by `actor` in the same
    /// statement, and returns its secret, which is not stored.
    pub async fn create_api_key_by(
        &self,
        tenant: TenantId,
        role: Role,
        actor: &str,
    ) -> StoreResult<NewApiKey> {
        self.create_labelled_api_key(tenant, role, None, actor)
            .await
    }

    /// [`Store::create_api_key_by`] with a label saying what the key is for.
    pub async fn create_labelled_api_key(
        &self,
        tenant: TenantId,
        role: Role,
        label: Option<&str>,
        actor: &str,
    ) -> StoreResult<NewApiKey> {
        let mut conn = self.pool().acquire().await?;
        create_api_key_on(&mut conn, tenant, role, label, actor).await
    }

    /// Revokes the key named by `which` (its id, its prefix as stored, or the whole key) and
    /// records APIKEY_REVOKED by `actor`. API processes refuse the key within one second (their
    /// cache of keys is that short-lived). Revoking a revoked key changes nothing.
    pub async fn revoke_api_key(&self, which: &str, actor: &str) -> StoreResult<Revocation> {
        let which = which.trim();
        let rows: Vec<KeyRow> = sqlx::query_as(API_KEY_FIND)
            .bind(Uuid::parse_str(which).ok())
            .bind(which)
            .bind(hash_key(which))
            .fetch_all(self.pool())
            .await?;
        let key = match rows.as_slice() {
            [] => return Ok(Revocation::NotFound),
            [one] => one.clone(),
            many => return Ok(Revocation::Ambiguous(many.iter().map(|r| r.0).collect())),
        };
        let revoked: Option<KeyRow> = sqlx::query_as(API_KEY_REVOKE)
            .bind(key.0)
            .bind(crate::storable(actor).as_ref())
            .bind(AuditEventType::ApiKeyRevoked.as_str())
            .fetch_optional(self.pool())
            .await?;
        match revoked {
            Some(row) => Ok(Revocation::Revoked(row.try_into()?)),
            None => {
                let now: Option<KeyRow> = sqlx::query_as(API_KEY_BY_ID)
                    .bind(key.0)
                    .fetch_optional(self.pool())
                    .await?;
                match now {
                    Some(row) => Ok(Revocation::AlreadyRevoked(row.try_into()?)),
                    None => Ok(Revocation::NotFound),
                }
            }
        }
    }

    /// Resolves a raw key to its principal; `None` for unknown or revoked keys.
    pub async fn authenticate(&self, raw: &str) -> StoreResult<Option<Principal>> {
        let row: Option<(Uuid, Uuid, String)> = sqlx::query_as(API_KEY_AUTHENTICATE)
            .bind(hash_key(raw))
            .fetch_optional(self.pool())
            .await?;
        row.map(|(key_id, tenant, role)| {
            Ok(Principal {
                tenant_id: TenantId(tenant),
                role: role.parse()?,
                key_id,
                credential: Credential::ApiKey,
            })
        })
        .transpose()
    }
}

/// Creates a key on `conn` (a desk form creates it in its own transaction); see
/// [`Store::create_labelled_api_key`].
pub(crate) async fn create_api_key_on(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    role: Role,
    label: Option<&str>,
    actor: &str,
) -> StoreResult<NewApiKey> {
    let secret: [u8; 24] = rand::rng().random();
    let raw = format!("ick_{}", hex::encode(secret));
    let id = Uuid::now_v7();
    sqlx::query(API_KEY_CREATE)
        .bind(id)
        .bind(tenant.0)
        .bind(hash_key(&raw))
        .bind(&raw[..KEY_PREFIX_LEN])
        .bind(role.as_str())
        .bind(crate::storable(actor).as_ref())
        .bind(AuditEventType::ApiKeyCreated.as_str())
        .bind(label.map(|l| crate::storable(l.trim()).into_owned()))
        .execute(&mut *conn)
        .await?;
    Ok(NewApiKey { id, raw })
}
