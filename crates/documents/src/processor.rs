//! The document step a worker runs for one source, behind a trait so the worker does not
//! care whether pages are counted, OCRed or scripted to fail.

use ironclad_core::media::MediaType;
use ironclad_core::{CaseId, SourceId};
use ironclad_inspect::{inspect, InspectLimits};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// One source to process, as the worker read it from its job and the `sources` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInput {
    /// The source.
    pub source_id: SourceId,
    /// Its case.
    pub case_id: CaseId,
    /// Type decided at intake.
    pub media_type: MediaType,
    /// SHA-256 recorded at intake, lowercase hex.
    pub sha256: String,
    /// Page count recorded at intake.
    pub pages: u32,
    /// Where the bytes are.
    pub blob_path: PathBuf,
    /// The workflow the case asked for (`None`: the default one).
    pub workflow: Option<String>,
    /// The workflow version the case is pinned to, resolved by the worker: every source of a
    /// case is read under this one version, whichever worker reads it and whatever version
    /// that worker loaded at start (a rolling restart must not mix versions in one case).
    /// `None` lets the processor resolve `workflow` from its own set.
    pub pinned_workflow: Option<crate::workflows::LoadedWorkflow>,
    /// The invoice2data template set the case is pinned to, if any is loaded: applied to the
    /// source's layout text after the workflow.
    pub templates: Option<crate::workflows::LoadedTemplates>,
}

/// The result of processing one source.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProcessedSource {
    /// Pages found.
    pub pages: u32,
    /// What the processor did, stored with the job's result.
    pub summary: serde_json::Value,
    /// Every page as read (empty for processors that do not read text).
    pub read: Vec<ironclad_core::page::PageText>,
    /// Classification, segmentation and extraction, when a workflow was applied.
    pub analysis: Option<ironclad_core::analysis::Analysis>,
    /// The stored workflow version the analysis ran under, if any.
    pub workflow_id: Option<uuid::Uuid>,
}

/// Why processing failed. The split decides the job's fate: retry with backoff, or fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessorError {
    /// May pass on another attempt (I/O, provider timeout or 5xx).
    #[error("retryable: {0}")]
    Retryable(String),
    /// Will fail the same way every time (corrupt or unreadable document).
    #[error("terminal: {0}")]
    Terminal(String),
}

impl ProcessorError {
    /// Whether the job should be retried.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Retryable(_))
    }
}

/// The future returned by [`DocumentProcessor::process`].
pub type ProcessFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ProcessedSource, ProcessorError>> + Send + 'a>>;

/// The document step. Object safe, so a worker holds an `Arc<dyn DocumentProcessor>`.
pub trait DocumentProcessor: Send + Sync + 'static {
    /// Processes one source. Must be safe to run again for the same source (delivery is
    /// at-least-once).
    fn process(&self, input: SourceInput) -> ProcessFuture<'_>;
    /// A short name for logs and job results.
    fn name(&self) -> &'static str;
}

/// The source's bytes, checked against the SHA-256 recorded at intake: what every processor
/// reads before anything else. A blob that cannot be read is retryable (a disk or mount
/// hiccup); one whose bytes changed is terminal (it will not heal, and reading it would give a
/// decision on a file nobody submitted). Hashing runs on the blocking pool.
pub async fn read_verified(input: &SourceInput) -> Result<Vec<u8>, ProcessorError> {
    let bytes = tokio::fs::read(&input.blob_path).await.map_err(|e| {
        ProcessorError::Retryable(format!("reading blob {}: {e}", input.blob_path.display()))
    })?;
    let expected = input.sha256.to_ascii_lowercase();
    tokio::task::spawn_blocking(move || {
        let actual = hex::encode(Sha256::digest(&bytes));
        if actual == expected {
            Ok(bytes)
        } else {
            Err(ProcessorError::Terminal(format!(
                "blob corrupted: sha256 is {actual}, intake recorded {expected}"
            )))
        }
    })
    .await
    .map_err(|e| ProcessorError::Terminal(format!("hashing the blob crashed: {e}")))?
}

/// The processor that reads no text (`stand-in`, for tests and the pipeline's benchmarks):
/// reads the blob, checks it still has the SHA-256 recorded at intake, and counts its pages
/// again. The built-in reader is `ironclad-reading`'s.
#[derive(Debug, Clone)]
pub struct StandInProcessor {
    limits: InspectLimits,
}

impl StandInProcessor {
    /// A stand-in applying `limits` when it re-inspects.
    pub fn new(limits: InspectLimits) -> Self {
        Self { limits }
    }
}

