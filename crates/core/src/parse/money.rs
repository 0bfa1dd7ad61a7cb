//! Amounts of money with a currency code or symbol (`USD 1,234.56`, `1.234,56 €`, `EUR1234`).
//!
//! The currency is normalized to its ISO 4217 code so rules compare `€ 10` and `10 EUR` as
//! equal. A symbol shared by several currencies (`$`, `¥`) is read as its most common one
//! with lower certainty, unless the workflow's default currency is one of those that share it.

use super::{non_empty, numeral, ParseError, ParseHints, Parsed, ParserKind, Value};

/// A currency sign that is not an ISO code.
struct Symbol {
    /// As written; letters match case-insensitively.
    text: &'static str,
    /// The ISO 4217 code it most often means.
    code: &'static str,
    /// How sure the sign alone makes us of `code`.
    certainty: f64,
    /// Other codes that write the same sign; the default currency may pick one of them.
    shared_with: &'static [&'static str],
}

/// Certainty for a bare `$`: US dollars on most trade documents, but Canada, Australia,
/// Hong Kong, Singapore, Mexico and others write it too.
const DOLLAR_SIGN: f64 = 0.85;

/// Certainty for `¥`: the yen and the yuan share it, and both are common in trade.
const YEN_SIGN: f64 = 0.8;

/// Certainty for a bare `$` or `¥` resolved by the workflow's default currency.
const SHARED_SIGN_WITH_DEFAULT: f64 = 0.95;

/// Factor for an amount whose currency comes from the default, not from the page.
const DEFAULT_CURRENCY: f64 = 0.9;

/// Currencies that write their amounts with a bare `$`.
const DOLLARS: &[&str] = &[
    "USD", "CAD", "AUD", "NZD", "HKD", "SGD", "MXN", "TWD", "ARS", "CLP", "COP",
];

/// A sign that means one currency.
const fn sign(text: &'static str, code: &'static str) -> Symbol {
    Symbol {
        text,
        code,
        certainty: 1.0,
        shared_with: &[],
    }
}

/// Longer signs first, so `US$` is not read as `$` after `US`.
const SYMBOLS: &[Symbol] = &[
    sign("US$", "USD"),
    sign("CA$", "CAD"),
    sign("AU$", "AUD"),
    sign("NZ$", "NZD"),
    sign("HK$", "HKD"),
    sign("MX$", "MXN"),
    sign("RMB", "CNY"),
    sign("C$", "CAD"),
    sign("A$", "AUD"),
    sign("S$", "SGD"),
    sign("R$", "BRL"),
    sign("zł", "PLN"),
    sign("Kč", "CZK"),
    Symbol {
        text: "$",
        code: "USD",
        certainty: DOLLAR_SIGN,
        shared_with: DOLLARS,
    },
    sign("€", "EUR"),
    sign("£", "GBP"),
    Symbol {
        text: "¥",
        code: "JPY",
        certainty: YEN_SIGN,
        shared_with: &["JPY", "CNY"],
    },
    Symbol {
        text: "￥",
        code: "JPY",
        certainty: YEN_SIGN,
        shared_with: &["JPY", "CNY"],
    },
    sign("₹", "INR"),
    sign("₩", "KRW"),
    sign("₽", "RUB"),
    sign("₺", "TRY"),
    sign("₪", "ILS"),
];

/// Active ISO 4217 codes. A closed list, because any three capitals would let `PKG 12` or
/// `ABC 12` pass as money.
const ISO_CODES: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL \
    BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD \
    FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS \
    KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK \
    MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD \
    SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX \
    USD UYU UZS VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG ZWL";

/// A currency found on the page.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Found {
    code: &'static str,
    certainty: f64,
    shared_with: &'static [&'static str],
}

