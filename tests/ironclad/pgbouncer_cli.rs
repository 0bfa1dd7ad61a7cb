//! Ironclad behind PgBouncer in `pool_mode = transaction` (Debian's 1.18: no
//! `max_prepared_statements`): a private PgBouncer with two server connections in front of the
//! shared PostgreSQL, so every client really shares them.
//!
//! First what breaks without `IRONCLAD_PGBOUNCER=transaction` (the session settings are refused
//! at connect; sqlx's prepared statements, cached or not, collide or go missing), then the real
//! roles as separate processes through it: cases submitted over HTTP are decided exactly once
//! and `ironclad verify` through PgBouncer exits 0. Migrations go around PgBouncer
//! (`IRONCLAD_MIGRATE_DATABASE_URL`) and are refused through it.

#[allow(dead_code)]
#[path = "../chaos/support.rs"]
mod support;

use anyhow::{ensure, Context, Result};
use ironclad_store::{PoolSettings, Pooler, Store};
use ironclad_testkit::pgbouncer::{PgBouncer, PgBouncerSettings};
use ironclad_testkit::TestDb;
use sqlx::postgres::PgConnectOptions;
use sqlx::ConnectOptions;
use std::str::FromStr;
use std::time::Duration;
use support::{submit_cases, Api, Rig, SETTLE};

/// Concurrent clients in the protocol test (each its own PgBouncer client).
const CLIENTS: usize = 8;
/// Statements each client runs.
const ROUNDS: i32 = 30;

/// Three statements with different parameter types on `$conn` (an executor expression,
/// evaluated for each), every answer checked: a statement bound on the wrong server could run
/// another client's SQL.
macro_rules! one_round {
    ($conn:expr, $n:expr) => {
        async {
            let n: i32 = $n;
            let a: i32 = sqlx::query_scalar("SELECT $1::int4 + 1")
                .bind(n)
                .fetch_one($conn)
                .await?;
            ensure!(a == n + 1, "wrong answer {a} for {n} + 1");
            let b: String = sqlx::query_scalar("SELECT $1::text || '!'")
                .bind(n.to_string())
                .fetch_one($conn)
                .await?;
            ensure!(b == format!("{n}!"), "wrong answer {b:?} for {n} || '!'");
            let c: i64 = sqlx::query_scalar("SELECT $1::int8 * 2")
                .bind(i64::from(n))
                .fetch_one($conn)
                .await?;
            ensure!(c == 2 * i64::from(n), "wrong answer {c} for {n} * 2");
            anyhow::Ok(())
        }
    };
}

