//! `ironclad verify`: the promises of design §3 checked against what PostgreSQL holds (and, through
//! a caller-supplied digest function, what the blob store holds).
//!
//! Every check is one set-based statement (no per-case round trips), run together in one
//! read-only REPEATABLE READ transaction, so a verify of a live deployment sees one consistent
//! snapshot: a decision and its case's move to AWAITING_REVIEW are either both visible or
//! neither. Only the ledger (a load run's record of what clients were told) is looked up by key,
//! batched with `= ANY`/`unnest`. The blob check pages through `sources` outside that
//! transaction, because hashing blobs may take longer than a session may idle in one.
//!
//! The report lists every violation count and up to [`MAX_EXAMPLES`] examples per check, and
//! the full lists of case ids a chaos run needs to attribute violations to the faults that
//! struck those cases (`lost`, `duplicated`, `wrongly_failed`, `stuck`).

use crate::ledger::{Expectation, LedgerEntry};
use crate::{secs, Store, StoreResult};
use ironclad_core::FailureCode;
use serde::{Deserialize, Serialize, Serializer};
use sqlx::PgConnection;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::time::Duration;
use uuid::Uuid;

/// Examples kept per check (the count is always complete).
pub const MAX_EXAMPLES: usize = 10;

/// Name of the check that every accepted submission exists with its files.
pub const LOST: &str = "lost";
/// Name of the check that a refused submission committed nothing.
pub const REFUSED_CHANGED_SOMETHING: &str = "refused_changed_something";
/// Name of the check that no open case is idle too long.
pub const STUCK: &str = "stuck";
/// Name of the check that no case is FAILED that should not be.
pub const WRONGLY_FAILED: &str = "wrongly_failed";
/// Name of the check of one decision per case generation.
pub const DECISIONS_PER_GENERATION: &str = "decisions_per_generation";
/// Name of the check that no job succeeded twice.
pub const JOB_SUCCEEDED_TWICE: &str = "job_succeeded_twice";
/// Name of the check that every effect (job, finalize, decision event) happened once.
pub const EFFECTS_ONCE: &str = "effects_once";
/// Name of the check that every source's bytes are in the blob store.
pub const BLOBS: &str = "blobs";
/// Name of the check that no outbox row waits too long to be published.
pub const OUTBOX_OVERDUE: &str = "outbox_overdue";

/// Rows of `sources` read per page by the blob check.
const BLOB_PAGE: i64 = 1000;

// ── statements ───────────────────────────────────────────────────────────────────────────────

/// Every check sees one snapshot and can change nothing. First statement of the transaction.
const VERIFY_SNAPSHOT: &str = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// Tenants by name, for the ledger (which names tenants, not ids). $1 names.
const VERIFY_TENANTS: &str = "SELECT name, id FROM tenants WHERE name = ANY($1)";

/// Intake submissions under (tenant, idempotency key) pairs: what a client that got no answer
/// (or a refusal) may nevertheless have committed. $1 tenant ids, $2 keys, paired by position.
const VERIFY_SUBMISSIONS_BY_KEY: &str = r#"
SELECT s.tenant_id, s.idempotency_key AS key, s.case_id
FROM intake_submissions s
JOIN unnest($1::uuid[], $2::text[]) AS k(tenant_id, key)
  ON s.tenant_id = k.tenant_id AND s.idempotency_key = k.key
"#;

/// Cases whose intake audit event names one of the (tenant, idempotency key) pairs: a case
/// committed under a key, found even without its submission row. Scans the CASE_INGESTED
/// events, so it runs only for ledger entries that had to be refused. $1 tenant ids, $2 keys.
const VERIFY_INGESTED_BY_KEY: &str = r#"
SELECT a.tenant_id, a.data->>'idempotency_key' AS key, a.case_id
FROM audit_events a
JOIN unnest($1::uuid[], $2::text[]) AS k(tenant_id, key)
  ON a.tenant_id = k.tenant_id AND a.data->>'idempotency_key' = k.key
WHERE a.event_type = 'CASE_INGESTED' AND a.case_id IS NOT NULL
"#;

/// The cases `$1` (named by accepted ledger entries) with their tenant and the sha256 of each
/// of their sources.
const VERIFY_LEDGER_CASES: &str = r#"
SELECT c.id, c.tenant_id,
       coalesce(array_agg(s.sha256) FILTER (WHERE s.sha256 IS NOT NULL), '{}'::text[]) AS sources
FROM cases c LEFT JOIN sources s ON s.case_id = c.id
WHERE c.id = ANY($1)
GROUP BY c.id, c.tenant_id
"#;

