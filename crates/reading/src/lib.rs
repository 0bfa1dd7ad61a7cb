//! The real document step: read every page (text layer or OCR), then classify, segment and
//! extract against the case's workflow. CPU-bound work runs on the blocking pool; the reader
//! spreads scanned pages across its Tesseract threads, shared by every file being read.

use ironclad_core::page::PageText;
use ironclad_documents::processor::{
    read_verified, DocumentProcessor, ProcessFuture, ProcessedSource, ProcessorError, SourceInput,
};
use ironclad_extract::invoice2data::Template;
use ironclad_extract::Workflow;
use ironclad_ocr::{PageBudget, PageCache, PageReader, ReadError, ReadOptions};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod compiler;
mod read;

pub use compiler::{compiled_templates, compiled_workflow, ExtractCompiler};
pub use ironclad_documents::workflows::{LoadedTemplates, LoadedWorkflow, WorkflowSet};
pub use read::{read_document, Document, Reading, SecondLookSummary};

/// Readers by Tesseract language set, created on first use: a workflow declares the languages
/// its documents are written in, and Tesseract reads best with exactly those models loaded.
/// Every reader takes turns from one page budget, so the process reads `options.threads`
/// scanned pages at once whatever the languages.
pub struct ReaderPool {
    options: ReadOptions,
    cache: Option<Arc<dyn PageCache>>,
    budget: Arc<PageBudget>,
    readers: std::sync::Mutex<HashMap<String, Arc<PageReader>>>,
}

impl std::fmt::Debug for ReaderPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderPool")
            .field("options", &self.options)
            .field("cache", &self.cache.is_some())
            .finish_non_exhaustive()
    }
}

impl ReaderPool {
    /// Readers with `options` (whose `languages` is the default set) sharing `cache`.
    pub fn new(options: ReadOptions, cache: Option<Arc<dyn PageCache>>) -> Self {
        Self {
            budget: Arc::new(PageBudget::new(options.threads)),
            options,
            cache,
            readers: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The reader for a workflow's languages (ISO 639-1 codes), or the default set when the
    /// workflow names none Tesseract knows.
    pub fn for_workflow(&self, workflow: Option<&Workflow>) -> Arc<PageReader> {
        let languages = workflow
            .and_then(|w| tesseract_languages(&w.spec().languages))
            .unwrap_or_else(|| self.options.languages.clone());
        let mut readers = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        readers
            .entry(languages.clone())
            .or_insert_with(|| {
                Arc::new(PageReader::with_budget(
                    ReadOptions {
                        languages,
                        ..self.options.clone()
                    },
                    self.cache.clone(),
                    Arc::clone(&self.budget),
                ))
            })
            .clone()
    }
}

/// Maps ISO 639-1 codes to Tesseract model names (`en` → `eng`), joined with `+`; `None` when
/// none is known.
pub fn tesseract_languages(codes: &[String]) -> Option<String> {
    let names: Vec<&str> = codes
        .iter()
        .filter_map(|c| match c.trim().to_ascii_lowercase().as_str() {
            "en" | "eng" | "english" => Some("eng"),
            "fr" | "fra" | "french" => Some("fra"),
            "de" | "deu" | "german" => Some("deu"),
            "es" | "spa" | "spanish" => Some("spa"),
            "it" | "ita" | "italian" => Some("ita"),
            "nl" | "nld" | "dutch" => Some("nld"),
            "pt" | "por" | "portuguese" => Some("por"),
            "pl" | "pol" | "polish" => Some("pol"),
            _ => None,
        })
        .collect();
    (!names.is_empty()).then(|| names.join("+"))
}

/// Reads pages and applies a workflow.
///
/// Every job the worker runs at once reads its file at once: text-layer files never wait
/// behind a long scan, and a one-page scan does not leave a core idle. What bounds CPU and
/// memory is the readers' shared page budget (`ReadOptions::threads` scanned pages in flight,
/// oldest file first), not a limit on files.
pub struct ReadingProcessor {
    readers: ReaderPool,
    workflows: WorkflowSet,
}

impl ReadingProcessor {
    /// A processor reading with `readers` and applying `workflows`.
    pub fn new(readers: ReaderPool, workflows: WorkflowSet) -> Self {
        Self { readers, workflows }
    }
}

impl DocumentProcessor for ReadingProcessor {
    fn process(&self, input: SourceInput) -> ProcessFuture<'_> {
        Box::pin(async move {
            let SourceReading {
                workflow,
                name,
                reading,
                ..
            } = read_source(&self.readers, &self.workflows, &input).await?;
            let ocr = ocr_pages(&reading.pages);
            let summary = serde_json::json!({
                "processor": "reading",
                "pages": reading.pages.len(),
                "ocr_pages": ocr,
                "text_layer_pages": reading.pages.len() - ocr,
                "workflow": name,
                "second_look": reading.second_look,
                "template": reading.analysis.as_ref().and_then(|a| a.template.as_ref()).map(|t| {
                    serde_json::json!({"issuer": t.issuer, "matched": t.output.is_some(), "error": t.error})
                }),
                "segments": reading.analysis.as_ref().map(|a| a.segments.iter().map(|s| {
                    serde_json::json!({"doc_type": s.segment.doc_type, "pages": s.segment.pages})
                }).collect::<Vec<_>>()),
            });
            Ok(ProcessedSource {
                pages: u32::try_from(reading.pages.len()).unwrap_or(u32::MAX),
                summary,
                read: reading.pages,
                analysis: reading.analysis,
                workflow_id: workflow.map(|w| w.id),
            })
        })
    }

    fn name(&self) -> &'static str {
        "reading"
    }
}

