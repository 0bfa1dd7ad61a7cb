//! The audit trail's hash chain (DESIGN §2, audit_events "append-only, hash-chained").
//!
//! Events are written through the real store paths (tenants, API keys, intake) and sealed, the
//! chain is checked unbroken, then each test tampers with a fresh database the way an attacker
//! with superuser rights would — the append-only trigger (or the arrive-unsealed trigger)
//! disabled — and checks `verify_audit_chain` names exactly that break: an edited row, a
//! deleted middle row, a deleted newest row, a forged row appended behind the triggers' back, a
//! forged row at a taken position. Concurrent appends for one tenant from many connections,
//! sealed by several sealers at once, leave an unbroken chain; an append never waits for
//! another transaction of its tenant (the point of sealing after commit); an event of a
//! transaction still open is left for a later seal; the migration's backfill chains rows
//! written before it; and the hash is the sha256 of the canonical text the migration
//! documents, so a verifier outside PostgreSQL can recompute it.

use chrono::{DateTime, Utc};
use ironclad_core::role::Role;
use ironclad_core::{CaseId, JobId, SourceId, TenantId};
use ironclad_store::audit::{
    ChainCheckError, ChainReport, ProblemKind, GENESIS_HASH, SYSTEM_CHAIN,
};
use ironclad_store::intake::{IntakeOutcome, NewCase, NewSource};
use ironclad_store::tenants::Revocation;
use ironclad_store::Store;
use ironclad_testkit::TestDb;
use sha2::{Digest, Sha256};
use sqlx::Executor;
use uuid::Uuid;

fn new_case(tenant: TenantId, n: usize) -> NewCase {
    let sources = (0..2)
        .map(|i| NewSource {
            source_id: SourceId::new(),
            job_id: JobId::new(),
            filename: format!("f{i}.pdf"),
            sha256: format!("{:064x}", n * 10 + i + 1),
            media_type: "application/pdf".into(),
            size_bytes: 100,
            pages: 1,
            blob_key: format!("sha256/00/00/{:064x}", n * 10 + i + 1),
        })
        .collect();
    NewCase {
        tenant_id: tenant,
        case_id: CaseId::new(),
        external_reference: Some(format!("ref-{n}")),
        workflow: None,
        workflow_id: None,
        idempotency_key: Some(format!("k-{n}")),
        fingerprint: format!("fp-{n}"),
        sources,
        max_attempts: 3,
        actor: "api_key:test".into(),
        response: serde_json::json!({"ok": true}),
    }
}

/// Two tenants with keys, cases and a revocation, plus an event without a tenant.
struct Seeded {
    db: TestDb,
    acme: TenantId,
    globex: TenantId,
}

impl Seeded {
    async fn new() -> anyhow::Result<Self> {
        let db = TestDb::new().await?;
        let store = &db.store;
        let acme = store.create_tenant("acme").await?;
        let globex = store.create_tenant("globex").await?;
        let key = store
            .create_api_key_by(acme, Role::Operator, "cli:test")
            .await?;
        store.create_api_key(globex, Role::Admin).await?;
        for n in 0..4 {
            assert_eq!(
                store.commit_intake(&new_case(acme, n)).await?,
                IntakeOutcome::Created
            );
        }
        store.commit_intake(&new_case(globex, 9)).await?;
        assert!(matches!(
            store
                .revoke_api_key(&key.id.to_string(), "cli:test")
                .await?,
            Revocation::Revoked(_)
        ));
        // A statement that tries to choose its own chain fields is overruled by the trigger:
        // the row arrives unsealed like any other.
        sqlx::query(
            "INSERT INTO audit_events (actor, event_type, chain_seq, prev_hash, hash)
             VALUES ('system:test', 'REQUEUED', 999, 'x', 'y')",
        )
        .execute(store.pool())
        .await?;
        let unsealed: i64 =
            sqlx::query_scalar("SELECT count(*) FROM audit_events WHERE hash IS NULL")
                .fetch_one(store.pool())
                .await?;
        assert_eq!(unsealed, 9, "every event arrives unsealed");
        // Sealed before anyone tampers, as the dispatcher's sealer does within a moment.
        assert_eq!(store.seal_all_audit_events().await?, 9);
        Ok(Self { db, acme, globex })
    }

