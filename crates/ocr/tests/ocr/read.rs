//! Reading real documents with real poppler and Tesseract: text layers, scans in every
//! accepted format, rotated and skewed pages, and the cache.
//!
//! Scans are made at 150 DPI to keep the suite fast (a page OCRs in ≈0.1–0.3 s).

use crate::common;

use common::{encode, pdf, png_with_dpi, render, skew, tiff, tiff_with_dpi, Page, INVOICE};
use image::{GrayImage, ImageFormat};
use ironclad_core::media::MediaType;
use ironclad_core::page::{PageText, ReadMethod};
use ironclad_ocr::{DirPageCache, PageBudget, PageCache, PageReader, ReadError, ReadOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

fn opts() -> ReadOptions {
    ReadOptions {
        dpi: 150,
        threads: 2,
        ..ReadOptions::default()
    }
}

fn reader() -> PageReader {
    PageReader::new(opts(), None)
}

/// The invoice rendered at 150 DPI, made once for the whole binary.
fn invoice_scan() -> &'static GrayImage {
    static SCAN: OnceLock<GrayImage> = OnceLock::new();
    SCAN.get_or_init(|| render(&pdf(&[Page::text(INVOICE, 16)]), 150))
}

/// Asserts the OCR found the invoice's key tokens with good confidence.
fn assert_invoice(page: &PageText) {
    let text = page.text();
    assert_eq!(page.method, ReadMethod::Ocr, "{text}");
    for token in ["INVOICE", "2024-0042", "MSCU1234565", "1234.56", "EUR"] {
        assert!(text.contains(token), "{token:?} missing from:\n{text}");
    }
    assert!(
        page.confidence > 0.5,
        "confidence {} for:\n{text}",
        page.confidence
    );
    assert_eq!(text.lines().next(), Some("INVOICE No. 2024-0042"), "{text}");
    for w in &page.words {
        let b = w.bbox;
        assert!(
            0.0 <= b.x0
                && b.x0 <= b.x1
                && b.x1 <= 1.0
                && 0.0 <= b.y0
                && b.y0 <= b.y1
                && b.y1 <= 1.0,
            "{w:?}"
        );
    }
}

/// The OCR box of `word` on `page`, to compare with the text layer's.
fn bbox_of(page: &PageText, word: &str) -> ironclad_core::page::BBox {
    page.words
        .iter()
        .find(|w| w.text == word)
        .unwrap_or_else(|| panic!("{word} not on page"))
        .bbox
}

