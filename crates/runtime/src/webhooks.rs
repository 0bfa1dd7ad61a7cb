//! The webhook deliverer: POSTs each due delivery to its endpoint, signed, and records what the
//! receiver said.
//!
//! Deliveries are claimed under a lock token (SKIP LOCKED, so deliverers never share a
//! delivery) and each is sent as its own task: up to [`DeliveryConfig::concurrency`] in flight,
//! and a freed slot is claimed again at once, so no delivery waits for a slower one. The claim
//! is fair: an endpoint, and a tenant, hold at most their share of deliveries in flight, and
//! the rest is taken one per tenant and endpoint per round — a receiver that never answers
//! costs its own deliveries a timeout each, and nobody else's. Each attempt is written with
//! the delivery's next state in one statement guarded by that token. Delivery is at-least-once: a deliverer that dies after the
//! receiver answered but before the record leaves the row DELIVERING until its lock expires;
//! maintenance then returns it to PENDING and it is sent again **with the same
//! `Ironclad-Delivery-Id`**, which is how receivers drop the duplicate.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use ironclad_core::webhook_url::non_public_range;
use ironclad_core::RetryPolicy;
use ironclad_store::webhooks::{
    AttemptOutcome, AttemptRecord, ClaimedDelivery, DeliveryMaintenance, InFlightShare,
    RESPONSE_EXCERPT_BYTES,
};
use ironclad_store::{Store, StoreError};
use rand::Rng;
use sha2::Sha256;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::metric_names as m;

/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub const SIGNATURE_HEADER: &str = "Ironclad-Signature";
/// The delivery's id, the same on every attempt: receivers dedupe by it.
pub const DELIVERY_ID_HEADER: &str = "Ironclad-Delivery-Id";
/// The notification's type, e.g. `DOSSIER_READY`.
pub const EVENT_HEADER: &str = "Ironclad-Event";

/// Tries at recording an attempt through a PostgreSQL blip (about 7 s of backoff in all),
/// well inside the lock, so a sent attempt is rarely left for lock expiry to find.
const RECORD_TRIES: u32 = 6;

/// How deliveries are sent and retried.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Longest one attempt may take, connecting and reading the answer included; then it
    /// counts as failed (timeout). Default 10 s.
    pub timeout: Duration,
    /// Longest wait for the TCP (and TLS) connection; at most `timeout`. Default 5 s.
    pub connect_timeout: Duration,
    /// Attempts per budget before a delivery is DEAD (an admin's requeue starts a new
    /// budget). Default 8: with the default delays, about 3 h of trying.
    pub max_attempts: i32,
    /// Delay before the 1st, 2nd, … retry of a budget (the last repeats), jittered.
    /// Default 10 s, 30 s, 2 min, 10 min, 30 min, 1 h.
    pub retry: RetryPolicy,
    /// How long a claim holds a delivery.
    ///
    /// Must outlast an attempt (`timeout`) plus recording it, or a slow attempt's delivery is
    /// released and sent again while the first is still being recorded (a duplicate the
    /// receiver drops by id, but a waste). A dead deliverer's deliveries wait at most this
    /// plus one maintenance pass, which is why it is not an hour. Default 2 × timeout + 10 s.
    pub lock: Duration,
    /// Most deliveries this deliverer has in flight at once (each its own task); a freed
    /// slot is claimed again without waiting for the others. Default 64.
    pub concurrency: usize,
    /// Most deliveries in flight to one endpoint, all deliverers together. Default 4.
    ///
    /// What a receiver that accepts and never answers can hold: this many slots for a
    /// timeout each. Also caps the throughput one endpoint gets (this many attempts per round
    /// trip), which is why it is not 1.
    pub per_endpoint: u32,
    /// Most deliveries in flight to one tenant's endpoints together, all deliverers
    /// together. Default 8: a tenant whose endpoints all stall holds at most this many of a
    /// deliverer's 64 slots, so it takes eight such tenants to fill one.
    pub per_tenant: u32,
    /// Pause between ticks when nothing was due. Default 1 s.
    pub poll: Duration,
    /// How often expired locks are released and disabled endpoints' rows retired. Default 5 s.
    pub maintain_every: Duration,
    /// Whether deliveries may reach loopback, private, link-local, CGNAT, multicast and other
    /// non-public addresses ([`non_public_range`]). Default false: every address the host name
    /// resolves to is checked when connecting (so DNS rebinding is covered too) and a
    /// non-public one is refused, the attempt failing with the reason. Set
    /// (`IRONCLAD_WEBHOOK_ALLOW_PRIVATE`) for on-premise receivers.
    pub allow_private: bool,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        let timeout = Duration::from_secs(10);
        Self {
            timeout,
            connect_timeout: Duration::from_secs(5),
            max_attempts: 8,
            retry: RetryPolicy {
                delays: [10, 30, 120, 600, 1800, 3600]
                    .into_iter()
                    .map(Duration::from_secs)
                    .collect(),
                max_attempts: 8,
                jitter: 0.2,
            },
            lock: timeout * 2 + Duration::from_secs(10),
            concurrency: 64,
            per_endpoint: 4,
            per_tenant: 8,
            poll: Duration::from_secs(1),
            maintain_every: Duration::from_secs(5),
            allow_private: false,
        }
    }
}

