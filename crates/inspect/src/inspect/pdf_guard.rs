//! What is checked before (and while) `lopdf` parses an untrusted PDF.
//!
//! `lopdf` is a convenient parser but not a hardened one: it parses nested arrays and
//! dictionaries recursively (a file of ten thousand `[` overflows the stack, which aborts
//! the whole process — no `catch_unwind` helps), and it inflates cross-reference and object
//! streams without any size limit (a few KiB of deflate can claim gigabytes). This module
//! closes those holes with a small lexer of its own:
//!
//! * [`check_nesting`] refuses nesting deeper than [`MAX_NESTING`] anywhere in the file;
//! * [`check_xref_chain`] follows the same cross-reference chain `lopdf` will (startxref,
//!   `/Prev`, `/XRefStm`), inflates each xref stream with a cap, and reports `/Encrypt` in the
//!   main trailer so encrypted files never reach `lopdf`'s decryption path;
//! * [`guard_object_stream`] is the filter `lopdf` calls on every object as it loads: it
//!   inflates object streams with a cap (per stream and per document) and checks their
//!   nesting before `lopdf` parses their contents.

use super::InspectError;
use std::cell::Cell;
use std::collections::HashSet;
use std::io::Read;

/// Deepest `[`/`<<` nesting accepted. Real documents stay in single digits; the limit keeps
/// `lopdf`'s recursion far from the 2 MiB stack of a blocking or async worker thread.
pub(super) const MAX_NESTING: usize = 64;
/// Cap on one inflated cross-reference stream (~2.5 million objects at 13 bytes a row).
const MAX_XREF_STREAM: u64 = 32 << 20;
/// Cap on one inflated object stream (they hold ~100 small objects in practice).
const MAX_OBJECT_STREAM: u64 = 16 << 20;
/// Cap on all inflated object streams of one document.
const MAX_OBJECT_STREAMS_TOTAL: u64 = 256 << 20;
/// Most cross-reference sections (revisions) followed.
const MAX_XREF_SECTIONS: usize = 1024;

/// One lexical token; strings and numbers other than integers carry no value (never needed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    DictOpen,
    DictClose,
    ArrayOpen,
    ArrayClose,
    /// A name, raw (still with `#xx` escapes); compare with [`name_is`].
    Name(&'a [u8]),
    Int(i64),
    Keyword(&'a [u8]),
    /// A string, a real number or a stray delimiter.
    Other,
}

/// A PDF lexer over a byte slice: no allocation, no recursion.
struct Lexer<'a> {
    bytes: &'a [u8],
    pos: usize,
}

fn is_white(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0')
}

