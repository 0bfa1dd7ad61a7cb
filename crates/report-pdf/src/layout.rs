//! A small page-layout engine for the report: wrapped paragraphs, label/value blocks and
//! tables whose rows may run over several pages, on A4 with a running header and
//! "Page i of n" footers; then the PDF itself, written with `pdf-writer`.
//!
//! Layout happens first, into a list of positioned items per page, and the PDF is written
//! afterwards: the page count must be known before the first footer is drawn, and the fonts
//! are embedded with only the glyphs the pages use.
//!
//! All text arrives as plain strings and leaves as glyph ids, so no user text is ever
//! interpreted as PDF syntax. Right-to-left runs are drawn in visual order (Unicode bidi
//! algorithm), which is what text extractors such as `pdftotext` expect and reverse; an
//! `/ActualText` with the logical text made poppler reverse it a second time.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use pdf_writer::types::{CidFontType, FontFlags, SystemInfo, UnicodeCmap};
use pdf_writer::writers::Resources;
use pdf_writer::{Content, Filter, Finish, Name, Pdf, Rect, Ref, Str, TextStr};
use unicode_bidi::BidiInfo;

use crate::font::{Fonts, Weight};
use crate::ReportPdfError;

/// A4 width in points.
pub(crate) const PAGE_WIDTH: f32 = 595.28;
/// A4 height in points.
pub(crate) const PAGE_HEIGHT: f32 = 841.89;
/// Left and right margin.
pub(crate) const MARGIN_X: f32 = 40.0;
/// Where content starts, below the running header.
const CONTENT_TOP: f32 = 54.0;
/// Where content must end, above the footer.
const CONTENT_BOTTOM: f32 = PAGE_HEIGHT - 46.0;
/// Width available to content.
pub(crate) const CONTENT_WIDTH: f32 = PAGE_WIDTH - 2.0 * MARGIN_X;
/// Line height as a multiple of the font size.
const LEADING: f32 = 1.3;
/// Padding inside a table cell.
const CELL_PAD: f32 = 3.0;

/// An RGB colour, components in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rgb(pub f32, pub f32, pub f32);

impl Rgb {
    pub(crate) const BLACK: Rgb = Rgb(0.0, 0.0, 0.0);
    pub(crate) const GREY: Rgb = Rgb(0.38, 0.38, 0.4);
    pub(crate) const RULE: Rgb = Rgb(0.78, 0.78, 0.8);
    pub(crate) const SHADE: Rgb = Rgb(0.92, 0.93, 0.95);
    pub(crate) const STRIPE: Rgb = Rgb(0.975, 0.975, 0.98);
    pub(crate) const GREEN: Rgb = Rgb(0.05, 0.45, 0.2);
    pub(crate) const RED: Rgb = Rgb(0.75, 0.1, 0.1);
    pub(crate) const AMBER: Rgb = Rgb(0.7, 0.42, 0.0);
}

/// How a piece of text is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Style {
    pub(crate) weight: Weight,
    pub(crate) size: f32,
    pub(crate) color: Rgb,
}

impl Style {
    pub(crate) const fn regular(size: f32) -> Self {
        Self {
            weight: Weight::Regular,
            size,
            color: Rgb::BLACK,
        }
    }

    pub(crate) const fn bold(size: f32) -> Self {
        Self {
            weight: Weight::Bold,
            size,
            color: Rgb::BLACK,
        }
    }

    pub(crate) const fn with_color(self, color: Rgb) -> Self {
        Self { color, ..self }
    }

    fn line_height(self) -> f32 {
        self.size * LEADING
    }
}

/// One table cell: text (may hold line breaks) and, optionally, its own style.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub(crate) text: String,
    pub(crate) style: Option<Style>,
}

impl Cell {
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            style: None,
        }
    }

    pub(crate) fn styled(text: impl Into<String>, style: Style) -> Self {
        Self {
            text: text.into(),
            style: Some(style),
        }
    }
}

/// A table column: its title and its share of the content width.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column {
    pub(crate) title: &'static str,
    pub(crate) share: f32,
}

