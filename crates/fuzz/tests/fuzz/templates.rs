//! invoice2data templates (YAML or JSON a tenant uploads) and the Python-regex translation
//! behind them: `Template::from_yaml` answers every input with a template or a typed error,
//! and an accepted template runs on a page of text within the time budget.

use ironclad_extract::invoice2data::pyre::{translate, PyRegex};
use ironclad_extract::invoice2data::{compile_set, extract_with_templates, Template};
use ironclad_fuzz::{config, damaged_text, soup, within};
use proptest::prelude::*;

const BRIGHTWAY: &str = include_str!("../../../../tests/fixtures/templates/shenzhen-brightway.yml");
const OTHER: &str = include_str!("../../../../tests/fixtures/templates/other-supplier.yml");

/// Every part of the format: several patterns, each type, static values, the `lines` and
/// `tables` plugins and every option.
const FULL: &str = r"issuer: Fuzz Trading Ltd
priority: 5
keywords: ['Fuzz Trading', 'INVOICE']
exclude_keywords: ['CREDIT NOTE']
required_fields: [invoice_number, amount]
fields:
  invoice_number:
    parser: regex
    regex: ['Invoice\s+No[.:]?\s*(\w+)', 'Ref\s+(\w+)']
  amount:
    parser: regex
    regex: Total\s+([\d,.]+)
    type: float
  date:
    parser: regex
    regex: 'Date:\s+(\d{2}/\d{2}/\d{4})'
    type: date
  vat:
    parser: regex
    regex: VAT\s+(\d+)
    type: int
    group: sum
  static_country: GB
  lines:
    parser: lines
    start: Description
    end: Total
    line: '(?P<desc>\S+)\s+(?P<qty>\d+)\s+(?P<price>[\d.]+)'
    types: {qty: int, price: float}
tables:
  - start: Ship to
    end: Description
    body: 'Port:\s+(?P<port>\w+)'
options:
  currency: GBP
  decimal_separator: ','
  date_formats: ['%d/%m/%Y']
  remove_whitespace: false
  remove_accents: true
  lowercase: false
  replace: [['\s{3,}', '  ']]
  languages: [en]
";

/// A page the seeds match (or nearly), for running accepted templates.
const PAGE: &str = "Fuzz Trading Ltd          INVOICE
Shenzhen Brightway   COMMERCIAL INVOICE
Invoice No: A1234    Date: 03/12/2026
Invoice No.:  BW-2026-001   Invoice date:  3 December 2026
Customer PO:  PO-7781
Ship to
Port: Felixstowe
Description      Qty   Price
Widgets          10    2.50
Gadgets          3     7.25
Total 46,75
TOTAL USD  1,234.50
VAT 20
";

/// YAML syntax and template keys.
const TEMPLATE_TOKENS: &[&[u8]] = &[
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"[*a, *a, *a, *a]",
    b"[[[[[[[[",
    b"{",
    b"}",
    b"\n- ",
    b": ",
    b"'",
    b"\"",
    b"\t",
    b"~",
    b"1e400",
    b"-9223372036854775809",
    b".nan",
    b"parser: lines\n",
    b"parser: static\n",
    b"type: date\n",
    b"type: int\n",
    b"group: ",
    b"regex: ",
    b"line: ",
    b"start: ",
    b"(?P<x>",
    b"(?P=x)",
    b"(?<=a)",
    b"(?!",
    b"\\1",
    b"\\",
    b"\\u12",
    b"\\U0010ffff",
    b"{,5}",
    b"{99999999999}",
    b"[\\w-.]",
    b"[[:alpha:]",
    b"(?#",
    b"(a+)+$",
    b"%d/%m/%Y",
    b"%",
];

/// Python-regex syntax for patterns built from scratch.
const REGEX_SOUP: &[&str] = &[
    "a",
    "b",
    ".",
    "\\",
    "\\d",
    "\\w",
    "\\s",
    "\\b",
    "\\Z",
    "\\A",
    "\\<",
    "\\'",
    "\\u00e9",
    "\\U0001F600",
    "\\x4",
    "\\x41",
    "\\0",
    "\\1",
    "\\g<1>",
    "(",
    ")",
    "(?:",
    "(?P<v>",
    "(?P=v)",
    "(?=",
    "(?!",
    "(?<=",
    "(?<!",
    "(?#c)",
    "(?i)",
    "(?m)",
    "(?s)",
    "(?x)",
    "[",
    "]",
    "[^",
    "-",
    "&&",
    "~~",
    "[:alpha:]",
    "{",
    "}",
    "{2}",
    "{,3}",
    "{2,}",
    "{1,2}",
    "{999999}",
    "*",
    "+",
    "?",
    "*?",
    "+?",
    "|",
    "^",
    "$",
    " ",
    "#",
    "é",
    "\u{0}",
];