fn is_delimiter(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

fn is_regular(b: u8) -> bool {
    !is_white(b) && !is_delimiter(b)
}

impl<'a> Lexer<'a> {
    fn new(bytes: &'a [u8], pos: usize) -> Self {
        Self { bytes, pos }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next_token(&mut self) -> Option<Token<'a>> {
        // Whitespace and comments.
        loop {
            match self.peek()? {
                b if is_white(b) => self.pos += 1,
                b'%' => {
                    while self.peek().is_some_and(|b| b != b'\r' && b != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
        let start = self.pos;
        let b = self.peek()?;
        self.pos += 1;
        Some(match b {
            b'<' if self.peek() == Some(b'<') => {
                self.pos += 1;
                Token::DictOpen
            }
            b'>' if self.peek() == Some(b'>') => {
                self.pos += 1;
                Token::DictClose
            }
            b'<' => {
                // Hex string.
                while self.peek().is_some_and(|b| b != b'>') {
                    self.pos += 1;
                }
                self.pos = (self.pos + 1).min(self.bytes.len());
                Token::Other
            }
            b'(' => {
                self.skip_literal_string();
                Token::Other
            }
            b'[' => Token::ArrayOpen,
            b']' => Token::ArrayClose,
            b'/' => {
                while self.peek().is_some_and(is_regular) {
                    self.pos += 1;
                }
                Token::Name(&self.bytes[start + 1..self.pos])
            }
            b if is_regular(b) => {
                while self.peek().is_some_and(is_regular) {
                    self.pos += 1;
                }
                let word = &self.bytes[start..self.pos];
                match parse_int(word) {
                    Some(n) => Token::Int(n),
                    None if word[0].is_ascii_digit() || matches!(word[0], b'+' | b'-' | b'.') => {
                        Token::Other
                    }
                    None => Token::Keyword(word),
                }
            }
            _ => Token::Other,
        })
    }

    /// Skips a `( … )` string (after the opening parenthesis): balanced parentheses nest,
    /// a backslash escapes the next byte. Counted, not recursed.
    fn skip_literal_string(&mut self) {
        let mut depth = 1usize;
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'\\' => self.pos = (self.pos + 1).min(self.bytes.len()),
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// After a `stream` keyword: the offset where the stream's data starts (past its EOL).
    fn stream_data_start(&self) -> usize {
        let rest = &self.bytes[self.pos.min(self.bytes.len())..];
        let eol = match rest {
            [b'\r', b'\n', ..] => 2,
            [b'\r' | b'\n', ..] => 1,
            _ => 0,
        };
        self.pos + eol
    }
}

fn parse_int(word: &[u8]) -> Option<i64> {
    let digits = word.strip_prefix(b"+").unwrap_or(word);
    let (negative, digits) = match digits.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, digits),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    Some(if negative { -n } else { n })
}

/// Whether the raw name (without `/`, possibly with `#xx` escapes) spells `want`, the way
/// `lopdf` decodes names.
fn name_is(raw: &[u8], want: &[u8]) -> bool {
    let mut decoded = 0;
    let mut i = 0;
    while i < raw.len() {
        let escaped = match raw.get(i..i + 3) {
            Some([b'#', hi, lo]) => hex_pair(*hi, *lo),
            _ => None,
        };
        let byte = match escaped {
            Some(b) => {
                i += 3;
                b
            }
            None => {
                i += 1;
                raw[i - 1]
            }
        };
        if want.get(decoded) != Some(&byte) {
            return false;
        }
        decoded += 1;
    }
    decoded == want.len()
}

fn hex_pair(hi: u8, lo: u8) -> Option<u8> {
    let digit = |c: u8| (c as char).to_digit(16);
    Some((digit(hi)? * 16 + digit(lo)?) as u8)
}

/// Refuses `[`/`<<` nesting deeper than [`MAX_NESTING`], skipping stream data, strings and
/// comments. Closing more than was opened is left for the parser to judge.
pub(super) fn check_nesting(bytes: &[u8]) -> Result<(), InspectError> {
    let mut lexer = Lexer::new(bytes, 0);
    let mut depth = 0usize;
    while let Some(token) = lexer.next_token() {
        match token {
            Token::DictOpen | Token::ArrayOpen => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(InspectError::unreadable(
                        "the PDF is corrupt (structures nested too deeply)",
                    ));
                }
            }
            Token::DictClose | Token::ArrayClose => depth = depth.saturating_sub(1),
            Token::Keyword(b"stream") => {
                let data = lexer.stream_data_start();
                lexer.pos =
                    match memchr::memmem::find(&bytes[data.min(bytes.len())..], b"endstream") {
                        Some(end) => data + end + b"endstream".len(),
                        None => bytes.len(),
                    };
            }
            // Objects never nest across `endobj`; a stray opener must not add up.
            Token::Keyword(b"endobj") => depth = 0,
            _ => {}
        }
    }
    Ok(())
}

/// The `startxref` offset `lopdf` will use: the first `%%EOF` in the last 512 bytes, with
/// `startxref <n>` just before it.
fn startxref(bytes: &[u8]) -> Option<usize> {
    let tail_start = bytes.len().saturating_sub(512);
    let eof = tail_start + memchr::memmem::find(&bytes[tail_start..], b"%%EOF")?;
    let from = eof.checked_sub(25)?;
    let at = from + memchr::memmem::find(&bytes[from..], b"startxref")?;
    let mut lexer = Lexer::new(bytes, at + b"startxref".len());
    match lexer.next_token()? {
        Token::Int(n) => usize::try_from(n).ok(),
        _ => None,
    }
}

/// What the cross-reference preflight learnt.
#[derive(Debug, Default)]
pub(super) struct XrefFacts {
    /// The main trailer (or main xref stream) names an `/Encrypt` dictionary.
    pub(super) encrypted: bool,
    /// Upper bound on the cross-reference entries `lopdf` will read objects for.
    pub(super) entries: u64,
    /// The page count the page tree's root declares, when it can be read cheaply (a single
    /// classic xref table, catalog and root node as plain objects). Unverified: only good
    /// for refusing a file early.
    pub(super) declared_pages: Option<i64>,
}

/// Follows the cross-reference chain (`startxref`, then `/Prev` and `/XRefStm`) as `lopdf`
/// will, refusing what `lopdf` would choke on: an xref stream that inflates past
/// [`MAX_XREF_STREAM`] or uses a filter other than Flate, or a chain it cannot follow.
pub(super) fn check_xref_chain(bytes: &[u8]) -> Result<XrefFacts, InspectError> {
    let broken = || InspectError::unreadable("the PDF is corrupt (broken cross-reference table)");
    let first = startxref(bytes).ok_or_else(broken)?;
    let mut facts = XrefFacts::default();
    let mut queue = vec![first];
    let mut seen = HashSet::new();
    let mut sections = 0usize;
    let mut main_section = None;
    while let Some(offset) = queue.pop() {
        if !seen.insert(offset) {
            continue;
        }
        if seen.len() > MAX_XREF_SECTIONS {
            return Err(InspectError::too_large("the PDF has too many revisions"));
        }
        if offset >= bytes.len() {
            return Err(broken());
        }
        let section = read_xref_section(bytes, offset).ok_or_else(broken)?;
        sections += 1;
        if offset == first {
            facts.encrypted = section.encrypted;
        }
        facts.entries += section.entries;
        if let Some(data) = section.stream_data {
            let inflated = match inflate_capped(
                bytes,
                data,
                section.filter,
                MAX_XREF_STREAM,
                "a cross-reference stream",
            )? {
                Inflated::Bytes(n) => n,
                // Unfiltered: its length, or at worst the rest of the file.
                Inflated::Unfiltered => section
                    .length
                    .unwrap_or(bytes.len().saturating_sub(data) as u64),
            };
            // One row per entry, each at least the sum of /W bytes wide.
            facts.entries += inflated / section.row_width.max(1);
        }
        queue.extend(section.links.iter().copied());
        if offset == first {
            main_section = Some(section);
        }
    }
    if let (1, Some(main)) = (sections, main_section) {
        facts.declared_pages = declared_pages(bytes, &main);
    }
    Ok(facts)
}

/// `/Count` of the page tree root, read through a lone classic xref table.
fn declared_pages(bytes: &[u8], section: &XrefSection) -> Option<i64> {
    let catalog = section.lookup(bytes, section.root?)?;
    let Value::Ref(pages) = dict_value(bytes, catalog, b"Pages")? else {
        return None;
    };
    match dict_value(bytes, section.lookup(bytes, pages)?, b"Count")? {
        Value::Int(n) => Some(n),
        Value::Ref(_) => None,
    }
}

/// A dictionary value worth reading here.
enum Value {
    Int(i64),
    Ref(u32),
}

/// The value of `key` in the dictionary of the object at `offset` (`n g obj << … >>`).
fn dict_value(bytes: &[u8], offset: usize, key: &[u8]) -> Option<Value> {
    let mut lexer = Lexer::new(bytes, offset);
    if !matches!(lexer.next_token()?, Token::Int(_))
        || !matches!(lexer.next_token()?, Token::Int(_))
        || lexer.next_token()? != Token::Keyword(b"obj")
        || lexer.next_token()? != Token::DictOpen
    {
        return None;
    }
    loop {
        let Token::Name(name) = lexer.next_token()? else {
            return None;
        };
        let first = lexer.next_token()?;
        skip_value(&mut lexer, first)?;
        let Token::Int(n) = first else {
            continue;
        };
        let save = lexer.pos;
        let is_reference = matches!(lexer.next_token(), Some(Token::Int(_)))
            && lexer.next_token() == Some(Token::Keyword(b"R"));
        if !is_reference {
            lexer.pos = save;
        }
        if name_is(name, key) {
            return Some(if is_reference {
                Value::Ref(u32::try_from(n).ok()?)
            } else {
                Value::Int(n)
            });
        }
    }
}

/// How a stream is encoded, as far as the caps care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    None,
    Flate,
    /// Anything else, or a Flate whose output a predictor may reshape.
    Unsupported,
}

#[derive(Debug, Default)]
struct XrefSection {
    encrypted: bool,
    /// `/Prev` and `/XRefStm` offsets.
    links: Vec<usize>,
    /// Where an xref stream's data starts.
    stream_data: Option<usize>,
    filter: Option<Filter>,
    /// In-use entries of a classic table.
    entries: u64,
    /// Sum of an xref stream's `/W` field widths.
    row_width: u64,
    /// Object number of the trailer's `/Root`.
    root: Option<u32>,
    /// A direct `/Length`.
    length: Option<u64>,
    /// A classic table's subsections: first object number, count, offset of the first entry.
    subsections: Vec<(u64, u64, usize)>,
}

impl XrefSection {
    /// Offset of object `number` in a classic table. Entries are 20 bytes by the standard;
    /// a table that is not gives `None` (the caller then does without).
    fn lookup(&self, bytes: &[u8], number: u32) -> Option<usize> {
        let number = u64::from(number);
        let &(start, _, first) = self
            .subsections
            .iter()
            .find(|&&(start, count, _)| (start..start + count).contains(&number))?;
        let at = first.checked_add(usize::try_from((number - start) * 20).ok()?)?;
        let mut lexer = Lexer::new(bytes, at);
        match (
            lexer.next_token()?,
            lexer.next_token()?,
            lexer.next_token()?,
        ) {
            (Token::Int(offset), Token::Int(_), Token::Keyword(b"n")) => {
                usize::try_from(offset).ok()
            }
            _ => None,
        }
    }
}

/// Reads the section at `offset`: a classic `xref … trailer << >>` or an `n g obj << >> stream`.
fn read_xref_section(bytes: &[u8], offset: usize) -> Option<XrefSection> {
    let mut lexer = Lexer::new(bytes, offset);
    match lexer.next_token()? {
        Token::Keyword(b"xref") => {
            // Subsections: `start count`, then `count` entries of `offset generation f|n`.
            let mut section = XrefSection::default();
            loop {
                let start = match lexer.next_token()? {
                    Token::Keyword(b"trailer") => break,
                    Token::Int(start) => u64::try_from(start).ok()?,
                    _ => return None,
                };
                let Token::Int(count) = lexer.next_token()? else {
                    return None;
                };
                let count = u64::try_from(count).ok()?;
                let first_entry = lexer.pos;
                // The count is untrusted: the loop ends at the first token that is not an
                // entry, so it is bounded by the file, not by the number.
                for _ in 0..count {
                    let (Token::Int(_), Token::Int(_)) = (lexer.next_token()?, lexer.next_token()?)
                    else {
                        return None;
                    };
                    match lexer.next_token()? {
                        Token::Keyword(b"n") => section.entries += 1,
                        Token::Keyword(b"f") => {}
                        _ => return None,
                    }
                }
                // `first_entry` sits just before the EOL that precedes the first entry.
                let mut entries = Lexer::new(lexer.bytes, first_entry);
                while entries.peek().is_some_and(is_white) {
                    entries.pos += 1;
                }
                section.subsections.push((start, count, entries.pos));
            }
            read_dict(&mut lexer, &mut section)?;
            Some(section)
        }
        Token::Int(_) => {
            if !matches!(lexer.next_token()?, Token::Int(_))
                || lexer.next_token()? != Token::Keyword(b"obj")
            {
                return None;
            }
            let mut section = XrefSection::default();
            read_dict(&mut lexer, &mut section)?;
            if lexer.next_token()? != Token::Keyword(b"stream") {
                return None;
            }
            section.stream_data = Some(lexer.stream_data_start());
            section.filter.get_or_insert(Filter::None);
            Some(section)
        }
        _ => None,
    }
}

/// Reads a top-level dictionary, noting `/Prev`, `/XRefStm`, `/Encrypt` and the filter.
fn read_dict(lexer: &mut Lexer<'_>, section: &mut XrefSection) -> Option<()> {
    if lexer.next_token()? != Token::DictOpen {
        return None;
    }
    loop {
        let key = match lexer.next_token()? {
            Token::DictClose => return Some(()),
            Token::Name(key) => key,
            _ => return None,
        };
        let first = lexer.next_token()?;
        let value_start = lexer.pos;
        let filter = skip_value(lexer, first)?;
        if name_is(key, b"W") && first == Token::ArrayOpen {
            let mut widths = Lexer::new(&lexer.bytes[..lexer.pos], value_start);
            while let Some(token) = widths.next_token() {
                if let Token::Int(w) = token {
                    section.row_width += u64::try_from(w).unwrap_or(0);
                }
            }
        }
        // An integer may start a reference, `n g R`.
        let is_reference = matches!(first, Token::Int(_)) && {
            let save = lexer.pos;
            let reference = matches!(lexer.next_token(), Some(Token::Int(_)))
                && lexer.next_token() == Some(Token::Keyword(b"R"));
            if !reference {
                lexer.pos = save;
            }
            reference
        };
        if name_is(key, b"Length") && !is_reference {
            if let Token::Int(n) = first {
                section.length = u64::try_from(n).ok();
            }
        } else if name_is(key, b"Root") && is_reference {
            if let Token::Int(n) = first {
                section.root = u32::try_from(n).ok();
            }
        } else if name_is(key, b"Encrypt") {
            section.encrypted = true;
        } else if name_is(key, b"Filter") {
            section.filter = Some(filter.unwrap_or(Filter::Unsupported));
        } else if name_is(key, b"Prev") || name_is(key, b"XRefStm") {
            // `lopdf` follows direct integers only (and fails on negative ones).
            if let (Token::Int(n), false) = (first, is_reference) {
                section.links.push(usize::try_from(n).ok()?);
            }
        }
    }
}

/// Skips the rest of a value that started with `first`; for a name or an array of names,
/// returns what it says as a filter.
fn skip_value(lexer: &mut Lexer<'_>, first: Token<'_>) -> Option<Option<Filter>> {
    let flate_or_not = |n: &[u8]| {
        if name_is(n, b"FlateDecode") {
            Filter::Flate
        } else {
            Filter::Unsupported
        }
    };
    let mut filter = match first {
        Token::Name(n) => Some(flate_or_not(n)),
        _ => None,
    };
    let mut depth = usize::from(matches!(first, Token::DictOpen | Token::ArrayOpen));
    let mut names = 0;
    while depth > 0 {
        match lexer.next_token()? {
            Token::DictOpen | Token::ArrayOpen => depth += 1,
            Token::DictClose | Token::ArrayClose => depth -= 1,
            Token::Name(n) => {
                names += 1;
                // A chain of several filters is more than the caps are written for.
                filter = Some(if names == 1 {
                    flate_or_not(n)
                } else {
                    Filter::Unsupported
                });
            }
            _ => {}
        }
        if depth > MAX_NESTING {
            return None;
        }
    }
    Some(filter)
}

thread_local! {
    /// Inflate budget left for the object streams of the document being loaded on this
    /// thread; `None` when no inspection runs here (then only the per-stream cap applies).
    static OBJECT_STREAM_BUDGET: Cell<Option<u64>> = const { Cell::new(None) };
    /// Why the filter dropped an object stream, for the error message.
    static REJECTED: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Sets the per-document budget for the duration of one `lopdf` load on this thread.
pub(super) struct ObjectStreamScope(());

impl ObjectStreamScope {
    pub(super) fn enter() -> Self {
        OBJECT_STREAM_BUDGET.with(|b| b.set(Some(MAX_OBJECT_STREAMS_TOTAL)));
        REJECTED.with(|r| r.set(None));
        Self(())
    }

    /// Why an object stream was refused during the load, if one was.
    pub(super) fn rejection(&self) -> Option<InspectError> {
        REJECTED.with(Cell::get).map(|reason| match reason {
            "too large" => InspectError::too_large("the PDF's object streams expand too far"),
            other => InspectError::unreadable(format!("the PDF is corrupt ({other})")),
        })
    }
}

impl Drop for ObjectStreamScope {
    fn drop(&mut self) {
        OBJECT_STREAM_BUDGET.with(|b| b.set(None));
        REJECTED.with(|r| r.set(None));
    }
}

/// The `lopdf` load filter: lets every object through except an object stream that inflates
/// too far, uses an unsupported encoding, or nests too deeply; that one is dropped (so the
/// objects inside it go missing and the page check fails) and the reason recorded.
pub(super) fn guard_object_stream(
    id: lopdf::ObjectId,
    object: &mut lopdf::Object,
) -> Option<(lopdf::ObjectId, lopdf::Object)> {
    // `lopdf` keeps using its own copy of a top-level object and only looks at whether we
    // returned `Some`; for objects inside an object stream it keeps what we return. Streams
    // only ever appear at top level, so they need no (costly) copy.
    match object {
        lopdf::Object::Stream(stream) => {
            if stream.dict.has_type(b"ObjStm") {
                if let Err(reason) = check_object_stream(stream) {
                    REJECTED.with(|r| {
                        if r.get().is_none() {
                            r.set(Some(reason));
                        }
                    });
                    return None;
                }
            }
            Some((id, lopdf::Object::Null))
        }
        other => Some((id, other.clone())),
    }
}

fn check_object_stream(stream: &lopdf::Stream) -> Result<(), &'static str> {
    use lopdf::Object;
    let filter = match stream.dict.get(b"Filter") {
        Err(_) => Filter::None,
        Ok(Object::Name(n)) if n == b"FlateDecode" => Filter::Flate,
        Ok(Object::Array(a))
            if a.len() == 1 && a[0].as_name().is_ok_and(|n| n == b"FlateDecode") =>
        {
            Filter::Flate
        }
        Ok(_) => Filter::Unsupported,
    };
    // A predictor could turn innocent inflated bytes into deep nesting after our check.
    let predictor = stream
        .dict
        .get(b"DecodeParms")
        .ok()
        .and_then(|p| p.as_dict().ok())
        .and_then(|p| p.get(b"Predictor").ok())
        .and_then(|p| p.as_i64().ok())
        .unwrap_or(1);
    if filter == Filter::Unsupported || predictor > 1 {
        return Err("unsupported object stream encoding");
    }
    let budget = OBJECT_STREAM_BUDGET.with(Cell::get);
    let cap = budget.map_or(MAX_OBJECT_STREAM, |b| b.min(MAX_OBJECT_STREAM));
    let mut depth = NestingCounter::default();
    let used = match filter {
        Filter::Flate => {
            inflate_into(&stream.content, cap, |chunk| depth.feed(chunk)).map_err(|e| match e {
                InflateError::TooLarge => "too large",
                InflateError::Corrupt => "damaged object stream",
            })?
        }
        _ => {
            depth.feed(&stream.content);
            stream.content.len() as u64
        }
    };
    if let Some(b) = budget {
        OBJECT_STREAM_BUDGET.with(|cell| cell.set(Some(b.saturating_sub(used))));
    }
    if depth.too_deep {
        return Err("structures nested too deeply");
    }
    Ok(())
}

/// Nesting depth over a stream of chunks. Object streams hold no stream data, so brackets,
/// strings and names are all that matter; a string or name split across chunks is only
/// approximated, which can cost a few levels of slack, never a missed bomb of depth 64.
#[derive(Default)]
struct NestingCounter {
    depth: usize,
    in_string: usize,
    escape: bool,
    pending_angle: Option<u8>,
    in_hex: bool,
    too_deep: bool,
}

impl NestingCounter {
    fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.in_string > 0 {
                match (self.escape, b) {
                    (true, _) => self.escape = false,
                    (false, b'\\') => self.escape = true,
                    (false, b'(') => self.in_string += 1,
                    (false, b')') => self.in_string -= 1,
                    _ => {}
                }
                continue;
            }
            if self.in_hex {
                self.in_hex = b != b'>';
                continue;
            }
            match (self.pending_angle.take(), b) {
                (Some(b'<'), b'<') => self.open(),
                (Some(b'>'), b'>') => self.depth = self.depth.saturating_sub(1),
                (Some(b'<'), _) => {
                    self.in_hex = b != b'>';
                    continue;
                }
                (pending, b'<' | b'>') if pending.is_none() => self.pending_angle = Some(b),
                (_, b'[') => self.open(),
                (_, b']') => self.depth = self.depth.saturating_sub(1),
                (_, b'(') => self.in_string = 1,
                _ => {}
            }
        }
    }

    fn open(&mut self) {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            self.too_deep = true;
        }
    }
}

