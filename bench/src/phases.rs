//! Phases 2–4: intake over HTTP, outbox dispatch, end-to-end.

use crate::load::{self, percentile_ms};
use crate::server::{self, Server};
use crate::sys::CpuSample;
use crate::{Ctx, Mode};
use ironclad_core::faults::Faults;
use ironclad_core::{CaseId, Envelope, JobId, JobKind};
use ironclad_queue::{Queue, StreamConfig};
use ironclad_runtime::{Dispatcher, RuntimeConfig};
use ironclad_testkit::TestDb;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The child environment for one phase's database, blob directory and stream prefix. The
/// bench measures capacity, so the load-shedding limits meant for untrusted clients are off
/// (every bench client shares one key and one address) and the intake cap fits its clients.
fn phase_env(ctx: &Ctx, db: &TestDb, blob_dir: &std::path::Path, prefix: &str) -> server::ChildEnv {
    ctx.env
        .with("DATABASE_URL", &db.url)
        .with("IRONCLAD_BLOB_DIR", blob_dir.display().to_string())
        .with("IRONCLAD_STREAM_PREFIX", prefix)
        .with("IRONCLAD_KEY_RATE_LIMIT", "0")
        .with("IRONCLAD_ADDRESS_RATE_LIMIT", "0")
        .with("IRONCLAD_MAX_CONCURRENT_INTAKES", "256")
}

