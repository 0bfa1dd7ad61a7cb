//! An optional document processor that asks an OpenAI-compatible model for field values —
//! and believes only those printed in the document.
//!
//! [`OpenAiProvider`] implements the same [`DocumentProcessor`] trait as the built-in
//! reading step, and does what it does first: reads every page with an
//! [`ironclad_ocr::PageReader`] (text layer, else Tesseract), then classifies, segments and
//! extracts with [`ironclad_extract::analyze`]. Then, for each segment of a known type, it
//! sends the segment's page text and the type's field list to `POST
//! {base_url}/chat/completions` and asks for `{"fields": {"<name>": "<value as printed>"}}`.
//! Each returned value goes through [`verify`]: it is kept only if it occurs in the
//! segment's text (accent-, case- and whitespace-insensitively, on word boundaries), and
//! then it is the *page's* text at that place that the field's parser reads and whose words
//! give the box. A value not in the text is rejected and reported in the job summary with
//! its reason; it never becomes a fact. Kept values join the built-in candidates, marked
//! [`verify::PROVIDER_PATTERN`], and the choice and conflict flags are recomputed.
//!
//! # Design choice
//!
//! The model is a *proposer*, never a source. It sees text that Ironclad read itself (never
//! the file), it does not classify (the workflow does, so packets split the same way under
//! both processors), and it cannot add a value that a reviewer could not point at on the
//! page. That keeps the evidence rule of the built-in extraction — every fact has a page, a
//! box and raw text — and makes a hallucination, or a prompt injection hidden in a
//! document, cost at most a rejected value in the summary. Errors are typed the same way
//! the worker's retry policy branches: [`ProviderError::Retryable`] (timeout, connection,
//! 429, 408, 5xx) or [`ProviderError::Terminal`] (quota exhausted, other 4xx, an answer that
//! breaks the JSON contract), and map onto [`ProcessorError`].
//!
//! # Cost
//!
//! * One request per typed segment, sent one after another: a source takes up to
//!   `segments × timeout`, and a retried job asks again for every segment (delivery is
//!   at-least-once; nothing is cached).
//! * Tokens: each request carries the segment's text, up to
//!   [`ProviderConfig::max_page_chars`] per page. Token counts the server reports are summed
//!   into the job summary (`usage`).
//! * The model can only find values that reading found as text: it does not fix OCR, and a
//!   value it normalises (`1234.56` for `1,234.56`) is rejected, by design. Values are
//!   matched in the whole page, ignoring a field's `region`.
//! * No TLS: the workspace builds `reqwest` without a TLS backend, so only `http` base URLs
//!   are accepted (a local or in-cluster server, or a TLS-terminating proxy on localhost).
//!   An `https` URL is refused at start-up with [`ConfigError::TlsUnavailable`].
//!
//! # Construction
//!
//! ```no_run
//! # fn demo(readers: ironclad_reading::ReaderPool, workflows: ironclad_provider::Workflows)
//! # -> Result<(), ironclad_provider::ConfigError> {
//! use ironclad_provider::{OpenAiProvider, ProviderConfig};
//! let mut config = ProviderConfig::new("http://127.0.0.1:11434/v1", "llama3.1");
//! config.api_key = Some("sk-…".into());
//! config.timeout = std::time::Duration::from_secs(30);
//! let provider = OpenAiProvider::new(config, readers, workflows)?;
//! # Ok(()) }
//! ```
//!
//! The `fake` feature adds `fake::FakeOpenAi`, a local server that misbehaves on command,
//! so the provider can be tested, and demonstrated, with no network.
//!
//! [`DocumentProcessor`]: ironclad_documents::processor::DocumentProcessor
//! [`ProcessorError`]: ironclad_documents::processor::ProcessorError
#![deny(missing_docs)]

pub mod client;
mod config;
mod error;
#[cfg(feature = "fake")]
pub mod fake;
mod processor;
pub mod verify;

pub use client::{FieldReply, FieldRequest, OpenAiClient, Usage, MAX_RESPONSE_BYTES};
pub use config::{ConfigError, ProviderConfig};
pub use error::{ProviderError, Retryable, Terminal};
pub use processor::{OpenAiProvider, WorkflowEntry, Workflows};
