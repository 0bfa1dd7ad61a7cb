//! The decision report reads one decision version and nothing later: its own snapshot, its own
//! rule results and review, and the case's history only up to the moment the next version was
//! written. Two versions of one case are written with SQL (controlled timestamps on both sides
//! of the boundary), then each version's report is checked for the other's data.

use ironclad_core::review::ReviewStatus;
use ironclad_core::rules::RuleOutcome;
use ironclad_core::{CaseId, CaseStatus, DecisionStatus, JobId, SourceId, TenantId};
use ironclad_store::intake::{IntakeOutcome, NewCase, NewSource};
use ironclad_store::report::{DecisionOrigin, ReportRulesSource};
use ironclad_store::Store;
use ironclad_testkit::TestDb;
use serde_json::json;
use uuid::Uuid;

struct Fixture {
    tenant: TenantId,
    case: CaseId,
    source: SourceId,
}

async fn case_with_one_source(store: &Store, tenant: TenantId) -> anyhow::Result<Fixture> {
    let case = CaseId::new();
    let source = SourceId::new();
    let new = NewCase {
        tenant_id: tenant,
        case_id: case,
        external_reference: Some("REF-<b>\"42\"</b>".into()),
        workflow: Some("trade".into()),
        workflow_id: None,
        idempotency_key: None,
        fingerprint: "fp".into(),
        sources: vec![NewSource {
            source_id: source,
            job_id: JobId::new(),
            filename: "bill of lading.pdf".into(),
            sha256: format!("{:064x}", 7),
            media_type: "application/pdf".into(),
            size_bytes: 1234,
            pages: 2,
            blob_key: format!("sha256/00/00/{:064x}", 7),
        }],
        max_attempts: 3,
        actor: "api_key:test".into(),
        response: json!({}),
    };
    assert_eq!(store.commit_intake(&new).await?, IntakeOutcome::Created);
    Ok(Fixture {
        tenant,
        case,
        source,
    })
}

/// A snapshot as `decisions::decide` writes it, with one bill of lading whose container
/// number reads `container`.
fn snapshot(fx: &Fixture, container: &str) -> serde_json::Value {
    json!({
        "generation": 1,
        "rules": {"source": "workflow", "ruleset_id": null, "ruleset_version": null,
                  "policy": {"confidence_floor": 0.6, "auto_approve_ready": false},
                  "rules": [{"id": "container_known", "template": "FIELD_REQUIRED",
                             "params": {"document_type": "bill_of_lading", "field": "container_number"},
                             "on_fail": "REVIEW_REQUIRED"}]},
        "sources": [{"id": fx.source.0, "filename": "bill of lading.pdf",
                     "sha256": format!("{:064x}", 7), "media_type": "application/pdf",
                     "size_bytes": 1234, "pages": 2}],
        "documents": [{"segment_id": Uuid::now_v7(), "source_id": fx.source.0,
                       "document_type": "bill_of_lading", "first_page": 0, "last_page": 1,
                       "facts": [{"field": "container_number",
                                  "value": {"kind": "text", "value": container},
                                  "evidence": {"source_id": fx.source.0, "page": 1,
                                               "bbox": {"x0": 0.1, "y0": 0.2, "x1": 0.3, "y1": 0.25},
                                               "raw_text": container, "confidence": 0.91},
                                  "conflict": false, "missing": false}]}]
    })
}

/// Writes decision `version` at `now() + hours`, with one rule result and its review.
#[allow(clippy::too_many_arguments)]
async fn decision(
    store: &Store,
    fx: &Fixture,
    version: i32,
    hours: i32,
    status: &str,
    origin: &str,
    rule: (&str, &str, &str),
    review_status: &str,
    snapshot: serde_json::Value,
) -> anyhow::Result<Uuid> {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO decisions (id, case_id, generation, version, status, summary, evidence, \
         origin, decided_by, rules_source, created_at) \
         VALUES ($1, $2, 1, $3, $4, $5, $6, $7, 'system:finalize', 'workflow', \
                 now() + make_interval(hours => $8))",
    )
    .bind(id)
    .bind(fx.case.0)
    .bind(version)
    .bind(status)
    .bind(format!("summary of v{version}"))
    .bind(snapshot)
    .bind(origin)
    .bind(hours)
    .execute(store.pool())
    .await?;
    let (rule_id, outcome, message) = rule;
    sqlx::query(
        "INSERT INTO rule_results (decision_id, ordinal, rule_id, template, outcome, on_fail, \
         message, \"values\") VALUES ($1, 0, $2, 'FIELD_REQUIRED', $3, 'REVIEW_REQUIRED', $4, $5)",
    )
    .bind(id)
    .bind(rule_id)
    .bind(outcome)
    .bind(message)
    .bind(
        json!([{"document_type": "bill_of_lading", "field": "container_number",
                  "value": {"kind": "text", "value": message},
                  "evidence": {"source_id": fx.source.0, "page": 1, "bbox": null,
                               "raw_text": message, "confidence": 0.91}}]),
    )
    .execute(store.pool())
    .await?;
    sqlx::query(
        "INSERT INTO reviews (id, tenant_id, case_id, decision_id, decision_version, \
         decision_status, status, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(hours => $8))",
    )
    .bind(Uuid::now_v7())
    .bind(fx.tenant.0)
    .bind(fx.case.0)
    .bind(id)
    .bind(version)
    .bind(status)
    .bind(review_status)
    .bind(hours)
    .execute(store.pool())
    .await?;
    Ok(id)
}

