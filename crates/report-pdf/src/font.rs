//! The report's two embedded faces (DejaVu Sans and DejaVu Sans Bold), what they can draw,
//! and the subset of each that a report embeds.
//!
//! Text is drawn glyph by glyph through the font's `cmap` (no shaping: ligatures, kerning and
//! Arabic joining are not applied, which costs some typographic polish and keeps the renderer
//! free of a shaping engine). A character the face has no glyph for is never dropped silently:
//! [`FontFace::displayable`] spells it as `[U+XXXX]`, so a reader sees that something was there.

use std::collections::BTreeSet;

use ttf_parser::{Face, GlyphId, Tag};

use crate::ReportPdfError;

/// DejaVu Sans 2.37 (Debian's `fonts-dejavu-core`); license in `assets/fonts/LICENSE`.
static SANS: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
/// DejaVu Sans Bold 2.37.
static SANS_BOLD: &[u8] = include_bytes!("../assets/fonts/DejaVuSans-Bold.ttf");

/// Which face a piece of text is set in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Weight {
    /// DejaVu Sans.
    Regular,
    /// DejaVu Sans Bold.
    Bold,
}

/// One parsed face.
pub(crate) struct FontFace {
    /// PostScript name, used (with a subset tag) as the PDF `BaseFont`.
    pub(crate) postscript_name: &'static str,
    face: Face<'static>,
    units_per_em: f32,
}

impl std::fmt::Debug for FontFace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FontFace")
            .field("postscript_name", &self.postscript_name)
            .finish_non_exhaustive()
    }
}

/// Both faces, parsed once per report.
#[derive(Debug)]
pub(crate) struct Fonts {
    regular: FontFace,
    bold: FontFace,
}

impl Fonts {
    /// Parses the embedded faces.
    pub(crate) fn load() -> Result<Self, ReportPdfError> {
        Ok(Self {
            regular: FontFace::parse("DejaVuSans", SANS)?,
            bold: FontFace::parse("DejaVuSans-Bold", SANS_BOLD)?,
        })
    }

    /// The face of `weight`.
    pub(crate) fn face(&self, weight: Weight) -> &FontFace {
        match weight {
            Weight::Regular => &self.regular,
            Weight::Bold => &self.bold,
        }
    }
}

/// Characters that are invisible by definition (zero-width joiners and spaces, variation
/// selectors, the byte-order mark, the soft hyphen): dropped rather than drawn.
fn is_ignorable(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200D}'
        | '\u{2060}'..='\u{2064}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{E0100}'..='\u{E01EF}')
}

/// Bidirectional formatting characters. Shown as `[U+XXXX]` instead of being obeyed: in a
/// file name or a reference they are a known way to disguise text (`invoice\u{202E}fdp.exe`),
/// and the report lays out direction itself.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

impl FontFace {
    fn parse(postscript_name: &'static str, data: &'static [u8]) -> Result<Self, ReportPdfError> {
        let face = Face::parse(data, 0)
            .map_err(|e| ReportPdfError::Font(format!("{postscript_name}: {e}")))?;
        Ok(Self {
            postscript_name,
            units_per_em: f32::from(face.units_per_em()),
            face,
        })
    }

    /// The glyph drawing `c`, if the face has one.
    pub(crate) fn glyph(&self, c: char) -> Option<u16> {
        self.face.glyph_index(c).map(|g| g.0)
    }

    /// Advance width of `glyph` in thousandths of the font size (PDF glyph space).
    pub(crate) fn advance(&self, glyph: u16) -> f32 {
        f32::from(self.face.glyph_hor_advance(GlyphId(glyph)).unwrap_or(0)) * 1000.0
            / self.units_per_em
    }

    /// Width of `text` (already [`displayable`](Self::displayable)) at `size` points.
    pub(crate) fn width(&self, text: &str, size: f32) -> f32 {
        text.chars()
            .map(|c| self.glyph(c).map_or(0.0, |g| self.advance(g)))
            .sum::<f32>()
            * size
            / 1000.0
    }

