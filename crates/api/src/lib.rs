//! Ironclad's HTTP API: authenticated, streaming case intake, case reads, health and metrics.
//!
//! **What.** [`router()`] builds the axum application and [`serve`] runs it until shutdown.
//! `POST /v1/cases` streams each uploaded file into the content-addressed blob store, identifies
//! it from its bytes, and only then commits the case, its sources, jobs, outbox rows and audit
//! event in one PostgreSQL statement (design §3, invariant 1). Reads are tenant-scoped; ops
//! endpoints (`/healthz`, `/readyz`, `/metrics`) need no API key (`/metrics` may need its own
//! token, and can move to a listener of its own: [`serve_metrics`]).
//!
//! **The one design choice.** Every byte of an upload goes to disk as it arrives, and every limit
//! (bytes per file, file count, pages) is enforced while streaming, so a request costs at most
//! one file's bytes of memory and a refused request stops being read at the byte that broke
//! the limit. Blobs are written and fsynced *before* the commit, which is what makes a 201
//! trustworthy.
//!
//! **Its cost.** A request that fails after its blobs are durable must clean up after itself:
//! it deletes the blobs it created before answering, through the blob store's
//! `discard_created`, which keeps any that a concurrent request deduplicated against or a row
//! references (blobs are content-addressed and shared). What a crashed process leaves, or a
//! commit whose outcome is unknown, is collected by the reconciler's blob sweep.
//!
//! **Load.** Anonymous and abusive load is shed before it reaches PostgreSQL or memory
//! ([`throttle`]): malformed API keys are refused unread and unknown ones remembered
//! ([`auth`]), requests are rate limited per address and per key (429), intakes are capped
//! (503 `busy`) and each file's inspection has a time budget, and `/metrics` reads its
//! database gauges at most every 5 s.
//!
//! Every error is JSON, `{"error":{"code","message","details"}}`; database and storage text is
//! logged, never returned (see [`ApiError`]).
#![deny(missing_docs)]

pub mod actions;
pub mod auth;
pub mod client_address;
pub mod error;
pub mod intake;
pub mod openapi;
pub mod paging;
pub mod password;
// The bodies the API answers: its own, read by clients as JSON, so not part of this crate's API.
mod responses;
pub mod router;
pub mod routes;
pub mod state;
pub mod throttle;
pub mod ui;

pub use error::ApiError;
pub use router::{metrics_router, router, serve, serve_metrics};
pub use state::{ApiConfig, AppState, DeskConfig, IntakeLimits, RateLimit};
