//! `ironclad-bench ocr`: pages/s of Ironclad's OCR path against the raw `tesseract` CLI and
//! `ocrmypdf`, on the same scanned pages, in one run; text-layer pages/s; the worker's peak RSS;
//! field accuracy from the documents test.
//!
//! Every page of the generated scanned PDFs (`tests/fixtures/generated/**/*.scan.pdf`) is
//! rendered ONCE before any clock starts (`pdftoppm -r 300 -gray`, what `PageReader` does), and
//! the same pixels go to every contender:
//!
//! * **raw CLI** (the baseline): `xargs -P 2 -I{} tesseract {} {}.cli -l eng --dpi 300` over the
//!   PGMs, with `OMP_THREAD_LIMIT=1`. `--dpi 300` is the hint `PageReader` gives Tesseract for a
//!   rendered PDF page and for an image that records its resolution (without it Tesseract
//!   estimates ≈373 DPI on these pages, reads ≈20 % fewer words and is ≈5 % slower).
//! * **Ironclad, images**: `PageReader::read_file` on one multi-page TIFF (Deflate, tagged
//!   300 DPI as a scanner tags it) holding the same PGMs: pages spread over the reader's 2
//!   threads, no rendering.
//! * **Ironclad, PDF incl. rendering**: `read_file` on the scanned PDFs merged into one PDF
//!   (`pdfunite`), so rendering (`pdftoppm`) is inside the clock; the same file goes to ocrmypdf.
//! * **Ironclad as the worker**: every scanned PDF read by its own caller, `--worker-concurrency`
//!   (default 8, the worker's default) at a time on one shared reader, as `ReadingProcessor`
//!   reads a job's source: the bytes are read (the worker verifies their digest), then
//!   `ironclad_reading::read_document` with the blob's path and the shipped
//!   `workflows/trade.yaml`: pages, classification and extraction, and the second look at
//!   doubtful values (pages looked at again, regions read and its time are reported). For
//!   information, the same one file at a time (how the worker read before the reader's page
//!   budget was shared across files).
//! * **The hard set** (`tests/fixtures/hard/`, `scripts/gen-hard-fixtures`): every scan of it
//!   (phone photos, faxes, stamped scans, monospaced documents, stacked forms) read the same
//!   way, one hard kind after another, each kind in its own child process: pages/s per kind
//!   and over all, the share of pages the second look read again and its time per page. The
//!   row is skipped, with the reason, when the set is missing.
//! * **ocrmypdf**: `ocrmypdf -j 2 --force-ocr --oversample 300 -l eng merged.pdf out.pdf`
//!   (`--oversample 300`: OCR at 300 DPI like the others; the scans embed 150-DPI JPEGs, which
//!   ocrmypdf would otherwise OCR at 150 DPI: that run is reported too, for information).
//!
//! Each Ironclad contender runs in a child process (this binary, hidden `ocr-worker`
//! subcommand) whose peak RSS and CPU time come from `wait4`; the CLI and ocrmypdf runs are
//! measured the same way (their RSS is the largest of their processes).

use anyhow::{bail, ensure, Context};
use ironclad_core::page::{PageText, ReadMethod};
use ironclad_extract::Workflow;
use ironclad_reading::{read_document, Document, SecondLookSummary};
use serde_json::{json, Value};
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Target: Ironclad's OCR pages/s over the raw CLI's (issue 24: the worker stays ≥ 1.4×).
const TARGET_VS_CLI: f64 = 1.4;
/// Target: Ironclad's OCR pages/s over ocrmypdf's.
const TARGET_VS_OCRMYPDF: f64 = 1.5;
/// Target: text-layer pages/s.
const TARGET_TEXT_PAGES_PER_S: f64 = 200.0;
/// Target: peak RSS of the reading process with 2 OCR threads.
const TARGET_RSS_MB: f64 = 400.0;
/// Targets: field accuracy on text PDFs and on scans.
const TARGET_TEXT_ACCURACY: f64 = 0.99;
const TARGET_SCAN_ACCURACY: f64 = 0.95;
/// Rendering resolution, as `ReadOptions::default().dpi`.
const DPI: u32 = 300;

/// `ironclad-bench ocr`: OCR throughput against the tesseract CLI and ocrmypdf.
#[derive(Debug, Clone, clap::Args)]
pub struct OcrArgs {
    /// A bounded run (4 scanned pages, one pass over the text PDFs, no accuracy run) for CI:
    /// exits non-zero only if a contender errors.
    #[arg(long)]
    pub smoke: bool,
    /// Scanned pages to read: whole scanned PDFs in a fixed order (sets, rotation, packet) until
    /// at least N pages. Default: all of them (35 in the default fixtures); smoke: 4 (set 1).
    #[arg(long)]
    pub pages: Option<usize>,
    /// OCR parallelism of every contender: the reader's `threads`, `xargs -P`, `ocrmypdf -j`.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Least text-layer pages to read (the text PDFs are repeated). Default 200; smoke: one pass.
    #[arg(long)]
    pub text_pages: Option<usize>,
    /// Contenders to run (comma-separated): cli, images, pdf, pdf-files, pdf-files-1, ocrmypdf,
    /// ocrmypdf-native, hard, text, text-1, accuracy; and, not by default, pdf-files-nolook and
    /// hard-nolook (the same without the second look, to see its cost). Ratios need cli and
    /// ocrmypdf (and pdf-files for the hard set's).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cli,images,pdf,pdf-files,pdf-files-1,ocrmypdf,ocrmypdf-native,hard,text,text-1,accuracy"
    )]
    pub only: Vec<String>,
    /// Rounds of the timed contenders, in alternating order, each figure the mean of its
    /// rounds. Default 2; smoke: 1.
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Files read at once in the worker-shaped rows (`pdf-files`, `text`): the worker's
    /// `IRONCLAD_WORKER_CONCURRENCY` default.
    #[arg(long, default_value_t = 8)]
    pub worker_concurrency: usize,
    /// Run the field-accuracy step in smoke mode too (it is skipped there: it builds the
    /// documents test in release and reads every fixture).
    #[arg(long)]
    pub accuracy: bool,
    /// The ocrmypdf executable (default: `ocrmypdf` on PATH). Missing: its rows are skipped.
    #[arg(long)]
    pub ocrmypdf: Option<PathBuf>,
    /// An experiment knob: turn `PageReader`'s rotation detection off.
    #[arg(long)]
    pub no_rotation: bool,
    /// An experiment knob: the reader's `text_height_px` (pages scaled so their body text is
    /// this many pixels tall); 0 reads every page at full resolution. Default: the reader's.
    #[arg(long)]
    pub text_height: Option<u32>,
    /// Where to write the JSON results (default bench/results/ocr.json; smoke: ocr-smoke.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the rendered pages, the merged PDF and every contender's output in this directory
    /// (default: a temp dir, removed).
    #[arg(long)]
    pub keep: Option<PathBuf>,
}

/// The hidden `ocr-worker` subcommand: reads files with one `PageReader` as a job file says,
/// writes what happened as JSON. Runs in its own process so its peak RSS is its own.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// The job (JSON): files, repeat, callers, api, reader options.
    #[arg(long)]
    pub job: PathBuf,
    /// Where to write the result (JSON).
    #[arg(long)]
    pub out: PathBuf,
}

// ---------------------------------------------------------------------------------------------
// The worker (child process).

