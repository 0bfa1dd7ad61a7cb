//! Python `re` patterns, run with fancy-regex.
//!
//! invoice2data templates are written for Python's `re`. Rust's `regex` crate lacks
//! look-around and backreferences, which some templates use, so patterns compile with
//! fancy-regex (a backtracking layer that hands the look-around-free parts to `regex`).
//! The two dialects also disagree on a few spellings that templates rely on; [`translate`]
//! rewrites those before compiling:
//!
//! | Python | meaning in Python | rewritten as |
//! |---|---|---|
//! | `x{,5}` | 0 to 5 | `x{0,5}` |
//! | `{` not starting a quantifier, `}` alone | literal brace | `\{`, `\}` |
//! | `[` inside a class, `&`, `~` in a class | literal | escaped (Rust reads set operations) |
//! | `[\w-.]` | `-` literal after a class escape | `[\w\-.]` |
//! | `\Z` | end of text | `\z` |
//! | `\<`, `\>`, `\'`, `\:` … | literal punctuation | the literal character |
//! | `\uXXXX`, `\UXXXXXXXX` | code point | `\x{…}` |
//! | `(?#…)` | comment | removed |
//!
//! Known differences left as they are: Python's `$` (without `(?m)`) also matches before a
//! final newline, Rust's does not; `\s` in Python also matches the ASCII separators
//! `\x1c`–`\x1f`.

use std::borrow::Cow;
use std::ops::Range;

use fancy_regex::{Regex, RegexBuilder};

/// Steps one search may take before giving up: bounds catastrophic backtracking (`(a+)+b`)
/// on a page of text. A template whose pattern hits it fails that search, not the process.
const BACKTRACK_LIMIT: usize = 1_000_000;

/// Compiled size allowed for the `regex`-crate parts of a pattern: the `regex` crate's own
/// default. Unicode classes are large, and the library's `IBAN:(\w{10,30})` needs several
/// megabytes; a limit of one failed six templates.
const DELEGATE_SIZE_LIMIT: usize = 10 << 20;

/// A compiled Python pattern, remembering its source for messages.
#[derive(Debug, Clone)]
pub struct PyRegex {
    source: String,
    re: Regex,
}

impl PyRegex {
    /// Translates and compiles a Python pattern.
    pub fn new(pattern: &str) -> Result<PyRegex, String> {
        let translated = translate(pattern)?;
        let re = RegexBuilder::new(&translated)
            .backtrack_limit(BACKTRACK_LIMIT)
            .delegate_size_limit(DELEGATE_SIZE_LIMIT)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(PyRegex {
            source: pattern.to_owned(),
            re,
        })
    }

    /// The pattern as written in the template.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Number of capturing groups (group 0 excluded).
    pub fn groups(&self) -> usize {
        self.re.captures_len().saturating_sub(1)
    }

