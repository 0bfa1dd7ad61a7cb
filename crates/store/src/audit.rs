//! The audit trail's hash chain: sealed (`Store::seal_audit_events`) and checked
//! (`ironclad audit verify`).
//!
//! The chain is made by the database (migrations `0006_audit_chain.sql`,
//! `0008_audit_sealing.sql` and `0014_audit_seal_in_order.sql`): an event is inserted unsealed,
//! and `audit_seal` — run by every role's sealer every fraction of a second, and before every
//! check — gives each committed unsealed row its tenant's next `chain_seq`, the previous row's
//! hash as `prev_hash`, and a `hash` over both and the row's content. The append-only trigger
//! accepts a seal only at the head's next position with the right hash, and moves the head.
//! This module walks each chain in order and recomputes every hash with the same SQL function
//! the sealer used
//! (`audit_event_hash`), so the canonical text has one definition. It reports what a change
//! behind the triggers' back leaves:
//!
//! - [`ProblemKind::Edited`]: a row's content no longer matches its hash, or the newest row's
//!   hash is not the one its chain head recorded (the row was replaced);
//! - [`ProblemKind::Inserted`]: a position taken twice, a `prev_hash` that is not the hash of
//!   the row before, or a row beyond the chain head (sealed by something other than
//!   `audit_seal`, which moves the head with every row it seals);
//! - [`ProblemKind::Deleted`]: a gap in `chain_seq`, or a head that names positions past the
//!   newest row (the newest rows were deleted), or a chain without a head.
//!
//! The walk runs in one read-only REPEATABLE READ transaction, so rows and heads come from one
//! snapshot and appends committed meanwhile are simply not seen.

use crate::{Store, StoreError};
use serde::Serialize;
use sqlx::{PgConnection, Postgres, Transaction};
use std::collections::HashMap;
use uuid::Uuid;

/// `prev_hash` of each chain's first row.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Chain key of events that have no tenant.
pub const SYSTEM_CHAIN: Uuid = Uuid::nil();

/// Events sealed per chain per `audit_seal` call: bounds how long one seal holds a head.
pub const SEAL_BATCH: i32 = 2_000;

/// Seal calls [`Store::seal_all_audit_events`] makes at most (a writer faster than the sealer
/// must not keep a check from starting).
const SEAL_ROUNDS: usize = 50;

/// Rows read per round trip while walking a chain.
const PAGE: i64 = 5_000;

/// Problems kept in a report; the count stays complete (`problems_omitted`). A chain rewritten
/// wholesale would otherwise produce one problem per row.
pub const MAX_PROBLEMS: usize = 10_000;

// ── statements ───────────────────────────────────────────────────────────────────────────────

/// One snapshot for rows and heads, and no writes. First statement of the transaction.
const AUDIT_SNAPSHOT: &str = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// Whether migrations 0006 and 0008 made the chain (the functions that hash and seal).
const AUDIT_CHAIN_PRESENT: &str =
    "SELECT to_regproc('audit_event_hash') IS NOT NULL AND to_regproc('audit_seal') IS NOT NULL";

/// Seals up to $1 committed events per chain, skipping the chains another sealer holds unless
/// $2 (patient); answers how many (migrations 0008, 0014).
const AUDIT_SEAL: &str = "SELECT audit_seal($1, $2)";

/// Seconds since the oldest committed unsealed event was written (NULL when none).
const AUDIT_OLDEST_UNSEALED: &str =
    "SELECT extract(epoch FROM now() - min(created_at))::float8 FROM audit_events WHERE hash IS NULL";

/// Events of chain $1 committed but not yet sealed (not walked; reported).
const AUDIT_AWAITING_SEAL: &str = r#"
SELECT count(*) FROM audit_events
WHERE hash IS NULL AND coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid) = $1
"#;

/// Every chain: those with a head, and those with rows (a head may have been deleted).
const AUDIT_CHAINS: &str = r#"
SELECT tenant_key FROM audit_chain_heads
UNION
SELECT DISTINCT coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid) FROM audit_events
ORDER BY 1
"#;

