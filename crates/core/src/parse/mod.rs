//! Typed value parsers: turn the raw text of a field found on a page into a typed value.
//!
//! Each parser answers two questions: which value the text means, and how sure it is
//! (`certainty` in `[0, 1]`). Documents are written in many locales and read through OCR, so
//! the same characters can mean different values (`1,234` is one thousand two hundred and
//! thirty-four in New York and one point two three four in Paris). Rather than guess silently,
//! a parser picks the likeliest reading and lowers its certainty; the safeguards in the rules
//! engine turn low certainty into a review instead of a wrong decision.
//!
//! The design choice is that every parser is a pure function of `(raw, hints)`: the hints
//! carry what the workflow knows about the document's locale, and nothing else leaks in. The
//! cost is that a parser never sees the rest of the page, so context such as "every other
//! amount on this invoice uses a comma" must be turned into a hint by the caller.

use serde::{Deserialize, Serialize};

use crate::spelled_enum;

pub mod container_number;
pub mod date;
pub mod decimal;
pub mod integer;
pub mod money;
pub mod months;
mod numeral;
pub mod text;
pub mod weight;

pub use date::Date;
pub use decimal::Decimal;

/// A typed value read from a page.
///
/// Serialized as `{"kind": "<parser kind>", "value": …}`, with decimals and dates as strings
/// (`"1234.56"`, `"2024-03-14"`) so no JSON reader turns an amount into a lossy float.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Value {
    /// Free text, trimmed and with whitespace collapsed.
    Text(String),
    /// A whole number, such as a count of packages.
    Integer(i64),
    /// A number with an exact decimal fraction.
    Decimal(Decimal),
    /// An amount of money.
    Money {
        /// The amount, exactly as written (scale kept, so `12.50` stays `12.50`).
        amount: Decimal,
        /// ISO 4217 code, from the text or the workflow's default; `None` when neither says.
        currency: Option<String>,
    },
    /// A mass, converted to kilograms so documents in different units compare directly.
    Weight {
        /// The mass in kilograms (exact: pounds use the defined 0.45359237 kg).
        kg: Decimal,
        /// The unit as written on the page, kept as evidence of the conversion.
        unit: String,
    },
    /// A calendar date.
    Date(Date),
    /// An ISO 6346 shipping container number.
    ContainerNumber {
        /// Eleven characters, upper case, without spaces or hyphens (`MSCU1234566`).
        code: String,
        /// Whether the eleventh character matches the computed check digit.
        check_digit_valid: bool,
    },
}

impl Value {
    /// Which parser produces this kind of value.
    pub fn kind(&self) -> ParserKind {
        match self {
            Value::Text(_) => ParserKind::Text,
            Value::Integer(_) => ParserKind::Integer,
            Value::Decimal(_) => ParserKind::Decimal,
            Value::Money { .. } => ParserKind::Money,
            Value::Weight { .. } => ParserKind::Weight,
            Value::Date(_) => ParserKind::Date,
            Value::ContainerNumber { .. } => ParserKind::ContainerNumber,
        }
    }
}

/// A value as a person reads it, the same on the desk, in the PDF report and in the CLI:
/// `12.50 EUR`, `453.59 kg (written in lb)`, `MSCU1234565`, `2024-03-14`, text bare. What a
/// reader must not miss is said: a unit converted, a wrong check digit.
impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Text(s) => f.write_str(s),
            Value::Integer(i) => write!(f, "{i}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Money {
                amount,
                currency: Some(c),
            } => write!(f, "{amount} {c}"),
            Value::Money { amount, .. } => write!(f, "{amount}"),
            // "kg", "KGS", "kilos": no conversion happened, the unit needs no mention.
            Value::Weight { kg, unit } if is_kilograms(unit) => write!(f, "{kg} kg"),
            Value::Weight { kg, unit } => write!(f, "{kg} kg (written in {unit})"),
            Value::Date(d) => write!(f, "{d}"),
            Value::ContainerNumber {
                code,
                check_digit_valid: true,
            } => f.write_str(code),
            Value::ContainerNumber { code, .. } => write!(f, "{code} (check digit wrong)"),
        }
    }
}

fn is_kilograms(unit: &str) -> bool {
    let unit = unit.to_ascii_lowercase();
    unit.is_empty() || unit.starts_with("kg") || unit.starts_with("kilo")
}

