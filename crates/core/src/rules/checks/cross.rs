//! EXACT_MATCH, NUMERIC_TOLERANCE, DATE_WINDOW and AUTHORITY_PRECEDENCE: one document's
//! value against another's.

use std::borrow::Cow;
use std::fmt::Write;

use super::{either, listing, push, Case, Observed, Piece, Verdict};
use crate::parse::Value;
use crate::rules::compare::{self, Relation};
use crate::rules::names::Name;
use crate::rules::ocr_confusion::{self, OCR_CONFUSION};
use crate::rules::params::{FieldRef, PairTest};
use crate::rules::RuleOutcome;

/// EXACT_MATCH `{field, document_types}`: every document of the listed types agrees.
pub(super) fn all_agree(case: &Case<'_>, field: &Name, types: &[Name]) -> Verdict {
    let observed = case.observe_types(types, field);
    let values = observed.iter().map(Observed::compared).collect();
    if observed.is_empty() {
        let names: Vec<&str> = types.iter().map(Name::as_str).collect();
        return Verdict::new(
            RuleOutcome::NotApplicable,
            msg!("no {} document", either(&names)),
            values,
        );
    }
    // Confident values grouped by equality; any two groups that contradict fail the rule.
    let mut groups: Vec<Vec<&Observed<'_>>> = Vec::with_capacity(2);
    let mut doubts: Vec<Cow<'_, str>> = Vec::new();
    let mut reasons = Vec::new();
    let mut contradiction = false;
    for o in observed.iter().filter(|o| o.confident()) {
        let Some(v) = o.value() else { continue };
        let mut home = None;
        for (g, group) in groups.iter().enumerate() {
            let rep = group[0];
            let rv = rep.value().unwrap_or(v);
            match unless_misread(compare::same(rv, v), (rep, rv), (o, v)) {
                Relation::Holds => {
                    home = Some(g);
                    break;
                }
                Relation::Broken(why) => {
                    contradiction = true;
                    if !why.is_empty() && !reasons.contains(&why) {
                        reasons.push(why);
                    }
                }
                Relation::Incomparable(why) => {
                    doubts.push(msg!("{} vs {}: {why}", rep.described(), o.described()).into());
                }
            }
        }
        match home {
            Some(g) => groups[g].push(o),
            None => {
                let mut group = Vec::with_capacity(observed.len());
                group.push(o);
                groups.push(group);
            }
        }
    }
    if contradiction {
        let listed = listing(
            groups.iter().map(|g| {
                let docs = g.iter().map(|o| o.doc_name());
                text!(g[0].printed(), " on ", listing(docs, ", "))
            }),
            "; ",
        );
        let why = if reasons.is_empty() {
            String::new()
        } else {
            text!(" (", reasons.join("; "), ")")
        };
        return Verdict::new(
            RuleOutcome::Fail,
            text!(field, " disagrees: ", listed, why),
            values,
        );
    }
    doubts.extend(observed.iter().filter_map(|o| o.doubt(case.floor)));
    if !doubts.is_empty() {
        return Verdict::new(RuleOutcome::ReviewRequired, listing(doubts, "; "), values);
    }
    if observed.len() == 1 {
        return Verdict::new(
            RuleOutcome::NotApplicable,
            msg!(
                "only {} carries {field}; nothing to compare it with",
                observed[0].doc_name()
            ),
            values,
        );
    }
    Verdict::new(
        RuleOutcome::Pass,
        text!(
            field,
            " agrees on ",
            observed.len(),
            " documents: ",
            observed[0].printed()
        ),
        values,
    )
}