    /// `re.search`: the first match anywhere.
    pub(crate) fn search<'t>(&self, text: &'t str) -> Option<fancy_regex::Captures<'t>> {
        // A search that exceeds the backtrack limit is treated as no match.
        self.re.captures(text).ok().flatten()
    }

    /// `re.search(…).groupdict()`: the named groups in pattern order, `None` for a group
    /// that took no part; `None` when nothing matches.
    pub fn search_groupdict(&self, text: &str) -> Option<Vec<(String, Option<String>)>> {
        let caps = self.search(text)?;
        let names = self.re.capture_names().flatten();
        Some(
            names
                .map(|n| (n.to_owned(), caps.name(n).map(|m| m.as_str().to_owned())))
                .collect(),
        )
    }

    /// Where `re.search` finds its first match.
    pub fn find(&self, text: &str) -> Option<Range<usize>> {
        Some(self.search(text)?.get(0)?.range())
    }

    /// Whether `re.search` finds anything.
    pub fn is_match(&self, text: &str) -> bool {
        self.re.is_match(text).unwrap_or(false)
    }

    /// `re.findall` for patterns with at most one group: the whole match without groups,
    /// else the group (empty when it did not take part). `None` for two or more groups,
    /// which invoice2data refuses.
    pub fn findall(&self, text: &str) -> Option<Vec<String>> {
        Some(
            self.findall_spans(text)?
                .into_iter()
                .map(|(found, _)| found)
                .collect(),
        )
    }

    /// [`PyRegex::findall`] with where each item was found in `text` (`None` for a group
    /// that took no part).
    pub fn findall_spans(&self, text: &str) -> Option<Vec<(String, Option<Range<usize>>)>> {
        let groups = self.groups();
        if groups > 1 {
            return None;
        }
        let mut out = Vec::new();
        for caps in self.re.captures_iter(text) {
            let Ok(caps) = caps else { break };
            let m = caps.get(groups);
            out.push((
                m.map_or("", |m| m.as_str()).to_owned(),
                m.map(|m| m.range()),
            ));
        }
        Some(out)
    }

    /// `re.split` (groups in the separator are not returned, unlike Python).
    pub fn split<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut out = Vec::new();
        let mut last = 0;
        for m in self.re.find_iter(text) {
            let Ok(m) = m else { break };
            if m.end() == m.start() {
                continue;
            }
            out.push(&text[last..m.start()]);
            last = m.end();
        }
        out.push(&text[last..]);
        out
    }

    /// `re.sub(pattern, repl, text)` with a Python replacement template. A search past the
    /// backtrack limit ends the substitution there (the rest of the text stays as it is).
    pub fn sub<'t>(&self, repl: &PyReplacement, text: &'t str) -> Cow<'t, str> {
        let mut replacements = self.sub_each(repl, text).peekable();
        if replacements.peek().is_none() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (range, replacement) in replacements {
            out.push_str(&text[last..range.start]);
            out.push_str(&replacement);
            last = range.end;
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }

    /// What `re.sub` replaces, match by match: each matched range of `text` and what it
    /// becomes, in order.
    pub fn sub_each<'a>(
        &'a self,
        repl: &'a PyReplacement,
        text: &'a str,
    ) -> impl Iterator<Item = (Range<usize>, String)> + 'a {
        self.re.captures_iter(text).map_while(move |caps| {
            let caps = caps.ok()?;
            let range = caps.get(0)?.range();
            let mut replacement = String::new();
            caps.expand(&repl.rust, &mut replacement);
            Some((range, replacement))
        })
    }
}

/// A Python replacement template (`\1`, `\g<name>`) rewritten for Rust (`${1}`, `${name}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyReplacement {
    rust: String,
}

impl PyReplacement {
    /// Translates a Python `re.sub` replacement.
    pub fn new(python: &str) -> PyReplacement {
        let mut rust = String::with_capacity(python.len());
        let mut chars = python.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '$' => rust.push_str("$$"),
                '\\' => match chars.next() {
                    Some('g') if chars.peek() == Some(&'<') => {
                        chars.next();
                        let name: String = chars.by_ref().take_while(|&c| c != '>').collect();
                        rust.push_str(&format!("${{{name}}}"));
                    }
                    Some(d) if d.is_ascii_digit() => {
                        let mut num = d.to_string();
                        if let Some(&e) = chars.peek().filter(|e| e.is_ascii_digit()) {
                            num.push(e);
                            chars.next();
                        }
                        rust.push_str(&format!("${{{num}}}"));
                    }
                    Some('n') => rust.push('\n'),
                    Some('t') => rust.push('\t'),
                    Some('r') => rust.push('\r'),
                    Some('\\') => rust.push('\\'),
                    Some(other) => {
                        rust.push('\\');
                        rust.push(other);
                    }
                    None => rust.push('\\'),
                },
                other => rust.push(other),
            }
        }
        PyReplacement { rust }
    }
}

