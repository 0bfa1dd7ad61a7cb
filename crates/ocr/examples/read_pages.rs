//! Reads files with a `PageReader` and prints one line per page, then the throughput.
//!
//! `cargo run --release -p ironclad-ocr --example read_pages -- [--threads N] [--lang L]
//! [--no-rotation] [--timeout-ms MS] [--text] [--boxes] FILE...`
//! (types are sniffed from the bytes; `OMP_THREAD_LIMIT=1` is ensured by re-exec).

use ironclad_ocr::{PageReader, ReadOptions};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    ironclad_ocr::prepare_process();
    let mut opts = ReadOptions::default();
    let mut files = Vec::new();
    let mut show_text = false;
    let mut show_boxes = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => opts.threads = args.next().and_then(|v| v.parse().ok()).unwrap_or(1),
            "--lang" => opts.languages = args.next().unwrap_or_else(|| "eng".into()),
            "--no-rotation" => opts.detect_rotation = false,
            "--timeout-ms" => {
                let ms = args.next().and_then(|v| v.parse().ok()).unwrap_or(120_000);
                opts.page_timeout = std::time::Duration::from_millis(ms);
            }
            "--text" => show_text = true,
            "--boxes" => show_boxes = true,
            _ => files.push(PathBuf::from(a)),
        }
    }
    let reader = PageReader::new(opts, None);
    let started = Instant::now();
    let mut pages = 0usize;
    for f in &files {
        let bytes = match std::fs::read(f) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{}: {e}", f.display());
                continue;
            }
        };
        let Some(media) = ironclad_inspect::sniff(&bytes) else {
            eprintln!("{}: unsupported type", f.display());
            continue;
        };
        let t = Instant::now();
        match reader.read_file(f, media) {
            Ok(read) => {
                for p in &read {
                    println!(
                        "{} p{} {:?} conf={:.2} rot={} words={} ({:.2}s file)",
                        f.display(),
                        p.index + 1,
                        p.method,
                        p.confidence,
                        p.rotation,
                        p.words.len(),
                        t.elapsed().as_secs_f64()
                    );
                    if show_text {
                        println!("{}", p.text());
                    }
                    if show_boxes {
                        for w in p.words.iter().take(4) {
                            println!(
                                "  {:?} line {} conf {:.2} {:?}",
                                w.text, w.line, w.confidence, w.bbox
                            );
                        }
                    }
                }
                pages += read.len();
            }
            Err(e) => println!("{}: {e:?} ({:.2}s)", f.display(), t.elapsed().as_secs_f64()),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{pages} pages in {secs:.2}s: {:.2} pages/s, {} OCR calls",
        pages as f64 / secs,
        reader.ocr_calls()
    );
}