/// Runs a worker job; exit status 1 if it failed (the result file then holds the error).
pub fn worker(args: &WorkerArgs) -> ExitCode {
    let result = worker_job(args).unwrap_or_else(|e| json!({ "error": format!("{e:#}") }));
    let failed = result.get("error").is_some();
    let text = serde_json::to_string_pretty(&result).unwrap_or_else(|_| "{}".into());
    if let Err(e) = std::fs::write(&args.out, text) {
        eprintln!("ocr-worker: writing {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// What one read call gave.
struct Done {
    file: usize,
    secs: f64,
    pages: Vec<PageText>,
    /// What the second look did (`read_document` only).
    look: Option<SecondLookSummary>,
    /// Pages the workflow's classification gave a type (`read_document` only).
    typed: Option<usize>,
}

/// Second-look figures over `pages` read pages: how many were looked at again (and their
/// share), the regions read, what changed, and its time per looked-at page and per page
/// (the summaries' `ms`, page decoding included, as `read_document` reports it).
fn second_look_figures(pages: usize, look: &SecondLookSummary) -> Value {
    json!({
        "pages": pages,
        "pages_looked": look.pages,
        "share_looked": round3(look.pages as f64 / pages.max(1) as f64),
        "regions": look.regions,
        "candidates": look.candidates,
        "facts_changed": look.facts_changed,
        "ms": look.ms,
        "ms_per_looked_page": (look.pages > 0).then(|| round2(look.ms as f64 / look.pages as f64)),
        "ms_per_page": round2(look.ms as f64 / pages.max(1) as f64),
    })
}

fn worker_job(args: &WorkerArgs) -> anyhow::Result<Value> {
    let job: Value = serde_json::from_slice(
        &std::fs::read(&args.job).with_context(|| format!("reading {}", args.job.display()))?,
    )?;
    let files: Vec<PathBuf> = job["files"]
        .as_array()
        .context("job.files")?
        .iter()
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .collect();
    ensure!(!files.is_empty(), "the job has no files");
    let repeat = job["repeat"].as_u64().unwrap_or(1).max(1) as usize;
    let callers = job["callers"].as_u64().unwrap_or(1).max(1) as usize;
    let api = job["api"].as_str().unwrap_or("read_file").to_owned();
    let opts = ironclad_ocr::ReadOptions {
        languages: job["languages"].as_str().unwrap_or("eng").to_owned(),
        threads: job["threads"].as_u64().unwrap_or(2).max(1) as usize,
        detect_rotation: job["detect_rotation"].as_bool().unwrap_or(true),
        text_height_px: ironclad_ocr::text_height_setting(
            job["text_height_px"]
                .as_u64()
                .and_then(|h| u32::try_from(h).ok()),
        ),
        second_look: job["second_look"].as_bool().unwrap_or(true),
        ..Default::default()
    };
    let expect = match job["expect"].as_str() {
        Some("text_layer") => ReadMethod::TextLayer,
        _ => ReadMethod::Ocr,
    };
    // A hard page Tesseract finds nothing on is a figure to report, not a broken bench.
    let allow_empty = job["allow_empty_pages"].as_bool().unwrap_or(false);
    // The worker compiles a case's workflow once per version and keeps it: outside the clock.
    let workflow = match job["workflow"].as_str() {
        Some(p) => {
            let yaml = std::fs::read_to_string(p).with_context(|| format!("reading {p}"))?;
            Some(Workflow::from_yaml(&yaml).map_err(|e| anyhow::anyhow!("{p}: {e}"))?)
        }
        None => None,
    };
    ensure!(
        api != "read_document" || workflow.is_some(),
        "read_document needs the job's workflow"
    );
    // Types are sniffed before the clock starts (the worker has them from intake).
    let mut medias = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
        medias.push(
            ironclad_inspect::sniff(&bytes)
                .with_context(|| format!("{}: not a supported type", f.display()))?,
        );
    }
    let reader = ironclad_ocr::PageReader::new(opts, None);
    let items: Vec<usize> = (0..repeat).flat_map(|_| 0..files.len()).collect();
    let next = AtomicUsize::new(0);
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let started = Instant::now();
    let mut done: Vec<Done> = std::thread::scope(|s| {
        let work = || {
            let mut mine = Vec::new();
            while let Some(&i) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                let t = Instant::now();
                let read = match api.as_str() {
                    // As the worker (`ironclad_reading::read_source`): the blob's bytes (read
                    // to verify their digest), then the one reading path on the blob's path:
                    // pages, the workflow's analysis, the second look. No template set (a
                    // case without one) and no cancel flag (no job times out here).
                    "read_document" => std::fs::read(&files[i])
                        .map_err(|e| format!("{e}"))
                        .and_then(|b| {
                            let document = Document {
                                bytes: &b,
                                media: medias[i],
                                path: Some(&files[i]),
                            };
                            read_document(&reader, document, workflow.as_ref(), &[], None)
                                .map_err(|e| format!("{e:?}"))
                        })
                        .map(|r| {
                            let typed = r
                                .analysis
                                .as_ref()
                                .map(|a| a.pages.iter().filter(|p| p.doc_type.is_some()).count());
                            (r.pages, Some(r.second_look), typed)
                        }),
                    // The reader alone on the blob's path (the text-layer rows).
                    "read_loaded" => std::fs::read(&files[i])
                        .map_err(|e| format!("{e}"))
                        .and_then(|b| {
                            reader
                                .read_loaded(&files[i], &b, medias[i])
                                .map_err(|e| format!("{e:?}"))
                        })
                        .map(|p| (p, None, None)),
                    _ => reader
                        .read_file(&files[i], medias[i])
                        .map_err(|e| format!("{e:?}"))
                        .map(|p| (p, None, None)),
                };
                match read {
                    Ok((pages, look, typed)) => mine.push(Done {
                        file: i,
                        secs: t.elapsed().as_secs_f64(),
                        pages,
                        look,
                        typed,
                    }),
                    Err(e) => {
                        errors
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(format!("{}: {e}", files[i].display()));
                        // Stop the other callers too.
                        next.store(items.len(), Ordering::Relaxed);
                        break;
                    }
                }
            }
            mine
        };
        let handles: Vec<_> = (0..callers).map(|_| s.spawn(work)).collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let errors = errors.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = errors.first() {
        bail!("{e}");
    }
    ensure!(
        done.len() == items.len(),
        "{} of {} reads finished (a reader thread panicked?)",
        done.len(),
        items.len()
    );
    done.sort_by_key(|d| d.file);
    let pages: Vec<&PageText> = done.iter().flat_map(|d| d.pages.iter()).collect();
    let unexpected = pages.iter().filter(|p| p.method != expect).count();
    ensure!(
        unexpected == 0,
        "{unexpected} page(s) were not read by {expect:?}"
    );
    let empty = pages.iter().filter(|p| p.words.is_empty()).count();
    ensure!(
        empty == 0 || allow_empty,
        "{empty} page(s) came back without a word"
    );
    // The second look over every file, when the reading path ran it.
    let second_look = (api == "read_document").then(|| {
        let mut total = SecondLookSummary::default();
        for d in &done {
            if let Some(l) = &d.look {
                total.add(l);
            }
        }
        second_look_figures(pages.len(), &total)
    });
    let typed: Option<usize> =
        (api == "read_document").then(|| done.iter().filter_map(|d| d.typed).sum());
    let words: usize = pages.iter().map(|p| p.words.len()).sum();
    let conf = pages.iter().map(|p| f64::from(p.confidence)).sum::<f64>() / pages.len() as f64;
    let rotated: Vec<Value> = done
        .iter()
        .flat_map(|d| {
            d.pages
                .iter()
                .filter(|p| p.rotation != 0)
                .map(|p| json!({"file": files[d.file].display().to_string(), "page": p.index + 1, "rotation": p.rotation}))
        })
        .collect();
    let per_file: Vec<Value> = if repeat == 1 {
        done.iter()
            .map(|d| {
                json!({
                    "file": files[d.file].display().to_string(),
                    "pages": d.pages.len(),
                    "s": round3(d.secs),
                    "confidence": d.pages.iter().map(|p| round3(f64::from(p.confidence))).collect::<Vec<_>>(),
                    "second_look": d.look,
                    "pages_typed": d.typed,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(json!({
        "pages": pages.len(),
        "reads": done.len(),
        "wall_s": round3(wall),
        "pages_per_s": round3(pages.len() as f64 / wall.max(1e-9)),
        "ocr_calls": reader.ocr_calls(),
        "engines_loaded": reader.engines_loaded(),
        "pages_rendered_in_process": reader.pages_rendered_in_process(),
        "megapixels_recognized": round2(reader.pixels_recognized() as f64 / 1e6),
        "words": words,
        "empty_pages": empty,
        "mean_confidence": round3(conf),
        "second_look": second_look,
        "crops_read": reader.crops_read(),
        "pages_typed": typed,
        "rotated_pages": rotated,
        "read_s_sum": round3(done.iter().map(|d| d.secs).sum::<f64>()),
        "per_file": per_file,
        "options": {
            "threads": reader.options().threads,
            "languages": reader.options().languages,
            "dpi": reader.options().dpi,
            "detect_rotation": reader.options().detect_rotation,
            "second_look": reader.options().second_look,
            "workflow": job["workflow"],
            "api": api,
            "callers": callers,
            "repeat": repeat,
        },
    }))
}

// ---------------------------------------------------------------------------------------------
// Measured child processes.

/// How a child process (and every descendant it waited for) ran.
#[derive(Debug, Clone)]
struct Measured {
    ok: bool,
    status: String,
    wall_s: f64,
    cpu_s: f64,
    max_rss_mb: f64,
    stderr_tail: String,
    /// Machine load around the run.
    load: Value,
}

/// Process groups of running contenders, for the interrupt handler.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// The scratch directory, removed by the interrupt handler.
static SCRATCH: Mutex<Option<PathBuf>> = Mutex::new(None);

/// On SIGINT/SIGTERM: stops the running contender's process group (by its id), removes the
/// scratch directory, exits 130.
pub fn stop_children_on_signal() {
    tokio::spawn(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        let groups: Vec<i32> = GROUPS.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for g in &groups {
            // SAFETY: kill(2) on a process group this run created.
            unsafe { libc::kill(-g, libc::SIGTERM) };
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Some(dir) = SCRATCH.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = std::fs::remove_dir_all(dir);
        }
        eprintln!("bench: interrupted; stopped {} contender(s)", groups.len());
        std::process::exit(130);
    });
}

/// Runs `cmd` in its own process group with stdout and stderr to `log`, reaps it with
/// `wait4` for its peak RSS and CPU time (its own and its waited-for descendants').
fn run_measured(mut cmd: Command, log: &Path) -> anyhow::Result<Measured> {
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0);
    let before = crate::sys::CpuSample::take(None);
    let load_before = loadavg();
    let started = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {:?}", cmd.get_program()))?;
    let pid = child.id() as libc::pid_t;
    GROUPS.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = loop {
        // SAFETY: wait4 on our own child with valid out-pointers; the `Child` handle is never
        // waited on afterwards (dropping it does not wait or kill).
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            break Err(err);
        }
    };
    let wall = started.elapsed().as_secs_f64();
    GROUPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|g| *g != pid);
    drop(child);
    reaped.context("wait4")?;
    let after = crate::sys::CpuSample::take(None);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu = tv(ru.ru_utime) + tv(ru.ru_stime);
    let (ok, status_text) = if libc::WIFEXITED(status) {
        let code = libc::WEXITSTATUS(status);
        (code == 0, format!("exit {code}"))
    } else if libc::WIFSIGNALED(status) {
        (
            false,
            format!("killed by signal {}", libc::WTERMSIG(status)),
        )
    } else {
        (false, format!("wait status {status}"))
    };
    let mut split = before.split(&after);
    // The contender's own cores come from its rusage; "other" is what the rest of the machine
    // used meanwhile (other people's builds on a shared machine), the noise to keep in mind.
    let busy = split["machine_busy_cores"].as_f64().unwrap_or(0.0);
    let bench = split["bench_cores"].as_f64().unwrap_or(0.0);
    let contender = cpu / wall.max(1e-9);
    split["contender_cores"] = json!(round2(contender));
    split["other_cores"] = json!(round2((busy - contender - bench).max(0.0)));
    split["loadavg_before"] = load_before;
    split["loadavg_after"] = loadavg();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    Ok(Measured {
        ok,
        status: status_text,
        wall_s: wall,
        cpu_s: cpu,
        // ru_maxrss is in KiB on Linux.
        max_rss_mb: ru.ru_maxrss as f64 / 1024.0,
        stderr_tail: lines[lines.len().saturating_sub(15)..].join("\n"),
        load: split,
    })
}

/// The 1/5/15-minute load averages (what `uptime` prints).
fn loadavg() -> Value {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let v: Vec<f64> = text
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    json!(v)
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

// ---------------------------------------------------------------------------------------------
// Inputs.

/// A scanned or text PDF of the fixtures.
#[derive(Debug, Clone)]
struct Fixture {
    rel: String,
    path: PathBuf,
    pages: usize,
}

/// The generated fixtures' PDFs of `kind` ("scan" or "text"), in a fixed order: the sets,
/// then rotation, then the packet. The `forms/` documents (stacked forms, bordered tables,
/// each scan degraded its own way) are left out, so figures stay comparable with earlier runs;
/// their accuracy is `tests/documents`' to report.
fn fixtures(dir: &Path, kind: &str) -> anyhow::Result<Vec<Fixture>> {
    let truth_path = dir.join("truth.json");
    let truth: Value = serde_json::from_slice(
        &std::fs::read(&truth_path).with_context(|| format!("reading {}", truth_path.display()))?,
    )?;
    let mut out: Vec<Fixture> = truth["files"]
        .as_array()
        .context("truth.json has no files")?
        .iter()
        .filter(|f| f["kind"] == kind && f["media_type"] == "application/pdf")
        .filter(|f| f["layout"].is_null())
        .filter_map(|f| {
            let rel = f["file"].as_str()?.to_owned();
            Some(Fixture {
                path: dir.join(&rel),
                pages: f["pages"].as_u64()? as usize,
                rel,
            })
        })
        .collect();
    let group = |rel: &str| {
        if rel.starts_with("set-") {
            0
        } else if rel.starts_with("rotation/") {
            1
        } else {
            2
        }
    };
    out.sort_by(|a, b| (group(&a.rel), &a.rel).cmp(&(group(&b.rel), &b.rel)));
    ensure!(
        !out.is_empty(),
        "no {kind} PDFs in {} (run scripts/gen-fixtures)",
        truth_path.display()
    );
    Ok(out)
}

/// A scan of the hard set (`tests/fixtures/hard/`).
#[derive(Debug, Clone)]
struct HardFile {
    path: PathBuf,
    pages: usize,
}

/// The order hard kinds are read and reported in (the generator's); any other kind follows.
const HARD_KINDS: [&str; 5] = ["photo", "fax", "stamp", "mono", "stacked"];

/// A hard kind's place in [`HARD_KINDS`] (unknown kinds last).
fn hard_rank(kind: &str) -> usize {
    HARD_KINDS
        .iter()
        .position(|x| *x == kind)
        .unwrap_or(HARD_KINDS.len())
}

/// The hard set's scans, one list per hard kind.
type HardKinds = Vec<(String, Vec<HardFile>)>;

/// Every scan of the hard set (`truth.json`: `kind` "scan", per-file `hard_kind`), grouped by
/// hard kind in [`HARD_KINDS`] order, files sorted by name; with `one_per_kind`, the first
/// file of each kind. `Err` is why the row is skipped: the set is generated by
/// `scripts/gen-hard-fixtures` and may be missing or being regenerated.
fn hard_fixtures(dir: &Path, one_per_kind: bool) -> anyhow::Result<Result<HardKinds, String>> {
    let truth_path = dir.join("truth.json");
    let bytes = match std::fs::read(&truth_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Err(format!(
                "{} does not exist (generate the hard set with scripts/gen-hard-fixtures)",
                truth_path.display()
            )))
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", truth_path.display())),
    };
    let truth: Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("parsing {}", truth_path.display()))?;
    let mut groups: Vec<(String, Vec<(String, HardFile)>)> = Vec::new();
    let mut missing = Vec::new();
    for f in truth["files"]
        .as_array()
        .context("the hard truth.json has no files")?
    {
        if f["kind"] != "scan" {
            continue;
        }
        let (Some(rel), Some(pages), Some(kind)) = (
            f["file"].as_str(),
            f["pages"].as_u64(),
            f["hard_kind"].as_str(),
        ) else {
            bail!(
                "{}: a scan without file, pages or hard_kind: {f}",
                truth_path.display()
            );
        };
        let path = dir.join(rel);
        if !path.is_file() {
            missing.push(rel.to_owned());
            continue;
        }
        let file = (
            rel.to_owned(),
            HardFile {
                path,
                pages: pages as usize,
            },
        );
        match groups.iter_mut().find(|(k, _)| k == kind) {
            Some((_, list)) => list.push(file),
            None => groups.push((kind.to_owned(), vec![file])),
        }
    }
    if !missing.is_empty() {
        return Ok(Err(format!(
            "{} file(s) listed in {} are missing (being regenerated?), first {}",
            missing.len(),
            truth_path.display(),
            missing[0]
        )));
    }
    if groups.is_empty() {
        return Ok(Err(format!("{} lists no scan", truth_path.display())));
    }
    groups.sort_by(|a, b| (hard_rank(&a.0), &a.0).cmp(&(hard_rank(&b.0), &b.0)));
    Ok(Ok(groups
        .into_iter()
        .map(|(kind, mut list)| {
            list.sort_by(|a, b| a.0.cmp(&b.0));
            if one_per_kind {
                list.truncate(1);
            }
            (kind, list.into_iter().map(|(_, f)| f).collect())
        })
        .collect()))
}

/// Reads a binary 8-bit PGM (`P5`, maxval 255), as `pdftoppm -gray` writes it.
fn read_pgm(path: &Path) -> anyhow::Result<(u32, u32, Vec<u8>)> {
    let bytes = std::fs::read(path)?;
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 && i < bytes.len() {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if bytes.get(i) == Some(&b'#') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        fields.push(String::from_utf8_lossy(&bytes[start..i]).into_owned());
    }
    ensure!(
        fields.len() == 4 && fields[0] == "P5" && fields[3] == "255",
        "{}: not an 8-bit binary PGM",
        path.display()
    );
    let w: u32 = fields[1].parse()?;
    let h: u32 = fields[2].parse()?;
    let data = &bytes[i + 1..];
    let n = w as usize * h as usize;
    ensure!(data.len() >= n, "{}: truncated PGM", path.display());
    Ok((w, h, data[..n].to_vec()))
}

/// Runs a preparation command (not timed as a contender); its stderr on failure.
fn prep(cmd: &mut Command) -> anyhow::Result<Vec<u8>> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {:?}", cmd.get_program()))?;
    ensure!(
        out.status.success(),
        "{:?} failed ({}): {}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(out.stdout)
}

fn pdf_pages(path: &Path) -> anyhow::Result<usize> {
    let out = prep(Command::new("pdfinfo").arg(path))?;
    String::from_utf8_lossy(&out)
        .lines()
        .find_map(|l| l.strip_prefix("Pages:").map(|v| v.trim().parse::<usize>()))
        .context("pdfinfo printed no page count")?
        .context("pdfinfo page count")
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

fn first_line(cmd: &mut Command) -> String {
    cmd.stdin(Stdio::null())
        .output()
        .ok()
        .map(|o| {
            let all = [o.stdout, o.stderr].concat();
            String::from_utf8_lossy(&all)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
}

/// Reads the Tesseract models once so the first contender does not pay the disk for the others.
fn warm_tessdata() -> Option<String> {
    let out = Command::new("tesseract")
        .arg("--list-langs")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let dir = text.split('"').nth(1)?.to_owned();
    for lang in ["eng", "osd"] {
        let _ = std::fs::read(Path::new(&dir).join(format!("{lang}.traineddata")));
    }
    Some(dir)
}

// ---------------------------------------------------------------------------------------------
// The run.

/// One contender's figures.
#[derive(Debug, Clone)]
struct Row {
    key: &'static str,
    name: String,
    pages: usize,
    wall_s: f64,
    measured: Option<Measured>,
    detail: Value,
}

impl Row {
    fn pages_per_s(&self) -> f64 {
        self.pages as f64 / self.wall_s.max(1e-9)
    }
}

/// Runs the OCR benchmark; returns how many contenders errored.
pub fn run(args: &OcrArgs) -> anyhow::Result<usize> {
    let want = |k: &str| args.only.iter().any(|x| x.trim() == k);
    let threads = args.threads.max(1);
    let root = crate::workspace_root();
    let fixtures_dir = root.join("tests/fixtures/generated");
    for tool in [
        "tesseract",
        "pdftoppm",
        "pdfunite",
        "pdfinfo",
        "pdftotext",
        "xargs",
    ] {
        ensure!(
            find_on_path(tool).is_some(),
            "`{tool}` is not on PATH (Debian: tesseract-ocr, poppler-utils, findutils)"
        );
    }
    let exe = std::env::current_exe().context("the bench's own path")?;
    let scratch_tmp = tempfile::Builder::new()
        .prefix("ironclad-bench-ocr-")
        .tempdir()?;
    let scratch = match &args.keep {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => scratch_tmp.path().to_owned(),
    };
    if args.keep.is_none() {
        *SCRATCH.lock().unwrap_or_else(|p| p.into_inner()) = Some(scratch.clone());
    }

    let mut results = json!({
        "kind": if args.smoke { "ocr-smoke" } else { "ocr" },
        "command": if args.smoke { "cargo run --release -p ironclad-bench -- ocr --smoke" } else { "cargo run --release -p ironclad-bench -- ocr" },
        "machine": crate::sys::machine_info(),
        "tools": {
            "tesseract": first_line(Command::new("tesseract").arg("--version")),
            "pdftoppm": first_line(Command::new("pdftoppm").arg("-v")),
            "omp_thread_limit": std::env::var("OMP_THREAD_LIMIT").ok(),
        },
    });
    let before = crate::sys::CpuSample::take(None);
    std::thread::sleep(Duration::from_secs(1));
    let mut idle = before.split(&crate::sys::CpuSample::take(None));
    idle["loadavg"] = loadavg();
    let busy = idle["machine_busy_cores"].as_f64().unwrap_or(0.0);
    eprintln!(
        "bench ocr: before starting, machine busy {busy:.2} cores, load average {}",
        idle["loadavg"]
    );
    if busy > 0.3 {
        eprintln!("bench ocr: WARNING: the machine is already {busy:.2} cores busy: figures will be low and noisy");
    }
    results["machine"]["busy_before_start"] = idle;

    // Inputs: whole scanned PDFs until enough pages.
    let all_scans = fixtures(&fixtures_dir, "scan")?;
    let limit = args
        .pages
        .unwrap_or(if args.smoke { 4 } else { usize::MAX })
        .max(1);
    let mut scans = Vec::new();
    let mut n_pages = 0;
    for f in all_scans {
        if n_pages >= limit {
            break;
        }
        n_pages += f.pages;
        scans.push(f);
    }
    eprintln!(
        "bench ocr: {} scanned pages from {} PDFs; rendering them at {DPI} DPI gray (untimed)…",
        n_pages,
        scans.len()
    );
    let tessdata = warm_tessdata();
    let pages_dir = scratch.join("pages");
    std::fs::create_dir_all(&pages_dir)?;
    let mut pgms = Vec::new();
    let render_started = Instant::now();
    for f in &scans {
        for p in 1..=f.pages {
            let stem = pages_dir.join(format!("page-{:03}", pgms.len() + 1));
            prep(
                Command::new("pdftoppm")
                    .args(["-r", &DPI.to_string(), "-gray", "-singlefile"])
                    .args(["-f", &p.to_string(), "-l", &p.to_string()])
                    .arg(&f.path)
                    .arg(&stem),
            )?;
            let pgm = stem.with_extension("pgm");
            ensure!(pgm.is_file(), "pdftoppm wrote no {}", pgm.display());
            pgms.push(pgm);
        }
    }
    let render_s = render_started.elapsed().as_secs_f64();
    ensure!(
        pgms.len() == n_pages,
        "rendered {} pages, truth.json says {n_pages}",
        pgms.len()
    );
    // The same pixels as one multi-page TIFF for PageReader (Deflate, fast level).
    let tiff_path = scratch.join("pages.tiff");
    let tiff_started = Instant::now();
    let mut pgm_bytes = 0u64;
    let mut megapixels = 0.0;
    {
        use tiff::encoder::{colortype, Compression, DeflateLevel, TiffEncoder};
        let file = std::io::BufWriter::new(std::fs::File::create(&tiff_path)?);
        let mut enc =
            TiffEncoder::new(file)?.with_compression(Compression::Deflate(DeflateLevel::Fast));
        for pgm in &pgms {
            pgm_bytes += std::fs::metadata(pgm)?.len();
            let (w, h, px) = read_pgm(pgm)?;
            megapixels += f64::from(w) * f64::from(h) / 1e6;
            // Tagged with the rendering resolution, as a scanner tags its pages.
            let mut page = enc
                .new_image::<colortype::Gray8>(w, h)
                .with_context(|| format!("encoding {} into the TIFF", pgm.display()))?;
            page.resolution(
                tiff::tags::ResolutionUnit::Inch,
                tiff::encoder::Rational { n: DPI, d: 1 },
            );
            page.write_data(&px)
                .with_context(|| format!("encoding {} into the TIFF", pgm.display()))?;
        }
    }
    let tiff_s = tiff_started.elapsed().as_secs_f64();
    // The scanned PDFs merged into one, for ocrmypdf and Ironclad's PDF contender.
    let merged = scratch.join("scans.pdf");
    if scans.len() == 1 {
        std::fs::copy(&scans[0].path, &merged)?;
    } else {
        prep(
            Command::new("pdfunite")
                .args(scans.iter().map(|f| &f.path))
                .arg(&merged),
        )?;
    }
    ensure!(
        pdf_pages(&merged)? == n_pages,
        "the merged PDF does not have {n_pages} pages"
    );
    results["inputs"] = json!({
        "scanned_pdfs": scans.iter().map(|f| f.rel.clone()).collect::<Vec<_>>(),
        "pages": n_pages,
        "dpi": DPI,
        "megapixels_per_page": round2(megapixels / n_pages as f64),
        "pgm_total_mb": round2(pgm_bytes as f64 / 1e6),
        "tiff_mb": round2(std::fs::metadata(&tiff_path)?.len() as f64 / 1e6),
        "merged_pdf_mb": round2(std::fs::metadata(&merged)?.len() as f64 / 1e6),
        "render_s_per_page": round3(render_s / n_pages as f64),
        "tiff_encode_s": round2(tiff_s),
        "tessdata": tessdata,
        "threads": threads,
        "detect_rotation": !args.no_rotation,
        "text_height_px": args.text_height.or(ironclad_ocr::DEFAULT_TEXT_HEIGHT_PX),
    });
    eprintln!(
        "bench ocr: inputs ready ({:.2} s/page to render, TIFF {:.1} MB)",
        render_s / n_pages as f64,
        results["inputs"]["tiff_mb"].as_f64().unwrap_or(0.0)
    );

    let mut rows: Vec<Row> = Vec::new();
    let mut failed = 0usize;
    let mut errors = serde_json::Map::new();
    let mut skipped = serde_json::Map::new();
    let log_row = |key: &str, round: &str, row: &Row| {
        eprintln!(
            "bench ocr: {key}{round}: {} pages in {:.2} s = {:.2} pages/s{}",
            row.pages,
            row.wall_s,
            row.pages_per_s(),
            row.measured
                .as_ref()
                .map(|m| format!(
                    ", CPU {:.2} s/page, RSS {:.0} MB, other {:.2} cores, load {}",
                    m.cpu_s / row.pages.max(1) as f64,
                    m.max_rss_mb,
                    m.load["other_cores"].as_f64().unwrap_or(0.0),
                    m.load["loadavg_after"]
                ))
                .unwrap_or_default()
        );
    };
    let mut record = |key: &'static str, r: anyhow::Result<Row>, rows: &mut Vec<Row>| match r {
        Ok(row) => {
            log_row(key, "", &row);
            rows.push(row);
        }
        Err(e) => {
            failed += 1;
            eprintln!("bench ocr: {key} ERRORED: {e:#}");
            errors.insert(key.into(), json!(format!("{e:#}")));
        }
    };
    // The shipped workflow the worker reads trade documents under (read from the tree, as the
    // worker reads its stored version; compiled by the child before its clock starts).
    let workflow = root.join("workflows/trade.yaml");
    ensure!(workflow.is_file(), "{} is missing", workflow.display());
    let ocr_job = |files: &[PathBuf], api: &str, callers: usize, second_look: bool| {
        let mut job = json!({
            "files": files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "api": api,
            "callers": callers,
            "repeat": 1,
            "threads": threads,
            // Not the workflow's `languages: [en, fr]` the worker would load: `eng`, as the
            // CLI baseline and every other row read, so the rows compare like with like.
            "languages": "eng",
            "detect_rotation": !args.no_rotation,
            "text_height_px": args.text_height,
            "expect": "ocr",
        });
        if api == "read_document" {
            job["workflow"] = json!(workflow.display().to_string());
            job["second_look"] = json!(second_look);
        }
        job
    };

    let files: Vec<PathBuf> = scans.iter().map(|f| f.path.clone()).collect();
    let concurrency = args.worker_concurrency.max(1);
    let ocrmypdf = args
        .ocrmypdf
        .clone()
        .or_else(|| find_on_path("ocrmypdf"))
        .filter(|p| p.exists());
    let ocrmypdf_version = ocrmypdf
        .as_ref()
        .map(|p| first_line(Command::new(p).arg("--version")))
        .filter(|v| !v.is_empty() && v.chars().next().is_some_and(|c| c.is_ascii_digit()));
    results["tools"]["ocrmypdf"] = json!(ocrmypdf_version);
    let (exe, scratch) = (&exe, &scratch);
    // The hard set (phone photos, faxes, stamped scans, monospaced, stacked forms), for the
    // timed contender 6 below; smoke reads one file of each kind.
    let hard = if want("hard") || want("hard-nolook") {
        match hard_fixtures(&root.join("tests/fixtures/hard"), args.smoke)? {
            Ok(groups) => Some(groups),
            Err(why) => {
                let msg = format!("SKIPPED: {why}");
                eprintln!("bench ocr: [hard] {msg}");
                skipped.insert("hard".into(), json!(msg));
                None
            }
        }
    } else {
        None
    };
    // The timed contenders, each a closure run once per round.
    type Run<'a> = Box<dyn Fn() -> anyhow::Result<Row> + 'a>;
    let mut timed: Vec<(&'static str, Run)> = Vec::new();
    // 1. The raw CLI baseline, with the DPI hint PageReader gives a rendered page.
    if want("cli") {
        timed.push((
            "cli",
            Box::new(|| {
                eprintln!("bench ocr: [cli] xargs -P {threads} tesseract over {n_pages} PGMs…");
                cli_contender(scratch, &pgms, threads)
            }),
        ));
    }
    // 2. Ironclad on the same pixels as one TIFF.
    if want("images") {
        timed.push((
            "images",
            Box::new(|| {
                eprintln!("bench ocr: [images] PageReader on a {n_pages}-page TIFF of the same PGMs…");
                ironclad_contender(
                    exe,
                    scratch,
                    "images",
                    format!("Ironclad: same images as one {n_pages}-page TIFF (tagged {DPI} DPI), 1 read"),
                    ocr_job(std::slice::from_ref(&tiff_path), "read_file", 1, false),
                    n_pages,
                )
            }),
        ));
    }
    // 3. Ironclad on the merged PDF (rendering inside the clock).
    if want("pdf") {
        timed.push((
            "pdf",
            Box::new(|| {
                eprintln!(
                    "bench ocr: [pdf] PageReader on the merged scanned PDF (incl. rendering)…"
                );
                ironclad_contender(
                    exe,
                    scratch,
                    "pdf",
                    format!("Ironclad: merged scan PDF incl. rendering, 1 read of {n_pages} pages"),
                    ocr_job(std::slice::from_ref(&merged), "read_file", 1, false),
                    n_pages,
                )
            }),
        ));
    }
    // 4. Ironclad as the worker reads: every file its own caller, on one shared reader.
    for (key, callers, look) in [
        ("pdf-files", concurrency, true),
        ("pdf-files-nolook", concurrency, false),
        ("pdf-files-1", 1, true),
    ] {
        if !want(key) {
            continue;
        }
        let name = match key {
            "pdf-files" => format!(
                "Ironclad as the worker: {} scan PDFs, {callers} at a time on one reader, read_document (trade workflow, second look), incl. rendering",
                scans.len()
            ),
            "pdf-files-nolook" => "the same without the second look (information)".to_owned(),
            _ => format!(
                "Ironclad: the same {} scan PDFs one at a time (information)",
                scans.len()
            ),
        };
        let (files, name) = (&files, name);
        timed.push((
            key,
            Box::new(move || {
                eprintln!(
                    "bench ocr: [{key}] read_document on {} scanned PDFs, {callers} at a time…",
                    files.len()
                );
                ironclad_contender(
                    exe,
                    scratch,
                    key,
                    name.clone(),
                    ocr_job(files, "read_document", callers, look),
                    n_pages,
                )
            }),
        ));
    }
    // 5. ocrmypdf.
    for (key, oversample) in [("ocrmypdf", true), ("ocrmypdf-native", false)] {
        if !want(key) || (args.smoke && !oversample) {
            continue;
        }
        match (&ocrmypdf, &ocrmypdf_version) {
            (Some(bin), Some(_)) => {
                let merged = &merged;
                timed.push((
                    key,
                    Box::new(move || {
                        eprintln!(
                            "bench ocr: [{key}] ocrmypdf -j {threads} --force-ocr{} on the merged PDF…",
                            if oversample { " --oversample 300" } else { "" }
                        );
                        ocrmypdf_contender(bin, scratch, merged, n_pages, threads, oversample, key)
                    }),
                ));
            }
            _ => {
                let msg = "SKIPPED: ocrmypdf is not installed or does not start (`pip install ocrmypdf`, or Debian `apt-get install ocrmypdf`; it needs ghostscript and tesseract); its rows and ratios are left out";
                eprintln!("bench ocr: [{key}] {msg}");
                skipped.insert(key.into(), json!(msg));
            }
        }
    }
    // 6. The hard set read as the worker reads, one kind at a time.
    if let Some(groups) = &hard {
        let n_files: usize = groups.iter().map(|g| g.1.len()).sum();
        let n_hard: usize = groups.iter().flat_map(|g| &g.1).map(|f| f.pages).sum();
        let kinds: Vec<&str> = groups.iter().map(|g| g.0.as_str()).collect();
        for (key, look) in [("hard", true), ("hard-nolook", false)] {
            if !want(key) {
                continue;
            }
            let name = if look {
                format!(
                    "Ironclad as the worker on the hard set: {n_files} scans ({}), each kind {concurrency} at a time on one reader, read_document (trade workflow, second look)",
                    kinds.join(", ")
                )
            } else {
                "the hard set without the second look (information)".to_owned()
            };
            let mut job = ocr_job(&[], "read_document", concurrency, look);
            job["allow_empty_pages"] = json!(true);
            timed.push((
                key,
                Box::new(move || {
                    eprintln!(
                        "bench ocr: [{key}] read_document on {n_files} hard scans ({n_hard} pages), one kind at a time…"
                    );
                    hard_contender(exe, scratch, key, name.clone(), groups, &job)
                }),
            ));
        }
        results["inputs"]["hard"] = json!({
            "files": n_files,
            "pages": n_hard,
            "kinds": groups.iter().map(|(k, l)| json!({
                "kind": k,
                "files": l.iter().map(|f| f.path.strip_prefix(&root).unwrap_or(&f.path).display().to_string()).collect::<Vec<_>>(),
                "pages": l.iter().map(|f| f.pages).sum::<usize>(),
            })).collect::<Vec<_>>(),
        });
    }
    // Rounds in alternating order (A B C … C B A …): a machine that slows down or speeds up
    // during the run shifts every contender's mean alike, so the ratios stay fair.
    let rounds = args.rounds.unwrap_or(if args.smoke { 1 } else { 2 }).max(1);
    let mut runs: Vec<Vec<Row>> = timed.iter().map(|_| Vec::new()).collect();
    let mut broken = vec![false; timed.len()];
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..timed.len()).collect()
        } else {
            (0..timed.len()).rev().collect()
        };
        for i in order {
            let (key, run) = &timed[i];
            if broken[i] {
                continue;
            }
            match run() {
                Ok(row) => {
                    log_row(key, &format!(" (round {}/{rounds})", round + 1), &row);
                    runs[i].push(row);
                }
                Err(e) => {
                    broken[i] = true;
                    record(key, Err(e), &mut rows);
                }
            }
        }
    }
    drop(timed);
    for (i, rounds_of) in runs.into_iter().enumerate() {
        if !broken[i] {
            if let Some(row) = mean_of_rounds(rounds_of) {
                rows.push(row);
            }
        }
    }
    // 7. Text-layer pages.
    if want("text") || want("text-1") {
        let texts = fixtures(&fixtures_dir, "text")?;
        let per_pass: usize = texts.iter().map(|f| f.pages).sum();
        let least = args
            .text_pages
            .unwrap_or(if args.smoke { 1 } else { 200 })
            .max(1);
        let repeat = least.div_ceil(per_pass.max(1)).max(1);
        let files: Vec<PathBuf> = texts.iter().map(|f| f.path.clone()).collect();
        for (key, callers) in [("text", concurrency), ("text-1", 1)] {
            if !want(key) {
                continue;
            }
            eprintln!(
                "bench ocr: [{key}] PageReader::read_loaded on {} text PDFs × {repeat} ({} pages), {callers} file(s) at a time…",
                texts.len(),
                per_pass * repeat
            );
            let job = json!({
                "files": files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "api": "read_loaded",
                "callers": callers,
                "repeat": repeat,
                "threads": threads,
                "languages": "eng",
                "detect_rotation": !args.no_rotation,
                "expect": "text_layer",
            });
            let name = if key == "text" {
                format!("Ironclad text layer as the worker: {} text PDFs × {repeat}, {callers} at a time", texts.len())
            } else {
                "Ironclad text layer: the same, one file at a time".to_owned()
            };
            let r = ironclad_contender(exe, scratch, key, name, job, per_pass * repeat);
            record(key, r, &mut rows);
        }
    }
    // 8. Field accuracy.
    let accuracy = if want("accuracy") && (!args.smoke || args.accuracy) {
        eprintln!("bench ocr: [accuracy] IRONCLAD_FULL_ACCURACY=1 cargo test --release --test documents -- --nocapture accuracy_report (builds the test in release the first time)…");
        match accuracy(&root, scratch, args.text_height) {
            Ok(v) => {
                eprintln!(
                    "bench ocr: accuracy: text PDFs {:.2} %, scans {:.2} % ({} scope)",
                    100.0 * v["text"]["field_accuracy"].as_f64().unwrap_or(0.0),
                    100.0 * v["scans"]["field_accuracy"].as_f64().unwrap_or(0.0),
                    v["scan_scope"].as_str().unwrap_or("?")
                );
                Some(v)
            }
            Err(e) => {
                failed += 1;
                eprintln!("bench ocr: accuracy ERRORED: {e:#}");
                errors.insert("accuracy".into(), json!(format!("{e:#}")));
                None
            }
        }
    } else {
        if want("accuracy") {
            let msg = "skipped in --smoke (pass --accuracy to run it)";
            eprintln!("bench ocr: [accuracy] {msg}");
            skipped.insert("accuracy".into(), json!(msg));
        }
        None
    };

    // Summary.
    let (summary, table) = summarize(&rows, accuracy.as_ref());
    results["contenders"] = Value::Object(
        rows.iter()
            .map(|r| {
                let mut v = json!({
                    "name": r.name,
                    "pages": r.pages,
                    "wall_s": round3(r.wall_s),
                    "pages_per_s": round3(r.pages_per_s()),
                    "detail": r.detail,
                });
                if let Some(m) = &r.measured {
                    v["process"] = json!({
                        "status": m.status,
                        "wall_s": round3(m.wall_s),
                        "cpu_s": round3(m.cpu_s),
                        "cpu_s_per_page": round3(m.cpu_s / r.pages.max(1) as f64),
                        "max_rss_mb": round2(m.max_rss_mb),
                        "load": m.load,
                    });
                }
                (r.key.to_owned(), v)
            })
            .collect(),
    );
    results["accuracy"] = accuracy.map_or(Value::Null, |a| {
        json!({
            "command": "IRONCLAD_FULL_ACCURACY=1 cargo test --release --test documents -- --nocapture accuracy_report",
            "languages": a["languages"], "dpi": a["dpi"], "scan_scope": a["scan_scope"],
            "text": a["text"], "scans": a["scans"], "misses": a["misses"],
        })
    });
    results["summary"] = summary;
    results["skipped"] = Value::Object(skipped);
    results["errors"] = Value::Object(errors);
    results["phases_errored"] = json!(failed);
    results["machine"]["loadavg_end"] = loadavg();

    println!();
    println!(
        "Ironclad OCR benchmark ({}), {} · {} cores · {} · commit {} · tesseract {}",
        results["kind"].as_str().unwrap_or(""),
        results["machine"]["date"].as_str().unwrap_or(""),
        results["machine"]["nproc"],
        results["machine"]["cpu_model"].as_str().unwrap_or(""),
        results["machine"]["git_commit"].as_str().unwrap_or(""),
        results["tools"]["tesseract"]
            .as_str()
            .unwrap_or("")
            .trim_start_matches("tesseract ")
    );
    println!(
        "{} scanned pages ({} PDFs) at {DPI} DPI gray, {} OCR threads; load average before {} · end {}",
        n_pages,
        scans.len(),
        threads,
        results["machine"]["busy_before_start"]["loadavg"],
        results["machine"]["loadavg_end"]
    );
    println!();
    print!("{table}");
    for (k, v) in results["skipped"].as_object().into_iter().flatten() {
        println!("{k}: {}", v.as_str().unwrap_or(""));
    }
    println!();
    let out = args.out.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results")
            .join(if args.smoke {
                "ocr-smoke.json"
            } else {
                "ocr.json"
            })
    });
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&out, serde_json::to_string_pretty(&results)? + "\n")?;
    println!("results written to {}", out.display());
    SCRATCH.lock().unwrap_or_else(|p| p.into_inner()).take();
    drop(scratch_tmp);
    Ok(failed)
}