/// Whether `$1` names a chain (a head or a row).
const AUDIT_CHAIN_EXISTS: &str = r#"
SELECT EXISTS (SELECT 1 FROM audit_chain_heads WHERE tenant_key = $1)
    OR EXISTS (SELECT 1 FROM audit_events
               WHERE coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid) = $1)
"#;

const AUDIT_CHAIN_HEAD: &str =
    "SELECT last_seq, last_hash FROM audit_chain_heads WHERE tenant_key = $1";

/// Tenant names, for the report. $1 ids.
const AUDIT_TENANT_NAMES: &str = "SELECT id, name FROM tenants WHERE id = ANY($1)";

/// One page of a chain in walking order, each row with the hash its content should have.
/// $1 chain key, ($2, $3) the last (chain_seq, id) read, $4 page size. Uses the unique index
/// `audit_events_chain_position` (key, chain_seq); `id` only breaks ties between duplicated
/// positions, which that index forbids unless someone dropped it.
const AUDIT_CHAIN_PAGE: &str = r#"
SELECT id, chain_seq, prev_hash, hash,
       audit_event_hash(prev_hash, chain_seq, $1, case_id, actor, event_type, data, created_at)
FROM audit_events
WHERE coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid) = $1
  AND chain_seq >= $2 AND (chain_seq, id) > ($2, $3)
ORDER BY chain_seq, id
LIMIT $4
"#;

// ── report ───────────────────────────────────────────────────────────────────────────────────

/// What a tampered chain shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A row's content or hash was changed.
    Edited,
    /// A row was added other than by the chain trigger.
    Inserted,
    /// A row (or a chain head) was removed.
    Deleted,
}

impl ProblemKind {
    /// The spelling used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Edited => "edited",
            Self::Inserted => "inserted",
            Self::Deleted => "deleted",
        }
    }
}

/// One break in a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainProblem {
    /// The chain: a tenant id, or [`SYSTEM_CHAIN`] for events without a tenant.
    pub tenant: Uuid,
    /// Where in the chain (for a deletion, the first missing position).
    pub chain_seq: i64,
    /// The row concerned; `None` when the row is gone.
    pub event_id: Option<i64>,
    /// What the break shows.
    pub kind: ProblemKind,
    /// The evidence, for a person.
    pub detail: String,
}

/// One chain as found: record `last_hash` outside the database to detect, later, a rewrite of
/// the whole chain by someone who could also disable the triggers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainSummary {
    /// The chain key (tenant id, or [`SYSTEM_CHAIN`]).
    pub tenant: Uuid,
    /// The tenant's name, when the chain is a tenant's.
    pub tenant_name: Option<String>,
    /// Rows walked.
    pub events: u64,
    /// Position the head records (0: no head).
    pub last_seq: i64,
    /// Hash the head records.
    pub last_hash: Option<String>,
    /// Events committed but not yet sealed when the walk began (not walked).
    pub awaiting_seal: u64,
}

/// The result of [`Store::verify_audit_chain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainReport {
    /// No problem found.
    pub ok: bool,
    /// Chains walked.
    pub tenants_checked: u64,
    /// Rows walked, over all chains.
    pub events_checked: u64,
    /// Events committed after the check sealed the chains, so not walked, over all chains.
    pub events_awaiting_seal: u64,
    /// The breaks found, chain by chain in order (at most [`MAX_PROBLEMS`]).
    pub problems: Vec<ChainProblem>,
    /// Problems found beyond [`MAX_PROBLEMS`] and not listed.
    pub problems_omitted: u64,
    /// Each chain's head, as found.
    pub chains: Vec<ChainSummary>,
}

/// Why the chain could not be checked at all (as opposed to a chain found broken).
#[derive(Debug, thiserror::Error)]
pub enum ChainCheckError {
    /// The database predates the chain.
    #[error("this database has no audit chain (migrations 0006_audit_chain and 0008_audit_sealing are not applied; run `ironclad migrate`)")]
    NotMigrated,
    /// The chain asked for does not exist.
    #[error("no audit chain for tenant {0}")]
    UnknownChain(Uuid),
    /// PostgreSQL failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for ChainCheckError {
    fn from(err: sqlx::Error) -> Self {
        Self::Store(err.into())
    }
}

