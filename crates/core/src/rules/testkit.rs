//! Builders shared by the rules tests: a trade-like schema, documents, facts and values.

use serde_json::json;
use uuid::Uuid;

use super::facts::{CaseFacts, DocumentFacts, Evidence, FactInput};
use super::spec::{CompiledRuleset, RulesetSpec, Schema};
use crate::page::ReadMethod;
use crate::parse::{Date, Decimal, ParserKind, Value};

/// The shipped trade workflow's document types and fields (see `workflows/trade.yaml`).
pub(crate) fn schema() -> Schema {
    use ParserKind::*;
    let shared = [
        ("bl_number", Text),
        ("container_number", ContainerNumber),
        ("package_count", Integer),
        ("gross_weight", Weight),
        ("invoice_number", Text),
    ];
    let types: [(&str, &[(&str, ParserKind)]); 4] = [
        ("bill_of_lading", &[("bl_date", Date)]),
        (
            "commercial_invoice",
            &[("invoice_date", Date), ("invoice_total", Money)],
        ),
        ("packing_list", &[("packing_list_number", Text)]),
        (
            "customs_declaration",
            &[
                ("declaration_number", Text),
                ("declared_value", Money),
                ("acceptance_date", Date),
            ],
        ),
    ];
    let mut schema = Schema::default();
    for (t, own) in types {
        let fields = shared
            .iter()
            .chain(own.iter())
            .map(|(f, k)| ((*f).to_owned(), *k))
            .collect();
        schema.document_types.insert(t.to_owned(), fields);
    }
    schema
}

/// A one-page document of type `t` in source `n` (whose short id prints as `n` in hex).
pub(crate) fn doc(t: &str, n: u128) -> DocumentFacts {
    DocumentFacts {
        segment_id: Uuid::from_u128(0xa000 + n),
        source_id: Uuid::from_u128(n << 96),
        document_type: Some(t.to_owned()),
        first_page: 0,
        last_page: 0,
        facts: Vec::new(),
    }
}

/// An unclassified page range.
pub(crate) fn unknown(n: u128, first: u32, last: u32) -> DocumentFacts {
    DocumentFacts {
        document_type: None,
        first_page: first,
        last_page: last,
        ..doc("x", n)
    }
}

pub(crate) fn fact(field: &str, value: Value, confidence: f64) -> FactInput {
    FactInput {
        field: field.to_owned(),
        value: Some(value.into()),
        evidence: Evidence {
            page: Some(0),
            confidence: Some(confidence),
            ..Evidence::default()
        },
        conflict: false,
        missing: false,
    }
}

/// `fact` as printed (`raw`), from a page read by `method` (`None`: entered by a person).
pub(crate) fn read_by(
    field: &str,
    value: Value,
    raw: &str,
    method: Option<ReadMethod>,
) -> FactInput {
    let mut f = fact(field, value, 0.9);
    f.evidence.raw_text = Some(raw.into());
    f.evidence.read_method = method;
    f
}

/// A fact that was looked for and not found.
pub(crate) fn missing(field: &str) -> FactInput {
    FactInput {
        field: field.to_owned(),
        value: None,
        evidence: Evidence::default(),
        conflict: false,
        missing: true,
    }
}

pub(crate) fn with(mut d: DocumentFacts, facts: &[(&str, Value, f64)]) -> DocumentFacts {
    d.facts
        .extend(facts.iter().map(|(f, v, c)| fact(f, v.clone(), *c)));
    d
}

pub(crate) fn facts(documents: Vec<DocumentFacts>) -> CaseFacts {
    CaseFacts { documents }
}

/// Compiles a `rules` list against [`schema`], with the default policy.
pub(crate) fn compile(rules: serde_json::Value) -> CompiledRuleset {
    let spec: RulesetSpec =
        serde_json::from_value(json!({ "rules": rules })).expect("ruleset shape");
    spec.compile(&schema())
        .unwrap_or_else(|e| panic!("ruleset does not compile: {e:?}"))
}

pub(crate) fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

pub(crate) fn dec(s: &str) -> Value {
    Value::Decimal(s.parse::<Decimal>().expect("decimal"))
}

pub(crate) fn money(amount: &str, currency: Option<&str>) -> Value {
    Value::Money {
        amount: amount.parse().expect("amount"),
        currency: currency.map(str::to_owned),
    }
}

pub(crate) fn kg(s: &str) -> Value {
    Value::Weight {
        kg: s.parse().expect("kg"),
        unit: "kg".to_owned(),
    }
}

pub(crate) fn date(s: &str) -> Value {
    Value::Date(s.parse::<Date>().expect("date"))
}

pub(crate) fn container(code: &str) -> Value {
    Value::ContainerNumber {
        code: code.to_owned(),
        check_digit_valid: true,
    }
}
