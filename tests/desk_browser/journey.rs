//! The first journey: an admin uploads the blocked sample dossier, opens a failed rule, sees
//! its boxes where the stored evidence says, overrides the decision; a forged call is refused;
//! a reviewer cannot reach the admin pages.

use crate::support::*;
use fantoccini::Locator;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_reviewer_resolves_a_blocked_dossier_in_the_browser() -> anyhow::Result<()> {
    let files = dossier();
    anyhow::ensure!(files.len() >= 2, "sample dossier 05-blocked is missing");
    let Some(mut rig) = Rig::start("journey", 1280, 800).await? else {
        return Ok(());
    };
    let result = journey(&rig.server, &mut rig.b, &files).await;
    rig.finish(result).await
}

async fn journey(server: &Server, b: &mut Browser, files: &[PathBuf]) -> anyhow::Result<()> {
    // Sign in.
    b.client.goto(&server.url("/")).await?;
    b.shot("sign-in").await?;
    b.sign_in(server, ADMIN).await?;
    b.shot("cases-empty").await?;

    // Upload the dossier from the upload page (several files in one pick).
    b.client.goto(&server.url("/upload")).await?;
    b.client
        .find(Locator::Id("external_reference"))
        .await?
        .send_keys("BROWSER-05")
        .await?;
    let picked = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    b.client
        .find(Locator::Id("files"))
        .await?
        .send_keys(&picked)
        .await?;
    let listed = b.client.find_all(Locator::Css("#file-list li")).await?;
    assert_eq!(listed.len(), files.len(), "every picked file is listed");
    b.shot("upload-picked").await?;
    b.client
        .find(Locator::Id("upload-submit"))
        .await?
        .click()
        .await?;
    let link = b
        .client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css("#upload-result a"))
        .await?;
    let notes = b.client.find_all(Locator::Css("#file-list .note")).await?;
    for note in notes {
        assert_eq!(note.text().await?, "received");
    }
    b.shot("upload-done").await?;
    link.click().await?;

    // The case page shows the decision when it is written, without anyone reloading it.
    let case_url = b.client.current_url().await?;
    let case_id = case_url.path().trim_start_matches("/cases/").to_owned();
    assert_eq!(b.decision_arrives().await?, "BLOCKED");
    b.shot("case-decided").await?;

    // The queue lists it; the operations page and admin open for an admin.
    b.client.goto(&server.url("/queue")).await?;
    assert!(b.text_of("#queue").await?.contains("BROWSER-05"));
    b.shot("queue").await?;
    // The operations page charts what `ironclad all`'s reconciler sampled since it started.
    b.client.goto(&server.url("/operations")).await?;
    assert_eq!(b.text_of("h1").await?, "Operations");
    for chart in [
        "outbox_age",
        "retries",
        "pending_age",
        "failures",
        "review_wait",
    ] {
        b.client
            .find(Locator::Css(&format!("svg[data-chart=\"{chart}\"]")))
            .await
            .map_err(|e| anyhow::anyhow!("no {chart} chart: {e}"))?;
    }
    b.shot("operations").await?;
    b.client.goto(&server.url("/admin")).await?;
    assert!(b.text_of("main").await?.contains(REVIEWER));
    b.shot("admin").await?;
    b.client.goto(&server.url("/admin/rulesets")).await?;
    assert_eq!(b.text_of("h1").await?, "Rulesets");
    b.client.goto(&server.url("/admin/webhooks")).await?;
    assert_eq!(b.text_of("h1").await?, "Webhooks");
    b.client.goto(case_url.as_str()).await?;

    // Open a failed rule: its values side by side, its boxes over the page.
    let rule = b.client.find(Locator::Css("details.rule.fail")).await?;
    let anchor = rule
        .attr("data-rule")
        .await?
        .ok_or_else(|| anyhow::anyhow!("rule without anchor"))?;
    rule.find(Locator::Css("summary")).await?.click().await?;
    let rows = rule.find_all(Locator::Css("table.values tbody tr")).await?;
    assert!(
        rows.len() >= 2,
        "a failed comparison shows its values side by side"
    );
    // The page images load as a person scrolls to them (lazily: each rendered once on the
    // server, then cached); then the view goes back to the rule's lit box.
    let loaded = r#"const imgs = Array.from(document.querySelectorAll('figure.page img'));
        const next = imgs.find(i => !(i.complete && i.naturalWidth > 0));
        if (next) next.scrollIntoView({block: 'center'});
        else document.querySelector('rect.lit')?.scrollIntoView({block: 'center'});
        return imgs.map(i => ({complete: i.complete, w: i.naturalWidth, src: i.currentSrc}));"#;
    let all_loaded = |v: &Value| {
        v.as_array()
            .is_some_and(|imgs| imgs.iter().all(|i| i["w"].as_u64().unwrap_or(0) > 0))
    };
    let start = Instant::now();
    let mut states = b.client.execute(loaded, vec![]).await?;
    while !all_loaded(&states) && start.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        states = b.client.execute(loaded, vec![]).await?;
    }
    assert!(all_loaded(&states), "page images did not load: {states}");
    b.client.execute(loaded, vec![]).await?; // back to the lit box
    tokio::time::sleep(Duration::from_millis(800)).await; // smooth scroll
    b.shot("rule-opened").await?;
    let geometry = b
        .client
        .execute(
            r#"const rect = document.querySelector(`rect[data-rule="${arguments[0]}"]`);
               if (!rect) return null;
               const img = rect.closest('.sheet').querySelector('img');
               const r = rect.getBoundingClientRect(), i = img.getBoundingClientRect();
               return { x: +rect.getAttribute('x'), y: +rect.getAttribute('y'),
                        fx: (r.left - i.left) / i.width, fy: (r.top - i.top) / i.height,
                        fw: r.width / i.width, lit: rect.classList.contains('lit'),
                        loaded: img.complete && img.naturalWidth > 0,
                        page: rect.closest('figure').id };"#,
            vec![json!(anchor)],
        )
        .await?;
    anyhow::ensure!(!geometry.is_null(), "no box drawn for rule {anchor}");
    let image = b
        .client
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
               const img = document.querySelector('figure.page img');
               fetch(img.src).then(async r => done({status: r.status,
                 type: r.headers.get('content-type'),
                 text: r.headers.get('content-type') === 'image/png' ? '' : await r.text()}))
               .catch(e => done({error: String(e)}));"#,
            vec![],
        )
        .await?;
    assert_eq!(image["status"], json!(200), "page image: {image}");
    assert_eq!(
        geometry["lit"],
        json!(true),
        "opening the rule lights its boxes"
    );
    assert_eq!(geometry["loaded"], json!(true), "the page image loaded");

    // The box is where the stored evidence of that rule's value says, on the right page.
    let values: Value = sqlx::query_scalar(
        "SELECT r.values FROM rule_results r JOIN decisions d ON d.id = r.decision_id \
         WHERE d.case_id = $1::uuid AND r.rule_id = $2 ORDER BY d.version DESC LIMIT 1",
    )
    .bind(&case_id)
    .bind(&anchor)
    .fetch_one(server.db.store.pool())
    .await?;
    let boxed = values
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| {
            let e = &v["evidence"];
            let page = format!(
                "p-{}-{}",
                e["source_id"].as_str().unwrap_or_default().replace('-', ""),
                e["page"].as_u64().unwrap_or(0) + 1
            );
            !e["bbox"].is_null() && page == geometry["page"].as_str().unwrap_or_default()
        })
        .ok_or_else(|| anyhow::anyhow!("no stored evidence on {}", geometry["page"]))?;
    let bbox = &boxed["evidence"]["bbox"];
    let near = |drawn: &Value, stored: &Value, tol: f64| {
        (drawn.as_f64().unwrap_or(-1.0) - stored.as_f64().unwrap_or(-2.0)).abs() <= tol
    };
    let candidates: Vec<Value> = values
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v["evidence"]["bbox"].clone())
        .collect();
    // A rule's outline is drawn RULE_BOX_MARGIN (4/1000 of the page) outside the printed
    // value, so that it does not cover small text.
    let margin = 4.0;
    let matches_one = candidates.iter().any(|bb| {
        near(&geometry["fx"], &bb["x0"], 0.01)
            && near(&geometry["fy"], &bb["y0"], 0.01)
            && near(
                &json!((geometry["x"].as_f64().unwrap_or(-1.0) + margin) / 1000.0),
                &bb["x0"],
                0.001,
            )
            && near(
                &json!((geometry["y"].as_f64().unwrap_or(-1.0) + margin) / 1000.0),
                &bb["y0"],
                0.001,
            )
    });
    assert!(
        matches_one,
        "box drawn at {geometry} is not where the evidence says ({bbox})"
    );

    // Resolve: a BLOCKED decision is overridden with a comment.
    b.client
        .find(Locator::Css("#review-form input[value=OVERRIDE]"))
        .await?
        .click()
        .await?;
    b.client
        .find(Locator::Id("comment"))
        .await?
        .send_keys("weights checked by phone with the shipper")
        .await?;
    b.shot("review-filled").await?;
    b.client
        .find(Locator::Id("review-submit"))
        .await?
        .click()
        .await?;
    b.client.wait().for_element(Locator::Id("notice")).await?;
    assert_eq!(b.text_of("#case-status").await?, "RESOLVED");
    let timeline = b.text_of("#timeline").await?;
    assert!(
        timeline.contains("review resolved") && timeline.contains(ADMIN_NAME),
        "timeline: {timeline}"
    );
    assert!(timeline.contains("weights checked by phone"), "{timeline}");
    b.shot("resolved").await?;

    // A forged call from the page without the CSRF token is refused, and changes nothing.
    let forged = b
        .client
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
               fetch(`/v1/cases/${arguments[0]}/reprocess`, {method: 'POST',
                 headers: {'Content-Type': 'application/json', 'Idempotency-Key': 'forged-1'},
                 body: JSON.stringify({reason: 'forged'})})
               .then(async r => done({status: r.status, body: await r.json()}))
               .catch(e => done({error: String(e)}));"#,
            vec![json!(case_id)],
        )
        .await?;
    assert_eq!(forged["status"], json!(403), "{forged}");
    assert_eq!(forged["body"]["error"]["code"], json!("csrf_refused"));
    let generation: i32 = sqlx::query_scalar("SELECT generation FROM cases WHERE id = $1::uuid")
        .bind(&case_id)
        .fetch_one(server.db.store.pool())
        .await?;
    assert_eq!(generation, 1, "the forged reprocess changed the case");

    // The same case at a tablet's width.
    b.client.set_window_size(820, 1180).await?;
    b.client.goto(case_url.as_str()).await?;
    b.shot("case-tablet").await?;
    b.client.set_window_size(1280, 800).await?;

    // A reviewer: no admin or upload, and the queue is theirs to work.
    b.client.goto(&server.url("/")).await?;
    b.sign_out().await?;
    b.sign_in(server, REVIEWER).await?;
    let nav = b.text_of("header nav").await?;
    assert!(!nav.contains("Admin") && !nav.contains("Upload"), "{nav}");
    for page in [
        "/admin",
        "/admin/rulesets",
        "/admin/webhooks",
        "/upload",
        "/operations",
    ] {
        b.client.goto(&server.url(page)).await?;
        let heading = b.text_of("h1").await?;
        assert!(heading.starts_with("403"), "{page}: {heading}");
    }
    b.shot("reviewer-refused-admin").await?;
    b.client.goto(&server.url("/queue")).await?;
    b.shot("reviewer-queue").await?;
    Ok(())
}
