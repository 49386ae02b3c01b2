//! Running outside programs and waiting for a condition: shared by the test binaries that
//! drive a real cluster (tests/control_plane/, tests/real_node/).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `program` with `args` (and `stdin`): (exit code, stdout, stderr).
pub fn cmd(program: &str, args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls `done` every 300 ms; panics naming `what` after `secs`.
pub fn wait_until(what: &str, secs: u64, done: impl FnMut() -> bool) {
    wait_until_or(what, secs, done, String::new);
}

/// [`wait_until`], its panic also saying what `why` finds then (what the cluster was doing).
pub fn wait_until_or(
    what: &str,
    secs: u64,
    mut done: impl FnMut() -> bool,
    why: impl FnOnce() -> String,
) {
    let start = Instant::now();
    while !done() {
        if start.elapsed() >= Duration::from_secs(secs) {
            panic!("{what}: not within {secs}s{}", why());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}
