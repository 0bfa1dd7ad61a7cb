//! Audit event types: the case history an operator reads, and the admin trail.

use crate::spelled_enum;

spelled_enum! {
    /// What happened.
    pub enum AuditEventType: "audit event type" {
        /// Intake committed the case, its sources and jobs.
        CaseIngested = "CASE_INGESTED",
        /// A job failed terminally (error, attempts exhausted or dead-lettered).
        ProcessingFailed = "PROCESSING_FAILED",
        /// Finalize or a reevaluation wrote a decision.
        DecisionGenerated = "DECISION_GENERATED",
        /// An operator requeued dead work.
        Requeued = "REQUEUED",
        /// A person resolved a decision (approve, override or reject).
        ReviewResolved = "REVIEW_RESOLVED",
        /// A policy resolved a READY decision without a person.
        AutoResolved = "AUTO_RESOLVED",
        /// A reprocess started a new generation.
        Reprocessed = "REPROCESSED",
        /// A decision was recomputed under the active rules without re-reading documents.
        Reevaluated = "REEVALUATED",
        /// A ruleset draft was created.
        RulesetCreated = "RULESET_CREATED",
        /// A ruleset became ACTIVE (the previous one RETIRED).
        RulesetActivated = "RULESET_ACTIVATED",
        /// An API key was created.
        ApiKeyCreated = "APIKEY_CREATED",
        /// An API key was revoked.
        ApiKeyRevoked = "APIKEY_REVOKED",
        /// A webhook endpoint was registered.
        WebhookCreated = "WEBHOOK_CREATED",
        /// A webhook endpoint was disabled.
        WebhookDisabled = "WEBHOOK_DISABLED",
        /// An operator requeued a dead webhook delivery.
        WebhookRequeued = "WEBHOOK_REQUEUED",
        /// A desk user was created.
        UserCreated = "USER_CREATED",
        /// A desk user was disabled (their sessions end at once).
        UserDisabled = "USER_DISABLED",
        /// A desk user changed their password (their other sessions ended).
        UserPasswordChanged = "USER_PASSWORD_CHANGED",
    }
}
