//! Admin: the tenant's desk users and API keys.
//!
//! Every form answers with a redirect back to `/admin` (a refresh never repeats it). Creating
//! a user or a key is applied once per rendered form (see [`crate::ui::forms`]); the new
//! password or key is shown once, on the page the redirect lands on, and never in a URL or a
//! log. A generated password must be changed by its user at their first sign-in.

use crate::error::ApiError;
use crate::password::{generate_password, hash_password, HashGate};
use crate::state::AppState;
use crate::ui::cases::when;
use crate::ui::forms::{self, form_error, form_key};
use crate::ui::page::{render, Chrome, CsrfOnly, DeskError, DeskForm, DeskQuery};
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use ironclad_core::email::parse_email;
use ironclad_core::role::Role;
use ironclad_store::users::NewUser;
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

/// Longest display name or key label accepted.
const MAX_NAME_CHARS: usize = 200;

struct UserRow {
    id: Uuid,
    name: String,
    email: String,
    role: &'static str,
    since: String,
    active: bool,
    me: bool,
    must_change: bool,
}

struct KeyRow {
    id: Uuid,
    label: String,
    prefix: String,
    role: &'static str,
    created: String,
    live: bool,
}

pub(crate) struct Secret {
    pub what: String,
    pub value: String,
}

#[derive(Template)]
#[template(path = "admin.html")]
struct AdminPage {
    chrome: Chrome,
    notice: Option<String>,
    secret: Option<Secret>,
    users: Vec<UserRow>,
    keys: Vec<KeyRow>,
    user_form: String,
    key_form: String,
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

/// The secret of form `token` for this session, the first time its result page is shown;
/// the result's outcome with it. `None` for a token this user never sent.
pub(super) async fn form_result(
    state: &AppState,
    user: &DeskUser,
    token: &str,
) -> Result<Option<(String, Value, Option<String>)>, DeskError> {
    if !forms::is_token(token) {
        return Ok(None);
    }
    let principal = user.0.principal;
    let Some(result) = state
        .store
        .desk_form_result(principal.tenant_id, principal.key_id, token)
        .await?
    else {
        return Ok(None);
    };
    let secret = result
        .sealed_secret
        .and_then(|sealed| forms::open(user.1.expose(), token, &sealed));
    Ok(Some((result.action, result.outcome, secret)))
}

fn text(outcome: &Value, key: &str) -> String {
    outcome
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// What the page says after a user or key form: what was made, and its secret once.
fn made(action: &str, outcome: &Value, secret: Option<String>) -> (String, Option<Secret>) {
    let (notice, what) = match action {
        "user" => (
            format!(
                "{} ({}) can sign in as {}.",
                text(outcome, "name"),
                text(outcome, "role"),
                text(outcome, "email")
            ),
            format!(
                "First password of {} — they must change it when they first sign in",
                text(outcome, "email")
            ),
        ),
        _ => {
            let label = outcome
                .get("label")
                .and_then(Value::as_str)
                .map(|l| format!("“{l}” "))
                .unwrap_or_default();
            (
                format!(
                    "API key {label}({}…, {}) created.",
                    text(outcome, "prefix"),
                    text(outcome, "role")
                ),
                format!("API key {label}({})", text(outcome, "role")),
            )
        }
    };
    let notice = match (secret.is_some(), action) {
        (true, _) => notice,
        (false, "user") => {
            format!("{notice} Their first password was shown once, when they were created.")
        }
        (false, _) => format!("{notice} Its secret was shown once, when it was created."),
    };
    (notice, secret.map(|value| Secret { what, value }))
}

#[derive(Debug, Deserialize)]
pub(crate) struct AdminParams {
    form: Option<String>,
    disabled: Option<String>,
    revoked: Option<String>,
}

/// `GET /admin` (`?form=` after a create, `?disabled=` / `?revoked=` after those).
pub(crate) async fn show(
    State(state): State<AppState>,
    user: DeskUser,
    DeskQuery(p): DeskQuery<AdminParams>,
) -> Result<Response, DeskError> {
    admin_only(&user)?;
    let tenant = user.0.principal.tenant_id;
    let users: Vec<UserRow> = state
        .store
        .users_of(tenant)
        .await?
        .into_iter()
        .map(|u| UserRow {
            me: u.id == user.0.principal.key_id,
            id: u.id,
            name: u.name().to_owned(),
            email: u.email,
            role: u.role.as_str(),
            since: when(u.created_at),
            active: u.disabled_at.is_none(),
            must_change: u.must_change_password,
        })
        .collect();
    let keys: Vec<KeyRow> = state
        .store
        .api_keys_of(tenant)
        .await?
        .into_iter()
        .map(|k| KeyRow {
            id: k.id,
            label: k.label.clone().unwrap_or_default(),
            prefix: k.prefix,
            role: k.role.as_str(),
            created: when(k.created_at),
            live: k.revoked_at.is_none(),
        })
        .collect();
    let mut notice = None;
    let mut secret = None;
    if let Some(token) = p.form.as_deref() {
        if let Some((action, outcome, sealed)) = form_result(&state, &user, token).await? {
            let (said, shown) = made(&action, &outcome, sealed);
            notice = Some(said);
            secret = shown;
        }
    }
    let id_of = |raw: &Option<String>| raw.as_deref().and_then(|r| r.parse::<Uuid>().ok());
    if let Some(id) = id_of(&p.disabled) {
        if let Some(u) = users.iter().find(|u| u.id == id && !u.active) {
            notice = Some(format!("{} is disabled; their sessions ended.", u.name));
        }
    }
    if let Some(id) = id_of(&p.revoked) {
        if let Some(k) = keys.iter().find(|k| k.id == id && !k.live) {
            notice = Some(format!("Key {}… is revoked.", k.prefix));
        }
    }
    let page = AdminPage {
        chrome: Chrome::of(&user, "admin"),
        notice,
        secret,
        users,
        keys,
        user_form: forms::new_token(),
        key_form: forms::new_token(),
    };
    Ok(render(StatusCode::OK, &page))
}

#[derive(Debug, Deserialize)]
pub(crate) struct NewUserForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    form_token: String,
    #[serde(default)]
    name: String,
    email: String,
    role: String,
}

fn role_of(text: &str) -> Result<Role, DeskError> {
    text.parse().map_err(|_| {
        ApiError::bad_request("invalid_role", "role must be reviewer, operator or admin").into()
    })
}

/// A display name or label: trimmed, at most [`MAX_NAME_CHARS`], `None` when empty.
fn optional_name(field: &'static str, raw: &str) -> Result<Option<String>, DeskError> {
    let name = raw.trim();
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "invalid_form",
            format!("{field} must be at most {MAX_NAME_CHARS} characters, on one line"),
        )
        .into());
    }
    Ok((!name.is_empty()).then(|| name.to_owned()))
}