impl DeliveryConfig {
    /// Refuses combinations that break a promise; the message says which setting to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.timeout.is_zero() {
            return Err("webhook timeout must be positive".into());
        }
        if self.lock < self.timeout * 2 {
            return Err(format!(
                "webhook lock ({:?}) must be at least twice the timeout ({:?}), or a slow attempt is sent twice",
                self.lock, self.timeout
            ));
        }
        if self.max_attempts < 1 {
            return Err("webhook max attempts must be at least 1".into());
        }
        if self.concurrency < 1 {
            return Err("webhook concurrency must be at least 1".into());
        }
        if self.per_endpoint < 1 || self.per_tenant < self.per_endpoint {
            return Err(format!(
                "webhook shares must be at least 1 per endpoint ({}) and no less per tenant ({})",
                self.per_endpoint, self.per_tenant
            ));
        }
        self.retry.validate()
    }
}

/// Why the deliverer could not be built.
#[derive(Debug, thiserror::Error)]
pub enum DelivererError {
    /// The settings contradict each other.
    #[error("invalid webhook settings: {0}")]
    Config(String),
    /// The HTTP client could not be built (TLS backend).
    #[error("building the webhook HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// What one tick did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    /// Deliveries claimed.
    pub claimed: usize,
    /// Taken by their receiver (2xx).
    pub delivered: usize,
    /// Failed and scheduled again.
    pub retrying: usize,
    /// Failed for the last time.
    pub dead: usize,
    /// Our hold was gone when recording (the lock expired meanwhile).
    pub stale: usize,
    /// Attempts whose record could not be written (PostgreSQL unreachable); lock expiry will
    /// send them again.
    pub unrecorded: usize,
}

impl DeliveryReport {
    fn count(&mut self, outcome: Result<AttemptOutcome, StoreError>) {
        match outcome {
            Ok(AttemptOutcome::Delivered) => self.delivered += 1,
            Ok(AttemptOutcome::RetryAt(_)) => self.retrying += 1,
            Ok(AttemptOutcome::Dead) => self.dead += 1,
            Ok(AttemptOutcome::Stale) => self.stale += 1,
            Err(_) => self.unrecorded += 1,
        }
    }
}

/// One deliverer. Several may run against the same database.
#[derive(Debug, Clone)]
pub struct Deliverer {
    store: Store,
    client: reqwest::Client,
    config: DeliveryConfig,
}

/// The signature of `body` sent at unix time `t` with `secret`: lowercase hex of
/// HMAC-SHA256(secret, "<t>.<body>"). The key is the secret's text as given (`whsec_…`).
pub fn sign(secret: &str, t: i64, body: &[u8]) -> Result<String, hmac::digest::InvalidLength> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())?;
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(hex::encode(mac.finalize().into_bytes()))
}

/// The `Ironclad-Signature` header value.
pub fn signature_header(
    secret: &str,
    t: i64,
    body: &[u8],
) -> Result<String, hmac::digest::InvalidLength> {
    Ok(format!("t={t},v1={}", sign(secret, t, body)?))
}

