//! Workflow files (YAML a tenant uploads): parsed, validated and compiled by
//! `Workflow::from_yaml`, which must answer every input with a workflow or a typed error,
//! quickly, whatever aliases, nesting or patterns it holds.

use ironclad_extract::workflow::WorkflowSpec;
use ironclad_extract::{Workflow, WorkflowError};
use ironclad_fuzz::{config, config_scaled, damaged_text, soup, within};
use proptest::prelude::*;

pub(crate) const TRADE: &str = include_str!("../../../../workflows/trade.yaml");

const MINIMAL: &str = "name: tiny
version: 1
document_types:
  - id: invoice
    title: Invoice
    recognition:
      keywords: [{text: invoice, weight: 0.6}, {regex: 'inv\\s*no', weight: 0.4}]
      first_page: ['page 1 of']
    fields:
      - name: total
        parser: money
        patterns: ['total\\s*:\\s*(?P<value>[\\d.,]+)']
        labels: [total]
rules:
  - id: has_invoice
    template: REQUIRED_DOCUMENT
    params: {document_types: [invoice]}
    on_fail: REVIEW_REQUIRED
policy: {confidence_floor: 0.5}
";

/// YAML that makes parsers work: anchors and aliases, merges, tags, flow nesting, block
/// scalars, and the keys and values of the format.
const YAML_TOKENS: &[&[u8]] = &[
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"[*a, *a, *a, *a, *a, *a, *a, *a]",
    b"[[[[[[[[[[[[[[[[",
    b"{{{{{{{{",
    b"]]]]",
    b"!!binary ",
    b"!!str ",
    b"!<tag:yaml.org,2002:map> ",
    b"? ",
    b"|\n  ",
    b">-\n  ",
    b"\n- ",
    b"\n  - ",
    b": ",
    b"'",
    b"\"\\u",
    b"\t",
    b"~",
    b".nan",
    b"-.inf",
    b"1e400",
    b"18446744073709551616",
    b"-1",
    b"pattern: '(?:\\w{1000}){1000}'",
    b"pattern: '((((((((((a))))))))))*'",
    b"weight: ",
    b"parser: ",
    b"template: ",
    b"params: ",
    b"document_types: ",
    b"fields: ",
    b"keywords: ",
    b"shape: ",
    b"value_at: ",
    b"--- ",
    b"...",
    b"%YAML 1.2\n",
];

/// Whole-document pieces for workflows built from scratch.
const WORKFLOW_SOUP: &[&str] = &[
    "name: x\n",
    "version: 1\n",
    "version: -1\n",
    "languages: [en]\n",
    "document_types:\n",
    "  - id: a\n",
    "  - id: B\n",
    "    title: T\n",
    "    recognition:\n",
    "      keywords:\n",
    "        - {text: a, weight: 1}\n",
    "        - {regex: '(', weight: 0.5}\n",
    "      min_score: 2\n",
    "      margin: .nan\n",
    "    fields:\n",
    "      - name: f\n",
    "        parser: text\n",
    "        parser: date\n",
    "        parser: nope\n",
    "        patterns: ['(?P<value>x)']\n",
    "        patterns: ['[']\n",
    "        labels: [l]\n",
    "        shape: ['@@##']\n",
    "        required: true\n",
    "rules:\n",
    "  - id: r\n",
    "    template: EXACT_MATCH\n",
    "    params: {field: f, document_types: [a, a]}\n",
    "    on_fail: BLOCKED\n",
    "policy: {confidence_floor: 2}\n",
    "parse_hints: {date_order: day_first}\n",
    "&x ",
    "*x ",
    "<<: *x\n",
    "[",
    "]",
    "{",
    "}",
    "- ",
    ": ",
    "'",
    "\"",
    "\t",
];

fn seeds() -> Vec<String> {
    vec![TRADE.to_owned(), MINIMAL.to_owned()]
}

