//! Reading pages: every page of a PDF, PNG, JPEG or multi-page TIFF becomes a
//! [`PageText`] — words with page-relative boxes and confidences.
//!
//! # How a page is read
//!
//! * **PDF with a text layer**: one `pdftotext -bbox-layout` run per 64 pages (most files:
//!   one run) gives every page's words and their boxes exactly ([`ReadMethod::TextLayer`],
//!   confidence 1), and the page count. A page whose layer holds fewer than
//!   [`ReadOptions::min_text_layer_chars`] letters and digits counts as scanned.
//! * **Scanned PDF page that is one JPEG over the page** (what scanners write): recognised
//!   from the PDF's objects (`lopdf` behind the intake's guard), the JPEG is decoded and
//!   scaled to [`ReadOptions::dpi`] in-process (≈20 ms against ≈100 ms for `pdftoppm`), then
//!   Tesseract reads it told that resolution. See `scan_page.rs` for what qualifies.
//! * **Any other scanned PDF page**: `pdfinfo` gives the page sizes (checked against the pixel
//!   limit), `pdftoppm -gray` renders the page at [`ReadOptions::dpi`] to an 8-bit PGM streamed
//!   on stdout, and Tesseract reads it ([`ReadMethod::Ocr`]) told that resolution.
//! * **Images**: decoded in-process (pure Rust `image`/`tiff` crates) to 8-bit gray, then
//!   Tesseract, told the resolution the file records when it is plausible for a scan.
//!
//! # Design choices and their cost
//!
//! * **Poppler as child processes, Tesseract in-process.** Poppler is the most tolerant PDF
//!   reader available as a Debian package, and a crash or hang on a hostile file kills only
//!   the child, which is killed at its deadline anyway; the price is a process start (≈5 ms):
//!   one `pdftotext` per 64 pages, and for scanned pages that are not plain JPEG scans one
//!   `pdfinfo` per file and one `pdftoppm` per page. Tesseract runs in-process (through the C
//!   API that `leptess` binds) because its model takes ≈120 ms to load: engines live in a pool
//!   owned by the [`PageReader`], each page borrows one, so a model loads once per concurrent
//!   page for the reader's lifetime. The price is that Tesseract's own memory safety is
//!   trusted: its input is only ever pixels this crate decoded, never a file.
//! * **One page budget** ([`PageBudget`], per reader or shared by several). Scanned pages
//!   take turns: [`ReadOptions::threads`] of them are rendered and recognized at once, across
//!   every concurrent call, oldest call first. So several files can be read at once (a
//!   one-page scan no longer leaves a core idle) while the number of page images and busy
//!   engines — the memory and the CPU — stays fixed. A page's deadline starts with its turn,
//!   and a page past its deadline keeps its turn until its thread has finished.
//! * **Deadlines that hold.** Every child process is killed at its deadline (a page's, or for
//!   the text layer one page timeout per run of 64 pages). Tesseract's
//!   progress monitor stops recognition at the deadline, but its layout analysis cannot be
//!   interrupted, so each page's OCR runs on its own short-lived thread and the caller stops
//!   waiting one second past the deadline; a straggler finishes in the background and returns
//!   its engine to the pool. The cost is one thread start per page (microseconds) and, for a
//!   pathological page, CPU spent after the caller has moved on.
//! * **`OMP_THREAD_LIMIT=1` is mandatory.** Debian's Tesseract is built with OpenMP, which on
//!   two cores makes a page 5–6× slower, and libgomp reads the limit when it loads, before
//!   `main`. A binary using this crate calls [`ensure_omp_thread_limit`] first thing in `main`;
//!   parallelism comes from pages on separate threads instead.
//! * **Refuse before allocating.** Page and pixel limits are checked from headers (`pdfinfo`
//!   page boxes, image headers) before anything is rendered or decoded, so a "PDF bomb" costs
//!   milliseconds.
//! * **Rotation.** With [`ReadOptions::detect_rotation`], a page is first read as it is.
//!   Tesseract reads a page turned a quarter clockwise correctly but boxes it sideways; that is
//!   recognised from the word boxes and the boxes are turned, at no extra cost. Only when the
//!   first reading is poor (upside down, or turned the other quarter) does Tesseract's
//!   orientation detection (the `osd` data, ≈0.1–0.5 s) run, and a second reading of the turned
//!   image replaces the first if it is better. Upright pages, the common case, cost nothing
//!   extra; an upside-down page costs about two readings. Boxes are relative to the upright
//!   page, i.e. after the clockwise rotation reported in [`PageText::rotation`].
//! * **Prepared pages.** Before OCR a page is prepared (`prepare.rs`): a photographed page is
//!   found on its desk and flattened, skew of 0.4° or more is turned back, and light that
//!   varies across the page is divided out. Decided on a small copy (≈8 ms of CPU for a
//!   300-DPI page); a clean, straight scan is read as decoded. Every word's box is mapped back
//!   onto the image as stored, so it sits on the printed value there.
//! * **Rule marks out.** Table borders and underlines are long, thin, straight runs of ink.
//!   Tesseract keeps them on the page (its layout analysis uses them), but what it reads from
//!   them as text is taken out after OCR ([`RuleLines::DropMarks`], the default): a word
//!   whose ink is all rule (`|`, `ee`) goes, and so do glyphs at a word's ends that sit on a
//!   rule (`|Shipper` becomes `Shipper`, its box narrowed). Only the pixels around each word
//!   are examined (`rule_lines.rs`). [`RuleLines::Erase`] takes rules off the image before
//!   OCR instead; it was measured to cost fields (`bench/rule-lines`).
//! * **Cache by content.** With a [`PageCache`], an OCRed page is stored under a digest of the
//!   source bytes and page index (so reprocessing a file skips rendering and OCR) and of the
//!   rendered pixels (so the same scan inside another file is recognised too). Keys include
//!   the languages, DPI, text-layer threshold, rotation and rule-line settings and Tesseract
//!   version.
//!   Text-layer pages are not cached: extracting them again costs what reading the cache would.
//! * **Only clean text leaves.** Every word, from the text layer, Tesseract or the cache, is
//!   stripped of control characters (but tab, newline and CR) and Unicode noncharacters, and
//!   dropped with its box if nothing is left (`text_clean.rs`): a PDF can map a glyph to
//!   U+0000, which PostgreSQL refuses to store.
//!
//! # Errors
//!
//! Every failure caused by the input (corrupt, truncated, encrypted, too many pages, too many
//! pixels, a page over its deadline) is [`ReadError::Terminal`] with a message naming the page;
//! failures of the machine (I/O, a tool or thread that cannot be started, missing language
//! data) are [`ReadError::Retryable`].
//!
//! # Needs on the host
//!
//! Debian packages `poppler-utils`, `tesseract-ocr`, `tesseract-ocr-osd` (orientation),
//! `tesseract-ocr-<lang>` for each language used, and to build: `libtesseract-dev`,
//! `libleptonica-dev`, `clang`, `libclang-dev`, `pkg-config`.