/// Where a create form's POST sends the browser: the admin page showing what it made.
fn to_result(token: &str) -> Response {
    Redirect::to(&format!("/admin?form={token}")).into_response()
}

/// `POST /admin/users`: a user with a random password they must change at first sign-in.
pub(crate) async fn create_user(
    State(state): State<AppState>,
    Extension(hashing): Extension<HashGate>,
    user: DeskUser,
    DeskForm(form): DeskForm<NewUserForm>,
) -> Result<Response, DeskError> {
    admin_form(&user, &form.csrf)?;
    let role = role_of(&form.role)?;
    let name = optional_name("name", &form.name)?;
    let email = parse_email(&form.email)
        .map_err(|e| ApiError::bad_request("invalid_email", e.to_string()))?;
    let key = form_key(
        &user,
        &form.form_token,
        &[&email, role.as_str(), name.as_deref().unwrap_or_default()],
    )?;
    let password = generate_password();
    let to_hash = password.clone();
    let hash = hashing
        .run(move || hash_password(&to_hash))
        .await
        .map_err(ApiError::from)?
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let new = NewUser {
        email: &email,
        role,
        password_hash: &hash,
        display_name: name.as_deref(),
        must_change_password: true,
    };
    let session = user.1.expose().to_owned();
    state
        .store
        .desk_form_user(&key, &new, &password, &user.0.principal.actor(), |secret| {
            forms::seal(&session, &key.token, secret)
        })
        .await
        .map_err(form_error)?;
    Ok(to_result(&key.token))
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
    let tenant = user.0.principal.tenant_id;
    let disabled = state
        .store
        .disable_user(tenant, id, &user.0.principal.actor())
        .await?;
    // Disabled before (a second click, a re-POST): the same page, not an error.
    if disabled.is_none()
        && !state
            .store
            .users_of(tenant)
            .await?
            .iter()
            .any(|u| u.id == id)
    {
        return Err(ApiError::not_found().into());
    }
    Ok(Redirect::to(&format!("/admin?disabled={id}")).into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct NewKeyForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    form_token: String,
    #[serde(default)]
    label: String,
    role: String,
}

/// `POST /admin/keys`: a key, its secret shown once.
pub(crate) async fn create_key(
    State(state): State<AppState>,
    user: DeskUser,
    DeskForm(form): DeskForm<NewKeyForm>,
) -> Result<Response, DeskError> {
    admin_form(&user, &form.csrf)?;
    let role = role_of(&form.role)?;
    let label = optional_name("label", &form.label)?;
    let key = form_key(
        &user,
        &form.form_token,
        &[role.as_str(), label.as_deref().unwrap_or_default()],
    )?;
    let session = user.1.expose().to_owned();
    state
        .store
        .desk_form_api_key(
            &key,
            role,
            label.as_deref(),
            &user.0.principal.actor(),
            |secret| forms::seal(&session, &key.token, secret),
        )
        .await
        .map_err(form_error)?;
    Ok(to_result(&key.token))
}

/// `POST /admin/keys/{id}/revoke`: every API process refuses it within a second.
pub(crate) async fn revoke_key(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<CsrfOnly>,
) -> Result<Response, DeskError> {
    let id = admin_form_on(&user, &form.csrf, &id)?;
    let tenant = user.0.principal.tenant_id;
    let revoked = state
        .store
        .revoke_tenant_api_key(tenant, id, &user.0.principal.actor())
        .await?;
    if revoked.is_none()
        && !state
            .store
            .api_keys_of(tenant)
            .await?
            .iter()
            .any(|k| k.id == id)
    {
        return Err(ApiError::not_found().into());
    }
    Ok(Redirect::to(&format!("/admin?revoked={id}")).into_response())
}
