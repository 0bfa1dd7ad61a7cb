//! Reading template files the way PyYAML and Python's `json` do: a repeated key keeps its
//! last value instead of failing. Several library templates repeat a key (a second `start:`
//! under `lines:`), and invoice2data uses them as written.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_yaml::{Mapping, Value as Yaml};

/// A YAML/JSON document whose mappings tolerate repeated keys.
pub(crate) struct Lenient(pub Yaml);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LenientVisitor).map(Lenient)
    }
}

struct LenientVisitor;

impl<'de> Visitor<'de> for LenientVisitor {
    type Value = Yaml;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Yaml, E> {
        Ok(Yaml::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Yaml, E> {
        Ok(Yaml::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Yaml, E> {
        Ok(Yaml::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Yaml, E> {
        Ok(Yaml::Number(v.into()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Yaml, E> {
        Ok(Yaml::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Yaml, E> {
        Ok(Yaml::String(v))
    }

    fn visit_unit<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }

    fn visit_none<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Yaml, D::Error> {
        Lenient::deserialize(d).map(|l| l.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Yaml, A::Error> {
        let mut out = Vec::new();
        while let Some(Lenient(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Yaml::Sequence(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Yaml, A::Error> {
        let mut out = Mapping::new();
        while let Some((Lenient(k), Lenient(v))) = map.next_entry()? {
            // Last one wins, in the first one's place, as in a Python dict.
            out.insert(k, v);
        }
        Ok(Yaml::Mapping(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_keep_the_last_value() {
        let Lenient(v) = serde_yaml::from_str("a: 1\nb: 2\na: 3\n").unwrap();
        assert_eq!(serde_yaml::to_string(&v).unwrap(), "a: 3\nb: 2\n");
        let Lenient(v) = serde_json::from_str(r#"{"a": [1, {"x": null}], "a": "z"}"#).unwrap();
        assert_eq!(v["a"], Yaml::String("z".into()));
    }
}