// ── the walk ─────────────────────────────────────────────────────────────────────────────────

/// One row as the walk sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChainRow {
    pub id: i64,
    pub chain_seq: i64,
    pub prev_hash: String,
    pub hash: String,
    /// The hash recomputed from the row's content.
    pub expected: String,
}

/// A chain's head row: the position and hash of its newest row, as the trigger last wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub last_seq: i64,
    pub last_hash: String,
}

/// Walks one chain row by row (in `chain_seq, id` order), collecting its problems. Pure, so
/// every kind of break is unit-tested without a database.
pub(crate) struct ChainWalk {
    tenant: Uuid,
    head: Option<Head>,
    events: u64,
    /// Position of the rows seen last (0 before the first row).
    prev_seq: i64,
    /// Hashes of the rows at `prev_seq` (several only if a position is duplicated).
    prev_hashes: Vec<String>,
    /// Id of the first row at `prev_seq`.
    prev_id: Option<i64>,
    problems: Vec<ChainProblem>,
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

impl ChainWalk {
    pub(crate) fn new(tenant: Uuid, head: Option<Head>) -> Self {
        Self {
            tenant,
            head,
            events: 0,
            prev_seq: 0,
            prev_hashes: vec![GENESIS_HASH.to_owned()],
            prev_id: None,
            problems: Vec::new(),
        }
    }

    fn problem(
        &mut self,
        chain_seq: i64,
        event_id: Option<i64>,
        kind: ProblemKind,
        detail: String,
    ) {
        self.problems.push(ChainProblem {
            tenant: self.tenant,
            chain_seq,
            event_id,
            kind,
            detail,
        });
    }

    pub(crate) fn row(&mut self, r: &ChainRow) {
        self.events += 1;
        let (seq, id) = (r.chain_seq, Some(r.id));
        if r.hash != r.expected {
            self.problem(
                seq,
                id,
                ProblemKind::Edited,
                format!(
                    "stored hash {}… does not match the row's content (recomputed {}…)",
                    short(&r.hash),
                    short(&r.expected)
                ),
            );
        }
        let mut inserted = false;
        if seq <= self.prev_seq {
            let detail = match self.prev_id {
                Some(first) if seq == self.prev_seq => {
                    format!("chain_seq {seq} is taken twice (also by event {first})")
                }
                _ => format!("chain_seq {seq} is not a position (they start at 1)"),
            };
            self.problem(seq, id, ProblemKind::Inserted, detail);
            inserted = true;
        } else if seq > self.prev_seq + 1 {
            // The link is broken too, necessarily: the gap explains it.
            let first = self.prev_seq + 1;
            let missing = if seq - 1 == first {
                format!("chain_seq {first} is missing")
            } else {
                format!("chain_seq {first}..={} are missing", seq - 1)
            };
            self.problem(
                first,
                None,
                ProblemKind::Deleted,
                format!("{missing} (the chain resumes at event {})", r.id),
            );
        } else if !self.prev_hashes.contains(&r.prev_hash) {
            let before = match self.prev_id {
                Some(prev) => format!("chain_seq {} (event {prev})", self.prev_seq),
                None => "the chain's start (64 zeros)".to_owned(),
            };
            self.problem(
                seq,
                id,
                ProblemKind::Inserted,
                format!(
                    "prev_hash {}… is not the hash of {before}: a row was inserted here or the one before was replaced",
                    short(&r.prev_hash)
                ),
            );
            inserted = true;
        }
        let head_seq = self.head.as_ref().map(|h| h.last_seq);
        if let Some(last) = head_seq.filter(|&last| seq > last && !inserted) {
            self.problem(
                seq,
                id,
                ProblemKind::Inserted,
                format!(
                    "beyond the chain head (last_seq {last}): not sealed by audit_seal, which moves the head with every row"
                ),
            );
        }
        if seq > self.prev_seq {
            self.prev_seq = seq;
            self.prev_hashes = vec![r.hash.clone()];
            self.prev_id = Some(r.id);
        } else if seq == self.prev_seq {
            self.prev_hashes.push(r.hash.clone());
        }
    }

