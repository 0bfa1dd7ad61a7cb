//! How the case page words what the store holds: typed values as one line, the rules' file
//! mentions with the files' names, and which compared values disagree.

use serde_json::Value;
use uuid::Uuid;

/// A stored value as one line of text, as everywhere else (see `ironclad_core::parse::Value`'s
/// `Display`): money as `12.50 EUR`, a weight in kg, a container by its code; strings bare.
pub(crate) fn shown(value: &Value) -> String {
    ironclad_core::parse::show_stored(value)
}

/// A document of the case as the rules name it: `bill_of_lading (source 01a24e54, p. 1)`.
#[derive(Debug, Clone)]
pub(crate) struct NamedDocument {
    /// Its type as the rules print it (`unclassified pages` when it has none).
    pub doc_type: String,
    pub source: Uuid,
    /// 0-based, inclusive.
    pub first_page: u32,
    pub last_page: u32,
    pub filename: String,
}

/// One `(source 1a2b3c4d, p. 1)` or `(source 1a2b3c4d, pp. 1–2)` mention in a message.
struct Mention {
    /// Byte range of `source 1a2b3c4d` in the message.
    start: usize,
    end: usize,
    prefix: String,
    first: u32,
    last: u32,
}

/// Parses the mention starting at `open` (the byte of `(`), if one does.
fn mention_at(message: &str, open: usize) -> Option<Mention> {
    let rest = message.get(open..)?.strip_prefix("(source ")?;
    let prefix = rest.get(..8)?;
    if !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let after = &rest[8..];
    let number = |s: &str| -> Option<(u32, usize)> {
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        Some((s.get(..digits)?.parse().ok()?, digits))
    };
    let (first, last) = if let Some(pages) = after.strip_prefix(", p. ") {
        let (page, _) = number(pages)?;
        (page, page)
    } else {
        let pages = after.strip_prefix(", pp. ")?;
        let (first, used) = number(pages)?;
        let (last, _) = number(pages.get(used..)?.strip_prefix('–')?)?;
        (first, last)
    };
    let start = open + 1;
    Some(Mention {
        start,
        end: start + "source ".len() + 8,
        prefix: prefix.to_owned(),
        first,
        last,
    })
}

/// The message with each document mention naming its file instead of the first eight hex
/// digits of its source id — which, ids being time-ordered, are the same for every file of
/// a case. A mention that fits no document, or several, is left as it is.
pub(crate) fn name_files(message: &str, documents: &[NamedDocument]) -> String {
    let mut out = String::with_capacity(message.len() + 32);
    let mut copied = 0;
    for (open, _) in message.match_indices("(source ") {
        let Some(m) = mention_at(message, open) else {
            continue;
        };
        let fits = |d: &&NamedDocument| {
            d.source.simple().to_string().starts_with(&m.prefix)
                && d.first_page + 1 == m.first
                && d.last_page + 1 == m.last
        };
        let mut found: Vec<&NamedDocument> = documents.iter().filter(fits).collect();
        if found.len() > 1 {
            // The type printed before the mention tells same-paged documents apart.
            let before = &message[..open];
            found.retain(|d| before.ends_with(&format!("{} ", d.doc_type)));
        }
        let sources: std::collections::HashSet<Uuid> = found.iter().map(|d| d.source).collect();
        if let (Some(doc), 1) = (found.first(), sources.len()) {
            out.push_str(&message[copied..m.start]);
            out.push_str(&doc.filename);
            copied = m.end;
        }
    }
    out.push_str(&message[copied..]);
    out
}

/// Which of a rule's compared values disagree with the others: those outside the largest
/// group of equal values; when no group is largest (two values that differ), every value.
/// Missing values are never marked (they are marked missing).
pub(crate) fn disagreeing(values: &[Option<String>]) -> Vec<bool> {
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for v in values.iter().flatten() {
        match groups.iter_mut().find(|(text, _)| *text == v.as_str()) {
            Some((_, n)) => *n += 1,
            None => groups.push((v, 1)),
        }
    }
    if groups.len() < 2 {
        return vec![false; values.len()];
    }
    let top = groups.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let majority: Vec<&str> = groups
        .iter()
        .filter(|(_, n)| *n == top)
        .map(|(t, _)| *t)
        .collect();
    let agreed = (majority.len() == 1).then(|| majority[0]);
    values
        .iter()
        .map(|v| match (v, agreed) {
            (None, _) => false,
            (Some(v), Some(agreed)) => v != agreed,
            (Some(_), None) => true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(t: &str, source: Uuid, pages: (u32, u32), file: &str) -> NamedDocument {
        NamedDocument {
            doc_type: t.to_owned(),
            source,
            first_page: pages.0,
            last_page: pages.1,
            filename: file.to_owned(),
        }
    }

    #[test]
    fn mentions_name_their_files_even_when_ids_share_a_prefix() {
        // Time-ordered ids of one upload share their first eight hex digits.
        let a = Uuid::parse_str("01a24e54-0000-7000-8000-000000000001").unwrap_or_default();
        let b = Uuid::parse_str("01a24e54-0000-7000-8000-000000000002").unwrap_or_default();
        let docs = [
            doc("bill_of_lading", a, (0, 0), "bl.pdf"),
            doc("commercial_invoice", b, (0, 0), "invoice.pdf"),
            doc("customs_declaration", b, (1, 2), "invoice.pdf"),
        ];
        let message = "container_number disagrees: \"X\" on bill_of_lading (source 01a24e54, p. 1), \
            customs_declaration (source 01a24e54, pp. 2–3); \"Y\" on commercial_invoice (source 01a24e54, p. 1)";
        assert_eq!(
            name_files(message, &docs),
            "container_number disagrees: \"X\" on bill_of_lading (bl.pdf, p. 1), \
            customs_declaration (invoice.pdf, pp. 2–3); \"Y\" on commercial_invoice (invoice.pdf, p. 1)"
        );
        // Unknown documents and text that only looks like a mention stay as they are.
        let odd = "packing_list (source 99999999, p. 1) and (source xyz)";
        assert_eq!(name_files(odd, &docs), odd);
    }

    #[test]
    fn the_value_apart_from_the_others_is_the_one_that_disagrees() {
        let v = |s: &str| Some(s.to_owned());
        assert_eq!(
            disagreeing(&[v("CBHU6394177"), v("CBHU6394182"), v("CBHU6394177")]),
            vec![false, true, false]
        );
        assert_eq!(disagreeing(&[v("1"), v("2")]), vec![true, true]);
        assert_eq!(
            disagreeing(&[v("1"), None, v("1")]),
            vec![false, false, false]
        );
        assert_eq!(disagreeing(&[]), Vec::<bool>::new());
    }

    #[test]
    fn typed_values_read_as_one_line() {
        let money =
            serde_json::json!({"kind": "money", "value": {"amount": "12.50", "currency": "EUR"}});
        assert_eq!(shown(&money), "12.50 EUR");
        assert_eq!(
            shown(&serde_json::json!({"kind": "weight", "value": {"kg": "3.5", "unit": "KGS"}})),
            "3.5 kg"
        );
        assert_eq!(shown(&serde_json::json!("text")), "text");
    }
}
