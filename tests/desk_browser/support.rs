//! What every desk journey shares: the real `ironclad all` on a fresh database ([`Server`]),
//! ChromeDriver with a headless Chromium session ([`Browser`]: screenshots, the axe-core
//! audit, sign-in and sign-out, page checks), a [`Rig`] holding both for one journey (one
//! journey at a time: each runs a server, a worker and a browser on a 2-core machine), waiting
//! on a condition, and the sample dossiers.

use fantoccini::{Client, ClientBuilder, Locator};
use ironclad_testkit::{free_port, redis_prefix, TestDb};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_ironclad");
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const ADMIN: &str = "admin@example.com";
pub const ADMIN_NAME: &str = "Ada Admin";
pub const REVIEWER: &str = "reviewer@example.com";
pub const REVIEWER_NAME: &str = "Rita Reviewer";
pub const PASSWORD: &str = "a long desk password";
/// The session cookie the desk sets (Secure; Chromium takes it from http://127.0.0.1).
pub const SESSION_COOKIE: &str = "__Host-ironclad_session";

/// `ironclad all` on a fresh database, its blobs in a temporary directory.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub db: TestDb,
    _blobs: tempfile::TempDir,
    /// Everything `ironclad all` printed, at debug level: checked for secrets at the end.
    pub log: PathBuf,
    _logs: tempfile::TempDir,
}

impl Server {
    pub fn command(db: &TestDb, blobs: &Path, args: &[&str]) -> Command {
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

    pub async fn start() -> anyhow::Result<Self> {
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
        for (email, name, role) in [
            (ADMIN, ADMIN_NAME, "admin"),
            (REVIEWER, REVIEWER_NAME, "reviewer"),
        ] {
            // Their own passwords (typed by them): no change asked at sign-in.
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
                        "--name",
                        name,
                        "--password-stdin",
                        "--keep-password",
                    ],
                    Some(PASSWORD),
                )
                .await?;
        }
        Ok(server)
    }

    /// Runs an `ironclad` command against the server's database, failing on a non-zero exit.
    pub async fn cli(&self, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
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

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A count from the server's database.
    pub async fn count(&self, sql: &'static str) -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar(sql)
            .fetch_one(self.db.store.pool())
            .await?)
    }
}

/// ChromeDriver on a free port, and a headless Chromium session through it.
pub struct Browser {
    pub client: Client,
    /// Every session cookie and CSRF token the journey was given: none may reach the log.
    pub secrets: Vec<String>,
    _driver: Child,
    pub shots: PathBuf,
    pub step: u32,
    /// axe-core's script, when installed: every screenshotted page is audited with it.
    pub axe: Option<String>,
    /// What the audits found, per page: the test fails on any.
    pub violations: Vec<String>,
}

