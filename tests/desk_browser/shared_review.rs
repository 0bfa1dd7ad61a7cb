//! A desk several people work at (issue 25, items 1-3), in real browsers: a value corrected
//! by typing it and another by drawing a box on the page, each deciding the case again with
//! the new decision shown; four eyes with two people signed in at once, the proposer refused
//! as their own second; a claim seen from a second browser, taken over with a reason.

use crate::support::*;
use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::Locator;
use serde_json::{json, Value};
use std::time::Duration;

/// A second reviewer, created for the journeys that need two people.
const SECOND: &str = "sam@example.com";
const SECOND_NAME: &str = "Sam Second";

async fn second_reviewer(server: &Server) -> anyhow::Result<()> {
    server
        .cli(
            &[
                "user",
                "create",
                "--tenant",
                "acme",
                "--role",
                "reviewer",
                "--email",
                SECOND,
                "--name",
                SECOND_NAME,
                "--password-stdin",
                "--keep-password",
            ],
            Some(PASSWORD),
        )
        .await?;
    Ok(())
}

/// Waits for the page to show decision version `version`.
async fn decision_version(b: &Browser, version: u32) -> anyhow::Result<()> {
    let wanted = format!("v{version}");
    wait_until(
        &format!("decision {wanted} is shown"),
        Duration::from_secs(30),
        || async {
            Ok(b.text_of("#decision-h")
                .await
                .is_ok_and(|h| h.contains(&wanted)))
        },
    )
    .await
}

/// The Correct link of `field` of the document of type `doc_type`.
fn correct_link(doc_type: &str, field: &str) -> String {
    format!("a.correct[data-field='{field}'][data-label^='{doc_type} ']")
}

#[tokio::test]
async fn a_value_corrected_by_typing_and_another_by_drawing_a_box_decide_the_case_again(
) -> anyhow::Result<()> {
    let Some(mut rig) = Rig::start("corrections", 1366, 900).await? else {
        return Ok(());
    };
    let result = corrections_journey(&rig.server, &mut rig.b).await;
    rig.finish(result).await
}