/// One row from a contender's rounds: mean wall time and CPU, the largest peak RSS, every
/// round's wall time in the details.
fn mean_of_rounds(rounds: Vec<Row>) -> Option<Row> {
    let n = rounds.len() as f64;
    let walls: Vec<f64> = rounds.iter().map(|r| round3(r.wall_s)).collect();
    let mut row = rounds.first()?.clone();
    row.wall_s = rounds.iter().map(|r| r.wall_s).sum::<f64>() / n;
    if let Some(m) = row.measured.as_mut() {
        let measured: Vec<&Measured> = rounds.iter().filter_map(|r| r.measured.as_ref()).collect();
        m.wall_s = measured.iter().map(|x| x.wall_s).sum::<f64>() / n;
        m.cpu_s = measured.iter().map(|x| x.cpu_s).sum::<f64>() / n;
        m.max_rss_mb = measured.iter().map(|x| x.max_rss_mb).fold(0.0, f64::max);
        m.load["other_cores"] = json!(round3(
            measured
                .iter()
                .map(|x| x.load["other_cores"].as_f64().unwrap_or(0.0))
                .fold(0.0, f64::max)
        ));
        if let Some(last) = measured.last() {
            m.load["loadavg_after"] = last.load["loadavg_after"].clone();
        }
    }
    row.detail["round_wall_s"] = json!(walls);
    // The second look reads the same regions every round; only its time varies.
    let details: Vec<&Value> = rounds.iter().map(|r| &r.detail).collect();
    if let Some(look) = row.detail.get_mut("second_look") {
        mean_second_look_ms(look, details.iter().map(|d| &d["second_look"]));
    }
    if let Some(kinds) = row.detail.get_mut("kinds").and_then(Value::as_object_mut) {
        for (kind, k) in kinds.iter_mut() {
            let walls: Vec<f64> = details
                .iter()
                .filter_map(|d| d["kinds"][kind]["wall_s"].as_f64())
                .collect();
            let wall = walls.iter().sum::<f64>() / walls.len().max(1) as f64;
            let pages = k["pages"].as_f64().unwrap_or(0.0);
            k["wall_s"] = json!(round3(wall));
            k["pages_per_s"] = json!(round3(pages / wall.max(1e-9)));
            k["round_wall_s"] = json!(walls.iter().map(|w| round3(*w)).collect::<Vec<_>>());
            k["max_rss_mb"] = json!(details
                .iter()
                .filter_map(|d| d["kinds"][kind]["max_rss_mb"].as_f64())
                .fold(0.0, f64::max));
            mean_second_look_ms(
                &mut k["second_look"],
                details.iter().map(|d| &d["kinds"][kind]["second_look"]),
            );
        }
    }
    Some(row)
}

