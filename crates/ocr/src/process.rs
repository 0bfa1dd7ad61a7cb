//! Running a poppler tool as a child process with a deadline and a cap on what it may print.
//!
//! A hostile PDF can make a renderer loop or print without end; the child is killed when the
//! deadline passes or its output outgrows the cap, and both outputs are drained on their own
//! threads so a chatty stderr can never block the child (a 64 KiB pipe fills quickly with
//! poppler's "Syntax Error" lines).

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// What went wrong running a child.
#[derive(Debug)]
pub(crate) enum RunError {
    /// The program could not be started (missing binary, no processes left): not the input's
    /// fault.
    Spawn(std::io::Error),
    /// Still running at the deadline; it was killed.
    Timeout,
    /// Printed more than the cap; it was killed.
    TooMuchOutput,
    /// Exited unsuccessfully (or was killed by a signal); carries the start of its stderr.
    Failed(String),
}

/// The stdout of a successful run.
pub(crate) fn run(
    mut cmd: Command,
    timeout: Duration,
    stdout_cap: usize,
) -> Result<Vec<u8>, RunError> {
    let deadline = Instant::now() + timeout;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(RunError::Spawn)?;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_tx = tx.clone();
    // Readers end when the child closes its pipes (exit or kill), so they never outlive it by much.
    let spawned = thread::Builder::new()
        .name("ocr-child-stdout".into())
        .spawn(move || {
            let mut buf = Vec::new();
            // Read one byte past the cap to tell "exactly the cap" from "more".
            let res = stdout.map(|s| s.take(stdout_cap as u64 + 1).read_to_end(&mut buf));
            let _ = out_tx.send(Stream::Out(res.map(|r| r.map(|_| buf))));
        });
    if let Err(e) = spawned {
        kill(&mut child);
        return Err(RunError::Spawn(e));
    }
    let spawned = thread::Builder::new()
        .name("ocr-child-stderr".into())
        .spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut s) = stderr {
                let mut chunk = [0u8; 4096];
                // Keep the first 2 KiB for the error message, drain the rest.
                while let Ok(n) = s.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let room = 2048usize.saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..n.min(room)]);
                }
            }
            let _ = tx.send(Stream::Err(kept));
        });
    if let Err(e) = spawned {
        kill(&mut child);
        return Err(RunError::Spawn(e));
    }

    let (mut out, mut err) = (None, None);
    while out.is_none() || err.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Stream::Out(o)) => {
                let too_much = matches!(&o, Some(Ok(b)) if b.len() > stdout_cap);
                out = Some(o);
                if too_much {
                    kill(&mut child);
                    return Err(RunError::TooMuchOutput);
                }
            }
            Ok(Stream::Err(e)) => err = Some(e),
            Err(_) => {
                kill(&mut child);
                return Err(RunError::Timeout);
            }
        }
    }
    // Both pipes are closed, so the child has exited or is about to.
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                kill(&mut child);
                return Err(RunError::Timeout);
            }
            Err(e) => {
                return Err(RunError::Failed(format!(
                    "could not wait for the child: {e}"
                )))
            }
        }
    };
    let stderr_text = String::from_utf8_lossy(&err.unwrap_or_default())
        .trim()
        .to_string();
    if !status.success() {
        let how = match status.code() {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_string(),
        };
        return Err(RunError::Failed(format!(
            "{how}: {}",
            first_lines(&stderr_text)
        )));
    }
    match out {
        Some(Some(Ok(bytes))) => Ok(bytes),
        Some(Some(Err(e))) => Err(RunError::Failed(format!("reading its output failed: {e}"))),
        _ => Err(RunError::Failed("no output pipe".into())),
    }
}

enum Stream {
    Out(Option<std::io::Result<Vec<u8>>>),
    Err(Vec<u8>),
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The first few lines of a tool's stderr, for an error message.
fn first_lines(s: &str) -> String {
    let lines: Vec<&str> = s.lines().take(3).collect();
    if lines.is_empty() {
        "no diagnostic".into()
    } else {
        lines.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn captures_stdout() {
        assert_eq!(
            run(sh("printf hello"), Duration::from_secs(5), 100).unwrap(),
            b"hello"
        );
    }

    #[test]
    fn kills_at_deadline() {
        let t = Instant::now();
        assert!(matches!(
            run(sh("exec sleep 30"), Duration::from_millis(200), 100),
            Err(RunError::Timeout)
        ));
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn kills_on_too_much_output() {
        let r = run(sh("exec yes"), Duration::from_secs(10), 1 << 16);
        assert!(matches!(r, Err(RunError::TooMuchOutput)));
    }

    #[test]
    fn reports_failure_with_stderr_and_survives_chatty_stderr() {
        let r = run(
            sh("yes oops | head -c 200000 >&2; exit 3"),
            Duration::from_secs(10),
            100,
        );
        match r {
            Err(RunError::Failed(m)) => assert!(m.starts_with("exit status 3: oops"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn spawn_failure_is_distinct() {
        let r = run(
            Command::new("/nonexistent/tool"),
            Duration::from_secs(1),
            10,
        );
        assert!(matches!(r, Err(RunError::Spawn(_))));
    }
}
