//! Rulesets as written (in a workflow file or a managed ruleset), and their validation
//! against the document types and fields a workflow declares.
//!
//! A ruleset is tenant input that later decides whether a shipment is BLOCKED, so nothing
//! reaches the engine unchecked: [`RulesetSpec::compile`] turns the loose JSON parameters of
//! every rule into a typed check and reports every problem at once, each with its path
//! (`rules[2].params.left.field: …`), so the author fixes the file in one pass.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::names::Names;
use super::params::{self, Check};
use super::RuleTemplate;
use crate::parse::ParserKind;
use crate::review::{FourEyesAction, ReviewSla};
use crate::spelled_enum;

spelled_enum! {
    /// What the decision becomes when a rule fails.
    pub enum OnFail: "rule failure outcome" {
        /// The case is BLOCKED: a business finding, such as a container that differs between
        /// the bill of lading and the customs declaration.
        Blocked = "BLOCKED",
        /// A person must look; the case is not blocked outright.
        ReviewRequired = "REVIEW_REQUIRED",
    }
}

spelled_enum! {
    /// How much a rule matters to the people reading the decision (informative: the
    /// decision follows `on_fail`, never the severity).
    pub enum Severity: "rule severity" {
        /// Worth knowing.
        Info = "info",
        /// Worth a look.
        Warning = "warning",
        /// Must be settled before the goods move.
        Critical = "critical",
    }
}

/// One rule as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Stable identifier (`[a-z][a-z0-9_]*`, at most 64 characters), unique in its ruleset;
    /// rule results and the decision summary name the rule by it.
    pub id: String,
    /// How the rule checks the documents.
    pub template: RuleTemplate,
    /// The template's parameters (see `workflows/README.md`); typed by [`RulesetSpec::compile`].
    pub params: serde_json::Value,
    /// What the decision becomes when the rule fails.
    pub on_fail: OnFail,
    /// How much the rule matters (informative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// What the rule is for, for the reviewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// How the decision treats evidence and outcomes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// A fact whose confidence is below this asks for review instead of deciding anything:
    /// a value read at 40 % must not block a shipment, nor let one through. In `[0, 1]`.
    #[serde(default = "default_confidence_floor")]
    pub confidence_floor: f64,
    /// Whether a READY decision is resolved without a person (applied by the runtime; the
    /// evaluation itself ignores it).
    #[serde(default)]
    pub auto_approve_ready: bool,
    /// Actions a second reviewer must confirm before they take effect (`[OVERRIDE,
    /// CORRECTION]`): the review waits in AWAITING_SECOND until another person confirms or
    /// declines. Left out when empty, so earlier snapshots read back unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub four_eyes: Vec<FourEyesAction>,
    /// How long a decision may wait for a person before the queue shows it overdue and
    /// `ironclad_reviews_overdue` counts it (`4h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_sla: Option<ReviewSla>,
}

impl Policy {
    /// Whether `action` waits for a second reviewer under this policy.
    pub fn needs_second(&self, action: FourEyesAction) -> bool {
        self.four_eyes.contains(&action)
    }
}

/// 0.6: the extractor scores a clean text-layer value near 1 and a value whose locale or
/// OCR reading is in doubt near 0.5, so the floor sits between the two.
fn default_confidence_floor() -> f64 {
    0.6
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            confidence_floor: default_confidence_floor(),
            auto_approve_ready: false,
            four_eyes: Vec::new(),
            review_sla: None,
        }
    }
}

/// A ruleset as written: rules plus decision policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesetSpec {
    /// The rules, evaluated and reported in this order.
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    /// The decision policy.
    #[serde(default)]
    pub policy: Policy,
}

/// What a workflow declares, as rules need it: document type id → field name → parser kind.
/// Built by the caller (the extract crate builds it from a workflow file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    /// Document type id → field name → the parser kind of its values.
    pub document_types: BTreeMap<String, BTreeMap<String, ParserKind>>,
}

/// One problem found while compiling a ruleset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleIssue {
    /// Where, from the ruleset's root: `rules[2].params.left.field`, `policy.confidence_floor`.
    pub path: String,
    /// What is wrong and, where it helps, what to write instead.
    pub message: String,
}