#![deny(missing_docs)]

mod budget;
mod cache;
mod confusables;
mod engine;
mod gray;
mod images;
#[cfg(test)]
mod images_fuzz;
mod ocr;
mod pdf;
mod prepare;
mod preview;
mod process;
mod resolution;
mod rule_lines;
mod scan_page;
mod second_look;
mod text_clean;
mod text_height;
mod unread_ink;

pub use budget::PageBudget;
pub use cache::{DirPageCache, PageCache};
pub use preview::{render_preview, PreviewLimits};
pub use second_look::{Crop, CropMode, PageCrops, CROP_BUDGET_PER_PAGE, CROP_TEXT_HEIGHT_PX};

use gray::Gray;
use ironclad_core::media::MediaType;
use ironclad_core::page::{BBox, PageText, ReadMethod, Word};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// Pixels a page too large for the pixel limit at [`ReadOptions::dpi`] is rendered with: an A4
/// page at 350 DPI. A photo saved as a PDF at 72 DPI gets back about its own pixels.
const FITTED_PAGE_PIXELS: u64 = 12_000_000;
/// Lowest resolution such a page is rendered at: one that would need less is no document (a
/// 100 000 pt square is refused), while a 48-megapixel photo saved at 72 DPI reads at 36.
const MIN_FITTED_DPI: u32 = 24;

/// The default of [`ReadOptions::text_height_px`]. The fixtures' scans are 8.5–9 pt type,
/// ≈27 px at 300 DPI by this estimate. Their field accuracy (278 fields, `accuracy_report`)
/// was 253 at full resolution, 253 at 15 px, 252 at 17, 255 at 18 and 258 at 20, in 55–80 %
/// of the full-resolution time: single OCR slips move either way, and 20 px is the best of
/// them with the speed still gained.
pub const DEFAULT_TEXT_HEIGHT_PX: Option<u32> = Some(20);

/// [`ReadOptions::text_height_px`] from a setting: unset is the default, 0 is off.
pub fn text_height_setting(setting: Option<u32>) -> Option<u32> {
    match setting {
        None => DEFAULT_TEXT_HEIGHT_PX,
        Some(0) => None,
        Some(h) => Some(h),
    }
}

/// How pages are read and what input is refused.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadOptions {
    /// Tesseract languages joined with `+`, e.g. `"eng+fra"` (each needs its
    /// `tesseract-ocr-<lang>` package). Every extra language slows OCR. Default `"eng"`.
    pub languages: String,
    /// Resolution scanned PDF pages are rendered at. Default 300, Tesseract's sweet spot.
    pub dpi: u32,
    /// Most pages accepted in one file; more is a terminal error. Default 500.
    pub max_pages: u32,
    /// Most pixels (width × height) of one page, rendered or decoded; a larger page is refused
    /// before it is rendered or decoded. Default 60 M (an A4 page at 300 DPI is 8.7 M, A3 17.4 M).
    pub max_pixels_per_page: u64,
    /// Longest one scanned page may take from its turn to its result (rendering, OCR), and
    /// longest one `pdftotext` run (up to 64 pages of text layer) may take; over it is a
    /// terminal error, returned at most about a second after the deadline. Default 120 s.
    pub page_timeout: Duration,
    /// A PDF page whose text layer has fewer letters and digits than this is OCRed instead.
    /// Default 25.
    pub min_text_layer_chars: usize,
    /// Detect pages turned by 90°, 180° or 270° and read them upright. Default true.
    pub detect_rotation: bool,
    /// What becomes of table borders and underlines that Tesseract reads as text (`|`, `ee`,
    /// `|Shipper`). Default [`RuleLines::DropMarks`].
    pub rule_lines: RuleLines,
    /// Scale each scanned page so its body text is about this many pixels tall before OCR
    /// (estimated from the page, see `text_height`): Tesseract's cost grows with pixels, its
    /// recognizer does not need more. Pages are never enlarged nor taken below 200 DPI, and
    /// images of unknown resolution are left alone. `None` reads every page at
    /// [`ReadOptions::dpi`] or the image's own size. Default [`DEFAULT_TEXT_HEIGHT_PX`].
    pub text_height_px: Option<u32>,
    /// Read regions of a page again on their own where the analysis finds a doubtful value
    /// (see `second_look.rs` and [`PageReader::read_crops`]); the reader only carries the
    /// setting for its callers. Default true.
    pub second_look: bool,
    /// Scanned pages rendered and recognized at once, each with its own Tesseract engine,
    /// shared by every concurrent call on the reader (calls queue for turns, oldest first):
    /// size it to the cores left for OCR. Default: the number of available cores.
    pub threads: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            languages: "eng".into(),
            dpi: 300,
            max_pages: 500,
            max_pixels_per_page: 60_000_000,
            page_timeout: Duration::from_secs(120),
            min_text_layer_chars: 25,
            detect_rotation: true,
            rule_lines: RuleLines::DropMarks,
            text_height_px: DEFAULT_TEXT_HEIGHT_PX,
            second_look: true,
            threads: thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        }
    }
}

