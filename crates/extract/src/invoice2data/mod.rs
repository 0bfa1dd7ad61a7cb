//! invoice2data templates, read as they are and run with invoice2data's semantics.
//!
//! invoice2data (a Python project) keeps a library of about two hundred supplier templates:
//! keywords that identify the supplier, and per field a Python regex with a type (`float`,
//! `int`, `date`) or a parser (`regex`, `static`, `lines`), plus options (`currency`,
//! `date_formats`, `decimal_separator`, `languages`, `remove_whitespace`, `remove_accents`,
//! `lowercase`, `replace`) and the `lines`/`tables` plugins. [`Template::from_yaml`] reads one
//! (YAML or JSON) without edits; [`extract_with_templates`] picks the first template, by
//! priority, whose keywords all match and none of whose `exclude_keywords` does, and extracts
//! what invoice2data would, as the JSON its output module writes.
//!
//! Design choices and their costs:
//! - Python patterns run on fancy-regex after a small translation ([`pyre`]), so look-around
//!   and backreferences work; the cost is a backtracking engine, bounded per search.
//! - Dates follow the template's `strptime` formats, then the core date parser (module `dates`)
//!   rather than a port of `dateparser`: common forms agree, exotic free-text dates may not.
//! - `area` (re-reading a PDF rectangle) needs the document, which this pure crate never
//!   sees: [`Template::extract_with_areas`] asks the caller for each [`Area`]'s text, and
//!   without an answer the field reads the whole text, as invoice2data itself does with input
//!   readers that cannot crop. Each template lists what it does not honour in
//!   [`Template::warnings`].

mod dates;
mod fields;
mod lines;
mod load;
pub mod pyre;
mod pyvalue;
mod traced;
mod yaml;

use std::ops::Range;

use serde_json::{Map, Value as Json};
use serde_yaml::Value as Yaml;

pub use fields::Area;
use fields::Field;
use lines::{LinesRule, TableSpec};
use pyre::{PyRegex, PyReplacement};
use pyvalue::Py;
use traced::Traced;

/// Largest template file accepted, in bytes.
pub const MAX_TEMPLATE_BYTES: usize = 1 << 20;

/// Most patterns one template may compile; templates are tenant input.
pub const MAX_PATTERNS: usize = 2048;

/// Longest pattern, in characters.
pub const MAX_PATTERN_CHARS: usize = 8192;

/// Most templates one set may hold.
pub const MAX_TEMPLATES: usize = 4096;

/// Compiles a set of template files, given as (name, text): every template, or every file
/// that cannot be read with the reason (and a refusal of the set when it is too large).
pub fn compile_set<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<Template>, Vec<(String, String)>> {
    let mut templates = Vec::new();
    let mut refused = Vec::new();
    for (k, (name, text)) in files.into_iter().enumerate() {
        if k == MAX_TEMPLATES {
            refused.push((
                name.to_owned(),
                format!("a set holds at most {MAX_TEMPLATES} templates"),
            ));
            break;
        }
        match Template::from_yaml(text) {
            Ok(t) => templates.push(t),
            Err(e) => refused.push((name.to_owned(), e.to_string())),
        }
    }
    if refused.is_empty() {
        Ok(templates)
    } else {
        Err(refused)
    }
}

/// One invoice2data template, compiled.
#[derive(Debug, Clone)]
pub struct Template {
    issuer: String,
    keywords: Vec<PyRegex>,
    exclude_keywords: Vec<PyRegex>,
    priority: i64,
    required_fields: Option<Vec<String>>,
    options: Options,
    fields: Vec<Field>,
    lines: Option<Vec<LinesRule>>,
    tables: Vec<TableSpec>,
    warnings: Vec<String>,
}

/// A template's `options`, with invoice2data's defaults.
#[derive(Debug, Clone)]
pub struct Options {
    /// Remove runs of spaces from the text before matching.
    pub remove_whitespace: bool,
    /// Remove accents before matching.
    pub remove_accents: bool,
    /// Lower-case the text before matching.
    pub lowercase: bool,
    /// Currency written to the output (default `EUR`).
    pub currency: String,
    /// `strptime` formats tried first for dates.
    pub date_formats: Vec<String>,
    /// ISO 639-1 codes for month names and day/month order.
    pub languages: Vec<String>,
    /// The decimal separator of numbers (default `.`).
    pub decimal_separator: String,
    replace: Vec<(PyRegex, PyReplacement)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            remove_whitespace: false,
            remove_accents: false,
            lowercase: false,
            currency: "EUR".into(),
            date_formats: Vec::new(),
            languages: Vec::new(),
            decimal_separator: ".".into(),
            replace: Vec::new(),
        }
    }
}

