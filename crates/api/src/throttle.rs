//! Load shedding: rate limits per client address and per API key, and the cap on concurrent
//! intakes. Each refusal is immediate and answered with `Retry-After`.
//!
//! **Rates** use the GCRA of [`governor`] (a token bucket without a refill task): one state per
//! key, kept in a concurrent map. Keys whose state has fully recovered are dropped every
//! [`HOUSEKEEPING_EVERY`] checks, so the map holds only the keys seen in the last
//! `burst / per_second` seconds, however many distinct addresses a flood uses.
//!
//! - **Per address** ([`limit_by_address`], a middleware): before authentication, so requests
//!   with bad keys count against their address only. The address is the request's
//!   [`ClientAddress`]: the TCP peer's, or the one a trusted proxy forwarded (see
//!   [`crate::client_address`]); IPv6 addresses are grouped by /64 (one host usually owns a
//!   whole /64). A request without one (a router driven in-process, e.g. with `oneshot`) is
//!   not limited by address: lumping such requests into one shared bucket would make
//!   unrelated callers throttle each other.
//! - **Sign-in** ([`RateLimiters::check_login`]): by account *and* address together, so a
//!   stranger failing to sign in as someone slows only their own guesses, never that person
//!   signing in from elsewhere; plus a looser rate per address across all accounts.
//! - **Per key** ([`RateLimiters::check_key`]): after authentication, by key id.
//! - `/healthz` and `/readyz` are never limited: an orchestrator must always see the truth.
//!
//! **Intakes** hold an [`IntakeSlot`] from a semaphore for as long as their request runs *and*
//! as long as any inspection they started is still running on the blocking pool, so the
//! memory and CPU bound holds even for requests that were dropped (deadline, client gone).
//! One tenant holds at most its share of the slots
//! ([`ApiConfig::intake_tenant_share`]), so a tenant whose uploads are slow, or who simply
//! sends many, leaves room for the others.

use crate::client_address::ClientAddress;
use crate::error::ApiError;
use crate::state::{ApiConfig, RateLimit};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use ironclad_core::TenantId;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// Checks between two sweeps of recovered keys out of a limiter's map.
const HOUSEKEEPING_EVERY: u64 = 1024;

/// What a busy intake is told to wait: an intake takes seconds, not minutes.
pub const INTAKE_BUSY_RETRY_AFTER: Duration = Duration::from_secs(2);

/// One keyed rate.
#[derive(Debug)]
struct Limiter<K: Hash + Eq + Clone> {
    limiter: DefaultKeyedRateLimiter<K>,
    checks: AtomicU64,
}

impl<K: Hash + Eq + Clone> Limiter<K> {
    fn new(rate: RateLimit) -> Option<Self> {
        let per_second = NonZeroU32::new(rate.per_second)?;
        let burst = NonZeroU32::new(rate.burst)?;
        Some(Self::with_quota(
            Quota::per_second(per_second).allow_burst(burst),
        ))
    }

    fn with_quota(quota: Quota) -> Self {
        Self {
            limiter: DefaultKeyedRateLimiter::keyed(quota),
            checks: AtomicU64::new(0),
        }
    }