/// What becomes of rule lines (table borders, underlines) on scanned pages.
///
/// Tesseract finds long rules itself and uses them to tell cells and columns apart, but it
/// still reads some as text: a border beside a word as `|` or glued to it (`|Shipper`), a
/// blurred one as `ee`. Erasing rules from the image first (`Erase`) was measured to lose
/// fields elsewhere on the page (`bench/rule-lines`), so the default leaves the image alone
/// and takes out, after OCR, the words and the glyphs at a word's ends whose ink is all rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuleLines {
    /// Keep whatever Tesseract read.
    Keep,
    /// Take out the words, and the glyphs at a word's ends, made only of a rule's ink.
    #[default]
    DropMarks,
    /// Take rules off the page image before OCR (experimental: it changes Tesseract's layout
    /// analysis and costs fields on some pages).
    Erase,
}

impl std::str::FromStr for RuleLines {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "keep" => Ok(RuleLines::Keep),
            "drop-marks" => Ok(RuleLines::DropMarks),
            "erase" => Ok(RuleLines::Erase),
            other => Err(format!(
                "unknown rule-line handling {other:?} (expected keep, drop-marks or erase)"
            )),
        }
    }
}

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The input itself is unreadable or refused (corrupt, truncated, encrypted, too many
    /// pages or pixels, a page over its deadline): retrying the same bytes cannot help.
    #[error("{0}")]
    Terminal(String),
    /// The machine failed (I/O, a tool or thread that could not start, missing Tesseract
    /// data): the same input may succeed later.
    #[error("{0}")]
    Retryable(String),
}

impl ReadError {
    /// Whether retrying may help.
    pub fn is_retryable(&self) -> bool {
        matches!(self, ReadError::Retryable(_))
    }
}

/// Reads documents page by page. Share one per process (it is `Sync`): it owns the pool of
/// Tesseract engines, each loaded once and reused.
pub struct PageReader {
    opts: ReadOptions,
    cache: Option<Arc<dyn PageCache>>,
    /// The engine pool and counters, shared with the OCR threads (which may outlive a call
    /// whose page timed out).
    ocr: Arc<ocr::OcrPool>,
    /// Turns for scanned pages, shared by every concurrent call: at most `threads` pages are
    /// rendered and recognized at once.
    budget: Arc<PageBudget>,
    /// Scanned PDF pages rendered in-process rather than by `pdftoppm`.
    rendered_in_process: AtomicU64,
    /// Pixels handed to Tesseract, after scaling to the text height.
    pixels_recognized: AtomicU64,
}

impl std::fmt::Debug for PageReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageReader")
            .field("opts", &self.opts)
            .field("cache", &self.cache.is_some())
            .field("ocr_calls", &self.ocr_calls())
            .finish_non_exhaustive()
    }
}

/// One read call: the document's digest (for cache keys), its place in the budget's queue, and
/// the caller's cancel flag.
struct Call<'a> {
    digest: [u8; 32],
    number: u64,
    cancel: Option<&'a AtomicBool>,
}

impl Call<'_> {
    fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }
}

/// A document whose scanned pages are ready to be read one by one.
enum Source<'a> {
    Pdf {
        path: &'a Path,
        sizes: Vec<Option<pdf::PageSize>>,
        /// Pages that are one JPEG over the page, rendered in-process.
        plain: HashMap<u32, scan_page::PlainScan>,
    },
    Image {
        bytes: &'a [u8],
        format: image::ImageFormat,
    },
    Tiff {
        bytes: &'a [u8],
    },
}

impl PageReader {
    /// A reader with these options and an optional cache. Nothing is loaded until a page
    /// needs OCR.
    pub fn new(opts: ReadOptions, cache: Option<Arc<dyn PageCache>>) -> Self {
        let budget = Arc::new(PageBudget::new(opts.threads));
        Self::with_budget(opts, cache, budget)
    }

    /// A reader whose scanned pages take turns from `budget`, shared with other readers (one
    /// per language set, say) so the process as a whole keeps to it.
    pub fn with_budget(
        opts: ReadOptions,
        cache: Option<Arc<dyn PageCache>>,
        budget: Arc<PageBudget>,
    ) -> Self {
        PageReader {
            cache,
            ocr: Arc::new(ocr::OcrPool::new(&opts)),
            budget,
            rendered_in_process: AtomicU64::new(0),
            pixels_recognized: AtomicU64::new(0),
            opts,
        }
    }

    /// The options in force.
    pub fn options(&self) -> &ReadOptions {
        &self.opts
    }

    /// How many times Tesseract has recognized a page image since this reader was made (a
    /// rotated page may count twice). Cache hits and text-layer pages count nothing.
    pub fn ocr_calls(&self) -> u64 {
        self.ocr.ocr_calls()
    }

    /// How many scanned PDF pages were plain scans (one JPEG over the page) rendered
    /// in-process rather than by `pdftoppm`.
    pub fn pages_rendered_in_process(&self) -> u64 {
        self.rendered_in_process.load(Ordering::Relaxed)
    }

    /// How many pixels were handed to Tesseract (once per page, whatever its rotation), after
    /// pages were scaled to [`ReadOptions::text_height_px`].
    pub fn pixels_recognized(&self) -> u64 {
        self.pixels_recognized.load(Ordering::Relaxed)
    }

    /// How many recognition engines (≈50–100 MB each) this reader has loaded: at most
    /// [`ReadOptions::threads`] while no page has overrun its deadline, however many calls
    /// run at once.
    pub fn engines_loaded(&self) -> u64 {
        self.ocr.engines_loaded()
    }

    /// Reads every page of the file at `path`, whose type the caller has sniffed from its
    /// bytes. Blocks; scanned pages are read in parallel on up to [`ReadOptions::threads`]
    /// threads (within the reader's page budget) and returned in page order.
    pub fn read_file(&self, path: &Path, media: MediaType) -> Result<Vec<PageText>, ReadError> {
        let bytes = std::fs::read(path)
            .map_err(|e| ReadError::Retryable(format!("could not read {}: {e}", path.display())))?;
        self.read_with(&bytes, media, Some(path), None)
    }

