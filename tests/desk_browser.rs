//! The operator's desk in a real browser: Debian's Chromium, headless, driven through
//! ChromeDriver, against the real `ironclad all` (API, dispatcher, worker, reconciler) on a
//! fresh database. A person signs in, uploads a dossier from the upload page, waits for the
//! decision, opens a failed rule and sees its boxes where the stored evidence says, resolves
//! the review and finds the case RESOLVED with the timeline entry; a forged call without the
//! CSRF token is refused; a reviewer cannot reach the admin pages.
//!
//! Screenshots of every step are written under `$CARGO_TARGET_TMPDIR/desk-browser/` (the path
//! is printed). Without Chromium the test says so and passes, except under `CI=true`, where
//! a missing browser is a failure.

use fantoccini::{Client, ClientBuilder, Locator};
use ironclad_testkit::{free_port, redis_prefix, TestDb};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_ironclad");
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ADMIN: &str = "admin@example.com";
const REVIEWER: &str = "reviewer@example.com";
const PASSWORD: &str = "a long desk password";

/// `ironclad all` on a fresh database, its blobs in a temporary directory.
struct Server {
    child: Child,
    base: String,
    db: TestDb,
    _blobs: tempfile::TempDir,
    /// Everything `ironclad all` printed, at debug level: checked for secrets at the end.
    log: PathBuf,
    _logs: tempfile::TempDir,
}

impl Server {
    fn command(db: &TestDb, blobs: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("DATABASE_URL", &db.url)
            .env("IRONCLAD_STREAM_PREFIX", redis_prefix())
            .env("IRONCLAD_BLOB_DIR", blobs)
            .env("OMP_THREAD_LIMIT", "1")
            .env_remove("RUST_LOG")
            .kill_on_drop(true);
        cmd
    }

    async fn start() -> anyhow::Result<Self> {
        let db = TestDb::new().await?;
        let blobs = tempfile::tempdir()?;
        let port = free_port()?;
        let listen = format!("127.0.0.1:{port}");
        // Its own log (next to the blobs, gone with them), as verbose as an operator
        // debugging would make it: no password, session or token may appear in it.
        let logs = tempfile::tempdir()?;
        let log = logs.path().join("ironclad.log");
        let out = std::fs::File::create(&log)?;
        let child = Self::command(&db, blobs.path(), &["all"])
            .env("IRONCLAD_LISTEN", &listen)
            .env("RUST_LOG", "debug,h2=info,hyper=info,hyper_util=info")
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .spawn()?;
        let server = Self {
            child,
            base: format!("http://{listen}"),
            db,
            _blobs: blobs,
            log,
            _logs: logs,
        };
        let ready = format!("{}/readyz", server.base);
        wait_until("the server is ready", Duration::from_secs(60), || {
            let ready = ready.clone();
            async move {
                Ok(reqwest::get(&ready)
                    .await
                    .is_ok_and(|r| r.status().is_success()))
            }
        })
        .await?;
        server.cli(&["tenant", "create", "acme"], None).await?;
        for (email, role) in [(ADMIN, "admin"), (REVIEWER, "reviewer")] {
            server
                .cli(
                    &[
                        "user",
                        "create",
                        "--tenant",
                        "acme",
                        "--role",
                        role,
                        "--email",
                        email,
                        "--password-stdin",
                    ],
                    Some(PASSWORD),
                )
                .await?;
        }
        Ok(server)
    }

    /// Runs an `ironclad` command against the server's database, failing on a non-zero exit.
    async fn cli(&self, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
        let mut child = Self::command(&self.db, self._blobs.path(), args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
            input.write_all(format!("{text}\n").as_bytes()).await?;
        }
        let out = child.wait_with_output().await?;
        anyhow::ensure!(
            out.status.success(),
            "ironclad {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// ChromeDriver on a free port, and a headless Chromium session through it.
struct Browser {
    client: Client,
    /// Every session cookie and CSRF token the journey was given: none may reach the log.
    secrets: Vec<String>,
    _driver: Child,
    shots: PathBuf,
    step: u32,
    /// axe-core's script, when installed: every screenshotted page is audited with it.
    axe: Option<String>,
    /// What the audits found, per page: the test fails on any.
    violations: Vec<String>,
}

/// Where `scripts/test` installs axe-core in CI (npm), or `IRONCLAD_AXE_JS`.
fn axe_script() -> anyhow::Result<Option<String>> {
    let path = std::env::var_os("IRONCLAD_AXE_JS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/axe/node_modules/axe-core/axe.min.js")
        });
    if path.exists() {
        return Ok(Some(std::fs::read_to_string(&path)?));
    }
    anyhow::ensure!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI audits the desk with axe-core: {} is missing (scripts/test installs it with npm)",
        path.display()
    );
    eprintln!("no accessibility audit: {} is missing", path.display());
    Ok(None)
}

