//! Why a job failed, as a stable code with a message safe to show any tenant.
//!
//! The full text of a failure (a driver error, a server path, a host name) is for operators:
//! it stays in the job's `last_error`, the logs and the operator's CLI. Tenants get only the
//! code and the fixed message here, which say what happened and whether trying again can help.

use crate::spelled_enum;

spelled_enum! {
    /// The reason a job, and so its case, ended FAILED.
    pub enum FailureCode: "failure code" {
        /// The file cannot be read (damaged, unsupported content). Running it again will not
        /// help; the case needs a better file.
        DocumentUnreadable = "document_unreadable",
        /// A transient problem (provider timeouts, errors) outlasted every attempt.
        AttemptsExhausted = "attempts_exhausted",
        /// The worker running the job's last attempt was lost (crash, kill, lost host).
        WorkerLost = "worker_lost",
        /// The job's message kept failing before any outcome and was set aside.
        DeadLettered = "dead_lettered",
        /// The result of reading the file was refused by the database.
        ResultRejected = "result_rejected",
        /// The document step crashed.
        ProcessorCrashed = "processor_crashed",
        /// An internal inconsistency (a job without its source, an unknown workflow).
        Internal = "internal_error",
    }
}

impl FailureCode {
    /// A message a tenant may see: no host, path, SQL or driver text.
    pub const fn message(self) -> &'static str {
        match self {
            Self::DocumentUnreadable => "the file could not be read; submit a readable copy",
            Self::AttemptsExhausted => {
                "processing kept failing for a temporary reason; an operator can requeue it"
            }
            Self::WorkerLost => {
                "the process reading this file was lost repeatedly; an operator can requeue it"
            }
            Self::DeadLettered => {
                "processing could not be started and was set aside; an operator can requeue it"
            }
            Self::ResultRejected => {
                "the result of reading this file could not be stored; an operator was alerted"
            }
            Self::ProcessorCrashed => "reading this file crashed; an operator was alerted",
            Self::Internal => "an internal error stopped processing; an operator was alerted",
        }
    }

    /// Whether an operator's requeue may run the job again. Only a file that cannot be read is
    /// final: every other failure is technical and may succeed once its cause is gone.
    pub const fn requeueable(self) -> bool {
        !matches!(self, Self::DocumentUnreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_no_internals() {
        for code in FailureCode::ALL {
            let m = code.message();
            assert!(
                !m.contains('/') && !m.contains("sql") && !m.is_empty(),
                "{m}"
            );
            assert_eq!(code.as_str().parse::<FailureCode>().ok(), Some(*code));
        }
        assert!(!FailureCode::DocumentUnreadable.requeueable());
        assert!(FailureCode::WorkerLost.requeueable());
    }
}
