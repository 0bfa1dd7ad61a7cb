//! Desk forms that create something, applied once per rendered form.
//!
//! Each such form carries a random token rendered with the page. The first POST of a token
//! claims it (a `desk_forms` row), creates, and records what it made, all in one
//! transaction; a replay — a double click, a re-POST after a refresh, two tabs — waits for
//! the first to commit, finds the row and gets the first outcome back, so nothing is created
//! twice. A token sent again with other fields is refused rather than replayed. A secret the
//! form made (an API key, a password, a signing secret) is kept only sealed, for its result
//! page to show once ([`Store::desk_form_result`] takes it out).

use crate::tenants::{create_api_key_on, NewApiKey};
use crate::users::{add_user_on, NewUser, UserError, UserInfo};
use crate::webhooks::{webhook_create_in, CreatedWebhook, WebhookCreateError};
use crate::{Store, StoreError};
use ironclad_core::role::Role;
use ironclad_core::webhook_url::WebhookUrl;
use ironclad_core::TenantId;
use serde_json::{json, Value};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

/// The form a POST came from.
#[derive(Debug, Clone)]
pub struct FormKey {
    /// The signed-in user's tenant.
    pub tenant: TenantId,
    /// The signed-in user (tokens are theirs alone).
    pub user: Uuid,
    /// The token rendered into the form.
    pub token: String,
    /// sha256 of what the form asked.
    pub fingerprint: String,
}

/// Which kind of form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormAction {
    /// Admin: create an API key.
    ApiKey,
    /// Admin: create a desk user.
    User,
    /// Admin: register a webhook endpoint.
    Webhook,
}

impl FormAction {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApiKey => "api_key",
            Self::User => "user",
            Self::Webhook => "webhook",
        }
    }
}

/// What a form did: its outcome (ids and names, never a secret), and whether this POST was
/// a replay of an earlier one.
#[derive(Debug, Clone, PartialEq)]
pub struct FormDone {
    /// The form's kind, as stored.
    pub action: String,
    /// What its result page says.
    pub outcome: Value,
    /// True when an earlier POST of the same token created it.
    pub replayed: bool,
}

/// A form's result page, read once per secret.
#[derive(Debug, Clone, PartialEq)]
pub struct FormResult {
    /// The form's kind, as stored.
    pub action: String,
    /// What it made.
    pub outcome: Value,
    /// The sealed secret, the first time only.
    pub sealed_secret: Option<Vec<u8>>,
}

/// Why a form created nothing.
#[derive(Debug, thiserror::Error)]
pub enum FormError {
    /// The token was used by this user for a different form or different fields.
    #[error("this form was already sent with other values; reload the page to start again")]
    TokenReused,
    /// A user with this address exists.
    #[error("a user with this email address already exists")]
    EmailTaken,
    /// The webhook endpoint was refused (the tenant is at its cap).
    #[error(transparent)]
    Webhook(WebhookCreateError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<WebhookCreateError> for FormError {
    fn from(e: WebhookCreateError) -> Self {
        match e {
            WebhookCreateError::Store(e) => FormError::Store(e),
            refused => FormError::Webhook(refused),
        }
    }
}

impl From<sqlx::Error> for FormError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(e.into())
    }
}

/// Claims the token; when another POST holds it, waits for that one and returns its row.
const FORM_CLAIM: &str = r#"
INSERT INTO desk_forms (user_id, token, tenant_id, action, fingerprint, outcome)
VALUES ($1, $2, $3, $4, $5, '{}'::jsonb)
ON CONFLICT DO NOTHING
RETURNING token
"#;
const FORM_EARLIER: &str =
    "SELECT action, fingerprint, outcome FROM desk_forms WHERE user_id = $1 AND token = $2";
const FORM_SETTLE: &str =
    "UPDATE desk_forms SET outcome = $3, sealed_secret = $4 WHERE user_id = $1 AND token = $2";
/// The form's row, its sealed secret taken out in the same statement (shown once).
const FORM_RESULT: &str = r#"
WITH found AS (
    SELECT user_id, token, action, outcome, sealed_secret FROM desk_forms
    WHERE user_id = $1 AND token = $2 AND tenant_id = $3
    FOR UPDATE
), taken AS (
    UPDATE desk_forms d SET sealed_secret = NULL FROM found
    WHERE d.user_id = found.user_id AND d.token = found.token
      AND found.sealed_secret IS NOT NULL
)
SELECT action, outcome, sealed_secret FROM found
"#;