/// FAILED cases that should not be: each of `$1` (cases whose submitter was owed a decision),
/// and every other one whose failure is not `document_unreadable` (a technical failure a person
/// must clean up).
const VERIFY_WRONGLY_FAILED: &str = r#"
SELECT id, failure_code, status_reason, id = ANY($1) AS owed_decision
FROM cases
WHERE status = 'FAILED' AND (id = ANY($1) OR failure_code IS DISTINCT FROM 'document_unreadable')
ORDER BY updated_at, id
"#;

/// One finalize decision per case generation (a reevaluation adds versions on purpose):
/// generations finalized more than once, cases in review or resolved without a decision for
/// their current generation, and decisions for a generation the case has not reached. No
/// parameters.
const VERIFY_DECISIONS_PER_GENERATION: &str = r#"
SELECT case_id,
       'generation ' || generation || ' has ' || count(*) || ' finalize decisions ('
       || string_agg(id::text, ', ' ORDER BY version) || ')' AS problem
FROM decisions WHERE origin = 'finalize' GROUP BY case_id, generation HAVING count(*) > 1
UNION ALL
SELECT c.id, c.status || ' without a decision for its generation ' || c.generation
FROM cases c
WHERE c.status IN ('AWAITING_REVIEW', 'RESOLVED')
  AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.case_id = c.id AND d.generation = c.generation)
UNION ALL
SELECT d.case_id, 'decision ' || d.id || ' is for generation ' || d.generation
       || ' but the case is at generation ' || c.generation
FROM decisions d JOIN cases c ON c.id = d.case_id
WHERE d.generation > c.generation
ORDER BY 1, 2
"#;

/// Jobs whose runs (`job_runs`) contradict "terminal jobs are never redone": a job with more
/// than one SUCCEEDED run; a SUCCEEDED job with runs but none SUCCEEDED (jobs from before
/// `job_runs` existed have no run at all and are not judged); a job that is not SUCCEEDED
/// although one of its runs was. No parameters.
const VERIFY_JOB_SUCCEEDED_TWICE: &str = r#"
SELECT j.case_id, 'job ' || j.id || ' (' || j.kind || ') has ' || count(*) || ' SUCCEEDED runs' AS problem
FROM job_runs r JOIN jobs j ON j.id = r.job_id
WHERE r.outcome = 'SUCCEEDED'
GROUP BY j.case_id, j.id, j.kind HAVING count(*) > 1
UNION ALL
SELECT j.case_id, 'job ' || j.id || ' (' || j.kind || ') is SUCCEEDED but none of its runs is'
FROM jobs j
WHERE j.status = 'SUCCEEDED'
  AND EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id)
  AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.outcome = 'SUCCEEDED')
UNION ALL
SELECT j.case_id, 'job ' || j.id || ' (' || j.kind || ') is ' || j.status || ' although a run of it SUCCEEDED'
FROM jobs j
WHERE j.status <> 'SUCCEEDED'
  AND EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.outcome = 'SUCCEEDED')
ORDER BY 1, 2
"#;

/// Effects that must happen once: exactly one `process_source` job per source and generation
/// of its case (1 to the current one) — or none, when a reprocess carried the source's reading
/// over into that generation (it then has segments there) — at most one `finalize_case` job
/// per case generation, at most one DECISION_GENERATED event per decision. No parameters.
const VERIFY_EFFECTS_ONCE: &str = r#"
SELECT s.case_id,
       'source ' || s.id || ' has ' || count(j.id) || ' process_source jobs in generation '
       || g.generation AS problem
FROM sources s
JOIN cases c ON c.id = s.case_id
CROSS JOIN LATERAL generate_series(1, c.generation) AS g(generation)
LEFT JOIN jobs j ON j.source_id = s.id AND j.kind = 'process_source' AND j.generation = g.generation
GROUP BY s.case_id, s.id, g.generation
HAVING count(j.id) > 1
    OR (count(j.id) = 0 AND NOT EXISTS (
        SELECT 1 FROM segments sg WHERE sg.source_id = s.id AND sg.generation = g.generation))
UNION ALL
SELECT case_id, 'generation ' || generation || ' has ' || count(*) || ' finalize_case jobs ('
       || string_agg(id::text, ', ' ORDER BY created_at, id) || ')'
FROM jobs WHERE kind = 'finalize_case'
GROUP BY case_id, generation HAVING count(*) > 1
UNION ALL
SELECT case_id, 'decision ' || coalesce(data->>'decision_id', '?') || ' has ' || count(*)
       || ' DECISION_GENERATED events'
FROM audit_events
WHERE event_type = 'DECISION_GENERATED' AND case_id IS NOT NULL
GROUP BY case_id, data->>'decision_id' HAVING count(*) > 1
ORDER BY 1, 2
"#;

