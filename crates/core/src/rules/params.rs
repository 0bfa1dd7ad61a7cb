//! Each template's parameters, typed and checked against the schema.
//!
//! Parameters are read key by key rather than through one `#[derive(Deserialize)]` struct per
//! template, so every problem carries the path of the key at fault
//! (`rules[3].params.left.field`) and one bad key does not hide the others.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::compare::{Tolerances, Window};
use super::names::{Name, Names};
use super::spec::{Issues, RulesetSpec, Schema};
use super::RuleTemplate;
use crate::parse::{Decimal, ParserKind};

/// A rule's parameters, typed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Check {
    /// REQUIRED_DOCUMENT.
    RequiredDocument {
        document_types: Vec<Name>,
        min_count: u32,
    },
    /// FIELD_REQUIRED.
    FieldRequired {
        document_type: Name,
        fields: Vec<Name>,
    },
    /// EXACT_MATCH in its `{field, document_types}` form: every document agrees.
    AllAgree {
        field: Name,
        document_types: Vec<Name>,
    },
    /// EXACT_MATCH in its `{left, right}` form, NUMERIC_TOLERANCE and DATE_WINDOW: one side's
    /// value against the other's.
    Pair {
        left: FieldRef,
        right: FieldRef,
        test: PairTest,
    },
    /// AUTHORITY_PRECEDENCE.
    Authority {
        field: Name,
        authority: Name,
        others: Vec<Name>,
    },
}

/// A field of a document type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldRef {
    pub document_type: Name,
    pub field: Name,
}

/// What must hold between a left and a right value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PairTest {
    /// The values are the same.
    Equal,
    /// `|l − r| ≤ absolute` or `|l − r| ≤ relative × max(|l|, |r|)`, whichever are given.
    Tolerance {
        absolute: Option<Tolerance>,
        relative: Option<Tolerance>,
        /// `±1.00 kg or 2%`, as messages show it (written once, not per evaluation).
        allowed: String,
    },
    /// `min_days ≤ right − left ≤ max_days`, whichever are given.
    DateWindow {
        min_days: Option<i64>,
        max_days: Option<i64>,
        /// `0 to 30 days`, as messages show it.
        window: String,
    },
}

/// A tolerance, exact as written (`0.02` stays two hundredths, not the nearest binary
/// fraction), with its float for the rare comparison exact arithmetic cannot hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tolerance {
    pub exact: Decimal,
    pub approx: f64,
}

/// Types `params` for `template`, or records why it cannot and answers `None`.
pub(crate) fn compile(
    template: RuleTemplate,
    params: &Value,
    schema: &Schema,
    names: &mut Names,
    path: &str,
    issues: &mut Issues,
) -> Option<Check> {
    let mut p = Reader {
        schema,
        names,
        template,
        issues,
    };
    match template {
        RuleTemplate::RequiredDocument => p.required_document(params, path),
        RuleTemplate::FieldRequired => p.field_required(params, path),
        RuleTemplate::ExactMatch => p.exact_match(params, path),
        RuleTemplate::NumericTolerance => p.numeric_tolerance(params, path),
        RuleTemplate::DateWindow => p.date_window(params, path),
        RuleTemplate::AuthorityPrecedence => p.authority(params, path),
        // Refused by the caller before it gets here.
        RuleTemplate::Safeguard => None,
    }
}

/// How values of a kind compare: kinds in one class compare with each other, no others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Identifier,
    Number,
    Money,
    Weight,
    Date,
}

fn class(kind: ParserKind) -> Class {
    match kind {
        ParserKind::Text | ParserKind::ContainerNumber => Class::Identifier,
        ParserKind::Integer | ParserKind::Decimal => Class::Number,
        ParserKind::Money => Class::Money,
        ParserKind::Weight => Class::Weight,
        ParserKind::Date => Class::Date,
    }
}

/// "a string", "an object": what a JSON value is, for messages.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

struct Reader<'a> {
    schema: &'a Schema,
    names: &'a mut Names,
    template: RuleTemplate,
    issues: &'a mut Issues,
}

