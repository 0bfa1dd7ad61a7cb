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

/// The data of a `DOSSIER_READY`, `DOSSIER_BLOCKED` or `DOSSIER_REVIEW_REQUIRED` notification
/// (and of its webhook body).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DossierDecided<'a> {
    /// The case.
    pub case_id: uuid::Uuid,
    /// The caller's own reference for the case, as given at upload.
    pub external_reference: Option<&'a str>,
    /// The decision.
    pub decision_id: uuid::Uuid,
    /// Its version (1 for the first decision of the case).
    pub decision_version: i32,
    /// READY, BLOCKED or REVIEW_REQUIRED.
    pub status: DecisionStatus,
    /// One line saying why.
    pub summary: &'a str,
}

/// The data of a `PROCESSING_FAILED` notification (and of its webhook body).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProcessingFailed<'a> {
    /// The case.
    pub case_id: uuid::Uuid,
    /// The caller's own reference for the case, as given at upload.
    pub external_reference: Option<&'a str>,
    /// The generation (reading) of the case that failed.
    pub generation: i32,
    /// The failure's code (`FailureCode`), when one was recorded.
    pub code: Option<&'a str>,
    /// What went wrong, in words.
    pub reason: Option<&'a str>,
}

/// The data of a `DOSSIER_RESOLVED` notification (and of its webhook body), the same whoever
/// resolved the case: a reviewer, a second reviewer confirming, or the policy's auto-approval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DossierResolved<'a> {
    /// The case.
    pub case_id: uuid::Uuid,
    /// The caller's own reference for the case, as given at upload.
    pub external_reference: Option<&'a str>,
    /// The decision version the resolution settles.
    pub decision_version: i32,
    /// APPROVED, OVERRIDDEN or REJECTED.
    pub resolution: crate::review::Resolution,
    /// Who resolved it (`system` for an auto-approval).
    pub actor: &'a str,
    /// The second reviewer who confirmed it, under a four-eyes policy.
    pub confirmed_by: Option<&'a str>,
}

/// A notification's `data`, as stored and as its webhook body carries it.
pub trait NotificationData: serde::Serialize {
    /// As stored in the notification's `data`.
    fn to_json(&self) -> serde_json::Value {
        // Every field is a string, a number or null: serialising cannot fail.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl NotificationData for DossierDecided<'_> {}
impl NotificationData for DossierResolved<'_> {}
impl NotificationData for ProcessingFailed<'_> {}

#[cfg(test)]
mod payload_tests {
    use super::*;
    use crate::review::Resolution;

    #[test]
    fn a_resolution_always_carries_the_callers_reference() {
        let data = DossierResolved {
            case_id: uuid::Uuid::nil(),
            external_reference: Some("PO-77"),
            decision_version: 2,
            resolution: Resolution::Approved,
            actor: "system",
            confirmed_by: None,
        }
        .to_json();
        assert_eq!(data["external_reference"], "PO-77");
        assert_eq!(data["resolution"], "APPROVED");
        assert!(data
            .get("confirmed_by")
            .is_some_and(serde_json::Value::is_null));
    }
}