    /// Reads every page of a document held in memory (a PDF is written to a temporary file
    /// for poppler). Otherwise as [`PageReader::read_file`].
    pub fn read_bytes(&self, bytes: &[u8], media: MediaType) -> Result<Vec<PageText>, ReadError> {
        self.read_with(bytes, media, None, None)
    }

    /// Reads every page of a document whose bytes the caller already holds, read from `path`
    /// (for example to check its digest): poppler reads `path`, so no temporary copy is made.
    /// Otherwise as [`PageReader::read_file`]. The file must not change while it is read.
    pub fn read_loaded(
        &self,
        path: &Path,
        bytes: &[u8],
        media: MediaType,
    ) -> Result<Vec<PageText>, ReadError> {
        self.read_with(bytes, media, Some(path), None)
    }

    /// As [`PageReader::read_loaded`], giving up once `cancel` is set: no page starts after it
    /// (a page already being recognized finishes in the background, within its deadline), and
    /// the call returns [`ReadError::Retryable`]. For a caller that stops waiting, such as a job
    /// past its timeout, so its pages stop taking turns from files still being read.
    pub fn read_loaded_until(
        &self,
        path: &Path,
        bytes: &[u8],
        media: MediaType,
        cancel: &AtomicBool,
    ) -> Result<Vec<PageText>, ReadError> {
        self.read_with(bytes, media, Some(path), Some(cancel))
    }

    /// Reads regions of pages again, each on its own (see `second_look.rs`): for each entry
    /// of `pages`, one list of words per crop, boxes on the page as stored like the first
    /// reading's. `bytes`, `media` and `path` are the document the pages were read from, which
    /// has `page_count` pages. Each page with crops is decoded and prepared again as it was for
    /// its first reading, during a turn of the page budget; the call gives up once `cancel` is
    /// set. Blocks.
    pub fn read_crops(
        &self,
        bytes: &[u8],
        media: MediaType,
        path: Option<&Path>,
        page_count: usize,
        pages: &[PageCrops<'_>],
        cancel: Option<&AtomicBool>,
    ) -> Result<Vec<Vec<Vec<Word>>>, ReadError> {
        let indices: Vec<u32> = pages
            .iter()
            .filter(|p| !p.crops.is_empty())
            .map(|p| p.page.index)
            .collect();
        if indices.is_empty() {
            return Ok(pages.iter().map(|_| Vec::new()).collect());
        }
        let temp;
        let source = match media {
            MediaType::Pdf => {
                check_pdf_complete(bytes)?;
                let path = match path {
                    Some(p) => p,
                    None => {
                        temp = write_temp(bytes)?;
                        temp.path()
                    }
                };
                self.pdf_source(bytes, path, &indices, page_count)?
            }
            MediaType::Png => Source::Image {
                bytes,
                format: image::ImageFormat::Png,
            },
            MediaType::Jpeg => Source::Image {
                bytes,
                format: image::ImageFormat::Jpeg,
            },
            MediaType::Tiff => Source::Tiff { bytes },
        };
        let number = self.budget.call_number();
        let mut out = Vec::with_capacity(pages.len());
        for p in pages {
            if p.crops.is_empty() {
                out.push(Vec::new());
                continue;
            }
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Err(ReadError::Retryable("the read was cancelled".into()));
            }
            let _turn = self.budget.turn(number);
            let deadline = Instant::now() + self.opts.page_timeout;
            let (img, dpi, _) = self.page_image(&source, p.page.index, deadline)?;
            let page = second_look::PreparedPage::for_crops(img, dpi);
            out.push(second_look::read_crops(
                &self.ocr, &page, p.page, &p.crops, deadline,
            )?);
        }
        Ok(out)
    }

    /// How many crops a second look has read since this reader was made.
    pub fn crops_read(&self) -> u64 {
        self.ocr.crops_read()
    }

    /// Reads every page of a document held in memory; poppler reads `path` when given (the
    /// same bytes, already on disk), else a temporary copy; gives up once `cancel` is set (see
    /// [`PageReader::read_loaded_until`]). The general form of the other `read_*` calls.
    pub fn read_with(
        &self,
        bytes: &[u8],
        media: MediaType,
        path: Option<&Path>,
        cancel: Option<&AtomicBool>,
    ) -> Result<Vec<PageText>, ReadError> {
        if bytes.is_empty() {
            return Err(ReadError::Terminal(
                "the document is empty (0 bytes)".into(),
            ));
        }
        let call = Call {
            digest: Sha256::digest(bytes).into(),
            number: self.budget.call_number(),
            cancel,
        };
        let max_pixels = self.opts.max_pixels_per_page;
        let image = |format| Source::Image { bytes, format };
        match media {
            MediaType::Pdf => self.read_pdf(bytes, path, &call),
            MediaType::Png => self.read_scans(&image(image::ImageFormat::Png), &call, &[0]),
            MediaType::Jpeg => self.read_scans(&image(image::ImageFormat::Jpeg), &call, &[0]),
            MediaType::Tiff => {
                let pages = images::tiff_page_count(bytes, self.opts.max_pages, max_pixels)?;
                let all: Vec<u32> = (0..pages).collect();
                self.read_scans(&Source::Tiff { bytes }, &call, &all)
            }
        }
    }