/// The server's own view from `/metrics`: for each label set of the histogram `name`, the
/// count, the mean and the bucket bounds (`le`) holding the median and the 99th percentile.
async fn scrape(base_url: &str, name: &str) -> Value {
    let text = match reqwest::get(format!("{base_url}/metrics")).await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(e) => return json!({ "error": e.to_string() }),
    };
    /// (le, cumulative count) buckets, sum, count of one label set.
    type Series = (Vec<(f64, f64)>, f64, f64);
    // labels (without le) -> series
    let mut series: std::collections::BTreeMap<String, Series> = Default::default();
    for line in text.lines().filter(|l| l.starts_with(name)) {
        let Some((sample, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (metric, labels) = sample
            .split_once('{')
            .map_or((sample, ""), |(m, l)| (m, l.trim_end_matches('}')));
        let mut le = None;
        let rest: Vec<&str> = labels
            .split(',')
            .filter(|kv| match kv.strip_prefix("le=") {
                Some(v) => {
                    le = Some(v.trim_matches('"').parse::<f64>().unwrap_or(f64::INFINITY));
                    false
                }
                None => !kv.is_empty(),
            })
            .collect();
        let entry = series.entry(rest.join(",")).or_default();
        if metric.ends_with("_bucket") {
            if let Some(le) = le {
                entry.0.push((le, value));
            }
        } else if metric.ends_with("_sum") {
            entry.1 = value;
        } else if metric.ends_with("_count") {
            entry.2 = value;
        }
    }
    let mut out = serde_json::Map::new();
    for (labels, (mut buckets, sum, count)) in series {
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let bound = |q: f64| {
            buckets
                .iter()
                .find(|(_, c)| *c >= q * count)
                .map(|(le, _)| {
                    if le.is_finite() {
                        json!(le * 1000.0)
                    } else {
                        json!("+Inf")
                    }
                })
        };
        out.insert(
            if labels.is_empty() {
                name.to_owned()
            } else {
                labels
            },
            json!({
                "count": count,
                "mean_ms": if count > 0.0 { round2(sum / count * 1000.0) } else { 0.0 },
                "p50_le_ms": bound(0.5),
                "p99_le_ms": bound(0.99),
            }),
        );
    }
    Value::Object(out)
}

/// Phase 2: `ironclad serve` alone (no dispatcher, no worker), ≥ 32 closed-loop clients for a
/// fixed time after a warm-up. Leaves the intake's PENDING outbox rows for phase 3.
pub async fn intake(ctx: &Ctx, mode: &Mode, db: &TestDb, prefix: &str) -> anyhow::Result<Value> {
    let blob_dir = ctx.scratch_dir()?;
    let env = phase_env(ctx, db, &blob_dir, prefix);
    let key = server::tenant_and_key(&ctx.bin, &env, "bench-intake").await?;
    let srv = Server::start(&ctx.bin, "serve", &env, ctx.logs.join("intake-serve.log")).await?;

    // Distinct PDFs, generated before the clock starts: enough for `assumed_max` cases/s.
    let assumed_max = 4000.0;
    let total_secs = mode.intake_warmup.as_secs_f64() + mode.intake_secs.as_secs_f64();
    let per_client = ((assumed_max * total_secs) / mode.clients as f64).ceil() as usize;
    let pools: Vec<Vec<Vec<u8>>> = (0..mode.clients)
        .map(|c| {
            (0..per_client)
                .map(|i| load::pdf(&format!("intake-{c}"), i))
                .collect()
        })
        .collect();
    let pdf_bytes = pools.first().and_then(|p| p.first()).map_or(0, Vec::len);

    let begin = Instant::now();
    let warm_end = begin + mode.intake_warmup;
    let stop = warm_end + mode.intake_secs;
    let pid = srv.pid;
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(warm_end.into()).await;
        let a = CpuSample::take(Some(pid));
        tokio::time::sleep_until(stop.into()).await;
        let b = CpuSample::take(Some(pid));
        a.split(&b)
    });
    let result = load::timed(&srv.base_url, &key, mode.clients, pools, stop).await;
    let cpu = sampler.await?;

    let total_ok = result.samples.iter().filter(|s| s.ok).count();
    let total_err = result.samples.len() - total_ok;
    let measured: Vec<_> = result
        .samples
        .iter()
        .filter(|s| s.start >= warm_end)
        .collect();
    let ok = measured.iter().filter(|s| s.ok).count();
    let last_done = measured
        .iter()
        .map(|s| s.start + s.latency)
        .max()
        .unwrap_or(stop);
    let window = last_done.duration_since(warm_end).as_secs_f64().max(1e-9);
    let mut lat: Vec<Duration> = measured.iter().map(|s| s.latency).collect();
    lat.sort_unstable();
    let mean_ms = if lat.is_empty() {
        0.0
    } else {
        lat.iter().map(Duration::as_secs_f64).sum::<f64>() / lat.len() as f64 * 1000.0
    };

    let server_metrics = scrape(&srv.base_url, "ironclad_intake_duration_seconds").await;
    let warnings = srv.warnings();
    let stopped = srv.stop().await;
    let (cases, pending): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM cases), (SELECT count(*) FROM outbox WHERE status = 'PENDING')",
    )
    .fetch_one(db.store.pool())
    .await?;

    let mut problems: Vec<String> = Vec::new();
    if total_err > 0 {
        problems.push(format!(
            "{total_err} request(s) did not get 201, e.g. {:?}",
            result.errors
        ));
    }
    if cases as usize != total_ok {
        problems.push(format!("{total_ok} 201 answers but {cases} case rows"));
    }
    if let Err(e) = stopped {
        problems.push(format!("server stop: {e:#}"));
    }
    let mut out = json!({
        "clients": mode.clients,
        "warmup_s": mode.intake_warmup.as_secs_f64(),
        "duration_s": round2(window),
        "requests": measured.len(),
        "ok": ok,
        "errors": total_err,
        "cases_per_s": round2(ok as f64 / window),
        "latency_p50_ms": percentile_ms(&lat, 0.50),
        "latency_p90_ms": percentile_ms(&lat, 0.90),
        "latency_p99_ms": percentile_ms(&lat, 0.99),
        "latency_max_ms": percentile_ms(&lat, 1.0),
        "latency_mean_ms": round2(mean_ms),
        "cases_in_db": cases,
        "pending_outbox_rows": pending,
        "pdf_bytes": pdf_bytes,
        "pdfs_generated_during_run": result.generated_late,
        "server_warnings": warnings.len(),
        "server_metrics": server_metrics,
        "cpu": cpu,
    });
    if !problems.is_empty() {
        out["error"] = json!(problems.join("; "));
    }
    Ok(out)
}

