//! The HTTP side: one chat-completions request per document segment, and the typing of
//! everything that can come back.
//!
//! The client asks for `{"fields": {"<name>": "<value as printed>"}}` with
//! `response_format: {"type": "json_object"}` and hands back the `fields` object unverified;
//! [`crate::verify`] decides what to believe. Reading is bounded: a success body over
//! [`MAX_RESPONSE_BYTES`] is refused, an error body is read up to 64 KiB for its message.

use crate::config::{ConfigError, ProviderConfig};
use crate::error::{ProviderError, Retryable, Terminal};
use ironclad_core::page::PageText;
use ironclad_core::parse::ParserKind;
use ironclad_extract::Workflow;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::error::Error as _;
use std::time::Duration;

/// Largest chat-completion body read; a longer one is [`Terminal::ResponseTooLarge`]. The
/// expected answer is a few hundred bytes.
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Largest error body read, for its message and code; the rest is ignored.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// Longest server message kept in an error.
const MAX_MESSAGE_CHARS: usize = 300;

/// One field the model is asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldAsk {
    /// The workflow's field name, used as the JSON key.
    pub name: String,
    /// Its parser, described to the model so it copies the right span.
    pub parser: ParserKind,
    /// Whether the document type requires it.
    pub required: bool,
}

/// One page's text as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PagePrompt {
    /// [`PageText::index`].
    pub index: u32,
    /// The text, cut to the page budget.
    pub text: String,
    /// Whether the page was cut.
    pub truncated: bool,
}

/// What one request asks: a document type's fields, from a segment's pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldRequest {
    /// Document type id.
    pub doc_type: String,
    /// Its title, which helps the model more than the id.
    pub title: String,
    /// The fields, in workflow order.
    pub fields: Vec<FieldAsk>,
    /// The segment's pages, in order.
    pub pages: Vec<PagePrompt>,
}

const SYSTEM_PROMPT: &str = "You copy field values out of the text of one business document. \
Reply with one JSON object of the form {\"fields\": {\"<field name>\": \"<value>\"}} with one key \
per requested field. Copy each value exactly as it is printed in the text: the same characters \
and number format, with the currency or unit when it is printed next to the value. Do not \
translate, convert, correct, complete or compute anything. When the text does not contain a \
field, give null. Never guess.";

impl FieldRequest {
    /// The request for `doc_type`'s fields over `pages`, each cut to `max_page_chars`
    /// characters; `None` when the workflow has no such type or the type has no fields.
    pub fn new(
        workflow: &Workflow,
        doc_type: &str,
        pages: &[&PageText],
        max_page_chars: usize,
    ) -> Option<Self> {
        let spec = workflow.document_type(doc_type)?;
        if spec.fields.is_empty() {
            return None;
        }
        Some(Self {
            doc_type: spec.id.clone(),
            title: spec.title.clone(),
            fields: spec
                .fields
                .iter()
                .map(|f| FieldAsk {
                    name: f.name.clone(),
                    parser: f.parser,
                    required: f.required,
                })
                .collect(),
            pages: pages
                .iter()
                .map(|p| {
                    let text = p.text();
                    let (text, truncated) = match text.char_indices().nth(max_page_chars) {
                        Some((cut, _)) => (text[..cut].to_owned(), true),
                        None => (text, false),
                    };
                    PagePrompt {
                        index: p.index,
                        text,
                        truncated,
                    }
                })
                .collect(),
        })
    }

    /// The chat messages: the contract in the system message, fields and text in the user one.
    pub fn messages(&self) -> Value {
        let mut user = format!(
            "Document type: {} ({})\n\nFields to copy:\n",
            self.title, self.doc_type
        );
        for f in &self.fields {
            user.push_str(&format!(
                "- {}: {}{}\n",
                f.name,
                describe(f.parser),
                if f.required { " (required)" } else { "" }
            ));
        }
        user.push_str("\nDocument text, page by page:\n");
        for p in &self.pages {
            user.push_str(&format!("\n=== page {} ===\n{}\n", p.index + 1, p.text));
            if p.truncated {
                user.push_str("[rest of page omitted]\n");
            }
        }
        json!([
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user},
        ])
    }
}

