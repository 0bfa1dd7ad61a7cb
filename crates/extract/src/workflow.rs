//! Workflow files: which document types a dossier may hold, how to recognise each one's
//! pages, and which fields to extract from it. `workflows/README.md` documents the format.
//!
//! A workflow arrives as untrusted text (a tenant uploads it), so loading is parse, then
//! validate everything, then compile every pattern once: [`Workflow::from_yaml`] either returns
//! a workflow whose every regex is known to compile within [`limits`], or every problem found,
//! each named by its path (`document_types[1].fields[2].patterns[0]: …`) so the author can fix
//! them all in one pass. The rules and the decision policy are compiled by the rules engine
//! ([`ironclad_core::rules`]) against the document types and fields the file declares, so a
//! rule naming a field no document carries is refused here, with the rest.

use std::collections::HashSet;
use std::fmt;

use ironclad_core::page::BBox;
use ironclad_core::parse::{DateOrder, ParseHints, ParserKind};
use ironclad_core::rules::{CompiledRuleset, RulesetSpec, Schema};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize, Serializer};

use crate::fuzzy::{self, Phrase};
use crate::shape::{Shape, MAX_SHAPES, MAX_SHAPE_LEN};
use ironclad_core::fold::{fold_pattern, fold_str};

/// Bounds on what a workflow file may ask for. A workflow is tenant input: without bounds,
/// one file could make every page of every case run thousands of patterns.
pub mod limits {
    /// Largest workflow file accepted, in bytes.
    pub const MAX_FILE_BYTES: usize = 1 << 20;
    /// Most document types in one workflow.
    pub const MAX_DOCUMENT_TYPES: usize = 64;
    /// Most recognition keywords per document type.
    pub const MAX_KEYWORDS: usize = 128;
    /// Most first-page or continuation markers per document type.
    pub const MAX_MARKERS: usize = 16;
    /// Most fields per document type.
    pub const MAX_FIELDS: usize = 64;
    /// Most patterns per field, and most labels.
    pub const MAX_PATTERNS: usize = 16;
    /// Longest pattern or keyword, in characters.
    pub const MAX_PATTERN_CHARS: usize = 1024;
    /// Longest identifier (document type id, field name), in characters.
    pub const MAX_ID_CHARS: usize = 64;
    /// Compiled size allowed per regex. The regex crate runs in linear time whatever the
    /// pattern, so size is the one cost left to bound; 1 MiB is far above any label pattern
    /// and far below what `(?:\w{1000}){1000}` would need.
    pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
    /// Lazy-DFA cache per regex; beyond it the engine falls back to slower search, not failure.
    pub const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;
    /// Deepest nesting of groups and repetitions in a pattern.
    pub const REGEX_NEST_LIMIT: u32 = 64;
}

/// A workflow file as written (see `workflows/README.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    /// Stable name, such as `trade`.
    pub name: String,
    /// Version of this workflow; a new version is a new row, never an edit.
    pub version: u32,
    /// ISO 639-1 codes of the languages its documents are written in (informative; matching
    /// is accent- and case-insensitive whatever the language).
    #[serde(default)]
    pub languages: Vec<String>,
    /// Locale defaults for every field's parser.
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub parse_hints: Hints,
    /// The document types a dossier may hold.
    pub document_types: Vec<DocumentTypeSpec>,
    /// Business rules as written (a list of [`ironclad_core::rules::RuleSpec`]); kept loose
    /// here so a bad rule is reported at its path rather than as a syntax error, and compiled
    /// by the rules engine when the workflow loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<serde_json::Value>,
    /// Decision policy as written ([`ironclad_core::rules::Policy`]), compiled with the rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<serde_json::Value>,
}

/// One document type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentTypeSpec {
    /// Identifier used in segments, facts and rules (`[a-z][a-z0-9_]*`).
    pub id: String,
    /// Human title, for the operator.
    pub title: String,
    /// How to tell its pages from other types' pages.
    pub recognition: RecognitionSpec,
    /// Locale overrides for this type's fields.
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub parse_hints: Hints,
    /// The fields to extract.
    #[serde(default)]
    pub fields: Vec<FieldSpec>,
}

/// How a page is recognised as this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecognitionSpec {
    /// Weighted evidence; a page's score is the sum of the weights of the keywords found on
    /// it, clamped to `[0, 1]`.
    pub keywords: Vec<KeywordSpec>,
    /// Lowest score that classifies a page as this type.
    #[serde(default = "default_min_score")]
    pub min_score: f64,
    /// How far this type's score must lead the runner-up's; closer is reported as ambiguous.
    #[serde(default = "default_margin")]
    pub margin: f64,
    /// Patterns that mark a document's first page (its title, `page 1 of`); such a page
    /// starts a new segment even when the previous page has the same type.
    #[serde(default)]
    pub first_page: Vec<String>,
    /// Patterns that mark a continuation page (`(continued)`, `page 2 of`); they veto
    /// `first_page`, as a title repeated on page 2 does not start a new document.
    #[serde(default)]
    pub continuation: Vec<String>,
}

fn default_min_score() -> f64 {
    0.5
}

fn default_margin() -> f64 {
    0.1
}

