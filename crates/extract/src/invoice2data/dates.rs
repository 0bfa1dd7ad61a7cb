//! invoice2data's date reading: the template's `date_formats` (Python `strptime` patterns)
//! first, then a free reading.
//!
//! invoice2data hands dates to `dateparser`, which tries the formats, then translates month
//! names from the template's `languages` and guesses. The free reading here is the core
//! date parser (shared with workflows) after month names of the common European languages
//! are translated to English; the day/month order follows dateparser's locale default:
//! month first for English or no language, day first otherwise. A format without a year or
//! a day is skipped: dateparser would fill it from today's date, which a pure function
//! cannot know.

use std::sync::OnceLock;

use ironclad_core::parse::{self, Date, DateOrder, ParseHints, ParserKind, Value};
use regex::Regex;

use ironclad_core::fold::fold_str;
use ironclad_core::parse::months::{month_number, ENGLISH};

/// Reads `raw` as invoice2data would: each format in turn, then freely.
pub fn parse_date(raw: &str, formats: &[String], languages: &[String]) -> Option<Date> {
    formats
        .iter()
        .find_map(|f| strptime(raw, f))
        .or_else(|| free(raw, languages))
}

/// Python's `datetime.strptime(raw, format)`, date part only; month names in any language
/// listed in [`ironclad_core::parse::months::MONTHS`].
pub fn strptime(raw: &str, format: &str) -> Option<Date> {
    if !format.contains("%d") || !(format.contains("%Y") || format.contains("%y")) {
        return None;
    }
    let re = Regex::new(&format_regex(format)?).ok()?;
    let caps = re.captures(raw)?;
    let year: i32 = match (caps.name("Y"), caps.name("y")) {
        (Some(y), _) => y.as_str().parse().ok()?,
        // Python's pivot: 69–99 is the 1900s, 00–68 the 2000s.
        (None, Some(y)) => {
            y.as_str()
                .parse::<i32>()
                .ok()
                .map(|y| if y < 69 { 2000 + y } else { 1900 + y })?
        }
        (None, None) => return None,
    };
    let month = match (caps.name("m"), caps.name("B")) {
        (Some(m), _) => m.as_str().parse().ok()?,
        (None, Some(b)) => month_number(b.as_str())?,
        (None, None) => 1,
    };
    let day: u32 = caps.name("d")?.as_str().trim().parse().ok()?;
    Date::new(year, month, day)
}

/// The regex Python's `_strptime` builds for a format, anchored at both ends.
fn format_regex(format: &str) -> Option<String> {
    let mut out = String::from("(?i)^");
    let mut chars = format.chars().peekable();
    let mut seen = std::collections::HashSet::new();
    while let Some(c) = chars.next() {
        if c == '%' {
            let d = chars.next()?;
            // A directive used twice would repeat a group name; Python refuses it too.
            if d != '%' && !seen.insert(d) {
                return None;
            }
            out.push_str(match d {
                'd' => r"(?P<d>3[01]|[12]\d|0[1-9]|[1-9]| [1-9])",
                'm' => r"(?P<m>1[0-2]|0[1-9]|[1-9])",
                'Y' => r"(?P<Y>\d\d\d\d)",
                'y' => r"(?P<y>\d\d)",
                'B' | 'b' | 'h' => r"(?P<B>[^\W\d_]+\.?)",
                'A' | 'a' => r"[^\W\d_]+",
                'H' => r"(?:2[0-3]|[0-1]\d|\d)",
                'I' => r"(?:1[0-2]|0[1-9]|[1-9])",
                'M' => r"(?:[0-5]\d|\d)",
                'S' => r"(?:6[0-1]|[0-5]\d|\d)",
                'p' => r"(?:am|pm)",
                'f' => r"\d{1,6}",
                'j' => r"\d{1,3}",
                'z' => r"(?:[+-]\d\d:?[0-5]\d|Z)",
                'Z' => r"\w+",
                '%' => "%",
                _ => return None,
            });
        } else if c.is_whitespace() {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            out.push_str(r"\s+");
        } else {
            out.push_str(&regex::escape(&c.to_string()));
        }
    }
    out.push('$');
    Some(out)
}

