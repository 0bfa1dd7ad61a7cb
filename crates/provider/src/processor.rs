//! The document step with the provider in it: read, classify and extract as the built-in
//! step does, then ask the model for each typed segment's fields and keep what the text
//! confirms.

use crate::client::{FieldRequest, OpenAiClient, Usage};
use crate::config::{ConfigError, ProviderConfig};
use crate::verify::{merge, verify, Verification};
use ironclad_core::page::PageText;
use ironclad_documents::processor::{
    DocumentProcessor, ProcessFuture, ProcessedSource, ProcessorError, SourceInput,
};
use ironclad_extract::Analysis;
use ironclad_reading::{
    ocr_pages, read_source, ReaderPool, Reading, SecondLookSummary, SourceReading,
};
use serde_json::json;

pub use ironclad_documents::workflows::{
    LoadedWorkflow as WorkflowEntry, WorkflowSet as Workflows,
};

/// A [`DocumentProcessor`] that asks an OpenAI-compatible model for field values and keeps
/// only those printed in the page text. See the crate documentation.
#[derive(Debug)]
pub struct OpenAiProvider {
    client: OpenAiClient,
    readers: ReaderPool,
    workflows: Workflows,
}

impl OpenAiProvider {
    /// A provider reading pages with `readers` (one per workflow's languages, sharing one
    /// page budget), applying `workflows`, and calling the endpoint of `config`.
    pub fn new(
        config: ProviderConfig,
        readers: ReaderPool,
        workflows: Workflows,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            client: OpenAiClient::new(config)?,
            readers,
            workflows,
        })
    }

    /// The HTTP client, for a start-up log line or a direct call.
    pub fn client(&self) -> &OpenAiClient {
        &self.client
    }

    async fn run(&self, input: SourceInput) -> Result<ProcessedSource, ProcessorError> {
        // Pages, analysis and second look exactly as the built-in reader's: the model is then
        // asked about what the workflow and the case's templates left.
        let SourceReading {
            workflow,
            name,
            instructions: wf,
            reading,
        } = read_source(&self.readers, &self.workflows, &input).await?;
        let Reading {
            pages,
            analysis,
            second_look,
        } = reading;
        let mut analysis = analysis;
        let mut calls = Calls::default();
        if let (Some(a), Some(w)) = (analysis.as_mut(), wf.as_deref()) {
            for (ordinal, seg) in a.segments.iter_mut().enumerate() {
                let Some(doc_type) = seg.segment.doc_type.clone() else {
                    calls
                        .segments
                        .push(json!({"doc_type": null, "pages": seg.segment.pages}));
                    continue;
                };
                let seg_pages: Vec<&PageText> = pages
                    .iter()
                    .filter(|p| seg.segment.pages.contains(&p.index))
                    .collect();
                let Some(request) = FieldRequest::new(
                    w,
                    &doc_type,
                    &seg_pages,
                    self.client.config().max_page_chars,
                ) else {
                    calls
                        .segments
                        .push(json!({"doc_type": doc_type, "pages": seg.segment.pages}));
                    continue;
                };
                calls.requests += 1;
                let reply = self.client.ask(&request).await.map_err(|e| {
                    tracing::warn!(source_id = %input.source_id, segment = ordinal,
                        %doc_type, retryable = e.is_retryable(), error = %e,
                        "provider request failed");
                    ProcessorError::from(e)
                })?;
                if let Some(u) = reply.usage {
                    calls.usage.prompt_tokens += u.prompt_tokens;
                    calls.usage.completion_tokens += u.completion_tokens;
                    calls.usage.total_tokens += u.total_tokens;
                }
                let checked = verify(w, &doc_type, &seg_pages, &seg.facts, &reply.fields);
                merge(&mut seg.facts, &checked.accepted);
                for r in &checked.rejected {
                    // Field and reason only: values are document content.
                    tracing::warn!(source_id = %input.source_id, segment = ordinal,
                        %doc_type, field = %r.field, reason = %r.reason,
                        "provider value rejected");
                }
                tracing::info!(source_id = %input.source_id, segment = ordinal, %doc_type,
                    accepted = checked.accepted.len(), rejected = checked.rejected.len(),
                    "provider values verified");
                let truncated: Vec<u32> = request
                    .pages
                    .iter()
                    .filter(|p| p.truncated)
                    .map(|p| p.index)
                    .collect();
                calls.segments.push(json!({
                    "doc_type": doc_type,
                    "pages": seg.segment.pages,
                    "provider": segment_summary(&checked, &truncated),
                }));
            }
        }
        Ok(self.finish(name, workflow, pages, analysis, calls, second_look))
    }

    fn finish(
        &self,
        name: Option<String>,
        workflow: Option<WorkflowEntry>,
        pages: Vec<PageText>,
        analysis: Option<Analysis>,
        calls: Calls,
        second_look: SecondLookSummary,
    ) -> ProcessedSource {
        let ocr_pages = ocr_pages(&pages);
        let summary = json!({
            "processor": self.name(),
            "model": self.client.config().model,
            "pages": pages.len(),
            "ocr_pages": ocr_pages,
            "text_layer_pages": pages.len() - ocr_pages,
            "workflow": name,
            "second_look": second_look,
            "provider_requests": calls.requests,
            "usage": calls.usage,
            "segments": analysis.as_ref().map(|_| calls.segments),
        });
        ProcessedSource {
            pages: u32::try_from(pages.len()).unwrap_or(u32::MAX),
            summary,
            read: pages,
            analysis,
            workflow_id: workflow.map(|w| w.id),
        }
    }
}

/// What one source cost and found, for the summary.
#[derive(Default)]
struct Calls {
    /// One summary per segment, in order.
    segments: Vec<serde_json::Value>,
    /// Requests sent.
    requests: u32,
    /// Tokens, summed over the requests.
    usage: Usage,
}

/// What the summary keeps of one segment's verification: where each accepted value is,
/// each rejection with its reason, and the fields the model did not find.
fn segment_summary(v: &Verification, truncated_pages: &[u32]) -> serde_json::Value {
    json!({
        "accepted": v.accepted.iter().map(|a| json!({
            "field": a.field,
            "raw": a.candidate.raw,
            "page": a.candidate.page,
            "agrees_with_patterns": a.agrees_with_patterns,
        })).collect::<Vec<_>>(),
        "rejected": v.rejected.iter().map(|r| json!({
            "field": r.field,
            "value": r.value,
            "code": r.reason.code(),
            "reason": r.reason.to_string(),
        })).collect::<Vec<_>>(),
        "rejected_omitted": v.rejected_omitted,
        "absent": v.absent,
        "truncated_pages": truncated_pages,
    })
}

impl DocumentProcessor for OpenAiProvider {
    fn process(&self, input: SourceInput) -> ProcessFuture<'_> {
        Box::pin(self.run(input))
    }

    fn name(&self) -> &'static str {
        "openai"
    }
}
