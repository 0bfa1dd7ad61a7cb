//! The life of a case (dossier).

use crate::spelled_enum;

spelled_enum! {
    /// Where a case stands. See `docs/state-machines.md` for the diagram.
    pub enum CaseStatus: "case status" {
        /// Committed by intake with its jobs; moved on to PROCESSING by the first worker that
        /// claims one of its jobs.
        Ingested = "INGESTED",
        /// At least one job has started. Moved on by finalize (AWAITING_REVIEW) or by a job that
        /// fails terminally (FAILED).
        Processing = "PROCESSING",
        /// A decision exists for the current generation and waits for a person.
        AwaitingReview = "AWAITING_REVIEW",
        /// A person resolved the decision. Terminal.
        Resolved = "RESOLVED",
        /// The system could not produce an outcome (a source could not be processed, a job was
        /// dead-lettered). Technical, never a business finding. Terminal until requeued or
        /// reprocessed.
        Failed = "FAILED",
    }
}

impl CaseStatus {
    /// Whether the system has finished with the case (nothing more runs without a person).
    pub const fn is_settled(self) -> bool {
        matches!(self, Self::AwaitingReview | Self::Resolved | Self::Failed)
    }

    /// Every transition [`Self::can_become`] allows, as (from, to).
    pub fn transitions() -> Vec<(Self, Self)> {
        crate::transition_pairs(Self::ALL, Self::can_become)
    }

    /// Whether `self → next` is a transition the system may make: the one table of them.
    /// `docs/state-machines.md` draws it, and every test database refuses an UPDATE that
    /// leaves it (`ironclad_store::transition_guard`). A transition is a change of status, or
    /// of generation at the same status (a reprocess of a PROCESSING case).
    pub fn can_become(self, next: CaseStatus) -> bool {
        use CaseStatus::*;
        matches!(
            (self, next),
            // the first job claimed; a reprocess before any claim
            (Ingested, Processing)
                // a job failed
                | (Ingested, Failed)
                | (Processing, Failed)
                // finalize wrote the generation's decision
                | (Ingested, AwaitingReview)
                | (Processing, AwaitingReview)
                // a reevaluation writes decision N+1 for the same generation
                | (AwaitingReview, AwaitingReview)
                // a person resolves, or the auto-approve policy does
                | (AwaitingReview, Resolved)
                // requeue of dead work, or a reprocess, starts over
                | (Failed, Processing)
                | (Processing, Processing)
                | (AwaitingReview, Processing)
                // a reprocess of a resolved case (the resolution stays in its history)
                | (Resolved, Processing)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolved_is_left_only_by_a_reprocess() {
        for next in CaseStatus::ALL {
            assert_eq!(
                CaseStatus::Resolved.can_become(*next),
                *next == CaseStatus::Processing,
                "RESOLVED -> {next}"
            );
        }
    }

    #[test]
    fn failed_is_never_reached_from_a_decision() {
        assert!(!CaseStatus::AwaitingReview.can_become(CaseStatus::Failed));
        assert!(CaseStatus::Processing.can_become(CaseStatus::Failed));
    }

    #[test]
    fn spelling_round_trips() {
        for s in CaseStatus::ALL {
            assert_eq!(s.as_str().parse::<CaseStatus>().ok(), Some(*s));
        }
        assert!("DONE".parse::<CaseStatus>().is_err());
    }
}
