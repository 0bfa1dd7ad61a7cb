//! What every desk journey shares: the real `ironclad all` on a fresh database ([`Server`]),
//! ChromeDriver with a headless Chromium session ([`Browser`]: screenshots, the axe-core
//! audit, sign-in and sign-out), waiting on a condition, and the sample dossier.

use fantoccini::{Client, ClientBuilder, Locator};
use ironclad_testkit::{free_port, redis_prefix, TestDb};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_ironclad");
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const ADMIN: &str = "admin@example.com";
pub const REVIEWER: &str = "reviewer@example.com";
pub const PASSWORD: &str = "a long desk password";

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
    pub async fn start(width: u32, height: u32) -> anyhow::Result<Self> {
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

    pub async fn sign_in(&mut self, server: &Server, email: &str) -> anyhow::Result<()> {
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

    pub async fn sign_out(&self) -> anyhow::Result<()> {
        self.client
            .find(Locator::Css("form[action='/logout'] button"))
            .await?
            .click()
            .await?;
        self.client.wait().for_element(Locator::Id("email")).await?;
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

pub fn dossier() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/dossiers/05-blocked");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