/// EXACT_MATCH `{left, right}`, NUMERIC_TOLERANCE, DATE_WINDOW.
///
/// Fails when every confident left value contradicts every confident right one (whichever
/// document is the real one, they disagree); passes when every pair holds and every value is
/// confident; otherwise asks for review, naming why (a doubtful value, or several documents on
/// one side of which some agree and some do not).
pub(super) fn pair(case: &Case<'_>, left: &FieldRef, right: &FieldRef, test: &PairTest) -> Verdict {
    let l = case.observe(&left.document_type, &left.field);
    let r = case.observe(&right.document_type, &right.field);
    let values = l.iter().chain(&r).map(Observed::compared).collect();
    if l.is_empty() || r.is_empty() {
        let mut absent = Vec::new();
        for (side, t) in [(&l, &left.document_type), (&r, &right.document_type)] {
            if side.is_empty() && !absent.contains(&t.as_str()) {
                absent.push(t.as_str());
            }
        }
        return Verdict::new(
            RuleOutcome::NotApplicable,
            msg!("no {} document", either(&absent)),
            values,
        );
    }
    let (mut holds, mut broken, mut incomparable) = (0usize, Vec::new(), Vec::new());
    let mut first_hold = None;
    for a in l.iter().filter(|o| o.confident()) {
        for b in r.iter().filter(|o| o.confident()) {
            let (Some(x), Some(y)) = (a.value(), b.value()) else {
                continue;
            };
            match relate(test, (a, x), (b, y)) {
                Relation::Holds => {
                    holds += 1;
                    first_hold.get_or_insert((a, b));
                }
                Relation::Broken(why) => broken.push(pair_text(test, a, b, false, &why)),
                Relation::Incomparable(why) => {
                    incomparable.push(pair_text(test, a, b, false, &why))
                }
            }
        }
    }
    if !broken.is_empty() && holds == 0 && incomparable.is_empty() {
        return Verdict::new(RuleOutcome::Fail, listing(broken, "; "), values);
    }
    let mut doubts: Vec<Cow<'_, str>> = incomparable.into_iter().map(Cow::Owned).collect();
    doubts.extend(l.iter().chain(&r).filter_map(|o| o.doubt(case.floor)));
    if !broken.is_empty() {
        let pairs = holds + broken.len();
        doubts.push(
            msg!(
                "ambiguous: {} of {pairs} document pairs disagree ({})",
                broken.len(),
                broken[0]
            )
            .into(),
        );
    }
    if !doubts.is_empty() {
        return Verdict::new(RuleOutcome::ReviewRequired, listing(doubts, "; "), values);
    }
    let Some((a, b)) = first_hold else {
        // Unreachable: no doubts means every value is confident, and both sides are present.
        return Verdict::new(
            RuleOutcome::ReviewRequired,
            "nothing to compare".into(),
            values,
        );
    };
    let mut message = pair_head(test, a, b, true, 64);
    push_holds(&mut message, test, a, b);
    let docs = l.len() + r.len();
    if docs > 2 {
        message.push_str(" (all ");
        docs.push_to(&mut message);
        message.push_str(" documents)");
    }
    Verdict::new(RuleOutcome::Pass, message, values)
}

