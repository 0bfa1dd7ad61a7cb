//! What the case's history says to a person: the events since they opened the page (who
//! changed the case under their form), and the resolutions a reprocess left behind.

use super::wording::shown;
use crate::ui::cases::when;
use crate::ui::people::People;
use ironclad_store::read::AuditView;

/// One event as a sentence: "Rita Reviewer resolved the review (REJECTED) at 2026-…".
pub(crate) fn sentence(event: &AuditView, people: &People) -> String {
    let who = people.name(&event.actor);
    let data = |k: &str| {
        event
            .data
            .get(k)
            .map(shown)
            .filter(|s| !s.is_empty() && s != "null")
    };
    let what = match event.event_type.as_str() {
        "REVIEW_RESOLVED" => format!(
            "resolved the review{}",
            data("resolution")
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
        "AUTO_RESOLVED" => "resolved the READY decision by policy".to_owned(),
        "REPROCESSED" => "had every document read again".to_owned(),
        "REEVALUATED" => "decided the case again under the active rules".to_owned(),
        "DECISION_GENERATED" => format!(
            "wrote a new decision{}",
            data("status")
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        ),
        "PROCESSING_FAILED" => "recorded a processing failure".to_owned(),
        other => other.replace('_', " ").to_lowercase(),
    };
    format!("{who} {what} at {}", when(event.created_at))
}

/// The events after `seen` (the last event the page was rendered with), as sentences, and
/// whether any is someone else's (`me` is the user's actor string).
pub(crate) fn since(
    audit: &[AuditView],
    seen: i64,
    me: &str,
    people: &People,
) -> (Vec<String>, bool) {
    let newer: Vec<&AuditView> = audit.iter().filter(|e| e.id > seen).collect();
    let by_others = newer.iter().any(|e| e.actor != me);
    (
        newer.iter().map(|e| sentence(e, people)).collect(),
        by_others,
    )
}

/// A resolution a later reprocess superseded: kept in the history, shown on the page.
pub(crate) struct EarlierResolution {
    pub resolution: String,
    pub by: String,
    pub at: String,
    pub decision_version: String,
    pub comment: String,
}

/// The resolutions (by a person or by policy) that a later REPROCESSED event set aside.
pub(crate) fn earlier_resolutions(audit: &[AuditView], people: &People) -> Vec<EarlierResolution> {
    let last_reprocess = audit
        .iter()
        .filter(|e| e.event_type == "REPROCESSED")
        .map(|e| e.id)
        .max();
    let Some(last_reprocess) = last_reprocess else {
        return Vec::new();
    };
    audit
        .iter()
        .filter(|e| e.id < last_reprocess)
        .filter(|e| matches!(e.event_type.as_str(), "REVIEW_RESOLVED" | "AUTO_RESOLVED"))
        .map(|e| {
            let data = |k: &str| e.data.get(k).map(shown).filter(|s| s != "null");
            EarlierResolution {
                resolution: data("resolution").unwrap_or_else(|| "APPROVED".to_owned()),
                by: people.name(&e.actor),
                at: when(e.created_at),
                decision_version: data("decision_version")
                    .or_else(|| data("version"))
                    .unwrap_or_default(),
                comment: data("comment").unwrap_or_default(),
            }
        })
        .collect()
}
