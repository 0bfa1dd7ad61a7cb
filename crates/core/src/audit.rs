//! Audit event types: the case history an operator reads.

use crate::spelled_enum;

spelled_enum! {
    /// What happened to a case.
    pub enum AuditEventType: "audit event type" {
        /// Intake committed the case, its sources and jobs.
        CaseIngested = "CASE_INGESTED",
        /// A job failed terminally (error, attempts exhausted or dead-lettered).
        ProcessingFailed = "PROCESSING_FAILED",
        /// Finalize wrote a decision.
        DecisionGenerated = "DECISION_GENERATED",
        /// An operator requeued dead work.
        Requeued = "REQUEUED",
    }
}
