//! PDF pages through poppler's command-line tools: `pdfinfo` for the page count and sizes,
//! `pdftotext -bbox-layout` for the text layer, `pdftoppm -gray` for rendering.
//!
//! Child processes rather than a linked PDF library: poppler is the most tolerant reader in
//! Debian, a crash or hang on a hostile file kills only the child, and the deadline is enforced
//! by killing it. The cost is a process start per call (≈10–20 ms), small next to OCR.

use crate::gray::{parse_pgm, Gray};
use crate::process::{run, RunError};
use crate::text_clean::{is_junk, word_text};
use crate::ReadError;
use ironclad_core::page::{BBox, Word};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A page's size in PDF points (1/72 inch): the larger of its media and crop boxes, so a
/// small crop box cannot hide a huge media box from the pixel check.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PageSize {
    pub width_pt: f64,
    pub height_pt: f64,
}

impl PageSize {
    /// Pixels `pdftoppm -r dpi` produces (it rounds each side up).
    pub fn pixels_at(&self, dpi: u32) -> u64 {
        let (w, h) = self.pixel_dims(dpi);
        w.saturating_mul(h)
    }

    /// Width and height `pdftoppm -r dpi` renders this page at.
    pub fn pixel_dims(&self, dpi: u32) -> (u64, u64) {
        let side = |pt: f64| (pt * f64::from(dpi) / 72.0).ceil().clamp(0.0, 1e12) as u64;
        (side(self.width_pt), side(self.height_pt))
    }
}

/// What `pdfinfo` says about a document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PdfInfo {
    pub pages: u32,
    /// Sizes of pages 1..=min(pages, asked), in order; `None` where pdfinfo printed none.
    pub sizes: Vec<Option<PageSize>>,
}

/// Runs `pdfinfo -box` for the page count and the sizes of the first `max_pages` pages.
pub(crate) fn pdf_info(
    path: &Path,
    max_pages: u32,
    timeout: Duration,
) -> Result<PdfInfo, ReadError> {
    let mut cmd = Command::new("pdfinfo");
    cmd.arg("-box")
        .arg("-f")
        .arg("1")
        .arg("-l")
        .arg(max_pages.max(1).to_string())
        .arg(path_arg(path).as_ref());
    let out = run(cmd, timeout, 4 << 20).map_err(|e| child_error("pdfinfo", "", e))?;
    let info = parse_pdfinfo(&String::from_utf8_lossy(&out)).ok_or_else(|| {
        ReadError::Terminal("pdfinfo could not read the document's page count".into())
    })?;
    Ok(info)
}

/// Parses pdfinfo's output. Metadata values (title, author…) are printed before the page
/// lines and may contain anything, including forged "Pages:" lines, so the last occurrence
/// of every key wins.
fn parse_pdfinfo(text: &str) -> Option<PdfInfo> {
    let mut pages = None;
    let mut sizes: Vec<Option<PageSize>> = Vec::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("Pages:") {
            pages = v.trim().parse::<u32>().ok();
            continue;
        }
        let Some(rest) = line.strip_prefix("Page ") else {
            continue;
        };
        let rest = rest.trim_start();
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let Ok(n) = rest[..digits].parse::<usize>() else {
            continue;
        };
        let rest = rest[digits..].trim_start();
        let dims = if let Some(v) = rest.strip_prefix("size:") {
            // "612 x 792 pts (letter)"
            let mut it = v.split_whitespace();
            let w = it.next().and_then(|s| s.parse::<f64>().ok());
            let _x = it.next();
            let h = it.next().and_then(|s| s.parse::<f64>().ok());
            w.zip(h)
        } else if let Some(v) = rest
            .strip_prefix("MediaBox:")
            .or_else(|| rest.strip_prefix("CropBox:"))
        {
            // "x0 y0 x1 y1"
            let nums: Vec<f64> = v
                .split_whitespace()
                .filter_map(|s| s.parse().ok())
                .collect();
            (nums.len() == 4).then(|| ((nums[2] - nums[0]).abs(), (nums[3] - nums[1]).abs()))
        } else {
            None
        };
        let Some((w, h)) = dims else { continue };
        if n == 0 || n > 1_000_000 || !w.is_finite() || !h.is_finite() {
            continue;
        }
        if sizes.len() < n {
            sizes.resize(n, None);
        }
        let slot = &mut sizes[n - 1];
        let prev = slot.unwrap_or(PageSize {
            width_pt: 0.0,
            height_pt: 0.0,
        });
        *slot = Some(PageSize {
            width_pt: prev.width_pt.max(w),
            height_pt: prev.height_pt.max(h),
        });
    }
    Some(PdfInfo {
        pages: pages?,
        sizes,
    })
}

