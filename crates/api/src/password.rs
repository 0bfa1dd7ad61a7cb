//! Desk passwords: argon2id hashes in PHC strings, and the rules a new password must meet.
//!
//! Hashing is deliberately slow (argon2's default cost, ≈19 MiB and tens of milliseconds), so
//! request handlers run it through a [`HashGate`]: on the blocking pool, a few at a time, and
//! refused at once when too many already wait. Without the cap, a burst of sign-ins (right or
//! wrong) took every core and a few hundred MiB, for as long as the burst lasted.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use rand::Rng;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// Longest password accepted (argon2 takes any length; this bounds the work one request buys).
pub const MAX_PASSWORD_CHARS: usize = 256;

/// Why a password was not hashed.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// Too short or too long.
    #[error("a password must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters")]
    Length,
    /// The hasher failed (it does not for valid parameters).
    #[error("password hashing failed: {0}")]
    Hash(String),
}

/// What a refused or failed [`HashGate::run`] says.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Every place is taken and the queue is full: try again in [`HASH_BUSY_RETRY_AFTER`].
    #[error("{0} password checks are already running or waiting")]
    Busy(usize),
    /// The blocking task died (a panic in the hasher).
    #[error("password hashing stopped: {0}")]
    Stopped(String),
}

/// What a refused password check is told to wait: the queue drains in well under a second.
pub const HASH_BUSY_RETRY_AFTER: Duration = Duration::from_secs(1);

/// The cap on argon2 work in one application. Cheap to clone; clones share the places.
#[derive(Debug, Clone)]
pub struct HashGate {
    /// Places to run or wait: a request that gets none is refused at once.
    admitted: Arc<Semaphore>,
    /// Places to run.
    running: Arc<Semaphore>,
    capacity: usize,
}

impl HashGate {
    /// At most `at_once` hashes running (0 counts as 1) and `queue` more waiting.
    pub fn new(at_once: usize, queue: usize) -> Self {
        let at_once = at_once.max(1);
        let capacity = at_once.saturating_add(queue);
        Self {
            admitted: Arc::new(Semaphore::new(capacity)),
            running: Arc::new(Semaphore::new(at_once)),
            capacity,
        }
    }

    /// Runs `work` (hashing or verifying) on the blocking pool once a place is free;
    /// [`GateError::Busy`] at once when every place to run or wait is taken.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, GateError> {
        let admitted = Arc::clone(&self.admitted)
            .try_acquire_owned()
            .map_err(|_| {
                metrics::counter!("ironclad_password_checks_refused_total").increment(1);
                GateError::Busy(self.capacity)
            })?;
        let running = Arc::clone(&self.running)
            .acquire_owned()
            .await
            .map_err(|e| GateError::Stopped(e.to_string()))?;
        // The permits move into the task: a request dropped mid-hash (client gone) still
        // counts until the hash it started ends.
        tokio::task::spawn_blocking(move || {
            let out = work();
            drop((running, admitted));
            out
        })
        .await
        .map_err(|e| GateError::Stopped(e.to_string()))
    }
}

impl From<GateError> for crate::error::ApiError {
    fn from(e: GateError) -> Self {
        match e {
            GateError::Busy(limit) => Self::busy("password checks", limit, HASH_BUSY_RETRY_AFTER),
            GateError::Stopped(m) => Self::Internal(format!("password hashing stopped: {m}")),
        }
    }
}

/// The PHC string of `password` with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, PasswordError> {
    let chars = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&chars) {
        return Err(PasswordError::Length);
    }
    let salt_bytes: [u8; 16] = rand::rng().random();
    let salt =
        SaltString::encode_b64(&salt_bytes).map_err(|e| PasswordError::Hash(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// A random password for a new account (20 characters of an unambiguous alphabet, ≈100
/// bits), for an admin to hand over once.
pub fn generate_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rng();
    (0..20)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// Whether `password` matches the PHC string `stored`; a malformed hash matches nothing.
pub fn verify_password(password: &str, stored: &str) -> bool {
    if password.chars().count() > MAX_PASSWORD_CHARS {
        return false;
    }
    PasswordHash::new(stored).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash no password matches, checked when the address is unknown so that sign-in takes as
/// long for an unknown address as for a wrong password (no account discovery by timing).
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password("decoy password never used").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_gate_runs_a_few_queues_a_few_and_refuses_the_rest() {
        let gate = HashGate::new(1, 1);
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let first = tokio::spawn({
            let gate = gate.clone();
            async move { gate.run(move || hold.recv().is_ok()).await }
        });
        // The first holds the only place to run, the second waits in the only queue place.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let second = tokio::spawn({
            let gate = gate.clone();
            async move { gate.run(|| 2).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(matches!(gate.run(|| 3).await, Err(GateError::Busy(2))));
        let _ = release.send(());
        assert!(matches!(first.await, Ok(Ok(true))));
        assert!(matches!(second.await, Ok(Ok(2))));
        assert!(matches!(gate.run(|| 4).await, Ok(4)), "places come back");
    }

    #[test]
    fn a_hash_verifies_its_password_and_nothing_else() -> Result<(), PasswordError> {
        let stored = hash_password("correct horse battery")?;
        assert!(stored.starts_with("$argon2id$"), "{stored}");
        assert!(verify_password("correct horse battery", &stored));
        assert!(!verify_password("correct horse batterY", &stored));
        assert!(!verify_password("", &stored));
        assert!(!verify_password(
            "correct horse battery",
            "not a phc string"
        ));
        // Two hashes of one password differ (fresh salt).
        assert_ne!(stored, hash_password("correct horse battery")?);
        Ok(())
    }

    #[test]
    fn lengths_are_bounded() {
        assert!(matches!(hash_password("short"), Err(PasswordError::Length)));
        assert!(matches!(
            hash_password(&"x".repeat(MAX_PASSWORD_CHARS + 1)),
            Err(PasswordError::Length)
        ));
        assert!(!decoy_hash().is_empty());
        let generated = generate_password();
        assert_eq!(generated.chars().count(), 20);
        assert!(hash_password(&generated).is_ok());
        assert_ne!(generated, generate_password());
        assert!(!verify_password("decoy password never used!", decoy_hash()));
    }
}
