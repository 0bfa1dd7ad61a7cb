//! The cases list (status tabs with live counts, search by reference, keyset pages) and the
//! upload page.

use crate::paging::Paging;
use crate::state::AppState;
use crate::ui::page::{render, Chrome, DeskError, DeskQuery};
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use ironclad_core::CaseStatus;
use ironclad_store::read::{decode_cursor, CaseSummary};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;

/// Cases per page.
const PAGE_SIZE: i64 = 50;
/// Longest search text accepted (longer is cut, not refused: it is a search box).
const MAX_SEARCH_CHARS: usize = 200;

#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    status: Option<String>,
    reference: Option<String>,
    after: Option<String>,
}

struct Tab {
    status: &'static str,
    label: &'static str,
    count: i64,
    current: bool,
    href: String,
}

struct Row {
    id: uuid::Uuid,
    reference: String,
    status: String,
    reason: Option<String>,
    /// The latest decision of the current generation.
    decision: Option<String>,
    resolution: Option<String>,
    created: String,
    created_iso: String,
    updated: String,
    updated_iso: String,
}

#[derive(Template)]
#[template(path = "cases.html")]
struct CasesPage {
    chrome: Chrome,
    tabs: Vec<Tab>,
    status: String,
    reference: String,
    rows: Vec<Row>,
    next_href: Option<String>,
    show_first: bool,
    first_href: String,
}

/// A time as the desk shows it (UTC, to the minute).
pub(crate) fn when(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

fn query_string(pairs: &[(&str, &str)]) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        q.append_pair(k, v);
    }
    let q = q.finish();
    if q.is_empty() {
        "/".to_owned()
    } else {
        format!("/?{q}")
    }
}

fn row(c: CaseSummary, decisions: &HashMap<uuid::Uuid, String>) -> Row {
    Row {
        decision: decisions.get(&c.id).cloned(),
        id: c.id,
        reference: c
            .external_reference
            .unwrap_or_else(|| c.id.to_string()[..8].to_owned()),
        status: c.status,
        reason: c.status_reason,
        resolution: c.resolution,
        created: when(c.created_at),
        created_iso: c.created_at.to_rfc3339(),
        updated: when(c.updated_at),
        updated_iso: c.updated_at.to_rfc3339(),
    }
}

/// `GET /`: the tenant's cases, newest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    user: DeskUser,
    DeskQuery(p): DeskQuery<ListParams>,
) -> Result<Response, DeskError> {
    let tenant = user.0.principal.tenant_id;
    let status = match p.status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(
            s.parse::<CaseStatus>()
                .map_err(|_| {
                    crate::error::ApiError::bad_request("invalid_status", "unknown case status")
                })?
                .as_str(),
        ),
    };
    let reference: String = p
        .reference
        .as_deref()
        .unwrap_or("")
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_SEARCH_CHARS)
        .collect();
    let after = match p.after.as_deref() {
        None | Some("") => None,
        Some(raw) => Some(decode_cursor(raw).ok_or_else(|| {
            crate::error::ApiError::bad_request("invalid_cursor", "this page link is not valid")
        })?),
    };
    // The API's keyset paging: one row more than shown says whether a next page exists.
    let paging = Paging {
        limit: PAGE_SIZE,
        after,
    };
    let cases = state
        .store
        .search_cases(
            Some(tenant),
            status,
            (!reference.is_empty()).then_some(reference.as_str()),
            after,
            paging.fetch(),
        )
        .await?;
    let (cases, next) = paging.page(cases, |c| (c.created_at, c.id));
    let ids: Vec<uuid::Uuid> = cases.iter().map(|c| c.id).collect();
    let decisions: HashMap<uuid::Uuid, String> = state
        .store
        .case_decisions(tenant, &ids)
        .await?
        .into_iter()
        .collect();
    let counts = state.store.case_counts(tenant).await?;
    let count_of = |s: &str| {
        counts
            .iter()
            .filter(|(k, _)| k == s)
            .map(|(_, n)| *n)
            .sum::<i64>()
    };
    let status_text = status.unwrap_or("");
    let mut tabs = vec![Tab {
        status: "ALL",
        label: "All",
        count: counts.iter().map(|(_, n)| n).sum(),
        current: status.is_none(),
        href: query_string(&[("reference", &reference)]),
    }];
    for s in CaseStatus::ALL {
        tabs.push(Tab {
            status: s.as_str(),
            label: label_of(*s),
            count: count_of(s.as_str()),
            current: status == Some(s.as_str()),
            href: query_string(&[("status", s.as_str()), ("reference", &reference)]),
        });
    }
    let next_href = next.map(|cursor| {
        query_string(&[
            ("status", status_text),
            ("reference", &reference),
            ("after", cursor.as_str()),
        ])
    });
    let page = CasesPage {
        chrome: Chrome::of(&user, "cases"),
        tabs,
        status: status_text.to_owned(),
        first_href: query_string(&[("status", status_text), ("reference", &reference)]),
        show_first: after.is_some(),
        reference,
        rows: cases.into_iter().map(|c| row(c, &decisions)).collect(),
        next_href,
    };
    Ok(render(StatusCode::OK, &page))
}

fn label_of(status: CaseStatus) -> &'static str {
    match status {
        CaseStatus::Ingested => "Received",
        CaseStatus::Processing => "Reading",
        CaseStatus::AwaitingReview => "Awaiting review",
        CaseStatus::Resolved => "Resolved",
        CaseStatus::Failed => "Failed",
    }
}

/// `GET /desk/counts`: the tenant's case counts per status, for the list's live numbers.
pub(crate) async fn counts(
    State(state): State<AppState>,
    user: DeskUser,
) -> Result<Response, DeskError> {
    let counts = state.store.case_counts(user.0.principal.tenant_id).await?;
    let total: i64 = counts.iter().map(|(_, n)| n).sum();
    let mut map = serde_json::Map::new();
    for (status, n) in counts {
        map.insert(status, json!(n));
    }
    map.insert("ALL".into(), json!(total));
    Ok(Json(json!({ "counts": map })).into_response())
}

#[derive(Template)]
#[template(path = "upload.html")]
struct UploadPage {
    chrome: Chrome,
    /// The intake's `Idempotency-Key`, made with the page: however often the form is sent
    /// (a double click, a retry after a dropped connection), one case is created.
    idempotency_key: String,
    max_files: usize,
    max_file_mb: u64,
    max_pages: u32,
}

/// `GET /upload` (operators and admins).
pub(crate) async fn upload_page(
    State(state): State<AppState>,
    user: DeskUser,
) -> Result<Response, DeskError> {
    use ironclad_core::role::Role;
    user.require(&[Role::Operator, Role::Admin], "submit cases")?;
    let limits = &state.config.limits;
    Ok(render(
        StatusCode::OK,
        &UploadPage {
            chrome: Chrome::of(&user, "upload"),
            idempotency_key: format!("desk-upload-{}", uuid::Uuid::new_v4()),
            max_files: limits.max_files,
            max_file_mb: limits.max_file_bytes / (1024 * 1024),
            max_pages: limits.max_total_pages,
        },
    ))
}
