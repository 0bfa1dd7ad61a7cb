//! Notifications and webhook deliveries in the store: dedup, the lock-token guard, lock expiry
//! at the end of a budget, the inbox's keyset pages and its guarded "mark read", and the
//! tenant scope of every read and write.
//!
//! DESIGN §3 invariant 3, **Duplicates are harmless**: "one notification per dedup key, one
//! webhook delivery id per event". These tests repeat causes and race holders on purpose.

use chrono::Utc;
use ironclad_core::notification::NotificationType;
use ironclad_core::webhook_url::WebhookUrl;
use ironclad_core::TenantId;
use ironclad_store::notifications::NewNotification;
use ironclad_store::webhooks::{
    AttemptOutcome, AttemptRecord, InFlightShare, RequeueOutcome, WebhookCreateError,
    DEFAULT_MAX_ENDPOINTS,
};
use ironclad_store::{Store, Transition};
use ironclad_testkit::TestDb;
use std::time::Duration;
use uuid::Uuid;

const LOCK: Duration = Duration::from_secs(60);
/// The deliverer's default shares.
const SHARE: InFlightShare = InFlightShare {
    per_endpoint: 4,
    per_tenant: 8,
};

fn note(tenant: TenantId, key: &str) -> NewNotification {
    NewNotification {
        tenant,
        case: None,
        kind: NotificationType::DossierBlocked,
        dedup_key: key.to_owned(),
        data: serde_json::json!({"key": key}),
    }
}

async fn endpoint(store: &Store, tenant: TenantId) -> anyhow::Result<Uuid> {
    Ok(store
        .webhook_create(
            tenant,
            &WebhookUrl::parse("http://127.0.0.1:9/hook", true)?,
            Some("test"),
            "api_key:admin",
            DEFAULT_MAX_ENDPOINTS,
        )
        .await?
        .endpoint
        .id)
}

async fn count(store: &Store, sql: &'static str) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(sql).fetch_one(store.pool()).await?)
}

fn answered(status: u16, retry_in: Duration) -> AttemptRecord {
    let now = Utc::now();
    AttemptRecord {
        started_at: now,
        finished_at: now,
        http_status: Some(status),
        error: None,
        response_excerpt: Some("ok".into()),
        delivered: (200..300).contains(&status),
        retry_in,
    }
}

/// Makes every held delivery's lock expired, as if its deliverer had died long ago.
async fn expire_locks(store: &Store) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE webhook_deliveries SET locked_until = now() - interval '1 second' \
         WHERE status = 'DELIVERING'",
    )
    .execute(store.pool())
    .await?;
    Ok(())
}

/// The same cause announced twice (a rerun, a replayed request) makes one notification and
/// one delivery per endpoint. Breaks: an announce without its ON CONFLICT.
#[tokio::test]
async fn one_notification_and_one_delivery_per_dedup_key() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("a").await?;
    endpoint(store, tenant).await?;
    let first = store.announce(note(tenant, "case:1:blocked")).await?;
    let again = store.announce(note(tenant, "case:1:blocked")).await?;
    assert!(first.is_some());
    assert_eq!(again, None, "the second announce is a no-op");
    assert_eq!(count(store, "SELECT count(*) FROM notifications").await?, 1);
    assert_eq!(
        count(store, "SELECT count(*) FROM webhook_deliveries").await?,
        1
    );
    // The key is per tenant: another tenant's identical key is its own notification.
    let other = store.create_tenant("b").await?;
    assert!(store
        .announce(note(other, "case:1:blocked"))
        .await?
        .is_some());
    assert_eq!(count(store, "SELECT count(*) FROM notifications").await?, 2);
    db.drop_database().await;
    Ok(())
}

