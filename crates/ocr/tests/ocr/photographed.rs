//! A photographed page read through the reader: found on its desk, flattened, its light evened
//! out, and every word's box mapped back onto the photo as stored, where the value is printed.
//!
//! `photographed/bill-of-lading.photo.jpg` (118 KB) is `tests/fixtures/generated/set-01/
//! bill-of-lading.pdf` rendered at 150 DPI (`pdftoppm -r 150 -gray`, 1240 × 1755), its light
//! falling from 100 % at the top left to 58 % at the bottom right, set in a 90-pixel border of
//! 30 % grey and photographed by a known homography (the page's corners to the four points
//! below), blurred 0.8 px and saved at JPEG quality 70:
//!
//! ```text
//! convert page.pgm \( -size 1240x1755 xc:white -sparse-color Barycentric \
//!     '0,0 gray(100%) 1240,1755 gray(58%) 1240,0 gray(80%)' \) -compose Multiply -composite \
//!   -compose Over -bordercolor 'gray(30%)' -border 90 -virtual-pixel background \
//!   -background 'gray(30%)' -distort Perspective \
//!   '90,90 120,70  1330,90 1330,110  1330,1845 1360,1850  90,1845 70,1880' \
//!   -blur 0x0.8 -colorspace Gray -strip -quality 70 bill-of-lading.photo.jpg
//! ```
//!
//! The test knows where each value is printed on the page (`pdftotext -bbox` of the PDF) and
//! so where it lies on the photo.

use ironclad_core::media::MediaType;
use ironclad_core::page::BBox;
use ironclad_ocr::{PageReader, ReadOptions};
use std::path::Path;

/// The photo's size, and where the page's corners lie on it (top left, top right, bottom
/// right, bottom left), in pixels.
const PHOTO: (f64, f64) = (1420.0, 1935.0);
const CORNERS: [(f64, f64); 4] = [
    (120.0, 70.0),
    (1330.0, 110.0),
    (1360.0, 1850.0),
    (70.0, 1880.0),
];
/// The page in points (A4).
const PAGE: (f64, f64) = (595.0, 842.0);

/// Where the page's point (`u`, `v`) (0..=1) lies on the photo (0..=1): the homography that
/// sends the unit square to the corners (Heckbert's closed form).
fn on_photo(u: f64, v: f64) -> (f64, f64) {
    let c = CORNERS.map(|(x, y)| (x / PHOTO.0, y / PHOTO.1));
    let [(x0, y0), (x1, y1), (x2, y2), (x3, y3)] = c;
    let (sx, sy) = (x0 - x1 + x2 - x3, y0 - y1 + y2 - y3);
    let (dx1, dx2, dy1, dy2) = (x1 - x2, x3 - x2, y1 - y2, y3 - y2);
    let den = dx1 * dy2 - dx2 * dy1;
    let g = (sx * dy2 - dx2 * sy) / den;
    let h = (dx1 * sy - sx * dy1) / den;
    let (a, b, cc) = (x1 - x0 + g * x1, x3 - x0 + h * x3, x0);
    let (d, e, f) = (y1 - y0 + g * y1, y3 - y0 + h * y3, y0);
    let w = g * u + h * v + 1.0;
    ((a * u + b * v + cc) / w, (d * u + e * v + f) / w)
}

/// The box on the photo of a word printed at (`x0`, `y0`)–(`x1`, `y1`) points on the page.
fn expected(x0: f64, y0: f64, x1: f64, y1: f64) -> BBox {
    let corners =
        [(x0, y0), (x1, y0), (x1, y1), (x0, y1)].map(|(x, y)| on_photo(x / PAGE.0, y / PAGE.1));
    let (xs, ys) = (corners.map(|c| c.0), corners.map(|c| c.1));
    let min = |v: [f64; 4]| v.into_iter().fold(f64::INFINITY, f64::min) as f32;
    let max = |v: [f64; 4]| v.into_iter().fold(f64::NEG_INFINITY, f64::max) as f32;
    BBox {
        x0: min(xs),
        y0: min(ys),
        x1: max(xs),
        y1: max(ys),
    }
}

#[test]
fn a_photographed_page_reads_and_its_boxes_sit_on_the_photo() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/photographed/bill-of-lading.photo.jpg");
    let reader = PageReader::new(
        ReadOptions {
            threads: 1,
            ..ReadOptions::default()
        },
        None,
    );
    let pages = reader
        .read_file(&path, MediaType::Jpeg)
        .expect("the photo reads");
    let page = &pages[0];
    let text = page.text();
    // Values from every part of the page, the shaded bottom right included.
    for value in [
        "ONEYTNNY84059247",
        "RWX3447122",
        "SEGU7848760",
        "614.02",
        "PO-976103",
        "SBE/2024/8900",
        "5.106",
    ] {
        assert!(text.contains(value), "{value} missing from:\n{text}");
    }
    // Word by word: the B/L number at the top right, the container number in the middle
    // left, the B/L number again in the footer, printed at these boxes (points).
    let cases = [
        (
            "ONEYTNNY84059247",
            (0.0, 0.2),
            expected(436.681, 64.102, 546.725, 74.277),
        ),
        (
            "SEGU7848760",
            (0.49, 0.56),
            expected(107.25, 438.82, 174.51, 448.07),
        ),
        (
            "ONEYTNNY84059247",
            (0.9, 1.0),
            expected(88.1865, 806.897, 173.2205, 814.7595),
        ),
    ];
    for (value, (from, to), want) in cases {
        let word = page
            .words
            .iter()
            .find(|w| w.text.contains(value) && (from..to).contains(&w.bbox.y0))
            .unwrap_or_else(|| panic!("{value} between {from} and {to}: {:?}", page.words));
        let got = word.bbox;
        let centre = |b: BBox| ((b.x0 + b.x1) / 2.0, (b.y0 + b.y1) / 2.0);
        let (gc, wc) = (centre(got), centre(want));
        // Within 6 pixels of the photo: the text layer's box is the font's, a little taller
        // than the ink Tesseract boxes.
        assert!(
            ((gc.0 - wc.0) * PHOTO.0 as f32).abs() < 6.0
                && ((gc.1 - wc.1) * PHOTO.1 as f32).abs() < 6.0,
            "{value}: read at {got:?}, printed at {want:?}"
        );
        let width = |b: BBox| b.x1 - b.x0;
        assert!(
            (width(got) / width(want) - 1.0).abs() < 0.12,
            "{value}: read {got:?}, printed {want:?}"
        );
    }
}