/// What the model should copy for each parser.
fn describe(kind: ParserKind) -> &'static str {
    match kind {
        ParserKind::Text => "text",
        ParserKind::Integer => "whole number",
        ParserKind::Decimal => "number",
        ParserKind::Money => "amount with its currency as printed (e.g. USD 1,234.56)",
        ParserKind::Weight => "weight with its unit as printed",
        ParserKind::Date => "date as printed",
        ParserKind::ContainerNumber => "ISO 6346 container number as printed",
    }
}

/// Token counts the server reported, for cost accounting in the job summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Tokens sent.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

/// The model's answer, parsed but not verified.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldReply {
    /// The `fields` object, as the model wrote it.
    pub fields: Map<String, Value>,
    /// Token counts, when the server sent them.
    pub usage: Option<Usage>,
}

/// Talks to one OpenAI-compatible endpoint. Cheap to share: the connection pool is inside.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    config: ProviderConfig,
}

impl OpenAiClient {
    /// A client for `config`, after [`ProviderConfig::validate`].
    pub fn new(config: ProviderConfig) -> Result<Self, ConfigError> {
        let endpoint = config.validate()?;
        let http = reqwest::Client::builder()
            // The whole exchange is bounded by `config.timeout` in `ask`; connecting gets
            // the same budget so a black-holed address cannot outlast it.
            .connect_timeout(config.timeout)
            // A redirect would carry the key to wherever it points: refuse, and say so.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        Ok(Self {
            http,
            endpoint,
            config,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Sends one request and returns the model's `fields` object, unverified. The whole
    /// exchange, body included, is bounded by [`ProviderConfig::timeout`].
    pub async fn ask(&self, request: &FieldRequest) -> Result<FieldReply, ProviderError> {
        match tokio::time::timeout(self.config.timeout, self.exchange(request)).await {
            Ok(result) => result,
            Err(_) => Err(Retryable::Timeout {
                url: self.endpoint.to_string(),
                after: self.config.timeout,
            }
            .into()),
        }
    }

    async fn exchange(&self, request: &FieldRequest) -> Result<FieldReply, ProviderError> {
        let body = json!({
            "model": self.config.model,
            "messages": request.messages(),
            "response_format": {"type": "json_object"},
        });
        let mut call = self.http.post(self.endpoint.clone()).json(&body);
        if let Some(key) = &self.config.api_key {
            call = call.bearer_auth(key);
        }
        let response = call.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        if (200..300).contains(&status) {
            if response
                .content_length()
                .is_some_and(|n| n > MAX_RESPONSE_BYTES as u64)
            {
                return Err(Terminal::ResponseTooLarge {
                    limit: MAX_RESPONSE_BYTES,
                }
                .into());
            }
            let (bytes, cut) = read_limited(response, MAX_RESPONSE_BYTES)
                .await
                .map_err(|e| self.transport(&e))?;
            if cut {
                return Err(Terminal::ResponseTooLarge {
                    limit: MAX_RESPONSE_BYTES,
                }
                .into());
            }
            return parse_completion(&bytes).map_err(ProviderError::from);
        }
        // An error body is only read for its message: a failure to read it changes nothing.
        let bytes = read_limited(response, MAX_ERROR_BODY_BYTES)
            .await
            .map(|(b, _)| b)
            .unwrap_or_default();
        Err(classify_status(
            status,
            retry_after,
            &bytes,
            self.endpoint.as_str(),
        ))
    }

    fn transport(&self, e: &reqwest::Error) -> ProviderError {
        let url = self.endpoint.to_string();
        if e.is_timeout() {
            return Retryable::Timeout {
                url,
                after: self.config.timeout,
            }
            .into();
        }
        // The network stack's own words (refused, reset, closed) sit in the source chain.
        let mut causes = Vec::new();
        let mut source = e.source();
        while let Some(s) = source {
            causes.push(s.to_string());
            source = s.source();
        }
        let reason = if causes.is_empty() {
            e.to_string()
        } else {
            causes.join(": ")
        };
        Retryable::Connection { url, reason }.into()
    }
}

/// Reads at most `limit` bytes of the body; the flag says whether more was left.
async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// Types a non-2xx answer: 429 (quota or rate), 408 and 5xx retryable, other 4xx terminal.
pub(crate) fn classify_status(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    url: &str,
) -> ProviderError {
    let info = ErrorInfo::read(body);
    let message = info.message;
    match status {
        429 if info.quota => Terminal::QuotaExhausted { message }.into(),
        429 => Retryable::RateLimited {
            retry_after,
            message,
        }
        .into(),
        408 | 500..=599 => Retryable::Server { status, message }.into(),
        401 | 403 => Terminal::Unauthorized { status, message }.into(),
        404 => Terminal::NotFound {
            url: url.to_owned(),
            message,
        }
        .into(),
        400..=499 => Terminal::Rejected { status, message }.into(),
        _ => Terminal::UnexpectedStatus { status }.into(),
    }
}

/// The useful part of an error body, in OpenAI's shape (`{"error": {"message", "type",
/// "code"}}`) or any other.
struct ErrorInfo {
    message: String,
    /// `insufficient_quota` as the error's code or type.
    quota: bool,
}

impl ErrorInfo {
    fn read(body: &[u8]) -> Self {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let error = parsed.as_ref().and_then(|v| v.get("error"));
        let text_of = |v: Option<&Value>, key: &str| {
            v.and_then(|v| v.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let quota = ["code", "type"]
            .iter()
            .any(|k| text_of(error, k).as_deref() == Some("insufficient_quota"));
        let message = text_of(error, "message")
            .or_else(|| error.and_then(Value::as_str).map(str::to_owned))
            .or_else(|| text_of(parsed.as_ref(), "message"))
            .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
        let message = short(&message);
        Self {
            message: if message.is_empty() {
                "(no message)".into()
            } else {
                message
            },
            quota,
        }
    }
}

/// Whitespace and control characters collapsed, cut to [`MAX_MESSAGE_CHARS`].
fn short(text: &str) -> String {
    let flat = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match flat.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ChoiceMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

/// Reads a 2xx body: a chat completion whose first choice's content is
/// `{"fields": {…}}` (optionally inside one Markdown code fence, which servers that ignore
/// `response_format` add).
pub(crate) fn parse_completion(body: &[u8]) -> Result<FieldReply, Terminal> {
    let invalid = |reason: String| Terminal::InvalidResponse { reason };
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        invalid(format!(
            "the body is not JSON ({e}); it starts {:?}",
            short(&String::from_utf8_lossy(&body[..body.len().min(80)]))
        ))
    })?;
    let completion: Completion = serde_json::from_value(value)
        .map_err(|e| invalid(format!("the body is not a chat completion ({e})")))?;
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| invalid("the completion has no choices".into()))?;
    let message = choice
        .message
        .ok_or_else(|| invalid("the first choice has no message".into()))?;
    let content = match (message.content, message.refusal) {
        (Some(c), _) if !c.trim().is_empty() => c,
        (_, Some(r)) => return Err(invalid(format!("the model refused: {}", short(&r)))),
        _ => return Err(invalid("the message has no content".into())),
    };
    let cut_off = choice.finish_reason.as_deref() == Some("length");
    let answer: Value = serde_json::from_str(strip_fence(&content)).map_err(|e| {
        if cut_off {
            invalid(
                "the model's answer was cut off at its output limit (finish_reason=length)".into(),
            )
        } else {
            invalid(format!("the message content is not JSON ({e})"))
        }
    })?;
    let fields = match answer {
        Value::Object(mut top) => match top.remove("fields") {
            Some(Value::Object(fields)) => fields,
            Some(other) => {
                return Err(invalid(format!(
                    "\"fields\" is {} instead of an object",
                    kind_of(&other)
                )))
            }
            None => return Err(invalid("the JSON answer has no \"fields\" object".into())),
        },
        other => {
            return Err(invalid(format!(
                "the JSON answer is {} instead of an object",
                kind_of(&other)
            )))
        }
    };
    Ok(FieldReply {
        fields,
        usage: completion.usage,
    })
}

fn strip_fence(content: &str) -> &str {
    let t = content.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.strip_prefix("json").unwrap_or(rest);
        if let Some(inner) = rest.trim_end().strip_suffix("```") {
            return inner.trim();
        }
    }
    t
}

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion(content: &str, finish: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }))
        .unwrap_or_default()
    }

    fn reason(r: Result<FieldReply, Terminal>) -> String {
        match r {
            Err(Terminal::InvalidResponse { reason }) => reason,
            other => panic!("expected InvalidResponse, got {other:?}"),
        }
    }

    #[test]
    fn a_good_answer_gives_its_fields_and_usage() {
        let r = parse_completion(&completion(r#"{"fields": {"a": "1", "b": null}}"#, "stop"));
        let r = r.unwrap_or_default();
        assert_eq!(r.fields.get("a"), Some(&json!("1")));
        assert_eq!(r.usage.map(|u| u.total_tokens), Some(15));
        // A fenced answer is accepted too.
        let r = parse_completion(&completion("```json\n{\"fields\": {}}\n```", "stop"));
        assert!(r.is_ok());
    }

    #[test]
    fn bad_answers_are_terminal_with_the_reason() {
        assert!(reason(parse_completion(b"<html>oops</html>")).contains("not JSON"));
        assert!(reason(parse_completion(br#"{"id": "x"}"#)).contains("not a chat completion"));
        assert!(reason(parse_completion(br#"{"choices": []}"#)).contains("no choices"));
        assert!(
            reason(parse_completion(&completion(r#"{"answer": 1}"#, "stop")))
                .contains("no \"fields\"")
        );
        assert!(
            reason(parse_completion(&completion(r#"{"fields": [1]}"#, "stop")))
                .contains("an array")
        );
        assert!(reason(parse_completion(&completion("[]", "stop"))).contains("an array"));
        assert!(reason(parse_completion(&completion(
            r#"{"fields": {"a": "#,
            "stop"
        )))
        .contains("content is not JSON"));
        assert!(reason(parse_completion(&completion(
            r#"{"fields": {"a": "#,
            "length"
        )))
        .contains("cut off"));
        let refusal = br#"{"choices": [{"message": {"content": null, "refusal": "no"}}]}"#;
        assert!(reason(parse_completion(refusal)).contains("refused"));
    }

    #[test]
    fn statuses_are_typed() {
        let quota = br#"{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}"#;
        let rate =
            br#"{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}"#;
        let c = |s, b: &[u8]| classify_status(s, Some(Duration::from_secs(2)), b, "http://x/v1");
        assert!(matches!(
            c(429, quota),
            ProviderError::Terminal(Terminal::QuotaExhausted { .. })
        ));
        assert!(matches!(
            c(429, rate),
            ProviderError::Retryable(Retryable::RateLimited { retry_after: Some(_), ref message }) if message == "Rate limit reached"
        ));
        for s in [408, 500, 502, 503, 504, 599] {
            assert!(c(s, b"").is_retryable(), "{s}");
        }
        for s in [400, 401, 403, 404, 409, 413, 422, 302, 101] {
            assert!(!c(s, b"").is_retryable(), "{s}");
        }
        assert!(matches!(
            c(401, b""),
            ProviderError::Terminal(Terminal::Unauthorized { .. })
        ));
        assert!(matches!(
            c(404, b""),
            ProviderError::Terminal(Terminal::NotFound { .. })
        ));
        assert!(matches!(
            c(422, b""),
            ProviderError::Terminal(Terminal::Rejected { status: 422, .. })
        ));
        assert!(matches!(
            c(302, b""),
            ProviderError::Terminal(Terminal::UnexpectedStatus { status: 302 })
        ));
        // Plain-text and odd-shaped error bodies still give a readable message.
        assert!(c(503, b"upstream\n\tdown")
            .to_string()
            .contains("upstream down"));
        assert!(c(400, br#"{"error": "bad model"}"#)
            .to_string()
            .contains("bad model"));
        let long = "x".repeat(5000);
        assert!(c(500, long.as_bytes()).to_string().len() < 1000);
    }
}