#[test]
fn omp_thread_limit_is_set_by_the_reexec() {
    // Run this binary again without the variable: its constructor must re-exec it with the
    // variable set before any test runs, which the child test below then sees.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env_remove("OMP_THREAD_LIMIT")
        .args([
            "--exact",
            "read::child_reports_omp_thread_limit",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("OMP_THREAD_LIMIT=Some(\"1\")"), "{stdout}");
}

#[test]
fn child_reports_omp_thread_limit() {
    println!(
        "OMP_THREAD_LIMIT={:?}",
        std::env::var("OMP_THREAD_LIMIT").ok()
    );
}

#[test]
fn text_layer_pdf_gives_the_exact_words() {
    let lines: &[&str] = &[
        "Facture n° 42 — été",
        "Total: 1 234,56 EUR (net)",
        "Container MSCU1234565",
    ];
    let doc = pdf(&[Page::text(lines, 12), Page::text(INVOICE, 12)]);
    let r = reader();
    let pages = r.read_bytes(&doc, MediaType::Pdf).unwrap();
    assert_eq!(pages.len(), 2);
    assert_eq!(pages[0].index, 0);
    assert_eq!(pages[1].index, 1);
    assert!(pages
        .iter()
        .all(|p| p.method == ReadMethod::TextLayer && p.confidence == 1.0 && p.rotation == 0));
    // The em dash has no WinAnsi code in this hand-built PDF, so it is written as '?'.
    assert_eq!(
        pages[0].text(),
        "Facture n° 42 ? été\nTotal: 1 234,56 EUR (net)\nContainer MSCU1234565"
    );
    assert_eq!(pages[1].text(), INVOICE.join("\n"));
    let first = &pages[0].words[0];
    assert_eq!(
        (first.text.as_str(), first.line, first.confidence),
        ("Facture", 0, 1.0)
    );
    // 56 pt from the left of a 612 pt page, first baseline 60 pt below the top.
    assert!(
        (first.bbox.x0 - 56.0 / 612.0).abs() < 0.002,
        "{:?}",
        first.bbox
    );
    assert!(
        first.bbox.y0 > 0.05 && first.bbox.y1 < 0.1,
        "{:?}",
        first.bbox
    );
    assert_eq!(r.ocr_calls(), 0);

    // The same through read_file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.pdf");
    std::fs::write(&path, &doc).unwrap();
    assert_eq!(r.read_file(&path, MediaType::Pdf).unwrap(), pages);
}

#[test]
fn scanned_png_reads_with_boxes_matching_the_text_layer() {
    let r = reader();
    let pages = r
        .read_bytes(&encode(invoice_scan(), ImageFormat::Png), MediaType::Png)
        .unwrap();
    assert_eq!(pages.len(), 1);
    assert_invoice(&pages[0]);
    assert_eq!(pages[0].rotation, 0);
    // The OCR box of a word lies where the PDF put it.
    let layer = reader()
        .read_bytes(&pdf(&[Page::text(INVOICE, 16)]), MediaType::Pdf)
        .unwrap();
    for word in ["INVOICE", "MSCU1234565"] {
        let (a, b) = (bbox_of(&pages[0], word), bbox_of(&layer[0], word));
        for (x, y) in [(a.x0, b.x0), (a.y0, b.y0), (a.x1, b.x1), (a.y1, b.y1)] {
            assert!((x - y).abs() < 0.01, "{word}: OCR {a:?} vs layer {b:?}");
        }
    }
}

#[test]
fn scanned_jpeg_reads() {
    let pages = reader()
        .read_bytes(&encode(invoice_scan(), ImageFormat::Jpeg), MediaType::Jpeg)
        .unwrap();
    assert_invoice(&pages[0]);
}

#[test]
fn two_page_tiff_reads_both_pages_in_order() {
    let second: &[&str] = &[
        "PACKING LIST",
        "Gross weight: 18250 kg",
        "Seal number 778899",
    ];
    let page2 = render(&pdf(&[Page::text(second, 16)]), 150);
    let r = reader();
    let pages = r
        .read_bytes(&tiff(&[invoice_scan(), &page2]), MediaType::Tiff)
        .unwrap();
    assert_eq!(pages.len(), 2);
    assert_invoice(&pages[0]);
    assert_eq!((pages[0].index, pages[1].index), (0, 1));
    let text = pages[1].text();
    assert!(
        text.contains("PACKING LIST") && text.contains("18250") && text.contains("778899"),
        "{text}"
    );
    assert_eq!(r.ocr_calls(), 2);
}

#[test]
fn scanned_pdf_pages_are_rendered_and_text_pages_are_not() {
    // Page 1 has a real text layer, page 2 is only an image, page 3 has a two-character
    // layer over nothing: too little text, so it is rendered (and reads as empty).
    let doc = pdf(&[
        Page::text(INVOICE, 12),
        Page::scan(invoice_scan()),
        Page::text(&["p3"], 12),
    ]);
    let r = reader();
    let pages = r.read_bytes(&doc, MediaType::Pdf).unwrap();
    let methods: Vec<ReadMethod> = pages.iter().map(|p| p.method).collect();
    assert_eq!(
        methods,
        vec![ReadMethod::TextLayer, ReadMethod::Ocr, ReadMethod::Ocr]
    );
    assert_invoice(&pages[1]);
    assert!(pages[2].words.len() <= 1, "{:?}", pages[2].words);
    assert!(r.ocr_calls() >= 2);
}

/// Orientation detection needs Tesseract's `osd` data; without it rotation tests would fail
/// obscurely.
fn require_osd() {
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("TESSDATA_PREFIX")
        .map(Into::into)
        .into_iter()
        .collect();
    if let Ok(versions) = std::fs::read_dir("/usr/share/tesseract-ocr") {
        dirs.extend(versions.flatten().map(|v| v.path().join("tessdata")));
    }
    assert!(
        dirs.iter().any(|d| d.join("osd.traineddata").is_file()),
        "osd.traineddata not found in {dirs:?}: install the Debian package tesseract-ocr-osd"
    );
}

#[test]
fn upside_down_page_reads_upright_and_reports_180() {
    require_osd();
    let turned = image::imageops::rotate180(invoice_scan());
    let pages = reader()
        .read_bytes(&encode(&turned, ImageFormat::Png), MediaType::Png)
        .unwrap();
    assert_invoice(&pages[0]);
    assert_eq!(pages[0].rotation, 180);
}

#[test]
fn sideways_pages_read_upright_both_ways() {
    require_osd();
    // Content turned 90° clockwise needs 270° more to be upright, and the reverse.
    for (turned, expected) in [
        (image::imageops::rotate90(invoice_scan()), 270),
        (image::imageops::rotate270(invoice_scan()), 90),
    ] {
        let page = &reader()
            .read_bytes(&encode(&turned, ImageFormat::Png), MediaType::Png)
            .unwrap()[0];
        assert_invoice(page);
        assert_eq!(page.rotation, expected);
        // Boxes are in the upright frame: INVOICE sits top-left, wider than tall.
        let b = bbox_of(page, "INVOICE");
        assert!(
            b.x0 < 0.15 && b.y0 < 0.1 && (b.x1 - b.x0) > (b.y1 - b.y0),
            "{b:?}"
        );
    }
}

#[test]
fn slightly_skewed_scans_still_read() {
    for degrees in [2.0, -2.0] {
        let page = &reader()
            .read_bytes(
                &encode(&skew(invoice_scan(), degrees), ImageFormat::Png),
                MediaType::Png,
            )
            .unwrap()[0];
        assert_invoice(page);
        assert_eq!(page.rotation, 0);
    }
}

#[test]
fn rotation_detection_can_be_turned_off() {
    let turned = image::imageops::rotate180(invoice_scan());
    let r = PageReader::new(
        ReadOptions {
            detect_rotation: false,
            ..opts()
        },
        None,
    );
    let page = &r
        .read_bytes(&encode(&turned, ImageFormat::Png), MediaType::Png)
        .unwrap()[0];
    assert_eq!(page.rotation, 0);
    assert!(!page.text().contains("INVOICE"));
    assert_eq!(r.ocr_calls(), 1);
}

#[test]
fn second_read_of_the_same_file_hits_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache: Arc<dyn PageCache> = Arc::new(DirPageCache::new(dir.path()).unwrap());
    let png = encode(invoice_scan(), ImageFormat::Png);
    let doc = pdf(&[Page::text(INVOICE, 12), Page::scan(invoice_scan())]);

    let first = PageReader::new(opts(), Some(cache.clone()));
    let png_pages = first.read_bytes(&png, MediaType::Png).unwrap();
    let pdf_pages = first.read_bytes(&doc, MediaType::Pdf).unwrap();
    let calls = first.ocr_calls();
    assert!(calls >= 2);

    // A new reader (a restarted worker) sharing the cache directory: no OCR at all.
    let second = PageReader::new(opts(), Some(cache.clone()));
    assert_eq!(second.read_bytes(&png, MediaType::Png).unwrap(), png_pages);
    assert_eq!(second.read_bytes(&doc, MediaType::Pdf).unwrap(), pdf_pages);
    // The same pixels in another container hit the pixel-keyed entry.
    let from_tiff = second
        .read_bytes(&tiff(&[invoice_scan()]), MediaType::Tiff)
        .unwrap();
    assert_eq!(from_tiff[0].words, png_pages[0].words);
    assert_eq!(second.ocr_calls(), 0);

    // Different settings are different keys.
    let fra = PageReader::new(
        ReadOptions {
            languages: "eng+fra".into(),
            ..opts()
        },
        Some(cache),
    );
    assert_invoice(&fra.read_bytes(&png, MediaType::Png).unwrap()[0]);
    assert_eq!(fra.ocr_calls(), 1);
}

