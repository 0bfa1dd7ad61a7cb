//! The number grammar shared by the integer, decimal, money and weight parsers.
//!
//! A numeral is an optional sign, then digit groups joined by single separators (`.`, `,`,
//! space, apostrophe). Which separator marks the decimals is decided from the layout:
//!
//! - two kinds of mark (`1.234,56`): the last one is the decimal mark;
//! - grouping by space or apostrophe, then one mark (`1 234,56`): the mark is decimal;
//! - one mark used several times (`1.234.567`): it groups thousands;
//! - one lone mark (`1234,56`): decimal, unless exactly three digits follow a short,
//!   non-zero lead (`1,234`) — the one truly ambiguous case, settled by the hint.
//!
//! Every grouped integer part is checked: a first group of one to three digits, then groups
//! of exactly three (or the Indian 2-2-3 lakh grouping with commas), which is what rejects
//! OCR slips such as `1,23,4`.

use super::{Decimal, ParseHints};

/// Most significant digits accepted. Keeps every parsed value, and its conversion to
/// kilograms (pounds add eight digits), far inside `i128`, so no arithmetic can overflow.
pub(crate) const MAX_DIGITS: usize = 28;

/// Certainty for `1,234` with no hint. Below the usual review threshold on purpose: reading
/// it as a thousands separator is right more often in trade documents, but a wrong guess is
/// off by a factor of a thousand, which a person should look at.
const AMBIGUOUS_UNHINTED: f64 = 0.6;

/// Certainty for `1,234` settled by the workflow's hint: the hint is usually right, yet one
/// foreign supplier's invoice in a dossier is common enough to stop short of 1.
const AMBIGUOUS_HINTED: f64 = 0.9;

/// Certainty when the text is unambiguous but uses the other convention than the hint
/// (`1,234.56` with a `,` hint): the reading is clear, the surprise is worth a flag.
const HINT_CONTRADICTED: f64 = 0.85;

/// Certainty for Indian lakh grouping (`12,34,567`): valid, but rare enough in the documents
/// this reads that an OCR slip is a competing explanation.
const INDIAN_GROUPING: f64 = 0.9;

/// Certainty for `3.819.15`: one mark throughout, its last use before a group of one or two
/// digits, which only a decimal part has. The reading is the likely one, but the text is not
/// as printed (a fax's comma read as a point), so it stays well short of 1.
const MARK_READ_AS_GROUPING: f64 = 0.7;

/// A character that may sit between digit groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sep {
    Dot,
    Comma,
    Space,
    Apostrophe,
}

impl Sep {
    fn of(c: char) -> Option<Sep> {
        match c {
            '.' => Some(Sep::Dot),
            ',' => Some(Sep::Comma),
            // Typesetters use no-break and thin spaces to group digits.
            ' ' | '\u{a0}' | '\u{2009}' | '\u{202f}' => Some(Sep::Space),
            '\'' | '\u{2019}' => Some(Sep::Apostrophe),
            _ => None,
        }
    }

    /// Whether this separator can mark decimals (space and apostrophe only group).
    fn is_mark(self) -> bool {
        matches!(self, Sep::Dot | Sep::Comma)
    }
}

/// What a numeral means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reading {
    /// The chosen value.
    pub value: Decimal,
    /// How sure the grammar is of `value`, in `[0, 1]`.
    pub certainty: f64,
    /// The other value an ambiguous lone separator allows (`1,234` → 1.234 or 1234).
    pub alternative: Option<Decimal>,
}

impl Reading {
    fn sure(value: Decimal, certainty: f64) -> Reading {
        Reading {
            value,
            certainty,
            alternative: None,
        }
    }
}

