//! `ironclad submit`: uploads files as one case and, with `--wait`, follows it to a decision.

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `ironclad submit FILES...`
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// Files of the case (PDF, PNG, JPEG, TIFF).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Base URL of the API.
    #[arg(long, env = "IRONCLAD_API", default_value = "http://127.0.0.1:8080")]
    pub api: String,
    /// API key.
    #[arg(long, env = "IRONCLAD_API_KEY", hide_env_values = true)]
    pub key: String,
    /// Your reference for the case.
    #[arg(long)]
    pub external_reference: Option<String>,
    /// Workflow to run.
    #[arg(long)]
    pub workflow: Option<String>,
    /// Idempotency key (safe retries of this submission).
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// Follow the case until it is decided or failed.
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this long.
    #[arg(long, default_value = "10m", value_parser = crate::config::parse_duration)]
    pub timeout: Duration,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Exit code when the case ended FAILED (a technical failure, not a business finding).
const EXIT_CASE_FAILED: u8 = 3;

pub async fn run(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    let mut form = reqwest::multipart::Form::new();
    for path in &args.files {
        let bytes = tokio::fs::read(path)
            .await
            .with_context(|| format!("reading {}", path.display()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        form = form.part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(name),
        );
    }
    if let Some(r) = &args.external_reference {
        form = form.text("external_reference", r.clone());
    }
    if let Some(w) = &args.workflow {
        form = form.text("workflow", w.clone());
    }
    let base = args.api.trim_end_matches('/');
    let mut request = client
        .post(format!("{base}/v1/cases"))
        .bearer_auth(&args.key)
        .multipart(form);
    if let Some(k) = &args.idempotency_key {
        request = request.header("Idempotency-Key", k);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("cannot reach the API at {base}"))?;
    let status = response.status();
    let body: serde_json::Value = response
        .json()
        .await
        .context("the API answered with something other than JSON")?;
    if !status.is_success() {
        let message = body["error"]["message"]
            .as_str()
            .unwrap_or("request refused");
        let details = &body["error"]["details"];
        let details = if details.is_null() {
            String::new()
        } else {
            format!(" {details}")
        };
        anyhow::bail!("submission refused ({status}): {message}{details}");
    }
    let case_id = body["case_id"]
        .as_str()
        .context("response has no case_id")?
        .to_owned();
    if !args.wait {
        if args.json {
            println!("{body}");
        } else {
            println!(
                "case {case_id} accepted with {} file(s)",
                body["sources"].as_array().map_or(0, Vec::len)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.json {
        println!("case {case_id} accepted; waiting for a decision…");
    }
    let start = Instant::now();
    let mut last = String::new();
    loop {
        let case: serde_json::Value = client
            .get(format!("{base}/v1/cases/{case_id}"))
            .bearer_auth(&args.key)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let status = case["status"].as_str().unwrap_or("?").to_owned();
        let jobs = case["jobs"].as_array().cloned().unwrap_or_default();
        let done = jobs.iter().filter(|j| j["status"] == "SUCCEEDED").count();
        let line = format!("  {status}: {done}/{} job(s) done", jobs.len());
        if line != last && !args.json {
            println!("{line}");
            last = line;
        }
        match status.as_str() {
            "AWAITING_REVIEW" | "RESOLVED" => {
                if args.json {
                    println!("{case}");
                } else {
                    let d = &case["decision"];
                    println!(
                        "case {case_id}: decision v{} {} ({})",
                        d["version"],
                        d["status"].as_str().unwrap_or("?"),
                        d["summary"].as_str().unwrap_or("")
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
            "FAILED" => {
                if args.json {
                    println!("{case}");
                } else {
                    println!(
                        "case {case_id}: FAILED — {}",
                        case["status_reason"]
                            .as_str()
                            .unwrap_or("no reason recorded")
                    );
                }
                return Ok(ExitCode::from(EXIT_CASE_FAILED));
            }
            _ => {}
        }
        anyhow::ensure!(
            start.elapsed() < args.timeout,
            "case {case_id} not decided after {:?} (still {status})",
            args.timeout
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
