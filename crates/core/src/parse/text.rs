//! Free text: the value as written, with layout noise removed.
//!
//! PDF text layers and OCR break lines and pad words unpredictably, so two copies of the same
//! consignee name rarely match byte for byte. Collapsing whitespace here lets `EXACT_MATCH`
//! compare what a reader would see, while the raw text stays in the fact as evidence.

use super::{non_empty, ParseError, Parsed, Value};

/// Trims the text and collapses every run of whitespace (including line breaks and no-break
/// spaces) into one space. Empty or whitespace-only text is [`ParseError::Empty`].
pub fn parse(raw: &str) -> Result<Parsed, ParseError> {
    let text = non_empty(raw)?;
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Ok(Parsed::new(Value::Text(collapsed), 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(raw: &str) -> String {
        match parse(raw).unwrap().value {
            Value::Text(t) => t,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn trims_and_collapses_whitespace() {
        assert_eq!(text("  ACME   Trading\n\tGmbH  "), "ACME Trading GmbH");
        assert_eq!(text("Rue\u{a0}du\u{a0}Port"), "Rue du Port");
        assert_eq!(text("x"), "x");
        assert_eq!(parse("résumé").unwrap().certainty, 1.0);
    }

    #[test]
    fn whitespace_only_is_empty() {
        assert_eq!(parse(""), Err(ParseError::Empty));
        assert_eq!(parse(" \n\t\u{a0}"), Err(ParseError::Empty));
    }

    proptest! {
        #[test]
        fn output_has_no_edge_or_double_whitespace(raw in "\\PC{0,40}|[ \t\na-c]{0,20}") {
            if let Ok(parsed) = parse(&raw) {
                let Value::Text(t) = parsed.value else { panic!() };
                prop_assert!(!t.is_empty());
                prop_assert_eq!(t.trim(), t.as_str());
                prop_assert!(!t.contains("  "));
                prop_assert!(t.chars().all(|c| c == ' ' || !c.is_whitespace()));
                // Collapsing is idempotent.
                prop_assert_eq!(text(&t), t);
            } else {
                prop_assert!(raw.trim().is_empty());
            }
        }
    }
}
