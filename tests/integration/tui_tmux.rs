//! The TUI in a real terminal: `demo` under tmux (200×50), driven with send-keys and read
//! with capture-pane. Without tmux this says so loudly and passes, except in CI.

use std::process::Command;
use std::time::{Duration, Instant};

use spark_triage_sim::testing;

use super::tmux::{Tmux, tmux};

#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn demo_in_a_real_terminal() {
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
    // Select etl-nightly (shown first once its failures are known; the apps pane has the
    // focus at start), filter to the OOMKilled executor.
    for _ in 0..3 {
        if t.screen().contains("▶ etl-nightly") {
            break;
        }
        t.keys(&["j"]);
        std::thread::sleep(Duration::from_millis(300));
    }
    t.keys(&["Tab", "/", "o", "o", "m", "Enter"]);
    t.wait_for_all(&["OOMKilled", "Executors of etl-nightly"], 40);
    // Detail pane: its own title (the strip under the map names the cause too), the
    // finding and Spark's view, all in one frame.
    t.keys(&["d"]);
    t.wait_for_all(&["↑↓ scroll", "container-oom-killed", "Spark's view"], 10);
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

/// `demo` as a new user meets it, no key pressed: the first screen leads with the worst app
/// and names its OOM deaths by cause, with the setting to change.
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn the_demo_opens_on_the_incident() {
    let t = Tmux::start();
    t.wait_for("$", 10);
    // Let applications set tmux's clipboard with OSC 52 (`y` is checked below).
    let ok = tmux()
        .args(["set-option", "-s", "set-clipboard", "on"])
        .status()
        .expect("tmux set-option");
    assert!(ok.success());
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    let diag = std::env::temp_dir().join(format!("st-diag-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&diag);
    t.keys(&[
        &format!(
            "{bin} demo --speed 2 --poll-interval 2s --log-file {}",
            diag.display()
        ),
        "Enter",
    ]);
    let screen = t.wait_for_all(
        &[
            "OOMKilled (137)",
            "JVM OOM (52)",
            "--conf spark.executor.memoryOverhead=",
            "Endings, newest first",
        ],
        40,
    );
    let first_app = screen
        .lines()
        .skip_while(|l| !l.contains("Applications ("))
        .nth(1)
        .unwrap_or_default();
    assert!(
        first_app.contains("▶ etl-nightly"),
        "worst app first:\n{screen}"
    );
    // `y` copies the selected executor's pod name through the terminal (OSC 52), which
    // tmux keeps as its newest buffer.
    t.keys(&["y"]);
    let screen = t.wait_for("copied: etl-nightly-", 10);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let out = tmux().args(["show-buffer"]).output().expect("show-buffer");
        let buffer = String::from_utf8_lossy(&out.stdout).into_owned();
        if buffer.starts_with("etl-nightly-") && buffer.contains("-exec-") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no OSC 52 copy in tmux's buffer ({buffer:?}):\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.keys(&["q"]);
    // The view's own diagnostics went to --log-file: its start, and the evidence it read
    // about the executors that ended badly.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(&diag).unwrap_or_default();
        if log.contains("spark-triage started") && log.contains("evidence: ") {
            break;
        }
        assert!(Instant::now() < deadline, "diagnostics log:\n{log}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = std::fs::remove_file(&diag);
}

/// `replay` of a recording opens on its first failure, with the failing app selected: never
/// an empty first instant.
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn replay_opens_on_the_first_failure() {
    let t = Tmux::start();
    t.wait_for("$", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    let rec = concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/mixed.ndjson.zst");
    t.keys(&[&format!("{bin} replay {rec}"), "Enter"]);
    let screen = t.wait_for_all(&["REPLAY", "▶ etl-nightly", "Executors of etl-nightly"], 20);
    assert!(
        screen.contains("7F") || screen.contains("OOMKilled"),
        "a failed executor on the first screen:\n{screen}"
    );
    assert!(
        !screen.contains("no Spark applications in scope yet"),
        "{screen}"
    );
    t.keys(&["q"]);
}

/// Started a minute into `mixed`, when etl-nightly's executors 7 and 8 (OOM) and 10
/// (vanished) are long gone: the first screen already shows them, from the driver's
/// executor list, on the app in the worst state, with no key pressed.
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn the_first_screen_shows_the_dead_executors_of_every_app() {
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

/// The same first screen at 80×24, the size tmux and ssh give by default: the header keeps
/// the namespace, the footer the keys most needed (`l` log, `K` kill), and the endings
/// under the map all three of etl-nightly's (7 and 8 OOM, 10 vanished). On `q` nothing of
/// the view's start is left on the terminal.
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn the_first_screen_at_80x24_keeps_the_namespace_the_keys_and_every_ending() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let sim = rt.block_on(super::common::start_sim("mixed", 4.0, &[]));
    std::thread::sleep(Duration::from_secs(16));
    let t = Tmux::start_sized(80, 24);
    t.wait_for("$", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    t.keys(&[
        &format!(
            "clear; {bin} --kubeconfig {} -n spark-jobs --poll-interval 2s",
            sim.kubeconfig.display()
        ),
        "Enter",
    ]);
    let deadline = Instant::now() + Duration::from_secs(40);
    let endings = |s: &str| -> Vec<String> {
        s.lines()
            .skip_while(|l| !l.contains("Endings, newest first"))
            .skip(1)
            .filter(|l| l.contains(" ago  executor "))
            .map(str::to_owned)
            .collect()
    };
    let screen = loop {
        let s = t.screen();
        let e = endings(&s);
        if ["executor 7 ", "executor 8 ", "executor 10 "]
            .iter()
            .all(|id| e.iter().any(|l| l.contains(id)))
        {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "etl-nightly's three endings are not all on the 80x24 screen:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines.len(), 24, "{screen}");
    assert!(
        lines[0].contains("spark-jobs") && lines[0].contains("LIVE"),
        "the mode and namespace in the header:\n{screen}"
    );
    let footer = lines.last().copied().unwrap_or_default();
    for hint in ["l log", "K kill", "? help"] {
        assert!(footer.contains(hint), "`{hint}` in the footer:\n{screen}");
    }
    assert!(screen.contains("▶ etl-nightly"), "{screen}");
    assert!(screen.contains("OOMKilled (137)"), "{screen}");
    t.keys(&["q"]);
    let back = t.wait_prompt(10);
    assert!(
        !back.contains("connecting to the API server"),
        "the start's line left on the terminal:\n{back}"
    );
    drop(sim);
}

/// The flight recorder keeps the log tails of executors that ended badly: a replay of its
/// recording, at the end, shows executor 8's JVM OOM stack trace on `l`, marked as
/// captured (nothing can be fetched from a recording).
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn a_replay_of_a_flight_recording_shows_a_jvm_ooms_captured_log_tail() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let sim = rt.block_on(super::common::start_sim("mixed", 4.0, &[]));
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    let rec = std::env::temp_dir().join(format!("st-tails-{}.ndjson.zst", std::process::id()));
    let _ = std::fs::remove_file(&rec);
    let out = std::process::Command::new(bin)
        .args(["record"])
        .arg(&rec)
        .arg("--kubeconfig")
        .arg(&sim.kubeconfig)
        .args([
            "-n",
            "spark-jobs",
            "--duration",
            "20s",
            "--poll-interval",
            "2s",
        ])
        .output()
        .expect("record runs");
    assert!(
        out.status.success(),
        "record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(sim);
    let t = Tmux::start();
    t.wait_for("$", 10);
    t.keys(&[&format!("{bin} replay {} --at -1s", rec.display()), "Enter"]);
    t.wait_for_all(&["REPLAY", "Executors of etl-nightly"], 20);
    t.keys(&["Tab"]);
    t.keys(&["/", "8", "Enter"]);
    t.keys(&["l"]);
    let screen = t.wait_for_all(
        &[
            "Log of etl-nightly-",
            "-exec-8 (",
            "captured when it ended",
            "java.lang.OutOfMemoryError: Java heap space",
        ],
        15,
    );
    assert!(
        screen.contains("PartitionedPairBuffer.growArray"),
        "the stack trace under the error:\n{screen}"
    );
    t.keys(&["Escape"]);
    t.keys(&["q"]);
    let _ = std::fs::remove_file(&rec);
}

/// SIGHUP (a closed SSH session or tmux pane) ends the live view as `q` does: the
/// terminal restored and the `--record` file closed as a complete zstd stream.
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn sighup_restores_the_terminal_and_closes_the_recording() {
    let t = Tmux::start();
    t.wait_for("$", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    let recording = std::env::temp_dir().join(format!(
        "st-tmux-hup-{}-{:x}.ndjson.zst",
        std::process::id(),
        fastrand::u32(..)
    ));
    t.keys(&[
        &format!(
            "{bin} demo --speed 4 --poll-interval 2s --record {}",
            recording.display()
        ),
        "Enter",
    ]);
    t.wait_for("sources ok", 30);
    std::thread::sleep(Duration::from_secs(2)); // at least one flush
    let shell = t.pane("#{pane_pid}");
    let out = Command::new("pgrep")
        .args(["-P", &shell])
        .output()
        .expect("pgrep");
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(!pid.is_empty(), "the demo's pid under the shell {shell}");
    assert!(
        testing::hang_up(pid.parse().expect("a pid")),
        "SIGHUP to the demo"
    );
    t.wait_prompt(10);
    t.assert_restored("after SIGHUP");
    // The recording is a complete zstd stream (what `zstd -t` checks) that reads back.
    let bytes = std::fs::read(&recording).expect("the recording exists");
    let mut text = Vec::new();
    std::io::Read::read_to_end(
        &mut zstd::stream::read::Decoder::new(&bytes[..]).unwrap(),
        &mut text,
    )
    .expect("a complete zstd stream");
    // And the zstd tool agrees, where it is installed (always under CI=true: build.rs).
    if cfg!(have_zstd) {
        let z = Command::new("zstd")
            .arg("-t")
            .arg(&recording)
            .output()
            .expect("zstd runs (.ci/run installs it)");
        assert!(
            z.status.success(),
            "zstd -t: {}",
            String::from_utf8_lossy(&z.stderr)
        );
    }
    let out = Command::new(bin)
        .args(["status", "--recording"])
        .arg(&recording)
        .output()
        .expect("status");
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "no damage reported: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(recording);
}

/// The live view against an API server that accepts and never answers: it says it is
/// connecting, `q` quits at once, and without a key it gives up after the timeout.
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn the_live_view_against_a_silent_server_says_so_and_quits_on_q() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s); // accepted, never answered
        }
    });
    let kc = std::env::temp_dir().join(format!(
        "st-tmux-silent-{}-{:x}.yaml",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n    token: abc\n"
        ),
    )
    .unwrap();
    let t = Tmux::start();
    t.wait_for("$", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    t.keys(&[
        &format!("{bin} --kubeconfig {} --request-timeout 60s", kc.display()),
        "Enter",
    ]);
    t.wait_for("connecting to the API server", 10);
    let asked = Instant::now();
    t.keys(&["q"]);
    t.wait_prompt(5);
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "q took {:?}",
        asked.elapsed()
    );
    t.assert_restored("after q while connecting");
    t.keys(&["clear", "Enter"]);
    t.keys(&[
        &format!("{bin} --kubeconfig {} --request-timeout 2s", kc.display()),
        "Enter",
    ]);
    let screen = t.wait_for("no complete answer within 2s", 10);
    assert!(screen.contains(&format!("127.0.0.1:{port}")), "{screen}");
    t.wait_prompt(5);
    t.assert_restored("after the timeout");
    let _ = std::fs::remove_file(kc);
}

/// A terminal that cannot show UTF-8 (`LC_ALL=C`) gets the view in ASCII; `TERM=dumb` gets
/// it in ASCII without colour (both used to get box drawing and colour).
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn a_c_locale_and_a_dumb_terminal_get_ascii() {
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    for (env, colour) in [("LC_ALL=C", true), ("TERM=dumb", false)] {
        let t = Tmux::start();
        t.wait_for("$", 10);
        t.keys(&[
            &format!("env {env} {bin} demo --speed 2 --poll-interval 2s"),
            "Enter",
        ]);
        let screen = t.wait_for_all(&["OOMKilled (137)", "Endings, newest first"], 40);
        let view: String = screen
            .lines()
            .filter(|l| !l.starts_with('$'))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(view.is_ascii(), "{env}: not ASCII:\n{view}");
        assert!(view.contains("+-"), "{env}: borders in ASCII:\n{view}");
        let out = tmux()
            .args(["capture-pane", "-p", "-e", "-t", &t.session])
            .output()
            .expect("capture-pane -e");
        let styled = String::from_utf8_lossy(&out.stdout);
        // A foreground or background colour: 3x/4x/9x/10x, or 38;/48; in an SGR sequence.
        let coloured = styled.split("\x1b[").skip(1).any(|seq| {
            let params = seq.split('m').next().unwrap_or_default();
            params.split(';').any(|p| {
                matches!(
                    p.parse::<u16>(),
                    Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)
                )
            })
        });
        assert_eq!(coloured, colour, "{env}: colour {coloured}:\n{styled}");
        t.keys(&["q"]);
        t.wait_prompt(10);
    }
}
