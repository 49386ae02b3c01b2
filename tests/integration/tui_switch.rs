//! Switching scope in the running live view (`:ns`, `:ctx`), in a real terminal: two
//! simulators behind one kubeconfig with two contexts.

use std::time::{Duration, Instant};

use super::tmux::Tmux;

/// Waits until the screen has every one of `all` and none of `none`.
fn wait_screen(t: &Tmux, all: &[&str], none: &[&str], secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let screen = t.screen();
        if all.iter().all(|s| screen.contains(s)) && !none.iter().any(|s| screen.contains(s)) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "after {secs}s, wanted {all:?} and none of {none:?}:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn ns_and_ctx_switch_the_running_view_and_the_recording_keeps_it() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let first = rt.block_on(super::common::start_sim("mixed", 1.0, &[]));
    let second = rt.block_on(super::common::start_sim("oom-storm", 1.0, &[]));
    let server = |kc: &std::path::Path| {
        let text = std::fs::read_to_string(kc).unwrap();
        text.lines()
            .find_map(|l| l.trim().strip_prefix("server: "))
            .unwrap()
            .to_owned()
    };
    let dir = std::env::temp_dir().join(format!(
        "st-switch-{}-{:x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let kc = dir.join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n\
             - {{name: a, cluster: {{server: {}}}}}\n- {{name: b, cluster: {{server: {}}}}}\n\
             users:\n- {{name: u, user: {{token: spark-triage-sim-token}}}}\n\
             contexts:\n- {{name: first, context: {{cluster: a, user: u, namespace: spark-jobs}}}}\n\
             - {{name: second, context: {{cluster: b, user: u, namespace: spark-jobs}}}}\n\
             current-context: first\n",
            server(&first.kubeconfig),
            server(&second.kubeconfig)
        ),
    )
    .unwrap();
    let recording = dir.join("switch.ndjson.zst");
    let t = Tmux::start();
    t.wait_for("$", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    t.keys(&[
        &format!(
            "{bin} --kubeconfig {} --poll-interval 2s --record {}",
            kc.display(),
            recording.display()
        ),
        "Enter",
    ]);
    wait_screen(
        &t,
        &[
            "ctx first │ namespace spark-jobs",
            "etl-nightly",
            "adhoc-analysis",
        ],
        &[],
        30,
    );
    // Another namespace: its (no) apps, nothing of spark-jobs.
    t.keys(&[":", "ns default", "Enter"]);
    let screen = wait_screen(
        &t,
        &["ctx first │ namespace default", "Applications (0)"],
        &["etl-nightly", "adhoc-analysis", "Executors of"],
        10,
    );
    assert!(
        screen.contains("now context first, namespace default"),
        "{screen}"
    );
    // A namespace that is not there is refused like a context; the view stays.
    t.keys(&[":", "ns nope", "Enter"]);
    let screen = wait_screen(
        &t,
        &["not switched: no namespace \"nope\" in context first"],
        &[],
        10,
    );
    assert!(screen.contains("ctx first │ namespace default"), "{screen}");
    // Back, with Tab completing the name from the cluster's namespaces.
    t.keys(&[":", "ns spark-j", "Tab"]);
    wait_screen(&t, &[":ns spark-jobs"], &[], 5);
    t.keys(&["Enter"]);
    wait_screen(
        &t,
        &[
            "ctx first │ namespace spark-jobs",
            "etl-nightly",
            "adhoc-analysis",
        ],
        &[],
        10,
    );
    // The other cluster: its app only.
    t.keys(&[":", "ctx sec", "Tab"]);
    wait_screen(&t, &[":ctx second"], &[], 5);
    t.keys(&["Enter"]);
    wait_screen(
        &t,
        &["ctx second │ namespace spark-jobs", "skewed-join"],
        &["etl-nightly", "adhoc-analysis", "streaming-sessions"],
        10,
    );
    // A context that is not there is refused; the view stays.
    t.keys(&[":", "ctx nosuch", "Enter"]);
    let screen = wait_screen(
        &t,
        &[
            "not switched: cannot use the kubeconfig: no context \"nosuch\" in the kubeconfig; it has: first, second",
        ],
        &[],
        10,
    );
    assert!(
        screen.contains("ctx second │") && screen.contains("skewed-join"),
        "{screen}"
    );
    t.keys(&["q"]);
    t.wait_prompt(10);
    t.assert_restored("after the switches");
    let bytes = std::fs::read(&recording).expect("the recording exists");
    let text = String::from_utf8(zstd::decode_all(&bytes[..]).unwrap()).unwrap();
    let switches: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"scope-changed\""))
        .collect();
    assert_eq!(switches.len(), 3, "{switches:?}");
    assert!(
        switches[2].contains("\"context\":\"second\""),
        "{switches:?}"
    );
    let out = std::process::Command::new(bin)
        .args(["report", "-o", "json"])
        .arg(&recording)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let apps: Vec<&str> = report["apps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["app_name"].as_str())
        .collect();
    assert_eq!(apps, ["skewed-join"], "the report covers the last scope");
    assert!(
        report["scope"]
            .as_str()
            .unwrap()
            .contains("of context second (switched to at"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(dir);
    drop((first, second));
}
