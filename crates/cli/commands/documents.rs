//! Reading documents without the pipeline: `ironclad extract`, `ironclad workflow …`,
//! `ironclad templates import|load`. None of these needs PostgreSQL or Redis except `workflow
//! load` and `templates load`.

use super::connect_store;
use crate::config::Connections;
use anyhow::Context;
use clap::{Args, Subcommand};
use ironclad_core::page::ReadMethod;
use ironclad_extract::invoice2data::{compile_set, Template, MAX_TEMPLATES, MAX_TEMPLATE_BYTES};
use ironclad_extract::Workflow;
use ironclad_ocr::{PageReader, ReadOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// The trade workflow shipped with the binary, used when no other is given.
pub const DEFAULT_WORKFLOW_YAML: &str = include_str!("../../../workflows/trade.yaml");

/// `ironclad workflow …`
#[derive(Debug, Subcommand)]
pub enum WorkflowCommand {
    /// Check a workflow file and print what it declares.
    Validate {
        /// The YAML file.
        file: PathBuf,
    },
    /// Store a workflow file as a new version (same content: same version).
    Load {
        /// The YAML file.
        file: PathBuf,
    },
}

/// `ironclad templates …`
#[derive(Debug, Subcommand)]
pub enum TemplatesCommand {
    /// Read every invoice2data template under DIR and report which load and why not.
    Import {
        /// Directory searched recursively for .yml/.yaml/.json templates.
        dir: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Store every invoice2data template under DIR as the next version of the template set
    /// the pipeline applies (same files: same version). Nothing is stored if any is refused.
    Load {
        /// Directory searched recursively for .yml/.yaml/.json templates.
        dir: PathBuf,
        /// Store the templates that compile and list the others, instead of storing nothing.
        #[arg(long)]
        skip_invalid: bool,
    },
}

/// `ironclad extract FILE...`
#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Files to read (PDF, PNG, JPEG, TIFF).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Workflow file (default: the built-in trade workflow).
    #[arg(long)]
    pub workflow: Option<PathBuf>,
    /// invoice2data templates directory, applied to each file's layout text as well.
    #[arg(long)]
    pub templates: Option<PathBuf>,
    /// Print each page as laid out in columns (`pdftotext -layout` style, what templates
    /// match) instead of in reading order.
    #[arg(long)]
    pub layout: bool,
    /// What becomes of table borders and underlines on scanned pages: `drop-marks` takes out
    /// what OCR read from them (`|`, `|Shipper`); `keep` keeps it; `erase` takes the rules
    /// off the image before OCR (experimental: it costs fields on some pages).
    #[arg(
        long,
        value_name = "keep|drop-marks|erase",
        default_value = "drop-marks"
    )]
    pub rule_lines: ironclad_ocr::RuleLines,
    /// Tesseract languages.
    #[arg(long, env = "IRONCLAD_OCR_LANGUAGES", default_value = "eng+fra")]
    pub languages: String,
    /// Scale scanned pages so their body text is about this many pixels tall before OCR
    /// (never enlarged); 0 reads them at full resolution.
    #[arg(long, env = "IRONCLAD_OCR_TEXT_HEIGHT")]
    pub text_height: Option<u32>,
    /// Read again, region by region, where a doubtful value should be (`false`: the first
    /// reading only, to compare).
    #[arg(long, env = "IRONCLAD_SECOND_LOOK", default_value_t = true, action = clap::ArgAction::Set)]
    pub second_look: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn read_workflow(path: Option<&Path>) -> anyhow::Result<(String, Workflow)> {
    let yaml = match path {
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
        }
        None => DEFAULT_WORKFLOW_YAML.to_owned(),
    };
    let workflow =
        Workflow::from_yaml(&yaml).map_err(|e| anyhow::anyhow!("invalid workflow: {e}"))?;
    Ok((yaml, workflow))
}