impl Default for StandInProcessor {
    /// No page limit (intake enforced its own; a worker must not fail what intake accepted),
    /// the default pixel limit (a safety check, not a policy).
    fn default() -> Self {
        Self::new(InspectLimits {
            max_pages: u32::MAX,
            ..InspectLimits::default()
        })
    }
}

impl DocumentProcessor for StandInProcessor {
    fn process(&self, input: SourceInput) -> ProcessFuture<'_> {
        let limits = self.limits;
        Box::pin(async move {
            let bytes = read_verified(&input).await?;
            // Parsing is CPU work: keep it off the async threads.
            let (inspection, len) = tokio::task::spawn_blocking(move || {
                inspect(&bytes, &limits)
                    .map(|inspection| (inspection, bytes.len()))
                    .map_err(|e| ProcessorError::Terminal(e.to_string()))
            })
            .await
            .map_err(|e| ProcessorError::Terminal(format!("document check crashed: {e}")))??;
            if inspection.media_type != input.media_type || inspection.pages != input.pages {
                tracing::warn!(source_id = %input.source_id, recorded_type = %input.media_type,
                    found_type = %inspection.media_type, recorded_pages = input.pages,
                    found_pages = inspection.pages, "re-inspection disagrees with intake");
            }
            Ok(ProcessedSource {
                pages: inspection.pages,
                summary: serde_json::json!({
                    "processor": "stand-in",
                    "pages": inspection.pages,
                    "bytes": len,
                }),
                ..ProcessedSource::default()
            })
        })
    }

    fn name(&self) -> &'static str {
        "stand-in"
    }
}

/// What a [`ScriptedProcessor`] does on each call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// Succeed (through the stand-in, so the blob is still verified).
    Succeed,
    /// Sleep, then succeed: a slow provider.
    Sleep(Duration),
    /// Sleep, then fail retryably as a provider timeout would.
    Timeout(Duration),
    /// Fail retryably with this message.
    Retryable(String),
    /// Fail terminally with this message.
    Terminal(String),
    /// Panic, as a buggy processor would.
    Panic,
    /// Fail retryably on the first `times` calls for each source id, then behave as `then`.
    FailTimes {
        /// Failing calls per source.
        times: u32,
        /// Behaviour afterwards.
        then: Box<Behaviour>,
    },
}

impl Behaviour {
    /// Parses the part of a processor spec after `test:`: `succeed`, `sleep=5s`,
    /// `timeout=500ms`, `retryable[=message]`, `terminal[=message]`, `panic`,
    /// `fail-times=2` (then succeed).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (name, arg) = match spec.split_once('=') {
            Some((name, arg)) => (name, Some(arg)),
            None => (spec, None),
        };
        let no_arg = |b: Behaviour| match arg {
            None => Ok(b),
            Some(_) => Err(format!("test:{name} takes no value")),
        };
        let need = || arg.ok_or_else(|| format!("test:{name} needs a value, e.g. test:{name}=2s"));
        match name {
            "succeed" => no_arg(Self::Succeed),
            "panic" => no_arg(Self::Panic),
            "sleep" => parse_duration(need()?).map(Self::Sleep),
            "timeout" => parse_duration(need()?).map(Self::Timeout),
            "retryable" => Ok(Self::Retryable(
                arg.unwrap_or("scripted retryable failure").to_owned(),
            )),
            "terminal" => Ok(Self::Terminal(
                arg.unwrap_or("scripted terminal failure").to_owned(),
            )),
            "fail-times" => {
                let times = need()?
                    .parse()
                    .map_err(|_| format!("test:fail-times needs a count, got {arg:?}"))?;
                Ok(Self::FailTimes {
                    times,
                    then: Box::new(Self::Succeed),
                })
            }
            _ => Err(format!(
                "unknown test behaviour {name:?}; expected succeed, sleep=<d>, timeout=<d>, \
                 retryable, terminal, panic or fail-times=<n>"
            )),
        }
    }

    /// The behaviour for the `attempt`-th call (1-based) for one source, `FailTimes` unrolled.
    fn for_attempt(&self, mut attempt: u32) -> Result<&Behaviour, ProcessorError> {
        let mut behaviour = self;
        while let Behaviour::FailTimes { times, then } = behaviour {
            if attempt <= *times {
                return Err(ProcessorError::Retryable(format!(
                    "scripted failure {attempt} of {times}"
                )));
            }
            attempt -= times;
            behaviour = then;
        }
        Ok(behaviour)
    }
}

