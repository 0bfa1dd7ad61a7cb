//! How two parsed values compare.
//!
//! Values are compared as what they mean, not as the characters printed: identifiers ignore
//! case, spaces and punctuation (`INV-2024/001` is `inv 2024 001`), numbers compare by value
//! whatever their scale or kind (`12.50` is `12.5` is the integer 12.5 would be), weights in
//! kilograms, money by amount within one currency. Arithmetic is exact on [`Decimal`] and
//! falls back to `f64` only where a product or difference would overflow it.

use std::fmt;

use super::params::Tolerance;
use crate::parse::{Decimal, Value};

/// What holds between two values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Relation {
    /// They agree (are equal, or within tolerance, or within the window).
    Holds,
    /// They contradict each other; the text says how (may be empty for plain inequality).
    Broken(String),
    /// They cannot be compared (different kinds, different currencies for a tolerance).
    Incomparable(String),
}

/// Whether `a` and `b` are the same value.
pub(crate) fn same(a: &Value, b: &Value) -> Relation {
    use Value::*;
    let verdict = |equal: bool| {
        if equal {
            Relation::Holds
        } else {
            Relation::Broken(String::new())
        }
    };
    match (a, b) {
        (Text(_) | ContainerNumber { .. }, Text(_) | ContainerNumber { .. }) => {
            let (x, y) = (identifier(a), identifier(b));
            if same_identifier(x, y) {
                Relation::Holds
            } else if truncated(x, y) {
                // OCR that split `Invoice No.: DPI-2404-118` reads `DPI`: not a contradiction.
                Relation::Incomparable(TRUNCATED.to_owned())
            } else {
                Relation::Broken(String::new())
            }
        }
        (Integer(_) | Decimal(_), Integer(_) | Decimal(_)) => verdict(number(a) == number(b)),
        (
            Money {
                amount: x,
                currency: cx,
            },
            Money {
                amount: y,
                currency: cy,
            },
        ) => match currencies_differ(cx, cy) {
            Some(why) => Relation::Broken(why),
            None => verdict(x == y),
        },
        (Weight { kg: x, .. }, Weight { kg: y, .. }) => verdict(x == y),
        (Date(x), Date(y)) => verdict(x == y),
        _ => incomparable(a, b),
    }
}

/// Whether `a` and `b` are within the tolerances (either one suffices).
pub(crate) fn within(
    a: &Value,
    b: &Value,
    absolute: Option<&Tolerance>,
    relative: Option<&Tolerance>,
) -> Relation {
    use Value::*;
    let (x, y, unit) = match (a, b) {
        (Integer(_) | Decimal(_), Integer(_) | Decimal(_)) => (number(a), number(b), ""),
        (
            Money {
                amount: x,
                currency: cx,
            },
            Money {
                amount: y,
                currency: cy,
            },
        ) => {
            // No exchange rate is known here, and guessing one could hide a real gap.
            if let Some(why) = currencies_differ(cx, cy) {
                return Relation::Incomparable(format!(
                    "{why}; amounts in different currencies need a person to convert them"
                ));
            }
            (*x, *y, "")
        }
        (Weight { kg: x, .. }, Weight { kg: y, .. }) => (*x, *y, " kg"),
        _ => return incomparable(a, b),
    };
    let diff = Num::abs_diff(x, y);
    let scale = Num::max_abs(x, y);
    if absolute.is_some_and(|t| diff.le(Num::Exact(t.exact)))
        || relative.is_some_and(|t| diff.le(scale.times(t)))
    {
        return Relation::Holds;
    }
    let pct = if scale.f64() > 0.0 {
        format!(" ({:.2}%)", diff.f64() / scale.f64() * 100.0)
    } else {
        String::new()
    };
    let allowed = Tolerances {
        absolute,
        relative,
        unit,
    };
    Relation::Broken(format!("differ by {diff}{unit}{pct}, allowed {allowed}"))
}

/// `right − left` in days, when both are dates.
pub(crate) fn days_between(left: &Value, right: &Value) -> Result<i64, Relation> {
    match (left, right) {
        (Value::Date(l), Value::Date(r)) => {
            Ok(r.days_since_unix_epoch() - l.days_since_unix_epoch())
        }
        _ => Err(incomparable(left, right)),
    }
}

/// `±1.00` / `2%` / `±1.00 or 2%`.
pub(crate) struct Tolerances<'a> {
    pub absolute: Option<&'a Tolerance>,
    pub relative: Option<&'a Tolerance>,
    /// Appended to the absolute tolerance (` kg`).
    pub unit: &'a str,
}

