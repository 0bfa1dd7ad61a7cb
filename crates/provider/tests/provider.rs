//! The provider end to end: real documents read by the real `PageReader` (poppler's text
//! layer, Tesseract for the scan), the shipped trade workflow, and a fake OpenAI-compatible
//! server told how to misbehave.

use ironclad_core::media::MediaType;
use ironclad_core::parse::Value;
use ironclad_core::{CaseId, SourceId};
use ironclad_documents::processor::{
    DocumentProcessor, ProcessedSource, ProcessorError, SourceInput,
};
use ironclad_documents::workflows::{CompiledTemplates, CompiledWorkflow};
use ironclad_extract::{Fact, Workflow};
use ironclad_inspect::fixtures::pdf_with_pages;
use ironclad_ocr::ReadOptions;
use ironclad_provider::fake::{FakeOpenAi, Reply};
use ironclad_provider::verify::PROVIDER_PATTERN;
use ironclad_provider::{
    FieldRequest, OpenAiProvider, ProviderConfig, ProviderError, Retryable, WorkflowEntry,
    Workflows,
};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

// Tesseract is 5–6× slower unless OMP_THREAD_LIMIT=1 is set before libgomp loads; as in
// ironclad-ocr's tests, an ELF constructor re-executes the test binary with it set.
#[used]
#[link_section = ".init_array"]
static REEXEC_WITH_OMP_THREAD_LIMIT: extern "C" fn() = {
    extern "C" fn reexec() {
        ironclad_ocr::ensure_omp_thread_limit();
    }
    reexec
};

const TRADE: &str = include_str!("../../../workflows/trade.yaml");

/// Sample documents (`samples/dossiers/README.md` lists what they say).
fn sample(path: &str) -> Vec<u8> {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/dossiers")
        .join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The fixture PDF writes its text on one line (then "Page 1 of 1"), cut at the page edge,
/// so it is short. The title at the end of the line classifies it; the built-in patterns
/// find the total (`TOTAL USD …`) but not the invoice number (no `Invoice No.:` label),
/// which only the provider can supply.
const INVOICE: &str = "Ref INV-42 TOTAL USD 1,234.56 COMMERCIAL INVOICE";

const WORKFLOW_ID: Uuid = Uuid::from_u128(0x7);

/// Readers as the binary makes them (one per workflow's languages), one OCR thread.
fn reader() -> ironclad_reading::ReaderPool {
    ironclad_reading::ReaderPool::new(
        ReadOptions {
            threads: 1,
            ..ReadOptions::default()
        },
        None,
    )
}

fn workflows(default: bool) -> Workflows {
    let workflow = Workflow::from_yaml(TRADE).unwrap_or_else(|e| panic!("trade.yaml: {e}"));
    let mut w = Workflows::default();
    w.by_name.insert(
        "trade".into(),
        WorkflowEntry {
            id: WORKFLOW_ID,
            workflow: Arc::new(CompiledWorkflow::new(
                workflow.spec().name.clone(),
                workflow.schema(),
                workflow.ruleset().clone(),
                workflow,
            )),
        },
    );
    w.default = default.then(|| "trade".into());
    w
}

fn provider_at(base_url: &str, timeout: Duration) -> OpenAiProvider {
    let mut config = ProviderConfig::new(base_url, "fake-model");
    config.api_key = Some("test-key".into());
    config.timeout = timeout;
    OpenAiProvider::new(config, reader(), workflows(true)).unwrap_or_else(|e| panic!("{e}"))
}

/// A source for a PDF, written under `dir`.
fn source(dir: &tempfile::TempDir, pdf: &[u8]) -> SourceInput {
    source_of(dir, pdf, MediaType::Pdf)
}

fn source_of(dir: &tempfile::TempDir, bytes: &[u8], media_type: MediaType) -> SourceInput {
    let path = dir.path().join(format!("{}.blob", SourceId::new()));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write blob: {e}"));
    SourceInput {
        source_id: SourceId::new(),
        case_id: CaseId::new(),
        media_type,
        sha256: hex::encode(Sha256::digest(bytes)),
        pages: 1,
        blob_path: path,
        workflow: None,
        pinned_workflow: None,
        templates: None,
    }
}

fn invoice_source(dir: &tempfile::TempDir) -> SourceInput {
    source(dir, &pdf_with_pages(1, INVOICE))
}

fn fact<'a>(done: &'a ProcessedSource, field: &str) -> &'a Fact {
    let analysis = done
        .analysis
        .as_ref()
        .unwrap_or_else(|| panic!("no analysis"));
    let segment = &analysis.segments[0];
    assert_eq!(
        segment.segment.doc_type.as_deref(),
        Some("commercial_invoice")
    );
    segment
        .facts
        .iter()
        .find(|f| f.field == field)
        .unwrap_or_else(|| panic!("no fact {field}"))
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

