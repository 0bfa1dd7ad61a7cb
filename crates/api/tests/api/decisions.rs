//! Decision routes: the review queue, review actions (roles, idempotency, stale versions,
//! tenant isolation), reprocess, reevaluate, and rulesets (admin only, invalid ones refused).

use crate::helpers::{Answer, TestApp};
use ironclad_core::role::Role;
use ironclad_core::{CaseId, Envelope, JobId, JobKind};
use ironclad_store::jobs::ClaimOutcome;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;
use uuid::Uuid;

pub(crate) const TRADE: &str = include_str!("../../../../workflows/trade.yaml");

impl TestApp {
    async fn post_json(
        &self,
        path: &str,
        key: &str,
        idem: Option<&str>,
        body: Value,
    ) -> anyhow::Result<Answer> {
        let mut request = self
            .client
            .post(self.url(path))
            .bearer_auth(key)
            .json(&body);
        if let Some(k) = idem {
            request = request.header("Idempotency-Key", k);
        }
        Answer::read(request.send().await?).await
    }

    /// Submits a one-file case and runs its jobs through the store as a worker would,
    /// finalizing with no rules (so the decision asks for review).
    pub(crate) async fn decided_case(&self) -> anyhow::Result<CaseId> {
        let pdf = ironclad_inspect::fixtures::pdf_with_pages(1, "Bill of Lading");
        let answer = self.submit(&[("bl.pdf", &pdf)]).await?;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
        let case: CaseId = answer.json()["case_id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("no case id"))?;
        let store = &self.db.store;
        for kind in [JobKind::ProcessSource, JobKind::FinalizeCase] {
            let job: Uuid =
                sqlx::query_scalar("SELECT id FROM jobs WHERE case_id = $1 AND kind = $2")
                    .bind(case.0)
                    .bind(kind.as_str())
                    .fetch_one(store.pool())
                    .await?;
            let claimed = match store
                .claim_job(
                    &Envelope::new(JobId(job), case, kind, 1),
                    "w",
                    Duration::from_secs(60),
                )
                .await?
            {
                ClaimOutcome::Claimed(c) => c,
                ClaimOutcome::Refused(r) => anyhow::bail!("refused {r:?}"),
            };
            match kind {
                JobKind::ProcessSource => {
                    store.complete_source_job(&claimed, &json!({}), 3).await?;
                }
                JobKind::FinalizeCase => {
                    store
                        .finalize_case(&claimed, &ironclad_testkit::harness::no_rules())
                        .await?;
                }
            }
        }
        Ok(case)
    }
}

#[tokio::test]
async fn review_actions_need_the_right_role_a_key_and_the_current_version() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.decided_case().await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let path = format!("/v1/cases/{case}/reviews");
    let approve = json!({"action": "APPROVE", "expected_decision_version": 1});

    // The queue shows it, oldest first, with its decision status and age.
    let queue = app
        .get("/v1/reviews?status=PENDING", Some(&reviewer))
        .await?;
    assert_eq!(queue.status, StatusCode::OK);
    let rows = queue.json()["reviews"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["decision_status"], "REVIEW_REQUIRED");
    assert!(rows[0]["age_seconds"].as_f64().is_some());

    // The operator may not review; a key is required; APPROVE needs READY.
    let op = app
        .post_json(&path, &app.key, Some("k1"), approve.clone())
        .await?;
    assert_eq!(
        (op.status, op.code()),
        (StatusCode::FORBIDDEN, "forbidden".to_owned())
    );
    let nokey = app
        .post_json(&path, &reviewer, None, approve.clone())
        .await?;
    assert_eq!(nokey.status, StatusCode::BAD_REQUEST);
    let not_ready = app.post_json(&path, &reviewer, Some("k1"), approve).await?;
    assert_eq!(
        not_ready.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        not_ready.text()
    );
    let no_comment = app
        .post_json(
            &path,
            &reviewer,
            Some("k1"),
            json!({"action": "OVERRIDE", "expected_decision_version": 1}),
        )
        .await?;
    assert_eq!(no_comment.status, StatusCode::UNPROCESSABLE_ENTITY);
    let stale = app
        .post_json(
            &path,
            &reviewer,
            Some("k2"),
            json!({"action": "REJECT", "expected_decision_version": 7}),
        )
        .await?;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    assert_eq!(stale.json()["error"]["details"]["current"]["version"], 1);
    let garbage = app
        .post_json(&path, &reviewer, Some("k3"), json!({"action": "MAYBE"}))
        .await?;
    assert_eq!(
        garbage.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        garbage.text()
    );

