//! Test inputs built in the test: hand-written PDFs, pages rendered by poppler, and the
//! scanned-image variants (PNG, JPEG, TIFF, rotated, skewed) made from them.
#![allow(dead_code)]

use image::{GrayImage, ImageFormat};
use ironclad_inspect::fixtures::{pdf_from_objects, pdf_stream};
use std::io::Cursor;
use std::process::Command;

// Tesseract is 5–6× slower unless OMP_THREAD_LIMIT=1 is set before libgomp loads. A binary
// calls `ensure_omp_thread_limit` first thing in `main`; a test binary's `main` belongs to the
// harness, so the same call runs from an ELF constructor, before `main`, re-executing the
// test binary with the variable set (the harness then starts as if it had been set outside).
#[used]
#[link_section = ".init_array"]
static REEXEC_WITH_OMP_THREAD_LIMIT: extern "C" fn() = {
    extern "C" fn reexec() {
        ironclad_ocr::ensure_omp_thread_limit();
    }
    reexec
};

/// The sample invoice's lines.
pub const INVOICE: &[&str] = &[
    "INVOICE No. 2024-0042",
    "Date: 12/03/2024",
    "Bill to: ACME Shipping Ltd",
    "Container MSCU1234565",
    "Total amount: 1234.56 EUR",
    "Thank you for your business",
];

/// One PDF page: text lines (Helvetica, `font_size`) and/or a full-page grayscale image.
pub struct Page<'a> {
    pub width_pt: f64,
    pub height_pt: f64,
    pub lines: &'a [&'a str],
    pub font_size: u32,
    pub image: Option<&'a GrayImage>,
    /// Embed the image as a JPEG (`DCTDecode`, as scanners write) instead of raw samples.
    pub jpeg: bool,
}

impl<'a> Page<'a> {
    /// A US-letter page with these lines.
    pub fn text(lines: &'a [&'a str], font_size: u32) -> Self {
        Page {
            width_pt: 612.0,
            height_pt: 792.0,
            lines,
            font_size,
            image: None,
            jpeg: false,
        }
    }

    /// A US-letter page showing only this image, stretched over the page: a scan.
    pub fn scan(image: &'a GrayImage) -> Self {
        Page {
            width_pt: 612.0,
            height_pt: 792.0,
            lines: &[],
            font_size: 12,
            image: Some(image),
            jpeg: false,
        }
    }

    /// A US-letter page showing only this image as a JPEG: a scan as scanners write it.
    pub fn jpeg_scan(image: &'a GrayImage) -> Self {
        Page {
            jpeg: true,
            ..Page::scan(image)
        }
    }
}

/// A valid PDF of these pages (Latin-1 text in WinAnsiEncoding; images uncompressed).
pub fn pdf(pages: &[Page]) -> Vec<u8> {
    let mut objs: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        Vec::new(), // the page tree, filled in below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    ];
    let mut kids = Vec::new();
    for page in pages {
        let mut content = Vec::new();
        let mut resources = String::from("/Font << /F1 3 0 R >>");
        if let Some(img) = page.image {
            let img_id = objs.len() + 1;
            let (data, filter) = if page.jpeg {
                (encode(img, ImageFormat::Jpeg), "/Filter /DCTDecode ")
            } else {
                (img.as_raw().clone(), "")
            };
            objs.push(pdf_stream(
                &format!(
                    "/Type /XObject /Subtype /Image /Width {} /Height {} /ColorSpace /DeviceGray \
                     /BitsPerComponent 8 {filter}",
                    img.width(),
                    img.height(),
                ),
                &data,
            ));
            resources.push_str(&format!(" /XObject << /Im1 {img_id} 0 R >>"));
            content.extend(
                format!(
                    "q {} 0 0 {} 0 0 cm /Im1 Do Q\n",
                    page.width_pt, page.height_pt
                )
                .bytes(),
            );
        }
        if !page.lines.is_empty() {
            let fs = page.font_size;
            content.extend(
                format!(
                    "BT /F1 {fs} Tf {} TL 56 {} Td\n",
                    fs * 135 / 100,
                    page.height_pt - 60.0
                )
                .bytes(),
            );
            for line in page.lines {
                content.push(b'(');
                for ch in line.chars() {
                    match ch {
                        '(' | ')' | '\\' => content.extend([b'\\', ch as u8]),
                        c if (c as u32) < 256 => content.push(c as u32 as u8),
                        _ => content.push(b'?'),
                    }
                }
                content.extend(b") Tj T*\n");
            }
            content.extend(b"ET\n");
        }
        let page_id = objs.len() + 1;
        kids.push(page_id);
        objs.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {} {}] /Resources << {resources} >> /Contents {} 0 R >>",
                page.width_pt,
                page.height_pt,
                page_id + 1
            )
            .into_bytes(),
        );
        objs.push(pdf_stream("", &content));
    }
    let kids_list: Vec<String> = kids.iter().map(|k| format!("{k} 0 R")).collect();
    objs[1] = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids_list.join(" "),
        kids.len()
    )
    .into_bytes();
    pdf_from_objects(&objs, "")
}