/// Rewrites a Python pattern into fancy-regex syntax (see the module docs for the table).
pub fn translate(py: &str) -> Result<String, String> {
    let chars: Vec<char> = py.chars().collect();
    let mut out = String::with_capacity(py.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    // Position (in `chars`) just after the class's opening `[` or `[^`.
    let mut class_body_start = 0;
    // Whether the previous class item was a class escape (`\w`), which cannot start a range.
    let mut prev_was_class_escape = false;
    let mut prev_was_dash = false;
    while i < chars.len() {
        let c = chars[i];
        if in_class {
            let at_start = i == class_body_start;
            let mut class_escape = false;
            let mut dash = false;
            match c {
                ']' if !at_start => {
                    in_class = false;
                    out.push(']');
                }
                ']' => out.push_str(r"\]"),
                '\\' => {
                    let (text, next, is_class) = escape(&chars, i, true)?;
                    out.push_str(&text);
                    class_escape = is_class;
                    i = next;
                    prev_was_class_escape = class_escape;
                    prev_was_dash = false;
                    continue;
                }
                '[' | '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                }
                '-' => {
                    let at_end = chars.get(i + 1) == Some(&']');
                    if prev_was_class_escape || prev_was_dash || at_start || at_end {
                        out.push_str(r"\-");
                    } else {
                        out.push('-');
                        dash = true;
                    }
                }
                _ => out.push(c),
            }
            prev_was_class_escape = class_escape;
            prev_was_dash = dash;
            i += 1;
            continue;
        }
        match c {
            '\\' => {
                let (text, next, _) = escape(&chars, i, false)?;
                out.push_str(&text);
                i = next;
                continue;
            }
            '[' => {
                in_class = true;
                out.push('[');
                i += 1;
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                class_body_start = i;
                prev_was_class_escape = false;
                prev_was_dash = false;
                continue;
            }
            '{' => match quantifier(&chars, i) {
                Some((text, next))
                    if !out.is_empty() && !out.ends_with('(') && !out.ends_with('|') =>
                {
                    out.push_str(&text);
                    i = next;
                    continue;
                }
                _ => out.push_str(r"\{"),
            },
            '}' => out.push_str(r"\}"),
            '(' if chars[i..].starts_with(&['(', '?', '#']) => {
                // Comment group: skip to the closing parenthesis.
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
            }
            _ => out.push(c),
        }
        i += 1;
    }
    if in_class {
        return Err("unterminated character set".into());
    }
    Ok(out)
}

/// `{m}`, `{m,}`, `{,n}`, `{m,n}` at `chars[at]`: the Rust spelling and the index after it.
fn quantifier(chars: &[char], at: usize) -> Option<(String, usize)> {
    let close = at + chars[at..].iter().position(|&c| c == '}')?;
    let body: String = chars[at + 1..close].iter().collect();
    let (lo, hi) = match body.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (body.as_str(), None),
    };
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if !digits(lo) || !hi.is_none_or(digits) || (lo.is_empty() && hi.is_none()) {
        return None;
    }
    let lo = if lo.is_empty() { "0" } else { lo };
    let text = match hi {
        None => format!("{{{lo}}}"),
        Some(hi) => format!("{{{lo},{hi}}}"),
    };
    Some((text, close + 1))
}