fn relate(
    test: &PairTest,
    left: (&Observed<'_>, &Value),
    right: (&Observed<'_>, &Value),
) -> Relation {
    let (a, b) = (left.1, right.1);
    match test {
        PairTest::Equal => unless_misread(compare::same(a, b), left, right),
        PairTest::Tolerance {
            absolute, relative, ..
        } => unless_cut_short(
            compare::within(a, b, absolute.as_ref(), relative.as_ref()),
            left.0,
            right.0,
        ),
        PairTest::DateWindow {
            min_days,
            max_days,
            window,
        } => match compare::days_between(a, b) {
            Ok(days) => {
                let ok = min_days.is_none_or(|m| days >= m) && max_days.is_none_or(|m| days <= m);
                if ok {
                    Relation::Holds
                } else {
                    Relation::Broken(msg!("{days} days, allowed {window}"))
                }
            }
            Err(r) => r,
        },
    }
}

/// `relation`, unless it is a contradiction OCR could have caused: two identifiers that differ
/// only where OCR confuses characters, at least one of them from a page OCR read. Then it is a
/// doubt for a person (`readings differ only where OCR confuses characters: 1NV-2026740 vs
/// INV-2026740`, `a` first), never a finding: a false block stops a consistent shipment, and
/// only a difference the documents really state may do that. Two text-layer values that
/// differ stay a contradiction.
///
/// Two more gaps OCR makes ask a person too, once OCR read one of the values: an identifier
/// that is the other's start or end with two or more characters lost (`CLE/2024/7` for
/// `CLE/2024/7505`, the rest under a stamp), and identifiers one digit apart where OCR read
/// one of them unsure ([`ocr_confusion::UNSURE_DIGIT_CONFIDENCE`]: `INV2662755` read off a
/// fax for `INV2562755`).
fn unless_misread(
    relation: Relation,
    (a, x): (&Observed<'_>, &Value),
    (b, y): (&Observed<'_>, &Value),
) -> Relation {
    if !matches!(relation, Relation::Broken(_)) || !(a.read_by_ocr() || b.read_by_ocr()) {
        return relation;
    }
    let why = if compare::ocr_confusable(x, y) {
        OCR_CONFUSION
    } else if !(compare::is_identifier(x) && compare::is_identifier(y)) {
        return relation;
    } else if ocr_confusion::cut_short_identifier(a.as_read(), b.as_read()) {
        compare::TRUNCATED
    } else if ocr_confusion::one_digit_apart(a.as_read(), b.as_read())
        && [a, b].iter().any(|o| {
            o.read_by_ocr()
                && o.confidence()
                    .is_some_and(|c| c < ocr_confusion::UNSURE_DIGIT_CONFIDENCE)
        })
    {
        ocr_confusion::UNSURE_DIGIT
    } else {
        return relation;
    };
    Relation::Incomparable(text!(why, ": ", a.as_read(), " vs ", b.as_read()))
}

/// `relation`, unless it is a gap OCR could have caused: one number as read is a cut-off start
/// or end of the other (`USD 42` where `USD 42,444.36` is printed under a stamp), and at least
/// one of them was read by OCR. Then the reading looks cut short, which asks a person, as a
/// cut-off identifier does.
fn unless_cut_short(relation: Relation, a: &Observed<'_>, b: &Observed<'_>) -> Relation {
    match relation {
        Relation::Broken(_)
            if (a.read_by_ocr() || b.read_by_ocr())
                && ocr_confusion::cut_short_digits(a.as_read(), b.as_read()) =>
        {
            Relation::Incomparable(text!(
                compare::TRUNCATED,
                ": ",
                a.as_read(),
                " vs ",
                b.as_read()
            ))
        }
        other => other,
    }
}

/// What a passing pair shows after the colon (nothing for EXACT_MATCH).
fn push_holds(text: &mut String, test: &PairTest, a: &Observed<'_>, b: &Observed<'_>) {
    match test {
        PairTest::Equal => {}
        PairTest::Tolerance { allowed, .. } => {
            text.push_str(": within ");
            text.push_str(allowed);
        }
        PairTest::DateWindow { window, .. } => {
            if let (Some(x), Some(y)) = (a.value(), b.value()) {
                if let Ok(days) = compare::days_between(x, y) {
                    let _ = write!(text, ": {days} days, within ");
                    text.push_str(window);
                }
            }
        }
    }
}

/// `left matches right` / `left does not match right: why` / `left and right: why` /
/// `left to right: why`; nothing after the colon when `why` is empty.
fn pair_text(
    test: &PairTest,
    a: &Observed<'_>,
    b: &Observed<'_>,
    holds: bool,
    why: &str,
) -> String {
    let mut text = pair_head(test, a, b, holds, why.len() + 2);
    if !why.is_empty() {
        text.push_str(": ");
        text.push_str(why);
    }
    text
}

/// `left <verb> right`, with room for `extra` more bytes.
fn pair_head(
    test: &PairTest,
    a: &Observed<'_>,
    b: &Observed<'_>,
    holds: bool,
    extra: usize,
) -> String {
    let verb = match test {
        PairTest::Equal if holds => "matches",
        PairTest::Equal => "does not match",
        PairTest::Tolerance { .. } => "and",
        PairTest::DateWindow { .. } => "to",
    };
    let (da, db) = (a.described(), b.described());
    let mut text = String::with_capacity(da.len() + verb.len() + db.len() + 2 + extra);
    text.push_str(da);
    text.push(' ');
    text.push_str(verb);
    text.push(' ');
    text.push_str(db);
    text
}

/// Whether both readings have a value and the values are the same.
fn same_value(a: &Observed<'_>, b: &Observed<'_>) -> bool {
    match (a.value(), b.value()) {
        (Some(x), Some(y)) => compare::same(x, y) == Relation::Holds,
        _ => false,
    }
}

/// AUTHORITY_PRECEDENCE: the authority's value is the case's; every other document that
/// confidently disagrees with it is flagged and fails the rule.
pub(super) fn authority(
    case: &Case<'_>,
    field: &Name,
    authority: &Name,
    others: &[Name],
) -> Verdict {
    let auth = case.observe(authority, field);
    let rest = case.observe_types(others, field);
    let values = auth.iter().chain(&rest).map(Observed::compared).collect();
    if auth.is_empty() {
        if rest.is_empty() {
            let mut names = vec![authority.as_str()];
            names.extend(others.iter().map(Name::as_str));
            return Verdict::new(
                RuleOutcome::NotApplicable,
                msg!("no {} document", either(&names)),
                values,
            );
        }
        let carriers = listing(rest.iter().map(|o| o.doc_name()), ", ");
        let verb = if rest.len() == 1 { "carries" } else { "carry" };
        return Verdict::new(
            RuleOutcome::ReviewRequired,
            msg!("no {authority} document to settle {field}, which {carriers} {verb}"),
            values,
        );
    }
    let mut settled: Vec<&Observed<'_>> = Vec::with_capacity(auth.len());
    settled.extend(auth.iter().filter(|o| o.confident()));
    let mut doubts: Vec<Cow<'_, str>> = auth.iter().filter_map(|o| o.doubt(case.floor)).collect();
    // Several authority documents that disagree leave no single authoritative value.
    if let Some(first) = settled.first() {
        let split: Vec<String> = settled[1..]
            .iter()
            .filter(|o| !same_value(first, o))
            .map(|o| o.described().to_string())
            .collect();
        if !split.is_empty() {
            doubts.push(
                msg!(
                    "the {authority} documents disagree: {} vs {}",
                    first.described(),
                    listing(split, ", ")
                )
                .into(),
            );
        }
    }
    let mut flagged = Vec::new();
    let mut agree = 0usize;
    for o in &rest {
        if let Some(d) = o.doubt(case.floor) {
            doubts.push(d);
            continue;
        }
        if settled.is_empty() {
            continue;
        }
        let (mut holds, mut broken, mut incomparable) = (0usize, 0usize, None);
        for a in &settled {
            let (Some(x), Some(y)) = (a.value(), o.value()) else {
                continue;
            };
            // The reason names this document's reading first, as the message does.
            match unless_misread(compare::same(x, y), (o, y), (a, x)) {
                Relation::Holds => holds += 1,
                Relation::Broken(_) => broken += 1,
                Relation::Incomparable(why) => {
                    incomparable.get_or_insert(why);
                }
            }
        }
        if let Some(why) = incomparable {
            doubts.push(msg!("{}: {why}", o.described()).into());
        } else if holds == 0 {
            flagged.push(o);
        } else if broken == 0 {
            agree += 1;
        } else {
            doubts.push(
                msg!(
                    "{} agrees with only some {authority} documents",
                    o.described()
                )
                .into(),
            );
        }
    }
    if !flagged.is_empty() {
        let authoritative = listing(settled.iter().map(|a| a.described()), ", ");
        let disagree = listing(
            flagged.iter().map(|o| {
                push(move |out| {
                    out.push_str(o.doc_name());
                    out.push_str(" says ");
                    out.push_str(o.printed());
                })
            }),
            "; ",
        );
        return Verdict::new(
            RuleOutcome::Fail,
            msg!("{authoritative} is authoritative; {disagree}"),
            values,
        );
    }
    if !doubts.is_empty() {
        return Verdict::new(RuleOutcome::ReviewRequired, listing(doubts, "; "), values);
    }
    let message = match settled.first() {
        Some(a) if agree == 0 => text!(
            a.described(),
            " is authoritative; no other document carries it"
        ),
        Some(a) => text!(
            a.described(),
            " is authoritative; ",
            agree,
            if agree == 1 {
                " other document agrees"
            } else {
                " other documents agree"
            }
        ),
        None => "nothing to settle".to_owned(),
    };
    Verdict::new(RuleOutcome::Pass, message, values)
}