/// Runs three different parameterised statements `ROUNDS` times on `CLIENTS` connections of
/// their own, concurrently, and returns every error (and wrong answer) seen.
async fn hammer_raw(options: PgConnectOptions) -> Result<Vec<String>> {
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..CLIENTS as i32 {
        let options = options.clone();
        tasks.spawn(async move {
            let mut errors = Vec::new();
            let mut conn = match options.connect().await {
                Ok(conn) => conn,
                Err(e) => return vec![e.to_string()],
            };
            for round in 0..ROUNDS {
                let n = client * 1000 + round;
                if let Err(e) = one_round!(&mut conn, n).await {
                    let broken =
                        matches!(e.downcast_ref::<sqlx::Error>(), Some(sqlx::Error::Io(_)));
                    errors.push(format!("{e:#}"));
                    if broken {
                        break;
                    }
                }
            }
            errors
        });
    }
    let mut all = Vec::new();
    while let Some(errors) = tasks.join_next().await {
        all.extend(errors?);
    }
    Ok(all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_transaction_mode_pgbouncer_sqlx_defaults_fail_and_the_setting_works() -> Result<()>
{
    let db = TestDb::new().await?;
    let bouncer = PgBouncer::start(&db.url, &PgBouncerSettings::default())?;
    let through = bouncer.url(&db.name);

    // Today's settings: sqlx's `extra_float_digits` and our session timeouts (`options`) are
    // startup parameters PgBouncer refuses.
    let refused = Store::connect_with(
        &through,
        &PoolSettings {
            acquire_timeout: Duration::from_secs(5),
            ..PoolSettings::default()
        },
    )
    .await
    .expect_err("PgBouncer accepted sqlx's startup parameters");
    ensure!(
        refused
            .to_string()
            .contains("unsupported startup parameter"),
        "{refused}"
    );

    // Without startup parameters, sqlx's statements: cached (the default) and uncached
    // (`statement_cache_capacity(0)`, still named in sqlx 0.8 and never closed).
    let bare = PgConnectOptions::from_str(&through)?.extra_float_digits(None);
    for capacity in [100, 0] {
        let errors = hammer_raw(bare.clone().statement_cache_capacity(capacity)).await?;
        let kind = |what: &str| errors.iter().filter(|e| e.contains(what)).count();
        println!(
            "statement_cache_capacity({capacity}): {} failed statement(s) of {}: {} \"already \
             exists\", {} \"does not exist\", {} wrong answer(s), {} other; first: {:?}",
            errors.len(),
            CLIENTS as i32 * ROUNDS * 3,
            kind("already exists"),
            kind("does not exist"),
            kind("wrong answer"),
            errors.len() - kind("already exists") - kind("does not exist") - kind("wrong answer"),
            errors.first()
        );
        let known = ["already exists", "does not exist", "wrong answer"];
        if let Some(other) = errors.iter().find(|e| !known.iter().any(|k| e.contains(k))) {
            println!("  other, e.g.: {other}");
        }
        ensure!(
            errors.iter().any(|e| e.contains("prepared statement")),
            "capacity {capacity}: expected prepared statement errors, got {errors:?}"
        );
    }

    // The setting: every statement and transaction on one server from Parse to Execute.
    let store = Store::connect_with(
        &through,
        &PoolSettings {
            max_connections: CLIENTS as u32,
            pooler: Pooler::Transaction,
            ..PoolSettings::default()
        },
    )
    .await?;
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..CLIENTS as i32 {
        let store = store.clone();
        tasks.spawn(async move {
            for round in 0..ROUNDS {
                let n = client * 1000 + round;
                one_round!(store.pool(), n).await?;
                // A transaction that sets its isolation first, as verify and audit do, and
                // sees the per-transaction timeouts.
                let mut tx = store.pool().begin().await?;
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    .execute(&mut *tx)
                    .await?;
                one_round!(&mut *tx, n).await.context("in a transaction")?;
                let timeouts: (String, String, String) = sqlx::query_as(
                    "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'),
                            current_setting('transaction_isolation')",
                )
                .fetch_one(&mut *tx)
                .await?;
                ensure!(
                    timeouts == ("1min".into(), "10s".into(), "repeatable read".into()),
                    "{timeouts:?}"
                );
                tx.commit().await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let clients = bouncer.connections_to("CLIENTS", &db.name)?;
    let servers = bouncer.connections_to("SERVERS", &db.name)?;
    println!("with the setting: {CLIENTS} clients × {ROUNDS} rounds, no error; PgBouncer clients {clients}, servers {servers}");
    ensure!(servers <= 2, "{servers} server connections");
    ensure!(clients > servers, "{clients} clients for {servers} servers");
    // Migrations need a session: refused through PgBouncer without a direct URL.
    let err = store
        .migrate()
        .await
        .expect_err("migrated through PgBouncer");
    ensure!(
        err.to_string().contains("IRONCLAD_MIGRATE_DATABASE_URL"),
        "{err}"
    );
    store.pool().close().await;
    drop(bouncer);
    db.drop_database().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roles_through_transaction_mode_pgbouncer_decide_every_case_and_verify_passes() {
    let db = TestDb::new().await.expect("test database");
    let bouncer = PgBouncer::start(
        &db.url,
        &PgBouncerSettings {
            default_pool_size: 2,
            max_client_conn: 40,
            ..PgBouncerSettings::default()
        },
    )
    .expect("pgbouncer");
    let rig = Rig::with("pgbouncer", db, &ironclad_testkit::redis_url())
        .await
        .expect("rig");
    let outcome = scenario(&rig, &bouncer).await;
    rig.conclude(outcome).await;
}

async fn scenario(rig: &Rig, bouncer: &PgBouncer) -> Result<()> {
    let through = bouncer.url(&rig.db.name);
    let behind: &[(&str, &str)] = &[
        ("DATABASE_URL", &through),
        ("IRONCLAD_PGBOUNCER", "transaction"),
        ("IRONCLAD_MIGRATE_DATABASE_URL", &rig.db.url),
        // Five processes of five connections each share PgBouncer's two.
        ("IRONCLAD_DB_POOL", "4"),
        ("IRONCLAD_DB_LEASE_POOL", "1"),
    ];
    let without = |env: &[(&str, &str)]| -> Vec<(String, String)> {
        behind
            .iter()
            .filter(|(k, _)| !env.iter().any(|(d, _)| d == k))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };

    // Without the setting, the roles cannot even connect through PgBouncer.
    let env = without(&[("IRONCLAD_PGBOUNCER", "")]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut plain = rig.spawn("verify-without-setting", &["verify"], &env)?;
    let status = plain.wait_exit(Duration::from_secs(60)).await?;
    let log = plain.log_tail(50);
    ensure!(
        status.code() == Some(2) && log.contains("unsupported startup parameter"),
        "verify without the setting: {status}\n{log}"
    );

    // Migrations: refused through PgBouncer, applied over the direct URL.
    let env = without(&[("IRONCLAD_MIGRATE_DATABASE_URL", "")]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut refused = rig.spawn("migrate-through-pgbouncer", &["migrate"], &env)?;
    let status = refused.wait_exit(Duration::from_secs(60)).await?;
    let log = refused.log_tail(20);
    ensure!(
        !status.success() && log.contains("migrations cannot run through PgBouncer"),
        "{status}\n{log}"
    );
    let mut migrate = rig.spawn("migrate", &["migrate"], behind)?;
    let status = migrate.wait_exit(Duration::from_secs(60)).await?;
    ensure!(status.success(), "migrate: {}", migrate.log_tail(20));

    let (listen, port) = support::listen_addr()?;
    let mut serve_env = behind.to_vec();
    serve_env.push(("IRONCLAD_LISTEN", &listen));
    let roles = [
        rig.role("serve", "serve", &serve_env)?,
        rig.role("dispatcher", "dispatcher", behind)?,
        rig.role("worker-1", "worker", behind)?,
        rig.role("worker-2", "worker", behind)?,
        rig.role("reconciler", "reconciler", behind)?,
    ];
    let api = Api::new(rig, port)?;
    api.wait_live(SETTLE).await?;

    const CASES: usize = 12;
    let (a, b, c) = tokio::try_join!(
        submit_cases(&api, "a", CASES / 3),
        submit_cases(&api, "b", CASES / 3),
        submit_cases(&api, "c", CASES / 3),
    )?;
    ensure!(a.len() + b.len() + c.len() == CASES);
    let clients = bouncer.connections_to("CLIENTS", &rig.db.name)?;
    let servers = bouncer.connections_to("SERVERS", &rig.db.name)?;
    rig.wait_decided(CASES as i64, SETTLE, false).await?;
    rig.assert_decided_exactly_once(CASES as i64).await?;
    println!("{CASES} cases decided through PgBouncer: {clients} client connections on {servers} server connections");
    ensure!(servers <= 2, "{servers} server connections (pool size 2)");
    ensure!(
        clients > 2 * servers,
        "{clients} clients for {servers} servers: nothing shared"
    );

    let mut verify = rig.spawn("verify", &["verify", "--json"], behind)?;
    let status = verify.wait_exit(Duration::from_secs(120)).await?;
    let log = verify.log_tail(400);
    ensure!(
        status.success(),
        "verify through PgBouncer: {status}\n{log}"
    );

    for role in &roles {
        let log = role.log_tail(100_000);
        ensure!(
            !log.contains("prepared statement") && !log.contains("unsupported startup parameter"),
            "{}: {log}",
            role.label
        );
    }
    drop(roles);
    Ok(())
}
