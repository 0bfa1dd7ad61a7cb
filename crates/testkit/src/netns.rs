//! Several "hosts" on one machine, for tests that cut one off the network: each host is a
//! network namespace (`ip netns`, root only) joined by a veth pair to a bridge in an "infra"
//! namespace, which also holds private PostgreSQL and Redis listening on the bridge's address.
//! The test process itself (root namespace) gets a veth of its own onto the bridge, so it can
//! watch PostgreSQL and reach the API — every packet stays on links the test made.
//!
//! Everything is torn down by `Drop` (processes by pid, then namespaces and links), whatever
//! way the test leaves. Names carry the creating process's pid (`ironclad-<pid>-<tag>-…`), so
//! a later run removes what a killed run (no destructors) left behind.

use crate::child::die_with_parent;
use anyhow::{ensure, Context};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const PREFIX: &str = "ironclad-";

/// Runs `ip ARGS`, failing with its stderr.
fn ip(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running ip (iproute2)")?;
    ensure!(
        out.status.success(),
        "ip {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether this process can create namespaces (root with iproute2).
pub fn available() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false);
    root && Command::new("ip")
        .args(["netns", "list"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Deletes the namespaces of earlier runs whose creating process is gone (a run killed
/// before its destructors ran). Their root-side veth ends go with their peers.
fn sweep_leftovers() {
    let Ok(list) = ip(&["netns", "list"]) else {
        return;
    };
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// One host: its namespace, the veth inside it, its address.
#[derive(Debug, Clone)]
pub struct Host {
    /// `api`, `worker-a`, … (also its hostname, so a worker's consumer is `worker-a-<pid>`).
    pub name: String,
    /// The namespace's name.
    pub netns: String,
    /// Its interface (inside the namespace).
    pub veth: String,
    /// Its address on the bridge's /24.
    pub addr: Ipv4Addr,
}

/// The namespaces, the bridge and the links of one test. Dropping it deletes them all.
pub struct Lan {
    infra_ns: String,
    hosts: Vec<Host>,
    /// The root namespace's end of its link to the bridge.
    root_veth: String,
    net: [u8; 3],
}

impl Lan {
    /// Creates the infra namespace (bridge, address `.1`), a namespace per host in `hosts`
    /// (addresses `.2`, `.3`, … in order) and the root namespace's link (`.254`).
    pub fn create(hosts: &[&str]) -> anyhow::Result<Self> {
        ensure!(
            available(),
            "network namespaces need root and iproute2 (`ip netns`)"
        );
        sweep_leftovers();
        let tag = &uuid::Uuid::new_v4().simple().to_string()[..6];
        let net = free_subnet()?;
        let pid = std::process::id();
        // Interface names have at most 15 bytes: `ic<tag><index><side>`.
        let mut lan = Self {
            infra_ns: format!("{PREFIX}{pid}-{tag}-infra"),
            hosts: Vec::new(),
            root_veth: format!("ic{tag}rt"),
            net,
        };
        // From here on `lan`'s Drop undoes whatever part was made.
        ip(&["netns", "add", &lan.infra_ns])?;
        lan.in_ns(&lan.infra_ns, &["link", "set", "lo", "up"])?;
        let bridge = format!("ic{tag}br");
        lan.in_ns(&lan.infra_ns, &["link", "add", &bridge, "type", "bridge"])?;
        let infra_addr = format!("{}/24", lan.infra_addr());
        lan.in_ns(&lan.infra_ns, &["addr", "add", &infra_addr, "dev", &bridge])?;
        lan.in_ns(&lan.infra_ns, &["link", "set", &bridge, "up"])?;
        for (i, name) in hosts.iter().enumerate() {
            let netns = format!("{PREFIX}{pid}-{tag}-{name}");
            let host = Host {
                name: (*name).to_owned(),
                netns: netns.clone(),
                veth: format!("ic{tag}{i}h"),
                addr: lan.addr(2 + i as u8),
            };
            ip(&["netns", "add", &netns])?;
            lan.hosts.push(host.clone());
            lan.in_ns(&netns, &["link", "set", "lo", "up"])?;
            lan.wire(&netns, &host.veth, &format!("ic{tag}{i}b"), &bridge)?;
            lan.in_ns(
                &netns,
                &[
                    "addr",
                    "add",
                    &format!("{}/24", host.addr),
                    "dev",
                    &host.veth,
                ],
            )?;
            lan.in_ns(&netns, &["link", "set", &host.veth, "up"])?;
        }
        // The test's own link: created in the root namespace, its peer moved to the bridge.
        let peer = format!("ic{tag}rb");
        ip(&[
            "link",
            "add",
            &lan.root_veth,
            "type",
            "veth",
            "peer",
            "name",
            &peer,
        ])?;
        ip(&["link", "set", &peer, "netns", &lan.infra_ns])?;
        lan.in_ns(&lan.infra_ns, &["link", "set", &peer, "master", &bridge])?;
        lan.in_ns(&lan.infra_ns, &["link", "set", &peer, "up"])?;
        ip(&[
            "addr",
            "add",
            &format!("{}/24", lan.addr(254)),
            "dev",
            &lan.root_veth,
        ])?;
        ip(&["link", "set", &lan.root_veth, "up"])?;
        lan.wait_reachable(Duration::from_secs(10))?;
        Ok(lan)
    }

    /// A veth pair: `inside` in namespace `netns`, `outside` on the bridge in infra.
    fn wire(&self, netns: &str, inside: &str, outside: &str, bridge: &str) -> anyhow::Result<()> {
        self.in_ns(
            &self.infra_ns,
            &[
                "link", "add", outside, "type", "veth", "peer", "name", inside,
            ],
        )?;
        self.in_ns(&self.infra_ns, &["link", "set", inside, "netns", netns])?;
        self.in_ns(&self.infra_ns, &["link", "set", outside, "master", bridge])?;
        self.in_ns(&self.infra_ns, &["link", "set", outside, "up"])?;
        Ok(())
    }

    fn in_ns(&self, netns: &str, args: &[&str]) -> anyhow::Result<String> {
        let mut all = vec!["-n", netns];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Every host answers a ping from the root namespace (links up, bridge forwarding).
    fn wait_reachable(&self, timeout: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut targets = vec![self.infra_addr()];
        targets.extend(self.hosts.iter().map(|h| h.addr));
        for addr in targets {
            loop {
                let ok = Command::new("ping")
                    .args(["-c", "1", "-W", "1", &addr.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .map(|s| s.success());
                match ok {
                    Ok(true) => break,
                    // No ping on this machine: the servers' own readiness checks will tell.
                    Err(_) => return Ok(()),
                    Ok(false) => {}
                }
                ensure!(
                    started.elapsed() < timeout,
                    "{addr} not reachable over the test's links after {timeout:?}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(())
    }

    fn addr(&self, last: u8) -> Ipv4Addr {
        Ipv4Addr::new(self.net[0], self.net[1], self.net[2], last)
    }

    /// The infra namespace's address (PostgreSQL, Redis, and any other shared service).
    pub fn infra_addr(&self) -> Ipv4Addr {
        self.addr(1)
    }

    /// The root namespace's address on the LAN (the test process's own link).
    pub fn root_addr(&self) -> Ipv4Addr {
        self.addr(254)
    }

    /// The infra namespace's name.
    pub fn infra_netns(&self) -> &str {
        &self.infra_ns
    }

    /// The host called `name`.
    pub fn host(&self, name: &str) -> anyhow::Result<&Host> {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .with_context(|| format!("no host {name}"))
    }

    /// `program` to run on host `name`: in its network namespace and in a UTS namespace of its
    /// own named after the host. `ip netns exec` and `unshare` (without `--fork`) exec, and so
    /// does the shell: the child's pid is the program's.
    pub fn command(&self, name: &str, program: &Path) -> anyhow::Result<Command> {
        let host = self.host(name)?;
        let mut cmd = Command::new("ip");
        cmd.args([
            "netns",
            "exec",
            &host.netns,
            "unshare",
            "--uts",
            "--",
            "sh",
            "-c",
        ])
        .arg(r#"echo "$0" > /proc/sys/kernel/hostname && exec "$@""#)
        .arg(&host.name)
        .arg(program);
        Ok(cmd)
    }

    /// Takes host `name`'s only link down: from then on it reaches nothing, and nothing
    /// reaches it (the process keeps running, unaware).
    pub fn cut(&self, name: &str) -> anyhow::Result<()> {
        let host = self.host(name)?;
        self.in_ns(&host.netns, &["link", "set", &host.veth, "down"])?;
        Ok(())
    }

    /// Brings host `name`'s link back (its address and routes return with it).
    pub fn restore(&self, name: &str) -> anyhow::Result<()> {
        let host = self.host(name)?;
        self.in_ns(&host.netns, &["link", "set", &host.veth, "up"])?;
        // The connected route comes back with the link; make sure before carrying on.
        let started = Instant::now();
        while !self
            .in_ns(&host.netns, &["route", "show"])?
            .contains(&format!(
                "{}.{}.{}.0/24",
                self.net[0], self.net[1], self.net[2]
            ))
        {
            ensure!(
                started.elapsed() < Duration::from_secs(5),
                "{name}'s route did not come back"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth ends inside it, and so their peers; processes
        // still inside would keep it alive unnamed, so callers stop them first (HostProc and
        // the servers are declared after the Lan, so they drop before it).
        for host in &self.hosts {
            let _ = ip(&["netns", "del", &host.netns]);
        }
        let _ = ip(&["link", "del", &self.root_veth]);
        let _ = ip(&["netns", "del", &self.infra_ns]);
    }
}

/// A 10.x.y.0/24 no interface or route of this machine uses.
fn free_subnet() -> anyhow::Result<[u8; 3]> {
    let used = ip(&["-4", "route", "show", "table", "all"])? + &ip(&["-4", "addr", "show"])?;
    for _ in 0..64 {
        let r = uuid::Uuid::new_v4();
        let b = r.as_bytes();
        let net = [10, 200 + b[0] % 50, b[1]];
        if !used.contains(&format!("10.{}.{}.", net[1], net[2])) {
            return Ok(net);
        }
    }
    anyhow::bail!("no free 10.x.y.0/24 found")
}

/// A process running on a host; kill -9 and reaped when dropped.
pub struct HostProc {
    /// Name in messages.
    pub label: String,
    child: Child,
    /// Its output.
    pub log: PathBuf,
    exited: Option<ExitStatus>,
}

impl HostProc {
    /// Starts `cmd` (from [`Lan::command`]) with output to `log`; it dies with this process's
    /// thread if the test is killed (PR_SET_PDEATHSIG), so no role outlives the test.
    pub fn spawn(label: &str, mut cmd: Command, log: &Path) -> anyhow::Result<Self> {
        let out =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        die_with_parent(&mut cmd);
        let child = cmd.spawn().with_context(|| format!("starting {label}"))?;
        Ok(Self {
            label: label.to_owned(),
            child,
            log: log.to_owned(),
            exited: None,
        })
    }

    /// Its pid (that of the program: every wrapper execs).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it still runs.
    pub fn is_running(&mut self) -> bool {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited.is_none()
    }

    /// The last `lines` lines of its output.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        format!(
            "--- {} (pid {}), last lines of {} ---\n{}",
            self.label,
            self.child.id(),
            self.log.display(),
            all[all.len().saturating_sub(lines)..].join("\n")
        )
    }
}

impl Drop for HostProc {
    fn drop(&mut self) {
        if self.is_running() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn wait_until(
    what: &str,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let start = Instant::now();
    while !ready() {
        ensure!(
            start.elapsed() < timeout,
            "{what} not ready after {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Runs a shell script in the infra namespace (as `postgres` when `as_postgres`).
fn infra_sh(netns: &str, script: &str, as_postgres: bool) -> anyhow::Result<()> {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", netns]);
    if as_postgres {
        cmd.args(["su", "postgres", "-s", "/bin/sh", "-c", script]);
    } else {
        cmd.args(["sh", "-c", script]);
    }
    let status = cmd.status().context("running ip netns exec")?;
    ensure!(status.success(), "in {netns}: command failed: {script}");
    Ok(())
}

/// PostgreSQL in the infra namespace, listening only on the bridge's address (port 5432 of
/// that namespace: nothing else listens there), trusting the LAN's /24.
pub struct InfraPostgres {
    addr: Ipv4Addr,
    dir: PathBuf,
    bin: PathBuf,
}

impl InfraPostgres {
    /// initdb (as `postgres`: the server refuses root) and start, in `lan`'s infra namespace.
    pub fn start(lan: &Lan) -> anyhow::Result<Self> {
        let bin = pg_bin()?;
        let dir = PathBuf::from(format!(
            "/tmp/ironclad-netns-pg-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir)?;
        let me = Self {
            addr: lan.infra_addr(),
            dir,
            bin,
        };
        let status = Command::new("chown")
            .arg("postgres:postgres")
            .arg(&me.dir)
            .status()?;
        ensure!(status.success(), "chown of the cluster directory failed");
        let d = me.dir.display();
        infra_sh(
            lan.infra_netns(),
            &format!(
                "{}/initdb -D {d}/data -U postgres --auth=trust -E UTF8 --no-sync >{d}/initdb.log 2>&1",
                me.bin.display()
            ),
            true,
        )?;
        let lan_net = format!(
            "{}.0/24",
            me.addr.to_string().rsplit_once('.').map_or("", |(n, _)| n)
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(me.dir.join("data/pg_hba.conf"))
            .and_then(|mut f| {
                use std::io::Write;
                writeln!(f, "host all all {lan_net} trust")
            })
            .context("allowing the LAN in pg_hba.conf")?;
        infra_sh(
            lan.infra_netns(),
            &format!(
                "{}/pg_ctl -D {d}/data -l {d}/server.log -w -t 30 -o \"-p 5432 -k {d} -c listen_addresses={} -c fsync=off -c max_connections=200\" start >/dev/null",
                me.bin.display(),
                me.addr
            ),
            true,
        )?;
        Ok(me)
    }

    /// The server URL with database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@{}:5432/{db}", self.addr)
    }
}

impl Drop for InfraPostgres {
    fn drop(&mut self) {
        // pg_ctl stop signals by the pid file: no need to be inside the namespace.
        let _ = Command::new("su")
            .args([
                "postgres",
                "-s",
                "/bin/sh",
                "-c",
                &format!(
                    "{}/pg_ctl -D {}/data -m immediate -w stop >/dev/null 2>&1",
                    self.bin.display(),
                    self.dir.display()
                ),
            ])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn pg_bin() -> anyhow::Result<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<PathBuf> = std::fs::read_dir(root)
        .context("PostgreSQL server binaries not found under /usr/lib/postgresql")?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop().context("no pg_ctl found")
}

/// Redis in the infra namespace, without persistence, listening only on the bridge's address.
pub struct InfraRedis {
    addr: Ipv4Addr,
    dir: tempfile::TempDir,
}

impl InfraRedis {
    /// Starts one (port 6379 of the infra namespace).
    pub fn start(lan: &Lan) -> anyhow::Result<Self> {
        let me = Self {
            addr: lan.infra_addr(),
            dir: tempfile::tempdir()?,
        };
        let status = Command::new("ip")
            .args(["netns", "exec", lan.infra_netns(), "redis-server"])
            .args(["--port", "6379", "--bind", &me.addr.to_string()])
            .args(["--daemonize", "yes", "--protected-mode", "no"])
            .arg("--pidfile")
            .arg(me.pidfile())
            .arg("--dir")
            .arg(me.dir.path())
            .args(["--save", "", "--appendonly", "no", "--logfile", "redis.log"])
            .stdout(Stdio::null())
            .status()
            .context("starting redis-server")?;
        ensure!(status.success(), "redis-server failed to start");
        let addr = me.addr.to_string();
        wait_until("redis", Duration::from_secs(10), || {
            Command::new("redis-cli")
                .args(["-h", &addr, "-p", "6379", "ping"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("PONG"))
                .unwrap_or(false)
        })?;
        Ok(me)
    }

    fn pidfile(&self) -> PathBuf {
        self.dir.path().join("redis.pid")
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://{}:6379/", self.addr)
    }
}

impl Drop for InfraRedis {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.pidfile()) {
            let _ = Command::new("kill").args(["-9", pid.trim()]).status();
        }
    }
}

/// An S3-compatible server (s3rver, see [`crate::s3`]) in the infra namespace, listening only
/// on the bridge's address: the hosts reach the object store over their links, as they reach
/// PostgreSQL and Redis.
pub struct InfraS3 {
    addr: Ipv4Addr,
    port: u16,
    _dir: tempfile::TempDir,
    child: Child,
}

impl InfraS3 {
    /// Starts one (port 9000 of the infra namespace) with the bucket [`crate::s3::BUCKET`].
    pub fn start(lan: &Lan) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data)?;
        let log = std::fs::File::create(dir.path().join("s3rver.log"))?;
        let (addr, port) = (lan.infra_addr(), 9000u16);
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", lan.infra_netns()])
            .arg(crate::s3::s3rver_bin()?)
            .arg("--directory")
            .arg(&data)
            .args(["--address", &addr.to_string(), "--port", &port.to_string()])
            .args(["--configure-bucket", crate::s3::BUCKET, "--silent"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .context("starting s3rver in the infra namespace")?;
        let me = Self {
            addr,
            port,
            _dir: dir,
            child,
        };
        let target = std::net::SocketAddr::from((addr, port));
        wait_until("s3rver", Duration::from_secs(30), || {
            std::net::TcpStream::connect_timeout(&target, Duration::from_millis(500)).is_ok()
        })?;
        Ok(me)
    }

    /// Its endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://{}:{}", self.addr, self.port)
    }

    /// `s3://<bucket>/<prefix>`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", crate::s3::BUCKET)
    }

    /// The `AWS_*` variables a process needs to use it.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", crate::s3::ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", crate::s3::SECRET_KEY.to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

impl Drop for InfraS3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