/// A holder whose lock expired and was taken over writes nothing; the new holder's record
/// applies, and the log shows the lost attempt and the real one, never the stale one.
/// Breaks: a record not guarded by the lock token.
#[tokio::test]
async fn a_stale_holder_cannot_record_an_attempt() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("a").await?;
    endpoint(store, tenant).await?;
    let notification = store
        .announce(note(tenant, "k"))
        .await?
        .ok_or_else(|| anyhow::anyhow!("not announced"))?;
    let old = store.webhook_claim_due(10, LOCK, 8, SHARE).await?;
    assert_eq!(old.len(), 1);
    assert!(
        store
            .webhook_claim_due(10, LOCK, 8, SHARE)
            .await?
            .is_empty(),
        "a held delivery is not claimed twice"
    );
    expire_locks(store).await?;
    let done = store.webhook_maintain().await?;
    assert_eq!((done.released, done.released_dead), (1, 0));
    let new = store.webhook_claim_due(10, LOCK, 8, SHARE).await?;
    assert_eq!(new.len(), 1);
    assert_eq!(new[0].id, old[0].id, "same delivery id");
    assert_eq!((old[0].attempt, new[0].attempt), (1, 2));

    assert_eq!(
        store
            .webhook_record_attempt(&old[0], &answered(200, Duration::ZERO))
            .await?,
        AttemptOutcome::Stale
    );
    assert_eq!(
        store
            .webhook_record_attempt(&new[0], &answered(200, Duration::ZERO))
            .await?,
        AttemptOutcome::Delivered
    );
    // Recording twice is refused too (the row is no longer DELIVERING).
    assert_eq!(
        store
            .webhook_record_attempt(&new[0], &answered(200, Duration::ZERO))
            .await?,
        AttemptOutcome::Stale
    );
    let log = store
        .webhook_deliveries_of_notification(tenant, notification)
        .await?;
    let attempts: Vec<_> = log[0]
        .attempt_log
        .iter()
        .map(|a| (a.attempt, a.http_status, a.error.is_some()))
        .collect();
    assert_eq!(attempts, vec![(1, None, true), (2, Some(200), false)]);
    assert_eq!(log[0].status, "DELIVERED");
    db.drop_database().await;
    Ok(())
}

/// Failures back off, and the last attempt of a budget — answered or lost with its deliverer —
/// makes the delivery DEAD instead of looping. Breaks: lock expiry that ignores the budget.
#[tokio::test]
async fn the_budget_ends_in_dead_whether_the_last_attempt_failed_or_was_lost() -> anyhow::Result<()>
{
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("a").await?;
    endpoint(store, tenant).await?;
    store.announce(note(tenant, "answered")).await?;
    store.announce(note(tenant, "lost")).await?;
    let claimed = store.webhook_claim_due(10, LOCK, 2, SHARE).await?;
    assert_eq!(claimed.len(), 2);
    let outcome = store
        .webhook_record_attempt(&claimed[0], &answered(503, Duration::from_secs(30)))
        .await?;
    let AttemptOutcome::RetryAt(at) = outcome else {
        anyhow::bail!("expected a retry, got {outcome:?}");
    };
    assert!(
        at > Utc::now() + chrono::Duration::seconds(20),
        "backoff applied"
    );
    // Not due yet: nothing to claim but the second one's next turn, which is held.
    assert!(store
        .webhook_claim_due(10, LOCK, 2, SHARE)
        .await?
        .is_empty());
    sqlx::query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status = 'PENDING'")
        .execute(store.pool())
        .await?;
    let second = store.webhook_claim_due(10, LOCK, 2, SHARE).await?;
    assert_eq!(second.len(), 1);
    assert_eq!(
        store
            .webhook_record_attempt(&second[0], &answered(500, Duration::from_secs(30)))
            .await?,
        AttemptOutcome::Dead
    );

    // The other one: its deliverer dies on attempt 1, then again on attempt 2 (the last).
    expire_locks(store).await?;
    assert_eq!(store.webhook_maintain().await?.released, 1);
    assert_eq!(store.webhook_claim_due(10, LOCK, 2, SHARE).await?.len(), 1);
    expire_locks(store).await?;
    let done = store.webhook_maintain().await?;
    assert_eq!((done.released, done.released_dead), (1, 1));
    assert_eq!(
        count(
            store,
            "SELECT count(*) FROM webhook_deliveries WHERE status = 'DEAD'"
        )
        .await?,
        2
    );
    assert_eq!(
        count(store, "SELECT count(*) FROM webhook_attempts").await?,
        4,
        "every attempt logged, lost ones included"
    );

    // `ironclad requeue --dead`: both DEAD ones due again with a fresh budget and audited; a
    // DEAD delivery of another tenant's disabled endpoint stays DEAD; a second run finds none.
    let other = store.create_tenant("b").await?;
    let disabled = endpoint(store, other).await?;
    store
        .announce(note(other, "to a disabled endpoint"))
        .await?;
    store
        .webhook_disable(other, disabled, "api_key:admin")
        .await?
        .ok_or_else(|| anyhow::anyhow!("endpoint not found"))?;
    assert_eq!(store.webhook_requeue_all_dead("cli:ops").await?, 2);
    assert_eq!(
        count(
            store,
            "SELECT count(*) FROM webhook_deliveries
             WHERE status = 'PENDING' AND requeued_by = 'cli:ops' AND max_attempts = attempts + 2"
        )
        .await?,
        2
    );
    assert_eq!(
        count(
            store,
            "SELECT count(*) FROM audit_events WHERE event_type = 'WEBHOOK_REQUEUED' AND actor = 'cli:ops'"
        )
        .await?,
        2
    );
    assert_eq!(
        count(
            store,
            "SELECT count(*) FROM webhook_deliveries WHERE status = 'DEAD'"
        )
        .await?,
        1
    );
    assert_eq!(store.webhook_requeue_all_dead("cli:ops").await?, 0);
    assert_eq!(store.webhook_claim_due(10, LOCK, 2, SHARE).await?.len(), 2);
    db.drop_database().await;
    Ok(())
}

