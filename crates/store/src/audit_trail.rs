//! Writing audit events from Rust-driven transactions (review, reprocess, rulesets, keys).
//! Statements that change a case in one SQL statement write their event in that statement.

use ironclad_core::audit::AuditEventType;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

/// Appends one event inside the caller's transaction. It arrives unsealed: the sealer puts it
/// in its tenant's chain once it has committed (migration 0008).
pub(crate) async fn record(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    case: Option<Uuid>,
    actor: &str,
    kind: AuditEventType,
    data: serde_json::Value,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(case)
    .bind(tenant)
    .bind(crate::storable(actor).as_ref())
    .bind(kind.as_str())
    .bind(data)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
