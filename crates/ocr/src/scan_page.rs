//! Scanned PDF pages rendered in-process: a page that draws nothing but one JPEG over the
//! whole page is the JPEG, decoded and scaled to the rendering resolution.
//!
//! That is what a scanner or a phone app writes, and for it `pdftoppm` is mostly overhead: a
//! process start, Splash's general image pipeline and an 8.7 MB pipe per 300-DPI page
//! (85–116 ms of CPU a page here, ≈10 % of reading a scanned page). Decoding the JPEG with the
//! pure-Rust decoder and scaling it with SIMD bilinear filtering gives the same pixels in a
//! fraction of that (see the crate's benchmark notes), and a malformed JPEG is an error value
//! rather than a crash.
//!
//! Only the plainest pages qualify, checked from the PDF's objects (parsed by `lopdf` behind
//! the intake's guard): a content stream of nothing but `q`/`Q`/`cm` and one `Do`, the image
//! exactly covering a page whose crop box is its media box, no rotation, no annotations, an
//! 8-bit gray or RGB `DCTDecode` image without masks or decode arrays. Every other page, and
//! any page whose JPEG turns out not to match its dictionary, is rendered by `pdftoppm` as
//! before: this is a shortcut, never a second renderer with its own idea of a page.

use crate::gray::Gray;
use crate::images::decode_embedded_jpeg;
use crate::pdf::PageSize;
use crate::text_height;
use fast_image_resize::{FilterType, ResizeAlg};
use ironclad_inspect::inspect::LoadedPdf;
use lopdf::{Dictionary, Document, Object, ObjectId};
use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

/// Largest content stream a plain scan page has (`q 595.2 0 0 842.4 0 0 cm /Im0 Do Q` is 40
/// bytes); anything longer draws more than one image.
const MAX_PLAIN_CONTENT: u64 = 4096;
/// How far, in points, the image may be from covering the page exactly (writers round).
const FIT_TOLERANCE_PT: f64 = 0.5;
/// Deepest page tree walked up for inherited attributes.
const MAX_TREE_DEPTH: usize = 64;
/// Most parsing work spent per scanned page looking for plain scans, in lopdf's objects ×
/// bytes (≈20 ms at the 10^11 a second measured here), against the ≈80 ms a page it saves: a
/// long text document with one blank page is left to `pdftoppm` rather than parsed whole.
const LOAD_COST_PER_PAGE: u64 = 2_000_000_000;

/// A scanned page that is one JPEG over the whole page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlainScan {
    /// The JPEG stream, shared by every page drawing the same image object.
    jpeg: Arc<[u8]>,
    width: u32,
    height: u32,
    /// Colour components the dictionary declares (1 gray, 3 RGB): the JPEG must store as many.
    components: u8,
    /// `/Interpolate true`: poppler then smooths even a 4× enlargement.
    interpolate: bool,
    /// The page's size (its media box, which is also its crop box).
    pub size: PageSize,
}

/// The pages among `indices` (0-based) of the PDF `bytes`, which poppler counted `pages`
/// pages in, that are plain scans. Best effort: a document the guarded loader refuses (or that
/// would cost more than [`LOAD_COST_PER_PAGE`] a scanned page to parse), or whose page count
/// differs from poppler's (then page numbers could point at different pages), yields none; a
/// page that does not qualify is absent. Those go to `pdftoppm`.
pub(crate) fn plain_scans(
    bytes: &[u8],
    indices: &[u32],
    pages: usize,
    max_pages: u32,
) -> HashMap<u32, PlainScan> {
    let budget = LOAD_COST_PER_PAGE.saturating_mul(indices.len() as u64);
    let Ok(pdf) = ironclad_inspect::inspect::load_pdf(bytes, max_pages, budget) else {
        return HashMap::new();
    };
    if pdf.pages.len() != pages {
        return HashMap::new();
    }
    let mut images: HashMap<ObjectId, Arc<[u8]>> = HashMap::new();
    indices
        .iter()
        .filter_map(|&i| {
            let id = *pdf.pages.get(i as usize)?;
            plain_scan(&pdf, id, &mut images).map(|scan| (i, scan))
        })
        .collect()
}