/// How many of `pages` were read by OCR.
pub fn ocr_pages(pages: &[PageText]) -> usize {
    pages
        .iter()
        .filter(|p| p.method == ironclad_core::page::ReadMethod::Ocr)
        .count()
}

/// A source read for a processor: the workflow version it was read under and what reading
/// gave.
#[derive(Debug)]
pub struct SourceReading {
    /// The stored workflow version, when there is one.
    pub workflow: Option<LoadedWorkflow>,
    /// Its name, for the job's summary.
    pub name: Option<String>,
    /// The workflow as compiled, when the source was read under one.
    pub instructions: Option<Arc<Workflow>>,
    /// Pages, analysis and second look.
    pub reading: Reading,
}

/// Reads a job's source the way every processor does: the case's workflow and template set,
/// the verified bytes, the reader for the workflow's languages, then [`read_document`] on the
/// blocking pool. Dropping the future (a job past its timeout) stops the read taking page
/// turns from the files still being read.
pub async fn read_source(
    readers: &ReaderPool,
    workflows: &WorkflowSet,
    input: &SourceInput,
) -> Result<SourceReading, ProcessorError> {
    let plan = workflows.plan_for::<Workflow, Vec<Template>>(input)?;
    let name = plan.name();
    let (workflow, wf, templates) = (plan.loaded, plan.workflow, plan.templates);
    let reader = readers.for_workflow(wf.as_deref());
    let instructions = wf.clone();
    let bytes = read_verified(input).await?;
    let media = input.media_type;
    let path = input.blob_path.clone();
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let flag = Arc::clone(&cancel.0);
    let reading = tokio::task::spawn_blocking(move || {
        let templates = templates.as_deref().map_or(&[][..], Vec::as_slice);
        // Blobs are content-addressed and never rewritten: the verified bytes are what
        // poppler reads at `path`.
        let document = Document {
            bytes: &bytes,
            media,
            path: Some(&path),
        };
        read_document(&reader, document, wf.as_deref(), templates, Some(&flag))
    })
    .await
    .map_err(|e| ProcessorError::Terminal(format!("page reading crashed: {e}")))?
    .map_err(|e| match e {
        ReadError::Terminal(m) => ProcessorError::Terminal(m),
        ReadError::Retryable(m) => ProcessorError::Retryable(m),
    })?;
    drop(cancel);
    Ok(SourceReading {
        workflow,
        name,
        instructions,
        reading,
    })
}

