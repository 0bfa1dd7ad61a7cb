//! The signed-in user's own account: changing their password.
//!
//! The current password is checked (argon2, as at sign-in), the new one typed twice; the
//! change is one guarded statement that only applies while the stored hash is still the one
//! checked, ends the user's other sessions and clears the must-change flag an admin-set
//! password carries. Until that flag is cleared every desk page sends the user here.

use crate::error::ApiError;
use crate::password::{
    self, hash_password, HashGate, PasswordError, MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS,
};
use crate::state::AppState;
use crate::ui::page::{render, Chrome, DeskError, DeskForm, DeskQuery};
use crate::ui::session::{DeskUser, CHANGE_PASSWORD_PATH};
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use ironclad_store::users::PasswordChangeError;
use serde::Deserialize;

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    chrome: Chrome,
    forced: bool,
    done: bool,
    problem: Option<String>,
    min_chars: usize,
    max_chars: usize,
}

fn page(user: &DeskUser, status: StatusCode, done: bool, problem: Option<String>) -> Response {
    render(
        status,
        &AccountPage {
            chrome: Chrome::of(user, "account"),
            forced: user.0.must_change_password,
            done,
            problem,
            min_chars: MIN_PASSWORD_CHARS,
            max_chars: MAX_PASSWORD_CHARS,
        },
    )
}

#[derive(Debug, Deserialize)]
pub(crate) struct DoneParam {
    done: Option<String>,
}

/// `GET /account/password`
pub(crate) async fn password_page(user: DeskUser, DeskQuery(q): DeskQuery<DoneParam>) -> Response {
    page(&user, StatusCode::OK, q.done.is_some(), None)
}

#[derive(Debug, Deserialize)]
pub(crate) struct PasswordForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
    #[serde(default)]
    again: String,
}

/// `POST /account/password`: a refusal says why beside the form (passwords are never
/// echoed back).
pub(crate) async fn change_password(
    State(state): State<AppState>,
    Extension(hashing): Extension<HashGate>,
    user: DeskUser,
    DeskForm(form): DeskForm<PasswordForm>,
) -> Result<Response, DeskError> {
    user.check_csrf(&form.csrf)?;
    let refuse = |problem: &str| {
        Ok(page(
            &user,
            StatusCode::UNPROCESSABLE_ENTITY,
            false,
            Some(problem.to_owned()),
        ))
    };
    if form.new != form.again {
        return refuse("The two new passwords differ. Type the same new password twice.");
    }
    if form.new == form.current {
        return refuse("The new password is the current one. Choose another.");
    }
    let principal = user.0.principal;
    let credentials = state
        .store
        .user_credentials_by_id(principal.tenant_id, principal.key_id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let checked_hash = credentials.password_hash;
    let (current, new, stored) = (form.current, form.new, checked_hash.clone());
    let hashed = hashing
        .run(move || password::verify_password(&current, &stored).then(|| hash_password(&new)))
        .await
        .map_err(ApiError::from)?;
    let new_hash = match hashed {
        None => return refuse("That is not your current password."),
        Some(Err(PasswordError::Length)) => {
            return refuse(&format!(
                "A password must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters."
            ))
        }
        Some(Err(e)) => return Err(ApiError::Internal(e.to_string()).into()),
        Some(Ok(hash)) => hash,
    };
    match state
        .store
        .change_password(
            principal.tenant_id,
            principal.key_id,
            &checked_hash,
            &new_hash,
            user.1.expose(),
        )
        .await
    {
        Ok(()) => {
            tracing::info!(user_id = %principal.key_id, "password changed");
            Ok(Redirect::to(&format!("{CHANGE_PASSWORD_PATH}?done=1")).into_response())
        }
        Err(PasswordChangeError::Stale) => {
            refuse("Your password was changed meanwhile (in another window?). Sign in again if this one no longer works.")
        }
        Err(PasswordChangeError::Store(e)) => Err(e.into()),
    }
}