/// A page's text layer: its words in page-relative boxes.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct TextLayer {
    pub words: Vec<Word>,
    /// The page's width and height in points, as pdftotext reports them.
    pub size_pt: Option<[f32; 2]>,
    /// The `<block>` of each line, by line number.
    pub line_blocks: Vec<u32>,
}

impl TextLayer {
    /// Letters and digits in the layer: what decides whether it is "real text".
    pub fn alphanumerics(&self) -> usize {
        self.words
            .iter()
            .map(|w| w.text.chars().filter(|c| c.is_alphanumeric()).count())
            .sum()
    }
}

/// Most bytes one `pdftotext -bbox-layout` run (at most [`TEXT_LAYER_RUN`] pages) may print:
/// a dense page is ≈50–60 KB of XHTML, so this is far above any real run and still bounds what
/// a hostile file can make the reader hold.
const MAX_TEXT_LAYER_OUTPUT: usize = 64 << 20;

/// Pages per `pdftotext` run. Most documents fit in one run; a long one takes one run (and
/// one page timeout) per this many pages, so a 500-page file is not held to one page's time.
pub(crate) const TEXT_LAYER_RUN: u32 = 64;

/// Runs `pdftotext -bbox-layout` once for pages `first..=last` (1-based; fewer when the
/// document is shorter) and returns one layer per page, in order: one process for many pages
/// rather than one per page, because on text PDFs the process start is most of the cost.
pub(crate) fn text_layers(
    path: &Path,
    first: u32,
    last: u32,
    timeout: Duration,
) -> Result<Vec<TextLayer>, ReadError> {
    let mut cmd = Command::new("pdftotext");
    cmd.arg("-bbox-layout")
        .args([
            "-f",
            &first.max(1).to_string(),
            "-l",
            &last.max(1).to_string(),
        ])
        .arg(path_arg(path).as_ref())
        .arg("-");
    let what = format!("pages {first}-{last}");
    let out = run(cmd, timeout, MAX_TEXT_LAYER_OUTPUT).map_err(|e| match e {
        RunError::Timeout => ReadError::Terminal(format!(
            "{what}: reading the text layer took longer than the page timeout"
        )),
        e => child_error("pdftotext", &what, e),
    })?;
    Ok(parse_bbox_layout(&String::from_utf8_lossy(&out)))
}

/// Parses pdftotext's `-bbox-layout` XHTML: one layer per `<page>`, lines numbered from 0 on
/// each page. pdftotext escapes `<`, `>` and `&` in text, so a tag scan is exact; unknown tags
/// are skipped. Words are cleaned (`text_clean`): a `ToUnicode` CMap can map a glyph to a
/// control character, which poppler prints as it is; a word left empty is dropped.
pub(crate) fn parse_bbox_layout(xml: &str) -> Vec<TextLayer> {
    let mut pages: Vec<TextLayer> = Vec::new();
    let (mut page_w, mut page_h) = (0.0f32, 0.0f32);
    let mut line: Option<u32> = None;
    let mut next_line = 0u32;
    let mut block: Option<u32> = None;
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('>') else { break };
        let tag = &rest[..close];
        rest = &rest[close + 1..];
        let name = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("");
        match name {
            "page" => {
                page_w = attr(tag, "width").unwrap_or(0.0);
                page_h = attr(tag, "height").unwrap_or(0.0);
                pages.push(TextLayer {
                    words: Vec::new(),
                    size_pt: (page_w > 0.0 && page_h > 0.0).then_some([page_w, page_h]),
                    line_blocks: Vec::new(),
                });
                line = None;
                next_line = 0;
                block = None;
            }
            "block" => block = Some(block.map_or(0, |b| b + 1)),
            "line" => {
                line = Some(next_line);
                next_line += 1;
                if let Some(page) = pages.last_mut() {
                    page.line_blocks.push(block.unwrap_or(0));
                }
            }
            "word" => {
                let end = rest.find("</word>").unwrap_or(rest.len());
                let text = word_text(&unescape(rest[..end].trim()));
                rest = &rest[end..];
                let Some(page) = pages.last_mut() else {
                    continue;
                };
                if text.is_empty() || page_w <= 0.0 || page_h <= 0.0 {
                    continue;
                }
                let coord = |k: &str| attr(tag, k).unwrap_or(0.0);
                let bbox = BBox {
                    x0: coord("xMin") / page_w,
                    y0: coord("yMin") / page_h,
                    x1: coord("xMax") / page_w,
                    y1: coord("yMax") / page_h,
                }
                .normalized();
                // A word outside any <line> (not seen from pdftotext) gets a line of its own.
                let l = match line {
                    Some(l) => l,
                    None => {
                        // ... in a block of its own.
                        let fresh = page.line_blocks.iter().max().map_or(0, |b| b + 1);
                        page.line_blocks.push(fresh);
                        next_line += 1;
                        next_line - 1
                    }
                };
                page.words.push(Word {
                    text,
                    bbox,
                    confidence: 1.0,
                    line: l,
                });
            }
            _ => {}
        }
    }
    pages
}

