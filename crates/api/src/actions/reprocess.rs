//! Reading a case again as a new generation (see `ironclad_store::reprocess`).

use crate::actions::{action_key, required_reason};
use crate::error::ApiError;
use crate::responses::decisions::Reprocessed;
use crate::state::AppState;
use ironclad_store::replay::{ActionAnswer, ActionError};
use ironclad_store::reprocess::ReprocessRequest;
use ironclad_store::tenants::Principal;
use serde_json::json;
use uuid::Uuid;

/// Most sources one reprocess may name.
const MAX_SOURCE_IDS: usize = 1000;

/// Starts a new generation of the case, reading `source_ids` again (default: all): the one
/// path the API and the desk share. The outer error is a request refused before the store
/// saw it; the inner one the store's refusal (shown beside the desk's form).
pub(crate) async fn reprocess(
    state: &AppState,
    who: &Principal,
    key: &str,
    case: Uuid,
    source_ids: Option<Vec<Uuid>>,
    reason: &str,
) -> Result<Result<ActionAnswer, ActionError>, ApiError> {
    required_reason("reason", reason, "say why the case is read again")?;
    if source_ids
        .as_ref()
        .is_some_and(|s| s.len() > MAX_SOURCE_IDS)
    {
        return Err(ApiError::bad_request(
            "invalid_body",
            format!("at most {MAX_SOURCE_IDS} source_ids"),
        ));
    }
    let reason = reason.trim();
    let key = action_key(
        who,
        "reprocess",
        key,
        case,
        &json!({"source_ids": source_ids, "reason": reason}),
    );
    let req = ReprocessRequest {
        case,
        source_ids,
        reason: reason.to_owned(),
        actor: who.actor(),
        actor_role: who.role,
        max_attempts: state.config.max_attempts,
    };
    Ok(state
        .store
        .reprocess_case(&key, &req, |r| json!(Reprocessed::from(r)))
        .await)
}