/// Reads a numeral (already trimmed, no currency or unit) into an exact decimal.
///
/// The error is a human reason, which each parser wraps with its own kind.
pub(crate) fn read(text: &str, hints: &ParseHints) -> Result<Reading, String> {
    let (negative, body) = strip_sign(text);
    let (groups, seps) = tokenize(body)?;
    let hint = hints.decimal_separator.and_then(Sep::of);
    let hint = hint.filter(|s| s.is_mark());
    // Factor for a decimal mark the hint did not expect.
    let surprise = |mark: Sep| match hint {
        Some(h) if h != mark => HINT_CONTRADICTED,
        _ => 1.0,
    };

    let Some(&last) = seps.last() else {
        return Ok(Reading::sure(to_decimal(&groups, None, negative)?, 1.0));
    };
    let last_is_lone_mark = last.is_mark() && seps.iter().filter(|&&s| s == last).count() == 1;
    let (int, frac) = groups.split_at(groups.len() - 1);

    if last_is_lone_mark && seps.len() > 1 {
        // `1.234,56`, `1 234,56`, `1'234.56`: grouping before, the mark is decimal.
        let grouping = single_kind(&seps[..seps.len() - 1])?;
        let certainty = check_grouping(int, grouping)? * surprise(last);
        return Ok(Reading::sure(
            to_decimal(int, Some(frac[0]), negative)?,
            certainty,
        ));
    }

    if last_is_lone_mark {
        // A lone mark: `1234,56`, `0.5`, or the ambiguous `1,234`.
        let (lead, tail) = (groups[0], groups[1]);
        let decimal = to_decimal(&groups[..1], Some(tail), negative)?;
        let could_group = tail.len() == 3 && lead.len() <= 3 && !lead.starts_with('0');
        if !could_group {
            return Ok(Reading::sure(decimal, surprise(last)));
        }
        let grouped = to_decimal(&groups, None, negative)?;
        let (value, certainty, alternative) = match hint {
            Some(h) if h == last => (decimal, AMBIGUOUS_HINTED, grouped),
            Some(_) => (grouped, AMBIGUOUS_HINTED, decimal),
            None => (grouped, AMBIGUOUS_UNHINTED, decimal),
        };
        return Ok(Reading {
            value,
            certainty,
            alternative: Some(alternative),
        });
    }

    // One mark used throughout, ending on a group of one or two digits (`3.819.15`): OCR read
    // the decimal mark as the grouping one (or the reverse); the last is the decimal mark.
    if last.is_mark()
        && seps.len() >= 2
        && seps.iter().all(|&s| s == last)
        && (1..=2).contains(&frac[0].len())
    {
        let certainty = check_grouping(int, last)? * MARK_READ_AS_GROUPING;
        return Ok(Reading::sure(
            to_decimal(int, Some(frac[0]), negative)?,
            certainty,
        ));
    }

    // No decimal mark: every separator groups (`1,234,567`, `1 234`, `1'234'567`).
    let grouping = single_kind(&seps)?;
    let certainty = check_grouping(&groups, grouping)? * surprise_grouping(hint, grouping);
    Ok(Reading::sure(
        to_decimal(&groups, None, negative)?,
        certainty,
    ))
}

/// Factor for grouping with the very mark the hint says is decimal (`1.234.567`, hint `.`).
fn surprise_grouping(hint: Option<Sep>, grouping: Sep) -> f64 {
    if hint == Some(grouping) {
        HINT_CONTRADICTED
    } else {
        1.0
    }
}

/// Removes a leading sign; typeset documents use the minus sign and the en dash too.
fn strip_sign(text: &str) -> (bool, &str) {
    let mut chars = text.chars();
    match chars.next() {
        Some('-' | '\u{2212}' | '\u{2013}') => (true, chars.as_str()),
        Some('+') => (false, chars.as_str()),
        _ => (false, text),
    }
}

/// Splits `1.234,56` into digit groups `["1", "234", "56"]` and separators `[Dot, Comma]`.
fn tokenize(body: &str) -> Result<(Vec<&str>, Vec<Sep>), String> {
    let mut groups = Vec::new();
    let mut seps = Vec::new();
    let mut start = None;
    for (i, c) in body.char_indices() {
        if c.is_ascii_digit() {
            start.get_or_insert(i);
            continue;
        }
        let Some(sep) = Sep::of(c) else {
            return Err(format!("unexpected character {c:?} in a number"));
        };
        match start.take() {
            Some(s) => groups.push(&body[s..i]),
            None if groups.is_empty() => return Err("a number must start with a digit".into()),
            None => return Err("two separators in a row".into()),
        }
        seps.push(sep);
    }
    match start {
        Some(s) => groups.push(&body[s..]),
        None if groups.is_empty() => return Err("no digits".into()),
        None => return Err("a number must end with a digit".into()),
    }
    Ok((groups, seps))
}

/// The one separator used for grouping; mixing two (`1 234.567`) is not a number.
fn single_kind(seps: &[Sep]) -> Result<Sep, String> {
    match seps {
        [first, rest @ ..] if rest.iter().all(|s| s == first) => Ok(*first),
        _ => Err("mixed thousands separators".into()),
    }
}

