//! Each template's check over a case, and the vocabulary the checks share: the case's
//! documents in a fixed order, a document's reading of a field, and how both are named in
//! messages.
//!
//! One principle runs through every check: only confident values decide. A value below the
//! confidence floor, an ambiguous reading, or a missing value asks for review, except that a
//! contradiction between confident values fails the rule anyway (a doubtful third document
//! does not excuse two confident ones that disagree). Two identifiers that differ only where
//! OCR confuses characters, one of them read by OCR, are no contradiction but a doubt
//! ([`super::ocr_confusion`]): a reading doubt never blocks.

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

/// A message made of [`Piece`]s appended in order: `text!(field, " agrees on ", n, " documents")`.
/// The cheap way to write the messages every evaluation writes (see [`Piece`]).
macro_rules! text {
    ($($piece:expr),+ $(,)?) => {{
        let mut text = String::with_capacity(160);
        $( $crate::rules::checks::Piece::push_to(&$piece, &mut text); )+
        text
    }};
}
pub(crate) use text;

mod cross;
mod presence;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt::{self, Write};
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

use super::compare::Shown;
use super::evaluate::ComparedValue;
use super::facts::{CaseFacts, DocumentFacts, Evidence, Reading};
use super::names::{Name, Names};
use super::ocr_confusion;
use super::params::Check;
use super::spec::CompiledRuleset;
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
/// few dozen values over and over. Readings are kept by (document, field number), so a rule
/// finds one by index rather than by comparing names.
pub(crate) struct Case<'a> {
    docs: Vec<&'a DocumentFacts>,
    /// Per document type number (the ruleset's names), where its documents lie in `docs`:
    /// documents are sorted by type first, so each type's are contiguous.
    type_ranges: Vec<Range<usize>>,
    /// Per document, its type as results show it (shared by all its values).
    type_names: Vec<Arc<str>>,
    names: &'a Names,
    /// `docs.len() × names.field_count()` readings, built on first use.
    slots: Vec<OnceCell<Slot<'a>>>,
    /// Per document, its whole-document value (no field), once built.
    whole: Vec<OnceCell<Arc<ComparedValue>>>,
    /// Per document, [`DocName`] written once.
    doc_names: Vec<OnceCell<String>>,
    pub floor: f64,
}

/// One document's reading of one field, built once per evaluation.
struct Slot<'a> {
    reading: Reading<'a>,
    compared: Arc<ComparedValue>,
    /// [`Observed::described`], written once: messages name the same values again and again.
    described: OnceCell<Described>,
    /// [`Observed::doubt`], written once.
    doubt: OnceCell<String>,
}

impl<'a> Slot<'a> {
    fn new(doc: &DocumentFacts, document_type: Arc<str>, field: Arc<str>, floor: f64) -> Slot<'_> {
        let reading = doc.reading(&field, floor);
        let compared = Arc::new(compared_value(doc, document_type, field, &reading));
        Slot {
            reading,
            compared,
            described: OnceCell::new(),
            doubt: OnceCell::new(),
        }
    }
}

impl<'a> Case<'a> {
    pub fn new(facts: &'a CaseFacts, ruleset: &'a CompiledRuleset) -> Self {
        let names = &ruleset.names;
        let mut docs: Vec<&DocumentFacts> = facts.documents.iter().collect();
        docs.sort_by(|a, b| DocumentFacts::order(a, b));
        let type_ids: Vec<Option<usize>> = docs
            .iter()
            .map(|d| d.document_type.as_deref().and_then(|t| names.type_id(t)))
            .collect();
        let mut type_ranges = vec![0..0; names.type_count()];
        for (i, id) in type_ids.iter().enumerate() {
            if let Some(range) = id.and_then(|id| type_ranges.get_mut(id)) {
                if range.start == range.end {
                    *range = i..i;
                }
                range.end = i + 1;
            }
        }
        let type_names = docs
            .iter()
            .zip(&type_ids)
            .map(|(d, id)| match id.and_then(|id| names.type_text(id)) {
                Some(shared) => Arc::clone(shared),
                None => Arc::from(doc_type(d)),
            })
            .collect();
        let slots = std::iter::repeat_with(OnceCell::new)
            .take(docs.len() * names.field_count())
            .collect();
        let whole = docs.iter().map(|_| OnceCell::new()).collect();
        let doc_names = docs.iter().map(|_| OnceCell::new()).collect();
        Self {
            docs,
            type_ranges,
            type_names,
            names,
            slots,
            whole,
            doc_names,
            floor: ruleset.policy.confidence_floor,
        }
    }

