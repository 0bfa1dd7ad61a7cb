//! Admin: the tenant's webhook endpoints (create with the signing secret shown once, disable)
//! and each one's delivery log with a requeue for DEAD deliveries. The checks are the API's
//! own (`routes::webhooks`). Creating is applied once per rendered form and answered with a
//! redirect to the page that shows the secret once (see [`crate::ui::forms`]); disabling and
//! requeueing redirect too, so a refresh never repeats them.

use crate::actions::webhooks::{checked_endpoint, requeue_delivery};
use crate::error::ApiError;
use crate::state::AppState;
use crate::ui::admin::{admin_form, admin_only, form_result};
use crate::ui::cases::when;
use crate::ui::forms::{self, form_error, form_key};
use crate::ui::page::{refusal, render, Chrome, CsrfOnly, DeskError, DeskForm, DeskQuery};
use crate::ui::people::People;
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ironclad_store::desk_forms::FormError;
use ironclad_store::webhooks::MAX_DESCRIPTION_LEN;
use serde::Deserialize;
use uuid::Uuid;

/// Deliveries shown on an endpoint's page (newest first; the API pages through all).
const LOG_SHOWN: i64 = 50;

struct EndpointRow {
    id: Uuid,
    url: String,
    description: String,
    created: String,
    active: bool,
}

#[derive(Template)]
#[template(path = "webhooks.html")]
struct ListPage {
    chrome: Chrome,
    endpoints: Vec<EndpointRow>,
    notice: Option<String>,
    problem: Option<String>,
    secret: Option<String>,
    max_description: usize,
    typed_url: String,
    typed_description: String,
    form_token: String,
}

struct DeliveryRow {
    id: Uuid,
    event: String,
    status: String,
    attempts: String,
    created: String,
    settled: String,
    last_error: String,
    dead: bool,
}

#[derive(Template)]
#[template(path = "webhook.html")]
struct EndpointPage {
    chrome: Chrome,
    endpoint: EndpointRow,
    created_by: String,
    disabled: String,
    deliveries: Vec<DeliveryRow>,
    more: bool,
    notice: Option<String>,
    problem: Option<String>,
}

fn row(e: ironclad_store::webhooks::WebhookEndpoint) -> (EndpointRow, String, String) {
    (
        EndpointRow {
            id: e.id,
            url: e.url,
            description: e.description.unwrap_or_default(),
            created: when(e.created_at),
            active: e.disabled_at.is_none(),
        },
        e.created_by,
        e.disabled_at.map(when).unwrap_or_default(),
    )
}

async fn list_page(state: &AppState, user: &DeskUser) -> Result<ListPage, DeskError> {
    let endpoints = state
        .store
        .webhook_list(user.0.principal.tenant_id)
        .await?
        .into_iter()
        .map(|e| row(e).0)
        .collect();
    Ok(ListPage {
        chrome: Chrome::of(user, "admin"),
        endpoints,
        notice: None,
        problem: None,
        secret: None,
        max_description: MAX_DESCRIPTION_LEN,
        typed_url: String::new(),
        typed_description: String::new(),
        form_token: forms::new_token(),
    })
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    form: Option<String>,
}

/// `GET /admin/webhooks` (`?form=` after a create: what it made, its secret once).
pub(crate) async fn list(
    State(state): State<AppState>,
    user: DeskUser,
    DeskQuery(p): DeskQuery<ListParams>,
) -> Result<Response, DeskError> {
    admin_only(&user)?;
    let mut page = list_page(&state, &user).await?;
    if let Some(token) = p.form.as_deref() {
        if let Some((_, outcome, secret)) = form_result(&state, &user, token).await? {
            let url = outcome
                .get("url")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            page.notice = Some(match &secret {
                Some(_) => format!("Endpoint {url} created."),
                None => format!(
                    "Endpoint {url} created. Its signing secret was shown once, when it was created."
                ),
            });
            page.secret = secret;
        }
    }
    Ok(render(StatusCode::OK, &page))
}

#[derive(Debug, Deserialize)]
pub(crate) struct CreateForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    form_token: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: String,
}

/// `POST /admin/webhooks`: once per rendered form, answered with a redirect to the list that
/// shows the new endpoint's secret once; a refused URL or description re-renders the form
/// with the reason and what was typed.
pub(crate) async fn create(
    State(state): State<AppState>,
    user: DeskUser,
    DeskForm(form): DeskForm<CreateForm>,
) -> Result<Response, DeskError> {
    admin_form(&user, &form.csrf)?;
    let checked = checked_endpoint(&state, form.url.trim(), Some(&form.description));
    let (url, description) = match checked {
        Ok(ok) => ok,
        Err(e) => return refused(&state, &user, form, e).await,
    };
    let key = form_key(
        &user,
        &form.form_token,
        &[url.as_str(), description.unwrap_or_default()],
    )?;
    let session = user.1.expose().to_owned();
    let created = state
        .store
        .desk_form_webhook(
            &key,
            &url,
            description,
            &user.0.principal.actor(),
            state.config.webhook_max_endpoints,
            |secret| forms::seal(&session, &key.token, secret),
        )
        .await;
    match created {
        Ok(_) => {}
        // At the cap: the form again, saying so, with what was typed.
        Err(FormError::Webhook(at_cap)) => {
            return refused(&state, &user, form, ApiError::from(at_cap)).await;
        }
        Err(e) => return Err(form_error(e)),
    }
    Ok(Redirect::to(&format!("/admin/webhooks?form={}", key.token)).into_response())
}