/// Checks the digit groups of a grouped integer part; the answer is the certainty factor.
fn check_grouping(int: &[&str], grouping: Sep) -> Result<f64, String> {
    if int.len() < 2 {
        return Ok(1.0);
    }
    if int[0].starts_with('0') {
        return Err("a grouped number cannot start with 0".into());
    }
    let western = int[0].len() <= 3 && int[1..].iter().all(|g| g.len() == 3);
    if western {
        return Ok(1.0);
    }
    let (first, middle, last) = (int[0], &int[1..int.len() - 1], int[int.len() - 1]);
    let indian = grouping == Sep::Comma
        && first.len() <= 2
        && !middle.is_empty()
        && middle.iter().all(|g| g.len() == 2)
        && last.len() == 3;
    if indian {
        Ok(INDIAN_GROUPING)
    } else {
        Err("digit groups after a thousands separator must have three digits".into())
    }
}

/// Joins the digit groups into an exact decimal, refusing more than [`MAX_DIGITS`] digits.
fn to_decimal(int: &[&str], frac: Option<&str>, negative: bool) -> Result<Decimal, String> {
    let frac = frac.unwrap_or("");
    let leading_zeros_done = int
        .iter()
        .flat_map(|g| g.chars())
        .skip_while(|&c| c == '0')
        .count();
    if leading_zeros_done + frac.len() > MAX_DIGITS {
        return Err(format!("more than {MAX_DIGITS} digits"));
    }
    let mut units: i128 = 0;
    for d in int
        .iter()
        .chain(std::iter::once(&frac))
        .flat_map(|g| g.bytes())
    {
        // At most MAX_DIGITS significant digits, so this stays far below i128::MAX.
        units = units * 10 + i128::from(d - b'0');
    }
    let scale = u32::try_from(frac.len()).map_err(|_| "too many decimals".to_owned())?;
    let units = if negative { -units } else { units };
    Decimal::new(units, scale).ok_or_else(|| "too many decimals".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(text: &str, hint: Option<char>) -> Result<Reading, String> {
        read(
            text,
            &ParseHints {
                decimal_separator: hint,
                ..ParseHints::default()
            },
        )
    }

    #[test]
    fn ambiguous_readings_carry_the_other_value() {
        let r = reading("1,234", None).unwrap();
        assert_eq!(r.value.to_string(), "1234");
        assert_eq!(r.alternative.map(|a| a.to_string()), Some("1.234".into()));
        let r = reading("1,234", Some(',')).unwrap();
        assert_eq!(r.value.to_string(), "1.234");
        assert_eq!(r.alternative.map(|a| a.to_string()), Some("1234".into()));
        assert_eq!(reading("1,234.5", None).unwrap().alternative, None);
    }

    #[test]
    fn a_decimal_mark_read_as_the_grouping_one_is_read_back() {
        let r = reading("3.819.15", None).expect("read");
        assert_eq!(r.value.to_string(), "3819.15");
        assert!(r.certainty < 0.8);
        let r = reading("1,234,567,8", None).expect("read");
        assert_eq!(r.value.to_string(), "1234567.8");
        // Grouping is still checked: `38.19.15` is no number.
        assert!(reading("38.19.15", None).is_err());
        // Three digits last is grouping, as before.
        assert_eq!(
            reading("1.234.567", None).expect("read").value.to_string(),
            "1234567"
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            reading("1..2", None).unwrap_err(),
            "two separators in a row"
        );
        assert_eq!(
            reading(".5", None).unwrap_err(),
            "a number must start with a digit"
        );
        assert_eq!(
            reading("5.", None).unwrap_err(),
            "a number must end with a digit"
        );
        assert_eq!(reading("-", None).unwrap_err(), "no digits");
        assert_eq!(
            reading("1 234.567,8", None).unwrap_err(),
            "mixed thousands separators"
        );
        assert_eq!(
            reading("12x", None).unwrap_err(),
            "unexpected character 'x' in a number"
        );
        assert!(reading("1,23,4", None)
            .unwrap_err()
            .contains("three digits"));
    }

    #[test]
    fn leading_zeros_do_not_count_against_the_digit_limit() {
        let text = format!("{}1", "0".repeat(100));
        assert_eq!(
            reading(&text, None).unwrap().value,
            Decimal::from_integer(1)
        );
    }

    #[test]
    fn grouping_by_the_hinted_decimal_mark_is_read_but_flagged() {
        let r = reading("1.234.567", Some('.')).unwrap();
        assert_eq!(r.value, Decimal::from_integer(1_234_567));
        assert_eq!(r.certainty, HINT_CONTRADICTED);
        assert_eq!(reading("1 234 567", Some('.')).unwrap().certainty, 1.0);
    }
}
