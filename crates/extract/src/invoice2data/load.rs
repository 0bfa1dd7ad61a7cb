//! Turning a parsed template file into a [`Template`]: shapes checked, every pattern
//! compiled once, and what cannot be honoured recorded as a warning rather than dropped
//! silently.

use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

use super::fields::{Area, CoerceType, Field, FieldRule, Group, RegexField};
use super::lines::{LinesRule, TableSpec};
use super::pyre::{PyRegex, PyReplacement};
use super::pyvalue::Py;
use super::{Options, Template, TemplateError, MAX_PATTERNS, MAX_PATTERN_CHARS};

/// Builds a [`Template`] from the parsed document, counting patterns against the limit.
#[derive(Default)]
pub(super) struct Loader {
    patterns: usize,
    warnings: Vec<String>,
}

impl Loader {
    pub(super) fn template(mut self, doc: &Yaml) -> Result<Template, TemplateError> {
        let Some(map) = doc.as_mapping() else {
            return Err(invalid("", "a template is a mapping of keys"));
        };
        let get = |k: &str| map.get(Yaml::String(k.into()));
        let keywords_raw = self.strings(
            "keywords",
            get("keywords").ok_or_else(|| invalid("keywords", "missing"))?,
        )?;
        if keywords_raw.is_empty() {
            return Err(invalid("keywords", "declare at least one keyword"));
        }
        let keywords = self.regexes("keywords", &keywords_raw)?;
        let exclude_raw = get("exclude_keywords")
            .map(|v| self.strings("exclude_keywords", v))
            .transpose()?;
        let exclude_keywords =
            self.regexes("exclude_keywords", &exclude_raw.unwrap_or_default())?;
        let issuer = match get("issuer") {
            Some(v) => scalar(v).ok_or_else(|| invalid("issuer", "must be text"))?,
            None => keywords_raw[0].clone(),
        };
        let options_map = get("options");
        let options = self.options(options_map)?;
        let priority = get("priority")
            .or_else(|| options_map.and_then(|o| o.get("priority")))
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| invalid("priority", "must be an integer"))
            })
            .transpose()?
            .unwrap_or(5);
        let required_fields = get("required_fields")
            .map(|v| self.strings("required_fields", v))
            .transpose()?;
        let fields_map = get("fields")
            .and_then(Yaml::as_mapping)
            .ok_or_else(|| invalid("fields", "missing, or not a mapping"))?;
        let mut fields = Vec::new();
        for (k, v) in fields_map {
            let key = scalar(k).ok_or_else(|| invalid("fields", "field names must be text"))?;
            fields.push(self.field(&key, v)?);
        }
        let lines = get("lines")
            .map(|v| self.lines_rules("lines", v))
            .transpose()?;
        let tables = match get("tables") {
            None => Vec::new(),
            Some(Yaml::Sequence(list)) => list
                .iter()
                .enumerate()
                .map(|(i, t)| self.table(&format!("tables[{i}]"), t))
                .collect::<Result<_, _>>()?,
            Some(one @ Yaml::Mapping(_)) => vec![self.table("tables", one)?],
            Some(_) => return Err(invalid("tables", "must be a list of tables")),
        };
        for key in ["input_module"] {
            if get(key).is_some() {
                self.warnings.push(format!(
                    "{key}: ignored; the caller chooses how text is read"
                ));
            }
        }
        Ok(Template {
            issuer,
            keywords,
            exclude_keywords,
            priority,
            required_fields,
            options,
            fields,
            lines,
            tables,
            warnings: self.warnings,
        })
    }

    fn options(&mut self, v: Option<&Yaml>) -> Result<Options, TemplateError> {
        let mut o = Options::default();
        let Some(v) = v else { return Ok(o) };
        let Some(map) = v.as_mapping() else {
            return Err(invalid("options", "must be a mapping"));
        };
        for (k, v) in map {
            let key = scalar(k).unwrap_or_default();
            let path = format!("options.{key}");
            match key.as_str() {
                "remove_whitespace" => o.remove_whitespace = flag(&path, v)?,
                "remove_accents" => o.remove_accents = flag(&path, v)?,
                "lowercase" => o.lowercase = flag(&path, v)?,
                "currency" => {
                    o.currency = scalar(v).ok_or_else(|| invalid(&path, "must be text"))?
                }
                "decimal_separator" => {
                    o.decimal_separator = scalar(v)
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| invalid(&path, "must be text"))?
                }
                "date_formats" => o.date_formats = self.strings(&path, v)?,
                "languages" => {
                    o.languages = self.strings(&path, v)?;
                    if let Some(bad) = o.languages.iter().find(|l| l.chars().count() != 2) {
                        return Err(invalid(
                            &path,
                            &format!("{bad:?}: language codes have two letters"),
                        ));
                    }
                }
                "replace" => o.replace = self.replacements(&path, v)?,
                "priority" => {}
                other => self
                    .warnings
                    .push(format!("options.{other}: unknown option, ignored")),
            }
        }
        Ok(o)
    }

    fn replacements(
        &mut self,
        path: &str,
        v: &Yaml,
    ) -> Result<Vec<(PyRegex, PyReplacement)>, TemplateError> {
        let Some(list) = v.as_sequence() else {
            return Err(invalid(path, "must be a list of [pattern, replacement]"));
        };
        // A single flat pair is accepted too, as newer invoice2data does.
        let pairs: Vec<&Yaml> = if list.len() == 2 && list.iter().all(|x| x.is_string()) {
            vec![v]
        } else {
            list.iter().collect()
        };
        pairs
            .into_iter()
            .enumerate()
            .map(|(i, pair)| {
                let p = format!("{path}[{i}]");
                match pair
                    .as_sequence()
                    .map(|s| s.iter().map(scalar).collect::<Option<Vec<_>>>())
                {
                    Some(Some(items)) if items.len() == 2 => {
                        Ok((self.regex(&p, &items[0])?, PyReplacement::new(&items[1])))
                    }
                    _ => Err(invalid(
                        &p,
                        "a replacement is a list of exactly two strings",
                    )),
                }
            })
            .collect()
    }

    fn field(&mut self, key: &str, v: &Yaml) -> Result<Field, TemplateError> {
        let path = format!("fields.{key}");
        let mut area = None;
        let rule = match v {
            Yaml::Mapping(map) => {
                let get = |k: &str| map.get(Yaml::String(k.into()));
                if let Some(a) = get("area") {
                    area = Area::from_yaml(a);
                    if area.is_none() {
                        self.warnings.push(format!(
                            "{path}.area: needs integer f, l, r, x, y, W and H; ignored"
                        ));
                    }
                }
                match get("parser").and_then(scalar).as_deref() {
                    Some("regex") => match get("regex") {
                        Some(r) => FieldRule::Regex(self.regex_field(&path, r, map)?),
                        None => self.skip(
                            &path,
                            "parser regex without `regex`: the field is never set",
                        ),
                    },
                    Some("static") => match get("value") {
                        Some(value) => FieldRule::Static(Py::Json(
                            serde_json::to_value(value).unwrap_or(Json::Null),
                        )),
                        None => self.skip(
                            &path,
                            "parser static without `value`: the field is never set",
                        ),
                    },
                    Some("lines") => FieldRule::Lines(self.lines_rules(&path, v)?),
                    Some(other) => self.skip(
                        &path,
                        &format!("unknown parser {other:?}: the field is never set"),
                    ),
                    None => self.skip(&path, "no parser: the field is never set"),
                }
            }
            _ if key.starts_with("static_") => {
                FieldRule::Static(Py::Json(serde_json::to_value(v).unwrap_or(Json::Null)))
            }
            Yaml::String(_) | Yaml::Sequence(_) => {
                // Legacy syntax: the key's name decides the type, as invoice2data does.
                let (out_key, kind, group) = if key.starts_with("sum_amount") && v.is_sequence() {
                    (
                        key[4..].to_owned(),
                        Some(CoerceType::Float),
                        Some(Group::Sum),
                    )
                } else if key.starts_with("date") || key.ends_with("date") {
                    (key.to_owned(), Some(CoerceType::Date), None)
                } else if key.starts_with("amount") {
                    (key.to_owned(), Some(CoerceType::Float), None)
                } else {
                    (key.to_owned(), None, None)
                };
                let regexes = self.regex_list(&path, v)?;
                let rule = RegexField {
                    regexes,
                    kind,
                    group,
                    replace: Vec::new(),
                    extract_number: false,
                };
                return Ok(Field {
                    key: out_key,
                    rule: FieldRule::Regex(rule),
                    area: None,
                });
            }
            _ => self.skip(&path, "not a pattern: the field is never set"),
        };
        let key = match (&rule, key.strip_prefix("static_")) {
            (FieldRule::Static(_), Some(stripped)) if !v.is_mapping() => stripped.to_owned(),
            _ => key.to_owned(),
        };
        Ok(Field { key, rule, area })
    }

    fn skip(&mut self, path: &str, why: &str) -> FieldRule {
        self.warnings.push(format!("{path}: {why}"));
        FieldRule::Skip
    }

    fn regex_field(
        &mut self,
        path: &str,
        regex: &Yaml,
        map: &serde_yaml::Mapping,
    ) -> Result<RegexField, TemplateError> {
        let get = |k: &str| map.get(Yaml::String(k.into()));
        let kind = get("type")
            .map(|t| coerce_type(&format!("{path}.type"), t))
            .transpose()?;
        let group = match get("group").and_then(scalar) {
            None => None,
            Some(g) => Some(Group::parse(&g).ok_or_else(|| {
                invalid(&format!("{path}.group"), &format!("unknown grouping {g:?}"))
            })?),
        };
        let replace = match get("replace") {
            Some(v) => self.replacements(&format!("{path}.replace"), v)?,
            None => Vec::new(),
        };
        let extract_number = get("extract_number").is_some_and(|v| v.as_bool() == Some(true));
        Ok(RegexField {
            regexes: self.regex_list(&format!("{path}.regex"), regex)?,
            kind,
            group,
            replace,
            extract_number,
        })
    }

    /// A pattern or list of patterns; non-text entries are skipped, as invoice2data does.
    fn regex_list(&mut self, path: &str, v: &Yaml) -> Result<Vec<PyRegex>, TemplateError> {
        let items: Vec<&Yaml> = match v {
            Yaml::Sequence(list) => list.iter().collect(),
            one => vec![one],
        };
        let mut out = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            match item.as_str() {
                Some(p) => out.push(self.regex(&format!("{path}[{i}]"), p)?),
                None => self
                    .warnings
                    .push(format!("{path}[{i}]: not a string, skipped")),
            }
        }
        Ok(out)
    }

    fn lines_rules(&mut self, path: &str, v: &Yaml) -> Result<Vec<LinesRule>, TemplateError> {
        if let Yaml::Sequence(rules) = v {
            // A bare list of rule sets: invoice2data crashes on it when the template
            // matches; reading it as `rules:` is what the author meant.
            self.warnings
                .push(format!("{path}: a list of rule sets, read as `rules:`"));
            return rules
                .iter()
                .enumerate()
                .map(|(i, r)| self.lines_rule(&format!("{path}[{i}]"), r, true))
                .collect();
        }
        let Some(map) = v.as_mapping() else {
            return Err(invalid(path, "must be a mapping"));
        };
        match map.get(Yaml::String("rules".into())) {
            Some(Yaml::Sequence(rules)) => rules
                .iter()
                .enumerate()
                .map(|(i, r)| self.lines_rule(&format!("{path}.rules[{i}]"), r, true))
                .collect(),
            Some(_) => Err(invalid(&format!("{path}.rules"), "must be a list")),
            None => Ok(vec![self.lines_rule(path, v, false)?]),
        }
    }

    fn lines_rule(
        &mut self,
        path: &str,
        v: &Yaml,
        own_separator: bool,
    ) -> Result<LinesRule, TemplateError> {
        let Some(map) = v.as_mapping() else {
            return Err(invalid(path, "must be a mapping"));
        };
        let get = |k: &str| map.get(Yaml::String(k.into()));
        let one = |me: &mut Self, k: &str| -> Result<PyRegex, TemplateError> {
            let p = format!("{path}.{k}");
            let s = get(k)
                .and_then(scalar)
                .ok_or_else(|| invalid(&p, "missing"))?;
            me.regex(&p, &s)
        };
        let many = |me: &mut Self, k: &str| -> Result<Option<Vec<PyRegex>>, TemplateError> {
            get(k)
                .map(|v| me.regex_list(&format!("{path}.{k}"), v))
                .transpose()
        };
        let separator = match get("line_separator").and_then(scalar) {
            // invoice2data drops `line_separator` unless the rule sits under `rules:`.
            Some(s) if own_separator => self.regex(&format!("{path}.line_separator"), &s)?,
            _ => self.regex(path, r"\n")?,
        };
        Ok(LinesRule {
            start: one(self, "start")?,
            end: one(self, "end")?,
            line: many(self, "line")?.ok_or_else(|| invalid(&format!("{path}.line"), "missing"))?,
            first_line: many(self, "first_line")?,
            last_line: many(self, "last_line")?,
            skip_line: many(self, "skip_line")?.unwrap_or_default(),
            separator,
            types: types(&format!("{path}.types"), get("types"))?,
        })
    }

    fn table(&mut self, path: &str, v: &Yaml) -> Result<TableSpec, TemplateError> {
        let Some(map) = v.as_mapping() else {
            return Err(invalid(path, "must be a mapping"));
        };
        let get = |k: &str| map.get(Yaml::String(k.into()));
        let one = |me: &mut Self, k: &str| -> Result<PyRegex, TemplateError> {
            let p = format!("{path}.{k}");
            let s = get(k)
                .and_then(scalar)
                .ok_or_else(|| invalid(&p, "missing"))?;
            me.regex(&p, &s)
        };
        let mut field_settings = Vec::new();
        if let Some(fields) = get("fields").and_then(Yaml::as_mapping) {
            for (k, fv) in fields {
                let name = scalar(k).unwrap_or_default();
                let fget = |key: &str| {
                    fv.as_mapping()
                        .and_then(|m| m.get(Yaml::String(key.into())))
                };
                let fpath = format!("{path}.fields.{name}");
                let group = fget("group")
                    .and_then(scalar)
                    .map(|g| Group::parse(&g).ok_or_else(|| invalid(&fpath, "unknown grouping")))
                    .transpose()?;
                let kind = fget("type").map(|t| coerce_type(&fpath, t)).transpose()?;
                field_settings.push((name, kind, group));
            }
        }
        let separator = match get("line_separator").and_then(scalar) {
            Some(s) => self.regex(&format!("{path}.line_separator"), &s)?,
            None => self.regex(path, r"\n")?,
        };
        Ok(TableSpec {
            start: one(self, "start")?,
            end: one(self, "end")?,
            body: one(self, "body")?,
            separator,
            types: types(&format!("{path}.types"), get("types"))?,
            fields: field_settings,
        })
    }

    fn regexes(&mut self, path: &str, list: &[String]) -> Result<Vec<PyRegex>, TemplateError> {
        list.iter()
            .enumerate()
            .map(|(i, p)| self.regex(&format!("{path}[{i}]"), p))
            .collect()
    }

    fn regex(&mut self, path: &str, pattern: &str) -> Result<PyRegex, TemplateError> {
        self.patterns += 1;
        if self.patterns > MAX_PATTERNS {
            return Err(invalid(
                path,
                &format!("more than {MAX_PATTERNS} patterns in one template"),
            ));
        }
        if pattern.chars().count() > MAX_PATTERN_CHARS {
            return Err(invalid(
                path,
                &format!("pattern longer than {MAX_PATTERN_CHARS} characters"),
            ));
        }
        PyRegex::new(pattern).map_err(|message| TemplateError::Regex {
            path: path.to_owned(),
            pattern: pattern.to_owned(),
            message,
        })
    }

    /// A string or a list of scalars, as text.
    fn strings(&mut self, path: &str, v: &Yaml) -> Result<Vec<String>, TemplateError> {
        match v {
            Yaml::Sequence(list) => list
                .iter()
                .map(|x| scalar(x).ok_or_else(|| invalid(path, "entries must be text")))
                .collect(),
            one => {
                Ok(vec![scalar(one).ok_or_else(|| {
                    invalid(path, "must be text or a list of text")
                })?])
            }
        }
    }
}

