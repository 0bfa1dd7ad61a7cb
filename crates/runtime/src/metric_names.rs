//! Names of the counters and histograms the roles record (gauges are computed at scrape time).

/// Outbox rows published.
pub const PUBLISHED_TOTAL: &str = "ironclad_outbox_published_total";
/// Publication failures (rows released with backoff).
pub const PUBLISH_FAILURES_TOTAL: &str = "ironclad_outbox_publish_failures_total";
/// Retries scheduled by workers.
pub const RETRIES_SCHEDULED_TOTAL: &str = "ironclad_retries_scheduled_total";
/// Jobs that ended FAILED.
pub const JOBS_FAILED_TOTAL: &str = "ironclad_jobs_failed_total";
/// Jobs that ended SUCCEEDED.
pub const JOBS_SUCCEEDED_TOTAL: &str = "ironclad_jobs_succeeded_total";
/// Messages moved to the dead-letter stream.
pub const DEAD_LETTERS_TOTAL: &str = "ironclad_dead_letters_total";
/// Duplicate or stale deliveries acknowledged without running anything.
pub const DUPLICATES_TOTAL: &str = "ironclad_duplicate_deliveries_total";
/// Time a job's run took, by kind.
pub const JOB_DURATION_SECONDS: &str = "ironclad_job_duration_seconds";
/// Jobs re-announced by the reconciler.
pub const REEMITTED_TOTAL: &str = "ironclad_reconciler_reemitted_total";
/// Leases rescued by the reconciler.
pub const LEASES_RESCUED_TOTAL: &str = "ironclad_reconciler_leases_rescued_total";
/// Webhook deliveries their receiver took (2xx).
pub const WEBHOOK_DELIVERED_TOTAL: &str = "ironclad_webhook_deliveries_delivered_total";
/// Webhook attempts that failed (non-2xx, timeout, connection error), retried or not.
pub const WEBHOOK_FAILED_ATTEMPTS_TOTAL: &str = "ironclad_webhook_attempts_failed_total";
/// Webhook deliveries that became DEAD (attempts spent).
pub const WEBHOOK_DEAD_TOTAL: &str = "ironclad_webhook_deliveries_dead_total";
/// Time one webhook attempt took, answer read included.
pub const WEBHOOK_ATTEMPT_SECONDS: &str = "ironclad_webhook_attempt_duration_seconds";
/// Counter: audit events sealed into their tenants' hash chains.
pub const AUDIT_SEALED_TOTAL: &str = "ironclad_audit_events_sealed_total";
/// Counter: sealing rounds that failed (retried with backoff).
pub const AUDIT_SEAL_FAILURES_TOTAL: &str = "ironclad_audit_seal_failures_total";