async fn corrections_journey(server: &Server, b: &mut Browser) -> anyhow::Result<()> {
    b.sign_in(server, ADMIN).await?;
    let case = b
        .upload(server, "CORRECT-1", &sample("05-blocked")?)
        .await?;
    assert_eq!(b.decision_arrives().await?, "BLOCKED");
    b.sign_out().await?;
    b.sign_in(server, REVIEWER).await?;
    b.goto(server, &format!("/cases/{case}")).await?;

    // Rita claims the review, then opens the invoice's container number with `e`.
    b.submit("#claim-take").await?;
    b.client.wait().for_element(Locator::Id("notice")).await?;
    let status = b.text_of("#claim-status").await?;
    assert!(
        status.starts_with("You are reviewing this case"),
        "{status}"
    );
    let link = correct_link("commercial_invoice", "container_number");
    b.client
        .execute(
            &format!("document.querySelector(\"{link}\").focus(); return true;"),
            vec![],
        )
        .await?;
    b.client
        .find(Locator::Css(&link))
        .await?
        .send_keys("e")
        .await?;
    let panel = b
        .client
        .wait()
        .for_element(Locator::Id("correction"))
        .await?;
    wait_until(
        "the correction form opens",
        Duration::from_secs(5),
        || async { Ok(panel.is_displayed().await?) },
    )
    .await?;
    assert_eq!(
        b.text_of("#correction-label").await?,
        "commercial_invoice — container_number"
    );
    assert_eq!(b.text_of("#correction-current").await?, "CBHU6394182");

    // A value the parser refuses says so while typing; the right one says what it saves.
    b.type_into("correction-value", "CBHU63941").await?;
    wait_until(
        "the preview refuses it",
        Duration::from_secs(10),
        || async {
            Ok(b.text_of("#correction-read")
                .await?
                .contains("not a valid container_number"))
        },
    )
    .await?;
    b.shot("typed-refused-by-the-parser").await?;
    b.client
        .find(Locator::Id("correction-value"))
        .await?
        .clear()
        .await?;
    b.type_into("correction-value", "CBHU 639417-7").await?;
    wait_until("the preview reads it", Duration::from_secs(10), || async {
        Ok(b.text_of("#correction-read").await?
            == "It will be saved as CBHU6394177 (container_number).")
    })
    .await?;
    b.type_into(
        "correction-reason",
        "the invoice's typist slipped; the B/L and declaration agree",
    )
    .await?;
    b.shot("correction-typed-1366").await?;
    // The same form on a phone.
    b.client.set_window_size(390, 844).await?;
    b.client
        .execute(
            "document.getElementById('correction').scrollIntoView(); return true;",
            vec![],
        )
        .await?;
    if let Some(out) = b.sticks_out().await? {
        anyhow::bail!("the correction form scrolls sideways on a phone: {out}");
    }
    b.shot("correction-typed-390").await?;
    b.client.set_window_size(1366, 900).await?;

    b.click("#correction-save").await?;
    decision_version(b, 2).await?;
    let notice = b.text_of("#notice").await?;
    assert!(notice.starts_with("Your correction was saved."), "{notice}");
    assert_eq!(b.text_of("#decision-status").await?, "READY");
    let rule = b.text_of("#rule-container_matches summary").await?;
    assert!(
        rule.contains("container_number corrected by Rita Reviewer: the invoice's typist slipped"),
        "{rule}"
    );
    b.shot("decided-again-after-typing").await?;

    // A box drawn on the bill of lading around its B/L number: Ironclad reads the page there
    // and shows what it read before anything is saved.
    let link = correct_link("bill_of_lading", "bl_number");
    b.click(&link).await?;
    b.click("#correction-draw").await?;
    let fact = b
        .client
        .find(Locator::Css(&link))
        .await?
        .attr("data-segment")
        .await?
        .unwrap_or_default();
    // The page scrolls (smoothly) to the document's page; then the value is brought to the
    // middle of the window and the box drawn around it.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let target = b
        .client
        .execute(
            "const rect = document.querySelector(`rect[data-fact='${arguments[0]}-bl_number']`); \
             rect.scrollIntoView({block: 'center', inline: 'center'}); \
             const r = rect.getBoundingClientRect(); \
             return {x0: r.left - 8, y0: r.top - 5, x1: r.right + 8, y1: r.bottom + 5};",
            vec![json!(fact.replace('-', ""))],
        )
        .await?;
    let at = |k: &str| target[k].as_f64().unwrap_or_default().round() as i64;
    let drag = MouseActions::new("drawing".into())
        .then(PointerAction::MoveTo {
            duration: None,
            x: at("x0"),
            y: at("y0"),
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::MoveTo {
            duration: Some(Duration::from_millis(200)),
            x: at("x1"),
            y: at("y1"),
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    b.client.perform_actions(drag).await?;
    wait_until("the box is read", Duration::from_secs(20), || async {
        Ok(b.text_of("#correction-read")
            .await?
            .contains("It will be saved as"))
    })
    .await?;
    let read = b.text_of("#correction-read").await?;
    assert!(
        read.starts_with("Read in the box: “COSU6384120577”.") && read.contains("COSU6384120577"),
        "{read}"
    );
    b.client
        .execute(
            "document.getElementById('correction').scrollIntoView(); return true;",
            vec![],
        )
        .await?;
    b.type_into("correction-reason", "read again from the page")
        .await?;
    b.shot("correction-box-drawn").await?;
    b.click("#correction-save").await?;
    decision_version(b, 3).await?;
    let fields = b.text_of("table.facts").await?;
    assert!(
        fields.contains("corrected by Rita Reviewer: read again from the page"),
        "{fields}"
    );
    b.shot("decided-again-after-a-box").await?;
    let boxes = server
        .count(
            "SELECT count(*) FROM corrections WHERE method = 'box' AND new -> 'bbox' IS NOT NULL",
        )
        .await?;
    assert_eq!(boxes, 1);
    Ok(())
}

#[tokio::test]
async fn four_eyes_need_two_people_signed_in_at_once() -> anyhow::Result<()> {
    let Some(mut rig) = Rig::start("four-eyes", 1366, 900).await? else {
        return Ok(());
    };
    let result = four_eyes_journey(&rig.server, &mut rig.b).await;
    rig.finish(result).await
}

/// Activates a ruleset of the trade workflow's own rules whose policy asks four eyes for
/// overrides and corrections.
async fn activate_four_eyes(server: &Server) -> anyhow::Result<()> {
    let trade: serde_yaml::Value =
        serde_yaml::from_str(include_str!("../../workflows/trade.yaml"))?;
    let mut spec: Value = serde_json::to_value(json!({
        "rules": trade.get("rules"),
        "policy": trade.get("policy"),
    }))?;
    spec["policy"]["four_eyes"] = json!(["OVERRIDE", "CORRECTION"]);
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("four-eyes.yaml");
    std::fs::write(&file, serde_yaml::to_string(&spec)?)?;
    let file = file.display().to_string();
    let created = server
        .cli(
            &[
                "rulesets",
                "create",
                "--tenant",
                "acme",
                "--workflow",
                "trade",
                &file,
            ],
            None,
        )
        .await?;
    let id = created
        .split_whitespace()
        .nth(2)
        .unwrap_or_default()
        .to_owned();
    server
        .cli(
            &[
                "rulesets",
                "activate",
                "--tenant",
                "acme",
                &id,
                "--comment",
                "four eyes",
            ],
            None,
        )
        .await?;
    Ok(())
}

async fn four_eyes_journey(server: &Server, b: &mut Browser) -> anyhow::Result<()> {
    activate_four_eyes(server).await?;
    second_reviewer(server).await?;
    b.sign_in(server, REVIEWER).await?;
    let case = b.upload_as_api(server, "EYES-1").await?;
    b.goto(server, &format!("/cases/{case}")).await?;
    assert_eq!(b.decision_arrives().await?, "BLOCKED");

    // Rita overrides: it waits for a second reviewer, and her page says so.
    b.click("#review-form input[value=OVERRIDE]").await?;
    b.type_into("comment", "the carrier confirmed CBHU6394177 by phone")
        .await?;
    b.submit("#review-submit").await?;
    let notice = b
        .client
        .wait()
        .for_element(Locator::Id("notice"))
        .await?
        .text()
        .await?;
    assert!(notice.contains("waits for a second reviewer"), "{notice}");
    assert!(b
        .text_of("#second-own")
        .await?
        .contains("Another reviewer must confirm"));
    assert_eq!(b.text_of("#case-status").await?, "AWAITING_REVIEW");
    b.shot("override-awaits-a-second-reviewer").await?;
    // Rita is refused as her own second, even by a forged call from her own page.
    let own = b
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             fetch(`/v1/cases/${arguments[0]}/reviews/second`, {method: 'POST', \
               headers: {'Content-Type': 'application/json', 'Idempotency-Key': 'own-1', \
                         'X-CSRF-Token': document.querySelector('main').dataset.csrf}, \
               body: JSON.stringify({opinion: 'CONFIRM', expected_decision_version: 1})}) \
             .then(r => r.json().then(j => done({status: r.status, code: j.error && j.error.code})));",
            vec![json!(case)],
        )
        .await?;
    assert_eq!(own, json!({"status": 403, "code": "forbidden"}));

    // Sam, signed in at the same time in another browser, finds it in the queue and confirms.
    let mut sam = Browser::start("four-eyes-second", 1366, 900).await?;
    let outcome = async {
        sam.sign_in(server, SECOND).await?;
        sam.goto(server, "/queue?show=second").await?;
        let waiting = sam.text_of("#queue").await?;
        assert!(
            waiting.contains("OVERRIDE by Rita Reviewer waits for a second reviewer"),
            "{waiting}"
        );
        sam.shot("queue-awaiting-second").await?;
        sam.goto(server, &format!("/cases/{case}")).await?;
        sam.type_into("second-comment", "checked the carrier's e-mail")
            .await?;
        sam.shot("second-reviewer-confirms").await?;
        sam.submit("#second-confirm").await?;
        sam.client.wait().for_element(Locator::Id("notice")).await?;
        assert_eq!(sam.text_of("#case-status").await?, "RESOLVED");
        assert_eq!(sam.text_of("#case-resolution").await?, "OVERRIDDEN");
        let timeline = sam.text_of("#timeline").await?;
        for (event, who) in [
            ("resolution proposed", "Rita Reviewer"),
            ("second confirmed", SECOND_NAME),
            ("review resolved", "Rita Reviewer"),
        ] {
            assert!(
                timeline
                    .lines()
                    .any(|l| l.contains(event) && l.contains(who)),
                "{event} by {who}: {timeline}"
            );
        }
        sam.shot("confirmed-both-in-the-timeline").await?;
        anyhow::Ok(())
    }
    .await;
    sam.client.clone().close().await?;
    b.violations.append(&mut sam.violations);
    b.secrets.append(&mut sam.secrets);
    outcome
}

#[tokio::test]
async fn a_claim_is_seen_from_a_second_browser_and_taken_over_with_a_reason() -> anyhow::Result<()>
{
    let Some(mut rig) = Rig::start("claims", 1366, 900).await? else {
        return Ok(());
    };
    let result = claims_journey(&rig.server, &mut rig.b).await;
    rig.finish(result).await
}

async fn claims_journey(server: &Server, b: &mut Browser) -> anyhow::Result<()> {
    second_reviewer(server).await?;
    b.sign_in(server, REVIEWER).await?;
    let case = b.upload_as_api(server, "CLAIM-1").await?;
    b.goto(server, &format!("/cases/{case}")).await?;
    b.decision_arrives().await?;
    b.submit("#claim-take").await?;
    b.client.wait().for_element(Locator::Id("notice")).await?;
    b.shot("rita-claims").await?;

    let mut sam = Browser::start("claims-second", 1366, 900).await?;
    let outcome = async {
        sam.sign_in(server, SECOND).await?;
        sam.goto(server, "/queue").await?;
        let queue = sam.text_of("#queue").await?;
        assert!(queue.contains("Rita Reviewer is reviewing"), "{queue}");
        sam.shot("queue-shows-the-claim").await?;
        sam.goto(server, &format!("/cases/{case}")).await?;
        let status = sam.text_of("#claim-status").await?;
        assert!(
            status.starts_with("Rita Reviewer is reviewing this case"),
            "{status}"
        );
        // Sam reads but cannot act: no review form, no Correct link.
        assert!(sam.client.find(Locator::Id("review-form")).await.is_err());
        assert!(sam.client.find(Locator::Css("a.correct")).await.is_err());
        sam.shot("someone-else-is-reviewing").await?;
        sam.type_into("takeover-reason", "Rita is out this afternoon")
            .await?;
        sam.submit("#claim-takeover").await?;
        sam.client.wait().for_element(Locator::Id("notice")).await?;
        assert!(sam
            .text_of("#claim-status")
            .await?
            .starts_with("You are reviewing"));
        assert!(sam.client.find(Locator::Id("review-form")).await.is_ok());
        sam.shot("taken-over").await?;
        anyhow::Ok(())
    }
    .await;
    sam.client.clone().close().await?;
    b.violations.append(&mut sam.violations);
    b.secrets.append(&mut sam.secrets);
    outcome?;

    // Rita's page, shown again, says who took it and why is in the timeline.
    b.goto(server, &format!("/cases/{case}")).await?;
    let status = b.text_of("#claim-status").await?;
    assert!(
        status.starts_with("Sam Second is reviewing this case"),
        "{status}"
    );
    let timeline = b.text_of("#timeline").await?;
    assert!(
        timeline.contains("review taken over") && timeline.contains("Rita is out this afternoon"),
        "{timeline}"
    );
    b.shot("rita-sees-the-take-over").await?;

    // Past its SLA (the database's clock moved on), the review is marked overdue in the queue.
    sqlx::query("UPDATE reviews SET due_at = now() - interval '1 hour' WHERE status = 'PENDING'")
        .execute(server.db.store.pool())
        .await?;
    b.goto(server, "/queue?show=overdue").await?;
    let row = b.text_of("#queue tr.overdue").await?;
    assert!(row.contains("CLAIM-1") && row.contains("overdue"), "{row}");
    assert!(row.contains("Sam Second is reviewing"), "{row}");
    b.shot("queue-overdue").await?;
    Ok(())
}

impl Browser {
    /// Submits the blocked sample dossier with the upload page, as the signed-in person
    /// (a reviewer cannot upload: the admin does it in their own session, signed out after).
    async fn upload_as_api(&mut self, server: &Server, reference: &str) -> anyhow::Result<String> {
        let key = server
            .cli(
                &["apikey", "create", "--tenant", "acme", "--role", "operator"],
                None,
            )
            .await?;
        let key = key
            .split_whitespace()
            .find(|w| w.starts_with("ick_"))
            .unwrap_or_default()
            .to_owned();
        let mut form =
            reqwest::multipart::Form::new().text("external_reference", reference.to_owned());
        for path in sample("05-blocked")? {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            form = form.part(
                "file",
                reqwest::multipart::Part::bytes(std::fs::read(&path)?).file_name(name),
            );
        }
        let answer: Value = reqwest::Client::new()
            .post(server.url("/v1/cases"))
            .bearer_auth(&key)
            .multipart(form)
            .send()
            .await?
            .json()
            .await?;
        Ok(answer["case_id"].as_str().unwrap_or_default().to_owned())
    }
}
