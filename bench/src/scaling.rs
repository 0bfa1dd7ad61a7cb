//! `ironclad-bench scaling`: does OCR throughput grow with worker processes?
//!
//! The real roles run as separate processes on the shared PostgreSQL and Redis: one `serve`,
//! one `dispatcher`, one `reconciler`, and N `worker`s (N = 1, 2, 4 by default), each worker
//! held to one core with `taskset` (the reader's page budget is the cores the process may use,
//! `ReadOptions::threads` = `available_parallelism()`, which follows the affinity mask: so one
//! scanned page at a time per worker). The same batch of scanned dossiers goes through the API
//! for each N, on a fresh database, stream prefix, blob directory and page cache.
//!
//! The inputs are the pages of the generated scanned PDFs (`tests/fixtures/generated`, the
//! pages `ocr` reads): each page's JPEG, as the scanner wrote it, is taken out with
//! `pdfimages -j`, and every copy of the batch re-encodes it with a faint mark of its own in a
//! corner (the page cache keys pages by their pixels, so identical copies would be read once)
//! and wraps it again in a one-page PDF of one JPEG over the page — the "plain scan" the reader
//! decodes in-process. A dossier is one original document: its pages as one-page PDFs.
//!
//! The baseline, measured in the same run on the same JPEGs: the raw `tesseract` CLI with 1
//! and with 2 parallel processes (`xargs -P`, `OMP_THREAD_LIMIT=1`), the machine's ceiling.
//!
//! Throughput is OCR pages ÷ (first `process_source` run started → last one finished), both
//! from `job_runs`; also reported from first intake to last decision. A CPU split (workers,
//! other roles, PostgreSQL, Redis, other) over the window says what saturated. After each N,
//! `ironclad verify` must exit 0 (nothing lost, nothing done twice).

use crate::server::{self, ChildEnv};
use anyhow::{bail, ensure, Context};
use serde_json::{json, Value};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Target: 2 workers over 1 worker.
const TARGET_2_VS_1: f64 = 1.8;

/// `ironclad-bench scaling`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct ScalingArgs {
    /// CI run: set 1's four scanned pages, one copy, 1 and 2 workers (exits non-zero only if
    /// something errors: a lost case, a failed verify; the target is not asserted).
    #[arg(long)]
    smoke: bool,
    /// Worker process counts to measure (comma-separated). Default 1,2,4; smoke 1,2.
    #[arg(long, value_delimiter = ',')]
    workers: Vec<usize>,
    /// Copies of the page batch (each with its own pixels). Default 2; smoke 1.
    #[arg(long)]
    copies: Option<usize>,
    /// Take whole scanned documents until at least this many pages per copy. Default: all
    /// (35); smoke 4.
    #[arg(long)]
    pages: Option<usize>,
    /// `IRONCLAD_WORKER_CONCURRENCY` of each worker: with a page budget of 1, a second job lets
    /// a worker commit one page while reading the next, and a small figure keeps the last
    /// pages from waiting in one worker's hands while another is idle.
    #[arg(long, default_value_t = 2)]
    worker_concurrency: usize,
    /// Tesseract languages, for the workers and the CLI alike (the product's default).
    #[arg(long, default_value = "eng+fra")]
    languages: String,
    /// Use this ironclad binary instead of target/<profile>/ironclad.
    #[arg(long)]
    ironclad_bin: Option<PathBuf>,
    /// Do not run `cargo build --bin ironclad` first.
    #[arg(long)]
    no_build: bool,
    /// Skip the tesseract CLI baseline (no ceiling in the results).
    #[arg(long)]
    no_cli: bool,
    /// Where to write the JSON (default bench/results/scaling.json; smoke: scaling-smoke.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Keep the role logs in this directory.
    #[arg(long)]
    keep_logs: Option<PathBuf>,
}