pub(crate) const fn col(title: &'static str, share: f32) -> Column {
    Column { title, share }
}

/// Something drawn on a page; `y` is measured from the top of the page.
#[derive(Debug, Clone)]
enum Item {
    Text {
        x: f32,
        baseline: f32,
        style: Style,
        glyphs: Vec<u16>,
    },
    Fill {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        color: Rgb,
    },
    Rule {
        x0: f32,
        x1: f32,
        y: f32,
        width: f32,
        color: Rgb,
    },
}

/// A document being laid out.
pub(crate) struct Doc<'f> {
    fonts: &'f Fonts,
    pages: Vec<Vec<Item>>,
    /// Current position from the top of the current page.
    y: f32,
    /// Glyphs used per face, with the character each one stands for (for `/ToUnicode`).
    used: BTreeMap<Weight, BTreeMap<u16, char>>,
    /// Running header, drawn on every page.
    header: String,
    /// Left part of the footer.
    footer: String,
}

impl<'f> Doc<'f> {
    /// An empty document whose pages carry `header` at the top and `footer` at the bottom.
    pub(crate) fn new(fonts: &'f Fonts, header: &str, footer: &str) -> Self {
        Self {
            fonts,
            pages: vec![Vec::new()],
            y: CONTENT_TOP,
            used: BTreeMap::new(),
            header: header.to_owned(),
            footer: footer.to_owned(),
        }
    }

    fn new_page(&mut self) {
        self.pages.push(Vec::new());
        self.y = CONTENT_TOP;
    }

    fn room(&self) -> f32 {
        CONTENT_BOTTOM - self.y
    }

    /// Starts a new page unless `height` still fits on this one.
    fn ensure(&mut self, height: f32) {
        if height > self.room() {
            self.new_page();
        }
    }

    fn push(&mut self, item: Item) {
        if let Some(page) = self.pages.last_mut() {
            page.push(item);
        }
    }

    /// Vertical space.
    pub(crate) fn space(&mut self, height: f32) {
        self.y += height;
    }

    /// `text` made drawable by `weight`'s face, wrapped to `width` at `size`: one entry per
    /// line. Words wrap at spaces; a word wider than the line is broken between characters.
    pub(crate) fn wrap(&self, text: &str, style: Style, width: f32) -> Vec<String> {
        let face = self.fonts.face(style.weight);
        let text = face.displayable(text);
        let measure = |s: &str| face.width(s, style.size);
        let space = measure(" ");
        let mut lines = Vec::new();
        for paragraph in text.split('\n') {
            let mut line = String::new();
            let mut line_width = 0.0;
            for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
                let word_width = measure(word);
                if !line.is_empty() && line_width + space + word_width <= width {
                    line.push(' ');
                    line.push_str(word);
                    line_width += space + word_width;
                    continue;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                if word_width <= width {
                    line.push_str(word);
                    line_width = word_width;
                    continue;
                }
                // Too long for any line: break it after punctuation (identifiers, paths,
                // hashes with separators) where it can, else between characters, keeping
                // combining marks (zero advance) with the character before them.
                line_width = 0.0;
                for piece in pieces(word) {
                    let piece_width = measure(piece);
                    if line_width + piece_width <= width {
                        line.push_str(piece);
                        line_width += piece_width;
                        continue;
                    }
                    if !line.is_empty() && piece_width <= width {
                        lines.push(std::mem::take(&mut line));
                        line.push_str(piece);
                        line_width = piece_width;
                        continue;
                    }
                    for c in piece.chars() {
                        let w = face.width(c.encode_utf8(&mut [0; 4]), style.size);
                        if !line.is_empty() && w > 0.0 && line_width + w > width {
                            lines.push(std::mem::take(&mut line));
                            line_width = 0.0;
                        }
                        line.push(c);
                        line_width += w;
                    }
                }
            }
            lines.push(line);
        }
        lines
    }

