//! Running Tesseract on a page image: a pool of engines reused across pages, the rotation
//! logic, and a watchdog so a page never holds its caller past the deadline.
//!
//! Tesseract's progress monitor stops recognition at the deadline, but layout analysis before
//! it cannot be interrupted (a 9 MP noise image spent ≈9 s there against a 0.5 s deadline). So
//! each page is read on its own short-lived thread while the caller waits until the deadline
//! plus a grace period; past that the caller reports a terminal timeout and the thread is left
//! to finish (layout analysis always ends) and hand its engines back to the pool.

use crate::budget::Turn;
use crate::engine::{mean_confidence, Recognized, Tess};
use crate::gray::Gray;
use crate::prepare::Threshold;
use crate::second_look::CropMode;
use crate::{remaining, ReadError, ReadOptions};
use ironclad_core::page::{BBox, Word};
use leptess::capi;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A first reading with a mean confidence at or above this is accepted without asking
/// orientation detection. Upright print reads at 0.9–0.97; the same pages upside down or
/// turned the wrong quarter at 0.23–0.28 (measured on this crate's test pages).
const UPRIGHT_CONFIDENCE: f32 = 0.7;
/// Orientation detection's confidence below which its answer is ignored (the test invoice,
/// a sparse page, scores ≈5; a dense page ≈15–20).
const MIN_OSD_CONFIDENCE: f32 = 1.0;
/// How long past the page deadline the caller still waits for Tesseract's own monitor to stop
/// it, so the engines come back to the pool in the common case.
const GRACE: Duration = Duration::from_secs(1);

/// One OCR thread's engines, each created on first use.
#[derive(Default)]
struct Engines {
    ocr: Option<Tess>,
    osd: Option<Tess>,
}

impl Engines {
    /// The recognition engine, loaded (and counted) on first use.
    fn recognizer(&mut self, pool: &OcrPool) -> Result<&mut Tess, ReadError> {
        if self.ocr.is_none() {
            let t = Tess::new(
                &pool.languages,
                capi::TessOcrEngineMode_OEM_DEFAULT,
                capi::TessPageSegMode_PSM_AUTO,
            )
            .map_err(ReadError::Retryable)?;
            pool.engines_loaded.fetch_add(1, Ordering::Relaxed);
            self.ocr = Some(t);
        }
        self.ocr
            .as_mut()
            .ok_or_else(|| ReadError::Retryable("no recognition engine".into()))
    }
}

/// Idle engines and counters, shared by a reader and its OCR threads.
pub(crate) struct OcrPool {
    languages: String,
    detect_rotation: bool,
    /// Take out what Tesseract read from rule lines ([`crate::RuleLines::DropMarks`]).
    drop_rule_marks: bool,
    page_timeout: Duration,
    /// Most idle engines kept: as many as one file's pages can use at once.
    keep: usize,
    idle: Mutex<Vec<Engines>>,
    ocr_calls: AtomicU64,
    /// Recognition engines loaded so far: what the page budget keeps from growing.
    engines_loaded: AtomicU64,
    /// OCR threads still running after their caller gave up on them.
    stragglers: AtomicU64,
    /// Set once the `osd` data failed to load, so it is not retried on every page.
    osd_missing: AtomicBool,
    /// Crops read by a second look.
    crops_read: AtomicU64,
}

impl OcrPool {
    pub fn new(opts: &ReadOptions) -> OcrPool {
        OcrPool {
            languages: opts.languages.clone(),
            detect_rotation: opts.detect_rotation,
            drop_rule_marks: opts.rule_lines == crate::RuleLines::DropMarks,
            page_timeout: opts.page_timeout,
            keep: opts.threads.max(1),
            idle: Mutex::new(Vec::new()),
            ocr_calls: AtomicU64::new(0),
            engines_loaded: AtomicU64::new(0),
            stragglers: AtomicU64::new(0),
            osd_missing: AtomicBool::new(false),
            crops_read: AtomicU64::new(0),
        }
    }

    pub fn ocr_calls(&self) -> u64 {
        self.ocr_calls.load(Ordering::Relaxed)
    }

