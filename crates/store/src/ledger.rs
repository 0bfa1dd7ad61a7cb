//! The ledger `ironclad verify --ledger FILE` reads: what a client submitted and what it was
//! told, one JSON object per line (the bench's load generator and chaos run write it). Verify
//! holds the system to it: every submission the API accepted must exist and be decided (or in
//! review), a refused one must have changed nothing.

use serde::{Deserialize, Serialize};

/// What the client expects of a submission, once the system has settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    /// A healthy dossier: the case must end decided or in review, never FAILED.
    Decided,
    /// A dossier with a file that cannot be read although intake accepted it: FAILED with
    /// code `document_unreadable` is a correct outcome, as is a decision.
    MayFail,
    /// Bad input: the API must have refused it (4xx) and committed nothing.
    Refused,
}

/// One submission and its final answer (after the client's retries with the same
/// `Idempotency-Key`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Order of submission (for messages).
    pub seq: u64,
    /// Tenant name the key belongs to.
    pub tenant: String,
    /// The `Idempotency-Key` every try carried.
    pub idempotency_key: String,
    /// What kind of dossier it was (free text: `clean`, `discrepant`, `scan`, `bad_pdf`, …).
    pub kind: String,
    /// What the system owes the client.
    pub expect: Expectation,
    /// The final HTTP status the client saw; `None` if no try got an answer (the client gave
    /// up during an outage: the case may or may not exist, and either is correct).
    pub status: Option<u16>,
    /// The case id of a 2xx answer.
    pub case_id: Option<String>,
    /// SHA-256 of each file sent.
    pub files: Vec<String>,
    /// When the first try was sent (RFC 3339).
    pub submitted_at: String,
    /// When the final answer came (RFC 3339), if one did.
    pub answered_at: Option<String>,
}

impl LedgerEntry {
    /// Reads a ledger: one entry per non-empty line.
    pub fn parse_lines(text: &str) -> Result<Vec<LedgerEntry>, LedgerError> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| LedgerError {
                    line: i + 1,
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    /// One JSON line (without the newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A ledger line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ledger line {line}: {reason}")]
pub struct LedgerError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_errors_name_the_line() {
        let e = LedgerEntry {
            seq: 3,
            tenant: "chaos".into(),
            idempotency_key: "k-3".into(),
            kind: "scan".into(),
            expect: Expectation::Decided,
            status: Some(201),
            case_id: Some("0190a4a0-0000-7000-8000-000000000000".into()),
            files: vec!["ab".into()],
            submitted_at: "2026-12-01T00:00:00Z".into(),
            answered_at: None,
        };
        let text = format!("{}\n\n{}\n", e.to_line(), e.to_line());
        assert_eq!(LedgerEntry::parse_lines(&text), Ok(vec![e.clone(), e]));
        assert_eq!(
            LedgerEntry::parse_lines("{}\nnot json").map_err(|e| e.line),
            Err(1)
        );
    }
}
