//! Which rules decide a case, and how two ruleset versions differ.
//!
//! A case is decided by its tenant's ACTIVE managed ruleset for the case's workflow when there
//! is one, else by the rules written in the workflow file it was read under. A managed ruleset
//! is validated against that workflow's document types and fields; one that no longer fits
//! (the case was read under an older workflow version) is not applied half-way: the case is
//! decided with no rules, which the `safeguard_no_rules` safeguard turns into a review, and
//! the problem is logged.

use crate::compiler::ReadingCompiler;
use crate::workflows::CompiledWorkflow;
use ironclad_core::rules::{CompiledRuleset, Policy, RuleIssue, RulesetSpec, Schema};
use serde::Serialize;
use std::collections::BTreeMap;
use uuid::Uuid;

/// The rules chosen for a case.
#[derive(Debug, Clone)]
pub struct ChosenRules {
    /// Compiled rules and policy.
    pub ruleset: CompiledRuleset,
    /// The managed ruleset applied (id, version), or `None` for the workflow's own rules.
    pub managed: Option<(Uuid, i32)>,
    /// Why the expected rules could not be applied, if they could not.
    pub problem: Option<String>,
}

/// A ruleset with no rules and the default policy.
pub fn no_rules() -> CompiledRuleset {
    let empty = RulesetSpec {
        rules: Vec::new(),
        policy: Policy::default(),
    };
    // An empty ruleset has nothing that can be invalid; the fallback keeps this total anyway.
    empty
        .compile(&Schema {
            document_types: BTreeMap::new(),
        })
        .unwrap_or_else(|_| CompiledRuleset::default())
}

/// Parses and validates a managed ruleset's `{rules, policy}` against `workflow`. An empty
/// ruleset is refused: activating it would silently send every case to review.
pub fn compile_managed(
    workflow: &CompiledWorkflow,
    spec: &serde_json::Value,
) -> Result<CompiledRuleset, Vec<RuleIssue>> {
    let parsed: RulesetSpec = serde_json::from_value(spec.clone()).map_err(|e| {
        vec![RuleIssue {
            path: "ruleset".into(),
            message: e.to_string(),
        }]
    })?;
    if parsed.rules.is_empty() {
        return Err(vec![RuleIssue {
            path: "rules".into(),
            message: "a ruleset needs at least one rule".into(),
        }]);
    }
    parsed.compile(workflow.schema())
}

/// The rules for a case read under `workflow`, given the tenant's active ruleset.
pub fn choose(
    workflow: Option<&CompiledWorkflow>,
    active: Option<&(Uuid, i32, serde_json::Value)>,
) -> ChosenRules {
    match (workflow, active) {
        (Some(w), Some((id, version, spec))) => match compile_managed(w, spec) {
            Ok(ruleset) => ChosenRules {
                ruleset,
                managed: Some((*id, *version)),
                problem: None,
            },
            Err(issues) => ChosenRules {
                ruleset: no_rules(),
                managed: Some((*id, *version)),
                problem: Some(format!(
                    "active ruleset version {version} does not fit this case's workflow: {}",
                    issues
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                )),
            },
        },
        (Some(w), None) => ChosenRules {
            ruleset: w.ruleset().clone(),
            managed: None,
            problem: None,
        },
        (None, _) => ChosenRules {
            ruleset: no_rules(),
            managed: None,
            problem: Some("the case has no workflow".into()),
        },
    }
}

/// Validates a managed ruleset against a workflow stored as YAML, compiled with `compiler`;
/// `Err` lists every problem.
pub fn validate_for_yaml(
    compiler: &dyn ReadingCompiler,
    workflow_yaml: &str,
    spec: &serde_json::Value,
) -> Result<CompiledRuleset, Vec<RuleIssue>> {
    let workflow = compiler.compile_workflow(workflow_yaml).map_err(|e| {
        vec![RuleIssue {
            path: "workflow".into(),
            message: format!("the workflow no longer parses: {e}"),
        }]
    })?;
    compile_managed(&workflow, spec)
}

/// How ruleset `after` differs from `before`, rule by rule (by id) and in policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RulesetDiff {
    /// Rules only in `after`.
    pub added: Vec<serde_json::Value>,
    /// Rules only in `before`.
    pub removed: Vec<serde_json::Value>,
    /// Rules in both whose definition changed.
    pub changed: Vec<RuleChange>,
    /// The policy before and after, if it changed.
    pub policy: Option<(serde_json::Value, serde_json::Value)>,
}

/// One rule that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleChange {
    /// Its id.
    pub id: String,
    /// Before.
    pub before: serde_json::Value,
    /// After.
    pub after: serde_json::Value,
}

/// Compares two `{rules, policy}` documents as stored.
pub fn diff(before: &serde_json::Value, after: &serde_json::Value) -> RulesetDiff {
    let rules = |v: &serde_json::Value| -> BTreeMap<String, serde_json::Value> {
        v.get("rules")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
            .map(|r| {
                let id = r
                    .get("id")
                    .and_then(|i| i.as_str())
                    .unwrap_or("")
                    .to_owned();
                (id, r.clone())
            })
            .collect()
    };
    let (b, a) = (rules(before), rules(after));
    let policy = |v: &serde_json::Value| v.get("policy").cloned().unwrap_or_default();
    let (pb, pa) = (policy(before), policy(after));
    RulesetDiff {
        added: a
            .iter()
            .filter(|(id, _)| !b.contains_key(*id))
            .map(|(_, r)| r.clone())
            .collect(),
        removed: b
            .iter()
            .filter(|(id, _)| !a.contains_key(*id))
            .map(|(_, r)| r.clone())
            .collect(),
        changed: a
            .iter()
            .filter_map(|(id, r)| {
                b.get(id).filter(|old| *old != r).map(|old| RuleChange {
                    id: id.clone(),
                    before: old.clone(),
                    after: r.clone(),
                })
            })
            .collect(),
        policy: (pb != pa).then_some((pb, pa)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_names_added_removed_changed_rules_and_policy() {
        let before = json!({"rules": [{"id": "a", "on_fail": "BLOCKED"}, {"id": "b"}],
                            "policy": {"confidence_floor": 0.6}});
        let after = json!({"rules": [{"id": "a", "on_fail": "REVIEW_REQUIRED"}, {"id": "c"}],
                           "policy": {"confidence_floor": 0.7}});
        let d = diff(&before, &after);
        assert_eq!(d.added, vec![json!({"id": "c"})]);
        assert_eq!(d.removed, vec![json!({"id": "b"})]);
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].id, "a");
        assert!(d.policy.is_some());
        assert_eq!(
            diff(&after, &after),
            RulesetDiff {
                added: vec![],
                removed: vec![],
                changed: vec![],
                policy: None
            }
        );
    }
}
