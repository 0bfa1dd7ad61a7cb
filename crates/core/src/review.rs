//! Human review: how a person settles a decision.

use crate::decision::DecisionStatus;
use crate::spelled_enum;

spelled_enum! {
    /// Where a review stands.
    pub enum ReviewStatus: "review status" {
        /// Waiting for a person.
        Pending = "PENDING",
        /// A person (or the auto-approve policy) resolved it.
        Resolved = "RESOLVED",
        /// Superseded by a newer decision or a reprocess.
        Cancelled = "CANCELLED",
    }
}

spelled_enum! {
    /// What a reviewer asks for.
    pub enum ReviewAction: "review action" {
        /// Accept a READY decision.
        Approve = "APPROVE",
        /// Accept the case despite a non-READY decision (a comment is required).
        Override = "OVERRIDE",
        /// Refuse the case.
        Reject = "REJECT",
    }
}

spelled_enum! {
    /// How a case was resolved.
    pub enum Resolution: "resolution" {
        /// Approved as READY.
        Approved = "APPROVED",
        /// Rejected.
        Rejected = "REJECTED",
        /// Accepted against the decision, with a comment.
        Overridden = "OVERRIDDEN",
    }
}

/// Why a review action is refused for a decision (the API answers 422).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewRefusal {
    /// APPROVE asks for a READY decision.
    #[error("APPROVE is only for a READY decision; this one is {0} (use OVERRIDE with a comment, or REJECT)")]
    ApproveNeedsReady(DecisionStatus),
    /// OVERRIDE asks for a non-READY decision.
    #[error("OVERRIDE is for a decision that is not READY; approve a READY decision instead")]
    OverrideNeedsNonReady,
    /// OVERRIDE without a reason.
    #[error("OVERRIDE requires a comment saying why")]
    OverrideNeedsComment,
}

impl ReviewAction {
    /// The resolution this action records for a decision of `status`, or why it is refused.
    pub fn resolve(
        self,
        status: DecisionStatus,
        comment: Option<&str>,
    ) -> Result<Resolution, ReviewRefusal> {
        match self {
            Self::Approve if status == DecisionStatus::Ready => Ok(Resolution::Approved),
            Self::Approve => Err(ReviewRefusal::ApproveNeedsReady(status)),
            Self::Override if status == DecisionStatus::Ready => {
                Err(ReviewRefusal::OverrideNeedsNonReady)
            }
            Self::Override if comment.is_none_or(|c| c.trim().is_empty()) => {
                Err(ReviewRefusal::OverrideNeedsComment)
            }
            Self::Override => Ok(Resolution::Overridden),
            Self::Reject => Ok(Resolution::Rejected),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DecisionStatus::*;

    #[test]
    fn approve_only_ready_override_only_not_ready_reject_always() {
        assert_eq!(
            ReviewAction::Approve.resolve(Ready, None),
            Ok(Resolution::Approved)
        );
        assert_eq!(
            ReviewAction::Approve.resolve(Blocked, Some("x")),
            Err(ReviewRefusal::ApproveNeedsReady(Blocked))
        );
        assert_eq!(
            ReviewAction::Override.resolve(Ready, Some("x")),
            Err(ReviewRefusal::OverrideNeedsNonReady)
        );
        assert_eq!(
            ReviewAction::Override.resolve(Blocked, Some("  ")),
            Err(ReviewRefusal::OverrideNeedsComment)
        );
        assert_eq!(
            ReviewAction::Override.resolve(ReviewRequired, Some("checked by phone")),
            Ok(Resolution::Overridden)
        );
        for s in DecisionStatus::ALL {
            assert_eq!(
                ReviewAction::Reject.resolve(*s, None),
                Ok(Resolution::Rejected)
            );
        }
    }
}
