//! A second look at places on a page: regions read again on their own, after the whole page
//! was read.
//!
//! Tesseract reads a page as a whole: its layout analysis decides where lines and columns
//! are, and a value it split from its label (`Invoice No.: DPI` with `-2404-118` put in
//! another column), or a line it read under a global threshold in a page's shadow, stays
//! wrong. Read alone, the same pixels often come back whole: measured on the sample
//! declaration, the cropped line read as one line (`--psm 7`) gives `DPI-2404-118`.
//!
//! A crop is cut from the page as the first reading prepared it (the same decoding and
//! [`crate::prepare::prepare`], which are deterministic), turned upright, scaled so its text
//! is [`CROP_TEXT_HEIGHT_PX`] tall, given a white margin, binarized adaptively and read as
//! one line or one block. Its words' boxes are mapped back onto the stored page, like the
//! first reading's.
//!
//! What to look at is the caller's business (the extraction decides which values are
//! doubtful and where they should be); this module only reads. A page is decoded again for
//! its crops: the reader keeps no page image once a page is read, so memory stays bounded by
//! the page budget, and only pages with a doubtful value pay for it.

use crate::gray::Gray;
use crate::ocr;
use crate::prepare::{self, Geometry, Threshold};
use crate::{remaining, ReadError};
use fast_image_resize::ResizeAlg;
use ironclad_core::page::{BBox, PageText, Word};
use std::time::Instant;

/// How tall the text of a crop is made before it is read, in pixels. Tesseract's recognizer
/// reads capitals ≈25–35 px tall best; the first reading ran at ≈20 px to save time on whole
/// pages, a crop can afford more.
pub const CROP_TEXT_HEIGHT_PX: f32 = 34.0;
/// Largest enlargement of a crop: beyond it, interpolation only blurs.
const MAX_SCALE: f32 = 4.0;
/// White margin around a crop, in pixels after scaling: Tesseract finds no text touching the
/// image's edge reliably.
const MARGIN_PX: u32 = 12;
/// Most pixels of one crop after scaling: a crop is a line or a small block, never a page.
const MAX_CROP_PIXELS: u64 = 4_000_000;
/// How much processor time a page's crops may take once the page is decoded again; the crops
/// left when it runs out are not read (they give no words, and the first reading stands). A
/// line crop takes ≈40–150 ms on this project's machines, so the budget holds about a dozen:
/// what the extraction asks for at most on one page. Counted in the reading thread's CPU
/// time, not the clock's, so a busy machine reads the same crops as an idle one (the page
/// timeout still bounds the wall time).
pub const CROP_BUDGET_PER_PAGE: std::time::Duration = std::time::Duration::from_millis(2500);

/// How a crop is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CropMode {
    /// One line of text (Tesseract's page segmentation mode 7).
    Line,
    /// A block of lines (mode 6).
    Block,
}

/// One region of a page to read again.
#[derive(Debug, Clone, PartialEq)]
pub struct Crop {
    /// Where, on the page as stored and turned upright (the frame of [`PageText`]'s boxes).
    pub bbox: BBox,
    /// How to read it.
    pub mode: CropMode,
    /// The height of one line of the text expected there, in page heights (a label's box
    /// height does): what the crop is scaled by.
    pub line_height: f32,
}

/// The crops of one page, with the page as first read (its index and rotation).
#[derive(Debug, Clone)]
pub struct PageCrops<'a> {
    /// The page as read.
    pub page: &'a PageText,
    /// What to read on it.
    pub crops: Vec<Crop>,
}

/// The processor time this thread has used. Tesseract reads a crop in the calling thread
/// (one OpenMP thread, as the project runs it), so the difference of two calls is what the
/// crops between them cost.
fn thread_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// Steepest skew, in degrees, at which a bilevel page's crops are cut from the page as stored
/// rather than as deskewed: over a line crop a third of the page wide, a degree and a half
/// moves the baseline by about a third of a 150-DPI fax's line.
const STORED_CROP_MAX_SKEW_DEG: f64 = 1.5;

/// One page image as the first reading prepared it.
pub(crate) struct PreparedPage {
    pub img: Gray,
    pub geometry: Geometry,
    pub dpi: Option<u32>,
}

impl PreparedPage {
    /// The page image crops are cut from: as the first reading prepared it, except a bilevel
    /// page (a fax) turned back by a small skew, whose crops come from the page as stored.
    /// Resampling a 1-bit page to deskew it moves its edges by a pixel here and there, which
    /// costs a 150-DPI fax its digits: fax-03's `Total packages: 150` read `160` and its
    /// `SBE-25-4387` read `SRE-25-4397` on the deskewed page, both whole on the stored one
    /// (the `tesseract` CLI reads them there too). A line crop hardly feels a degree of skew.
    pub fn for_crops(img: Gray, dpi: Option<u32>) -> PreparedPage {
        if img.is_bilevel() && prepare::turns_at_most(&img, STORED_CROP_MAX_SKEW_DEG) {
            return PreparedPage {
                img,
                geometry: Geometry::identity(),
                dpi,
            };
        }
        let prepared = prepare::prepare(img, dpi);
        PreparedPage {
            img: prepared.img,
            geometry: prepared.geometry,
            dpi,
        }
    }
}

