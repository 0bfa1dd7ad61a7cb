//! Properties of the decision over random cases and rulesets drawn from the trade schema:
//! a passing rule never makes a decision worse, a failing BLOCKED rule always blocks, and the
//! evaluation depends on nothing but its inputs' content (not their order).
//!
//! Values come from small pools so documents often agree and often do not; confidences
//! straddle the 0.6 floor; a tenth of facts are missing or conflicting. Half the cases are
//! *clean* (every field present, confident, mostly agreeing), so that passing rules and READY
//! decisions are common enough for the properties to bite.

use proptest::prelude::*;
use serde_json::json;
use uuid::Uuid;

use super::*;
use crate::parse::{ParserKind, Value};
use crate::rules::facts::{DocumentFacts, FactInput};
use crate::rules::testkit::{container, date, dec, fact, kg, money, schema, text};
use crate::rules::RulesetSpec;

const TYPES: [&str; 4] = [
    "bill_of_lading",
    "commercial_invoice",
    "packing_list",
    "customs_declaration",
];
/// Fields every type declares, so cross-document rules can name any pair of types.
const SHARED: [&str; 5] = [
    "bl_number",
    "container_number",
    "package_count",
    "gross_weight",
    "invoice_number",
];

fn rank(s: DecisionStatus) -> u8 {
    match s {
        DecisionStatus::Ready => 0,
        DecisionStatus::ReviewRequired => 1,
        DecisionStatus::Blocked => 2,
    }
}

fn value(kind: ParserKind, i: usize) -> Value {
    let i = i % 3;
    match kind {
        ParserKind::Text => text(["INV-1", "inv 1", "INV-2"][i]),
        ParserKind::ContainerNumber => container(["MSCU1234566", "MSCU1234566", "TGHU7654321"][i]),
        ParserKind::Integer => Value::Integer([10, 10, 12][i]),
        ParserKind::Decimal => dec(["1.0", "1", "2"][i]),
        ParserKind::Weight => kg(["1000", "1010", "1500"][i]),
        ParserKind::Money => money(
            ["100.00", "100", "150"][i],
            [Some("USD"), None, Some("EUR")][i],
        ),
        ParserKind::Date => date(["2024-06-01", "2024-06-10", "2024-08-01"][i]),
    }
}

/// (field, value, confidence, flags) as indices, resolved against the document's type.
type RawFact = (usize, usize, usize, u8);
/// (type, facts, source, first page).
type RawDoc = (usize, Vec<RawFact>, u128, u32);

fn raw_doc() -> impl Strategy<Value = RawDoc> {
    (
        0usize..5,
        prop::collection::vec((0usize..16, 0usize..3, 0usize..4, 0u8..10), 0..6),
        0u128..3,
        0u32..3,
    )
}

fn build_docs(raw: &[RawDoc], clean: bool) -> Vec<DocumentFacts> {
    let schema = schema();
    raw.iter()
        .enumerate()
        .map(|(i, (t, facts, source, first))| {
            // Index 4 is an unclassified page range (no facts); a clean case has none.
            let t = if clean { t % TYPES.len() } else { *t };
            let document_type = TYPES.get(t).map(|t| (*t).to_owned());
            let fields: Vec<(&String, &ParserKind)> = document_type
                .as_ref()
                .and_then(|t| schema.document_types.get(t))
                .map(|f| f.iter().collect())
                .unwrap_or_default();
            let facts = if fields.is_empty() {
                Vec::new()
            } else if clean {
                // Every field, confident; values 0 and 1 of each pool agree for most kinds.
                fields
                    .iter()
                    .enumerate()
                    .map(|(k, (name, kind))| {
                        let v = facts.get(k).map_or(0, |f| f.1 % 2);
                        fact(name, value(**kind, v), 0.9)
                    })
                    .collect()
            } else {
                facts
                    .iter()
                    .map(|(f, v, c, flags)| {
                        let (name, kind) = fields[f % fields.len()];
                        let confidence = [0.3, 0.7, 0.95, 1.0][*c];
                        let mut fact: FactInput = fact(name, value(*kind, *v), confidence);
                        if *c == 3 {
                            fact.evidence.confidence = None;
                        }
                        fact.evidence.raw_text = (*v == 1).then(|| format!("printed {v}").into());
                        fact.conflict = *flags == 0;
                        if *flags == 1 {
                            fact.value = None;
                            fact.missing = true;
                        }
                        fact
                    })
                    .collect()
            };
            DocumentFacts {
                segment_id: Uuid::from_u128(i as u128 + 1),
                source_id: Uuid::from_u128(source << 96),
                document_type,
                first_page: *first,
                last_page: first + 1,
                facts,
            }
        })
        .collect()
}