    /// Draws one line (already wrapped and displayable) with its left edge at `x`.
    fn draw_line(&mut self, x: f32, baseline: f32, line: &str, style: Style) {
        if let Some(item) = self.text_item(x, baseline, line, style) {
            self.push(item);
        }
    }

    /// The item drawing `line`, recording the glyphs it uses; `None` for an empty line.
    fn text_item(&mut self, x: f32, baseline: f32, line: &str, style: Style) -> Option<Item> {
        if line.is_empty() {
            return None;
        }
        let visual = visual_order(line);
        let face = self.fonts.face(style.weight);
        let used = self.used.entry(style.weight).or_default();
        let mut glyphs = Vec::with_capacity(visual.len());
        for c in visual.chars() {
            // `displayable` left only characters the face has.
            if let Some(g) = face.glyph(c) {
                glyphs.push(g);
                used.entry(g).or_insert(c);
            }
        }
        Some(Item::Text {
            x,
            baseline,
            style,
            glyphs,
        })
    }

    fn baseline_offset(&self, style: Style) -> f32 {
        // DejaVu's ascent is about 0.93 em; centre the glyphs in the line box.
        let m = self.fonts.face(style.weight).metrics();
        let glyph_height = (m.ascent - m.descent) * style.size / 1000.0;
        (style.line_height() - glyph_height) / 2.0 + m.ascent * style.size / 1000.0
    }

    /// A paragraph over the full content width; it may run onto the next pages.
    pub(crate) fn paragraph(&mut self, text: &str, style: Style) {
        self.paragraph_at(MARGIN_X, CONTENT_WIDTH, text, style);
    }

    fn paragraph_at(&mut self, x: f32, width: f32, text: &str, style: Style) {
        let offset = self.baseline_offset(style);
        for line in self.wrap(text, style, width) {
            self.ensure(style.line_height());
            self.draw_line(x, self.y + offset, &line, style);
            self.y += style.line_height();
        }
    }

    /// The document title with a rule under it.
    pub(crate) fn title(&mut self, text: &str) {
        self.paragraph(text, Style::bold(17.0));
        self.space(2.0);
        self.push(Item::Rule {
            x0: MARGIN_X,
            x1: MARGIN_X + CONTENT_WIDTH,
            y: self.y,
            width: 1.2,
            color: Rgb::BLACK,
        });
        self.space(8.0);
    }

    /// A section heading, kept on the same page as the first lines that follow it.
    pub(crate) fn heading(&mut self, text: &str) {
        let style = Style::bold(12.0);
        self.space(10.0);
        self.ensure(style.line_height() + 60.0);
        self.paragraph(text, style);
        self.push(Item::Rule {
            x0: MARGIN_X,
            x1: MARGIN_X + CONTENT_WIDTH,
            y: self.y + 1.0,
            width: 0.5,
            color: Rgb::RULE,
        });
        self.space(5.0);
    }

    /// A smaller heading (one document, one rule group).
    pub(crate) fn subheading(&mut self, text: &str) {
        let style = Style::bold(10.0);
        self.space(6.0);
        self.ensure(style.line_height() + 40.0);
        self.paragraph(text, style);
        self.space(2.0);
    }

    /// Label/value pairs: labels in a narrow grey column, values wrapped beside them.
    pub(crate) fn fields(&mut self, rows: &[(&str, String)]) {
        let label_style = Style::bold(8.5).with_color(Rgb::GREY);
        let value_style = Style::regular(9.0);
        let label_width = 118.0;
        let value_x = MARGIN_X + label_width;
        let value_width = CONTENT_WIDTH - label_width;
        let lh = value_style.line_height();
        // Label and value share the first line's baseline.
        let offset = self.baseline_offset(value_style);
        for (label, value) in rows {
            let lines = self.wrap(value, value_style, value_width);
            for (i, line) in lines.iter().enumerate() {
                self.ensure(lh);
                if i == 0 {
                    self.draw_line(MARGIN_X, self.y + offset, label, label_style);
                }
                self.draw_line(value_x, self.y + offset, line, value_style);
                self.y += lh;
            }
            self.space(1.5);
        }
    }

