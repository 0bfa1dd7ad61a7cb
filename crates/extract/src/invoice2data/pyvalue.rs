//! The handful of Python value semantics invoice2data's output depends on: truthiness
//! (`if value or value == 0.0`), equality across int and float (duplicate removal), `sum`,
//! `min`, `max`, `str` (for `join`), and the JSON invoice2data writes (dates as
//! `YYYY-MM-DD`).

use std::cmp::Ordering;

use ironclad_core::parse::Date;
use serde_json::{Map, Number, Value as Json};

/// A value as invoice2data's Python code holds it.
#[derive(Debug, Clone)]
pub(crate) enum Py {
    None,
    Str(String),
    Int(i64),
    Float(f64),
    Date(Date),
    List(Vec<Py>),
    Dict(Vec<(String, Py)>),
    /// A `static` value, kept as the template wrote it.
    Json(Json),
}

impl Py {
    /// Python truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Py::None => false,
            Py::Str(s) => !s.is_empty(),
            Py::Int(i) => *i != 0,
            Py::Float(f) => *f != 0.0,
            Py::Date(_) => true,
            Py::List(v) => !v.is_empty(),
            Py::Dict(v) => !v.is_empty(),
            Py::Json(j) => match j {
                Json::Null => false,
                Json::Bool(b) => *b,
                Json::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
                Json::String(s) => !s.is_empty(),
                Json::Array(a) => !a.is_empty(),
                Json::Object(o) => !o.is_empty(),
            },
        }
    }

    /// `value or value == 0.0`: what invoice2data keeps as a field's result.
    pub fn kept(&self) -> bool {
        self.truthy() || self.number() == Some(0.0)
    }

    fn number(&self) -> Option<f64> {
        match self {
            Py::Int(i) => Some(*i as f64),
            Py::Float(f) => Some(*f),
            Py::Json(Json::Number(n)) => n.as_f64(),
            Py::Json(Json::Bool(b)) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }

    /// Python `==` for the kinds that meet in practice.
    pub fn py_eq(&self, other: &Py) -> bool {
        if let (Some(a), Some(b)) = (self.number(), other.number()) {
            return a == b;
        }
        match (self, other) {
            (Py::None, Py::None) => true,
            (Py::Str(a), Py::Str(b)) => a == b,
            (Py::Date(a), Py::Date(b)) => a == b,
            _ => self.to_json() == other.to_json(),
        }
    }

    /// Python ordering, where defined (numbers with numbers, strings, dates).
    fn py_cmp(&self, other: &Py) -> Option<Ordering> {
        if let (Some(a), Some(b)) = (self.number(), other.number()) {
            return a.partial_cmp(&b);
        }
        match (self, other) {
            (Py::Str(a), Py::Str(b)) => Some(a.cmp(b)),
            (Py::Date(a), Py::Date(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    /// Python `str()`; dates print as the `datetime` dateparser returns.
    pub fn py_str(&self) -> String {
        match self {
            Py::None => "None".into(),
            Py::Str(s) => s.clone(),
            Py::Int(i) => i.to_string(),
            Py::Float(f) => float_repr(*f),
            Py::Date(d) => format!("{d} 00:00:00"),
            other => other.to_json().to_string(),
        }
    }

    /// The JSON invoice2data's output module writes.
    pub fn to_json(&self) -> Json {
        match self {
            Py::None => Json::Null,
            Py::Str(s) => Json::String(s.clone()),
            Py::Int(i) => Json::Number((*i).into()),
            Py::Float(f) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
            Py::Date(d) => Json::String(d.to_string()),
            Py::List(v) => Json::Array(v.iter().map(Py::to_json).collect()),
            Py::Dict(v) => Json::Object(
                v.iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect::<Map<_, _>>(),
            ),
            Py::Json(j) => j.clone(),
        }
    }
}

/// Python's `repr(float)`: shortest round-trip digits, always with a fraction or exponent.
fn float_repr(f: f64) -> String {
    if f.is_finite() && f == f.trunc() && f.abs() < 1e16 {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

/// Python `sum()` (start 0): `None` when an item is not a number (Python raises).
pub(crate) fn sum(items: &[Py]) -> Option<Py> {
    let mut int: i64 = 0;
    let mut float: Option<f64> = None;
    for item in items {
        match item {
            Py::Int(i) => match float.as_mut() {
                Some(f) => *f += *i as f64,
                None => int = int.checked_add(*i)?,
            },
            Py::Float(x) => *float.get_or_insert(int as f64) += x,
            _ => return None,
        }
    }
    Some(float.map_or(Py::Int(int), Py::Float))
}

/// Python `min()`/`max()`: `None` for an empty list or incomparable items.
pub(crate) fn extreme(items: &[Py], want: Ordering) -> Option<Py> {
    let mut best = items.first()?;
    for item in &items[1..] {
        if item.py_cmp(best)? == want {
            best = item;
        }
    }
    Some(best.clone())
}

/// `list(OrderedDict.fromkeys(items))`: duplicates removed, first occurrence kept.
pub(crate) fn dedup(items: Vec<Py>) -> Vec<Py> {
    let mut out: Vec<Py> = Vec::with_capacity(items.len());
    for item in items {
        if !out.iter().any(|o| o.py_eq(&item)) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_semantics() {
        assert!(Py::Float(0.0).kept() && !Py::Float(0.0).truthy());
        assert!(!Py::Str(String::new()).kept() && !Py::List(vec![]).kept());
        assert!(Py::Int(1).py_eq(&Py::Float(1.0)));
        let total = sum(&[Py::Float(7.0), Py::Float(4.0), Py::Float(0.01)]).unwrap();
        assert!(matches!(total, Py::Float(f) if (f - 11.01).abs() < 1e-9));
        assert!(matches!(sum(&[Py::Int(1), Py::Int(1)]), Some(Py::Int(2))));
        assert!(sum(&[Py::Str("a".into())]).is_none());
        assert_eq!(Py::Float(2.0).py_str(), "2.0");
        assert_eq!(Py::Float(4.11).py_str(), "4.11");
        let d = dedup(vec![Py::Int(1), Py::Float(1.0), Py::Str("a".into())]);
        assert_eq!(d.len(), 2);
        let m = extreme(&[Py::Int(3), Py::Float(1.5), Py::Int(2)], Ordering::Less).unwrap();
        assert!(matches!(m, Py::Float(f) if f == 1.5));
    }
}