/// Why a template file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// Larger than [`MAX_TEMPLATE_BYTES`].
    #[error("template is {size} bytes; the limit is {limit}")]
    TooLarge {
        /// Size of the file.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Not YAML or JSON.
    #[error("template is not valid YAML/JSON: {0}")]
    Syntax(String),
    /// A required key is missing or has the wrong shape.
    #[error("{path}: {message}")]
    Invalid {
        /// Where, as `fields.amount.regex[1]`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A pattern does not compile, even after translation from Python syntax.
    #[error("{path}: pattern {pattern:?} cannot be compiled: {message}")]
    Regex {
        /// Where.
        path: String,
        /// The pattern as written.
        pattern: String,
        /// The compiler's reason.
        message: String,
    },
}

/// Why a matched template produced no result (invoice2data logs these, or raises).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// The text lacks the template's keywords, or has an excluded one.
    #[error("the template's keywords do not match this text")]
    NotMatched,
    /// Required fields were not found.
    #[error("required field(s) not found: {}", .0.join(", "))]
    MissingRequired(Vec<String>),
    /// A value could not be converted to its declared type (Python raises here).
    #[error("field {field}: cannot read {raw:?} as {kind}")]
    Coerce {
        /// The field.
        field: String,
        /// The captured text.
        raw: String,
        /// `int`, `float` or `date`.
        kind: String,
    },
}

impl Template {
    /// Reads a template file (YAML or JSON, as invoice2data accepts both).
    pub fn from_yaml(text: &str) -> Result<Template, TemplateError> {
        if text.len() > MAX_TEMPLATE_BYTES {
            return Err(TemplateError::TooLarge {
                size: text.len(),
                limit: MAX_TEMPLATE_BYTES,
            });
        }
        // JSON first for `.json` files: YAML refuses tabs that JSON allows.
        let doc: Yaml = match serde_json::from_str::<yaml::Lenient>(text) {
            Ok(doc) => doc.0,
            Err(_) => {
                crate::yaml_budget::check(text).map_err(TemplateError::Syntax)?;
                serde_yaml::from_str::<yaml::Lenient>(text)
                    .map_err(|e| TemplateError::Syntax(e.to_string()))?
                    .0
            }
        };
        load::Loader::default().template(&doc)
    }

    /// The supplier name written to `issuer`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Higher priorities are tried first (default 5).
    pub fn priority(&self) -> i64 {
        self.priority
    }

    /// The template's options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// What the template asks for that this engine does not do (`area`, unknown parsers…);
    /// empty when the template runs exactly as written.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// invoice2data's `prepare_input`: the options' text transformations.
    pub fn prepare(&self, text: &str) -> String {
        self.prepare_traced(text).into_text()
    }

    /// [`Template::prepare`], remembering where each byte of the result came from.
    fn prepare_traced(&self, text: &str) -> Traced {
        let o = &self.options;
        let mut s = Traced::new(text);
        if o.remove_whitespace {
            s = s.map_chars(|c| (c != ' ').then_some(c));
        }
        if o.remove_accents {
            use unicode_normalization::char::decompose_compatible;
            // NFKD, then the combining diacritics U+0300–U+0362, as invoice2data removes.
            s = s.map_chars(|c| {
                let mut kept = Vec::new();
                decompose_compatible(c, |d| {
                    if !('\u{300}'..='\u{362}').contains(&d) {
                        kept.push(d);
                    }
                });
                kept
            });
        }
        if o.lowercase {
            s = s.map_chars(char::to_lowercase);
        }
        for (re, repl) in &o.replace {
            s = s.substitute(re, repl);
        }
        s
    }

    /// invoice2data's `matches_input`: every keyword is found and no excluded one, in the
    /// text as read — before the options' transformations, so a keyword with a space still
    /// matches a template that removes whitespace.
    pub fn matches(&self, text: &str) -> bool {
        self.keywords.iter().all(|k| k.is_match(text))
            && !self.exclude_keywords.iter().any(|k| k.is_match(text))
    }

    /// Extracts the fields from `text` (raw, as read from the document), as invoice2data's
    /// JSON output would hold them.
    pub fn extract(&self, text: &str) -> Result<Map<String, Json>, ExtractError> {
        self.extract_with_areas(text, &mut |_| None)
    }

    /// [`Template::extract`], asking `read_area` for the text of each field's `area` (for a
    /// PDF: `pdftotext -layout -f -l -r -x -y -W -H`); `None` means "cannot crop" and the
    /// field reads the whole text.
    pub fn extract_with_areas(
        &self,
        text: &str,
        read_area: &mut dyn FnMut(&Area) -> Option<String>,
    ) -> Result<Map<String, Json>, ExtractError> {
        self.extract_traced(text, read_area).map(|e| e.fields)
    }

