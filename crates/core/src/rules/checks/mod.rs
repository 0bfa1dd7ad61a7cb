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

use std::cell::{OnceCell, RefCell};
use std::fmt;
use std::sync::Arc;

use super::compare::Shown;
use super::evaluate::ComparedValue;
use super::facts::{CaseFacts, DocumentFacts, Evidence, Reading};
use super::params::Check;
use super::RuleOutcome;
use crate::parse::Value;

/// What one check found.
pub(crate) struct Verdict {
    pub outcome: RuleOutcome,
    pub message: String,
    pub values: Vec<Arc<ComparedValue>>,
}

impl Verdict {
    fn new(outcome: RuleOutcome, message: String, values: Vec<Arc<ComparedValue>>) -> Self {
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
///
/// Each document's reading of a field, and the [`ComparedValue`] results show for it, are
/// built the first time a rule asks and shared after: a case's forty rules read the same
/// few dozen values over and over, and building each value's strings anew per rule was
/// most of an evaluation's cost.
pub(crate) struct Case<'a> {
    docs: Vec<&'a DocumentFacts>,
    /// Per document (same index as `docs`), the readings built so far.
    memo: Vec<RefCell<Vec<Memo<'a>>>>,
    /// Per document, its whole-document value (no field), once built.
    whole: Vec<OnceCell<Arc<ComparedValue>>>,
    pub floor: f64,
}

/// One document's reading of one field (`compared.field`), built once per evaluation.
struct Memo<'a> {
    reading: Reading<'a>,
    compared: Arc<ComparedValue>,
}

impl<'a> Case<'a> {
    pub fn new(facts: &'a CaseFacts, floor: f64) -> Self {
        let mut docs: Vec<&DocumentFacts> = facts.documents.iter().collect();
        docs.sort_by(|a, b| DocumentFacts::order(a, b));
        let memo = docs
            .iter()
            .map(|d| RefCell::new(Vec::with_capacity(d.facts.len())))
            .collect();
        let whole = docs.iter().map(|_| OnceCell::new()).collect();
        Self {
            docs,
            memo,
            whole,
            floor,
        }
    }

    /// Every document, unclassified ones included, in evaluation order.
    pub fn docs(&self) -> &[&'a DocumentFacts] {
        &self.docs
    }

    /// The documents of type `t`, in evaluation order, with their index in [`Case::docs`].
    pub fn of_type<'s>(
        &'s self,
        t: &'s str,
    ) -> impl Iterator<Item = (usize, &'a DocumentFacts)> + 's {
        self.docs
            .iter()
            .copied()
            .enumerate()
            .filter(move |(_, d)| d.document_type.as_deref() == Some(t))
    }

    /// What each document of type `t` says for `field`.
    pub fn observe<'s>(&'s self, t: &'s str, field: &'s str) -> Vec<Observed<'s>>
    where
        'a: 's,
    {
        self.of_type(t)
            .map(|(i, doc)| self.read(i, doc, field))
            .collect()
    }

    /// What document `i` (`doc`) says for `field`.
    pub fn read<'s>(&'s self, i: usize, doc: &'a DocumentFacts, field: &'s str) -> Observed<'s>
    where
        'a: 's,
    {
        let mut memo = self.memo[i].borrow_mut();
        let (reading, compared) = match memo.iter().find(|m| m.compared.field == field) {
            Some(m) => (m.reading, Arc::clone(&m.compared)),
            None => {
                let reading = doc.reading(field, self.floor);
                let compared = Arc::new(compared_value(doc, field, &reading));
                memo.push(Memo {
                    reading,
                    compared: Arc::clone(&compared),
                });
                (reading, compared)
            }
        };
        Observed {
            doc,
            field,
            reading,
            compared,
        }
    }

    /// Document `i` (`doc`) as a whole: no field, no value, its source and first page.
    pub fn whole(&self, i: usize, doc: &DocumentFacts) -> Arc<ComparedValue> {
        Arc::clone(self.whole[i].get_or_init(|| {
            Arc::new(ComparedValue {
                document_type: doc_type(doc).to_owned(),
                field: String::new(),
                value: None,
                evidence: Evidence {
                    source_id: Some(doc.source_id),
                    page: Some(doc.first_page),
                    ..Evidence::default()
                },
            })
        }))
    }
}

/// A reading with its evidence, for the rule result.
fn compared_value(doc: &DocumentFacts, field: &str, reading: &Reading<'_>) -> ComparedValue {
    let mut evidence = reading.fact.map(|f| f.evidence.clone()).unwrap_or_default();
    evidence.source_id.get_or_insert(doc.source_id);
    evidence.page.get_or_insert(doc.first_page);
    ComparedValue {
        document_type: doc_type(doc).to_owned(),
        field: field.to_owned(),
        value: reading.value.cloned(),
        evidence,
    }
}

/// One document's reading of one field.
#[derive(Clone)]
pub(crate) struct Observed<'a> {
    pub doc: &'a DocumentFacts,
    pub field: &'a str,
    pub reading: Reading<'a>,
    compared: Arc<ComparedValue>,
}

impl<'a> Observed<'a> {
    pub fn value(&self) -> Option<&'a Value> {
        self.reading.value
    }

    /// Whether the value may decide the rule; see [`Reading::is_confident`].
    pub fn confident(&self) -> bool {
        self.reading.is_confident()
    }

    /// The value with its evidence, for the rule result (shared, not copied).
    pub fn compared(&self) -> Arc<ComparedValue> {
        Arc::clone(&self.compared)
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
                // The first MAX_PRINTED_CHARS characters, sliced rather than copied.
                let cut = raw.char_indices().nth(MAX_PRINTED_CHARS).map(|(i, _)| i);
                let (head, more) = match cut {
                    Some(i) => (&raw[..i], "…"),
                    None => (raw, ""),
                };
                f.write_str("\"")?;
                f.write_str(head)?;
                f.write_str(more)?;
                f.write_str("\"")
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