/// (template, a, b, c, blocked) resolved into a rule that compiles against the schema.
type RawRule = (usize, usize, usize, usize, bool);

fn raw_rule() -> impl Strategy<Value = RawRule> {
    (0usize..7, 0usize..64, 0usize..64, 0usize..64, any::<bool>())
}

fn build_rule(id: &str, (template, a, b, c, blocked): RawRule) -> serde_json::Value {
    let t = |i: usize| TYPES[i % TYPES.len()];
    // Two or more distinct types starting at `a`.
    let types = |a: usize, n: usize| -> Vec<&str> { (0..n).map(|k| t(a + k)).collect() };
    let side = |t: &str, f: &str| json!({"document_type": t, "field": f});
    let (template, params) = match template {
        0 => (
            "REQUIRED_DOCUMENT",
            json!({"document_types": types(a, 1 + b % 4), "min_count": 1 + c % 2}),
        ),
        1 => {
            let mut fields = vec![SHARED[b % 5], SHARED[c % 5]];
            fields.dedup();
            (
                "FIELD_REQUIRED",
                json!({"document_type": t(a), "fields": fields}),
            )
        }
        2 => (
            "EXACT_MATCH",
            json!({"field": SHARED[b % 5], "document_types": types(a, 2 + c % 3)}),
        ),
        3 => (
            "EXACT_MATCH",
            json!({"left": side(t(a), SHARED[c % 5]), "right": side(t(b), SHARED[c % 5])}),
        ),
        4 => {
            let field = ["gross_weight", "package_count"][c % 2];
            let mut p = json!({"left": side(t(a), field), "right": side(t(b), field)});
            match c % 3 {
                0 => p["relative"] = json!(0.02),
                1 => p["absolute"] = json!(10),
                _ => {
                    p["relative"] = json!(0.5);
                    p["absolute"] = json!(0)
                }
            }
            if a % 5 == 0 {
                p = json!({
                    "left": side("commercial_invoice", "invoice_total"),
                    "right": side("customs_declaration", "declared_value"),
                    "absolute": 1.0
                });
            }
            ("NUMERIC_TOLERANCE", p)
        }
        5 => {
            let left = [
                ("bill_of_lading", "bl_date"),
                ("commercial_invoice", "invoice_date"),
            ][a % 2];
            let mut p = json!({"left": side(left.0, left.1),
                               "right": side("customs_declaration", "acceptance_date")});
            match b % 3 {
                0 => p["min_days"] = json!(0),
                1 => p["max_days"] = json!(20),
                _ => {
                    p["min_days"] = json!(-5);
                    p["max_days"] = json!(30)
                }
            }
            ("DATE_WINDOW", p)
        }
        _ => {
            let others: Vec<&str> = types(a + 1, 1 + b % 3);
            (
                "AUTHORITY_PRECEDENCE",
                json!({"field": SHARED[c % 5], "authority": t(a), "others": others}),
            )
        }
    };
    json!({
        "id": id, "template": template, "params": params,
        "on_fail": if blocked { "BLOCKED" } else { "REVIEW_REQUIRED" }
    })
}

fn ruleset(rules: &[RawRule], extra: Option<serde_json::Value>) -> CompiledRuleset {
    let mut list: Vec<serde_json::Value> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| build_rule(&format!("r{i}"), *r))
        .collect();
    list.extend(extra);
    let spec: RulesetSpec = serde_json::from_value(json!({ "rules": list })).expect("shape");
    spec.compile(&schema())
        .unwrap_or_else(|e| panic!("generated rules must compile: {e:?}"))
}