enum InflateError {
    TooLarge,
    Corrupt,
}

/// Inflates a zlib stream in fixed-size chunks handed to `sink`, stopping past `cap` bytes.
/// Returns the inflated size. Memory use is constant whatever the stream claims.
fn inflate_into(data: &[u8], cap: u64, mut sink: impl FnMut(&[u8])) -> Result<u64, InflateError> {
    let mut decoder = flate2::read::ZlibDecoder::new(data);
    let mut buf = [0u8; 16 * 1024];
    let mut total = 0u64;
    loop {
        match decoder.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n as u64;
                if total > cap {
                    return Err(InflateError::TooLarge);
                }
                sink(&buf[..n]);
            }
            // A damaged tail after some output is `lopdf`'s to judge; nothing was inflated
            // beyond the cap either way.
            Err(_) if total > 0 => return Ok(total),
            Err(_) => return Err(InflateError::Corrupt),
        }
    }
}

/// The size of a stream's data once decoded.
enum Inflated {
    Bytes(u64),
    /// Not compressed: as long as its `/Length` says.
    Unfiltered,
}

/// Inflates a stream starting at `data` with a cap (or refuses its encoding).
fn inflate_capped(
    bytes: &[u8],
    data: usize,
    filter: Option<Filter>,
    cap: u64,
    what: &str,
) -> Result<Inflated, InspectError> {
    match filter.unwrap_or(Filter::None) {
        Filter::None => Ok(Inflated::Unfiltered),
        Filter::Unsupported => Err(InspectError::unreadable(format!(
            "the PDF uses an unsupported encoding for {what}"
        ))),
        Filter::Flate => match inflate_into(bytes.get(data..).unwrap_or_default(), cap, |_| {}) {
            Ok(n) => Ok(Inflated::Bytes(n)),
            Err(InflateError::TooLarge) => Err(InspectError::too_large(format!(
                "{what} of the PDF expands too far"
            ))),
            Err(InflateError::Corrupt) => Err(InspectError::unreadable(format!(
                "the PDF is corrupt (damaged {what})"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexer_tokens() {
        let src = b"<< /Type /X#52ef /Prev 12 /A [1 0 R (a(b)c\\)) <ab>] >> % c\nstream";
        let mut lexer = Lexer::new(src, 0);
        let mut tokens = Vec::new();
        while let Some(t) = lexer.next_token() {
            tokens.push(t);
        }
        assert_eq!(
            tokens,
            vec![
                Token::DictOpen,
                Token::Name(b"Type"),
                Token::Name(b"X#52ef"),
                Token::Name(b"Prev"),
                Token::Int(12),
                Token::Name(b"A"),
                Token::ArrayOpen,
                Token::Int(1),
                Token::Int(0),
                Token::Keyword(b"R"),
                Token::Other,
                Token::Other,
                Token::ArrayClose,
                Token::DictClose,
                Token::Keyword(b"stream"),
            ]
        );
        assert!(name_is(b"X#52ef", b"XRef"));
        assert!(name_is(b"Pr#65v", b"Prev"));
        assert!(!name_is(b"Prev2", b"Prev"));
        assert!(!name_is(b"Pre", b"Prev"));
    }

    #[test]
    fn nesting_limit_skips_strings_and_streams() {
        let deep = format!("1 0 obj\n{}\nendobj", "[".repeat(MAX_NESTING + 1));
        assert!(check_nesting(deep.as_bytes()).is_err());
        let ok = format!(
            "1 0 obj\n{}{}\nendobj",
            "[".repeat(MAX_NESTING),
            "]".repeat(MAX_NESTING)
        );
        assert!(check_nesting(ok.as_bytes()).is_ok());
        let in_string = format!("1 0 obj ({}) endobj", "[".repeat(1000));
        assert!(check_nesting(in_string.as_bytes()).is_ok());
        let in_stream = format!(
            "1 0 obj << >> stream\n{}\nendstream endobj",
            "[".repeat(1000)
        );
        assert!(check_nesting(in_stream.as_bytes()).is_ok());
    }

    #[test]
    fn declared_pages_through_a_classic_table() {
        for n in [1, 3, 250] {
            let pdf = crate::fixtures::pdf_with_pages(n, "count");
            let facts = check_xref_chain(&pdf).expect("valid chain");
            assert_eq!(facts.declared_pages, Some(i64::from(n)));
            assert_eq!(facts.entries, u64::from(3 + 2 * n));
            assert!(!facts.encrypted);
        }
        let encrypted = check_xref_chain(&crate::fixtures::encrypted_pdf()).expect("chain");
        assert!(encrypted.encrypted);
    }

    #[test]
    fn nesting_counter_over_chunks() {
        let mut c = NestingCounter::default();
        c.feed(b"<< /A [ (])) <5d5d> ] >>");
        assert_eq!(c.depth, 0);
        let mut c = NestingCounter::default();
        for _ in 0..=MAX_NESTING {
            c.feed(b"<");
            c.feed(b"<");
        }
        assert!(c.too_deep);
    }
}
