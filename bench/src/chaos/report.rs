//! What a chaos phase came to: per fault type, how often it struck, the cases it hit, how many
//! of those were lost, duplicated or wrongly failed (from `ironclad verify`), and how long the
//! work it hit took to move again.

use super::faults::Struck;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use uuid::Uuid;

/// One row of the table.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FaultRow {
    pub fault: String,
    pub injected: usize,
    pub not_reached: usize,
    pub cases_affected: usize,
    pub lost: usize,
    pub duplicated: usize,
    pub wrongly_failed: usize,
    /// Seconds from the fault cleared to the work it hit moving again (worst strike).
    pub max_recovery_secs: Option<f64>,
}

/// The case lists `ironclad verify --json` reports.
#[derive(Debug, Clone, Default)]
pub struct Damage {
    pub lost: HashSet<String>,
    pub duplicated: HashSet<String>,
    pub wrongly_failed: HashSet<String>,
    pub stuck: HashSet<String>,
}

impl Damage {
    /// Reads the lists out of verify's JSON.
    pub fn from_verify(json: &serde_json::Value) -> Self {
        let set = |key: &str| -> HashSet<String> {
            json[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        Self {
            lost: set("lost"),
            duplicated: set("duplicated"),
            wrongly_failed: set("wrongly_failed"),
            stuck: set("stuck"),
        }
    }
}

/// For each job, the first run start or run end after `after` (`None`: it never moved again).
const NEXT_EVENT: &str = r#"
SELECT j.id,
       (SELECT min(e) FROM (
            SELECT r.started_at AS e FROM job_runs r WHERE r.job_id = j.id AND r.started_at > $2
            UNION ALL
            SELECT r.finished_at FROM job_runs r WHERE r.job_id = j.id AND r.finished_at > $2) x)
FROM unnest($1::uuid[]) AS j(id)
"#;

/// Seconds from `cleared_at` to the hit work moving again: every job that was running must
/// have moved (finished, or run again), and the waiting ones must have started moving (the
/// first of them running again). `None` when the fault hit no work.
pub async fn recovery(db: &sqlx::PgPool, struck: &Struck) -> anyhow::Result<Option<Recovery>> {
    if struck.hit.is_empty() {
        return Ok(None);
    }
    let next = next_events(db, struck).await?;
    let after_clear =
        |t: DateTime<Utc>| ((t - struck.cleared_at).num_milliseconds() as f64 / 1000.0).max(0.0);
    let moved = |status: &'static str| {
        struck
            .hit
            .iter()
            .filter(move |j| j.status == status)
            .filter_map(|j| {
                next.get(&j.job)
                    .copied()
                    .flatten()
                    .map(|t| (after_clear(t), j.job))
            })
    };
    let running = moved("RUNNING").max_by(|a, b| a.0.total_cmp(&b.0));
    let waiting = moved("PENDING").min_by(|a, b| a.0.total_cmp(&b.0));
    let worst = match (running, waiting) {
        (Some(a), Some(b)) => Some(if a.0 >= b.0 { a } else { b }),
        (a, b) => a.or(b),
    };
    Ok(worst.map(|(secs, job)| Recovery { secs, job }))
}

/// For each job a fault hit, its first run start or end after the strike.
async fn next_events(
    db: &sqlx::PgPool,
    struck: &Struck,
) -> anyhow::Result<BTreeMap<Uuid, Option<DateTime<Utc>>>> {
    let ids: Vec<Uuid> = struck.hit.iter().map(|j| j.job).collect();
    let rows: Vec<(Uuid, Option<DateTime<Utc>>)> = sqlx::query_as(NEXT_EVENT)
        .bind(&ids)
        .bind(struck.struck_at)
        .fetch_all(db)
        .await?;
    Ok(rows.into_iter().collect())
}

/// Whether the work a fault hit has moved again: every job that was running has finished or
/// run again, and (if any was waiting) one of the waiting jobs has run.
pub async fn moved_again(db: &sqlx::PgPool, struck: &Struck) -> anyhow::Result<bool> {
    if struck.hit.is_empty() {
        return Ok(true);
    }
    let next = next_events(db, struck).await?;
    let moved = |j: &&super::faults::InFlight| next.get(&j.job).copied().flatten().is_some();
    let running_moved = struck
        .hit
        .iter()
        .filter(|j| j.status == "RUNNING")
        .all(|j| moved(&j));
    let waiting: Vec<_> = struck
        .hit
        .iter()
        .filter(|j| j.status == "PENDING")
        .collect();
    Ok(running_moved && (waiting.is_empty() || waiting.iter().any(moved)))
}

/// How long the work a fault hit took to move again, and the job that took longest.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Recovery {
    pub secs: f64,
    pub job: Uuid,
}

