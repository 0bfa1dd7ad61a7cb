//! Calendar dates in the forms trade documents use, and the validated [`Date`] they become.
//!
//! Accepted: ISO (`2024-03-14`, also with `/` or `.`), numeric day-first or month-first with
//! `/`, `.` or `-` and a two- or four-digit year (`14/03/2024`, `03-14-24`), and month names
//! in English, French or German, full or abbreviated, accents optional (`14 March 2024`,
//! `March 14, 2024`, `1er février 2024`, `14-Mar-2024`, `14. März 2024`, `14MAR24`).
//!
//! `03/04/2024` is the third of April in Paris and the fourth of March in Houston. When both
//! readings are real dates the `date_order` hint picks one at reduced certainty; when only one
//! is (`25/03/2024`), it is used with full certainty whatever the hint.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::months::{month_number, ENGLISH};
use super::{non_empty, DateOrder, ParseError, ParseHints, Parsed, ParserKind, Value};
use crate::fold::fold_str;

/// A valid date of the proleptic Gregorian calendar, years 1 to 9999.
///
/// Built only through [`Date::new`] (or parsing), so a `Date` is never the 30th of February.
/// Ordered chronologically; shown and serialized as ISO `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    year: i32,
    month: u8,
    day: u8,
}

impl Date {
    /// The date, or `None` if it does not exist (month 13, 29 February 2023, year 0).
    pub fn new(year: i32, month: u32, day: u32) -> Option<Date> {
        if !(1..=9999).contains(&year) {
            return None;
        }
        let last = Date::days_in_month(year, month)?;
        // Both fit in u8: month <= 12 and day <= 31 once checked.
        (1..=last).contains(&day).then_some(Date {
            year,
            month: month as u8,
            day: day as u8,
        })
    }

    /// Gregorian leap years: every fourth year, except centuries not divisible by 400.
    pub const fn is_leap_year(year: i32) -> bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    /// Days in `month` of `year`, or `None` for a month outside 1..=12.
    pub const fn days_in_month(year: i32, month: u32) -> Option<u32> {
        match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => Some(31),
            4 | 6 | 9 | 11 => Some(30),
            2 if Date::is_leap_year(year) => Some(29),
            2 => Some(28),
            _ => None,
        }
    }

    /// The year, 1 to 9999.
    pub const fn year(self) -> i32 {
        self.year
    }

    /// The month, 1 to 12.
    pub const fn month(self) -> u32 {
        self.month as u32
    }

    /// The day of the month, 1 to 31.
    pub const fn day(self) -> u32 {
        self.day as u32
    }

    /// Days since 1970-01-01 (negative before), so `DATE_WINDOW` rules can subtract dates.
    pub fn days_since_unix_epoch(self) -> i64 {
        // Howard Hinnant's days_from_civil: count from 1 March so the leap day falls last.
        let y = i64::from(self.year) - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let year_of_era = y - era * 400;
        let month_from_march = (i64::from(self.month) + 9) % 12;
        let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(self.day) - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        era * 146_097 + day_of_era - 719_468
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl FromStr for Date {
    type Err = ParseError;

    /// Reads `YYYY-MM-DD` only, as stored in JSON; page text goes through [`parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| ParseError::invalid(ParserKind::Date, s, reason);
        let b = s.as_bytes();
        let shaped = b.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
        if !shaped {
            return Err(bad("expected YYYY-MM-DD".into()));
        }
        build(&s[..4], &s[5..7], &s[8..])
            .map(|(date, _)| date)
            .map_err(bad)
    }
}