/// `ironclad-bench scaling`.
pub async fn main(args: ScalingArgs) -> ExitCode {
    server::stop_children_on_signal();
    let started = Instant::now();
    match run(&args).await {
        Ok(0) => {
            eprintln!("scaling: done in {:.0} s", started.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Ok(n) => {
            eprintln!(
                "scaling: {n} run(s) errored (see above); done in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("scaling: {e:#}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs.

/// One page of the batch, in one copy: the PDF submitted and the same pixels as a JPEG for the
/// CLI.
struct Page {
    name: String,
    pdf: Vec<u8>,
    jpeg_path: PathBuf,
}

/// One dossier: one original document's pages, in one copy.
struct Dossier {
    label: String,
    pages: Vec<Page>,
}

/// The scanned PDFs `ocr` reads, in its order (sets, rotation, packet), whole documents until
/// `want` pages.
fn scan_fixtures(root: &Path, want: Option<usize>) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let dir = root.join("tests/fixtures/generated");
    let truth_path = dir.join("truth.json");
    let truth: Value = serde_json::from_slice(
        &std::fs::read(&truth_path).with_context(|| format!("reading {}", truth_path.display()))?,
    )?;
    let mut files: Vec<(String, usize)> = truth["files"]
        .as_array()
        .context("truth.json has no files")?
        .iter()
        .filter(|f| f["kind"] == "scan" && f["media_type"] == "application/pdf")
        .filter(|f| f["layout"].is_null())
        .filter_map(|f| {
            Some((
                f["file"].as_str()?.to_owned(),
                f["pages"].as_u64()? as usize,
            ))
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
    files.sort_by(|a, b| (group(&a.0), &a.0).cmp(&(group(&b.0), &b.0)));
    let mut out = Vec::new();
    let mut pages = 0;
    for (rel, n) in files {
        if want.is_some_and(|w| pages >= w) {
            break;
        }
        pages += n;
        out.push((rel.clone(), dir.join(rel)));
    }
    ensure!(
        !out.is_empty(),
        "no scanned PDFs listed in {}",
        truth_path.display()
    );
    Ok(out)
}

/// The JPEG of each page of a scanned PDF with its resolution (`pdfimages -list`, `-j`).
fn page_jpegs(pdf: &Path, scratch: &Path, tag: &str) -> anyhow::Result<Vec<(Vec<u8>, u16)>> {
    let list = std::process::Command::new("pdfimages")
        .arg("-list")
        .arg(pdf)
        .output()
        .context("running pdfimages (poppler-utils)")?;
    ensure!(
        list.status.success(),
        "pdfimages -list {} failed",
        pdf.display()
    );
    // page num type width height color comp bpc enc interp object ID x-ppi y-ppi size ratio
    let mut ppi_by_page = Vec::new();
    for line in String::from_utf8_lossy(&list.stdout).lines().skip(2) {
        let f: Vec<&str> = line.split_whitespace().collect();
        ensure!(f.len() >= 14, "unexpected pdfimages line: {line}");
        ensure!(
            f[8] == "jpeg" && f[5] == "gray",
            "{}: page {} is not one gray JPEG ({line})",
            pdf.display(),
            f[0]
        );
        let page: usize = f[0].parse()?;
        ensure!(
            page == ppi_by_page.len() + 1,
            "{}: not one image per page",
            pdf.display()
        );
        ppi_by_page.push(f[12].parse::<u16>()?);
    }
    let prefix = scratch.join(tag);
    let status = std::process::Command::new("pdfimages")
        .arg("-j")
        .arg(pdf)
        .arg(&prefix)
        .status()
        .context("running pdfimages -j")?;
    ensure!(status.success(), "pdfimages -j {} failed", pdf.display());
    let mut out = Vec::new();
    for (i, ppi) in ppi_by_page.into_iter().enumerate() {
        let path = PathBuf::from(format!("{}-{i:03}.jpg", prefix.display()));
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        out.push((bytes, ppi));
    }
    Ok(out)
}

/// The page's pixels with copy `copy`'s mark: a faint gray square in the bottom-right corner
/// (lighter than any ink, so nothing to read, but pixels of its own), JPEG at `ppi`.
fn marked_jpeg(original: &[u8], ppi: u16, copy: usize) -> anyhow::Result<(Vec<u8>, u32, u32)> {
    let mut img =
        image::load_from_memory_with_format(original, image::ImageFormat::Jpeg)?.to_luma8();
    let (w, h) = img.dimensions();
    let side = 24u32.min(w / 8).min(h / 8);
    for k in 0..=copy as u32 {
        // Copy c has c + 1 squares side by side: each copy's pixels differ from every other's.
        let x0 = w.saturating_sub(side * (k + 2));
        for y in h.saturating_sub(side * 2)..h.saturating_sub(side) {
            for x in x0..x0 + side {
                img.put_pixel(x, y, image::Luma([220]));
            }
        }
    }
    let mut out = Vec::new();
    let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90);
    enc.set_pixel_density(image::codecs::jpeg::PixelDensity::dpi(ppi));
    enc.encode(img.as_raw(), w, h, image::ExtendedColorType::L8)?;
    Ok((out, w, h))
}

/// A one-page PDF drawing `jpeg` over the whole page (the page is the image's size at `ppi`).
fn plain_scan_pdf(jpeg: &[u8], w: u32, h: u32, ppi: u16) -> Vec<u8> {
    use ironclad_inspect::fixtures::{pdf_from_objects, pdf_stream};
    let pw = format!("{:.2}", f64::from(w) * 72.0 / f64::from(ppi));
    let ph = format!("{:.2}", f64::from(h) * 72.0 / f64::from(ppi));
    pdf_from_objects(
        &[
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {pw} {ph}] \
                 /Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>"
            )
            .into_bytes(),
            pdf_stream("", format!("q {pw} 0 0 {ph} 0 0 cm /Im0 Do Q").as_bytes()),
            pdf_stream(
                &format!(
                    "/Type /XObject /Subtype /Image /Width {w} /Height {h} \
                     /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode"
                ),
                jpeg,
            ),
        ],
        "",
    )
}

/// Every dossier of every copy.
fn build_batch(
    root: &Path,
    scratch: &Path,
    want_pages: Option<usize>,
    copies: usize,
) -> anyhow::Result<Vec<Dossier>> {
    let extracted = scratch.join("extracted");
    let pages_dir = scratch.join("pages");
    std::fs::create_dir_all(&extracted)?;
    std::fs::create_dir_all(&pages_dir)?;
    let mut originals = Vec::new();
    for (i, (rel, path)) in scan_fixtures(root, want_pages)?.into_iter().enumerate() {
        let label = rel.trim_end_matches(".scan.pdf").replace('/', "-");
        originals.push((label, page_jpegs(&path, &extracted, &format!("d{i:02}"))?));
    }
    let mut batch = Vec::new();
    for copy in 0..copies {
        for (label, jpegs) in &originals {
            let mut pages = Vec::new();
            for (p, (jpeg, ppi)) in jpegs.iter().enumerate() {
                let (marked, w, h) = marked_jpeg(jpeg, *ppi, copy)?;
                let name = format!("{label}-p{}-c{copy}", p + 1);
                let jpeg_path = pages_dir.join(format!("{name}.jpg"));
                std::fs::write(&jpeg_path, &marked)?;
                pages.push(Page {
                    name: format!("{name}.pdf"),
                    pdf: plain_scan_pdf(&marked, w, h, *ppi),
                    jpeg_path,
                });
            }
            batch.push(Dossier {
                label: format!("{label}-c{copy}"),
                pages,
            });
        }
    }
    Ok(batch)
}

// ---------------------------------------------------------------------------------------------
// The tesseract CLI baseline.

/// `xargs -P procs tesseract JPEG out -l LANGS` over every page JPEG; (wall seconds, words).
fn cli_baseline(
    scratch: &Path,
    jpegs: &[PathBuf],
    procs: usize,
    langs: &str,
) -> anyhow::Result<Value> {
    let list = scratch.join(format!("cli-{procs}.list"));
    let mut f = std::fs::File::create(&list)?;
    for p in jpegs {
        writeln!(f, "{}", p.display())?;
    }
    drop(f);
    let key = format!("cli{procs}");
    let before = crate::sys::CpuSample::take(None);
    let children_before = children_cpu_s();
    let started = Instant::now();
    let out = std::process::Command::new("xargs")
        .args(["-P", &procs.to_string(), "-I{}", "-a"])
        .arg(&list)
        .args(["tesseract", "{}", &format!("{{}}.{key}"), "-l", langs])
        .env("OMP_THREAD_LIMIT", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("running xargs tesseract")?;
    let wall = started.elapsed().as_secs_f64();
    let mut cpu = before.split(&crate::sys::CpuSample::take(None));
    // xargs and the tesseracts it reaped are our reaped children: their CPU is theirs alone.
    let own = (children_cpu_s() - children_before) / wall.max(1e-9);
    cpu["tesseract_cores"] = json!(round2(own));
    let other = cpu["other_cores"].as_f64().unwrap_or(0.0);
    cpu["other_cores"] = json!(round2((other - own).max(0.0)));
    ensure!(
        out.status.success(),
        "xargs -P {procs} tesseract failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .take(5)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let mut words = 0usize;
    for p in jpegs {
        let txt = PathBuf::from(format!("{}.{key}.txt", p.display()));
        let text = std::fs::read_to_string(&txt)
            .with_context(|| format!("tesseract wrote no {}", txt.display()))?;
        let n = text.split_whitespace().count();
        ensure!(n > 0, "tesseract read no word on {}", p.display());
        words += n;
    }
    Ok(json!({
        "processes": procs,
        "pages": jpegs.len(),
        "wall_s": round3(wall),
        "pages_per_s": round3(jpegs.len() as f64 / wall.max(1e-9)),
        "words": words,
        "cpu": cpu,
        "command": format!("OMP_THREAD_LIMIT=1 xargs -P {procs} -I{{}} -a pages.list tesseract {{}} {{}}.{key} -l {langs}"),
    }))
}

/// CPU seconds of this process's reaped children and their reaped descendants.
fn children_cpu_s() -> f64 {
    // SAFETY: a zeroed rusage is a valid value for getrusage to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage with a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

// ---------------------------------------------------------------------------------------------
// The deployment.

/// One role process, killed (SIGKILL) if dropped without `stop`.
struct Role {
    name: String,
    child: tokio::process::Child,
    pid: u32,
    log: PathBuf,
}

impl Role {
    /// Starts `ironclad <role>` (through `taskset -c CORE` when `core` is given: taskset execs
    /// the binary, so the pid is the role's).
    fn start(
        bin: &Path,
        role: &str,
        name: &str,
        env: &ChildEnv,
        core: Option<usize>,
        logs: &Path,
    ) -> anyhow::Result<Self> {
        let log = logs.join(format!("{name}.log"));
        let file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = match core {
            Some(c) => {
                let mut cmd = tokio::process::Command::new("taskset");
                cmd.args(["-c", &c.to_string()]).arg(bin);
                cmd
            }
            None => tokio::process::Command::new(bin),
        };
        cmd.arg(role)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true);
        env.apply(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting ironclad {role}"))?;
        let pid = child.id().context("role has no pid")?;
        server::live().push(pid);
        Ok(Self {
            name: name.to_owned(),
            child,
            pid,
            log,
        })
    }

    /// SIGTERM, then up to 20 s for a graceful exit (then SIGKILL). Errors if it had died.
    async fn stop(mut self) -> anyhow::Result<()> {
        let pid = self.pid;
        let result = async {
            if let Some(status) = self.child.try_wait()? {
                bail!("{} had exited early ({status})", self.name);
            }
            // SAFETY: kill(2) on our own child's pid, which is not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            match tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await {
                Ok(status) => {
                    let status = status?;
                    ensure!(status.success(), "{} exited with {status}", self.name);
                    Ok(())
                }
                Err(_) => {
                    self.child.kill().await?;
                    bail!("{} did not stop within 20 s of SIGTERM (killed)", self.name)
                }
            }
        }
        .await;
        server::live().retain(|p| *p != pid);
        result
    }
}

/// utime + stime (+ reaped children's) ticks of a process, 0 if it is gone.
fn proc_ticks(pid: u32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some(close) = text.rfind(')') else {
        return 0;
    };
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3; utime, stime, cutime, cstime are fields 14–17.
    (11..=14)
        .filter_map(|i| rest.get(i).and_then(|v| v.parse::<u64>().ok()))
        .sum()
}

/// CPU of the workers and of the other roles between two instants, with the machine split.
struct CpuWindow {
    sample: crate::sys::CpuSample,
    workers: u64,
    roles: u64,
    at: Instant,
}

impl CpuWindow {
    fn take(workers: &[u32], roles: &[u32]) -> Self {
        Self {
            sample: crate::sys::CpuSample::take(None),
            workers: workers.iter().map(|p| proc_ticks(*p)).sum(),
            roles: roles.iter().map(|p| proc_ticks(*p)).sum(),
            at: Instant::now(),
        }
    }

    fn split(&self, later: &CpuWindow) -> Value {
        let mut v = self.sample.split(&later.sample);
        let wall = later.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let cores = |a: u64, b: u64| round2(b.saturating_sub(a) as f64 / 100.0 / wall);
        let workers = cores(self.workers, later.workers);
        let roles = cores(self.roles, later.roles);
        v["workers_cores"] = json!(workers);
        v["other_roles_cores"] = json!(roles);
        // sys::CpuSample counts our roles as "other": take them out.
        let other = v["other_cores"].as_f64().unwrap_or(0.0);
        v["other_cores"] = json!(round2((other - workers - roles).max(0.0)));
        if let Some(top) = v["other_top"].as_object_mut() {
            top.remove("ironclad");
        }
        v
    }
}

/// What the results of one N say.
struct NRun {
    workers: usize,
    result: Value,
}

/// One measurement with `n` workers on a fresh database.
async fn run_n(
    bin: &Path,
    args: &ScalingArgs,
    batch: Arc<Vec<Dossier>>,
    n: usize,
    logs: &Path,
) -> anyhow::Result<Value> {
    let db = ironclad_testkit::TestDb::new()
        .await
        .context("creating the database (is PostgreSQL up? DATABASE_URL)")?;
    let prefix = format!("bench-scaling-{}", uuid::Uuid::new_v4().simple());
    let result = run_n_on(bin, args, batch, n, logs, &db, &prefix).await;
    db.drop_database().await;
    if let Err(e) = crate::drop_streams(&ironclad_testkit::redis_url(), &prefix).await {
        eprintln!("scaling: cleaning up streams {prefix}: {e:#}");
    }
    result
}

async fn run_n_on(
    bin: &Path,
    args: &ScalingArgs,
    batch: Arc<Vec<Dossier>>,
    n: usize,
    logs: &Path,
    db: &ironclad_testkit::TestDb,
    prefix: &str,
) -> anyhow::Result<Value> {
    let logs = logs.join(format!("workers-{n}"));
    std::fs::create_dir_all(&logs)?;
    // A fresh blob directory, and so a fresh page cache beside it: nothing is read from an
    // earlier run.
    let scratch = tempfile::Builder::new()
        .prefix("ironclad-scaling-")
        .tempdir()?;
    server::register_scratch(scratch.path());
    let blob_dir = scratch.path().join("blobs");
    let redis_url = ironclad_testkit::redis_url();
    let env = ChildEnv { vars: Vec::new() }
        .with("DATABASE_URL", &db.url)
        .with("REDIS_URL", &redis_url)
        .with("IRONCLAD_STREAM_PREFIX", prefix)
        .with("IRONCLAD_BLOB_DIR", blob_dir.display().to_string())
        .with("IRONCLAD_PROCESSOR", "reading")
        .with("IRONCLAD_OCR_LANGUAGES", &args.languages)
        .with(
            "IRONCLAD_WORKER_CONCURRENCY",
            args.worker_concurrency.to_string(),
        )
        .with("IRONCLAD_DB_POOL", "4")
        .with("IRONCLAD_LOG_FORMAT", "json")
        .with("OMP_THREAD_LIMIT", "1");
    let tenant = "scaling";
    let key = server::tenant_and_key(bin, &env, tenant).await?;
    let api = server::Server::start(bin, "serve", &env, logs.join("api.log")).await?;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let mut roles = vec![
        Role::start(bin, "dispatcher", "dispatcher", &env, None, &logs)?,
        Role::start(bin, "reconciler", "reconciler", &env, None, &logs)?,
    ];
    let mut workers = Vec::new();
    for i in 0..n {
        workers.push(Role::start(
            bin,
            "worker",
            &format!("worker-{i}"),
            &env,
            Some(i % cores),
            &logs,
        )?);
    }
    let outcome = measure(&api.base_url, &key, batch, n, db, &workers, &roles, api.pid).await;
    // Stop the roles whatever happened (a role that died early is an error of the run).
    let mut stop_errors = Vec::new();
    for w in workers.drain(..).chain(roles.drain(..)) {
        if let Err(e) = w.stop().await {
            stop_errors.push(format!("{e:#}"));
        }
    }
    if let Err(e) = api.stop().await {
        stop_errors.push(format!("api: {e:#}"));
    }
    let mut result = outcome?;
    // Every promise, after quiescence, with the roles stopped.
    let verify_env = env.clone();
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(["verify", "--json", "--stuck-after", "0s"])
        .stdin(Stdio::null());
    verify_env.apply(&mut cmd);
    let out = cmd.output().await.context("running ironclad verify")?;
    let verify: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(
        |e| json!({"ok": false, "error": format!("unreadable verify output: {e}")}),
    );
    let code = out.status.code();
    result["verify"] = json!({
        "exit_code": code,
        "ok": verify["ok"],
        "checks": verify["checks"].as_array().map(|c| c.iter().map(|c| json!({
            "name": c["name"], "violations": c["violations"],
        })).collect::<Vec<_>>()),
    });
    ensure!(
        code == Some(0),
        "ironclad verify exited {code:?} after {n} worker(s): {}",
        String::from_utf8_lossy(&out.stdout)
    );
    ensure!(stop_errors.is_empty(), "roles: {}", stop_errors.join("; "));
    Ok(result)
}

/// Submits the batch, waits for every decision, reads the figures from PostgreSQL.
#[allow(clippy::too_many_arguments)]
async fn measure(
    api: &str,
    key: &str,
    batch: Arc<Vec<Dossier>>,
    n: usize,
    db: &ironclad_testkit::TestDb,
    workers: &[Role],
    roles: &[Role],
    api_pid: u32,
) -> anyhow::Result<Value> {
    let pool = db.store.pool();
    wait_started(workers, Duration::from_secs(120)).await?;
    let worker_pids: Vec<u32> = workers.iter().map(|w| w.pid).collect();
    let mut role_pids: Vec<u32> = roles.iter().map(|r| r.pid).collect();
    role_pids.push(api_pid);
    let cpu_before = CpuWindow::take(&worker_pids, &role_pids);
    let submitted_at = Instant::now();
    let cases = submit_all(api, key, batch.clone()).await?;
    let submit_s = submitted_at.elapsed().as_secs_f64();
    let pages: usize = batch.iter().map(|d| d.pages.len()).sum();
    // Every case decided (or a FAILED one: an error of the run).
    let deadline = Duration::from_secs(120 + 30 * pages as u64);
    loop {
        let (decided, failed, reasons): (i64, i64, Option<String>) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE status IN ('AWAITING_REVIEW', 'RESOLVED')),
                    count(*) FILTER (WHERE status = 'FAILED'),
                    string_agg(status_reason, ' | ') FILTER (WHERE status = 'FAILED')
             FROM cases",
        )
        .fetch_one(pool)
        .await?;
        ensure!(
            failed == 0,
            "{failed} case(s) FAILED: {}",
            reasons.unwrap_or_default()
        );
        if decided as usize == cases {
            break;
        }
        for w in workers.iter().chain(roles) {
            ensure!(
                Path::new(&format!("/proc/{}", w.pid)).exists(),
                "{} (pid {}) died",
                w.name,
                w.pid
            );
        }
        ensure!(
            submitted_at.elapsed() < deadline,
            "only {decided} of {cases} case(s) decided after {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let wall_s = submitted_at.elapsed().as_secs_f64();
    let cpu = cpu_before.split(&CpuWindow::take(&worker_pids, &role_pids));

    let ocr_pages: i64 = sqlx::query_scalar("SELECT count(*) FROM pages WHERE method = 'ocr'")
        .fetch_one(pool)
        .await?;
    let all_pages: i64 = sqlx::query_scalar("SELECT count(*) FROM pages")
        .fetch_one(pool)
        .await?;
    ensure!(
        ocr_pages as usize == pages && all_pages as usize == pages,
        "expected {pages} OCR pages, found {ocr_pages} OCR of {all_pages} pages"
    );
    // The OCR window from the runs' own timestamps (PostgreSQL's clock).
    let (ocr_window, runs, reruns): (f64, i64, i64) = sqlx::query_as(
        "SELECT extract(epoch FROM max(r.finished_at) - min(r.started_at))::float8,
                count(*), count(*) FILTER (WHERE r.attempt > 1)
         FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE j.kind = 'process_source'",
    )
    .fetch_one(pool)
    .await?;
    let e2e_window: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM (SELECT max(created_at) FROM decisions)
                              - (SELECT min(created_at) FROM cases))::float8",
    )
    .fetch_one(pool)
    .await?;
    let per_worker: Vec<(String, i64, f64)> = sqlx::query_as(
        "SELECT r.owner, count(*), sum(extract(epoch FROM r.finished_at - r.started_at))::float8
         FROM job_runs r JOIN jobs j ON j.id = r.job_id
         WHERE j.kind = 'process_source' GROUP BY r.owner ORDER BY r.owner",
    )
    .fetch_all(pool)
    .await?;
    ensure!(
        per_worker.len() == n,
        "{} worker(s) ran pages, expected {n}: {per_worker:?}",
        per_worker.len()
    );
    let pps = ocr_pages as f64 / ocr_window.max(1e-9);
    Ok(json!({
        "workers": n,
        "cases": cases,
        "pages": ocr_pages,
        "ocr_window_s": round3(ocr_window),
        "pages_per_s": round3(pps),
        "e2e_window_s": round3(e2e_window),
        "e2e_pages_per_s": round3(ocr_pages as f64 / e2e_window.max(1e-9)),
        "client_wall_s": round3(wall_s),
        "submit_s": round3(submit_s),
        "process_source_runs": runs,
        "reruns": reruns,
        "per_worker": per_worker.iter().map(|(o, c, s)| json!({"owner": o, "jobs": c, "busy_s": round3(*s)})).collect::<Vec<_>>(),
        "cpu": cpu,
    }))
}

/// Waits until every worker says it started (a worker joins the consumer group only with its
/// first read of a message, so Redis cannot tell).
async fn wait_started(workers: &[Role], timeout: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    for w in workers {
        while !std::fs::read_to_string(&w.log)
            .unwrap_or_default()
            .contains("ironclad started")
        {
            ensure!(
                started.elapsed() < timeout,
                "{} did not start within {timeout:?}",
                w.name
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// POSTs every dossier (4 clients); the number of cases created.
async fn submit_all(api: &str, key: &str, batch: Arc<Vec<Dossier>>) -> anyhow::Result<usize> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (client, next, batch, api, key) = (
            client.clone(),
            next.clone(),
            batch.clone(),
            api.to_owned(),
            key.to_owned(),
        );
        tasks.spawn(async move {
            let mut made = 0usize;
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(d) = batch.get(i) else {
                    return Ok::<usize, anyhow::Error>(made);
                };
                let mut form = reqwest::multipart::Form::new();
                for p in &d.pages {
                    form = form.part(
                        "file",
                        reqwest::multipart::Part::bytes(p.pdf.clone()).file_name(p.name.clone()),
                    );
                }
                let r = client
                    .post(format!("{api}/v1/cases"))
                    .bearer_auth(&key)
                    .header("Idempotency-Key", format!("scaling-{}", d.label))
                    .multipart(form)
                    .send()
                    .await
                    .with_context(|| format!("POST /v1/cases ({})", d.label))?;
                let status = r.status();
                let body = r.text().await.unwrap_or_default();
                ensure!(
                    status.as_u16() == 201,
                    "intake of {} answered {status}: {body}",
                    d.label
                );
                made += 1;
            }
        });
    }
    let mut total = 0;
    while let Some(joined) = tasks.join_next().await {
        total += joined??;
    }
    ensure!(
        total == batch.len(),
        "{total} of {} dossiers accepted",
        batch.len()
    );
    Ok(total)
}

// ---------------------------------------------------------------------------------------------
// The run.

async fn run(args: &ScalingArgs) -> anyhow::Result<usize> {
    let smoke = args.smoke;
    let ns = if args.workers.is_empty() {
        if smoke {
            vec![1, 2]
        } else {
            vec![1, 2, 4]
        }
    } else {
        args.workers.clone()
    };
    let copies = args.copies.unwrap_or(if smoke { 1 } else { 2 }).max(1);
    let want_pages = args.pages.or(smoke.then_some(4));
    let bin = {
        let (explicit, no_build) = (args.ironclad_bin.clone(), args.no_build);
        tokio::task::spawn_blocking(move || server::ensure_binary(explicit.as_deref(), no_build))
            .await??
    };
    let root = crate::workspace_root();
    let scratch = tempfile::Builder::new()
        .prefix("ironclad-scaling-in-")
        .tempdir()?;
    server::register_scratch(scratch.path());
    let log_tmp = tempfile::tempdir()?;
    let logs = args
        .keep_logs
        .clone()
        .unwrap_or_else(|| log_tmp.path().to_owned());
    std::fs::create_dir_all(&logs)?;

    let batch = {
        let (root, dir) = (root.clone(), scratch.path().to_owned());
        tokio::task::spawn_blocking(move || build_batch(&root, &dir, want_pages, copies)).await??
    };
    let pages: usize = batch.iter().map(|d| d.pages.len()).sum();
    let jpegs: Vec<PathBuf> = batch
        .iter()
        .flat_map(|d| d.pages.iter().map(|p| p.jpeg_path.clone()))
        .collect();
    let batch = Arc::new(batch);
    let machine = crate::sys::machine_info();
    let nproc = machine["nproc"].as_u64().unwrap_or(0);
    let idle = crate::sys::background_load(1.0).await;
    eprintln!(
        "scaling: {} dossiers, {pages} scanned pages ({copies} cop{}), {nproc} cores, workers {ns:?}; before: {}",
        batch.len(),
        if copies == 1 { "y" } else { "ies" },
        crate::sys::split_line(&idle)
    );
    let mut errors = 0;
    let mut results = json!({
        "kind": if smoke { "smoke" } else { "full" },
        "command": format!("cargo run {}-p ironclad-bench -- scaling{}", if server::PROFILE == "release" { "--release " } else { "" }, if smoke { " --smoke" } else { "" }),
        "profile": server::PROFILE,
        "machine": machine,
        "busy_before_start": idle,
        "uptime_before": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
        "inputs": {
            "dossiers": batch.len(), "pages": pages, "copies": copies,
            "source": "tests/fixtures/generated scanned PDFs: each page's JPEG re-encoded per copy with a faint mark, as a one-page plain-scan PDF",
        },
        "settings": {
            "worker_concurrency": args.worker_concurrency,
            "page_budget_per_worker": 1,
            "pinning": "taskset -c (i mod nproc) per worker; serve, dispatcher, reconciler unpinned",
            "languages": args.languages,
        },
        "target": format!("2 workers ≥ {TARGET_2_VS_1}× 1 worker"),
    });

    // The ceiling: raw tesseract on the same pixels, 1 then 2 processes.
    let mut cli = serde_json::Map::new();
    if !args.no_cli {
        for procs in [1usize, 2] {
            eprintln!("scaling: tesseract CLI, {procs} process(es), {pages} pages…");
            let r = {
                let (dir, jpegs, langs) = (
                    scratch.path().to_owned(),
                    jpegs.clone(),
                    args.languages.clone(),
                );
                tokio::task::spawn_blocking(move || cli_baseline(&dir, &jpegs, procs, &langs))
                    .await?
            };
            match r {
                Ok(v) => {
                    eprintln!(
                        "scaling:   {:.3} pages/s ({:.1} s); {}",
                        v["pages_per_s"].as_f64().unwrap_or(0.0),
                        v["wall_s"].as_f64().unwrap_or(0.0),
                        crate::sys::split_line(&v["cpu"])
                    );
                    cli.insert(procs.to_string(), v);
                }
                Err(e) => {
                    errors += 1;
                    eprintln!("scaling: tesseract CLI ERRORED: {e:#}");
                    cli.insert(procs.to_string(), json!({"error": format!("{e:#}")}));
                }
            }
        }
    }
    results["tesseract_cli"] = Value::Object(cli);

    let mut runs: Vec<NRun> = Vec::new();
    for &n in &ns {
        eprintln!("scaling: {n} worker(s)…");
        match run_n(&bin, args, batch.clone(), n, &logs).await {
            Ok(v) => {
                eprintln!(
                    "scaling:   {:.3} pages/s over {:.1} s (e2e {:.3}); verify exit {}; {}",
                    v["pages_per_s"].as_f64().unwrap_or(0.0),
                    v["ocr_window_s"].as_f64().unwrap_or(0.0),
                    v["e2e_pages_per_s"].as_f64().unwrap_or(0.0),
                    v["verify"]["exit_code"],
                    crate::sys::split_line(&v["cpu"])
                );
                eprintln!(
                    "scaling:   workers {:.2} cores, other roles {:.2}",
                    v["cpu"]["workers_cores"].as_f64().unwrap_or(0.0),
                    v["cpu"]["other_roles_cores"].as_f64().unwrap_or(0.0)
                );
                runs.push(NRun {
                    workers: n,
                    result: v,
                });
            }
            Err(e) => {
                errors += 1;
                eprintln!("scaling: {n} worker(s) ERRORED: {e:#}");
                runs.push(NRun {
                    workers: n,
                    result: json!({"workers": n, "error": format!("{e:#}")}),
                });
            }
        }
    }
    results["uptime_after"] = json!(std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim());
    summarize(&mut results, &runs, nproc);
    results["errors"] = json!(errors);
    let out = args.out.clone().unwrap_or_else(|| {
        root.join("bench/results").join(if smoke {
            "scaling-smoke.json"
        } else {
            "scaling.json"
        })
    });
    crate::write_result(&out, &results)?;
    println!("{}", results["table"].as_str().unwrap_or(""));
    println!("results written to {}", out.display());
    let png = out.with_extension("png");
    match plot(&out, &png) {
        Ok(()) => println!("plot written to {}", png.display()),
        Err(e) => eprintln!("scaling: no plot ({e:#}); `pip install matplotlib` for one"),
    }
    Ok(errors)
}

/// Ratios, the saturation verdicts and the Markdown table.
fn summarize(results: &mut Value, runs: &[NRun], nproc: u64) {
    let pps = |n: usize| {
        runs.iter()
            .find(|r| r.workers == n)
            .and_then(|r| r.result["pages_per_s"].as_f64())
    };
    let cli = |p: &str| results["tesseract_cli"][p]["pages_per_s"].as_f64();
    let (cli1, cli2) = (cli("1"), cli("2"));
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(round3(a / b)),
        _ => None,
    };
    let r21 = ratio(pps(2), pps(1));
    let cli_ratio = ratio(cli2, cli1);
    results["ratios"] = json!({
        "workers_2_vs_1": r21,
        "workers_4_vs_1": ratio(pps(4), pps(1)),
        "workers_4_vs_2": ratio(pps(4), pps(2)),
        "tesseract_2_vs_1": cli_ratio,
        "workers_1_vs_tesseract_1": ratio(pps(1), cli1),
        "workers_2_vs_tesseract_2": ratio(pps(2), cli2),
    });
    results["verdict"] = json!(match r21 {
        Some(r) if r >= TARGET_2_VS_1 => "PASS",
        Some(_) => "MISS",
        None => "n/a",
    });
    let mut table = format!(
        "| run | pages/s (job_runs window) | vs 1 worker | pages/s intake→decision | workers' cores | other roles | postgres | other | machine busy (of {nproc}) | verify |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    );
    for (p, v) in results["tesseract_cli"]
        .as_object()
        .cloned()
        .unwrap_or_default()
    {
        table.push_str(&format!(
            "| tesseract CLI, {p} process(es) | {} | {} | | {} | | {} | {} | {} | |\n",
            fmt(v["pages_per_s"].as_f64()),
            if p == "2" {
                cli_ratio.map(|r| format!("{r:.2}×")).unwrap_or_default()
            } else {
                String::new()
            },
            fmt(v["cpu"]["other_cores"]
                .as_f64()
                .map(|o| v["cpu"]["machine_busy_cores"].as_f64().unwrap_or(0.0) - o)),
            fmt(v["cpu"]["postgres_cores"].as_f64()),
            fmt(v["cpu"]["other_cores"].as_f64()),
            fmt(v["cpu"]["machine_busy_cores"].as_f64()),
        ));
    }
    let mut saturation = Vec::new();
    for r in runs {
        let v = &r.result;
        let c = &v["cpu"];
        let busy = c["machine_busy_cores"].as_f64();
        let pg = c["postgres_cores"].as_f64();
        if let (Some(busy), Some(pg), Some(w)) = (busy, pg, c["workers_cores"].as_f64()) {
            saturation.push(json!({
                "workers": r.workers,
                "cores_saturated": busy >= 0.9 * nproc as f64,
                "postgres_cores": pg,
                "workers_cores": w,
                "machine_busy_cores": busy,
                "reading": format!(
                    "{} worker(s): machine {busy:.2} of {nproc} cores busy ({}), workers {w:.2}, PostgreSQL {pg:.2} ({})",
                    r.workers,
                    if busy >= 0.9 * nproc as f64 { "cores saturated" } else { "cores not saturated" },
                    if pg >= 0.5 { "a large share" } else { "not a bottleneck" }
                ),
            }));
        }
        let vs1 = ratio(v["pages_per_s"].as_f64(), pps(1));
        table.push_str(&format!(
            "| {} worker(s) | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.workers,
            if v.get("error").is_some() {
                "ERROR".to_owned()
            } else {
                fmt(v["pages_per_s"].as_f64())
            },
            vs1.map(|r| format!("{r:.2}×")).unwrap_or_default(),
            fmt(v["e2e_pages_per_s"].as_f64()),
            fmt(c["workers_cores"].as_f64()),
            fmt(c["other_roles_cores"].as_f64()),
            fmt(c["postgres_cores"].as_f64()),
            fmt(c["other_cores"].as_f64()),
            fmt(busy),
            match v["verify"]["exit_code"].as_i64() {
                Some(0) => "exit 0".to_owned(),
                Some(c) => format!("exit {c}"),
                None => "—".to_owned(),
            },
        ));
    }
    results["saturation"] = json!(saturation);
    table.push_str(&format!(
        "\n2 workers vs 1: {} (target ≥ {TARGET_2_VS_1}×: {}); tesseract CLI 2 vs 1 process: {}\n",
        r21.map(|r| format!("{r:.2}×")).unwrap_or("n/a".into()),
        results["verdict"].as_str().unwrap_or(""),
        cli_ratio
            .map(|r| format!("{r:.2}×"))
            .unwrap_or("n/a".into()),
    ));
    results["runs"] = json!(runs.iter().map(|r| r.result.clone()).collect::<Vec<_>>());
    results["table"] = json!(table);
}

fn fmt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "—".into())
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// pages/s against worker processes, with the tesseract CLI's 1- and 2-process figures and
/// the core count, drawn by matplotlib (python3) from the JSON.
fn plot(json_path: &Path, png: &Path) -> anyhow::Result<()> {
    const SCRIPT: &str = r#"
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
r = json.load(open(sys.argv[1]))
runs = [x for x in r["runs"] if "pages_per_s" in x]
n = [x["workers"] for x in runs]
pps = [x["pages_per_s"] for x in runs]
cores = r["machine"]["nproc"]
fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
ax.plot(n, pps, "o-", color="tab:blue", label="Ironclad workers (1 core, page budget 1 each)")
for x, y in zip(n, pps):
    ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points", xytext=(6, -12))
cli = r.get("tesseract_cli", {})
pts = [(int(p), v["pages_per_s"]) for p, v in sorted(cli.items()) if "pages_per_s" in v]
if pts:
    ax.plot([p for p, _ in pts], [v for _, v in pts], "s--", color="tab:orange",
            label="raw tesseract CLI, 1 and 2 processes (same pages)")
    one = dict(pts).get(1)
    if one:
        ax.plot([1, cores], [one, cores * one], ":", color="gray", label="linear from 1 tesseract process")
    top = max(v for _, v in pts)
    ax.axhline(top, color="tab:red", ls="--", lw=1, label=f"ceiling: tesseract CLI at {max(p for p, _ in pts)} processes, {top:.2f}")
ax.axvline(cores, color="black", ls="-.", lw=1, label=f"{cores} cores")
ax.set_xticks(sorted(set(n + [cores])))
ax.set_xlabel("worker processes")
ax.set_ylabel("OCR pages/s")
ratio = r.get("ratios", {}).get("workers_2_vs_1")
ax.set_title("OCR throughput vs worker processes" + (f" (2 vs 1: {ratio:.2f}x)" if ratio else ""))
ax.set_ylim(bottom=0)
ax.grid(alpha=0.3)
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
fig.savefig(sys.argv[2])
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(json_path)
        .arg(png)
        .output()
        .context("running python3")?;
    ensure!(
        out.status.success(),
        "python3 matplotlib: {}",
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
    );
    Ok(())
}
