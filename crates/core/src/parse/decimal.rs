//! Decimal numbers written with EU or US separators, and the exact [`Decimal`] they become.
//!
//! Amounts and weights are compared by rules (`NUMERIC_TOLERANCE`), so they must survive
//! parsing without binary rounding: `0.1 + 0.2` has to equal `0.3`. The core may not depend on
//! a decimal crate, so [`Decimal`] is a small integer-with-scale type that does only what the
//! parsers and rules need: exact comparison, display and serde as a string.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{non_empty, numeral, ParseError, ParseHints, Parsed, ParserKind, Value};

/// An exact decimal number: `units × 10^-scale`.
///
/// The scale is kept as written (`12.50` has scale 2), so evidence shows what the document
/// said; equality, ordering and hashing compare the numeric value, so `12.50 == 12.5`.
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    units: i128,
    scale: u32,
}

impl Decimal {
    /// Largest scale: `10^38` is the largest power of ten an `i128` holds, and comparison
    /// needs to lift both fractions to a common scale without overflow.
    pub const MAX_SCALE: u32 = 38;

    /// Zero, with scale 0.
    pub const ZERO: Decimal = Decimal { units: 0, scale: 0 };

    /// `units × 10^-scale`, or `None` when `scale` exceeds [`Decimal::MAX_SCALE`].
    pub const fn new(units: i128, scale: u32) -> Option<Decimal> {
        if scale > Self::MAX_SCALE {
            None
        } else {
            Some(Decimal { units, scale })
        }
    }

    /// A whole number, with scale 0.
    pub const fn from_integer(value: i64) -> Decimal {
        Decimal {
            units: value as i128,
            scale: 0,
        }
    }

    /// The unscaled digits: `1234` for `12.34`.
    pub const fn units(self) -> i128 {
        self.units
    }

    /// How many digits follow the decimal point: `2` for `12.34` and for `12.50`.
    pub const fn scale(self) -> u32 {
        self.scale
    }

    /// The same value with trailing fractional zeros removed (`12.50` → `12.5`, `3.0` → `3`).
    pub fn normalized(self) -> Decimal {
        let Decimal {
            mut units,
            mut scale,
        } = self;
        while scale > 0 && units % 10 == 0 {
            units /= 10;
            scale -= 1;
        }
        Decimal { units, scale }
    }

    /// Whether the value has no fractional part (`12.00` has none).
    pub fn is_integer(self) -> bool {
        self.units % pow10(self.scale) == 0
    }

    /// Whether the value is below zero.
    pub const fn is_negative(self) -> bool {
        self.units < 0
    }

    /// The value as an `i64`, when it is whole and in range.
    pub fn to_i64(self) -> Option<i64> {
        if !self.is_integer() {
            return None;
        }
        i64::try_from(self.units / pow10(self.scale)).ok()
    }

    /// The nearest `f64`. Lossy: for display and statistics, never for comparing amounts.
    pub fn to_f64(self) -> f64 {
        // When the units and 10^scale are both exact floats, one division rounds once and is
        // correctly rounded (Clinger's fast path); otherwise going through the decimal text
        // does, where `units as f64 / 10^scale` would round twice.
        const EXACT_UNITS: i128 = 1 << 53;
        const POW10: [f64; 23] = [
            1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
        ];
        if let Some(&p) = POW10.get(self.scale as usize) {
            if self.units.unsigned_abs() <= EXACT_UNITS as u128 {
                return self.units as f64 / p;
            }
        }
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    /// `self × other`, or `None` on overflow; used for unit conversions.
    pub(crate) fn checked_mul(self, other: Decimal) -> Option<Decimal> {
        let units = checked_mul_units(self.units, other.units)?;
        Decimal::new(units, self.scale.checked_add(other.scale)?)
    }

    /// Splits into the integer part and the fraction's digits, both carrying the sign.
    fn split(self) -> (i128, i128) {
        let p = pow10(self.scale);
        (self.units / p, self.units % p)
    }
}

/// `10^0 ..= 10^38`: a lookup, where `i128::pow` multiplies in a loop on every comparison.
const POWERS_OF_TEN: [i128; Decimal::MAX_SCALE as usize + 1] = {
    let mut table = [1i128; Decimal::MAX_SCALE as usize + 1];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// `a × b`, or `None` on overflow: one machine multiplication when both fit in 64 bits (as
/// amounts and weights do), where `i128::checked_mul` calls a slow overflow-checking routine.
pub(crate) fn checked_mul_units(a: i128, b: i128) -> Option<i128> {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(a), Ok(b)) => Some(i128::from(a) * i128::from(b)),
        _ => a.checked_mul(b),
    }
}