    /// `Ok` if `key` may go on now, else how long until it may.
    fn check(&self, key: &K) -> Result<(), Duration> {
        let n = self.checks.fetch_add(1, Ordering::Relaxed);
        if n % HOUSEKEEPING_EVERY == HOUSEKEEPING_EVERY - 1 {
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        self.limiter
            .check_key(key)
            .map_err(|not_until| not_until.wait_time_from(self.limiter.clock().now()))
    }
}

/// The rate limiters of one application. Cheap to clone; clones share the buckets.
#[derive(Debug, Clone, Default)]
pub(crate) struct RateLimiters {
    keys: Option<Arc<Limiter<Uuid>>>,
    addresses: Option<Arc<Limiter<IpAddr>>>,
    /// Sign-in attempts by client address and account (the email signed in as, lowercased)
    /// together: slows guessing one account from one place. Keyed by the account alone, it
    /// let anyone who knows an email address lock its owner out.
    logins: Option<Arc<Limiter<LoginKey>>>,
    /// Sign-in attempts by client address: slows guessing many accounts from one place, with
    /// room for an office of people behind one address.
    login_addresses: Option<Arc<Limiter<IpAddr>>>,
}

/// A sign-in bucket: the client's address (its /64 for IPv6; none when the server does not
/// know it) and the account, lowercased.
type LoginKey = (Option<IpAddr>, String);

/// How many times an account's sign-in rate one client address may use.
const LOGIN_ADDRESS_FACTOR: u32 = 3;

/// A per-minute sign-in limiter: `per_minute × factor` a minute, bursts of at most `burst`
/// (and of at most the rate); `None` when `per_minute` is 0.
fn login_limiter<K: Hash + Eq + Clone>(
    per_minute: u32,
    factor: u32,
    burst: u32,
) -> Option<Arc<Limiter<K>>> {
    let rate = NonZeroU32::new(per_minute.saturating_mul(factor))?;
    let burst = NonZeroU32::new(burst.min(rate.get()))?;
    Some(Arc::new(Limiter::with_quota(
        Quota::per_minute(rate).allow_burst(burst),
    )))
}

impl RateLimiters {
    pub(crate) fn new(config: &ApiConfig) -> Self {
        Self {
            keys: config.key_rate_limit.and_then(Limiter::new).map(Arc::new),
            addresses: config
                .address_rate_limit
                .and_then(Limiter::new)
                .map(Arc::new),
            logins: login_limiter(config.desk.login_attempts_per_minute, 1, 5),
            login_addresses: login_limiter(
                config.desk.login_attempts_per_minute,
                LOGIN_ADDRESS_FACTOR,
                u32::MAX,
            ),
        }
    }

    /// Counts one sign-in attempt as `account` from `peer`; how long to wait when either is
    /// over its rate. Both buckets are charged, so a refused attempt still counts.
    pub(crate) fn check_login(&self, account: &str, peer: Option<IpAddr>) -> Result<(), Duration> {
        let by_account = match &self.logins {
            Some(limiter) => limiter.check(&(peer.map(address_key), account.to_owned())),
            None => Ok(()),
        };
        let by_address = match (&self.login_addresses, peer) {
            (Some(limiter), Some(ip)) => limiter.check(&address_key(ip)),
            _ => Ok(()),
        };
        match (by_account, by_address) {
            (Err(a), Err(b)) => Err(a.max(b)),
            (Err(wait), _) | (_, Err(wait)) => Err(wait),
            _ => Ok(()),
        }
    }

    /// Counts one request of the API key `key_id`; 429 `rate_limited` when over its rate.
    pub(crate) fn check_key(&self, key_id: Uuid) -> Result<(), ApiError> {
        match &self.keys {
            Some(limiter) => limiter.check(&key_id).map_err(|wait| refused("key", wait)),
            None => Ok(()),
        }
    }

    /// Counts one request from `peer`; 429 `rate_limited` when over its rate.
    fn check_address(&self, peer: IpAddr) -> Result<(), ApiError> {
        match &self.addresses {
            Some(limiter) => limiter
                .check(&address_key(peer))
                .map_err(|wait| refused("address", wait)),
            None => Ok(()),
        }
    }
}

fn refused(scope: &'static str, wait: Duration) -> ApiError {
    // Debug, not warn: a flood would otherwise turn into a flood of log lines.
    tracing::debug!(scope, ?wait, "request rate limited");
    metrics::counter!("ironclad_http_rate_limited_total", "scope" => scope).increment(1);
    ApiError::rate_limited(scope, wait)
}

/// The bucket an address falls in: an IPv4 address (IPv4-mapped IPv6 included) by itself, an
/// IPv6 address by its /64.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
    }
}

