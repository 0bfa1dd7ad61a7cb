//! Who is calling: `Authorization: Bearer <key>` resolved to a [`Principal`].
//!
//! The tenant always comes from the key, never from the request. A key that does not have the
//! shape [`create_api_key`](ironclad_store::Store::create_api_key) gives every key (`ick_` and
//! 48 lowercase hex digits) is refused without asking PostgreSQL. A well-formed key is looked
//! up once and the answer, found or not, kept in a small per-router cache ([`AuthCache`]) keyed
//! by the key's hash, so a busy client — or a client hammering with a wrong key — costs one
//! PostgreSQL round trip per key per [`CACHE_TTL`] rather than one per request. Concurrent
//! requests with the same uncached key share one lookup. The cache is short-lived on purpose:
//! it is what bounds how long a revoked key keeps working on each API process (under 1 s),
//! with no message between processes to lose.

use crate::error::ApiError;
use crate::state::AppState;
use crate::throttle::RateLimiters;
use crate::ui::session::{api_call_allowed, csrf_refused, password_change_required, session_of};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use ironclad_core::role::Role;
use ironclad_store::tenants::{hash_key, Principal};
use ironclad_store::Store;
use moka::future::Cache;
use moka::Expiry;
use std::time::{Duration, Instant};

/// How long a resolved key is trusted without asking PostgreSQL again, counted from the start
/// of the lookup that found it.
///
/// This is how long a revoked key may keep working on a process that saw it just before: the
/// lookup that cached it started before the revocation committed, so every process refuses
/// the key from the revocation plus this at the latest. 750 ms keeps that under the promised
/// 1 s with room for a request in flight; a busy client still costs about one indexed lookup
/// per key per process per 0.75 s. (It was 30 s: a leaked key kept working half a minute after
/// its revocation.) Counting from the lookup's start, not from the answer, keeps a slow
/// PostgreSQL from stretching the delay. LISTEN/NOTIFY could make it instant, but a
/// notification lost while a listener reconnects would leave the old entry alive, so the bound
/// would still rest on this TTL.
pub const CACHE_TTL: Duration = Duration::from_millis(750);

/// How long "no such key" is remembered.
///
/// Safe for any TTL, short or long: keys are 192-bit random secrets made by
/// `create_api_key`, and the raw key exists nowhere before the row naming its hash is
/// committed, so nobody can present a key before it exists — a remembered miss can never hide
/// a key created later (short of guessing 192 random bits). A key that was *revoked* reads as a
/// miss too, which is what it should. It is as short as [`CACHE_TTL`] anyway, so that whatever
/// a process believes about a key, found or not, is under a second old: a key restored or
/// un-revoked by hand works at once too, and a flood of one junk key still costs about one
/// query per 0.75 s.
pub const NEGATIVE_CACHE_TTL: Duration = Duration::from_millis(750);

/// Entries kept at most, found and missing together. Eviction is moka's TinyLFU: a flood of
/// distinct junk keys (each seen once) is not admitted over the keys real clients keep using.
const CACHE_CAPACITY: u64 = 10_000;

/// The shape of every key `create_api_key` makes: `ick_` + 24 random bytes in lowercase hex.
const KEY_PREFIX: &str = "ick_";
const KEY_HEX_DIGITS: usize = 48;

/// Key hash → principal (`None`: no such key, or revoked), for [`CACHE_TTL`] or
/// [`NEGATIVE_CACHE_TTL`]. Cheap to clone; clones share the entries.
#[derive(Clone)]
pub struct AuthCache(Cache<String, Lookup>);

/// A lookup's answer and when the lookup started (its entry's age is counted from then).
#[derive(Debug, Clone, Copy)]
struct Lookup {
    principal: Option<Principal>,
    started: Instant,
}

impl std::fmt::Debug for AuthCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AuthCache")
            .field(&self.0.entry_count())
            .finish()
    }
}

impl Default for AuthCache {
    fn default() -> Self {
        Self::new()
    }
}

/// Found keys live [`CACHE_TTL`], missing ones [`NEGATIVE_CACHE_TTL`], from the lookup's start.
struct AuthExpiry;

impl Expiry<String, Lookup> for AuthExpiry {
    fn expire_after_create(
        &self,
        _key: &String,
        value: &Lookup,
        created_at: Instant,
    ) -> Option<Duration> {
        Some(remaining(value, created_at))
    }
}

/// What is left of an answer's TTL when it enters the cache at `inserted`: the time the lookup
/// took is already spent.
fn remaining(value: &Lookup, inserted: Instant) -> Duration {
    ttl_of(&value.principal).saturating_sub(inserted.saturating_duration_since(value.started))
}

fn ttl_of(value: &Option<Principal>) -> Duration {
    if value.is_some() {
        CACHE_TTL
    } else {
        NEGATIVE_CACHE_TTL
    }
}