/// `10^scale`, or `None` above `10^38` (which no `i128` holds).
pub(crate) fn checked_pow10(scale: u32) -> Option<i128> {
    POWERS_OF_TEN.get(scale as usize).copied()
}

/// `10^scale`; callers keep `scale <= MAX_SCALE`, where it always fits.
fn pow10(scale: u32) -> i128 {
    checked_pow10(scale).unwrap_or(i128::MAX)
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        // The common case (two amounts printed alike) needs no division.
        if self.scale == other.scale {
            return self.units.cmp(&other.units);
        }
        // Lifting the coarser one to the finer scale is one multiplication, when it fits.
        let lifted = if self.scale < other.scale {
            checked_mul_units(self.units, pow10(other.scale - self.scale))
                .map(|a| a.cmp(&other.units))
        } else {
            checked_mul_units(other.units, pow10(self.scale - other.scale))
                .map(|b| self.units.cmp(&b))
        };
        if let Some(order) = lifted {
            return order;
        }
        // Comparing integer parts first, then fractions lifted to the larger scale, never
        // overflows: a fraction is below 10^scale in magnitude, so lifting it stays below 10^38.
        let (a_int, a_frac) = self.split();
        let (b_int, b_frac) = other.split();
        a_int.cmp(&b_int).then_with(|| {
            let scale = self.scale.max(other.scale);
            let a = a_frac * pow10(scale - self.scale);
            let b = b_frac * pow10(scale - other.scale);
            a.cmp(&b)
        })
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

impl Hash for Decimal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Equal values share one normalized form, so they hash alike.
        let n = self.normalized();
        n.units.hash(state);
        n.scale.hash(state);
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = pow10(self.scale).unsigned_abs();
        let abs = self.units.unsigned_abs();
        if self.units < 0 {
            f.write_str("-")?;
        }
        write!(f, "{}", abs / p)?;
        if self.scale > 0 {
            write!(f, ".{:0width$}", abs % p, width = self.scale as usize)?;
        }
        Ok(())
    }
}

impl FromStr for Decimal {
    type Err = ParseError;

    /// Reads the canonical form only (`-1234.56`), as written by `Display` and stored in JSON;
    /// page text goes through [`parse`], which knows about separators.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| ParseError::invalid(ParserKind::Decimal, s, reason);
        let (negative, body) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
        if int.is_empty() || (body.contains('.') && frac.is_empty()) {
            return Err(bad("expected digits on both sides of the point"));
        }
        // Accumulate with the sign applied digit by digit, so `i128::MIN` reads back too.
        let mut units: i128 = 0;
        for c in int.chars().chain(frac.chars()) {
            let digit = c
                .to_digit(10)
                .ok_or_else(|| bad("expected only digits, '-' and '.'"))?;
            let digit = if negative {
                -i128::from(digit)
            } else {
                i128::from(digit)
            };
            units = units
                .checked_mul(10)
                .and_then(|u| u.checked_add(digit))
                .ok_or_else(|| bad("too many digits"))?;
        }
        let scale = u32::try_from(frac.len()).map_err(|_| bad("too many digits"))?;
        Decimal::new(units, scale).ok_or_else(|| bad("too many digits after the point"))
    }
}