/// `Some(first outcome)` when the token was used before with the same form and fields.
async fn claim(
    tx: &mut Transaction<'_, Postgres>,
    key: &FormKey,
    action: FormAction,
) -> Result<Option<FormDone>, FormError> {
    let claimed: Option<String> = sqlx::query_scalar(FORM_CLAIM)
        .bind(key.user)
        .bind(&key.token)
        .bind(key.tenant.0)
        .bind(action.as_str())
        .bind(&key.fingerprint)
        .fetch_optional(&mut **tx)
        .await?;
    if claimed.is_some() {
        return Ok(None);
    }
    let (stored_action, fingerprint, outcome): (String, String, Value) =
        sqlx::query_as(FORM_EARLIER)
            .bind(key.user)
            .bind(&key.token)
            .fetch_one(&mut **tx)
            .await?;
    if stored_action != action.as_str() || fingerprint != key.fingerprint {
        return Err(FormError::TokenReused);
    }
    Ok(Some(FormDone {
        action: stored_action,
        outcome,
        replayed: true,
    }))
}

async fn settle(
    mut tx: Transaction<'_, Postgres>,
    key: &FormKey,
    action: FormAction,
    outcome: Value,
    sealed_secret: Vec<u8>,
) -> Result<FormDone, FormError> {
    sqlx::query(FORM_SETTLE)
        .bind(key.user)
        .bind(&key.token)
        .bind(&outcome)
        .bind(sealed_secret)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(FormDone {
        action: action.as_str().to_owned(),
        outcome,
        replayed: false,
    })
}

impl Store {
    /// Creates an API key once per form; `seal` seals its secret for the result page.
    pub async fn desk_form_api_key(
        &self,
        key: &FormKey,
        role: Role,
        label: Option<&str>,
        actor: &str,
        seal: impl FnOnce(&str) -> Vec<u8>,
    ) -> Result<FormDone, FormError> {
        let mut tx = self.pool().begin().await?;
        if let Some(earlier) = claim(&mut tx, key, FormAction::ApiKey).await? {
            return Ok(earlier);
        }
        let NewApiKey { id, raw } =
            create_api_key_on(&mut tx, key.tenant, role, label, actor).await?;
        let outcome = json!({
            "key_id": id, "prefix": &raw[..crate::tenants::KEY_PREFIX_LEN],
            "label": label, "role": role,
        });
        settle(tx, key, FormAction::ApiKey, outcome, seal(&raw)).await
    }

    /// Creates a desk user once per form; `seal` seals `password` (already hashed in
    /// `new`) for the result page.
    pub async fn desk_form_user(
        &self,
        key: &FormKey,
        new: &NewUser<'_>,
        password: &str,
        actor: &str,
        seal: impl FnOnce(&str) -> Vec<u8>,
    ) -> Result<FormDone, FormError> {
        let mut tx = self.pool().begin().await?;
        if let Some(earlier) = claim(&mut tx, key, FormAction::User).await? {
            return Ok(earlier);
        }
        let user: UserInfo = match add_user_on(&mut tx, key.tenant, new, actor).await {
            Ok(user) => user,
            Err(UserError::EmailTaken) => return Err(FormError::EmailTaken),
            Err(UserError::Store(e)) => return Err(e.into()),
        };
        let outcome = json!({
            "user_id": user.id, "email": &user.email, "name": user.name(), "role": user.role,
        });
        settle(tx, key, FormAction::User, outcome, seal(password)).await
    }

    /// Registers a webhook endpoint once per form, unless the tenant already has
    /// `max_endpoints` active ones; `seal` seals its signing secret.
    pub async fn desk_form_webhook(
        &self,
        key: &FormKey,
        url: &WebhookUrl,
        description: Option<&str>,
        actor: &str,
        max_endpoints: u32,
        seal: impl FnOnce(&str) -> Vec<u8>,
    ) -> Result<FormDone, FormError> {
        let mut tx = self.pool().begin().await?;
        if let Some(earlier) = claim(&mut tx, key, FormAction::Webhook).await? {
            return Ok(earlier);
        }
        let CreatedWebhook { endpoint, secret } =
            webhook_create_in(&mut tx, key.tenant, url, description, actor, max_endpoints).await?;
        let outcome = json!({"endpoint_id": endpoint.id, "url": endpoint.url});
        settle(tx, key, FormAction::Webhook, outcome, seal(&secret)).await
    }

    /// The result of `user`'s form `token` in `tenant`, its sealed secret (if not shown yet)
    /// taken out so that it is shown once; `None` for an unknown token.
    pub async fn desk_form_result(
        &self,
        tenant: TenantId,
        user: Uuid,
        token: &str,
    ) -> Result<Option<FormResult>, StoreError> {
        let row: Option<(String, Value, Option<Vec<u8>>)> = sqlx::query_as(FORM_RESULT)
            .bind(user)
            .bind(token)
            .bind(tenant.0)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(|(action, outcome, sealed_secret)| FormResult {
            action,
            outcome,
            sealed_secret,
        }))
    }
}