impl PlainScan {
    /// The page at `dpi` in 8-bit gray, `pdftoppm -r dpi -gray -cropbox`'s size: the JPEG
    /// decoded and, when its resolution differs, scaled as poppler scales (bilinear when
    /// enlarging, nearest from 4× on unless `/Interpolate`, box averaging when shrinking).
    /// `None` when the JPEG does not decode to the size and number of components its
    /// dictionary declares: the caller then renders the page with `pdftoppm`.
    #[cfg(test)]
    pub fn render(&self, dpi: u32, max_pixels: u64) -> Option<Gray> {
        self.render_fitted(dpi, max_pixels, None)
            .map(|(img, _)| img)
    }

    /// The page at `dpi`, or lower when its text needs less to sit `text_height` pixels
    /// tall ([`text_height::fitted`], estimated on the JPEG as stored): one resampling from the
    /// stored pixels rather than enlarging to `dpi` and shrinking again. Returns the pixels and
    /// the resolution they were rendered at.
    pub fn render_fitted(
        &self,
        dpi: u32,
        max_pixels: u64,
        text_height: Option<u32>,
    ) -> Option<(Gray, u32)> {
        let (w, h) = self.size.pixel_dims(dpi);
        let (w, h) = (u32::try_from(w).ok()?, u32::try_from(h).ok()?);
        if u64::from(w) * u64::from(h) > max_pixels || w == 0 || h == 0 {
            return None;
        }
        let (img, components) = decode_embedded_jpeg(&self.jpeg, max_pixels).ok()?;
        if (img.width, img.height) != (self.width, self.height) || components != self.components {
            return None;
        }
        // The stored image's text height, expressed at `dpi`.
        let scale = text_height.map_or(1.0, |target| {
            let stored_dpi = f64::from(img.width) * 72.0 / self.size.width_pt;
            text_height::fitted(&img, f64::from(dpi) / stored_dpi, target, Some(dpi))
        });
        let (dpi, (w, h)) = if scale < 1.0 {
            let fitted = ((f64::from(dpi) * scale).round() as u32).max(1);
            let (w, h) = self.size.pixel_dims(fitted);
            (
                fitted,
                (u32::try_from(w).ok()?.max(1), u32::try_from(h).ok()?.max(1)),
            )
        } else {
            (dpi, (w, h))
        };
        self.resample(img, w, h).map(|img| (img, dpi))
    }

    /// The stored pixels at `w`×`h`, scaled as poppler scales.
    fn resample(&self, img: Gray, w: u32, h: u32) -> Option<Gray> {
        if (img.width, img.height) == (w, h) {
            return Some(img);
        }
        // Poppler's rule (`isImageInterpolationRequired`): a whole-number enlargement of 4× or
        // more on either axis is drawn without smoothing.
        let coarse = w / img.width >= 4 || h / img.height >= 4;
        let filter = if coarse && !self.interpolate {
            ResizeAlg::Nearest
        } else if w > img.width || h > img.height {
            ResizeAlg::Convolution(FilterType::Bilinear)
        } else {
            ResizeAlg::Convolution(FilterType::Box)
        };
        img.resized(w, h, filter)
    }
}