    /// [`Template::extract_with_areas`], also saying where in `text` each value was read.
    pub fn extract_traced(
        &self,
        text: &str,
        read_area: &mut dyn FnMut(&Area) -> Option<String>,
    ) -> Result<Extraction, ExtractError> {
        if !self.matches(text) {
            return Err(ExtractError::NotMatched);
        }
        let mut extraction = self.extract_prepared(&self.prepare_traced(text), read_area)?;
        // The issuer is known by the keywords that chose the template.
        if let Some(at) = self.keywords.first().and_then(|k| k.find(text)) {
            extraction.evidence.insert(
                0,
                Evidence {
                    field: "issuer".to_owned(),
                    range: at,
                    area: None,
                },
            );
        }
        Ok(extraction)
    }

    /// The areas this template's fields ask for, in field order.
    pub fn areas(&self) -> impl Iterator<Item = &Area> {
        self.fields.iter().filter_map(|f| f.area.as_ref())
    }

    fn extract_prepared(
        &self,
        prepared: &Traced,
        read_area: &mut dyn FnMut(&Area) -> Option<String>,
    ) -> Result<Extraction, ExtractError> {
        let text = prepared.text();
        let mut out = Output::default();
        let mut evidence = Vec::new();
        out.set("issuer", Py::Str(self.issuer.clone()));
        for field in &self.fields {
            // The area's text is used as read, without the options' transformations, as
            // invoice2data does.
            let area_text = field.area.as_ref().and_then(&mut *read_area);
            let mut found = Vec::new();
            let value = fields::run(
                self,
                field,
                area_text.as_deref().unwrap_or(text),
                &mut found,
            )?;
            if let Some(value) = value {
                out.set(&field.key, value);
                if let Some(first) = found.first() {
                    evidence.retain(|e: &Evidence| e.field != field.key);
                    // An area's text is read as it is: its ranges need no tracing back.
                    let (range, area) = match &area_text {
                        Some(_) => (first.clone(), field.area),
                        None => (prepared.source_range(first.clone()), None),
                    };
                    evidence.push(Evidence {
                        field: field.key.clone(),
                        range,
                        area,
                    });
                }
            }
        }
        out.set("currency", Py::Str(self.options.currency.clone()));
        if let Some(rules) = &self.lines {
            out.set(
                "lines",
                Py::List(lines::parse_lines(self, "lines", rules, text)?),
            );
        }
        for table in &self.tables {
            if let Some(values) = lines::parse_table(self, table, text)? {
                for (k, v) in values {
                    out.set(&k, v);
                }
            }
        }
        let default_required = ["date", "amount", "invoice_number", "issuer"].map(String::from);
        let required = self.required_fields.as_deref().unwrap_or(&default_required);
        let missing: Vec<String> = required.iter().filter(|r| !out.has(r)).cloned().collect();
        if !missing.is_empty() {
            return Err(ExtractError::MissingRequired(missing));
        }
        out.set("desc", Py::Str(format!("Invoice from {}", self.issuer)));
        Ok(Extraction {
            fields: out.0.into_iter().map(|(k, v)| (k, v.to_json())).collect(),
            evidence,
        })
    }
}

/// What a template extracted, and from where.
#[derive(Debug, Clone, PartialEq)]
pub struct Extraction {
    /// The fields, as invoice2data's JSON output holds them.
    pub fields: Map<String, Json>,
    /// Where each field read from the text came from (and `issuer`: the first keyword).
    /// Static values and line items have none.
    pub evidence: Vec<Evidence>,
}

/// Where one extracted value was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The field.
    pub field: String,
    /// The bytes its value (its first match, when several were grouped) came from: of the
    /// input text, or of the area's text when `area` is set.
    pub range: Range<usize>,
    /// The area the field was read from, when the caller gave its text.
    pub area: Option<Area>,
}

/// The output dictionary, in insertion order like Python's.
#[derive(Default)]
struct Output(Vec<(String, Py)>);

impl Output {
    fn set(&mut self, key: &str, value: Py) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }
}

/// The template invoice2data would use for `text`: the highest priority (stable among
/// equals) whose keywords match.
pub fn select_template<'t>(templates: &'t [Template], text: &str) -> Option<&'t Template> {
    let mut order: Vec<&Template> = templates.iter().collect();
    order.sort_by_key(|t| std::cmp::Reverse(t.priority));
    order.into_iter().find(|t| t.matches(text))
}

