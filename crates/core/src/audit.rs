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
        /// A reviewer corrected a value; a new version of the fact replaced the old one.
        FactCorrected = "FACT_CORRECTED",
        /// A correction waits for a second reviewer (the policy's `four_eyes`).
        CorrectionProposed = "CORRECTION_PROPOSED",
        /// A resolution (approve, override, reject) waits for a second reviewer.
        ResolutionProposed = "RESOLUTION_PROPOSED",
        /// A second reviewer confirmed what the first proposed.
        SecondConfirmed = "SECOND_CONFIRMED",
        /// A second reviewer declined what the first proposed; the review waits again.
        SecondDeclined = "SECOND_DECLINED",
        /// A reviewer claimed a case's review (claims are renewed silently).
        ReviewClaimed = "REVIEW_CLAIMED",
        /// A reviewer took over another's live claim, with a reason.
        ReviewTakenOver = "REVIEW_TAKEN_OVER",
        /// A claim was released (by its holder or an admin).
        ReviewReleased = "REVIEW_RELEASED",
        /// A desk user changed their password (their other sessions ended).
        UserPasswordChanged = "USER_PASSWORD_CHANGED",
    }
}