/// The page `id` as a plain scan, if it is one; `images` shares the bytes of image objects
/// drawn on several pages.
fn plain_scan(
    pdf: &LoadedPdf,
    id: ObjectId,
    images: &mut HashMap<ObjectId, Arc<[u8]>>,
) -> Option<PlainScan> {
    let doc = &pdf.document;
    let page = doc.get_dictionary(id).ok()?;
    let inherited = |key: &[u8]| inherited(pdf, id, page, key);
    // Rotated pages, annotations (stamps, form fields) and scaled units draw more than the image.
    let rotate = inherited(b"Rotate").map_or(Some(0), |r| r.as_i64().ok())?;
    if rotate.rem_euclid(360) != 0 || page.has(b"UserUnit") || has_annotations(doc, page) {
        return None;
    }
    let media = rect(doc, inherited(b"MediaBox")?)?;
    if let Some(crop) = inherited(b"CropBox") {
        if !close(&media, &rect(doc, crop)?) {
            return None;
        }
    }
    let (name, ctm) = single_image_draw(&page_content(doc, page)?)?;
    // The unit square the image fills, mapped by the CTM: upright, unskewed, covering the page.
    let [a, b, c, d, e, f] = ctm;
    if b != 0.0 || c != 0.0 || a <= 0.0 || d <= 0.0 || !close(&media, &[e, f, e + a, f + d]) {
        return None;
    }
    let resources = deref(doc, inherited(b"Resources")?)?.as_dict().ok()?;
    let xobjects = deref(doc, resources.get(b"XObject").ok()?)?
        .as_dict()
        .ok()?;
    let image_ref = xobjects.get(&name).ok()?;
    let image = deref(doc, image_ref)?.as_stream().ok()?;
    let (width, height, components) = plain_jpeg_image(doc, &image.dict)?;
    let interpolate = image
        .dict
        .get(b"Interpolate")
        .is_ok_and(|v| v.as_bool().unwrap_or(false));
    let shared = || Arc::from(image.content.as_slice());
    let jpeg = match image_ref.as_reference() {
        Ok(object) => images.entry(object).or_insert_with(shared).clone(),
        Err(_) => shared(),
    };
    Some(PlainScan {
        jpeg,
        width,
        height,
        components,
        interpolate,
        size: PageSize {
            width_pt: media[2] - media[0],
            height_pt: media[3] - media[1],
        },
    })
}

/// Whether two rectangles are the same within [`FIT_TOLERANCE_PT`].
fn close(a: &[f64; 4], b: &[f64; 4]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| (x - y).abs() <= FIT_TOLERANCE_PT)
}

/// An attribute of the page or, for the inheritable ones, of its nearest ancestor in the tree
/// as it was walked from the catalog (what poppler follows), not as `/Parent` entries claim.
fn inherited<'a>(
    pdf: &'a LoadedPdf,
    id: ObjectId,
    page: &'a Dictionary,
    key: &[u8],
) -> Option<&'a Object> {
    let (mut node, mut at) = (page, id);
    for _ in 0..MAX_TREE_DEPTH {
        if let Ok(v) = node.get(key) {
            return Some(v);
        }
        at = *pdf.parents.get(&at)?;
        node = pdf.document.get_dictionary(at).ok()?;
    }
    None
}

fn deref<'a>(doc: &'a Document, obj: &'a Object) -> Option<&'a Object> {
    doc.dereference(obj).ok().map(|(_, o)| o)
}

fn has_annotations(doc: &Document, page: &Dictionary) -> bool {
    match page.get(b"Annots") {
        Err(_) => false,
        // An unreadable /Annots counts as present: pdftoppm decides what it draws.
        Ok(annots) => deref(doc, annots)
            .and_then(|a| a.as_array().ok())
            .is_none_or(|list| !list.is_empty()),
    }
}

/// A rectangle `[x0 y0 x1 y1]`, normalized, in points rounded to 1/1000 (lopdf keeps reals as
/// `f32`; poppler reads them as `f64`: `595.2` must stay 2480 pixels at 300 DPI, not 2481).
fn rect(doc: &Document, obj: &Object) -> Option<[f64; 4]> {
    let nums: Vec<f64> = deref(doc, obj)?
        .as_array()
        .ok()?
        .iter()
        .map(|v| {
            deref(doc, v)
                .and_then(|v| v.as_float().ok())
                .map(millipoints)
        })
        .collect::<Option<_>>()?;
    let [x0, y0, x1, y1] = <[f64; 4]>::try_from(nums).ok()?;
    let r = [x0.min(x1), y0.min(y1), x0.max(x1), y0.max(y1)];
    r.iter().all(|v| v.is_finite()).then_some(r)
}

