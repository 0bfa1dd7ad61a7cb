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

impl RetryPolicy {
    /// Decides the fate of a job whose attempt number `attempt` (1-based) failed retryably.
    /// `unit` is a random number in `[0, 1)` supplied by the caller, which keeps this pure.
    pub fn after_failure(&self, attempt: i32, unit: f64) -> RetryVerdict {
        if attempt >= self.max_attempts {
            return RetryVerdict::GiveUp;
        }
        RetryVerdict::RetryAfter(self.delay(attempt, unit))
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

    #[test]
    fn gives_up_at_max_attempts() {
        let p = RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        };
        assert!(matches!(
            p.after_failure(1, 0.0),
            RetryVerdict::RetryAfter(_)
        ));
        assert!(matches!(
            p.after_failure(2, 0.0),
            RetryVerdict::RetryAfter(_)
        ));
        assert_eq!(p.after_failure(3, 0.0), RetryVerdict::GiveUp);
        assert_eq!(p.after_failure(9, 0.0), RetryVerdict::GiveUp);
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