    fn store(&self) -> &Store {
        &self.db.store
    }

    /// acme's chain: key created, 4 cases, key revoked.
    const ACME_EVENTS: i64 = 6;

    /// Runs `sql` (with `$1` = acme's id) as the superuser, with `disable` triggers off.
    async fn tamper(&self, disable: &[&str], sql: &'static str) -> anyhow::Result<()> {
        let mut conn = self.store().pool().acquire().await?;
        for trigger in disable {
            conn.execute(format!("ALTER TABLE audit_events DISABLE TRIGGER {trigger}").as_str())
                .await?;
        }
        sqlx::query(sql)
            .bind(self.acme.0)
            .execute(&mut *conn)
            .await?;
        for trigger in disable {
            conn.execute(format!("ALTER TABLE audit_events ENABLE TRIGGER {trigger}").as_str())
                .await?;
        }
        Ok(())
    }

    async fn event_id(&self, seq: i64) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM audit_events WHERE tenant_id = $1 AND chain_seq = $2",
        )
        .bind(self.acme.0)
        .bind(seq)
        .fetch_one(self.store().pool())
        .await?)
    }

    /// The one problem the check finds, as (tenant, chain_seq, event id, kind).
    async fn only_problem(&self) -> anyhow::Result<(Uuid, i64, Option<i64>, ProblemKind)> {
        let report = self.store().verify_audit_chain(None).await?;
        assert!(!report.ok, "{report:#?}");
        assert_eq!(report.tenants_checked, 3);
        assert_eq!(report.problems.len(), 1, "{:#?}", report.problems);
        let p = &report.problems[0];
        Ok((p.tenant, p.chain_seq, p.event_id, p.kind))
    }

    async fn finish(self) {
        self.db.drop_database().await;
    }
}

fn assert_ok(report: &ChainReport) {
    assert!(report.ok, "{:#?}", report.problems);
    assert!(report.problems.is_empty());
    assert_eq!(report.problems_omitted, 0);
}

#[tokio::test]
async fn events_written_through_the_store_form_unbroken_chains() -> anyhow::Result<()> {
    let s = Seeded::new().await?;
    let report = s.store().verify_audit_chain(None).await?;
    assert_ok(&report);
    assert_eq!(report.tenants_checked, 3);
    // acme 6, globex: key + case, system: 1.
    assert_eq!(report.events_checked, 6 + 2 + 1);
    let acme = report
        .chains
        .iter()
        .find(|c| c.tenant == s.acme.0)
        .ok_or_else(|| anyhow::anyhow!("no acme chain"))?;
    assert_eq!(acme.tenant_name.as_deref(), Some("acme"));
    assert_eq!((acme.events, acme.last_seq), (6, Seeded::ACME_EVENTS));
    let system = report.chains.iter().find(|c| c.tenant == SYSTEM_CHAIN);
    assert_eq!(system.map(|c| (c.events, c.last_seq)), Some((1, 1)));

    // Positions 1..=n in insertion order, each linked to the one before.
    let rows: Vec<(i64, String, String, String)> = sqlx::query_as(
        "SELECT chain_seq, event_type, prev_hash, hash FROM audit_events
         WHERE tenant_id = $1 ORDER BY id",
    )
    .bind(s.acme.0)
    .fetch_all(s.store().pool())
    .await?;
    let types: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        types,
        [
            "APIKEY_CREATED",
            "CASE_INGESTED",
            "CASE_INGESTED",
            "CASE_INGESTED",
            "CASE_INGESTED",
            "APIKEY_REVOKED"
        ]
    );
    let mut prev = GENESIS_HASH.to_owned();
    for (i, (seq, _, prev_hash, hash)) in rows.iter().enumerate() {
        assert_eq!(*seq, i as i64 + 1);
        assert_eq!(prev_hash, &prev);
        prev = hash.clone();
    }

    // One chain at a time; a chain that does not exist cannot be checked.
    let one = s.store().verify_audit_chain(Some(s.globex.0)).await?;
    assert_ok(&one);
    assert_eq!((one.tenants_checked, one.events_checked), (1, 2));
    assert!(matches!(
        s.store().verify_audit_chain(Some(Uuid::now_v7())).await,
        Err(ChainCheckError::UnknownChain(_))
    ));

    // The append-only trigger still refuses changes; sealing is the one update it lets
    // through, and only one that leaves the content as it was.
    sqlx::query("INSERT INTO audit_events (actor, event_type) VALUES ('system:test', 'REQUEUED')")
        .execute(s.store().pool())
        .await?;
    for sql in [
        "UPDATE audit_events SET actor = 'x'",
        "UPDATE audit_events SET actor = 'x', chain_seq = 99, prev_hash = 'a', hash = 'b'
         WHERE hash IS NULL",
        "DELETE FROM audit_events",
        "TRUNCATE audit_events",
    ] {
        assert!(
            sqlx::query(sql).execute(s.store().pool()).await.is_err(),
            "{sql}"
        );
    }
    s.finish().await;
    Ok(())
}