fn millipoints(v: f32) -> f64 {
    (f64::from(v) * 1000.0).round() / 1000.0
}

/// The page's content streams, concatenated and inflated within [`MAX_PLAIN_CONTENT`] bytes:
/// `None` when longer, or encoded other than plainly or with `FlateDecode`.
fn page_content(doc: &Document, page: &Dictionary) -> Option<Vec<u8>> {
    let contents = deref(doc, page.get(b"Contents").ok()?)?;
    let parts: Vec<&Object> = match contents {
        Object::Array(list) => list.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for part in parts {
        let stream = deref(doc, part)?.as_stream().ok()?;
        let room = MAX_PLAIN_CONTENT.saturating_sub(out.len() as u64);
        let filters = stream.filters().unwrap_or_default();
        match filters.as_slice() {
            [] if !stream.dict.has(b"Filter") => {
                if stream.content.len() as u64 > room {
                    return None;
                }
                out.extend_from_slice(&stream.content);
            }
            [only] if *only == b"FlateDecode" && !stream.dict.has(b"DecodeParms") => {
                let mut inflated = Vec::new();
                flate2::read::ZlibDecoder::new(stream.content.as_slice())
                    .take(room + 1)
                    .read_to_end(&mut inflated)
                    .ok()?;
                if inflated.len() as u64 > room {
                    return None;
                }
                out.extend_from_slice(&inflated);
            }
            _ => return None,
        }
        // Streams are concatenated as if separated by white space.
        out.push(b'\n');
    }
    Some(out)
}

/// A content stream that only saves and restores state, concatenates matrices and draws one
/// XObject: that XObject's name and the matrix in force when it is drawn.
fn single_image_draw(content: &[u8]) -> Option<(Vec<u8>, [f64; 6])> {
    let ops = lopdf::content::Content::decode(content).ok()?.operations;
    const IDENTITY: [f64; 6] = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];
    let mut ctm = IDENTITY;
    let mut saved: Vec<[f64; 6]> = Vec::new();
    let mut drawn = None;
    for op in ops {
        match (op.operator.as_str(), op.operands.as_slice()) {
            ("q", []) => saved.push(ctm),
            ("Q", []) => ctm = saved.pop()?,
            ("cm", m) if m.len() == 6 => {
                let m: Vec<f64> = m
                    .iter()
                    .map(|v| v.as_float().ok().map(f64::from))
                    .collect::<Option<_>>()?;
                ctm = multiply(&[m[0], m[1], m[2], m[3], m[4], m[5]], &ctm);
            }
            ("Do", [Object::Name(name)]) if drawn.is_none() => drawn = Some((name.clone(), ctm)),
            _ => return None,
        }
    }
    drawn
}

/// `m × n` for PDF matrices `[a b c d e f]` (row vectors: a point is transformed by `m`
/// first, then by `n`).
fn multiply(m: &[f64; 6], n: &[f64; 6]) -> [f64; 6] {
    [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]
}