    /// A PDF: `pdftotext` gives every page's text layer (and the page count, see
    /// [`PageReader::text_layers`]); pages without real text are then rendered and OCRed.
    fn read_pdf(
        &self,
        bytes: &[u8],
        path: Option<&Path>,
        call: &Call,
    ) -> Result<Vec<PageText>, ReadError> {
        check_pdf_complete(bytes)?;
        // A temporary copy for poppler, kept alive until the pages are read.
        let temp;
        let path = match path {
            Some(p) => p,
            None => {
                temp = write_temp(bytes)?;
                temp.path()
            }
        };
        let layers = self.text_layers(path)?;
        let mut pages: Vec<Option<PageText>> = layers
            .into_iter()
            .zip(0u32..)
            .map(|(layer, index)| {
                (layer.alphanumerics() >= self.opts.min_text_layer_chars).then_some(PageText {
                    line_blocks: layer.line_blocks,
                    index,
                    method: ReadMethod::TextLayer,
                    confidence: 1.0,
                    rotation: 0,
                    size_pt: layer.size_pt,
                    words: layer.words,
                })
            })
            .collect();
        let scanned: Vec<u32> = (0u32..)
            .zip(&pages)
            .filter_map(|(i, p)| p.is_none().then_some(i))
            .collect();
        if !scanned.is_empty() {
            let source = self.pdf_source(bytes, path, &scanned, pages.len())?;
            for page in self.read_scans(&source, call, &scanned)? {
                let slot = pages.get_mut(page.index as usize);
                if let Some(slot) = slot {
                    *slot = Some(page);
                }
            }
        }
        pages
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ReadError::Retryable("some pages were not read".into()))
    }

    /// The scanned pages `scanned` of a PDF of `page_count` pages, ready to be rendered: plain
    /// JPEG scans are found in the PDF's objects, the others rendered by `pdftoppm`.
    fn pdf_source<'a>(
        &self,
        bytes: &[u8],
        path: &'a Path,
        scanned: &[u32],
        page_count: usize,
    ) -> Result<Source<'a>, ReadError> {
        let (max_pages, timeout) = (self.opts.max_pages, self.opts.page_timeout);
        let plain = scan_page::plain_scans(bytes, scanned, page_count, max_pages);
        // Page sizes, for the pixel limit before rendering: plain scans know theirs.
        let mut sizes = if scanned.iter().all(|i| plain.contains_key(i)) {
            vec![None; page_count]
        } else {
            pdf::pdf_info(path, max_pages, timeout)?.sizes
        };
        sizes.resize(page_count, None);
        for (&i, scan) in &plain {
            if let Some(slot) = sizes.get_mut(i as usize) {
                *slot = Some(scan.size);
            }
        }
        Ok(Source::Pdf { path, sizes, plain })
    }

    /// Every page's text layer, in runs of [`pdf::TEXT_LAYER_RUN`] pages each with its own
    /// page timeout. The first run settles most documents; when it comes back full, `pdfinfo`
    /// gives the page count (refused over the limit before any more is read) and the rest
    /// follows.
    fn text_layers(&self, path: &Path) -> Result<Vec<pdf::TextLayer>, ReadError> {
        let (max_pages, timeout) = (self.opts.max_pages, self.opts.page_timeout);
        let refuse = |count: String| {
            ReadError::Terminal(format!(
                "the PDF has {count} pages, over the limit of {max_pages}"
            ))
        };
        // pdfinfo counts the pages without visiting them.
        let count = || pdf::pdf_info(path, 1, timeout).map(|info| info.pages);
        // One page past the limit tells "too many" without extracting the rest.
        let first_run = pdf::TEXT_LAYER_RUN.min(max_pages.saturating_add(1));
        let mut layers = pdf::text_layers(path, 1, first_run, timeout)?;
        if layers.len() > max_pages as usize {
            let count =
                count().map_or_else(|_| format!("more than {max_pages}"), |n| n.to_string());
            return Err(refuse(count));
        }
        if layers.len() == first_run as usize {
            let pages = count()?;
            if pages > max_pages {
                return Err(refuse(pages.to_string()));
            }
            let mut next = first_run + 1;
            while next <= pages {
                let last = pages.min(next + pdf::TEXT_LAYER_RUN - 1);
                layers.extend(pdf::text_layers(path, next, last, timeout)?);
                next = last + 1;
            }
            if layers.len() != pages as usize {
                return Err(ReadError::Terminal(format!(
                    "pdftotext read {} of the {pages} pages pdfinfo counts",
                    layers.len()
                )));
            }
        }
        if layers.is_empty() {
            return Err(ReadError::Terminal("the PDF has no pages".into()));
        }
        Ok(layers)
    }

    /// Reads the scanned pages `indices` (0-based, ascending) on up to `threads` threads;
    /// stops handing out pages after the first failure or once the call is cancelled.
    fn read_scans(
        &self,
        source: &Source,
        call: &Call,
        indices: &[u32],
    ) -> Result<Vec<PageText>, ReadError> {
        let threads = self.opts.threads.clamp(1, indices.len().max(1));
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let stop = || failed.load(Ordering::Relaxed) || call.cancelled();
        let work = || {
            let mut done = Vec::new();
            while !stop() {
                let Some(&i) = indices.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                match self.read_scan(source, call, i, &stop) {
                    Ok(Some(page)) => done.push((i, Ok(page))),
                    // Stopped while waiting for a turn: the reason is another page's result.
                    Ok(None) => break,
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        done.push((i, Err(e)));
                    }
                }
            }
            done
        };
        let panicked = || {
            vec![(
                u32::MAX,
                Err(ReadError::Retryable("a page reader panicked".into())),
            )]
        };
        let mut results: Vec<(u32, Result<PageText, ReadError>)> = if threads == 1 {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                .unwrap_or_else(|_| panicked())
        } else {
            thread::scope(|s| {
                let mut handles = Vec::new();
                for n in 0..threads {
                    match thread::Builder::new()
                        .name(format!("ocr-worker-{n}"))
                        .spawn_scoped(s, work)
                    {
                        Ok(h) => handles.push(h),
                        // Fewer threads still read every page; none at all is the machine's fault.
                        Err(e) if handles.is_empty() => {
                            return vec![(
                                0,
                                Err(ReadError::Retryable(format!(
                                    "could not start a reader thread: {e}"
                                ))),
                            )]
                        }
                        Err(_) => break,
                    }
                }
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_else(|_| panicked()))
                    .collect()
            })
        };
        results.sort_by_key(|(i, _)| *i);
        // A terminal error decides the file's fate even if another page hit a transient one.
        if let Some(pos) = results
            .iter()
            .position(|(_, r)| matches!(r, Err(ReadError::Terminal(_))))
        {
            return Err(results.swap_remove(pos).1.unwrap_err());
        }
        let out: Vec<PageText> = results
            .into_iter()
            .map(|(_, r)| r)
            .collect::<Result<_, _>>()?;
        if call.cancelled() {
            return Err(ReadError::Retryable("the read was cancelled".into()));
        }
        if out.len() != indices.len() {
            return Err(ReadError::Retryable("some pages were not read".into()));
        }
        Ok(out)
    }

    /// One scanned page: from the cache, or rendered/decoded and OCRed during one of the
    /// budget's turns; `None` when `stop` says so once the turn comes (nothing was read).
    fn read_scan(
        &self,
        source: &Source,
        call: &Call,
        index: u32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<PageText>, ReadError> {
        let source_key = self.source_key(&call.digest, index);
        if let Some(hit) = self.cache_get(&source_key, index) {
            return Ok(Some(hit));
        }
        let turn = self.budget.turn(call.number);
        if stop() {
            return Ok(None);
        }
        // The page's clock starts with its turn: time spent queued behind other files' pages
        // says nothing about this page.
        let deadline = Instant::now() + self.opts.page_timeout;
        let (img, dpi, fitted) = self.page_image(source, index, deadline)?;
        let page = self.ocr_page(img, dpi, fitted, index, deadline, turn)?;
        if let Some(cache) = &self.cache {
            cache.put(&source_key, &page);
        }
        Ok(Some(page))
    }

    /// Page `index` of `source` as a gray image, its resolution when known, and whether it was
    /// already rendered at the resolution its text needs (a plain JPEG scan). The pixel limit
    /// is checked before anything is rendered or decoded.
    fn page_image(
        &self,
        source: &Source,
        index: u32,
        deadline: Instant,
    ) -> Result<(Gray, Option<u32>, bool), ReadError> {
        let page_no = index + 1;
        let max_pixels = self.opts.max_pixels_per_page;
        Ok(match source {
            Source::Pdf { path, sizes, plain } => {
                let size = sizes
                    .get(index as usize)
                    .copied()
                    .flatten()
                    .ok_or_else(|| {
                        ReadError::Terminal(format!(
                            "page {page_no}: the PDF gives this page no size"
                        ))
                    })?;
                let mut dpi = self.opts.dpi.max(1);
                let pixels = size.pixels_at(dpi);
                if pixels > max_pixels {
                    // A page far larger than paper: a phone's photo saved as a PDF at 72 DPI
                    // is a page of its pixels in points (3000×4000 pt). It is rendered with
                    // the pixels of a well-scanned page, about its image's own; only a page
                    // too large even at a coarse resolution is refused.
                    let target = FITTED_PAGE_PIXELS.min(max_pixels) as f64;
                    let fit = (f64::from(dpi) * (target / pixels as f64).sqrt()).floor() as u32;
                    if fit < MIN_FITTED_DPI {
                        return Err(ReadError::Terminal(format!(
                            "page {page_no}: {:.0}×{:.0} pt is {pixels} pixels at {dpi} DPI, over the limit of {max_pixels} even at {MIN_FITTED_DPI} DPI",
                            size.width_pt, size.height_pt
                        )));
                    }
                    dpi = fit;
                }
                let text_height = self.opts.text_height_px;
                match plain
                    .get(&index)
                    .and_then(|p| p.render_fitted(dpi, max_pixels, text_height))
                {
                    Some((img, dpi)) => {
                        self.rendered_in_process.fetch_add(1, Ordering::Relaxed);
                        (img, Some(dpi), true)
                    }
                    None => {
                        let img = pdf::render_page(
                            path,
                            page_no,
                            dpi,
                            max_pixels,
                            remaining(deadline, page_no)?,
                        )?;
                        (img, Some(dpi), false)
                    }
                }
            }
            Source::Image { bytes, format } => {
                let (img, dpi) = images::decode_single(bytes, *format, max_pixels)?;
                (img, dpi, false)
            }
            Source::Tiff { bytes } => {
                let (img, dpi) = images::decode_tiff_page(bytes, index, max_pixels)?;
                (img, dpi, false)
            }
        })
    }

    /// OCRs one page image, through the pixel-keyed cache, during `turn`.
    fn ocr_page(
        &self,
        img: Gray,
        dpi: Option<u32>,
        fitted: bool,
        index: u32,
        deadline: Instant,
        turn: budget::Turn,
    ) -> Result<PageText, ReadError> {
        // Hashing 8.7 MP costs ≈10 ms a page: only worth it with a cache to ask.
        let pixel_key = self.cache.is_some().then(|| self.pixel_key(&img, dpi));
        if let Some(hit) = pixel_key.as_ref().and_then(|k| self.cache_get(k, index)) {
            return Ok(hit);
        }
        // The page's size in points is the stored image's: the words' boxes are mapped onto it
        // (a flattened photo's page is another size, and may be given a resolution of its own).
        let stored_pt = dpi.filter(|d| *d > 0).map(|d| {
            let points = |px: u32| px as f32 * 72.0 / d as f32;
            [points(img.width), points(img.height)]
        });
        // Uneven light, a photographed page's perspective and skew are undone first; what is
        // read on the prepared image is mapped back onto the stored one below.
        let prepare::Prepared {
            img,
            geometry,
            threshold,
            dpi,
        } = prepare::prepare(img, dpi);
        let (mut img, dpi) = if fitted {
            (img, dpi)
        } else {
            self.fit_text_height(img, dpi, index)
        };
        if self.opts.rule_lines == RuleLines::Erase {
            let erased = rule_lines::erase(&mut img);
            tracing::debug!(
                page = index + 1,
                pixels = erased.pixels,
                "rule lines removed"
            );
        }
        let (width, height) = (img.width, img.height);
        self.pixels_recognized
            .fetch_add(u64::from(width) * u64::from(height), Ordering::Relaxed);
        // Kept to look again at ink the reading leaves without words (`unread_ink`).
        let kept = img.clone();
        let (rotation, mut words) =
            ocr::read_with_deadline(&self.ocr, img, dpi, threshold, index + 1, deadline, turn)?;
        let unread = text_height::body_text_height(&kept).map_or_else(Vec::new, |text_px| {
            let read: Vec<BBox> = words
                .iter()
                .map(|w| prepare::unturn_box(w.bbox, rotation))
                .collect();
            unread_ink::unread_regions(&kept, &read, text_px)
        });
        if !geometry.is_identity() {
            for w in &mut words {
                let unturned = prepare::unturn_box(w.bbox, rotation);
                w.bbox = prepare::turn_box(geometry.box_to_stored(unturned), rotation);
            }
        }
        if !unread.is_empty() {
            let crops: Vec<second_look::Crop> = unread
                .into_iter()
                .map(|c| second_look::Crop {
                    bbox: prepare::turn_box(geometry.box_to_stored(c.bbox), rotation),
                    ..c
                })
                .collect();
            let found = second_look::read_crops(
                &self.ocr,
                &second_look::PreparedPage {
                    img: kept,
                    geometry: geometry.clone(),
                    dpi,
                },
                &PageText {
                    index,
                    method: ReadMethod::Ocr,
                    confidence: 0.0,
                    rotation,
                    size_pt: None,
                    words: Vec::new(),
                    line_blocks: Vec::new(),
                },
                &crops,
                deadline,
            )?;
            let added = unread_ink::merge(&mut words, found);
            tracing::debug!(
                page = index + 1,
                regions = ?crops.iter().map(|c| c.bbox).collect::<Vec<_>>(),
                words = added,
                "ink without words read again"
            );
        }
        // A quarter turn swaps the sides.
        let size_pt = stored_pt.map(|[w, h]| match rotation {
            90 | 270 => [h, w],
            _ => [w, h],
        });
        let page = PageText {
            line_blocks: Vec::new(),
            index,
            method: ReadMethod::Ocr,
            confidence: engine::mean_confidence(&words),
            rotation,
            size_pt,
            words,
        };
        if let (Some(cache), Some(key)) = (&self.cache, &pixel_key) {
            cache.put(key, &page);
        }
        Ok(page)
    }

    /// The page scaled so its body text is [`ReadOptions::text_height_px`] tall, and the
    /// resolution that makes it; unchanged when off, when the page has too little text to
    /// tell, or when its text is already small.
    fn fit_text_height(&self, img: Gray, dpi: Option<u32>, index: u32) -> (Gray, Option<u32>) {
        let Some(target) = self.opts.text_height_px else {
            return (img, dpi);
        };
        let s = text_height::fitted(&img, 1.0, target, dpi);
        tracing::debug!(page = index + 1, scale = s, "scaled to its text height");
        if s >= 1.0 {
            return (img, dpi);
        }
        // Tesseract takes a whole resolution: scale to exactly that one, so the page keeps its
        // size in points.
        let fitted_dpi = dpi.map(|d| ((f64::from(d) * s).round() as u32).max(1));
        let s = match (dpi, fitted_dpi) {
            (Some(d), Some(f)) => f64::from(f) / f64::from(d),
            _ => s,
        };
        match text_height::scaled(&img, s) {
            Some(smaller) => (smaller, fitted_dpi),
            None => (img, dpi),
        }
    }

    /// The cache key of page `index` of the source with SHA-256 `digest`: it depends on every
    /// setting that can change how the page is read.
    fn source_key(&self, digest: &[u8; 32], index: u32) -> String {
        let o = &self.opts;
        let settings = format!(
            "{}\0{}\0{}\0{}\0{:?}\0{:?}",
            o.languages,
            o.dpi,
            o.min_text_layer_chars,
            o.detect_rotation,
            o.rule_lines,
            o.text_height_px
        );
        cache_key(&[b"source", digest, &index.to_le_bytes(), settings.as_bytes()])
    }

    /// The cache key of an OCR reading of these pixels: only the OCR settings and the
    /// resolution hint matter, whatever file the pixels came from.
    fn pixel_key(&self, img: &Gray, dpi: Option<u32>) -> String {
        let o = &self.opts;
        let settings = format!(
            "{}\0{:?}\0{}\0{:?}\0{:?}",
            o.languages, dpi, o.detect_rotation, o.rule_lines, o.text_height_px
        );
        cache_key(&[b"pixels", &img.digest(), settings.as_bytes()])
    }

    fn cache_get(&self, key: &str, index: u32) -> Option<PageText> {
        let mut page = self.cache.as_ref()?.get(key)?;
        // The same pixels may be another page of another file.
        page.index = index;
        // A cache is outside storage (or older code wrote it): its words are cleaned like
        // words just read.
        text_clean::clean_words(&mut page.words);
        Some(page)
    }
}