fn seeds() -> Vec<String> {
    let json = serde_json::json!({
        "issuer": "Json Supplier",
        "keywords": ["Json Supplier"],
        "fields": {"amount": "Total\\s+([\\d.,]+)", "date": {"parser": "regex", "regex": "Date (\\S+)", "type": "date"}},
        "options": {"currency": "EUR", "date_formats": ["%Y-%m-%d"]}
    });
    vec![
        BRIGHTWAY.to_owned(),
        OTHER.to_owned(),
        FULL.to_owned(),
        json.to_string(),
    ]
}

/// Loads within the budget; an accepted template must match and extract on a page within
/// the budget too (its patterns are tenant input as much as its structure).
fn load_checked(text: String, page: String) -> Result<(), TestCaseError> {
    let outcome = within("Template::from_yaml", move || {
        Template::from_yaml(&text).map(|template| {
            let matched = template.matches(&page);
            let _ = template.extract(&page);
            let _ = extract_with_templates(std::slice::from_ref(&template), &page);
            matched
        })
    });
    if let Err(e) = outcome {
        prop_assert!(!e.to_string().is_empty());
    }
    Ok(())
}

#[test]
fn seeds_are_valid() {
    for seed in seeds() {
        let template = Template::from_yaml(&seed).expect("seed template loads");
        assert!(template.warnings().is_empty(), "{:?}", template.warnings());
    }
    let full = Template::from_yaml(FULL).expect("loads");
    let fields = full
        .extract(PAGE)
        .expect("the page matches the full template");
    assert_eq!(fields["invoice_number"], "A1234");
    assert!(fields.contains_key("lines"), "{fields:?}");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text(text in ".{0,512}") {
        load_checked(text, PAGE.to_owned())?;
    }

    #[test]
    fn damaged_templates(text in damaged_text(seeds(), TEMPLATE_TOKENS)) {
        load_checked(text, PAGE.to_owned())?;
    }

    /// A valid template run on damaged text (the page is OCR output, untrusted too).
    #[test]
    fn damaged_pages(page in damaged_text(vec![PAGE.to_owned()], TEMPLATE_TOKENS)) {
        load_checked(FULL.to_owned(), page)?;
    }

    /// Any pattern: translated and compiled, or refused with a reason; a compiled one runs
    /// on the page within the budget, its backtracking bounded.
    #[test]
    fn python_patterns(pattern in prop_oneof![".{0,64}", soup(REGEX_SOUP, 40)]) {
        let outcome = within("PyRegex", move || {
            let translated = translate(&pattern);
            PyRegex::new(&pattern).map(|re| {
                let _ = re.search_groupdict(PAGE);
                let _ = re.findall(PAGE);
                let _ = re.split(PAGE);
                translated.is_ok()
            })
        });
        match outcome {
            Ok(translated) => prop_assert!(translated, "compiled without a translation"),
            Err(reason) => prop_assert!(!reason.is_empty()),
        }
    }

    /// Patterns spliced into a template's fields, keywords and lines rules.
    #[test]
    fn templates_with_any_pattern(
        pattern in soup(REGEX_SOUP, 24),
        slot in 0usize..4,
    ) {
        let quoted = format!("'{}'", pattern.replace('\'', "''"));
        let text = match slot {
            0 => FULL.replacen(r"Total\s+([\d,.]+)", &quoted, 1),
            1 => FULL.replacen("'Fuzz Trading'", &quoted, 1),
            2 => FULL.replacen(r"'(?P<desc>\S+)\s+(?P<qty>\d+)\s+(?P<price>[\d.]+)'", &quoted, 1),
            _ => FULL.replacen(r"'\s{3,}'", &quoted, 1),
        };
        load_checked(text, PAGE.to_owned())?;
    }

    #[test]
    fn template_sets(texts in proptest::collection::vec(damaged_text(seeds(), TEMPLATE_TOKENS), 0..6)) {
        let outcome = within("compile_set", move || {
            let files: Vec<(String, String)> = texts
                .into_iter()
                .enumerate()
                .map(|(k, t)| (format!("t{k}.yml"), t))
                .collect();
            compile_set(files.iter().map(|(n, t)| (n.as_str(), t.as_str())))
                .map(|set| set.len())
                .map_err(|refused| refused.len())
        });
        if let Err(refused) = outcome {
            prop_assert!(refused > 0);
        }
    }
}

/// The template loader reads YAML into values too: the same wide reuse must be refused.
#[test]
fn regression_wide_anchor_reused_many_times_is_refused_quickly() {
    let text = format!(
        "issuer: X\nkeywords: [x]\nfields: {{}}\nnotes:\n  - &w [{}]\n  - [{}]\n",
        vec!["x"; 2000].join(", "),
        vec!["*w"; 2000].join(", ")
    );
    let answer = within("wide reuse", move || Template::from_yaml(&text).map(|_| ()));
    assert!(
        matches!(&answer, Err(e) if e.to_string().contains("aliases")),
        "{answer:?}"
    );
}