/// The declared width, height and colour components of an image XObject that is an 8-bit
/// gray or RGB JPEG drawn as it is: no mask, no soft mask, no decode array, no optional-content
/// membership (a layer that may be hidden), nothing but `DCTDecode`.
fn plain_jpeg_image(doc: &Document, dict: &Dictionary) -> Option<(u32, u32, u8)> {
    let get = |key: &[u8]| dict.get(key).ok().and_then(|o| deref(doc, o));
    if get(b"Subtype")?.as_name().ok()? != b"Image" {
        return None;
    }
    let dct_only = match get(b"Filter")? {
        Object::Name(n) => n == b"DCTDecode",
        Object::Array(list) => {
            list.len() == 1 && list[0].as_name().is_ok_and(|n| n == b"DCTDecode")
        }
        _ => false,
    };
    if !dct_only
        || ["SMask", "Mask", "Decode", "DecodeParms", "OC"]
            .iter()
            .any(|k| dict.has(k.as_bytes()))
        || get(b"ImageMask").is_some_and(|m| m.as_bool().unwrap_or(true))
        || get(b"BitsPerComponent")?.as_i64().ok()? != 8
    {
        return None;
    }
    let components = gray_or_rgb(doc, get(b"ColorSpace")?)?;
    let side = |key: &[u8]| {
        u32::try_from(get(key)?.as_i64().ok()?)
            .ok()
            .filter(|&v| v > 0)
    };
    Some((side(b"Width")?, side(b"Height")?, components))
}