    pub fn engines_loaded(&self) -> u64 {
        self.engines_loaded.load(Ordering::Relaxed)
    }

    pub fn crops_read(&self) -> u64 {
        self.crops_read.load(Ordering::Relaxed)
    }

    fn take(&self) -> Engines {
        self.idle
            .lock()
            .ok()
            .and_then(|mut idle| idle.pop())
            .unwrap_or_default()
    }

    fn give_back(&self, engines: Engines) {
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < self.keep {
                idle.push(engines);
            }
        }
    }
}

/// Reads `img` upright on an OCR thread, returning by `deadline` (plus [`GRACE`]) whatever
/// Tesseract is doing: the rotation applied and the words. The page's `turn` moves to the
/// thread and is given back when it finishes, so a straggler still counts against the budget.
pub(crate) fn read_with_deadline(
    pool: &Arc<OcrPool>,
    img: Gray,
    dpi: Option<u32>,
    threshold: Threshold,
    page_no: u32,
    deadline: Instant,
    turn: Turn,
) -> Result<(u16, Vec<Word>), ReadError> {
    const RUNNING: u8 = 0;
    const DONE: u8 = 1;
    const ABANDONED: u8 = 2;
    let state = Arc::new(AtomicU8::new(RUNNING));
    let (tx, rx) = mpsc::sync_channel(1);
    let (shared, thread_state) = (Arc::clone(pool), Arc::clone(&state));
    thread::Builder::new()
        .name(format!("ocr-page-{page_no}"))
        .spawn(move || {
            let _turn = turn;
            let mut engines = shared.take();
            let result = read_upright(
                &shared,
                &mut engines,
                &img,
                dpi,
                threshold,
                page_no,
                deadline,
            );
            shared.give_back(engines);
            let _ = tx.send(result);
            // Whoever moves the state first decides: the caller abandoning, or this finishing.
            if thread_state
                .compare_exchange(RUNNING, DONE, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                shared.stragglers.fetch_sub(1, Ordering::Relaxed);
            }
        })
        .map_err(|e| {
            ReadError::Retryable(format!(
                "page {page_no}: could not start an OCR thread: {e}"
            ))
        })?;
    let wait = deadline.saturating_duration_since(Instant::now()) + GRACE;
    let result = match rx.recv_timeout(wait) {
        Ok(result) => Some(result),
        Err(mpsc::RecvTimeoutError::Disconnected) => None,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            // Counted before the state changes so the thread's decrement never comes first.
            let stragglers = pool.stragglers.fetch_add(1, Ordering::Relaxed) + 1;
            if state
                .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                tracing::warn!(
                    page = page_no,
                    stragglers,
                    "OCR past the page deadline; left to finish in the background"
                );
                return Err(timeout(page_no, pool.page_timeout));
            }
            // It finished just as the wait ended: the result is already sent.
            pool.stragglers.fetch_sub(1, Ordering::Relaxed);
            rx.recv().ok()
        }
    };
    result.unwrap_or_else(|| {
        Err(ReadError::Retryable(format!(
            "page {page_no}: the OCR thread failed"
        )))
    })
}