/// An UPDATE of a row's data no longer matches the hash stored with it.
#[tokio::test]
async fn an_edited_row_is_found() -> anyhow::Result<()> {
    let s = Seeded::new().await?;
    s.tamper(
        &["audit_events_append_only"],
        "UPDATE audit_events SET data = jsonb_set(data, '{sources}', '99')
         WHERE tenant_id = $1 AND chain_seq = 3",
    )
    .await?;
    let id = s.event_id(3).await?;
    assert_eq!(
        s.only_problem().await?,
        (s.acme.0, 3, Some(id), ProblemKind::Edited)
    );
    s.finish().await;
    Ok(())
}

/// A DELETE in the middle leaves a gap in chain_seq.
#[tokio::test]
async fn a_deleted_middle_row_is_found() -> anyhow::Result<()> {
    let s = Seeded::new().await?;
    s.tamper(
        &["audit_events_append_only"],
        "DELETE FROM audit_events WHERE tenant_id = $1 AND chain_seq = 2",
    )
    .await?;
    assert_eq!(
        s.only_problem().await?,
        (s.acme.0, 2, None, ProblemKind::Deleted)
    );
    s.finish().await;
    Ok(())
}

/// Deleting the newest row leaves no gap, but the head still names it.
#[tokio::test]
async fn a_deleted_newest_row_is_found() -> anyhow::Result<()> {
    let s = Seeded::new().await?;
    s.tamper(
        &["audit_events_append_only"],
        "DELETE FROM audit_events WHERE tenant_id = $1
         AND chain_seq = (SELECT max(chain_seq) FROM audit_events WHERE tenant_id = $1)",
    )
    .await?;
    assert_eq!(
        s.only_problem().await?,
        (s.acme.0, Seeded::ACME_EVENTS, None, ProblemKind::Deleted)
    );
    s.finish().await;
    Ok(())
}

/// A forger who knows the algorithm appends a well-linked, well-hashed row with the
/// arrive-unsealed trigger off: the head was not moved, so the row is beyond it.
#[tokio::test]
async fn a_forged_row_appended_behind_the_trigger_is_found() -> anyhow::Result<()> {
    let s = Seeded::new().await?;
    s.tamper(
        &["audit_events_arrive_unsealed"],
        "INSERT INTO audit_events (tenant_id, actor, event_type, data, created_at,
                                   chain_seq, prev_hash, hash)
         SELECT $1, 'api_key:forged', 'CASE_INGESTED', '{}', t.now, h.last_seq + 1, h.last_hash,
                audit_event_hash(h.last_hash, h.last_seq + 1, $1, NULL, 'api_key:forged',
                                 'CASE_INGESTED', '{}', t.now)
         FROM audit_chain_heads h, (SELECT now() AS now) t
         WHERE h.tenant_key = $1",
    )
    .await?;
    let id = s.event_id(Seeded::ACME_EVENTS + 1).await?;
    assert_eq!(
        s.only_problem().await?,
        (
            s.acme.0,
            Seeded::ACME_EVENTS + 1,
            Some(id),
            ProblemKind::Inserted
        )
    );
    s.finish().await;
    Ok(())
}