pub async fn workflow(c: &Connections, cmd: WorkflowCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        WorkflowCommand::Validate { file } => {
            let (_, wf) = read_workflow(Some(&file))?;
            let spec = wf.spec();
            println!(
                "{}: valid workflow {:?} with {} document type(s)",
                file.display(),
                spec.name,
                spec.document_types.len()
            );
            for t in &spec.document_types {
                println!("  {:<24} {} field(s)", t.id, t.fields.len());
            }
            Ok(ExitCode::SUCCESS)
        }
        WorkflowCommand::Load { file } => {
            let (yaml, wf) = read_workflow(Some(&file))?;
            let store = connect_store(c).await?;
            let (version, created) = store.load_workflow(&wf.spec().name, &yaml).await?;
            println!(
                "workflow {} version {} {}",
                version.name,
                version.version,
                if created {
                    "stored"
                } else {
                    "already stored (same content)"
                }
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn template_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            template_files(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yml" | "yaml" | "json")
        ) {
            out.push(path);
        }
    }
    Ok(())
}

/// Templates that could not be read, with the reason.
type Refused = Vec<(PathBuf, String)>;

/// Loads every template under `dir`; returns the good ones and (file, reason) for the rest.
fn load_templates(dir: &Path) -> anyhow::Result<(Vec<Template>, Refused)> {
    let mut files = Vec::new();
    template_files(dir, &mut files).with_context(|| format!("listing {}", dir.display()))?;
    files.sort();
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for f in files {
        match std::fs::read_to_string(&f)
            .map_err(|e| e.to_string())
            .and_then(|t| Template::from_yaml(&t).map_err(|e| e.to_string()))
        {
            Ok(t) => ok.push(t),
            Err(e) => failed.push((f, e)),
        }
    }
    Ok((ok, failed))
}

pub async fn templates(c: &Connections, cmd: TemplatesCommand) -> anyhow::Result<ExitCode> {
    let (dir, json) = match cmd {
        TemplatesCommand::Import { dir, json } => (dir, json),
        TemplatesCommand::Load { dir, skip_invalid } => {
            return load_template_set(c, &dir, skip_invalid).await
        }
    };
    let (ok, failed) = load_templates(&dir)?;
    if json {
        let failed: Vec<_> = failed
            .iter()
            .map(|(f, e)| serde_json::json!({"file": f, "error": e}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"loaded": ok.len(), "failed": failed})
        );
    } else {
        println!("{} template(s) loaded, {} refused", ok.len(), failed.len());
        for (f, e) in &failed {
            println!("  refused {}: {e}", f.display());
        }
        for t in ok.iter().filter(|t| !t.warnings().is_empty()) {
            for w in t.warnings() {
                println!("  warning {}: {w}", t.issuer());
            }
        }
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// `ironclad templates load DIR`: every file must compile, or nothing is stored (with
/// `--skip-invalid`, those that do not are left out and listed).
async fn load_template_set(
    c: &Connections,
    dir: &Path,
    skip_invalid: bool,
) -> anyhow::Result<ExitCode> {
    let mut paths = Vec::new();
    template_files(dir, &mut paths).with_context(|| format!("listing {}", dir.display()))?;
    paths.sort();
    anyhow::ensure!(
        !paths.is_empty(),
        "{}: no .yml, .yaml or .json template",
        dir.display()
    );
    anyhow::ensure!(
        paths.len() <= MAX_TEMPLATES,
        "{}: {} templates; a set holds at most {MAX_TEMPLATES}",
        dir.display(),
        paths.len()
    );
    let mut files = Vec::with_capacity(paths.len());
    for path in &paths {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        anyhow::ensure!(
            size <= MAX_TEMPLATE_BYTES as u64,
            "{}: {size} bytes; a template may have at most {MAX_TEMPLATE_BYTES}",
            path.display()
        );
        let yaml =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path.strip_prefix(dir).unwrap_or(path).display().to_string();
        files.push(ironclad_store::templates::TemplateFile { name, yaml });
    }
    if let Err(refused) = compile_set(files.iter().map(|f| (f.name.as_str(), f.yaml.as_str()))) {
        if !skip_invalid {
            eprintln!(
                "{} template(s) refused; nothing stored (--skip-invalid stores the rest):",
                refused.len()
            );
            for (name, reason) in &refused {
                eprintln!("  {name}: {reason}");
            }
            return Ok(ExitCode::from(2));
        }
        for (name, reason) in &refused {
            eprintln!("skipped {name}: {reason}");
        }
        files.retain(|f| !refused.iter().any(|(name, _)| name == &f.name));
        anyhow::ensure!(!files.is_empty(), "no template compiles; nothing stored");
    }
    let count = files.len();
    let store = connect_store(c).await?;
    let (set, created) = store.load_template_set(files).await?;
    println!(
        "template set version {} {} ({count} template(s), sha256 {})",
        set.version,
        if created {
            "stored"
        } else {
            "already stored (same files)"
        },
        &set.sha256[..12]
    );
    Ok(ExitCode::SUCCESS)
}

fn method(m: ReadMethod) -> &'static str {
    match m {
        ReadMethod::TextLayer => "text layer",
        ReadMethod::Ocr => "OCR",
        ReadMethod::Provider => "provider",
    }
}

/// Files `ironclad extract` reads at once: enough to keep every core busy when files are
/// small, few enough that their bytes and pages held for in-order printing stay small.
const EXTRACT_FILES_AT_ONCE: usize = 8;

/// Reads and sniffs one file, then reads it as the pipeline does
/// ([`ironclad_reading::read_document`]: pages, analysis, second look).
fn read_one(
    reader: &PageReader,
    path: &Path,
    workflow: &Workflow,
    templates: &[Template],
) -> Result<(ironclad_core::media::MediaType, ironclad_reading::Reading), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let media = ironclad_inspect::sniff(&bytes).ok_or("not a PDF, PNG, JPEG or TIFF")?;
    // Poppler gets a copy of what was read, not the path: a pipe cannot be read twice, and
    // /dev/stdin or /dev/fd/N would name poppler's own descriptors.
    let document = ironclad_reading::Document {
        bytes: &bytes,
        media,
        path: None,
    };
    let reading =
        ironclad_reading::read_document(reader, document, Some(workflow), templates, None)
            .map_err(|e| e.to_string())?;
    Ok((media, reading))
}

