//! Notifications: what the operator's inbox and webhooks are told.

use crate::decision::DecisionStatus;
use crate::spelled_enum;

spelled_enum! {
    /// What a notification announces.
    pub enum NotificationType: "notification type" {
        /// A decision is READY.
        DossierReady = "DOSSIER_READY",
        /// A decision asks for review.
        DossierReviewRequired = "DOSSIER_REVIEW_REQUIRED",
        /// A decision is BLOCKED by a rule.
        DossierBlocked = "DOSSIER_BLOCKED",
        /// The system could not finish a case (technical failure).
        ProcessingFailed = "PROCESSING_FAILED",
        /// A case was resolved.
        DossierResolved = "DOSSIER_RESOLVED",
        /// A ruleset became active.
        RulesetActivated = "RULESET_ACTIVATED",
    }
}

impl NotificationType {
    /// The notification a decision of `status` raises.
    pub const fn for_decision(status: DecisionStatus) -> Self {
        match status {
            DecisionStatus::Ready => Self::DossierReady,
            DecisionStatus::Blocked => Self::DossierBlocked,
            DecisionStatus::ReviewRequired => Self::DossierReviewRequired,
        }
    }
}

spelled_enum! {
    /// Where one webhook delivery stands.
    pub enum DeliveryStatus: "delivery status" {
        /// Waiting for its next attempt.
        Pending = "PENDING",
        /// A deliverer holds it (lock with expiry).
        Delivering = "DELIVERING",
        /// The receiver answered 2xx.
        Delivered = "DELIVERED",
        /// Every attempt failed; an admin may requeue it.
        Dead = "DEAD",
    }
}

spelled_enum! {
    /// Where a managed ruleset stands.
    pub enum RulesetStatus: "ruleset status" {
        /// Being written; not used for decisions.
        Draft = "DRAFT",
        /// The tenant's rules for its workflow (at most one).
        Active = "ACTIVE",
        /// Replaced by a newer activation.
        Retired = "RETIRED",
    }
}
