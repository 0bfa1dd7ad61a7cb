//! invoice2data's field parsers `regex` and `static`, its legacy field syntax, and the type
//! coercions (`int`, `float`, `date`) they share with the line and table parsers.

use std::cmp::Ordering;
use std::ops::Range;

use super::lines::{self, LinesRule};
use super::pyre::{PyRegex, PyReplacement};
use super::pyvalue::{dedup, extreme, sum, Py};
use super::{dates, ExtractError, Template};

/// One entry of a template's `fields`.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    /// The output key (legacy `sum_amount…` loses its `sum_`, `static_x` becomes `x`).
    pub key: String,
    pub rule: FieldRule,
    /// The page rectangle to read the field from, when the caller can crop.
    pub area: Option<Area>,
}

/// A rectangle of a PDF page a field is read from (invoice2data's `area`, in `pdftotext`'s
/// terms: pages `f`..`l` rendered at `r` DPI, crop at `x`,`y` of size `W`×`H` pixels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Area {
    /// First page, 1-based (`f`).
    pub first_page: i64,
    /// Last page (`l`).
    pub last_page: i64,
    /// Resolution in DPI (`r`).
    pub resolution: i64,
    /// Left edge in pixels (`x`).
    pub x: i64,
    /// Top edge in pixels (`y`).
    pub y: i64,
    /// Width in pixels (`W`).
    pub width: i64,
    /// Height in pixels (`H`).
    pub height: i64,
}

impl Area {
    pub(crate) fn from_yaml(v: &serde_yaml::Value) -> Option<Area> {
        let get = |k: &str| v.get(k).and_then(serde_yaml::Value::as_i64);
        Some(Area {
            first_page: get("f")?,
            last_page: get("l")?,
            resolution: get("r")?,
            x: get("x")?,
            y: get("y")?,
            width: get("W")?,
            height: get("H")?,
        })
    }
}

#[derive(Debug, Clone)]
pub(crate) enum FieldRule {
    Regex(RegexField),
    Static(Py),
    Lines(Vec<LinesRule>),
    /// A field invoice2data would skip with a warning (unknown parser, no pattern).
    Skip,
}

#[derive(Debug, Clone)]
pub(crate) struct RegexField {
    pub regexes: Vec<PyRegex>,
    pub kind: Option<CoerceType>,
    pub group: Option<Group>,
    pub replace: Vec<(PyRegex, PyReplacement)>,
    pub extract_number: bool,
}

/// `type:` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoerceType {
    Int,
    Float,
    Date,
}

impl CoerceType {
    pub fn parse(name: &str) -> Option<CoerceType> {
        match name {
            "int" => Some(CoerceType::Int),
            "float" => Some(CoerceType::Float),
            "date" | "datetime" => Some(CoerceType::Date),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CoerceType::Int => "int",
            CoerceType::Float => "float",
            CoerceType::Date => "date",
        }
    }
}

/// `group:` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    Sum,
    Min,
    Max,
    First,
    Last,
    Join,
}

impl Group {
    pub fn parse(name: &str) -> Option<Group> {
        Some(match name {
            "sum" => Group::Sum,
            "min" => Group::Min,
            "max" => Group::Max,
            "first" => Group::First,
            "last" => Group::Last,
            "join" => Group::Join,
            _ => return None,
        })
    }
}

/// Runs one field; `Ok(None)` when invoice2data would leave it out of the output. Where a
/// pattern found its values in `text` is added to `found`, in order.
pub(crate) fn run(
    t: &Template,
    field: &Field,
    text: &str,
    found: &mut Vec<Range<usize>>,
) -> Result<Option<Py>, ExtractError> {
    let value = match &field.rule {
        FieldRule::Regex(r) => regex_field(t, &field.key, r, text, found)?,
        FieldRule::Static(v) => Some(v.clone()),
        FieldRule::Lines(rules) => Some(Py::List(lines::parse_lines(t, &field.key, rules, text)?)),
        FieldRule::Skip => None,
    };
    Ok(value.filter(Py::kept))
}

/// invoice2data's `parsers.regex.parse`.
fn regex_field(
    t: &Template,
    key: &str,
    r: &RegexField,
    text: &str,
    places: &mut Vec<Range<usize>>,
) -> Result<Option<Py>, ExtractError> {
    let mut found: Vec<String> = Vec::new();
    for re in &r.regexes {
        match re.findall_spans(text) {
            // Two or more groups: Python gets tuples and gives up on the field.
            None if re.is_match(text) => return Ok(None),
            None => {}
            Some(matches) => {
                for (value, place) in matches {
                    if let Some(place) = place.filter(|p| !p.is_empty()) {
                        places.push(place);
                    }
                    found.push(value);
                }
            }
        }
    }
    let found = found.into_iter().map(|v| {
        r.replace
            .iter()
            .fold(v, |v, (re, repl)| re.sub(repl, &v).into_owned())
    });
    let found = found.map(|v| {
        if r.extract_number {
            first_number(&v).unwrap_or(v)
        } else {
            v
        }
    });
    let mut result: Vec<Py> = match r.kind {
        Some(kind) => found
            .map(|v| coerce(t, key, &v, kind))
            .collect::<Result<_, _>>()?,
        None => found.map(Py::Str).collect(),
    };
    let value = match r.group {
        Some(group) => {
            result.retain(Py::truthy);
            if result.is_empty() {
                Py::List(result)
            } else {
                match apply_group(group, result) {
                    Some(v) => v,
                    None => return Ok(None),
                }
            }
        }
        None => {
            // Legacy fields (`field: pattern`) go through an unordered `set` in Python; first
            // occurrence order is kept here, which is one of the orders Python may produce.
            let mut list = dedup(result);
            if list.len() == 1 {
                list.remove(0)
            } else {
                Py::List(list)
            }
        }
    };
    Ok(Some(value))
}