/// A refused destination: the address a webhook would have connected to is not public.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("destination address {address} is {range}; webhooks may only reach public addresses")]
pub struct NotPublicDestination {
    /// The address refused.
    pub address: IpAddr,
    /// Which kind of address it is (`loopback`, `private`, …).
    pub range: &'static str,
}

impl NotPublicDestination {
    /// `Some` when `address` is not public.
    pub fn check(address: IpAddr) -> Option<Self> {
        non_public_range(address).map(|range| Self { address, range })
    }
}

/// Resolves host names as the system does, keeping only public addresses: the deliverer can
/// never connect to our own network, whatever the name resolves to at the time of the attempt
/// (a name that passed a check earlier and now points inside — DNS rebinding — included). When
/// every address is refused, the error names the first.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicOnlyResolver;

impl reqwest::dns::Resolve for PublicOnlyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let mut public = Vec::with_capacity(resolved.len());
            for address in resolved {
                match NotPublicDestination::check(address.ip()) {
                    None => public.push(address),
                    Some(why) => {
                        refused.get_or_insert(why);
                    }
                }
            }
            match refused {
                Some(why) if public.is_empty() => Err(why.into()),
                _ => Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

/// The refusal for a URL whose host is a non-public IP literal (the resolver never sees those).
fn literal_destination_refusal(url: &str) -> Option<NotPublicDestination> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    NotPublicDestination::check(host.parse().ok()?)
}

