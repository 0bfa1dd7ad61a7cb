//! A thin safe wrapper over the Tesseract C API, reached through `leptess::capi`.
//!
//! leptess's own `LepTess` type hides its handle, and it neither passes a progress monitor to
//! `Recognize` (needed for the per-page deadline) nor exposes orientation detection, so this
//! module drives the same C API directly. Images are handed over as raw 8-bit gray rows
//! (`TessBaseAPISetImage`), which costs one copy and no encoding.

use crate::confusables::{self, Glyph};
use crate::gray::Gray;
use crate::prepare::Threshold;
use crate::rule_lines::{BoxInk, RuleProbe};
use crate::text_clean::word_text;
use ironclad_core::page::{BBox, Word};
use leptess::capi;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;
use std::sync::Once;
use std::time::{Duration, Instant};

/// One initialized Tesseract engine.
pub(crate) struct Tess {
    raw: NonNull<capi::TessBaseAPI>,
}

// SAFETY: a TessBaseAPI has no thread affinity; it must only not be used from two threads at
// once, which `&mut self` on every call guarantees.
unsafe impl Send for Tess {}

impl Drop for Tess {
    fn drop(&mut self) {
        // SAFETY: the handle came from TessBaseAPICreate and is deleted exactly once.
        unsafe { capi::TessBaseAPIDelete(self.raw.as_ptr()) }
    }
}

/// Leptonica prints what it refuses (`Error in pixScanForForeground: invalid box` on a speckled
/// page, from inside Tesseract's layout analysis) to stderr, where a user reads it as Ironclad's
/// own failure. They are diagnostics of a page that still reads: sent to the log at debug level
/// instead (target `leptonica`). The handler is process-wide, in the shared library.
fn route_leptonica_messages() {
    static ROUTED: Once = Once::new();
    // SAFETY: the handler is a plain function that lives as long as the process.
    ROUTED.call_once(|| unsafe { capi::leptSetStderrHandler(Some(leptonica_message)) });
}

unsafe extern "C" fn leptonica_message(message: *const c_char) {
    if message.is_null() {
        return;
    }
    // SAFETY: Leptonica passes a NUL-terminated string valid for the call.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    tracing::debug!(target: "leptonica", "{}", text.trim_end());
}

/// How a recognition ended.
pub(crate) enum Recognized {
    /// Words in reading order; empty for a blank page.
    Words(Vec<Word>),
    /// The deadline passed before Tesseract finished.
    TimedOut,
}

impl Tess {
    /// An engine for `languages` ("eng", "eng+fra"), page segmentation mode `psm`, with
    /// Tesseract's diagnostics silenced (they would go to the service's stderr per page).
    pub fn new(
        languages: &str,
        oem: capi::TessOcrEngineMode,
        psm: capi::TessPageSegMode,
    ) -> Result<Tess, String> {
        route_leptonica_messages();
        let lang =
            CString::new(languages).map_err(|_| format!("invalid language list {languages:?}"))?;
        // SAFETY: plain constructor; null means allocation failure.
        let raw = NonNull::new(unsafe { capi::TessBaseAPICreate() })
            .ok_or("Tesseract could not be created")?;
        let mut tess = Tess { raw };
        tess.set("debug_file", "/dev/null");
        // SAFETY: valid handle and NUL-terminated strings; a null datapath means the
        // library's default tessdata directory (or TESSDATA_PREFIX).
        let rc = unsafe {
            capi::TessBaseAPIInit2(tess.raw.as_ptr(), std::ptr::null(), lang.as_ptr(), oem)
        };
        if rc != 0 {
            return Err(format!(
                "Tesseract could not load the language data {languages:?} (is the tesseract-ocr-<lang> package installed?)"
            ));
        }
        tess.set("debug_file", "/dev/null");
        // The legacy fixed-pitch (typewriter) analysis: ≈2–3 % of a page's time, and the LSTM
        // recognizer does not use its result (the 35 benchmark pages read word for word the
        // same without it, measured with the CLI).
        tess.set("textord_disable_pitch_test", "1");
        // SAFETY: valid handle.
        unsafe { capi::TessBaseAPISetPageSegMode(tess.raw.as_ptr(), psm) };
        Ok(tess)
    }

    /// How the next images are segmented: a whole page, one line, one block.
    pub fn set_page_seg_mode(&mut self, psm: capi::TessPageSegMode) {
        // SAFETY: valid handle.
        unsafe { capi::TessBaseAPISetPageSegMode(self.raw.as_ptr(), psm) };
    }

