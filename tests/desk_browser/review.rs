//! The review form (issue 25): nothing preselected and no APPROVE on a BLOCKED decision; a
//! refused action shows its reason beside the form and keeps what was typed; "someone else
//! changed this case" only when someone did, naming who and what.

use crate::support::*;
use fantoccini::Locator;
use serde_json::json;

#[tokio::test]
async fn the_review_form_preselects_nothing_and_a_refusal_keeps_the_comment() -> anyhow::Result<()>
{
    let Some(mut rig) = Rig::start("review", 1366, 900).await? else {
        return Ok(());
    };
    let result = review_journey(&rig.server, &mut rig.b).await;
    rig.finish(result).await
}

async fn review_journey(server: &Server, b: &mut Browser) -> anyhow::Result<()> {
    b.sign_in(server, ADMIN).await?;
    let case = b.upload(server, "REVIEW-1", &sample("05-blocked")?).await?;
    assert_eq!(b.decision_arrives().await?, "BLOCKED");
    b.sign_out().await?;
    b.sign_in(server, REVIEWER).await?;
    b.goto(server, &format!("/cases/{case}")).await?;

    // Nothing chosen for the reviewer, and APPROVE is not offered on a BLOCKED decision.
    let form = b
        .client
        .execute(
            "const f = document.getElementById('review-form'); \
             return {checked: f.querySelectorAll('input[type=radio]:checked').length, \
                     actions: Array.from(f.querySelectorAll('input[type=radio]')).map(r => r.value)};",
            vec![],
        )
        .await?;
    assert_eq!(form["checked"], json!(0), "{form}");
    assert_eq!(form["actions"], json!(["OVERRIDE", "REJECT"]), "{form}");
    b.shot("review-defaults").await?;

    // An override without a comment: refused beside the form, the choice kept, nobody else
    // blamed.
    b.click("#review-form input[value=OVERRIDE]").await?;
    b.submit("#review-submit").await?;
    let problem = b
        .client
        .wait()
        .for_element(Locator::Id("review-problem"))
        .await?
        .text()
        .await?;
    assert!(problem.to_lowercase().contains("comment"), "{problem}");
    assert!(b.client.find(Locator::Id("conflict")).await.is_err());
    let kept = b
        .client
        .execute(
            "return document.querySelector('#review-form input[value=OVERRIDE]').checked;",
            vec![],
        )
        .await?;
    assert_eq!(kept, json!(true));
    b.shot("override-needs-a-comment").await?;

    // Sent with no choice (a browser that does not check `required`): the reason beside the
    // form, the comment kept.
    let comment = "container number confirmed with the carrier";
    b.type_into("comment", comment).await?;
    b.client
        .execute(
            "document.querySelectorAll('#review-form input[type=radio]').forEach(r => { \
               r.required = false; r.checked = false; }); return true;",
            vec![],
        )
        .await?;
    b.submit("#review-submit").await?;
    let problem = b
        .client
        .wait()
        .for_element(Locator::Id("review-problem"))
        .await?
        .text()
        .await?;
    assert!(problem.contains("Choose how"), "{problem}");
    assert_eq!(
        b.client
            .find(Locator::Id("comment"))
            .await?
            .prop("value")
            .await?
            .as_deref(),
        Some(comment)
    );
    b.shot("no-choice-comment-kept").await?;

    // Someone else acts meanwhile (the case decided again from the command line): the stale
    // form says who and what, and the comment is still there for the new decision.
    b.click("#review-form input[value=REJECT]").await?;
    server.cli(&["reevaluate", &case], None).await?;
    b.submit("#review-submit").await?;
    let conflict = b
        .client
        .wait()
        .for_element(Locator::Id("conflict"))
        .await?
        .text()
        .await?;
    assert!(
        conflict.contains("Someone else changed this case."),
        "{conflict}"
    );
    assert!(
        conflict.contains("command line") && conflict.contains("decided the case again"),
        "names who and what: {conflict}"
    );
    assert_eq!(
        b.client
            .find(Locator::Id("comment"))
            .await?
            .prop("value")
            .await?
            .as_deref(),
        Some(comment),
        "the comment survives the conflict"
    );
    b.shot("someone-else-changed-it").await?;

    // Resolved on the new decision with the same comment.
    b.submit("#review-submit").await?;
    b.client.wait().for_element(Locator::Id("notice")).await?;
    assert_eq!(b.text_of("#case-status").await?, "RESOLVED");
    assert_eq!(b.text_of("#case-resolution").await?, "REJECTED");
    let timeline = b.text_of("#timeline").await?;
    assert!(
        timeline.contains(REVIEWER_NAME) && timeline.contains(comment),
        "{timeline}"
    );
    b.shot("rejected").await?;
    Ok(())
}