/// One piece of recognition evidence: a phrase or a pattern, and its weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeywordSpec {
    /// A phrase matched as whole words, accent- and case-insensitively; any run of spaces in
    /// it also matches a line break.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A regular expression (Rust `regex` syntax), matched on the folded page text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// The `text` is the document's title: found only at the end of a line (a carrier's name
    /// may come before it, a reference number may not follow it), with stray rule marks,
    /// joined or split words and a few OCR slips tolerated (`| BILLOF LAD1NG —`). A page
    /// showing its title is a first page, unless a continuation marker vetoes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub title: bool,
    /// In `[-1, 1]`; negative weights count against the type.
    #[serde(default = "default_weight")]
    pub weight: f64,
}

fn default_weight() -> f64 {
    1.0
}

/// One field to extract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// Field name, shared across document types so rules can compare them.
    pub name: String,
    /// Which core parser reads the value.
    pub parser: ParserKind,
    /// Label-anchored patterns, each with a named group `value`; every match of every
    /// pattern on every page of the segment is a candidate.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// The printed labels of the value, found by page geometry rather than reading order:
    /// the value is the run of words right of a label on its row, or directly under it
    /// ([`FieldSpec::value_at`]). A label is found whatever its case and accents, with stray
    /// rule marks and a few OCR slips tolerated. Its candidates compete with the patterns'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Where the value sits from its label, in order of preference (default: right, then
    /// below).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value_at: Vec<Direction>,
    /// Only words whose centre lies in this page-relative box are searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<Region>,
    /// Whether a document of this type without the field is incomplete.
    #[serde(default)]
    pub required: bool,
    /// For `weight` fields whose label states the unit (`Gross weight (kg): 26,070.00`):
    /// appended to a value written without one. The evidence keeps the text as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// For `text` identifiers of a known shape: `#` a digit, `@` a letter, `&` either, any
    /// other character itself (`"##@@&&&&&&&&&&&&&#"`, an EU declaration number), or a list of
    /// such shapes (one per carrier's format). A value that fits is read into it (spaces
    /// dropped, `O` where a digit must be read as `0`, upper case); a value of another shape
    /// is kept as read. See [`crate::shape`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<ShapeSpec>,
    /// Locale overrides for this field.
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub parse_hints: Hints,
}

/// A field's `shape:` as written: one shape, or several the value may take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ShapeSpec {
    /// `shape: "##@@&&&&&&&&&&&&&#"`
    One(String),
    /// `shape: ["COSU##########", "HLCU@@@#######"]`
    Many(Vec<String>),
}

impl ShapeSpec {
    /// The shapes as written.
    pub fn sources(&self) -> &[String] {
        match self {
            ShapeSpec::One(s) => std::slice::from_ref(s),
            ShapeSpec::Many(v) => v,
        }
    }
}

/// Where a value sits from its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// On the label's row, to its right (`Gross weight (kg)   26,070.00`, a table's next cell).
    Right,
    /// On the first row under the label, overlapping it horizontally (stacked forms).
    Below,
}

/// A page-relative search box: (0, 0) top-left, (1, 1) bottom-right.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
}

impl Region {
    /// Whether the centre of `b` lies inside this region (edges included).
    pub fn contains_centre(&self, b: BBox) -> bool {
        let Region { x0, y0, x1, y1 } = *self;
        BBox { x0, y0, x1, y1 }.contains_centre(b)
    }
}

/// Locale hints for the core parsers; each level (workflow, document type, field) overrides
/// only what it sets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    /// `.` or `,`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimal_separator: Option<char>,
    /// ISO 4217 code assumed when an amount has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_currency: Option<String>,
    /// `day_first`, `month_first` or `year_first`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_order: Option<DateOrder>,
}

impl Hints {
    fn is_empty(&self) -> bool {
        *self == Hints::default()
    }

    /// `self` with `over`'s settings taking precedence.
    fn overlaid(&self, over: &Hints) -> Hints {
        Hints {
            decimal_separator: over.decimal_separator.or(self.decimal_separator),
            default_currency: over
                .default_currency
                .clone()
                .or_else(|| self.default_currency.clone()),
            date_order: over.date_order.or(self.date_order),
        }
    }

    fn to_parse_hints(&self) -> ParseHints {
        ParseHints {
            decimal_separator: self.decimal_separator,
            default_currency: self.default_currency.clone(),
            date_order: self.date_order.unwrap_or_default(),
        }
    }
}

/// A validated workflow with every pattern compiled.
#[derive(Clone)]
pub struct Workflow {
    spec: WorkflowSpec,
    types: Vec<CompiledType>,
    ruleset: CompiledRuleset,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledType {
    pub keywords: Vec<CompiledKeyword>,
    pub first_page: Vec<Regex>,
    pub continuation: Vec<Regex>,
    pub fields: Vec<CompiledField>,
}

/// One piece of recognition evidence, ready to be looked for on a page.
#[derive(Debug, Clone)]
pub(crate) enum CompiledKeyword {
    /// A `regex:` keyword, or a `text:` phrase too short to be told apart without word
    /// boundaries (`eori`): matched as a regex on the folded text.
    Pattern(Regex, f64),
    /// A `text:` phrase: its whole-word regex, or its letters in order whatever the spaces
    /// and stray marks between them (`notifyparty`, `notify | party`).
    Phrase(Regex, Phrase, f64),
    /// A `title: true` phrase, looked for line by line.
    Title(Phrase, f64),
}

impl CompiledKeyword {
    pub fn weight(&self) -> f64 {
        match self {
            Self::Pattern(_, w) | Self::Phrase(_, _, w) | Self::Title(_, w) => *w,
        }
    }
}

/// Shortest phrase (letters and digits) also matched without word boundaries: below it, a
/// phrase hides inside too many longer words.
const MIN_SPACELESS_PHRASE: usize = 6;

#[derive(Debug, Clone)]
pub(crate) struct CompiledField {
    pub patterns: Vec<Regex>,
    /// The labels, in file order; candidates they find are numbered after the patterns.
    pub labels: Vec<Phrase>,
    pub value_at: Vec<Direction>,
    pub hints: ParseHints,
    pub unit: Option<String>,
    pub shape: Option<Shape>,
}

impl fmt::Debug for Workflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workflow")
            .field("name", &self.spec.name)
            .field("version", &self.spec.version)
            .finish_non_exhaustive()
    }
}

