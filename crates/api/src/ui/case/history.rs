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
        "FACT_CORRECTED" => {
            let value = |k: &str| event.data.get(k).and_then(|v| v.get("value")).map(shown);
            format!(
                "corrected {}{}",
                data("field").unwrap_or_else(|| "a value".to_owned()),
                match (value("old"), value("new")) {
                    (Some(old), Some(new)) => format!(" ({old} → {new})"),
                    (None, Some(new)) => format!(" (to {new})"),
                    _ => String::new(),
                }
            )
        }
        "CORRECTION_PROPOSED" => "proposed a correction, for a second reviewer".to_owned(),
        "RESOLUTION_PROPOSED" => format!(
            "proposed to {}, for a second reviewer",
            data("action").unwrap_or_default().to_lowercase()
        ),
        "SECOND_CONFIRMED" | "SECOND_DECLINED" => format!(
            "{} {}'s {}",
            if event.event_type == "SECOND_CONFIRMED" {
                "confirmed"
            } else {
                "declined"
            },
            data("proposed_by_name").unwrap_or_else(|| "someone".to_owned()),
            data("action").unwrap_or_default().to_lowercase()
        ),
        "REVIEW_CLAIMED" => "claimed the review".to_owned(),
        "REVIEW_TAKEN_OVER" => format!(
            "took the review over from {}",
            data("from_name").unwrap_or_else(|| "someone".to_owned())
        ),
        "REVIEW_RELEASED" => match data("holder_name") {
            Some(holder) => format!("released {holder}'s claim"),
            None => "released a claim".to_owned(),
        },
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, data: serde_json::Value) -> AuditView {
        AuditView {
            id: 1,
            actor: "system".into(),
            event_type: kind.into(),
            data,
            created_at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default(),
        }
    }

    #[test]
    fn the_review_desk_s_events_read_as_sentences() {
        let people = People::default();
        let said = |kind: &str, data| sentence(&event(kind, data), &people);
        let corrected = said(
            "FACT_CORRECTED",
            json!({"field": "container_number",
                   "old": {"value": {"kind": "container_number", "value": {"code": "CBHU6394182", "check_digit_valid": true}}},
                   "new": {"value": {"kind": "container_number", "value": {"code": "CBHU6394177", "check_digit_valid": true}}}}),
        );
        assert!(
            corrected.contains("corrected container_number (CBHU6394182 → CBHU6394177) at"),
            "{corrected}"
        );
        let confirmed = said(
            "SECOND_CONFIRMED",
            json!({"proposed_by_name": "Rita Reviewer", "action": "OVERRIDE"}),
        );
        assert!(
            confirmed.contains("confirmed Rita Reviewer's override"),
            "{confirmed}"
        );
        let taken = said("REVIEW_TAKEN_OVER", json!({"from_name": "Rita Reviewer"}));
        assert!(
            taken.contains("took the review over from Rita Reviewer"),
            "{taken}"
        );
        assert!(said("REVIEW_RELEASED", json!({})).contains("released a claim"));
    }
}