/// A value as stored (the JSON of a [`Value`], or any other JSON a fact may hold) as
/// [`Value`]'s `Display` shows it: typed values read as one line, strings bare, anything
/// else as its JSON.
pub fn show_stored(stored: &serde_json::Value) -> String {
    match Value::deserialize(stored) {
        Ok(value) => value.to_string(),
        Err(_) => match stored {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

/// A parser's answer: the value and how sure the parser is that the text means it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parsed {
    /// The typed value.
    pub value: Value,
    /// In `[0, 1]`; below 1 when the text admits another reading (locale, `$`, OCR noise).
    pub certainty: f64,
}

impl Parsed {
    /// Builds an answer, clamping certainty into `[0, 1]` so no parser can report more.
    pub(crate) fn new(value: Value, certainty: f64) -> Self {
        Self {
            value,
            certainty: certainty.clamp(0.0, 1.0),
        }
    }
}

/// Why a text could not be read as the requested kind of value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text was empty or only whitespace: the field is missing, not malformed.
    #[error("nothing to parse: the text is empty")]
    Empty,
    /// The text is there but is not a value of this kind.
    #[error("not a valid {kind}: {raw:?} ({reason})")]
    Invalid {
        /// The parser kind's spelling (`"decimal"`, `"date"` …).
        kind: &'static str,
        /// The offending text, shortened to [`MAX_RAW_IN_ERROR`] characters.
        raw: String,
        /// What is wrong, for the operator reviewing the fact.
        reason: String,
    },
}

/// Longest raw text kept in an error; extractors sometimes hand over a whole line or page,
/// and an error message is no place to store it.
pub const MAX_RAW_IN_ERROR: usize = 120;

impl ParseError {
    /// Builds an `Invalid` error, shortening `raw` so errors stay readable in logs.
    pub(crate) fn invalid(kind: ParserKind, raw: &str, reason: impl Into<String>) -> Self {
        let raw = if raw.chars().count() > MAX_RAW_IN_ERROR {
            let mut short: String = raw.chars().take(MAX_RAW_IN_ERROR).collect();
            short.push('…');
            short
        } else {
            raw.to_owned()
        };
        ParseError::Invalid {
            kind: kind.as_str(),
            raw,
            reason: reason.into(),
        }
    }
}

spelled_enum! {
    /// Which parser a field definition asks for; spelled as in workflow files.
    pub enum ParserKind: "parser kind" {
        /// Free text.
        Text = "text",
        /// A whole number, optionally followed by a package word (`12 PKGS`).
        Integer = "integer",
        /// A number with EU or US separators.
        Decimal = "decimal",
        /// An amount with a currency code or symbol.
        Money = "money",
        /// A mass with a unit, converted to kilograms.
        Weight = "weight",
        /// A date in ISO, numeric or month-name form.
        Date = "date",
        /// An ISO 6346 container number with its check digit.
        ContainerNumber = "container_number",
    }
}

spelled_enum! {
    /// How to read a numeric date whose day and month could be swapped (`03/04/2024`).
    #[derive(Default)]
    pub enum DateOrder: "date order" {
        /// `14/03/2024`: most of the world, and the default.
        #[default]
        DayFirst = "day_first",
        /// `03/14/2024`: the United States.
        MonthFirst = "month_first",
        /// `24/03/14`: East Asia; only changes all-two-digit dates, as a four-digit first
        /// component is read year-first whatever the hint.
        YearFirst = "year_first",
    }
}

/// What the workflow knows about a document's locale, to settle readings the text leaves open.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ParseHints {
    /// `'.'` or `','`: which character marks decimals when a number has only one separator
    /// followed by three digits. Other characters are ignored.
    pub decimal_separator: Option<char>,
    /// ISO 4217 code assumed when an amount carries no currency.
    pub default_currency: Option<String>,
    /// How to order day and month in an ambiguous numeric date.
    pub date_order: DateOrder,
}

/// Parses `raw` as a value of `kind`.
///
/// Empty or whitespace-only text is [`ParseError::Empty`] for every kind, so a missing field
/// is never confused with a malformed one.
pub fn parse(kind: ParserKind, raw: &str, hints: &ParseHints) -> Result<Parsed, ParseError> {
    match kind {
        ParserKind::Text => text::parse(raw),
        ParserKind::Integer => integer::parse(raw, hints),
        ParserKind::Decimal => decimal::parse(raw, hints),
        ParserKind::Money => money::parse(raw, hints),
        ParserKind::Weight => weight::parse(raw, hints),
        ParserKind::Date => date::parse(raw, hints),
        ParserKind::ContainerNumber => container_number::parse(raw),
    }
}

