//! Named fault points, so tests can break the pipeline exactly where a promise is at stake.
//!
//! Production code calls [`Faults::check`] at a handful of named points (see [`FaultPoint`]).
//! Nothing is armed by default. A test arms a point in-process (an injected error) or the
//! `IRONCLAD_CRASH_AT` environment variable arms a real crash of the binary (`abort`, which is
//! as abrupt as kill -9 for the state we care about: no destructor, no flush, no XACK).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Places where a fault can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// Intake wrote every blob but has not started its transaction.
    IntakeAfterBlobWrite,
    /// The dispatcher's XADD succeeded but the rows are not yet marked PUBLISHED.
    DispatcherAfterPublish,
    /// The worker claimed a job and is about to run the document step.
    WorkerBeforeProcess,
    /// The worker committed the outcome but has not acknowledged the message.
    WorkerBeforeAck,
}

impl FaultPoint {
    /// Every point, for parsing.
    pub const ALL: &'static [FaultPoint] = &[
        Self::IntakeAfterBlobWrite,
        Self::DispatcherAfterPublish,
        Self::WorkerBeforeProcess,
        Self::WorkerBeforeAck,
    ];

    /// The name used in `IRONCLAD_CRASH_AT`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::IntakeAfterBlobWrite => "intake_after_blob_write",
            Self::DispatcherAfterPublish => "dispatcher_after_publish",
            Self::WorkerBeforeProcess => "worker_before_process",
            Self::WorkerBeforeAck => "worker_before_ack",
        }
    }

    /// Parses a point name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.as_str() == name.trim())
    }
}

/// An error injected at a fault point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fault injected at {}", .0.as_str())]
pub struct InjectedFault(pub FaultPoint);

#[derive(Debug, Default)]
struct Armed {
    errors: HashSet<FaultPoint>,
    crashes: HashSet<FaultPoint>,
}

/// The set of armed fault points of one process (or one test's components). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Faults(Arc<Mutex<Armed>>);

impl Faults {
    /// No faults armed.
    pub fn none() -> Self {
        Self::default()
    }

    /// Arms crashes named in a comma-separated list (the value of `IRONCLAD_CRASH_AT`).
    pub fn with_crashes_from(list: &str) -> Self {
        let faults = Self::default();
        for point in list.split(',').filter_map(FaultPoint::parse) {
            faults.lock().crashes.insert(point);
        }
        faults
    }

    /// Makes the next checks of `point` return an error, until [`Faults::disarm`].
    pub fn arm_error(&self, point: FaultPoint) {
        self.lock().errors.insert(point);
    }

    /// Stops injecting at `point`.
    pub fn disarm(&self, point: FaultPoint) {
        let mut armed = self.lock();
        armed.errors.remove(&point);
        armed.crashes.remove(&point);
    }

    /// Called by production code at `point`: aborts the process if a crash is armed there,
    /// returns an error if an error is armed, else does nothing.
    pub fn check(&self, point: FaultPoint) -> Result<(), InjectedFault> {
        let armed = self.lock();
        if armed.crashes.contains(&point) {
            eprintln!("ironclad: crash point {} reached, aborting", point.as_str());
            std::process::abort();
        }
        if armed.errors.contains(&point) {
            return Err(InjectedFault(point));
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Armed> {
        // A poisoned lock only means a test thread panicked while arming; the set is still valid.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn armed_errors_fire_until_disarmed() {
        let f = Faults::none();
        assert!(f.check(FaultPoint::WorkerBeforeAck).is_ok());
        f.arm_error(FaultPoint::WorkerBeforeAck);
        assert_eq!(
            f.check(FaultPoint::WorkerBeforeAck),
            Err(InjectedFault(FaultPoint::WorkerBeforeAck))
        );
        assert!(f.check(FaultPoint::WorkerBeforeProcess).is_ok());
        f.disarm(FaultPoint::WorkerBeforeAck);
        assert!(f.check(FaultPoint::WorkerBeforeAck).is_ok());
    }

    #[test]
    fn names_round_trip() {
        for p in FaultPoint::ALL {
            assert_eq!(FaultPoint::parse(p.as_str()), Some(*p));
        }
        assert_eq!(FaultPoint::parse("nowhere"), None);
    }
}
