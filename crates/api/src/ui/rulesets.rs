//! Admin: the tenant's rulesets — every version per workflow, one version's rules with its
//! validation against the workflow and its changes against the version it would replace, and
//! activation with a comment. The checks are the API's own (`routes::rulesets`).

use crate::actions::rulesets::{activate_checked, check_ruleset, diff_base, find_ruleset};
use crate::error::ApiError;
use crate::state::AppState;
use crate::ui::admin::{admin_form, admin_only};
use crate::ui::cases::when;
use crate::ui::page::{refusal, render, Chrome, DeskError, DeskForm, DeskQuery};
use crate::ui::people::People;
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ironclad_documents::rules as case_rules;
use ironclad_store::rulesets::RulesetRow;
use serde::Deserialize;

struct Row {
    id: uuid::Uuid,
    workflow: String,
    version: i32,
    status: String,
    created: String,
    activated: String,
}

#[derive(Template)]
#[template(path = "rulesets.html")]
struct ListPage {
    chrome: Chrome,
    rows: Vec<Row>,
}

/// One changed rule (or the policy), before and after, as indented JSON lines.
struct Change {
    id: String,
    before: Vec<Line>,
    after: Vec<Line>,
}

/// A line of indented JSON; `changed` when the other side has no such line.
struct Line {
    text: String,
    changed: bool,
}

/// Both sides as lines, each marked where the other side lacks it (JSON is printed with sorted
/// keys, so an unchanged member prints the same line on both sides).
fn sides(before: &serde_json::Value, after: &serde_json::Value) -> (Vec<Line>, Vec<Line>) {
    let (b, a) = (pretty(before), pretty(after));
    let mark = |text: &str, other: &str| -> Vec<Line> {
        let others: std::collections::HashSet<&str> = other.lines().collect();
        text.lines()
            .map(|l| Line {
                text: l.to_owned(),
                changed: !others.contains(l),
            })
            .collect()
    };
    (mark(&b, &a), mark(&a, &b))
}

struct Issue {
    path: String,
    message: String,
}

#[derive(Template)]
#[template(path = "ruleset.html")]
struct DetailPage {
    chrome: Chrome,
    id: uuid::Uuid,
    workflow: String,
    version: i32,
    status: String,
    created: String,
    created_by: String,
    activated: Option<String>,
    comment: Option<String>,
    /// `Some("3 rules")`: valid; `None`: see `issues`.
    valid_rules: Option<String>,
    issues: Vec<Issue>,
    /// What it is compared with, e.g. "version 2 (ACTIVE)"; `None` for a first version.
    base: Option<String>,
    /// The workflow's other versions, for the comparison picker.
    versions: Vec<Version>,
    /// Whether the comparison is the one picked (`?against=`) rather than the default.
    compared_by_choice: bool,
    added: Vec<String>,
    removed: Vec<String>,
    changed: Vec<Change>,
    policy: Option<Change>,
    spec: String,
    draft: bool,
    notice: Option<String>,
    problem: Option<String>,
    typed_comment: String,
}