/// Parses an amount with a currency code or symbol before or after it, in either EU or US
/// number style. With no currency on the page, the `default_currency` hint (three letters)
/// is used at slightly lower certainty; without one the currency is `None`.
pub fn parse(raw: &str, hints: &ParseHints) -> Result<Parsed, ParseError> {
    let bad = |reason: String| ParseError::invalid(ParserKind::Money, raw, reason);
    let text = non_empty(raw)?;

    // `-$12.50` and `-12.50 EUR`: take the sign off first so it can precede the currency.
    let (negative, text) = match text.strip_prefix(['-', '\u{2212}']) {
        Some(rest) => (true, rest.trim_start()),
        None => (false, text),
    };
    let (before, text) = match strip_currency_prefix(text) {
        Some((found, rest)) => (Some(found), rest.trim_start()),
        None => (None, text),
    };
    let (after, text) = match strip_currency_suffix(text) {
        Some((found, rest)) => (Some(found), rest.trim_end()),
        None => (None, text),
    };
    let found = match (before, after) {
        (Some(a), Some(b)) if a.code != b.code => {
            return Err(bad(format!("two currencies: {} and {}", a.code, b.code)));
        }
        (a, b) => a.or(b),
    };
    if negative && text.starts_with(['-', '+', '\u{2212}']) {
        return Err(bad("two signs".into()));
    }
    let number = if negative {
        format!("-{text}")
    } else {
        text.to_owned()
    };
    let reading = numeral::read(&number, hints).map_err(bad)?;

    let default = hints
        .default_currency
        .as_deref()
        .map(str::trim)
        .filter(|c| is_code_shaped(c))
        .map(str::to_ascii_uppercase);
    let (currency, factor) = match (found, default) {
        (Some(f), Some(d)) if f.shared_with.contains(&d.as_str()) => {
            (Some(d), SHARED_SIGN_WITH_DEFAULT)
        }
        (Some(f), _) => (Some(f.code.to_owned()), f.certainty),
        (None, Some(d)) => (Some(d), DEFAULT_CURRENCY),
        (None, None) => (None, 1.0),
    };
    Ok(Parsed::new(
        Value::Money {
            amount: reading.value,
            currency,
        },
        reading.certainty * factor,
    ))
}

fn is_code_shaped(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_alphabetic())
}

/// The ISO code spelled by `letters` (any case), if it is one.
fn iso_code(letters: &str) -> Option<&'static str> {
    if !is_code_shaped(letters) {
        return None;
    }
    let upper = letters.to_ascii_uppercase();
    ISO_CODES.split_ascii_whitespace().find(|c| *c == upper)
}

/// Whether a letter token ends here: `EUR1234` and `EUR 12` yes, `EURO` no.
fn ends_word(next: Option<char>, token: &str) -> bool {
    !token.ends_with(char::is_alphabetic) || !next.is_some_and(char::is_alphabetic)
}

/// `(currency, rest)` when `text` starts with a code or symbol.
fn strip_currency_prefix(text: &str) -> Option<(Found, &str)> {
    for symbol in SYMBOLS {
        if let Some(rest) = strip_prefix_ci(text, symbol.text) {
            if ends_word(rest.chars().next(), symbol.text) {
                return Some((found(symbol), rest));
            }
        }
    }
    let end = text.char_indices().nth(3).map_or(text.len(), |(i, _)| i);
    let code = iso_code(&text[..end])?;
    ends_word(text[end..].chars().next(), code).then_some((
        Found {
            code,
            certainty: 1.0,
            shared_with: &[],
        },
        &text[end..],
    ))
}

/// `(currency, rest)` when `text` ends with a code or symbol.
fn strip_currency_suffix(text: &str) -> Option<(Found, &str)> {
    for symbol in SYMBOLS {
        if let Some(rest) = strip_suffix_ci(text, symbol.text) {
            if !symbol.text.starts_with(char::is_alphabetic) || !rest.ends_with(char::is_alphabetic)
            {
                return Some((found(symbol), rest));
            }
        }
    }
    let start = text.char_indices().rev().nth(2).map_or(0, |(i, _)| i);
    let code = iso_code(&text[start..])?;
    let rest = &text[..start];
    (!rest.ends_with(char::is_alphabetic)).then_some((
        Found {
            code,
            certainty: 1.0,
            shared_with: &[],
        },
        rest,
    ))
}

fn found(symbol: &Symbol) -> Found {
    Found {
        code: symbol.code,
        certainty: symbol.certainty,
        shared_with: symbol.shared_with,
    }
}

