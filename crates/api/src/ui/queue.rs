//! The review queue several people share: decisions waiting for a person, oldest first, with
//! who holds each one's claim, what waits for a second reviewer and what is overdue; filters
//! (mine, unclaimed, awaiting a second reviewer, overdue) and keyboard shortcuts.

use crate::state::AppState;
use crate::ui::page::{age, render, Chrome, DeskError, DeskQuery};
use crate::ui::session::DeskUser;
use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ironclad_core::review::ReviewStatus;
use ironclad_store::reviews::{ClaimFilter, ReviewQuery, ReviewRow};
use serde::Deserialize;
use uuid::Uuid;

/// Reviews listed at once (the oldest ones: the queue is worked from the top).
const QUEUE_SIZE: i64 = 200;

/// The queue's filters, in the order of its tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Show {
    All,
    Mine,
    Unclaimed,
    Second,
    Overdue,
}

impl Show {
    const ALL: [Show; 5] = [
        Show::All,
        Show::Mine,
        Show::Unclaimed,
        Show::Second,
        Show::Overdue,
    ];

    fn parse(raw: Option<&str>) -> Self {
        match raw {
            Some("mine") => Self::Mine,
            Some("unclaimed") => Self::Unclaimed,
            Some("second") => Self::Second,
            Some("overdue") => Self::Overdue,
            _ => Self::All,
        }
    }

    fn key(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Mine => "mine",
            Self::Unclaimed => "unclaimed",
            Self::Second => "second",
            Self::Overdue => "overdue",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::All => "All open",
            Self::Mine => "Mine",
            Self::Unclaimed => "Unclaimed",
            Self::Second => "Awaiting a second reviewer",
            Self::Overdue => "Overdue",
        }
    }

    fn query(self, actor: &str) -> ReviewQuery {
        let open = vec![ReviewStatus::Pending, ReviewStatus::AwaitingSecond];
        let (statuses, claim, overdue_only) = match self {
            Self::All => (open, ClaimFilter::Any, false),
            Self::Mine => (open, ClaimFilter::HeldBy(actor.to_owned()), false),
            Self::Unclaimed => (open, ClaimFilter::Unclaimed, false),
            Self::Second => (vec![ReviewStatus::AwaitingSecond], ClaimFilter::Any, false),
            Self::Overdue => (open, ClaimFilter::Any, true),
        };
        ReviewQuery {
            statuses,
            claim,
            overdue_only,
            after: None,
            limit: QUEUE_SIZE,
        }
    }
}

struct Tab {
    href: String,
    label: &'static str,
    current: bool,
}

struct QueueRow {
    case_id: Uuid,
    reference: String,
    status: String,
    version: i32,
    summary: String,
    age: String,
    overdue: bool,
    /// "Rita is reviewing" / "You are reviewing".
    claim: Option<String>,
    /// "OVERRIDE by Rita waits for a second reviewer".
    second: Option<String>,
}

#[derive(Template)]
#[template(path = "queue.html")]
struct QueuePage {
    chrome: Chrome,
    tabs: Vec<Tab>,
    show: &'static str,
    rows: Vec<QueueRow>,
    notice: Option<&'static str>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct QueueParams {
    show: Option<String>,
    /// `none-other` after `n` found no other case.
    done: Option<String>,
}

fn row(r: ReviewRow, me: &str) -> QueueRow {
    let claim = r.claimed_by.as_deref().map(|holder| {
        if holder == me {
            "You are reviewing".to_owned()
        } else {
            format!(
                "{} is reviewing",
                r.claimed_by_name.as_deref().unwrap_or(holder)
            )
        }
    });
    let second = r.proposed_action.as_deref().map(|action| {
        let by = match r.proposed_by.as_deref() {
            Some(p) if p == me => "you".to_owned(),
            _ => r.proposed_by_name.clone().unwrap_or_default(),
        };
        format!("{action} by {by} waits for a second reviewer")
    });
    QueueRow {
        case_id: r.case_id,
        reference: r
            .external_reference
            .unwrap_or_else(|| r.case_id.to_string()),
        status: r.decision_status,
        version: r.decision_version,
        summary: r.summary,
        age: age(r.age_seconds),
        overdue: r.overdue,
        claim,
        second,
    }
}

/// `GET /queue?show=all|mine|unclaimed|second|overdue`
pub(crate) async fn list(
    State(state): State<AppState>,
    user: DeskUser,
    DeskQuery(params): DeskQuery<QueueParams>,
) -> Result<Response, DeskError> {
    let me = user.0.principal.actor();
    let show = Show::parse(params.show.as_deref());
    let rows = state
        .store
        .list_reviews(user.0.principal.tenant_id.0, &show.query(&me))
        .await?
        .into_iter()
        .map(|r| row(r, &me))
        .collect();
    let tabs = Show::ALL
        .iter()
        .map(|s| Tab {
            href: match s {
                Show::All => "/queue".to_owned(),
                other => format!("/queue?show={}", other.key()),
            },
            label: s.label(),
            current: *s == show,
        })
        .collect();
    Ok(render(
        StatusCode::OK,
        &QueuePage {
            chrome: Chrome::of(&user, "queue"),
            tabs,
            show: show.key(),
            rows,
            notice: (params.done.as_deref() == Some("none-other"))
                .then_some("No other case waits for review."),
        },
    ))
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct NextParams {
    after: Option<String>,
}

/// `GET /queue/next?after={case}`: the case whose review comes after `after`'s in the queue
/// (the oldest first, wrapping round), never `after` itself nor one someone else is
/// reviewing; the queue when no other waits.
pub(crate) async fn next(
    State(state): State<AppState>,
    user: DeskUser,
    DeskQuery(p): DeskQuery<NextParams>,
) -> Result<Response, DeskError> {
    let after = p
        .after
        .as_deref()
        .and_then(|a| a.parse::<uuid::Uuid>().ok());
    let next = state
        .store
        .next_pending_case(user.0.principal.tenant_id, after, &user.0.principal.actor())
        .await?;
    Ok(match next {
        Some(case) => Redirect::to(&format!("/cases/{case}")).into_response(),
        None => Redirect::to("/queue?done=none-other").into_response(),
    })
}