    fn set(&mut self, name: &str, value: &str) {
        if let (Ok(n), Ok(v)) = (CString::new(name), CString::new(value)) {
            // SAFETY: valid handle and NUL-terminated strings, copied by Tesseract.
            unsafe { capi::TessBaseAPISetVariable(self.raw.as_ptr(), n.as_ptr(), v.as_ptr()) };
        }
    }

    /// Hands the page to the engine (Tesseract copies the rows). `dpi` is the rendering
    /// resolution when known; without it Tesseract estimates one from the text height.
    fn set_image(&mut self, img: &Gray, dpi: Option<u32>) -> Result<(), String> {
        if img.width > i32::MAX as u32 / 2 || img.height > i32::MAX as u32 / 2 {
            return Err("image too large for Tesseract".into());
        }
        // SAFETY: `pixels` holds width × height bytes (Gray's invariant), one byte per pixel,
        // rows of `width` bytes; Tesseract copies them before returning.
        unsafe {
            capi::TessBaseAPISetImage(
                self.raw.as_ptr(),
                img.pixels.as_ptr(),
                img.width as c_int,
                img.height as c_int,
                1,
                img.width as c_int,
            );
            if let Some(dpi) = dpi {
                capi::TessBaseAPISetSourceResolution(self.raw.as_ptr(), dpi as c_int);
            }
        }
        Ok(())
    }

    /// Recognizes `img`, giving up when `budget` runs out (Tesseract checks its monitor
    /// between words, so it stops within a word's time of the deadline).
    pub fn recognize(
        &mut self,
        img: &Gray,
        dpi: Option<u32>,
        threshold: Threshold,
        budget: Duration,
        drop_rule_marks: bool,
    ) -> Result<Recognized, String> {
        let started = Instant::now();
        // The engine is reused page after page: the method is set for every page.
        self.set(
            "thresholding_method",
            match threshold {
                Threshold::Global => "0",
                Threshold::Adaptive => "2",
            },
        );
        self.set_image(img, dpi)?;
        // SAFETY: a monitor is a plain C++ object owned here and deleted below.
        let monitor = unsafe { capi::TessMonitorCreate() };
        if monitor.is_null() {
            return Err("Tesseract monitor could not be created".into());
        }
        let ms = budget.as_millis().clamp(1, i32::MAX as u128) as c_int;
        // SAFETY: valid handle and monitor; the monitor outlives the call.
        let rc = unsafe {
            capi::TessMonitorSetDeadlineMSecs(monitor, ms);
            let rc = capi::TessBaseAPIRecognize(self.raw.as_ptr(), monitor);
            capi::TessMonitorDelete(monitor);
            rc
        };
        if started.elapsed() >= budget {
            self.clear();
            return Ok(Recognized::TimedOut);
        }
        if rc != 0 {
            self.clear();
            return Err(format!("Tesseract recognition failed (code {rc})"));
        }
        let words = self.words(img, drop_rule_marks);
        self.clear();
        words
            .map(Recognized::Words)
            .ok_or_else(|| "Tesseract produced no result".into())
    }

