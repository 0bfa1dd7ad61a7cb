//! Jobs: the units of work a case is made of.

use crate::spelled_enum;

spelled_enum! {
    /// Where a job stands.
    pub enum JobStatus: "job status" {
        /// Waiting to run once `next_attempt_at` passes. Claimed by a worker (RUNNING) through a
        /// conditional update; re-emitted by the reconciler if no message carries it.
        Pending = "PENDING",
        /// A worker holds a lease. The worker moves it to SUCCEEDED, FAILED or back to PENDING
        /// (retry); the reconciler returns it to PENDING once `lease_expires_at` passes.
        Running = "RUNNING",
        /// Done. Terminal; never redone.
        Succeeded = "SUCCEEDED",
        /// Could not be done (terminal error, attempts exhausted, dead-lettered). Terminal
        /// unless an operator requeues it.
        Failed = "FAILED",
        /// Superseded by a newer generation of its case. Terminal.
        Cancelled = "CANCELLED",
    }
}

impl JobStatus {
    /// Whether the job is finished and must never run again on its own.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }

    /// Every transition [`Self::can_become`] allows, as (from, to).
    pub fn transitions() -> Vec<(Self, Self)> {
        crate::transition_pairs(Self::ALL, Self::can_become)
    }

    /// Whether `self → next` is allowed: the one table of them (see
    /// [`crate::CaseStatus::can_become`]). A transition is a change of status, or a new
    /// attempt at the same status (a claim of a RUNNING job whose lease lapsed).
    pub fn can_become(self, next: JobStatus) -> bool {
        use JobStatus::*;
        matches!(
            (self, next),
            (Pending, Running)
                | (Running, Running) // claimed by another worker once the lease lapsed
                | (Pending, Cancelled)
                | (Pending, Failed) // dead-lettered before any claim
                | (Running, Succeeded)
                | (Running, Failed)
                | (Running, Pending) // retry, or lease expired
                | (Running, Cancelled)
                | (Failed, Pending) // operator requeue
        )
    }
}

spelled_enum! {
    /// What a job does.
    pub enum JobKind: "job kind" {
        /// Read one source: its pages (text layer or OCR), classification into documents,
        /// extraction of their fields with evidence, and the second look at doubtful values.
        ProcessSource = "process_source",
        /// Produce the decision for a case generation once every source job succeeded.
        FinalizeCase = "finalize_case",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_jobs_only_leave_by_requeue() {
        for from in JobStatus::ALL.iter().filter(|s| s.is_terminal()) {
            for to in JobStatus::ALL {
                let allowed = from.can_become(*to);
                let requeue = *from == JobStatus::Failed && *to == JobStatus::Pending;
                assert_eq!(allowed, requeue, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn running_is_the_only_way_to_succeed() {
        for from in JobStatus::ALL {
            assert_eq!(
                from.can_become(JobStatus::Succeeded),
                *from == JobStatus::Running
            );
        }
    }

    #[test]
    fn kinds_spell_as_in_sql() {
        assert_eq!(JobKind::ProcessSource.as_str(), "process_source");
        assert_eq!(
            "finalize_case".parse::<JobKind>().ok(),
            Some(JobKind::FinalizeCase)
        );
    }
}