/// A cache that answers every key with one page, whatever it holds.
struct FixedCache(PageText);

impl PageCache for FixedCache {
    fn get(&self, _key: &str) -> Option<PageText> {
        Some(self.0.clone())
    }
    fn put(&self, _key: &str, _page: &PageText) {}
}

#[test]
fn words_from_the_cache_are_cleaned_like_words_just_read() {
    use ironclad_core::page::{BBox, Word};
    let word = |text: &str, x0: f32| Word {
        text: text.into(),
        bbox: BBox {
            x0,
            y0: 0.1,
            x1: x0 + 0.05,
            y1: 0.2,
        },
        confidence: 0.9,
        line: 0,
    };
    let stored = PageText {
        line_blocks: Vec::new(),
        index: 7,
        method: ReadMethod::Ocr,
        confidence: 0.9,
        rotation: 0,
        size_pt: None,
        words: vec![
            word("Ship\0per", 0.1),
            word("\0\u{1b}", 0.3),
            word("Ltd", 0.5),
        ],
    };
    let r = PageReader::new(opts(), Some(Arc::new(FixedCache(stored))));
    let png = encode(invoice_scan(), ImageFormat::Png);
    let pages = r.read_bytes(&png, MediaType::Png).unwrap();
    assert_eq!(r.ocr_calls(), 0, "answered by the cache");
    let words: Vec<(&str, f32)> = pages[0]
        .words
        .iter()
        .map(|w| (w.text.as_str(), w.bbox.x0))
        .collect();
    assert_eq!(words, [("Shipper", 0.1), ("Ltd", 0.5)]);
}