impl fmt::Display for RuleIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A validated ruleset, every rule's parameters typed against the schema.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CompiledRuleset {
    /// The decision policy.
    pub policy: Policy,
    /// The rules, in the order written.
    pub rules: Vec<CompiledRule>,
    /// The document types and fields the rules name (and the schema's), numbered.
    #[serde(skip)]
    pub(crate) names: Names,
}

/// One validated rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompiledRule {
    /// The rule as written.
    pub spec: RuleSpec,
    /// The typed form of `spec.params`; derived, so it is not serialized.
    #[serde(skip)]
    pub(crate) check: Check,
    /// `spec.id`, shared by every result of the rule.
    #[serde(skip)]
    pub(crate) id: Arc<str>,
}

impl CompiledRuleset {
    /// The ruleset as written, for storing or showing.
    pub fn spec(&self) -> RulesetSpec {
        RulesetSpec {
            rules: self.rules.iter().map(|r| r.spec.clone()).collect(),
            policy: self.policy.clone(),
        }
    }

    /// Whether there are no rules (the `safeguard_no_rules` safeguard then asks for review).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

impl RulesetSpec {
    /// Most rules in one ruleset: each runs on every decision, and a tenant's file must not
    /// be able to make one decision cost seconds.
    pub const MAX_RULES: usize = 200;
    /// Most document types one rule may name.
    pub const MAX_DOCUMENT_TYPES_PER_RULE: usize = 32;
    /// Longest rule id, in characters.
    pub const MAX_ID_CHARS: usize = 64;
    /// Longest description, in characters.
    pub const MAX_DESCRIPTION_CHARS: usize = 2000;

    /// Whether the ruleset has no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Validates every rule against `schema` and types its parameters, or lists every problem.
    pub fn compile(&self, schema: &Schema) -> Result<CompiledRuleset, Vec<RuleIssue>> {
        let mut issues = Issues::default();
        let indexed: Vec<(usize, &RuleSpec)> = self.rules.iter().enumerate().collect();
        let mut names = Names::of(schema);
        let rules = compile_rules(&indexed, self.rules.len(), schema, &mut names, &mut issues);
        check_policy(&self.policy, &mut issues);
        issues.into_result(CompiledRuleset {
            policy: self.policy.clone(),
            rules,
            names,
        })
    }

    /// Reads and compiles a ruleset kept as loose JSON, as a workflow file holds it: `rules`
    /// (a list, or absent) and `policy` (an object, or absent).
    ///
    /// Unlike deserializing a whole [`RulesetSpec`], a rule that cannot be read (an unknown
    /// key, a missing `on_fail`) is reported at its own path (`rules[3]`) and the other rules
    /// are still checked, so one typo does not hide every other problem.
    pub fn compile_json(
        rules: Option<&serde_json::Value>,
        policy: Option<&serde_json::Value>,
        schema: &Schema,
    ) -> Result<CompiledRuleset, Vec<RuleIssue>> {
        use serde_json::Value;
        let mut issues = Issues::default();
        let mut parsed = Vec::new();
        let mut total = 0;
        match rules {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                total = items.len();
                for (i, item) in items.iter().enumerate().take(Self::MAX_RULES) {
                    match RuleSpec::deserialize(item) {
                        Ok(rule) => parsed.push((i, rule)),
                        Err(e) => issues.push(format!("rules[{i}]"), e.to_string()),
                    }
                }
            }
            Some(other) => issues.push(
                "rules",
                format!(
                    "expected a list of rules, found {}",
                    params::json_kind(other)
                ),
            ),
        }
        let policy = match policy {
            None | Some(Value::Null) => Policy::default(),
            Some(value) => Policy::deserialize(value).unwrap_or_else(|e| {
                issues.push("policy", e.to_string());
                Policy::default()
            }),
        };
        let indexed: Vec<(usize, &RuleSpec)> = parsed.iter().map(|(i, r)| (*i, r)).collect();
        let mut names = Names::of(schema);
        let rules = compile_rules(&indexed, total, schema, &mut names, &mut issues);
        check_policy(&policy, &mut issues);
        issues.into_result(CompiledRuleset {
            policy,
            rules,
            names,
        })
    }
}