    /// Compares the newest row with the head, and returns the chain's problems and row count.
    pub(crate) fn finish(mut self) -> (Vec<ChainProblem>, u64) {
        match self.head.clone() {
            None if self.events > 0 => {
                let seq = self.prev_seq;
                self.problem(
                    seq,
                    None,
                    ProblemKind::Deleted,
                    "the chain's head row (audit_chain_heads) is missing".to_owned(),
                );
            }
            None => {}
            Some(head) if head.last_seq > self.prev_seq => {
                let first = self.prev_seq + 1;
                let missing = if head.last_seq == first {
                    format!("chain_seq {first} is missing")
                } else {
                    format!("chain_seq {first}..={} are missing", head.last_seq)
                };
                self.problem(
                    first,
                    None,
                    ProblemKind::Deleted,
                    format!(
                        "{missing} at the end: the head says the chain reached {}",
                        head.last_seq
                    ),
                );
            }
            Some(head)
                if head.last_seq == self.prev_seq
                    && head.last_seq > 0
                    && !self.prev_hashes.contains(&head.last_hash) =>
            {
                let (seq, id) = (self.prev_seq, self.prev_id);
                self.problem(
                    seq,
                    id,
                    ProblemKind::Edited,
                    format!(
                        "the newest row's hash is not the head's ({}…): the row was replaced",
                        short(&head.last_hash)
                    ),
                );
            }
            // Rows beyond the head were reported as they were walked.
            Some(_) => {}
        }
        (self.problems, self.events)
    }
}

// ── the store call ───────────────────────────────────────────────────────────────────────────

type PageRow = (i64, i64, String, String, String);

impl Store {
    /// Seals committed audit events into their tenants' chains, at most [`SEAL_BATCH`] per
    /// chain, in a transaction of its own, skipping the chains another sealer is sealing;
    /// answers how many were sealed.
    pub async fn seal_audit_events(&self) -> Result<u64, StoreError> {
        self.seal_round(false).await
    }

    /// One sealing round; `patient` waits for the chains another sealer holds.
    async fn seal_round(&self, patient: bool) -> Result<u64, StoreError> {
        let mut tx = self.pool().begin().await?;
        let sealed: i32 = sqlx::query_scalar(AUDIT_SEAL)
            .bind(SEAL_BATCH)
            .bind(patient)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(u64::try_from(sealed).unwrap_or(0))
    }

    /// How long the oldest committed event has waited for its seal, in seconds (`None` when
    /// every event is sealed). It grows when no sealer runs or a chain cannot be sealed.
    pub async fn audit_oldest_unsealed_age(&self) -> Result<Option<f64>, StoreError> {
        Ok(sqlx::query_scalar(AUDIT_OLDEST_UNSEALED)
            .fetch_one(self.pool())
            .await?)
    }

    /// Seals until nothing committed is left unsealed (or a bounded number of rounds passed,
    /// when writers outpace the sealer), waiting for chains other sealers hold; answers how
    /// many were sealed.
    pub async fn seal_all_audit_events(&self) -> Result<u64, StoreError> {
        let mut total = 0;
        for _ in 0..SEAL_ROUNDS {
            let sealed = self.seal_round(true).await?;
            total += sealed;
            if sealed == 0 {
                break;
            }
        }
        Ok(total)
    }