/// Phase 3: an in-process `Dispatcher` (batch 500) draining the PENDING outbox rows into the
/// stream, topped up with SQL-generated rows when intake left fewer than the minimum.
pub async fn dispatch(ctx: &Ctx, mode: &Mode, db: &TestDb, prefix: &str) -> anyhow::Result<Value> {
    let pool = db.store.pool();
    let intake_rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM outbox WHERE status = 'PENDING'")
            .fetch_one(pool)
            .await?;
    let envelope = Envelope::new(JobId::new(), CaseId::new(), JobKind::ProcessSource, 1).to_json();
    let mut added = 0i64;
    if intake_rows < mode.dispatch_topup_below {
        added = mode.dispatch_min_rows - intake_rows;
        sqlx::query(
            "INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
             SELECT gen_random_uuid(), 'bench:' || g, NULL, $1, 'PENDING' FROM generate_series(1, $2::bigint) g",
        )
        .bind(&envelope)
        .bind(added)
        .execute(pool)
        .await?;
    }
    sqlx::query("ANALYZE outbox").execute(pool).await?;
    let rows = intake_rows + added;

    let streams = StreamConfig {
        consumer: "bench-dispatcher".into(),
        ..StreamConfig::with_prefix(prefix)
    };
    let queue = Queue::connect(&ctx.redis_url, streams).await?;
    let len_before = queue.stream_len().await?;
    let config = RuntimeConfig {
        dispatch_batch: mode.dispatch_batch,
        ..RuntimeConfig::default()
    };

    let cpu_a = CpuSample::take(None);
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..mode.dispatchers {
        let d = Dispatcher::new(
            db.store.clone(),
            queue.clone(),
            config.clone(),
            Faults::none(),
        );
        tasks.spawn(async move {
            let (mut published, mut ticks) = (0u64, Vec::new());
            loop {
                let t = Instant::now();
                let r = d.tick().await?;
                published += r.published;
                anyhow::ensure!(
                    r.released == 0 && r.dead == 0,
                    "a publication failed: {r:?}"
                );
                if r.claimed == 0 {
                    return Ok::<_, anyhow::Error>((published, ticks));
                }
                ticks.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        });
    }
    let (mut published, mut tick_ms) = (0u64, Vec::new());
    while let Some(j) = tasks.join_next().await {
        let (p, t) = j??;
        published += p;
        tick_ms.extend(t);
    }
    let ticks = tick_ms.len();
    // How a full tick's time evolves over the drain (the first tenth vs the last tenth).
    let tenth = (ticks / 10).max(1);
    let avg = |xs: &[f64]| {
        if xs.is_empty() {
            0.0
        } else {
            round2(xs.iter().sum::<f64>() / xs.len() as f64)
        }
    };
    let tick_first = avg(&tick_ms[..tenth.min(ticks)]);
    let tick_last = avg(&tick_ms[ticks.saturating_sub(tenth)..]);
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_a.split(&CpuSample::take(None));

    let stream_added = queue.stream_len().await? - len_before;
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'")
        .fetch_one(pool)
        .await?;

    // Where one tick's time goes: the same three steps the dispatcher runs, timed apart, over a
    // smaller fresh batch of rows.
    let probe_rows = (mode.dispatch_min_rows / 5).max(mode.dispatch_batch);
    sqlx::query(
        "INSERT INTO outbox (id, idempotency_key, job_id, payload, status)
         SELECT gen_random_uuid(), 'probe:' || g, NULL, $1, 'PENDING' FROM generate_series(1, $2::bigint) g",
    )
    .bind(&envelope)
    .bind(probe_rows)
    .execute(pool)
    .await?;
    let (mut claim, mut publish, mut mark, mut batches) = (0.0f64, 0.0f64, 0.0f64, 0u32);
    loop {
        let t = Instant::now();
        let (token, batch) = db.store.outbox_claim_batch(mode.dispatch_batch).await?;
        claim += t.elapsed().as_secs_f64();
        if batch.is_empty() {
            break;
        }
        let ids: Vec<_> = batch.iter().map(|r| r.id).collect();
        let bodies: Vec<String> = batch.into_iter().map(|r| r.payload).collect();
        let t = Instant::now();
        let stream_ids = queue.publish(&bodies).await?;
        publish += t.elapsed().as_secs_f64();
        let t = Instant::now();
        db.store
            .outbox_mark_published(&ids, token, &stream_ids)
            .await?;
        mark += t.elapsed().as_secs_f64();
        batches += 1;
    }
    let per = |s: f64| round2(s * 1000.0 / f64::from(batches.max(1)));

    let mut problems = Vec::new();
    if published as i64 != rows {
        problems.push(format!("published {published} of {rows} rows"));
    }
    if stream_added != published {
        problems.push(format!(
            "stream grew by {stream_added} for {published} published rows"
        ));
    }
    if left != 0 {
        problems.push(format!(
            "{left} outbox row(s) not PUBLISHED after the drain"
        ));
    }
    let mut out = json!({
        "rows_from_intake": intake_rows,
        "rows_added_by_sql": added,
        "rows": rows,
        "published": published,
        "dispatchers": mode.dispatchers,
        "batch": mode.dispatch_batch,
        "ticks": ticks,
        "tick_ms_avg": avg(&tick_ms),
        "tick_ms_first_tenth": tick_first,
        "tick_ms_last_tenth": tick_last,
        "wall_s": round2(wall),
        "events_per_s": round2(published as f64 / wall),
        "tick_breakdown_ms": { "batches": batches, "claim": per(claim), "xadd_pipeline": per(publish), "mark_published": per(mark) },
        "cpu": cpu,
    });
    if !problems.is_empty() {
        out["error"] = json!(problems.join("; "));
    }
    Ok(out)
}

/// Phase 4: `ironclad all` (API + dispatcher + worker + reconciler, stand-in processor) on a
/// fresh database; M single-file cases from 32 clients; time from the first submit until every
/// case is AWAITING_REVIEW.
pub async fn end_to_end(
    ctx: &Ctx,
    mode: &Mode,
    db: &TestDb,
    prefix: &str,
) -> anyhow::Result<Value> {
    let blob_dir = ctx.scratch_dir()?;
    let env = phase_env(ctx, db, &blob_dir, prefix)
        .with("IRONCLAD_PROCESSOR", "stand-in")
        .with(
            "IRONCLAD_WORKER_CONCURRENCY",
            mode.worker_concurrency.to_string(),
        );
    let key = server::tenant_and_key(&ctx.bin, &env, "bench-e2e").await?;
    let srv = Server::start(&ctx.bin, "all", &env, ctx.logs.join("e2e-all.log")).await?;
    let m = mode.e2e_cases;
    let docs: Vec<Vec<u8>> = (0..m).map(|i| load::pdf("e2e", i)).collect();
    let pool = db.store.pool().clone();

    let cpu_a = CpuSample::take(Some(srv.pid));
    let t0 = Instant::now();
    let poller = {
        let pool = pool.clone();
        let timeout = mode.e2e_timeout;
        tokio::spawn(async move {
            loop {
                let (done, failed): (i64, i64) = sqlx::query_as(
                    "SELECT count(*) FILTER (WHERE status = 'AWAITING_REVIEW'), count(*) FILTER (WHERE status = 'FAILED') FROM cases",
                )
                .fetch_one(&pool)
                .await?;
                if done as usize >= m {
                    return Ok::<_, anyhow::Error>((t0.elapsed(), done, failed));
                }
                if failed > 0 {
                    anyhow::bail!("{failed} case(s) FAILED ({done} awaiting review)");
                }
                if t0.elapsed() > timeout {
                    anyhow::bail!("only {done} of {m} cases awaiting review after {timeout:?}");
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
    };
    let result = load::fixed(&srv.base_url, &key, mode.clients, docs).await;
    let intake_done = result
        .samples
        .iter()
        .map(|s| (s.start + s.latency).duration_since(t0))
        .max()
        .unwrap_or_default();
    let errors = result.samples.iter().filter(|s| !s.ok).count();
    let polled = if errors > 0 {
        poller.abort();
        Err(anyhow::anyhow!(
            "{errors} submission(s) did not get 201, e.g. {:?}",
            result.errors
        ))
    } else {
        poller.await?
    };
    let cpu = cpu_a.split(&CpuSample::take(Some(srv.pid)));
    let mut lat: Vec<Duration> = result.samples.iter().map(|s| s.latency).collect();
    lat.sort_unstable();

    // Per-case intake→decision latency and the DB-side span, from the rows' own timestamps.
    let (p50, p99, span): (Option<f64>, Option<f64>, Option<f64>) = sqlx::query_as(
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) * 1000, percentile_cont(0.99) WITHIN GROUP (ORDER BY x) * 1000,
                (SELECT extract(epoch FROM max(d.created_at) - min(c.created_at))::float8 FROM cases c JOIN decisions d ON d.case_id = c.id)
         FROM (SELECT extract(epoch FROM d.created_at - c.created_at)::float8 AS x FROM cases c JOIN decisions d ON d.case_id = c.id) t",
    )
    .fetch_one(&pool)
    .await?;
    let server_metrics = scrape(&srv.base_url, "ironclad_job_duration_seconds").await;
    let warnings = srv.warnings();
    let stopped = srv.stop().await;

    let mut out = json!({
        "cases": m,
        "clients": mode.clients,
        "worker_concurrency": mode.worker_concurrency,
        "submit_errors": errors,
        "intake_phase_s": round2(intake_done.as_secs_f64()),
        "intake_cases_per_s_under_processing": round2(m as f64 / intake_done.as_secs_f64().max(1e-9)),
        "intake_latency_p50_ms": percentile_ms(&lat, 0.5),
        "intake_latency_p99_ms": percentile_ms(&lat, 0.99),
        "case_to_decision_p50_ms": p50.map(round2),
        "case_to_decision_p99_ms": p99.map(round2),
        "db_span_s": span.map(round2),
        "server_warnings": warnings.len(),
        "server_metrics": server_metrics,
        "cpu": cpu,
    });
    let mut problems = Vec::new();
    match polled {
        Ok((wall, _, _)) => {
            out["wall_s"] = json!(round2(wall.as_secs_f64()));
            out["cases_per_s"] = json!(round2(m as f64 / wall.as_secs_f64()));
        }
        Err(e) => problems.push(format!("{e:#}")),
    }
    if let Err(e) = stopped {
        problems.push(format!("server stop: {e:#}"));
    }
    if !problems.is_empty() {
        out["error"] = json!(problems.join("; "));
    }
    Ok(out)
}
