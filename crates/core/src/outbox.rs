//! The transactional outbox: intents to publish, committed with the work they announce.

use crate::ids::JobId;
use crate::spelled_enum;

spelled_enum! {
    /// Where an outbox row stands.
    pub enum OutboxStatus: "outbox status" {
        /// Waiting for `available_at`; claimed by a dispatcher (PUBLISHING).
        Pending = "PENDING",
        /// A dispatcher holds it under a lock token. It becomes PUBLISHED only where the token is
        /// still its own; a row stuck here beyond the lock timeout returns to PENDING.
        Publishing = "PUBLISHING",
        /// On the stream. Pruned after the retention period.
        Published = "PUBLISHED",
        /// Publication failed too many times. Visible and counted; an operator requeues it.
        Dead = "DEAD",
    }
}

/// The outbox idempotency key of the message that announces attempt `attempt` of a job, so that
/// each attempt is announced once however many times the code that schedules it runs.
pub fn job_message_key(job: JobId, attempt: i32) -> String {
    format!("job:{job}:attempt:{attempt}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_per_job_attempt() {
        let job = JobId::new();
        assert_eq!(job_message_key(job, 1), job_message_key(job, 1));
        assert_ne!(job_message_key(job, 1), job_message_key(job, 2));
    }
}
