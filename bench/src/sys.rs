//! Machine facts and a CPU-split sampler read from /proc (where did the cores go during a phase).

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Instant;

/// Clock ticks per second of /proc times (`getconf CLK_TCK`, 100 on every Linux we run on).
fn clk_tck() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .filter(|v| *v > 0.0)
        .unwrap_or(100.0)
}

/// (comm, utime + stime in ticks) of one process (all its threads).
fn proc_times(pid: u32) -> Option<(String, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_owned();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

/// (busy, iowait, total) ticks of the whole machine.
fn machine_ticks() -> (u64, u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = text.lines().next().unwrap_or_default();
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0);
    let iowait = v.get(4).copied().unwrap_or(0);
    (total.saturating_sub(idle + iowait), iowait, total)
}

/// Ticks per process group: `bench` (this process), `ironclad` (the server under test, by
/// pid), `postgres` (every postgres process on the machine, other users' included),
/// `redis` (every redis-server), `other`.
#[derive(Debug, Clone)]
pub struct CpuSample {
    at: Instant,
    groups: BTreeMap<&'static str, u64>,
    /// Ticks of every other process, by pid (with its name), to name the noise.
    others: BTreeMap<u32, (String, u64)>,
    busy: u64,
    iowait: u64,
}

impl CpuSample {
    /// Reads the counters now. `server` is the pid of the ironclad process under test.
    pub fn take(server: Option<u32>) -> Self {
        let me = std::process::id();
        let mut groups: BTreeMap<&'static str, u64> = BTreeMap::new();
        let mut others = BTreeMap::new();
        for g in ["bench", "ironclad", "postgres", "redis"] {
            groups.insert(g, 0);
        }
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for entry in dir.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                let Some((comm, ticks)) = proc_times(pid) else {
                    continue;
                };
                let group = if pid == me {
                    "bench"
                } else if Some(pid) == server {
                    "ironclad"
                } else if comm == "postgres" || comm == "postmaster" {
                    "postgres"
                } else if comm.starts_with("redis-server") {
                    "redis"
                } else {
                    others.insert(pid, (comm, ticks));
                    continue;
                };
                *groups.entry(group).or_default() += ticks;
            }
        }
        let (busy, iowait, _) = machine_ticks();
        Self {
            at: Instant::now(),
            groups,
            others,
            busy,
            iowait,
        }
    }

    /// Cores used per group between `self` (earlier) and `later`, plus machine busy/iowait.
    /// A process that started or exited in between is counted only for its visible part.
    pub fn split(&self, later: &CpuSample) -> Value {
        let tck = clk_tck();
        let wall = later.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let cores =
            |a: u64, b: u64| ((b.saturating_sub(a)) as f64 / tck / wall * 100.0).round() / 100.0;
        let mut out = serde_json::Map::new();
        let mut known = 0u64;
        for (g, t) in &later.groups {
            let before = self.groups.get(g).copied().unwrap_or(0);
            known += t.saturating_sub(before);
            out.insert(format!("{g}_cores"), json!(cores(before, *t)));
        }
        // Everything else that ran meanwhile (other users' builds and tests on a shared machine,
        // the kernel): the noise to keep in mind when reading the figures.
        let busy = later.busy.saturating_sub(self.busy);
        out.insert(
            "other_cores".into(),
            json!(cores(0, busy.saturating_sub(known))),
        );
        // The biggest other consumers by name (processes that started meanwhile count whole).
        let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
        for (pid, (comm, t)) in &later.others {
            // Kernel workers rename themselves per work item: match on the pid alone.
            let before = self.others.get(pid).map_or(0, |(_, b)| *b);
            *by_name.entry(comm.clone()).or_default() += t.saturating_sub(before);
        }
        let mut top: Vec<(String, u64)> = by_name.into_iter().filter(|(_, t)| *t > 0).collect();
        top.sort_by_key(|t| std::cmp::Reverse(t.1));
        let top: serde_json::Map<String, Value> = top
            .into_iter()
            .take(3)
            .map(|(n, t)| (n, json!(cores(0, t))))
            .collect();
        out.insert("other_top".into(), Value::Object(top));
        out.insert(
            "machine_busy_cores".into(),
            json!(cores(self.busy, later.busy)),
        );
        out.insert(
            "machine_iowait_cores".into(),
            json!(cores(self.iowait, later.iowait)),
        );
        out.insert("wall_s".into(), json!((wall * 100.0).round() / 100.0));
        Value::Object(out)
    }
}