/// A field found in the schema: where it was named and its kind, for cross-checks.
struct Resolved {
    path: String,
    document_type: String,
    field: String,
    kind: ParserKind,
}

impl Reader<'_> {
    fn required_document(&mut self, params: &Value, path: &str) -> Option<Check> {
        let obj = self.object(params, path, &["document_types", "min_count"])?;
        let document_types = self.type_list(obj, path, "document_types", 1);
        let min_count = match self.optional::<u32>(obj, path, "min_count") {
            Some(0) => {
                self.issues
                    .push(format!("{path}.min_count"), "must be at least 1");
                None
            }
            Some(n) => Some(n),
            None if obj.get("min_count").is_some_and(|v| !v.is_null()) => None,
            None => Some(1),
        };
        Some(Check::RequiredDocument {
            document_types: self.types(&document_types?),
            min_count: min_count?,
        })
    }

    fn field_required(&mut self, params: &Value, path: &str) -> Option<Check> {
        let obj = self.object(params, path, &["document_type", "field", "fields"])?;
        let document_type = self.required::<String>(obj, path, "document_type");
        let known = document_type
            .as_deref()
            .filter(|t| self.known_type(&format!("{path}.document_type"), t));
        let field = self.optional::<String>(obj, path, "field");
        let fields = self.optional::<Vec<String>>(obj, path, "fields");
        let (names, key) = match (field, fields) {
            (Some(_), Some(_)) => {
                self.issues
                    .push(path, "give either `field` or `fields`, not both");
                return None;
            }
            (Some(f), None) => (vec![f], None),
            (None, Some(list)) if list.is_empty() => {
                self.issues
                    .push(format!("{path}.fields"), "name at least one field");
                return None;
            }
            (None, Some(list)) => (list, Some("fields")),
            (None, None) => {
                if !["field", "fields"].iter().any(|k| obj.contains_key(*k)) {
                    self.issues.push(path, "give `field` or `fields`");
                }
                return None;
            }
        };
        let mut ok = known.is_some();
        if let Some(t) = known {
            for (i, f) in names.iter().enumerate() {
                let fpath = match key {
                    Some(k) => format!("{path}.{k}[{i}]"),
                    None => format!("{path}.field"),
                };
                ok &= self.field_kind(&fpath, t, f).is_some();
            }
        }
        ok.then(|| Check::FieldRequired {
            document_type: self
                .names
                .document_type(document_type.as_deref().unwrap_or_default()),
            fields: names.iter().map(|f| self.names.field(f)).collect(),
        })
    }

    fn exact_match(&mut self, params: &Value, path: &str) -> Option<Check> {
        let obj = self.object(params, path, &["field", "document_types", "left", "right"])?;
        let across = obj.contains_key("field") || obj.contains_key("document_types");
        let pair = obj.contains_key("left") || obj.contains_key("right");
        if across && pair {
            self.issues.push(
                path,
                "give either {field, document_types} or {left, right}, not both",
            );
            return None;
        }
        if pair {
            let (left, right, _) = self.sides(obj, path)?;
            return Some(Check::Pair {
                left,
                right,
                test: PairTest::Equal,
            });
        }
        if !across {
            self.issues
                .push(path, "give {field, document_types} or {left, right}");
            return None;
        }
        let field = self.required::<String>(obj, path, "field");
        let types = self.type_list(obj, path, "document_types", 2);
        let (field, types) = (field?, types?);
        self.field_on_types(path, &field, "document_types", &types)?;
        Some(Check::AllAgree {
            field: self.names.field(&field),
            document_types: self.types(&types),
        })
    }

    fn numeric_tolerance(&mut self, params: &Value, path: &str) -> Option<Check> {
        let obj = self.object(params, path, &["left", "right", "absolute", "relative"])?;
        let absolute = self.tolerance(obj, path, "absolute");
        let relative = self.tolerance(obj, path, "relative");
        let given = |k: &str| obj.get(k).is_some_and(|v| !v.is_null());
        let mut ok = absolute.is_ok() && relative.is_ok();
        if !given("absolute") && !given("relative") {
            self.issues
                .push(path, "give `absolute`, `relative` or both");
            ok = false;
        }
        let sides = self.sides(obj, path);
        let (left, right, kind) = sides?;
        let (absolute, relative) = (absolute.ok().flatten(), relative.ok().flatten());
        let allowed = Tolerances {
            absolute: absolute.as_ref(),
            relative: relative.as_ref(),
            unit: if kind == ParserKind::Weight {
                " kg"
            } else {
                ""
            },
        }
        .to_string();
        ok.then_some(Check::Pair {
            left,
            right,
            test: PairTest::Tolerance {
                absolute,
                relative,
                allowed,
            },
        })
    }

    fn date_window(&mut self, params: &Value, path: &str) -> Option<Check> {
        let obj = self.object(params, path, &["left", "right", "min_days", "max_days"])?;
        let min = self.optional::<i64>(obj, path, "min_days");
        let max = self.optional::<i64>(obj, path, "max_days");
        let given = |k: &str| obj.get(k).is_some_and(|v| !v.is_null());
        let mut ok = given("min_days") == min.is_some() && given("max_days") == max.is_some();
        if !given("min_days") && !given("max_days") {
            self.issues
                .push(path, "give `min_days`, `max_days` or both");
            ok = false;
        }
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                self.issues.push(
                    format!("{path}.min_days"),
                    format!("min_days ({lo}) exceeds max_days ({hi})"),
                );
                ok = false;
            }
        }
        let (left, right, _) = self.sides(obj, path)?;
        ok.then(|| Check::Pair {
            left,
            right,
            test: PairTest::DateWindow {
                min_days: min,
                max_days: max,
                window: Window(min, max).to_string(),
            },
        })
    }

    fn authority(&mut self, params: &Value, path: &str) -> Option<Check> {
        let obj = self.object(params, path, &["field", "authority", "others"])?;
        // Checked on the raw list, so it is reported even when another entry is unknown.
        let mut ok = true;
        if let (Some(auth), Some(list)) = (
            obj.get("authority").and_then(Value::as_str),
            obj.get("others").and_then(Value::as_array),
        ) {
            for (i, t) in list.iter().enumerate() {
                if t.as_str() == Some(auth) {
                    self.issues.push(
                        format!("{path}.others[{i}]"),
                        format!("{auth} is the authority; list only the other document types"),
                    );
                    ok = false;
                }
            }
        }
        let field = self.required::<String>(obj, path, "field");
        let authority = self.required::<String>(obj, path, "authority");
        let others = self.type_list(obj, path, "others", 1);
        let (field, authority, others) = (field?, authority?, others?);
        // The authority first, so kind mismatches are reported on the others.
        let mut all = vec![authority.clone()];
        all.extend(others.iter().cloned());
        let resolved = self.field_on_types_at(path, &field, &all, |i| {
            if i == 0 {
                format!("{path}.authority")
            } else {
                format!("{path}.others[{}]", i - 1)
            }
        });
        (ok && resolved.is_some()).then(|| Check::Authority {
            field: self.names.field(&field),
            authority: self.names.document_type(&authority),
            others: self.types(&others),
        })
    }

    // --- building blocks ---

    fn types(&mut self, types: &[String]) -> Vec<Name> {
        types.iter().map(|t| self.names.document_type(t)).collect()
    }

    /// `params` as an object whose keys are all in `allowed` (unknown keys are reported).
    fn object<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
        allowed: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Some(obj) = value.as_object() else {
            self.issues.push(
                path,
                format!(
                    "expected an object with keys {}; found {}",
                    allowed.join(", "),
                    json_kind(value)
                ),
            );
            return None;
        };
        for key in obj.keys() {
            if !allowed.contains(&key.as_str()) {
                let owner = if path.ends_with(".left") || path.ends_with(".right") {
                    "a field reference".to_owned()
                } else {
                    self.template.as_str().to_owned()
                };
                self.issues.push(
                    format!("{path}.{key}"),
                    format!("unknown key; {owner} takes {}", allowed.join(", ")),
                );
            }
        }
        Some(obj)
    }

    /// The value at `key`, or `None` when absent (or null) or of the wrong type (reported).
    fn optional<T: DeserializeOwned>(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Option<T> {
        let value = obj.get(key).filter(|v| !v.is_null())?;
        T::deserialize(value)
            .map_err(|e| self.issues.push(format!("{path}.{key}"), e.to_string()))
            .ok()
    }

    /// Like [`Self::optional`], reporting an absent key too.
    fn required<T: DeserializeOwned>(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Option<T> {
        if obj.get(key).is_none_or(Value::is_null) {
            self.issues.push(format!("{path}.{key}"), "required");
            return None;
        }
        self.optional(obj, path, key)
    }

    /// A list of known, distinct document types, at least `min` and at most the bound.
    fn type_list(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        min: usize,
    ) -> Option<Vec<String>> {
        let list: Vec<String> = self.required(obj, path, key)?;
        let lpath = format!("{path}.{key}");
        let mut ok = true;
        if list.len() < min {
            let what = if min == 1 {
                "name at least one document type".to_owned()
            } else {
                format!("name at least {min} document types")
            };
            self.issues.push(&lpath, what);
            ok = false;
        }
        if list.len() > RulesetSpec::MAX_DOCUMENT_TYPES_PER_RULE {
            self.issues.push(
                &lpath,
                format!(
                    "{} document types; at most {} are allowed",
                    list.len(),
                    RulesetSpec::MAX_DOCUMENT_TYPES_PER_RULE
                ),
            );
            return None;
        }
        for (i, t) in list.iter().enumerate() {
            let tpath = format!("{lpath}[{i}]");
            if list[..i].contains(t) {
                self.issues.push(&tpath, format!("{t} is listed twice"));
                ok = false;
            } else {
                ok &= self.known_type(&tpath, t);
            }
        }
        ok.then_some(list)
    }

    fn known_type(&mut self, path: &str, t: &str) -> bool {
        if self.schema.document_types.contains_key(t) {
            return true;
        }
        let known: Vec<&str> = self
            .schema
            .document_types
            .keys()
            .map(String::as_str)
            .collect();
        self.issues.push(
            path,
            format!(
                "unknown document type {t:?}; the workflow declares {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        );
        false
    }

    /// The kind of `field` on the (known) type `t`, or `None` with the problem reported.
    fn field_kind(&mut self, path: &str, t: &str, field: &str) -> Option<ParserKind> {
        let fields = self.schema.document_types.get(t)?;
        let kind = fields.get(field).copied();
        if kind.is_none() {
            let known: Vec<&str> = fields.keys().map(String::as_str).collect();
            self.issues.push(
                path,
                format!(
                    "document type {t} has no field {field:?}; it declares {}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            );
        }
        kind
    }

    /// `field` on every one of `types` (already known to exist), all of one comparable class.
    fn field_on_types(
        &mut self,
        path: &str,
        field: &str,
        key: &str,
        types: &[String],
    ) -> Option<()> {
        self.field_on_types_at(path, field, types, |i| format!("{path}.{key}[{i}]"))
    }

    fn field_on_types_at(
        &mut self,
        path: &str,
        field: &str,
        types: &[String],
        type_path: impl Fn(usize) -> String,
    ) -> Option<()> {
        let known: Vec<(usize, &String)> = types
            .iter()
            .enumerate()
            .filter(|(_, t)| self.schema.document_types.contains_key(t.as_str()))
            .collect();
        let carriers = known
            .iter()
            .filter(|(_, t)| self.schema.document_types[t.as_str()].contains_key(field))
            .count();
        if carriers == 0 {
            // One clear message for a misspelt field, rather than one per document type.
            self.issues.push(
                format!("{path}.field"),
                format!("none of the listed document types has a field {field:?}"),
            );
            return None;
        }
        let mut resolved = Vec::new();
        let mut ok = known.len() == types.len();
        for (i, t) in known {
            let tpath = type_path(i);
            match self.field_kind(&tpath, t, field) {
                Some(kind) => resolved.push(Resolved {
                    path: tpath,
                    document_type: t.clone(),
                    field: field.to_owned(),
                    kind,
                }),
                None => ok = false,
            }
        }
        ok &= self.same_class(&resolved);
        ok.then_some(())
    }

    /// `left` and `right` field references, resolved and suited to the template.
    fn sides(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
    ) -> Option<(FieldRef, FieldRef, ParserKind)> {
        let left = self.side(obj, path, "left");
        let right = self.side(obj, path, "right");
        let sides = [left?, right?];
        if !self.same_class(&sides) {
            return None;
        }
        let [left, right] = sides;
        let kind = left.kind;
        Some((left.into_ref(self.names), right.into_ref(self.names), kind))
    }

    fn side(&mut self, obj: &Map<String, Value>, path: &str, key: &str) -> Option<Resolved> {
        let spath = format!("{path}.{key}");
        let Some(value) = obj.get(key).filter(|v| !v.is_null()) else {
            self.issues.push(&spath, "required: {document_type, field}");
            return None;
        };
        let sobj = self.object(value, &spath, &["document_type", "field"])?;
        let t = self.required::<String>(sobj, &spath, "document_type");
        let f = self.required::<String>(sobj, &spath, "field");
        let (t, f) = (t?, f?);
        if !self.known_type(&format!("{spath}.document_type"), &t) {
            return None;
        }
        let fpath = format!("{spath}.field");
        let kind = self.field_kind(&fpath, &t, &f)?;
        let suited = match self.template {
            RuleTemplate::NumericTolerance => {
                matches!(class(kind), Class::Number | Class::Money | Class::Weight)
            }
            RuleTemplate::DateWindow => kind == ParserKind::Date,
            _ => true,
        };
        if !suited {
            let wants = match self.template {
                RuleTemplate::DateWindow => "date",
                _ => "integer, decimal, money or weight",
            };
            self.issues.push(
                &fpath,
                format!(
                    "{f} on {t} is {kind}; {} compares {wants} fields",
                    self.template
                ),
            );
            return None;
        }
        Some(Resolved {
            path: fpath,
            document_type: t,
            field: f,
            kind,
        })
    }

    /// Reports (on the later one) each field whose kind cannot be compared with the first's.
    fn same_class(&mut self, fields: &[Resolved]) -> bool {
        let Some(first) = fields.first() else {
            return true;
        };
        let mut ok = true;
        for other in &fields[1..] {
            if class(other.kind) != class(first.kind) {
                self.issues.push(
                    &other.path,
                    format!(
                        "{} on {} is {}, which cannot be compared with {} on {} ({})",
                        other.field,
                        other.document_type,
                        other.kind,
                        first.field,
                        first.document_type,
                        first.kind
                    ),
                );
                ok = false;
            }
        }
        ok
    }

    /// A non-negative tolerance: `Ok(None)` when absent, `Err` when reported as wrong.
    fn tolerance(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Result<Option<Tolerance>, ()> {
        let Some(value) = obj.get(key).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let kpath = format!("{path}.{key}");
        let Some(number) = value.as_number() else {
            self.issues.push(
                kpath,
                format!("expected a number, found {}", json_kind(value)),
            );
            return Err(());
        };
        let approx = number.as_f64().unwrap_or(f64::NAN);
        if approx.is_nan() || approx < 0.0 {
            self.issues.push(kpath, "must be at least 0");
            return Err(());
        }
        match exact_number(number) {
            Some(exact) => Ok(Some(Tolerance { exact, approx })),
            None => {
                self.issues
                    .push(kpath, format!("{number} has too many digits"));
                Err(())
            }
        }
    }
}

impl Resolved {
    fn into_ref(self, names: &mut Names) -> FieldRef {
        FieldRef {
            document_type: names.document_type(&self.document_type),
            field: names.field(&self.field),
        }
    }
}

/// The exact decimal a JSON number was written as: `0.02` is read from its shortest text,
/// which is what the author typed, not from the binary float.
fn exact_number(n: &serde_json::Number) -> Option<Decimal> {
    if let Some(i) = n.as_i64() {
        return Some(Decimal::from_integer(i));
    }
    // serde_json prints small floats in exponent form (`1e-7`), which Decimal does not
    // read; Rust's `Display` for f64 never uses an exponent.
    n.to_string()
        .parse()
        .ok()
        .or_else(|| n.as_f64().and_then(|f| f.to_string().parse().ok()))
}
