//! When a retryable failure runs again: exponential backoff with jitter, as a pure function.

use std::time::Duration;

/// How a job that failed retryably is rescheduled.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Delay before the first, second, … retry; the last entry repeats. Default 30 s, 2 min,
    /// 10 min, 1 h: fast enough to ride out a provider blip, slow enough not to hammer an outage.
    pub delays: Vec<Duration>,
    /// Attempts allowed in all (the first run counts). At the last one the job fails.
    pub max_attempts: i32,
    /// Fraction of the delay randomised each way (0.2 → ±20 %), so retries scheduled by one
    /// outage do not all land in the same second.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            delays: vec![
                Duration::from_secs(30),
                Duration::from_secs(120),
                Duration::from_secs(600),
                Duration::from_secs(3600),
            ],
            max_attempts: 5,
            jitter: 0.2,
        }
    }
}

/// What to do after attempt `attempt` failed retryably.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RetryVerdict {
    /// Run again after this delay.
    RetryAfter(Duration),
    /// No attempts left: fail the job.
    GiveUp,
}

/// Where a job stands in its attempts, as the store records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// The attempt that just failed (1-based, counted over the job's whole life).
    pub attempt: i32,
    /// Attempts the job may make in all. An operator's requeue raises it.
    pub max_attempts: i32,
    /// Attempts made before the current retry budget began: 0 for a new job, the attempt count
    /// at the time of the last requeue otherwise. The backoff restarts with each budget.
    pub budget_start: i32,
}

impl RetryPolicy {
    /// Decides the fate of a job whose attempt failed retryably. The job's own limit decides
    /// (not this policy's `max_attempts`, which only sets the limit of new jobs), so a requeued
    /// job gets a fresh budget; the delay grows with the attempts of the current budget.
    /// `unit` is a random number in `[0, 1)` supplied by the caller, which keeps this pure.
    pub fn after_failure(&self, job: Attempts, unit: f64) -> RetryVerdict {
        if job.attempt >= job.max_attempts {
            return RetryVerdict::GiveUp;
        }
        RetryVerdict::RetryAfter(self.delay(job.attempt - job.budget_start, unit))
    }

    /// Delay before retry number `retry` (1-based), jittered by `unit` in `[0, 1)`.
    pub fn delay(&self, retry: i32, unit: f64) -> Duration {
        let Some(last) = self.delays.last() else {
            return Duration::ZERO;
        };
        let index = usize::try_from(retry.max(1) - 1).unwrap_or(0);
        let base = self.delays.get(index).unwrap_or(last).as_secs_f64();
        let unit = unit.clamp(0.0, 1.0);
        let jitter = self.jitter.clamp(0.0, 1.0);
        let factor = 1.0 + jitter * (2.0 * unit - 1.0);
        Duration::from_secs_f64((base * factor).max(0.0))
    }

    /// Checks the policy makes sense; the message says what to change.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_attempts < 1 {
            return Err("max attempts must be at least 1".into());
        }
        if self.delays.is_empty() {
            return Err("at least one retry delay is needed".into());
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err("jitter must be between 0 and 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_schedule_without_jitter() {
        let p = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        let secs: Vec<u64> = (1..=6).map(|r| p.delay(r, 0.5).as_secs()).collect();
        assert_eq!(secs, vec![30, 120, 600, 3600, 3600, 3600]);
    }

    fn fresh(attempt: i32, max_attempts: i32) -> Attempts {
        Attempts {
            attempt,
            max_attempts,
            budget_start: 0,
        }
    }

    #[test]
    fn gives_up_at_the_jobs_own_limit() {
        let p = RetryPolicy::default();
        assert!(matches!(
            p.after_failure(fresh(1, 3), 0.0),
            RetryVerdict::RetryAfter(_)
        ));
        assert!(matches!(
            p.after_failure(fresh(2, 3), 0.0),
            RetryVerdict::RetryAfter(_)
        ));
        assert_eq!(p.after_failure(fresh(3, 3), 0.0), RetryVerdict::GiveUp);
        assert_eq!(p.after_failure(fresh(9, 3), 0.0), RetryVerdict::GiveUp);
    }

    #[test]
    fn a_requeued_job_gets_a_fresh_budget_and_backoff() {
        let p = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        // Dead-lettered at attempt 5 of 5, requeued with 5 more: attempt 6 fails retryably.
        let requeued = Attempts {
            attempt: 6,
            max_attempts: 10,
            budget_start: 5,
        };
        assert_eq!(
            p.after_failure(requeued, 0.5),
            RetryVerdict::RetryAfter(Duration::from_secs(30)),
            "the first retry of a new budget waits the first delay"
        );
        assert_eq!(
            p.after_failure(
                Attempts {
                    attempt: 10,
                    ..requeued
                },
                0.5
            ),
            RetryVerdict::GiveUp
        );
    }

    #[test]
    fn validate_refuses_nonsense() {
        assert!(RetryPolicy {
            max_attempts: 0,
            ..RetryPolicy::default()
        }
        .validate()
        .is_err());
        assert!(RetryPolicy {
            delays: vec![],
            ..RetryPolicy::default()
        }
        .validate()
        .is_err());
        assert!(RetryPolicy::default().validate().is_ok());
    }

    proptest! {
        #[test]
        fn jitter_stays_within_bounds(retry in 1i32..20, unit in 0.0f64..1.0) {
            let p = RetryPolicy::default();
            let base = p.delay(retry, 0.5).as_secs_f64();
            let d = p.delay(retry, unit).as_secs_f64();
            prop_assert!(d >= base * 0.8 - 1e-6 && d <= base * 1.2 + 1e-6);
        }

        #[test]
        fn delays_never_shrink(retry in 1i32..10) {
            let p = RetryPolicy { jitter: 0.0, ..RetryPolicy::default() };
            prop_assert!(p.delay(retry + 1, 0.0) >= p.delay(retry, 0.0));
        }
    }
}
