//! Identifiers, parsed once at the edge so the rest of the code cannot mix them up.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A new, time-ordered identifier (UUID v7), so index inserts stay local.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }
    };
}

uuid_id!(
    /// A tenant: the organisation an API key belongs to.
    TenantId
);
uuid_id!(
    /// A case (dossier).
    CaseId
);
uuid_id!(
    /// One uploaded file of a case.
    SourceId
);
uuid_id!(
    /// One unit of work.
    JobId
);

/// A client-chosen key that makes a request safe to replay.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct IdempotencyKey(String);

/// Why an idempotency key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdempotencyKeyError {
    /// The key was empty.
    #[error("idempotency key is empty")]
    Empty,
    /// The key was longer than [`IdempotencyKey::MAX_LEN`].
    #[error(
        "idempotency key is longer than {} characters",
        IdempotencyKey::MAX_LEN
    )]
    TooLong,
    /// The key held a character outside visible ASCII.
    #[error("idempotency key must be visible ASCII characters")]
    BadCharacter,
}

impl IdempotencyKey {
    /// Longest key accepted; long enough for a UUID or a hash plus a prefix.
    pub const MAX_LEN: usize = 255;

    /// Parses a key: 1..=255 visible ASCII characters.
    pub fn parse(raw: &str) -> Result<Self, IdempotencyKeyError> {
        if raw.is_empty() {
            return Err(IdempotencyKeyError::Empty);
        }
        if raw.len() > Self::MAX_LEN {
            return Err(IdempotencyKeyError::TooLong);
        }
        if !raw.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(IdempotencyKeyError::BadCharacter);
        }
        Ok(Self(raw.to_owned()))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn idempotency_key_limits() {
        assert_eq!(IdempotencyKey::parse(""), Err(IdempotencyKeyError::Empty));
        assert_eq!(
            IdempotencyKey::parse(&"a".repeat(256)),
            Err(IdempotencyKeyError::TooLong)
        );
        assert_eq!(
            IdempotencyKey::parse("a b"),
            Err(IdempotencyKeyError::BadCharacter)
        );
        assert_eq!(
            IdempotencyKey::parse("order-42").map(|k| k.as_str().to_owned()),
            Ok("order-42".into())
        );
    }

    proptest! {
        #[test]
        fn accepted_keys_are_visible_ascii(raw in "\\PC{0,300}") {
            if let Ok(key) = IdempotencyKey::parse(&raw) {
                prop_assert!(key.as_str().bytes().all(|b| b.is_ascii_graphic()));
                prop_assert!(!key.as_str().is_empty() && key.as_str().len() <= IdempotencyKey::MAX_LEN);
            }
        }
    }

    #[test]
    fn ids_round_trip_through_text() {
        let id = CaseId::new();
        assert_eq!(id.to_string().parse::<CaseId>().ok(), Some(id));
        assert!("not-a-uuid".parse::<CaseId>().is_err());
    }
}