/// Where `scripts/test` installs axe-core in CI (npm), or `IRONCLAD_AXE_JS`.
pub fn axe_script() -> anyhow::Result<Option<String>> {
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
    /// A browser whose screenshots go to `desk-browser/<journey>/`.
    pub async fn start(journey: &str, width: u32, height: u32) -> anyhow::Result<Self> {
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
        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("desk-browser")
            .join(journey);
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
    pub async fn shot(&mut self, name: &str) -> anyhow::Result<PathBuf> {
        self.step += 1;
        let path = self.shots.join(format!("{:02}-{name}.png", self.step));
        std::fs::write(&path, self.client.screenshot().await?)?;
        self.audit(name).await?;
        Ok(path)
    }

    /// Runs axe-core's WCAG 2 A/AA rules on the page (when installed) and keeps what fails.
    pub async fn audit(&mut self, name: &str) -> anyhow::Result<()> {
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

    pub async fn text_of(&self, css: &str) -> anyhow::Result<String> {
        Ok(self.client.find(Locator::Css(css)).await?.text().await?)
    }

    pub async fn goto(&self, server: &Server, path: &str) -> anyhow::Result<()> {
        Ok(self.client.goto(&server.url(path)).await?)
    }

    /// Whether the page scrolls sideways: `None` when it fits the window (its width at most
    /// the viewport's, scrollbar left out), else what sticks out, for the failure message.
    pub async fn sticks_out(&self) -> anyhow::Result<Option<String>> {
        let found = self
            .client
            .execute(
                r##"const root = document.documentElement, room = root.clientWidth;
                   if (root.scrollWidth <= room) return null;
                   const out = Array.from(document.querySelectorAll("body *"))
                     .filter(e => e.getBoundingClientRect().right > room + 0.5)
                     .filter(e => !e.parentElement.closest(".scroll-x, pre")
                                  || getComputedStyle(e).position === "absolute")
                     .slice(0, 6)
                     .map(e => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className} (${Math.round(e.getBoundingClientRect().right)})`);
                   return `${root.scrollWidth} px in ${room}: ${out.join(", ")}`;"##,
                vec![],
            )
            .await?;
        Ok(found.as_str().map(str::to_owned))
    }

    /// Types `text` into the field `id`.
    pub async fn type_into(&self, id: &str, text: &str) -> anyhow::Result<()> {
        self.client
            .find(Locator::Id(id))
            .await?
            .send_keys(text)
            .await?;
        Ok(())
    }

    pub async fn click(&self, css: &str) -> anyhow::Result<()> {
        self.client.find(Locator::Css(css)).await?.click().await?;
        Ok(())
    }

    /// Clicks the submit button `css` and waits until the page it sends to has loaded: a wait
    /// for an element right after a plain click can find that element on the page being left.
    pub async fn submit(&self, css: &str) -> anyhow::Result<()> {
        const LEAVING: &str = "window.__ironcladLeaving = true; return true;";
        const ARRIVED: &str = "return window.__ironcladLeaving === undefined \
                               && document.readyState === 'complete';";
        self.client.execute(LEAVING, vec![]).await?;
        self.click(css).await?;
        let client = &self.client;
        wait_until(
            "the submitted form's page loads",
            Duration::from_secs(30),
            || async move {
                // While the old page unloads a script may fail to run: not there yet.
                Ok(client.execute(ARRIVED, vec![]).await.ok() == Some(json!(true)))
            },
        )
        .await
    }

    pub async fn sign_in(&mut self, server: &Server, email: &str) -> anyhow::Result<()> {
        self.client.goto(&server.url("/")).await?;
        let url = self.client.current_url().await?;
        anyhow::ensure!(url.path() == "/login", "not sent to sign in: {url}");
        self.sign_in_here(email, PASSWORD).await?;
        self.client
            .wait()
            .for_element(Locator::Css("header.top"))
            .await?;
        self.keep_secrets().await
    }

    /// Fills the sign-in form on the current page and sends it.
    pub async fn sign_in_here(&self, email: &str, password: &str) -> anyhow::Result<()> {
        self.type_into("email", email).await?;
        self.type_into("password", password).await?;
        self.click("form button[type=submit]").await
    }

    /// Keeps the session cookie and CSRF token of the page: the server must never log them.
    pub async fn keep_secrets(&mut self) -> anyhow::Result<()> {
        let cookie = self.client.get_named_cookie(SESSION_COOKIE).await?;
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

    pub async fn sign_out(&self) -> anyhow::Result<()> {
        self.click("form[action='/logout'] button").await?;
        self.client.wait().for_element(Locator::Id("email")).await?;
        Ok(())
    }

    /// Uploads `files` as a case referenced `reference` from the upload page and opens the
    /// case; returns its id.
    pub async fn upload(
        &mut self,
        server: &Server,
        reference: &str,
        files: &[PathBuf],
    ) -> anyhow::Result<String> {
        self.goto(server, "/upload").await?;
        self.type_into("external_reference", reference).await?;
        self.pick(files).await?;
        self.click("#upload-submit").await?;
        let link = self
            .client
            .wait()
            .at_most(Duration::from_secs(60))
            .for_element(Locator::Css("#upload-result a[href^='/cases/']"))
            .await?;
        link.click().await?;
        let url = self.client.current_url().await?;
        Ok(url.path().trim_start_matches("/cases/").to_owned())
    }

    /// Picks `files` in the upload page's file chooser.
    pub async fn pick(&self, files: &[PathBuf]) -> anyhow::Result<()> {
        let picked = files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join("\n");
        self.client
            .find(Locator::Id("files"))
            .await?
            .send_keys(&picked)
            .await?;
        Ok(())
    }

    /// Waits, without reloading, until the case page shows its decision (the page updates
    /// itself); returns the decision's status.
    pub async fn decision_arrives(&self) -> anyhow::Result<String> {
        let shown = self
            .client
            .wait()
            .at_most(Duration::from_secs(240))
            .for_element(Locator::Id("decision-status"))
            .await?;
        Ok(shown.text().await?)
    }
}

/// One journey's server and browser, one journey at a time.
pub struct Rig {
    pub server: Server,
    pub b: Browser,
    _turn: tokio::sync::OwnedMutexGuard<()>,
}

/// Journeys run one after the other: each runs `ironclad all` and Chromium.
static TURN: LazyLock<Arc<tokio::sync::Mutex<()>>> = LazyLock::new(Default::default);

impl Rig {
    /// The journey's server and a browser of `width` × `height`; `None` (a skip) without
    /// Chromium outside CI.
    pub async fn start(journey: &str, width: u32, height: u32) -> anyhow::Result<Option<Self>> {
        if !browser_available()? {
            return Ok(None);
        }
        let turn = TURN.clone().lock_owned().await;
        let server = Server::start().await?;
        let b = Browser::start(journey, width, height).await?;
        Ok(Some(Self {
            server,
            b,
            _turn: turn,
        }))
    }

    /// Ends the journey: its result, then the server's log (busy, and without a secret) and
    /// the accessibility audits of every page it screenshotted.
    pub async fn finish(self, result: anyhow::Result<()>) -> anyhow::Result<()> {
        eprintln!("screenshots: {}", self.b.shots.display());
        self.b.client.clone().close().await?;
        result?;
        let log = std::fs::read_to_string(&self.server.log)?;
        anyhow::ensure!(
            log.lines().count() > 20 && log.contains("\"uri\":\"/login\""),
            "the server logged almost nothing ({} lines)",
            log.lines().count()
        );
        for secret in self.b.secrets.iter().map(String::as_str).chain([PASSWORD]) {
            anyhow::ensure!(secret.len() >= 16, "a secret too short to search for");
            anyhow::ensure!(!log.contains(secret), "the server's log holds a secret");
        }
        anyhow::ensure!(
            self.b.violations.is_empty(),
            "accessibility (axe-core, WCAG 2 A/AA):\n{}",
            self.b.violations.join("\n")
        );
        Ok(())
    }
}

pub async fn wait_until<F, Fut>(what: &str, limit: Duration, mut check: F) -> anyhow::Result<()>
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
pub fn browser_available() -> anyhow::Result<bool> {
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

/// The files of the sample dossier `name` (`samples/dossiers/<name>`), sorted.
pub fn sample(name: &str) -> anyhow::Result<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples/dossiers")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e != "md"))
        .collect();
    files.sort();
    anyhow::ensure!(files.len() >= 2, "sample dossier {name} is missing");
    Ok(files)
}

/// The blocked sample dossier (its container number disagrees).
pub fn dossier() -> Vec<PathBuf> {
    sample("05-blocked").unwrap_or_default()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