/// A deterministic shuffle driven by `seed` (xorshift), for documents and their facts.
fn shuffle<T>(items: &mut [T], seed: &mut u64) {
    for i in (1..items.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        items.swap(i, (*seed % (i as u64 + 1)) as usize);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_passing_rule_never_worsens_the_decision(
        rules in prop::collection::vec(raw_rule(), 0..6),
        extra in raw_rule(),
        docs in prop::collection::vec(raw_doc(), 0..8),
        clean in any::<bool>(),
    ) {
        let case = crate::rules::CaseFacts { documents: build_docs(&docs, clean) };
        let base = evaluate(&ruleset(&rules, None), &case);
        let ext = evaluate(&ruleset(&rules, Some(build_rule("extra", extra))), &case);
        let n = rules.len();
        // Rules do not see each other: the existing results are unchanged.
        prop_assert_eq!(&base.results[..n], &ext.results[..n]);
        // Not applicable is no finding either: neither may worsen the decision.
        if matches!(ext.results[n].outcome, RuleOutcome::Pass | RuleOutcome::NotApplicable) {
            prop_assert!(
                rank(ext.status) <= rank(base.status),
                "{} -> {} after adding a {} rule", base.summary, ext.summary, ext.results[n].outcome
            );
        }
    }

    #[test]
    fn a_failing_blocked_rule_always_blocks(
        rules in prop::collection::vec(raw_rule(), 0..8),
        docs in prop::collection::vec(raw_doc(), 0..8),
        clean in any::<bool>(),
    ) {
        let case = crate::rules::CaseFacts { documents: build_docs(&docs, clean) };
        let ev = evaluate(&ruleset(&rules, None), &case);
        let blocked = ev.results.iter().any(|r| {
            r.outcome == RuleOutcome::Fail && r.on_fail == Some(OnFail::Blocked)
        });
        prop_assert_eq!(blocked, ev.status == DecisionStatus::Blocked);
        let clean = ev.results.iter().all(|r| {
            matches!(r.outcome, RuleOutcome::Pass | RuleOutcome::NotApplicable)
        });
        prop_assert_eq!(clean, ev.status == DecisionStatus::Ready);

        // One more bill of lading than there is always fails; BLOCKED, it must block.
        let present = case.documents.iter()
            .filter(|d| d.document_type.as_deref() == Some("bill_of_lading")).count();
        let failing = json!({"id": "needs_more", "template": "REQUIRED_DOCUMENT",
            "params": {"document_types": ["bill_of_lading"], "min_count": present + 1},
            "on_fail": "BLOCKED"});
        let ev = evaluate(&ruleset(&rules, Some(failing)), &case);
        prop_assert_eq!(ev.results[rules.len()].outcome, RuleOutcome::Fail);
        prop_assert_eq!(ev.status, DecisionStatus::Blocked);
    }

    #[test]
    fn evaluation_ignores_the_order_of_documents_and_facts(
        rules in prop::collection::vec(raw_rule(), 0..8),
        docs in prop::collection::vec(raw_doc(), 0..8),
        seed in 1u64..,
        clean in any::<bool>(),
    ) {
        let compiled = ruleset(&rules, None);
        let case = crate::rules::CaseFacts { documents: build_docs(&docs, clean) };
        let first = evaluate(&compiled, &case);
        prop_assert_eq!(&first, &evaluate(&compiled, &case));
        let mut shuffled = case.clone();
        let mut seed = seed;
        shuffle(&mut shuffled.documents, &mut seed);
        for d in &mut shuffled.documents {
            shuffle(&mut d.facts, &mut seed);
        }
        prop_assert_eq!(first, evaluate(&compiled, &shuffled));
    }
}

/// Issue 24: differences OCR can explain never block.
///
/// An identifier (letters, digits, hyphens, slashes) is printed on one document; another
/// document carries a copy as OCR might read it: characters swapped within their confusion
/// class (`I 1 l | i ! L`, `O 0 D Q o`, `S 5 s`, `B 8`, `Z 2 z`, `G 6`), case changed,
/// hyphens and spaces added or dropped. Every identifier rule (EXACT_MATCH in both forms,
/// AUTHORITY_PRECEDENCE) blocks on failure. Whichever document holds the OCR copy, and however
/// the other was read, the decision is never BLOCKED. The same two values from text layers are
/// taken as printed: BLOCKED exactly when they differ and neither is a cut-off of the other.
mod ocr_misreadings {
    use super::*;
    use crate::page::ReadMethod;
    use crate::rules::ocr_confusion::CLASSES;
    use crate::rules::testkit::{doc, read_by};

    /// `original` as OCR might read it: per character, `op` picks what happens to it.
    fn ocr_copy(original: &str, ops: &[(u8, u8)]) -> String {
        let mut copy = String::with_capacity(original.len() * 2);
        for (i, c) in original.chars().enumerate() {
            let (op, pick) = ops.get(i).copied().unwrap_or((0, 0));
            match op % 6 {
                // Swapped for a member of its class (itself, maybe).
                0 | 1 => copy.push(
                    CLASSES
                        .iter()
                        .find(|k| k.contains(c))
                        .and_then(|k| k.chars().nth(usize::from(pick) % k.chars().count()))
                        .unwrap_or(c),
                ),
                2 => copy.push(c),
                3 => {
                    copy.push('-');
                    copy.push(c);
                }
                4 => {
                    copy.push(c);
                    copy.push(' ');
                }
                // A separator dropped; any other character read in the other case.
                _ if matches!(c, '-' | '/') => {}
                _ if c.is_ascii_uppercase() => copy.push(c.to_ascii_lowercase()),
                _ => copy.push(c.to_ascii_uppercase()),
            }
        }
        copy
    }

    fn method(i: u8) -> Option<ReadMethod> {
        [
            None,
            Some(ReadMethod::TextLayer),
            Some(ReadMethod::Ocr),
            Some(ReadMethod::Provider),
        ][usize::from(i % 4)]
    }

    /// Every identifier rule over `field`, each blocking on failure.
    fn identifier_rules(field: &str) -> CompiledRuleset {
        let side = |t: &str| json!({"document_type": t, "field": field});
        let rules = json!([
            {"id": "across", "template": "EXACT_MATCH", "on_fail": "BLOCKED",
             "params": {"field": field, "document_types":
                        ["commercial_invoice", "customs_declaration", "packing_list"]}},
            {"id": "cites", "template": "EXACT_MATCH", "on_fail": "BLOCKED",
             "params": {"left": side("customs_declaration"), "right": side("commercial_invoice")}},
            {"id": "authority", "template": "AUTHORITY_PRECEDENCE", "on_fail": "BLOCKED",
             "params": {"field": field, "authority": "commercial_invoice",
                        "others": ["customs_declaration", "packing_list"]}},
        ]);
        let spec: RulesetSpec = serde_json::from_value(json!({ "rules": rules })).expect("shape");
        spec.compile(&schema()).expect("identifier rules compile")
    }

    /// An invoice, a declaration and maybe a packing list, each holding `field` as printed
    /// and read the way given.
    fn case(
        field: &str,
        invoice: (&str, Option<ReadMethod>),
        declaration: (&str, Option<ReadMethod>),
        packing_list: Option<(&str, Option<ReadMethod>)>,
    ) -> crate::rules::CaseFacts {
        let documents = [
            ("commercial_invoice", 2, Some(invoice)),
            ("customs_declaration", 3, Some(declaration)),
            ("packing_list", 4, packing_list),
        ]
        .into_iter()
        .filter_map(|(t, n, held)| {
            let (printed, read) = held?;
            let value = if field == "container_number" {
                container(printed)
            } else {
                text(printed)
            };
            Some(DocumentFacts {
                facts: vec![read_by(field, value, printed, read)],
                ..doc(t, n)
            })
        })
        .collect();
        crate::rules::CaseFacts { documents }
    }

    /// The identifier as the rules compare it (README "How values compare").
    fn key(s: &str) -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    }

    /// One key a strict prefix or suffix of the other, under 70 % of its length.
    fn cut_off(a: &str, b: &str) -> bool {
        let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        !short.is_empty()
            && short.len() < long.len()
            && (short.len() as f64) < 0.7 * long.len() as f64
            && (long.starts_with(short) || long.ends_with(short))
    }

    fn explain(ev: &Evaluation) -> String {
        let lines: Vec<String> = ev
            .results
            .iter()
            .map(|r| format!("  {} {}: {}", r.rule_id, r.outcome, r.message))
            .collect();
        format!("{}\n{}", ev.summary, lines.join("\n"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn a_difference_ocr_can_explain_never_blocks(
            original in "[A-Za-z0-9/-]{1,16}",
            ops in prop::collection::vec((any::<u8>(), any::<u8>()), 16),
            containers in any::<bool>(),
            ocr_on_invoice in any::<bool>(),
            provider in any::<bool>(),
            other in any::<u8>(),
            third in prop::option::of(any::<u8>()),
        ) {
            let copy = ocr_copy(&original, &ops);
            let field = if containers { "container_number" } else { "invoice_number" };
            let rules = identifier_rules(field);
            let ocr = Some(if provider { ReadMethod::Provider } else { ReadMethod::Ocr });
            let (invoice, declaration) = if ocr_on_invoice {
                ((copy.as_str(), ocr), (original.as_str(), method(other)))
            } else {
                ((original.as_str(), method(other)), (copy.as_str(), ocr))
            };
            // A packing list, when there is one, holds the original too, read any way.
            let packing_list = third.map(|m| (original.as_str(), method(m)));
            let ev = evaluate(&rules, &case(field, invoice, declaration, packing_list));
            prop_assert_ne!(ev.status, DecisionStatus::Blocked, "{:?} vs {:?}: {}", original, copy, explain(&ev));

            // The same values, both printed in a text layer.
            let layer = Some(ReadMethod::TextLayer);
            let printed_case = case(field, (invoice.0, layer), (declaration.0, layer), None);
            let ev = evaluate(&rules, &printed_case);
            let (ka, kb) = (key(&original), key(&copy));
            let expected = if ka == kb {
                DecisionStatus::Ready
            } else if cut_off(&ka, &kb) {
                DecisionStatus::ReviewRequired
            } else {
                DecisionStatus::Blocked
            };
            prop_assert_eq!(ev.status, expected, "{:?} vs {:?}: {}", original, copy, explain(&ev));
        }
    }
}