/// Sets `figures`' second-look time (and its per-page figures) to the mean over `rounds`.
fn mean_second_look_ms<'a>(figures: &mut Value, rounds: impl Iterator<Item = &'a Value>) {
    let ms: Vec<f64> = rounds.filter_map(|r| r["ms"].as_f64()).collect();
    if figures.is_null() || ms.is_empty() {
        return;
    }
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    let looked = figures["pages_looked"].as_f64().unwrap_or(0.0);
    let pages = figures["pages"].as_f64().unwrap_or(0.0);
    figures["ms"] = json!(mean.round());
    figures["round_ms"] = json!(ms);
    figures["ms_per_looked_page"] = if looked > 0.0 {
        json!(round2(mean / looked))
    } else {
        Value::Null
    };
    figures["ms_per_page"] = json!(round2(mean / pages.max(1.0)));
}

/// `xargs -P threads -I{} tesseract {} {}.cli -l eng --dpi 300` over the PGMs (one
/// `<page>.pgm.cli.txt` each).
fn cli_contender(scratch: &Path, pgms: &[PathBuf], threads: usize) -> anyhow::Result<Row> {
    let key = "cli";
    let list = scratch.join("pages.list");
    let mut f = std::fs::File::create(&list)?;
    for p in pgms {
        writeln!(f, "{}", p.display())?;
    }
    drop(f);
    for p in pgms {
        let _ = std::fs::remove_file(txt_of(p, key));
    }
    let mut cmd = Command::new("xargs");
    cmd.args(["-P", &threads.to_string(), "-I{}", "-a"])
        .arg(&list)
        .args(["tesseract", "{}", &format!("{{}}.{key}"), "-l", "eng"])
        .args(["--dpi", &DPI.to_string()])
        .env("OMP_THREAD_LIMIT", "1");
    let m = run_measured(cmd, &scratch.join(format!("{key}.log")))?;
    ensure!(m.ok, "xargs tesseract: {}\n{}", m.status, m.stderr_tail);
    let mut words = 0usize;
    for p in pgms {
        let text = std::fs::read_to_string(txt_of(p, key))
            .with_context(|| format!("tesseract wrote no text for {}", p.display()))?;
        let n = text.split_whitespace().count();
        ensure!(n > 0, "tesseract read no word on {}", p.display());
        words += n;
    }
    Ok(Row {
        key,
        name: format!(
            "raw CLI: xargs -P {threads} tesseract PGM -l eng --dpi {DPI} (OMP_THREAD_LIMIT=1)"
        ),
        pages: pgms.len(),
        wall_s: m.wall_s,
        detail: json!({
            "command": format!("OMP_THREAD_LIMIT=1 xargs -P {threads} -I{{}} -a pages.list tesseract {{}} {{}}.{key} -l eng --dpi {DPI}"),
            "words": words,
        }),
        measured: Some(m),
    })
}