async fn event(
    store: &Store,
    fx: &Fixture,
    minutes: i32,
    kind: &str,
    data: serde_json::Value,
) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO audit_events (case_id, tenant_id, actor, event_type, data, created_at) \
         VALUES ($1, $2, 'test', $3, $4, now() + make_interval(mins => $5))",
    )
    .bind(fx.case.0)
    .bind(fx.tenant.0)
    .bind(kind)
    .bind(data)
    .bind(minutes)
    .execute(store.pool())
    .await?;
    Ok(())
}

/// Version 1 at +1 h, version 2 (a reevaluation) at +2 h; events at +60, +90, +120 and +130
/// minutes.
async fn two_versions(store: &Store, tenant: TenantId) -> anyhow::Result<Fixture> {
    let fx = case_with_one_source(store, tenant).await?;
    decision(
        store,
        &fx,
        1,
        1,
        "REVIEW_REQUIRED",
        "finalize",
        ("rule_of_v1", "REVIEW_REQUIRED", "MSCU1111111 read at 91 %"),
        "CANCELLED",
        snapshot(&fx, "MSCU1111111"),
    )
    .await?;
    event(store, &fx, 60, "DECISION_GENERATED", json!({"version": 1})).await?;
    event(store, &fx, 90, "NOTE_BEFORE_V2", json!({"seen_by": "v1"})).await?;
    decision(
        store,
        &fx,
        2,
        2,
        "BLOCKED",
        "reevaluate",
        ("rule_of_v2", "FAIL", "MSCU2222222 differs"),
        "PENDING",
        snapshot(&fx, "MSCU2222222"),
    )
    .await?;
    event(store, &fx, 120, "DECISION_GENERATED", json!({"version": 2})).await?;
    event(store, &fx, 130, "AFTER_V2", json!({"seen_by": "v2"})).await?;
    Ok(fx)
}

