//! Each template's check over a case, and the vocabulary the checks share: the case's
//! documents in a fixed order, a document's reading of a field, and how both are named in
//! messages.
//!
//! One principle runs through every check: only confident values decide. A value below the
//! confidence floor, an ambiguous reading, or a missing value asks for review, except that a
//! contradiction between confident values fails the rule anyway (a doubtful third document
//! does not excuse two confident ones that disagree).

/// `format!` into a buffer sized for a typical message: `format!` sizes its buffer from the
/// literal pieces, so a message built from nested `Display`s would grow it several times.
macro_rules! msg {
    ($($arg:tt)*) => {{
        let mut text = String::with_capacity(160);
        let _ = std::fmt::Write::write_fmt(&mut text, format_args!($($arg)*));
        text
    }};
}
pub(crate) use msg;

mod cross;
mod presence;
#[cfg(test)]
mod tests;

use std::fmt;

use super::compare::Shown;
use super::evaluate::ComparedValue;
use super::facts::{CaseFacts, DocumentFacts, Reading};
use super::params::Check;
use super::RuleOutcome;
use crate::parse::Value;

/// What one check found.
pub(crate) struct Verdict {
    pub outcome: RuleOutcome,
    pub message: String,
    pub values: Vec<ComparedValue>,
}

impl Verdict {
    fn new(outcome: RuleOutcome, message: String, values: Vec<ComparedValue>) -> Self {
        Self {
            outcome,
            message,
            values,
        }
    }
}

/// Runs one rule's check.
pub(crate) fn run(check: &Check, case: &Case<'_>) -> Verdict {
    match check {
        Check::RequiredDocument {
            document_types,
            min_count,
        } => presence::required_document(case, document_types, *min_count),
        Check::FieldRequired {
            document_type,
            fields,
        } => presence::field_required(case, document_type, fields),
        Check::AllAgree {
            field,
            document_types,
        } => cross::all_agree(case, field, document_types),
        Check::Pair { left, right, test } => cross::pair(case, left, right, test),
        Check::Authority {
            field,
            authority,
            others,
        } => cross::authority(case, field, authority, others),
    }
}

/// A case's documents in evaluation order, and the confidence floor.
pub(crate) struct Case<'a> {
    docs: Vec<&'a DocumentFacts>,
    pub floor: f64,
}

impl<'a> Case<'a> {
    pub fn new(facts: &'a CaseFacts, floor: f64) -> Self {
        let mut docs: Vec<&DocumentFacts> = facts.documents.iter().collect();
        docs.sort_by(|a, b| DocumentFacts::order(a, b));
        Self { docs, floor }
    }

    /// Every document, unclassified ones included, in evaluation order.
    pub fn docs(&self) -> &[&'a DocumentFacts] {
        &self.docs
    }

    /// The documents of type `t`, in evaluation order.
    pub fn of_type<'s>(&'s self, t: &'s str) -> impl Iterator<Item = &'a DocumentFacts> + 's {
        self.docs
            .iter()
            .copied()
            .filter(move |d| d.document_type.as_deref() == Some(t))
    }

    /// What each document of type `t` says for `field`.
    pub fn observe<'s>(&'s self, t: &'s str, field: &'s str) -> Vec<Observed<'s>>
    where
        'a: 's,
    {
        self.of_type(t)
            .map(|doc| Observed {
                doc,
                field,
                reading: doc.reading(field, self.floor),
            })
            .collect()
    }
}

/// One document's reading of one field.
#[derive(Clone, Copy)]
pub(crate) struct Observed<'a> {
    pub doc: &'a DocumentFacts,
    pub field: &'a str,
    pub reading: Reading<'a>,
}

impl<'a> Observed<'a> {
    pub fn value(&self) -> Option<&'a Value> {
        self.reading.value
    }

    /// Whether the value may decide the rule; see [`Reading::is_confident`].
    pub fn confident(&self) -> bool {
        self.reading.is_confident()
    }

    /// The value with its evidence, for the rule result.
    pub fn compared(&self) -> ComparedValue {
        let mut evidence = self
            .reading
            .fact
            .map(|f| f.evidence.clone())
            .unwrap_or_default();
        evidence.source_id.get_or_insert(self.doc.source_id);
        evidence.page.get_or_insert(self.doc.first_page);
        ComparedValue {
            document_type: doc_type(self.doc).to_owned(),
            field: self.field.to_owned(),
            value: self.value().cloned(),
            evidence,
        }
    }

    /// `bill_of_lading (source 1a2b3c4d, p. 1) gross_weight "26,070.00 KGS"`.
    pub fn described(&self) -> Described<'_> {
        Described(self)
    }

    /// Why this reading asks for review, if it does.
    pub fn doubt(&self, floor: f64) -> Option<String> {
        let r = &self.reading;
        if r.value.is_none() {
            Some(msg!("{} is missing on {}", self.field, DocName(self.doc)))
        } else if r.conflict {
            Some(msg!("{} has conflicting readings", self.described()))
        } else {
            r.below_floor.map(|c| {
                msg!(
                    "{} is below the confidence floor ({c:.2} < {floor})",
                    self.described()
                )
            })
        }
    }
}

