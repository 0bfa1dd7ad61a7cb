//! A thin safe wrapper over the Tesseract C API, reached through `leptess::capi`.
//!
//! leptess's own `LepTess` type hides its handle, and it neither passes a progress monitor to
//! `Recognize` (needed for the per-page deadline) nor exposes orientation detection, so this
//! module drives the same C API directly. Images are handed over as raw 8-bit gray rows
//! (`TessBaseAPISetImage`), which costs one copy and no encoding.

use crate::gray::Gray;
use ironclad_core::page::{BBox, Word};
use leptess::capi;
use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::ptr::NonNull;
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
        // SAFETY: valid handle.
        unsafe { capi::TessBaseAPISetPageSegMode(tess.raw.as_ptr(), psm) };
        Ok(tess)
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
        budget: Duration,
    ) -> Result<Recognized, String> {
        let started = Instant::now();
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
        // SAFETY: valid handle; the returned string is owned by us and freed with TessDeleteText.
        let tsv = unsafe {
            let p = capi::TessBaseAPIGetTsvText(self.raw.as_ptr(), 0);
            if p.is_null() {
                self.clear();
                return Err("Tesseract produced no result".into());
            }
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            capi::TessDeleteText(p);
            s
        };
        self.clear();
        Ok(Recognized::Words(parse_tsv(&tsv, img.width, img.height)))
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

/// Turns Tesseract's TSV (level 5 rows are words: `level page block par line word left top
/// width height conf text`) into words with boxes relative to the image, numbering lines in
/// order of appearance.
pub(crate) fn parse_tsv(tsv: &str, width: u32, height: u32) -> Vec<Word> {
    let (w, h) = (width.max(1) as f32, height.max(1) as f32);
    let mut words = Vec::new();
    let mut last_line: Option<(u32, u32, u32)> = None;
    let mut line_no = 0u32;
    for row in tsv.lines() {
        let cols: Vec<&str> = row.splitn(12, '\t').collect();
        if cols.len() < 12 || cols[0] != "5" {
            continue;
        }
        let text = cols[11].trim();
        let num = |i: usize| cols[i].trim().parse::<f32>().ok();
        let id = |i: usize| cols[i].trim().parse::<u32>().unwrap_or(0);
        let (Some(left), Some(top), Some(bw), Some(bh), Some(conf)) =
            (num(6), num(7), num(8), num(9), num(10))
        else {
            continue;
        };
        if text.is_empty() || conf < 0.0 {
            continue;
        }
        let key = (id(2), id(3), id(4));
        match last_line {
            Some(k) if k == key => {}
            Some(_) => line_no += 1,
            None => {}
        }
        last_line = Some(key);
        words.push(Word {
            text: text.to_string(),
            bbox: BBox {
                x0: left / w,
                y0: top / h,
                x1: (left + bw) / w,
                y1: (top + bh) / h,
            }
            .normalized(),
            confidence: (conf / 100.0).clamp(0.0, 1.0),
            line: line_no,
        });
    }
    words
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
    fn tsv_words_lines_and_boxes() {
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
                   1\t1\t0\t0\t0\t0\t0\t0\t200\t100\t-1\t\n\
                   5\t1\t1\t1\t1\t1\t20\t10\t40\t10\t96.5\tINVOICE\n\
                   5\t1\t1\t1\t1\t2\t70\t10\t20\t10\t90\tNo.\n\
                   5\t1\t1\t1\t2\t1\t20\t30\t20\t10\t80\t42\n\
                   5\t1\t2\t1\t1\t1\t20\t50\t20\t10\t-1\t \n\
                   5\t1\t2\t1\t1\t2\t20\t50\t20\t10\t70\tTotal\n";
        let words = parse_tsv(tsv, 200, 100);
        let got: Vec<(&str, u32)> = words.iter().map(|w| (w.text.as_str(), w.line)).collect();
        assert_eq!(
            got,
            vec![("INVOICE", 0), ("No.", 0), ("42", 1), ("Total", 2)]
        );
        assert_eq!(
            words[0].bbox,
            BBox {
                x0: 0.1,
                y0: 0.1,
                x1: 0.3,
                y1: 0.2
            }
        );
        assert!((words[0].confidence - 0.965).abs() < 1e-6);
        assert!((mean_confidence(&words) - 0.84125).abs() < 1e-6);
    }
}