/// Trims `raw`, or answers `Empty` when nothing is left; the first step of every parser.
pub(crate) fn non_empty(raw: &str) -> Result<&str, ParseError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        Err(ParseError::Empty)
    } else {
        Ok(trimmed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parser_kinds_are_spelled_snake_case() {
        let spelled: Vec<&str> = ParserKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            spelled,
            [
                "text",
                "integer",
                "decimal",
                "money",
                "weight",
                "date",
                "container_number"
            ]
        );
        assert_eq!(
            serde_json::to_string(&ParserKind::ContainerNumber).unwrap(),
            "\"container_number\""
        );
        assert_eq!("money".parse::<ParserKind>(), Ok(ParserKind::Money));
        assert!("Money".parse::<ParserKind>().is_err());
    }

    #[test]
    fn empty_text_is_empty_for_every_kind() {
        for &kind in ParserKind::ALL {
            assert_eq!(
                parse(kind, " \t\n", &ParseHints::default()),
                Err(ParseError::Empty)
            );
        }
    }

    #[test]
    fn every_kind_dispatches_to_its_parser() {
        let hints = ParseHints::default();
        let samples = [
            (ParserKind::Text, "Hello  world"),
            (ParserKind::Integer, "12 PKGS"),
            (ParserKind::Decimal, "1.234,56"),
            (ParserKind::Money, "USD 1,234.56"),
            (ParserKind::Weight, "1 234,5 KGS"),
            (ParserKind::Date, "14 March 2024"),
            (ParserKind::ContainerNumber, "MSCU 123456-6"),
        ];
        for (kind, raw) in samples {
            let parsed = parse(kind, raw, &hints).unwrap();
            assert_eq!(parsed.value.kind(), kind, "{raw}");
        }
    }

    #[test]
    fn values_serialize_without_floats() {
        let hints = ParseHints::default();
        let money = parse(ParserKind::Money, "1.234,56 EUR", &hints).unwrap();
        assert_eq!(
            serde_json::to_value(&money.value).unwrap(),
            serde_json::json!({"kind": "money", "value": {"amount": "1234.56", "currency": "EUR"}})
        );
        let date = parse(ParserKind::Date, "2024-02-29", &hints).unwrap();
        assert_eq!(
            serde_json::to_value(&date.value).unwrap(),
            serde_json::json!({"kind": "date", "value": "2024-02-29"})
        );
        let text = parse(ParserKind::Text, " a  b ", &hints).unwrap();
        assert_eq!(
            serde_json::to_value(&text.value).unwrap(),
            serde_json::json!({"kind": "text", "value": "a b"})
        );
        let container = parse(ParserKind::ContainerNumber, "CSQU3054383", &hints).unwrap();
        assert_eq!(
            serde_json::to_value(&container).unwrap(),
            serde_json::json!({
                "value": {"kind": "container_number", "value": {"code": "CSQU3054383", "check_digit_valid": true}},
                "certainty": 1.0
            })
        );
    }

    #[test]
    fn values_round_trip_through_json() {
        let hints = ParseHints::default();
        for (kind, raw) in [
            (ParserKind::Integer, "-3"),
            (ParserKind::Decimal, "-0,05"),
            (ParserKind::Money, "$12.50"),
            (ParserKind::Weight, "2 lbs"),
            (ParserKind::Date, "29.02.2024"),
        ] {
            let value = parse(kind, raw, &hints).unwrap().value;
            let json = serde_json::to_string(&value).unwrap();
            let back: Value = serde_json::from_str(&json).unwrap();
            assert_eq!(back, value, "{json}");
            // Scale survives too: `12.50` must not come back as `12.5`.
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
        }
    }

    #[test]
    fn hints_deserialize_from_partial_workflow_config() {
        let hints: ParseHints = serde_json::from_str(r#"{"decimal_separator": ","}"#).unwrap();
        assert_eq!(hints.decimal_separator, Some(','));
        assert_eq!(hints.date_order, DateOrder::DayFirst);
        let hints: ParseHints = serde_json::from_str(r#"{"date_order": "month_first"}"#).unwrap();
        assert_eq!(hints.date_order, DateOrder::MonthFirst);
    }

    #[test]
    fn long_raw_text_is_shortened_in_errors() {
        let raw = "x".repeat(1000);
        let Err(ParseError::Invalid { raw: kept, .. }) =
            parse(ParserKind::Integer, &raw, &ParseHints::default())
        else {
            panic!("expected Invalid");
        };
        assert_eq!(kept.chars().count(), MAX_RAW_IN_ERROR + 1);
    }

    fn any_hints() -> impl Strategy<Value = ParseHints> {
        (
            prop_oneof![
                Just(None),
                Just(Some('.')),
                Just(Some(',')),
                any::<char>().prop_map(Some)
            ],
            prop_oneof![
                Just(None),
                Just(Some("EUR".to_owned())),
                "\\PC{0,5}".prop_map(Some)
            ],
            prop::sample::select(DateOrder::ALL),
        )
            .prop_map(
                |(decimal_separator, default_currency, date_order)| ParseHints {
                    decimal_separator,
                    default_currency,
                    date_order,
                },
            )
    }

    proptest! {
        #[test]
        fn never_panics_and_certainty_stays_in_range(
            raw in "\\PC{0,40}",
            kind in prop::sample::select(ParserKind::ALL),
            hints in any_hints(),
        ) {
            if let Ok(parsed) = parse(kind, &raw, &hints) {
                prop_assert!((0.0..=1.0).contains(&parsed.certainty));
                prop_assert_eq!(parsed.value.kind(), kind);
            }
        }

        #[test]
        fn never_panics_on_number_like_noise(
            raw in "[-+0-9.,' \u{a0}$€£¥a-zA-Z/]{0,24}",
            kind in prop::sample::select(ParserKind::ALL),
            hints in any_hints(),
        ) {
            if let Ok(parsed) = parse(kind, &raw, &hints) {
                prop_assert!((0.0..=1.0).contains(&parsed.certainty));
            }
        }
    }
}