/// Outbox rows overdue: PENDING and due for longer than `$1` seconds, or PUBLISHING (claimed by
/// a dispatcher) for longer than `$1` seconds, most overdue first, with the case of their job.
/// Only `$2` rows are returned; `total` counts them all.
const VERIFY_OUTBOX_OVERDUE: &str = r#"
SELECT o.id, o.job_id, j.case_id, o.status,
       extract(epoch FROM now() - CASE WHEN o.status = 'PENDING' THEN o.available_at
                                       ELSE o.locked_at END)::bigint AS overdue_seconds,
       o.attempts, o.last_error,
       count(*) OVER () AS total
FROM outbox o LEFT JOIN jobs j ON j.id = o.job_id
WHERE (o.status = 'PENDING' AND o.available_at <= now() - make_interval(secs => $1))
   OR (o.status = 'PUBLISHING' AND o.locked_at <= now() - make_interval(secs => $1))
ORDER BY overdue_seconds DESC, o.id
LIMIT $2
"#;

/// DEAD outbox rows: not a violation (an operator requeues them), but reported. No parameters.
const VERIFY_DEAD_OUTBOX: &str = "SELECT count(*) FROM outbox WHERE status = 'DEAD'";

/// Cases by status and failure code, for the totals. No parameters.
const VERIFY_CASE_TOTALS: &str =
    "SELECT status, failure_code, count(*) AS n FROM cases GROUP BY status, failure_code";

/// One page of sources in blob-key order, after the keyset position ($1 blob key, $2 source
/// id; $1 NULL starts at the beginning), at most $3 rows: the blob each names and the digest and
/// size it recorded. Consecutive rows share a key, so each blob is hashed once.
const VERIFY_SOURCE_BLOBS: &str = r#"
SELECT blob_key, sha256, size_bytes, case_id, id
FROM sources
WHERE $1::text IS NULL OR (blob_key, id) > ($1, $2)
ORDER BY blob_key, id
LIMIT $3
"#;

// ── rows ─────────────────────────────────────────────────────────────────────────────────────

/// A case a check names, with what is wrong with it.
#[derive(Debug, sqlx::FromRow)]
struct CaseProblem {
    case_id: Uuid,
    problem: String,
}

#[derive(Debug, sqlx::FromRow)]
struct KeyedCase {
    tenant_id: Uuid,
    key: String,
    case_id: Uuid,
}

#[derive(Debug, sqlx::FromRow)]
struct LedgerCase {
    id: Uuid,
    tenant_id: Uuid,
    sources: Vec<String>,
}

#[derive(Debug, sqlx::FromRow)]
struct FailedCase {
    id: Uuid,
    failure_code: Option<String>,
    status_reason: Option<String>,
    owed_decision: bool,
}

#[derive(Debug, sqlx::FromRow)]
struct OverdueOutboxRow {
    id: Uuid,
    job_id: Option<Uuid>,
    case_id: Option<Uuid>,
    status: String,
    overdue_seconds: i64,
    attempts: i32,
    last_error: Option<String>,
    total: i64,
}

#[derive(Debug, sqlx::FromRow)]
struct CaseCount {
    status: String,
    failure_code: Option<String>,
    n: i64,
}

#[derive(Debug, sqlx::FromRow)]
struct SourceBlob {
    blob_key: String,
    sha256: String,
    size_bytes: i64,
    case_id: Uuid,
    id: Uuid,
}

// ── report ───────────────────────────────────────────────────────────────────────────────────

/// One named check: what it promises, how many violations it found, and a few of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Stable name (`lost`, `stuck`, …).
    pub name: String,
    /// One line saying what the check holds the system to.
    pub description: String,
    /// Number of violations found.
    pub violations: u64,
    /// Up to [`MAX_EXAMPLES`] violations, each naming its case / job ids.
    pub examples: Vec<String>,
}

impl Check {
    fn new(name: &str, description: impl Into<String>) -> Self {
        Self {
            name: name.to_owned(),
            description: description.into(),
            violations: 0,
            examples: Vec::new(),
        }
    }

    /// Counts one violation; keeps its description while there is room for examples.
    fn record(&mut self, example: impl FnOnce() -> String) {
        self.violations += 1;
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(example());
        }
    }
}

/// What the database holds, in numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Every case.
    pub cases: u64,
    /// Cases awaiting review (decided).
    pub awaiting_review: u64,
    /// Cases resolved by a person.
    pub resolved: u64,
    /// Cases FAILED.
    pub failed: u64,
    /// FAILED cases by failure code (every known code, 0 included; `unknown` for rows failed
    /// before failure codes existed).
    pub failed_by_code: BTreeMap<String, u64>,
    /// Ledger entries whose client never got a (2xx or 4xx) answer.
    pub unacknowledged: u64,
    /// Ledger entries the API refused (4xx).
    pub refused: u64,
    /// DEAD outbox rows (not a violation; `ironclad requeue --dead` requeues them).
    pub dead_outbox_rows: u64,
}

