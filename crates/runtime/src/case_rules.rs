//! Which rules decide a case, chosen in one place for everyone who decides: the worker's
//! finalize, and a reevaluation from the API, the desk or the CLI.
//!
//! The case's workflow is the version it is pinned to (see [`crate::workflows`]); the rules are
//! the tenant's ACTIVE managed ruleset for that workflow, else the workflow's own (see
//! [`ironclad_documents::rules::choose`]). A workflow that cannot be used decides with no
//! rules, which the `safeguard_no_rules` safeguard turns into a review, and says why.

use crate::workflows::{PinError, WorkflowCatalog};
use ironclad_core::CaseId;
use ironclad_documents::rules::{self, ChosenRules};
use ironclad_store::{Store, StoreError};
use uuid::Uuid;

/// The rules that decide `case`, or `None` when there is no such case (of `tenant`, when one
/// is given). `workflows` is `None` for a process that reads without workflows.
pub async fn rules_for_case(
    store: &Store,
    workflows: Option<&WorkflowCatalog>,
    case: CaseId,
    tenant: Option<Uuid>,
) -> Result<Option<ChosenRules>, StoreError> {
    let Some(context) = store.decision_context(case.0, tenant).await? else {
        return Ok(None);
    };
    let active = context.active_ruleset.as_ref();
    let workflow = match workflows {
        None => None,
        Some(catalog) => match catalog
            .for_case(case, context.workflow.as_deref(), context.workflow_id)
            .await
        {
            Ok(workflow) => workflow,
            Err(PinError::Store(e)) => return Err(e),
            Err(PinError::Unusable(problem)) => {
                return Ok(Some(ChosenRules {
                    ruleset: rules::no_rules(),
                    managed: active.map(|(id, version, _)| (*id, *version)),
                    problem: Some(problem),
                }))
            }
        },
    };
    Ok(Some(rules::choose(
        workflow.as_ref().map(|w| w.workflow.as_ref()),
        active,
    )))
}
