//! Masses with a unit (`1 234,5 KGS`, `2.5 MT`, `850 lbs`), converted to kilograms.
//!
//! Invoices, packing lists and bills of lading for one shipment often state the same weight
//! in different units, and `NUMERIC_TOLERANCE` must compare them. Conversion is exact
//! (a pound is defined as 0.45359237 kg), so a tolerance check never fails on rounding.
//! A number without a unit is refused: guessing kilograms would turn `1,850` pounds into a
//! confident, wrong 1,850 kg.

use super::{non_empty, numeral, Decimal, ParseError, ParseHints, Parsed, ParserKind, Value};

/// How a unit converts to kilograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Kilograms,
    Tonnes,
    Pounds,
    Grams,
}

/// Certainty for `ton`/`tons`: in freight it almost always means the metric tonne, but the
/// short (907 kg) and long (1016 kg) tons exist, so a person should confirm.
const BARE_TON: f64 = 0.7;

/// Spellings in lower case, with the certainty that the spelling means that unit.
const UNITS: &[(&str, Unit, f64)] = &[
    ("kg", Unit::Kilograms, 1.0),
    ("kgs", Unit::Kilograms, 1.0),
    ("kilo", Unit::Kilograms, 1.0),
    ("kilos", Unit::Kilograms, 1.0),
    ("kilogram", Unit::Kilograms, 1.0),
    ("kilograms", Unit::Kilograms, 1.0),
    ("kilogramme", Unit::Kilograms, 1.0),
    ("kilogrammes", Unit::Kilograms, 1.0),
    ("t", Unit::Tonnes, 1.0),
    ("mt", Unit::Tonnes, 1.0),
    ("tonne", Unit::Tonnes, 1.0),
    ("tonnes", Unit::Tonnes, 1.0),
    ("metric ton", Unit::Tonnes, 1.0),
    ("metric tons", Unit::Tonnes, 1.0),
    ("ton", Unit::Tonnes, BARE_TON),
    ("tons", Unit::Tonnes, BARE_TON),
    ("lb", Unit::Pounds, 1.0),
    ("lbs", Unit::Pounds, 1.0),
    ("pound", Unit::Pounds, 1.0),
    ("pounds", Unit::Pounds, 1.0),
    ("g", Unit::Grams, 1.0),
    ("gram", Unit::Grams, 1.0),
    ("grams", Unit::Grams, 1.0),
    ("gramme", Unit::Grams, 1.0),
    ("grammes", Unit::Grams, 1.0),
];

/// Kilograms in one avoirdupois pound, exact by the 1959 international definition.
const KG_PER_POUND: Decimal = match Decimal::new(45_359_237, 8) {
    Some(d) => d,
    None => panic!("valid constant"),
};

const KG_PER_TONNE: Decimal = Decimal::from_integer(1000);

/// Parses a number followed by a mass unit and converts it to kilograms. The unit is kept as
/// written; kilograms keep the written scale, converted values drop trailing zeros.
pub fn parse(raw: &str, hints: &ParseHints) -> Result<Parsed, ParseError> {
    let bad = |reason: String| ParseError::invalid(ParserKind::Weight, raw, reason);
    let text = non_empty(raw)?;
    let Some(at) = text.find(char::is_alphabetic) else {
        return Err(bad("no unit: write kg, t, lb or g after the number".into()));
    };
    let (number, written) = (text[..at].trim_end(), text[at..].trim_end());
    let spelled = written
        .strip_suffix('.')
        .unwrap_or(written)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let Some(&(_, unit, unit_certainty)) = UNITS.iter().find(|(s, _, _)| *s == spelled) else {
        return Err(bad(format!("unknown weight unit {written:?}")));
    };
    if number.is_empty() {
        return Err(bad(format!("no number before {written:?}")));
    }
    let reading = numeral::read(number, hints).map_err(bad)?;
    if reading.value.is_negative() {
        return Err(bad("a weight cannot be negative".into()));
    }
    let kg = to_kilograms(reading.value, unit).ok_or_else(|| bad("too large to convert".into()))?;
    let value = Value::Weight {
        kg,
        unit: written.to_owned(),
    };
    Ok(Parsed::new(value, reading.certainty * unit_certainty))
}

