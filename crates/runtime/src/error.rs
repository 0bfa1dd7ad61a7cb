//! Errors a role step can end with. None of them is fatal to the loop: it logs, backs off and
//! goes on, because PostgreSQL holds the truth and the next step starts from it.

use ironclad_core::faults::InjectedFault;

/// Why a step did not complete.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// PostgreSQL refused or was unreachable.
    #[error(transparent)]
    Store(#[from] ironclad_store::StoreError),
    /// Redis refused or was unreachable.
    #[error(transparent)]
    Queue(#[from] ironclad_queue::QueueError),
    /// A test armed a fault here.
    #[error(transparent)]
    Injected(#[from] InjectedFault),
}

impl RuntimeError {
    /// Whether trying again later may succeed: PostgreSQL or Redis unreachable, a conflict, or
    /// an injected fault (which stands for exactly such an infrastructure error).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Store(e) => e.is_transient(),
            Self::Queue(e) => e.is_transient(),
            Self::Injected(_) => true,
        }
    }
}