fn pretty(v: &serde_json::Value) -> String {
    if v.is_null() {
        return "(none)".to_owned();
    }
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

fn rule_id(v: &serde_json::Value) -> String {
    v.get("id")
        .and_then(|i| i.as_str())
        .unwrap_or("(no id)")
        .to_owned()
}

/// `GET /admin/rulesets`.
pub(crate) async fn list(
    State(state): State<AppState>,
    user: DeskUser,
) -> Result<Response, DeskError> {
    admin_only(&user)?;
    let rows = state
        .store
        .list_rulesets(user.0.principal.tenant_id.0, None)
        .await?
        .into_iter()
        .map(|r| Row {
            id: r.id,
            workflow: r.workflow,
            version: r.version,
            status: r.status,
            created: when(r.created_at),
            activated: r.activated_at.map(when).unwrap_or_default(),
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &ListPage {
            chrome: Chrome::of(&user, "admin"),
            rows,
        },
    ))
}

/// Another version of the same workflow, offered to compare with.
struct Version {
    id: uuid::Uuid,
    label: String,
    selected: bool,
}

async fn detail(
    state: &AppState,
    user: &DeskUser,
    row: RulesetRow,
    against: Option<&str>,
) -> Result<DetailPage, DeskError> {
    let tenant = user.0.principal.tenant_id.0;
    let (valid_rules, issues) = match check_ruleset(state, &row).await {
        Ok(Ok(compiled)) => {
            let n = compiled.rules.len();
            let noun = if n == 1 { "rule" } else { "rules" };
            (Some(format!("{n} {noun}")), Vec::new())
        }
        Ok(Err(issues)) => (
            None,
            issues
                .into_iter()
                .map(|i| Issue {
                    path: i.path,
                    message: i.message,
                })
                .collect(),
        ),
        // The workflow is gone: say so where the validation would be.
        Err(ApiError::Client { message, .. }) => (
            None,
            vec![Issue {
                path: "workflow".into(),
                message,
            }],
        ),
        Err(e) => return Err(e.into()),
    };
    let against = against.filter(|a| !a.is_empty());
    let compared_by_choice = against.is_some();
    let base = match against {
        Some(other) => Some(find_ruleset(state, tenant, other).await?),
        None => diff_base(state, tenant, &row).await?,
    };
    let versions = state
        .store
        .list_rulesets(tenant, Some(&row.workflow))
        .await?
        .into_iter()
        .filter(|v| v.id != row.id)
        .map(|v| Version {
            id: v.id,
            selected: compared_by_choice && base.as_ref().is_some_and(|b| b.id == v.id),
            label: format!("version {} ({})", v.version, v.status),
        })
        .collect();
    let empty = serde_json::json!({"rules": []});
    let diff = case_rules::diff(base.as_ref().map_or(&empty, |b| &b.spec), &row.spec);
    let people = People::load(
        state,
        user.0.principal.tenant_id,
        [Some(row.created_by.as_str()), row.activated_by.as_deref()]
            .into_iter()
            .flatten(),
    )
    .await?;
    Ok(DetailPage {
        chrome: Chrome::of(user, "admin"),
        id: row.id,
        workflow: row.workflow,
        version: row.version,
        draft: row.status == "DRAFT",
        status: row.status,
        created: when(row.created_at),
        created_by: people.name(&row.created_by),
        activated: row.activated_at.map(|at| {
            format!(
                "{} by {}",
                when(at),
                people.name(row.activated_by.as_deref().unwrap_or_default())
            )
        }),
        comment: row.activation_comment,
        valid_rules,
        issues,
        base: base.map(|b| format!("version {} ({})", b.version, b.status)),
        versions,
        compared_by_choice,
        added: diff.added.iter().map(rule_id).collect(),
        removed: diff.removed.iter().map(rule_id).collect(),
        changed: diff
            .changed
            .iter()
            .map(|c| {
                let (before, after) = sides(&c.before, &c.after);
                Change {
                    id: c.id.clone(),
                    before,
                    after,
                }
            })
            .collect(),
        policy: diff.policy.as_ref().map(|(b, a)| {
            let (before, after) = sides(b, a);
            Change {
                id: "policy".into(),
                before,
                after,
            }
        }),
        spec: pretty(&row.spec),
        notice: None,
        problem: None,
        typed_comment: String::new(),
    })
}

#[derive(Debug, Deserialize)]
pub(crate) struct ShowParams {
    against: Option<String>,
}

/// `GET /admin/rulesets/{id}[?against=<id>]`: compared with `against` (another of the
/// tenant's rulesets), else with the version it would replace.
pub(crate) async fn show(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskQuery(params): DeskQuery<ShowParams>,
) -> Result<Response, DeskError> {
    admin_only(&user)?;
    let row = find_ruleset(&state, user.0.principal.tenant_id.0, &id).await?;
    let page = detail(&state, &user, row, params.against.as_deref()).await?;
    Ok(render(StatusCode::OK, &page))
}

#[derive(Debug, Deserialize)]
pub(crate) struct ActivateForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    comment: String,
}

/// `POST /admin/rulesets/{id}/activate`: the API's checks; a refusal (no comment, invalid
/// rules, no longer a DRAFT) re-renders the page with the reason and the typed comment.
pub(crate) async fn activate(
    State(state): State<AppState>,
    user: DeskUser,
    Path(id): Path<String>,
    DeskForm(form): DeskForm<ActivateForm>,
) -> Result<Response, DeskError> {
    admin_form(&user, &form.csrf)?;
    let tenant = user.0.principal.tenant_id.0;
    let row = find_ruleset(&state, tenant, &id).await?;
    let comment = form.comment.trim();
    match activate_checked(&state, tenant, &row, &user.0.principal.actor(), comment).await {
        Ok(active) => {
            let mut page = detail(&state, &user, active, None).await?;
            page.notice = Some(format!(
                "Version {} of {} is active; the previous one is retired. Decided cases keep \
                 their decisions until re-evaluated.",
                page.version, page.workflow
            ));
            Ok(render(StatusCode::OK, &page))
        }
        Err(e) if e.status() == StatusCode::NOT_FOUND => Err(e.into()),
        Err(e) => {
            let (status, message) = refusal(e)?;
            // Read again: a refusal for "not a DRAFT" means someone else changed it.
            let current = find_ruleset(&state, tenant, &id).await?;
            let mut page = detail(&state, &user, current, None).await?;
            page.problem = Some(message);
            page.typed_comment = comment.to_owned();
            Ok(render(status, &page))
        }
    }
}