impl fmt::Display for Tolerances<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(t) = self.absolute {
            write!(f, "±{}{}", t.exact, self.unit)?;
        }
        if let Some(t) = self.relative {
            if self.absolute.is_some() {
                f.write_str(" or ")?;
            }
            match t.exact.checked_mul(Decimal::from_integer(100)) {
                Some(pct) => write!(f, "{}%", pct.normalized())?,
                None => write!(f, "{}%", t.approx * 100.0)?,
            }
        }
        if self.absolute.is_none() && self.relative.is_none() {
            f.write_str("no difference")?;
        }
        Ok(())
    }
}

/// `0 to 30 days` / `at least 0 days` / `at most 30 days`.
pub(crate) struct Window(pub Option<i64>, pub Option<i64>);

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(lo), Some(hi)) => write!(f, "{lo} to {hi} days"),
            (Some(lo), None) => write!(f, "at least {lo} days"),
            (None, Some(hi)) => write!(f, "at most {hi} days"),
            (None, None) => f.write_str("any number of days"),
        }
    }
}

/// A value as a person would write it (used when the printed text is not known).
pub(crate) struct Shown<'a>(pub &'a Value);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::Text(s) => f.write_str(s),
            Value::Integer(n) => write!(f, "{n}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Money {
                amount,
                currency: Some(c),
            } => write!(f, "{c} {amount}"),
            Value::Money { amount, .. } => write!(f, "{amount}"),
            Value::Weight { kg, .. } => write!(f, "{kg} kg"),
            Value::Date(d) => write!(f, "{d}"),
            Value::ContainerNumber { code, .. } => f.write_str(code),
        }
    }
}

/// Whether `a` and `b` are identifiers (text or container numbers) that differ only where OCR
/// confuses characters; see [`super::ocr_confusion`]. Whether OCR read either is the caller's
/// question: this looks at the values alone.
pub(crate) fn ocr_confusable(a: &Value, b: &Value) -> bool {
    is_identifier(a)
        && is_identifier(b)
        && super::ocr_confusion::only_confusions(identifier(a), identifier(b))
}

/// Whether a value is compared as an identifier (text, a container number).
pub(crate) fn is_identifier(v: &Value) -> bool {
    matches!(v, Value::Text(_) | Value::ContainerNumber { .. })
}

/// The text of an identifier value.
fn identifier(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        Value::ContainerNumber { code, .. } => code,
        _ => "",
    }
}

/// Whether two identifiers are the same once case, spaces and punctuation are dropped.
fn same_identifier(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    // Nearly every identifier on a trade document is ASCII, and Unicode case folding per
    // character costs several times the byte comparison, in a loop rules run per pair.
    if a.is_ascii() && b.is_ascii() {
        return ascii_key(a).eq(ascii_key(b));
    }
    unicode_key(a).eq(unicode_key(b))
}

/// Why two identifiers that differ only by one being cut short ask for review.
pub(crate) const TRUNCATED: &str = "one reading looks cut short";

/// How long, at most, the shorter of two identifiers may be (as a share of the longer) and
/// still be read as a truncation of it rather than as a different identifier.
const TRUNCATED_SHARE: f64 = 0.7;

/// Whether one identifier, once normalized, is a strict prefix or suffix of the other and
/// shorter than [`TRUNCATED_SHARE`] of it: a reading cut short, not a different value.
fn truncated(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        // Compared in place: no copy of either key.
        let (la, lb) = (ascii_key(a).count(), ascii_key(b).count());
        let (short, long, ls, ll) = if la <= lb {
            (a, b, la, lb)
        } else {
            (b, a, lb, la)
        };
        return ls > 0
            && ls < ll
            && (ls as f64) < TRUNCATED_SHARE * ll as f64
            && (ascii_key(long).take(ls).eq(ascii_key(short))
                || ascii_key(long).rev().take(ls).eq(ascii_key(short).rev()));
    }
    truncated_chars(a, b)
}

/// [`truncated`] for any text, on collected keys.
fn truncated_chars(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (unicode_key(a).collect(), unicode_key(b).collect());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty()
        && short.len() < long.len()
        && (short.len() as f64) < TRUNCATED_SHARE * long.len() as f64
        && (long.starts_with(&short) || long.ends_with(&short))
}

fn ascii_key(s: &str) -> impl DoubleEndedIterator<Item = u8> + '_ {
    s.bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
}

fn unicode_key(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
}