#[test]
fn the_built_in_reading_alone_misses_what_the_provider_must_supply() {
    // The baseline the other tests build on: the workflow classifies the page but its
    // patterns find only the total.
    let dir = tempdir();
    let pages = reader()
        .for_workflow(None)
        .read_file(&invoice_source(&dir).blob_path, MediaType::Pdf)
        .unwrap_or_else(|e| panic!("{e}"));
    let wf = Workflow::from_yaml(TRADE).unwrap_or_else(|e| panic!("{e}"));
    let a = ironclad_extract::analyze(&wf, &pages);
    let facts = &a.segments[0].facts;
    let chosen = |name: &str| {
        facts
            .iter()
            .find(|f| f.field == name)
            .and_then(|f| f.chosen.as_ref())
            .map(|c| c.raw.clone())
    };
    assert_eq!(
        a.segments[0].segment.doc_type.as_deref(),
        Some("commercial_invoice")
    );
    assert_eq!(chosen("invoice_total").as_deref(), Some("USD 1,234.56"));
    assert_eq!(chosen("invoice_number"), None);
    assert_eq!(chosen("gross_weight"), None);
}

#[tokio::test]
async fn verified_values_are_stored_with_their_evidence() {
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    fake.push(Reply::fields(&[
        // Case differs from the page: stored as printed.
        ("invoice_number", "inv-42"),
        // Same value as the pattern found, spaced differently: agrees, nothing added.
        ("invoice_total", "USD  1,234.56"),
        ("container_number", ""),
    ]));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let dir = tempdir();
    let done = provider
        .process(invoice_source(&dir))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.pages, 1);
    assert_eq!(done.read.len(), 1);
    assert_eq!(done.workflow_id, Some(WORKFLOW_ID));

    let number = fact(&done, "invoice_number");
    let chosen = number
        .chosen
        .as_ref()
        .unwrap_or_else(|| panic!("no number"));
    assert_eq!(chosen.raw, "INV-42");
    assert_eq!(chosen.value, Value::Text("INV-42".into()));
    assert_eq!(chosen.pattern, PROVIDER_PATTERN);
    assert_eq!(chosen.page, 0);
    assert!((chosen.confidence - 0.9).abs() < 1e-9, "{chosen:?}");
    assert!(
        chosen.bbox.x0 > 0.0
            && chosen.bbox.x1 > chosen.bbox.x0
            && chosen.bbox.x1 - chosen.bbox.x0 < 0.2,
        "the box covers the value's word, not the line: {:?}",
        chosen.bbox
    );
    assert!(!number.missing_required && !number.conflict);

    let total = fact(&done, "invoice_total");
    assert_eq!(total.candidates.len(), 1);
    assert_ne!(total.candidates[0].pattern, PROVIDER_PATTERN);
    assert!(fact(&done, "container_number").candidates.is_empty());

    let summary = &done.summary;
    assert_eq!(summary["processor"], "openai");
    assert_eq!(summary["model"], "fake-model");
    assert_eq!(summary["provider_requests"], 1);
    assert_eq!(summary["usage"]["total_tokens"], 120);
    let provider = &summary["segments"][0]["provider"];
    assert_eq!(
        provider["accepted"],
        json!([
            {"field": "invoice_number", "raw": "INV-42", "page": 0, "agrees_with_patterns": false},
            {"field": "invoice_total", "raw": "USD 1,234.56", "page": 0, "agrees_with_patterns": true},
        ])
    );
    assert_eq!(provider["rejected"], json!([]));
    assert!(provider["absent"]
        .as_array()
        .is_some_and(|a| a.contains(&json!("container_number"))));

    // What was sent: the key, the model, JSON mode, and the page text with the fields.
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].authorization.as_deref(), Some("Bearer test-key"));
    assert_eq!(sent[0].body["model"], "fake-model");
    assert_eq!(
        sent[0].body["response_format"],
        json!({"type": "json_object"})
    );
    let prompt = sent[0].prompt();
    for needle in [
        "Commercial invoice",
        "invoice_number",
        "gross_weight",
        "INV-42",
        "Page 1 of 1",
    ] {
        assert!(
            prompt.contains(needle),
            "{needle:?} not in prompt:\n{prompt}"
        );
    }
}