fn txt_of(pgm: &Path, key: &str) -> PathBuf {
    let mut s = pgm.as_os_str().to_owned();
    s.push(format!(".{key}.txt"));
    PathBuf::from(s)
}

/// Runs a reading job in a child process of this binary (`stem` names its job, result and
/// log files); checks it read `expect_pages` pages; the child's figures and how it ran.
fn run_worker_job(
    exe: &Path,
    scratch: &Path,
    stem: &str,
    job: &Value,
    expect_pages: usize,
) -> anyhow::Result<(Measured, Value)> {
    let job_path = scratch.join(format!("{stem}.job.json"));
    let out_path = scratch.join(format!("{stem}.result.json"));
    std::fs::write(&job_path, serde_json::to_vec_pretty(job)?)?;
    let _ = std::fs::remove_file(&out_path);
    let mut cmd = Command::new(exe);
    cmd.arg("ocr-worker")
        .arg("--job")
        .arg(&job_path)
        .arg("--out")
        .arg(&out_path)
        .env("OMP_THREAD_LIMIT", "1");
    let m = run_measured(cmd, &scratch.join(format!("{stem}.log")))?;
    let result: Value = std::fs::read(&out_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    if let Some(e) = result.get("error") {
        bail!("{}", e.as_str().unwrap_or("worker error"));
    }
    ensure!(m.ok, "ocr-worker: {}\n{}", m.status, m.stderr_tail);
    let pages = result["pages"].as_u64().unwrap_or(0) as usize;
    ensure!(
        pages == expect_pages,
        "read {pages} pages, expected {expect_pages}"
    );
    Ok((m, result))
}

/// Runs a `PageReader` job in a child process of this binary; the figure is the reader's own
/// wall time (first read call to last result: engine loading included, process start not).
fn ironclad_contender(
    exe: &Path,
    scratch: &Path,
    key: &'static str,
    name: String,
    job: Value,
    expect_pages: usize,
) -> anyhow::Result<Row> {
    let (m, result) = run_worker_job(exe, scratch, key, &job, expect_pages)?;
    Ok(Row {
        key,
        name,
        pages: expect_pages,
        wall_s: result["wall_s"].as_f64().unwrap_or(m.wall_s),
        measured: Some(m),
        detail: result,
    })
}

/// The hard set read as the worker reads, one hard kind after another, each kind in its own
/// child process with `job`'s callers on one reader (so each kind's pages/s is its own; a
/// kind's last pages leave a core idle, as a worker's last job does). The row's wall time is
/// the kinds' reader wall times added up, its CPU their sum, its peak RSS the largest.
fn hard_contender(
    exe: &Path,
    scratch: &Path,
    key: &'static str,
    name: String,
    groups: &[(String, Vec<HardFile>)],
    job: &Value,
) -> anyhow::Result<Row> {
    let mut kinds = serde_json::Map::new();
    let mut measured = Vec::new();
    let (mut pages, mut wall, mut files) = (0usize, 0.0f64, 0usize);
    let mut look = SecondLookTotals::default();
    for (kind, list) in groups {
        let mut job = job.clone();
        job["files"] = json!(list
            .iter()
            .map(|f| f.path.display().to_string())
            .collect::<Vec<_>>());
        let expect: usize = list.iter().map(|f| f.pages).sum();
        let (m, result) = run_worker_job(exe, scratch, &format!("{key}-{kind}"), &job, expect)
            .with_context(|| format!("hard kind {kind}"))?;
        let kind_wall = result["wall_s"].as_f64().unwrap_or(m.wall_s);
        look.add(&result["second_look"]);
        kinds.insert(
            kind.clone(),
            json!({
                "files": list.len(),
                "pages": expect,
                "wall_s": round3(kind_wall),
                "pages_per_s": round3(expect as f64 / kind_wall.max(1e-9)),
                "cpu_s_per_page": round3(m.cpu_s / expect.max(1) as f64),
                "max_rss_mb": round2(m.max_rss_mb),
                "other_cores": m.load["other_cores"],
                "second_look": result["second_look"],
                "pages_typed": result["pages_typed"],
                "empty_pages": result["empty_pages"],
                "words": result["words"],
                "mean_confidence": result["mean_confidence"],
                "ocr_calls": result["ocr_calls"],
                "crops_read": result["crops_read"],
                "per_file": result["per_file"],
            }),
        );
        pages += expect;
        wall += kind_wall;
        files += list.len();
        measured.push(m);
    }
    Ok(Row {
        key,
        name,
        pages,
        wall_s: wall,
        measured: combine_measured(&measured),
        detail: json!({
            "files": files,
            "pages": pages,
            "wall_s": round3(wall),
            "second_look": look.figures(pages),
            "pages_typed": kinds.values().filter_map(|k| k["pages_typed"].as_u64()).sum::<u64>(),
            "kinds": kinds,
            "options": {
                "languages": job["languages"],
                "callers": job["callers"],
                "api": job["api"],
                "workflow": job["workflow"],
                "second_look": job["second_look"],
            },
        }),
    })
}

/// Second-look counts added up across child processes (from their JSON figures).
#[derive(Debug, Default)]
struct SecondLookTotals {
    summary: SecondLookSummary,
}

impl SecondLookTotals {
    fn add(&mut self, figures: &Value) {
        let n = |k: &str| figures[k].as_u64().unwrap_or(0);
        self.summary.add(&SecondLookSummary {
            pages: n("pages_looked") as usize,
            regions: n("regions") as usize,
            candidates: n("candidates") as usize,
            facts_changed: n("facts_changed") as usize,
            ms: n("ms"),
        });
    }

    fn figures(&self, pages: usize) -> Value {
        second_look_figures(pages, &self.summary)
    }
}

/// Several sequential child processes as one: wall and CPU added up, the largest peak RSS,
/// "other cores" weighted by wall time, the load average before the first and after the last.
fn combine_measured(all: &[Measured]) -> Option<Measured> {
    let first = all.first()?;
    let wall: f64 = all.iter().map(|m| m.wall_s).sum();
    let other = all
        .iter()
        .map(|m| m.load["other_cores"].as_f64().unwrap_or(0.0) * m.wall_s)
        .sum::<f64>()
        / wall.max(1e-9);
    let mut load = first.load.clone();
    load["other_cores"] = json!(round2(other));
    if let Some(last) = all.last() {
        load["loadavg_after"] = last.load["loadavg_after"].clone();
    }
    Some(Measured {
        ok: all.iter().all(|m| m.ok),
        status: first.status.clone(),
        wall_s: wall,
        cpu_s: all.iter().map(|m| m.cpu_s).sum(),
        max_rss_mb: all.iter().map(|m| m.max_rss_mb).fold(0.0, f64::max),
        stderr_tail: String::new(),
        load,
    })
}

/// `ocrmypdf -j threads --force-ocr [--oversample 300] -l eng in.pdf out.pdf`.
fn ocrmypdf_contender(
    bin: &Path,
    scratch: &Path,
    merged: &Path,
    n_pages: usize,
    threads: usize,
    oversample: bool,
    key: &'static str,
) -> anyhow::Result<Row> {
    let out = scratch.join(format!("{key}.out.pdf"));
    let _ = std::fs::remove_file(&out);
    let mut cmd = Command::new(bin);
    cmd.args(["-j", &threads.to_string(), "--force-ocr"]);
    if oversample {
        cmd.args(["--oversample", &DPI.to_string()]);
    }
    cmd.args(["-l", "eng"])
        .arg(merged)
        .arg(&out)
        .env("OMP_THREAD_LIMIT", "1");
    let m = run_measured(cmd, &scratch.join(format!("{key}.log")))?;
    ensure!(m.ok, "ocrmypdf: {}\n{}", m.status, m.stderr_tail);
    ensure!(
        pdf_pages(&out)? == n_pages,
        "ocrmypdf's output does not have {n_pages} pages"
    );
    let text = prep(Command::new("pdftotext").arg(&out).arg("-"))?;
    let words = String::from_utf8_lossy(&text).split_whitespace().count();
    ensure!(words > 0, "ocrmypdf's output has no text layer");
    let flags = if oversample { " --oversample 300" } else { "" };
    Ok(Row {
        key,
        name: if oversample {
            format!("ocrmypdf -j {threads} --force-ocr --oversample 300 (OCR at 300 DPI, as the others)")
        } else {
            format!("ocrmypdf -j {threads} --force-ocr, defaults (OCR at the scans' own 150 DPI; information)")
        },
        pages: n_pages,
        wall_s: m.wall_s,
        detail: json!({
            "command": format!("ocrmypdf -j {threads} --force-ocr{flags} -l eng scans.pdf out.pdf"),
            "words_in_output": words,
            "output_mb": round2(std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0) as f64 / 1e6),
        }),
        measured: Some(m),
    })
}

