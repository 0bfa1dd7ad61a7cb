//! Admin: the tenant's desk users and API keys. A new password or key is shown once, in the
//! answer to the form that made it (never in a URL or a log).

use crate::error::ApiError;
use crate::password::{generate_password, hash_password};
use crate::state::AppState;
use crate::ui::cases::when;
use crate::ui::page::{render, Chrome, CsrfOnly, DeskError, DeskForm};
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ironclad_core::role::Role;
use ironclad_store::users::UserError;
use serde::Deserialize;
use uuid::Uuid;

struct UserRow {
    id: Uuid,
    email: String,
    role: &'static str,
    since: String,
    active: bool,
    me: bool,
}

struct KeyRow {
    id: Uuid,
    prefix: String,
    role: &'static str,
    created: String,
    live: bool,
}

struct Secret {
    what: String,
    value: String,
}

#[derive(Template)]
#[template(path = "admin.html")]
struct AdminPage {
    chrome: Chrome,
    notice: Option<String>,
    secret: Option<Secret>,
    users: Vec<UserRow>,
    keys: Vec<KeyRow>,
}

pub(super) fn admin_only(user: &DeskUser) -> Result<(), DeskError> {
    user.require(&[Role::Admin], "administer the tenant")
}

/// What every admin form checks first: its CSRF token, then the admin role.
pub(super) fn admin_form(user: &DeskUser, csrf: &str) -> Result<(), DeskError> {
    user.check_csrf(csrf)?;
    admin_only(user)
}

/// An admin form acting on the user or key `id`: checked as [`admin_form`]; a malformed id is
/// 404 like an unknown one.
fn admin_form_on(user: &DeskUser, csrf: &str, id: &str) -> Result<Uuid, DeskError> {
    admin_form(user, csrf)?;
    Ok(id.parse().map_err(|_| ApiError::not_found())?)
}

async fn page(
    state: &AppState,
    user: &DeskUser,
    notice: Option<String>,
    secret: Option<Secret>,
) -> Result<Response, DeskError> {
    let tenant = user.0.principal.tenant_id;
    let users = state
        .store
        .users_of(tenant)
        .await?
        .into_iter()
        .map(|u| UserRow {
            me: u.id == user.0.principal.key_id,
            id: u.id,
            email: u.email,
            role: u.role.as_str(),
            since: when(u.created_at),
            active: u.disabled_at.is_none(),
        })
        .collect();
    let keys = state
        .store
        .api_keys_of(tenant)
        .await?
        .into_iter()
        .map(|k| KeyRow {
            id: k.id,
            prefix: k.prefix,
            role: k.role.as_str(),
            created: when(k.created_at),
            live: k.revoked_at.is_none(),
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &AdminPage {
            chrome: Chrome::of(user, "admin"),
            notice,
            secret,
            users,
            keys,
        },
    ))
}

/// `GET /admin`
pub(crate) async fn show(
    State(state): State<AppState>,
    user: DeskUser,
) -> Result<Response, DeskError> {
    admin_only(&user)?;
    page(&state, &user, None, None).await
}

#[derive(Debug, Deserialize)]
pub(crate) struct NewUserForm {
    #[serde(default)]
    csrf: String,
    email: String,
    role: String,
}

fn role_of(text: &str) -> Result<Role, DeskError> {
    text.parse().map_err(|_| {
        ApiError::bad_request("invalid_role", "role must be reviewer, operator or admin").into()
    })
}

/// `POST /admin/users`: a user with a random password, shown once.
pub(crate) async fn create_user(
    State(state): State<AppState>,
    user: DeskUser,
    DeskForm(form): DeskForm<NewUserForm>,
) -> Result<Response, DeskError> {
    admin_form(&user, &form.csrf)?;
    let role = role_of(&form.role)?;
    let email = form.email.trim().to_owned();
    if email.is_empty() || email.chars().count() > 254 || !email.contains('@') {
        return Err(ApiError::bad_request("invalid_email", "enter an email address").into());
    }
    let password = generate_password();
    let to_hash = password.clone();
    let hash = tokio::task::spawn_blocking(move || hash_password(&to_hash))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    match state
        .store
        .create_user(
            user.0.principal.tenant_id,
            &email,
            role,
            &hash,
            &user.0.principal.actor(),
        )
        .await
    {
        Ok(created) => {
            let secret = Secret {
                what: format!("Password of {} ({})", created.email, created.role),
                value: password,
            };
            page(&state, &user, None, Some(secret)).await
        }
        Err(UserError::EmailTaken) => Err(ApiError::client(
            StatusCode::CONFLICT,
            "email_taken",
            "a user with this email address already exists",
        )
        .into()),
        Err(UserError::Store(e)) => Err(e.into()),
    }
}

/// `POST /admin/users/{id}/disable`: their sessions end at once.
pub(crate) async fn disable_user(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<CsrfOnly>,
) -> Result<Response, DeskError> {
    let id = admin_form_on(&user, &form.csrf, &id)?;
    if id == user.0.principal.key_id {
        return Err(ApiError::bad_request("own_account", "you cannot disable yourself").into());
    }
    let disabled = state
        .store
        .disable_user(user.0.principal.tenant_id, id, &user.0.principal.actor())
        .await?
        .ok_or_else(ApiError::not_found)?;
    page(
        &state,
        &user,
        Some(format!(
            "{} is disabled; their sessions ended.",
            disabled.email
        )),
        None,
    )
    .await
}

#[derive(Debug, Deserialize)]
pub(crate) struct NewKeyForm {
    #[serde(default)]
    csrf: String,
    role: String,
}

/// `POST /admin/keys`: a key, shown once.
pub(crate) async fn create_key(
    State(state): State<AppState>,
    user: DeskUser,
    DeskForm(form): DeskForm<NewKeyForm>,
) -> Result<Response, DeskError> {
    admin_form(&user, &form.csrf)?;
    let role = role_of(&form.role)?;
    let key = state
        .store
        .create_api_key_by(user.0.principal.tenant_id, role, &user.0.principal.actor())
        .await?;
    let secret = Secret {
        what: format!("API key ({role})"),
        value: key.raw,
    };
    page(&state, &user, None, Some(secret)).await
}

/// `POST /admin/keys/{id}/revoke`: every API process refuses it within a second.
pub(crate) async fn revoke_key(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<CsrfOnly>,
) -> Result<Response, DeskError> {
    let id = admin_form_on(&user, &form.csrf, &id)?;
    let revoked = state
        .store
        .revoke_tenant_api_key(user.0.principal.tenant_id, id, &user.0.principal.actor())
        .await?
        .ok_or_else(ApiError::not_found)?;
    page(
        &state,
        &user,
        Some(format!("Key {}… is revoked.", revoked.prefix)),
        None,
    )
    .await
}