/// One line describing a CPU split, e.g. `ironclad 0.9 · postgres 0.7 · bench 0.2 · …`.
pub fn split_line(split: &Value) -> String {
    let g = |k: &str| split.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    format!(
        "cores used: ironclad {:.2} · postgres {:.2} · redis {:.2} · bench {:.2} · other {:.2} · machine busy {:.2} (iowait {:.2})",
        g("ironclad_cores"),
        g("postgres_cores"),
        g("redis_cores"),
        g("bench_cores"),
        g("other_cores"),
        g("machine_busy_cores"),
        g("machine_iowait_cores"),
    ) + &match split.get("other_top").and_then(Value::as_object) {
        Some(top) if !top.is_empty() => format!(
            " · other = {}",
            top.iter().map(|(n, c)| format!("{n} {:.2}", c.as_f64().unwrap_or(0.0))).collect::<Vec<_>>().join(", ")
        ),
        _ => String::new(),
    }
}

/// How busy the machine is before the run starts (other users' builds skew every figure).
pub async fn background_load(secs: f64) -> serde_json::Value {
    let a = CpuSample::take(None);
    tokio::time::sleep(std::time::Duration::from_secs_f64(secs)).await;
    a.split(&CpuSample::take(None))
}

/// nproc, date, kernel, CPU model, git commit: what a reader needs to compare runs.
pub fn machine_info() -> Value {
    let nproc = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    let mem_total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .next()
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_owned())
        })
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb / 1024)
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(crate::workspace_root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_default();
    let dirty = git(&["status", "--porcelain"])
        .map(|s| !s.is_empty())
        .unwrap_or(false);
    json!({
        "date": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "nproc": nproc,
        "cpu_model": cpu_model,
        "mem_total_mib": mem_total,
        "kernel": kernel,
        "git_commit": if dirty { format!("{commit}+dirty") } else { commit },
    })
}

/// Two quick probes of the disk the blobs go to, taken before the run: the cost of creating
/// an empty file (ext4 without a journal gets slow for minutes after many deletions, see
/// README) and of a 4 KiB write + fsync (this VM's fsync latency varies a lot run to run).
pub fn disk_probe(root: Option<&std::path::Path>) -> Value {
    use std::io::Write;
    let dir = match root {
        Some(r) => tempfile::Builder::new()
            .prefix("ironclad-bench-probe-")
            .tempdir_in(r),
        None => tempfile::Builder::new()
            .prefix("ironclad-bench-probe-")
            .tempdir(),
    };
    let Ok(dir) = dir else { return json!(null) };
    let n = 200;
    let t = Instant::now();
    for i in 0..n {
        if std::fs::File::create(dir.path().join(format!("f{i}"))).is_err() {
            return json!(null);
        }
    }
    let create_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    let mut fsync_ms = Vec::new();
    if let Ok(mut f) = std::fs::File::create(dir.path().join("sync")) {
        let block = [7u8; 4096];
        for _ in 0..20 {
            let t = Instant::now();
            if f.write_all(&block).and_then(|_| f.sync_all()).is_err() {
                break;
            }
            fsync_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    fsync_ms.sort_by(f64::total_cmp);
    let median = fsync_ms.get(fsync_ms.len() / 2).copied().unwrap_or(0.0);
    json!({
        "file_create_us": (create_us * 10.0).round() / 10.0,
        "write_4k_fsync_median_ms": (median * 1000.0).round() / 1000.0,
    })
}