/// The free reading: month names translated to English, time of day and weekday names
/// dropped, then the core date parser.
fn free(raw: &str, languages: &[String]) -> Option<Date> {
    static WORD: OnceLock<Option<Regex>> = OnceLock::new();
    static TIME: OnceLock<Option<Regex>> = OnceLock::new();
    let word = WORD
        .get_or_init(|| Regex::new(r"[^\W\d_]+\.?").ok())
        .as_ref()?;
    let time = TIME
        .get_or_init(|| Regex::new(r"(?i)\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]m)?\b").ok())
        .as_ref()?;
    let without_time = time.replace_all(raw, " ");
    let mut text = String::with_capacity(raw.len());
    let mut last = 0;
    for m in word.find_iter(&without_time) {
        text.push_str(&without_time[last..m.start()]);
        if let Some(n) = month_number(m.as_str()) {
            text.push_str(ENGLISH[n as usize - 1]);
        } else if !is_filler(m.as_str()) {
            text.push_str(m.as_str());
        }
        last = m.end();
    }
    text.push_str(&without_time[last..]);
    let english_first = languages.first().is_none_or(|l| l == "en");
    let hints = ParseHints {
        date_order: if english_first {
            DateOrder::MonthFirst
        } else {
            DateOrder::DayFirst
        },
        ..ParseHints::default()
    };
    let cleaned = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cleaned = cleaned.trim_matches(|c: char| c == ',' || c == '.' || c.is_whitespace());
    match parse::parse(ParserKind::Date, cleaned, &hints).ok()?.value {
        Value::Date(d) => Some(d),
        _ => None,
    }
}

/// Words dateparser skips: weekdays and the little words around dates.
fn is_filler(word: &str) -> bool {
    const FILLERS: &[&str] = &[
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
        "sat",
        "sun",
        "lundi",
        "mardi",
        "mercredi",
        "jeudi",
        "vendredi",
        "samedi",
        "dimanche",
        "maandag",
        "dinsdag",
        "woensdag",
        "donderdag",
        "vrijdag",
        "zaterdag",
        "zondag",
        "montag",
        "dienstag",
        "mittwoch",
        "donnerstag",
        "freitag",
        "samstag",
        "sonntag",
        "the",
        "of",
        "le",
        "du",
        "de",
        "den",
        "der",
        "am",
        "on",
    ];
    FILLERS.contains(&fold_str(word.trim_end_matches('.')).as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(d: Option<Date>) -> Option<String> {
        d.map(|d| d.to_string())
    }

    fn fmts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn formats_follow_strptime() {
        assert_eq!(
            iso(strptime("2022-09-27", "%Y-%m-%d")).as_deref(),
            Some("2022-09-27")
        );
        assert_eq!(
            iso(strptime("3/4/21", "%d/%m/%y")).as_deref(),
            Some("2021-04-03")
        );
        assert_eq!(
            iso(strptime("2 juillet 2015", "%d %B %Y")).as_deref(),
            Some("2015-07-02")
        );
        assert_eq!(
            iso(strptime("August 3, 2014", "%B %d, %Y")).as_deref(),
            Some("2014-08-03")
        );
        assert_eq!(
            iso(strptime("12-03-2020 10:11:12", "%d-%m-%Y %H:%M:%S")).as_deref(),
            Some("2020-03-12")
        );
        assert_eq!(
            strptime("2022-09-27 ", "%Y-%m-%d"),
            None,
            "unconverted data remains"
        );
        assert_eq!(strptime("31/02/2020", "%d/%m/%Y"), None);
        assert_eq!(
            strptime("03/2020", "%m/%Y"),
            None,
            "no day: dateparser would use today's"
        );
        assert_eq!(strptime("1/2/2020", "%d/%q/%Y"), None, "bad directive");
    }

    #[test]
    fn free_reading_uses_the_language_order_and_month_names() {
        let none: Vec<String> = vec![];
        assert_eq!(
            iso(parse_date("01/08/2024", &fmts(&["%Y-%m-%d"]), &none)).as_deref(),
            Some("2024-01-08")
        );
        assert_eq!(
            iso(parse_date("31/12/2017", &none, &none)).as_deref(),
            Some("2017-12-31")
        );
        assert_eq!(
            iso(parse_date("01/08/2024", &none, &fmts(&["nl"]))).as_deref(),
            Some("2024-08-01")
        );
        assert_eq!(
            iso(parse_date("19 april 2014", &none, &fmts(&["nl"]))).as_deref(),
            Some("2014-04-19")
        );
        assert_eq!(
            iso(parse_date("18 maart 2014", &none, &fmts(&["nl"]))).as_deref(),
            Some("2014-03-18")
        );
        assert_eq!(
            iso(parse_date("August 3 , 2014", &fmts(&["%B %d, %Y"]), &none)).as_deref(),
            Some("2014-08-03")
        );
        assert_eq!(
            iso(parse_date("Mon, 14 March 2024 10:30", &none, &none)).as_deref(),
            Some("2024-03-14")
        );
        assert_eq!(parse_date("not a date", &none, &none), None);
    }
}
