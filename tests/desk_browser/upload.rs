//! Uploading (issue 25): a refused file can be removed and choosing files again replaces the
//! list; the page works without `crypto.randomUUID` (plain HTTP on a LAN address has none);
//! a double click on Upload, and the same request sent twice over a shaky connection, make
//! one case.

use crate::support::*;
use fantoccini::Locator;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_double_clicked_upload_makes_one_case_and_a_refused_file_can_be_removed(
) -> anyhow::Result<()> {
    let Some(mut rig) = Rig::start("upload", 1366, 900).await? else {
        return Ok(());
    };
    let result = upload_journey(&rig.server, &mut rig.b).await;
    rig.finish(result).await
}

async fn upload_journey(server: &Server, b: &mut Browser) -> anyhow::Result<()> {
    let files = sample("05-blocked")?;
    let scratch = tempfile::tempdir()?;
    let notes = scratch.path().join("notes.txt");
    std::fs::write(&notes, "not a document")?;
    let empty = scratch.path().join("empty.pdf");
    std::fs::write(&empty, b"")?;

    b.sign_in(server, ADMIN).await?;
    b.goto(server, "/upload").await?;
    // As over plain HTTP on a LAN address, where browsers give no crypto.randomUUID.
    let gone = b
        .client
        .execute(
            "Object.defineProperty(Crypto.prototype, 'randomUUID', \
               {value: undefined, configurable: true}); return typeof crypto.randomUUID;",
            vec![],
        )
        .await?;
    assert_eq!(gone, json!("undefined"));
    b.type_into("external_reference", "UPLOAD-1").await?;

    // Choosing files again replaces the list (it used to append).
    b.pick(std::slice::from_ref(&notes)).await?;
    let mut picked = vec![notes.clone(), empty.clone()];
    picked.extend(files.iter().cloned());
    b.pick(&picked).await?;
    let listed = b.client.find_all(Locator::Css("#file-list li")).await?;
    assert_eq!(listed.len(), picked.len(), "the list is the last pick");
    let note = b.text_of("#file-list li:nth-child(2) .note").await?;
    assert!(
        note.contains("empty"),
        "an empty file is flagged at once: {note}"
    );

    // Refused: the file is named, nothing is created, and it can be removed.
    b.click("#upload-submit").await?;
    b.client
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css("#file-list li.failed .remove"))
        .await?;
    wait_until("the refusal is shown", Duration::from_secs(30), || async {
        Ok(b.text_of("#upload-result").await?.contains("refused"))
    })
    .await?;
    assert_eq!(server.count("SELECT count(*) FROM cases").await?, 0);
    b.shot("upload-refused").await?;
    for name in ["notes.txt", "empty.pdf"] {
        b.click(&format!("#file-list button[aria-label='Remove {name}']"))
            .await?;
    }
    let listed = b.client.find_all(Locator::Css("#file-list li")).await?;
    assert_eq!(listed.len(), files.len(), "the refused files are removed");

    // The same request twice (a retry over a shaky connection: the page's script sends a
    // twin of its upload), and a double click on the button.
    b.client
        .execute(
            r#"const open = XMLHttpRequest.prototype.open, set = XMLHttpRequest.prototype.setRequestHeader,
                     send = XMLHttpRequest.prototype.send;
               XMLHttpRequest.prototype.open = function (m, u) { this.sent = [m, u, []]; return open.apply(this, arguments); };
               XMLHttpRequest.prototype.setRequestHeader = function (k, v) { this.sent[2].push([k, v]); return set.apply(this, arguments); };
               XMLHttpRequest.prototype.send = function (body) {
                 if (this.sent[1] === "/v1/cases") {
                   const twin = new XMLHttpRequest();
                   open.call(twin, this.sent[0], this.sent[1]);
                   this.sent[2].forEach(([k, v]) => set.call(twin, k, v));
                   twin.addEventListener("load", () => { window.twin = {status: twin.status, body: twin.responseText}; });
                   send.call(twin, body);
                 }
                 return send.apply(this, arguments);
               };
               return true;"#,
            vec![],
        )
        .await?;
    let after_first = b
        .client
        .execute(
            "const button = document.getElementById('upload-submit'); button.click(); \
             const off = button.disabled; button.click(); return off;",
            vec![],
        )
        .await?;
    assert_eq!(after_first, json!(true), "the button is off while sending");
    b.client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css("#upload-result a[href^='/cases/']"))
        .await?;
    wait_until(
        "the twin request is answered",
        Duration::from_secs(30),
        || async {
            Ok(!b
                .client
                .execute("return window.twin || null;", vec![])
                .await?
                .is_null())
        },
    )
    .await?;
    let twin = b.client.execute("return window.twin;", vec![]).await?;
    assert!(
        matches!(twin["status"].as_u64(), Some(200 | 201)),
        "the twin was answered as a replay: {twin}"
    );
    b.shot("upload-done").await?;
    assert_eq!(
        server.count("SELECT count(*) FROM cases").await?,
        1,
        "one case for two clicks and two requests"
    );
    assert_eq!(
        server.count("SELECT count(*) FROM sources").await?,
        files.len() as i64
    );
    Ok(())
}
