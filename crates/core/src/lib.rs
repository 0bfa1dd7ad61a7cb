//! Ironclad's domain core.
//!
//! Everything here is pure: statuses and the one table of transitions between them,
//! identifiers parsed at the edge, the retry policy and the message envelope, the rules engine
//! and the value parsers, text folding, and the analysis a reading produces. It knows no
//! database, HTTP or Redis, so the rules that keep cases accountable can be read and tested
//! without any of them.
//! The store maps each status to a `CHECK`-constrained text column; a store test proves the
//! two lists agree.
#![deny(missing_docs)]

pub mod analysis;
pub mod audit;
pub mod case;
pub mod decision;
pub mod email;
pub mod envelope;
pub mod failure;
pub mod faults;
pub mod fold;
pub mod ids;
pub mod job;
pub mod media;
pub mod notification;
pub mod outbox;
pub mod page;
pub mod parse;
pub mod retry;
pub mod review;
pub mod role;
pub mod rules;
pub mod webhook_url;

pub use case::CaseStatus;

/// Every (from, to) pair of `all` that `can_become` allows, in the order of `all`: a status
/// table as a list (see [`CaseStatus::transitions`], [`JobStatus::transitions`]).
fn transition_pairs<S: Copy>(all: &[S], can_become: impl Fn(S, S) -> bool) -> Vec<(S, S)> {
    all.iter()
        .flat_map(|&from| all.iter().map(move |&to| (from, to)))
        .filter(|&(from, to)| can_become(from, to))
        .collect()
}
pub use decision::DecisionStatus;
pub use envelope::{Envelope, EnvelopeError};
pub use failure::FailureCode;
pub use ids::{CaseId, IdempotencyKey, JobId, SourceId, TenantId};
pub use job::{JobKind, JobStatus};
pub use outbox::OutboxStatus;
pub use retry::RetryPolicy;

/// A value that did not match any of a closed set of spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?}")]
pub struct UnknownVariant {
    /// Which kind of value was being parsed (for the message).
    pub what: &'static str,
    /// The text that matched nothing.
    pub value: String,
}

/// Declares a closed enum with one canonical spelling per variant, `as_str`, `FromStr`,
/// `ALL` and serde in that spelling, so Rust, SQL and JSON never disagree.
#[macro_export]
macro_rules! spelled_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident : $what:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vmeta])* $variant,)+ }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The canonical spelling, as stored in PostgreSQL and shown in JSON.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::UnknownVariant;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::UnknownVariant { what: $what, value: s.to_owned() }),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                text.parse().map_err(::serde::de::Error::custom)
            }
        }

        // The schema is the closed set of spellings, so a client (or a fuzzer) learns every
        // value the API accepts or shows. The feature tested is the expanding crate's: only
        // core expands this macro.
        #[cfg(feature = "openapi")]
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                ::utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(::utoipa::openapi::schema::Type::String)
                    .description(Some(concat!("A ", $what, ".")))
                    .enum_values(Some([$($text,)+]))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::ToSchema for $name {}
    };
}
