//! The operator's desk in a real browser: Debian's Chromium, headless, driven through
//! ChromeDriver, against the real `ironclad all` (API, dispatcher, worker, reconciler) on a
//! fresh database. A person signs in, uploads a dossier from the upload page, waits for the
//! decision, opens a failed rule and sees its boxes where the stored evidence says, resolves
//! the review and finds the case RESOLVED with the timeline entry; a forged call without the
//! CSRF token is refused; a reviewer cannot reach the admin pages.
//!
//! Journeys (one module each, run one at a time: each has its own `ironclad all` and
//! Chromium):
//! - `journey`: upload, the decision shown when it arrives, evidence boxes, override, a forged
//!   call refused, a reviewer's limits.
//! - `upload`: a refused file removed, no `crypto.randomUUID`, a double click and a twin
//!   request make one case.
//! - `forms`: a refresh or re-POST after creating a key, a user, a webhook endpoint creates
//!   nothing; the new user changes the password the admin saw.
//! - `review`: nothing preselected, no APPROVE on BLOCKED, a refusal beside the form keeping the
//!   comment, "someone else changed this case" naming who and what.
//! - `layout`: every page at 1366 × 900 and 390 × 844 without sideways scrolling.
//! - `shared_review`: a value corrected by typing and another by drawing a box, each deciding
//!   the case again (the correction form at 1366 and 390 px); four eyes with two people signed
//!   in at once, the proposer refused as their own second; a claim seen from a second browser
//!   and taken over with a reason.
//!
//! Screenshots of every step are written under `$CARGO_TARGET_TMPDIR/desk-browser/<journey>/`
//! (the path is printed). Without Chromium the test says so and passes, except under `CI=true`, where
//! a missing browser is a failure.

mod support;

/// Upload, decision, evidence boxes, override, forged call, reviewer's limits.
mod journey;

/// A refused file removed, no `crypto.randomUUID`, one case for a double click.
mod upload;

/// Create forms applied once: refresh and re-POST; a forced password change.
mod forms;

/// Review defaults, refusals beside the form, who changed the case.
mod review;

/// Every page at 1366 px and on a phone.
mod layout;

/// Corrections by typing and by a box, four eyes with two people, a claim seen by another.
mod shared_review;