/// Middleware: the per-address rate, for every route but the health probes.
pub(crate) async fn limit_by_address(
    State(limiters): State<RateLimiters>,
    request: Request,
    next: Next,
) -> Response {
    let exempt = matches!(request.uri().path(), "/healthz" | "/readyz");
    if !exempt {
        let peer = request
            .extensions()
            .get::<ClientAddress>()
            .map(|ClientAddress(ip)| *ip);
        if let Some(peer) = peer {
            if let Err(refusal) = limiters.check_address(peer) {
                return refusal.into_response();
            }
        }
    }
    next.run(request).await
}

/// The cap on intakes running at once, shared and per tenant. Cheap to clone; clones share
/// the slots.
#[derive(Debug, Clone)]
pub(crate) struct IntakeSlots {
    semaphore: Arc<Semaphore>,
    limit: usize,
    /// Slots one tenant may hold at once.
    share: usize,
    /// Slots held per tenant; a tenant holding none has no entry.
    held: Arc<Mutex<HashMap<TenantId, usize>>>,
}

impl IntakeSlots {
    /// `limit` slots in all (0 counts as 1), at most `share` of them per tenant.
    pub(crate) fn new(limit: usize, share: usize) -> Self {
        let limit = limit.max(1);
        Self {
            semaphore: Arc::new(Semaphore::new(limit)),
            limit,
            share: share.clamp(1, limit),
            held: Arc::default(),
        }
    }

    /// A slot for `tenant` now, or 503 `busy` at once (never a queue: a queue of 25 MiB
    /// uploads is the unbounded memory this cap exists to prevent).
    pub(crate) fn try_acquire(&self, tenant: TenantId) -> Result<IntakeSlot, ApiError> {
        let share = TenantShare::take(&self.held, tenant, self.share).ok_or_else(|| {
            tracing::info!(%tenant, share = self.share, "intake refused: tenant at its share");
            metrics::counter!("ironclad_intake_cases_total", "outcome" => "busy_tenant")
                .increment(1);
            let seconds = INTAKE_BUSY_RETRY_AFTER.as_secs();
            ApiError::Throttled {
                status: axum::http::StatusCode::SERVICE_UNAVAILABLE,
                code: "busy",
                message: format!(
                    "this tenant already has {} intakes running, its share of this server; retry after {seconds} s",
                    self.share
                ),
                retry_after: INTAKE_BUSY_RETRY_AFTER,
                details: serde_json::json!({
                    "limit": self.share,
                    "scope": "tenant",
                    "retry_after_seconds": seconds,
                }),
            }
        })?;
        match Arc::clone(&self.semaphore).try_acquire_owned() {
            Ok(permit) => Ok(IntakeSlot {
                _held: Arc::new((permit, share)),
            }),
            Err(_) => {
                tracing::info!(limit = self.limit, "intake refused: server busy");
                metrics::counter!("ironclad_intake_cases_total", "outcome" => "busy").increment(1);
                Err(ApiError::busy(
                    "intakes",
                    self.limit,
                    INTAKE_BUSY_RETRY_AFTER,
                ))
            }
        }
    }
}

/// One of a tenant's places; gives it back when dropped.
#[derive(Debug)]
struct TenantShare {
    held: Arc<Mutex<HashMap<TenantId, usize>>>,
    tenant: TenantId,
}

impl TenantShare {
    /// A place for `tenant` if it holds fewer than `share`.
    fn take(
        held: &Arc<Mutex<HashMap<TenantId, usize>>>,
        tenant: TenantId,
        share: usize,
    ) -> Option<Self> {
        // A poisoned map only means a panic elsewhere mid-update of a counter: keep counting.
        let mut map = held.lock().unwrap_or_else(|e| e.into_inner());
        let count = map.entry(tenant).or_insert(0);
        if *count >= share {
            return None;
        }
        *count += 1;
        Some(Self {
            held: Arc::clone(held),
            tenant,
        })
    }
}

impl Drop for TenantShare {
    fn drop(&mut self) {
        let mut map = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = map.get_mut(&self.tenant) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                map.remove(&self.tenant);
            }
        }
    }
}