/// `500ms`, `5s` or `2m`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?}; expected e.g. 500ms, 5s or 2m");
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| text.split_at(i))
        .ok_or_else(bad)?;
    let n: u64 = number.parse().map_err(|_| bad())?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        _ => Err(bad()),
    }
}

/// The test processor: behaves as scripted, counting calls. Success goes through the
/// stand-in, so a "successful" run still proves the blob is intact.
#[derive(Debug)]
pub struct ScriptedProcessor {
    behaviour: Behaviour,
    stand_in: StandInProcessor,
    calls: AtomicU64,
    /// Calls per source, for `FailTimes`.
    per_source: Mutex<HashMap<SourceId, u32>>,
}

impl ScriptedProcessor {
    /// A processor that always follows `behaviour`.
    pub fn new(behaviour: Behaviour) -> Self {
        Self {
            behaviour,
            stand_in: StandInProcessor::default(),
            calls: AtomicU64::new(0),
            per_source: Mutex::new(HashMap::new()),
        }
    }

    /// Total `process` calls so far (for tests asserting that work ran exactly once).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// `process` calls so far for one source.
    pub fn calls_for(&self, source_id: SourceId) -> u32 {
        let counts = self
            .per_source
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        counts.get(&source_id).copied().unwrap_or(0)
    }

    /// The scripted behaviour.
    pub fn behaviour(&self) -> &Behaviour {
        &self.behaviour
    }
}

impl DocumentProcessor for ScriptedProcessor {
    fn process(&self, input: SourceInput) -> ProcessFuture<'_> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let attempt = {
            // A panicking behaviour must not poison the counts for later calls.
            let mut counts = self
                .per_source
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let n = counts.entry(input.source_id).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        Box::pin(async move {
            match self.behaviour.for_attempt(attempt)? {
                Behaviour::Succeed | Behaviour::FailTimes { .. } => {}
                Behaviour::Sleep(d) => tokio::time::sleep(*d).await,
                Behaviour::Timeout(d) => {
                    tokio::time::sleep(*d).await;
                    return Err(ProcessorError::Retryable(format!(
                        "provider timed out after {d:?}"
                    )));
                }
                Behaviour::Retryable(message) => {
                    return Err(ProcessorError::Retryable(message.clone()))
                }
                Behaviour::Terminal(message) => {
                    return Err(ProcessorError::Terminal(message.clone()))
                }
                Behaviour::Panic => panic!(
                    "scripted panic in the test processor (source {})",
                    input.source_id
                ),
            }
            self.stand_in.process(input).await
        })
    }

    fn name(&self) -> &'static str {
        "test"
    }
}