impl Browser {
    async fn start(width: u32, height: u32) -> anyhow::Result<Self> {
        let port = free_port()?;
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let status = format!("http://127.0.0.1:{port}/status");
        wait_until("chromedriver answers", Duration::from_secs(20), || {
            let status = status.clone();
            async move { Ok(reqwest::get(&status).await.is_ok()) }
        })
        .await?;
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", format!("--window-size={width},{height}")],
            }),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await?;
        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("desk-browser");
        // Only this run's screenshots: an old one must not pass for a new one.
        if shots.exists() {
            std::fs::remove_dir_all(&shots)?;
        }
        std::fs::create_dir_all(&shots)?;
        Ok(Self {
            client,
            _driver: driver,
            shots,
            step: 0,
            secrets: Vec::new(),
            axe: axe_script()?,
            violations: Vec::new(),
        })
    }

    /// Saves a screenshot of the window as `NN-name.png`.
    async fn shot(&mut self, name: &str) -> anyhow::Result<PathBuf> {
        self.step += 1;
        let path = self.shots.join(format!("{:02}-{name}.png", self.step));
        std::fs::write(&path, self.client.screenshot().await?)?;
        self.audit(name).await?;
        Ok(path)
    }

    /// Runs axe-core's WCAG 2 A/AA rules on the page (when installed) and keeps what fails.
    async fn audit(&mut self, name: &str) -> anyhow::Result<()> {
        let Some(axe) = &self.axe else {
            return Ok(());
        };
        // Injected through WebDriver, which the page's CSP does not govern.
        self.client
            .execute(&format!("{axe}; return true;"), vec![])
            .await?;
        let found = self
            .client
            .execute_async(
                r#"const done = arguments[arguments.length - 1];
                   axe.run(document, {runOnly: ['wcag2a', 'wcag2aa']})
                     .then(r => done(r.violations.map(v =>
                       `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map(n => n.target.join(' ')).join(', ')}`)))
                     .catch(e => done([`axe failed: ${e}`]));"#,
                vec![],
            )
            .await?;
        for v in found.as_array().into_iter().flatten() {
            self.violations
                .push(format!("{name}: {}", v.as_str().unwrap_or_default()));
        }
        Ok(())
    }

    async fn text_of(&self, css: &str) -> anyhow::Result<String> {
        Ok(self.client.find(Locator::Css(css)).await?.text().await?)
    }

    async fn sign_in(&mut self, server: &Server, email: &str) -> anyhow::Result<()> {
        self.client.goto(&server.url("/")).await?;
        let url = self.client.current_url().await?;
        anyhow::ensure!(url.path() == "/login", "not sent to sign in: {url}");
        self.client
            .find(Locator::Id("email"))
            .await?
            .send_keys(email)
            .await?;
        self.client
            .find(Locator::Id("password"))
            .await?
            .send_keys(PASSWORD)
            .await?;
        self.client
            .find(Locator::Css("form button[type=submit]"))
            .await?
            .click()
            .await?;
        self.client
            .wait()
            .for_element(Locator::Css("header.top"))
            .await?;
        let cookie = self.client.get_named_cookie("ironclad_session").await?;
        self.secrets.push(cookie.value().to_owned());
        let csrf = self
            .client
            .find(Locator::Css("input[name=csrf]"))
            .await?
            .attr("value")
            .await?
            .unwrap_or_default();
        self.secrets.push(csrf);
        Ok(())
    }

    async fn sign_out(&self) -> anyhow::Result<()> {
        self.client
            .find(Locator::Css("form[action='/logout'] button"))
            .await?
            .click()
            .await?;
        self.client.wait().for_element(Locator::Id("email")).await?;
        Ok(())
    }
}

async fn wait_until<F, Fut>(what: &str, limit: Duration, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let start = Instant::now();
    while start.elapsed() < limit {
        if check().await? {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    anyhow::bail!("timed out after {limit:?} waiting until {what}")
}

/// Whether the browser is installed; under CI its absence is an error, elsewhere a skip.
fn browser_available() -> anyhow::Result<bool> {
    let present = Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
    if !present {
        anyhow::ensure!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI needs {CHROMIUM} and {CHROMEDRIVER} (Debian packages chromium, chromium-driver)"
        );
        eprintln!("SKIPPED: no {CHROMIUM} / {CHROMEDRIVER}; install chromium chromium-driver");
    }
    Ok(present)
}

fn dossier() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/dossiers/05-blocked");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[tokio::test]
async fn a_reviewer_resolves_a_blocked_dossier_in_the_browser() -> anyhow::Result<()> {
    if !browser_available()? {
        return Ok(());
    }
    let files = dossier();
    anyhow::ensure!(files.len() >= 2, "sample dossier 05-blocked is missing");
    let server = Server::start().await?;
    let mut b = Browser::start(1280, 800).await?;
    let result = journey(&server, &mut b, &files).await;
    eprintln!("screenshots: {}", b.shots.display());
    b.client.clone().close().await?;
    result?;
    // The server's own log: busy (the whole journey is in it), and without a secret.
    let log = std::fs::read_to_string(&server.log)?;
    anyhow::ensure!(
        log.lines().count() > 50 && log.contains("\"uri\":\"/login\""),
        "the server logged almost nothing ({} lines)",
        log.lines().count()
    );
    for secret in b.secrets.iter().map(String::as_str).chain([PASSWORD]) {
        anyhow::ensure!(secret.len() >= 16, "a secret too short to search for");
        anyhow::ensure!(!log.contains(secret), "the server's log holds a secret");
    }
    anyhow::ensure!(
        b.violations.is_empty(),
        "accessibility (axe-core, WCAG 2 A/AA):\n{}",
        b.violations.join("\n")
    );
    Ok(())
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

    // Wait for the decision on the case page (it reloads by hand, as a person would).
    let case_url = b.client.current_url().await?;
    let case_id = case_url.path().trim_start_matches("/cases/").to_owned();
    wait_until("the decision is shown", Duration::from_secs(240), || {
        let (client, url) = (b.client.clone(), case_url.clone());
        async move {
            client.goto(url.as_str()).await?;
            Ok(client.find(Locator::Id("decision-status")).await.is_ok())
        }
    })
    .await?;
    assert_eq!(b.text_of("#decision-status").await?, "BLOCKED");
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
    let matches_one = candidates.iter().any(|bb| {
        near(&geometry["fx"], &bb["x0"], 0.01)
            && near(&geometry["fy"], &bb["y0"], 0.01)
            && near(
                &json!(geometry["x"].as_f64().unwrap_or(-1.0) / 1000.0),
                &bb["x0"],
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
        timeline.contains("review resolved") && timeline.contains(ADMIN),
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

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