impl Serialize for Decimal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Parses a decimal number written with EU (`1.234,56`), US (`1,234.56`), space (`1 234,56`)
/// or Swiss (`1'234.56`) separators.
///
/// A lone separator followed by exactly three digits (`1,234`) is ambiguous: the
/// `decimal_separator` hint settles it; without one it is read as a thousands separator with
/// low certainty, because in trade documents a grouped integer is the likelier meaning.
pub fn parse(raw: &str, hints: &ParseHints) -> Result<Parsed, ParseError> {
    let text = non_empty(raw)?;
    let reading = numeral::read(text, hints)
        .map_err(|reason| ParseError::invalid(ParserKind::Decimal, raw, reason))?;
    Ok(Parsed::new(
        Value::Decimal(reading.value),
        reading.certainty,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dec(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn read(raw: &str, hint: Option<char>) -> Result<(String, f64), ParseError> {
        let hints = ParseHints {
            decimal_separator: hint,
            ..ParseHints::default()
        };
        parse(raw, &hints).map(|p| match p.value {
            Value::Decimal(d) => (d.to_string(), p.certainty),
            other => panic!("unexpected {other:?}"),
        })
    }

    #[test]
    fn reads_the_listed_forms_with_full_certainty() {
        for (raw, expected) in [
            ("1.234,56", "1234.56"),
            ("1,234.56", "1234.56"),
            ("1 234,56", "1234.56"),
            ("1\u{a0}234,56", "1234.56"),
            ("1234.56", "1234.56"),
            ("1234,56", "1234.56"),
            ("1'234.56", "1234.56"),
            ("-12,5", "-12.5"),
            ("0.5", "0.5"),
            ("1.234.567,00", "1234567.00"),
            ("1,234,567", "1234567"),
            ("12", "12"),
            ("+7", "7"),
            ("\u{2212}3,25", "-3.25"),
            ("1234.567", "1234.567"),
            ("0,250", "0.250"),
            ("  42,0  ", "42.0"),
        ] {
            assert_eq!(read(raw, None), Ok((expected.to_owned(), 1.0)), "{raw}");
        }
    }

    #[test]
    fn lone_separator_before_three_digits_follows_the_hint() {
        assert_eq!(read("1,234", None), Ok(("1234".into(), 0.6)));
        assert_eq!(read("1.234", None), Ok(("1234".into(), 0.6)));
        assert_eq!(read("1,234", Some(',')), Ok(("1.234".into(), 0.9)));
        assert_eq!(read("1.234", Some(',')), Ok(("1234".into(), 0.9)));
        assert_eq!(read("1.234", Some('.')), Ok(("1.234".into(), 0.9)));
        assert_eq!(read("-999,000", Some('.')), Ok(("-999000".into(), 0.9)));
        // A hint that is not a decimal mark is no hint.
        assert_eq!(read("1,234", Some('x')), Ok(("1234".into(), 0.6)));
    }

    #[test]
    fn a_document_that_contradicts_the_hint_is_read_but_flagged() {
        let (value, certainty) = read("1,234.56", Some(',')).unwrap();
        assert_eq!(value, "1234.56");
        assert!((0.8..1.0).contains(&certainty));
    }

    #[test]
    fn indian_grouping_is_read_with_slightly_lower_certainty() {
        assert_eq!(read("12,34,567.50", None), Ok(("1234567.50".into(), 0.9)));
    }

    #[test]
    fn rejects_malformed_numbers() {
        for raw in [
            "1,23,4",
            "1..2",
            "1,,2",
            "12a",
            "abc",
            "1.234,56,7",
            "1,234.567.8",
            ",5",
            "5,",
            "1 23",
            "1 234.567,89",
            "1.2.3",
            "--1",
            "1-2",
            "0.234.567",
            "12 34,5",
            "1e5",
            "∞",
        ] {
            assert!(
                matches!(
                    read(raw, None),
                    Err(ParseError::Invalid {
                        kind: "decimal",
                        ..
                    })
                ),
                "{raw} should be rejected, got {:?}",
                read(raw, None)
            );
        }
        assert_eq!(read("   ", None), Err(ParseError::Empty));
    }

    #[test]
    fn rejects_more_digits_than_it_can_keep_exact() {
        assert!(read(&"9".repeat(28), None).is_ok());
        assert!(read(&"9".repeat(29), None).is_err());
        assert!(read(&format!("0.{}", "1".repeat(40)), None).is_err());
    }

    #[test]
    fn equal_values_compare_equal_whatever_their_scale() {
        assert_eq!(dec("12.50"), dec("12.5"));
        assert_eq!(dec("12.50").to_string(), "12.50");
        assert!(dec("-0.5") < dec("0.3"));
        assert!(dec("-1.5") < dec("-1.2"));
        assert!(dec("-0.9") > dec("-1"));
        assert!(dec("2") > dec(&format!("1.{}", "9".repeat(37))));
        let max = Decimal::new(i128::MAX, 0).unwrap();
        let tiny = Decimal::new(1, Decimal::MAX_SCALE).unwrap();
        assert!(max > tiny && tiny > Decimal::ZERO);
        assert!(Decimal::new(i128::MIN, Decimal::MAX_SCALE).unwrap() < Decimal::ZERO);
    }

    #[test]
    fn canonical_text_round_trips() {
        for s in [
            "0",
            "-0.05",
            "1234.5600",
            "170141183460469231731687303715884105727",
        ] {
            assert_eq!(dec(s).to_string(), s);
        }
        for bad in ["", "-", ".5", "5.", "1,5", "1.2.3", "+1", " 1"] {
            assert!(bad.parse::<Decimal>().is_err(), "{bad}");
        }
        assert_eq!(
            Decimal::new(i128::MIN, 0).unwrap().to_string(),
            i128::MIN.to_string()
        );
    }

    #[test]
    fn helpers_answer_as_documented() {
        assert_eq!(dec("12.00").to_i64(), Some(12));
        assert_eq!(dec("12.01").to_i64(), None);
        assert!(dec("12.00").is_integer());
        assert_eq!(dec("12.50").normalized().scale(), 1);
        assert_eq!(dec("0.1").to_f64(), 0.1);
        assert!(Decimal::new(1, 39).is_none());
        assert_eq!(Decimal::from_integer(-3), dec("-3.000"));
    }

    proptest::proptest! {
        /// The fast float conversion is the correctly rounded one, as parsing the text is.
        #[test]
        fn to_f64_is_correctly_rounded(units in proptest::prelude::any::<i64>(), scale in 0u32..30) {
            let d = Decimal::new(i128::from(units), scale).unwrap();
            let text: f64 = d.to_string().parse().unwrap();
            proptest::prop_assert_eq!(d.to_f64().to_bits(), text.to_bits());
        }

        /// The fast multiplication answers as `i128::checked_mul` does, overflow included.
        #[test]
        fn multiplication_agrees_with_checked_mul(a in proptest::prelude::any::<i128>(), b in proptest::prelude::any::<i64>(), small in proptest::prelude::any::<i64>()) {
            for (x, y) in [(a, i128::from(b)), (i128::from(small), i128::from(b)), (i128::from(b), a)] {
                proptest::prop_assert_eq!(checked_mul_units(x, y), x.checked_mul(y));
            }
        }

        /// Comparing two decimals of one scale agrees with comparing them at different scales.
        #[test]
        fn ordering_ignores_scale(a in proptest::prelude::any::<i64>(), b in proptest::prelude::any::<i64>(), s in 0u32..20) {
            let (x, y) = (Decimal::new(i128::from(a), s).unwrap(), Decimal::new(i128::from(b), s).unwrap());
            let y_wider = Decimal::new(i128::from(b) * 10, s + 1).unwrap();
            proptest::prop_assert_eq!(x.cmp(&y), x.cmp(&y_wider));
            proptest::prop_assert_eq!(x.cmp(&y), a.cmp(&b));
        }
    }

    /// Writes a number the way a document from one locale would.
    fn format(int: u64, frac: &str, negative: bool, group: Option<char>, mark: char) -> String {
        let digits = int.to_string();
        let mut out = String::new();
        if negative {
            out.push('-');
        }
        match group {
            Some(g) => {
                let groups: Vec<&str> = digits
                    .as_bytes()
                    .rchunks(3)
                    .rev()
                    .map(|c| std::str::from_utf8(c).unwrap())
                    .collect();
                out.push_str(&groups.join(&g.to_string()));
            }
            None => out.push_str(&digits),
        }
        if !frac.is_empty() {
            out.push(mark);
            out.push_str(frac);
        }
        out
    }

    fn styles() -> impl Strategy<Value = (Option<char>, char)> {
        prop::sample::select(vec![
            (Some(','), '.'),
            (Some('.'), ','),
            (Some(' '), ','),
            (Some(' '), '.'),
            (Some('\''), '.'),
            (None, '.'),
            (None, ','),
        ])
    }

    proptest! {
        #[test]
        fn locale_formatting_round_trips_with_the_hint(
            int in 0u64..1_000_000_000_000_000,
            frac in "[0-9]{0,6}",
            negative in any::<bool>(),
            (group, mark) in styles(),
        ) {
            let text = format(int, &frac, negative, group, mark);
            let expected: Decimal =
                format!("{}{int}{}{frac}", if negative { "-" } else { "" }, if frac.is_empty() { "" } else { "." })
                    .parse()
                    .unwrap();
            let hints = ParseHints { decimal_separator: Some(mark), ..ParseHints::default() };
            let parsed = parse(&text, &hints).unwrap();
            let Value::Decimal(got) = parsed.value else { panic!() };
            prop_assert_eq!(got, expected);
            prop_assert_eq!(got.scale(), expected.scale());
        }

        #[test]
        fn unambiguous_formatting_round_trips_without_a_hint(
            int in 0u64..1_000_000_000_000,
            frac in "[0-9]{1,2}|[0-9]{4,6}",
            (group, mark) in styles(),
        ) {
            let text = format(int, &frac, false, group, mark);
            let expected: Decimal = format!("{int}.{frac}").parse().unwrap();
            let parsed = parse(&text, &ParseHints::default()).unwrap();
            prop_assert_eq!(parsed.value, Value::Decimal(expected));
            prop_assert!(parsed.certainty >= 0.9);
        }

        #[test]
        fn ordering_agrees_with_the_float_approximation(a in -1_000_000i64..1_000_000, sa in 0u32..6, b in -1_000_000i64..1_000_000, sb in 0u32..6) {
            let x = Decimal::new(a.into(), sa).unwrap();
            let y = Decimal::new(b.into(), sb).unwrap();
            // Exact over f64's 53 bits: both sides are small.
            let fx = a as f64 / 10f64.powi(sa as i32);
            let fy = b as f64 / 10f64.powi(sb as i32);
            if (fx - fy).abs() > 1e-9 {
                prop_assert_eq!(x.cmp(&y), fx.partial_cmp(&fy).unwrap());
            }
            prop_assert_eq!(x == y, x.normalized().units() == y.normalized().units() && x.normalized().scale() == y.normalized().scale());
        }

        #[test]
        fn display_and_from_str_round_trip(units in any::<i128>(), scale in 0u32..=Decimal::MAX_SCALE) {
            let d = Decimal::new(units, scale).unwrap();
            let back: Decimal = d.to_string().parse().unwrap();
            prop_assert_eq!(back.units(), units);
            prop_assert_eq!(back.scale(), scale);
        }

        #[test]
        fn never_panics(raw in "\\PC{0,30}", hint in prop::option::of(prop::sample::select(vec!['.', ',', ' ']))) {
            let hints = ParseHints { decimal_separator: hint, ..ParseHints::default() };
            let _ = parse(&raw, &hints);
            let _ = raw.parse::<Decimal>();
        }
    }
}
