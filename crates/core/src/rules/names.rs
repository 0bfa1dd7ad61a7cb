//! The document types and fields a compiled ruleset names, numbered.
//!
//! A case's forty rules read the same few dozen (document, field) values over and over;
//! numbering the names at compile time lets evaluation find a reading by index instead of by
//! comparing strings, and lets every result that shows a value share one copy of its names.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::spec::Schema;

/// A document type or field name, with its number in the ruleset's [`Names`].
#[derive(Debug, Clone)]
pub(crate) struct Name {
    /// Index in [`Names::types`] or [`Names::fields`], whichever it was interned in.
    pub id: usize,
    text: Arc<str>,
}

impl Name {
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The text, shared (results hold it without copying).
    pub fn shared(&self) -> Arc<str> {
        Arc::clone(&self.text)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Every document type and field a ruleset knows, each numbered from 0 in its own list.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Names {
    types: Vec<Arc<str>>,
    fields: Vec<Arc<str>>,
}

impl Names {
    /// Every document type and field `schema` declares, so readings of any declared field
    /// (the low-confidence safeguard reads them all) are found by number too.
    pub fn of(schema: &Schema) -> Self {
        let mut names = Self::default();
        for (t, fields) in &schema.document_types {
            names.document_type(t);
            for f in fields.keys() {
                names.field(f);
            }
        }
        names
    }

    /// The document type `t`, numbered on first sight.
    pub fn document_type(&mut self, t: &str) -> Name {
        intern(&mut self.types, t)
    }

    /// The field `f`, numbered on first sight.
    pub fn field(&mut self, f: &str) -> Name {
        intern(&mut self.fields, f)
    }

    /// The number of document type `t`, if the ruleset knows it.
    pub fn type_id(&self, t: &str) -> Option<usize> {
        self.types.iter().position(|known| &**known == t)
    }

    /// The field `f`, if the ruleset knows it.
    pub fn find_field(&self, f: &str) -> Option<Name> {
        let id = self.fields.iter().position(|known| &**known == f)?;
        Some(Name {
            id,
            text: Arc::clone(&self.fields[id]),
        })
    }

    /// The document type numbered `id`.
    pub fn type_text(&self, id: usize) -> Option<&Arc<str>> {
        self.types.get(id)
    }

    /// How many document types are numbered.
    pub fn type_count(&self) -> usize {
        self.types.len()
    }

    /// How many fields are numbered.
    pub fn field_count(&self) -> usize {
        self.fields.len()
    }
}

fn intern(list: &mut Vec<Arc<str>>, text: &str) -> Name {
    let id = match list.iter().position(|known| &**known == text) {
        Some(id) => id,
        None => {
            list.push(Arc::from(text));
            list.len() - 1
        }
    };
    Name {
        id,
        text: Arc::clone(&list[id]),
    }
}