/// See [`Observed::described`].
pub(crate) struct Described<'o>(&'o Observed<'o>);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.0;
        write!(f, "{} {} {}", DocName(o.doc), o.field, Printed(o))
    }
}

/// How long a printed value may be in a message; extractors sometimes keep a whole line.
const MAX_PRINTED_CHARS: usize = 60;

/// A value as printed on the page (its raw text), else as parsed; quoted.
pub(crate) struct Printed<'o>(pub &'o Observed<'o>);

impl fmt::Display for Printed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = self
            .0
            .reading
            .fact
            .and_then(|fact| fact.evidence.raw_text.as_deref())
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match (raw, self.0.value()) {
            (Some(raw), Some(_)) => {
                let mut chars = raw.chars();
                let head: String = chars.by_ref().take(MAX_PRINTED_CHARS).collect();
                let more = if chars.next().is_some() { "…" } else { "" };
                write!(f, "\"{head}{more}\"")
            }
            (_, Some(v)) => write!(f, "\"{}\"", Shown(v)),
            (_, None) => f.write_str("(missing)"),
        }
    }
}

/// The type a result names for a document: its id, or `UNKNOWN` for unclassified pages.
pub(crate) fn doc_type(doc: &DocumentFacts) -> &str {
    doc.document_type.as_deref().unwrap_or("UNKNOWN")
}

/// `bill_of_lading (source 1a2b3c4d, p. 1)`: the type, the source's first eight hex digits
/// and the 1-based pages, which is what a reviewer looks for in the case view.
pub(crate) struct DocName<'a>(pub &'a DocumentFacts);

impl fmt::Display for DocName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        let what = d.document_type.as_deref().unwrap_or("unclassified pages");
        f.write_str(what)?;
        f.write_str(" (source ")?;
        // The first eight hex digits by hand: this runs for every value of every message.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut short = [0u8; 8];
        for (i, b) in d.source_id.as_bytes()[..4].iter().enumerate() {
            short[2 * i] = HEX[usize::from(b >> 4)];
            short[2 * i + 1] = HEX[usize::from(b & 0xf)];
        }
        f.write_str(std::str::from_utf8(&short).unwrap_or("????????"))?;
        f.write_str(", ")?;
        let (first, last) = (
            d.first_page.saturating_add(1),
            d.last_page.saturating_add(1),
        );
        if first >= last {
            write!(f, "p. {first})")
        } else {
            write!(f, "pp. {first}–{last})")
        }
    }
}

/// How many items a message lists before it counts the rest.
const LISTED: usize = 4;

/// Joins at most [`LISTED`] items, then `and N more`.
pub(crate) fn listing<T: fmt::Display>(items: impl IntoIterator<Item = T>, sep: &str) -> String {
    use fmt::Write;
    let mut out = String::with_capacity(160);
    let mut n = 0;
    for item in items {
        if n < LISTED {
            if n > 0 {
                out.push_str(sep);
            }
            let _ = write!(out, "{item}");
        }
        n += 1;
    }
    if n > LISTED {
        let _ = write!(out, " and {} more", n - LISTED);
    }
    out
}

/// A `Display` written by a closure, so a message is formatted straight into its one
/// `String` instead of through a `String` per part (evaluation is allocation-bound).
pub(crate) struct Show<F>(F);

/// Wraps a closure as [`Show`]; a function, so the closure is inferred for every formatter
/// lifetime.
pub(crate) fn show<F: Fn(&mut fmt::Formatter<'_>) -> fmt::Result>(write: F) -> Show<F> {
    Show(write)
}

impl<F: Fn(&mut fmt::Formatter<'_>) -> fmt::Result> fmt::Display for Show<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.0)(f)
    }
}

/// `a`, `a or b`, `a, b or c`: document types in a "no … document" message.
pub(crate) fn either(types: &[&str]) -> String {
    match types {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