#[tokio::test]
async fn values_not_printed_in_the_document_are_rejected() {
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    fake.push(Reply::fields(&[
        ("invoice_number", "INV-99"),      // invented
        ("invoice_total", "USD 9,999.99"), // invented, against a pattern's value
        ("gross_weight", "1234.56 kg"),    // computed from what is printed
        ("package_count", "INV-4"),        // part of a word
        ("bank_account", "INV-42"),        // not a field of the type
        ("invoice_date", "1,234.56"),      // printed, but not a date
    ]));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let dir = tempdir();
    let done = provider
        .process(invoice_source(&dir))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let number = fact(&done, "invoice_number");
    assert!(number.candidates.is_empty() && number.missing_required);
    let total = fact(&done, "invoice_total");
    assert_eq!(total.candidates.len(), 1);
    assert_eq!(
        total.chosen.as_ref().map(|c| c.raw.as_str()),
        Some("USD 1,234.56")
    );
    assert!(!total.conflict);
    for f in ["gross_weight", "package_count", "invoice_date"] {
        assert!(fact(&done, f).candidates.is_empty(), "{f}");
    }

    let provider = &done.summary["segments"][0]["provider"];
    assert_eq!(
        codes(&provider["rejected"]),
        // In the workflow's field order, then the key that is no field.
        [
            ("invoice_number", "not_in_text"),
            ("invoice_date", "unparseable"),
            ("invoice_total", "not_in_text"),
            ("package_count", "not_in_text"),
            ("gross_weight", "not_in_text"),
            ("bank_account", "unknown_field"),
        ]
    );
    assert_eq!(provider["rejected"][0]["value"], "INV-99");
    assert_eq!(
        provider["rejected"][0]["reason"],
        "the value is not printed in the document's text"
    );
    assert_eq!(provider["accepted"], json!([]));
}