#[test]
fn jpeg_scans_are_rendered_in_process_and_anything_more_by_poppler() {
    let r = reader();
    // One JPEG over the page: decoded and scaled here, no pdftoppm.
    let plain = r
        .read_bytes(&pdf(&[Page::jpeg_scan(invoice_scan())]), MediaType::Pdf)
        .unwrap();
    assert_invoice(&plain[0]);
    assert_eq!(r.pages_rendered_in_process(), 1);
    // The same scan with a little text drawn over it (below the text-layer threshold, so
    // still a scanned page): pdftoppm renders it, text included.
    let stamped = Page {
        lines: &["PAID"],
        ..Page::jpeg_scan(invoice_scan())
    };
    let mixed = r.read_bytes(&pdf(&[stamped]), MediaType::Pdf).unwrap();
    assert_eq!(mixed[0].method, ReadMethod::Ocr);
    // The stamp lands on the first line ("PAID" over "INVOICE"): drawn, so read.
    assert_ne!(mixed[0].text(), plain[0].text());
    assert!(
        mixed[0].text().contains("MSCU1234565"),
        "{}",
        mixed[0].text()
    );
    assert_eq!(
        r.pages_rendered_in_process(),
        1,
        "the stamped page went to pdftoppm"
    );
    // Raw (uncompressed) image samples are left to pdftoppm too.
    r.read_bytes(&pdf(&[Page::scan(invoice_scan())]), MediaType::Pdf)
        .unwrap();
    assert_eq!(r.pages_rendered_in_process(), 1);
}

#[test]
fn the_resolution_an_image_records_reaches_tesseract() {
    // The pixel-keyed cache entry includes the resolution hint Tesseract was given, so which
    // readings share an entry shows which hint each file produced.
    let dir = tempfile::tempdir().unwrap();
    let cache: Arc<dyn PageCache> = Arc::new(DirPageCache::new(dir.path()).unwrap());
    let r = PageReader::new(opts(), Some(cache));
    let from_png = r
        .read_bytes(&png_with_dpi(invoice_scan(), 150), MediaType::Png)
        .unwrap();
    assert_invoice(&from_png[0]);
    assert_eq!(r.ocr_calls(), 1);
    let from_tiff = r
        .read_bytes(&tiff_with_dpi(invoice_scan(), 150), MediaType::Tiff)
        .unwrap();
    assert_eq!(r.ocr_calls(), 1, "both record 150 DPI: one reading");
    assert_eq!(from_tiff[0].words, from_png[0].words);
    // The same pixels with no recorded resolution are read without a hint: another reading.
    r.read_bytes(&encode(invoice_scan(), ImageFormat::Png), MediaType::Png)
        .unwrap();
    assert_eq!(r.ocr_calls(), 2);
    // A software default (72 DPI) is no better than nothing: same entry as no hint.
    r.read_bytes(&png_with_dpi(invoice_scan(), 72), MediaType::Png)
        .unwrap();
    assert_eq!(r.ocr_calls(), 2);
}

