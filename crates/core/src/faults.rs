//! Named fault points, so tests and the chaos run can break the pipeline exactly where a
//! promise is at stake.
//!
//! Production code calls [`Faults::check`] at a handful of named points (see [`FaultPoint`]).
//! Nothing is armed by default, and a build without the `fault-injection` feature carries no
//! fault at all: `check` is then a constant `Ok(Strike::Pass)` and [`Faults::from_spec`] refuses
//! every spec, so a release binary cannot be made to crash by an environment variable. Tests
//! get the feature through their dev-dependencies (Cargo unifies it only into test builds).
//!
//! A fault is armed in-process by a test ([`Faults::arm_error`]) or from a spec such as
//! `IRONCLAD_FAULTS="worker_after_claim=abort,worker_mid_read=sleep:8s"` (see
//! [`Faults::from_spec`]). `abort` ends the process at once (`abort()`: no destructor, no flush,
//! no XACK — as abrupt as kill -9 for every state we care about); `sleep` makes the caller wait;
//! `error` makes the step fail as an infrastructure error would.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Whether this build can inject faults at all (the `fault-injection` feature, or a unit test).
pub const AVAILABLE: bool = cfg!(any(test, feature = "fault-injection"));

/// Places where a fault can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// Intake wrote every blob but has not started its transaction.
    IntakeAfterBlobWrite,
    /// Intake committed the case but has not answered the client.
    IntakeAfterCommit,
    /// The dispatcher claimed an outbox batch (PUBLISHING) but has not published it.
    DispatcherAfterClaim,
    /// The dispatcher's XADD succeeded but the rows are not yet marked PUBLISHED.
    DispatcherAfterPublish,
    /// The worker claimed a job and is about to run the document step.
    WorkerBeforeProcess,
    /// The document step is running (the processor works on its own task meanwhile).
    WorkerMidRead,
    /// The worker committed the outcome but has not acknowledged the message.
    WorkerBeforeAck,
    /// A finalize job committed its decision but has not acknowledged the message.
    FinalizeAfterCommit,
    /// The reconciler rescued expired leases and is about to re-announce orphaned jobs.
    ReconcilerMidSweep,
}

impl FaultPoint {
    /// Every point, for parsing and for the chaos run's "each point in turn".
    pub const ALL: &'static [FaultPoint] = &[
        Self::IntakeAfterBlobWrite,
        Self::IntakeAfterCommit,
        Self::DispatcherAfterClaim,
        Self::DispatcherAfterPublish,
        Self::WorkerBeforeProcess,
        Self::WorkerMidRead,
        Self::WorkerBeforeAck,
        Self::FinalizeAfterCommit,
        Self::ReconcilerMidSweep,
    ];

    /// The name used in fault specs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::IntakeAfterBlobWrite => "intake_after_blob_write",
            Self::IntakeAfterCommit => "intake_after_commit",
            Self::DispatcherAfterClaim => "dispatcher_after_claim",
            Self::DispatcherAfterPublish => "dispatcher_after_publish",
            // Kept under its historical name: scripts and docs use it.
            Self::WorkerBeforeProcess => "worker_before_process",
            Self::WorkerMidRead => "worker_mid_read",
            Self::WorkerBeforeAck => "worker_before_ack",
            Self::FinalizeAfterCommit => "finalize_after_commit",
            Self::ReconcilerMidSweep => "reconciler_mid_sweep",
        }
    }

    /// The role whose process reaches this point (`api`, `dispatcher`, `worker`, `reconciler`).
    pub const fn role(self) -> &'static str {
        match self {
            Self::IntakeAfterBlobWrite | Self::IntakeAfterCommit => "api",
            Self::DispatcherAfterClaim | Self::DispatcherAfterPublish => "dispatcher",
            Self::WorkerBeforeProcess
            | Self::WorkerMidRead
            | Self::WorkerBeforeAck
            | Self::FinalizeAfterCommit => "worker",
            Self::ReconcilerMidSweep => "reconciler",
        }
    }

    /// Parses a point name (`worker_after_claim` is accepted for `worker_before_process`).
    pub fn parse(name: &str) -> Option<Self> {
        let name = name.trim();
        if name == "worker_after_claim" {
            return Some(Self::WorkerBeforeProcess);
        }
        Self::ALL.iter().copied().find(|p| p.as_str() == name)
    }
}