/// Everything `ironclad verify` found. Serializes as
/// `{"ok", "checks", "lost", "duplicated", "wrongly_failed", "stuck", "totals"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct VerifyReport {
    /// Every check, in a fixed order.
    pub checks: Vec<Check>,
    /// Every lost ledger entry: its case id or, without one, its idempotency key.
    pub lost: Vec<String>,
    /// Every case involved in a `decisions_per_generation`, `job_succeeded_twice` or
    /// `effects_once` violation.
    pub duplicated: Vec<Uuid>,
    /// Every wrongly FAILED case.
    pub wrongly_failed: Vec<Uuid>,
    /// Every stuck case.
    pub stuck: Vec<Uuid>,
    /// Counts.
    pub totals: Totals,
}

impl VerifyReport {
    /// Whether every promise holds (DEAD outbox rows do not count against it).
    pub fn is_ok(&self) -> bool {
        self.checks.iter().all(|c| c.violations == 0)
    }

    /// The check named `name`.
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// Total violations over every check.
    pub fn violations(&self) -> u64 {
        self.checks.iter().map(|c| c.violations).sum()
    }
}

impl Serialize for VerifyReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            ok: bool,
            checks: &'a [Check],
            lost: &'a [String],
            duplicated: &'a [Uuid],
            wrongly_failed: &'a [Uuid],
            stuck: &'a [Uuid],
            totals: &'a Totals,
        }
        Wire {
            ok: self.is_ok(),
            checks: &self.checks,
            lost: &self.lost,
            duplicated: &self.duplicated,
            wrongly_failed: &self.wrongly_failed,
            stuck: &self.stuck,
            totals: &self.totals,
        }
        .serialize(serializer)
    }
}

/// What to hold the system to.
#[derive(Debug, Clone)]
pub struct VerifyOptions<'a> {
    /// A load run's ledger; without one, `lost` and `refused_changed_something` check nothing
    /// and `wrongly_failed` accepts only `document_unreadable` failures.
    pub ledger: Option<&'a [LedgerEntry]>,
    /// An open case idle longer than this is stuck (0 after quiescence: every open case is).
    pub stuck_after: Duration,
    /// A due PENDING or a PUBLISHING outbox row older than this is overdue.
    pub outbox_bound: Duration,
}

/// What the blob store holds under a key, as the caller's digest function found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobState {
    /// Bytes are there: their size and lowercase hex SHA-256.
    Present {
        /// Size in bytes.
        size: u64,
        /// Lowercase hex SHA-256.
        sha256: String,
    },
    /// Nothing is stored under the key.
    Missing,
    /// The bytes could not be read (I/O error, a key the store refuses), with why.
    Unreadable(String),
}

/// A threshold as an operator writes it: `15m`, `2h`, `90s`, `1.5s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_nanos() != 0 {
        format!("{}s", d.as_secs_f64())
    } else if s == 0 {
        "0s".to_owned()
    } else if s.is_multiple_of(86_400) {
        format!("{}d", s / 86_400)
    } else if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

// ── ledger ───────────────────────────────────────────────────────────────────────────────────

/// What holding the database to a ledger found.
struct LedgerFindings {
    lost: Check,
    lost_ids: Vec<String>,
    refused: Check,
    /// Existing cases whose submitter was owed a decision (expectation `decided`).
    owed_decision: Vec<Uuid>,
    unacknowledged: u64,
    refused_total: u64,
}

fn is_2xx(status: Option<u16>) -> bool {
    matches!(status, Some(200..=299))
}

fn is_4xx(status: Option<u16>) -> bool {
    matches!(status, Some(400..=499))
}

fn status_text(status: Option<u16>) -> String {
    status.map_or_else(|| "no answer".to_owned(), |s| s.to_string())
}

fn entry_label(e: &LedgerEntry) -> String {
    format!(
        "seq {} (tenant {}, key {})",
        e.seq, e.tenant, e.idempotency_key
    )
}

const LOST_DESCRIPTION: &str =
    "every submission answered 2xx exists for its tenant with exactly the files sent";
const REFUSED_DESCRIPTION: &str =
    "a submission that had to be refused was answered 4xx and committed nothing under its key";
const NO_LEDGER: &str = " (not checked: no ledger given)";