/// The inbox pages newest first without skipping or repeating, filters unread, and marks read
/// once; nothing of another tenant is visible or writable. Breaks: a mark-read without its
/// `read_at IS NULL` guard (it would move `read_at`), a read without its tenant scope.
#[tokio::test]
async fn the_inbox_pages_filters_and_marks_read_within_its_tenant() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("a").await?;
    let other = store.create_tenant("b").await?;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            store
                .announce(note(tenant, &format!("n{i}")))
                .await?
                .ok_or_else(|| anyhow::anyhow!("not announced"))?,
        );
    }
    let foreign = store
        .announce(note(other, "theirs"))
        .await?
        .ok_or_else(|| anyhow::anyhow!("not announced"))?;

    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.notifications_list(tenant, false, cursor, 2).await?;
        if page.is_empty() {
            break;
        }
        cursor = page.last().map(|n| (n.created_at, n.id));
        seen.extend(page.into_iter().map(|n| n.id));
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first, "newest first, no gaps, no repeats");

    let (first, t1) = store
        .notification_mark_read(tenant, ids[0])
        .await?
        .ok_or_else(|| anyhow::anyhow!("not found"))?;
    assert_eq!(t1, Transition::Applied);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (again, t2) = store
        .notification_mark_read(tenant, ids[0])
        .await?
        .ok_or_else(|| anyhow::anyhow!("not found"))?;
    assert_eq!(t2, Transition::Stale);
    assert_eq!(again.read_at, first.read_at, "the first read_at is kept");
    let unread = store.notifications_list(tenant, true, None, 50).await?;
    assert_eq!(unread.len(), 4);
    assert!(unread.iter().all(|n| n.id != ids[0]));

    assert!(store
        .notification_mark_read(tenant, foreign)
        .await?
        .is_none());
    assert!(store.notification_mark_read(other, ids[1]).await?.is_none());
    assert!(store
        .notification_mark_read(tenant, Uuid::new_v4())
        .await?
        .is_none());
    assert_eq!(
        store
            .notifications_list(other, false, None, 50)
            .await?
            .len(),
        1
    );
    db.drop_database().await;
    Ok(())
}

