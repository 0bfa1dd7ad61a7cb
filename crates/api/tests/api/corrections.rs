//! Corrections (issue 25, item 1): a reviewer fixes a value the documents were read as —
//! typed, or read from a box drawn on the page — and the case is decided again as version
//! N+1 under the same rules. Cases are read for real (`reading.rs`): the BLOCKED dossier whose
//! invoice gives container HLXU8072164 where the other documents give HLXU8072159, and a
//! scanned bill of lading read by Tesseract.

use crate::helpers::TestApp;
use crate::reading::{dossier, fact, fixture, rule, typed, TRADE};
use ironclad_core::role::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

const REASON: &str = "the invoice's typist swapped the last digits; the B/L is right";

/// Rows of every table a correction writes.
async fn rows(app: &TestApp) -> anyhow::Result<[i64; 4]> {
    Ok([
        app.count("SELECT count(*) FROM corrections").await?,
        app.count("SELECT count(*) FROM decisions").await?,
        app.count("SELECT count(*) FROM facts").await?,
        app.count("SELECT count(*) FROM audit_events").await?,
    ])
}

/// Where the test's PNGs of the report go, to be looked at.
fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp/corrections");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_correction_is_a_new_fact_version_and_decides_the_case_again() -> anyhow::Result<()>
{
    let app = TestApp::spawn().await?;
    let case = app.read_case(TRADE, &dossier("blocked-container")?).await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let before = app.case_json(case).await?;
    assert_eq!(before["decision"]["status"], "BLOCKED", "{before:#}");
    assert_eq!(rule(&before, "container_matches")["outcome"], "FAIL");
    let (invoice, container) = fact(&before, "commercial_invoice", "container_number");
    assert_eq!(container["value"]["value"]["code"], "HLXU8072164");

    let path = format!("/v1/cases/{case}/corrections");
    let body = typed(invoice, "container_number", "HLXU 807215-9", REASON, 1);
    let answer = app.post_as(&reviewer, &path, Some("fix-1"), &body).await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let first = answer.json();
    assert_eq!(first["status"], "APPLIED");
    assert_eq!(first["decision"]["version"], 2);
    assert_eq!(first["fact_version"], 2);
    let name = first["corrected_by"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(name.starts_with("API key ick_"), "{name}");

    // Decision 2, origin correction, under the same rules: the rule now passes and says who
    // corrected which value, and why.
    let after = app.case_json(case).await?;
    let decision = &after["decision"];
    assert_eq!(
        (
            &decision["version"],
            &decision["origin"],
            &decision["status"]
        ),
        (&json!(2), &json!("correction"), &json!("READY")),
        "{decision:#}"
    );
    let matches = rule(&after, "container_matches");
    assert_eq!(matches["outcome"], "PASS");
    let message = matches["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with(&format!("container_number corrected by {name}: {REASON}")),
        "{message}"
    );
    let noted: Vec<&Value> = matches["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| !v["evidence"]["correction"].is_null())
        .collect();
    assert_eq!(noted.len(), 1, "{matches:#}");
    assert_eq!(noted[0]["evidence"]["correction"]["by"], name.as_str());

    // The fact's version 2 is current, typed (no box), naming its correction; version 1 is
    // kept as it was read.
    let (_, corrected) = fact(&after, "commercial_invoice", "container_number");
    assert_eq!(corrected["value"]["value"]["code"], "HLXU8072159");
    assert_eq!(corrected["version"], 2);
    assert_eq!(corrected["raw_text"], "HLXU 807215-9");
    assert!(corrected["bbox"].is_null() && corrected["confidence"].is_null());
    assert_eq!(corrected["correction"]["reason"], REASON);
    assert_eq!(corrected["correction"]["by"], name.as_str());
    assert_eq!(
        corrected["correction"]["previous_value"]["value"]["code"],
        "HLXU8072164"
    );
    let versions: Vec<(i32, Value, bool)> = sqlx::query_as(
        "SELECT version, value, superseded_at IS NOT NULL FROM facts \
         WHERE segment_id = $1 AND field = 'container_number' ORDER BY version",
    )
    .bind(
        invoice["id"]
            .as_str()
            .unwrap_or_default()
            .parse::<uuid::Uuid>()?,
    )
    .fetch_all(app.db.store.pool())
    .await?;
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0].1["value"]["code"], "HLXU8072164");
    assert!(versions[0].2 && !versions[1].2, "{versions:?}");
    // Never an edit in place: the database refuses to change a fact's value.
    assert!(
        sqlx::query("UPDATE facts SET value = '{}'::jsonb WHERE case_id = $1")
            .bind(case.0)
            .execute(app.db.store.pool())
            .await
            .is_err()
    );

    // One audit event with the old value and its evidence and the new one.
    let events: Vec<(String, Value)> = sqlx::query_as(
        "SELECT actor, data FROM audit_events WHERE case_id = $1 AND event_type = 'FACT_CORRECTED'",
    )
    .bind(case.0)
    .fetch_all(app.db.store.pool())
    .await?;
    assert_eq!(events.len(), 1);
    let data = &events[0].1;
    assert_eq!(data["old"]["value"]["value"]["code"], "HLXU8072164");
    assert!(
        data["old"]["bbox"].is_object() && data["old"]["page"] == 0,
        "{data:#}"
    );
    assert_eq!(data["new"]["value"]["value"]["code"], "HLXU8072159");
    assert_eq!(
        (&data["reason"], &data["decision_version"]),
        (&json!(REASON), &json!(2))
    );

    // A replay answers the first answer and writes nothing; the key with another body is 409.
    let written = rows(&app).await?;
    let replay = app.post_as(&reviewer, &path, Some("fix-1"), &body).await?;
    assert_eq!(replay.status, StatusCode::CREATED);
    assert_eq!(replay.json(), first);
    assert_eq!(
        replay.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    let other = typed(invoice, "container_number", "HLXU8072164", REASON, 1);
    let reused = app.post_as(&reviewer, &path, Some("fix-1"), &other).await?;
    assert_eq!(
        (reused.status, reused.code()),
        (StatusCode::CONFLICT, "idempotency_key_reused".to_owned())
    );
    // A correction against version 1, now stale, is refused with the current decision.
    let stale = app.post_as(&reviewer, &path, Some("fix-2"), &other).await?;
    assert_eq!(
        (stale.status, stale.code()),
        (StatusCode::CONFLICT, "conflict".to_owned()),
        "{}",
        stale.text()
    );
    assert_eq!(stale.json()["error"]["details"]["current"]["version"], 2);
    assert_eq!(
        rows(&app).await?,
        written,
        "a refused request wrote something"
    );

    // The reports: version 2 marks the corrected value with who and why, version 1 does not.
    let report = app
        .get(
            &format!("/v1/cases/{case}/report?format=json"),
            Some(&reviewer),
        )
        .await?;
    assert_eq!(report.status, StatusCode::OK);
    let report = report.json();
    assert_eq!(report["decision"]["origin"], "correction");
    let reported = report["snapshot"]["documents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["document_type"] == "commercial_invoice")
        .flat_map(|d| d["facts"].as_array().into_iter().flatten())
        .find(|f| f["field"] == "container_number")
        .cloned()
        .unwrap_or_default();
    assert_eq!(reported["evidence"]["correction"]["by"], name.as_str());
    assert_eq!(reported["evidence"]["correction"]["reason"], REASON);
    let v1 = app
        .get(
            &format!("/v1/cases/{case}/report?format=json&version=1"),
            Some(&reviewer),
        )
        .await?
        .text();
    assert!(
        !v1.contains("\"correction\""),
        "version 1's report shows a later correction"
    );
    let pdf = app
        .get(
            &format!("/v1/cases/{case}/report?format=pdf"),
            Some(&reviewer),
        )
        .await?;
    assert_eq!(pdf.status, StatusCode::OK);
    let file = shots().join("report-v2.pdf");
    std::fs::write(&file, &pdf.bytes)?;
    let text = Command::new("pdftotext")
        .args(["-layout"])
        .arg(&file)
        .arg("-")
        .output()?;
    let text = String::from_utf8_lossy(&text.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains(&format!("corrected by {name}")) && text.contains("typist swapped"),
        "{text}"
    );
    // A picture of its pages, for a person to look at.
    let rendered = Command::new("pdftoppm")
        .args(["-png", "-r", "70"])
        .arg(&file)
        .arg(shots().join("report-v2"))
        .status()?;
    assert!(rendered.success());
    app.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_corrections_say_why_and_change_nothing() -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.read_case(TRADE, &dossier("blocked-container")?).await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let detail = app.case_json(case).await?;
    let (invoice, _) = fact(&detail, "commercial_invoice", "container_number");
    let path = format!("/v1/cases/{case}/corrections");
    let before = (
        app.count("SELECT count(*) FROM corrections").await?,
        app.count("SELECT count(*) FROM decisions").await?,
        app.count("SELECT count(*) FROM facts").await?,
    );

    // An operator may not correct.
    let body = typed(invoice, "container_number", "HLXU8072159", REASON, 1);
    let op = app.post_as(&app.key, &path, Some("k-op"), &body).await?;
    assert_eq!(
        (op.status, op.code()),
        (StatusCode::FORBIDDEN, "forbidden".to_owned())
    );

    // A value the field's parser refuses: 422 with the parser's own message.
    let workflow =
        ironclad_extract::Workflow::from_yaml(TRADE).map_err(|e| anyhow::anyhow!("{e}"))?;
    for (field, text) in [
        ("container_number", "not a container"),
        ("invoice_date", "31/02/2024"),
    ] {
        let parser =
            ironclad_extract::extract::read_field(&workflow, "commercial_invoice", field, text);
        let Some(Err(expected)) = parser else {
            panic!("{field} {text:?} parses: {parser:?}");
        };
        let bad = typed(invoice, field, text, REASON, 1);
        let answer = app
            .post_as(&reviewer, &path, Some(&format!("k-{field}")), &bad)
            .await?;
        assert_eq!(
            (answer.status, answer.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "unparseable".to_owned()),
            "{}",
            answer.text()
        );
        assert_eq!(answer.json()["error"]["message"], expected.to_string());
        // The preview says the same, before anything is saved.
        let preview = app
            .post_as(
                &reviewer,
                &format!("{path}/preview"),
                None,
                &json!({"segment": invoice["id"], "field": field, "value": text}),
            )
            .await?;
        assert_eq!(preview.status, StatusCode::OK);
        assert_eq!(preview.json()["problem"], expected.to_string());
    }

    // Unknown field, unknown document, both value and box, no reason, no key.
    let unknown_field = typed(invoice, "colour", "blue", REASON, 1);
    let answer = app
        .post_as(&reviewer, &path, Some("k-a"), &unknown_field)
        .await?;
    assert_eq!(
        (answer.status, answer.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field".to_owned())
    );
    assert!(answer.json()["error"]["details"]["fields"]
        .as_array()
        .is_some_and(|f| f.contains(&json!("container_number"))));
    let mut unknown_segment = body.clone();
    unknown_segment["segment"] = json!(uuid::Uuid::now_v7());
    let answer = app
        .post_as(&reviewer, &path, Some("k-b"), &unknown_segment)
        .await?;
    assert_eq!(
        (answer.status, answer.code()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_segment".to_owned()
        )
    );
    let mut both = body.clone();
    both["box"] = json!({"page": 0, "x0": 0.1, "y0": 0.1, "x1": 0.3, "y1": 0.12});
    let answer = app.post_as(&reviewer, &path, Some("k-c"), &both).await?;
    assert_eq!(
        (answer.status, answer.code()),
        (StatusCode::BAD_REQUEST, "invalid_body".to_owned())
    );
    let reasonless = typed(invoice, "container_number", "HLXU8072159", "  ", 1);
    let answer = app
        .post_as(&reviewer, &path, Some("k-d"), &reasonless)
        .await?;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.text());
    let answer = app.post_as(&reviewer, &path, None, &body).await?;
    assert_eq!(
        (answer.status, answer.code()),
        (
            StatusCode::BAD_REQUEST,
            "missing_idempotency_key".to_owned()
        )
    );
    let mut off_page = body.clone();
    off_page.as_object_mut().map(|o| o.remove("value"));
    off_page["box"] = json!({"page": 7, "x0": 0.1, "y0": 0.1, "x1": 0.3, "y1": 0.12});
    let answer = app
        .post_as(&reviewer, &path, Some("k-e"), &off_page)
        .await?;
    assert_eq!(
        (answer.status, answer.code()),
        (StatusCode::BAD_REQUEST, "invalid_box".to_owned())
    );

    // Another tenant's reviewer: 404, as for an unknown case.
    let other = app.db.store.create_tenant("tenant-b").await?;
    let stranger = app.key_for(other, Role::Reviewer).await?;
    let answer = app.post_as(&stranger, &path, Some("k-f"), &body).await?;
    assert_eq!(
        (answer.status, answer.code()),
        (StatusCode::NOT_FOUND, "not_found".to_owned())
    );
    let answer = app
        .post_as(
            &stranger,
            &format!("{path}/preview"),
            None,
            &json!({"segment": invoice["id"], "field": "container_number", "value": "x"}),
        )
        .await?;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);

    assert_eq!(
        (
            app.count("SELECT count(*) FROM corrections").await?,
            app.count("SELECT count(*) FROM decisions").await?,
            app.count("SELECT count(*) FROM facts").await?,
        ),
        before,
        "a refused correction wrote something"
    );
    app.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reviewers_correcting_one_field_at_once_one_wins_and_the_other_gets_409(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let case = app.read_case(TRADE, &dossier("blocked-container")?).await?;
    let (rita, sam) = (
        app.key_for(app.tenant, Role::Reviewer).await?,
        app.key_for(app.tenant, Role::Reviewer).await?,
    );
    let detail = app.case_json(case).await?;
    let (invoice, _) = fact(&detail, "commercial_invoice", "container_number");
    let path = format!("/v1/cases/{case}/corrections");
    let a = typed(
        invoice,
        "container_number",
        "HLXU8072159",
        "Rita: the B/L is right",
        1,
    );
    let b = typed(
        invoice,
        "container_number",
        "HLXU8072170",
        "Sam: the seal list says so",
        1,
    );
    let (ra, rb) = tokio::join!(
        app.post_as(&rita, &path, Some("race-a"), &a),
        app.post_as(&sam, &path, Some("race-b"), &b)
    );
    let mut statuses = vec![ra?.status, rb?.status];
    statuses.sort();
    assert_eq!(statuses, vec![StatusCode::CREATED, StatusCode::CONFLICT]);
    assert_eq!(app.count("SELECT count(*) FROM corrections").await?, 1);
    assert_eq!(app.count("SELECT count(*) FROM decisions").await?, 2);
    assert_eq!(
        app.count("SELECT count(*) FROM facts WHERE superseded_at IS NULL AND field = 'container_number' AND correction_id IS NOT NULL").await?,
        1
    );
    app.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_box_on_a_scanned_page_is_read_by_the_ocr_reader_before_and_when_saving(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let scan = fixture("generated/set-01/bill-of-lading.scan.pdf")?;
    let case = app.read_case(TRADE, &[scan]).await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let detail = app.case_json(case).await?;
    assert_eq!(detail["pages"][0]["method"], "ocr", "the page is a scan");
    let (bl, container) = fact(&detail, "bill_of_lading", "container_number");
    let bbox = &container["bbox"];
    anyhow::ensure!(bbox.is_object(), "no box for the container: {container:#}");
    // A box drawn a little wider than the printed value, as a person draws it.
    let side = |k: &str, by: f64| bbox[k].as_f64().unwrap_or_default() + by;
    let drawn = json!({"page": 0, "x0": side("x0", -0.01), "y0": side("y0", -0.006),
                       "x1": side("x1", 0.01), "y1": side("y1", 0.006)});
    let path = format!("/v1/cases/{case}/corrections");
    let preview = app
        .post_as(
            &reviewer,
            &format!("{path}/preview"),
            None,
            &json!({"segment": bl["id"], "field": "container_number", "box": drawn}),
        )
        .await?;
    assert_eq!(preview.status, StatusCode::OK, "{}", preview.text());
    let read = preview.json();
    assert_eq!(read["value"]["value"]["code"], "SEGU7848760", "{read:#}");
    assert_eq!(read["shown"], "SEGU7848760");
    assert!(read["problem"].is_null());

    let body = json!({"segment": bl["id"], "field": "container_number", "box": drawn,
                      "reason": "read again from the page", "expected_decision_version": 1});
    let answer = app.post_as(&reviewer, &path, Some("box-1"), &body).await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    assert_eq!(answer.json()["decision"]["version"], 2);
    let after = app.case_json(case).await?;
    let (_, corrected) = fact(&after, "bill_of_lading", "container_number");
    assert_eq!(corrected["value"]["value"]["code"], "SEGU7848760");
    assert_eq!(corrected["correction"]["method"], "box");
    assert_eq!(corrected["page"], 0);
    for k in ["x0", "y0", "x1", "y1"] {
        let (saved, given) = (corrected["bbox"][k].as_f64(), drawn[k].as_f64());
        assert!(
            matches!((saved, given), (Some(s), Some(g)) if (s - g).abs() < 1e-4),
            "{k}: {saved:?} vs {given:?}"
        );
    }
    assert!(corrected["raw_text"]
        .as_str()
        .is_some_and(|t| t.replace([' ', '-'], "").contains("SEGU7848760")));

    // A box around nothing reads nothing, and says so.
    let blank = json!({"segment": bl["id"], "field": "container_number",
                       "box": {"page": 0, "x0": 0.9, "y0": 0.97, "x1": 0.99, "y1": 0.995},
                       "reason": "x", "expected_decision_version": 2});
    let answer = app.post_as(&reviewer, &path, Some("box-2"), &blank).await?;
    assert_eq!(
        (answer.status, answer.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "nothing_read".to_owned()),
        "{}",
        answer.text()
    );
    app.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reprocess_keeps_corrections_of_sources_it_carries_over_and_drops_them_for_sources_it_reads_again(
) -> anyhow::Result<()> {
    let app = TestApp::spawn().await?;
    let files = dossier("blocked-container")?;
    let case = app.read_case(TRADE, &files).await?;
    let reviewer = app.key_for(app.tenant, Role::Reviewer).await?;
    let detail = app.case_json(case).await?;
    let (invoice, _) = fact(&detail, "commercial_invoice", "container_number");
    let answer = app
        .post_as(
            &reviewer,
            &format!("/v1/cases/{case}/corrections"),
            Some("fix"),
            &typed(invoice, "container_number", "HLXU8072159", REASON, 1),
        )
        .await?;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());

    // Only the bill of lading is read again: the corrected invoice comes over as corrected,
    // and the new generation's decision passes, naming the correction.
    let bl_source = detail["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["filename"] == "bill-of-lading.pdf")
        .map(|s| s["id"].clone())
        .unwrap_or_default();
    let reprocess = |key: &'static str, body: Value| {
        let app = &app;
        async move {
            app.post_as(
                &app.key,
                &format!("/v1/cases/{case}/reprocess"),
                Some(key),
                &body,
            )
            .await
        }
    };
    let answer = reprocess(
        "again-bl",
        json!({"reason": "a better B/L scan", "source_ids": [bl_source]}),
    )
    .await?;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.text());
    let carried = settle(&app, case).await?;
    let (_, kept) = fact(&carried, "commercial_invoice", "container_number");
    assert_eq!(kept["value"]["value"]["code"], "HLXU8072159", "{kept:#}");
    assert_eq!(kept["correction"]["reason"], REASON);
    assert_eq!(carried["decision"]["status"], "READY");
    assert!(rule(&carried, "container_matches")["message"]
        .as_str()
        .is_some_and(|m| m.contains("corrected by")));

    // Every document read again: the invoice reads HLXU8072164 again, and the case blocks.
    let answer = reprocess("again-all", json!({"reason": "new workflow"})).await?;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.text());
    let reread = settle(&app, case).await?;
    let (_, fresh) = fact(&reread, "commercial_invoice", "container_number");
    assert_eq!(fresh["value"]["value"]["code"], "HLXU8072164");
    assert!(fresh["correction"].is_null() && fresh["version"] == 1);
    assert_eq!(reread["decision"]["status"], "BLOCKED");
    // The earlier correction stays in the case's history.
    assert_eq!(
        app.count("SELECT count(*) FROM corrections WHERE status = 'APPLIED'")
            .await?,
        1
    );
    app.stop().await;
    Ok(())
}

/// Reads the case's new generation and waits for its decision.
async fn settle(app: &TestApp, case: ironclad_core::CaseId) -> anyhow::Result<Value> {
    app.read_pending(case).await?;
    app.case_json(case).await
}