fn attr(tag: &str, key: &str) -> Option<f32> {
    let needle = format!(" {key}=\"");
    let start = tag.find(&needle)? + needle.len();
    let len = tag[start..].find('"')?;
    tag[start..start + len].parse().ok()
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..semi];
        let ch = match entity {
            "amp" => Some(Some('&')),
            "lt" => Some(Some('<')),
            "gt" => Some(Some('>')),
            "quot" => Some(Some('"')),
            "apos" => Some(Some('\'')),
            _ => numeric_reference(entity),
        };
        match ch {
            Some(c) => {
                out.extend(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// What the numeric character reference `entity` (`#233` or `#xE9`, without `&` and `;`)
/// stands for: `None` when it is not one (the text is kept as written), `Some(None)` when it is
/// well formed but names nothing a word may hold — U+0000, another control character, a
/// surrogate, a noncharacter, or past U+10FFFF — so it stands for nothing, like the raw
/// character would (see `text_clean`).
fn numeric_reference(entity: &str) -> Option<Option<char>> {
    let (digits, radix) = match entity.strip_prefix("#x") {
        Some(hex) => (hex, 16),
        None => (entity.strip_prefix('#')?, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // Only digits: parsing fails only by overflow, which is past U+10FFFF too.
    Some(
        u32::from_str_radix(digits, radix)
            .ok()
            .and_then(char::from_u32)
            .filter(|&c| !is_junk(c)),
    )
}

/// Renders one page (1-based) to 8-bit grayscale with `pdftoppm`, streaming PGM on stdout.
/// The caller has checked the page's pixel count against the limit; the output cap repeats
/// that check so a size that pdfinfo under-reported still cannot blow up memory.
pub(crate) fn render_page(
    path: &Path,
    page: u32,
    dpi: u32,
    max_pixels: u64,
    timeout: Duration,
) -> Result<Gray, ReadError> {
    let mut cmd = Command::new("pdftoppm");
    cmd.args([
        "-r",
        &dpi.to_string(),
        "-gray",
        "-cropbox",
        "-f",
        &page.to_string(),
        "-l",
        &page.to_string(),
    ])
    .arg(path_arg(path).as_ref());
    let what = format!("page {page}");
    let cap = usize::try_from(max_pixels.saturating_add(64)).unwrap_or(usize::MAX);
    let out = run(cmd, timeout, cap).map_err(|e| match e {
        RunError::TooMuchOutput => ReadError::Terminal(format!(
            "{what}: the rendered page exceeds {max_pixels} pixels"
        )),
        e => child_error("pdftoppm", &what, e),
    })?;
    parse_pgm(&out, max_pixels).map_err(|m| ReadError::Terminal(format!("{what}: {m}")))
}

/// Maps a child failure to the error kinds: a tool that cannot start is the machine's
/// problem (retry later); a tool that fails, hangs or floods on this input is the input's.
/// `what` names the page ("page 3: …") or is empty for the whole document.
fn child_error(tool: &str, what: &str, e: RunError) -> ReadError {
    let prefix = if what.is_empty() {
        String::new()
    } else {
        format!("{what}: ")
    };
    match e {
        RunError::Spawn(e) => ReadError::Retryable(format!("{prefix}could not start {tool}: {e}")),
        RunError::Timeout => ReadError::Terminal(format!(
            "{prefix}{tool} did not finish within the page timeout"
        )),
        RunError::TooMuchOutput => {
            ReadError::Terminal(format!("{prefix}{tool} produced too much output"))
        }
        RunError::Failed(m) if m.contains("Incorrect password") => ReadError::Terminal(format!(
            "{prefix}the PDF is password-protected ({tool}: {m})"
        )),
        RunError::Failed(m) => {
            ReadError::Terminal(format!("{prefix}{tool} could not read the PDF ({m})"))
        }
    }
}

/// The path as an argument no tool can mistake for an option.
fn path_arg(path: &Path) -> std::borrow::Cow<'_, Path> {
    if path.as_os_str().as_encoded_bytes().starts_with(b"-") {
        Path::new(".").join(path).into()
    } else {
        path.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdfinfo_last_occurrence_wins_and_boxes_count() {
        let out = "Title:          x\nPages:          1\nPage    1 size: 1 x 1 pts\n\
                   Pages:           2\n\
                   Page    1 size:  612 x 792 pts (letter)\nPage    1 rot:   0\n\
                   Page    1 MediaBox:      0.00     0.00   612.00   99999.00\n\
                   Page    1 CropBox:       0.00     0.00   612.00   792.00\n\
                   Page    2 size:  100 x 200 pts\n";
        let info = parse_pdfinfo(out).unwrap();
        assert_eq!(info.pages, 2);
        assert_eq!(
            info.sizes,
            vec![
                Some(PageSize {
                    width_pt: 612.0,
                    height_pt: 99999.0
                }),
                Some(PageSize {
                    width_pt: 100.0,
                    height_pt: 200.0
                })
            ]
        );
        assert_eq!(
            PageSize {
                width_pt: 612.0,
                height_pt: 792.0
            }
            .pixels_at(300),
            2550 * 3300
        );
        assert!(parse_pdfinfo("nothing").is_none());
    }

    #[test]
    fn bbox_layout_parses_words_lines_and_entities() {
        let xml = r#"<html><head><meta name="Title" content="a &lt;word&gt;"/></head><body><doc>
  <page width="200.000000" height="100.000000">
    <flow><block xMin="0" yMin="0" xMax="1" yMax="1">
        <line xMin="10" yMin="10" xMax="90" yMax="20">
          <word xMin="10.000000" yMin="10.000000" xMax="50.000000" yMax="20.000000">Fish&amp;Chips</word>
          <word xMin="60" yMin="10" xMax="90" yMax="20">&#233;t&#xe9;</word>
        </line>
        </line></block><block xMin="0" yMin="0" xMax="1" yMax="1">
        <line xMin="10" yMin="30" xMax="90" yMax="40">
          <word xMin="10" yMin="30" xMax="300" yMax="40">42</word>
        </line></block></flow></page></doc></body></html>"#;
        let pages = parse_bbox_layout(xml);
        assert_eq!(pages.len(), 1);
        let layer = &pages[0];
        let texts: Vec<(&str, u32)> = layer
            .words
            .iter()
            .map(|w| (w.text.as_str(), w.line))
            .collect();
        assert_eq!(texts, vec![("Fish&Chips", 0), ("été", 0), ("42", 1)]);
        assert_eq!(
            layer.words[0].bbox,
            BBox {
                x0: 0.05,
                y0: 0.1,
                x1: 0.25,
                y1: 0.2
            }
        );
        assert_eq!(layer.words[2].bbox.x1, 1.0, "clamped");
        assert_eq!(layer.alphanumerics(), 9 + 3 + 2);
        assert_eq!(layer.line_blocks, [0, 1], "each line's block");
    }

    #[test]
    fn bbox_layout_gives_one_layer_per_page_blank_ones_included() {
        let xml = r#"<doc><page width="100" height="100"><flow><block><line>
            <word xMin="10" yMin="10" xMax="20" yMax="20">one</word></line><line>
            <word xMin="10" yMin="30" xMax="20" yMax="40">two</word></line></block></flow></page>
            <page width="100" height="100">
            </page>
            <page width="200" height="100"><flow><block><line>
            <word xMin="20" yMin="10" xMax="40" yMax="20">three</word></line></block></flow></page></doc>"#;
        let pages = parse_bbox_layout(xml);
        let words = |i: usize| -> Vec<(&str, u32)> {
            pages[i]
                .words
                .iter()
                .map(|w| (w.text.as_str(), w.line))
                .collect()
        };
        assert_eq!(pages.len(), 3);
        assert_eq!(words(0), vec![("one", 0), ("two", 1)]);
        assert!(pages[1].words.is_empty());
        assert_eq!(words(2), vec![("three", 0)], "lines restart on each page");
        assert_eq!(
            pages[2].words[0].bbox.x0, 0.1,
            "boxes use their own page's size"
        );
        assert!(parse_bbox_layout("<word>orphan</word>").is_empty());
    }

    #[test]
    fn paths_never_look_like_options() {
        assert_eq!(
            path_arg(Path::new("-h.pdf")).as_ref(),
            Path::new("./-h.pdf")
        );
        assert_eq!(
            path_arg(Path::new("/tmp/-h.pdf")).as_ref(),
            Path::new("/tmp/-h.pdf")
        );
    }

    #[test]
    fn bbox_layout_never_gives_control_characters() {
        // Raw control bytes as poppler prints them, and references as another producer might
        // write them: U+0000 inside a word, a word of nothing but junk (dropped with its box),
        // references to NUL, a surrogate, a noncharacter and past U+10FFFF.
        let xml = "<doc><page width=\"100\" height=\"100\"><flow><block><line>\
            <word xMin=\"1\" yMin=\"1\" xMax=\"9\" yMax=\"9\">Ship\u{0}per</word>\
            <word xMin=\"10\" yMin=\"1\" xMax=\"19\" yMax=\"9\">\u{0}\u{1b}</word>\
            <word xMin=\"20\" yMin=\"1\" xMax=\"29\" yMax=\"9\">&#0;</word>\
            <word xMin=\"30\" yMin=\"1\" xMax=\"39\" yMax=\"9\">A&#x0;B&#1;C\u{7f}</word>\
            <word xMin=\"40\" yMin=\"1\" xMax=\"49\" yMax=\"9\">x&#xD800;y&#xFFFF;z</word>\
            <word xMin=\"50\" yMin=\"1\" xMax=\"59\" yMax=\"9\">&#1114112;&#x110000;</word>\
            <word xMin=\"60\" yMin=\"1\" xMax=\"69\" yMax=\"9\">\u{85}&#9;</word>\
            <word xMin=\"70\" yMin=\"1\" xMax=\"79\" yMax=\"9\">&#233;t&#xE9;</word>\
            </line></block></flow></page></doc>";
        let pages = parse_bbox_layout(xml);
        let words: Vec<(&str, f32)> = pages[0]
            .words
            .iter()
            .map(|w| (w.text.as_str(), w.bbox.x0))
            .collect();
        assert_eq!(
            words,
            vec![("Shipper", 0.01), ("ABC", 0.3), ("xyz", 0.4), ("été", 0.7)]
        );
    }

    #[test]
    fn numeric_references_never_give_junk() {
        for n in [
            0u32, 1, 8, 0x1b, 0x7f, 0x85, 0xd800, 0xdfff, 0xfdd0, 0xfffe, 0xffff,
        ]
        .into_iter()
        .chain([0x10ffff, 0x110000, 99_999_999])
        {
            for reference in [
                format!("&#{n};"),
                format!("&#x{n:X};"),
                format!("&#x{n:x};"),
            ] {
                assert_eq!(unescape(&reference), "", "{reference}");
            }
        }
        assert_eq!(unescape("&#xFFFFFFFF;&#x00000000;&#000000000;"), "");
        // Longer than any real reference: not read as one (and so never a code point).
        assert_eq!(unescape("&#4294967295;"), "&#4294967295;");
        assert_eq!(unescape("&#9;&#10;&#13;"), "\t\n\r");
        assert_eq!(unescape("&#x20AC;&#8364;"), "€€");
    }

    proptest::proptest! {
        #[test]
        fn no_numeric_reference_gives_junk(
            n in proptest::prop_oneof![0u32..0x100, 0u32..0x11_0000, proptest::prelude::any::<u32>()]
        ) {
            for reference in [format!("&#{n};"), format!("&#x{n:x};")] {
                let out = unescape(&reference);
                proptest::prop_assert!(!out.chars().any(crate::text_clean::is_junk), "{} -> {:?}", reference, out);
                if let Some(c) = char::from_u32(n).filter(|&c| !crate::text_clean::is_junk(c)) {
                    proptest::prop_assert_eq!(out, c.to_string());
                }
            }
        }
    }

    #[test]
    fn unescape_is_lenient() {
        // Unknown entities stay as written; a well-formed reference past U+10FFFF names no
        // character and stands for nothing.
        assert_eq!(unescape("a & b &bogus; &#99999999;"), "a & b &bogus; ");
        assert_eq!(
            unescape("&#; &#x; &#1a; &#X41; &#-1;"),
            "&#; &#x; &#1a; &#X41; &#-1;"
        );
    }
}