    /// `text` with every character this face can draw kept, invisible format characters
    /// dropped, tabs as spaces, and everything else (controls, bidi overrides, characters
    /// without a glyph such as most emoji and CJK) spelled `[U+XXXX]`. Line breaks are kept
    /// for the caller to split paragraphs on.
    pub(crate) fn displayable(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => {
                    // CR LF and a lone CR are both one line break.
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    out.push('\n');
                }
                '\n' => out.push('\n'),
                '\t' => out.push(' '),
                c if is_ignorable(c) => {}
                c if c.is_control() || is_bidi_control(c) || self.glyph(c).is_none() => {
                    out.push_str(&format!("[U+{:04X}]", u32::from(c)));
                }
                c => out.push(c),
            }
        }
        out
    }

    /// Ascent, descent, cap height and bounding box in PDF glyph space (thousandths of an em).
    pub(crate) fn metrics(&self) -> FaceMetrics {
        let scale = |v: i16| f32::from(v) * 1000.0 / self.units_per_em;
        let bbox = self.face.global_bounding_box();
        FaceMetrics {
            ascent: scale(self.face.ascender()),
            descent: scale(self.face.descender()),
            cap_height: scale(self.face.capital_height().unwrap_or(self.face.ascender())),
            bbox: [
                scale(bbox.x_min),
                scale(bbox.y_min),
                scale(bbox.x_max),
                scale(bbox.y_max),
            ],
        }
    }

    /// A TrueType font holding only the glyphs in `used` (plus `.notdef` and the components
    /// of composite glyphs), with every glyph id unchanged: the outlines of unused glyphs are
    /// emptied rather than removed, so the PDF can keep the identity CID-to-glyph map. A
    /// report typically embeds 20–60 KB instead of the face's 700 KB.
    pub(crate) fn subset(&self, used: &BTreeSet<u16>) -> Result<Vec<u8>, ReportPdfError> {
        let table = |tag: &[u8; 4]| {
            self.face
                .raw_face()
                .table(Tag::from_bytes(tag))
                .ok_or_else(|| {
                    ReportPdfError::Font(format!(
                        "{}: no {} table",
                        self.postscript_name,
                        String::from_utf8_lossy(tag)
                    ))
                })
        };
        let head = table(b"head")?;
        let loca = table(b"loca")?;
        let glyf = table(b"glyf")?;
        let glyphs = self.face.number_of_glyphs();
        let long_loca = read_i16(head, 50)? == 1;
        let location = |gid: u16| -> Result<(usize, usize), ReportPdfError> {
            let i = usize::from(gid);
            let (start, end) = if long_loca {
                (
                    read_u32(loca, i * 4)? as usize,
                    read_u32(loca, i * 4 + 4)? as usize,
                )
            } else {
                (
                    usize::from(read_u16(loca, i * 2)?) * 2,
                    usize::from(read_u16(loca, i * 2 + 2)?) * 2,
                )
            };
            if start > end || end > glyf.len() {
                return Err(ReportPdfError::Font(format!("glyph {gid}: bad location")));
            }
            Ok((start, end))
        };

        // Close the set over composite glyphs' components.
        let mut keep: BTreeSet<u16> = used.iter().copied().filter(|g| *g < glyphs).collect();
        keep.insert(0);
        let mut pending: Vec<u16> = keep.iter().copied().collect();
        while let Some(gid) = pending.pop() {
            let (start, end) = location(gid)?;
            for component in components(&glyf[start..end])? {
                if component < glyphs && keep.insert(component) {
                    pending.push(component);
                }
            }
        }

        let mut new_glyf = Vec::new();
        let mut new_loca = Vec::with_capacity((usize::from(glyphs) + 1) * 4);
        for gid in 0..glyphs {
            new_loca.extend_from_slice(&(new_glyf.len() as u32).to_be_bytes());
            if keep.contains(&gid) {
                let (start, end) = location(gid)?;
                new_glyf.extend_from_slice(&glyf[start..end]);
                while new_glyf.len() % 4 != 0 {
                    new_glyf.push(0);
                }
            }
        }
        new_loca.extend_from_slice(&(new_glyf.len() as u32).to_be_bytes());
        let mut new_head = head.to_vec();
        // Long offsets, and a zero checksum adjustment until the whole font is summed.
        new_head
            .get_mut(50..52)
            .ok_or_else(|| ReportPdfError::Font("short head table".into()))?
            .copy_from_slice(&1i16.to_be_bytes());
        new_head
            .get_mut(8..12)
            .ok_or_else(|| ReportPdfError::Font("short head table".into()))?
            .fill(0);

        // What a PDF reader needs to draw a CIDFontType2 (no cmap, names or layout tables).
        let mut tables: Vec<([u8; 4], Vec<u8>)> = vec![(*b"glyf", new_glyf), (*b"head", new_head)];
        tables.push((*b"loca", new_loca));
        for tag in [
            b"OS/2", b"cvt ", b"fpgm", b"hhea", b"hmtx", b"maxp", b"prep",
        ] {
            if let Some(data) = self.face.raw_face().table(Tag::from_bytes(tag)) {
                tables.push((*tag, data.to_vec()));
            }
        }
        tables.sort_by_key(|t| t.0);
        let mut font = sfnt(&tables);
        // head.checkSumAdjustment makes the whole font sum to the magic number.
        let adjustment = 0xB1B0_AFBAu32.wrapping_sub(checksum(&font));
        let head_offset = head_table_offset(&tables);
        font.get_mut(head_offset + 8..head_offset + 12)
            .ok_or_else(|| ReportPdfError::Font("head table out of place".into()))?
            .copy_from_slice(&adjustment.to_be_bytes());
        Ok(font)
    }
}