/// Reads the page as it is and, if that reading is poor and rotation detection is on, asks
/// Tesseract's orientation detection and reads it again turned upright.
fn read_upright(
    pool: &OcrPool,
    engines: &mut Engines,
    img: &Gray,
    dpi: Option<u32>,
    threshold: Threshold,
    page_no: u32,
    deadline: Instant,
) -> Result<(u16, Vec<Word>), ReadError> {
    let first = recognize(pool, engines, img, dpi, threshold, page_no, deadline)?;
    if !pool.detect_rotation {
        return Ok((0, first));
    }
    if mean_confidence(&first) >= UPRIGHT_CONFIDENCE {
        // Tesseract reads a page turned a quarter clockwise correctly (its lines run top to
        // bottom) but boxes it in the sideways frame: turn the boxes, not the page.
        return Ok(match sideways_correction(&first, img.width, img.height) {
            Some(rotation) => (rotation, rotate_boxes(first, rotation)),
            None => (0, first),
        });
    }
    if pool.osd_missing.load(Ordering::Relaxed) {
        return Ok((0, first));
    }
    let osd = match &mut engines.osd {
        Some(t) => t,
        None => match Tess::new(
            "osd",
            capi::TessOcrEngineMode_OEM_TESSERACT_ONLY,
            capi::TessPageSegMode_PSM_OSD_ONLY,
        ) {
            Ok(t) => engines.osd.insert(t),
            // Without the osd data the first reading stands; say so once per reader.
            Err(e) => {
                if !pool.osd_missing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(error = %e, "orientation detection unavailable: install tesseract-ocr-osd");
                }
                return Ok((0, first));
            }
        },
    };
    let Some((rotation, conf)) = osd.detect_orientation(img, dpi) else {
        return Ok((0, first));
    };
    tracing::debug!(page = page_no, rotation, conf, "orientation detected");
    if rotation == 0 || conf < MIN_OSD_CONFIDENCE {
        return Ok((0, first));
    }
    let second = recognize(
        pool,
        engines,
        &img.rotated_cw(rotation),
        dpi,
        threshold,
        page_no,
        deadline,
    )?;
    if reading_score(&second) > reading_score(&first) {
        Ok((rotation, second))
    } else {
        Ok((0, first))
    }
}

fn recognize(
    pool: &OcrPool,
    engines: &mut Engines,
    img: &Gray,
    dpi: Option<u32>,
    threshold: Threshold,
    page_no: u32,
    deadline: Instant,
) -> Result<Vec<Word>, ReadError> {
    let budget = remaining(deadline, page_no)?;
    let tess = engines.recognizer(pool)?;
    pool.ocr_calls.fetch_add(1, Ordering::Relaxed);
    let read = tess.recognize(img, dpi, threshold, budget, pool.drop_rule_marks);
    words_read(pool, read, page_no)
}

/// The words of one recognition, or why there are none: the page timeout, or the engine's
/// error.
fn words_read(
    pool: &OcrPool,
    read: Result<Recognized, String>,
    page_no: u32,
) -> Result<Vec<Word>, ReadError> {
    match read {
        Ok(Recognized::Words(words)) => Ok(words),
        Ok(Recognized::TimedOut) => Err(timeout(page_no, pool.page_timeout)),
        Err(m) => Err(ReadError::Terminal(format!("page {page_no}: {m}"))),
    }
}

/// Reads a crop of a page as one line or one block, thresholded as told, with an engine of
/// the pool (on the caller's thread: a crop is small, and Tesseract's monitor stops it at the
/// deadline).
pub(crate) fn recognize_crop(
    pool: &OcrPool,
    img: &Gray,
    dpi: Option<u32>,
    mode: CropMode,
    threshold: Threshold,
    page_no: u32,
    deadline: Instant,
) -> Result<Vec<Word>, ReadError> {
    let mut engines = pool.take();
    let psm = match mode {
        CropMode::Line => capi::TessPageSegMode_PSM_SINGLE_LINE,
        CropMode::Block => capi::TessPageSegMode_PSM_SINGLE_BLOCK,
    };
    let result = (|| {
        let budget = remaining(deadline, page_no)?;
        let tess = engines.recognizer(pool)?;
        pool.crops_read.fetch_add(1, Ordering::Relaxed);
        tess.set_page_seg_mode(psm);
        // Rule marks are still taken out; a crop's few glyphs are no references for
        // settling `1`/`I` by shape, which needs a page's worth.
        let read = tess.recognize(img, dpi, threshold, budget, pool.drop_rule_marks);
        // The engine goes back to the pool reading whole pages.
        tess.set_page_seg_mode(capi::TessPageSegMode_PSM_AUTO);
        words_read(pool, read, page_no)
    })();
    pool.give_back(engines);
    result
}

fn timeout(page_no: u32, limit: Duration) -> ReadError {
    ReadError::Terminal(format!(
        "page {page_no}: OCR did not finish within the page timeout of {limit:?}"
    ))
}