/// Endpoint admin: secrets never listed, create/disable/requeue audited with the admin actor,
/// every id scoped to its tenant. Breaks: a listing that selects the secret, an unaudited
/// change, a write that trusts an id from another tenant.
#[tokio::test]
async fn endpoints_are_audited_and_scoped_to_their_tenant() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("a").await?;
    let other = store.create_tenant("b").await?;
    let created = store
        .webhook_create(
            tenant,
            &WebhookUrl::parse("https://example.com/hooks/ironclad", false)?,
            Some("ops"),
            "api_key:admin",
            DEFAULT_MAX_ENDPOINTS,
        )
        .await?;
    assert!(created.secret.starts_with("whsec_"));
    let listed = format!("{:?}", store.webhook_list(tenant).await?);
    assert!(!listed.contains(&created.secret) && !listed.contains("secret"));
    assert!(store.webhook_list(other).await?.is_empty());
    let id = created.endpoint.id;
    assert!(store.webhook_get(other, id).await?.is_none());
    assert!(store
        .webhook_disable(other, id, "api_key:intruder")
        .await?
        .is_none());
    assert!(store
        .webhook_delivery_log(other, id, None, 10)
        .await?
        .is_none());

    let notification = store
        .announce(note(tenant, "k"))
        .await?
        .ok_or_else(|| anyhow::anyhow!("not announced"))?;
    let delivery = store
        .webhook_deliveries_of_notification(tenant, notification)
        .await?[0]
        .id;
    assert!(store
        .webhook_deliveries_of_notification(other, notification)
        .await?
        .is_empty());
    assert!(matches!(
        store
            .webhook_requeue(other, delivery, "api_key:intruder")
            .await?,
        RequeueOutcome::NotFound
    ));
    assert!(matches!(
        store
            .webhook_requeue(tenant, delivery, "api_key:admin")
            .await?,
        RequeueOutcome::NotDead(_)
    ));

    let (_, first) = store
        .webhook_disable(tenant, id, "api_key:admin")
        .await?
        .ok_or_else(|| anyhow::anyhow!("not found"))?;
    let (disabled, second) = store
        .webhook_disable(tenant, id, "api_key:admin")
        .await?
        .ok_or_else(|| anyhow::anyhow!("not found"))?;
    assert_eq!((first, second), (Transition::Applied, Transition::Stale));
    assert!(disabled.disabled_at.is_some());
    let log = store
        .webhook_delivery_log(tenant, id, None, 10)
        .await?
        .unwrap_or_default();
    assert_eq!(log.len(), 1);
    assert_eq!(
        log[0].status, "DEAD",
        "pending deliveries die with the endpoint"
    );

    let events: Vec<(String, String)> = sqlx::query_as(
        "SELECT event_type, actor FROM audit_events WHERE tenant_id = $1 ORDER BY id",
    )
    .bind(tenant.0)
    .fetch_all(store.pool())
    .await?;
    assert_eq!(
        events,
        vec![
            ("WEBHOOK_CREATED".to_owned(), "api_key:admin".to_owned()),
            ("WEBHOOK_DISABLED".to_owned(), "api_key:admin".to_owned()),
        ]
    );
    db.drop_database().await;
    Ok(())
}

/// Issue 26 item 8: one endpoint with 100 due deliveries (all older) and another with one.
/// The claim takes one per endpoint per round, so the second endpoint's delivery is in the
/// first claim; an endpoint at its share of deliveries in flight is skipped until one ends;
/// a tenant at its share too, while another tenant's endpoint is still served. Breaks: a
/// claim of the oldest due rows of all, which hands the first claims to the long backlog.
#[tokio::test]
async fn claims_take_turns_across_endpoints_and_tenants_within_their_shares() -> anyhow::Result<()>
{
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("a").await?;
    let backlog = endpoint(store, tenant).await?;
    for i in 0..100 {
        store
            .announce(note(tenant, &format!("backlog:{i}")))
            .await?;
    }
    let single = endpoint(store, tenant).await?;
    let lone = store
        .announce(note(tenant, "lone"))
        .await?
        .ok_or_else(|| anyhow::anyhow!("not announced"))?;
    let lone_delivery = store
        .webhook_deliveries_of_notification(tenant, lone)
        .await?
        .into_iter()
        .find(|d| d.endpoint_id == single)
        .ok_or_else(|| anyhow::anyhow!("no delivery to the second endpoint"))?;
    // The lone notification also went to the backlog endpoint: 101 due there, 1 here.

    let first = store.webhook_claim_due(2, LOCK, 8, SHARE).await?;
    assert_eq!(first.len(), 2);
    assert!(
        first.iter().any(|d| d.id == lone_delivery.id),
        "the second endpoint's delivery is in the first round"
    );
    // The backlog endpoint has 1 in flight of its 4: three more, and no further.
    let more = store.webhook_claim_due(100, LOCK, 8, SHARE).await?;
    assert_eq!(more.len(), 3, "the endpoint's share is 4 in flight");
    assert!(store
        .webhook_claim_due(100, LOCK, 8, SHARE)
        .await?
        .is_empty());
    let in_flight_at = |id: Uuid| {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'DELIVERING'",
        )
        .bind(id)
        .fetch_one(store.pool())
    };
    assert_eq!(in_flight_at(backlog).await?, 4);
    // One ends: one more is claimed for it.
    store
        .webhook_record_attempt(&more[0], &answered(200, Duration::ZERO))
        .await?;
    assert_eq!(store.webhook_claim_due(100, LOCK, 8, SHARE).await?.len(), 1);

    // A tenant's share (8) binds over its endpoints together, another tenant's does not.
    let third = endpoint(store, tenant).await?;
    let other = store.create_tenant("b").await?;
    let theirs = endpoint(store, other).await?;
    for i in 0..10 {
        store.announce(note(tenant, &format!("third:{i}"))).await?;
        store.announce(note(other, &format!("theirs:{i}"))).await?;
    }
    let claimed = store.webhook_claim_due(100, LOCK, 8, SHARE).await?;
    assert_eq!(claimed.len(), 7);
    assert_eq!(
        in_flight_at(theirs).await?,
        4,
        "tenant b: its endpoint's share"
    );
    // Tenant a held 5 (4 of them at the backlog endpoint, which is full): 3 more, taken in
    // turns from its two other endpoints.
    let (at_single, at_third) = (in_flight_at(single).await?, in_flight_at(third).await?);
    assert_eq!(in_flight_at(backlog).await? + at_single + at_third, 8);
    assert!(at_single >= 2 && at_third >= 1, "{at_single} {at_third}");
    // Lock expiry frees the shares: held rows whose lock ran out are not in flight.
    expire_locks(store).await?;
    assert_eq!(
        store.webhook_claim_due(100, LOCK, 8, SHARE).await?.len(),
        12
    );
    db.drop_database().await;
    Ok(())
}

