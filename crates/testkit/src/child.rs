//! Child processes that cannot outlive the test that started them.

use std::process::Command;

/// Asks the kernel to SIGKILL the child when the thread that started it ends. A guard's `Drop`
/// covers every exit path of a test, but not the test binary itself being killed (a CI timeout,
/// Ctrl-C): without this, orphaned roles and servers would keep running against the shared
/// PostgreSQL and Redis. Start processes from the test's own thread (the one running
/// `block_on`), which lives exactly as long as the test.
#[cfg(target_os = "linux")]
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    extern "C" {
        fn prctl(option: std::os::raw::c_int, ...) -> std::os::raw::c_int;
    }
    const PR_SET_PDEATHSIG: std::os::raw::c_int = 1;
    const SIGKILL: std::os::raw::c_ulong = 9;
    // SAFETY: runs in the forked child before exec; prctl is async-signal-safe and touches no
    // memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            if prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Elsewhere the test's guards are the only cleanup.
#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(_cmd: &mut Command) {}
