//! ISO 6346 shipping container numbers (`MSCU 123456-6`), with their check digit verified.
//!
//! A container number is three letters of owner code, a category letter (`U` freight, `J`
//! detachable equipment, `Z` trailer or chassis), six serial digits and a check digit. OCR
//! confuses `8` with `B` and drops digits; the check digit catches most of it. A wrong check
//! digit is still returned, flagged and at low certainty, because the text is plainly meant
//! as a container number and a reviewer fixing one character beats losing the field.

use super::{non_empty, ParseError, Parsed, ParserKind, Value};

/// Certainty for a well-formed number whose check digit does not match: a candidate to show
/// a reviewer, never enough to pass a rule on its own.
pub const WRONG_CHECK_DIGIT: f64 = 0.3;

/// ISO 6346 letter values: counting from A = 10 but skipping multiples of 11 (11, 22, 33),
/// which would weigh the same as a carried digit and weaken the check.
const LETTER_VALUES: [u32; 26] = [
    10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 34, 35, 36,
    37, 38,
];

/// Parses a container number, ignoring spaces and hyphens and upper-casing letters.
/// A well-formed number with a wrong check digit is `Ok` with `check_digit_valid: false` and
/// certainty [`WRONG_CHECK_DIGIT`].
pub fn parse(raw: &str) -> Result<Parsed, ParseError> {
    let bad = |reason: String| ParseError::invalid(ParserKind::ContainerNumber, raw, reason);
    // Punctuation around the code belongs to the sentence or the form (`CBHU6215733.`).
    let text = non_empty(raw)?.trim_matches(['.', ',', ';', ':']);
    let code: String = text
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '\u{a0}'))
        .flat_map(char::to_uppercase)
        .collect();
    let chars: Vec<char> = code.chars().collect();
    if chars.len() != 11 {
        return Err(bad(format!(
            "expected 11 characters without spaces and hyphens, found {}",
            chars.len()
        )));
    }
    if !chars[..3].iter().all(char::is_ascii_uppercase) {
        return Err(bad("the owner code must be three letters".into()));
    }
    if !matches!(chars[3], 'U' | 'J' | 'Z') {
        return Err(bad(format!(
            "the category letter must be U, J or Z, not {:?}",
            chars[3]
        )));
    }
    if !chars[4..].iter().all(char::is_ascii_digit) {
        return Err(bad(
            "the serial number and check digit must be seven digits".into(),
        ));
    }
    let expected =
        check_digit(&code[..10]).ok_or_else(|| bad("cannot compute the check digit".into()))?;
    let written = chars[10].to_digit(10);
    let check_digit_valid = written == Some(expected);
    let certainty = if check_digit_valid {
        1.0
    } else {
        WRONG_CHECK_DIGIT
    };
    Ok(Parsed::new(
        Value::ContainerNumber {
            code,
            check_digit_valid,
        },
        certainty,
    ))
}