    // Another tenant's reviewer cannot even see the case.
    let other = app.db.store.create_tenant("other").await?;
    let foreign = app.key_for(other, Role::Reviewer).await?;
    let override_ = json!({"action": "OVERRIDE", "expected_decision_version": 1, "comment": "checked with the carrier"});
    let hidden = app
        .post_json(&path, &foreign, Some("k4"), override_.clone())
        .await?;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    let hidden_queue = app.get("/v1/reviews", Some(&foreign)).await?;
    assert_eq!(
        hidden_queue.json()["reviews"].as_array().map(Vec::len),
        Some(0)
    );

    // OVERRIDE with a comment resolves; the replay answers the same; reuse is 409.
    let done = app
        .post_json(&path, &reviewer, Some("k5"), override_.clone())
        .await?;
    assert_eq!(done.status, StatusCode::OK, "{}", done.text());
    assert_eq!(done.json()["resolution"], "OVERRIDDEN");
    let replay = app
        .post_json(&path, &reviewer, Some("k5"), override_)
        .await?;
    assert_eq!(replay.status, StatusCode::OK);
    assert_eq!(
        replay.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    assert_eq!(replay.bytes, done.bytes);
    let reused = app
        .post_json(
            &path,
            &reviewer,
            Some("k5"),
            json!({"action": "REJECT", "expected_decision_version": 1}),
        )
        .await?;
    assert_eq!(reused.status, StatusCode::CONFLICT);
    let again = app
        .post_json(
            &path,
            &reviewer,
            Some("k6"),
            json!({"action": "REJECT", "expected_decision_version": 1}),
        )
        .await?;
    assert_eq!(again.status, StatusCode::CONFLICT, "already resolved");

    let detail = app
        .get(&format!("/v1/cases/{case}"), Some(&reviewer))
        .await?
        .json();
    assert_eq!(detail["status"], "RESOLVED");
    assert_eq!(detail["resolution"], "OVERRIDDEN");
    assert_eq!(detail["decision"]["status"], "REVIEW_REQUIRED");
    assert!(detail["decision"]["rule_results"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));
    assert!(
        detail["decision"].get("evidence").is_none(),
        "the snapshot is served by the report"
    );
    assert!(detail["audit"]
        .as_array()
        .is_some_and(|a| a.iter().any(|e| e["event_type"] == "REVIEW_RESOLVED")));
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn reprocess_and_reevaluate_are_scoped_keyed_and_answer_what_they_did() -> anyhow::Result<()>
{
    let app = TestApp::spawn().await?;
    let case = app.decided_case().await?;
    let admin = app.key_for(app.tenant, Role::Admin).await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;

    // Reevaluate: a new version; a reviewer may, an operator may not.
    let path = format!("/v1/cases/{case}/reevaluate");
    let op = app
        .post_json(&path, &app.key, Some("e0"), json!({}))
        .await?;
    assert_eq!(op.status, StatusCode::FORBIDDEN);
    let re = app
        .post_json(&path, &reviewer, Some("e1"), json!({}))
        .await?;
    assert_eq!(re.status, StatusCode::CREATED, "{}", re.text());
    assert_eq!(re.json()["decision"]["version"], 2);
    let detail = app
        .get(&format!("/v1/cases/{case}"), Some(&reviewer))
        .await?
        .json();
    assert_eq!(detail["decision"]["version"], 2);
    assert_eq!(detail["decision"]["origin"], "reevaluate");

    // Reprocess: needs a reason, names only the case's sources, answers 202 with the jobs.
    let path = format!("/v1/cases/{case}/reprocess");
    let no_reason = app
        .post_json(&path, &app.key, Some("p1"), json!({"reason": " "}))
        .await?;
    assert_eq!(no_reason.status, StatusCode::BAD_REQUEST);
    let stranger = app
        .post_json(
            &path,
            &app.key,
            Some("p2"),
            json!({"reason": "x", "source_ids": [Uuid::now_v7()]}),
        )
        .await?;
    assert_eq!(stranger.status, StatusCode::UNPROCESSABLE_ENTITY);
    let other = app.db.store.create_tenant("other").await?;
    let foreign = app.key_for(other, Role::Admin).await?;
    let hidden = app
        .post_json(&path, &foreign, Some("p3"), json!({"reason": "x"}))
        .await?;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    let done = app
        .post_json(
            &path,
            &admin,
            Some("p4"),
            json!({"reason": "scan replaced"}),
        )
        .await?;
    assert_eq!(done.status, StatusCode::ACCEPTED, "{}", done.text());
    assert_eq!(done.json()["generation"], 2);
    assert_eq!(done.json()["jobs"].as_array().map(Vec::len), Some(1));
    let detail = app
        .get(&format!("/v1/cases/{case}"), Some(&admin))
        .await?
        .json();
    assert_eq!(detail["status"], "PROCESSING");
    assert_eq!(detail["generation"], 2);
    let pending: i64 = app
        .count("SELECT count(*) FROM reviews WHERE status = 'PENDING'")
        .await?;
    assert_eq!(
        pending, 0,
        "the pending review is cancelled by the reprocess"
    );
    // Reevaluating a case being read again is a conflict, not a silent decision.
    let busy = app
        .post_json(
            &format!("/v1/cases/{case}/reevaluate"),
            &admin,
            Some("e2"),
            json!({}),
        )
        .await?;
    assert_eq!(busy.status, StatusCode::CONFLICT);
    app.stop().await;
    Ok(())
}

#[tokio::test]
async fn rulesets_are_admin_only_validated_before_activation_and_diffed() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    app.db.store.load_workflow("trade", TRADE).await?;
    let admin = app.key_for(app.tenant, Role::Admin).await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let good = json!({"workflow": "trade", "rules": [{
        "id": "documents_present", "template": "REQUIRED_DOCUMENT", "on_fail": "REVIEW_REQUIRED",
        "params": {"document_types": ["bill_of_lading", "commercial_invoice"]}}],
        "policy": {"confidence_floor": 0.7}});
    let bad = json!({"workflow": "trade", "rules": [{
        "id": "ghost", "template": "FIELD_REQUIRED", "on_fail": "BLOCKED",
        "params": {"document_type": "bill_of_lading", "field": "no_such_field"}}]});

    let denied = app
        .post_json("/v1/rulesets", &reviewer, None, good.clone())
        .await?;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    let unknown_wf = app
        .post_json(
            "/v1/rulesets",
            &admin,
            None,
            json!({"workflow": "nope", "rules": []}),
        )
        .await?;
    assert_eq!(unknown_wf.status, StatusCode::UNPROCESSABLE_ENTITY);

    let r1 = app.post_json("/v1/rulesets", &admin, None, good).await?;
    assert_eq!(r1.status, StatusCode::CREATED, "{}", r1.text());
    assert_eq!(r1.json()["validation"]["valid"], true, "{}", r1.text());
    let r1_id = r1.json()["ruleset"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let r2 = app.post_json("/v1/rulesets", &admin, None, bad).await?;
    assert_eq!(r2.status, StatusCode::CREATED);
    assert_eq!(r2.json()["validation"]["valid"], false);
    let r2_id = r2.json()["ruleset"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    // Activation needs a comment and a valid ruleset.
    let act = |id: &str| format!("/v1/rulesets/{id}/activate");
    let invalid = app
        .post_json(&act(&r2_id), &admin, None, json!({"comment": "try"}))
        .await?;
    assert_eq!(invalid.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        invalid.text().contains("no_such_field"),
        "{}",
        invalid.text()
    );
    let silent = app
        .post_json(&act(&r1_id), &admin, None, json!({"comment": ""}))
        .await?;
    assert_eq!(silent.status, StatusCode::BAD_REQUEST);
    let live = app
        .post_json(
            &act(&r1_id),
            &admin,
            None,
            json!({"comment": "pilot rules"}),
        )
        .await?;
    assert_eq!(live.status, StatusCode::OK, "{}", live.text());
    assert_eq!(live.json()["ruleset"]["status"], "ACTIVE");
    let twice = app
        .post_json(&act(&r1_id), &admin, None, json!({"comment": "again"}))
        .await?;
    assert_eq!(twice.status, StatusCode::CONFLICT);

    let diff = app
        .get(&format!("/v1/rulesets/{r2_id}/diff"), Some(&admin))
        .await?;
    assert_eq!(diff.status, StatusCode::OK);
    let d = diff.json();
    assert_eq!(d["diff"]["added"][0]["id"], "ghost");
    assert_eq!(d["diff"]["removed"][0]["id"], "documents_present");

    let other = app.db.store.create_tenant("other").await?;
    let foreign = app.key_for(other, Role::Admin).await?;
    assert_eq!(
        app.get(&format!("/v1/rulesets/{r1_id}"), Some(&foreign))
            .await?
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/v1/rulesets", Some(&foreign)).await?.json()["rulesets"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    let notifications = app
        .count("SELECT count(*) FROM notifications WHERE type = 'RULESET_ACTIVATED'")
        .await?;
    assert_eq!(notifications, 1);
    app.stop().await;
    Ok(())
}