/// Runs the documents test's `accuracy_report` on every fixture and reads the JSON it writes.
fn accuracy(root: &Path, scratch: &Path, text_height: Option<u32>) -> anyhow::Result<Value> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let path = target.join("accuracy.json");
    let started = std::time::SystemTime::now();
    let log = scratch.join("accuracy.log");
    let out = std::fs::File::create(&log)?;
    let mut command = Command::new(cargo);
    if let Some(h) = text_height {
        // The documents test reads the knob from here (0: full resolution).
        command.env("IRONCLAD_OCR_TEXT_HEIGHT", h.to_string());
    }
    let status = command
        .args([
            "test",
            "--release",
            "--test",
            "documents",
            "--",
            "--nocapture",
            "--exact",
            "accuracy_report",
        ])
        .current_dir(root)
        .env("IRONCLAD_FULL_ACCURACY", "1")
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .status()
        .context("running cargo test")?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().collect();
    let tail = tail[tail.len().saturating_sub(20)..].join("\n");
    ensure!(
        status.success(),
        "cargo test --test documents accuracy_report failed ({status}):\n{tail}"
    );
    let fresh = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= started);
    ensure!(
        fresh,
        "{} was not written by this run (CARGO_TARGET_DIR differs?)",
        path.display()
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    ensure!(
        v["scan_scope"] == "full",
        "the accuracy report covers only the scan subset"
    );
    Ok(v)
}

