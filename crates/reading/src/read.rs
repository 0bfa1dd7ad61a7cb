//! The one reading path: a document's pages read (text layer or OCR), classified, segmented and
//! extracted under the workflow and template set, then a second look at every doubtful value.
//!
//! Every reader of documents goes through [`read_document`]: the built-in processor, the HTTP
//! provider (which then asks its model), `ironclad extract` and the accuracy tests. What is
//! added to reading here holds for all of them.

use ironclad_core::analysis::Analysis;
use ironclad_core::media::MediaType;
use ironclad_core::page::PageText;
use ironclad_extract::invoice2data::Template;
use ironclad_extract::second_look::{self, LookMode};
use ironclad_extract::Workflow;
use ironclad_ocr::{Crop, CropMode, PageCrops, PageReader, ReadError};
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A document to read.
#[derive(Debug, Clone, Copy)]
pub struct Document<'a> {
    /// Its bytes.
    pub bytes: &'a [u8],
    /// Its type, sniffed from the bytes.
    pub media: MediaType,
    /// Where poppler may read the same bytes (a verified blob); `None` writes a temporary copy.
    pub path: Option<&'a Path>,
}

/// What reading one document gave.
#[derive(Debug, Clone)]
pub struct Reading {
    /// Every page as read.
    pub pages: Vec<PageText>,
    /// The analysis under the workflow and templates; `None` when neither applies.
    pub analysis: Option<Analysis>,
    /// What the second look did.
    pub second_look: SecondLookSummary,
}

/// What the second look at doubtful values did for one document. Its budget is at most
/// [`second_look::MAX_LOOKS_PER_PAGE`] regions per page, each read alone, plus decoding the page again,
/// within the reader's page timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SecondLookSummary {
    /// Pages looked at again (0 when every value was clean).
    pub pages: usize,
    /// Regions read.
    pub regions: usize,
    /// Readings added as candidates.
    pub candidates: usize,
    /// Facts whose chosen value or conflict changed.
    pub facts_changed: usize,
    /// Time it took, decoding the pages again included.
    pub ms: u64,
}

impl SecondLookSummary {
    /// Adds another document's figures.
    pub fn add(&mut self, other: &SecondLookSummary) {
        self.pages += other.pages;
        self.regions += other.regions;
        self.candidates += other.candidates;
        self.facts_changed += other.facts_changed;
        self.ms += other.ms;
    }
}

/// Reads `document` with `reader`, analyses it under `workflow` and `templates`, then reads
/// again, one by one, the regions where a doubtful value should be and chooses again. Blocks
/// (run it on a blocking thread); gives up once `cancel` is set.
///
/// A second look that fails (a page past its timeout) leaves the first reading as it is: it
/// can only add evidence, never lose a reading.
pub fn read_document(
    reader: &PageReader,
    document: Document<'_>,
    workflow: Option<&Workflow>,
    templates: &[Template],
    cancel: Option<&AtomicBool>,
) -> Result<Reading, ReadError> {
    let pages = reader.read_with(document.bytes, document.media, document.path, cancel)?;
    let mut analysis = ironclad_extract::analyze_source(workflow, templates, &pages);
    let mut summary = SecondLookSummary::default();
    let wanted = reader.options().second_look;
    if let (Some(w), Some(a), true) = (workflow, analysis.as_mut(), wanted) {
        let started = Instant::now();
        let looks = second_look::plan(w, a, &pages);
        if !looks.is_empty() {
            match read_looks(reader, document, &pages, &looks, cancel) {
                Ok(readings) => {
                    for (look, words) in looks.iter().zip(&readings) {
                        let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
                        tracing::debug!(field = %look.field, doubt = ?look.doubt, mode = ?look.mode, after_label = look.after_label,
                            page = look.page + 1, region = ?look.region, read = %text.join(" "),
                            "second look region");
                    }
                    let applied = second_look::apply(w, a, &looks, &readings);
                    summary = SecondLookSummary {
                        pages: distinct_pages(&looks),
                        regions: looks.len(),
                        candidates: applied.candidates,
                        facts_changed: applied.facts_changed,
                        ms: started.elapsed().as_millis() as u64,
                    };
                    tracing::debug!(?summary, "second look");
                }
                Err(e) if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) => return Err(e),
                Err(e) => {
                    tracing::warn!(error = %e, regions = looks.len(),
                        "second look failed; the first reading stands");
                }
            }
        }
    }
    Ok(Reading {
        pages,
        analysis,
        second_look: summary,
    })
}

/// Reads the looks' regions, page by page; one list of words per look, in order.
fn read_looks(
    reader: &PageReader,
    document: Document<'_>,
    pages: &[PageText],
    looks: &[second_look::Look],
    cancel: Option<&AtomicBool>,
) -> Result<Vec<Vec<ironclad_core::page::Word>>, ReadError> {
    // Looks grouped by page, remembering each one's place.
    let mut by_page: Vec<(u32, Vec<usize>)> = Vec::new();
    for (i, look) in looks.iter().enumerate() {
        match by_page.iter_mut().find(|(p, _)| *p == look.page) {
            Some((_, list)) => list.push(i),
            None => by_page.push((look.page, vec![i])),
        }
    }
    let mut lists: Vec<&Vec<usize>> = Vec::with_capacity(by_page.len());
    let mut requests: Vec<PageCrops<'_>> = Vec::with_capacity(by_page.len());
    for (page, list) in &by_page {
        let Some(page) = pages.iter().find(|p| p.index == *page) else {
            continue;
        };
        lists.push(list);
        requests.push(PageCrops {
            page,
            crops: list
                .iter()
                .map(|&i| Crop {
                    bbox: looks[i].region,
                    mode: match looks[i].mode {
                        LookMode::Line => CropMode::Line,
                        LookMode::Block => CropMode::Block,
                    },
                    line_height: looks[i].line_height,
                })
                .collect(),
        });
    }
    let read = reader.read_crops(
        document.bytes,
        document.media,
        document.path,
        pages.len(),
        &requests,
        cancel,
    )?;
    let mut out = vec![Vec::new(); looks.len()];
    for (list, words) in lists.into_iter().zip(read) {
        for (&i, w) in list.iter().zip(words) {
            out[i] = w;
        }
    }
    Ok(out)
}

fn distinct_pages(looks: &[second_look::Look]) -> usize {
    let mut pages: Vec<u32> = looks.iter().map(|l| l.page).collect();
    pages.sort_unstable();
    pages.dedup();
    pages.len()
}
