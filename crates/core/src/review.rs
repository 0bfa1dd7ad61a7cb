//! Human review: how a person settles a decision.

use crate::decision::DecisionStatus;
use crate::spelled_enum;

spelled_enum! {
    /// Where a review stands.
    pub enum ReviewStatus: "review status" {
        /// Waiting for a person.
        Pending = "PENDING",
        /// A reviewer's override, rejection or correction waits for a second reviewer's
        /// confirmation (the policy's `four_eyes`).
        AwaitingSecond = "AWAITING_SECOND",
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

spelled_enum! {
    /// An action the policy's `four_eyes` may hold for a second reviewer.
    pub enum FourEyesAction: "four-eyes action" {
        /// Approving a READY decision.
        Approve = "APPROVE",
        /// Overriding a decision that is not READY.
        Override = "OVERRIDE",
        /// Rejecting the case.
        Reject = "REJECT",
        /// Correcting a value the documents were read as.
        Correction = "CORRECTION",
    }
}

impl From<ReviewAction> for FourEyesAction {
    fn from(action: ReviewAction) -> Self {
        match action {
            ReviewAction::Approve => Self::Approve,
            ReviewAction::Override => Self::Override,
            ReviewAction::Reject => Self::Reject,
        }
    }
}

spelled_enum! {
    /// What a second reviewer says about an action held for four eyes.
    pub enum SecondOpinion: "second opinion" {
        /// The action takes effect (the review resolves, or the correction is applied).
        Confirm = "CONFIRM",
        /// The action is dropped; the review waits for a person again.
        Decline = "DECLINE",
    }
}

/// Why a second reviewer may not confirm or decline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecondRefusal {
    /// The person who proposed the action cannot be its second pair of eyes.
    #[error("you proposed this {0}; another reviewer must confirm or decline it")]
    OwnProposal(FourEyesAction),
}

/// Whether `second` may confirm or decline what `proposer` proposed (both as the audit trail
/// names actors): never the same person.
pub fn check_second(
    action: FourEyesAction,
    proposer: &str,
    second: &str,
) -> Result<(), SecondRefusal> {
    if proposer == second {
        Err(SecondRefusal::OwnProposal(action))
    } else {
        Ok(())
    }
}

/// How long a decision may wait for a person before it is overdue (the policy's
/// `review_sla`): written as a whole number and a unit, `90m`, `4h`, `2d`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewSla {
    text: String,
    seconds: u64,
}

impl ReviewSla {
    /// Shortest SLA: a review cannot be overdue before anyone could open it.
    pub const MIN_SECONDS: u64 = 60;
    /// Longest SLA: 30 days.
    pub const MAX_SECONDS: u64 = 30 * 86_400;

    /// Reads `4h`, `90m`, `45s`, `2d` (also `1h30m`), within one minute and 30 days.
    pub fn parse(text: &str) -> Result<Self, String> {
        let refuse = || {
            format!(
                "{text:?} is not a review SLA: write a whole number and a unit (s, m, h or d), \
                 such as \"4h\", from 1 minute to 30 days"
            )
        };
        let mut seconds: u64 = 0;
        let mut number = String::new();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(refuse());
        }
        for c in trimmed.chars() {
            if c.is_ascii_digit() {
                number.push(c);
                continue;
            }
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                _ => return Err(refuse()),
            };
            let n: u64 = number.parse().map_err(|_| refuse())?;
            seconds = n
                .checked_mul(unit)
                .and_then(|s| seconds.checked_add(s))
                .ok_or_else(refuse)?;
            number.clear();
        }
        if !number.is_empty() || !(Self::MIN_SECONDS..=Self::MAX_SECONDS).contains(&seconds) {
            return Err(refuse());
        }
        Ok(Self {
            text: trimmed.to_owned(),
            seconds,
        })
    }

    /// The SLA in seconds.
    pub fn seconds(&self) -> u64 {
        self.seconds
    }

    /// As written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl serde::Serialize for ReviewSla {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for ReviewSla {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
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
    fn nobody_is_their_own_second_pair_of_eyes() {
        assert_eq!(
            check_second(FourEyesAction::Override, "user:a", "user:a"),
            Err(SecondRefusal::OwnProposal(FourEyesAction::Override))
        );
        assert_eq!(
            check_second(FourEyesAction::Correction, "user:a", "user:b"),
            Ok(())
        );
        assert_eq!(
            FourEyesAction::from(ReviewAction::Override),
            FourEyesAction::Override
        );
    }

    #[test]
    fn review_slas_read_as_people_write_them_and_refuse_the_rest() {
        let sla = |t: &str| ReviewSla::parse(t).map(|s| s.seconds());
        assert_eq!(sla("4h"), Ok(4 * 3600));
        assert_eq!(sla("90m"), Ok(5400));
        assert_eq!(sla("1h30m"), Ok(5400));
        assert_eq!(sla(" 2d "), Ok(2 * 86_400));
        assert_eq!(sla("60s"), Ok(60));
        for bad in [
            "",
            "4",
            "h",
            "4x",
            "4 h",
            "-4h",
            "59s",
            "31d",
            "99999999999999999999h",
        ] {
            let err = ReviewSla::parse(bad).expect_err(bad);
            assert!(err.contains("not a review SLA"), "{bad}: {err}");
        }
        let parsed: ReviewSla = serde_json::from_str("\"4h\"").expect("reads");
        assert_eq!(
            serde_json::to_string(&parsed).ok().as_deref(),
            Some("\"4h\"")
        );
        assert!(serde_json::from_str::<ReviewSla>("\"4 hours\"").is_err());
    }

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
