//! Values as people read them on the desk: a typed value (`{"kind", "value"}`) as one line
//! of text.

use serde_json::Value;

/// A value as one line of text. Typed values (`{"kind": …, "value": …}`) show their value:
/// money as `12.50 EUR`, a weight in kg, a container by its code; strings bare.
pub(crate) fn shown(value: &Value) -> String {
    let inner = match (value.get("kind"), value.get("value")) {
        (Some(_), Some(inner)) => inner,
        _ => value,
    };
    let field = |k: &str| inner.get(k).map(plain);
    match (field("amount"), field("kg"), field("code")) {
        (Some(amount), _, _) => match field("currency") {
            Some(currency) if currency != "null" => format!("{amount} {currency}"),
            _ => amount,
        },
        (_, Some(kg), _) => format!("{kg} kg"),
        (_, _, Some(code)) => code,
        _ => plain(inner),
    }
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A typed value read by a rule, shown as [`shown`] shows a stored one.
pub(crate) fn shown_typed(value: &ironclad_core::parse::Value) -> String {
    serde_json::to_value(value)
        .map(|v| shown(&v))
        .unwrap_or_default()
}