async fn check_ledger(
    conn: &mut PgConnection,
    entries: &[LedgerEntry],
) -> StoreResult<LedgerFindings> {
    let mut lost = Check::new(LOST, LOST_DESCRIPTION);
    let mut refused = Check::new(REFUSED_CHANGED_SOMETHING, REFUSED_DESCRIPTION);
    let mut lost_ids = Vec::new();

    let names: Vec<String> = entries
        .iter()
        .map(|e| e.tenant.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let tenants: HashMap<String, Uuid> = sqlx::query_as::<_, (String, Uuid)>(VERIFY_TENANTS)
        .bind(&names)
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();

    // Keys to look up: entries without a 2xx answer that either never got an answer (the case
    // may exist) or had to be refused (nothing may exist).
    let unanswered = |e: &LedgerEntry| !is_2xx(e.status) && !is_4xx(e.status);
    let mut key_tenants = Vec::new();
    let mut keys = Vec::new();
    let mut refused_tenants = Vec::new();
    let mut refused_keys = Vec::new();
    for e in entries {
        let Some(&tenant) = tenants.get(&e.tenant) else {
            continue;
        };
        if is_2xx(e.status) {
            continue;
        }
        if e.expect == Expectation::Refused || unanswered(e) {
            key_tenants.push(tenant);
            keys.push(e.idempotency_key.clone());
        }
        if e.expect == Expectation::Refused {
            refused_tenants.push(tenant);
            refused_keys.push(e.idempotency_key.clone());
        }
    }
    let mut under_key: HashMap<(Uuid, String), BTreeSet<Uuid>> = HashMap::new();
    for (sql, tenants, keys) in [
        (VERIFY_SUBMISSIONS_BY_KEY, &key_tenants, &keys),
        (VERIFY_INGESTED_BY_KEY, &refused_tenants, &refused_keys),
    ] {
        if keys.is_empty() {
            continue;
        }
        let found: Vec<KeyedCase> = sqlx::query_as(sql)
            .bind(tenants)
            .bind(keys)
            .fetch_all(&mut *conn)
            .await?;
        for k in found {
            under_key
                .entry((k.tenant_id, k.key))
                .or_default()
                .insert(k.case_id);
        }
    }

    // The cases accepted entries name.
    let named: Vec<Uuid> = entries
        .iter()
        .filter(|e| is_2xx(e.status))
        .filter_map(|e| e.case_id.as_deref().and_then(|c| c.parse().ok()))
        .collect::<BTreeSet<Uuid>>()
        .into_iter()
        .collect();
    let cases: HashMap<Uuid, LedgerCase> = if named.is_empty() {
        HashMap::new()
    } else {
        sqlx::query_as::<_, LedgerCase>(VERIFY_LEDGER_CASES)
            .bind(&named)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .map(|c| (c.id, c))
            .collect()
    };

    let mut owed_decision = BTreeSet::new();
    let mut unacknowledged = 0;
    let mut refused_total = 0;
    for e in entries {
        if is_4xx(e.status) {
            refused_total += 1;
        }
        if unanswered(e) {
            unacknowledged += 1;
        }
        let tenant = tenants.get(&e.tenant).copied();
        let found: Vec<Uuid> = tenant
            .and_then(|t| under_key.get(&(t, e.idempotency_key.clone())))
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();

        if e.expect == Expectation::Refused {
            if is_2xx(e.status) {
                refused.record(|| {
                    format!(
                        "{}: answered {} (case {}) although it had to be refused",
                        entry_label(e),
                        status_text(e.status),
                        e.case_id.as_deref().unwrap_or("?")
                    )
                });
            } else if !found.is_empty() {
                refused.record(|| {
                    format!(
                        "{}: answered {} but case {} exists under its key",
                        entry_label(e),
                        status_text(e.status),
                        join_ids(&found)
                    )
                });
            }
            continue;
        }
        if unanswered(e) {
            if e.expect == Expectation::Decided {
                owed_decision.extend(found);
            }
            continue;
        }
        if !is_2xx(e.status) {
            continue;
        }
        // Accepted: the case must exist for its tenant with exactly the files sent.
        let mut mark_lost = |id: String, why: String| {
            lost.record(|| format!("{}: {why}", entry_label(e)));
            lost_ids.push(id);
        };
        let case_id: Option<Uuid> = e.case_id.as_deref().and_then(|c| c.parse().ok());
        let Some(case_id) = case_id else {
            mark_lost(
                e.case_id
                    .clone()
                    .unwrap_or_else(|| e.idempotency_key.clone()),
                format!(
                    "answered {} without a valid case id ({:?})",
                    status_text(e.status),
                    e.case_id.as_deref().unwrap_or("")
                ),
            );
            continue;
        };
        let Some(tenant) = tenant else {
            mark_lost(
                case_id.to_string(),
                format!("case {case_id}: tenant {:?} does not exist", e.tenant),
            );
            continue;
        };
        let Some(case) = cases.get(&case_id) else {
            mark_lost(
                case_id.to_string(),
                format!("case {case_id} does not exist"),
            );
            continue;
        };
        if case.tenant_id != tenant {
            mark_lost(
                case_id.to_string(),
                format!("case {case_id} belongs to another tenant"),
            );
            continue;
        }
        let sent: BTreeSet<String> = e.files.iter().map(|f| f.to_ascii_lowercase()).collect();
        let stored: BTreeSet<String> = case.sources.iter().cloned().collect();
        if sent != stored {
            let missing = sent.difference(&stored).count();
            let extra = stored.difference(&sent).count();
            mark_lost(
                case_id.to_string(),
                format!(
                    "case {case_id} does not hold the files sent: {missing} sent file(s) missing, \
                     {extra} other source(s)"
                ),
            );
            continue;
        }
        if e.expect == Expectation::Decided {
            owed_decision.insert(case_id);
        }
    }
    Ok(LedgerFindings {
        lost,
        lost_ids,
        refused,
        owed_decision: owed_decision.into_iter().collect(),
        unacknowledged,
        refused_total,
    })
}

fn join_ids(ids: &[Uuid]) -> String {
    ids.iter()
        .map(Uuid::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

// ── the checks ───────────────────────────────────────────────────────────────────────────────

async fn case_problems(
    conn: &mut PgConnection,
    sql: &'static str,
    check: &mut Check,
    involved: &mut BTreeSet<Uuid>,
) -> StoreResult<()> {
    let rows: Vec<CaseProblem> = sqlx::query_as(sql).fetch_all(&mut *conn).await?;
    for r in rows {
        check.record(|| format!("case {}: {}", r.case_id, r.problem));
        involved.insert(r.case_id);
    }
    Ok(())
}

fn u64_of(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl Store {
    /// Checks every promise and reports each violation. `digest` is given the distinct blob
    /// keys of one page of sources at a time and answers what the blob store holds under each,
    /// in the same order (the caller hashes; the store crate knows no blob store).
    pub async fn verify<D, F>(
        &self,
        options: &VerifyOptions<'_>,
        digest: D,
    ) -> StoreResult<VerifyReport>
    where
        D: FnMut(Vec<String>) -> F,
        F: Future<Output = Vec<BlobState>>,
    {
        let mut tx = self.pool().begin().await?;
        sqlx::query(VERIFY_SNAPSHOT).execute(&mut *tx).await?;
        let mut report = verify_database(&mut tx, options).await?;
        tx.commit().await?;
        let blobs = self.verify_blobs(digest).await?;
        let at = report
            .checks
            .iter()
            .position(|c| c.name == OUTBOX_OVERDUE)
            .unwrap_or(report.checks.len());
        report.checks.insert(at, blobs);
        Ok(report)
    }

    /// The `blobs` check: every source's blob is stored with its recorded sha256 and size.
    /// Pages through the sources in key order; each distinct key is digested once.
    async fn verify_blobs<D, F>(&self, mut digest: D) -> StoreResult<Check>
    where
        D: FnMut(Vec<String>) -> F,
        F: Future<Output = Vec<BlobState>>,
    {
        let mut check = Check::new(
            BLOBS,
            "every source's blob is in the blob store with its recorded sha256 and size",
        );
        let mut after: Option<(String, Uuid)> = None;
        // The last key digested, carried over a page boundary so it is not hashed twice.
        let mut last: Option<(String, BlobState)> = None;
        loop {
            let rows: Vec<SourceBlob> = sqlx::query_as(VERIFY_SOURCE_BLOBS)
                .bind(after.as_ref().map(|a| a.0.as_str()))
                .bind(after.as_ref().map(|a| a.1))
                .bind(BLOB_PAGE)
                .fetch_all(self.pool())
                .await?;
            let Some(tail) = rows.last() else { break };
            after = Some((tail.blob_key.clone(), tail.id));
            let mut keys: Vec<String> = Vec::new();
            for r in &rows {
                let known = last.as_ref().is_some_and(|(k, _)| *k == r.blob_key);
                if !known && keys.last() != Some(&r.blob_key) {
                    keys.push(r.blob_key.clone());
                }
            }
            let mut states: HashMap<String, BlobState> = HashMap::new();
            if let Some((k, s)) = last.take() {
                states.insert(k, s);
            }
            if !keys.is_empty() {
                let answers = digest(keys.clone()).await;
                let mut answers = answers.into_iter();
                for k in keys {
                    let state = answers.next().unwrap_or_else(|| {
                        BlobState::Unreadable("the digest function gave no answer".into())
                    });
                    states.insert(k, state);
                }
            }
            for r in &rows {
                let Some(state) = states.get(&r.blob_key) else {
                    continue;
                };
                let problem = match state {
                    BlobState::Missing => Some("missing".to_owned()),
                    BlobState::Unreadable(why) => Some(format!("unreadable ({why})")),
                    BlobState::Present { size, sha256 } => {
                        if *sha256 != r.sha256 || i64::try_from(*size).ok() != Some(r.size_bytes) {
                            Some(format!(
                                "mismatched (recorded sha256 {} size {}, stored sha256 {sha256} size {size})",
                                r.sha256, r.size_bytes
                            ))
                        } else {
                            None
                        }
                    }
                };
                if let Some(problem) = problem {
                    check.record(|| {
                        format!(
                            "{problem}: blob {} of source {} (case {})",
                            r.blob_key, r.id, r.case_id
                        )
                    });
                }
            }
            if let Some(state) = states.remove(&tail.blob_key) {
                last = Some((tail.blob_key.clone(), state));
            }
            if (rows.len() as i64) < BLOB_PAGE {
                break;
            }
        }
        Ok(check)
    }
}

/// Every check but `blobs`, in one snapshot.
async fn verify_database(
    conn: &mut PgConnection,
    options: &VerifyOptions<'_>,
) -> StoreResult<VerifyReport> {
    let ledger = match options.ledger {
        Some(entries) => Some(check_ledger(&mut *conn, entries).await?),
        None => None,
    };

    let mut stuck = Check::new(
        STUCK,
        format!(
            "no open case (INGESTED, PROCESSING) without activity for longer than {}",
            seconds(options.stuck_after)
        ),
    );
    let idle = crate::stuck::fetch(
        &mut *conn,
        crate::stuck::StuckScope::Operator,
        options.stuck_after,
        i64::MAX,
    )
    .await?;
    let mut stuck_ids = Vec::with_capacity(idle.len());
    for c in idle {
        stuck.record(|| {
            format!(
                "case {} {} idle {}s: {}",
                c.case.id, c.case.status, c.idle_seconds, c.reason
            )
        });
        stuck_ids.push(c.case.id);
    }

    let owed: Vec<Uuid> = ledger
        .as_ref()
        .map(|l| l.owed_decision.clone())
        .unwrap_or_default();
    let mut wrongly_failed = Check::new(
        WRONGLY_FAILED,
        if ledger.is_some() {
            "no case FAILED that was owed a decision, nor any FAILED for a reason other than document_unreadable"
        } else {
            "no case FAILED for a reason other than document_unreadable (a technical failure a person must clean up)"
        },
    );
    let failed: Vec<FailedCase> = sqlx::query_as(VERIFY_WRONGLY_FAILED)
        .bind(&owed)
        .fetch_all(&mut *conn)
        .await?;
    let mut failed_ids = Vec::with_capacity(failed.len());
    for c in failed {
        wrongly_failed.record(|| {
            format!(
                "case {} FAILED ({}){}{}",
                c.id,
                c.failure_code.as_deref().unwrap_or("no code"),
                c.status_reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default(),
                if c.owed_decision {
                    "; its submitter was owed a decision"
                } else {
                    ""
                }
            )
        });
        failed_ids.push(c.id);
    }

    let mut involved = BTreeSet::new();
    let mut decisions = Check::new(
        DECISIONS_PER_GENERATION,
        "one decision per case generation; every case in review or resolved has one for its \
         current generation; none for a generation the case has not reached",
    );
    case_problems(
        conn,
        VERIFY_DECISIONS_PER_GENERATION,
        &mut decisions,
        &mut involved,
    )
    .await?;
    let mut twice = Check::new(
        JOB_SUCCEEDED_TWICE,
        "no job has more than one SUCCEEDED run; a SUCCEEDED job with runs has a SUCCEEDED one; \
         a job with a SUCCEEDED run is SUCCEEDED",
    );
    case_problems(conn, VERIFY_JOB_SUCCEEDED_TWICE, &mut twice, &mut involved).await?;
    let mut effects = Check::new(
        EFFECTS_ONCE,
        "one process_source job per source and generation, at most one finalize_case job per \
         generation, at most one DECISION_GENERATED event per decision",
    );
    case_problems(conn, VERIFY_EFFECTS_ONCE, &mut effects, &mut involved).await?;

    let mut outbox = Check::new(
        OUTBOX_OVERDUE,
        format!(
            "no outbox row due (PENDING) or PUBLISHING for longer than {}",
            seconds(options.outbox_bound)
        ),
    );
    let overdue: Vec<OverdueOutboxRow> = sqlx::query_as(VERIFY_OUTBOX_OVERDUE)
        .bind(secs(options.outbox_bound))
        .bind(MAX_EXAMPLES as i64)
        .fetch_all(&mut *conn)
        .await?;
    outbox.violations = overdue.first().map_or(0, |r| u64_of(r.total));
    outbox.examples = overdue
        .iter()
        .map(|r| {
            format!(
                "outbox row {} (job {}, case {}) {} overdue {}s, {} attempt(s){}",
                r.id,
                r.job_id.map_or_else(|| "-".to_owned(), |j| j.to_string()),
                r.case_id.map_or_else(|| "-".to_owned(), |c| c.to_string()),
                r.status,
                r.overdue_seconds,
                r.attempts,
                r.last_error
                    .as_deref()
                    .map(|e| format!(", last error: {e}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    let dead: i64 = sqlx::query_scalar(VERIFY_DEAD_OUTBOX)
        .fetch_one(&mut *conn)
        .await?;

    let mut totals = Totals {
        dead_outbox_rows: u64_of(dead),
        failed_by_code: FailureCode::ALL
            .iter()
            .map(|c| (c.as_str().to_owned(), 0))
            .collect(),
        ..Totals::default()
    };
    let counts: Vec<CaseCount> = sqlx::query_as(VERIFY_CASE_TOTALS)
        .fetch_all(&mut *conn)
        .await?;
    for c in counts {
        let n = u64_of(c.n);
        totals.cases += n;
        match c.status.as_str() {
            "AWAITING_REVIEW" => totals.awaiting_review += n,
            "RESOLVED" => totals.resolved += n,
            "FAILED" => {
                totals.failed += n;
                let code = c.failure_code.unwrap_or_else(|| "unknown".to_owned());
                *totals.failed_by_code.entry(code).or_default() += n;
            }
            _ => {}
        }
    }

    let (lost, lost_ids, refused) = match ledger {
        Some(l) => {
            totals.unacknowledged = l.unacknowledged;
            totals.refused = l.refused_total;
            (l.lost, l.lost_ids, l.refused)
        }
        None => (
            Check::new(LOST, format!("{LOST_DESCRIPTION}{NO_LEDGER}")),
            Vec::new(),
            Check::new(
                REFUSED_CHANGED_SOMETHING,
                format!("{REFUSED_DESCRIPTION}{NO_LEDGER}"),
            ),
        ),
    };
    // A case listed twice (several problems) is named once.
    let mut seen = HashSet::new();
    let lost_ids = lost_ids
        .into_iter()
        .filter(|id| seen.insert(id.clone()))
        .collect();
    Ok(VerifyReport {
        checks: vec![
            lost,
            refused,
            stuck,
            wrongly_failed,
            decisions,
            twice,
            effects,
            outbox,
        ],
        lost: lost_ids,
        duplicated: involved.into_iter().collect(),
        wrongly_failed: failed_ids,
        stuck: stuck_ids,
        totals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(violations: u64) -> VerifyReport {
        let mut check = Check::new(STUCK, "d");
        for i in 0..violations {
            check.record(|| format!("example {i}"));
        }
        VerifyReport {
            checks: vec![Check::new(LOST, "d"), check],
            lost: Vec::new(),
            duplicated: Vec::new(),
            wrongly_failed: Vec::new(),
            stuck: Vec::new(),
            totals: Totals::default(),
        }
    }

    #[test]
    fn examples_are_capped_but_counts_are_not() {
        let r = report(25);
        let stuck = r.check(STUCK).map(|c| (c.violations, c.examples.len()));
        assert_eq!(stuck, Some((25, MAX_EXAMPLES)));
        assert!(!r.is_ok());
        assert_eq!(r.violations(), 25);
        assert!(report(0).is_ok());
    }

    #[test]
    fn json_carries_ok_and_reads_back() -> Result<(), serde_json::Error> {
        let r = report(1);
        let json = serde_json::to_value(&r)?;
        assert_eq!(json["ok"], serde_json::json!(false));
        let keys: Vec<&str> = json
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            keys.into_iter().collect::<BTreeSet<_>>(),
            [
                "checks",
                "duplicated",
                "lost",
                "ok",
                "stuck",
                "totals",
                "wrongly_failed"
            ]
            .into_iter()
            .collect()
        );
        assert_eq!(serde_json::from_value::<VerifyReport>(json)?, r);
        Ok(())
    }

    #[test]
    fn statuses_classify_answers() {
        assert!(is_2xx(Some(201)) && !is_2xx(Some(409)) && !is_2xx(None));
        assert!(is_4xx(Some(422)) && !is_4xx(Some(503)) && !is_4xx(None));
        assert_eq!(seconds(Duration::from_secs(900)), "15m");
        assert_eq!(seconds(Duration::from_secs(7200)), "2h");
        assert_eq!(seconds(Duration::from_secs(90)), "90s");
        assert_eq!(seconds(Duration::ZERO), "0s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5s");
    }
}