/// The list again with the refusal's reason and what was typed, so nothing is lost.
async fn refused(
    state: &AppState,
    user: &DeskUser,
    form: CreateForm,
    refusal_of: ApiError,
) -> Result<Response, DeskError> {
    let (status, message) = refusal(refusal_of)?;
    let mut page = list_page(state, user).await?;
    page.problem = Some(message);
    page.typed_url = form.url;
    page.typed_description = form.description;
    page.form_token = form.form_token;
    Ok(render(status, &page))
}

async fn endpoint_page(
    state: &AppState,
    user: &DeskUser,
    id: Uuid,
) -> Result<EndpointPage, DeskError> {
    let tenant = user.0.principal.tenant_id;
    let endpoint = state
        .store
        .webhook_get(tenant, id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let mut deliveries: Vec<DeliveryRow> = state
        .store
        .webhook_delivery_log(tenant, id, None, LOG_SHOWN + 1)
        .await?
        .ok_or_else(ApiError::not_found)?
        .into_iter()
        .map(|d| DeliveryRow {
            id: d.id,
            event: d.event,
            dead: d.status == "DEAD",
            attempts: format!("{}/{}", d.attempts, d.max_attempts),
            created: when(d.created_at),
            settled: match (&d.delivered_at, d.status.as_str()) {
                (Some(at), _) => format!("delivered {}", when(*at)),
                (None, "PENDING") => format!("next try {}", when(d.next_attempt_at)),
                _ => String::new(),
            },
            status: d.status,
            last_error: d.last_error.unwrap_or_default(),
        })
        .collect();
    let more = deliveries.len() as i64 > LOG_SHOWN;
    deliveries.truncate(LOG_SHOWN as usize);
    let (endpoint, created_by, disabled) = row(endpoint);
    let created_by = People::load(state, tenant, [created_by.as_str()])
        .await?
        .name(&created_by);
    Ok(EndpointPage {
        chrome: Chrome::of(user, "admin"),
        endpoint,
        created_by,
        disabled,
        deliveries,
        more,
        notice: None,
        problem: None,
    })
}

fn endpoint_id(raw: &str) -> Result<Uuid, DeskError> {
    Ok(raw.parse().map_err(|_| ApiError::not_found())?)
}

#[derive(Debug, Deserialize)]
pub(crate) struct EndpointParams {
    done: Option<String>,
}

/// `GET /admin/webhooks/{id}`: the endpoint and its newest deliveries (`?done=disabled` or
/// `?done=requeued` after those forms).
pub(crate) async fn show(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskQuery(p): DeskQuery<EndpointParams>,
) -> Result<Response, DeskError> {
    admin_only(&user)?;
    let mut page = endpoint_page(&state, &user, endpoint_id(&id)?).await?;
    page.notice = match p.done.as_deref() {
        Some("disabled") if !page.endpoint.active => {
            Some("The endpoint is disabled: nothing more is sent to it.".into())
        }
        Some("requeued") => {
            Some("The delivery is requeued and will be tried again shortly.".to_owned())
        }
        _ => None,
    };
    Ok(render(StatusCode::OK, &page))
}

/// `POST /admin/webhooks/{id}/disable`: no delivery to it is attempted again. Disabling a
/// disabled endpoint (a second click) lands on the same page.
pub(crate) async fn disable(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<CsrfOnly>,
) -> Result<Response, DeskError> {
    admin_form(&user, &form.csrf)?;
    let id = endpoint_id(&id)?;
    let tenant = user.0.principal.tenant_id;
    // Already disabled (a second click, a re-POST) is Stale: the same page, not an error.
    state
        .store
        .webhook_disable(tenant, id, &user.0.principal.actor())
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Redirect::to(&format!("/admin/webhooks/{id}?done=disabled")).into_response())
}

/// `POST /admin/webhooks/{id}/deliveries/{delivery}/requeue`: a DEAD delivery is tried again
/// with a fresh budget; a refusal (not DEAD any more, endpoint disabled) shows why.
pub(crate) async fn requeue(
    State(state): State<AppState>,
    user: DeskUser,
    Path((id, delivery)): Path<(String, String)>,
    DeskForm(form): DeskForm<CsrfOnly>,
) -> Result<Response, DeskError> {
    admin_form(&user, &form.csrf)?;
    let id = endpoint_id(&id)?;
    let delivery = endpoint_id(&delivery)?;
    let tenant = user.0.principal.tenant_id;
    match requeue_delivery(&state, tenant, delivery, &user.0.principal.actor()).await {
        Ok(_) => Ok(Redirect::to(&format!("/admin/webhooks/{id}?done=requeued")).into_response()),
        Err(e) if e.status() == StatusCode::NOT_FOUND => Err(e.into()),
        Err(e) => {
            let (status, message) = refusal(e)?;
            let mut page = endpoint_page(&state, &user, id).await?;
            page.problem = Some(message);
            Ok(render(status, &page))
        }
    }
}