/// Issue 26 item 8: a tenant has at most `max_endpoints` active endpoints. One more is refused
/// with a typed error and nothing is written; a disabled endpoint frees its place; two
/// creations racing for the last place make exactly one endpoint. Breaks: a count read before
/// the insert in another statement without the tenant's lock (both racers see room).
#[tokio::test]
async fn the_endpoint_cap_holds_under_concurrent_creation() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("a").await?;
    let url = WebhookUrl::parse("https://example.com/hook", false)?;
    const CAP: u32 = 3;
    let mut ids = Vec::new();
    for _ in 0..CAP {
        ids.push(
            store
                .webhook_create(tenant, &url, None, "api_key:admin", CAP)
                .await?
                .endpoint
                .id,
        );
    }
    let refused = store
        .webhook_create(tenant, &url, None, "api_key:admin", CAP)
        .await;
    assert!(
        matches!(
            refused,
            Err(WebhookCreateError::TooManyEndpoints { limit: CAP })
        ),
        "{refused:?}"
    );
    assert_eq!(store.webhook_list(tenant).await?.len(), CAP as usize);
    // Another tenant has its own places.
    let other = store.create_tenant("b").await?;
    store
        .webhook_create(other, &url, None, "api_key:admin", CAP)
        .await?;
    // A disabled endpoint receives nothing and does not count.
    store
        .webhook_disable(tenant, ids[0], "api_key:admin")
        .await?
        .ok_or_else(|| anyhow::anyhow!("not found"))?;

    // Two creations for the one free place, many times over.
    for round in 0..10 {
        let (a, b) = tokio::join!(
            store.webhook_create(tenant, &url, None, "api_key:admin", CAP),
            store.webhook_create(tenant, &url, None, "api_key:admin", CAP),
        );
        let made: Vec<_> = [a, b].into_iter().filter_map(Result::ok).collect();
        assert_eq!(
            made.len(),
            1,
            "round {round}: exactly one of two racers gets the place"
        );
        let active = store
            .webhook_list(tenant)
            .await?
            .into_iter()
            .filter(|e| e.disabled_at.is_none())
            .count();
        assert_eq!(active, CAP as usize, "round {round}");
        store
            .webhook_disable(tenant, made[0].endpoint.id, "api_key:admin")
            .await?
            .ok_or_else(|| anyhow::anyhow!("not found"))?;
    }
    let created: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND event_type = 'WEBHOOK_CREATED'",
    )
    .bind(tenant.0)
    .fetch_one(store.pool())
    .await?;
    assert_eq!(
        created,
        i64::from(CAP) + 10,
        "a refused creation is not audited"
    );
    db.drop_database().await;
    Ok(())
}