/// The components of DeviceGray or CalGray (1), DeviceRGB or CalRGB (3), or an ICC profile
/// with 1 or 3; `None` for any other colour space.
fn gray_or_rgb(doc: &Document, cs: &Object) -> Option<u8> {
    let n = match cs {
        Object::Name(n) => match n.as_slice() {
            b"DeviceGray" => 1,
            b"DeviceRGB" => 3,
            _ => return None,
        },
        Object::Array(list) => match list.first().and_then(|n| n.as_name().ok())? {
            b"CalGray" => 1,
            b"CalRGB" => 3,
            b"ICCBased" => list
                .get(1)
                .and_then(|p| deref(doc, p))
                .and_then(|p| p.as_stream().ok())
                .and_then(|p| p.dict.get(b"N").ok()?.as_i64().ok())?,
            _ => return None,
        },
        _ => return None,
    };
    match n {
        1 => Some(1),
        3 => Some(3),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_state_matrices_and_one_draw_qualify() {
        let (name, ctm) = single_image_draw(b"q 595.2 0 0 842.4 0 0 cm /Im0 Do Q").expect("plain");
        assert_eq!(name, b"Im0");
        assert!((ctm[0] - 595.2).abs() < 1e-3 && (ctm[3] - 842.4).abs() < 1e-3);
        // Matrices compose: a translation then a scale.
        let (_, ctm) = single_image_draw(b"1 0 0 1 10 20 cm q 100 0 0 50 0 0 cm /I Do Q").unwrap();
        assert_eq!(ctm, [100.0, 0.0, 0.0, 50.0, 10.0, 20.0]);
        for drawing_more in [
            &b"q 595 0 0 842 0 0 cm /Im0 Do Q BT /F1 12 Tf (x) Tj ET"[..],
            b"q 595 0 0 842 0 0 cm /Im0 Do /Im1 Do Q",
            b"0 0 m 100 100 l S q 595 0 0 842 0 0 cm /Im0 Do Q",
            b"Q q 595 0 0 842 0 0 cm /Im0 Do",
            b"q 1 0 0 1 0 0 cm Q",
        ] {
            assert!(
                single_image_draw(drawing_more).is_none(),
                "{}",
                String::from_utf8_lossy(drawing_more)
            );
        }
    }

    /// A one-page PDF drawing `jpeg` (`w`×`h` pixels, gray) with `content`, on a page of
    /// `page` points, with extra page dictionary entries and image dictionary entries.
    fn pdf_with_jpeg(
        jpeg: &[u8],
        (w, h): (u32, u32),
        page: (f64, f64),
        content: &str,
        page_extra: &str,
        image_extra: &str,
    ) -> Vec<u8> {
        use ironclad_inspect::fixtures::{pdf_from_objects, pdf_stream};
        let objects = vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {} {}] {page_extra} \
                 /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>",
                page.0, page.1
            )
            .into_bytes(),
            pdf_stream(
                &format!(
                    "/Type /XObject /Subtype /Image /Width {w} /Height {h} /ColorSpace /DeviceGray \
                     /BitsPerComponent 8 /Filter /DCTDecode {image_extra}"
                ),
                jpeg,
            ),
            pdf_stream("", content.as_bytes()),
        ];
        pdf_from_objects(&objects, "")
    }

    /// A 150-DPI half-letter "scan": text-like strokes and a gradient, as a JPEG.
    fn scan_jpeg() -> (Vec<u8>, (u32, u32)) {
        let (w, h) = (638u32, 825u32);
        let img = image::GrayImage::from_fn(w, h, |x, y| {
            let stroke = (y / 12) % 3 == 0 && (x / 7) % 4 != 0 && (40..600).contains(&x);
            image::Luma([if stroke { 20 } else { 235 - (x * 30 / w) as u8 }])
        });
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 85)
            .encode_image(&img)
            .unwrap();
        (jpeg, (w, h))
    }

    const PAGE: (f64, f64) = (306.0, 396.0);
    const FILL: &str = "q 306 0 0 396 0 0 cm /Im0 Do Q";

    #[test]
    fn a_plain_scan_renders_like_pdftoppm() {
        let (jpeg, dims) = scan_jpeg();
        let pdf = pdf_with_jpeg(&jpeg, dims, PAGE, FILL, "", "");
        let scans = plain_scans(&pdf, &[0], 1, 10);
        let scan = scans.get(&0).expect("a plain scan");
        assert_eq!(scan.size.pixel_dims(300), (1275, 1650));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scan.pdf");
        std::fs::write(&path, &pdf).unwrap();
        for dpi in [150, 300, 100] {
            let ours = scan.render(dpi, 60_000_000).expect("rendered");
            let poppler = crate::pdf::render_page(
                &path,
                1,
                dpi,
                60_000_000,
                std::time::Duration::from_secs(30),
            )
            .unwrap();
            assert_eq!(
                (ours.width, ours.height),
                (poppler.width, poppler.height),
                "{dpi} DPI"
            );
            // Two JPEG decoders and two bilinear filters that align pixel centres differently
            // (poppler samples a quarter of a source pixel off): edges may move by a pixel.
            // So each of our pixels is compared with the closest value within one pixel.
            let (w, h) = (ours.width as usize, ours.height as usize);
            let mut total = 0u64;
            let mut far = 0u64;
            for y in 1..h - 1 {
                for x in 1..w - 1 {
                    let v = ours.pixels[y * w + x];
                    let best = (y - 1..=y + 1)
                        .flat_map(|yy| (x - 1..=x + 1).map(move |xx| yy * w + xx))
                        .map(|i| v.abs_diff(poppler.pixels[i]))
                        .min()
                        .unwrap_or(255);
                    total += u64::from(best);
                    far += u64::from(best > 32);
                }
            }
            let n = ((w - 2) * (h - 2)) as f64;
            let (mean, far) = (total as f64 / n, far as f64 / n);
            println!(
                "{dpi} DPI: mean |Δ| within a pixel {mean:.2}, {:.2} % over 32",
                far * 100.0
            );
            assert!(mean < 2.5, "{dpi} DPI: mean difference {mean:.2}");
            assert!(
                far < 0.03,
                "{dpi} DPI: {:.2} % of pixels far off",
                far * 100.0
            );
        }
    }

    #[test]
    fn pages_drawing_anything_else_are_left_to_pdftoppm() {
        let (jpeg, dims) = scan_jpeg();
        let page = PAGE;
        let qualifies = |content: &str, page_extra: &str, image_extra: &str| {
            let pdf = pdf_with_jpeg(&jpeg, dims, page, content, page_extra, image_extra);
            !plain_scans(&pdf, &[0], 1, 10).is_empty()
        };
        assert!(qualifies(FILL, "", ""));
        assert!(qualifies(
            FILL,
            "/CropBox [0 0 306 396] /Rotate 360 /Annots []",
            ""
        ));
        assert!(
            !qualifies("q 306 0 0 396 0 0 cm /Im0 Do Q 0 0 m 9 9 l S", "", ""),
            "a line over it"
        );
        assert!(
            !qualifies("q 153 0 0 396 0 0 cm /Im0 Do Q", "", ""),
            "half the page"
        );
        assert!(
            !qualifies("q 306 0 0 -396 0 396 cm /Im0 Do Q", "", ""),
            "flipped"
        );
        assert!(
            !qualifies("q 0 396 -306 0 306 0 cm /Im0 Do Q", "", ""),
            "turned"
        );
        assert!(!qualifies(FILL, "/Rotate 90", ""));
        assert!(!qualifies(FILL, "/CropBox [0 0 200 200]", ""));
        assert!(!qualifies(
            FILL,
            "/Annots [<< /Type /Annot /Subtype /Stamp /Rect [0 0 9 9] >>]",
            ""
        ));
        assert!(!qualifies(FILL, "/UserUnit 2", ""));
        assert!(!qualifies(FILL, "", "/Decode [1 0]"));
        assert!(!qualifies(FILL, "", "/SMask 4 0 R"));
        assert!(!qualifies(FILL, "", "/ImageMask true"));
        assert!(
            !qualifies(FILL, "", "/OC << /Type /OCG /Name (hidden) >>"),
            "optional content"
        );
        // A JPEG smaller than its dictionary says is found out when decoded.
        let pdf = pdf_with_jpeg(&jpeg, (dims.0 * 2, dims.1), page, FILL, "", "");
        let scans = plain_scans(&pdf, &[0], 1, 10);
        assert!(scans[&0].render(150, 60_000_000).is_none());
        // Poppler and lopdf disagreeing on the page count: page numbers cannot be trusted.
        let pdf = pdf_with_jpeg(&jpeg, dims, page, FILL, "", "");
        assert!(plain_scans(&pdf, &[0], 2, 10).is_empty());
        // Not a PDF lopdf can load: nothing qualifies, nothing fails.
        assert!(plain_scans(b"%PDF-1.4 garbage %%EOF", &[0], 1, 10).is_empty());
    }

    /// Objects 1–2 are the catalog and the page tree with `kids`; the rest follow.
    fn pdf_of(kids: &str, count: u32, rest: Vec<Vec<u8>>) -> Vec<u8> {
        use ironclad_inspect::fixtures::pdf_from_objects;
        let mut objects = vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            format!("<< /Type /Pages /Kids [{kids}] /Count {count} /MediaBox [0 0 306 396] >>")
                .into_bytes(),
        ];
        objects.extend(rest);
        pdf_from_objects(&objects, "")
    }

    fn image_object(jpeg: &[u8], (w, h): (u32, u32), colour_space: &str) -> Vec<u8> {
        ironclad_inspect::fixtures::pdf_stream(
            &format!(
                "/Type /XObject /Subtype /Image /Width {w} /Height {h} \
                 /ColorSpace /{colour_space} /BitsPerComponent 8 /Filter /DCTDecode"
            ),
            jpeg,
        )
    }

    fn page_object(parent: u32, image: u32, contents: u32, typed: bool) -> Vec<u8> {
        let kind = if typed { "/Type /Page " } else { "" };
        format!(
            "<< {kind}/Parent {parent} 0 R /Resources << /XObject << /Im0 {image} 0 R >> >> \
             /Contents {contents} 0 R >>"
        )
        .into_bytes()
    }

    #[test]
    fn pages_are_numbered_as_the_tree_is_walked() {
        // Page 1 omits /Type (lopdf's own page list skips it, poppler and the guard do not);
        // page 2 is the scan. Both inherit the tree's media box.
        let (jpeg, dims) = scan_jpeg();
        let stream = |c: &str| ironclad_inspect::fixtures::pdf_stream("", c.as_bytes());
        let pdf = pdf_of(
            "3 0 R 4 0 R",
            2,
            vec![
                b"<< /Parent 2 0 R /Resources << >> /Contents 6 0 R >>".to_vec(),
                page_object(2, 5, 7, true),
                image_object(&jpeg, dims, "DeviceGray"),
                stream("0 0 m 10 10 l S"),
                stream(FILL),
            ],
        );
        let scans = plain_scans(&pdf, &[0, 1], 2, 10);
        assert_eq!(
            scans.keys().collect::<Vec<_>>(),
            vec![&1],
            "only page 2 is a scan"
        );
        assert_eq!(scans[&1].size.pixel_dims(150), (638, 825));
    }

    #[test]
    fn inherited_attributes_come_from_the_walked_tree_not_a_forged_parent() {
        // The page claims a parent outside the tree, with another media box.
        let (jpeg, dims) = scan_jpeg();
        let pdf = pdf_of(
            "3 0 R",
            1,
            vec![
                page_object(6, 4, 5, true),
                image_object(&jpeg, dims, "DeviceGray"),
                ironclad_inspect::fixtures::pdf_stream("", FILL.as_bytes()),
                b"<< /Type /Pages /Kids [] /Count 0 /MediaBox [0 0 5000 5000] >>".to_vec(),
            ],
        );
        let scans = plain_scans(&pdf, &[0], 1, 10);
        assert_eq!(scans[&0].size.pixel_dims(72), (306, 396));
    }

    #[test]
    fn pages_sharing_one_image_share_its_bytes() {
        let (jpeg, dims) = scan_jpeg();
        let pdf = pdf_of(
            "3 0 R 4 0 R",
            2,
            vec![
                page_object(2, 5, 6, true),
                page_object(2, 5, 6, true),
                image_object(&jpeg, dims, "DeviceGray"),
                ironclad_inspect::fixtures::pdf_stream("", FILL.as_bytes()),
            ],
        );
        let scans = plain_scans(&pdf, &[0, 1], 2, 10);
        assert!(Arc::ptr_eq(&scans[&0].jpeg, &scans[&1].jpeg));
    }

    #[test]
    fn a_jpeg_of_another_kind_than_declared_is_left_to_pdftoppm() {
        // A colour JPEG declared gray: poppler would not draw what we would decode.
        let img = image::RgbImage::from_fn(638, 825, |x, _| image::Rgb([(x % 256) as u8, 40, 90]));
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 85)
            .encode_image(&img)
            .unwrap();
        let declared_gray = pdf_with_jpeg(&jpeg, (638, 825), PAGE, FILL, "", "");
        let scans = plain_scans(&declared_gray, &[0], 1, 10);
        assert!(scans[&0].render(150, 60_000_000).is_none());
        let pdf = pdf_of(
            "3 0 R",
            1,
            vec![
                page_object(2, 4, 5, true),
                image_object(&jpeg, (638, 825), "DeviceRGB"),
                ironclad_inspect::fixtures::pdf_stream("", FILL.as_bytes()),
            ],
        );
        let scans = plain_scans(&pdf, &[0], 1, 10);
        let gray = scans[&0]
            .render(150, 60_000_000)
            .expect("declared RGB, stored RGB");
        // Poppler's gray weights: 0.299 R + 0.587 G + 0.114 B.
        let expected = (299 * 100 + 587 * 40 + 114 * 90) / 1000;
        assert!(
            gray.pixels[100].abs_diff(expected as u8) <= 4,
            "{}",
            gray.pixels[100]
        );
    }

    #[test]
    fn boxes_keep_the_points_poppler_reads() {
        assert_eq!(millipoints(595.2f32), 595.2);
        let size = PageSize {
            width_pt: millipoints(595.2),
            height_pt: millipoints(842.4),
        };
        assert_eq!(size.pixel_dims(300), (2480, 3510), "what pdftoppm renders");
    }
}
