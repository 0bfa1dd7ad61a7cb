//! A local S3-compatible server for tests: s3rver (npm), which keeps its objects in a
//! directory, so it can be killed mid-upload and restarted with what it had acknowledged.
//!
//! `scripts/test` installs it under `target/s3rver/` (`IRONCLAD_S3RVER` may name another
//! `s3rver` executable).

use crate::free_port;
use anyhow::Context;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The bucket every server is started with.
pub const BUCKET: &str = "ironclad";
/// Credentials it accepts (s3rver's own defaults).
pub const ACCESS_KEY: &str = "S3RVER";
/// Secret for [`ACCESS_KEY`].
pub const SECRET_KEY: &str = "S3RVER";

/// A running s3rver with its own data directory and port.
pub struct S3Server {
    /// Port it listens on.
    pub port: u16,
    /// Address it binds (127.0.0.1 unless started with [`S3Server::start_on`]).
    pub address: String,
    dir: tempfile::TempDir,
    child: Mutex<Option<Child>>,
}

/// The s3rver executable, or an error saying how to install it.
pub fn s3rver_bin() -> anyhow::Result<PathBuf> {
    if let Ok(bin) = std::env::var("IRONCLAD_S3RVER") {
        return Ok(PathBuf::from(bin));
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = repo.join("target/s3rver/node_modules/.bin/s3rver");
    anyhow::ensure!(
        bin.exists(),
        "s3rver is not installed: run `npm install --prefix target/s3rver s3rver@3.7.1` \
         (scripts/test does) or set IRONCLAD_S3RVER"
    );
    Ok(bin)
}

impl S3Server {
    /// Starts one on a free port of 127.0.0.1.
    pub fn start() -> anyhow::Result<Self> {
        Self::start_on("127.0.0.1", free_port()?)
    }

    /// Starts one bound to `address:port`.
    pub fn start_on(address: &str, port: u16) -> anyhow::Result<Self> {
        let me = Self {
            port,
            address: address.to_owned(),
            dir: tempfile::tempdir()?,
            child: Mutex::new(None),
        };
        me.launch()?;
        Ok(me)
    }

    /// Its endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://{}:{}", self.address, self.port)
    }

    /// `s3://ironclad/<prefix>`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }

    /// The `AWS_*` variables a process needs to use it.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// The same settings as object store options (for a store opened in the test itself).
    pub fn options(&self) -> Vec<(String, String)> {
        self.env()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect()
    }

    fn launch(&self) -> anyhow::Result<()> {
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("s3rver.log"))?;
        let mut cmd = Command::new(s3rver_bin()?);
        // A killed test binary must not leave the server running.
        crate::child::die_with_parent(&mut cmd);
        let child = cmd
            .arg("--directory")
            .arg(&data)
            .args(["--address", &self.address, "--port", &self.port.to_string()])
            .args(["--configure-bucket", BUCKET, "--silent"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting s3rver")?;
        *self.child.lock().map_err(|_| anyhow::anyhow!("poisoned"))? = Some(child);
        let start = Instant::now();
        let addr = format!("{}:{}", self.address, self.port);
        while std::net::TcpStream::connect(&addr).is_err() {
            anyhow::ensure!(
                start.elapsed() < Duration::from_secs(20),
                "s3rver not listening on {addr} after 20 s (log: {})",
                self.dir.path().join("s3rver.log").display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Kills it abruptly (SIGKILL), as a crash or a lost host would.
    pub fn kill(&self) -> anyhow::Result<()> {
        let mut child = self.child.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        if let Some(mut c) = child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        Ok(())
    }

    /// Starts it again on the same port and directory: what it acknowledged is still there.
    pub fn restart(&self) -> anyhow::Result<()> {
        self.kill()?;
        self.launch()
    }

    /// The file in which the server keeps object `name` (to damage it on purpose).
    pub fn object_file(&self, name: &str) -> anyhow::Result<PathBuf> {
        let path = self
            .dir
            .path()
            .join("data")
            .join(BUCKET)
            .join(format!("{name}._S3rver_object"));
        anyhow::ensure!(path.exists(), "no object {name} at {}", path.display());
        Ok(path)
    }

    /// Bytes of multipart upload parts the server has written so far (0 before any arrives).
    pub fn bytes_received(&self) -> anyhow::Result<u64> {
        let uploads = self
            .dir
            .path()
            .join("data")
            .join(BUCKET)
            .join("._S3rver_uploads");
        let mut total = 0;
        let mut stack = vec![uploads];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                match entry.metadata() {
                    Ok(m) if m.is_dir() => stack.push(entry.path()),
                    Ok(m) => total += m.len(),
                    Err(_) => {}
                }
            }
        }
        Ok(total)
    }

    /// Objects stored under `prefix` of the bucket (their names relative to the bucket).
    pub fn objects(&self, prefix: &str) -> anyhow::Result<Vec<String>> {
        let root = self.dir.path().join("data").join(BUCKET);
        let mut out = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let path = entry?.path();
                // s3rver keeps `<key>._S3rver_object` beside metadata files.
                if path.is_dir() {
                    stack.push(path);
                } else if let Some(name) = path
                    .strip_prefix(&root)?
                    .to_str()
                    .and_then(|n| n.strip_suffix("._S3rver_object"))
                {
                    if name.starts_with(prefix) {
                        out.push(name.to_owned());
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}