/// Reads every crop of `page` on `prepared`, the page's prepared image; one list of words per
/// crop, boxes on the stored upright page. A crop that cannot be read gives no words.
pub(crate) fn read_crops(
    pool: &ocr::OcrPool,
    prepared: &PreparedPage,
    page: &PageText,
    crops: &[Crop],
    deadline: Instant,
) -> Result<Vec<Vec<Word>>, ReadError> {
    let page_no = page.index + 1;
    let started = thread_cpu_time();
    let mut out = Vec::with_capacity(crops.len());
    for crop in crops {
        remaining(deadline, page_no)?;
        if thread_cpu_time().saturating_sub(started) >= CROP_BUDGET_PER_PAGE {
            tracing::debug!(
                page = page_no,
                left = crops.len() - out.len(),
                "second look: the page's budget is spent"
            );
            out.push(Vec::new());
            continue;
        }
        let Some(cut) = Cut::new(prepared, page.rotation, crop) else {
            out.push(Vec::new());
            continue;
        };
        let adaptive = ocr::recognize_crop(
            pool,
            &cut.img,
            cut.dpi,
            crop.mode,
            Threshold::Adaptive,
            page_no,
            deadline,
        )?;
        // The same pixels with only the darkest ink kept: a grey stamp or a shadow over the
        // value goes, print stays (`42,444#8°` under a RECEIVED stamp reads `42,444.36`).
        let words = match dark_ink_only(&cut.img) {
            Some(dark) => {
                let inked = ocr::recognize_crop(
                    pool,
                    &dark,
                    cut.dpi,
                    crop.mode,
                    Threshold::Global,
                    page_no,
                    deadline,
                )?;
                if reading_confidence(&inked) > reading_confidence(&adaptive) {
                    inked
                } else {
                    adaptive
                }
            }
            None => adaptive,
        };
        out.push(
            words
                .into_iter()
                .filter_map(|w| cut.to_page(w, &prepared.geometry, page.rotation))
                .collect(),
        );
    }
    Ok(out)
}

/// A crop cut from the prepared page, upright, scaled and framed, with what it takes to map
/// its boxes back.
struct Cut {
    img: Gray,
    dpi: Option<u32>,
    /// The crop's rectangle on the prepared (unturned) image, in pixels: x0, y0, x1, y1.
    rect: [u32; 4],
    /// Prepared image size, in pixels.
    page_size: (u32, u32),
    /// Scale applied to the upright crop, and its size before scaling.
    scale: f32,
    upright: (u32, u32),
}

impl Cut {
    fn new(prepared: &PreparedPage, rotation: u16, crop: &Crop) -> Option<Cut> {
        let (w, h) = (prepared.img.width, prepared.img.height);
        let on_prepared = prepared
            .geometry
            .box_to_prepared(prepare::unturn_box(crop.bbox.normalized(), rotation));
        let px = |v: f32, n: u32| ((v.clamp(0.0, 1.0) * n as f32).round() as u32).min(n);
        let rect = [
            px(on_prepared.x0, w),
            px(on_prepared.y0, h),
            px(on_prepared.x1, w),
            px(on_prepared.y1, h),
        ];
        if rect[2] <= rect[0] + 2 || rect[3] <= rect[1] + 2 {
            return None;
        }
        let cut = crop_gray(&prepared.img, rect)?.rotated_cw(rotation);
        // One line of text on the upright page, in pixels of the prepared image.
        let upright_height = if matches!(rotation, 90 | 270) { w } else { h };
        let line_px = (crop.line_height.max(0.0) * upright_height as f32).max(1.0);
        let mut scale = (CROP_TEXT_HEIGHT_PX / line_px).clamp(0.5, MAX_SCALE);
        let area = f64::from(cut.width) * f64::from(cut.height);
        let max_scale = (MAX_CROP_PIXELS as f64 / area.max(1.0)).sqrt() as f32;
        scale = scale.min(max_scale).max(0.05);
        let (sw, sh) = (
            ((cut.width as f32 * scale).round() as u32).max(1),
            ((cut.height as f32 * scale).round() as u32).max(1),
        );
        let upright = (cut.width, cut.height);
        let scaled = if (scale - 1.0).abs() < 0.02 {
            cut
        } else {
            cut.resized(
                sw,
                sh,
                ResizeAlg::Convolution(fast_image_resize::FilterType::CatmullRom),
            )?
        };
        let scale_x = scaled.width as f32 / upright.0 as f32;
        Some(Cut {
            img: framed(&scaled, MARGIN_PX),
            // Tesseract takes the resolution as a hint of the text's size in points.
            dpi: Some(
                prepared
                    .dpi
                    .map_or(300, |d| (d as f32 * scale_x).round() as u32)
                    .clamp(70, 1200),
            ),
            rect,
            page_size: (w, h),
            scale: scale_x,
            upright,
        })
    }

