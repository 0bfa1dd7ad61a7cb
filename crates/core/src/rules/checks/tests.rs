//! Each template on the cases that matter: pass, fail, not applicable, a missing value, a
//! value below the floor, and (where several documents meet) ambiguity. Sources are built so
//! their short ids print as `00000001`, `00000002`…; pages print 1-based.

use serde_json::json;

use crate::rules::evaluate::{evaluate, RuleResult};
use crate::rules::facts::{DocumentFacts, FactInput};
use crate::rules::testkit::{
    compile, container, date, doc, fact, facts, kg, missing, money, text, with,
};
use crate::rules::{RuleOutcome, RuleTemplate};
use crate::DecisionStatus;

fn rule(template: &str, params: serde_json::Value) -> serde_json::Value {
    json!({"id": "r", "template": template, "params": params, "on_fail": "BLOCKED"})
}

/// The rule's result (the first; safeguards follow).
fn check(rule: serde_json::Value, docs: Vec<DocumentFacts>) -> RuleResult {
    let ev = evaluate(&compile(json!([rule])), &facts(docs));
    ev.results.into_iter().next().expect("one result per rule")
}

fn assert_result(r: &RuleResult, outcome: RuleOutcome, message: &str) {
    assert_eq!(
        (r.outcome, r.message.as_str()),
        (outcome, message),
        "{r:#?}"
    );
}

/// A fact with the text as printed on the page.
fn printed(field: &str, value: crate::parse::Value, raw: &str, confidence: f64) -> FactInput {
    let mut f = fact(field, value, confidence);
    f.evidence.raw_text = Some(raw.into());
    f
}

fn bl(n: u128) -> DocumentFacts {
    doc("bill_of_lading", n)
}
fn ci(n: u128) -> DocumentFacts {
    doc("commercial_invoice", n)
}
fn pl(n: u128) -> DocumentFacts {
    doc("packing_list", n)
}
fn cd(n: u128) -> DocumentFacts {
    doc("customs_declaration", n)
}

fn push(mut d: DocumentFacts, f: FactInput) -> DocumentFacts {
    d.facts.push(f);
    d
}

mod required_document {
    use super::*;

    fn rule3(min_count: u32) -> serde_json::Value {
        rule(
            "REQUIRED_DOCUMENT",
            json!({"document_types": ["bill_of_lading", "commercial_invoice"], "min_count": min_count}),
        )
    }

    #[test]
    fn passes_when_every_type_is_present_and_lists_the_documents_found() {
        let r = check(rule3(1), vec![ci(2), bl(1)]);
        assert_result(
            &r,
            RuleOutcome::Pass,
            "present: bill_of_lading ×1, commercial_invoice ×1",
        );
        assert_eq!(r.template, RuleTemplate::RequiredDocument);
        let found: Vec<(&str, &str, Option<u32>)> = r
            .values
            .iter()
            .map(|v| (v.document_type.as_ref(), v.field.as_ref(), v.evidence.page))
            .collect();
        assert_eq!(
            found,
            [
                ("bill_of_lading", "", Some(0)),
                ("commercial_invoice", "", Some(0))
            ]
        );
        assert_eq!(r.values[0].evidence.source_id, Some(bl(1).source_id));
    }

    #[test]
    fn fails_naming_each_type_short_of_its_count() {
        let r = check(rule3(2), vec![bl(1), bl(2), ci(3)]);
        assert_result(
            &r,
            RuleOutcome::Fail,
            "missing: commercial_invoice (1 of 2)",
        );
        let r = check(rule3(1), vec![pl(1)]);
        assert_result(
            &r,
            RuleOutcome::Fail,
            "missing: bill_of_lading (0 of 1), commercial_invoice (0 of 1)",
        );
        assert!(r.values.is_empty());
    }

    #[test]
    fn counts_documents_whatever_their_values_say() {
        // Presence is about documents: an empty or doubtful document still counts (the
        // safeguards flag it).
        let doubtful = with(bl(1), &[("bl_number", text("X"), 0.1)]);
        let r = check(rule3(1), vec![doubtful, ci(2)]);
        assert_eq!(r.outcome, RuleOutcome::Pass);
    }
}

mod field_required {
    use super::*;

    fn rule_fields() -> serde_json::Value {
        rule(
            "FIELD_REQUIRED",
            json!({"document_type": "bill_of_lading", "fields": ["bl_number", "container_number"]}),
        )
    }

