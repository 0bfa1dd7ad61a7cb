//! Every desk page laid out for a 1366 px screen and a 390 × 844 phone (issue 25): no page
//! scrolls sideways (`document.documentElement.scrollWidth` at most its `clientWidth`, which
//! is `innerWidth` less a desktop scrollbar; the rulesets page was 1,994 px wide at 1366),
//! each screenshotted and audited; on the phone a page image opens full size.

use crate::support::*;
use fantoccini::Locator;

#[tokio::test]
async fn no_desk_page_scrolls_sideways_at_1366_or_on_a_phone() -> anyhow::Result<()> {
    let Some(mut rig) = Rig::start("layout", 1366, 900).await? else {
        return Ok(());
    };
    let result = layout_journey(&rig.server, &mut rig.b).await;
    rig.finish(result).await
}

/// A managed ruleset: the trade workflow's own rules and policy, its first description
/// replaced by `description` when given (a second version whose diff has long lines).
fn ruleset_file(
    dir: &std::path::Path,
    description: Option<&str>,
) -> anyhow::Result<std::path::PathBuf> {
    let workflow = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/trade.yaml"),
    )?;
    let rules = workflow
        .find("\nrules:")
        .map(|at| &workflow[at + 1..])
        .ok_or_else(|| anyhow::anyhow!("no rules in workflows/trade.yaml"))?;
    let rules = match description {
        Some(d) => rules.replacen(
            "An import dossier needs its bill of lading, commercial invoice and customs declaration.",
            d,
            1,
        ),
        None => rules.to_owned(),
    };
    let path = dir.join(format!("rules-{}.yaml", description.is_some()));
    std::fs::write(&path, rules)?;
    Ok(path)
}

async fn layout_journey(server: &Server, b: &mut Browser) -> anyhow::Result<()> {
    // Something on every page: a decided case, a ruleset, a webhook endpoint.
    b.sign_in(server, ADMIN).await?;
    let case = b.upload(server, "LAYOUT-1", &sample("05-blocked")?).await?;
    assert_eq!(b.decision_arrives().await?, "BLOCKED");
    let scratch = tempfile::tempdir()?;
    let long =
        "An import dossier needs its bill of lading, its commercial invoice and its customs \
        declaration, each read from the broker's own scan, before anything else is compared.";
    for description in [None, Some(long)] {
        let file = ruleset_file(scratch.path(), description)?;
        server
            .cli(
                &[
                    "rulesets",
                    "create",
                    "--tenant",
                    "acme",
                    "--workflow",
                    "trade",
                    &file.display().to_string(),
                ],
                None,
            )
            .await?;
    }
    let versions: Vec<uuid::Uuid> = sqlx::query_scalar("SELECT id FROM rulesets ORDER BY version")
        .fetch_all(server.db.store.pool())
        .await?;
    anyhow::ensure!(versions.len() == 2, "two ruleset versions: {versions:?}");
    b.goto(server, "/admin/webhooks").await?;
    b.type_into(
        "endpoint-url",
        "https://hooks.example.com/a/rather/long/path/for/the/erp/connector/that/receives/decisions",
    )
    .await?;
    b.submit("#create-endpoint").await?;
    b.client.wait().for_element(Locator::Id("notice")).await?;
    let endpoint: uuid::Uuid = sqlx::query_scalar("SELECT id FROM webhook_endpoints LIMIT 1")
        .fetch_one(server.db.store.pool())
        .await?;

    let pages = [
        ("cases", "/".to_owned()),
        ("case", format!("/cases/{case}")),
        ("queue", "/queue".to_owned()),
        ("upload", "/upload".to_owned()),
        ("operations", "/operations".to_owned()),
        ("admin", "/admin".to_owned()),
        ("rulesets", "/admin/rulesets".to_owned()),
        ("ruleset", format!("/admin/rulesets/{}", versions[0])),
        (
            "ruleset-diff",
            format!("/admin/rulesets/{}?against={}", versions[1], versions[0]),
        ),
        ("webhooks", "/admin/webhooks".to_owned()),
        ("webhook", format!("/admin/webhooks/{endpoint}")),
        ("password", "/account/password".to_owned()),
    ];
    let mut too_wide = Vec::new();
    for (width, height) in [(1366, 900), (390, 844)] {
        b.client.set_window_size(width, height).await?;
        for (name, path) in &pages {
            b.goto(server, path).await?;
            b.client.wait().for_element(Locator::Css("h1")).await?;
            if let Some(out) = b.sticks_out().await? {
                too_wide.push(format!("{name} at {width}: {out}"));
            }
            b.shot(&format!("{width}-{name}")).await?;
        }
    }

    // On the phone a page image opens on its own, full size, to zoom into.
    b.goto(server, &format!("/cases/{case}")).await?;
    let full = b
        .client
        .find(Locator::Css("figure.page a.full-size"))
        .await?;
    let href = full.attr("href").await?.unwrap_or_default();
    b.client.goto(&server.url(&href)).await?;
    let natural = b
        .client
        .execute(
            "const i = document.querySelector('img'); return i ? i.naturalWidth : 0;",
            vec![],
        )
        .await?;
    assert!(
        natural.as_u64().unwrap_or(0) >= 2 * 390,
        "the page image alone, at least twice the phone's width to zoom into: {natural}"
    );

    // Signed out: the sign-in page.
    b.goto(server, "/").await?;
    b.sign_out().await?;
    for (width, height) in [(1366, 900), (390, 844)] {
        b.client.set_window_size(width, height).await?;
        b.goto(server, "/login").await?;
        if let Some(out) = b.sticks_out().await? {
            too_wide.push(format!("login at {width}: {out}"));
        }
        b.shot(&format!("{width}-login")).await?;
    }
    anyhow::ensure!(too_wide.is_empty(), "pages scroll sideways: {too_wide:?}");
    Ok(())
}