impl Serialize for Workflow {
    /// A workflow serializes as the file it was loaded from (compiled patterns are derived).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.spec.serialize(s)
    }
}

/// Why a workflow file was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkflowError {
    /// The file exceeds [`limits::MAX_FILE_BYTES`].
    #[error("workflow file is {size} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// Size of the file.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The text is not YAML, or not shaped like a workflow (unknown key, wrong type, unknown
    /// parser kind). The message names the place.
    #[error("workflow file cannot be read: {0}")]
    Syntax(String),
    /// The file is well-formed but breaks one or more rules; every problem is listed.
    #[error("workflow file is invalid ({} problem(s)):\n{}", .0.len(), Issue::list(.0))]
    Invalid(Vec<Issue>),
}

/// One validation problem, with the path of the offending value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// Where, as `document_types[1].fields[2].patterns[0]`.
    pub path: String,
    /// What is wrong and, where it helps, what to do.
    pub message: String,
}

impl Issue {
    fn list(issues: &[Issue]) -> String {
        issues
            .iter()
            .map(|i| format!("  {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl Workflow {
    /// Parses, validates and compiles a workflow file.
    pub fn from_yaml(text: &str) -> Result<Workflow, WorkflowError> {
        if text.len() > limits::MAX_FILE_BYTES {
            return Err(WorkflowError::TooLarge {
                size: text.len(),
                limit: limits::MAX_FILE_BYTES,
            });
        }
        crate::yaml_budget::check(text).map_err(WorkflowError::Syntax)?;
        let spec: WorkflowSpec =
            serde_yaml::from_str(text).map_err(|e| WorkflowError::Syntax(e.to_string()))?;
        Workflow::from_spec(spec)
    }

    /// Validates and compiles an already parsed workflow (for instance one read back from
    /// the database as JSON).
    pub fn from_spec(spec: WorkflowSpec) -> Result<Workflow, WorkflowError> {
        let mut v = Validator::default();
        let types = v.workflow(&spec);
        let ruleset = v.rules(&spec);
        if v.issues.is_empty() {
            Ok(Workflow {
                spec,
                types,
                ruleset,
            })
        } else {
            Err(WorkflowError::Invalid(v.issues))
        }
    }

    /// The workflow as written.
    pub fn spec(&self) -> &WorkflowSpec {
        &self.spec
    }

    /// The compiled rules and decision policy (empty, with the default policy, when the file
    /// has none; the `safeguard_no_rules` safeguard then keeps decisions from reading READY).
    pub fn ruleset(&self) -> &CompiledRuleset {
        &self.ruleset
    }

    /// The document types and fields rules may name, so a managed ruleset can be validated
    /// against this workflow ([`RulesetSpec::compile`]).
    pub fn schema(&self) -> Schema {
        schema_of(&self.spec)
    }

    /// The document type with this id.
    pub fn document_type(&self, id: &str) -> Option<&DocumentTypeSpec> {
        self.spec.document_types.iter().find(|t| t.id == id)
    }

    /// Spec and compiled form of every document type, in file order.
    pub(crate) fn types(&self) -> impl Iterator<Item = (&DocumentTypeSpec, &CompiledType)> {
        self.spec.document_types.iter().zip(&self.types)
    }

    /// Spec and compiled form of one document type.
    pub(crate) fn compiled_type(&self, id: &str) -> Option<(&DocumentTypeSpec, &CompiledType)> {
        self.types().find(|(t, _)| t.id == id)
    }
}

/// Collects every problem rather than stopping at the first.
#[derive(Default)]
struct Validator {
    issues: Vec<Issue>,
}

impl Validator {
    fn issue(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.issues.push(Issue {
            path: path.into(),
            message: message.into(),
        });
    }

    fn workflow(&mut self, spec: &WorkflowSpec) -> Vec<CompiledType> {
        if spec.name.trim().is_empty() || spec.name.chars().count() > 200 {
            self.issue("name", "must be 1 to 200 characters");
        }
        for (i, lang) in spec.languages.iter().enumerate() {
            if lang.len() != 2 || !lang.chars().all(|c| c.is_ascii_lowercase()) {
                self.issue(
                    format!("languages[{i}]"),
                    format!("{lang:?} is not a two-letter ISO 639-1 code"),
                );
            }
        }
        self.hints("parse_hints", &spec.parse_hints);
        if spec.document_types.is_empty() {
            self.issue("document_types", "declare at least one document type");
        }
        if spec.document_types.len() > limits::MAX_DOCUMENT_TYPES {
            self.issue(
                "document_types",
                format!("at most {} document types", limits::MAX_DOCUMENT_TYPES),
            );
        }
        let mut seen = HashSet::new();
        let mut compiled = Vec::new();
        for (i, t) in spec
            .document_types
            .iter()
            .enumerate()
            .take(limits::MAX_DOCUMENT_TYPES)
        {
            let path = format!("document_types[{i}]");
            self.identifier(&format!("{path}.id"), &t.id);
            if !seen.insert(t.id.as_str()) {
                self.issue(
                    format!("{path}.id"),
                    format!("duplicate document type id {:?}", t.id),
                );
            }
            let hints = spec.parse_hints.overlaid(&t.parse_hints);
            compiled.push(self.document_type(&path, t, &hints));
        }
        compiled
    }

    /// Compiles `rules` and `policy`; the engine's paths start at the file's root already
    /// (`rules[0].params.field`, `policy.confidence_floor`).
    fn rules(&mut self, spec: &WorkflowSpec) -> CompiledRuleset {
        let schema = schema_of(spec);
        RulesetSpec::compile_json(spec.rules.as_ref(), spec.policy.as_ref(), &schema)
            .unwrap_or_else(|issues| {
                for i in issues {
                    self.issue(i.path, i.message);
                }
                CompiledRuleset::default()
            })
    }

    fn document_type(&mut self, path: &str, t: &DocumentTypeSpec, hints: &Hints) -> CompiledType {
        self.hints(&format!("{path}.parse_hints"), &t.parse_hints);
        let r = &t.recognition;
        let rpath = format!("{path}.recognition");
        if r.keywords.is_empty() {
            self.issue(format!("{rpath}.keywords"), "declare at least one keyword");
        }
        self.count(
            &format!("{rpath}.keywords"),
            r.keywords.len(),
            limits::MAX_KEYWORDS,
        );
        if !(r.min_score > 0.0 && r.min_score <= 1.0) {
            self.issue(format!("{rpath}.min_score"), "must be in (0, 1]");
        }
        if !(0.0..1.0).contains(&r.margin) {
            self.issue(format!("{rpath}.margin"), "must be in [0, 1)");
        }
        let mut keywords = Vec::new();
        for (k, kw) in r.keywords.iter().enumerate().take(limits::MAX_KEYWORDS) {
            let kpath = format!("{rpath}.keywords[{k}]");
            if !(kw.weight.is_finite() && (-1.0..=1.0).contains(&kw.weight) && kw.weight != 0.0) {
                self.issue(format!("{kpath}.weight"), "must be in [-1, 1] and not 0");
            }
            let w = kw.weight;
            let compiled = match (&kw.text, &kw.regex, kw.title) {
                (Some(text), None, true) => {
                    let folded = fold_str(text);
                    let phrase = Phrase::new(&folded, Phrase::title_tolerance(&folded));
                    if phrase.is_none() {
                        self.issue(
                            format!("{kpath}.text"),
                            format!("a title needs 1 to {} letters or digits", fuzzy::MAX_PHRASE),
                        );
                    }
                    phrase.map(|p| CompiledKeyword::Title(p, w))
                }
                (Some(text), None, false) => {
                    let re = self.phrase(&format!("{kpath}.text"), text);
                    let folded = fold_str(text);
                    let spaceless = Phrase::new(&folded, 0)
                        .filter(|_| fuzzy::skeleton(&folded).len() >= MIN_SPACELESS_PHRASE);
                    re.map(|re| match spaceless {
                        Some(p) => CompiledKeyword::Phrase(re, p, w),
                        None => CompiledKeyword::Pattern(re, w),
                    })
                }
                (None, Some(_), true) => {
                    self.issue(
                        format!("{kpath}.title"),
                        "a title is a `text`, not a `regex`",
                    );
                    None
                }
                (None, Some(pattern), false) => self
                    .marker(&format!("{kpath}.regex"), pattern)
                    .map(|re| CompiledKeyword::Pattern(re, w)),
                _ => {
                    self.issue(kpath, "set exactly one of `text` or `regex`");
                    None
                }
            };
            keywords.extend(compiled);
        }
        let markers = |v: &mut Self, name: &str, list: &[String]| -> Vec<Regex> {
            v.count(&format!("{rpath}.{name}"), list.len(), limits::MAX_MARKERS);
            let it = list.iter().enumerate().take(limits::MAX_MARKERS);
            it.filter_map(|(i, p)| v.marker(&format!("{rpath}.{name}[{i}]"), p))
                .collect()
        };
        let first_page = markers(self, "first_page", &r.first_page);
        let continuation = markers(self, "continuation", &r.continuation);

        self.count(
            &format!("{path}.fields"),
            t.fields.len(),
            limits::MAX_FIELDS,
        );
        let mut names = HashSet::new();
        let mut fields = Vec::new();
        for (f, field) in t.fields.iter().enumerate().take(limits::MAX_FIELDS) {
            let fpath = format!("{path}.fields[{f}]");
            self.identifier(&format!("{fpath}.name"), &field.name);
            if !names.insert(field.name.as_str()) {
                self.issue(
                    format!("{fpath}.name"),
                    format!("duplicate field {:?} in this document type", field.name),
                );
            }
            fields.push(self.field(&fpath, field, hints));
        }
        CompiledType {
            keywords,
            first_page,
            continuation,
            fields,
        }
    }

    fn field(&mut self, path: &str, field: &FieldSpec, hints: &Hints) -> CompiledField {
        self.hints(&format!("{path}.parse_hints"), &field.parse_hints);
        if field.patterns.is_empty() && field.labels.is_empty() {
            self.issue(
                format!("{path}.patterns"),
                "declare at least one pattern or label",
            );
        }
        self.count(
            &format!("{path}.patterns"),
            field.patterns.len(),
            limits::MAX_PATTERNS,
        );
        let mut patterns = Vec::new();
        for (p, pattern) in field.patterns.iter().enumerate().take(limits::MAX_PATTERNS) {
            let ppath = format!("{path}.patterns[{p}]");
            let Some(re) = self.regex(&ppath, pattern) else {
                continue;
            };
            if !re.capture_names().flatten().any(|n| n == "value") {
                self.issue(
                    ppath,
                    "missing named group \"value\": write the value part as (?P<value>…)",
                );
                continue;
            }
            patterns.push(re);
        }
        let labels = self.labels(path, field);
        if let Some(unit) = &field.unit {
            if field.parser != ParserKind::Weight {
                self.issue(
                    format!("{path}.unit"),
                    "only `weight` fields take a unit; money uses parse_hints.default_currency",
                );
            } else if unit.is_empty()
                || unit.chars().count() > 16
                || !unit.chars().all(char::is_alphabetic)
            {
                self.issue(
                    format!("{path}.unit"),
                    format!("{unit:?} is not a unit such as kg or lb"),
                );
            }
        }
        let shape = field.shape.as_ref().and_then(|spec| {
            let path = format!("{path}.shape");
            if field.parser != ParserKind::Text {
                self.issue(path, "only `text` fields take a shape");
                return None;
            }
            let sources = spec.sources();
            if sources.is_empty() || sources.len() > MAX_SHAPES {
                self.issue(
                    path,
                    format!("give one shape or a list of 1 to {MAX_SHAPES}"),
                );
                return None;
            }
            let shape = Shape::any_of(sources);
            if let Err(bad) = &shape {
                let at = match spec {
                    ShapeSpec::One(_) => path,
                    ShapeSpec::Many(_) => format!("{path}[{bad}]"),
                };
                self.issue(
                    at,
                    format!(
                        "{:?} is not a shape: `#` digit, `@` letter, `&` either, other \
                         characters as printed, no spaces, at most {MAX_SHAPE_LEN}",
                        sources[*bad]
                    ),
                );
            }
            shape.ok()
        });
        if let Some(r) = field.region {
            let ok = [r.x0, r.y0, r.x1, r.y1]
                .iter()
                .all(|v| v.is_finite() && (0.0..=1.0).contains(v));
            if !ok || r.x0 >= r.x1 || r.y0 >= r.y1 {
                self.issue(
                    format!("{path}.region"),
                    "edges must lie in [0, 1] with x0 < x1 and y0 < y1",
                );
            }
        }
        let value_at = if field.value_at.is_empty() {
            vec![Direction::Right, Direction::Below]
        } else {
            field.value_at.clone()
        };
        if field.value_at.len() > 2 || (value_at.len() == 2 && value_at[0] == value_at[1]) {
            self.issue(
                format!("{path}.value_at"),
                "list `right` and `below` at most once each",
            );
        }
        if !field.value_at.is_empty() && field.labels.is_empty() {
            self.issue(
                format!("{path}.value_at"),
                "says where a value sits from its label: declare `labels` too",
            );
        }
        CompiledField {
            patterns,
            labels,
            value_at,
            hints: hints.overlaid(&field.parse_hints).to_parse_hints(),
            unit: field.unit.clone(),
            shape,
        }
    }

    /// Each label becomes a fuzzy phrase ([`Phrase::label`]): OCR slips, stray marks and
    /// joined words are the norm around table cells.
    fn labels(&mut self, path: &str, field: &FieldSpec) -> Vec<Phrase> {
        self.count(
            &format!("{path}.labels"),
            field.labels.len(),
            limits::MAX_PATTERNS,
        );
        let mut labels = Vec::new();
        for (l, label) in field.labels.iter().enumerate().take(limits::MAX_PATTERNS) {
            let folded = fold_str(label);
            match Phrase::label(&folded) {
                Some(p) => labels.push(p),
                None => self.issue(
                    format!("{path}.labels[{l}]"),
                    format!("a label needs 1 to {} letters or digits", fuzzy::MAX_PHRASE),
                ),
            }
        }
        labels
    }

    /// A keyword phrase becomes a whole-word, whitespace-tolerant regex on folded text.
    fn phrase(&mut self, path: &str, text: &str) -> Option<Regex> {
        let folded = fold_str(text);
        let words: Vec<String> = folded.split_whitespace().map(regex::escape).collect();
        if words.is_empty() {
            self.issue(path, "must not be empty");
            return None;
        }
        if text.chars().count() > limits::MAX_PATTERN_CHARS {
            self.issue(
                path,
                format!("longer than {} characters", limits::MAX_PATTERN_CHARS),
            );
            return None;
        }
        let word_char = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        let lead = if word_char(folded.trim().chars().next()) {
            r"\b"
        } else {
            ""
        };
        let tail = if word_char(folded.trim().chars().last()) {
            r"\b"
        } else {
            ""
        };
        self.regex(path, &format!("{lead}{}{tail}", words.join(r"\s+")))
    }

    /// A recognition regex must not match the empty string, or it would score every page.
    fn marker(&mut self, path: &str, pattern: &str) -> Option<Regex> {
        let re = self.regex(path, pattern)?;
        if re.is_match("") {
            self.issue(
                path,
                "matches the empty string, so it would match every page",
            );
            return None;
        }
        Some(re)
    }

    fn regex(&mut self, path: &str, pattern: &str) -> Option<Regex> {
        if pattern.chars().count() > limits::MAX_PATTERN_CHARS {
            self.issue(
                path,
                format!("longer than {} characters", limits::MAX_PATTERN_CHARS),
            );
            return None;
        }
        if pattern.trim().is_empty() {
            self.issue(path, "must not be empty");
            return None;
        }
        compile(pattern).map_err(|e| self.issue(path, e)).ok()
    }

    fn identifier(&mut self, path: &str, id: &str) {
        let mut chars = id.chars();
        let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && id.len() <= limits::MAX_ID_CHARS;
        if !ok {
            self.issue(
                path,
                format!(
                    "{id:?} is not an identifier: use [a-z][a-z0-9_]*, at most {} characters",
                    limits::MAX_ID_CHARS
                ),
            );
        }
    }

    fn count(&mut self, path: &str, n: usize, max: usize) {
        if n > max {
            self.issue(
                path,
                format!("{n} entries; at most {max} are allowed (the rest are ignored)"),
            );
        }
    }

    fn hints(&mut self, path: &str, hints: &Hints) {
        if let Some(c) = hints.decimal_separator {
            if c != '.' && c != ',' {
                self.issue(
                    format!("{path}.decimal_separator"),
                    format!("{c:?} is neither '.' nor ','"),
                );
            }
        }
        if let Some(code) = &hints.default_currency {
            if code.len() != 3 || !code.chars().all(|c| c.is_ascii_uppercase()) {
                self.issue(
                    format!("{path}.default_currency"),
                    format!("{code:?} is not an ISO 4217 code such as USD"),
                );
            }
        }
    }
}

/// What rules may name: every document type's fields and their parser kinds.
fn schema_of(spec: &WorkflowSpec) -> Schema {
    let document_types = spec
        .document_types
        .iter()
        .map(|t| {
            let fields = t
                .fields
                .iter()
                .map(|f| (f.name.clone(), f.parser))
                .collect();
            (t.id.clone(), fields)
        })
        .collect();
    Schema { document_types }
}

/// Compiles a workflow pattern for folded text: accents stripped from its literals,
/// case-insensitive, `^`/`$` at line ends, within the size limits.
fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(&fold_pattern(pattern))
        .case_insensitive(true)
        .multi_line(true)
        .size_limit(limits::REGEX_SIZE_LIMIT)
        .dfa_size_limit(limits::REGEX_DFA_SIZE_LIMIT)
        .nest_limit(limits::REGEX_NEST_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => {
                format!("pattern compiles to more than {limit} bytes; simplify it")
            }
            // The syntax error's own text is multi-line with a caret under the fault; keep
            // it on one line so the issue list stays one line per problem.
            other => format!(
                "invalid regex: {}",
                other
                    .to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironclad_core::parse::Value;

    const MINIMAL: &str = r#"
name: t
version: 1
document_types:
  - id: invoice
    title: Invoice
    recognition:
      keywords:
        - text: commercial invoice
          weight: 0.8
    fields:
      - name: invoice_number
        parser: text
        patterns: ['invoice no\.?:\s*(?P<value>\S+)']
"#;

    fn issues(yaml: &str) -> Vec<String> {
        match Workflow::from_yaml(yaml) {
            Err(WorkflowError::Invalid(list)) => list.iter().map(ToString::to_string).collect(),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_minimal_workflow_loads_with_defaults() {
        let wf = Workflow::from_yaml(MINIMAL).unwrap();
        let t = wf.document_type("invoice").unwrap();
        assert_eq!(t.recognition.min_score, 0.5);
        assert_eq!(t.recognition.margin, 0.1);
        assert!(!t.fields[0].required);
        assert_eq!(t.fields[0].parser, ParserKind::Text);
    }

    #[test]
    fn a_shaped_field_reads_ocr_slips_into_its_shape_and_keeps_other_values() {
        let yaml = MINIMAL.replace(
            "        parser: text\n",
            "        parser: text\n        shape: \"##@@&&&&&&&&&&&&&#\"\n",
        );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let read = |raw: &str| {
            crate::extract::read_field(&wf, "invoice", "invoice_number", raw)
                .expect("declared field")
                .expect("parsed")
        };
        let repaired = read("24GBXT10DPAHP8D1RO");
        assert_eq!(repaired.value, Value::Text("24GBXT10DPAHP8D1R0".into()));
        assert!(
            (repaired.certainty - 0.9).abs() < 1e-9,
            "one repair costs certainty"
        );
        let joined = read("24BET41V9KB9L5J S02");
        assert_eq!(joined.value, Value::Text("24BET41V9KB9L5JS02".into()));
        assert_eq!(joined.certainty, 1.0);
        // A national number of another format is kept as read.
        assert_eq!(
            read("24DEHAM4170093182").value,
            Value::Text("24DEHAM4170093182".into())
        );

        let bad = MINIMAL.replace(
            "        parser: text\n",
            "        parser: text\n        shape: \"## ##\"\n",
        );
        assert_eq!(issues(&bad).len(), 1, "{:?}", issues(&bad));
        assert!(issues(&bad)[0]
            .starts_with("document_types[0].fields[0].shape: \"## ##\" is not a shape"));
        let typed = MINIMAL.replace(
            "        parser: text\n",
            "        parser: integer\n        shape: \"###\"\n",
        );
        assert_eq!(
            issues(&typed),
            ["document_types[0].fields[0].shape: only `text` fields take a shape"]
        );
        // A list: each entry checked, named by its index; an empty list refused.
        let listed = MINIMAL.replace(
            "        parser: text\n",
            "        parser: text\n        shape: [\"COSU##########\", \"HL CU\"]\n",
        );
        assert_eq!(issues(&listed).len(), 1, "{:?}", issues(&listed));
        assert!(issues(&listed)[0]
            .starts_with("document_types[0].fields[0].shape[1]: \"HL CU\" is not a shape"));
        let empty = MINIMAL.replace(
            "        parser: text\n",
            "        parser: text\n        shape: []\n",
        );
        assert_eq!(
            issues(&empty),
            ["document_types[0].fields[0].shape: give one shape or a list of 1 to 32"]
        );
    }

    #[test]
    fn a_pattern_without_value_group_is_named_by_path() {
        let yaml = MINIMAL.replace(r"(?P<value>\S+)", r"(\S+)");
        assert_eq!(
            issues(&yaml),
            [
                r#"document_types[0].fields[0].patterns[0]: missing named group "value": write the value part as (?P<value>…)"#
            ]
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let yaml = r#"
name: t
version: 1
languages: [english]
document_types:
  - id: Invoice
    title: x
    recognition:
      keywords: [{text: a, regex: b}, {regex: 'x*'}, {text: ok, weight: 3}]
      min_score: 0
    fields:
      - {name: total, parser: money, patterns: ['(?P<value>[']}
      - {name: total, parser: money, patterns: ['(?P<value>\d+)'], region: {x0: 0.5, y0: 0, x1: 0.2, y1: 1}}
  - id: Invoice
    title: y
    recognition: {keywords: []}
"#;
        let got = issues(yaml);
        let paths: Vec<&str> = got.iter().map(|s| s.split(':').next().unwrap()).collect();
        assert_eq!(
            paths,
            [
                "languages[0]",
                "document_types[0].id",
                "document_types[0].recognition.min_score",
                "document_types[0].recognition.keywords[0]",
                "document_types[0].recognition.keywords[1].regex",
                "document_types[0].recognition.keywords[2].weight",
                "document_types[0].fields[0].patterns[0]",
                "document_types[0].fields[1].name",
                "document_types[0].fields[1].region",
                "document_types[1].id",
                "document_types[1].id",
                "document_types[1].recognition.keywords",
            ],
            "{got:#?}"
        );
    }

    #[test]
    fn unknown_keys_and_parsers_are_syntax_errors_with_a_location() {
        let err = Workflow::from_yaml(&MINIMAL.replace("parser: text", "parser: txt")).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, WorkflowError::Syntax(_)), "{msg}");
        assert!(msg.contains("unknown parser kind \"txt\""), "{msg}");
        assert!(
            msg.contains("document_types[0].fields[0]") && msg.contains("line 12"),
            "{msg}"
        );
        let err = Workflow::from_yaml(
            &MINIMAL.replace("title: Invoice", "title: Invoice\n    colour: red"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
    }

    #[test]
    fn limits_refuse_oversized_input() {
        let huge = "#".repeat(limits::MAX_FILE_BYTES + 1);
        assert!(matches!(
            Workflow::from_yaml(&huge),
            Err(WorkflowError::TooLarge { .. })
        ));
        let long = MINIMAL.replace(
            r"\S+)",
            &format!("{})", "a".repeat(limits::MAX_PATTERN_CHARS)),
        );
        assert!(issues(&long)[0].contains("longer than 1024 characters"));
        let many: String = (0..=limits::MAX_PATTERNS)
            .map(|i| format!("'x{i}(?P<value>y)', "))
            .collect();
        let yaml = MINIMAL.replace(r"['invoice no\.?:\s*(?P<value>\S+)']", &format!("[{many}]"));
        assert!(issues(&yaml)[0].starts_with("document_types[0].fields[0].patterns: 17 entries"));
        let blowup = MINIMAL.replace(r"\S+)", r"(?:\w{500}){500})");
        assert!(
            issues(&blowup)[0].contains("compiles to more than"),
            "{:?}",
            issues(&blowup)
        );
    }

    #[test]
    fn alias_bombs_are_refused_not_expanded() {
        // Ten to the eleventh strings if expanded, hidden in the opaque `rules` section.
        let mut yaml = String::from("name: t\nversion: 1\ndocument_types: []\nrules:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            yaml.push_str(&format!("  a{i}: &a{i} [{refs}]\n"));
        }
        let err = Workflow::from_yaml(&yaml).unwrap_err();
        assert!(matches!(err, WorkflowError::Syntax(_)), "{err}");
    }

    #[test]
    fn hints_overlay_field_over_type_over_workflow() {
        let yaml = MINIMAL
            .replace(
                "version: 1",
                "version: 1\nparse_hints: {decimal_separator: ',', default_currency: EUR}",
            )
            .replace(
                "title: Invoice",
                "title: Invoice\n    parse_hints: {default_currency: USD}",
            );
        let wf = Workflow::from_yaml(&yaml).unwrap();
        let (_, compiled) = wf.compiled_type("invoice").unwrap();
        assert_eq!(compiled.fields[0].hints.decimal_separator, Some(','));
        assert_eq!(
            compiled.fields[0].hints.default_currency.as_deref(),
            Some("USD")
        );
        let bad = MINIMAL.replace(
            "version: 1",
            "version: 1\nparse_hints: {decimal_separator: ';', default_currency: usd}",
        );
        assert_eq!(issues(&bad).len(), 2);
    }

    #[test]
    fn phrases_match_whole_words_across_line_breaks_and_accents() {
        let mut v = Validator::default();
        let re = v.phrase("p", "Valeur  Déclarée").unwrap();
        assert!(re.is_match("valeur\ndeclaree: 3"));
        assert!(!re.is_match("valeur declareex"));
        let re = v.phrase("p", "B/L No.").unwrap();
        assert!(re.is_match("b/l no.: x"));
        assert!(v.issues.is_empty());
    }

    #[test]
    fn rules_are_checked_against_the_declared_types_and_fields() {
        let yaml = format!(
            "{MINIMAL}{}",
            r#"      - name: total
        parser: money
        patterns: ['total:\s*(?P<value>.+)']
rules:
  - id: cites
    template: EXACT_MATCH
    params: {left: {document_type: declaration, field: invoice_number}, right: {document_type: invoice, field: invoice_number}}
    on_fail: BLOCKED
  - id: typo
    template: FIELD_REQUIRED
    params: {document_type: invoice, field: invoice_numbr}
    on_fail: REVIEW_REQUIRED
  - id: wrong_kind
    template: DATE_WINDOW
    params: {left: {document_type: invoice, field: total}, right: {document_type: invoice, field: invoice_number}, max_days: 3}
    on_fail: BLOCKED
  - id: bad_severity
    template: REQUIRED_DOCUMENT
    params: {document_types: [invoice]}
    on_fail: BLOCKED
    severity: critcal
policy: {confidence_floor: 2}
"#
        );
        assert_eq!(
            issues(&yaml),
            [
                "rules[3]: unknown rule severity \"critcal\"",
                "rules[0].params.left.document_type: unknown document type \"declaration\"; the workflow declares invoice",
                "rules[1].params.field: document type invoice has no field \"invoice_numbr\"; it declares invoice_number, total",
                "rules[2].params.left.field: total on invoice is money; DATE_WINDOW compares date fields",
                "rules[2].params.right.field: invoice_number on invoice is text; DATE_WINDOW compares date fields",
                "policy.confidence_floor: 2 is outside [0, 1]",
            ]
        );
    }

    #[test]
    fn four_eyes_and_the_review_sla_are_checked_with_the_other_policy_keys() {
        let with = |policy: &str| format!("{MINIMAL}policy: {policy}\n");
        let wf = Workflow::from_yaml(&with("{four_eyes: [OVERRIDE, CORRECTION], review_sla: 4h}"))
            .unwrap_or_else(|e| panic!("{e}"));
        let policy = &wf.ruleset().policy;
        assert!(policy.needs_second(ironclad_core::review::FourEyesAction::Correction));
        assert_eq!(
            policy.review_sla.as_ref().map(|s| s.seconds()),
            Some(4 * 3600)
        );
        assert_eq!(
            issues(&with("{four_eyes: [OVERRIDE, OVERRIDE]}")),
            ["policy.four_eyes[1]: OVERRIDE is listed twice"]
        );
        let unknown = issues(&with("{four_eyes: [OVERIDE]}"));
        assert_eq!(
            unknown,
            ["policy: unknown four-eyes action \"OVERIDE\""],
            "{unknown:?}"
        );
        let sla = issues(&with("{review_sla: 4 hours}"));
        assert_eq!(
            sla,
            ["policy: \"4 hours\" is not a review SLA: write a whole number and a unit (s, m, h \
              or d), such as \"4h\", from 1 minute to 30 days"],
            "{sla:?}"
        );
    }

    #[test]
    fn the_ruleset_and_schema_are_exposed() {
        let wf = Workflow::from_yaml(MINIMAL).unwrap();
        assert!(wf.ruleset().is_empty());
        assert_eq!(wf.ruleset().policy, ironclad_core::rules::Policy::default());
        assert_eq!(
            wf.schema().document_types["invoice"]["invoice_number"],
            ParserKind::Text
        );
        let trade = Workflow::from_yaml(include_str!("../../../workflows/trade.yaml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let ids: Vec<&str> = trade
            .ruleset()
            .rules
            .iter()
            .map(|r| r.spec.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "required_documents_present",
                "bill_of_lading_complete",
                "container_matches",
                "invoice_number_matches",
                "gross_weight_within_tolerance",
                "invoice_value_matches_declaration",
                "declared_after_shipment",
            ]
        );
        assert_eq!(trade.ruleset().policy.confidence_floor, 0.6);
        // A managed ruleset is validated against the same schema.
        assert!(trade.ruleset().spec().compile(&trade.schema()).is_ok());
    }

    #[test]
    fn serializes_back_to_the_spec() {
        let wf = Workflow::from_yaml(MINIMAL).unwrap();
        let json = serde_json::to_value(&wf).unwrap();
        let again = Workflow::from_spec(serde_json::from_value(json).unwrap()).unwrap();
        assert_eq!(again.spec(), wf.spec());
    }
}