impl AuthCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self(
            Cache::builder()
                .max_capacity(CACHE_CAPACITY)
                .expire_after(AuthExpiry)
                .build(),
        )
    }

    /// The principal of the well-formed key `raw`, from the cache or from `store`; `None` when
    /// no live key has that value. Errors are not cached.
    async fn resolve(&self, store: &Store, raw: &str) -> Result<Option<Principal>, ApiError> {
        let store = store.clone();
        let owned = raw.to_owned();
        let started = Instant::now();
        self.0
            .try_get_with(hash_key(raw), async move {
                let principal = store.authenticate(&owned).await?;
                Ok::<_, ironclad_store::StoreError>(Lookup { principal, started })
            })
            .await
            .map(|lookup| lookup.principal)
            .map_err(ApiError::from)
    }
}

/// Whether `raw` has the one shape real keys have; anything else is refused unread.
fn is_well_formed_key(raw: &str) -> bool {
    raw.strip_prefix(KEY_PREFIX).is_some_and(|hex| {
        hex.len() == KEY_HEX_DIGITS && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The authenticated caller of a request (extractor). Rejects with 401 when the header is
/// missing, malformed, or names an unknown or revoked key, and with 429 when the key is over
/// its rate ([`RateLimiters`]).
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
        let Some(raw) = bearer_token(&parts.headers) else {
            return from_session(parts, state).await;
        };
        if !is_well_formed_key(raw) {
            return Err(ApiError::Unauthenticated);
        }
        // The router installs both; a router built some other way still authenticates, just
        // without cache or per-key rate.
        let principal = match parts.extensions.get::<AuthCache>() {
            Some(cache) => cache.resolve(&state.store, raw).await?,
            None => state.store.authenticate(raw).await?,
        }
        .ok_or(ApiError::Unauthenticated)?;
        if let Some(limiters) = parts.extensions.get::<RateLimiters>() {
            limiters.check_key(principal.key_id)?;
        }
        Ok(Self(principal))
    }
}

/// A browser's call with the desk's session cookie: unsafe methods need the session's CSRF
/// token in `X-CSRF-Token` (a cookie is sent by the browser whoever made the page), and a user
/// whose password an admin set must change it first.
async fn from_session(parts: &Parts, state: &AppState) -> Result<Caller, ApiError> {
    let (session, _) = session_of(&parts.headers, state)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    if session.must_change_password {
        return Err(password_change_required());
    }
    if !api_call_allowed(&parts.method, &parts.headers, &session) {
        return Err(csrf_refused());
    }
    if let Some(limiters) = parts.extensions.get::<RateLimiters>() {
        limiters.check_key(session.principal.key_id)?;
    }
    Ok(Caller(session.principal))
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
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
    fn only_the_shape_of_real_keys_is_looked_up() {
        let real = format!("ick_{}", "0123456789abcdef".repeat(3));
        assert!(is_well_formed_key(&real));
        assert!(!is_well_formed_key("ick_not_a_real_key"));
        assert!(!is_well_formed_key(&real.to_uppercase()));
        assert!(!is_well_formed_key(&format!("{real}0")));
        assert!(!is_well_formed_key(&real[..real.len() - 1]));
        assert!(!is_well_formed_key(&real.replacen("ick_", "ikk_", 1)));
        assert!(!is_well_formed_key(&format!("ick_{}g", "0".repeat(47))));
        assert!(!is_well_formed_key(""));
    }

    #[test]
    fn found_and_missing_keys_expire_on_their_own_clocks() {
        let principal = Principal {
            tenant_id: TenantId::new(),
            role: Role::Operator,
            key_id: uuid::Uuid::now_v7(),
            credential: ironclad_store::tenants::Credential::ApiKey,
        };
        assert_eq!(ttl_of(&Some(principal)), CACHE_TTL);
        assert_eq!(ttl_of(&None), NEGATIVE_CACHE_TTL);
        // Revocation is promised within a second, whatever the cache remembered.
        assert!(CACHE_TTL < Duration::from_secs(1));
        assert!(NEGATIVE_CACHE_TTL < Duration::from_secs(1));
    }

    #[test]
    fn a_slow_lookup_is_trusted_for_less() {
        let started = Instant::now();
        let found = Lookup {
            principal: Some(Principal {
                tenant_id: TenantId::new(),
                role: Role::Operator,
                key_id: uuid::Uuid::now_v7(),
                credential: ironclad_store::tenants::Credential::ApiKey,
            }),
            started,
        };
        let slow = Duration::from_millis(300);
        assert_eq!(remaining(&found, started), CACHE_TTL);
        assert_eq!(remaining(&found, started + slow), CACHE_TTL - slow);
        assert_eq!(
            remaining(&found, started + CACHE_TTL * 2),
            Duration::ZERO,
            "an answer older than the TTL is not cached"
        );
    }

    #[test]
    fn roles_are_enforced() {
        let caller = Caller(Principal {
            tenant_id: TenantId::new(),
            role: Role::Reviewer,
            key_id: uuid::Uuid::now_v7(),
            credential: ironclad_store::tenants::Credential::ApiKey,
        });
        assert!(caller
            .require(&[Role::Operator, Role::Admin], "submit cases")
            .is_err());
        assert!(caller.require(&[Role::Reviewer], "review").is_ok());
    }
}
