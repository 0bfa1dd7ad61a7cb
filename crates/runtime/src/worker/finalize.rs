//! Finalize: the job that decides a case once every source is read, under the rules chosen
//! for it (see [`crate::case_rules`]), in one transaction with the decision's outbox rows.

use super::{Handled, Worker};
use crate::case_rules::rules_for_case;
use crate::RuntimeError;
use ironclad_documents::rules;
use ironclad_store::decisions::RulesApplied;
use ironclad_store::jobs::{ClaimedJob, FinalizeOutcome};
use ironclad_store::Transition;

impl Worker {
    pub(super) async fn finalize(&self, job: &ClaimedJob) -> Result<Handled, RuntimeError> {
        let catalog = self.workflows.as_deref();
        let chosen = self
            .patiently("choosing the case's rules", || {
                rules_for_case(&self.store, catalog, job.case_id, None)
            })
            .await?
            // The case is gone (it cannot be, a job holds it): decide nothing half-way.
            .unwrap_or_else(|| rules::choose(None, None));
        if let Some(problem) = &chosen.problem {
            tracing::warn!(case_id = %job.case_id, %problem, "deciding without the expected rules");
        }
        let applied = RulesApplied::new(&chosen.ruleset, chosen.managed);
        let outcome = self
            .patiently("committing the decision", || {
                self.store.finalize_case(job, &applied)
            })
            .await?;
        match outcome {
            FinalizeOutcome::Decided | FinalizeOutcome::AlreadyDecided => Ok(Handled::Succeeded),
            FinalizeOutcome::Stale => {
                self.settled(job, Transition::Stale, Handled::Succeeded)
                    .await
            }
        }
    }
}