/// Parses within the time budget; an accepted workflow must be accepted again from its
/// spec as stored (JSON), with the same schema.
fn parse_checked(text: String) -> Result<(), TestCaseError> {
    let outcome = within("Workflow::from_yaml", move || {
        Workflow::from_yaml(&text).map(|w| {
            let stored = serde_json::to_value(w.spec()).map_err(|e| e.to_string());
            (w.schema(), stored)
        })
    });
    match outcome {
        Ok((schema, stored)) => {
            let stored = stored.map_err(|e| TestCaseError::fail(format!("spec to JSON: {e}")))?;
            let again = within("Workflow::from_spec", move || {
                serde_json::from_value::<WorkflowSpec>(stored)
                    .map_err(|e| e.to_string())
                    .and_then(|spec| Workflow::from_spec(spec).map_err(|e| e.to_string()))
                    .map(|w| w.schema())
            });
            prop_assert_eq!(
                again,
                Ok(schema),
                "an accepted workflow no longer loads from JSON"
            );
        }
        Err(WorkflowError::Invalid(issues)) => prop_assert!(!issues.is_empty()),
        Err(e) => prop_assert!(!e.to_string().is_empty()),
    }
    Ok(())
}

#[test]
fn seeds_are_valid() {
    for seed in seeds() {
        Workflow::from_yaml(&seed).expect("seed workflow loads");
    }
}

/// A chain of anchors under `rules` (kept as loose JSON, so every alias is expanded): each
/// level lists the previous one `fan` times.
fn alias_chain(depth: usize, fan: usize) -> String {
    let mut text =
        String::from("name: x\nversion: 1\ndocument_types: []\nrules:\n  - &a0 [x, x]\n");
    for level in 1..depth {
        let prev = format!("*a{}", level - 1);
        let list = vec![prev.as_str(); fan].join(", ");
        text.push_str(&format!("  - &a{level} [{list}]\n"));
    }
    text
}

/// "Billion laughs": nine levels of nine aliases would expand to 387 million nodes.
#[test]
fn alias_bomb_is_refused_quickly() {
    let text = alias_chain(10, 9);
    let answer = within("alias bomb", move || Workflow::from_yaml(&text).map(|_| ()));
    assert!(answer.is_err());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text(text in ".{0,512}") {
        parse_checked(text)?;
    }

    #[test]
    fn damaged_workflows(text in damaged_text(seeds(), YAML_TOKENS)) {
        parse_checked(text)?;
    }

    #[test]
    fn workflow_soup(text in soup(WORKFLOW_SOUP, 120)) {
        parse_checked(text)?;
    }
}

proptest! {
    #![proptest_config(config_scaled(4))]

    /// Aliases nested `depth` levels deep, `fan` to a level.
    #[test]
    fn alias_expansion_is_bounded(depth in 1usize..12, fan in 2usize..12) {
        parse_checked(alias_chain(depth, fan))?;
    }
}

/// An anchor of `n` scalars aliased `m` times under `rules`: `n × m` values from a file of
/// about `2n + 3m` bytes.
pub(crate) fn wide_reuse(n: usize, m: usize) -> String {
    format!(
        "name: x\nversion: 1\ndocument_types: []\nrules:\n  - &w [{}]\n  - [{}]\n",
        vec!["x"; n].join(", "),
        vec!["*w"; m].join(", ")
    )
}

/// Found while writing these properties: `serde_yaml` bounds alias *chains*, not one wide
/// anchor reused many times, so this 12 KB workflow built four million values (and a
/// 100 KB one would build six hundred million, tens of GiB).
#[test]
fn regression_wide_anchor_reused_many_times_is_refused_quickly() {
    let text = wide_reuse(2000, 2000);
    let answer = within("wide reuse", move || Workflow::from_yaml(&text).map(|_| ()));
    match answer {
        Err(WorkflowError::Syntax(message)) => assert!(message.contains("aliases"), "{message}"),
        other => panic!("expected a refusal naming the aliases, got {other:?}"),
    }
}
