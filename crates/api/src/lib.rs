//! Ironclad's HTTP API: authenticated, streaming case intake, case reads, health and metrics.
//!
//! **What.** [`router()`] builds the axum application and [`serve`] runs it until shutdown.
//! `POST /v1/cases` streams each uploaded file into the content-addressed blob store, identifies
//! it from its bytes, and only then commits the case, its sources, jobs, outbox rows and audit
//! event in one PostgreSQL statement (design §3, invariant 1). Reads are tenant-scoped; ops
//! endpoints (`/healthz`, `/readyz`, `/metrics`) need no key.
//!
//! **The one design choice.** Every byte of an upload goes to disk as it arrives, and every limit
//! (bytes per file, file count, pages) is enforced while streaming, so a request costs at most
//! one file's bytes of memory and a refused request stops being read at the byte that broke
//! the limit. Blobs are written and fsynced *before* the commit, which is what makes a 201
//! trustworthy.
//!
//! **Its cost.** A request that fails after its blobs are durable leaves them behind: they are
//! content-addressed and possibly shared with a concurrent request, so they are never deleted
//! inline. The reconciler's blob sweep collects them once they are older than its grace period.
//!
//! Every error is JSON, `{"error":{"code","message","details"}}`; database and storage text is
//! logged, never returned (see [`ApiError`]).
#![deny(missing_docs)]

pub mod auth;
pub mod error;
pub mod intake;
pub mod router;
pub mod routes;
pub mod state;

pub use error::ApiError;
pub use router::{router, serve};
pub use state::{ApiConfig, AppState, IntakeLimits};
