//! Deciding a case again under the active rules, from the facts already read.

use crate::actions::action_key;
use crate::error::ApiError;
use crate::responses::decisions::Reevaluated;
use crate::state::AppState;
use ironclad_core::CaseId;
use ironclad_runtime::case_rules::rules_for_case;
use ironclad_store::decisions::RulesApplied;
use ironclad_store::replay::{ActionAnswer, ActionError};
use ironclad_store::tenants::Principal;
use serde_json::json;
use uuid::Uuid;

/// Writes a new decision version of the case under the tenant's active rules. The outer error
/// is a request refused before the store saw it; the inner one the store's refusal.
pub(crate) async fn reevaluate(
    state: &AppState,
    who: &Principal,
    key: &str,
    case: Uuid,
) -> Result<Result<ActionAnswer, ActionError>, ApiError> {
    let key = action_key(who, "reevaluate", key, case, &json!({}));
    let chosen = rules_for_case(
        &state.store,
        Some(&state.workflows()),
        CaseId(case),
        Some(who.tenant_id.0),
    )
    .await?
    .ok_or_else(ApiError::not_found)?;
    if let Some(problem) = &chosen.problem {
        tracing::warn!(case_id = %case, %problem, "reevaluating without the expected rules");
    }
    let applied = RulesApplied::new(&chosen.ruleset, chosen.managed);
    Ok(state
        .store
        .reevaluate_case(&key, case, &applied, &who.actor(), |d| {
            json!(Reevaluated {
                case_id: case,
                decision: d.into(),
            })
        })
        .await)
}
