//! tmux as a real terminal for tests: a session on the tests' own tmux server, keys sent with
//! send-keys, the screen read with capture-pane. Shared by the integration tests and the
//! control-plane test (each test binary uses a part of it).
#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

/// tmux on its own server (socket `spark-triage-e2e`): the tests' options never touch the
/// user's tmux.
pub fn tmux() -> Command {
    let mut c = Command::new("tmux");
    c.args(["-L", "spark-triage-e2e"]);
    c
}

pub struct Tmux {
    pub session: String,
}

impl Tmux {
    /// Whether tmux runs: where the build found it (`have_tmux`), it must; where it did
    /// not, the part of a test that needs it is left out (the test says so).
    pub fn available() -> bool {
        let ok = tmux().arg("-V").output().is_ok_and(|o| o.status.success());
        assert!(
            ok || !cfg!(have_tmux),
            "tmux was found when the tests were built, and does not run now"
        );
        if !ok {
            eprintln!("tmux not found when the tests were built: the real-terminal part left out");
        }
        ok
    }

    pub fn start() -> Self {
        Self::start_sized(200, 50)
    }

    /// A session of `w`×`h` cells (80×24 is what tmux and ssh give by default).
    pub fn start_sized(w: u16, h: u16) -> Self {
        let (w, h) = (w.to_string(), h.to_string());
        let session = format!(
            "spark-triage-e2e-{}-{:x}",
            std::process::id(),
            fastrand::u32(..)
        );
        // Tests start sessions in parallel on one server, which exits when its last session
        // ends: a new-session racing that exit fails ("server exited unexpectedly"), and is
        // tried again.
        let mut last = None;
        for _ in 0..5 {
            let out = tmux()
                .args([
                    "new-session",
                    "-d",
                    "-s",
                    &session,
                    "-x",
                    &w,
                    "-y",
                    &h,
                    "env TERM=xterm-256color LC_ALL=C.UTF-8 PS1='$ ' bash --norc --noprofile",
                ])
                .output()
                .expect("tmux runs");
            if out.status.success() {
                return Self { session };
            }
            last = Some(String::from_utf8_lossy(&out.stderr).into_owned());
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("tmux new-session failed five times: {last:?}")
    }

    pub fn keys(&self, keys: &[&str]) {
        let status = tmux()
            .args(["send-keys", "-t", &self.session])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    pub fn screen(&self) -> String {
        let out = tmux()
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until every one of `all` is on the screen at once (a frame is written in
    /// pieces: one string seen does not mean the rest of the frame is there yet).
    pub fn wait_for_all(&self, all: &[&str], secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if all.iter().all(|w| s.contains(w)) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "waited {secs}s for all of {all:?}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn wait_for(&self, what: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "waited {secs}s for {what:?}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Tmux {
    /// A tmux format about the pane (`#{alternate_on}`, `#{cursor_flag}`, …).
    pub fn pane(&self, format: &str) -> String {
        let out = tmux()
            .args(["display", "-p", "-t", &self.session, format])
            .output()
            .expect("display");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Waits until the shell's prompt is the last line again.
    pub fn wait_prompt(&self, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            let back = s
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.trim() == "$");
            if back {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "the shell prompt did not come back in {secs}s:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The terminal is as the shell left it: main screen, cursor shown, no mouse
    /// reporting, canonical mode.
    pub fn assert_restored(&self, what: &str) {
        let flags = self.pane(
            "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{mouse_button_flag} #{mouse_standard_flag}",
        );
        assert_eq!(
            flags, "0 1 0 0 0",
            "{what}: alternate screen, cursor, mouse modes"
        );
        self.keys(&["stty -a | grep -o ' icanon' ; echo RESTORED", "Enter"]);
        let after = self.wait_for("\nRESTORED\n", 10);
        assert!(
            after.contains(" icanon\nRESTORED\n"),
            "{what}: cooked mode: {after}"
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = tmux().args(["kill-session", "-t", &self.session]).status();
    }
}

/// The live view, `spark-triage ARGS`, in a real terminal (200×50): waits until its screen
/// shows every one of `wants`, quits with q and checks the terminal is restored; returns that
/// screen.
pub fn live_view(args: &str, wants: &[&str], secs: u64) -> String {
    let t = Tmux::start();
    t.wait_for("$", 10);
    let line = format!("{} {args}", env!("CARGO_BIN_EXE_spark-triage"));
    t.keys(&[&line, "Enter"]);
    let screen = t.wait_for_all(wants, secs);
    t.keys(&["q"]);
    t.wait_prompt(15);
    t.assert_restored("after q");
    screen
}