/// invoice2data's `_apply_grouping` on a non-empty list; `None` where Python raises.
pub(crate) fn apply_group(group: Group, items: Vec<Py>) -> Option<Py> {
    match group {
        Group::Sum => sum(&items),
        Group::Min => extreme(&items, Ordering::Less),
        Group::Max => extreme(&items, Ordering::Greater),
        Group::First => items.into_iter().next(),
        Group::Last => items.into_iter().last(),
        Group::Join => Some(Py::Str(
            items.iter().map(Py::py_str).collect::<Vec<_>>().join(" "),
        )),
    }
}

/// invoice2data's `coerce_type`.
pub(crate) fn coerce(
    t: &Template,
    field: &str,
    raw: &str,
    kind: CoerceType,
) -> Result<Py, ExtractError> {
    let fail = || ExtractError::Coerce {
        field: field.to_owned(),
        raw: raw.to_owned(),
        kind: kind.name().to_owned(),
    };
    Ok(match kind {
        CoerceType::Int if raw.is_empty() => Py::Int(0),
        CoerceType::Float if raw.is_empty() => Py::Float(0.0),
        // Python's int(float) truncates toward zero.
        CoerceType::Int => Py::Int(
            parse_number(t, raw)
                .filter(|f| f.is_finite())
                .ok_or_else(fail)?
                .trunc() as i64,
        ),
        CoerceType::Float => Py::Float(parse_number(t, raw).ok_or_else(fail)?),
        // dateparser answers None rather than raising; the caller decides what None means.
        CoerceType::Date => dates::parse_date(raw, &t.options.date_formats, &t.options.languages)
            .map_or(Py::None, Py::Date),
    })
}

/// invoice2data's `parse_number`: the template's decimal separator becomes `.`, the other
/// separators (`.`, `,`, `'`, spaces) go; `None` where Python raises (the separator twice,
/// or what is left is not a float).
pub(crate) fn parse_number(t: &Template, value: &str) -> Option<f64> {
    let sep = t.options.decimal_separator.as_str();
    if value.matches(sep).count() > 1 {
        return None;
    }
    let piped = value.replace(sep, "|");
    let digits: String = piped
        .chars()
        .filter(|c| !matches!(c, '.' | ',' | '\'') && !c.is_whitespace())
        .collect();
    python_float(&digits.replace('|', "."))
}

/// Python's `float(str)` on what `parse_number` leaves (no surrounding spaces by then).
fn python_float(s: &str) -> Option<f64> {
    let ok = (!s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '+' | '-' | 'e' | 'E')))
        || matches!(
            s.to_ascii_lowercase().trim_start_matches(['+', '-']),
            "inf" | "infinity" | "nan"
        );
    if ok {
        s.parse().ok()
    } else {
        None
    }
}

/// The first number in a text (`extract_number: true`).
fn first_number(text: &str) -> Option<String> {
    let re = PyRegex::new(r"[-+]?\d+(?:[.,\s']\d+)*").ok()?;
    re.findall(text)?.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::super::Template;
    use super::*;

    fn template(sep: &str) -> Template {
        Template::from_yaml(&format!(
            "keywords: [x]\nfields: {{}}\noptions: {{decimal_separator: '{sep}'}}\n"
        ))
        .unwrap()
    }

    #[test]
    fn numbers_follow_the_decimal_separator() {
        let dot = template(".");
        let comma = template(",");
        assert_eq!(parse_number(&dot, "1,234.56"), Some(1234.56));
        assert_eq!(parse_number(&comma, "1.234,56"), Some(1234.56));
        assert_eq!(parse_number(&comma, "1 234,5"), Some(1234.5));
        assert_eq!(parse_number(&comma, "316,83"), Some(316.83));
        assert_eq!(
            parse_number(&dot, "1.2.3"),
            None,
            "separator twice: Python asserts"
        );
        assert_eq!(
            parse_number(&dot, "€25.50"),
            None,
            "Python's float() refuses it"
        );
        assert!(matches!(
            coerce(&dot, "f", "7.9", CoerceType::Int),
            Ok(Py::Int(7))
        ));
        assert!(matches!(coerce(&dot, "f", "", CoerceType::Float), Ok(Py::Float(f)) if f == 0.0));
        assert!(coerce(&dot, "f", "abc", CoerceType::Float).is_err());
    }

    #[test]
    fn groups_reduce_like_python() {
        let items = vec![Py::Float(1.5), Py::Float(2.5)];
        assert!(matches!(apply_group(Group::Sum, items.clone()), Some(Py::Float(f)) if f == 4.0));
        assert!(matches!(apply_group(Group::Max, items.clone()), Some(Py::Float(f)) if f == 2.5));
        assert!(matches!(apply_group(Group::Join, items), Some(Py::Str(s)) if s == "1.5 2.5"));
    }
}