/// Exact conversion; `None` only if the digits would not fit, which the numeral's digit limit
/// rules out in practice.
fn to_kilograms(amount: Decimal, unit: Unit) -> Option<Decimal> {
    Some(match unit {
        Unit::Kilograms => amount,
        Unit::Tonnes => amount.checked_mul(KG_PER_TONNE)?.normalized(),
        Unit::Pounds => amount.checked_mul(KG_PER_POUND)?.normalized(),
        Unit::Grams => Decimal::new(amount.units(), amount.scale() + 3)?.normalized(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn weight(raw: &str) -> Result<(String, String, f64), ParseError> {
        parse(raw, &ParseHints::default()).map(|p| match p.value {
            Value::Weight { kg, unit } => (kg.to_string(), unit, p.certainty),
            other => panic!("unexpected {other:?}"),
        })
    }

    fn kg(raw: &str) -> String {
        weight(raw).unwrap().0
    }

    #[test]
    fn kilograms_keep_the_written_value_and_unit() {
        assert_eq!(
            weight("1 234,5 KGS"),
            Ok(("1234.5".into(), "KGS".into(), 1.0))
        );
        assert_eq!(
            weight("12,500.00 kg"),
            Ok(("12500.00".into(), "kg".into(), 1.0))
        );
        assert_eq!(weight("12kg."), Ok(("12".into(), "kg.".into(), 1.0)));
        for raw in ["7 KG", "7 kilos", "7 Kilograms", "7 kilogrammes", "7KGS"] {
            assert_eq!(kg(raw), "7", "{raw}");
        }
    }

    #[test]
    fn tonnes_pounds_and_grams_convert_exactly() {
        assert_eq!(kg("2.5 MT"), "2500");
        assert_eq!(kg("2,5 t"), "2500");
        assert_eq!(kg("3 tonnes"), "3000");
        assert_eq!(kg("1 metric  tons"), "1000");
        assert_eq!(kg("1 lb"), "0.45359237");
        assert_eq!(kg("2 LBS"), "0.90718474");
        assert_eq!(kg("1,000 lbs"), "453.59237");
        assert_eq!(kg("500 g"), "0.5");
        assert_eq!(kg("1250 grams"), "1.25");
    }

    #[test]
    fn a_bare_ton_is_metric_but_uncertain() {
        assert_eq!(
            weight("20 tons"),
            Ok(("20000".into(), "tons".into(), BARE_TON))
        );
    }

    #[test]
    fn ambiguity_of_the_number_carries_into_the_certainty() {
        assert_eq!(weight("1,850 lbs").unwrap().2, 0.6);
    }

    #[test]
    fn refuses_missing_unknown_or_negative() {
        for raw in [
            "1234",
            "12 oz",
            "kg 12",
            "kg",
            "-5 kg",
            "12 kg net",
            "12 k g",
            "1..2 kg",
        ] {
            assert!(
                matches!(weight(raw), Err(ParseError::Invalid { kind: "weight", .. })),
                "{raw}"
            );
        }
        assert_eq!(weight("0 kg").unwrap().0, "0");
        assert_eq!(weight(""), Err(ParseError::Empty));
    }

    #[test]
    fn the_largest_accepted_number_still_converts() {
        let max = "9".repeat(numeral::MAX_DIGITS);
        assert!(weight(&format!("{max} lbs")).is_ok());
        assert!(weight(&format!("0.{max} g")).is_ok());
        assert!(weight(&format!("{max} t")).is_ok());
    }

    proptest! {
        #[test]
        fn every_unit_converts_by_its_factor(units in 0i64..10_000_000_000, scale in 0u32..4) {
            let amount = Decimal::new(units.into(), scale).unwrap();
            let text = amount.to_string();
            // The hint settles `123.456`, which is otherwise read as a thousands separator.
            let hints = ParseHints { decimal_separator: Some('.'), ..ParseHints::default() };
            let in_kg = |unit: &str| match parse(&format!("{text} {unit}"), &hints).unwrap().value {
                Value::Weight { kg, .. } => kg,
                other => panic!("unexpected {other:?}"),
            };
            prop_assert_eq!(in_kg("kg"), amount);
            prop_assert_eq!(in_kg("t"), Decimal::new(i128::from(units) * 1000, scale).unwrap());
            prop_assert_eq!(in_kg("g"), Decimal::new(units.into(), scale + 3).unwrap());
            prop_assert_eq!(in_kg("lbs"), Decimal::new(i128::from(units) * 45_359_237, scale + 8).unwrap());
        }

        #[test]
        fn never_panics(raw in "\\PC{0,30}|[-0-9., ]{0,12} ?[a-zA-Z]{0,6}\\.?") {
            let _ = parse(&raw, &ParseHints::default());
        }
    }
}
