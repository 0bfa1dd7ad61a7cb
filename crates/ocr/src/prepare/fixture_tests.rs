//! Every scanned page of the generated fixtures through [`prepare_explained`], decoded as the
//! reader decodes it (a plain JPEG scan in-process at its fitted resolution, any other PDF
//! page by `pdftoppm` at 300 DPI, images as stored): clean scans must come out as they went in
//! (no flattening, no light normalisation, the global threshold) unless they are skewed, and
//! the skew found must be the one the generator applied (`truth.json`).

use super::*;
use crate::{images, pdf, scan_page};
use std::path::{Path, PathBuf};
use std::time::Duration;

const DPI: u32 = 300;
const MAX_PIXELS: u64 = 60_000_000;

/// This thread's CPU time: what preparing costs, whatever else the machine is doing.
fn cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/generated")
}

/// Page `index` of `file` as the reader would hand it to [`prepare`].
fn page(file: &Path, index: u32, pages: usize) -> Gray {
    let bytes = std::fs::read(file).expect("fixture");
    let name = file.to_string_lossy();
    if name.ends_with(".pdf") {
        let plain = scan_page::plain_scans(&bytes, &[index], pages, 500);
        if let Some((img, _)) = plain
            .get(&index)
            .and_then(|p| p.render_fitted(DPI, MAX_PIXELS, crate::DEFAULT_TEXT_HEIGHT_PX))
        {
            return img;
        }
        pdf::render_page(file, index + 1, DPI, MAX_PIXELS, Duration::from_secs(60)).expect("render")
    } else if name.ends_with(".tiff") {
        images::decode_tiff_page(&bytes, index, MAX_PIXELS)
            .expect("tiff")
            .0
    } else {
        let format = image::ImageFormat::from_path(file).expect("image type");
        images::decode_single(&bytes, format, MAX_PIXELS)
            .expect("image")
            .0
    }
}

/// Reads ≈50 pages (≈1 min of rendering and decoding in a release build on 2 busy cores).
#[test]
#[ignore = "renders every generated scan: cargo test --release -p ironclad-ocr -- --ignored clean_scans"]
fn clean_scans_stay_as_they_are_unless_skewed() {
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("truth.json")).expect("truth.json"))
            .expect("truth.json parses");
    let files = truth["files"].as_array().expect("files");
    let (mut pages_seen, mut deskewed) = (0u32, 0u32);
    // CPU time of pages left as they are (the decision alone) and of pages turned.
    let (mut straight, mut turned) = (Duration::ZERO, Duration::ZERO);
    let mut worst_error: f64 = 0.0;
    for f in files {
        let Some(info) = f["scan"]["page_info"].as_array() else {
            continue;
        };
        let name = f["file"].as_str().expect("file name");
        // Photographed pages are not clean scans; their own tests are elsewhere.
        if name.contains(".photo.") {
            continue;
        }
        let path = fixtures().join(name);
        for (index, facts) in info.iter().enumerate() {
            let img = page(&path, index as u32, info.len());
            let started = cpu_time();
            let (prepared, d) = prepare_explained(img, Some(DPI));
            let spent = cpu_time().saturating_sub(started);
            if d.deskewed.is_some() {
                turned += spent;
            } else {
                straight += spent;
            }
            pages_seen += 1;
            let skew = facts["skew_degrees_cw"].as_f64().unwrap_or(0.0);
            // A page lying on its side is read upright later. Its text lines run down the
            // image, but its table rules across it still show the skew (turning back first and
            // the quarter turn after is the same as the other way round), so a skew may or
            // may not be found there.
            let quarter = facts["orientation_cw"].as_u64().unwrap_or(0) % 180 == 90;
            eprintln!("{name} p{}: truth {skew:+.2}° {d:?}", index + 1);
            assert!(!d.flattened, "{name} p{}: flattened", index + 1);
            assert!(
                !d.normalized,
                "{name} p{}: light normalised ({})",
                index + 1,
                d.unevenness
            );
            assert_eq!(prepared.threshold, Threshold::Global, "{name}");
            match d.deskewed {
                None => {
                    assert!(prepared.geometry.is_identity(), "{name}");
                    // Skew well past the threshold must be found (a 180° turn keeps its axis).
                    assert!(
                        quarter || skew.abs() < 0.6,
                        "{name} p{}: {skew}° missed",
                        index + 1
                    );
                }
                Some(found) => {
                    deskewed += 1;
                    // A page turned half a turn shows its skew with the same sense.
                    let error = (found - skew).abs();
                    worst_error = worst_error.max(error);
                    assert!(
                        error < 0.2,
                        "{name} p{}: found {found}° for {skew}°",
                        index + 1
                    );
                }
            }
        }
    }
    let ms = |d: Duration, n: u32| d.as_secs_f64() * 1e3 / f64::from(n.max(1));
    eprintln!(
        "{pages_seen} pages, {deskewed} deskewed, worst skew error {worst_error:.2}°; CPU a page: {:.1} ms left as it was, {:.1} ms turned",
        ms(straight, pages_seen - deskewed),
        ms(turned, deskewed)
    );
    assert!(pages_seen >= 45, "{pages_seen} pages");
}