    /// Every document, unclassified ones included, in evaluation order.
    pub fn docs(&self) -> &[&'a DocumentFacts] {
        &self.docs
    }

    /// The documents of type `t`, in evaluation order, with their index in [`Case::docs`].
    pub fn of_type<'s>(
        &'s self,
        t: &'s Name,
    ) -> impl Iterator<Item = (usize, &'a DocumentFacts)> + 's {
        let range = self.type_ranges.get(t.id).cloned().unwrap_or(0..0);
        range.map(move |i| (i, self.docs[i]))
    }

    /// What each document of type `t` says for `field`.
    pub fn observe<'s>(&'s self, t: &'s Name, field: &Name) -> Vec<Observed<'s>>
    where
        'a: 's,
    {
        self.observe_types(std::slice::from_ref(t), field)
    }

    /// What each document of the types `types` says for `field`, type by type.
    pub fn observe_types<'s>(&'s self, types: &[Name], field: &Name) -> Vec<Observed<'s>>
    where
        'a: 's,
    {
        // One allocation, never grown: a case has at most `docs.len()` documents of the types.
        let mut observed = Vec::with_capacity(self.docs.len());
        for t in types {
            observed.extend(self.of_type(t).map(|(i, doc)| self.read(i, doc, field)));
        }
        observed
    }

    /// What document `i` (`doc`) says for `field`.
    pub fn read<'s>(&'s self, i: usize, doc: &'a DocumentFacts, field: &Name) -> Observed<'s>
    where
        'a: 's,
    {
        let at = i * self.names.field_count() + field.id;
        match self.slots.get(at) {
            Some(cell) => {
                let slot = cell.get_or_init(|| {
                    Slot::new(doc, self.type_names[i].clone(), field.shared(), self.floor)
                });
                Observed {
                    doc,
                    name: &self.doc_names[i],
                    slot: SlotRef::Kept(slot),
                }
            }
            // Unreachable for a name of this ruleset; read afresh rather than fail.
            None => self.read_afresh(i, doc, field.shared()),
        }
    }

    /// What document `i` (`doc`) says for a field named by the facts, not by a rule.
    pub fn read_named<'s>(&'s self, i: usize, doc: &'a DocumentFacts, field: &str) -> Observed<'s>
    where
        'a: 's,
    {
        match self.names.find_field(field) {
            Some(name) => self.read(i, doc, &name),
            // A field the workflow does not declare: read, not kept.
            None => self.read_afresh(i, doc, Arc::from(field)),
        }
    }

    fn read_afresh<'s>(&'s self, i: usize, doc: &'a DocumentFacts, field: Arc<str>) -> Observed<'s>
    where
        'a: 's,
    {
        let slot = Slot::new(doc, self.type_names[i].clone(), field, self.floor);
        Observed {
            doc,
            name: &self.doc_names[i],
            slot: SlotRef::Own(Rc::new(slot)),
        }
    }

    /// Document `i` (`doc`) as a whole: no field, no value, its source and first page.
    pub fn whole(&self, i: usize, doc: &DocumentFacts) -> Arc<ComparedValue> {
        Arc::clone(self.whole[i].get_or_init(|| {
            Arc::new(ComparedValue {
                document_type: self.type_names[i].clone(),
                field: Arc::from(""),
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
fn compared_value(
    doc: &DocumentFacts,
    document_type: Arc<str>,
    field: Arc<str>,
    reading: &Reading<'_>,
) -> ComparedValue {
    let mut evidence = reading.fact.map(|f| f.evidence.clone()).unwrap_or_default();
    evidence.source_id.get_or_insert(doc.source_id);
    evidence.page.get_or_insert(doc.first_page);
    ComparedValue {
        document_type,
        field,
        // The chosen fact's own value, shared (the reading has one only when the fact does).
        value: reading
            .value
            .and(reading.fact)
            .and_then(|f| f.value.clone()),
        evidence,
    }
}

/// A reading's result value: kept by the case, or built for one reading.
#[derive(Clone)]
enum SlotRef<'s> {
    Kept(&'s Slot<'s>),
    Own(Rc<Slot<'s>>),
}

/// One document's reading of one field.
#[derive(Clone)]
pub(crate) struct Observed<'a> {
    pub doc: &'a DocumentFacts,
    /// The document's [`DocName`], written on first use and shared by its readings.
    name: &'a OnceCell<String>,
    slot: SlotRef<'a>,
}

impl<'a> Observed<'a> {
    /// The field read.
    pub fn field(&self) -> &str {
        &self.slot().compared.field
    }

    /// `bill_of_lading (source 1a2b3c4d, p. 1)`: see [`DocName`].
    pub fn doc_name(&self) -> &'a str {
        self.name.get_or_init(|| {
            let mut name = String::with_capacity(48);
            DocName(self.doc).push_to(&mut name);
            name
        })
    }

    /// What the document says for the field.
    pub fn reading(&self) -> &Reading<'a> {
        &self.slot().reading
    }

    fn slot(&self) -> &Slot<'a> {
        match &self.slot {
            SlotRef::Kept(kept) => kept,
            SlotRef::Own(own) => own,
        }
    }
    pub fn value(&self) -> Option<&'a Value> {
        self.reading().value
    }

    /// How sure the reading of the chosen value was, when the extraction said.
    pub fn confidence(&self) -> Option<f64> {
        self.reading().fact.and_then(|f| f.evidence.confidence)
    }

    /// Whether the value may decide the rule; see [`Reading::is_confident`].
    pub fn confident(&self) -> bool {
        self.reading().is_confident()
    }

    /// The value with its evidence, for the rule result (shared, not copied).
    pub fn compared(&self) -> Arc<ComparedValue> {
        Arc::clone(&self.slot().compared)
    }

    /// `bill_of_lading (source 1a2b3c4d, p. 1) gross_weight "26,070.00 KGS"`.
    pub fn described(&self) -> &str {
        &self.description().text
    }

    /// `"26,070.00 KGS"`: the value as printed on the page, quoted; see [`Printed`].
    pub fn printed(&self) -> &str {
        let d = self.description();
        &d.text[d.printed_at..]
    }

    /// The value as printed, without the quotes of [`Observed::printed`]: what OCR read.
    pub fn as_read(&self) -> &str {
        let printed = self.printed();
        printed
            .strip_prefix('"')
            .and_then(|p| p.strip_suffix('"'))
            .unwrap_or(printed)
    }

    /// Whether the value came from a page OCR (or a provider) read, so it may hold OCR's
    /// confusions; a text layer's value, or a person's, is taken as written.
    pub fn read_by_ocr(&self) -> bool {
        ocr_confusion::read_by_ocr(self.reading().fact.and_then(|f| f.evidence.read_method))
    }

    fn description(&self) -> &Described {
        self.slot().described.get_or_init(|| {
            let (name, field) = (self.doc_name(), self.field());
            let mut text = String::with_capacity(name.len() + field.len() + 72);
            text.push_str(name);
            text.push(' ');
            text.push_str(field);
            text.push(' ');
            let printed_at = text.len();
            Printed(self).push_to(&mut text);
            Described { text, printed_at }
        })
    }

    /// Why this reading asks for review, if it does; written once per reading, as several
    /// rules often ask about one doubtful value.
    pub fn doubt(&self, floor: f64) -> Option<Cow<'_, str>> {
        let r = self.reading();
        if r.is_confident() {
            return None;
        }
        let text = self
            .slot()
            .doubt
            .get_or_init(|| self.write_doubt(floor).unwrap_or_default());
        Some(Cow::Borrowed(text))
    }

    fn write_doubt(&self, floor: f64) -> Option<String> {
        let r = self.reading();
        if r.value.is_none() {
            Some(msg!("{} is missing on {}", self.field(), self.doc_name()))
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

/// A reading as messages name it: the document, the field and the value as printed.
struct Described {
    text: String,
    /// Where the printed value starts in `text`.
    printed_at: usize,
}

/// How long a printed value may be in a message; extractors sometimes keep a whole line.
const MAX_PRINTED_CHARS: usize = 60;

/// A value as printed on the page (its raw text), else as parsed; quoted.
pub(crate) struct Printed<'o>(pub &'o Observed<'o>);

impl Printed<'_> {
    /// Appends the quoted value to `out`.
    fn push_to(&self, out: &mut String) {
        let raw = self
            .0
            .reading()
            .fact
            .and_then(|fact| fact.evidence.raw_text.as_deref())
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match (raw, self.0.value()) {
            (Some(raw), Some(_)) => {
                // The first MAX_PRINTED_CHARS characters, sliced rather than copied (a text of
                // at most that many bytes has at most that many characters).
                let cut = if raw.len() <= MAX_PRINTED_CHARS {
                    None
                } else {
                    raw.char_indices().nth(MAX_PRINTED_CHARS).map(|(i, _)| i)
                };
                out.push('"');
                match cut {
                    Some(i) => {
                        out.push_str(&raw[..i]);
                        out.push('…');
                    }
                    None => out.push_str(raw),
                }
                out.push('"');
            }
            (_, Some(v)) => {
                let _ = write!(out, "\"{}\"", Shown(v));
            }
            (_, None) => out.push_str("(missing)"),
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

impl DocName<'_> {
    /// Appends the name to `out` directly: this runs for every document of every case, and
    /// `fmt` machinery costs several times the bytes it writes.
    pub(crate) fn push_to(&self, out: &mut String) {
        let d = self.0;
        out.push_str(d.document_type.as_deref().unwrap_or("unclassified pages"));
        out.push_str(" (source ");
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut short = [0u8; 8];
        for (i, b) in d.source_id.as_bytes()[..4].iter().enumerate() {
            short[2 * i] = HEX[usize::from(b >> 4)];
            short[2 * i + 1] = HEX[usize::from(b & 0xf)];
        }
        out.push_str(std::str::from_utf8(&short).unwrap_or("????????"));
        let (first, last) = (
            d.first_page.saturating_add(1),
            d.last_page.saturating_add(1),
        );
        if first >= last {
            out.push_str(", p. ");
            push_number(out, u64::from(first));
        } else {
            out.push_str(", pp. ");
            push_number(out, u64::from(first));
            out.push('–');
            push_number(out, u64::from(last));
        }
        out.push(')');
    }
}

impl fmt::Display for DocName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::with_capacity(48);
        self.push_to(&mut text);
        f.write_str(&text)
    }
}

/// Appends `n` in decimal.
fn push_number(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        // `n % 10` is below 10, so the cast keeps it.
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// How many items a message lists before it counts the rest.
const LISTED: usize = 4;

/// Joins at most [`LISTED`] items, then `and N more`.
pub(crate) fn listing<T: Piece>(items: impl IntoIterator<Item = T>, sep: &str) -> String {
    let mut out = String::with_capacity(160);
    let mut n = 0;
    for item in items {
        if n < LISTED {
            if n > 0 {
                out.push_str(sep);
            }
            item.push_to(&mut out);
        }
        n += 1;
    }
    if n > LISTED {
        out.push_str(" and ");
        (n - LISTED).push_to(&mut out);
        out.push_str(" more");
    }
    out
}

/// A part of a message that appends itself to the message's one `String`: messages are
/// built by appending, as `fmt` machinery costs several times the bytes it writes and
/// evaluation writes a few kilobytes of messages per case.
pub(crate) trait Piece {
    fn push_to(&self, out: &mut String);
}

impl<T: Piece + ?Sized> Piece for &T {
    fn push_to(&self, out: &mut String) {
        (**self).push_to(out);
    }
}

impl Piece for str {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for Name {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for usize {
    fn push_to(&self, out: &mut String) {
        // usize is at most 64 bits wide on every target Rust supports.
        push_number(out, *self as u64);
    }
}

impl Piece for String {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for Cow<'_, str> {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for DocName<'_> {
    fn push_to(&self, out: &mut String) {
        DocName::push_to(self, out);
    }
}

/// A [`Piece`] written by a closure.
pub(crate) struct Push<F>(F);

/// Wraps a closure as a [`Piece`].
pub(crate) fn push<F: Fn(&mut String)>(write: F) -> Push<F> {
    Push(write)
}

impl<F: Fn(&mut String)> Piece for Push<F> {
    fn push_to(&self, out: &mut String) {
        (self.0)(out);
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