/// What an armed point does when reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// End the process at once (`abort()`).
    Abort,
    /// Make the caller wait this long, then go on.
    Sleep(Duration),
    /// Make the step fail with [`InjectedFault`].
    Error,
}

/// What the caller must do after [`Faults::check`] returned `Ok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strike {
    /// Nothing armed here: carry on.
    Pass,
    /// Wait this long (asynchronously), then carry on.
    Sleep(Duration),
}

/// An error injected at a fault point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fault injected at {}", .0.as_str())]
pub struct InjectedFault(pub FaultPoint);

/// Why a fault spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecError {
    /// The build has no fault points (no `fault-injection` feature).
    #[error("this build carries no fault points (built without the `fault-injection` feature)")]
    Unavailable,
    /// An entry of the spec could not be read; the text says which and why.
    #[error("invalid fault spec {entry:?}: {reason}")]
    Invalid {
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// An armed point: its action and how many more times it fires (`None`: always).
#[derive(Debug, Clone, Copy)]
struct Armed {
    action: FaultAction,
    remaining: Option<u32>,
}

/// The set of armed fault points of one process (or one test's components). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Faults(Arc<Mutex<HashMap<FaultPoint, Armed>>>);

impl Faults {
    /// No faults armed.
    pub fn none() -> Self {
        Self::default()
    }

    /// Arms faults from a comma-separated spec: `point=action[*count]`, where `action` is
    /// `abort`, `error` or `sleep:<duration>` (`500ms`, `8s`, `2m`) and `count` is how many
    /// times it fires (default 1; `*` for always). A bare `point` means `point=abort`, which
    /// is what the older `IRONCLAD_CRASH_AT` variable held. An empty spec arms nothing.
    pub fn from_spec(spec: &str) -> Result<Self, FaultSpecError> {
        let faults = Self::default();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if !AVAILABLE {
                return Err(FaultSpecError::Unavailable);
            }
            let invalid = |reason: &str| FaultSpecError::Invalid {
                entry: entry.to_owned(),
                reason: reason.to_owned(),
            };
            let (name, rest) = entry.split_once('=').unwrap_or((entry, "abort"));
            let point = FaultPoint::parse(name).ok_or_else(|| {
                invalid(&format!(
                    "unknown point (known: {})",
                    FaultPoint::ALL
                        .iter()
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            let (action, count) = match rest.split_once('*') {
                Some((a, "")) => (a, None),
                Some((a, n)) => (
                    a,
                    Some(
                        n.trim()
                            .parse::<u32>()
                            .map_err(|_| invalid("count must be a whole number or *"))?,
                    ),
                ),
                None => (rest, Some(1)),
            };
            let action = match action.trim() {
                "abort" => FaultAction::Abort,
                "error" => FaultAction::Error,
                other => match other.strip_prefix("sleep:") {
                    Some(d) => FaultAction::Sleep(
                        parse_duration(d).ok_or_else(|| invalid("unreadable sleep duration"))?,
                    ),
                    None => return Err(invalid("action must be abort, error or sleep:<duration>")),
                },
            };
            faults.lock().insert(
                point,
                Armed {
                    action,
                    remaining: count,
                },
            );
        }
        Ok(faults)
    }

    /// Arms crashes named in a comma-separated list (the value of `IRONCLAD_CRASH_AT`).
    pub fn with_crashes_from(list: &str) -> Result<Self, FaultSpecError> {
        Self::from_spec(list)
    }

    /// Makes every check of `point` return an error, until [`Faults::disarm`].
    pub fn arm_error(&self, point: FaultPoint) {
        self.arm(point, FaultAction::Error, None);
    }

    /// Arms `point` with `action`, firing `times` times (`None`: until disarmed).
    pub fn arm(&self, point: FaultPoint, action: FaultAction, times: Option<u32>) {
        self.lock().insert(
            point,
            Armed {
                action,
                remaining: times,
            },
        );
    }

    /// Stops injecting at `point`.
    pub fn disarm(&self, point: FaultPoint) {
        self.lock().remove(&point);
    }

    /// Whether anything is armed.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Called by production code at `point`: aborts the process if an abort is armed there,
    /// returns an error if an error is armed, asks the caller to sleep if a sleep is armed,
    /// else does nothing. Always a pass in builds without the `fault-injection` feature.
    pub fn check(&self, point: FaultPoint) -> Result<Strike, InjectedFault> {
        if !AVAILABLE {
            return Ok(Strike::Pass);
        }
        let action = {
            let mut armed = self.lock();
            let Some(entry) = armed.get_mut(&point) else {
                return Ok(Strike::Pass);
            };
            let action = entry.action;
            match entry.remaining.as_mut() {
                Some(n) if *n <= 1 => {
                    armed.remove(&point);
                }
                Some(n) => *n -= 1,
                None => {}
            }
            action
        };
        match action {
            FaultAction::Abort => {
                eprintln!("ironclad: fault point {} reached, aborting", point.as_str());
                std::process::abort();
            }
            FaultAction::Error => Err(InjectedFault(point)),
            FaultAction::Sleep(d) => {
                eprintln!(
                    "ironclad: fault point {} reached, sleeping {d:?}",
                    point.as_str()
                );
                Ok(Strike::Sleep(d))
            }
        }
    }

    /// [`Faults::check`], performing an armed sleep with `sleep` (the caller's runtime timer,
    /// which keeps this crate free of any async runtime).
    pub async fn strike<F, Fut>(&self, point: FaultPoint, sleep: F) -> Result<(), InjectedFault>
    where
        F: FnOnce(Duration) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        if let Strike::Sleep(d) = self.check(point)? {
            sleep(d).await;
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FaultPoint, Armed>> {
        // A poisoned lock only means a test thread panicked while arming; the map is still valid.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// `500ms`, `8s`, `2m` (a bare number is seconds).
fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn armed_errors_fire_until_disarmed() {
        let f = Faults::none();
        assert_eq!(f.check(FaultPoint::WorkerBeforeAck), Ok(Strike::Pass));
        f.arm_error(FaultPoint::WorkerBeforeAck);
        for _ in 0..3 {
            assert_eq!(
                f.check(FaultPoint::WorkerBeforeAck),
                Err(InjectedFault(FaultPoint::WorkerBeforeAck))
            );
        }
        assert_eq!(f.check(FaultPoint::WorkerBeforeProcess), Ok(Strike::Pass));
        f.disarm(FaultPoint::WorkerBeforeAck);
        assert_eq!(f.check(FaultPoint::WorkerBeforeAck), Ok(Strike::Pass));
    }

    #[test]
    fn names_round_trip() {
        for p in FaultPoint::ALL {
            assert_eq!(FaultPoint::parse(p.as_str()), Some(*p));
        }
        assert_eq!(FaultPoint::parse("nowhere"), None);
        assert_eq!(
            FaultPoint::parse("worker_after_claim"),
            Some(FaultPoint::WorkerBeforeProcess)
        );
    }

    #[test]
    fn specs_arm_actions_with_counts() {
        let f = Faults::from_spec(
            "worker_mid_read=sleep:250ms, dispatcher_after_claim=error*2, reconciler_mid_sweep=error*",
        )
        .expect("valid spec");
        assert_eq!(
            f.check(FaultPoint::WorkerMidRead),
            Ok(Strike::Sleep(Duration::from_millis(250)))
        );
        // Fires once by default.
        assert_eq!(f.check(FaultPoint::WorkerMidRead), Ok(Strike::Pass));
        assert!(f.check(FaultPoint::DispatcherAfterClaim).is_err());
        assert!(f.check(FaultPoint::DispatcherAfterClaim).is_err());
        assert_eq!(f.check(FaultPoint::DispatcherAfterClaim), Ok(Strike::Pass));
        for _ in 0..5 {
            assert!(f.check(FaultPoint::ReconcilerMidSweep).is_err());
        }
        assert!(Faults::from_spec("").expect("empty").is_empty());
    }

    #[test]
    fn bad_specs_are_refused_with_the_entry() {
        for spec in [
            "nowhere=abort",
            "worker_mid_read=explode",
            "worker_mid_read=sleep:soon",
            "worker_mid_read=error*x",
        ] {
            assert!(
                matches!(Faults::from_spec(spec), Err(FaultSpecError::Invalid { .. })),
                "{spec}"
            );
        }
        // A bare name is an abort, as IRONCLAD_CRASH_AT always meant.
        assert!(!Faults::from_spec("worker_before_ack")
            .expect("bare name")
            .is_empty());
    }
}
