//! The TUI in a real terminal: `demo` under tmux (200×50), driven with send-keys and read
//! with capture-pane. Without tmux this says so loudly and passes, except in CI.

use std::{
    process::Command,
    time::{Duration, Instant},
};

struct Tmux {
    session: String,
}

impl Tmux {
    fn available() -> bool {
        let ok = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "tmux is required in CI"
            );
            eprintln!("\n*** SKIPPED: tmux not found; the real-terminal test did not run ***\n");
        }
        ok
    }

    fn start() -> Self {
        let session = format!("spark-triage-e2e-{}", std::process::id());
        let status = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &session,
                "-x",
                "200",
                "-y",
                "50",
                "env TERM=xterm-256color PS1='$ ' bash --norc --noprofile",
            ])
            .status()
            .expect("tmux runs");
        assert!(status.success());
        Self { session }
    }

    fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["send-keys", "-t", &self.session])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_for(&self, what: &str, secs: u64) -> String {
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

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .status();
    }
}

#[test]
fn demo_in_a_real_terminal() {
    if !Tmux::available() {
        return;
    }
    let t = Tmux::start();
    t.wait_for("$", 10);
    t.keys(&["stty -a | grep -o ' icanon' ; echo BEFORE", "Enter"]);
    t.wait_for("\nBEFORE\n", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    let recording = std::env::temp_dir().join(format!("st-tmux-{}.ndjson.zst", std::process::id()));
    t.keys(&[
        &format!(
            "{bin} demo --speed 4 --poll-interval 2s --record {}",
            recording.display()
        ),
        "Enter",
    ]);
    t.wait_for("etl-nightly", 30);
    t.wait_for("sources ok", 30);
    // Select etl-nightly (shown first once its failures are known), filter to the
    // OOMKilled executor.
    t.keys(&["Tab"]);
    for _ in 0..3 {
        if t.screen().contains("▶ etl-nightly") {
            break;
        }
        t.keys(&["j"]);
        std::thread::sleep(Duration::from_millis(300));
    }
    t.keys(&["Tab", "/", "o", "o", "m", "Enter"]);
    let screen = t.wait_for("OOMKilled", 40);
    assert!(screen.contains("Executors of etl-nightly"), "{screen}");
    // Detail pane.
    t.keys(&["d"]);
    // The popup's own title (the strip under the map names the cause too).
    let detail = t.wait_for("↑↓ scroll", 10);
    assert!(detail.contains("container-oom-killed"), "{detail}");
    assert!(detail.contains("Spark's view"), "{detail}");
    t.keys(&["Escape"]);
    t.keys(&["?"]);
    t.wait_for("Map letters", 10);
    t.keys(&["Escape", "q"]);
    // The terminal is as it was: the shell's screen, its prompt back, cooked mode.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = t.screen();
        let prompt_back = s
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.trim() == "$");
        if prompt_back && s.contains(&format!("{bin} demo")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the shell prompt did not come back:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.keys(&["stty -a | grep -o ' icanon' ; echo AFTER", "Enter"]);
    let after = t.wait_for("\nAFTER\n", 10);
    assert!(
        !after.contains("Applications ("),
        "the alternate screen is gone: {after}"
    );
    assert!(
        after.contains(" icanon\nAFTER\n"),
        "canonical mode (not -icanon) after quitting: {after}"
    );
    // --record wrote the session: it reads back with the etl-nightly app in it.
    let out = Command::new(bin)
        .args(["status", "--recording"])
        .arg(&recording)
        .args(["-o", "json"])
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("etl-nightly"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(recording);
}

/// Started a minute into `mixed`, when etl-nightly's executors 7 and 8 (OOM) and 10
/// (vanished) are long gone: the first screen already shows them, from the driver's
/// executor list, on the app in the worst state, with no key pressed.
#[test]
fn the_first_screen_shows_the_dead_executors_of_every_app() {
    if !Tmux::available() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let sim = rt.block_on(super::common::start_sim("mixed", 4.0, &[]));
    // 60 scenario seconds at 4x, and Spark's poll that notices the vanished pod.
    std::thread::sleep(Duration::from_secs(16));
    let t = Tmux::start();
    t.wait_for("$", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    t.keys(&[
        &format!(
            "{bin} --kubeconfig {} -n spark-jobs --poll-interval 2s",
            sim.kubeconfig.display()
        ),
        "Enter",
    ]);
    let screen = t.wait_for("Executors of etl-nightly", 30);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut screen = screen;
    while !(screen.contains("7F") && screen.contains("8F") && screen.contains("10M")) {
        assert!(
            Instant::now() < deadline,
            "etl-nightly's 7 and 8 failed and 10 missing are not on the first screen:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(200));
        screen = t.screen();
    }
    assert!(screen.contains("▶ etl-nightly"), "{screen}");
    t.keys(&["q"]);
    drop(sim);
}