/// What a failed request says, without the URL (the log has it) and with the cause.
fn describe(err: &reqwest::Error, timeout: Duration) -> String {
    let mut cause: Option<&dyn std::error::Error> = Some(err);
    while let Some(c) = cause {
        if let Some(refused) = c.downcast_ref::<NotPublicDestination>() {
            return refused.to_string();
        }
        cause = c.source();
    }
    if err.is_timeout() {
        return format!("timed out after {timeout:?}");
    }
    let kind = if err.is_connect() {
        "connection failed"
    } else if err.is_redirect() {
        "redirect refused"
    } else if err.is_body() || err.is_decode() {
        "reading the answer failed"
    } else {
        "request failed"
    };
    let mut text = kind.to_owned();
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(err);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

impl Deliverer {
    /// A deliverer over `store`; refuses invalid settings.
    pub fn new(store: Store, config: DeliveryConfig) -> Result<Self, DelivererError> {
        config.validate().map_err(DelivererError::Config)?;
        let mut client = reqwest::Client::builder();
        if !config.allow_private {
            // Straight to the receiver: through a proxy the resolver would check the proxy's
            // address, not the destination's.
            client = client.dns_resolver(Arc::new(PublicOnlyResolver)).no_proxy();
        }
        let client = client
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout.min(config.timeout))
            // A receiver's redirect is an answer, not an instruction: following it would send
            // the signed event somewhere the admin never configured.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("ironclad-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            store,
            client,
            config,
        })
    }

    /// The settings in force.
    pub fn config(&self) -> &DeliveryConfig {
        &self.config
    }

    /// The fair share the claim keeps to.
    fn share(&self) -> InFlightShare {
        InFlightShare {
            per_endpoint: self.config.per_endpoint,
            per_tenant: self.config.per_tenant,
        }
    }

    /// Claims up to `slots` due deliveries, fairly.
    async fn claim(&self, slots: usize) -> Result<Vec<ClaimedDelivery>, StoreError> {
        self.store
            .webhook_claim_due(
                i64::try_from(slots).unwrap_or(i64::MAX),
                self.config.lock,
                self.config.max_attempts,
                self.share(),
            )
            .await
    }

    /// One round by hand (tests, tools): claims up to `concurrency` due deliveries, sends them
    /// concurrently and waits for every attempt to be recorded. [`Deliverer::run`] does not
    /// wait for a round: it claims again as each delivery finishes.
    pub async fn tick(&self) -> Result<DeliveryReport, StoreError> {
        let batch = self.claim(self.config.concurrency).await?;
        let mut report = DeliveryReport {
            claimed: batch.len(),
            ..DeliveryReport::default()
        };
        let outcomes = futures::future::join_all(batch.iter().map(|d| self.deliver(d))).await;
        for outcome in outcomes {
            report.count(outcome);
        }
        Ok(report)
    }

    /// Sends one claimed delivery and records the attempt.
    async fn deliver(&self, d: &ClaimedDelivery) -> Result<AttemptOutcome, StoreError> {
        let record = self.attempt(d).await;
        let outcome = self.record(d, &record).await;
        match &outcome {
            Ok(AttemptOutcome::Delivered) => {
                metrics::counter!(m::WEBHOOK_DELIVERED_TOTAL).increment(1);
            }
            Ok(AttemptOutcome::RetryAt(at)) => {
                metrics::counter!(m::WEBHOOK_FAILED_ATTEMPTS_TOTAL).increment(1);
                tracing::info!(delivery_id = %d.id, attempt = d.attempt, next_attempt_at = %at,
                    status = ?record.http_status, error = ?record.error, "webhook attempt failed; retrying");
            }
            Ok(AttemptOutcome::Dead) => {
                metrics::counter!(m::WEBHOOK_FAILED_ATTEMPTS_TOTAL).increment(1);
                metrics::counter!(m::WEBHOOK_DEAD_TOTAL).increment(1);
                tracing::warn!(delivery_id = %d.id, attempt = d.attempt,
                    status = ?record.http_status, error = ?record.error, "webhook delivery is DEAD");
            }
            Ok(AttemptOutcome::Stale) => {
                tracing::warn!(delivery_id = %d.id, attempt = d.attempt,
                    "webhook attempt finished after its lock expired; its outcome was not recorded");
            }
            Err(err) => {
                tracing::warn!(delivery_id = %d.id, attempt = d.attempt, error = %err,
                    "could not record a webhook attempt; the delivery is retried once its lock expires");
            }
        }
        outcome
    }

    /// Writes the attempt, retrying through a passing PostgreSQL failure.
    async fn record(
        &self,
        d: &ClaimedDelivery,
        record: &AttemptRecord,
    ) -> Result<AttemptOutcome, StoreError> {
        let mut tries = 0u32;
        loop {
            match self.store.webhook_record_attempt(d, record).await {
                Err(err) if err.is_transient() && tries < RECORD_TRIES => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(250) * tries).await;
                }
                other => return other,
            }
        }
    }

    /// One POST: what came back, or why nothing did. Never fails: every failure is an
    /// outcome to record.
    async fn attempt(&self, d: &ClaimedDelivery) -> AttemptRecord {
        let started_at = Utc::now();
        let clock = Instant::now();
        let mut record = AttemptRecord {
            started_at,
            finished_at: started_at,
            http_status: None,
            error: None,
            response_excerpt: None,
            delivered: false,
            retry_in: self
                .config
                .retry
                .delay(d.attempt_in_budget, rand::rng().random::<f64>()),
        };
        let finished = |clock: Instant| finished_at(started_at, clock.elapsed());
        if !self.config.allow_private {
            if let Some(refused) = literal_destination_refusal(&d.url) {
                record.error = Some(refused.to_string());
                record.finished_at = finished(clock);
                return record;
            }
        }
        let body = match serde_json::to_vec(&d.notification) {
            Ok(body) => body,
            Err(err) => {
                record.error = Some(format!("could not encode the notification: {err}"));
                record.finished_at = finished(clock);
                return record;
            }
        };
        let signature = match signature_header(&d.secret, started_at.timestamp(), &body) {
            Ok(s) => s,
            Err(err) => {
                record.error = Some(format!("could not sign: {err}"));
                record.finished_at = finished(clock);
                return record;
            }
        };
        let request = self
            .client
            .post(&d.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, signature)
            .header(DELIVERY_ID_HEADER, d.id.to_string())
            .header(EVENT_HEADER, d.notification.kind.as_str())
            .body(body);
        // The client's own deadline covers connect, send and reading the answer; this outer
        // one only guards against a stall outside them.
        let deadline = self.config.timeout + Duration::from_secs(1);
        match tokio::time::timeout(deadline, send_and_read(request)).await {
            Ok(Ok((status, excerpt))) => {
                record.http_status = Some(status);
                record.delivered = (200..300).contains(&status);
                record.response_excerpt = excerpt;
            }
            Ok(Err(err)) => record.error = Some(describe(&err, self.config.timeout)),
            Err(_) => record.error = Some(format!("timed out after {:?}", self.config.timeout)),
        }
        record.finished_at = finished(clock);
        metrics::histogram!(m::WEBHOOK_ATTEMPT_SECONDS).record(clock.elapsed().as_secs_f64());
        record
    }

    /// Releases expired locks (a dead deliverer's deliveries) and retires disabled endpoints'
    /// PENDING deliveries.
    pub async fn maintain(&self) -> Result<DeliveryMaintenance, StoreError> {
        let done = self.store.webhook_maintain().await?;
        if done.released > 0 {
            tracing::warn!(
                released = done.released,
                dead = done.released_dead,
                "webhook deliveries abandoned in DELIVERING (lock expired) returned to PENDING"
            );
        }
        if done.released_dead > 0 {
            metrics::counter!(m::WEBHOOK_DEAD_TOTAL).increment(done.released_dead);
        }
        Ok(done)
    }

    /// Runs until `shutdown`. Each claimed delivery is its own task, at most `concurrency` at
    /// once; whenever one finishes its slot is claimed again, so a delivery never waits for
    /// another (a batch joined as a whole would wait for its slowest: a receiver that never
    /// answers held every tenant's deliveries to one batch per timeout). Polls when nothing
    /// is due, backs off on errors. Attempts in flight at shutdown are finished and recorded
    /// (each is bounded by the timeout).
    pub async fn run(self, shutdown: CancellationToken) {
        // Shared by the delivery tasks.
        let this = Arc::new(self);
        let maintain_every = this.config.maintain_every;
        let mut last_maintain: Option<Instant> = None;
        let mut failures: u32 = 0;
        let mut in_flight: JoinSet<()> = JoinSet::new();
        // When the next claim may run: now while slots fill, later after an empty claim or
        // an error (a finished delivery brings an idle wait forward, not an error's backoff).
        let mut claim_at = Instant::now();
        let mut backing_off = false;
        while !shutdown.is_cancelled() {
            if last_maintain.is_none_or(|at| at.elapsed() >= maintain_every) {
                if let Err(err) = this.maintain().await {
                    tracing::warn!(error = %err, "webhook maintenance failed");
                }
                last_maintain = Some(Instant::now());
            }
            let free = this.config.concurrency.saturating_sub(in_flight.len());
            if free > 0 && Instant::now() >= claim_at {
                match this.claim(free).await {
                    Ok(claimed) => {
                        failures = 0;
                        backing_off = false;
                        // Fewer than asked: nothing more is due (or every endpoint with work
                        // is at its share) until a slot frees or the poll comes round.
                        claim_at = if claimed.len() < free {
                            Instant::now() + this.config.poll
                        } else {
                            Instant::now()
                        };
                        for delivery in claimed {
                            let me = Arc::clone(&this);
                            in_flight.spawn(async move {
                                let _ = me.deliver(&delivery).await;
                            });
                        }
                    }
                    Err(err) => {
                        failures = failures.saturating_add(1);
                        backing_off = true;
                        tracing::warn!(error = %err, "webhook deliverer claim failed");
                        claim_at = Instant::now() + crate::retry_backoff(failures);
                    }
                }
                continue;
            }
            let until = if free > 0 {
                claim_at
            } else {
                Instant::now() + this.config.poll
            };
            let next_maintain = last_maintain.map_or(until, |at| at + maintain_every);
            let wake = until.min(next_maintain);
            tokio::select! {
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    note_panic(done);
                    while let Some(done) = in_flight.try_join_next() {
                        note_panic(done);
                    }
                    // A slot (and perhaps an endpoint's share) is free: claim now.
                    if !backing_off {
                        claim_at = Instant::now();
                    }
                }
                () = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => {}
                () = shutdown.cancelled() => break,
            }
        }
        while let Some(done) = in_flight.join_next().await {
            note_panic(done);
        }
    }
}

