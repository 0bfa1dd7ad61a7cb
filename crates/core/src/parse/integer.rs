//! Whole numbers, such as package counts (`1 234`, `1,234`, `12 PKGS`).
//!
//! Counts are the integers documents carry, and they are usually followed by what is counted,
//! so a short list of package words is accepted after the number. Any other trailing word is
//! refused: `12 kg` in a count field means the field definition caught the wrong line.

use super::{non_empty, numeral, ParseError, ParseHints, Parsed, ParserKind, Value};

/// Words that may follow a count: English and French packaging terms as they appear on
/// packing lists and bills of lading, compared in lower case.
const COUNT_WORDS: &[&str] = &[
    "package", "packages", "pkg", "pkgs", "pk", "carton", "cartons", "ctn", "ctns", "pallet",
    "pallets", "palette", "palettes", "plt", "plts", "piece", "pieces", "pièce", "pièces", "pc",
    "pcs", "box", "boxes", "bag", "bags", "case", "cases", "crate", "crates", "drum", "drums",
    "roll", "rolls", "bundle", "bundles", "colis", "unit", "units",
];

/// Certainty for `1,234` in a count field. Higher than for a bare decimal: a count cannot
/// be one point two three four, so only a thousands separator makes sense.
const GROUPED_COUNT: f64 = 0.9;

/// Certainty for `1,234` when the hint says `,` marks decimals: the only integer reading
/// goes against the document's locale, so something is off (maybe the wrong field).
const GROUPED_AGAINST_HINT: f64 = 0.7;

/// Factor for a count followed by a full stop (`788.`): whole, and the stop most likely ends a
/// sentence, but it might be what is left of a fraction.
const TRAILING_STOP: f64 = 0.95;

/// Factor for a count written with a zero fraction (`12.00`): whole, but counts are rarely
/// written that way, so the field may hold an amount instead.
const ZERO_FRACTION: f64 = 0.8;

/// Parses a whole number with optional thousands separators and an optional package word
/// (`12 PKGS`, `1.234 cartons`). A number with a non-zero fraction is refused.
pub fn parse(raw: &str, hints: &ParseHints) -> Result<Parsed, ParseError> {
    let bad = |reason: String| ParseError::invalid(ParserKind::Integer, raw, reason);
    let text = non_empty(raw)?;
    let number = strip_count_word(text).map_err(bad)?;
    // `Number of packages: 788. CARTONS`: a full stop (or a speck OCR read as one) after a
    // count ends the sentence, it is no decimal mark.
    let (number, stop) = match number.strip_suffix(['.', ',']) {
        Some(n) if n.ends_with(|c: char| c.is_ascii_digit()) => (n, TRAILING_STOP),
        _ => (number, 1.0),
    };
    let reading = numeral::read(number, hints).map_err(bad)?;

    let (value, certainty) = match reading.alternative {
        // `1,234`: of the two readings, take the grouped one (scale 0).
        Some(alternative) => {
            if reading.value.scale() == 0 {
                (reading.value, GROUPED_COUNT)
            } else {
                (alternative, GROUPED_AGAINST_HINT)
            }
        }
        None if reading.value.scale() == 0 => (reading.value, reading.certainty),
        None if reading.value.is_integer() => (reading.value, reading.certainty * ZERO_FRACTION),
        None => return Err(bad(format!("{} has a fractional part", reading.value))),
    };
    let value = value
        .to_i64()
        .ok_or_else(|| bad("too large for a 64-bit integer".into()))?;
    Ok(Parsed::new(Value::Integer(value), certainty * stop))
}