    /// A word read on the crop, on the stored upright page; `None` for a word in the margin.
    fn to_page(&self, mut word: Word, geometry: &Geometry, rotation: u16) -> Option<Word> {
        let (fw, fh) = (self.img.width as f32, self.img.height as f32);
        let (uw, uh) = (self.upright.0 as f32, self.upright.1 as f32);
        let m = MARGIN_PX as f32;
        // Normalized on the framed crop → normalized on the upright crop.
        let on_upright = |x: f32, y: f32| {
            (
                (x * fw - m) / self.scale / uw,
                (y * fh - m) / self.scale / uh,
            )
        };
        let (x0, y0) = on_upright(word.bbox.x0, word.bbox.y0);
        let (x1, y1) = on_upright(word.bbox.x1, word.bbox.y1);
        if x1 <= 0.0 || y1 <= 0.0 || x0 >= 1.0 || y0 >= 1.0 {
            return None;
        }
        let upright = BBox { x0, y0, x1, y1 }.normalized();
        // The crop's own frame before it was turned upright.
        let unturned = prepare::unturn_box(upright, rotation);
        let [rx0, ry0, rx1, ry1] = self.rect.map(|v| v as f32);
        let (pw, ph) = (self.page_size.0 as f32, self.page_size.1 as f32);
        let on_prepared = BBox {
            x0: (rx0 + unturned.x0 * (rx1 - rx0)) / pw,
            y0: (ry0 + unturned.y0 * (ry1 - ry0)) / ph,
            x1: (rx0 + unturned.x1 * (rx1 - rx0)) / pw,
            y1: (ry0 + unturned.y1 * (ry1 - ry0)) / ph,
        };
        word.bbox = prepare::turn_box(geometry.box_to_stored(on_prepared), rotation);
        Some(word)
    }
}

/// Where, between the crop's darkest ink and its paper, the dark-ink reading cuts: grey stamp
/// ink (a third to two thirds of the way to the paper) falls on the paper's side.
const DARK_INK_CUT: f32 = 0.4;

/// `img` in black and white keeping only ink darker than [`DARK_INK_CUT`] of the way from its
/// darkest ink to its paper; `None` when the crop has no contrast to speak of.
fn dark_ink_only(img: &Gray) -> Option<Gray> {
    let mut histogram = [0usize; 256];
    for &p in &img.pixels {
        histogram[usize::from(p)] += 1;
    }
    let level = |share: f32| -> u8 {
        let want = (img.pixels.len() as f32 * share) as usize;
        let mut seen = 0usize;
        for (v, &n) in histogram.iter().enumerate() {
            seen += n;
            if seen > want {
                return u8::try_from(v).unwrap_or(u8::MAX);
            }
        }
        u8::MAX
    };
    let (ink, paper) = (f32::from(level(0.01)), f32::from(level(0.9)));
    if paper - ink < 48.0 {
        return None;
    }
    let cut = (ink + DARK_INK_CUT * (paper - ink)) as u8;
    let pixels = img
        .pixels
        .iter()
        .map(|&p| if p < cut { 0 } else { 255 })
        .collect();
    Gray::new(img.width, img.height, pixels)
}

/// Mean confidence of the words that hold a letter or digit; 0 for none.
fn reading_confidence(words: &[Word]) -> f32 {
    let read: Vec<f32> = words
        .iter()
        .filter(|w| w.text.chars().any(char::is_alphanumeric))
        .map(|w| w.confidence)
        .collect();
    if read.is_empty() {
        0.0
    } else {
        read.iter().sum::<f32>() / read.len() as f32
    }
}

/// The pixels of `rect` (x0, y0, x1, y1, exclusive) of `img`.
fn crop_gray(img: &Gray, [x0, y0, x1, y1]: [u32; 4]) -> Option<Gray> {
    let (w, h) = (x1.checked_sub(x0)?, y1.checked_sub(y0)?);
    let stride = img.width as usize;
    let mut pixels = Vec::with_capacity(w as usize * h as usize);
    for y in y0..y1 {
        let start = y as usize * stride + x0 as usize;
        pixels.extend_from_slice(img.pixels.get(start..start + w as usize)?);
    }
    Gray::new(w, h, pixels)
}