#[test]
fn concurrent_calls_share_one_page_budget() {
    // Six files read at once by six callers on a reader with 2 threads: every page is read
    // right, and no more engines are loaded than one file alone would load.
    let shifted = |dx: i64| {
        let src = invoice_scan();
        GrayImage::from_fn(src.width(), src.height(), |x, y| {
            let sx = x as i64 - dx;
            if sx < 0 || sx >= i64::from(src.width()) {
                image::Luma([255])
            } else {
                *src.get_pixel(sx as u32, y)
            }
        })
    };
    let scans: Vec<GrayImage> = (0..6).map(|i| shifted(i * 7)).collect();
    let files: Vec<(Vec<u8>, MediaType, usize)> = scans
        .iter()
        .enumerate()
        .map(|(i, img)| match i % 3 {
            0 => (encode(img, ImageFormat::Png), MediaType::Png, 1),
            1 => (tiff(&[img, img]), MediaType::Tiff, 2),
            _ => (
                pdf(&[Page::text(INVOICE, 12), Page::scan(img)]),
                MediaType::Pdf,
                2,
            ),
        })
        .collect();
    let r = reader();
    let started = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|(bytes, media, pages)| {
                let r = &r;
                s.spawn(move || {
                    let read = r.read_bytes(bytes, *media).unwrap();
                    assert_eq!(read.len(), *pages);
                    let scanned = read.last().unwrap();
                    assert_invoice(scanned);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
    println!("6 files, 8 scanned pages: {:?}", started.elapsed());
    assert_eq!(r.ocr_calls(), 8, "every scanned page read once");
    assert!(
        r.engines_loaded() <= 2,
        "{} engines for a budget of 2",
        r.engines_loaded()
    );
}

#[test]
fn long_text_pdfs_are_read_in_runs_of_pages_in_order() {
    // 130 pages: three pdftotext runs (64 + 64 + 2) after pdfinfo counted them.
    let doc = ironclad_inspect::fixtures::pdf_with_pages(
        130,
        "COMMERCIAL INVOICE Invoice No.: ABC-24-0123",
    );
    let pages = reader().read_bytes(&doc, MediaType::Pdf).unwrap();
    assert_eq!(pages.len(), 130);
    for (i, page) in pages.iter().enumerate() {
        assert_eq!(page.index as usize, i);
        assert_eq!(page.method, ReadMethod::TextLayer);
        assert!(
            page.text().contains(&format!("Page {} of 130", i + 1)),
            "page {}: {}",
            i + 1,
            page.text()
        );
    }
}

#[test]
fn a_cancelled_read_stops_taking_turns() {
    let r = PageReader::new(
        ReadOptions {
            threads: 1,
            ..opts()
        },
        None,
    );
    let scan = tiff(&[
        invoice_scan(),
        invoice_scan(),
        invoice_scan(),
        invoice_scan(),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scan.tiff");
    std::fs::write(&path, &scan).unwrap();
    let cancel = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let read = s.spawn(|| r.read_loaded_until(&path, &scan, MediaType::Tiff, &cancel));
        // Cancelled while the first of four pages is being read.
        std::thread::sleep(Duration::from_millis(30));
        cancel.store(true, Ordering::Relaxed);
        read.join().unwrap()
    });
    assert!(
        matches!(&result, Err(ReadError::Retryable(m)) if m.contains("cancelled")),
        "{result:?}"
    );
    assert!(
        r.ocr_calls() < 4,
        "{} pages read after the cancel",
        r.ocr_calls()
    );
}

#[test]
fn readers_sharing_a_budget_take_turns_oldest_file_first() {
    // One turn for two readers: the file that started first has all its pages read before
    // the other reader's page, even though that one is shorter.
    let budget = Arc::new(PageBudget::new(1));
    let one_thread = || ReadOptions {
        threads: 1,
        ..opts()
    };
    let (a, b) = (
        PageReader::with_budget(one_thread(), None, Arc::clone(&budget)),
        PageReader::with_budget(one_thread(), None, budget),
    );
    let long = tiff(&[invoice_scan(), invoice_scan(), invoice_scan()]);
    let short = encode(invoice_scan(), ImageFormat::Png);
    let started = Instant::now();
    let (long_done, short_done) = std::thread::scope(|s| {
        let first = s.spawn(|| {
            a.read_bytes(&long, MediaType::Tiff).unwrap();
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(30));
        b.read_bytes(&short, MediaType::Png).unwrap();
        (first.join().unwrap(), started.elapsed())
    });
    assert!(long_done < short_done, "{long_done:?} vs {short_done:?}");
}

#[test]
fn a_text_layer_file_does_not_wait_behind_a_scan() {
    // One OCR turn, taken by a three-page scan; a text PDF read meanwhile needs no turn.
    let r = PageReader::new(
        ReadOptions {
            threads: 1,
            ..opts()
        },
        None,
    );
    let scan = tiff(&[invoice_scan(), invoice_scan(), invoice_scan()]);
    let text = pdf(&[Page::text(INVOICE, 12)]);
    let started = Instant::now();
    let (scan_done, text_done) = std::thread::scope(|s| {
        let long = s.spawn(|| {
            r.read_bytes(&scan, MediaType::Tiff).unwrap();
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(50));
        let pages = r.read_bytes(&text, MediaType::Pdf).unwrap();
        assert_eq!(pages[0].method, ReadMethod::TextLayer);
        let text_done = started.elapsed();
        (long.join().unwrap(), text_done)
    });
    println!("text PDF after {text_done:?}, scan after {scan_done:?}");
    assert!(text_done < scan_done, "{text_done:?} vs {scan_done:?}");
}

#[test]
fn page_timeout_stops_ocr() {
    let dense: Vec<String> = (0..45)
        .map(|i| {
            format!(
                "Line {i} consignee shipper vessel voyage customs declaration gross weight {}",
                1000 + i * 37
            )
        })
        .collect();
    let lines: Vec<&str> = dense.iter().map(String::as_str).collect();
    let scan = render(&pdf(&[Page::text(&lines, 11)]), 150);
    let r = PageReader::new(
        ReadOptions {
            page_timeout: Duration::from_millis(150),
            ..opts()
        },
        None,
    );
    let started = Instant::now();
    let err = r
        .read_bytes(&encode(&scan, ImageFormat::Png), MediaType::Png)
        .unwrap_err();
    assert!(
        matches!(&err, ReadError::Terminal(m) if m.starts_with("page 1:") && m.contains("timeout")),
        "{err:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.ocr_calls(), 1, "the deadline stopped Tesseract itself");
    println!("timed out after {:?}", started.elapsed());
}

#[test]
fn a_page_tesseract_cannot_stop_still_returns_by_the_deadline() {
    // Noise: Tesseract spends its time in layout analysis, which its monitor cannot
    // interrupt, so only the watchdog bounds how long the caller waits (deadline + 1 s grace).
    // Unbounded, this page takes ≈5 s of layout analysis (measured).
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise = GrayImage::from_fn(2550, 3300, |_, _| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        image::Luma([(state >> 56) as u8])
    });
    let png = encode(&noise, ImageFormat::Png);
    let r = PageReader::new(
        ReadOptions {
            page_timeout: Duration::from_millis(300),
            ..opts()
        },
        None,
    );
    let started = Instant::now();
    let result = r.read_bytes(&png, MediaType::Png);
    let took = started.elapsed();
    println!(
        "noise page: {:?} after {took:?}",
        result.as_ref().map(|p| p[0].words.len())
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    // Either Tesseract gave up in time or the watchdog did; both are a terminal timeout.
    match result {
        Err(ReadError::Terminal(m)) => assert!(m.contains("timeout"), "{m}"),
        Ok(pages) => assert!(
            pages[0].words.len() < 50,
            "finished early with {} words",
            pages[0].words.len()
        ),
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn large_type_is_read_on_fewer_pixels_with_the_same_words_and_boxes() {
    // The invoice at 400 DPI: its 16 pt capitals are ≈64 px tall, three times what the
    // recognizer needs. Read at full size, then scaled to 20 px text, which stops at 200 DPI.
    let fine = render(&pdf(&[Page::text(INVOICE, 16)]), 400);
    let tiff = tiff_with_dpi(&fine, 400);
    let full = PageReader::new(
        ReadOptions {
            text_height_px: None,
            ..opts()
        },
        None,
    );
    let fitted = PageReader::new(
        ReadOptions {
            text_height_px: Some(20),
            ..opts()
        },
        None,
    );
    let a = full.read_bytes(&tiff, MediaType::Tiff).unwrap();
    let b = fitted.read_bytes(&tiff, MediaType::Tiff).unwrap();
    assert_invoice(&a[0]);
    assert_invoice(&b[0]);
    let full_px = full.pixels_recognized();
    let fitted_px = fitted.pixels_recognized();
    assert_eq!(full_px, u64::from(fine.width()) * u64::from(fine.height()));
    assert!(
        fitted_px * 3 < full_px,
        "scaled page has {fitted_px} pixels against {full_px}"
    );
    // The page keeps its size in points (the resolution hint follows the scale) and its words
    // keep their places on it.
    let [w, h] = b[0].size_pt.expect("a size from the recorded resolution");
    assert!(
        (w - 612.0).abs() < 2.0 && (h - 792.0).abs() < 2.0,
        "{w}×{h} pt"
    );
    for word in ["2024-0042", "MSCU1234565"] {
        let (p, q) = (bbox_of(&a[0], word), bbox_of(&b[0], word));
        for (x, y) in [(p.x0, q.x0), (p.y0, q.y0), (p.x1, q.x1), (p.y1, q.y1)] {
            assert!((x - y).abs() < 0.01, "{word}: {p:?} against {q:?}");
        }
    }
}

#[test]
fn small_type_is_never_enlarged() {
    // 150 DPI: the invoice's type is already below 30 px, so a 30 px target changes nothing.
    let r = PageReader::new(
        ReadOptions {
            text_height_px: Some(30),
            ..opts()
        },
        None,
    );
    let pages = r
        .read_bytes(&png_with_dpi(invoice_scan(), 150), MediaType::Png)
        .unwrap();
    assert_invoice(&pages[0]);
    let scan = invoice_scan();
    assert_eq!(
        r.pixels_recognized(),
        u64::from(scan.width()) * u64::from(scan.height())
    );
}

#[test]
fn a_bar_read_as_a_one_inside_an_identifier_is_settled_by_its_shape() {
    // A 150-DPI JPEG scan from the generated fixtures: Tesseract reads the invoice number
    // `DPI/2025/2396` as `DP1/…` (its context favours a digit); the glyph is as narrow as the
    // page's `I`s and `l`s, not as wide as its `1`s.
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/generated/set-06/packing-list.scan.pdf"
    );
    let bytes = std::fs::read(file).unwrap();
    let pages = PageReader::new(ReadOptions::default(), None)
        .read_bytes(&bytes, MediaType::Pdf)
        .unwrap();
    let words: Vec<&str> = pages[0].words.iter().map(|w| w.text.as_str()).collect();
    assert!(words.contains(&"DPI/2025/2396"), "{words:?}");
    assert!(!words.contains(&"DP1/2025/2396"), "{words:?}");
    // Real ones stay: the container's check digit and the invoice's own number.
    assert!(words.contains(&"MAEU419080884"), "{words:?}");
}

/// A phone's "save as PDF" makes a page of the photo's pixels in points at 72 DPI: a
/// 1275×1650-pixel photo is a 1275×1650 pt page, 36 megapixels at 300 DPI, and a 48-megapixel
/// photo is 830 megapixels. Such a page is read at about its image's own resolution instead of
/// being refused as over the pixel limit (then the case would end FAILED for a readable file).
#[test]
fn a_photo_saved_as_a_pdf_at_72_dpi_is_read_at_its_own_resolution() {
    let r = PageReader::new(
        ReadOptions {
            // The limit of a small deployment: the page at 300 DPI is over it.
            max_pixels_per_page: 20_000_000,
            ..opts()
        },
        None,
    );
    let scan = invoice_scan();
    for jpeg in [true, false] {
        let page = Page {
            width_pt: f64::from(scan.width()),
            height_pt: f64::from(scan.height()),
            jpeg,
            ..Page::scan(scan)
        };
        let pages = r
            .read_bytes(&pdf(&[page]), MediaType::Pdf)
            .unwrap_or_else(|e| panic!("jpeg {jpeg}: {e}"));
        assert_invoice(&pages[0]);
    }
}