/// Returns the number part of `12 PKGS`, refusing any trailing word not in [`COUNT_WORDS`].
fn strip_count_word(text: &str) -> Result<&str, String> {
    let Some(at) = text.find(char::is_alphabetic) else {
        return Ok(text);
    };
    let (number, word) = (text[..at].trim_end(), &text[at..]);
    let word_lower = word.strip_suffix('.').unwrap_or(word).to_lowercase();
    if !COUNT_WORDS.contains(&word_lower.as_str()) {
        return Err(format!("unexpected text {word:?} after the number"));
    }
    if number.is_empty() {
        return Err(format!("no number before {word:?}"));
    }
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn int(raw: &str, hint: Option<char>) -> Result<(i64, f64), ParseError> {
        let hints = ParseHints {
            decimal_separator: hint,
            ..ParseHints::default()
        };
        parse(raw, &hints).map(|p| match p.value {
            Value::Integer(i) => (i, p.certainty),
            other => panic!("unexpected {other:?}"),
        })
    }

    #[test]
    fn a_full_stop_after_a_count_ends_the_sentence() {
        assert_eq!(int("788.", None).map(|r| r.0), Ok(788));
        assert_eq!(int("788. CARTONS", None).map(|r| r.0), Ok(788));
        assert!(int("788.", None).is_ok_and(|(_, c)| c < 1.0));
        assert_eq!(int("1,234.", None).map(|r| r.0), Ok(1234));
        assert!(int(".", None).is_err());
        assert!(int("12.5.", None).is_err());
    }

    #[test]
    fn reads_plain_and_grouped_counts() {
        assert_eq!(int("12", None), Ok((12, 1.0)));
        assert_eq!(int("-3", None), Ok((-3, 1.0)));
        assert_eq!(int("1 234", None), Ok((1234, 1.0)));
        assert_eq!(int("1'234'567", None), Ok((1_234_567, 1.0)));
        assert_eq!(int("1.234.567", None), Ok((1_234_567, 1.0)));
        assert_eq!(int("1,234", None), Ok((1234, GROUPED_COUNT)));
        assert_eq!(int("1.234", None), Ok((1234, GROUPED_COUNT)));
        assert_eq!(int("1.234", Some(',')), Ok((1234, GROUPED_COUNT)));
        assert_eq!(int("1,234", Some(',')), Ok((1234, GROUPED_AGAINST_HINT)));
        assert_eq!(int("1.000", None), Ok((1000, GROUPED_COUNT)));
    }

    #[test]
    fn accepts_a_package_word_after_the_count() {
        for raw in [
            "12 PKGS",
            "12 packages",
            "12 Cartons",
            "12 ctns",
            "12 pallets",
            "12 pcs",
            "12PCS",
            "12 PKGS.",
            "12 colis",
        ] {
            assert_eq!(int(raw, None), Ok((12, 1.0)), "{raw}");
        }
        assert_eq!(int("1,200 CTNS", None), Ok((1200, GROUPED_COUNT)));
    }

    #[test]
    fn refuses_other_words_and_fractions() {
        for raw in [
            "12 kg",
            "12 PKGS extra",
            "PKGS 12",
            "PKGS",
            "twelve",
            "12.5",
            "1,5",
            "12,34",
            "3 x 40HC",
        ] {
            assert!(
                matches!(
                    int(raw, None),
                    Err(ParseError::Invalid {
                        kind: "integer",
                        ..
                    })
                ),
                "{raw}"
            );
        }
        assert_eq!(int("", None), Err(ParseError::Empty));
    }

    #[test]
    fn zero_fraction_is_whole_but_less_certain() {
        assert_eq!(int("12.00", None), Ok((12, ZERO_FRACTION)));
        assert_eq!(int("12,0 pcs", None), Ok((12, ZERO_FRACTION)));
    }

    #[test]
    fn refuses_values_beyond_i64() {
        assert_eq!(int("9223372036854775807", None), Ok((i64::MAX, 1.0)));
        assert!(int("9223372036854775808", None).is_err());
        assert_eq!(int("-9223372036854775808", None), Ok((i64::MIN, 1.0)));
    }

    fn grouped(n: u64, sep: &str) -> String {
        let digits = n.to_string();
        let groups: Vec<&str> = digits
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        groups.join(sep)
    }

    proptest! {
        #[test]
        fn grouped_counts_round_trip(
            n in 0u64..=i64::MAX as u64,
            sep in prop::sample::select(vec!["", ",", ".", " ", "'"]),
            word in prop::sample::select(vec!["", " PKGS", " cartons", " pcs"]),
        ) {
            let text = format!("{}{word}", grouped(n, sep));
            let (value, certainty) = int(&text, None).unwrap();
            prop_assert_eq!(value as u64, n);
            prop_assert!(certainty >= GROUPED_COUNT);
        }

        #[test]
        fn never_panics(raw in "\\PC{0,30}|[0-9., ]{0,12} ?[a-zA-Z]{0,6}") {
            let _ = parse(&raw, &ParseHints::default());
        }
    }
}