/// Compiles the rules that could be read, each with its index in the file (`total` counts
/// every rule written, read or not, for the bound).
fn compile_rules(
    rules: &[(usize, &RuleSpec)],
    total: usize,
    schema: &Schema,
    names: &mut Names,
    issues: &mut Issues,
) -> Vec<CompiledRule> {
    if total > RulesetSpec::MAX_RULES {
        issues.push(
            "rules",
            format!(
                "{total} rules; at most {} are allowed (the rest are not checked)",
                RulesetSpec::MAX_RULES
            ),
        );
    }
    let mut first_index: HashMap<&str, usize> = HashMap::new();
    let mut compiled = Vec::with_capacity(rules.len());
    for &(i, rule) in rules.iter().take(RulesetSpec::MAX_RULES) {
        let path = format!("rules[{i}]");
        if !is_identifier(&rule.id) {
            issues.push(
                format!("{path}.id"),
                format!(
                    "{:?} is not a rule id: use [a-z][a-z0-9_]*, at most {} characters",
                    rule.id,
                    RulesetSpec::MAX_ID_CHARS
                ),
            );
        }
        if rule.id.starts_with("safeguard_") {
            // The built-in safeguards' results share the decision's id space.
            issues.push(
                format!("{path}.id"),
                format!(
                    "{:?}: ids starting with safeguard_ are reserved for the built-in safeguards",
                    rule.id
                ),
            );
        }
        if let Some(&first) = first_index.get(rule.id.as_str()) {
            issues.push(
                format!("{path}.id"),
                format!(
                    "duplicate rule id {:?} (first used by rules[{first}])",
                    rule.id
                ),
            );
        } else {
            first_index.insert(&rule.id, i);
        }
        if let Some(d) = &rule.description {
            if d.chars().count() > RulesetSpec::MAX_DESCRIPTION_CHARS {
                issues.push(
                    format!("{path}.description"),
                    format!(
                        "longer than {} characters",
                        RulesetSpec::MAX_DESCRIPTION_CHARS
                    ),
                );
            }
        }
        if rule.template == RuleTemplate::Safeguard {
            issues.push(
                format!("{path}.template"),
                "SAFEGUARD rules are built in and always run; they cannot be written",
            );
            continue;
        }
        let check = params::compile(
            rule.template,
            &rule.params,
            schema,
            names,
            &format!("{path}.params"),
            issues,
        );
        if let Some(check) = check {
            compiled.push(CompiledRule {
                id: Arc::from(rule.id.as_str()),
                spec: rule.clone(),
                check,
            });
        }
    }
    compiled
}

fn check_policy(policy: &Policy, issues: &mut Issues) {
    let floor = policy.confidence_floor;
    if !(floor.is_finite() && (0.0..=1.0).contains(&floor)) {
        issues.push(
            "policy.confidence_floor",
            format!("{floor} is outside [0, 1]"),
        );
    }
    for (i, action) in policy.four_eyes.iter().enumerate() {
        if policy.four_eyes[..i].contains(action) {
            issues.push(
                format!("policy.four_eyes[{i}]"),
                format!("{action} is listed twice"),
            );
        }
    }
    if policy.auto_approve_ready && policy.needs_second(FourEyesAction::Approve) {
        issues.push(
            "policy.four_eyes",
            "APPROVE cannot need a second reviewer while auto_approve_ready resolves READY \
             decisions without any: drop one of the two",
        );
    }
}

/// `[a-z][a-z0-9_]*`, at most [`RulesetSpec::MAX_ID_CHARS`]: the same shape as document type
/// ids and field names, so ids read alike in files, SQL and URLs.
fn is_identifier(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && id.len() <= RulesetSpec::MAX_ID_CHARS
}

/// Collects every problem rather than stopping at the first.
#[derive(Default)]
pub(crate) struct Issues(Vec<RuleIssue>);