// ---------------------------------------------------------------------------------------------
// Summary.

fn summarize(rows: &[Row], accuracy: Option<&Value>) -> (Value, String) {
    let rate = |k: &str| rows.iter().find(|r| r.key == k).map(Row::pages_per_s);
    let cli = rate("cli");
    let ocrmypdf = rate("ocrmypdf");
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    let mut json_rows = Vec::new();
    let mut table = String::from(
        "| contender | pages | wall s | pages/s | vs raw CLI | vs ocrmypdf | CPU s/page | peak RSS | second look: pages (share) · regions · ms per looked page / per page | other cores · load 1m | target | result |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|\n",
    );
    for r in rows {
        let pps = r.pages_per_s();
        let vs = |base: Option<f64>| base.filter(|b| *b > 0.0).map(|b| pps / b);
        let (vs_cli, vs_ocrmypdf) = match r.key {
            // The hard set is other pages: its ratio is to the worker on the clean scans.
            "cli" | "text" | "text-1" | "hard" | "hard-nolook" => (None, None),
            "ocrmypdf" | "ocrmypdf-native" => (vs(cli), None),
            _ => (vs(cli), vs(ocrmypdf)),
        };
        let rss = r.measured.as_ref().map(|m| m.max_rss_mb);
        let mut targets: Vec<(String, bool)> = Vec::new();
        if r.key == "hard" {
            if let Some(x) = rss {
                targets.push((format!("RSS ≤ {TARGET_RSS_MB} MB"), x <= TARGET_RSS_MB));
            }
        }
        if matches!(r.key, "images" | "pdf" | "pdf-files") {
            if let Some(x) = vs_cli {
                targets.push((format!("≥ {TARGET_VS_CLI}× CLI"), x >= TARGET_VS_CLI));
            }
            if let Some(x) = vs_ocrmypdf {
                targets.push((
                    format!("≥ {TARGET_VS_OCRMYPDF}× ocrmypdf"),
                    x >= TARGET_VS_OCRMYPDF,
                ));
            }
            if let Some(x) = rss {
                targets.push((format!("RSS ≤ {TARGET_RSS_MB} MB"), x <= TARGET_RSS_MB));
            }
        }
        if r.key == "text" {
            targets.push((
                format!("≥ {TARGET_TEXT_PAGES_PER_S} pages/s"),
                pps >= TARGET_TEXT_PAGES_PER_S,
            ));
        }
        let ratio = |x: Option<f64>| x.map(|v| format!("{v:.2}×")).unwrap_or_default();
        let load = r
            .measured
            .as_ref()
            .map(|m| {
                let la = |k: &str| {
                    m.load[k]
                        .get(0)
                        .and_then(Value::as_f64)
                        .map(|v| format!("{v:.2}"))
                        .unwrap_or_default()
                };
                format!(
                    "{:.2} · {}→{}",
                    m.load["other_cores"].as_f64().unwrap_or(0.0),
                    la("loadavg_before"),
                    la("loadavg_after")
                )
            })
            .unwrap_or_default();
        table.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.name,
            r.pages,
            r.wall_s,
            pps,
            ratio(vs_cli),
            ratio(vs_ocrmypdf),
            r.measured
                .as_ref()
                .map(|m| format!("{:.2}", m.cpu_s / r.pages.max(1) as f64))
                .unwrap_or_default(),
            rss.map(|v| format!("{v:.0} MB")).unwrap_or_default(),
            look_cell(&r.detail["second_look"]),
            load,
            targets
                .iter()
                .map(|t| t.0.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            targets
                .iter()
                .map(|t| verdict(t.1))
                .collect::<Vec<_>>()
                .join("; "),
        ));
        json_rows.push(json!({
            "contender": r.key,
            "name": r.name,
            "pages": r.pages,
            "wall_s": round3(r.wall_s),
            "pages_per_s": round3(pps),
            "ratio_vs_cli": vs_cli.map(round3),
            "ratio_vs_ocrmypdf": vs_ocrmypdf.map(round3),
            "max_rss_mb": rss.map(round2),
            "second_look": r.detail["second_look"],
            "targets": targets.iter().map(|(t, ok)| json!({"target": t, "verdict": verdict(*ok)})).collect::<Vec<_>>(),
        }));
    }
    if let Some(hard) = rows.iter().find(|r| r.key == "hard") {
        let worker = rate("pdf-files");
        let nolook = rows.iter().find(|r| r.key == "hard-nolook");
        table.push_str(
            "\n| hard kind | files | pages | pages/s | vs the worker on clean scans | vs the same without the second look | second look: pages (share) · regions · ms per looked page / per page | pages typed | peak RSS |\n|---|---:|---:|---:|---:|---:|---|---:|---:|\n",
        );
        let mut lines: Vec<(String, &Value)> = hard.detail["kinds"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v))
            .collect();
        // In the order they were read (the JSON object keeps its keys sorted).
        lines.sort_by_key(|(k, _)| hard_rank(k));
        let all = json!({
            "files": hard.detail["files"],
            "pages": hard.pages,
            "pages_per_s": hard.pages_per_s(),
            "second_look": hard.detail["second_look"],
            "pages_typed": hard.detail["pages_typed"],
            "max_rss_mb": hard.measured.as_ref().map(|m| m.max_rss_mb),
        });
        lines.push(("**all**".into(), &all));
        let mut per_kind = Vec::new();
        for (kind, k) in lines {
            let pps = k["pages_per_s"].as_f64().unwrap_or(0.0);
            let vs = worker.filter(|w| *w > 0.0).map(|w| pps / w);
            let without = nolook.and_then(|n| {
                if kind.starts_with('*') {
                    Some(n.pages_per_s())
                } else {
                    n.detail["kinds"][kind.as_str()]["pages_per_s"].as_f64()
                }
            });
            let vs_nolook = without.filter(|w| *w > 0.0).map(|w| pps / w);
            table.push_str(&format!(
                "| {kind} | {} | {} | {pps:.2} | {} | {} | {} | {} | {} |\n",
                k["files"],
                k["pages"],
                vs.map(|v| format!("{v:.2}×")).unwrap_or_default(),
                vs_nolook.map(|v| format!("{v:.2}×")).unwrap_or_default(),
                look_cell(&k["second_look"]),
                k["pages_typed"],
                k["max_rss_mb"]
                    .as_f64()
                    .map(|v| format!("{v:.0} MB"))
                    .unwrap_or_default(),
            ));
            per_kind.push(json!({
                "kind": kind.trim_matches('*'),
                "pages": k["pages"],
                "pages_per_s": round3(pps),
                "ratio_vs_worker_clean": vs.map(round3),
                "ratio_vs_without_second_look": vs_nolook.map(round3),
                "second_look": k["second_look"],
            }));
        }
        json_rows.push(json!({
            "contender": "hard-by-kind",
            "name": "the hard set per hard kind",
            "kinds": per_kind,
        }));
    }
    if let Some(a) = accuracy {
        table.push_str(
            "\n| field accuracy (eng+fra, 300 DPI) | files | pages | fields hit / scored | accuracy | target | result |\n|---|---:|---:|---:|---:|---|---|\n",
        );
        for (key, label, least) in [
            ("text", "text PDFs", TARGET_TEXT_ACCURACY),
            (
                "scans",
                "scans: every scanned PDF, PNG, JPEG, TIFF",
                TARGET_SCAN_ACCURACY,
            ),
        ] {
            let s = &a[key];
            let acc = s["field_accuracy"].as_f64().unwrap_or(0.0);
            let ok = acc >= least;
            table.push_str(&format!(
                "| {label} | {} | {} | {} / {} | {:.2} % | ≥ {:.0} % | {} |\n",
                s["files"],
                s["pages"],
                s["fields_hit"],
                s["fields_scored"],
                100.0 * acc,
                100.0 * least,
                verdict(ok)
            ));
            json_rows.push(json!({
                "contender": format!("accuracy-{key}"),
                "name": format!("field accuracy, {label}"),
                "field_accuracy": round3(acc),
                "fields_hit": s["fields_hit"],
                "fields_scored": s["fields_scored"],
                "targets": [{"target": format!("≥ {:.0} %", 100.0 * least), "verdict": verdict(ok)}],
            }));
        }
    }
    (Value::Array(json_rows), table)
}

