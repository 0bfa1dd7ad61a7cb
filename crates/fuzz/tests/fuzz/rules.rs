//! Rule parameters: a ruleset arrives as loose JSON (a workflow's `rules`/`policy`, or a
//! managed ruleset posted to the API) and is typed against the workflow's schema. Every input
//! gets a compiled ruleset or a list of issues with paths, quickly; a compiled ruleset
//! evaluates, and reads back from its stored form to the same rules.

use ironclad_core::rules::{evaluate, CaseFacts, RulesetSpec, Schema};
use ironclad_extract::Workflow;
use ironclad_fuzz::{config, damaged, within};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

const KEYS: &[&str] = &[
    "id",
    "template",
    "params",
    "on_fail",
    "severity",
    "description",
    "rules",
    "policy",
    "confidence_floor",
    "auto_approve_ready",
    "document_types",
    "document_type",
    "min_count",
    "fields",
    "field",
    "left",
    "right",
    "absolute",
    "relative",
    "min_days",
    "max_days",
    "authority",
    "others",
    "unit",
];

const WORDS: &[&str] = &[
    "REQUIRED_DOCUMENT",
    "FIELD_REQUIRED",
    "EXACT_MATCH",
    "NUMERIC_TOLERANCE",
    "DATE_WINDOW",
    "AUTHORITY_PRECEDENCE",
    "SAFEGUARD",
    "BLOCKED",
    "REVIEW_REQUIRED",
    "READY",
    "warning",
    "critical",
    "info",
    "bill_of_lading",
    "commercial_invoice",
    "packing_list",
    "customs_declaration",
    "gross_weight",
    "container_number",
    "invoice_number",
    "bl_date",
    "invoice_date",
    "declared_value",
    "invoice_total",
    "package_count",
    "acceptance_date",
    "safeguard_no_rules",
    "",
    "A",
    "a b",
    "0.02",
    "1e400",
    "-1",
    "NaN",
    "é",
    "\u{0}",
];

const TEMPLATES: &[&str] = &[
    "REQUIRED_DOCUMENT",
    "FIELD_REQUIRED",
    "EXACT_MATCH",
    "NUMERIC_TOLERANCE",
    "DATE_WINDOW",
    "AUTHORITY_PRECEDENCE",
    "SAFEGUARD",
];

/// The trade workflow's schema, compiled once (compiling its patterns dominates otherwise).
fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        Workflow::from_yaml(super::workflows::TRADE)
            .expect("the trade workflow loads")
            .schema()
    })
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Non-finite floats become null, as serde_json writes them.
        any::<f64>().prop_map(Value::from),
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(0.02),
            Just(1.0),
            Just(1e308),
            Just(5e-324)
        ]
        .prop_map(Value::from),
        select(WORDS).prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
        Just(Value::from("x".repeat(70))),
    ]
}

/// Any JSON, with the format's keys and words far more often than chance would give.
fn json_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 96, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(
                (
                    prop_oneof![select(KEYS).prop_map(String::from), ".{0,6}"],
                    inner
                ),
                0..6
            )
            .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A rule that is right in shape, with parameters that may be anything.
fn rule() -> impl Strategy<Value = Value> {
    let params =
        proptest::collection::vec((select(KEYS), json_value()), 0..5).prop_map(|entries| {
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
            )
        });
    (
        select(&["r", "r2", "rule_one", "Bad Id", ""][..]),
        select(TEMPLATES),
        prop_oneof![params, json_value()],
        select(&["BLOCKED", "REVIEW_REQUIRED", "nope"][..]),
        proptest::option::of(select(&["warning", "critical", "loud"][..])),
    )
        .prop_map(|(id, template, params, on_fail, severity)| {
            let mut rule =
                json!({"id": id, "template": template, "params": params, "on_fail": on_fail});
            if let Some(severity) = severity {
                rule["severity"] = json!(severity);
            }
            rule
        })
}

/// Compiles within the budget and checks the answer: issues have paths; a compiled ruleset
/// evaluates on an empty case and compiles again from its stored form.
fn compile_checked(rules: Option<Value>, policy: Option<Value>) -> Result<(), TestCaseError> {
    let outcome = within("RulesetSpec::compile_json", move || {
        let schema = schema();
        RulesetSpec::compile_json(rules.as_ref(), policy.as_ref(), schema).map(|compiled| {
            let _ = evaluate(&compiled, &CaseFacts::default());
            let stored = serde_json::to_value(compiled.spec()).map_err(|e| e.to_string());
            let again = stored
                .and_then(|v| serde_json::from_value::<RulesetSpec>(v).map_err(|e| e.to_string()));
            let again = again.and_then(|spec| {
                spec.compile(schema)
                    .map(|c| c.spec() == compiled.spec())
                    .map_err(|issues| format!("{issues:?}"))
            });
            again
        })
    });
    match outcome {
        Ok(again) => prop_assert_eq!(again, Ok(true), "a compiled ruleset does not read back"),
        Err(issues) => {
            prop_assert!(!issues.is_empty());
            for issue in &issues {
                prop_assert!(
                    issue.path.starts_with("rules") || issue.path.starts_with("policy"),
                    "{issue}"
                );
            }
        }
    }
    Ok(())
}

/// The trade workflow's own rules, as a managed ruleset is posted.
fn managed_seed() -> Vec<u8> {
    let workflow = Workflow::from_yaml(super::workflows::TRADE).expect("loads");
    serde_json::to_vec_pretty(&workflow.ruleset().spec()).expect("serializes")
}

const JSON_TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"null",
    b"1e400",
    b"-0",
    b"18446744073709551616",
    b"\"params\": ",
    b"\"template\": \"EXACT_MATCH\"",
    b"\"left\": ",
    b"\"relative\": ",
    b"\"min_days\": ",
    b"\"document_types\": [",
    b"\\u0000",
    b"\\ud800",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_json(rules in json_value(), policy in proptest::option::of(json_value())) {
        compile_checked(Some(rules), policy)?;
    }

    #[test]
    fn rules_with_any_parameters(
        rules in proptest::collection::vec(rule(), 0..12),
        floor in proptest::option::of(scalar()),
    ) {
        let policy = floor.map(|f| json!({"confidence_floor": f}));
        compile_checked(Some(Value::Array(rules)), policy)?;
    }

    /// A managed ruleset as the API receives it: JSON text, damaged.
    #[test]
    fn damaged_managed_rulesets(bytes in damaged(vec![managed_seed()], JSON_TOKENS)) {
        let outcome = within("managed ruleset", move || {
            serde_json::from_slice::<RulesetSpec>(&bytes)
                .map_err(|e| e.to_string())
                .map(|spec| spec.compile(schema()).map(|_| ()).map_err(|issues| issues.len()))
        });
        if let Ok(Err(issues)) = outcome {
            prop_assert!(issues > 0);
        }
    }
}