/// Translates the escape at `chars[at] == '\\'`: the Rust text, the index after it, and
/// whether it is a class escape (`\d`, `\w`, `\s` and negations).
fn escape(chars: &[char], at: usize, in_class: bool) -> Result<(String, usize, bool), String> {
    let Some(&c) = chars.get(at + 1) else {
        return Err("pattern ends with a lone backslash".into());
    };
    let next = at + 2;
    let hex = |n: usize| -> Result<(String, usize), String> {
        let digits: String = chars
            .get(next..next + n)
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        if digits.len() == n && digits.chars().all(|d| d.is_ascii_hexdigit()) {
            Ok((format!(r"\x{{{digits}}}"), next + n))
        } else {
            Err(format!(r"incomplete escape \{c}{digits}"))
        }
    };
    Ok(match c {
        'd' | 'D' | 'w' | 'W' | 's' | 'S' => (format!("\\{c}"), next, true),
        'b' if in_class => (r"\x08".into(), next, false),
        'b' | 'B' | 'A' | 'n' | 't' | 'r' | 'f' | 'v' | 'a' => (format!("\\{c}"), next, false),
        'Z' => (r"\z".into(), next, false),
        'x' => {
            let (t, n) = hex(2)?;
            (t, n, false)
        }
        'u' => {
            let (t, n) = hex(4)?;
            (t, n, false)
        }
        'U' => {
            let (t, n) = hex(8)?;
            (t, n, false)
        }
        '0'..='9' if !in_class => {
            // A backreference (`\1`), or an octal escape in Python when it starts with 0.
            if c == '0' {
                (r"\x00".into(), next, false)
            } else {
                (format!("\\{c}"), next, false)
            }
        }
        c if c.is_ascii_alphanumeric() => return Err(format!(r"bad escape \{c}")),
        c => {
            // Escaped punctuation is a literal in Python; escape it again only where Rust
            // would otherwise read syntax.
            let meta = if in_class {
                r"\]^-[&~"
            } else {
                r"\.+*?()|[]{}^$#&-~"
            };
            if meta.contains(c) {
                (format!("\\{c}"), next, false)
            } else if c.is_whitespace() && !in_class {
                // `\ ` stays a literal even under `(?x)`.
                (format!(r"\x{{{:x}}}", c as u32), next, false)
            } else {
                (c.to_string(), next, false)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(p: &str) -> String {
        translate(p).unwrap()
    }

    #[test]
    fn python_only_spellings_are_rewritten() {
        assert_eq!(t(r"(?P<desc>.{,70})"), r"(?P<desc>.{0,70})");
        assert_eq!(t(r"\d{2}-\d{2,}"), r"\d{2}-\d{2,}");
        assert_eq!(t(r"{abc}"), r"\{abc\}");
        assert_eq!(t(r"[\w-.]+"), r"[\w\-.]+");
        assert_eq!(t(r"[[(]x"), r"[\[(]x");
        assert_eq!(t(r"a\Z"), r"a\z");
        assert_eq!(t(r"\'\:\<"), r"':<");
        assert_eq!(t(r"\u00e9"), r"\x{00e9}");
        assert_eq!(t(r"a(?#note)b"), "ab");
        assert_eq!(t(r"[]a]"), r"[\]a]");
        assert!(translate("[abc").is_err());
        assert!(translate(r"\q").is_err());
    }

    #[test]
    fn every_translation_compiles_and_means_the_python_thing() {
        let re = PyRegex::new(r"\s+(?P<pos>\d+)\s+(?P<desc>.{,10})\s+(?P<price>\d+,\d+)").unwrap();
        let caps = re.search("  1  Something  3,89").unwrap();
        assert_eq!(&caps["price"], "3,89");
        assert!(PyRegex::new(r"[\w-.]+@x").unwrap().is_match("a-b.c@x"));
    }

    #[test]
    fn look_around_and_backreferences_work() {
        let re = PyRegex::new(r"(?<=Total: )(\d+)(?! EUR)").unwrap();
        assert_eq!(
            re.findall("Total: 12 USD, Total: 13 EUR").unwrap(),
            ["12", "1"]
        );
        let re = PyRegex::new(r"(?P<q>['\x22])(.*?)(?P=q)").unwrap();
        assert!(re.is_match("say 'hi'"));
    }

    #[test]
    fn findall_follows_python_group_rules() {
        assert_eq!(
            PyRegex::new(r"\d+").unwrap().findall("a1b22").unwrap(),
            ["1", "22"]
        );
        assert_eq!(
            PyRegex::new(r"x(\d)?").unwrap().findall("x1 x").unwrap(),
            ["1", ""]
        );
        assert!(PyRegex::new(r"(a)(b)").unwrap().findall("ab").is_none());
    }

    #[test]
    fn replacements_follow_python_templates() {
        let re = PyRegex::new(r"(?P<d>\d+) du (\w+)").unwrap();
        let r = PyReplacement::new(r"\g<d>-\2 $");
        assert_eq!(re.sub(&r, "1 du mois"), "1-mois $");
    }

    #[test]
    fn catastrophic_backtracking_is_bounded() {
        let re = PyRegex::new(r"(a+)+(?=b)").unwrap();
        assert!(!re.is_match(&"a".repeat(64)));
    }
}