    /// A table with a shaded header row (repeated on every page it spans). A row taller than
    /// the room left starts on the next page; a row taller than a page is split between lines.
    pub(crate) fn table(&mut self, columns: &[Column], rows: &[Vec<Cell>]) {
        let base = Style::regular(8.0);
        let lh = base.line_height();
        let total: f32 = columns
            .iter()
            .map(|c| c.share)
            .sum::<f32>()
            .max(f32::EPSILON);
        let widths: Vec<f32> = columns
            .iter()
            .map(|c| c.share / total * CONTENT_WIDTH)
            .collect();
        let header_style = Style::bold(7.5);
        let header_cells: Vec<Vec<String>> = columns
            .iter()
            .zip(&widths)
            .map(|(c, w)| self.wrap(c.title, header_style, w - 2.0 * CELL_PAD))
            .collect();
        let header_lines = header_cells.iter().map(Vec::len).max().unwrap_or(1);
        let header_height = header_lines as f32 * header_style.line_height() + 2.0 * CELL_PAD;

        // Keep the header with at least one line of the first row.
        self.ensure(header_height + lh + 2.0 * CELL_PAD);
        self.table_header(&widths, &header_cells, header_style, header_height);
        for (index, row) in rows.iter().enumerate() {
            let cells: Vec<(Vec<String>, Style)> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| {
                    let style = cell.style.unwrap_or(base);
                    (self.wrap(&cell.text, style, w - 2.0 * CELL_PAD), style)
                })
                .collect();
            let lines = cells.iter().map(|(l, _)| l.len()).max().unwrap_or(1).max(1);
            let height = lines as f32 * lh + 2.0 * CELL_PAD;
            let page_room = CONTENT_BOTTOM - CONTENT_TOP - header_height;
            if height > self.room() && height <= page_room {
                self.new_page();
                self.table_header(&widths, &header_cells, header_style, header_height);
            }
            let mut first = 0;
            while first < lines {
                let fit = ((self.room() - 2.0 * CELL_PAD) / lh).floor();
                if fit < 1.0 {
                    self.new_page();
                    self.table_header(&widths, &header_cells, header_style, header_height);
                    continue;
                }
                let take = (fit as usize).min(lines - first);
                let chunk_height = take as f32 * lh + 2.0 * CELL_PAD;
                if index % 2 == 1 {
                    self.push(Item::Fill {
                        x: MARGIN_X,
                        y: self.y,
                        w: CONTENT_WIDTH,
                        h: chunk_height,
                        color: Rgb::STRIPE,
                    });
                }
                let mut x = MARGIN_X;
                for ((cell_lines, style), w) in cells.iter().zip(&widths) {
                    let offset = self.baseline_offset(*style) + (lh - style.line_height()) / 2.0;
                    for (i, line) in cell_lines.iter().skip(first).take(take).enumerate() {
                        let baseline = self.y + CELL_PAD + i as f32 * lh + offset;
                        self.draw_line(x + CELL_PAD, baseline, line, *style);
                    }
                    x += w;
                }
                self.y += chunk_height;
                self.push(Item::Rule {
                    x0: MARGIN_X,
                    x1: MARGIN_X + CONTENT_WIDTH,
                    y: self.y,
                    width: 0.4,
                    color: Rgb::RULE,
                });
                first += take;
            }
        }
        self.space(4.0);
    }

    fn table_header(&mut self, widths: &[f32], cells: &[Vec<String>], style: Style, height: f32) {
        self.push(Item::Fill {
            x: MARGIN_X,
            y: self.y,
            w: CONTENT_WIDTH,
            h: height,
            color: Rgb::SHADE,
        });
        let offset = self.baseline_offset(style);
        let mut x = MARGIN_X;
        for (lines, w) in cells.iter().zip(widths) {
            for (i, line) in lines.iter().enumerate() {
                let baseline = self.y + CELL_PAD + i as f32 * style.line_height() + offset;
                self.draw_line(x + CELL_PAD, baseline, line, style);
            }
            x += w;
        }
        self.y += height;
    }

    /// `text` cut (with an ellipsis) to fit `width`.
    fn truncated(&self, text: &str, style: Style, width: f32) -> String {
        let face = self.fonts.face(style.weight);
        let text: String = face
            .displayable(text)
            .chars()
            .map(|c| if c == '\n' { ' ' } else { c })
            .collect();
        if face.width(&text, style.size) <= width {
            return text;
        }
        let ellipsis = "…";
        let room = width - face.width(ellipsis, style.size);
        let mut out = String::new();
        let mut used = 0.0;
        for c in text.chars() {
            let w = face.width(c.encode_utf8(&mut [0; 4]), style.size);
            if used + w > room {
                break;
            }
            used += w;
            out.push(c);
        }
        out.push_str(ellipsis);
        out
    }

    /// Adds the running header and the footers, then writes the PDF.
    pub(crate) fn finish(mut self, title: &str) -> Result<Vec<u8>, ReportPdfError> {
        let total = self.pages.len();
        let small = Style::regular(7.5).with_color(Rgb::GREY);
        let header = self.truncated(&self.header.clone(), small, CONTENT_WIDTH);
        let footer_left = self.truncated(&self.footer.clone(), small, CONTENT_WIDTH * 0.7);
        for index in 0..total {
            let page_label = format!("Page {} of {}", index + 1, total);
            let label_width = self.fonts.face(small.weight).width(&page_label, small.size);
            let footer_y = PAGE_HEIGHT - 26.0;
            let mut chrome: Vec<Item> = Vec::new();
            chrome.extend(self.text_item(MARGIN_X, 32.0, &header, small));
            chrome.push(Item::Rule {
                x0: MARGIN_X,
                x1: MARGIN_X + CONTENT_WIDTH,
                y: 38.0,
                width: 0.5,
                color: Rgb::RULE,
            });
            chrome.extend(self.text_item(MARGIN_X, footer_y, &footer_left, small));
            chrome.extend(self.text_item(
                MARGIN_X + CONTENT_WIDTH - label_width,
                footer_y,
                &page_label,
                small,
            ));
            if let Some(page) = self.pages.get_mut(index) {
                chrome.append(page);
                *page = chrome;
            }
        }
        write_pdf(self.fonts, &self.pages, &self.used, title)
    }
}