/// `img` on white paper with `margin` pixels all round.
fn framed(img: &Gray, margin: u32) -> Gray {
    let (w, h) = (img.width + 2 * margin, img.height + 2 * margin);
    let mut pixels = vec![255u8; w as usize * h as usize];
    for y in 0..img.height as usize {
        let src = &img.pixels[y * img.width as usize..(y + 1) * img.width as usize];
        let start = (y + margin as usize) * w as usize + margin as usize;
        pixels[start..start + img.width as usize].copy_from_slice(src);
    }
    Gray {
        width: w,
        height: h,
        pixels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(rotation: u16) -> PageText {
        PageText {
            index: 0,
            method: ironclad_core::page::ReadMethod::Ocr,
            confidence: 0.9,
            rotation,
            size_pt: None,
            words: Vec::new(),
            line_blocks: Vec::new(),
        }
    }

    fn prepared(w: u32, h: u32) -> PreparedPage {
        PreparedPage {
            img: Gray::new(w, h, vec![255; (w * h) as usize]).expect("size"),
            geometry: Geometry::identity(),
            dpi: Some(300),
        }
    }

    fn close(a: BBox, b: BBox, tol: f32) -> bool {
        (a.x0 - b.x0).abs() < tol
            && (a.y0 - b.y0).abs() < tol
            && (a.x1 - b.x1).abs() < tol
            && (a.y1 - b.y1).abs() < tol
    }

    /// A fax's crops are cut from the page as stored (fax-03's packing list, 150 DPI, 1 bit,
    /// turned back by about half a degree at the first reading); the same page in grey is cut
    /// from the deskewed image.
    #[test]
    fn a_slightly_skewed_fax_is_cut_from_the_page_as_stored() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hard/dossiers/fax-03/packing-list.tiff");
        let bytes = std::fs::read(file).expect("fixture");
        let (stored, _) = crate::images::decode_tiff_page(&bytes, 0, 60_000_000).expect("tiff");
        assert!(stored.is_bilevel());
        let (_, decisions) = prepare::prepare_explained(stored.clone(), Some(150));
        assert!(decisions.deskewed.is_some(), "{decisions:?}");
        let fax = PreparedPage::for_crops(stored.clone(), Some(150));
        assert!(fax.geometry.is_identity());
        assert!(fax.img == stored);
        let mut grey = stored;
        for p in &mut grey.pixels {
            *p = (*p).clamp(8, 247);
        }
        let scan = PreparedPage::for_crops(grey, Some(150));
        assert!(!scan.geometry.is_identity());
    }

    /// A word filling the whole framed crop but its margin maps back onto the crop's region,
    /// whichever way the page was turned.
    #[test]
    fn boxes_read_on_a_crop_land_on_the_page() {
        let region = BBox {
            x0: 0.2,
            y0: 0.3,
            x1: 0.6,
            y1: 0.34,
        };
        for rotation in [0, 90, 180, 270] {
            let p = prepared(1000, 1400);
            let crop = Crop {
                bbox: region,
                mode: CropMode::Line,
                line_height: 0.02,
            };
            let cut = Cut::new(&p, rotation, &crop).expect("a crop");
            let (fw, fh) = (cut.img.width as f32, cut.img.height as f32);
            let m = MARGIN_PX as f32;
            let word = Word {
                text: "DPI-2404-118".into(),
                bbox: BBox {
                    x0: m / fw,
                    y0: m / fh,
                    x1: 1.0 - m / fw,
                    y1: 1.0 - m / fh,
                },
                confidence: 0.9,
                line: 0,
            };
            let back = cut
                .to_page(word, &p.geometry, page(rotation).rotation)
                .expect("inside");
            assert!(close(back.bbox, region, 0.003), "{rotation}: {back:?}");
        }
    }

    #[test]
    fn crops_are_scaled_to_the_text_height_and_framed() {
        let p = prepared(1000, 1400);
        let crop = Crop {
            bbox: BBox {
                x0: 0.1,
                y0: 0.1,
                x1: 0.5,
                y1: 0.12,
            },
            mode: CropMode::Line,
            line_height: 0.01,
        };
        let cut = Cut::new(&p, 0, &crop).expect("a crop");
        // 0.01 × 1400 = 14 px lines, made 34 px: ×2.43.
        assert!((cut.scale - 34.0 / 14.0).abs() < 0.02, "{}", cut.scale);
        assert_eq!(
            cut.img.width,
            (400.0 * cut.scale).round() as u32 + 2 * MARGIN_PX
        );
        // An empty region is no crop.
        let empty = Crop {
            bbox: BBox::default(),
            ..crop
        };
        assert!(Cut::new(&p, 0, &empty).is_none());
    }
}