/// The corners found on every photographed page of the hard fixtures (`scripts/gen-hard-fixtures`)
/// against the ones the generator placed the page at. Skipped when the hard set is absent.
#[test]
#[ignore = "decodes the hard set's photos: cargo test --release -p ironclad-ocr -- --ignored photographed"]
fn photographed_pages_are_found_where_they_lie() {
    let hard = fixtures().join("../hard");
    let Ok(bytes) = std::fs::read(hard.join("truth.json")) else {
        eprintln!("no hard fixtures");
        return;
    };
    let truth: serde_json::Value = serde_json::from_slice(&bytes).expect("truth.json parses");
    let (mut photos, mut worst) = (0, 0f64);
    for f in truth["files"].as_array().expect("files") {
        let name = f["file"].as_str().expect("file name");
        if f["hard_kind"] != "photo" || !name.ends_with(".jpg") {
            continue;
        }
        let params = &f["scan"]["degradation_params"]["pages"][0];
        let corners: Vec<(f64, f64)> = params["page_corners_px"]
            .as_array()
            .expect("corners")
            .iter()
            .map(|c| (c[0].as_f64().unwrap_or(0.0), c[1].as_f64().unwrap_or(0.0)))
            .collect();
        let img = page(&hard.join(name), 0, 1);
        let (w, h) = (f64::from(img.width), f64::from(img.height));
        let small = shrunk(&img).expect("survey");
        let paper = light::Background::measure(&small)
            .expect("grid")
            .quantile(0.9);
        let found = page_edges::find(&small, f64::from(paper))
            .unwrap_or_else(|| panic!("{name}: no page found"));
        // The generator lists them top left, top right, bottom right, bottom left too.
        for (f, t) in found.iter().zip(&corners) {
            let off = ((f.0 - t.0 / w) * w).hypot((f.1 - t.1 / h) * h) / w;
            worst = worst.max(off);
            assert!(
                off < 0.01,
                "{name}: corner {f:?} for {t:?} ({off:.4} of the width)"
            );
        }
        let (_, d) = prepare_explained(img, None);
        assert!(d.flattened && d.normalized, "{name}: {d:?}");
        photos += 1;
    }
    eprintln!(
        "{photos} photos, corners within {:.2} % of the width",
        worst * 100.0
    );
}

/// The committed photo of `tests/ocr/photographed.rs` (a 150-DPI page whose corners are known):
/// found where it lies, flattened, evened out, and given back its resolution.
#[test]
fn the_committed_photo_is_flattened_to_its_page() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/photographed/bill-of-lading.photo.jpg");
    let img = page(&path, 0, 1);
    let (w, h) = (f64::from(img.width), f64::from(img.height));
    let small = shrunk(&img).expect("survey");
    let paper = light::Background::measure(&small)
        .expect("grid")
        .quantile(0.9);
    let found = page_edges::find(&small, f64::from(paper)).expect("a page");
    let placed = [
        (120.0, 70.0),
        (1330.0, 110.0),
        (1360.0, 1850.0),
        (70.0, 1880.0),
    ];
    for (f, p) in found.iter().zip(placed) {
        let off = (f.0 * w - p.0).hypot(f.1 * h - p.1);
        assert!(off < 3.0, "corner {f:?} for {p:?}: {off:.1} px off");
    }
    let (prepared, d) = prepare_explained(img, None);
    assert!(d.flattened && d.normalized && d.deskewed.is_none(), "{d:?}");
    assert!(d.unevenness > 0.25, "{d:?}");
    assert_eq!(prepared.threshold, Threshold::Global);
    // 1240 × 1755 at 150 DPI before it was photographed.
    let (pw, ph) = (prepared.img.width, prepared.img.height);
    assert!(
        pw.abs_diff(1240) < 40 && ph.abs_diff(1755) < 60,
        "{pw} × {ph}"
    );
    assert!(
        prepared.dpi.is_some_and(|dpi| dpi.abs_diff(150) <= 5),
        "{:?}",
        prepared.dpi
    );
}
