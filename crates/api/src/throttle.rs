//! Load shedding: rate limits per client address and per API key, and the cap on concurrent
//! intakes. Each refusal is immediate and answered with `Retry-After`.
//!
//! **Rates** use the GCRA of [`governor`] (a token bucket without a refill task): one state per
//! key, kept in a concurrent map. Keys whose state has fully recovered are dropped every
//! [`HOUSEKEEPING_EVERY`] checks, so the map holds only the keys seen in the last
//! `burst / per_second` seconds, however many distinct addresses a flood uses.
//!
//! - **Per address** ([`limit_by_address`], a middleware): before authentication, so requests
//!   with bad keys count against their address only. The address is the TCP peer's, taken
//!   from axum's `ConnectInfo` ([`crate::serve`] provides it); IPv6 peers are grouped by /64
//!   (one host usually owns a whole /64). A request without `ConnectInfo` (a router driven
//!   in-process, e.g. with `oneshot`) is not limited by address: lumping such requests into
//!   one shared bucket would make unrelated callers throttle each other.
//! - **Per key** ([`RateLimiters::check_key`]): after authentication, by key id.
//! - `/healthz` and `/readyz` are never limited: an orchestrator must always see the truth.
//!
//! **Intakes** hold an [`IntakeSlot`] from a semaphore for as long as their request runs *and*
//! as long as any inspection they started is still running on the blocking pool, so the
//! memory and CPU bound holds even for requests that were dropped (deadline, client gone).

use crate::error::ApiError;
use crate::state::{ApiConfig, RateLimit};
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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
    /// Sign-in attempts by account (the address signed in as, lowercased): slows guessing
    /// one account from many places.
    logins: Option<Arc<Limiter<String>>>,
    /// Sign-in attempts by client address: slows guessing many accounts from one place, with
    /// room for an office of people behind one address.
    login_addresses: Option<Arc<Limiter<IpAddr>>>,
}

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
            Some(limiter) => limiter.check(&account.to_owned()),
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
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        if let Some(peer) = peer {
            if let Err(refusal) = limiters.check_address(peer) {
                return refusal.into_response();
            }
        }
    }
    next.run(request).await
}

/// The cap on intakes running at once. Cheap to clone; clones share the slots.
#[derive(Debug, Clone)]
pub(crate) struct IntakeSlots {
    semaphore: Arc<Semaphore>,
    limit: usize,
}

impl IntakeSlots {
    pub(crate) fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        Self {
            semaphore: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// A slot now, or 503 `busy` at once (never a queue: a queue of 25 MiB uploads is the
    /// unbounded memory this cap exists to prevent).
    pub(crate) fn try_acquire(&self) -> Result<IntakeSlot, ApiError> {
        match Arc::clone(&self.semaphore).try_acquire_owned() {
            Ok(permit) => Ok(IntakeSlot {
                _permit: Arc::new(permit),
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

/// One intake's place under the cap. Clones share it; the place frees when the last clone
/// (the request's, or a still-running inspection's) is dropped.
#[derive(Debug, Clone)]
pub struct IntakeSlot {
    _permit: Arc<OwnedSemaphorePermit>,
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
        let slots = IntakeSlots::new(1);
        let slot = slots.try_acquire();
        assert!(slot.is_ok());
        assert!(slots.try_acquire().is_err(), "the only slot is taken");
        let inspection = slot.as_ref().ok().cloned();
        drop(slot);
        assert!(slots.try_acquire().is_err(), "an inspection still holds it");
        drop(inspection);
        assert!(slots.try_acquire().is_ok());
    }
}
