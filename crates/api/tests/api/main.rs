//! HTTP API tests against real PostgreSQL and Redis: each test spawns the router on
//! 127.0.0.1:0 with a fresh database, a Redis key prefix and a temporary blob store, and
//! calls it with reqwest.
//!
//! Table of contents:
//! - `helpers`: `TestApp` (spawn, keys, multipart submissions, row counts).
//! - `intake`: the happy path (invariant 1, atomic intake) and request validation.
//! - `limits`: bytes, files, pages and body limits refuse without leaving rows.
//! - `file_types`: wrong, damaged, empty and duplicate files refuse without leaving rows.
//! - `idempotency`: replays answer byte-identically, reuse is 409, races make one case.
//! - `auth`: 401/403, and tenant isolation that cannot be probed.
//! - `faults`: a failure after the blob writes leaves no case, and the sweep collects the orphan.
//! - `reads`: keyset listing and its parameter checks.
//! - `report`: a decision version's report as JSON and PDF (no mixing of versions, tenant
//!   isolation, 404/400s, hostile text read back with pdftotext).
//! - `ops`: healthz, readyz (up and down, one check a second however many ask), metrics
//!   (cached gauges, token, own listener), JSON 404/405, the request deadline.
//! - `throttle`: per-key and per-address rates (429 + Retry-After), the health probes exempt,
//!   `X-Forwarded-For` believed only from trusted proxies.
//! - `load`: the cap on concurrent intakes (503 busy), each tenant's share of it, the slowest
//!   upload accepted (408), and the inspection time budget.
//! - `fuzz_multipart`: random, damaged multipart bodies answer a JSON 4xx and commit nothing.
//! - `cleanup`: a failed or abandoned intake deletes the blobs it created, at once.
//! - `revocation`: a revoked key is refused by every API process within 1 s.
//! - `decisions`: the review queue and actions (roles, keys, stale versions, isolation),
//!   reprocess, reevaluate, and rulesets (admin only, validated before activation, diffed).
//! - `openapi`: `/openapi.json` documents exactly the routes the router serves, with the key,
//!   the error body and the multipart intake.
//! - `reading`: cases read for real (the built-in reader, the trade workflow, a worker and
//!   a dispatcher stepped by hand), for the tests of what reviewers do with them.
//! - `corrections`: a value corrected (typed, or read from a box on a scanned page by OCR), a
//!   new fact version and decision N+1 under the same rules, refusals, replays, the race.
//! - `four_eyes`: an override or a correction held for a second reviewer, confirmed or
//!   declined by another, never by its proposer; both people in the audit.
//! - `claims`: claim, renew, take over with a reason, an admin's release, expiry; the queue's
//!   filters (mine, unclaimed, awaiting a second reviewer, overdue) and the overdue gauge.
//! - `desk_review`: the desk's review work as a signed-in person does it (claim, the
//!   correction form, another reviewer's view, the queue's tabs, `n`).
//! - `desk`: the operator's desk over HTTP (sign-in, CSRF, roles, tenants, admin pages; sign-in
//!   throttled per address and account, password hashing capped).
//! - `desk_session`: the sign-in form's CSRF guard, the `__Host-` cookie, polls and unknown
//!   cookies that write nothing, the session sweep, page images' cache, password changes.
//! - `desk_actions`: desk forms applied once per rendered form, the review form's defaults and
//!   refusals, who changed a case, reprocessing a RESOLVED case, the list's decisions, `n`.
//! - `webhooks`: webhook endpoints (admin only, secret shown once, URL checks, requeue) and the
//!   notification inbox, with tenant isolation on every route.

mod auth;
mod claims;
mod cleanup;
mod corrections;
mod decisions;
mod desk;
mod desk_actions;
mod desk_review;
mod desk_session;
mod faults;
mod file_types;
mod four_eyes;
mod fuzz_multipart;
mod helpers;
mod idempotency;
mod intake;
mod limits;
mod load;
mod openapi;
mod ops;
mod reading;
mod reads;
mod report;
mod revocation;
mod throttle;
mod webhooks;