/// A forged row slipped in at a taken position (the unique index dropped first).
#[tokio::test]
async fn a_forged_row_at_a_taken_position_is_found() -> anyhow::Result<()> {
    let s = Seeded::new().await?;
    s.store()
        .pool()
        .execute("DROP INDEX audit_events_chain_position")
        .await?;
    s.tamper(
        &["audit_events_arrive_unsealed"],
        "INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data, created_at,
                                   chain_seq, prev_hash, hash)
         SELECT case_id, tenant_id, actor, event_type, '{\"sources\": 0}', created_at,
                chain_seq, prev_hash,
                audit_event_hash(prev_hash, chain_seq, tenant_id, case_id, actor, event_type,
                                 '{\"sources\": 0}', created_at)
         FROM audit_events WHERE tenant_id = $1 AND chain_seq = 2",
    )
    .await?;
    let forged: i64 = sqlx::query_scalar(
        "SELECT max(id) FROM audit_events WHERE tenant_id = $1 AND chain_seq = 2",
    )
    .bind(s.acme.0)
    .fetch_one(s.store().pool())
    .await?;
    assert_eq!(
        s.only_problem().await?,
        (s.acme.0, 2, Some(forged), ProblemKind::Inserted)
    );
    s.finish().await;
    Ok(())
}