/// Hex SHA-256 of the length-prefixed `parts`, the format version and the Tesseract version
/// (an upgrade re-reads pages rather than trusting old results).
fn cache_key(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    // 2: words from the result iterator, no fixed-pitch pass, image resolution hints.
    // 3: pages carry their size in points.
    // 4: `1`/`I` and `0`/`O` inside identifiers settled by the glyphs' shapes.
    // 5: words and end glyphs read from rule lines taken out (`RuleLines`).
    // 6: pages prepared first (`prepare.rs`): photos flattened, skew of 0.4° or more turned
    //    back, uneven light divided out; boxes mapped back onto the stored image.
    // 7: a confusable glyph's neighbours decide where its shape cannot (`890O`, `1NV…`).
    // 8: glyph ink measured at or below the threshold (bilevel pages' glyphs were not);
    //    neighbours decide only in a code's part of at most one change of class.
    // 9: a glyph's shape never breaks a code's letters-then-digits (`INV…` stays `INV…`);
    //    a stamp's grey ink faded out of a scan's text (`prepare/stamp.rs`); ink the reading
    //    left without words read again (`unread_ink.rs`).
    // 10: stamps faded by default, only where a grey stroke runs like a ring's arc and the
    //     text is large enough for its glyphs to have dark cores.
    h.update(b"ironclad-ocr/10\0");
    h.update(tesseract_version().as_bytes());
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(h.finalize())
}