impl Issues {
    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(RuleIssue {
            path: path.into(),
            message: message.into(),
        });
    }

    fn into_result<T>(self, ok: T) -> Result<T, Vec<RuleIssue>> {
        if self.0.is_empty() {
            Ok(ok)
        } else {
            Err(self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::schema;
    use serde_json::json;

    fn issues(spec: serde_json::Value) -> Vec<String> {
        let spec: RulesetSpec = serde_json::from_value(spec).expect("spec shape");
        match spec.compile(&schema()) {
            Ok(_) => panic!("expected issues"),
            Err(list) => list.iter().map(ToString::to_string).collect(),
        }
    }

    fn rule(id: &str, template: &str, params: serde_json::Value) -> serde_json::Value {
        json!({"id": id, "template": template, "params": params, "on_fail": "BLOCKED"})
    }

    #[test]
    fn a_valid_ruleset_compiles_with_defaults() {
        let spec: RulesetSpec = serde_json::from_value(json!({
            "rules": [rule("docs", "REQUIRED_DOCUMENT", json!({"document_types": ["bill_of_lading"]}))]
        }))
        .unwrap();
        let compiled = spec.compile(&schema()).unwrap();
        assert_eq!(compiled.policy, Policy::default());
        assert_eq!(compiled.policy.confidence_floor, 0.6);
        assert_eq!(compiled.rules.len(), 1);
        assert_eq!(compiled.spec(), spec);
        assert!(!spec.is_empty() && RulesetSpec::default().is_empty());
    }

    #[test]
    fn ids_must_be_identifiers_and_unique() {
        let long = "a".repeat(65);
        let docs = json!({"document_types": ["bill_of_lading"]});
        assert_eq!(
            issues(json!({"rules": [
                rule("Docs", "REQUIRED_DOCUMENT", docs.clone()),
                rule("docs", "REQUIRED_DOCUMENT", docs.clone()),
                rule("docs", "REQUIRED_DOCUMENT", docs.clone()),
                rule(&long, "REQUIRED_DOCUMENT", docs),
            ]})),
            [
                "rules[0].id: \"Docs\" is not a rule id: use [a-z][a-z0-9_]*, at most 64 characters",
                "rules[2].id: duplicate rule id \"docs\" (first used by rules[1])",
                &format!("rules[3].id: {long:?} is not a rule id: use [a-z][a-z0-9_]*, at most 64 characters"),
            ]
        );
    }

    #[test]
    fn safeguard_ids_are_reserved() {
        // A rule named like a safeguard would collide with its result row in the decision.
        for id in crate::rules::SAFEGUARD_IDS
            .iter()
            .copied()
            .chain(["safeguard_mine"])
        {
            let docs = json!({"document_types": ["bill_of_lading"]});
            assert_eq!(
                issues(json!({"rules": [rule(id, "REQUIRED_DOCUMENT", docs)]})),
                [format!(
                    "rules[0].id: {id:?}: ids starting with safeguard_ are reserved for the built-in safeguards"
                )]
            );
        }
    }

    #[test]
    fn safeguards_cannot_be_written_and_the_floor_is_bounded() {
        assert_eq!(
            issues(json!({
                "rules": [rule("mine", "SAFEGUARD", json!({}))],
                "policy": {"confidence_floor": 1.5}
            })),
            [
                "rules[0].template: SAFEGUARD rules are built in and always run; they cannot be written",
                "policy.confidence_floor: 1.5 is outside [0, 1]",
            ]
        );
    }

    #[test]
    fn four_eyes_and_the_review_sla_are_checked_like_the_other_policy_keys() {
        let docs = json!({"document_types": ["bill_of_lading"]});
        let ok = RulesetSpec::compile_json(
            Some(&json!([rule("docs", "REQUIRED_DOCUMENT", docs.clone())])),
            Some(&json!({"four_eyes": ["OVERRIDE", "CORRECTION"], "review_sla": "4h"})),
            &schema(),
        )
        .expect("valid");
        assert!(ok.policy.needs_second(FourEyesAction::Correction));
        assert!(!ok.policy.needs_second(FourEyesAction::Reject));
        assert_eq!(
            ok.policy.review_sla.as_ref().map(ReviewSla::seconds),
            Some(4 * 3600)
        );
        // Written back as written, and left out when unset (earlier snapshots unchanged).
        let written = serde_json::to_value(&ok.policy).expect("serializes");
        assert_eq!(written["four_eyes"], json!(["OVERRIDE", "CORRECTION"]));
        assert_eq!(written["review_sla"], "4h");
        let plain = serde_json::to_value(Policy::default()).expect("serializes");
        assert_eq!(
            plain,
            json!({"confidence_floor": 0.6, "auto_approve_ready": false})
        );

        let refused = |policy: serde_json::Value| -> Vec<String> {
            RulesetSpec::compile_json(
                Some(&json!([rule("docs", "REQUIRED_DOCUMENT", docs.clone())])),
                Some(&policy),
                &schema(),
            )
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect()
        };
        assert_eq!(
            refused(json!({"four_eyes": ["OVERRIDE", "OVERRIDE"]})),
            ["policy.four_eyes[1]: OVERRIDE is listed twice"]
        );
        let unknown = refused(json!({"four_eyes": ["OVERIDE"]}));
        assert!(
            unknown.len() == 1 && unknown[0].contains("unknown four-eyes action \"OVERIDE\""),
            "{unknown:?}"
        );
        let sla = refused(json!({"review_sla": "4 hours"}));
        assert!(
            sla.len() == 1 && sla[0].contains("\"4 hours\" is not a review SLA"),
            "{sla:?}"
        );
        assert_eq!(
            refused(json!({"four_eyes": ["APPROVE"], "auto_approve_ready": true})),
            [
                "policy.four_eyes: APPROVE cannot need a second reviewer while auto_approve_ready \
              resolves READY decisions without any: drop one of the two"
            ]
        );
    }

    #[test]
    fn rule_and_document_type_counts_are_bounded() {
        let many: Vec<_> = (0..201)
            .map(|i| {
                rule(
                    &format!("r{i}"),
                    "REQUIRED_DOCUMENT",
                    json!({"document_types": ["bill_of_lading"]}),
                )
            })
            .collect();
        assert_eq!(
            issues(json!({ "rules": many })),
            ["rules: 201 rules; at most 200 are allowed (the rest are not checked)"]
        );
        let types = vec!["bill_of_lading"; 33];
        let found = issues(
            json!({"rules": [rule("r", "REQUIRED_DOCUMENT", json!({"document_types": types}))]}),
        );
        assert_eq!(
            found[0],
            "rules[0].params.document_types: 33 document types; at most 32 are allowed"
        );
    }

    #[test]
    fn unreadable_rules_are_reported_at_their_index_and_the_rest_still_checked() {
        let rules = json!([
            {"id": "a", "template": "EXACT_MATCH", "params": {}, "on_failure": "BLOCKED"},
            rule("b", "REQUIRED_DOCUMENT", json!({"document_types": ["bill_of_ladin"]})),
            {"id": "c", "template": "NOPE", "params": {}, "on_fail": "BLOCKED"},
        ]);
        let policy = json!({"confidence_floor": 0.5, "auto_resolve_ready": true});
        let err = RulesetSpec::compile_json(Some(&rules), Some(&policy), &schema()).unwrap_err();
        let paths: Vec<&str> = err.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "rules[0]",
                "rules[2]",
                "policy",
                "rules[1].params.document_types[0]"
            ]
        );
        assert!(
            err[0].message.contains("unknown field `on_failure`"),
            "{}",
            err[0]
        );
        assert!(
            err[1].message.contains("unknown rule template \"NOPE\""),
            "{}",
            err[1]
        );
        assert!(err[2].message.contains("auto_resolve_ready"), "{}", err[2]);

        let not_a_list = json!({"a": 1});
        let err = RulesetSpec::compile_json(Some(&not_a_list), None, &schema()).unwrap_err();
        assert_eq!(
            err[0].to_string(),
            "rules: expected a list of rules, found an object"
        );

        let empty = RulesetSpec::compile_json(None, None, &schema()).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.policy, Policy::default());
    }

    #[test]
    fn unknown_types_fields_and_keys_are_named_by_path() {
        let cases = [
            (
                rule("r", "EXACT_MATCH", json!({"field": "container_numbr", "document_types": ["bill_of_lading", "packing_list"]})),
                "rules[0].params.field: none of the listed document types has a field \"container_numbr\"",
            ),
            (
                rule("r", "EXACT_MATCH", json!({"field": "bl_date", "document_types": ["bill_of_lading", "packing_list"]})),
                "rules[0].params.document_types[1]: document type packing_list has no field \"bl_date\"; it declares bl_number, container_number, gross_weight, invoice_number, package_count, packing_list_number",
            ),
            (
                rule("r", "EXACT_MATCH", json!({"field": "bl_number", "document_types": ["bill_of_lading"]})),
                "rules[0].params.document_types: name at least 2 document types",
            ),
            (
                rule("r", "EXACT_MATCH", json!({"left": {"document_type": "bill_of_lading", "field": "container_number"}, "right": {"document_type": "commercial_invoice", "field": "invoice_date"}})),
                "rules[0].params.right.field: invoice_date on commercial_invoice is date, which cannot be compared with container_number on bill_of_lading (container_number)",
            ),
            (
                rule("r", "EXACT_MATCH", json!({"left": {"document_type": "bill_of_lading", "field": "bl_number"}})),
                "rules[0].params.right: required: {document_type, field}",
            ),
            (
                rule("r", "FIELD_REQUIRED", json!({"document_type": "bill_of_lading", "fields": ["bl_number", "nope"]})),
                "rules[0].params.fields[1]: document type bill_of_lading has no field \"nope\"; it declares bl_date, bl_number, container_number, gross_weight, invoice_number, package_count",
            ),
            (
                rule("r", "FIELD_REQUIRED", json!({"document_type": "invoice", "field": "bl_number"})),
                "rules[0].params.document_type: unknown document type \"invoice\"; the workflow declares bill_of_lading, commercial_invoice, customs_declaration, packing_list",
            ),
            (
                rule("r", "FIELD_REQUIRED", json!({"document_type": "bill_of_lading"})),
                "rules[0].params: give `field` or `fields`",
            ),
            (
                rule("r", "NUMERIC_TOLERANCE", json!({"left": {"document_type": "bill_of_lading", "field": "gross_weight"}, "right": {"document_type": "packing_list", "field": "gross_weight"}, "relative": "2%"})),
                "rules[0].params.relative: expected a number, found a string",
            ),
            (
                rule("r", "DATE_WINDOW", json!({"left": {"document_type": "bill_of_lading", "field": "bl_number"}, "right": {"document_type": "customs_declaration", "field": "acceptance_date"}, "max_days": 3})),
                "rules[0].params.left.field: bl_number on bill_of_lading is text; DATE_WINDOW compares date fields",
            ),
            (
                rule("r", "AUTHORITY_PRECEDENCE", json!({"authority": "commercial_invoice", "others": ["packing_list"]})),
                "rules[0].params.field: required",
            ),
            (
                rule("r", "REQUIRED_DOCUMENT", json!({"document_types": ["packing_list", "packing_list"], "min": 1})),
                "rules[0].params.min: unknown key; REQUIRED_DOCUMENT takes document_types, min_count",
            ),
        ];
        for (rule, expected) in cases {
            let found = issues(json!({ "rules": [rule] }));
            assert!(
                found.iter().any(|i| i == expected),
                "{expected}\nnot in {found:#?}"
            );
        }
        let found = issues(
            json!({"rules": [rule("r", "REQUIRED_DOCUMENT", json!({"document_types": ["packing_list", "packing_list"]}))]}),
        );
        assert_eq!(
            found,
            ["rules[0].params.document_types[1]: packing_list is listed twice"]
        );
    }

    #[test]
    fn tolerances_keep_the_decimal_written() {
        let spec: RulesetSpec =
            serde_json::from_value(json!({"rules": [rule("w", "NUMERIC_TOLERANCE", json!({
                "left": {"document_type": "bill_of_lading", "field": "gross_weight"},
                "right": {"document_type": "packing_list", "field": "gross_weight"},
                "relative": 0.02, "absolute": 1e-7
            }))]}))
            .unwrap();
        let compiled = spec.compile(&schema()).unwrap();
        let Check::Pair {
            test: params::PairTest::Tolerance {
                absolute, relative, ..
            },
            ..
        } = &compiled.rules[0].check
        else {
            panic!("{:?}", compiled.rules[0].check);
        };
        assert_eq!(relative.unwrap().exact.to_string(), "0.02");
        assert_eq!(absolute.unwrap().exact.to_string(), "0.0000001");
    }

    #[test]
    fn an_all_bad_ruleset_reports_every_problem_at_once() {
        let found = issues(json!({
            "rules": [
                rule("BAD", "REQUIRED_DOCUMENT", json!({"document_types": [], "min_count": 0})),
                rule("f", "FIELD_REQUIRED", json!({"document_type": "bill_of_lading", "field": "nope", "fields": ["x"]})),
                rule("e", "EXACT_MATCH", json!({"field": "container_number", "document_types": ["bill_of_lading"], "left": {"document_type": "x", "field": "y"}})),
                rule("n", "NUMERIC_TOLERANCE", json!({"left": {"document_type": "bill_of_lading", "field": "bl_number"}, "right": {"document_type": "packing_list", "field": "gross_weight"}, "absolute": -1})),
                rule("d", "DATE_WINDOW", json!({"left": {"document_type": "bill_of_lading", "field": "bl_date"}, "right": {"document_type": "customs_declaration", "field": "acceptance_date"}, "min_days": 5, "max_days": 2, "extra": true})),
                rule("a", "AUTHORITY_PRECEDENCE", json!({"field": "invoice_number", "authority": "commercial_invoice", "others": ["commercial_invoice", "ghost"]})),
                rule("s", "SAFEGUARD", json!({})),
                rule("t", "NUMERIC_TOLERANCE", json!("not an object")),
                rule("w", "NUMERIC_TOLERANCE", json!({"left": {"document_type": "bill_of_lading", "field": "gross_weight"}, "right": {"document_type": "commercial_invoice", "field": "invoice_total"}})),
                rule("x", "DATE_WINDOW", json!({"left": {"document_type": "bill_of_lading", "field": "bl_date", "page": 1}, "right": {"document_type": "commercial_invoice", "field": "invoice_date"}, "min_days": "5"})),
            ],
            "policy": {"confidence_floor": -0.1}
        }));
        let expected = [
            "rules[0].id: \"BAD\" is not a rule id: use [a-z][a-z0-9_]*, at most 64 characters",
            "rules[0].params.document_types: name at least one document type",
            "rules[0].params.min_count: must be at least 1",
            "rules[1].params: give either `field` or `fields`, not both",
            "rules[2].params: give either {field, document_types} or {left, right}, not both",
            "rules[3].params.absolute: must be at least 0",
            "rules[3].params.left.field: bl_number on bill_of_lading is text; NUMERIC_TOLERANCE compares integer, decimal, money or weight fields",
            "rules[4].params.extra: unknown key; DATE_WINDOW takes left, right, min_days, max_days",
            "rules[4].params.min_days: min_days (5) exceeds max_days (2)",
            "rules[5].params.others[0]: commercial_invoice is the authority; list only the other document types",
            "rules[5].params.others[1]: unknown document type \"ghost\"; the workflow declares bill_of_lading, commercial_invoice, customs_declaration, packing_list",
            "rules[6].template: SAFEGUARD rules are built in and always run; they cannot be written",
            "rules[7].params: expected an object with keys left, right, absolute, relative; found a string",
            "rules[8].params: give `absolute`, `relative` or both",
            "rules[8].params.right.field: invoice_total on commercial_invoice is money, which cannot be compared with gross_weight on bill_of_lading (weight)",
            "rules[9].params.min_days: invalid type: string \"5\", expected i64",
            "rules[9].params.left.page: unknown key; a field reference takes document_type, field",
            "policy.confidence_floor: -0.1 is outside [0, 1]",
        ];
        assert_eq!(found, expected, "{found:#?}");
    }
}