/// If most words are boxed taller than wide, the page was read sideways: the clockwise turn
/// (90 or 270) that makes it upright, judged from which way its lines run.
fn sideways_correction(words: &[Word], width: u32, height: u32) -> Option<u16> {
    let (w, h) = (width as f32, height as f32);
    let long: Vec<&Word> = words
        .iter()
        .filter(|x| x.text.chars().count() >= 3)
        .collect();
    let tall = long
        .iter()
        .filter(|x| (x.bbox.y1 - x.bbox.y0) * h > 1.5 * (x.bbox.x1 - x.bbox.x0) * w)
        .count();
    if long.len() < 3 || tall * 2 <= long.len() {
        return None;
    }
    // Along a line, the next word is below the previous one when the text runs downwards.
    let downwards: f32 = words
        .windows(2)
        .filter(|p| p[0].line == p[1].line)
        .map(|p| (p[1].bbox.y0 + p[1].bbox.y1) - (p[0].bbox.y0 + p[0].bbox.y1))
        .sum();
    Some(if downwards >= 0.0 { 270 } else { 90 })
}

/// Maps page-relative boxes into the frame of the page turned `rotation` degrees clockwise.
fn rotate_boxes(mut words: Vec<Word>, rotation: u16) -> Vec<Word> {
    let turn = |x: f32, y: f32| match rotation {
        90 => (1.0 - y, x),
        180 => (1.0 - x, 1.0 - y),
        270 => (y, 1.0 - x),
        _ => (x, y),
    };
    for word in &mut words {
        let b = word.bbox;
        let (x0, y0) = turn(b.x0, b.y0);
        let (x1, y1) = turn(b.x1, b.y1);
        word.bbox = BBox { x0, y0, x1, y1 }.normalized();
    }
    words
}

/// Compares two readings of one page: confident letters and digits, so a sideways reading's
/// scattered low-confidence fragments lose to the real text.
fn reading_score(words: &[Word]) -> f32 {
    words
        .iter()
        .map(|w| w.confidence * w.text.chars().filter(|c| c.is_alphanumeric()).count() as f32)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sideways_boxes_turn_upright() {
        let w = |t: &str, line: u32, x0: f32, y0: f32, x1: f32, y1: f32| Word {
            text: t.into(),
            bbox: BBox { x0, y0, x1, y1 },
            confidence: 0.9,
            line,
        };
        // The invoice page turned 90° clockwise and read by Tesseract (measured boxes).
        let words = vec![
            w("INVOICE", 0, 0.9236, 0.0941, 0.9394, 0.1976),
            w("No.", 0, 0.9236, 0.2078, 0.9388, 0.2447),
            w("2024-0042", 0, 0.9236, 0.2549, 0.9388, 0.3780),
            w("Date:", 1, 0.8976, 0.0933, 0.9127, 0.1522),
        ];
        assert_eq!(sideways_correction(&words, 495, 1275), Some(270));
        let upright = rotate_boxes(words.clone(), 270);
        let b = upright[0].bbox;
        assert!(
            (b.x0 - 0.0941).abs() < 1e-4
                && (b.y0 - 0.0606).abs() < 1e-4
                && (b.x1 - 0.1976).abs() < 1e-4,
            "{b:?}"
        );
        assert_eq!(sideways_correction(&upright, 1275, 495), None);
        // Text running upwards needs the other quarter turn.
        let up: Vec<Word> = rotate_boxes(words, 180);
        assert_eq!(sideways_correction(&up, 495, 1275), Some(90));
        let back = rotate_boxes(rotate_boxes(upright.clone(), 90), 270);
        assert!((back[0].bbox.x0 - upright[0].bbox.x0).abs() < 1e-6);
    }

    #[test]
    fn score_prefers_confident_text() {
        let w = |t: &str, c: f32| Word {
            text: t.into(),
            bbox: Default::default(),
            confidence: c,
            line: 0,
        };
        assert!(reading_score(&[w("INVOICE", 0.9)]) > reading_score(&[w("~", 0.2), w("lI", 0.3)]));
    }
}