/// Face-wide metrics in PDF glyph space.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FaceMetrics {
    pub(crate) ascent: f32,
    pub(crate) descent: f32,
    pub(crate) cap_height: f32,
    pub(crate) bbox: [f32; 4],
}

fn short(what: &str) -> ReportPdfError {
    ReportPdfError::Font(format!("truncated {what}"))
}

fn read_u16(data: &[u8], at: usize) -> Result<u16, ReportPdfError> {
    data.get(at..at + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
        .ok_or_else(|| short("u16"))
}

fn read_i16(data: &[u8], at: usize) -> Result<i16, ReportPdfError> {
    read_u16(data, at).map(|v| v as i16)
}

fn read_u32(data: &[u8], at: usize) -> Result<u32, ReportPdfError> {
    data.get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| short("u32"))
}

/// The glyph ids a composite glyph is built from (none for a simple or empty glyph).
fn components(glyph: &[u8]) -> Result<Vec<u16>, ReportPdfError> {
    const ARG_1_AND_2_ARE_WORDS: u16 = 0x0001;
    const WE_HAVE_A_SCALE: u16 = 0x0008;
    const MORE_COMPONENTS: u16 = 0x0020;
    const WE_HAVE_AN_X_AND_Y_SCALE: u16 = 0x0040;
    const WE_HAVE_A_TWO_BY_TWO: u16 = 0x0080;
    if glyph.is_empty() || read_i16(glyph, 0)? >= 0 {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut at = 10;
    loop {
        let flags = read_u16(glyph, at)?;
        out.push(read_u16(glyph, at + 2)?);
        at += 4;
        at += if flags & ARG_1_AND_2_ARE_WORDS != 0 {
            4
        } else {
            2
        };
        if flags & WE_HAVE_A_SCALE != 0 {
            at += 2;
        } else if flags & WE_HAVE_AN_X_AND_Y_SCALE != 0 {
            at += 4;
        } else if flags & WE_HAVE_A_TWO_BY_TWO != 0 {
            at += 8;
        }
        if flags & MORE_COMPONENTS == 0 {
            return Ok(out);
        }
    }
}

/// The OpenType checksum: the sum of big-endian u32 words, zero-padded.
fn checksum(data: &[u8]) -> u32 {
    data.chunks(4).fold(0u32, |sum, chunk| {
        let mut word = [0u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        sum.wrapping_add(u32::from_be_bytes(word))
    })
}

fn table_directory_len(tables: usize) -> usize {
    12 + 16 * tables
}

fn head_table_offset(tables: &[([u8; 4], Vec<u8>)]) -> usize {
    let mut offset = table_directory_len(tables.len());
    for (tag, data) in tables {
        if tag == b"head" {
            return offset;
        }
        offset += data.len().div_ceil(4) * 4;
    }
    0
}

/// Serializes `tables` (sorted by tag) as a TrueType font file.
fn sfnt(tables: &[([u8; 4], Vec<u8>)]) -> Vec<u8> {
    let count = tables.len() as u16;
    let mut power = 1u16;
    let mut log = 0u16;
    while power * 2 <= count {
        power *= 2;
        log += 1;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&0x0001_0000u32.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&(power * 16).to_be_bytes());
    out.extend_from_slice(&log.to_be_bytes());
    out.extend_from_slice(&(count * 16 - power * 16).to_be_bytes());
    let mut offset = table_directory_len(tables.len());
    for (tag, data) in tables {
        out.extend_from_slice(tag);
        out.extend_from_slice(&checksum(data).to_be_bytes());
        out.extend_from_slice(&(offset as u32).to_be_bytes());
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        offset += data.len().div_ceil(4) * 4;
    }
    for (_, data) in tables {
        out.extend_from_slice(data);
        while out.len() % 4 != 0 {
            out.push(0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_control_characters_are_spelled_out_and_invisible_ones_dropped() {
        let fonts = Fonts::load().expect("embedded fonts parse");
        let face = fonts.face(Weight::Regular);
        assert_eq!(face.displayable("a\tb\r\nc\rd"), "a b\nc\nd");
        assert_eq!(face.displayable("x\u{0}y\u{7}"), "x[U+0000]y[U+0007]");
        assert_eq!(face.displayable("🚀 中"), "[U+1F680] [U+4E2D]");
        assert_eq!(face.displayable("😀\u{FE0F}\u{200D}"), "😀");
        assert_eq!(face.displayable("a\u{202E}b"), "a[U+202E]b");
        assert_eq!(face.displayable("שלום Ж ł €"), "שלום Ж ł €");
    }

    #[test]
    fn a_subset_is_a_parseable_font_that_keeps_the_glyphs_used() {
        let fonts = Fonts::load().expect("embedded fonts parse");
        let face = fonts.face(Weight::Regular);
        // 'Ä' and 'é' are composite glyphs in DejaVu ('A' and 'e' plus a mark): their
        // components must come along although no text uses them alone.
        let used: BTreeSet<u16> = "Äé€😀".chars().filter_map(|c| face.glyph(c)).collect();
        let subset = face.subset(&used).expect("subset");
        assert!(
            subset.len() < face.face.raw_face().data.len() / 5,
            "{} bytes",
            subset.len()
        );
        let parsed = Face::parse(&subset, 0).expect("subset parses");
        assert_eq!(parsed.number_of_glyphs(), face.face.number_of_glyphs());
        for gid in &used {
            assert!(
                parsed.outline_glyph(GlyphId(*gid), &mut NullSink).is_some(),
                "glyph {gid} lost its outline"
            );
        }
        for component in ['A', 'e'] {
            let gid = face.glyph(component).expect("glyph");
            assert!(!used.contains(&gid));
            assert!(
                parsed.outline_glyph(GlyphId(gid), &mut NullSink).is_some(),
                "component {component} was dropped"
            );
        }
        let unused = face.glyph('Z').expect("Z");
        assert!(parsed
            .outline_glyph(GlyphId(unused), &mut NullSink)
            .is_none());
        assert_eq!(checksum(&subset), 0xB1B0_AFBA);
    }

    struct NullSink;
    impl ttf_parser::OutlineBuilder for NullSink {
        fn move_to(&mut self, _: f32, _: f32) {}
        fn line_to(&mut self, _: f32, _: f32) {}
        fn quad_to(&mut self, _: f32, _: f32, _: f32, _: f32) {}
        fn curve_to(&mut self, _: f32, _: f32, _: f32, _: f32, _: f32, _: f32) {}
        fn close(&mut self) {}
    }
}