/// "3/35 (9 %) · 7 · 412 / 35 ms": pages looked at again of the pages read, regions read, and
/// the second look's time per looked-at page and per page read.
fn look_cell(figures: &Value) -> String {
    if figures.is_null() {
        return String::new();
    }
    let looked = figures["pages_looked"].as_u64().unwrap_or(0);
    format!(
        "{looked}/{} ({:.0} %) · {} · {} / {:.0} ms",
        figures["pages"],
        100.0 * figures["share_looked"].as_f64().unwrap_or(0.0),
        figures["regions"],
        figures["ms_per_looked_page"]
            .as_f64()
            .map(|v| format!("{v:.0}"))
            .unwrap_or_else(|| "—".into()),
        figures["ms_per_page"].as_f64().unwrap_or(0.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgm_header_with_comment() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.pgm");
        std::fs::write(&p, b"P5\n# made here\n3 2\n255\n\x00\x01\x02\x03\x04\x05").unwrap();
        let (w, h, px) = read_pgm(&p).unwrap();
        assert_eq!((w, h), (3, 2));
        assert_eq!(px, vec![0, 1, 2, 3, 4, 5]);
        std::fs::write(&p, b"P2\n3 2\n255\n0 1 2 3 4 5").unwrap();
        assert!(read_pgm(&p).is_err());
    }

    #[test]
    fn hard_set_missing_is_a_reason_to_skip() {
        let dir = tempfile::tempdir().unwrap();
        let why = hard_fixtures(&dir.path().join("hard"), false)
            .unwrap()
            .unwrap_err();
        assert!(why.contains("gen-hard-fixtures"), "{why}");
    }

    #[test]
    fn hard_scans_grouped_by_kind_in_reading_order() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("b/fax.tiff", "scan", "fax", 2),
            ("a/fax.pdf", "scan", "fax", 1),
            ("a/form.pdf", "text", "stacked", 1),
            ("a/photo.jpg", "scan", "photo", 1),
        ];
        let mut listed = Vec::new();
        for (rel, kind, hard_kind, pages) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, b"x").unwrap();
            listed.push(json!({"file": rel, "kind": kind, "hard_kind": hard_kind, "pages": pages}));
        }
        std::fs::write(
            dir.path().join("truth.json"),
            json!({ "files": listed }).to_string(),
        )
        .unwrap();
        let groups = hard_fixtures(dir.path(), false).unwrap().unwrap();
        let summary: Vec<(&str, Vec<usize>)> = groups
            .iter()
            .map(|(k, l)| (k.as_str(), l.iter().map(|f| f.pages).collect()))
            .collect();
        // Photos before faxes, text PDFs left out, files by name within a kind.
        assert_eq!(summary, vec![("photo", vec![1]), ("fax", vec![1, 2])]);
        let one = hard_fixtures(dir.path(), true).unwrap().unwrap();
        assert_eq!(one.iter().map(|g| g.1.len()).sum::<usize>(), 2);
        // A listed file that is not there (the set being regenerated) skips the row.
        std::fs::remove_file(dir.path().join("b/fax.tiff")).unwrap();
        assert!(hard_fixtures(dir.path(), false).unwrap().is_err());
    }

    #[test]
    fn second_look_cell_and_round_means() {
        let look = SecondLookSummary {
            pages: 3,
            regions: 7,
            candidates: 4,
            facts_changed: 2,
            ms: 600,
        };
        let mut figures = second_look_figures(30, &look);
        assert_eq!(look_cell(&figures), "3/30 (10 %) · 7 · 200 / 20 ms");
        let rounds = [json!({"ms": 600}), json!({"ms": 900})];
        mean_second_look_ms(&mut figures, rounds.iter());
        assert_eq!(figures["ms"], json!(750.0));
        assert_eq!(figures["ms_per_looked_page"], json!(250.0));
        assert_eq!(figures["ms_per_page"], json!(25.0));
        let none = second_look_figures(5, &SecondLookSummary::default());
        assert_eq!(look_cell(&none), "0/5 (0 %) · 0 · — / 0 ms");
        assert_eq!(look_cell(&Value::Null), "");
    }

    #[test]
    fn txt_names_follow_tesseract() {
        assert_eq!(
            txt_of(Path::new("/x/page-001.pgm"), "cli"),
            PathBuf::from("/x/page-001.pgm.cli.txt")
        );
    }
}
