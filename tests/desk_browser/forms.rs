//! Forms that create something (issue 25): after creating an API key, a user or a webhook
//! endpoint, a refresh of the page and a re-POST of the same rendered form create nothing
//! more; the secret is shown once. The new user, whose password the admin saw, must choose
//! their own before anything else.

use crate::support::*;
use fantoccini::Locator;
use serde_json::json;

#[tokio::test]
async fn a_refresh_or_a_repost_after_a_create_creates_nothing() -> anyhow::Result<()> {
    let Some(mut rig) = Rig::start("forms", 1366, 900).await? else {
        return Ok(());
    };
    let result = forms_journey(&rig.server, &mut rig.b).await;
    rig.finish(result).await
}

/// One create form: where, its fields, and what counts its rows.
struct Create {
    name: &'static str,
    page: &'static str,
    form: &'static str,
    fields: &'static [(&'static str, &'static str)],
    rows: &'static str,
}

const CREATES: [Create; 3] = [
    Create {
        name: "api-key",
        page: "/admin",
        form: "new-key-form",
        fields: &[("key-label", "ERP connector")],
        rows: "SELECT count(*) FROM api_keys WHERE label = 'ERP connector'",
    },
    Create {
        name: "user",
        page: "/admin",
        form: "new-user-form",
        fields: &[("new-name", "Nora New"), ("new-email", "nora@example.com")],
        rows: "SELECT count(*) FROM users WHERE email = 'nora@example.com'",
    },
    Create {
        name: "webhook",
        page: "/admin/webhooks",
        form: "new-endpoint-form",
        fields: &[
            ("endpoint-url", "https://hooks.example.com/ironclad"),
            ("endpoint-description", "ERP"),
        ],
        rows: "SELECT count(*) FROM webhook_endpoints",
    },
];

async fn forms_journey(server: &Server, b: &mut Browser) -> anyhow::Result<()> {
    b.sign_in(server, ADMIN).await?;
    let mut nora_password = String::new();
    for c in CREATES {
        b.goto(server, c.page).await?;
        for (field, value) in c.fields {
            b.type_into(field, value).await?;
        }
        // What a re-POST sends again: this rendered form's fields, token included.
        b.client
            .execute(
                "const f = document.getElementById(arguments[0]); \
                 sessionStorage.setItem('again', new URLSearchParams(new FormData(f)).toString()); \
                 sessionStorage.setItem('action', f.action); return true;",
                vec![json!(c.form)],
            )
            .await?;
        b.submit(&format!("#{} button[type=submit]", c.form))
            .await?;
        let secret = b
            .client
            .wait()
            .for_element(Locator::Id("secret-value"))
            .await?
            .text()
            .await?;
        assert!(secret.len() >= 20, "{}: secret {secret:?}", c.name);
        if c.name == "user" {
            nora_password = secret.clone();
        }
        b.shot(&format!("{}-created", c.name)).await?;
        assert_eq!(server.count(c.rows).await?, 1, "{}", c.name);

        // A refresh: the page again, the secret no more, nothing created.
        b.client.refresh().await?;
        b.client.wait().for_element(Locator::Id("notice")).await?;
        assert!(
            b.client.find(Locator::Id("secret-value")).await.is_err(),
            "{}: the secret is shown once",
            c.name
        );
        assert!(b.text_of("#notice").await?.contains("shown once"));
        b.shot(&format!("{}-refreshed", c.name)).await?;

        // A re-POST of the same rendered form (the back button and "send again"): the first
        // result, nothing created.
        b.client
            .execute(
                "const f = document.createElement('form'); f.method = 'post'; \
                 f.action = sessionStorage.getItem('action'); \
                 for (const [k, v] of new URLSearchParams(sessionStorage.getItem('again'))) { \
                   const i = document.createElement('input'); i.type = 'hidden'; i.name = k; \
                   i.value = v; f.append(i); } \
                 document.body.append(f); f.submit(); return true;",
                vec![],
            )
            .await?;
        b.client.wait().for_element(Locator::Id("notice")).await?;
        let url = b.client.current_url().await?;
        assert!(
            url.query().is_some_and(|q| q.starts_with("form=")),
            "{}: landed on {url}",
            c.name
        );
        assert!(b.client.find(Locator::Id("secret-value")).await.is_err());
        assert_eq!(server.count(c.rows).await?, 1, "{}: created twice", c.name);
    }

    // Nora signs in with the password the admin saw: she must choose her own first.
    b.sign_out().await?;
    b.sign_in_here("nora@example.com", &nora_password).await?;
    b.client
        .wait()
        .for_element(Locator::Id("must-change"))
        .await?;
    assert_eq!(b.client.current_url().await?.path(), "/account/password");
    b.shot("first-sign-in").await?;
    b.goto(server, "/").await?;
    assert_eq!(
        b.client.current_url().await?.path(),
        "/account/password",
        "every page waits for the change"
    );
    let own = "nora's own passphrase";
    b.type_into("current", &nora_password).await?;
    b.type_into("new", own).await?;
    b.type_into("again", own).await?;
    b.submit("#change-password").await?;
    b.client.wait().for_element(Locator::Id("notice")).await?;
    b.secrets.push(nora_password);
    b.secrets.push(own.to_owned());
    b.shot("password-changed").await?;
    b.goto(server, "/").await?;
    assert_eq!(b.text_of("h1").await?, "Cases");
    assert!(b.text_of("header .who").await?.contains("Nora New"));
    Ok(())
}