/// One intake's place under the cap (and in its tenant's share). Clones share it; the place
/// frees when the last clone (the request's, or a still-running inspection's) is dropped.
#[derive(Debug, Clone)]
pub struct IntakeSlot {
    _held: Arc<(OwnedSemaphorePermit, TenantShare)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn ipv6_peers_share_their_64_and_ipv4_peers_stand_alone() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1"
            .parse()
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let b: IpAddr = "2001:db8:1:2:bbbb::9"
            .parse()
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let c: IpAddr = "2001:db8:1:3::1"
            .parse()
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:10.1.2.3"
            .parse()
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert_eq!(address_key(mapped), IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)));
        let v4 = IpAddr::V4(Ipv4Addr::new(10, 1, 2, 4));
        assert_eq!(address_key(v4), v4);
    }

    #[test]
    fn a_key_over_its_burst_waits_and_others_do_not() {
        let limiters = RateLimiters::new(&ApiConfig {
            key_rate_limit: RateLimit::new(1, 2),
            ..ApiConfig::default()
        });
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert!(limiters.check_key(a).is_ok());
        assert!(limiters.check_key(a).is_ok());
        match limiters.check_key(a) {
            Err(ApiError::Throttled {
                code, retry_after, ..
            }) => {
                assert_eq!(code, "rate_limited");
                assert!(retry_after > Duration::ZERO && retry_after <= Duration::from_secs(1));
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(limiters.check_key(b).is_ok(), "another key is unaffected");
    }

    #[test]
    fn recovered_keys_are_forgotten() {
        let limiter = Limiter::<u64>::new(RateLimit {
            per_second: 1_000_000,
            burst: 1,
        });
        let Some(limiter) = limiter else {
            panic!("a non-zero rate builds a limiter");
        };
        for key in 0..HOUSEKEEPING_EVERY - 1 {
            let _ = limiter.check(&key);
        }
        assert_eq!(limiter.limiter.len() as u64, HOUSEKEEPING_EVERY - 1);
        std::thread::sleep(Duration::from_millis(5));
        // This check sweeps first: every earlier key has recovered and goes.
        let _ = limiter.check(&u64::MAX);
        assert_eq!(limiter.limiter.len(), 1);
    }

    #[test]
    fn intake_slots_are_shared_by_clones_and_freed_by_the_last() {
        let slots = IntakeSlots::new(1, 1);
        let tenant = TenantId::new();
        let slot = slots.try_acquire(tenant);
        assert!(slot.is_ok());
        assert!(slots.try_acquire(tenant).is_err(), "the only slot is taken");
        let inspection = slot.as_ref().ok().cloned();
        drop(slot);
        assert!(
            slots.try_acquire(tenant).is_err(),
            "an inspection still holds it"
        );
        drop(inspection);
        assert!(slots.try_acquire(tenant).is_ok());
    }

    #[test]
    fn a_tenant_holds_at_most_its_share_and_gets_it_back() {
        let slots = IntakeSlots::new(4, 2);
        let (a, b) = (TenantId::new(), TenantId::new());
        let first = slots.try_acquire(a);
        let second = slots.try_acquire(a);
        assert!(first.is_ok() && second.is_ok());
        match slots.try_acquire(a) {
            Err(e) => assert_eq!(e.code(), "busy"),
            Ok(_) => panic!("a third slot for one tenant"),
        }
        assert!(slots.try_acquire(b).is_ok(), "another tenant still gets in");
        drop(first);
        assert!(
            slots.try_acquire(a).is_ok(),
            "a freed place is the tenant's again"
        );
        drop(second);
        let held = slots.held.lock().map(|m| m.len()).unwrap_or(usize::MAX);
        assert_eq!(held, 0, "tenants holding nothing are forgotten");
    }

    #[test]
    fn sign_in_attempts_count_per_address_and_account() {
        let limiters = RateLimiters::new(&ApiConfig::default());
        let (x, y) = (
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
        );
        let refused = (0..10)
            .map(|_| limiters.check_login("alice@example.com", Some(x)))
            .filter(Result::is_err)
            .count();
        assert!(refused > 0, "guessing from one address is slowed");
        assert!(limiters.check_login("alice@example.com", Some(y)).is_ok());
    }
}
