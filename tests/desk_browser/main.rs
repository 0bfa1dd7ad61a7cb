//! The operator's desk in a real browser: Debian's Chromium, headless, driven through
//! ChromeDriver, against the real `ironclad all` (API, dispatcher, worker, reconciler) on a
//! fresh database. A person signs in, uploads a dossier from the upload page, waits for the
//! decision, opens a failed rule and sees its boxes where the stored evidence says, resolves
//! the review and finds the case RESOLVED with the timeline entry; a forged call without the
//! CSRF token is refused; a reviewer cannot reach the admin pages.
//!
//! Screenshots of every step are written under `$CARGO_TARGET_TMPDIR/desk-browser/` (the path
//! is printed). Without Chromium the test says so and passes, except under `CI=true`, where
//! a missing browser is a failure.

mod support;

/// Upload, decision, evidence boxes, override, forged call, reviewer's limits.
mod journey;