/// The ISO 6346 check digit of the first ten characters (owner code, category, serial):
/// the sum of each character's value times `2^position`, modulo 11, with 10 written as 0.
///
/// `None` unless given four upper-case letters and six digits. Public so tools and tests can
/// build valid numbers or suggest the intended one.
pub fn check_digit(first_ten: &str) -> Option<u32> {
    let b = first_ten.as_bytes();
    if b.len() != 10
        || !b[..4].iter().all(u8::is_ascii_uppercase)
        || !b[4..].iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    let sum: u32 = b
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let value = if c.is_ascii_digit() {
                u32::from(c - b'0')
            } else {
                LETTER_VALUES[usize::from(c - b'A')]
            };
            value << i
        })
        .sum();
    // Remainder 10 is written 0, so it collides with remainder 0: ISO 6346 asks owners not to
    // issue such serials, but some exist, and a one-digit slip between them goes unnoticed.
    Some(sum % 11 % 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn container(raw: &str) -> Result<(String, bool, f64), ParseError> {
        parse(raw).map(|p| match p.value {
            Value::ContainerNumber {
                code,
                check_digit_valid,
            } => (code, check_digit_valid, p.certainty),
            other => panic!("unexpected {other:?}"),
        })
    }

    #[test]
    fn verified_examples() {
        assert_eq!(
            container("CSQU3054383"),
            Ok(("CSQU3054383".into(), true, 1.0))
        );
        assert_eq!(
            container("MSCU1234566"),
            Ok(("MSCU1234566".into(), true, 1.0))
        );
        assert_eq!(
            container("MSCU1234565"),
            Ok(("MSCU1234565".into(), false, WRONG_CHECK_DIGIT))
        );
    }

    #[test]
    fn tolerates_spaces_hyphens_and_lower_case() {
        for raw in [
            "MSCU 123456-6",
            "MSCU-123456-6",
            "MSCU 123456 6",
            " mscu1234566 ",
            "MSCU\u{a0}1234566",
            "MSCU1234566.",
            ":MSCU 123456-6,",
        ] {
            assert_eq!(
                container(raw),
                Ok(("MSCU1234566".into(), true, 1.0)),
                "{raw}"
            );
        }
    }

    #[test]
    fn letter_values_skip_multiples_of_eleven() {
        let mut expected = Vec::new();
        let mut v = 10;
        while expected.len() < 26 {
            if v % 11 != 0 {
                expected.push(v);
            }
            v += 1;
        }
        assert_eq!(LETTER_VALUES.to_vec(), expected);
    }

    #[test]
    fn refuses_what_is_not_shaped_like_a_container_number() {
        for raw in [
            "MSCU123456",    // no check digit
            "MSCU12345666",  // one digit too many
            "MSCX1234566",   // category X
            "MS1U1234566",   // digit in the owner code
            "MSCU12345B6",   // letter in the serial
            "MSCU1234566/1", // extra text
            "ÀSCU1234566",   // not an ASCII letter
            "container",
        ] {
            assert!(
                matches!(
                    container(raw),
                    Err(ParseError::Invalid {
                        kind: "container_number",
                        ..
                    })
                ),
                "{raw}"
            );
        }
        assert_eq!(container("  "), Err(ParseError::Empty));
    }

    #[test]
    fn a_slip_between_remainders_ten_and_zero_goes_unnoticed() {
        // The price of writing remainder 10 as 0, kept here so nobody "fixes" the test below.
        let first_ten = (0..1_000_000)
            .map(|n| format!("MSCU{n:06}"))
            .find(|s| remainder(s) == 10)
            .unwrap();
        let twin = (0..10)
            .map(|d| format!("{}{d}", &first_ten[..9]))
            .find(|s| remainder(s) == 0)
            .unwrap();
        assert_eq!(check_digit(&first_ten), Some(0));
        assert_eq!(check_digit(&twin), Some(0));
        assert!(container(&format!("{twin}0")).unwrap().1);
    }

    fn remainder(first_ten: &str) -> u32 {
        first_ten
            .bytes()
            .enumerate()
            .map(|(i, c)| {
                let v = if c.is_ascii_digit() {
                    u32::from(c - b'0')
                } else {
                    LETTER_VALUES[usize::from(c - b'A')]
                };
                v << i
            })
            .sum::<u32>()
            % 11
    }

    fn valid_first_ten() -> impl Strategy<Value = String> {
        (
            "[A-Z]{3}",
            prop::sample::select(vec!['U', 'J', 'Z']),
            "[0-9]{6}",
        )
            .prop_map(|(owner, category, serial)| format!("{owner}{category}{serial}"))
    }

    proptest! {
        #[test]
        fn numbers_with_their_check_digit_are_valid(first_ten in valid_first_ten(), spaced in any::<bool>()) {
            let full = format!("{first_ten}{}", check_digit(&first_ten).unwrap());
            let text = if spaced { format!("{} {}-{}", &full[..4], &full[4..10], &full[10..]) } else { full.clone() };
            prop_assert_eq!(container(&text), Ok((full, true, 1.0)));
        }

        #[test]
        fn one_changed_digit_is_flagged(first_ten in valid_first_ten(), position in 4usize..11, delta in 1u8..10) {
            let full = format!("{first_ten}{}", check_digit(&first_ten).unwrap());
            let mut bytes = full.clone().into_bytes();
            bytes[position] = b'0' + (bytes[position] - b'0' + delta) % 10;
            let changed = String::from_utf8(bytes).unwrap();
            let (_, valid, certainty) = container(&changed).unwrap();
            // Only a serial slip that swaps remainder 10 for 0 (or back) keeps the same digit.
            let collides = position < 10 && {
                let pair = [remainder(&first_ten), remainder(&changed[..10])];
                pair == [0, 10] || pair == [10, 0]
            };
            prop_assert_eq!(valid, collides);
            prop_assert!(valid || certainty <= WRONG_CHECK_DIGIT);
        }

        #[test]
        fn never_panics(raw in "\\PC{0,20}|[A-Za-z]{4}[ -]?[0-9]{6}[ -]?[0-9]") {
            let _ = parse(&raw);
            let _ = check_digit(&raw);
        }
    }
}
