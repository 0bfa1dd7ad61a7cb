//! Who is calling: `Authorization: Bearer <key>` resolved to a [`Principal`].
//!
//! The tenant always comes from the key, never from the request. Successful lookups are kept
//! for [`CACHE_TTL`] in a small per-router cache keyed by the key's hash, so a busy client
//! costs one PostgreSQL round trip per key per half-minute rather than one per request.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use ironclad_core::role::Role;
use ironclad_store::tenants::{hash_key, Principal};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a resolved key is trusted without asking PostgreSQL again.
///
/// This is also how long a revoked key keeps working on a process that saw it recently; 30 s
/// is short enough for an operator revoking a leaked key and long enough to absorb bursts.
pub const CACHE_TTL: Duration = Duration::from_secs(30);

/// Entries kept at most; past this the cache is emptied of expired entries, then cleared.
/// It only bounds memory against a flood of distinct valid keys, which real tenants never reach.
const CACHE_CAPACITY: usize = 10_000;

/// Key hash → principal, for [`CACHE_TTL`]. Cheap to clone; clones share the entries.
/// Unknown keys are never cached, so a key created a moment ago works at once.
#[derive(Debug, Clone, Default)]
pub struct AuthCache(Arc<Mutex<HashMap<String, (Principal, Instant)>>>);

impl AuthCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self, key_hash: &str) -> Option<Principal> {
        let entries = self.lock();
        entries
            .get(key_hash)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(principal, _)| *principal)
    }

    fn put(&self, key_hash: String, principal: Principal) {
        let mut entries = self.lock();
        if entries.len() >= CACHE_CAPACITY {
            entries.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
            if entries.len() >= CACHE_CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key_hash, (principal, Instant::now()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Principal, Instant)>> {
        // A panic while holding the lock cannot leave a half-written entry: the map is valid.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The authenticated caller of a request (extractor). Rejects with 401 when the header is
/// missing, malformed, or names an unknown or revoked key.
#[derive(Debug, Clone, Copy)]
pub struct Caller(pub Principal);

impl Caller {
    /// Refuses (403) unless the caller's role is one of `allowed`.
    pub fn require(&self, allowed: &[Role], action: &'static str) -> Result<(), ApiError> {
        if allowed.contains(&self.0.role) {
            Ok(())
        } else {
            Err(ApiError::Forbidden {
                role: self.0.role.as_str(),
                action,
            })
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let raw = bearer_token(&parts.headers).ok_or(ApiError::Unauthenticated)?;
        let key_hash = hash_key(raw);
        let cache = parts.extensions.get::<AuthCache>().cloned();
        if let Some(principal) = cache.as_ref().and_then(|c| c.get(&key_hash)) {
            return Ok(Self(principal));
        }
        let principal = state
            .store
            .authenticate(raw)
            .await?
            .ok_or(ApiError::Unauthenticated)?;
        if let Some(cache) = cache {
            cache.put(key_hash, principal);
        }
        Ok(Self(principal))
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    let well_formed = scheme.eq_ignore_ascii_case("bearer")
        && !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_graphic());
    well_formed.then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use ironclad_core::TenantId;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(value) {
            h.insert(header::AUTHORIZATION, v);
        }
        h
    }

    #[test]
    fn only_well_formed_bearer_tokens_are_read() {
        assert_eq!(bearer_token(&headers("Bearer ick_abc")), Some("ick_abc"));
        assert_eq!(bearer_token(&headers("bearer  ick_abc ")), Some("ick_abc"));
        assert_eq!(bearer_token(&headers("Basic dXNlcjpwYXNz")), None);
        assert_eq!(bearer_token(&headers("Bearer")), None);
        assert_eq!(bearer_token(&headers("Bearer a b")), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn cache_returns_fresh_entries_only() {
        let cache = AuthCache::new();
        let principal = Principal {
            tenant_id: TenantId::new(),
            role: Role::Operator,
            key_id: uuid::Uuid::now_v7(),
        };
        assert_eq!(cache.get("h"), None);
        cache.put("h".into(), principal);
        assert_eq!(cache.get("h"), Some(principal));
        if let Some(old) = Instant::now().checked_sub(CACHE_TTL + Duration::from_secs(1)) {
            cache.lock().insert("old".into(), (principal, old));
            assert_eq!(cache.get("old"), None);
        }
    }

    #[test]
    fn roles_are_enforced() {
        let caller = Caller(Principal {
            tenant_id: TenantId::new(),
            role: Role::Reviewer,
            key_id: uuid::Uuid::now_v7(),
        });
        assert!(caller
            .require(&[Role::Operator, Role::Admin], "submit cases")
            .is_err());
        assert!(caller.require(&[Role::Reviewer], "review").is_ok());
    }
}
