//! A bound on how far a YAML document's aliases expand, checked before it is deserialized.
//!
//! `serde_yaml` stops exponential alias chains ("billion laughs") with a jump limit of 100
//! per event, but not a wide anchor reused many times: an anchor of `n` scalars aliased `m`
//! times costs `n × m` values, so a 100 KiB workflow or template of 25,000 scalars and
//! 25,000 aliases would build 600 million values (tens of GiB) in the real parse. This pass
//! walks the same events without building anything and refuses the text as soon as its
//! nodes (aliases expanded) outnumber what a file of its size can hold without aliases.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};

/// Nodes allowed per byte of text, plus a floor: a node takes at least a byte or two when
/// written out, so only aliases can exceed this, and honest reuse (a shared list of shapes)
/// stays far below it.
const NODES_PER_BYTE: usize = 2;
const MIN_NODES: usize = 4096;

/// Refuses `text` when its nodes, aliases expanded, would exceed the budget for its size.
/// Other problems (syntax, depth) are left to the real parse, which reports them better.
pub(crate) fn check(text: &str) -> Result<(), String> {
    let limit = text.len().saturating_mul(NODES_PER_BYTE).max(MIN_NODES);
    let remaining = Cell::new(limit);
    match Budget(&remaining).deserialize(serde_yaml::Deserializer::from_str(text)) {
        Err(_) if remaining.get() == 0 => Err(format!(
            "its aliases expand to more than {limit} values, far more than a file of {} bytes \
             holds; write the repeated parts out or reuse them less",
            text.len()
        )),
        _ => Ok(()),
    }
}

/// Counts every node it visits against the shared budget.
#[derive(Clone, Copy)]
struct Budget<'a>(&'a Cell<usize>);

impl Budget<'_> {
    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.0.get() {
            0 => Err(E::custom("alias expansion over budget")),
            n => {
                self.0.set(n - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Budget<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Budget<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.take()
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.take()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.take()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }

    /// A tagged node (`!tag value`): the tag, then its value.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        use de::VariantAccess;
        self.take()?;
        let ((), variant) = data.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An anchor of `n` scalars aliased `m` times.
    fn wide(n: usize, m: usize) -> String {
        format!(
            "a: &a [{}]\nb: [{}]\n",
            vec!["x"; n].join(", "),
            vec!["*a"; m].join(", ")
        )
    }

    #[test]
    fn honest_reuse_passes() {
        assert_eq!(check(&wide(7, 4)), Ok(()));
        assert_eq!(check(include_str!("../../../workflows/trade.yaml")), Ok(()));
        // Syntax errors are the real parse's to report.
        assert_eq!(check("a: [unclosed"), Ok(()));
        assert_eq!(check("!tag {a: !other [1, 2]}"), Ok(()));
    }

    #[test]
    fn wide_reuse_is_refused_without_expanding_it() {
        let text = wide(2000, 2000);
        let started = std::time::Instant::now();
        let refused = check(&text).expect_err("four million values from 12 KB");
        assert!(refused.contains("aliases expand"), "{refused}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