/// `word` cut after each `_ - / . , ; :` (where a long token may break), pieces in order.
fn pieces(word: &str) -> impl Iterator<Item = &str> {
    word.split_inclusive(['_', '-', '/', '.', ',', ';', ':'])
}

/// The characters of `line` in the order they are drawn left to right (right-to-left runs
/// reversed by the Unicode bidi algorithm, the paragraph direction taken from the line).
fn visual_order(line: &str) -> String {
    let info = BidiInfo::new(line, None);
    if !info.has_rtl() {
        return line.to_owned();
    }
    info.paragraphs
        .iter()
        .map(|p| info.reorder_line(p, p.range.clone()))
        .collect()
}

fn compress(data: &[u8]) -> Result<Vec<u8>, ReportPdfError> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).map_err(ReportPdfError::Compress)?;
    encoder.finish().map_err(ReportPdfError::Compress)
}

/// The resource name of a face.
fn font_name(weight: Weight) -> Name<'static> {
    match weight {
        Weight::Regular => Name(b"F1"),
        Weight::Bold => Name(b"F2"),
    }
}

fn write_pdf(
    fonts: &Fonts,
    pages: &[Vec<Item>],
    used: &BTreeMap<Weight, BTreeMap<u16, char>>,
    title: &str,
) -> Result<Vec<u8>, ReportPdfError> {
    let mut next = 1;
    let mut alloc = || {
        let r = Ref::new(next);
        next += 1;
        r
    };
    let catalog = alloc();
    let tree = alloc();
    let info = alloc();
    let mut pdf = Pdf::new();
    pdf.set_version(1, 7);

    let mut font_refs: Vec<(Weight, Ref)> = Vec::new();
    for (weight, glyphs) in used {
        let face = fonts.face(*weight);
        let (type0, cid, descriptor, file, cmap) = (alloc(), alloc(), alloc(), alloc(), alloc());
        font_refs.push((*weight, type0));
        let gids: BTreeSet<u16> = glyphs.keys().copied().collect();
        // A subset tag derived from the glyphs, as PDF asks for subset fonts.
        let tag: String = {
            let mut h: u32 = 0x811C_9DC5;
            for g in &gids {
                h = (h ^ u32::from(*g)).wrapping_mul(0x0100_0193);
            }
            (0..6)
                .map(|i| char::from(b'A' + ((h >> (i * 5)) % 26) as u8))
                .collect()
        };
        let base = format!("{tag}+{}", face.postscript_name);
        pdf.type0_font(type0)
            .base_font(Name(base.as_bytes()))
            .encoding_predefined(Name(b"Identity-H"))
            .descendant_font(cid)
            .to_unicode(cmap);
        let mut cid_font = pdf.cid_font(cid);
        cid_font
            .subtype(CidFontType::Type2)
            .base_font(Name(base.as_bytes()))
            .system_info(SystemInfo {
                registry: Str(b"Adobe"),
                ordering: Str(b"Identity"),
                supplement: 0,
            })
            .font_descriptor(descriptor)
            .default_width(0.0)
            .cid_to_gid_map_predefined(Name(b"Identity"));
        let mut widths = cid_font.widths();
        for g in &gids {
            widths.consecutive(*g, [face.advance(*g)]);
        }
        widths.finish();
        cid_font.finish();
        let m = face.metrics();
        pdf.font_descriptor(descriptor)
            .name(Name(base.as_bytes()))
            .flags(FontFlags::NON_SYMBOLIC)
            .bbox(Rect::new(m.bbox[0], m.bbox[1], m.bbox[2], m.bbox[3]))
            .italic_angle(0.0)
            .ascent(m.ascent)
            .descent(m.descent)
            .cap_height(m.cap_height)
            .stem_v(if *weight == Weight::Bold { 140.0 } else { 80.0 })
            .font_file2(file);
        let subset = face.subset(&gids)?;
        let packed = compress(&subset)?;
        pdf.stream(file, &packed)
            .filter(Filter::FlateDecode)
            .pair(Name(b"Length1"), subset.len() as i32);
        let mut unicode = UnicodeCmap::new(
            Name(b"Custom"),
            SystemInfo {
                registry: Str(b"Adobe"),
                ordering: Str(b"UCS"),
                supplement: 0,
            },
        );
        for (g, c) in glyphs {
            unicode.pair(*g, *c);
        }
        let cmap_data = compress(&unicode.finish().into_vec())?;
        pdf.stream(cmap, &cmap_data).filter(Filter::FlateDecode);
    }

    let mut page_refs = Vec::with_capacity(pages.len());
    for items in pages {
        let (page, content) = (alloc(), alloc());
        page_refs.push(page);
        let data = compress(&content_stream(items))?;
        pdf.stream(content, &data).filter(Filter::FlateDecode);
        let mut writer = pdf.page(page);
        writer
            .parent(tree)
            .media_box(Rect::new(0.0, 0.0, PAGE_WIDTH, PAGE_HEIGHT))
            .contents(content);
        let mut resources: Resources = writer.resources();
        let mut dict = resources.fonts();
        for (weight, r) in &font_refs {
            dict.pair(font_name(*weight), *r);
        }
        dict.finish();
        resources.finish();
        writer.finish();
    }
    pdf.pages(tree)
        .kids(page_refs.iter().copied())
        .count(page_refs.len() as i32);
    pdf.catalog(catalog).pages(tree);
    pdf.document_info(info)
        .title(TextStr(title))
        .producer(TextStr("Ironclad"));
    Ok(pdf.finish())
}