    /// Seals what is committed, then walks every audit chain (or only `tenant`'s: a tenant id, or [`SYSTEM_CHAIN`]) and
    /// recomputes every hash. A broken chain is a report with problems, not an error; errors
    /// mean the check could not run.
    pub async fn verify_audit_chain(
        &self,
        tenant: Option<Uuid>,
    ) -> Result<ChainReport, ChainCheckError> {
        let present: bool = sqlx::query_scalar(AUDIT_CHAIN_PRESENT)
            .fetch_one(self.pool())
            .await?;
        if !present {
            return Err(ChainCheckError::NotMigrated);
        }
        // Events committed a moment ago would otherwise be left out of the walk.
        self.seal_all_audit_events().await?;
        let mut tx = self.pool().begin().await.map_err(StoreError::from)?;
        sqlx::query(AUDIT_SNAPSHOT).execute(&mut *tx).await?;
        let keys: Vec<Uuid> = match tenant {
            Some(key) => {
                let exists: bool = sqlx::query_scalar(AUDIT_CHAIN_EXISTS)
                    .bind(key)
                    .fetch_one(&mut *tx)
                    .await?;
                if !exists {
                    return Err(ChainCheckError::UnknownChain(key));
                }
                vec![key]
            }
            None => sqlx::query_scalar(AUDIT_CHAINS).fetch_all(&mut *tx).await?,
        };
        let names: HashMap<Uuid, String> = sqlx::query_as(AUDIT_TENANT_NAMES)
            .bind(&keys)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect();
        let mut report = ChainReport {
            ok: true,
            tenants_checked: 0,
            events_checked: 0,
            events_awaiting_seal: 0,
            problems: Vec::new(),
            problems_omitted: 0,
            chains: Vec::with_capacity(keys.len()),
        };
        for key in keys {
            let (problems, summary) = walk_chain(&mut tx, key).await?;
            report.tenants_checked += 1;
            report.events_checked += summary.events;
            report.events_awaiting_seal += summary.awaiting_seal;
            report.chains.push(ChainSummary {
                tenant_name: names.get(&key).cloned(),
                ..summary
            });
            for problem in problems {
                report.ok = false;
                if report.problems.len() < MAX_PROBLEMS {
                    report.problems.push(problem);
                } else {
                    report.problems_omitted += 1;
                }
            }
        }
        close(tx).await?;
        Ok(report)
    }
}

/// Walks the chain `key` page by page.
async fn walk_chain(
    conn: &mut PgConnection,
    key: Uuid,
) -> Result<(Vec<ChainProblem>, ChainSummary), ChainCheckError> {
    let head: Option<(i64, String)> = sqlx::query_as(AUDIT_CHAIN_HEAD)
        .bind(key)
        .fetch_optional(&mut *conn)
        .await?;
    let mut walk = ChainWalk::new(
        key,
        head.clone().map(|(last_seq, last_hash)| Head {
            last_seq,
            last_hash,
        }),
    );
    let (mut after_seq, mut after_id) = (i64::MIN, i64::MIN);
    loop {
        let page: Vec<PageRow> = sqlx::query_as(AUDIT_CHAIN_PAGE)
            .bind(key)
            .bind(after_seq)
            .bind(after_id)
            .bind(PAGE)
            .fetch_all(&mut *conn)
            .await?;
        let full = page.len() as i64 == PAGE;
        for (id, chain_seq, prev_hash, hash, expected) in page {
            (after_seq, after_id) = (chain_seq, id);
            walk.row(&ChainRow {
                id,
                chain_seq,
                prev_hash,
                hash,
                expected,
            });
        }
        if !full {
            break;
        }
    }
    let (problems, events) = walk.finish();
    let awaiting: i64 = sqlx::query_scalar(AUDIT_AWAITING_SEAL)
        .bind(key)
        .fetch_one(&mut *conn)
        .await?;
    let summary = ChainSummary {
        awaiting_seal: u64::try_from(awaiting).unwrap_or(0),
        tenant: key,
        tenant_name: None,
        events,
        last_seq: head.as_ref().map_or(0, |h| h.0),
        last_hash: head.map(|h| h.1),
    };
    Ok((problems, summary))
}

/// Ends the read-only transaction (a rollback: it wrote nothing).
async fn close(tx: Transaction<'_, Postgres>) -> Result<(), ChainCheckError> {
    tx.rollback().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: u8) -> String {
        format!("{n:02x}").repeat(32)
    }