/// Sets its flag when dropped: the processing future was dropped, finished or not.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_languages_map_to_tesseract_models() {
        let codes = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            tesseract_languages(&codes(&["en", "fr"])),
            Some("eng+fra".into())
        );
        assert_eq!(tesseract_languages(&codes(&["EN"])), Some("eng".into()));
        assert_eq!(tesseract_languages(&codes(&["xx"])), None);
        assert_eq!(tesseract_languages(&[]), None);
    }
}

/// Page previews rendered with the reader's own decoders (see [`ironclad_ocr::render_preview`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct OcrPreviews;

impl ironclad_documents::preview::PagePreviewer for OcrPreviews {
    fn preview(
        &self,
        path: &std::path::Path,
        media: ironclad_core::media::MediaType,
        index: u32,
        rotation: u16,
        max_side: u32,
    ) -> Result<Vec<u8>, ironclad_documents::preview::PreviewError> {
        use ironclad_documents::preview::PreviewError;
        let limits = ironclad_ocr::PreviewLimits {
            max_side,
            ..ironclad_ocr::PreviewLimits::default()
        };
        ironclad_ocr::render_preview(path, media, index, rotation, limits).map_err(|e| {
            if e.is_retryable() {
                PreviewError::Unavailable(e.to_string())
            } else {
                PreviewError::Unrenderable(e.to_string())
            }
        })
    }
}

/// Regions of stored pages read again with the second look's crop reader, for a reviewer's
/// box (see [`ironclad_ocr::PageReader::read_crops`]): the page decoded and prepared as its
/// reading prepared it, the region cut out, scaled to the crop reader's text height and read
/// as one line, or as a block when it is taller than two lines. One region at a time per
/// process (the reader has one engine): a box is read in well under a second.
pub struct OcrRegions {
    reader: PageReader,
}

impl std::fmt::Debug for OcrRegions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OcrRegions").finish_non_exhaustive()
    }
}

impl OcrRegions {
    /// A region reader with `options` (its languages and limits; one thread).
    pub fn new(options: ReadOptions) -> Self {
        Self {
            reader: PageReader::new(
                ReadOptions {
                    threads: 1,
                    ..options
                },
                None,
            ),
        }
    }
}

impl ironclad_documents::regions::RegionReader for OcrRegions {
    fn read_region(
        &self,
        path: &std::path::Path,
        media: ironclad_core::media::MediaType,
        region: &ironclad_documents::regions::Region,
    ) -> Result<Vec<ironclad_core::page::Word>, ironclad_documents::regions::RegionError> {
        use ironclad_documents::regions::RegionError;
        use ironclad_ocr::{Crop, CropMode, PageCrops};
        let bytes = std::fs::read(path).map_err(|e| {
            RegionError::Unavailable(format!("could not read {}: {e}", path.display()))
        })?;
        let page = PageText {
            index: region.page,
            method: ironclad_core::page::ReadMethod::Ocr,
            confidence: 0.0,
            rotation: region.rotation,
            size_pt: None,
            words: Vec::new(),
            line_blocks: Vec::new(),
        };
        let tall = region.bbox.y1 - region.bbox.y0 > 2.2 * region.line_height;
        let crops = vec![Crop {
            bbox: region.bbox,
            mode: if tall {
                CropMode::Block
            } else {
                CropMode::Line
            },
            line_height: region.line_height,
        }];
        let read = self
            .reader
            .read_crops(
                &bytes,
                media,
                Some(path),
                region.page_count as usize,
                &[PageCrops { page: &page, crops }],
                None,
            )
            .map_err(|e| match e {
                ReadError::Terminal(m) => RegionError::Unreadable(m),
                ReadError::Retryable(m) => RegionError::Unavailable(m),
            })?;
        Ok(read
            .into_iter()
            .next()
            .and_then(|page| page.into_iter().next())
            .unwrap_or_default())
    }
}