    /// The words of the last recognition in reading order, with boxes relative to the image
    /// and lines numbered in order of appearance. Walks Tesseract's result iterator word by
    /// word rather than asking for its TSV, which also formats page, block, paragraph and
    /// line rows and asks, for each word, whether it ends each of them (≈2 % of a page).
    /// With `drop_rule_marks`, what Tesseract read from table borders and underlines is
    /// taken out ([`RuleMarks`]). `None` when Tesseract gives no result iterator at all (not
    /// the same as a blank page).
    fn words(&mut self, img: &Gray, drop_rule_marks: bool) -> Option<Vec<Word>> {
        let (w, h) = (img.width.max(1) as f32, img.height.max(1) as f32);
        // Ink is told from paper at the page's own threshold.
        let ink = Ink::of(img);
        let probe = drop_rule_marks.then(|| RuleProbe::new(img, ink.threshold));
        let word = capi::TessPageIteratorLevel_RIL_WORD;
        // SAFETY: valid handle after Recognize; the iterator is owned here and deleted below.
        let it = unsafe { capi::TessBaseAPIGetIterator(self.raw.as_ptr()) };
        if it.is_null() {
            return None;
        }
        let mut words = Vec::new();
        let mut glyphs = Vec::new();
        let mut marks = Vec::new();
        let (mut line, mut new_line) = (0u32, false);
        loop {
            // SAFETY: `it` is a live result iterator; a result iterator is a page iterator
            // (the C API's cast); the text is ours and freed with TessDeleteText.
            unsafe {
                let page_it = capi::TessResultIteratorGetPageIteratorConst(it);
                new_line |= capi::TessPageIteratorIsAtBeginningOf(
                    page_it,
                    capi::TessPageIteratorLevel_RIL_TEXTLINE,
                ) != 0;
                let text = capi::TessResultIteratorGetUTF8Text(it, word);
                if !text.is_null() {
                    // Tesseract's unicharset is data: clean what it gives like any text.
                    let s = word_text(&CStr::from_ptr(text).to_string_lossy());
                    capi::TessDeleteText(text);
                    let conf = capi::TessResultIteratorConfidence(it, word);
                    let (mut l, mut t, mut r, mut b) = (0, 0, 0, 0);
                    let boxed = capi::TessPageIteratorBoundingBox(
                        page_it, word, &mut l, &mut t, &mut r, &mut b,
                    ) != 0;
                    if boxed && !s.is_empty() && conf >= 0.0 {
                        if new_line && !words.is_empty() {
                            line += 1;
                        }
                        new_line = false;
                        let word_ink = probe.as_ref().map(|p| p.ink(l, t, r, b));
                        let confusable = confusables::has_confusable(&s);
                        let rule_ends = word_ink.as_ref().is_some_and(|i| {
                            !i.is_only_rule()
                                && (i.rule_before().is_some() || i.rule_after().is_some())
                        });
                        let symbols = if confusable || rule_ends {
                            word_symbols(it).filter(|symbols| spell(symbols) == s)
                        } else {
                            None
                        };
                        glyphs.push(match &symbols {
                            Some(symbols) if confusable => Some(glyphs_of(symbols, &ink)),
                            _ => None,
                        });
                        marks.push(match (&word_ink, &symbols) {
                            (Some(i), _) if i.is_only_rule() => RuleMarks::Whole,
                            (Some(i), Some(symbols)) if rule_ends => RuleMarks::at_ends(i, symbols),
                            _ => RuleMarks::None,
                        });
                        words.push(Word {
                            text: s,
                            bbox: BBox {
                                x0: l as f32 / w,
                                y0: t as f32 / h,
                                x1: r as f32 / w,
                                y1: b as f32 / h,
                            }
                            .normalized(),
                            confidence: (conf / 100.0).clamp(0.0, 1.0),
                            line,
                        });
                    }
                }
                if capi::TessResultIteratorNext(it, word) == 0 {
                    break;
                }
            }
        }
        // SAFETY: created above, deleted once.
        unsafe { capi::TessResultIteratorDelete(it) };
        let settled = confusables::settle(words.iter_mut().map(|w| &mut w.text), &glyphs);
        if settled > 0 {
            tracing::debug!(settled, "confusable glyphs settled by their shapes");
        }
        // After settling, which measured the glyphs by their place in the untouched words.
        let before = words.len();
        let words: Vec<Word> = words
            .into_iter()
            .zip(marks)
            .filter_map(|(word, marks)| marks.apply(word, img.width))
            .collect();
        if drop_rule_marks {
            tracing::debug!(dropped = before - words.len(), "rule marks taken out");
        }
        Some(words)
    }

    /// Orientation and script detection (an engine made with the `osd` data and PSM 0):
    /// the clockwise rotation that makes the page upright, with Tesseract's confidence.
    pub fn detect_orientation(&mut self, img: &Gray, dpi: Option<u32>) -> Option<(u16, f32)> {
        self.set_image(img, dpi).ok()?;
        let (mut deg, mut conf, mut script, mut script_conf) =
            (0 as c_int, 0f32, std::ptr::null(), 0f32);
        // SAFETY: valid handle and out-pointers; the script name points into Tesseract's own
        // tables and is not kept.
        let ok = unsafe {
            capi::TessBaseAPIDetectOrientationScript(
                self.raw.as_ptr(),
                &mut deg,
                &mut conf,
                &mut script,
                &mut script_conf,
            )
        };
        self.clear();
        // Tesseract reports how far the content is turned (content turned 90° clockwise
        // reports 90, measured); undoing that is the rest of the full turn.
        (ok != 0).then(|| (((360 - deg.rem_euclid(360)) % 360) as u16, conf))
    }

