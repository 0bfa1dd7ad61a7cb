//! invoice2data's `lines` parser (line items between a start and an end pattern, optionally
//! spread over `first_line` / `line` / `last_line`) and its `tables` plugin.

use super::fields::{apply_group, coerce, parse_number, CoerceType, Group};
use super::pyre::PyRegex;
use super::pyvalue::Py;
use super::{dates, ExtractError, Template};

/// One set of line-parsing rules.
#[derive(Debug, Clone)]
pub(crate) struct LinesRule {
    pub start: PyRegex,
    pub end: PyRegex,
    pub line: Vec<PyRegex>,
    pub first_line: Option<Vec<PyRegex>>,
    pub last_line: Option<Vec<PyRegex>>,
    pub skip_line: Vec<PyRegex>,
    pub separator: PyRegex,
    pub types: Vec<(String, CoerceType)>,
}

/// One entry of a template's `tables`.
#[derive(Debug, Clone)]
pub(crate) struct TableSpec {
    pub start: PyRegex,
    pub end: PyRegex,
    pub body: PyRegex,
    pub separator: PyRegex,
    pub types: Vec<(String, CoerceType)>,
    /// Per-field `type` and `group` settings.
    pub fields: Vec<(String, Option<CoerceType>, Option<Group>)>,
}

type Row = Vec<(String, Py)>;

/// Every rule's rows, in rule order.
pub(crate) fn parse_lines(
    t: &Template,
    field: &str,
    rules: &[LinesRule],
    text: &str,
) -> Result<Vec<Py>, ExtractError> {
    let mut rows = Vec::new();
    for rule in rules {
        rows.extend(parse_by_rule(t, field, rule, text)?);
    }
    Ok(rows.into_iter().map(Py::Dict).collect())
}

/// Finds each start…end block in turn and parses its lines.
fn parse_by_rule(
    t: &Template,
    field: &str,
    rule: &LinesRule,
    text: &str,
) -> Result<Vec<Row>, ExtractError> {
    let mut rows = Vec::new();
    let mut content = text;
    while let Some(start) = rule.start.search(content).and_then(|c| c.get(0)) {
        let after_start = &content[start.end()..];
        let Some(end) = rule.end.search(after_start).and_then(|c| c.get(0)) else {
            break;
        };
        rows.extend(parse_block(t, field, rule, &after_start[..end.start()])?);
        let consumed = start.end() + end.end();
        // Python loops forever when both patterns match the empty string; stop instead.
        if consumed == 0 {
            break;
        }
        content = &content[consumed..];
    }
    Ok(rows)
}