    #[test]
    fn passes_when_every_document_has_every_field() {
        let d = with(
            bl(1),
            &[
                ("container_number", container("MSCU1234566"), 0.9),
                ("bl_number", text("MAEU1"), 0.9),
            ],
        );
        let r = check(rule_fields(), vec![d.clone()]);
        assert_result(
            &r,
            RuleOutcome::Pass,
            "bill_of_lading (source 00000001, p. 1) has bl_number, container_number",
        );
        assert_eq!(r.values.len(), 2);
        assert_eq!(&*r.values[0].field, "bl_number");
        assert_eq!(r.values[0].value.as_deref(), Some(&text("MAEU1")));
        let r = check(
            rule_fields(),
            vec![
                d.clone(),
                DocumentFacts {
                    segment_id: uuid::Uuid::from_u128(9),
                    ..d
                },
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Pass,
            "all 2 bill_of_lading documents have bl_number, container_number",
        );
    }

    #[test]
    fn fails_on_a_missing_value_with_the_document_as_evidence() {
        let d = push(
            with(bl(1), &[("bl_number", text("MAEU1"), 0.9)]),
            missing("container_number"),
        );
        let r = check(rule_fields(), vec![d]);
        assert_result(
            &r,
            RuleOutcome::Fail,
            "container_number is missing on bill_of_lading (source 00000001, p. 1)",
        );
        let gap = &r.values[1];
        assert_eq!(
            (gap.field.as_ref(), &gap.value),
            ("container_number", &None)
        );
        assert_eq!(gap.evidence.source_id, Some(bl(1).source_id));
        assert_eq!(gap.evidence.page, Some(0));
        // The single-field form reads the same.
        let r = check(
            rule(
                "FIELD_REQUIRED",
                json!({"document_type": "bill_of_lading", "field": "bl_number"}),
            ),
            vec![bl(1)],
        );
        assert_result(
            &r,
            RuleOutcome::Fail,
            "bl_number is missing on bill_of_lading (source 00000001, p. 1)",
        );
    }

    #[test]
    fn is_not_applicable_without_a_document_of_the_type() {
        let r = check(rule_fields(), vec![ci(2)]);
        assert_result(&r, RuleOutcome::NotApplicable, "no bill_of_lading document");
    }

    #[test]
    fn asks_for_review_below_the_floor_or_on_a_conflict() {
        let low = with(
            bl(1),
            &[
                ("bl_number", text("MAEU1"), 0.9),
                ("container_number", container("MSCU1234566"), 0.4),
            ],
        );
        let r = check(rule_fields(), vec![low]);
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "bill_of_lading (source 00000001, p. 1) container_number \"MSCU1234566\" is below the confidence floor (0.40 < 0.6)",
        );
        let mut conflicted = fact("bl_number", text("MAEU1"), 0.9);
        conflicted.conflict = true;
        let d = push(
            with(
                bl(1),
                &[("container_number", container("MSCU1234566"), 0.9)],
            ),
            conflicted,
        );
        let r = check(rule_fields(), vec![d]);
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "bill_of_lading (source 00000001, p. 1) bl_number \"MAEU1\" has conflicting readings",
        );
    }
}

mod exact_match_across {
    use super::*;

    fn across() -> serde_json::Value {
        rule(
            "EXACT_MATCH",
            json!({"field": "container_number", "document_types": ["bill_of_lading", "commercial_invoice", "customs_declaration"]}),
        )
    }

    fn with_container(d: DocumentFacts, raw: &str, code: &str, confidence: f64) -> DocumentFacts {
        push(
            d,
            printed("container_number", container(code), raw, confidence),
        )
    }