impl Serialize for Date {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Date {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Certainty when day and month could be swapped and the hint chose. At or below the usual
/// review threshold: a swapped date still looks plausible, so nothing downstream would catch it.
const AMBIGUOUS_ORDER: f64 = 0.7;

/// Factor for a two-digit year, read as 20xx: right for current trade documents, but the
/// century is an assumption, not something the page says.
const TWO_DIGIT_YEAR: f64 = 0.95;

/// Suffixes written after a day number: `14th`, `1st`, French `1er`.
const ORDINAL_SUFFIXES: &[&str] = &["st", "nd", "rd", "th", "er"];

/// Parses a date in ISO, numeric or month-name form (see the module docs).
pub fn parse(raw: &str, hints: &ParseHints) -> Result<Parsed, ParseError> {
    let text = non_empty(raw)?;
    let (date, certainty) = if text.contains(char::is_alphabetic) {
        with_month_name(text)
    } else {
        numeric(text, hints.date_order)
    }
    .map_err(|reason| ParseError::invalid(ParserKind::Date, raw, reason))?;
    Ok(Parsed::new(Value::Date(date), certainty))
}

/// Where the year, month and day sit in a numeric date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Dmy,
    Mdy,
    Ymd,
}

/// `2024-03-14`, `14/03/2024`, `03.14.24` …
fn numeric(text: &str, order: DateOrder) -> Result<(Date, f64), String> {
    const SHAPE: &str = "expected day, month and year separated by '/', '.' or '-'";
    let sep = text.chars().find(|c| !c.is_ascii_digit()).ok_or(SHAPE)?;
    if !matches!(sep, '/' | '.' | '-') {
        return Err(SHAPE.into());
    }
    let parts: Vec<&str> = text.split(sep).collect();
    let [a, b, c] = parts[..] else {
        return Err(SHAPE.into());
    };
    if [a, b, c]
        .iter()
        .any(|p| p.is_empty() || !p.bytes().all(|d| d.is_ascii_digit()))
    {
        return Err(SHAPE.into());
    }
    let short = |p: &str| p.len() <= 2;
    let candidates: &[Order] = if a.len() == 4 && short(b) && short(c) {
        &[Order::Ymd]
    } else if short(a) && short(b) && matches!(c.len(), 2 | 4) {
        match order {
            DateOrder::DayFirst => &[Order::Dmy, Order::Mdy],
            DateOrder::MonthFirst => &[Order::Mdy, Order::Dmy],
            // `24/03/14` may be year-first only when every part has two digits.
            DateOrder::YearFirst if a.len() == 2 && c.len() == 2 => {
                &[Order::Ymd, Order::Dmy, Order::Mdy]
            }
            DateOrder::YearFirst => &[Order::Dmy, Order::Mdy],
        }
    } else {
        return Err("expected a four-digit year first, or a two- or four-digit year last".into());
    };

    let readings: Vec<Result<(Date, f64), String>> = candidates
        .iter()
        .map(|&o| match o {
            Order::Dmy => build(c, b, a),
            Order::Mdy => build(c, a, b),
            Order::Ymd => build(a, b, c),
        })
        .collect();
    let mut valid = readings.iter().filter_map(|r| r.as_ref().ok());
    let Some(&(date, certainty)) = valid.next() else {
        // Explain with the preferred reading, which is what the operator expected.
        return Err(readings
            .into_iter()
            .next()
            .and_then(Result::err)
            .unwrap_or_else(|| SHAPE.into()));
    };
    let ambiguous = valid.any(|(other, _)| *other != date);
    let certainty = if ambiguous {
        certainty * AMBIGUOUS_ORDER
    } else {
        certainty
    };
    Ok((date, certainty))
}

/// A word or a run of digits in a date written with a month name.
#[derive(Debug)]
enum Token<'a> {
    Number(&'a str),
    Word { folded: String, written: &'a str },
}

/// `14 March 2024`, `March 14th, 2024`, `14-Mar-2024`, `2024 Mar 14`, `14MAR24` …
fn with_month_name(text: &str) -> Result<(Date, f64), String> {
    let tokens = tokenize(text)?;
    let mut month = None;
    let mut numbers = Vec::new();
    let mut shape = String::new();
    for token in &tokens {
        match token {
            Token::Number(n) => {
                numbers.push(*n);
                shape.push('N');
            }
            Token::Word { folded, written } => {
                let m = month_number(folded)
                    .ok_or_else(|| format!("unknown month name {written:?}"))?;
                if month.replace(m).is_some() {
                    return Err("more than one month name".into());
                }
                shape.push('M');
            }
        }
    }
    let month = month.ok_or("expected a month name")?;
    let (year, day) = match (shape.as_str(), numbers.as_slice()) {
        ("NMN", &[year, day]) if year.len() == 4 => (year, day),
        ("NMN", &[day, year]) | ("MNN", &[day, year]) => (year, day),
        _ => return Err("expected day, month name and year".into()),
    };
    if day.len() > 2 {
        return Err(format!("{day:?} is not a day of the month"));
    }
    assemble(year, month, day)
}

/// Splits at separators and at digit/letter boundaries, drops ordinal suffixes glued to a
/// number (`14th` → `14`), and folds words for lookup.
fn tokenize(text: &str) -> Result<Vec<Token<'_>>, String> {
    // (start, is_digit) of the run being read, and whether it touches the previous run.
    let mut run: Option<(usize, bool)> = None;
    let mut glued = false;
    let mut pieces: Vec<(&str, bool, bool)> = Vec::new();
    for (i, c) in text.char_indices() {
        let kind = if c.is_ascii_digit() {
            Some(true)
        } else if c.is_alphabetic() {
            Some(false)
        } else if c.is_whitespace() || matches!(c, ',' | '.' | '-' | '/' | '\'') {
            None
        } else {
            return Err(format!("unexpected character {c:?} in a date"));
        };
        match (run, kind) {
            (Some((_, d)), Some(k)) if d == k => {}
            (Some((start, d)), Some(k)) => {
                pieces.push((&text[start..i], d, glued));
                glued = true;
                run = Some((i, k));
            }
            (None, Some(k)) => run = Some((i, k)),
            (Some((start, d)), None) => {
                pieces.push((&text[start..i], d, glued));
                glued = false;
                run = None;
            }
            (None, None) => glued = false,
        }
    }
    if let Some((start, d)) = run {
        pieces.push((&text[start..], d, glued));
    }
    let mut tokens = Vec::new();
    for (i, &(piece, digits, glued)) in pieces.iter().enumerate() {
        if digits {
            tokens.push(Token::Number(piece));
            continue;
        }
        let folded = fold_str(piece);
        let after_number = i > 0 && pieces[i - 1].1;
        if glued && after_number && ORDINAL_SUFFIXES.contains(&folded.as_str()) {
            continue;
        }
        tokens.push(Token::Word {
            folded,
            written: piece,
        });
    }
    Ok(tokens)
}

/// Builds a date from digit strings (see [`assemble`]).
fn build(year: &str, month: &str, day: &str) -> Result<(Date, f64), String> {
    let month = month
        .parse()
        .map_err(|_| format!("{month:?} is not a month number"))?;
    assemble(year, month, day)
}

/// Builds a date, reading a two-digit year as 20xx and lowering the certainty for that
/// assumption. The error names what does not exist.
fn assemble(year: &str, month: u32, day: &str) -> Result<(Date, f64), String> {
    let number = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("{s:?} is not a number"))
    };
    let (y, d) = (number(year)?, number(day)?);
    let (y, certainty) = match year.len() {
        2 => (2000 + y, TWO_DIGIT_YEAR),
        4 => (y, 1.0),
        _ => return Err(format!("{year:?} is not a two- or four-digit year")),
    };
    let y = i32::try_from(y).map_err(|_| format!("year {y} is out of range"))?;
    let Some(last) = Date::days_in_month(y, month) else {
        return Err(format!("there is no month {month}"));
    };
    if y == 0 {
        return Err("there is no year 0".into());
    }
    let name = ENGLISH[month as usize - 1];
    Date::new(y, month, d)
        .map(|date| (date, certainty))
        .ok_or_else(|| format!("{name} {y} has days 1 to {last}, not {d}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn date_with(raw: &str, order: DateOrder) -> Result<(String, f64), ParseError> {
        let hints = ParseHints {
            date_order: order,
            ..ParseHints::default()
        };
        parse(raw, &hints).map(|p| match p.value {
            Value::Date(d) => (d.to_string(), p.certainty),
            other => panic!("unexpected {other:?}"),
        })
    }

    fn date(raw: &str) -> Result<(String, f64), ParseError> {
        date_with(raw, DateOrder::DayFirst)
    }

    fn ok(iso: &str, certainty: f64) -> Result<(String, f64), ParseError> {
        Ok((iso.to_owned(), certainty))
    }

    #[test]
    fn reads_iso_and_day_first_numeric_forms() {
        assert_eq!(date("2024-03-14"), ok("2024-03-14", 1.0));
        assert_eq!(date("2024/3/14"), ok("2024-03-14", 1.0));
        assert_eq!(date("14/03/2024"), ok("2024-03-14", 1.0));
        assert_eq!(date("14.03.2024"), ok("2024-03-14", 1.0));
        assert_eq!(date("14-03-2024"), ok("2024-03-14", 1.0));
        assert_eq!(date("14-03-24"), ok("2024-03-14", TWO_DIGIT_YEAR));
        assert_eq!(date("1/2/2024"), ok("2024-02-01", AMBIGUOUS_ORDER));
    }

    #[test]
    fn ambiguous_day_and_month_follow_the_hint_with_lower_certainty() {
        assert_eq!(
            date_with("03/04/2024", DateOrder::DayFirst),
            ok("2024-04-03", AMBIGUOUS_ORDER)
        );
        assert_eq!(
            date_with("03/04/2024", DateOrder::MonthFirst),
            ok("2024-03-04", AMBIGUOUS_ORDER)
        );
        assert_eq!(
            date_with("03/04/2024", DateOrder::YearFirst),
            ok("2024-04-03", AMBIGUOUS_ORDER)
        );
        // The same number twice is no ambiguity.
        assert_eq!(
            date_with("04/04/2024", DateOrder::MonthFirst),
            ok("2024-04-04", 1.0)
        );
        // ISO is never reordered.
        assert_eq!(
            date_with("2024-03-04", DateOrder::MonthFirst),
            ok("2024-03-04", 1.0)
        );
    }

    #[test]
    fn when_only_one_order_is_a_date_it_wins_with_full_certainty() {
        assert_eq!(
            date_with("25/03/2024", DateOrder::MonthFirst),
            ok("2024-03-25", 1.0)
        );
        assert_eq!(
            date_with("03/25/2024", DateOrder::DayFirst),
            ok("2024-03-25", 1.0)
        );
        // 30/02 is no date, 02/30 neither; 29/02 only in leap years.
        assert!(date("30/02/2024").is_err());
        assert_eq!(
            date_with("02/29/2024", DateOrder::DayFirst),
            ok("2024-02-29", 1.0)
        );
    }

    #[test]
    fn year_first_hint_reads_all_two_digit_dates_year_first() {
        assert_eq!(
            date_with("24/03/14", DateOrder::YearFirst),
            ok("2024-03-14", AMBIGUOUS_ORDER * TWO_DIGIT_YEAR)
        );
        assert_eq!(
            date_with("24/03/14", DateOrder::DayFirst),
            ok("2014-03-24", TWO_DIGIT_YEAR)
        );
    }

    #[test]
    fn reads_month_names_in_english_french_and_german() {
        for raw in [
            "14 March 2024",
            "March 14, 2024",
            "Mar 14 2024",
            "14 mars 2024",
            "14 Mär 2024",
            "14. März 2024",
            "14-Mar-2024",
            "14-MAR-2024",
            "14MAR2024",
            "14 Mar. 2024",
            "14th March 2024",
            "March 14th, 2024",
            "2024-Mar-14",
        ] {
            assert_eq!(date(raw), ok("2024-03-14", 1.0), "{raw}");
        }
        assert_eq!(date("14-Mar-24"), ok("2024-03-14", TWO_DIGIT_YEAR));
        assert_eq!(date("14MAR24"), ok("2024-03-14", TWO_DIGIT_YEAR));
        assert_eq!(date("1er février 2024"), ok("2024-02-01", 1.0));
        assert_eq!(date("29 fevrier 2024"), ok("2024-02-29", 1.0));
        assert_eq!(date("15 août 2024"), ok("2024-08-15", 1.0));
        assert_eq!(date("15 AOUT 2024"), ok("2024-08-15", 1.0));
        assert_eq!(date("24 décembre 2023"), ok("2023-12-24", 1.0));
        assert_eq!(date("24 Déc. 2023"), ok("2023-12-24", 1.0));
        assert_eq!(date("3 juil. 2024"), ok("2024-07-03", 1.0));
        assert_eq!(date("1st Sept 2024"), ok("2024-09-01", 1.0));
    }

    #[test]
    fn refuses_impossible_and_malformed_dates() {
        for raw in [
            "31/04/2024",
            "29/02/2023",
            "29 Feb 2023",
            "2023-02-29",
            "2024-13-01",
            "2024-00-10",
            "0000-01-01",
            "32 March 2024",
            "14 Marchh 2024",
            "14 March",
            "March 2024",
            "14 March 2024 March",
            "14/03",
            "14/03-2024",
            "14/03/202",
            "14/03/20245",
            "123/03/2024",
            "2024-3-14-1",
            "14 th March 2024",
            "14 Mar 2024 10:00",
            "yesterday",
            "14 März 2024!",
        ] {
            assert!(
                matches!(date(raw), Err(ParseError::Invalid { kind: "date", .. })),
                "{raw}: {:?}",
                date(raw)
            );
        }
        assert_eq!(date(" "), Err(ParseError::Empty));
    }

    #[test]
    fn errors_name_the_missing_day() {
        let Err(ParseError::Invalid { reason, .. }) = date("29/02/2023") else {
            panic!()
        };
        assert_eq!(reason, "February 2023 has days 1 to 28, not 29");
        let Err(ParseError::Invalid { reason, .. }) = date("14 Smarch 2024") else {
            panic!()
        };
        assert_eq!(reason, "unknown month name \"Smarch\"");
    }

    #[test]
    fn leap_years_follow_the_gregorian_rule() {
        assert!(Date::is_leap_year(2024) && Date::is_leap_year(2000) && Date::is_leap_year(1600));
        assert!(
            !Date::is_leap_year(2023) && !Date::is_leap_year(1900) && !Date::is_leap_year(2100)
        );
        assert!(Date::new(2000, 2, 29).is_some());
        assert!(Date::new(1900, 2, 29).is_none());
        assert!(Date::new(0, 1, 1).is_none() && Date::new(10_000, 1, 1).is_none());
        assert!(Date::new(2024, 0, 1).is_none() && Date::new(2024, 1, 0).is_none());
    }

    #[test]
    fn day_numbers_count_every_day_once() {
        assert_eq!(Date::new(1970, 1, 1).unwrap().days_since_unix_epoch(), 0);
        assert_eq!(
            Date::new(2000, 3, 1).unwrap().days_since_unix_epoch(),
            11_017
        );
        assert_eq!(Date::new(1969, 12, 31).unwrap().days_since_unix_epoch(), -1);
        let mut previous = Date::new(1599, 12, 31).unwrap().days_since_unix_epoch();
        for year in 1600..=2401 {
            for month in 1..=12 {
                for day in 1..=Date::days_in_month(year, month).unwrap() {
                    let n = Date::new(year, month, day).unwrap().days_since_unix_epoch();
                    assert_eq!(n, previous + 1, "{year}-{month}-{day}");
                    previous = n;
                }
            }
        }
    }

    #[test]
    fn iso_text_round_trips_and_nothing_else_is_canonical() {
        let d = Date::new(987, 6, 5).unwrap();
        assert_eq!(d.to_string(), "0987-06-05");
        assert_eq!("0987-06-05".parse::<Date>(), Ok(d));
        for bad in [
            "2024-3-14",
            "14/03/2024",
            "2024-02-30",
            "2024-03-14 ",
            "२०२४-03-14",
        ] {
            assert!(bad.parse::<Date>().is_err(), "{bad}");
        }
    }

    fn any_date(years: std::ops::RangeInclusive<i32>) -> impl Strategy<Value = Date> {
        (years, 1u32..=12, 1u32..=31).prop_map(|(y, m, d)| {
            let d = d.min(Date::days_in_month(y, m).unwrap());
            Date::new(y, m, d).unwrap()
        })
    }

    /// The spellings of a month that MONTHS lists, in the cases documents use.
    fn spellings(month: u32) -> Vec<String> {
        super::super::months::MONTHS[month as usize - 1]
            .iter()
            .flat_map(|name| {
                let mut title = name.to_string();
                title[..1].make_ascii_uppercase();
                [name.to_string(), name.to_uppercase(), title]
            })
            .collect()
    }

    fn parsed(text: &str, order: DateOrder) -> (Date, f64) {
        let hints = ParseHints {
            date_order: order,
            ..ParseHints::default()
        };
        match parse(text, &hints) {
            Ok(Parsed {
                value: Value::Date(d),
                certainty,
            }) => (d, certainty),
            other => panic!("{text}: {other:?}"),
        }
    }

    proptest! {
        #[test]
        fn iso_dates_round_trip(d in any_date(1000..=9999), sep in prop::sample::select(vec!['-', '/', '.'])) {
            let text = format!("{:04}{sep}{:02}{sep}{:02}", d.year(), d.month(), d.day());
            prop_assert_eq!(parsed(&text, DateOrder::MonthFirst), (d, 1.0));
            prop_assert_eq!(d.to_string().parse::<Date>(), Ok(d));
            prop_assert_eq!(serde_json::from_value::<Date>(serde_json::to_value(d).unwrap()).unwrap(), d);
        }

        #[test]
        fn numeric_dates_round_trip_in_the_hinted_order(
            d in any_date(1000..=9999),
            sep in prop::sample::select(vec!['-', '/', '.']),
            pad in any::<bool>(),
            month_first in any::<bool>(),
        ) {
            let (first, second) = if month_first { (d.month(), d.day()) } else { (d.day(), d.month()) };
            let text = if pad {
                format!("{first:02}{sep}{second:02}{sep}{:04}", d.year())
            } else {
                format!("{first}{sep}{second}{sep}{:04}", d.year())
            };
            let order = if month_first { DateOrder::MonthFirst } else { DateOrder::DayFirst };
            let swappable = d.day() <= 12 && d.day() != d.month();
            let expected = if swappable { AMBIGUOUS_ORDER } else { 1.0 };
            prop_assert_eq!(parsed(&text, order), (d, expected));
            // Against the hint, only an unswappable date comes back unchanged.
            let against = if month_first { DateOrder::DayFirst } else { DateOrder::MonthFirst };
            let (other, _) = parsed(&text, against);
            prop_assert_eq!(other == d, !swappable);
        }

        #[test]
        fn two_digit_years_are_this_century(d in any_date(2000..=2099), sep in prop::sample::select(vec!['-', '/', '.'])) {
            let text = format!("{:02}{sep}{:02}{sep}{:02}", d.day(), d.month(), d.year() % 100);
            let (got, certainty) = parsed(&text, DateOrder::DayFirst);
            prop_assert_eq!(got, d);
            prop_assert!(certainty <= TWO_DIGIT_YEAR);
        }

        #[test]
        fn month_name_dates_round_trip(d in any_date(1000..=9999), pick in any::<prop::sample::Index>(), form in 0usize..6) {
            let names = spellings(d.month());
            let name = pick.get(&names);
            let (day, year) = (d.day(), d.year());
            let text = match form {
                0 => format!("{day} {name} {year}"),
                1 => format!("{name} {day}, {year}"),
                2 => format!("{day:02}-{name}-{year}"),
                3 => format!("{day}. {name} {year}"),
                4 => format!("{year}-{name}-{day:02}"),
                _ => format!("{day:02}{name}{year}"),
            };
            prop_assert_eq!(parsed(&text, DateOrder::MonthFirst), (d, 1.0), "{}", text);
        }

        #[test]
        fn never_panics(raw in "\\PC{0,30}|[0-9]{1,4}[-/. ][0-9a-zA-Zéû]{1,9}[-/., ]{1,2}[0-9]{1,5}") {
            for order in DateOrder::ALL {
                let _ = parse(&raw, &ParseHints { date_order: *order, ..ParseHints::default() });
            }
            let _ = raw.parse::<Date>();
        }
    }
}