/// Many connections appending for the same tenant at once (intakes, and key events), sealed
/// meanwhile by four sealers racing each other, still make one chain with no gap, no
/// duplicate and every link right.
#[tokio::test]
async fn concurrent_appends_for_one_tenant_keep_the_chain_unbroken() -> anyhow::Result<()> {
    const TASKS: usize = 16;
    const EACH: usize = 20;
    let db = TestDb::new().await?;
    let acme = db.store.create_tenant("acme").await?;
    let other = db.store.create_tenant("other").await?;
    let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut sealers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (store, writing) = (db.store.clone(), std::sync::Arc::clone(&writing));
        sealers.spawn(async move {
            let mut sealed = 0u64;
            while writing.load(std::sync::atomic::Ordering::Relaxed) {
                sealed += store.seal_audit_events().await?;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            anyhow::Ok(sealed)
        });
    }
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..TASKS {
        let store = db.store.clone();
        tasks.spawn(async move {
            for i in 0..EACH {
                let tenant = if t % 4 == 3 { other } else { acme };
                store.commit_intake(&new_case(tenant, 1000 * t + i)).await?;
                if i % 5 == 0 {
                    store.create_api_key(tenant, Role::Reviewer).await?;
                }
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    writing.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut sealed_by_sealers = 0;
    while let Some(done) = sealers.join_next().await {
        sealed_by_sealers += done??;
    }
    assert!(
        sealed_by_sealers > 0,
        "the sealers sealed nothing while writers wrote"
    );
    let report = db.store.verify_audit_chain(None).await?;
    assert_ok(&report);
    let per_task = (EACH + EACH / 5) as u64;
    assert_eq!(report.events_checked, TASKS as u64 * per_task);
    let heads: Vec<(Uuid, i64, i64, i64)> = sqlx::query_as(
        "SELECT h.tenant_key, h.last_seq, count(a.id), count(DISTINCT a.chain_seq)
         FROM audit_chain_heads h JOIN audit_events a ON a.tenant_id = h.tenant_key
         GROUP BY 1, 2 ORDER BY 2 DESC",
    )
    .fetch_all(db.store.pool())
    .await?;
    let acme_events = (TASKS - TASKS / 4) as i64 * per_task as i64;
    let other_events = (TASKS / 4) as i64 * per_task as i64;
    assert_eq!(
        heads,
        vec![
            (acme.0, acme_events, acme_events, acme_events),
            (other.0, other_events, other_events, other_events)
        ]
    );
    db.drop_database().await;
    Ok(())
}

/// An external verifier can recompute a hash from the documented canonical text: a JSON array
/// of prev_hash, chain_seq, tenant, case, actor, event_type, data (jsonb's text) and created_at
/// in UTC with microseconds; hex sha256 of its UTF-8 bytes.
#[tokio::test]
async fn the_hash_is_the_sha256_of_the_documented_canonical_text() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let acme = db.store.create_tenant("acme").await?;
    db.store.commit_intake(&new_case(acme, 1)).await?;
    db.store.seal_all_audit_events().await?;
    type Row = (
        String,
        i64,
        Uuid,
        Option<Uuid>,
        String,
        String,
        String,
        DateTime<Utc>,
        String,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT prev_hash, chain_seq, tenant_id, case_id, actor, event_type, data::text,
                created_at, hash
         FROM audit_events ORDER BY id",
    )
    .fetch_all(db.store.pool())
    .await?;
    assert_eq!(rows.len(), 1);
    for (prev, seq, tenant, case, actor, event_type, data, created_at, hash) in rows {
        let case = case.map_or_else(|| "null".to_owned(), |c| format!("\"{c}\""));
        let canonical = format!(
            "[\"{prev}\", {seq}, \"{tenant}\", {case}, {}, {}, {data}, \"{}\"]",
            serde_json::to_string(&actor)?,
            serde_json::to_string(&event_type)?,
            created_at.format("%Y-%m-%dT%H:%M:%S%.6fZ")
        );
        assert_eq!(
            hex::encode(Sha256::digest(canonical.as_bytes())),
            hash,
            "{canonical}"
        );
    }
    db.drop_database().await;
    Ok(())
}

/// Rows written before migration 0006 are chained by its backfill, in id order per tenant.
#[tokio::test]
async fn the_migration_chains_existing_rows() -> anyhow::Result<()> {
    use ironclad_testkit::{database_url, with_database};
    let name = format!("ironclad_test_{}", Uuid::new_v4().simple());
    let admin = sqlx::PgPool::connect(&with_database(&database_url(), "postgres")).await?;
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await?;
    let pool = sqlx::PgPool::connect(&with_database(&database_url(), &name)).await?;
    let result = async {
        // The migrations before the chain, applied by hand (the backfill is what is tested).
        for m in ironclad_store::MIGRATOR.iter().filter(|m| m.version < 6) {
            let mut tx = pool.begin().await?;
            sqlx::raw_sql(&m.sql).execute(&mut *tx).await?;
            tx.commit().await?;
        }
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        sqlx::query("INSERT INTO tenants (id, name) VALUES ($1, 'a'), ($2, 'b')")
            .bind(a)
            .bind(b)
            .execute(&pool)
            .await?;
        for (tenant, kind) in [
            (Some(a), "CASE_INGESTED"),
            (Some(b), "CASE_INGESTED"),
            (None, "REQUEUED"),
            (Some(a), "REQUEUED"),
            (Some(a), "APIKEY_CREATED"),
        ] {
            sqlx::query(
                "INSERT INTO audit_events (tenant_id, actor, event_type, data)
                 VALUES ($1, 'old', $2, '{\"n\": 1.50}')",
            )
            .bind(tenant)
            .bind(kind)
            .execute(&pool)
            .await?;
        }
        let chain = ironclad_store::MIGRATOR
            .iter()
            .find(|m| m.version == 6)
            .ok_or_else(|| anyhow::anyhow!("no migration 6"))?;
        let mut tx = pool.begin().await?;
        sqlx::raw_sql(&chain.sql).execute(&mut *tx).await?;
        tx.commit().await?;
        let seqs: Vec<(i64, Option<Uuid>, i64)> =
            sqlx::query_as("SELECT id, tenant_id, chain_seq FROM audit_events ORDER BY id")
                .fetch_all(&pool)
                .await?;
        let expected = vec![(1, Some(a), 1), (2, Some(b), 1), (3, None, 1), (4, Some(a), 2), (5, Some(a), 3)];
        assert_eq!(seqs, expected);
        // The later migrations (sealing), then appends continue each backfilled chain.
        for m in ironclad_store::MIGRATOR.iter().filter(|m| m.version > 6) {
            let mut tx = pool.begin().await?;
            sqlx::raw_sql(&m.sql).execute(&mut *tx).await?;
            tx.commit().await?;
        }
        sqlx::query("INSERT INTO audit_events (tenant_id, actor, event_type) VALUES ($1, 'new', 'REQUEUED')")
            .bind(a)
            .execute(&pool)
            .await?;
        let report = Store::from_pool(pool.clone()).verify_audit_chain(None).await?;
        assert_ok(&report);
        assert_eq!((report.tenants_checked, report.events_checked), (3, 6));
        anyhow::Ok(())
    }
    .await;
    pool.close().await;
    let _ = admin
        .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
        .await;
    result
}

/// The point of sealing after commit: a transaction that has written an audit event and not
/// yet committed does not hold up another writer of the same tenant (under the insert-time
/// chain of migration 0006 the second intake waited for the first transaction to end). The
/// open transaction's event is left alone by a seal, and sealed by the next one after commit,
/// after the event that committed first.
#[tokio::test]
async fn an_open_transaction_neither_blocks_its_tenant_nor_gets_sealed() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let acme = db.store.create_tenant("acme").await?;
    db.store.seal_all_audit_events().await?;
    let mut open = db.store.pool().begin().await?;
    sqlx::query(
        "INSERT INTO audit_events (tenant_id, actor, event_type) VALUES ($1, 'cli:slow', 'REQUEUED')",
    )
    .bind(acme.0)
    .execute(&mut *open)
    .await?;
    // Another writer of the same tenant commits at once.
    let other = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        db.store.commit_intake(&new_case(acme, 7)),
    )
    .await
    .map_err(|_| anyhow::anyhow!("an intake waited for another transaction's audit event"))??;
    assert_eq!(other, IntakeOutcome::Created);
    // Sealing now seals the committed intake event only.
    assert_eq!(db.store.seal_all_audit_events().await?, 1);
    open.commit().await?;
    assert_eq!(db.store.seal_all_audit_events().await?, 1);
    let order: Vec<(i64, String)> = sqlx::query_as(
        "SELECT chain_seq, event_type FROM audit_events WHERE tenant_id = $1 ORDER BY chain_seq",
    )
    .bind(acme.0)
    .fetch_all(db.store.pool())
    .await?;
    // Chain order is commit (seal) order: the intake, committed first, comes before the event
    // inserted earlier by the transaction that committed later.
    let types: Vec<&str> = order.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(types.last(), Some(&"REQUEUED"));
    assert_eq!(types[types.len() - 2], "CASE_INGESTED");
    let report = db.store.verify_audit_chain(None).await?;
    assert_ok(&report);
    assert_eq!(report.events_awaiting_seal, 0);
    db.drop_database().await;
    Ok(())
}

/// Writes an unsealed event into `tenant`'s chain, as any store path does.
async fn append_event(store: &Store, tenant: TenantId) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "INSERT INTO audit_events (tenant_id, actor, event_type) \
         VALUES ($1, 'system:test', 'REQUEUED') RETURNING id",
    )
    .bind(tenant.0)
    .fetch_one(store.pool())
    .await?)
}