/// A delivery task that panicked: its row stays DELIVERING until its lock expires and
/// maintenance sends it again; say so.
fn note_panic(done: Result<(), tokio::task::JoinError>) {
    if let Err(err) = done {
        if err.is_panic() {
            tracing::error!(error = %err, "a webhook delivery task panicked; the delivery is retried once its lock expires");
        }
    }
}

/// `started_at` plus the monotonic time elapsed (a wall clock stepping back mid-attempt must not
/// make an attempt end before it began).
fn finished_at(started_at: DateTime<Utc>, elapsed: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(elapsed)
        .ok()
        .and_then(|e| started_at.checked_add_signed(e))
        .unwrap_or(started_at)
}

/// Sends `request` and reads at most [`RESPONSE_EXCERPT_BYTES`] of the answer (the rest is
/// dropped with the connection: a receiver cannot make us buffer a large body).
async fn send_and_read(
    request: reqwest::RequestBuilder,
) -> Result<(u16, Option<String>), reqwest::Error> {
    let mut response = request.send().await?;
    let status = response.status().as_u16();
    let mut kept: Vec<u8> = Vec::new();
    while kept.len() < RESPONSE_EXCERPT_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = RESPONSE_EXCERPT_BYTES - kept.len();
                kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(None) => break,
            // The status is what decides; a body cut short is still evidence.
            Err(_) => break,
        }
    }
    let excerpt = (!kept.is_empty()).then(|| String::from_utf8_lossy(&kept).into_owned());
    Ok((status, excerpt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_of_timestamp_dot_body() -> Result<(), hmac::digest::InvalidLength> {
        // A known HMAC-SHA256 vector, reached through the "<t>.<body>" framing: t = 1 and
        // body "x" sign the message "1.x".
        let mut mac = Hmac::<Sha256>::new_from_slice(b"key")?;
        mac.update(b"1.x");
        assert_eq!(
            sign("key", 1, b"x")?,
            hex::encode(mac.finalize().into_bytes())
        );
        let mut fox = Hmac::<Sha256>::new_from_slice(b"key")?;
        fox.update(b"The quick brown fox jumps over the lazy dog");
        assert_eq!(
            hex::encode(fox.finalize().into_bytes()),
            "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
        let body = br#"{"a":1}"#;
        assert_ne!(sign("key", 1, body)?, sign("key", 2, body)?);
        assert_ne!(sign("key", 1, body)?, sign("kex", 1, body)?);
        assert_eq!(
            signature_header("key", 7, b"x")?,
            format!("t=7,v1={}", sign("key", 7, b"x")?)
        );
        Ok(())
    }

    #[test]
    fn defaults_are_valid_and_a_lock_shorter_than_two_timeouts_is_refused() {
        assert!(DeliveryConfig::default().validate().is_ok());
        let bad = DeliveryConfig {
            lock: Duration::from_secs(15),
            ..DeliveryConfig::default()
        };
        assert!(bad.validate().is_err());
        for (per_endpoint, per_tenant) in [(0, 8), (4, 3)] {
            let bad = DeliveryConfig {
                per_endpoint,
                per_tenant,
                ..DeliveryConfig::default()
            };
            assert!(bad.validate().is_err(), "{per_endpoint} {per_tenant}");
        }
    }

    #[test]
    fn non_public_ip_literals_are_refused_before_connecting() {
        assert_eq!(
            literal_destination_refusal("http://10.0.0.5:8080/hook").map(|r| r.to_string()),
            Some(
                "destination address 10.0.0.5 is private; webhooks may only reach public addresses"
                    .to_owned()
            )
        );
        assert_eq!(
            literal_destination_refusal("http://[::1]/").map(|r| r.range),
            Some("loopback")
        );
        assert_eq!(
            literal_destination_refusal("http://169.254.169.254/").map(|r| r.range),
            Some("link-local")
        );
        assert_eq!(literal_destination_refusal("https://93.184.215.14/"), None);
        // Names go through the resolver.
        assert_eq!(literal_destination_refusal("http://localhost/"), None);
    }

    #[test]
    fn attempts_end_after_they_start() {
        let t = Utc::now();
        assert!(finished_at(t, Duration::from_millis(5)) > t);
        assert_eq!(finished_at(t, Duration::ZERO), t);
    }
}