fn parse_block(
    t: &Template,
    field: &str,
    rule: &LinesRule,
    content: &str,
) -> Result<Vec<Row>, ExtractError> {
    // Without first_line and last_line, every `line` match is a row of its own.
    let first_line = match (&rule.first_line, &rule.last_line) {
        (None, None) => Some(&rule.line),
        (first, _) => first.as_ref(),
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut current: Row = Vec::new();
    let mut in_item = false;
    for line in rule.separator.split(content) {
        if line.trim_matches(['\n', '\r']).is_empty() {
            continue;
        }
        if rule.skip_line.iter().any(|re| re.is_match(line)) {
            continue;
        }
        if let Some(m) = first_line.and_then(|p| first_match(p, line)) {
            if !current.is_empty() {
                rows.push(std::mem::take(&mut current));
            }
            current = m
                .into_iter()
                .map(|(k, v)| (k, Py::Str(v.unwrap_or_default().trim().to_owned())))
                .collect();
            in_item = true;
            continue;
        }
        if !in_item {
            continue;
        }
        if let Some(m) = rule.last_line.as_ref().and_then(|p| first_match(p, line)) {
            merge(&mut current, m);
            if !current.is_empty() {
                rows.push(std::mem::take(&mut current));
            }
            in_item = false;
            continue;
        }
        if let Some(m) = first_match(&rule.line, line) {
            merge(&mut current, m);
        }
    }
    if !current.is_empty() {
        rows.push(current);
    }
    for row in &mut rows {
        for (name, value) in row.iter_mut() {
            if let (Some((_, kind)), Py::Str(raw)) =
                (rule.types.iter().find(|(n, _)| n == name), &*value)
            {
                *value = coerce(t, field, raw, *kind)?;
            }
        }
    }
    Ok(rows)
}

type GroupDict = Vec<(String, Option<String>)>;

/// The first pattern that matches the line, as its `groupdict()`.
fn first_match(patterns: &[PyRegex], line: &str) -> Option<GroupDict> {
    patterns.iter().find_map(|re| re.search_groupdict(line))
}

/// invoice2data's `parse_current_row`: values of a continued item join with newlines.
fn merge(row: &mut Row, groups: GroupDict) {
    for (name, value) in groups {
        let value = value.unwrap_or_default().trim().to_owned();
        match row.iter_mut().find(|(k, _)| *k == name) {
            Some((_, Py::Str(existing))) if !existing.is_empty() => {
                existing.push('\n');
                existing.push_str(&value);
            }
            Some((_, slot)) => *slot = Py::Str(value),
            None => row.push((name, Py::Str(value))),
        }
    }
}

/// The `tables` plugin for one table: its fields, or `None` when it is skipped (no start or
/// end, or a date that does not parse, as invoice2data does).
pub(crate) fn parse_table(
    t: &Template,
    table: &TableSpec,
    text: &str,
) -> Result<Option<Vec<(String, Py)>>, ExtractError> {
    let (Some(start), Some(end)) = (
        table.start.search(text).and_then(|c| c.get(0)),
        table.end.search(text).and_then(|c| c.get(0)),
    ) else {
        return Ok(None);
    };
    // Both are searched from the top, as in invoice2data; an end before the start is an
    // empty body (Python's slice), not an error.
    let body = text.get(start.end()..end.start()).unwrap_or("");
    let mut out: Vec<(String, Py)> = Vec::new();
    for line in table.separator.split(body) {
        if line.trim_matches('\n').is_empty() || line.chars().all(char::is_whitespace) {
            continue;
        }
        let Some(groups) = table.body.search_groupdict(line) else {
            continue;
        };
        for (name, raw) in groups {
            let value = match raw {
                _ if name.starts_with("date") || name.ends_with("date") => {
                    let parsed = raw.as_deref().and_then(|r| {
                        dates::parse_date(r, &t.options.date_formats, &t.options.languages)
                    });
                    match parsed {
                        Some(d) => Py::Date(d),
                        None => return Ok(None),
                    }
                }
                None => Py::None,
                Some(raw) if name.starts_with("amount") => {
                    Py::Float(parse_number(t, &raw).ok_or_else(|| ExtractError::Coerce {
                        field: name.clone(),
                        raw,
                        kind: "float".into(),
                    })?)
                }
                Some(raw) => {
                    let kind = table
                        .types
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, k)| *k);
                    let kind = kind.or_else(|| {
                        table
                            .fields
                            .iter()
                            .find(|(n, _, _)| *n == name)
                            .and_then(|(_, k, _)| *k)
                    });
                    match kind {
                        Some(kind) => coerce(t, &name, &raw, kind)?,
                        None => Py::Str(raw),
                    }
                }
            };
            match out.iter_mut().find(|(k, _)| *k == name) {
                Some((_, Py::List(items))) => items.push(value),
                Some((_, slot)) => {
                    let first = std::mem::replace(slot, Py::None);
                    *slot = Py::List(vec![first, value]);
                }
                None => out.push((name, value)),
            }
        }
    }
    for (name, _, group) in &table.fields {
        let (Some(group), Some((_, value))) = (group, out.iter_mut().find(|(k, _)| k == name))
        else {
            continue;
        };
        // A field seen on one line only is a scalar; Python would iterate it (characters of
        // a string), which no template means, so it counts as a one-item list here.
        let items = match std::mem::replace(value, Py::None) {
            Py::List(items) => items,
            one => vec![one],
        };
        let items: Vec<Py> = items.into_iter().filter(Py::truthy).collect();
        *value = if items.is_empty() {
            Py::List(items)
        } else {
            apply_group(*group, items).unwrap_or(Py::None)
        };
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::super::Template;

    fn extract(yaml: &str, text: &str) -> serde_json::Map<String, serde_json::Value> {
        Template::from_yaml(yaml).unwrap().extract(text).unwrap()
    }

    #[test]
    fn first_line_starts_an_item_and_lines_continue_it() {
        let yaml = r#"
keywords: [X]
required_fields: [items]
fields:
  items:
    parser: lines
    start: Items
    end: Total
    first_line: '^(?P<pos>\d+)\s+(?P<desc>.+?)\s+(?P<price>\d+\.\d\d)$'
    line: '^\s+(?P<desc>.+)$'
    last_line: '^\s+(?P<desc>Serial: .+)$'
    skip_line: 'Page break'
    types: {price: float}
"#;
        let text = "X\nItems\n1 Chair 10.00\n   oak\nPage break\n   Serial: 42\n   ignored\n2 Table 5.50\nTotal";
        let out = extract(yaml, text);
        assert_eq!(
            out["items"],
            serde_json::json!([
                {"pos": "1", "desc": "Chair\noak\nSerial: 42", "price": 10.0},
                {"pos": "2", "desc": "Table", "price": 5.5}
            ])
        );
    }

    #[test]
    fn tables_collect_repeated_fields_and_group_them() {
        let yaml = r#"
keywords: [X]
required_fields: [qty]
fields: {}
tables:
  - start: Start
    end: End
    body: '(?P<name>\w+)\s+(?P<qty>\d+)\s+(?P<date_in>\d{4}-\d\d-\d\d)'
    types: {qty: int}
    fields:
      qty: {group: sum}
      date_in: {group: last}
"#;
        let out = extract(yaml, "X\nStart\na 1 2024-01-02\nb 2 2024-03-04\nEnd");
        assert_eq!(out["name"], serde_json::json!(["a", "b"]));
        assert_eq!(out["qty"], 3);
        assert_eq!(out["date_in"], "2024-03-04");
        // A date that does not parse drops the whole table, as in invoice2data.
        let t = Template::from_yaml(yaml).unwrap();
        assert!(t.extract("X\nStart\na 1 2024-13-45\nEnd").is_err());
    }
}