#[tokio::test]
async fn an_old_version_reports_its_own_results_snapshot_and_history_only() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("acme").await?;
    let fx = two_versions(store, tenant).await?;

    // Right after the events commit, before the sealer ran: the report is served, each event
    // without a hash yet.
    let fresh = store
        .decision_report(Some(tenant), fx.case, Some(1))
        .await?
        .ok_or_else(|| anyhow::anyhow!("no report of v1"))?;
    assert!(fresh.audit.iter().all(|e| e.hash.is_none()));
    store.seal_all_audit_events().await?;
    let v1 = store
        .decision_report(Some(tenant), fx.case, Some(1))
        .await?
        .ok_or_else(|| anyhow::anyhow!("no report of v1"))?;
    assert_eq!(v1.decision.version, 1);
    assert_eq!(v1.decision.latest_version, 2);
    assert_eq!(v1.decision.status, DecisionStatus::ReviewRequired);
    assert_eq!(v1.decision.origin, DecisionOrigin::Finalize);
    assert_eq!(v1.decision.rules_source, ReportRulesSource::Workflow);
    assert_eq!(v1.decision.summary, "summary of v1");
    let ids: Vec<&str> = v1.rule_results.iter().map(|r| r.rule_id.as_str()).collect();
    assert_eq!(ids, ["rule_of_v1"]);
    assert_eq!(v1.rule_results[0].outcome, RuleOutcome::ReviewRequired);
    assert_eq!(v1.rule_results[0].values[0].evidence.page, Some(1));
    let fact = &v1.snapshot.documents[0].facts[0];
    assert_eq!(fact.evidence.raw_text.as_deref(), Some("MSCU1111111"));
    assert_eq!(v1.snapshot.sources[0].filename, "bill of lading.pdf");
    assert_eq!(v1.reviews.len(), 1);
    assert_eq!(v1.reviews[0].status, ReviewStatus::Cancelled);
    // The trail stops where version 2 was written: its own event and later ones are left out.
    let superseded = v1
        .decision
        .superseded_at
        .ok_or_else(|| anyhow::anyhow!("v1 not superseded"))?;
    let kinds: Vec<&str> = v1.audit.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        kinds,
        ["CASE_INGESTED", "DECISION_GENERATED", "NOTE_BEFORE_V2"]
    );
    assert!(v1.audit.iter().all(|e| e.created_at < superseded));
    assert!(v1
        .audit
        .iter()
        .all(|e| e.hash.as_deref().map(str::len) == Some(64)));
    // The case's current status is later history for v1.
    assert_eq!(v1.case_state, None);
    // Every field, as printed for debugging: the report has no serialised form of its own.
    let text = format!("{v1:?}");
    for later in ["MSCU2222222", "rule_of_v2", "AFTER_V2", "summary of v2"] {
        assert!(!text.contains(later), "v1's report shows {later}");
    }

    // Without a version: the latest, with all of the history and the case as it is now.
    let latest = store
        .decision_report(Some(tenant), fx.case, None)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no latest report"))?;
    assert_eq!(latest.decision.version, 2);
    assert_eq!(latest.decision.superseded_at, None);
    assert_eq!(latest.decision.origin, DecisionOrigin::Reevaluate);
    assert_eq!(latest.rule_results[0].rule_id, "rule_of_v2");
    assert_eq!(latest.rule_results[0].outcome, RuleOutcome::Fail);
    assert_eq!(
        latest.snapshot.documents[0].facts[0]
            .evidence
            .raw_text
            .as_deref(),
        Some("MSCU2222222")
    );
    assert_eq!(latest.reviews[0].status, ReviewStatus::Pending);
    assert_eq!(latest.audit.len(), 5);
    assert_eq!(
        latest.audit.last().map(|e| e.event_type.as_str()),
        Some("AFTER_V2")
    );
    let state = latest
        .case_state
        .ok_or_else(|| anyhow::anyhow!("latest report without the case state"))?;
    assert_eq!(state.status, CaseStatus::Ingested);
    assert_eq!(
        store
            .decision_report(Some(tenant), fx.case, Some(2))
            .await?
            .map(|r| r.decision.id),
        Some(latest.decision.id)
    );
    db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn other_tenants_unknown_cases_and_absent_versions_read_as_none() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let owner = store.create_tenant("owner").await?;
    let other = store.create_tenant("other").await?;
    let fx = two_versions(store, owner).await?;
    assert!(store
        .decision_report(Some(other), fx.case, None)
        .await?
        .is_none());
    assert!(store
        .decision_report(Some(other), fx.case, Some(1))
        .await?
        .is_none());
    assert!(store
        .decision_report(Some(owner), fx.case, Some(3))
        .await?
        .is_none());
    assert!(store
        .decision_report(Some(owner), CaseId::new(), None)
        .await?
        .is_none());
    // The operator's view (no tenant) sees every case.
    assert!(store
        .decision_report(None, fx.case, Some(1))
        .await?
        .is_some());
    // A case without any decision has no report yet.
    let undecided = case_with_one_source(store, owner).await?;
    assert!(store
        .decision_report(Some(owner), undecided.case, None)
        .await?
        .is_none());
    db.drop_database().await;
    Ok(())
}

#[tokio::test]
async fn a_decision_older_than_snapshots_reads_with_an_empty_one() -> anyhow::Result<()> {
    let db = TestDb::new().await?;
    let store = &db.store;
    let tenant = store.create_tenant("acme").await?;
    let fx = case_with_one_source(store, tenant).await?;
    // What finalize wrote before decisions kept a snapshot.
    decision(
        store,
        &fx,
        1,
        0,
        "REVIEW_REQUIRED",
        "finalize",
        ("safeguard_no_rules", "REVIEW_REQUIRED", "no rules"),
        "PENDING",
        json!({"ruleset": null, "generation": 1}),
    )
    .await?;
    let report = store
        .decision_report(Some(tenant), fx.case, None)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no report"))?;
    assert_eq!(report.snapshot.generation, Some(1));
    assert!(report.snapshot.documents.is_empty() && report.snapshot.sources.is_empty());
    assert_eq!(report.rule_results.len(), 1);
    db.drop_database().await;
    Ok(())
}