fn content_stream(items: &[Item]) -> Vec<u8> {
    let mut content = Content::new();
    for item in items {
        match item {
            Item::Fill { x, y, w, h, color } => {
                content
                    .set_fill_rgb(color.0, color.1, color.2)
                    .rect(*x, PAGE_HEIGHT - y - h, *w, *h)
                    .fill_nonzero();
            }
            Item::Rule {
                x0,
                x1,
                y,
                width,
                color,
            } => {
                content
                    .set_stroke_rgb(color.0, color.1, color.2)
                    .set_line_width(*width)
                    .move_to(*x0, PAGE_HEIGHT - y)
                    .line_to(*x1, PAGE_HEIGHT - y)
                    .stroke();
            }
            Item::Text {
                x,
                baseline,
                style,
                glyphs,
            } => {
                let bytes: Vec<u8> = glyphs.iter().flat_map(|g| g.to_be_bytes()).collect();
                content
                    .begin_text()
                    .set_font(font_name(style.weight), style.size)
                    .set_fill_rgb(style.color.0, style.color.1, style.color.2)
                    .set_text_matrix([1.0, 0.0, 0.0, 1.0, *x, PAGE_HEIGHT - baseline])
                    .show(Str(&bytes))
                    .end_text();
            }
        }
    }
    content.finish().into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn without_spaces(s: &str) -> String {
        s.chars().filter(|c| *c != ' ').collect()
    }

    #[test]
    fn wrapping_keeps_every_character_in_order_within_the_width() {
        let fonts = Fonts::load().expect("embedded fonts parse");
        let doc = Doc::new(&fonts, "header", "footer");
        let style = Style::regular(8.0);
        let text = format!(
            "short words, then {} and an_identifier_like_this/path/to/file.pdf שלום עולם 😀",
            "x".repeat(5000)
        );
        let face = fonts.face(Weight::Regular);
        for width in [30.0, 120.0, CONTENT_WIDTH] {
            let lines = doc.wrap(&text, style, width);
            for line in &lines {
                assert!(
                    face.width(line, style.size) <= width + 0.01,
                    "{width}: {line}"
                );
            }
            assert_eq!(without_spaces(&lines.concat()), without_spaces(&text));
        }
        // Identifiers break after their punctuation before breaking between letters.
        let width = face.width("safeguard_low_", style.size) + 1.0;
        let lines = doc.wrap("safeguard_low_confidence", style, width);
        assert_eq!(lines, ["safeguard_low_", "confidence"]);
        // Line breaks in the text are kept; invisible characters do not count.
        assert_eq!(doc.wrap("a\r\nb\u{200B}", style, 100.0), ["a", "b"]);
    }

    #[test]
    fn a_row_taller_than_a_page_continues_on_the_next_pages_inside_the_margins() {
        let fonts = Fonts::load().expect("embedded fonts parse");
        let mut doc = Doc::new(&fonts, "header", "footer");
        doc.paragraph("before", Style::regular(9.0));
        let rows = vec![
            vec![Cell::new("x".repeat(20_000)), Cell::new("short")],
            vec![Cell::new("next row"), Cell::new("y")],
        ];
        doc.table(&[col("Long", 1.0), col("Short", 1.0)], &rows);
        assert!(doc.pages.len() > 2, "{} pages", doc.pages.len());
        for page in &doc.pages {
            for item in page {
                if let Item::Text { baseline, .. } = item {
                    assert!(
                        (CONTENT_TOP..=CONTENT_BOTTOM).contains(baseline),
                        "{baseline}"
                    );
                }
            }
        }
        let pdf = doc.finish("test").expect("written");
        assert!(pdf.starts_with(b"%PDF-1.7"));
        assert!(pdf.ends_with(b"%%EOF") || pdf.ends_with(b"%%EOF\n"));
    }

    #[test]
    fn right_to_left_runs_are_drawn_in_visual_order() {
        assert_eq!(visual_order("abc"), "abc");
        assert_eq!(visual_order("שלום"), "םולש");
        // A number after a right-to-left word belongs to its run (as browsers show it).
        assert_eq!(visual_order("id שלום 42"), "id 42 םולש");
    }
}
