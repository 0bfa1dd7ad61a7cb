//! Desk passwords: argon2id hashes in PHC strings, and the rules a new password must meet.
//!
//! Hashing is deliberately slow (argon2's default cost, ≈19 MiB and tens of milliseconds), so
//! callers on the async runtime run it with `spawn_blocking`.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use rand::Rng;

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