/// Page 1 of `pdf` rendered by poppler at `dpi` in 8-bit gray: a perfect scan.
pub fn render(pdf: &[u8], dpi: u32) -> GrayImage {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("in.pdf");
    std::fs::write(&path, pdf).expect("write pdf");
    let out = Command::new("pdftoppm")
        .args(["-r", &dpi.to_string(), "-gray", "-f", "1", "-l", "1"])
        .arg(&path)
        .output()
        .expect("pdftoppm runs");
    assert!(
        out.status.success(),
        "pdftoppm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_pgm(&out.stdout)
}

fn parse_pgm(bytes: &[u8]) -> GrayImage {
    // pdftoppm writes "P5\n<w> <h>\n255\n" then the raster.
    let mut fields = Vec::new();
    let mut pos = 2;
    while fields.len() < 3 {
        while bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        let start = pos;
        while bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        fields.push(
            std::str::from_utf8(&bytes[start..pos])
                .unwrap()
                .parse::<u32>()
                .unwrap(),
        );
    }
    let (w, h) = (fields[0], fields[1]);
    GrayImage::from_raw(w, h, bytes[pos + 1..pos + 1 + (w * h) as usize].to_vec()).expect("raster")
}

/// `img` encoded as PNG or JPEG.
pub fn encode(img: &GrayImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).expect("encode");
    out.into_inner()
}

/// A multi-page TIFF with one 8-bit gray page per image (LZW-compressed, as scanners write).
pub fn tiff(pages: &[&GrayImage]) -> Vec<u8> {
    use tiff::encoder::{colortype, Compression, TiffEncoder};
    let mut out = Cursor::new(Vec::new());
    let mut enc = TiffEncoder::new(&mut out)
        .expect("tiff encoder")
        .with_compression(Compression::Lzw);
    for img in pages {
        enc.write_image::<colortype::Gray8>(img.width(), img.height(), img.as_raw())
            .expect("tiff page");
    }
    out.into_inner()
}

/// `img` as a PNG recording `dpi` in its `pHYs` chunk, as scanners write it.
pub fn png_with_dpi(img: &GrayImage, dpi: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, img.width(), img.height());
    enc.set_color(png::ColorType::Grayscale);
    let per_metre = (f64::from(dpi) / 0.0254).round() as u32;
    enc.set_pixel_dims(Some(png::PixelDimensions {
        xppu: per_metre,
        yppu: per_metre,
        unit: png::Unit::Meter,
    }));
    let mut w = enc.write_header().expect("png header");
    w.write_image_data(img.as_raw()).expect("png data");
    drop(w);
    out
}

/// A one-page TIFF recording `dpi` in its resolution tags.
pub fn tiff_with_dpi(img: &GrayImage, dpi: u32) -> Vec<u8> {
    use tiff::encoder::{colortype, Rational, TiffEncoder};
    let mut out = Cursor::new(Vec::new());
    let mut enc = TiffEncoder::new(&mut out).expect("tiff encoder");
    let mut page = enc
        .new_image::<colortype::Gray8>(img.width(), img.height())
        .expect("tiff page");
    page.resolution(tiff::tags::ResolutionUnit::Inch, Rational { n: dpi, d: 1 });
    page.write_data(img.as_raw()).expect("tiff data");
    out.into_inner()
}

/// `img` turned `degrees` clockwise about its centre onto a white canvas of the same size
/// (bilinear), as a slightly crooked scan looks.
pub fn skew(img: &GrayImage, degrees: f64) -> GrayImage {
    let (w, h) = (img.width() as f64, img.height() as f64);
    let (s, c) = degrees.to_radians().sin_cos();
    let (cx, cy) = (w / 2.0, h / 2.0);
    GrayImage::from_fn(img.width(), img.height(), |x, y| {
        // Inverse mapping: where in the source does this output pixel come from?
        let (dx, dy) = (x as f64 - cx, y as f64 - cy);
        let (sx, sy) = (c * dx + s * dy + cx, -s * dx + c * dy + cy);
        let (x0, y0) = (sx.floor(), sy.floor());
        let (fx, fy) = (sx - x0, sy - y0);
        let px = |xx: f64, yy: f64| -> f64 {
            if xx < 0.0 || yy < 0.0 || xx >= w || yy >= h {
                255.0
            } else {
                img.get_pixel(xx as u32, yy as u32)[0] as f64
            }
        };
        let v = px(x0, y0) * (1.0 - fx) * (1.0 - fy)
            + px(x0 + 1.0, y0) * fx * (1.0 - fy)
            + px(x0, y0 + 1.0) * (1.0 - fx) * fy
            + px(x0 + 1.0, y0 + 1.0) * fx * fy;
        image::Luma([v.round() as u8])
    })
}