    #[test]
    fn passes_when_every_document_agrees_as_an_identifier() {
        let r = check(
            across(),
            vec![
                with_container(cd(3), "MSCU 123456-6", "MSCU1234566", 0.9),
                with_container(bl(1), "MSCU1234566", "MSCU1234566", 0.95),
                with_container(ci(2), "mscu 1234566", "MSCU1234566", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Pass,
            "container_number agrees on 3 documents: \"MSCU1234566\"",
        );
        let order: Vec<&str> = r.values.iter().map(|v| v.document_type.as_ref()).collect();
        assert_eq!(
            order,
            [
                "bill_of_lading",
                "commercial_invoice",
                "customs_declaration"
            ]
        );
        assert_eq!(
            r.values[2].evidence.raw_text.as_deref(),
            Some("MSCU 123456-6")
        );
    }

    #[test]
    fn fails_naming_each_value_and_where_it_was_printed() {
        let r = check(
            across(),
            vec![
                with_container(bl(1), "MSCU1234566", "MSCU1234566", 0.95),
                with_container(ci(2), "MSCU 1234566", "MSCU1234566", 0.9),
                with_container(cd(3), "TGHU 765432-1", "TGHU7654321", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Fail,
            "container_number disagrees: \"MSCU1234566\" on bill_of_lading (source 00000001, p. 1), \
             commercial_invoice (source 00000002, p. 1); \"TGHU 765432-1\" on customs_declaration (source 00000003, p. 1)",
        );
    }

    #[test]
    fn a_confident_contradiction_fails_even_beside_a_doubtful_value() {
        let r = check(
            across(),
            vec![
                with_container(bl(1), "MSCU1234566", "MSCU1234566", 0.95),
                with_container(ci(2), "MSCU1234566", "MSCU1234566", 0.3),
                with_container(cd(3), "TGHU7654321", "TGHU7654321", 0.9),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::Fail, "{}", r.message);
    }

    #[test]
    fn is_not_applicable_without_two_documents_to_compare() {
        let r = check(across(), vec![pl(4)]);
        assert_result(
            &r,
            RuleOutcome::NotApplicable,
            "no bill_of_lading, commercial_invoice or customs_declaration document",
        );
        let r = check(
            across(),
            vec![with_container(bl(1), "MSCU1234566", "MSCU1234566", 0.9)],
        );
        assert_result(
            &r,
            RuleOutcome::NotApplicable,
            "only bill_of_lading (source 00000001, p. 1) carries container_number; nothing to compare it with",
        );
    }

    #[test]
    fn a_missing_or_doubtful_value_asks_for_review() {
        let r = check(
            across(),
            vec![
                with_container(bl(1), "MSCU1234566", "MSCU1234566", 0.9),
                ci(2),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "container_number is missing on commercial_invoice (source 00000002, p. 1)",
        );
        assert_eq!(r.values[1].value, None);
        let r = check(
            across(),
            vec![
                with_container(bl(1), "MSCU1234566", "MSCU1234566", 0.9),
                with_container(ci(2), "MSCU1234566", "MSCU1234566", 0.5),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "commercial_invoice (source 00000002, p. 1) container_number \"MSCU1234566\" is below the confidence floor (0.50 < 0.6)",
        );
    }
}

mod truncated_readings {
    use super::*;

    fn inv(d: DocumentFacts, raw: &str, confidence: f64) -> DocumentFacts {
        push(d, printed("invoice_number", text(raw), raw, confidence))
    }

    fn across() -> serde_json::Value {
        rule(
            "EXACT_MATCH",
            json!({"field": "invoice_number", "document_types": ["commercial_invoice", "customs_declaration"]}),
        )
    }

    #[test]
    fn a_cut_short_reading_asks_for_review_in_every_identifier_rule() {
        // The demo: OCR split `Invoice No.: DPI-2404-118` and one document read `DPI`.
        let docs = || vec![inv(ci(2), "DPI-2404-118", 0.97), inv(cd(3), "DPI", 0.91)];
        let r = check(across(), docs());
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "commercial_invoice (source 00000002, p. 1) invoice_number \"DPI-2404-118\" vs \
             customs_declaration (source 00000003, p. 1) invoice_number \"DPI\": one reading looks cut short",
        );
        let pair = rule(
            "EXACT_MATCH",
            json!({"left": {"document_type": "customs_declaration", "field": "invoice_number"},
                   "right": {"document_type": "commercial_invoice", "field": "invoice_number"}}),
        );
        let r = check(pair, docs());
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "customs_declaration (source 00000003, p. 1) invoice_number \"DPI\" does not match \
             commercial_invoice (source 00000002, p. 1) invoice_number \"DPI-2404-118\": one reading looks cut short",
        );
        let authority = rule(
            "AUTHORITY_PRECEDENCE",
            json!({"field": "invoice_number", "authority": "commercial_invoice",
                   "others": ["customs_declaration"]}),
        );
        let r = check(authority, docs());
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "customs_declaration (source 00000003, p. 1) invoice_number \"DPI\": one reading looks cut short",
        );
        // The whole case is not BLOCKED by it.
        let ev = evaluate(&compile(json!([across()])), &facts(docs()));
        assert_eq!(ev.status, DecisionStatus::ReviewRequired, "{}", ev.summary);
    }

    #[test]
    fn values_that_genuinely_differ_still_fail() {
        let docs = || {
            vec![
                inv(ci(2), "DPI-2404-118", 0.97),
                inv(cd(3), "DPI-2404-811", 0.91),
            ]
        };
        assert_eq!(check(across(), docs()).outcome, RuleOutcome::Fail);
        let authority = rule(
            "AUTHORITY_PRECEDENCE",
            json!({"field": "invoice_number", "authority": "commercial_invoice",
                   "others": ["customs_declaration"]}),
        );
        assert_eq!(check(authority, docs()).outcome, RuleOutcome::Fail);
        // A truncated third reading does not excuse two full ones that disagree.
        let mut three = docs();
        three.push(inv(pl(4), "DPI", 0.9));
        let r = check(
            rule(
                "EXACT_MATCH",
                json!({"field": "invoice_number",
                       "document_types": ["commercial_invoice", "customs_declaration", "packing_list"]}),
            ),
            three,
        );
        assert_eq!(r.outcome, RuleOutcome::Fail, "{}", r.message);
    }
}

/// Issue 24: an amount OCR read cut short (a stamp over the rest of it) asks for review in
/// NUMERIC_TOLERANCE, however far off it looks; from text layers, or when the digits are
/// another amount's, the rule still fails.
mod numbers_cut_short {
    use super::*;
    use crate::page::ReadMethod::{self, Ocr, TextLayer};
    use crate::rules::testkit::read_by;

    fn value_rule() -> serde_json::Value {
        rule(
            "NUMERIC_TOLERANCE",
            json!({"left": {"document_type": "commercial_invoice", "field": "invoice_total"},
                   "right": {"document_type": "customs_declaration", "field": "declared_value"},
                   "absolute": 1.0}),
        )
    }

    fn docs(
        (total, read_total): (&str, Option<ReadMethod>),
        (declared, read_declared): (&str, Option<ReadMethod>),
    ) -> Vec<DocumentFacts> {
        let amount = |raw: &str| -> String {
            raw.chars()
                .filter(|c| c.is_ascii_digit() || *c == '.')
                .collect()
        };
        vec![
            push(
                ci(2),
                read_by(
                    "invoice_total",
                    money(&amount(total), Some("USD")),
                    total,
                    read_total,
                ),
            ),
            push(
                cd(3),
                read_by(
                    "declared_value",
                    money(&amount(declared), Some("USD")),
                    declared,
                    read_declared,
                ),
            ),
        ]
    }

    #[test]
    fn an_amount_read_cut_short_asks_for_review() {
        let r = check(
            value_rule(),
            docs(("USD 42", Some(Ocr)), ("USD 42444.36", Some(TextLayer))),
        );
        assert_eq!(r.outcome, RuleOutcome::ReviewRequired, "{}", r.message);
        assert!(
            r.message
                .contains("one reading looks cut short: USD 42 vs USD 42444.36"),
            "{}",
            r.message
        );
    }

    #[test]
    fn from_text_layers_or_between_other_amounts_it_still_fails() {
        let text = check(
            value_rule(),
            docs(
                ("USD 42", Some(TextLayer)),
                ("USD 42444.36", Some(TextLayer)),
            ),
        );
        assert_eq!(text.outcome, RuleOutcome::Fail, "{}", text.message);
        // 900.00 off: a real gap, whatever read it.
        let real = check(
            value_rule(),
            docs(("USD 39904.00", Some(Ocr)), ("USD 39004.00", Some(Ocr))),
        );
        assert_eq!(real.outcome, RuleOutcome::Fail, "{}", real.message);
        // Ten times more: nearly every digit is there, another amount.
        let tenfold = check(
            value_rule(),
            docs(("USD 1000.00", Some(Ocr)), ("USD 100.00", Some(Ocr))),
        );
        assert_eq!(tenfold.outcome, RuleOutcome::Fail, "{}", tenfold.message);
    }
}

/// Issue 24: differences OCR can explain never block. Two identifiers that differ only where
/// OCR confuses characters, one of them read by OCR (or a provider), ask for review in every
/// identifier rule; read from text layers, they still fail.
mod ocr_misreadings {
    use super::*;
    use crate::page::ReadMethod::{self, Ocr, Provider, TextLayer};
    use crate::rules::testkit::read_by;

    fn inv(d: DocumentFacts, raw: &str, method: Option<ReadMethod>) -> DocumentFacts {
        push(d, read_by("invoice_number", text(raw), raw, method))
    }

    fn across() -> serde_json::Value {
        rule(
            "EXACT_MATCH",
            json!({"field": "invoice_number", "document_types": ["commercial_invoice", "customs_declaration"]}),
        )
    }

    fn cites() -> serde_json::Value {
        rule(
            "EXACT_MATCH",
            json!({"left": {"document_type": "customs_declaration", "field": "invoice_number"},
                   "right": {"document_type": "commercial_invoice", "field": "invoice_number"}}),
        )
    }

    fn authority() -> serde_json::Value {
        rule(
            "AUTHORITY_PRECEDENCE",
            json!({"field": "invoice_number", "authority": "commercial_invoice",
                   "others": ["customs_declaration"]}),
        )
    }

    /// A value as printed, and how its page was read.
    type Held<'a> = (&'a str, Option<ReadMethod>);

    /// An invoice holding `a` and a declaration holding `b`.
    fn docs((a, read_a): Held<'_>, (b, read_b): Held<'_>) -> Vec<DocumentFacts> {
        vec![inv(ci(2), a, read_a), inv(cd(3), b, read_b)]
    }

    /// Each identifier rule's result over [`docs`]: across, cites, authority.
    fn each_rule(a: Held<'_>, b: Held<'_>) -> [RuleResult; 3] {
        [across(), cites(), authority()].map(|r| check(r, docs(a, b)))
    }

    /// [`docs`], the declaration's value read with confidence `c`.
    fn docs_unsure(a: Held<'_>, b: Held<'_>, c: f64) -> Vec<DocumentFacts> {
        let mut d = docs(a, b);
        for f in &mut d[1].facts {
            f.evidence.confidence = Some(c);
        }
        d
    }

    #[test]
    fn an_identifier_ocr_cut_short_asks_for_review_in_every_identifier_rule() {
        // stamp-04: a RECEIVED stamp over `505` of the declaration's `CLE/2024/7505`.
        let [across_r, cites_r, authority_r] = each_rule(
            ("CLE/2024/7505", Some(TextLayer)),
            ("CLE/2024/7", Some(Ocr)),
        );
        for r in [&across_r, &cites_r, &authority_r] {
            assert_eq!(r.outcome, RuleOutcome::ReviewRequired, "{}", r.message);
            assert!(
                r.message.contains("one reading looks cut short"),
                "{}",
                r.message
            );
        }
        // From text layers it is what the documents say; one character short is another
        // identifier, whatever read it.
        for (a, b) in [
            (
                ("CLE/2024/7505", Some(TextLayer)),
                ("CLE/2024/7", Some(TextLayer)),
            ),
            (
                ("CLE/2024/7505", Some(TextLayer)),
                ("CLE/2024/750", Some(Ocr)),
            ),
        ] {
            for r in each_rule(a, b) {
                assert_eq!(r.outcome, RuleOutcome::Fail, "{}", r.message);
            }
        }
    }

    #[test]
    fn one_digit_ocr_read_unsure_asks_for_review_and_a_sure_one_blocks() {
        // fax-02: `INV2562755` on the invoice, `INV2662755` read off the faxed declaration.
        let (invoice, faxed) = (("INV2562755", Some(TextLayer)), ("INV2662755", Some(Ocr)));
        for rule in [across(), cites(), authority()] {
            let unsure = check(rule.clone(), docs_unsure(invoice, faxed, 0.70));
            assert_eq!(
                unsure.outcome,
                RuleOutcome::ReviewRequired,
                "{}",
                unsure.message
            );
            assert!(
                unsure.message.contains(
                    "readings differ in one digit, read by OCR unsure of it: INV2562755 vs INV2662755"
                ) || unsure.message.contains(
                    "readings differ in one digit, read by OCR unsure of it: INV2662755 vs INV2562755"
                ),
                "{}",
                unsure.message
            );
            // Read sure of it, or from text layers, or two digits apart: a contradiction.
            let sure = check(rule.clone(), docs_unsure(invoice, faxed, 0.95));
            assert_eq!(sure.outcome, RuleOutcome::Fail, "{}", sure.message);
            let text = check(
                rule.clone(),
                docs_unsure(invoice, ("INV2662755", Some(TextLayer)), 0.70),
            );
            assert_eq!(text.outcome, RuleOutcome::Fail, "{}", text.message);
            let two = check(rule, docs_unsure(invoice, ("INV2662765", Some(Ocr)), 0.70));
            assert_eq!(two.outcome, RuleOutcome::Fail, "{}", two.message);
        }
    }

    #[test]
    fn a_confusion_read_by_ocr_asks_for_review_in_every_identifier_rule() {
        // The issue's dossier: OCR read `1NV-2026740` on the declaration.
        let (invoice, declaration) = (("INV-2026740", Some(TextLayer)), ("1NV-2026740", Some(Ocr)));
        let [across_r, cites_r, authority_r] = each_rule(invoice, declaration);
        assert_result(
            &across_r,
            RuleOutcome::ReviewRequired,
            "commercial_invoice (source 00000002, p. 1) invoice_number \"INV-2026740\" vs \
             customs_declaration (source 00000003, p. 1) invoice_number \"1NV-2026740\": \
             readings differ only where OCR confuses characters: INV-2026740 vs 1NV-2026740",
        );
        assert_result(
            &cites_r,
            RuleOutcome::ReviewRequired,
            "customs_declaration (source 00000003, p. 1) invoice_number \"1NV-2026740\" does not match \
             commercial_invoice (source 00000002, p. 1) invoice_number \"INV-2026740\": \
             readings differ only where OCR confuses characters: 1NV-2026740 vs INV-2026740",
        );
        assert_result(
            &authority_r,
            RuleOutcome::ReviewRequired,
            "customs_declaration (source 00000003, p. 1) invoice_number \"1NV-2026740\": \
             readings differ only where OCR confuses characters: 1NV-2026740 vs INV-2026740",
        );
        let named = |id: &str, mut r: serde_json::Value| {
            r["id"] = json!(id);
            r
        };
        let all = json!([
            named("across", across()),
            named("cites", cites()),
            named("authority", authority())
        ]);
        let ev = evaluate(&compile(all), &facts(docs(invoice, declaration)));
        assert_eq!(ev.status, DecisionStatus::ReviewRequired, "{}", ev.summary);
        // The result shows how each value was read.
        let methods: Vec<_> = ev.results[0]
            .values
            .iter()
            .map(|v| v.evidence.read_method)
            .collect();
        assert_eq!(methods, [Some(TextLayer), Some(Ocr)]);
    }

    #[test]
    fn either_side_may_be_the_ocr_one_and_a_provider_counts_as_ocr() {
        for (left, right) in [
            (Some(Ocr), None),
            (None, Some(Ocr)),
            (Some(Provider), Some(TextLayer)),
            (Some(Ocr), Some(Provider)),
        ] {
            for r in each_rule(("INV-2O26740", left), ("lNV 2026740", right)) {
                assert_eq!(
                    r.outcome,
                    RuleOutcome::ReviewRequired,
                    "{left:?} {right:?}: {}",
                    r.message
                );
                assert!(
                    r.message.ends_with(
                        "readings differ only where OCR confuses characters: lNV 2026740 vs INV-2O26740"
                    ) || r.message.ends_with(
                        "readings differ only where OCR confuses characters: INV-2O26740 vs lNV 2026740"
                    ),
                    "{}",
                    r.message
                );
            }
        }
    }

    #[test]
    fn text_layer_values_that_differ_still_fail() {
        // Two text layers (or values a person entered) are taken as printed: the documents
        // really say different things.
        for (left, right) in [
            (Some(TextLayer), Some(TextLayer)),
            (None, None),
            (Some(TextLayer), None),
        ] {
            let (invoice, declaration) = (("INV-2026740", left), ("1NV-2026740", right));
            for r in each_rule(invoice, declaration) {
                assert_eq!(
                    r.outcome,
                    RuleOutcome::Fail,
                    "{left:?} {right:?}: {}",
                    r.message
                );
            }
            let ev = evaluate(
                &compile(json!([cites()])),
                &facts(docs(invoice, declaration)),
            );
            assert_eq!(ev.status, DecisionStatus::Blocked, "{}", ev.summary);
        }
        let [_, _, authority_r] = each_rule(
            ("INV-2026740", Some(TextLayer)),
            ("1NV-2026740", Some(TextLayer)),
        );
        assert_result(
            &authority_r,
            RuleOutcome::Fail,
            "commercial_invoice (source 00000002, p. 1) invoice_number \"INV-2026740\" is authoritative; \
             customs_declaration (source 00000003, p. 1) says \"1NV-2026740\"",
        );
    }

    #[test]
    fn ocr_does_not_excuse_a_difference_it_cannot_explain() {
        for (a, b) in [
            ("INV-2026740", "INV-2026741"), // 0 and 1 are no pair
            ("INV-2026740", "1NV-2026746"), // one confusion beside a real difference
            ("INV-2026740", "INV-202674"),  // a digit fewer (too long to be a cut-off)
            ("DPI-2404-118", "DPI-2404-811"),
        ] {
            for r in each_rule((a, Some(Ocr)), (b, Some(Ocr))) {
                assert_eq!(r.outcome, RuleOutcome::Fail, "{a} vs {b}: {}", r.message);
            }
        }
    }

    #[test]
    fn container_numbers_too() {
        let across = rule(
            "EXACT_MATCH",
            json!({"field": "container_number", "document_types": ["bill_of_lading", "commercial_invoice"]}),
        );
        let box_no = |d, raw: &str, method| {
            push(d, read_by("container_number", container(raw), raw, method))
        };
        // The rules compare the codes they are given (the parser itself refuses a digit in
        // the owner code, and flags a wrong check digit at a certainty below the floor).
        let r = check(
            across.clone(),
            vec![
                box_no(bl(1), "MSCU1234566", Some(TextLayer)),
                box_no(ci(2), "M5CU1234566", Some(Ocr)),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "bill_of_lading (source 00000001, p. 1) container_number \"MSCU1234566\" vs \
             commercial_invoice (source 00000002, p. 1) container_number \"M5CU1234566\": \
             readings differ only where OCR confuses characters: MSCU1234566 vs M5CU1234566",
        );
        let r = check(
            across,
            vec![
                box_no(bl(1), "MSCU1234566", Some(TextLayer)),
                box_no(ci(2), "M5CU1234566", Some(TextLayer)),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::Fail, "{}", r.message);
    }

    #[test]
    fn a_misread_third_value_does_not_excuse_two_that_disagree() {
        let r = check(
            rule(
                "EXACT_MATCH",
                json!({"field": "invoice_number",
                       "document_types": ["commercial_invoice", "customs_declaration", "packing_list"]}),
            ),
            vec![
                inv(ci(2), "INV-2026740", Some(TextLayer)),
                inv(cd(3), "INV-9999999", Some(TextLayer)),
                inv(pl(4), "1NV-2026740", Some(Ocr)),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::Fail, "{}", r.message);
    }

    #[test]
    fn a_cut_off_start_still_asks_for_review_whatever_read_it() {
        for method in [Some(TextLayer), Some(Ocr), None] {
            for r in each_rule(("DPI-2404-118", method), ("DPI", method)) {
                assert_eq!(r.outcome, RuleOutcome::ReviewRequired, "{}", r.message);
                assert!(
                    r.message.ends_with("one reading looks cut short"),
                    "{}",
                    r.message
                );
            }
        }
    }
}

mod exact_match_pair {
    use super::*;

    fn cites() -> serde_json::Value {
        rule(
            "EXACT_MATCH",
            json!({"left": {"document_type": "customs_declaration", "field": "invoice_number"},
                   "right": {"document_type": "commercial_invoice", "field": "invoice_number"}}),
        )
    }

    fn inv(d: DocumentFacts, raw: &str, confidence: f64) -> DocumentFacts {
        push(d, printed("invoice_number", text(raw), raw, confidence))
    }

    #[test]
    fn passes_on_the_same_identifier_however_printed() {
        let r = check(
            cites(),
            vec![
                inv(ci(2), "INV-2024/001", 0.9),
                inv(cd(3), "inv 2024 001", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Pass,
            "customs_declaration (source 00000003, p. 1) invoice_number \"inv 2024 001\" matches \
             commercial_invoice (source 00000002, p. 1) invoice_number \"INV-2024/001\"",
        );
        assert_eq!(r.values.len(), 2);
        assert_eq!(&*r.values[0].document_type, "customs_declaration");
    }

    #[test]
    fn fails_when_the_values_differ() {
        let r = check(
            cites(),
            vec![inv(ci(2), "INV-1", 0.9), inv(cd(3), "INV-2", 0.9)],
        );
        assert_result(
            &r,
            RuleOutcome::Fail,
            "customs_declaration (source 00000003, p. 1) invoice_number \"INV-2\" does not match \
             commercial_invoice (source 00000002, p. 1) invoice_number \"INV-1\"",
        );
    }

    #[test]
    fn money_in_another_currency_does_not_match_and_says_why() {
        let r = check(
            rule(
                "EXACT_MATCH",
                json!({"left": {"document_type": "customs_declaration", "field": "declared_value"},
                       "right": {"document_type": "commercial_invoice", "field": "invoice_total"}}),
            ),
            vec![
                with(
                    ci(2),
                    &[("invoice_total", money("100.00", Some("USD")), 0.9)],
                ),
                with(cd(3), &[("declared_value", money("100", Some("EUR")), 0.9)]),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Fail,
            "customs_declaration (source 00000003, p. 1) declared_value \"EUR 100\" does not match \
             commercial_invoice (source 00000002, p. 1) invoice_total \"USD 100.00\": different currencies: EUR and USD",
        );
    }

    #[test]
    fn several_documents_on_one_side_are_ambiguous_unless_none_agrees() {
        let r = check(
            cites(),
            vec![
                inv(ci(1), "INV-1", 0.9),
                inv(ci(2), "INV-2", 0.9),
                inv(cd(3), "INV-1", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "ambiguous: 1 of 2 document pairs disagree (customs_declaration (source 00000003, p. 1) \
             invoice_number \"INV-1\" does not match commercial_invoice (source 00000002, p. 1) invoice_number \"INV-2\")",
        );
        let r = check(
            cites(),
            vec![
                inv(ci(1), "INV-8", 0.9),
                inv(ci(2), "INV-9", 0.9),
                inv(cd(3), "INV-1", 0.9),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::Fail, "{}", r.message);
        assert!(
            r.message.contains("\"INV-8\"") && r.message.contains("\"INV-9\""),
            "{}",
            r.message
        );
    }

    #[test]
    fn is_not_applicable_when_a_side_is_absent() {
        let r = check(cites(), vec![inv(ci(2), "INV-1", 0.9)]);
        assert_result(
            &r,
            RuleOutcome::NotApplicable,
            "no customs_declaration document",
        );
        assert_eq!(r.values.len(), 1, "the present side is still shown");
    }

    #[test]
    fn a_missing_or_doubtful_value_asks_for_review() {
        let r = check(cites(), vec![inv(ci(2), "INV-1", 0.9), cd(3)]);
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "invoice_number is missing on customs_declaration (source 00000003, p. 1)",
        );
        let r = check(
            cites(),
            vec![inv(ci(2), "INV-1", 0.9), inv(cd(3), "INV-2", 0.2)],
        );
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "customs_declaration (source 00000003, p. 1) invoice_number \"INV-2\" is below the confidence floor (0.20 < 0.6)",
        );
    }
}

mod numeric_tolerance {
    use super::*;

    fn weight(extra: serde_json::Value) -> serde_json::Value {
        let mut params = json!({"left": {"document_type": "bill_of_lading", "field": "gross_weight"},
                                "right": {"document_type": "packing_list", "field": "gross_weight"}});
        for (k, v) in extra.as_object().into_iter().flatten() {
            params[k] = v.clone();
        }
        rule("NUMERIC_TOLERANCE", params)
    }

    fn gw(d: DocumentFacts, raw: &str, value: &str, confidence: f64) -> DocumentFacts {
        push(d, printed("gross_weight", kg(value), raw, confidence))
    }

    #[test]
    fn passes_within_the_relative_tolerance() {
        let r = check(
            weight(json!({"relative": 0.02})),
            vec![
                gw(bl(1), "26,070.00 KGS", "26070.00", 0.9),
                gw(pl(4), "25 800 kg", "25800", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Pass,
            "bill_of_lading (source 00000001, p. 1) gross_weight \"26,070.00 KGS\" and \
             packing_list (source 00000004, p. 1) gross_weight \"25 800 kg\": within 2%",
        );
    }

    #[test]
    fn fails_beyond_every_tolerance_given_with_the_gap() {
        let r = check(
            weight(json!({"relative": 0.02, "absolute": 500})),
            vec![
                gw(bl(1), "26,070.00 KGS", "26070.00", 0.9),
                gw(pl(4), "25,000 kg", "25000", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Fail,
            "bill_of_lading (source 00000001, p. 1) gross_weight \"26,070.00 KGS\" and \
             packing_list (source 00000004, p. 1) gross_weight \"25,000 kg\": differ by 1070 kg (4.10%), allowed ±500 kg or 2%",
        );
        // Either tolerance suffices: 1070 kg is within an absolute 1100.
        let r = check(
            weight(json!({"relative": 0.02, "absolute": 1100})),
            vec![
                gw(bl(1), "26070", "26070", 0.9),
                gw(pl(4), "25000", "25000", 0.9),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::Pass, "{}", r.message);
    }

    #[test]
    fn amounts_in_different_currencies_ask_for_review() {
        let r = check(
            rule(
                "NUMERIC_TOLERANCE",
                json!({"left": {"document_type": "commercial_invoice", "field": "invoice_total"},
                       "right": {"document_type": "customs_declaration", "field": "declared_value"},
                       "absolute": 1.00}),
            ),
            vec![
                with(
                    ci(2),
                    &[("invoice_total", money("39904.00", Some("USD")), 0.9)],
                ),
                with(
                    cd(3),
                    &[("declared_value", money("36500.00", Some("EUR")), 0.9)],
                ),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::ReviewRequired);
        assert!(
            r.message.ends_with("different currencies: USD and EUR; amounts in different currencies need a person to convert them"),
            "{}",
            r.message
        );
    }

    #[test]
    fn is_not_applicable_missing_or_doubtful_as_the_others() {
        let rel = weight(json!({"relative": 0.02}));
        let r = check(rel.clone(), vec![gw(bl(1), "1", "1", 0.9)]);
        assert_result(&r, RuleOutcome::NotApplicable, "no packing_list document");
        let r = check(rel.clone(), vec![]);
        assert_result(
            &r,
            RuleOutcome::NotApplicable,
            "no bill_of_lading or packing_list document",
        );
        let r = check(rel.clone(), vec![gw(bl(1), "1", "1", 0.9), pl(4)]);
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "gross_weight is missing on packing_list (source 00000004, p. 1)",
        );
        let r = check(
            rel,
            vec![gw(bl(1), "100", "100", 0.55), gw(pl(4), "100", "100", 0.9)],
        );
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "bill_of_lading (source 00000001, p. 1) gross_weight \"100\" is below the confidence floor (0.55 < 0.6)",
        );
    }
}

mod date_window {
    use super::*;

    fn window() -> serde_json::Value {
        rule(
            "DATE_WINDOW",
            json!({"left": {"document_type": "bill_of_lading", "field": "bl_date"},
                   "right": {"document_type": "customs_declaration", "field": "acceptance_date"},
                   "min_days": 0, "max_days": 30}),
        )
    }

    fn dated(d: DocumentFacts, field: &str, iso: &str, confidence: f64) -> DocumentFacts {
        with(d, &[(field, date(iso), confidence)])
    }

    #[test]
    fn passes_inside_the_window() {
        let r = check(
            window(),
            vec![
                dated(bl(1), "bl_date", "2024-06-12", 0.9),
                dated(cd(3), "acceptance_date", "2024-06-20", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Pass,
            "bill_of_lading (source 00000001, p. 1) bl_date \"2024-06-12\" to customs_declaration \
             (source 00000003, p. 1) acceptance_date \"2024-06-20\": 8 days, within 0 to 30 days",
        );
    }

    #[test]
    fn fails_outside_it_counting_right_minus_left() {
        let r = check(
            window(),
            vec![
                dated(bl(1), "bl_date", "2024-06-12", 0.9),
                dated(cd(3), "acceptance_date", "2024-06-10", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Fail,
            "bill_of_lading (source 00000001, p. 1) bl_date \"2024-06-12\" to customs_declaration \
             (source 00000003, p. 1) acceptance_date \"2024-06-10\": -2 days, allowed 0 to 30 days",
        );
        let r = check(
            window(),
            vec![
                dated(bl(1), "bl_date", "2024-01-01", 0.9),
                dated(cd(3), "acceptance_date", "2024-03-01", 0.9),
            ],
        );
        assert!(
            r.message.ends_with("60 days, allowed 0 to 30 days"),
            "{}",
            r.message
        );
    }

    #[test]
    fn is_not_applicable_missing_or_doubtful_as_the_others() {
        let r = check(window(), vec![dated(bl(1), "bl_date", "2024-06-12", 0.9)]);
        assert_result(
            &r,
            RuleOutcome::NotApplicable,
            "no customs_declaration document",
        );
        let r = check(
            window(),
            vec![dated(bl(1), "bl_date", "2024-06-12", 0.9), cd(3)],
        );
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "acceptance_date is missing on customs_declaration (source 00000003, p. 1)",
        );
        let r = check(
            window(),
            vec![
                dated(bl(1), "bl_date", "2024-06-12", 0.3),
                dated(cd(3), "acceptance_date", "2024-06-13", 0.9),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::ReviewRequired);
        assert!(
            r.message
                .contains("below the confidence floor (0.30 < 0.6)"),
            "{}",
            r.message
        );
    }
}

mod authority_precedence {
    use super::*;

    fn precedence() -> serde_json::Value {
        rule(
            "AUTHORITY_PRECEDENCE",
            json!({"field": "invoice_number", "authority": "commercial_invoice",
                   "others": ["customs_declaration", "packing_list"]}),
        )
    }

    fn inv(d: DocumentFacts, value: &str, confidence: f64) -> DocumentFacts {
        with(d, &[("invoice_number", text(value), confidence)])
    }

    #[test]
    fn passes_when_the_others_agree_with_the_authority() {
        let r = check(
            precedence(),
            vec![
                inv(pl(4), "inv-1", 0.9),
                inv(ci(2), "INV-1", 0.9),
                inv(cd(3), "INV 1", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Pass,
            "commercial_invoice (source 00000002, p. 1) invoice_number \"INV-1\" is authoritative; 2 other documents agree",
        );
        assert_eq!(&*r.values[0].document_type, "commercial_invoice");
        let r = check(precedence(), vec![inv(ci(2), "INV-1", 0.9)]);
        assert_result(
            &r,
            RuleOutcome::Pass,
            "commercial_invoice (source 00000002, p. 1) invoice_number \"INV-1\" is authoritative; no other document carries it",
        );
    }

    #[test]
    fn fails_flagging_each_disagreeing_document_and_the_authoritative_value() {
        let r = check(
            precedence(),
            vec![
                inv(ci(2), "INV-1", 0.9),
                inv(cd(3), "INV-1", 0.9),
                inv(pl(4), "INV-9", 0.9),
            ],
        );
        assert_result(
            &r,
            RuleOutcome::Fail,
            "commercial_invoice (source 00000002, p. 1) invoice_number \"INV-1\" is authoritative; \
             packing_list (source 00000004, p. 1) says \"INV-9\"",
        );
        // A doubtful third document does not excuse a confident disagreement.
        let r = check(
            precedence(),
            vec![
                inv(ci(2), "INV-1", 0.9),
                inv(cd(3), "INV-7", 0.2),
                inv(pl(4), "INV-9", 0.9),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::Fail);
    }

    #[test]
    fn without_the_authority_is_not_applicable_or_asks_for_review() {
        let r = check(precedence(), vec![bl(1)]);
        assert_result(
            &r,
            RuleOutcome::NotApplicable,
            "no commercial_invoice, customs_declaration or packing_list document",
        );
        let r = check(precedence(), vec![inv(cd(3), "INV-1", 0.9)]);
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "no commercial_invoice document to settle invoice_number, which customs_declaration (source 00000003, p. 1) carries",
        );
    }

    #[test]
    fn a_missing_doubtful_or_split_authority_asks_for_review() {
        let r = check(precedence(), vec![ci(2), inv(cd(3), "INV-1", 0.9)]);
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "invoice_number is missing on commercial_invoice (source 00000002, p. 1)",
        );
        let r = check(
            precedence(),
            vec![inv(ci(2), "INV-1", 0.4), inv(cd(3), "INV-2", 0.9)],
        );
        assert_result(
            &r,
            RuleOutcome::ReviewRequired,
            "commercial_invoice (source 00000002, p. 1) invoice_number \"INV-1\" is below the confidence floor (0.40 < 0.6)",
        );
        let r = check(
            precedence(),
            vec![
                inv(ci(1), "INV-1", 0.9),
                inv(ci(2), "INV-2", 0.9),
                inv(cd(3), "INV-1", 0.9),
            ],
        );
        assert_eq!(r.outcome, RuleOutcome::ReviewRequired);
        assert!(
            r.message.starts_with("the commercial_invoice documents disagree: commercial_invoice (source 00000001, p. 1) invoice_number \"INV-1\" vs"),
            "{}",
            r.message
        );
    }
}

mod safeguards {
    use super::*;
    use crate::rules::testkit::unknown;
    use crate::rules::SAFEGUARD_IDS;

    fn docs_rule() -> serde_json::Value {
        json!([rule(
            "REQUIRED_DOCUMENT",
            json!({"document_types": ["bill_of_lading"]})
        )])
    }

    #[test]
    fn unknown_pages_empty_documents_and_low_confidence_each_ask_for_review() {
        let case = facts(vec![
            unknown(7, 2, 3),
            with(
                bl(1),
                &[
                    ("bl_number", text("MAEU1"), 0.9),
                    ("gross_weight", kg("10"), 0.45),
                ],
            ),
            push(ci(2), missing("invoice_number")),
        ]);
        let ev = evaluate(&compile(docs_rule()), &case);
        assert_eq!(ev.status, DecisionStatus::ReviewRequired);
        let guards: Vec<(&str, RuleOutcome, &str)> = ev.results[1..]
            .iter()
            .map(|r| (&*r.rule_id, r.outcome, r.message.as_str()))
            .collect();
        assert_eq!(
            guards,
            [
                (
                    SAFEGUARD_IDS[0],
                    RuleOutcome::ReviewRequired,
                    "no document type recognised for unclassified pages (source 00000007, pp. 3–4)"
                ),
                (
                    SAFEGUARD_IDS[1],
                    RuleOutcome::ReviewRequired,
                    "no field could be read on commercial_invoice (source 00000002, p. 1)"
                ),
                (
                    SAFEGUARD_IDS[2],
                    RuleOutcome::ReviewRequired,
                    "1 value below the confidence floor 0.6: bill_of_lading (source 00000001, p. 1) gross_weight \"10 kg\" (0.45)"
                ),
                (SAFEGUARD_IDS[3], RuleOutcome::Pass, "1 rule configured"),
            ]
        );
        assert_eq!(&*ev.results[1].values[0].document_type, "UNKNOWN");
        assert_eq!(ev.results[1].values[0].evidence.page, Some(2));
        assert_eq!(&*ev.results[3].values[0].field, "gross_weight");
        assert!(ev.results[1..].iter().all(|r| r.on_fail.is_none()));
        assert_eq!(
            ev.summary,
            "REVIEW_REQUIRED: 3 need review (safeguard_unknown_document, safeguard_empty_document, safeguard_low_confidence)"
        );
    }

    #[test]
    fn they_pass_on_a_clean_case() {
        let ev = evaluate(
            &compile(docs_rule()),
            &facts(vec![with(bl(1), &[("bl_number", text("MAEU1"), 0.9)])]),
        );
        assert_eq!(ev.status, DecisionStatus::Ready, "{}", ev.summary);
        let messages: Vec<&str> = ev.results[1..].iter().map(|r| r.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "every page was recognised as a document type",
                "every document has at least one value",
                "every value is at or above the confidence floor 0.6",
                "1 rule configured",
            ]
        );
    }
}