/// Seals event $1 at its chain head's position + $2, after the head's hash, with $3 as its
/// hash when given (else the right one).
const SEAL_BY_HAND: &str = "UPDATE audit_events e
    SET chain_seq = h.last_seq + $2, prev_hash = h.last_hash,
        hash = coalesce($3, audit_event_hash(h.last_hash, h.last_seq + $2, e.tenant_id,
                                             e.case_id, e.actor, e.event_type, e.data,
                                             e.created_at))
    FROM audit_chain_heads h WHERE h.tenant_key = e.tenant_id AND e.id = $1";

/// A statement may seal a row only as its chain's next link, after the head's hash, with the
/// row's true hash; a seal it accepts moves the head, so the sealer carries on after it
/// (migration 0014). Under 0008 a row sealed a position ahead was accepted, and every sealing
/// round after it failed on the taken position.
#[tokio::test]
async fn a_row_is_sealed_only_as_its_chains_next_link() -> anyhow::Result<()> {
    let s = Seeded::new().await?;
    let store = s.store();
    let first = append_event(store, s.acme).await?;
    let second = append_event(store, s.acme).await?;
    let refused = |result: Result<sqlx::postgres::PgQueryResult, sqlx::Error>| match result {
        Err(e) => e.to_string().contains("next link"),
        Ok(_) => false,
    };
    let ahead = sqlx::query(SEAL_BY_HAND)
        .bind(second)
        .bind(2_i64)
        .bind(None::<String>)
        .execute(store.pool())
        .await;
    assert!(
        refused(ahead),
        "a seal a position ahead of the head was accepted"
    );
    let forged = sqlx::query(SEAL_BY_HAND)
        .bind(first)
        .bind(1_i64)
        .bind(Some("a".repeat(64)))
        .execute(store.pool())
        .await;
    assert!(refused(forged), "a seal with a made-up hash was accepted");
    // The next link, rightly hashed: accepted, and the head follows it.
    sqlx::query(SEAL_BY_HAND)
        .bind(first)
        .bind(1_i64)
        .bind(None::<String>)
        .execute(store.pool())
        .await?;
    let head: i64 =
        sqlx::query_scalar("SELECT last_seq FROM audit_chain_heads WHERE tenant_key = $1")
            .bind(s.acme.0)
            .fetch_one(store.pool())
            .await?;
    assert_eq!(head, Seeded::ACME_EVENTS + 1);
    assert_eq!(store.seal_all_audit_events().await?, 1);
    assert_eq!(s.event_id(Seeded::ACME_EVENTS + 2).await?, second);
    assert_ok(&store.verify_audit_chain(None).await?);
    assert_eq!(store.audit_oldest_unsealed_age().await?, None);
    s.finish().await;
    Ok(())
}