/// `(field, code)` of each rejection in a segment summary.
fn codes(rejected: &serde_json::Value) -> Vec<(&str, &str)> {
    rejected
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    (
                        r["field"].as_str().unwrap_or(""),
                        r["code"].as_str().unwrap_or(""),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_real_two_page_invoice_keeps_what_is_printed_and_refuses_near_misses() {
    let pdf = sample("01-text-pdfs/commercial-invoice.pdf");
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    // A model copying faithfully.
    fake.push(Reply::fields(&[
        ("invoice_number", "NHT-24-0317"),
        ("invoice_date", "12 March 2024"),
        ("invoice_total", "USD 160,727.20"),
        ("bl_number", "MEDUNB447182"),
        ("container_number", "MSCU1234566"),
        ("package_count", "842"),
        ("gross_weight", "12,431.30 kg"),
    ]));
    // The mistakes models make: normalising, rounding, transposing, "fixing".
    fake.push(Reply::fields(&[
        ("invoice_number", "NHT-24-0317"),
        ("invoice_date", "2024-03-12"),
        ("invoice_total", "USD 160,727.00"),
        ("bl_number", "MEDUNB447128"),
        ("container_number", "MSCU1234565"),
        ("package_count", "842"),
        ("gross_weight", "12431.3 kg"),
    ]));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let dir = tempdir();
    let input = source(&dir, &pdf);

    let faithful = provider
        .process(input.clone())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let seg = &faithful.summary["segments"][0];
    assert_eq!(seg["pages"], json!([0, 1]));
    assert_eq!(
        seg["provider"]["accepted"].as_array().map(Vec::len),
        Some(7)
    );
    assert!(seg["provider"]["accepted"]
        .as_array()
        .is_some_and(|a| a.iter().all(|v| v["agrees_with_patterns"] == true)));
    assert_eq!(seg["provider"]["rejected"], json!([]));
    // Both pages went to the model, in one request.
    let prompt = fake.requests()[0].prompt();
    assert!(prompt.contains("=== page 2 ===") && prompt.contains("TOTAL USD 160,727.20"));

    let sloppy = provider
        .process(input)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        codes(&sloppy.summary["segments"][0]["provider"]["rejected"]),
        [
            ("invoice_date", "not_in_text"),
            ("invoice_total", "not_in_text"),
            ("bl_number", "not_in_text"),
            ("container_number", "not_in_text"),
            ("gross_weight", "not_in_text"),
        ]
    );
    // The facts are exactly those of the faithful run: nothing wrong got in.
    assert_eq!(sloppy.analysis, faithful.analysis);
    assert_eq!(
        fact(&sloppy, "invoice_total")
            .chosen
            .as_ref()
            .map(|c| c.raw.as_str()),
        Some("USD 160,727.20")
    );
}

#[tokio::test]
async fn a_scan_is_verified_against_its_ocr_text() {
    let png = sample("02-scans/commercial-invoice.png");
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    fake.push(Reply::fields(&[
        ("invoice_number", "DPI-2404-118"),
        ("invoice_total", "EUR 209,896.00"),
        ("bl_number", "HLCUBSN2403181"),
    ]));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let dir = tempdir();
    let done = provider
        .process(source_of(&dir, &png, MediaType::Png))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.summary["ocr_pages"], 1);
    let provider_summary = &done.summary["segments"][0]["provider"];
    let accepted: Vec<&str> = provider_summary["accepted"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v["raw"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(accepted, ["DPI-2404-118", "EUR 209,896.00"]);
    assert_eq!(
        codes(&provider_summary["rejected"]),
        [("bl_number", "not_in_text")]
    );
    assert_eq!(
        fact(&done, "bl_number")
            .chosen
            .as_ref()
            .map(|c| c.raw.as_str()),
        Some("HLCUBSN2403118")
    );
}

/// What `process` returned, reduced to the class and whether the message holds `needle`.
fn class_of(result: &Result<ProcessedSource, ProcessorError>) -> (&'static str, String) {
    match result {
        Ok(_) => ("ok", String::new()),
        Err(ProcessorError::Retryable(m)) => ("retryable", m.clone()),
        Err(ProcessorError::Terminal(m)) => ("terminal", m.clone()),
    }
}

#[tokio::test]
async fn every_failure_is_typed_retryable_or_terminal() {
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let dir = tempdir();
    let input = invoice_source(&dir);
    let cases: Vec<(Reply, &str, &str)> = vec![
        (Reply::Status(503), "retryable", "HTTP 503"),
        (Reply::Status(500), "retryable", "HTTP 500"),
        (Reply::Status(502), "retryable", "HTTP 502"),
        (Reply::Status(408), "retryable", "HTTP 408"),
        (
            Reply::RateLimited {
                retry_after: Some(3),
            },
            "retryable",
            "retry after 3s",
        ),
        (
            Reply::RateLimited { retry_after: None },
            "retryable",
            "rate limiting",
        ),
        (Reply::QuotaExhausted, "terminal", "quota is exhausted"),
        (Reply::Status(400), "terminal", "HTTP 400"),
        (Reply::Status(401), "terminal", "check the API key"),
        (Reply::Status(403), "terminal", "HTTP 403"),
        (Reply::Status(404), "terminal", "check the base URL"),
        (Reply::Status(422), "terminal", "HTTP 422"),
        (Reply::Garbage, "terminal", "not JSON"),
        (
            Reply::truncated(&[("invoice_number", "INV-42")]),
            "terminal",
            "not JSON",
        ),
        (
            Reply::content(r#"{"invoice_number": "INV-42"}"#),
            "terminal",
            "no \"fields\"",
        ),
        (
            Reply::content(r#"{"fields": {"invoice_number": "IN"#),
            "terminal",
            "content is not JSON",
        ),
        (
            Reply::Content {
                content: r#"{"fields": {"invoice_nu"#.into(),
                finish_reason: "length".into(),
            },
            "terminal",
            "cut off",
        ),
        (
            Reply::content("Sure! The invoice number is INV-42."),
            "terminal",
            "not JSON",
        ),
        (Reply::Huge(2 << 20), "terminal", "exceeds 1048576 bytes"),
        (
            Reply::Raw {
                status: 302,
                content_type: "text/html".into(),
                body: String::new(),
            },
            "terminal",
            "HTTP 302",
        ),
    ];
    for (reply, class, needle) in cases {
        let shown = format!("{reply:?}");
        fake.push(reply);
        let result = provider.process(input.clone()).await;
        let (got, message) = class_of(&result);
        assert_eq!(got, class, "{shown}: {message}");
        assert!(
            message.contains(needle),
            "{shown}: {message:?} lacks {needle:?}"
        );
        assert!(message.starts_with("openai provider: "), "{message}");
        assert!(!message.contains("test-key"), "{message}");
    }
    assert_eq!(fake.pending(), 0);
}

#[tokio::test]
async fn a_slow_provider_times_out_on_time() {
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    let slow = || {
        Reply::sleep(
            Duration::from_secs(30),
            Reply::fields(&[("invoice_number", "INV-42")]),
        )
    };
    fake.push(slow());
    fake.push(slow());
    let timeout = Duration::from_millis(700);
    let provider = provider_at(&fake.base_url(), timeout);
    let dir = tempdir();
    let input = invoice_source(&dir);

    // The request alone, timed precisely (no page reading in the measurement).
    let pages = reader()
        .for_workflow(None)
        .read_file(&input.blob_path, MediaType::Pdf)
        .unwrap_or_else(|e| panic!("{e}"));
    let wf = Workflow::from_yaml(TRADE).unwrap_or_else(|e| panic!("{e}"));
    let page_refs: Vec<_> = pages.iter().collect();
    let request = FieldRequest::new(&wf, "commercial_invoice", &page_refs, 1000)
        .unwrap_or_else(|| panic!("no request"));
    let started = Instant::now();
    let err = provider.client().ask(&request).await.err();
    let took = started.elapsed();
    assert!(
        matches!(err, Some(ProviderError::Retryable(Retryable::Timeout { after, .. })) if after == timeout),
        "{err:?}"
    );
    assert!(took >= timeout, "gave up early: {took:?}");
    assert!(took < timeout + Duration::from_secs(1), "took {took:?}");

    // Through the processor: a retryable failure, not a hang (the bound allows for
    // reading the page on a busy machine).
    let started = Instant::now();
    let (class, message) = class_of(&provider.process(input).await);
    assert_eq!(class, "retryable", "{message}");
    assert!(message.contains("did not answer within 700ms"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_unreachable_provider_is_retryable() {
    // A port that was just free: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        l.local_addr().unwrap_or_else(|e| panic!("{e}")).port()
    };
    let provider = provider_at(
        &format!("http://127.0.0.1:{port}/v1"),
        Duration::from_secs(5),
    );
    let dir = tempdir();
    let result = provider.process(invoice_source(&dir)).await;
    let (class, message) = class_of(&result);
    assert_eq!(class, "retryable", "{message}");
    assert!(message.contains("connection to the provider"), "{message}");
}

#[tokio::test]
async fn an_empty_queue_is_a_server_error_not_a_hang() {
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(5));
    let dir = tempdir();
    let (class, message) = class_of(&provider.process(invoice_source(&dir)).await);
    assert_eq!(class, "retryable");
    assert!(message.contains("no reply queued"), "{message}");
}

#[tokio::test]
async fn without_a_workflow_or_a_known_type_the_provider_is_not_called() {
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    let dir = tempdir();

    // No workflow: pages are read, nothing is asked.
    let mut config = ProviderConfig::new(fake.base_url(), "fake-model");
    config.timeout = Duration::from_secs(5);
    let bare = OpenAiProvider::new(config.clone(), reader(), workflows(false))
        .unwrap_or_else(|e| panic!("{e}"));
    let done = bare
        .process(invoice_source(&dir))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.read.len(), 1);
    assert!(done.analysis.is_none() && done.workflow_id.is_none());
    assert_eq!(done.summary["provider_requests"], 0);

    // A page of no known type: one UNKNOWN segment, nothing asked.
    let with_trade =
        OpenAiProvider::new(config, reader(), workflows(true)).unwrap_or_else(|e| panic!("{e}"));
    let lorem = source(
        &dir,
        &pdf_with_pages(1, "Lorem ipsum dolor sit amet, consectetur adipiscing"),
    );
    let done = with_trade
        .process(lorem)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.summary["provider_requests"], 0);
    assert_eq!(done.summary["segments"][0]["doc_type"], json!(null));
    assert!(fake.requests().is_empty());

    // An unknown workflow name is the case's mistake: terminal.
    let mut input = invoice_source(&dir);
    input.workflow = Some("nope".into());
    let (class, _) = class_of(&with_trade.process(input).await);
    assert_eq!(class, "terminal");
}

#[tokio::test]
async fn a_packet_asks_once_per_document_and_each_answer_is_checked_against_its_own_pages() {
    // Bill of lading (p. 1), commercial invoice (pp. 2-3), packing list (p. 4), customs
    // declaration (p. 5): four segments, four requests, in page order.
    let pdf = sample("03-packet/shipment-packet.pdf");
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    fake.push(Reply::fields(&[("bl_number", "CMDUSGN0924571")]));
    fake.push(Reply::fields(&[("invoice_total", "USD 39,904.00")]));
    fake.push(Reply::fields(&[(
        "packing_list_number",
        "SOF/PL/2024/0571",
    )]));
    fake.push(Reply::fields(&[
        ("declared_value", "39.004,00 USD"),
        // The invoice's total, printed in the packet but not on the declaration: a model
        // mixing documents up is caught, because each answer is checked against its own
        // segment's pages only.
        ("invoice_number", "USD 39,904.00"),
    ]));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let dir = tempdir();
    let done = provider
        .process(source(&dir, &pdf))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.summary["provider_requests"], 4);
    let segments = done.summary["segments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let shape: Vec<(String, serde_json::Value)> = segments
        .iter()
        .map(|s| {
            (
                s["doc_type"].as_str().unwrap_or("").to_owned(),
                s["pages"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("bill_of_lading".to_owned(), json!([0])),
            ("commercial_invoice".to_owned(), json!([1, 2])),
            ("packing_list".to_owned(), json!([3])),
            ("customs_declaration".to_owned(), json!([4])),
        ]
    );
    let sent = fake.requests();
    assert_eq!(sent.len(), 4);
    for (request, title) in
        sent.iter()
            .zip(["Bill of lading", "Commercial invoice", "Packing list"])
    {
        assert!(
            request
                .prompt()
                .contains(&format!("Document type: {title}")),
            "{title}"
        );
    }
    // Each request carries only its own pages.
    assert!(
        sent[1].prompt().contains("=== page 3 ===") && !sent[1].prompt().contains("=== page 4 ===")
    );
    assert!(
        sent[3].prompt().contains("=== page 5 ===") && !sent[3].prompt().contains("=== page 4 ===")
    );

    let raws = |i: usize| -> Vec<String> {
        segments[i]["provider"]["accepted"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v["raw"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(raws(0), ["CMDUSGN0924571"]);
    assert_eq!(raws(1), ["USD 39,904.00"]);
    assert_eq!(raws(2), ["SOF/PL/2024/0571"]);
    assert_eq!(raws(3), ["39.004,00 USD"]);
    assert_eq!(
        codes(&segments[3]["provider"]["rejected"]),
        [("invoice_number", "not_in_text")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_provider_serves_concurrent_jobs() {
    // Workers share one provider: two sources at once, one answer each, both kept.
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    fake.push(Reply::fields(&[("invoice_number", "INV-42")]));
    fake.push(Reply::fields(&[("invoice_number", "INV-42")]));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let (a, b) = (tempdir(), tempdir());
    let (first, second) = tokio::join!(
        provider.process(invoice_source(&a)),
        provider.process(invoice_source(&b))
    );
    for done in [first, second] {
        let done = done.unwrap_or_else(|e| panic!("{e}"));
        let chosen = fact(&done, "invoice_number").chosen.clone();
        assert_eq!(chosen.map(|c| c.pattern), Some(PROVIDER_PATTERN));
    }
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn a_corrupted_blob_is_terminal_before_any_request() {
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(5));
    let dir = tempdir();
    let mut input = invoice_source(&dir);
    input.sha256 = "00".repeat(32);
    let (class, message) = class_of(&provider.process(input).await);
    assert_eq!(class, "terminal");
    assert!(message.contains("blob corrupted"), "{message}");
    assert!(fake.requests().is_empty());
}

#[test]
fn an_https_url_is_refused_at_start_up() {
    let config = ProviderConfig::new("https://api.openai.com/v1", "gpt-4o-mini");
    let err = OpenAiProvider::new(config, reader(), Workflows::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("needs TLS"), "{err}");
}

#[tokio::test]
async fn the_cases_templates_are_read_too() {
    const TEMPLATE: &str = "issuer: Ref Corp\nkeywords: [COMMERCIAL INVOICE]\nrequired_fields: [reference]\nfields:\n  reference: Ref\\s+(INV-\\d+)\n";
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    fake.push(Reply::fields(&[("container_number", "")]));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let dir = tempdir();
    let mut input = invoice_source(&dir);
    let template = ironclad_extract::invoice2data::Template::from_yaml(TEMPLATE)
        .unwrap_or_else(|e| panic!("{e}"));
    input.templates = Some(ironclad_documents::workflows::LoadedTemplates {
        id: Uuid::from_u128(0x9),
        templates: CompiledTemplates::new(1, vec![template]),
    });
    let done = provider
        .process(input)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let reference = fact(&done, "reference");
    let chosen = reference
        .chosen
        .as_ref()
        .unwrap_or_else(|| panic!("no reference"));
    assert_eq!(chosen.value, Value::Text("INV-42".into()));
    assert_eq!(chosen.template.as_deref(), Some("Ref Corp"));
    let used = done.analysis.as_ref().and_then(|a| a.template.as_ref());
    assert_eq!(used.map(|t| t.issuer.as_str()), Some("Ref Corp"));
}

/// The provider reads through the built-in processor's one reading path, second look
/// included: the sample declaration's invoice number, which Tesseract splits from its row
/// (`DPI` … `-2404-118`), comes out whole and unconflicted before the model is asked anything
/// (the model here finds nothing), and the job's summary says what the second look did.
#[tokio::test]
async fn the_provider_reads_with_the_second_look_of_the_built_in_path() {
    let tiff = sample("02-scans/customs-declaration.tiff");
    let fake = FakeOpenAi::start().await.unwrap_or_else(|e| panic!("{e}"));
    fake.push(Reply::fields(&[]));
    fake.push(Reply::fields(&[]));
    let provider = provider_at(&fake.base_url(), Duration::from_secs(10));
    let dir = tempdir();
    let done = provider
        .process(source_of(&dir, &tiff, MediaType::Tiff))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let analysis = done
        .analysis
        .as_ref()
        .unwrap_or_else(|| panic!("no analysis"));
    let segment = &analysis.segments[0];
    assert_eq!(
        segment.segment.doc_type.as_deref(),
        Some("customs_declaration")
    );
    let f = segment
        .facts
        .iter()
        .find(|f| f.field == "invoice_number")
        .unwrap_or_else(|| panic!("no invoice_number"));
    let chosen = f.chosen.as_ref().unwrap_or_else(|| panic!("read: {f:?}"));
    let key: String = chosen
        .raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    assert_eq!(key, "DPI2404118", "{f:?}");
    assert!(!f.conflict, "{f:?}");
    assert!(f
        .candidates
        .iter()
        .any(|c| c.origin == Some(ironclad_core::analysis::CandidateOrigin::SecondLook)));
    assert!(
        done.summary["second_look"]["regions"].as_u64().unwrap_or(0) >= 1,
        "{}",
        done.summary
    );
}