fn number(v: &Value) -> Decimal {
    match v {
        Value::Integer(n) => Decimal::from_integer(*n),
        Value::Decimal(d) => *d,
        _ => Decimal::ZERO,
    }
}

/// Two known, different currencies; an amount without a currency is taken to be in the
/// other's (the workflow's default currency already filled it in where one is declared).
fn currencies_differ(a: &Option<String>, b: &Option<String>) -> Option<String> {
    match (a, b) {
        (Some(x), Some(y)) if !x.eq_ignore_ascii_case(y) => {
            Some(format!("different currencies: {x} and {y}"))
        }
        _ => None,
    }
}

fn incomparable(a: &Value, b: &Value) -> Relation {
    Relation::Incomparable(format!(
        "a {} value cannot be compared with a {} value",
        a.kind(),
        b.kind()
    ))
}

/// A non-negative quantity, exact when [`Decimal`] can hold it.
#[derive(Debug, Clone, Copy)]
enum Num {
    Exact(Decimal),
    Approx(f64),
}

impl Num {
    fn abs_diff(x: Decimal, y: Decimal) -> Num {
        let scale = x.scale().max(y.scale());
        let exact = lift(x, scale)
            .zip(lift(y, scale))
            .and_then(|(a, b)| a.checked_sub(b))
            .and_then(i128::checked_abs)
            .and_then(|units| Decimal::new(units, scale));
        match exact {
            Some(d) => Num::Exact(d),
            None => Num::Approx((x.to_f64() - y.to_f64()).abs()),
        }
    }

    fn max_abs(x: Decimal, y: Decimal) -> Num {
        let abs = |d: Decimal| {
            d.units()
                .checked_abs()
                .and_then(|u| Decimal::new(u, d.scale()))
        };
        match (abs(x), abs(y)) {
            (Some(a), Some(b)) => Num::Exact(a.max(b)),
            _ => Num::Approx(x.to_f64().abs().max(y.to_f64().abs())),
        }
    }

    fn times(self, t: &Tolerance) -> Num {
        match self {
            Num::Exact(d) => d
                .checked_mul(t.exact)
                .map_or(Num::Approx(d.to_f64() * t.approx), Num::Exact),
            Num::Approx(f) => Num::Approx(f * t.approx),
        }
    }

    fn f64(self) -> f64 {
        match self {
            Num::Exact(d) => d.to_f64(),
            Num::Approx(f) => f,
        }
    }

    /// `self ≤ bound`, exactly when both are exact.
    fn le(self, bound: Num) -> bool {
        match (self, bound) {
            (Num::Exact(a), Num::Exact(b)) => a <= b,
            _ => self.f64() <= bound.f64(),
        }
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Exact(d) => write!(f, "{}", d.normalized()),
            Num::Approx(x) => write!(f, "{x}"),
        }
    }
}