/// Runs invoice2data's selection and extraction: `Some((issuer, fields))` when a template
/// matches and its extraction succeeds. As in invoice2data, only the first matching template
/// is tried; a failure there is `None` (use [`select_template`] and [`Template::extract`]
/// for the reason).
pub fn extract_with_templates(templates: &[Template], text: &str) -> Option<(String, Json)> {
    let t = select_template(templates, text)?;
    let extraction = t
        .extract_prepared(&t.prepare_traced(text), &mut |_| None)
        .ok()?;
    Some((t.issuer.clone(), Json::Object(extraction.fields)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASIC: &str = r#"
issuer: Basic Test
keywords:
  - Basic Test
fields:
  date:
    parser: regex
    regex: Issue date:\s*(\d{4}-\d{2}-\d{2})
    type: date
  invoice_number:
    parser: regex
    regex: Invoice number:\s*([\d/]+)
  amount:
    parser: regex
    regex: Total:\s*(\d+\.\d\d)
    type: float
  static_vat: FR123
  missing:
    parser: regex
    regex: This field is missing (.*)
options:
  currency: EUR
  date_formats:
    - "%Y-%m-%d"
  decimal_separator: "."
"#;

    const TEXT: &str = "Issue date: 2022-09-27\nIssuer: Basic Test\nInvoice number: 0999/09/2022\nTotal: 123.45 EUR\n";

    #[test]
    fn a_basic_template_extracts_like_invoice2data() {
        let t = Template::from_yaml(BASIC).unwrap();
        let (issuer, fields) = extract_with_templates(std::slice::from_ref(&t), TEXT).unwrap();
        assert_eq!(issuer, "Basic Test");
        assert_eq!(
            fields,
            serde_json::json!({
                "issuer": "Basic Test", "date": "2022-09-27", "invoice_number": "0999/09/2022",
                "amount": 123.45, "vat": "FR123", "currency": "EUR", "desc": "Invoice from Basic Test"
            })
        );
        assert!(t.warnings().is_empty());
    }

    #[test]
    fn keywords_and_exclusions_select_the_template() {
        let excluded = BASIC.replace("keywords:", "exclude_keywords: [Issuer]\nkeywords:");
        let t = Template::from_yaml(&excluded).unwrap();
        assert!(extract_with_templates(std::slice::from_ref(&t), TEXT).is_none());
        assert_eq!(t.extract(TEXT), Err(ExtractError::NotMatched));
        let other = Template::from_yaml(&BASIC.replace("- Basic Test", "- Other Corp")).unwrap();
        let prio = Template::from_yaml(&format!(
            "priority: 9\n{}",
            BASIC.replace("issuer: Basic Test", "issuer: Preferred")
        ))
        .unwrap();
        let templates = [other, Template::from_yaml(BASIC).unwrap(), prio];
        assert_eq!(
            select_template(&templates, TEXT).map(Template::issuer),
            Some("Preferred")
        );
    }

    #[test]
    fn missing_required_fields_fail_the_extraction() {
        let t = Template::from_yaml(BASIC).unwrap();
        let err = t.extract("Basic Test\nTotal: 1.00").unwrap_err();
        assert_eq!(
            err,
            ExtractError::MissingRequired(vec!["date".into(), "invoice_number".into()])
        );
    }

    #[test]
    fn alias_bombs_are_refused_not_expanded() {
        let mut yaml = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            yaml.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        yaml.push_str("keywords: *a11\nfields: {}\n");
        assert!(matches!(
            Template::from_yaml(&yaml),
            Err(TemplateError::Syntax(_))
        ));
    }

    #[test]
    fn load_errors_name_the_place() {
        let err = Template::from_yaml(&BASIC.replace(r"Total:\s*(\d+\.\d\d)", r"Total:\s*(\d+["))
            .unwrap_err();
        assert!(
            matches!(&err, TemplateError::Regex { path, .. } if path == "fields.amount.regex[0]"),
            "{err}"
        );
        let err = Template::from_yaml("fields: {}\n").unwrap_err();
        assert_eq!(err.to_string(), "keywords: missing");
        let err = Template::from_yaml(&BASIC.replace("type: float", "type: money")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("fields.amount.type: unknown type"),
            "{err}"
        );
    }

    /// Keywords are matched on the text as read; fields on the transformed text.
    #[test]
    fn options_transform_the_text_before_matching() {
        let yaml = r#"
issuer: X
keywords: [Société]
fields:
  invoice_number: facturen(\d+)
  amount: total(\d+,\d\d)
  date: le(\d+/\d+/\d+)
options:
  remove_whitespace: true
  remove_accents: true
  lowercase: true
  decimal_separator: ","
  date_formats: ["%d/%m/%Y"]
  replace: [["societegenerale", "societe generale"]]
"#;
        let t = Template::from_yaml(yaml).unwrap();
        let fields = t
            .extract("Société Générale\nFacture n 42\nTotal 1 234,50\nLe 02/03/2024")
            .unwrap();
        assert_eq!(fields["invoice_number"], "42");
        assert_eq!(fields["amount"], 1234.5);
        assert_eq!(fields["date"], "2024-03-02");
    }
}