    /// A well-formed chain of `n` rows: row i has id 100+i, hash h(i).
    fn chain(n: i64) -> Vec<ChainRow> {
        (1..=n)
            .map(|i| ChainRow {
                id: 100 + i,
                chain_seq: i,
                prev_hash: if i == 1 {
                    GENESIS_HASH.to_owned()
                } else {
                    h((i - 1) as u8)
                },
                hash: h(i as u8),
                expected: h(i as u8),
            })
            .collect()
    }

    fn head(n: i64) -> Option<Head> {
        Some(Head {
            last_seq: n,
            last_hash: h(n as u8),
        })
    }

    fn walk(rows: &[ChainRow], head: Option<Head>) -> Vec<(ProblemKind, i64, Option<i64>)> {
        let mut w = ChainWalk::new(Uuid::nil(), head);
        for r in rows {
            w.row(r);
        }
        let (problems, events) = w.finish();
        assert_eq!(events, rows.len() as u64);
        problems
            .into_iter()
            .map(|p| (p.kind, p.chain_seq, p.event_id))
            .collect()
    }

    #[test]
    fn an_unbroken_chain_has_no_problem() {
        assert_eq!(walk(&chain(5), head(5)), vec![]);
        assert_eq!(walk(&[], None), vec![]);
    }

    #[test]
    fn an_edited_row_no_longer_matches_its_hash() {
        let mut rows = chain(5);
        rows[2].expected = h(99);
        assert_eq!(
            walk(&rows, head(5)),
            vec![(ProblemKind::Edited, 3, Some(103))]
        );
    }

    #[test]
    fn a_replaced_newest_row_differs_from_the_head() {
        let mut rows = chain(3);
        rows[2].hash = h(77);
        rows[2].expected = h(77);
        assert_eq!(
            walk(&rows, head(3)),
            vec![(ProblemKind::Edited, 3, Some(103))]
        );
    }

    #[test]
    fn a_deleted_middle_row_leaves_a_gap() {
        let mut rows = chain(5);
        rows.remove(2);
        assert_eq!(walk(&rows, head(5)), vec![(ProblemKind::Deleted, 3, None)]);
    }

    #[test]
    fn deleted_newest_rows_fall_short_of_the_head() {
        let rows = chain(3);
        assert_eq!(walk(&rows, head(5)), vec![(ProblemKind::Deleted, 4, None)]);
        assert_eq!(walk(&[], head(2)), vec![(ProblemKind::Deleted, 1, None)]);
        assert_eq!(walk(&rows, None), vec![(ProblemKind::Deleted, 3, None)]);
    }

    #[test]
    fn a_deleted_first_row_is_a_gap_from_the_start() {
        let rows = chain(3);
        assert_eq!(
            walk(&rows[1..], head(3)),
            vec![(ProblemKind::Deleted, 1, None)]
        );
    }

    #[test]
    fn a_duplicated_position_is_an_insertion() {
        let mut rows = chain(4);
        let mut forged = rows[1].clone();
        forged.id = 999;
        forged.hash = h(50);
        forged.expected = h(50);
        rows.insert(2, forged);
        assert_eq!(
            walk(&rows, head(4)),
            vec![(ProblemKind::Inserted, 2, Some(999))]
        );
    }

    #[test]
    fn a_wrong_link_is_an_insertion() {
        let mut rows = chain(4);
        rows[2].prev_hash = h(42);
        assert_eq!(
            walk(&rows, head(4)),
            vec![(ProblemKind::Inserted, 3, Some(103))]
        );
        let mut rows = chain(2);
        rows[0].prev_hash = h(1);
        assert_eq!(
            walk(&rows, head(2)),
            vec![(ProblemKind::Inserted, 1, Some(101))]
        );
    }

    #[test]
    fn a_row_beyond_the_head_is_an_insertion() {
        let rows = chain(4);
        assert_eq!(
            walk(&rows, head(3)),
            vec![(ProblemKind::Inserted, 4, Some(104))]
        );
    }
}