pub(crate) fn remaining(deadline: Instant, page_no: u32) -> Result<Duration, ReadError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(ReadError::Terminal(format!(
            "page {page_no}: reading took longer than the page timeout"
        )))
    } else {
        Ok(left)
    }
}

/// A PDF must end with `%%EOF` (within its last KiB, as readers allow): without it the upload
/// was cut short, and poppler would otherwise "repair" it into a partial document.
fn check_pdf_complete(bytes: &[u8]) -> Result<(), ReadError> {
    let tail = &bytes[bytes.len().saturating_sub(1024)..];
    if !bytes[..bytes.len().min(1024)]
        .windows(5)
        .any(|w| w == b"%PDF-")
    {
        return Err(ReadError::Terminal(
            "the file is not a PDF (no %PDF- header)".into(),
        ));
    }
    if !tail.windows(5).any(|w| w == b"%%EOF") {
        return Err(ReadError::Terminal(
            "the PDF is truncated (no %%EOF marker at its end)".into(),
        ));
    }
    Ok(())
}

fn write_temp(bytes: &[u8]) -> Result<tempfile::NamedTempFile, ReadError> {
    let io = |e: std::io::Error| {
        ReadError::Retryable(format!("could not write a temporary copy of the PDF: {e}"))
    };
    let mut f = tempfile::Builder::new()
        .prefix("ironclad-ocr-")
        .suffix(".pdf")
        .tempfile()
        .map_err(io)?;
    f.write_all(bytes).and_then(|_| f.flush()).map_err(io)?;
    Ok(f)
}