fn invalid(path: &str, message: &str) -> TemplateError {
    TemplateError::Invalid {
        path: path.to_owned(),
        message: message.to_owned(),
    }
}

/// A YAML scalar as the text Python would see (numbers and booleans stringified).
fn scalar(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(if *b { "True" } else { "False" }.to_owned()),
        _ => None,
    }
}

/// An option read the way Python tests it: truthiness. `remove_accents: [True]` is on.
fn flag(path: &str, v: &Yaml) -> Result<bool, TemplateError> {
    match v {
        Yaml::Bool(b) => Ok(*b),
        Yaml::Null => Ok(false),
        // YAML 1.1 spellings PyYAML reads as booleans; any other text is truthy in Python.
        Yaml::String(s) => Ok(!["no", "off", "false", ""].contains(&s.to_lowercase().as_str())),
        Yaml::Number(n) => Ok(n.as_f64() != Some(0.0)),
        Yaml::Sequence(list) => Ok(!list.is_empty()),
        Yaml::Mapping(map) => Ok(!map.is_empty()),
        Yaml::Tagged(_) => Err(invalid(path, "must be true or false")),
    }
}

fn coerce_type(path: &str, v: &Yaml) -> Result<CoerceType, TemplateError> {
    let name = scalar(v).unwrap_or_default();
    CoerceType::parse(&name)
        .ok_or_else(|| invalid(path, &format!("unknown type {name:?} (int, float, date)")))
}

fn types(path: &str, v: Option<&Yaml>) -> Result<Vec<(String, CoerceType)>, TemplateError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let Some(map) = v.as_mapping() else {
        return Err(invalid(path, "must map names to types"));
    };
    map.iter()
        .map(|(k, t)| {
            let name = scalar(k).unwrap_or_default();
            Ok((name.clone(), coerce_type(&format!("{path}.{name}"), t)?))
        })
        .collect()
}