/// The table: one row per fault type, in first-struck order.
pub async fn table(
    db: &sqlx::PgPool,
    struck: &[Struck],
    damage: &Damage,
) -> anyhow::Result<(Vec<FaultRow>, Vec<Option<Recovery>>)> {
    let mut rows: Vec<FaultRow> = Vec::new();
    let mut recoveries = Vec::new();
    let mut cases: BTreeMap<String, HashSet<Uuid>> = BTreeMap::new();
    for s in struck {
        let name = s.fault.type_name().to_owned();
        let index = match rows.iter().position(|r| r.fault == name) {
            Some(i) => i,
            None => {
                rows.push(FaultRow {
                    fault: name.clone(),
                    ..FaultRow::default()
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[index];
        if s.injected {
            row.injected += 1;
        } else {
            row.not_reached += 1;
        }
        let hit = cases.entry(name).or_default();
        hit.extend(s.hit.iter().map(|j| j.case));
        let r = recovery(db, s).await?;
        if let Some(r) = r {
            row.max_recovery_secs =
                Some(row.max_recovery_secs.map_or(r.secs, |m: f64| m.max(r.secs)));
        }
        recoveries.push(r);
    }
    for row in &mut rows {
        let hit = cases.get(&row.fault).cloned().unwrap_or_default();
        let count =
            |set: &HashSet<String>| hit.iter().filter(|c| set.contains(&c.to_string())).count();
        row.cases_affected = hit.len();
        // A case still open after quiescence is as good as lost to its client.
        row.lost = count(&damage.lost) + count(&damage.stuck);
        row.duplicated = count(&damage.duplicated);
        row.wrongly_failed = count(&damage.wrongly_failed);
    }
    Ok((rows, recoveries))
}

/// When 99 % of the decisions were written (the last 1 % waits for provider retries, which
/// measures the retry backoff rather than the pipeline), and how many decisions there are.
pub async fn decided_p99(db: &sqlx::PgPool) -> anyhow::Result<(Option<DateTime<Utc>>, i64)> {
    Ok(sqlx::query_as(
        "SELECT percentile_disc(0.99) WITHIN GROUP (ORDER BY created_at), count(*) FROM decisions",
    )
    .fetch_one(db)
    .await?)
}

/// Seconds from intake to decision of the decided cases: p50, p95 and the longest.
pub async fn latency(db: &sqlx::PgPool) -> anyhow::Result<serde_json::Value> {
    let row: (Option<Vec<f64>>, i64) = sqlx::query_as(
        "SELECT percentile_cont(ARRAY[0.5, 0.95, 1.0]) WITHIN GROUP
                  (ORDER BY extract(epoch FROM d.created_at - c.created_at)::float8),
                count(*)
         FROM cases c JOIN decisions d ON d.case_id = c.id",
    )
    .fetch_one(db)
    .await?;
    let q = row.0.unwrap_or_default();
    Ok(serde_json::json!({
        "decided": row.1,
        "p50_secs": q.first(),
        "p95_secs": q.get(1),
        "max_secs": q.get(2),
    }))
}

/// The table as Markdown.
pub fn markdown(rows: &[FaultRow]) -> String {
    let mut out = String::from(
        "| fault | injected | cases affected | lost | duplicated | wrongly failed | max recovery |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let injected = if r.not_reached > 0 {
            format!("{} ({} not reached)", r.injected, r.not_reached)
        } else {
            r.injected.to_string()
        };
        let recovery = r
            .max_recovery_secs
            .map(|s| format!("{s:.1} s"))
            .unwrap_or_else(|| "–".to_owned());
        out.push_str(&format!(
            "| {} | {injected} | {} | {} | {} | {} | {recovery} |\n",
            r.fault, r.cases_affected, r.lost, r.duplicated, r.wrongly_failed
        ));
    }
    out
}
