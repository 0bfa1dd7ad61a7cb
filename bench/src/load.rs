//! The HTTP load generator: N concurrent tokio tasks, one reqwest client (one keep-alive
//! connection) each, POSTing single-file multipart cases in a closed loop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One finished request.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// When it was sent.
    pub start: Instant,
    /// How long until the whole response was read.
    pub latency: Duration,
    /// 201 Created.
    pub ok: bool,
}

/// What a load run produced.
#[derive(Debug, Default)]
pub struct LoadResult {
    pub samples: Vec<Sample>,
    /// First few error descriptions (status + body, or transport error).
    pub errors: Vec<String>,
    /// PDFs generated during the run because the pre-generated pool ran out.
    pub generated_late: usize,
}

/// A distinct, valid one-page PDF per index (content-addressed blobs: no dedup shortcut).
pub fn pdf(tag: &str, i: usize) -> Vec<u8> {
    ironclad_inspect::fixtures::pdf_with_pages(1, &format!("ironclad bench {tag} case {i}"))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .tcp_nodelay(true)
        .pool_max_idle_per_host(1)
        .build()
        .expect("reqwest client")
}

/// Posts one case; returns Ok(()) on 201, Err(description) otherwise.
async fn post(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    name: String,
    bytes: Vec<u8>,
) -> Result<(), String> {
    let part = reqwest::multipart::Part::bytes(bytes)
        .file_name(name)
        .mime_str("application/pdf")
        .map_err(|e| e.to_string())?;
    let form = reqwest::multipart::Form::new().part("file", part);
    match client
        .post(url)
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
    {
        Ok(resp) => {
            let status = resp.status();
            let body = resp
                .bytes()
                .await
                .map_err(|e| format!("{status}: reading body: {e}"))?;
            if status == reqwest::StatusCode::CREATED {
                Ok(())
            } else {
                Err(format!(
                    "{status}: {}",
                    String::from_utf8_lossy(&body)
                        .chars()
                        .take(300)
                        .collect::<String>()
                ))
            }
        }
        Err(e) => Err(format!("transport: {e}")),
    }
}

/// Closed-loop load for a fixed time: every task posts back to back until `stop`. PDFs come
/// from `pool` (pre-generated per task), then are generated on the fly if it runs dry.
pub async fn timed(
    base_url: &str,
    key: &str,
    clients: usize,
    pools: Vec<Vec<Vec<u8>>>,
    stop: Instant,
) -> LoadResult {
    let url = format!("{base_url}/v1/cases");
    let late = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for (c, mut pool) in pools.into_iter().enumerate().take(clients) {
        let (url, key, late) = (url.clone(), key.to_owned(), late.clone());
        tasks.spawn(async move {
            let client = client();
            let mut samples = Vec::with_capacity(pool.len());
            let mut errors = Vec::new();
            let mut n = 0usize;
            while Instant::now() < stop {
                let bytes = pool.pop().unwrap_or_else(|| {
                    late.fetch_add(1, Ordering::Relaxed);
                    pdf(&format!("late-{c}"), n)
                });
                n += 1;
                let start = Instant::now();
                let r = post(&client, &url, &key, format!("bench-{c}-{n}.pdf"), bytes).await;
                let latency = start.elapsed();
                if let Err(e) = &r {
                    if errors.len() < 5 {
                        errors.push(e.clone());
                    }
                }
                samples.push(Sample {
                    start,
                    latency,
                    ok: r.is_ok(),
                });
            }
            (samples, errors)
        });
    }
    let mut out = LoadResult::default();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((s, e)) => {
                out.samples.extend(s);
                out.errors.extend(e);
            }
            Err(e) => out.errors.push(format!("load task panicked: {e}")),
        }
    }
    out.generated_late = late.load(Ordering::Relaxed);
    out
}

/// Posts exactly `docs.len()` cases with `clients` tasks sharing the list.
pub async fn fixed(base_url: &str, key: &str, clients: usize, docs: Vec<Vec<u8>>) -> LoadResult {
    let url = format!("{base_url}/v1/cases");
    let docs = Arc::new(docs);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (url, key, docs, next) = (url.clone(), key.to_owned(), docs.clone(), next.clone());
        tasks.spawn(async move {
            let client = client();
            let mut samples = Vec::new();
            let mut errors = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(bytes) = docs.get(i) else { break };
                let start = Instant::now();
                let r = post(&client, &url, &key, format!("e2e-{i}.pdf"), bytes.clone()).await;
                if let Err(e) = &r {
                    if errors.len() < 5 {
                        errors.push(e.clone());
                    }
                }
                samples.push(Sample {
                    start,
                    latency: start.elapsed(),
                    ok: r.is_ok(),
                });
            }
            (samples, errors)
        });
    }
    let mut out = LoadResult::default();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((s, e)) => {
                out.samples.extend(s);
                out.errors.extend(e);
            }
            Err(e) => out.errors.push(format!("load task panicked: {e}")),
        }
    }
    out
}

/// Latency percentile (nearest rank) in ms over a sorted list.
pub fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    (sorted[i].as_secs_f64() * 1e5).round() / 100.0
}