/// Builds the processor named by a spec among this crate's own (`stand-in`, the empty spec,
/// or `test:<behaviour>`; see [`crate::registry::ProcessorRegistry::with_builtins`]).
pub fn processor_from_spec(spec: &str) -> Result<Arc<dyn DocumentProcessor>, String> {
    crate::registry::ProcessorRegistry::<()>::with_builtins()
        .build(spec, &())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironclad_inspect::fixtures;

    fn source(dir: &tempfile::TempDir, bytes: &[u8]) -> SourceInput {
        let path = dir.path().join(format!("{}.blob", SourceId::new()));
        std::fs::write(&path, bytes).expect("write blob");
        SourceInput {
            source_id: SourceId::new(),
            case_id: CaseId::new(),
            media_type: MediaType::Pdf,
            sha256: hex::encode(Sha256::digest(bytes)),
            pages: 3,
            blob_path: path,
            workflow: None,
            pinned_workflow: None,
            templates: None,
        }
    }

    #[tokio::test]
    async fn stand_in_verifies_and_counts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pdf = fixtures::pdf_with_pages(3, "stand-in");
        let input = source(&dir, &pdf);
        let processor: Arc<dyn DocumentProcessor> = Arc::new(StandInProcessor::default());
        let done = processor.process(input).await.expect("processed");
        assert_eq!(done.pages, 3);
        assert_eq!(
            done.summary,
            serde_json::json!({"processor": "stand-in", "pages": 3, "bytes": pdf.len()})
        );
        assert_eq!(processor.name(), "stand-in");
    }

    #[tokio::test]
    async fn stand_in_failures_are_classified() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stand_in = StandInProcessor::default();

        let mut missing = source(&dir, b"x");
        missing.blob_path = dir.path().join("nope");
        assert!(matches!(
            stand_in.process(missing).await,
            Err(ProcessorError::Retryable(_))
        ));

        let mut tampered = source(&dir, &fixtures::pdf_with_pages(1, "a"));
        tampered.sha256 = "00".repeat(32);
        assert!(matches!(
            stand_in.process(tampered).await,
            Err(ProcessorError::Terminal(m)) if m.starts_with("blob corrupted")
        ));

        let cut = fixtures::truncated(&fixtures::pdf_with_pages(2, "b"));
        assert!(matches!(
            stand_in.process(source(&dir, &cut)).await,
            Err(ProcessorError::Terminal(m)) if m.contains("incomplete")
        ));
    }

    #[tokio::test]
    async fn fail_times_counts_per_source() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scripted = ScriptedProcessor::new(Behaviour::FailTimes {
            times: 2,
            then: Box::new(Behaviour::Succeed),
        });
        let input = source(&dir, &fixtures::pdf_with_pages(3, "retry"));
        for _ in 0..2 {
            assert!(matches!(
                scripted.process(input.clone()).await,
                Err(ProcessorError::Retryable(_))
            ));
        }
        assert_eq!(
            scripted.process(input.clone()).await.map(|d| d.pages),
            Ok(3)
        );
        // Another source starts its own count.
        let other = SourceInput {
            source_id: SourceId::new(),
            ..input.clone()
        };
        assert!(scripted.process(other).await.is_err());
        assert_eq!(scripted.calls(), 4);
        assert_eq!(scripted.calls_for(input.source_id), 3);
    }

    #[tokio::test]
    async fn scripted_outcomes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let input = source(&dir, &fixtures::pdf_with_pages(3, "scripted"));
        let run = |b: Behaviour| {
            let input = input.clone();
            async move { ScriptedProcessor::new(b).process(input).await }
        };
        assert!(run(Behaviour::Succeed).await.is_ok());
        assert!(run(Behaviour::Sleep(Duration::from_millis(5)))
            .await
            .is_ok());
        assert_eq!(
            run(Behaviour::Timeout(Duration::from_millis(5))).await,
            Err(ProcessorError::Retryable(
                "provider timed out after 5ms".into()
            ))
        );
        assert_eq!(
            run(Behaviour::Retryable("503".into())).await,
            Err(ProcessorError::Retryable("503".into()))
        );
        assert_eq!(
            run(Behaviour::Terminal("bad".into())).await,
            Err(ProcessorError::Terminal("bad".into()))
        );

        let panicking: Arc<dyn DocumentProcessor> =
            Arc::new(ScriptedProcessor::new(Behaviour::Panic));
        let task = tokio::spawn(async move { panicking.process(input).await });
        assert!(task.await.is_err_and(|e| e.is_panic()));
    }

    #[test]
    fn specs() {
        let parse = |s: &str| Behaviour::parse(s.strip_prefix("test:").unwrap_or(s));
        assert_eq!(parse("test:succeed"), Ok(Behaviour::Succeed));
        assert_eq!(
            parse("test:sleep=5s"),
            Ok(Behaviour::Sleep(Duration::from_secs(5)))
        );
        assert_eq!(
            parse("test:sleep=500ms"),
            Ok(Behaviour::Sleep(Duration::from_millis(500)))
        );
        assert_eq!(
            parse("test:timeout=2s"),
            Ok(Behaviour::Timeout(Duration::from_secs(2)))
        );
        assert!(matches!(
            parse("test:retryable"),
            Ok(Behaviour::Retryable(_))
        ));
        assert!(matches!(parse("test:terminal=nope"), Ok(Behaviour::Terminal(m)) if m == "nope"));
        assert_eq!(parse("test:panic"), Ok(Behaviour::Panic));
        assert_eq!(
            parse("test:fail-times=2"),
            Ok(Behaviour::FailTimes {
                times: 2,
                then: Box::new(Behaviour::Succeed)
            })
        );
        for bad in [
            "sleep",
            "sleep=5",
            "sleep=5h",
            "sleep=s",
            "fail-times=x",
            "panic=1",
            "dance",
        ] {
            assert!(Behaviour::parse(bad).is_err(), "{bad}");
        }

        for (spec, name) in [
            ("", "stand-in"),
            ("stand-in", "stand-in"),
            ("test:panic", "test"),
        ] {
            assert_eq!(processor_from_spec(spec).map(|p| p.name()), Ok(name));
        }
        assert!(processor_from_spec("ocr").is_err());
        assert!(processor_from_spec("test:nope").is_err());
    }
}
