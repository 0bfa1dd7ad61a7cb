//! A fake OpenAI-compatible server that misbehaves on command (cargo feature `fake`).
//!
//! It listens on `127.0.0.1:0`, serves `POST /v1/chat/completions`, and answers each request
//! with the next [`Reply`] from a queue the test fills; every request is recorded so a test
//! can check what the provider sent. An empty queue answers 500 with a message saying so,
//! which a test sees as a retryable error rather than a hang. Other paths answer 404.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use ironclad_provider::fake::{FakeOpenAi, Reply};
//! let fake = FakeOpenAi::start().await?;
//! fake.push(Reply::fields(&[("invoice_number", "INV-42")]));
//! fake.push(Reply::Status(503));
//! let base_url = fake.base_url(); // "http://127.0.0.1:<port>/v1"
//! # Ok(()) }
//! ```

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What the fake does with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A correct chat completion whose content is `{"fields": <map>}`.
    Fields(Map<String, Value>),
    /// A chat completion whose message content is exactly this text (JSON without
    /// `fields`, cut-off JSON, prose …), with this `finish_reason`.
    Content {
        /// The message content.
        content: String,
        /// `stop`, or `length` for an answer cut at the output limit.
        finish_reason: String,
    },
    /// This status with an OpenAI-shaped error body (`server_error` for 5xx,
    /// `invalid_request_error` otherwise).
    Status(u16),
    /// 429 `rate_limit_exceeded`, with `Retry-After` when given.
    RateLimited {
        /// Seconds for the `Retry-After` header.
        retry_after: Option<u64>,
    },
    /// 429 `insufficient_quota`: the account has no credit.
    QuotaExhausted,
    /// 200 with a body that is not JSON.
    Garbage,
    /// 200 with a correct completion for these fields, cut in the middle.
    Truncated(Map<String, Value>),
    /// 200 with a JSON-looking body of this many bytes.
    Huge(usize),
    /// Any status, content type and body.
    Raw {
        /// Status code.
        status: u16,
        /// `Content-Type`.
        content_type: String,
        /// Body.
        body: String,
    },
    /// Wait, then behave as the inner reply (a wait past the client's timeout is a slow
    /// provider).
    Sleep(Duration, Box<Reply>),
}

impl Reply {
    /// [`Reply::Fields`] from `(name, value)` pairs.
    pub fn fields(pairs: &[(&str, &str)]) -> Self {
        Self::Fields(to_map(pairs))
    }

    /// [`Reply::Content`] with `finish_reason: stop`.
    pub fn content(content: impl Into<String>) -> Self {
        Self::Content {
            content: content.into(),
            finish_reason: "stop".into(),
        }
    }

    /// [`Reply::Truncated`] from `(name, value)` pairs.
    pub fn truncated(pairs: &[(&str, &str)]) -> Self {
        Self::Truncated(to_map(pairs))
    }

    /// [`Reply::Sleep`].
    pub fn sleep(wait: Duration, then: Reply) -> Self {
        Self::Sleep(wait, Box::new(then))
    }
}

fn to_map(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
        .collect()
}

/// A request as the fake received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The body, parsed (`Value::Null` if it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// The text of every message, joined, to look for what the model was shown.
    pub fn prompt(&self) -> String {
        self.body["messages"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
}

/// Decides the reply to the `n`-th request (0-based) when nothing is queued.
pub type Fallback = Arc<dyn Fn(u64) -> Reply + Send + Sync>;

#[derive(Default)]
struct Shared {
    queue: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    /// Requests received so far.
    served: u64,
    fallback: Option<Fallback>,
    /// Keep every request (tests) or only count them (long runs).
    forget_requests: bool,
}

type SharedState = Arc<Mutex<Shared>>;

/// A running fake server; stops when dropped.
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: SharedState,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for FakeOpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeOpenAi")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeOpenAi {
    /// Binds `127.0.0.1:0` and serves on the current Tokio runtime.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared: SharedState = Arc::default();
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "fake OpenAI server stopped");
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:<port>/v1`, the base URL to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues the reply to the next request without one.
    pub fn push(&self, reply: Reply) {
        self.lock().queue.push_back(reply);
    }

    /// Answers requests that find the queue empty with `fallback(n)` (the request's 0-based
    /// number) instead of a 500, and stops recording request bodies: a long-running fake that
    /// misbehaves on a schedule (a chaos run's provider that times out now and then).
    pub fn serve_with(&self, fallback: Fallback) {
        let mut s = self.lock();
        s.fallback = Some(fallback);
        s.forget_requests = true;
    }

    /// Requests received so far.
    pub fn served(&self) -> u64 {
        self.lock().served
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// Replies queued and not yet used.
    pub fn pending(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn chat(State(shared): State<SharedState>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or("fake").to_owned();
    let next = {
        let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let n = s.served;
        s.served += 1;
        if !s.forget_requests {
            s.requests.push(RecordedRequest {
                authorization: headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
                body,
            });
        }
        match s.queue.pop_front() {
            Some(reply) => Some(reply),
            None => s.fallback.as_ref().map(|f| f(n)),
        }
    };
    let Some(mut reply) = next else {
        return error(
            500,
            "server_error",
            "fake server: no reply queued for this request",
        );
    };
    while let Reply::Sleep(wait, then) = reply {
        tokio::time::sleep(wait).await;
        reply = *then;
    }
    match reply {
        Reply::Fields(fields) => {
            let content = json!({"fields": fields}).to_string();
            json_response(200, completion(&model, &content, "stop").to_string())
        }
        Reply::Content {
            content,
            finish_reason,
        } => json_response(200, completion(&model, &content, &finish_reason).to_string()),
        Reply::Status(status) => {
            let kind = if status >= 500 {
                "server_error"
            } else {
                "invalid_request_error"
            };
            error(status, kind, &format!("fake server answered {status}"))
        }
        Reply::RateLimited { retry_after } => {
            let mut r = json_response(
                429,
                json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
            );
            if let Some(secs) = retry_after {
                r.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
            }
            r
        }
        Reply::QuotaExhausted => json_response(
            429,
            json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "code": "insufficient_quota"}}).to_string(),
        ),
        Reply::Garbage => json_response(200, "<html><body>502 Bad Gateway</body></html>".into()),
        Reply::Truncated(fields) => {
            let content = json!({"fields": fields}).to_string();
            let full = completion(&model, &content, "stop").to_string();
            let mut cut = full.len() / 2;
            while !full.is_char_boundary(cut) {
                cut -= 1;
            }
            json_response(200, full[..cut].to_owned())
        }
        Reply::Huge(n) => {
            let mut body = String::with_capacity(n);
            body.push_str("{\"pad\": \"");
            body.extend(std::iter::repeat_n('x', n.saturating_sub(12)));
            body.push_str("\"}");
            json_response(200, body)
        }
        Reply::Raw {
            status,
            content_type,
            body,
        } => {
            let mut r = (status_code(status), body).into_response();
            if let Ok(v) = content_type.parse() {
                r.headers_mut().insert(header::CONTENT_TYPE, v);
            }
            r
        }
        // Unwrapped by the loop above.
        Reply::Sleep(..) => error(500, "server_error", "fake server: nested sleep"),
    }
}

fn completion(model: &str, content: &str, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason,
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    })
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn json_response(status: u16, body: String) -> Response {
    (
        status_code(status),
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    json_response(
        status,
        json!({"error": {"message": message, "type": kind, "code": null}}).to_string(),
    )
}