/// The linked Tesseract's version, part of every cache key so an upgrade re-reads pages.
fn tesseract_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        // SAFETY: TessVersion returns a pointer to a static NUL-terminated string.
        unsafe {
            let p = leptess::capi::TessVersion();
            if p.is_null() {
                String::new()
            } else {
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    })
}

/// Most glibc malloc arenas a reading process keeps.
///
/// glibc gives each concurrently running thread its own arena (up to 8 per core), and an
/// arena keeps the page-sized buffers it has freed (rendered pages, Tesseract's images) for
/// reuse. A worker reading eight files at once runs ≈20 threads, and with the default the
/// worker-shaped benchmark peaked at 478–490 MB; with 2 arenas, 191–215 MB at the same speed
/// (measured, 2 OCR threads). A fixed mmap threshold returned the memory too, but cost 3.5×
/// the system time in page faults.
pub const MALLOC_ARENAS: i32 = 2;

/// Prepares the process for reading pages: [`ensure_omp_thread_limit`] (which may re-execute
/// the process), then caps glibc's malloc arenas at [`MALLOC_ARENAS`] so the memory of many
/// reading threads stays bounded, unless `MALLOC_ARENA_MAX` is set in the environment (an
/// explicit choice wins). No effect with other C libraries.
///
/// Call it **first thing in `main`**, before any thread starts.
pub fn prepare_process() {
    ensure_omp_thread_limit();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only changes allocator parameters; called before threads start.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}

/// Makes sure Tesseract runs single-threaded inside: if `OMP_THREAD_LIMIT` is not set,
/// replaces the current process with a fresh run of the same executable and arguments with
/// `OMP_THREAD_LIMIT=1` added; if it is set (to anything), returns at once.
///
/// Call it **first thing in `main`**, before starting threads or doing any work: libgomp
/// reads the variable when the process loads, so setting it later has no effect, and the
/// re-exec discards everything the process did so far. Without it a page takes 5–6× longer
/// on two cores (OpenMP threads fighting the page-level threads). If the re-exec itself fails
/// (the executable was deleted or replaced), it prints a warning to stderr and returns, and
/// the process carries on slowly.
///
/// ```no_run
/// // The first statement of `main`, before arguments, logging or the async runtime:
/// ironclad_ocr::ensure_omp_thread_limit();
/// ```
pub fn ensure_omp_thread_limit() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("OMP_THREAD_LIMIT").is_some() {
        return;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("warning: cannot re-run with OMP_THREAD_LIMIT=1 (executable path unknown: {e}); OCR will be slow");
            return;
        }
    };
    let mut args = std::env::args_os();
    let mut cmd = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        cmd.arg0(arg0);
    }
    let err = cmd.args(args).env("OMP_THREAD_LIMIT", "1").exec();
    eprintln!("warning: cannot re-run with OMP_THREAD_LIMIT=1 ({err}); OCR will be slow");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdf_completeness() {
        assert!(check_pdf_complete(b"%PDF-1.4\n...\n%%EOF\n").is_ok());
        let e = check_pdf_complete(b"%PDF-1.4\n... cut").unwrap_err();
        assert!(e.to_string().contains("truncated"));
        assert!(check_pdf_complete(b"GIF89a").is_err());
    }

    #[test]
    fn cache_keys_depend_on_what_changes_a_reading() {
        let base = PageReader::new(ReadOptions::default(), None);
        let fra = PageReader::new(
            ReadOptions {
                languages: "eng+fra".into(),
                ..ReadOptions::default()
            },
            None,
        );
        let dpi150 = PageReader::new(
            ReadOptions {
                dpi: 150,
                ..ReadOptions::default()
            },
            None,
        );
        let d = [7u8; 32];
        assert_eq!(base.source_key(&d, 0), base.source_key(&d, 0));
        assert_eq!(base.source_key(&d, 0).len(), 64);
        assert_ne!(base.source_key(&d, 0), base.source_key(&d, 1));
        assert_ne!(base.source_key(&d, 0), fra.source_key(&d, 0));
        assert_ne!(base.source_key(&d, 0), dpi150.source_key(&d, 0));
        let img = Gray::new(1, 1, vec![0]).unwrap();
        assert_ne!(base.pixel_key(&img, None), fra.pixel_key(&img, None));
        assert_ne!(base.pixel_key(&img, None), base.pixel_key(&img, Some(300)));
        // The rendering DPI setting does not matter once the pixels exist.
        assert_eq!(base.pixel_key(&img, None), dpi150.pixel_key(&img, None));
    }

    #[test]
    fn reader_is_shareable() {
        fn shareable<T: Send + Sync>() {}
        shareable::<PageReader>();
    }
}