    fn clear(&mut self) {
        // SAFETY: valid handle; frees the image and results, keeps the loaded model.
        unsafe { capi::TessBaseAPIClear(self.raw.as_ptr()) }
    }
}

/// One symbol of a word as Tesseract boxed it: its character and box in pixels (left, top,
/// right, bottom).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Symbol {
    ch: char,
    l: c_int,
    t: c_int,
    r: c_int,
    b: c_int,
}

/// What a word's symbols spell.
fn spell(symbols: &[Symbol]) -> String {
    symbols.iter().map(|s| s.ch).collect()
}

/// The symbols of the word `it` stands on; `None` when they do not map one-to-one to
/// characters (a ligature, an empty symbol).
///
/// # Safety
/// `it` must be a live result iterator standing on a word.
unsafe fn word_symbols(it: *mut capi::TessResultIterator) -> Option<Vec<Symbol>> {
    let symbol = capi::TessPageIteratorLevel_RIL_SYMBOL;
    let word = capi::TessPageIteratorLevel_RIL_WORD;
    // A copy walks the word's symbols, leaving `it` on the word.
    let walker = capi::TessResultIteratorCopy(it);
    if walker.is_null() {
        return None;
    }
    let mut symbols = Vec::new();
    let mut one_to_one = true;
    loop {
        let page_it = capi::TessResultIteratorGetPageIteratorConst(walker);
        let raw = capi::TessResultIteratorGetUTF8Text(walker, symbol);
        if raw.is_null() {
            break;
        }
        let ch = CStr::from_ptr(raw).to_string_lossy().into_owned();
        capi::TessDeleteText(raw);
        let (mut l, mut t, mut r, mut b) = (0, 0, 0, 0);
        capi::TessPageIteratorBoundingBox(page_it, symbol, &mut l, &mut t, &mut r, &mut b);
        let mut chars = ch.chars();
        if let (Some(ch), None) = (chars.next(), chars.next()) {
            symbols.push(Symbol { ch, l, t, r, b });
        } else {
            one_to_one = false;
            break;
        }
        if capi::TessPageIteratorIsAtFinalElement(page_it, word, symbol) != 0
            || capi::TessResultIteratorNext(walker, symbol) == 0
        {
            break;
        }
    }
    capi::TessResultIteratorDelete(walker);
    (one_to_one && !symbols.is_empty()).then_some(symbols)
}

/// The glyphs of a word's symbols, with the ink size of the confusable ones (only they are
/// measured; the others only say what the word is).
fn glyphs_of(symbols: &[Symbol], ink: &Ink<'_>) -> Vec<Glyph> {
    symbols
        .iter()
        .map(|s| {
            let (width, height) = if confusables::has_confusable(s.ch.encode_utf8(&mut [0; 4])) {
                ink.size(s.l, s.t, s.r, s.b).unwrap_or((0, 0))
            } else {
                (0, 0)
            };
            Glyph {
                ch: s.ch,
                width,
                height,
            }
        })
        .collect()
}

/// Whether OCR writes a rule's piece as `ch`: bars, brackets, dashes, quotes and the letters
/// and digits that are a bare stroke. A letter touching a border (`code|`) sits in the
/// rule's fringe too, and is kept.
fn reads_as_rule(ch: char) -> bool {
    matches!(ch, 'l' | 'I' | 'i' | 'j' | 'J' | '1') || !ch.is_alphanumeric()
}

/// What Tesseract read from rules in one word: nothing, the whole word (`|`, `—`, `ee` from a
/// cell border), or glyphs at its ends (`|Shipper`), to cut off with the part of the box
/// they sit in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RuleMarks {
    None,
    Whole,
    Ends {
        lead: usize,
        trail: usize,
        /// The box's new left and right edges, in pixels.
        x0: c_int,
        x1: c_int,
    },
}