/// `d`'s units at a larger `scale`, or `None` on overflow.
fn lift(d: Decimal, scale: u32) -> Option<i128> {
    crate::parse::decimal::checked_pow10(scale.checked_sub(d.scale())?)
        .and_then(|p| crate::parse::decimal::checked_mul_units(d.units(), p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{container, date, dec, kg, money, text};

    proptest::proptest! {
        /// The in-place ASCII check answers as the general one does.
        #[test]
        fn truncation_in_place_agrees_with_collected_keys(a in "[A-Za-z0-9 /-]{0,16}", b in "[A-Za-z0-9 /-]{0,16}") {
            proptest::prop_assert_eq!(truncated(&a, &b), truncated_chars(&a, &b));
            let long = format!("{a}{b}");
            proptest::prop_assert_eq!(truncated(&a, &long), truncated_chars(&a, &long));
            proptest::prop_assert_eq!(truncated(&long, &b), truncated_chars(&long, &b));
        }
    }

    fn tol(s: &str) -> Tolerance {
        let exact: Decimal = s.parse().unwrap();
        Tolerance {
            exact,
            approx: exact.to_f64(),
        }
    }

    #[test]
    fn identifiers_ignore_case_spaces_and_punctuation() {
        assert_eq!(
            same(&text("INV-2024/001"), &text("inv 2024 001")),
            Relation::Holds
        );
        assert_eq!(
            same(&text("MSCU 123456-6"), &container("MSCU1234566")),
            Relation::Holds
        );
        assert_eq!(
            same(&text("INV-1"), &text("INV-2")),
            Relation::Broken(String::new())
        );
    }

    #[test]
    fn a_truncated_identifier_is_incomparable_not_a_contradiction() {
        let cut = Relation::Incomparable(TRUNCATED.into());
        assert_eq!(same(&text("DPI"), &text("DPI-2404-118")), cut);
        assert_eq!(same(&text("DPI-2404-118"), &text("dpi")), cut);
        // A suffix too, and container numbers.
        assert_eq!(same(&text("04-118"), &text("DPI-2404-118")), cut);
        assert_eq!(same(&container("MSCU1234566"), &text("MSCU")), cut);
        // Genuinely different values still contradict.
        assert_eq!(
            same(&text("DPI-2404-118"), &text("DPI-2404-811")),
            Relation::Broken(String::new())
        );
        // Too long to be a cut: 9 of 10 characters is a different number, not a truncation.
        assert_eq!(
            same(&text("DPI-2404-11"), &text("DPI-2404-118")),
            Relation::Broken(String::new())
        );
        // Neither a prefix nor a suffix.
        assert_eq!(
            same(&text("2404"), &text("DPI-2404-118")),
            Relation::Broken(String::new())
        );
        // Nothing readable is not a truncation either.
        assert_eq!(
            same(&text("--"), &text("DPI-2404-118")),
            Relation::Broken(String::new())
        );
    }

    #[test]
    fn numbers_compare_by_value_across_kinds() {
        assert_eq!(same(&Value::Integer(12), &dec("12.00")), Relation::Holds);
        assert_eq!(same(&dec("0.30"), &dec("0.3")), Relation::Holds);
        assert!(matches!(same(&dec("1"), &dec("1.01")), Relation::Broken(_)));
        assert_eq!(same(&kg("1000.0"), &kg("1000")), Relation::Holds);
        assert_eq!(
            same(&date("2024-06-12"), &date("2024-06-12")),
            Relation::Holds
        );
    }

    #[test]
    fn money_in_different_currencies_is_not_equal_and_not_comparable_within_tolerance() {
        assert_eq!(
            same(&money("100.00", Some("USD")), &money("100", None)),
            Relation::Holds
        );
        assert_eq!(
            same(&money("100", Some("USD")), &money("100", Some("EUR"))),
            Relation::Broken("different currencies: USD and EUR".into())
        );
        let r = within(
            &money("100", Some("USD")),
            &money("100", Some("EUR")),
            Some(&tol("1")),
            None,
        );
        assert!(
            matches!(r, Relation::Incomparable(ref m) if m.contains("USD and EUR")),
            "{r:?}"
        );
    }

    #[test]
    fn incomparable_kinds_say_so() {
        assert_eq!(
            same(&text("x"), &dec("1")),
            Relation::Incomparable("a text value cannot be compared with a decimal value".into())
        );
        assert!(days_between(&date("2024-01-01"), &text("x")).is_err());
    }

    #[test]
    fn tolerances_are_exact_at_the_boundary() {
        // 0.1 + 0.2 style trap: exactly 2% apart must pass a 2% tolerance.
        assert_eq!(
            within(&dec("100"), &dec("98"), None, Some(&tol("0.02"))),
            Relation::Holds
        );
        assert_eq!(
            within(&dec("0.3"), &dec("0.1"), Some(&tol("0.2")), None),
            Relation::Holds
        );
        assert_eq!(
            within(&kg("1000"), &kg("979.99"), None, Some(&tol("0.02"))),
            Relation::Broken("differ by 20.01 kg (2.00%), allowed 2%".into())
        );
        // Either tolerance suffices.
        assert_eq!(
            within(&dec("10"), &dec("11"), Some(&tol("1")), Some(&tol("0.01"))),
            Relation::Holds
        );
        assert_eq!(
            within(&dec("0"), &dec("0"), None, Some(&tol("0"))),
            Relation::Holds
        );
    }

    #[test]
    fn huge_values_fall_back_to_floats_without_panicking() {
        let big = Value::Decimal(Decimal::new(i128::MAX, 0).unwrap());
        let small = Value::Decimal(Decimal::new(-i128::MAX, 0).unwrap());
        assert!(matches!(
            within(&big, &small, Some(&tol("1")), Some(&tol("0.5"))),
            Relation::Broken(_)
        ));
        assert_eq!(
            within(&big, &big, None, Some(&tol("0.000001"))),
            Relation::Holds
        );
    }

    #[test]
    fn days_are_right_minus_left() {
        assert_eq!(
            days_between(&date("2024-02-28"), &date("2024-03-01")),
            Ok(2)
        );
        assert_eq!(
            days_between(&date("2024-03-01"), &date("2024-02-28")),
            Ok(-2)
        );
    }
}