/// One chain that cannot be sealed — a row planted at its next position with the append-only
/// trigger off, the head left behind — does not stop the other tenants' sealing: their events
/// are sealed, the stuck chain's wait, and their age shows in the gauge the sealer watches.
/// Under 0008 one round sealed every chain in one transaction, so each round failed on the
/// planted position and no tenant was sealed again.
#[tokio::test]
async fn a_chain_that_cannot_be_sealed_does_not_stop_the_others() -> anyhow::Result<()> {
    let s = Seeded::new().await?;
    let store = s.store();
    append_event(store, s.acme).await?;
    append_event(store, s.acme).await?;
    append_event(store, s.globex).await?;
    s.tamper(
        &["audit_events_append_only"],
        "UPDATE audit_events e
         SET chain_seq = h.last_seq + 1, prev_hash = h.last_hash,
             hash = audit_event_hash(h.last_hash, h.last_seq + 1, e.tenant_id, e.case_id,
                                     e.actor, e.event_type, e.data, e.created_at)
         FROM audit_chain_heads h
         WHERE h.tenant_key = e.tenant_id
           AND e.id = (SELECT max(id) FROM audit_events WHERE tenant_id = $1)",
    )
    .await?;
    for _ in 0..3 {
        // Every round seals what it can; acme's chain is skipped, not an error.
        store.seal_audit_events().await?;
    }
    let unsealed = |tenant: TenantId| async move {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND hash IS NULL",
        )
        .bind(tenant.0)
        .fetch_one(store.pool())
        .await
    };
    assert_eq!(
        unsealed(s.globex).await?,
        0,
        "globex's event was not sealed"
    );
    assert_eq!(unsealed(s.acme).await?, 1, "acme's stuck event");
    let age = store.audit_oldest_unsealed_age().await?;
    assert!(age.is_some_and(|a| a >= 0.0), "{age:?}");
    let gauges = store.pipeline_gauges().await?;
    assert!(
        gauges.audit_oldest_unsealed_age_seconds > 0.0,
        "{}",
        gauges.audit_oldest_unsealed_age_seconds
    );
    s.finish().await;
    Ok(())
}