impl RuleMarks {
    /// The leading and trailing symbols that sit where the word's box holds only rule ink:
    /// left of where its other ink starts, or right of where it ends.
    fn at_ends(ink: &BoxInk, symbols: &[Symbol]) -> RuleMarks {
        let centre = |s: &Symbol| (s.l + s.r) / 2;
        let lead = ink.rule_before().map_or(0, |start| {
            symbols
                .iter()
                .take_while(|s| centre(s) < start as c_int && reads_as_rule(s.ch))
                .count()
        });
        let trail = ink.rule_after().map_or(0, |end| {
            symbols[lead..]
                .iter()
                .rev()
                .take_while(|s| centre(s) >= end as c_int && reads_as_rule(s.ch))
                .count()
        });
        if lead == 0 && trail == 0 || lead + trail >= symbols.len() {
            return RuleMarks::None;
        }
        let kept = &symbols[lead..symbols.len() - trail];
        // Symbol boxes are loose: the box ends where the ink that is not rule does.
        let start = ink.rule_before().map_or(c_int::MIN, |x| x as c_int);
        let end = ink.rule_after().map_or(c_int::MAX, |x| x as c_int);
        match (kept.first(), kept.last()) {
            (Some(first), Some(last)) => RuleMarks::Ends {
                lead,
                trail,
                x0: first.l.max(start),
                x1: last.r.min(end),
            },
            _ => RuleMarks::None,
        }
    }

    /// The word with its rule marks taken out; `None` when it was all rule.
    fn apply(self, mut word: Word, image_width: u32) -> Option<Word> {
        match self {
            RuleMarks::None => Some(word),
            RuleMarks::Whole => None,
            RuleMarks::Ends {
                lead,
                trail,
                x0,
                x1,
            } => {
                let n = word.text.chars().count();
                word.text = word
                    .text
                    .chars()
                    .skip(lead)
                    .take(n.saturating_sub(lead + trail))
                    .collect();
                let w = image_width.max(1) as f32;
                word.bbox.x0 = word.bbox.x0.max(x0 as f32 / w);
                word.bbox.x1 = word.bbox.x1.min(x1 as f32 / w).max(word.bbox.x0);
                (!word.text.is_empty()).then_some(word)
            }
        }
    }
}

/// The dark pixels of a page, for measuring glyphs. Tesseract's symbol boxes come from its
/// recognizer's steps, not from the ink: a narrow `I` may get a wide box, and neighbours'
/// boxes overlap. The glyph is the ink inside its box.
struct Ink<'a> {
    img: &'a Gray,
    threshold: u8,
}

impl<'a> Ink<'a> {
    pub(crate) fn of(img: &'a Gray) -> Ink<'a> {
        let threshold = crate::gray::otsu(&img.pixels).unwrap_or(128);
        Ink { img, threshold }
    }

    /// Width and height of the ink inside the box (left, top, right, bottom, exclusive):
    /// the widest run of columns holding ink with no blank column inside (a neighbour's
    /// edge caught by the box is another run), then the rows of that run holding ink.
    fn size(&self, l: c_int, t: c_int, r: c_int, b: c_int) -> Option<(u32, u32)> {
        let (iw, ih) = (self.img.width as usize, self.img.height as usize);
        let clamp = |v: c_int, max: usize| (v.max(0) as usize).min(max);
        let (l, r, t, b) = (clamp(l, iw), clamp(r, iw), clamp(t, ih), clamp(b, ih));
        if l >= r || t >= b {
            return None;
        }
        // Ink is at or below Otsu's threshold: on a bilevel page the threshold is 0 itself.
        let dark = |x: usize, y: usize| self.img.pixels[y * iw + x] <= self.threshold;
        let column_ink = |x: usize| (t..b).filter(|&y| dark(x, y)).count();
        // Runs of inked columns as (start, end, ink), keeping the one with the most ink.
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for x in l..r {
            let n = column_ink(x);
            match runs.last_mut() {
                Some((_, end, ink)) if n > 0 && *end == x => {
                    *end = x + 1;
                    *ink += n;
                }
                _ if n > 0 => runs.push((x, x + 1, n)),
                _ => {}
            }
        }
        let best = runs.into_iter().max_by_key(|&(_, _, ink)| ink);
        let (x0, x1, _) = best?;
        let rows: Vec<usize> = (t..b).filter(|&y| (x0..x1).any(|x| dark(x, y))).collect();
        let height = rows.last()? - rows.first()? + 1;
        Some(((x1 - x0) as u32, height as u32))
    }
}

/// Mean word confidence, 0 for no words.
pub(crate) fn mean_confidence(words: &[Word]) -> f32 {
    if words.is_empty() {
        0.0
    } else {
        words.iter().map(|w| w.confidence).sum::<f32>() / words.len() as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_confidence_of_words() {
        let w = |confidence: f32| Word {
            text: "x".into(),
            bbox: BBox::default(),
            confidence,
            line: 0,
        };
        assert_eq!(mean_confidence(&[]), 0.0);
        assert!((mean_confidence(&[w(0.9), w(0.5)]) - 0.7).abs() < 1e-6);
    }
}
