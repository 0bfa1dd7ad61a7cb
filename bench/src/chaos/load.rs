//! The load generator: submits the dossiers through the real API as a careful client would —
//! every request carries an `Idempotency-Key`, and an answer that may be passing (no answer,
//! 429, 5xx) is retried with the same key, honouring `Retry-After` — and writes the ledger that
//! `ironclad verify` holds the system to.

use super::dossiers::Dossier;
use ironclad_store::ledger::{Expectation, LedgerEntry};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the load is and where it goes.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub api: String,
    pub tenant: String,
    pub key: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Prefix of every idempotency key (the run and phase).
    pub key_prefix: String,
    /// A client stops retrying one submission after this long (its ledger entry then has no
    /// status: the case may or may not exist).
    pub give_up_after: Duration,
    /// Every n-th accepted submission is sent again with its key, and must get the same case.
    pub replay_every: usize,
    /// Submission `i` is not sent before `i × pace` from the start (spreads the load over
    /// the fault schedule, so that faults strike work in flight); zero sends at once.
    pub pace: Duration,
}

/// What the load came to.
#[derive(Debug, Default)]
pub struct LoadOutcome {
    pub ledger: Vec<LedgerEntry>,
    /// Final statuses seen, by code (0: no answer).
    pub statuses: BTreeMap<u16, u64>,
    /// Tries beyond the first.
    pub retries: u64,
    /// Replays answered with another case or an error.
    pub replay_mismatches: Vec<String>,
    pub replays: u64,
    /// From the first request to the last answer.
    pub elapsed: Duration,
}

/// Submits every dossier; returns the ledger (in submission order).
pub async fn run(spec: &LoadSpec, dossiers: Arc<Vec<Dossier>>) -> anyhow::Result<LoadOutcome> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let next = Arc::new(AtomicUsize::new(0));
    let out = Arc::new(Mutex::new(LoadOutcome::default()));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..spec.clients.max(1) {
        let (client, next, out, spec, dossiers) = (
            client.clone(),
            next.clone(),
            out.clone(),
            spec.clone(),
            dossiers.clone(),
        );
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(dossier) = dossiers.get(i) else {
                    return;
                };
                let due = started + spec.pace * u32::try_from(i).unwrap_or(u32::MAX);
                tokio::time::sleep_until(due.into()).await;
                let (entry, retries) = submit(&client, &spec, i as u64, dossier).await;
                let replay = (spec.replay_every > 0
                    && i % spec.replay_every == spec.replay_every - 1
                    && entry.case_id.is_some())
                .then(|| (entry.idempotency_key.clone(), entry.case_id.clone()));
                let replayed = match replay {
                    Some((key, case)) => Some((
                        key.clone(),
                        case,
                        replay_once(&client, &spec, &key, dossier).await,
                    )),
                    None => None,
                };
                let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
                *o.statuses.entry(entry.status.unwrap_or(0)).or_default() += 1;
                o.retries += retries;
                if let Some((key, case, answer)) = replayed {
                    o.replays += 1;
                    if answer != case {
                        o.replay_mismatches
                            .push(format!("{key}: first {case:?}, replay {answer:?}"));
                    }
                }
                o.ledger.push(entry);
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined?;
    }
    let mut outcome = std::mem::take(&mut *out.lock().unwrap_or_else(|p| p.into_inner()));
    outcome.elapsed = started.elapsed();
    outcome.ledger.sort_by_key(|e| e.seq);
    Ok(outcome)
}

fn form(dossier: &Dossier) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new();
    for (name, bytes) in &dossier.files {
        form = form.part(
            "file",
            reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
        );
    }
    form
}

/// One submission with its retries: (ledger entry, tries beyond the first).
async fn submit(
    client: &reqwest::Client,
    spec: &LoadSpec,
    seq: u64,
    dossier: &Dossier,
) -> (LedgerEntry, u64) {
    let key = format!("{}-{seq}", spec.key_prefix);
    let mut entry = LedgerEntry {
        seq,
        tenant: spec.tenant.clone(),
        idempotency_key: key.clone(),
        kind: dossier.kind.to_owned(),
        expect: dossier.expect,
        status: None,
        case_id: None,
        files: dossier
            .files
            .iter()
            .map(|(_, b)| hex::encode(Sha256::digest(b)))
            .collect(),
        submitted_at: chrono::Utc::now().to_rfc3339(),
        answered_at: None,
    };
    let started = Instant::now();
    let mut tries = 0u64;
    let mut wait = Duration::from_millis(250);
    loop {
        tries += 1;
        let answer = client
            .post(format!("{}/v1/cases", spec.api))
            .bearer_auth(&spec.key)
            .header("Idempotency-Key", &key)
            .multipart(form(dossier))
            .send()
            .await;
        let retry_after = match answer {
            Ok(response) => {
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .map(Duration::from_secs);
                let passing = status == 429 || status == 408 || status >= 500;
                if !passing {
                    let body: serde_json::Value = response.json().await.unwrap_or_default();
                    entry.status = Some(status);
                    entry.case_id = body["case_id"].as_str().map(str::to_owned);
                    entry.answered_at = Some(chrono::Utc::now().to_rfc3339());
                    return (entry, tries - 1);
                }
                retry_after
            }
            Err(_) => None,
        };
        if started.elapsed() > spec.give_up_after {
            return (entry, tries - 1);
        }
        tokio::time::sleep(retry_after.unwrap_or(wait)).await;
        wait = (wait * 2).min(Duration::from_secs(4));
    }
}

/// One submission with its retries, on a client of its own (a probe made during a fault).
pub async fn submit_one(spec: &LoadSpec, seq: u64, dossier: &Dossier) -> LedgerEntry {
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
    {
        Ok(c) => c,
        Err(_) => reqwest::Client::new(),
    };
    submit(&client, spec, seq, dossier).await.0
}

/// Sends an accepted submission again with its key; the case id the replay names.
async fn replay_once(
    client: &reqwest::Client,
    spec: &LoadSpec,
    key: &str,
    dossier: &Dossier,
) -> Option<String> {
    for _ in 0..20 {
        let answer = client
            .post(format!("{}/v1/cases", spec.api))
            .bearer_auth(&spec.key)
            .header("Idempotency-Key", key)
            .multipart(form(dossier))
            .send()
            .await;
        match answer {
            Ok(r) if r.status().is_success() => {
                let body: serde_json::Value = r.json().await.unwrap_or_default();
                return body["case_id"].as_str().map(str::to_owned);
            }
            Ok(r) if r.status().as_u16() != 429 && r.status().as_u16() < 500 => return None,
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    None
}

/// Writes the ledger as JSON lines.
pub fn write_ledger(path: &std::path::Path, ledger: &[LedgerEntry]) -> anyhow::Result<()> {
    let text: String = ledger.iter().map(|e| e.to_line() + "\n").collect();
    std::fs::write(path, text)?;
    Ok(())
}

/// Submissions that expected a decision and were accepted.
pub fn accepted(ledger: &[LedgerEntry]) -> usize {
    ledger
        .iter()
        .filter(|e| e.expect != Expectation::Refused && e.case_id.is_some())
        .count()
}