fn same_letter(a: char, b: char) -> bool {
    a == b || a.to_lowercase().eq(b.to_lowercase())
}

/// `text` without `prefix`, comparing letters case-insensitively (`ZŁ` is `zł`).
fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let mut chars = text.char_indices();
    for p in prefix.chars() {
        let (_, c) = chars.next()?;
        if !same_letter(c, p) {
            return None;
        }
    }
    Some(chars.as_str())
}

/// `text` without `suffix`, comparing letters case-insensitively.
fn strip_suffix_ci<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let mut end = text.len();
    for s in suffix.chars().rev() {
        let (i, c) = text[..end].char_indices().next_back()?;
        if !same_letter(c, s) {
            return None;
        }
        end = i;
    }
    Some(&text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::Decimal;
    use proptest::prelude::*;

    fn money_with(
        raw: &str,
        hints: &ParseHints,
    ) -> Result<(String, Option<String>, f64), ParseError> {
        parse(raw, hints).map(|p| match p.value {
            Value::Money { amount, currency } => (amount.to_string(), currency, p.certainty),
            other => panic!("unexpected {other:?}"),
        })
    }

    fn money(raw: &str) -> Result<(String, Option<String>, f64), ParseError> {
        money_with(raw, &ParseHints::default())
    }

    fn ok(
        amount: &str,
        code: &str,
        certainty: f64,
    ) -> Result<(String, Option<String>, f64), ParseError> {
        Ok((amount.to_owned(), Some(code.to_owned()), certainty))
    }

    #[test]
    fn reads_codes_before_or_after_with_or_without_space() {
        assert_eq!(money("USD 1,234.56"), ok("1234.56", "USD", 1.0));
        assert_eq!(money("1.234,56 EUR"), ok("1234.56", "EUR", 1.0));
        assert_eq!(money("EUR1234"), ok("1234", "EUR", 1.0));
        assert_eq!(money("1234EUR"), ok("1234", "EUR", 1.0));
        assert_eq!(money("eur 12,50"), ok("12.50", "EUR", 1.0));
        assert_eq!(money("CHF 1'234.50"), ok("1234.50", "CHF", 1.0));
        assert_eq!(money("PLN 99,99"), ok("99.99", "PLN", 1.0));
        assert_eq!(money("INR 12,34,567.00"), ok("1234567.00", "INR", 0.9));
    }

    #[test]
    fn reads_symbols_and_normalizes_them_to_iso() {
        assert_eq!(money("€1.234,56"), ok("1234.56", "EUR", 1.0));
        assert_eq!(money("1 234,56 €"), ok("1234.56", "EUR", 1.0));
        assert_eq!(money("£12.50"), ok("12.50", "GBP", 1.0));
        assert_eq!(money("US$ 1,234.56"), ok("1234.56", "USD", 1.0));
        assert_eq!(money("12,50 zł"), ok("12.50", "PLN", 1.0));
        assert_eq!(money("12,50 ZŁ"), ok("12.50", "PLN", 1.0));
        assert_eq!(money("₹ 1,23,456.78"), ok("123456.78", "INR", 0.9));
        assert_eq!(money("¥1,200,000"), ok("1200000", "JPY", YEN_SIGN));
        assert_eq!(money("RMB 88.00"), ok("88.00", "CNY", 1.0));
    }

    #[test]
    fn a_bare_dollar_is_usd_with_lower_certainty_unless_the_default_says_which() {
        assert_eq!(money("$1,234.56"), ok("1234.56", "USD", DOLLAR_SIGN));
        let cad = ParseHints {
            default_currency: Some("cad".into()),
            ..ParseHints::default()
        };
        assert_eq!(
            money_with("$1,234.56", &cad),
            ok("1234.56", "CAD", SHARED_SIGN_WITH_DEFAULT)
        );
        // A default that does not write `$` cannot claim it.
        let eur = ParseHints {
            default_currency: Some("EUR".into()),
            ..ParseHints::default()
        };
        assert_eq!(money_with("$12", &eur), ok("12", "USD", DOLLAR_SIGN));
    }

    #[test]
    fn signs_may_precede_the_currency() {
        assert_eq!(money("-$12.50"), ok("-12.50", "USD", DOLLAR_SIGN));
        assert_eq!(money("$-12.50"), ok("-12.50", "USD", DOLLAR_SIGN));
        assert_eq!(money("-12.50 EUR"), ok("-12.50", "EUR", 1.0));
        assert_eq!(money("- EUR 12.50"), ok("-12.50", "EUR", 1.0));
        assert!(money("-$-12").is_err());
    }

    #[test]
    fn without_a_currency_the_default_is_used_if_any() {
        assert_eq!(money("1.234,56"), Ok(("1234.56".into(), None, 1.0)));
        let hints = ParseHints {
            default_currency: Some(" eur ".into()),
            ..ParseHints::default()
        };
        assert_eq!(
            money_with("1.234,56", &hints),
            ok("1234.56", "EUR", DEFAULT_CURRENCY)
        );
        let junk = ParseHints {
            default_currency: Some("euro".into()),
            ..ParseHints::default()
        };
        assert_eq!(money_with("12", &junk), Ok(("12".into(), None, 1.0)));
    }

    #[test]
    fn ambiguity_of_the_amount_carries_into_the_certainty() {
        let (amount, _, certainty) = money("USD 1,234").unwrap();
        assert_eq!(amount, "1234");
        assert!(certainty <= 0.6);
    }

    #[test]
    fn refuses_unknown_codes_conflicts_and_words() {
        for raw in [
            "ABC 12",
            "12 PKGS",
            "EURO 12",
            "USD 12 EUR",
            "USD",
            "€",
            "EUR 12 34",
            "USD 1,23,4",
            "12 $ 5",
            "XEUR 12",
        ] {
            assert!(
                matches!(money(raw), Err(ParseError::Invalid { kind: "money", .. })),
                "{raw}: {:?}",
                money(raw)
            );
        }
        assert_eq!(money("USD 12 USD"), ok("12", "USD", 1.0));
        assert_eq!(money(" "), Err(ParseError::Empty));
    }

    #[test]
    fn every_listed_code_is_three_capitals() {
        let codes: Vec<&str> = ISO_CODES.split_ascii_whitespace().collect();
        assert!(codes
            .iter()
            .all(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase())));
        assert!(
            codes.windows(2).all(|w| w[0] < w[1]),
            "keep the list sorted and free of duplicates"
        );
        assert!(SYMBOLS.iter().all(|s| iso_code(s.code) == Some(s.code)));
    }

    fn written(amount: &Decimal, mark: char) -> String {
        let s = amount.to_string();
        if mark == ',' {
            s.replace('.', ",")
        } else {
            s
        }
    }

    proptest! {
        #[test]
        fn amounts_round_trip_with_any_currency_placement(
            units in -1_000_000_000i64..1_000_000_000,
            scale in prop::sample::select(vec![0u32, 2]),
            mark in prop::sample::select(vec!['.', ',']),
            (sign, code) in prop::sample::select(vec![("EUR", "EUR"), ("€", "EUR"), ("£", "GBP"), ("US$", "USD"), ("CHF", "CHF"), ("zł", "PLN"), ("₹", "INR"), ("JPY", "JPY")]),
            before in any::<bool>(),
            space in any::<bool>(),
        ) {
            let amount = Decimal::new(units.into(), scale).unwrap();
            let gap = if space { " " } else { "" };
            let number = written(&amount, mark);
            let text = if before { format!("{sign}{gap}{number}") } else { format!("{number}{gap}{sign}") };
            let hints = ParseHints { decimal_separator: Some(mark), ..ParseHints::default() };
            let parsed = parse(&text, &hints).unwrap();
            prop_assert_eq!(parsed.value, Value::Money { amount, currency: Some(code.to_owned()) });
        }

        #[test]
        fn never_panics(raw in "\\PC{0,30}|[-$€£¥zł₹ A-Z0-9.,]{0,16}") {
            let _ = parse(&raw, &ParseHints { default_currency: Some("USD".into()), ..ParseHints::default() });
        }
    }
}
