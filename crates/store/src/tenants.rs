//! Tenants and API keys. Keys are shown once and stored as a sha256 hash.

use crate::{Store, StoreResult};
use ironclad_core::role::Role;
use ironclad_core::TenantId;
use rand::Rng;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Who is calling: resolved from an API key, never from the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Principal {
    /// The key's tenant.
    pub tenant_id: TenantId,
    /// The key's role.
    pub role: Role,
    /// The key's id (for the audit trail).
    pub key_id: Uuid,
}

/// A freshly created key: the only time the raw secret exists.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    /// The key's id.
    pub id: Uuid,
    /// The secret to hand to the client.
    pub raw: String,
}

/// The stored form of a raw key.
pub fn hash_key(raw: &str) -> String {
    hex::encode(Sha256::digest(raw.as_bytes()))
}

const TENANT_CREATE: &str = "INSERT INTO tenants (id, name) VALUES ($1, $2) RETURNING id";
const TENANT_BY_NAME: &str = "SELECT id FROM tenants WHERE name = $1";
const API_KEY_CREATE: &str =
    "INSERT INTO api_keys (id, tenant_id, key_hash, prefix, role) VALUES ($1, $2, $3, $4, $5)";
const API_KEY_AUTHENTICATE: &str =
    "SELECT id, tenant_id, role FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL";

impl Store {
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

    /// Creates an API key for a tenant and returns its secret, which is not stored.
    pub async fn create_api_key(&self, tenant: TenantId, role: Role) -> StoreResult<NewApiKey> {
        let secret: [u8; 24] = rand::rng().random();
        let raw = format!("ick_{}", hex::encode(secret));
        let id = Uuid::now_v7();
        sqlx::query(API_KEY_CREATE)
            .bind(id)
            .bind(tenant.0)
            .bind(hash_key(&raw))
            .bind(&raw[..12])
            .bind(role.as_str())
            .execute(self.pool())
            .await?;
        Ok(NewApiKey { id, raw })
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
            })
        })
        .transpose()
    }
}