pub async fn extract(args: ExtractArgs) -> anyhow::Result<ExitCode> {
    let (_, workflow) = read_workflow(args.workflow.as_deref())?;
    let templates = match &args.templates {
        Some(dir) => load_templates(dir)?.0,
        None => Vec::new(),
    };
    let reader = std::sync::Arc::new(PageReader::new(
        ReadOptions {
            languages: args.languages.clone(),
            rule_lines: args.rule_lines,
            text_height_px: ironclad_ocr::text_height_setting(args.text_height),
            second_look: args.second_look,
            ..ReadOptions::default()
        },
        None,
    ));
    let (workflow, templates) = (Arc::new(workflow), Arc::new(templates));
    let mut code = ExitCode::SUCCESS;
    // Files are read several at a time (the reader's page budget keeps the cores busy and
    // the engines bounded) and reported in the order given.
    let mut reading = std::collections::VecDeque::new();
    let mut files = args.files.iter();
    loop {
        while reading.len() < EXTRACT_FILES_AT_ONCE {
            let Some(file) = files.next() else { break };
            let (r, path) = (reader.clone(), file.clone());
            let (w, t) = (workflow.clone(), templates.clone());
            reading.push_back((
                file,
                tokio::task::spawn_blocking(move || read_one(&r, &path, &w, &t)),
            ));
        }
        let Some((file, read)) = reading.pop_front() else {
            break;
        };
        let read = read
            .await
            .unwrap_or_else(|e| Err(format!("reading it crashed: {e}")));
        let (media, reading) = match read {
            Ok(read) => read,
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                code = ExitCode::from(2);
                continue;
            }
        };
        let ironclad_reading::Reading {
            pages,
            analysis,
            second_look,
        } = reading;
        // A workflow is always given here, so there is always an analysis.
        let Some(analysis) = analysis else {
            eprintln!("{}: no analysis", file.display());
            code = ExitCode::from(2);
            continue;
        };
        if args.json {
            let template = analysis.template.as_ref().and_then(|t| {
                let fields = t.output.as_ref()?;
                Some(serde_json::json!({"issuer": t.issuer, "fields": fields}))
            });
            println!(
                "{}",
                serde_json::json!({
                    "file": file, "media_type": media.as_str(), "pages": pages, "analysis": analysis,
                    "invoice2data": template, "second_look": second_look,
                })
            );
            continue;
        }
        println!(
            "== {} ({}, {} page(s))",
            file.display(),
            media.as_str(),
            pages.len()
        );
        for (p, class) in pages.iter().zip(&analysis.pages) {
            println!(
                "-- page {} read by {} (confidence {:.2}{}) — {}",
                p.index + 1,
                method(p.method),
                p.confidence,
                if p.rotation != 0 {
                    format!(", rotated {}°", p.rotation)
                } else {
                    String::new()
                },
                match &class.doc_type {
                    // Recognized by its labels, or continuing the page before: say why.
                    Some(t) => match class.explanation() {
                        Some(why) => format!("{t} ({:.2}; {why})", class.confidence),
                        None => format!("{t} ({:.2})", class.confidence),
                    },
                    None => format!(
                        "UNKNOWN: {}",
                        class.reason.as_deref().unwrap_or("no reason")
                    ),
                }
            );
            let text = if args.layout {
                ironclad_extract::layout_text(std::slice::from_ref(p))
            } else {
                p.text()
            };
            for line in text.trim_end_matches(['\n', '\u{c}']).lines() {
                println!("   | {line}");
            }
        }
        for s in &analysis.segments {
            let pages: Vec<String> = s
                .segment
                .pages
                .iter()
                .map(|p| (p + 1).to_string())
                .collect();
            println!(
                "segment pages {}: {} (confidence {:.2})",
                pages.join(","),
                s.segment.doc_type.as_deref().unwrap_or("UNKNOWN"),
                s.segment.confidence
            );
            for f in &s.facts {
                match &f.chosen {
                    Some(c) => println!(
                        "  {:<20} = {:<28} raw {:?} page {} box [{:.3},{:.3},{:.3},{:.3}] confidence {:.2}{}{}{}",
                        f.field,
                        serde_json::to_string(&c.value).unwrap_or_default(),
                        c.raw,
                        c.page + 1,
                        c.bbox.x0,
                        c.bbox.y0,
                        c.bbox.x1,
                        c.bbox.y1,
                        c.confidence,
                        if f.candidates.len() > 1 { format!(", {} candidates", f.candidates.len()) } else { String::new() },
                        if f.conflict { ", CONFLICT" } else { "" },
                        if c.origin.is_some() { ", read by a second look" } else { "" }
                    ),
                    None => println!("  {:<20} = (none){}", f.field, if f.missing_required { " — required, MISSING" } else { "" }),
                }
            }
        }
        if second_look.regions > 0 {
            println!(
                "second look: {} region(s) on {} page(s) read again in {} ms; {} reading(s) added, {} field(s) changed",
                second_look.regions,
                second_look.pages,
                second_look.ms,
                second_look.candidates,
                second_look.facts_changed
            );
        }
        match &analysis.template {
            Some(t) => match (&t.output, &t.error) {
                (Some(fields), _) => println!("invoice2data template {}: {fields}", t.issuer),
                (None, e) => println!(
                    "invoice2data template {} matched but gave nothing: {}",
                    t.issuer,
                    e.as_deref().unwrap_or("no reason")
                ),
            },
            None if !templates.is_empty() => println!("invoice2data: no template matched"),
            None => {}
        }
    }
    Ok(code)
}
