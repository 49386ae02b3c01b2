//! The verdicts as Prometheus metrics (docs/metrics.md): a real scrape of the recorder on
//! the `mixed` scenario gives the reference verdicts' endings per app and cause, and passes
//! `promtool check metrics` (Prometheus' own linter).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common::start_sim;
use super::flight::{get, recorder_logged};

/// The samples of one metric: its labels (sorted, `k=v`) and value.
pub(super) fn samples(text: &str, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(r) => r.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            let labels = labels
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').expect("k=v");
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            Some((labels, value.trim().parse().expect("a number")))
        })
        .collect()
}

/// The reference verdicts' ended executors, as (app, cause) → count.
fn expected_endings() -> BTreeMap<(String, String), f64> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mixed-verdicts.json"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut m = BTreeMap::new();
    for (app, a) in v["apps"].as_object().unwrap() {
        for e in a["executors"].as_object().unwrap().values() {
            if e["state"] != "pending" {
                let cause = e["cause"].as_str().unwrap().to_owned();
                *m.entry((app.clone(), cause)).or_default() += 1.0;
            }
        }
    }
    m
}

fn endings(text: &str) -> BTreeMap<(String, String), f64> {
    let mut m = BTreeMap::new();
    for (l, v) in samples(text, "spark_triage_executor_endings_total") {
        assert_eq!(l["namespace"], "spark-jobs", "{l:?}");
        assert!(
            ["info", "warn", "error"].contains(&l["severity"].as_str()),
            "{l:?}"
        );
        *m.entry((l["app"].clone(), l["cause"].clone())).or_default() += v;
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_promtool),
    ignore = "needs promtool (Debian's prometheus package)"
)]
async fn a_scrape_of_the_recorder_counts_the_mixed_scenarios_endings_by_app_and_cause() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.to_str().expect("utf-8 path").to_owned();
    let dir = std::env::temp_dir().join(format!("st-verdict-metrics-{}", std::process::id()));
    let (mut child, addr, _log) = recorder_logged(&kc, &dir, &[]).await;
    let want = expected_endings();
    assert!(
        want.contains_key(&("etl-nightly".into(), "container-oom-killed".into()))
            && want.contains_key(&("etl-nightly".into(), "jvm-oom".into())),
        "{want:?}"
    );
    // At rest from 60 scenario seconds (plus Spark's 30 s poll for the vanished pod), and
    // each ending is counted 15 s after it is seen.
    let deadline = Instant::now() + Duration::from_secs(120);
    let text = loop {
        let (status, text) = get(&addr, "/metrics").await;
        assert!(status.contains("200"), "{status}");
        if endings(&text) == want || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    assert_eq!(endings(&text), want, "endings by app and cause:\n{text}");
    // Nothing about an executor or a pod in any label.
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(
            !l.contains("exec-") && !l.contains("executor_id") && !l.contains("pod="),
            "{l}"
        );
    }
    let gauge = |name: &str, app: &str| {
        samples(&text, name)
            .into_iter()
            .find(|(l, _)| l["app"] == app)
            .map(|(_, v)| v)
    };
    // The budget: etl-nightly's OOM and JVM OOM are counted (its verdicts say so).
    assert_eq!(
        gauge("spark_triage_app_failures_counted", "etl-nightly"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        gauge("spark_triage_app_executors_missing", "etl-nightly"),
        Some(1.0)
    );
    assert_eq!(
        gauge("spark_triage_app_verdict_severity", "adhoc-analysis"),
        Some(1.0),
        "executors-preempted is a warning"
    );
    let pending: BTreeMap<String, f64> = samples(&text, "spark_triage_app_executors_pending")
        .into_iter()
        .filter(|(l, _)| l["app"] == "etl-nightly")
        .map(|(l, v)| (l["reason"].clone(), v))
        .collect();
    assert_eq!(
        pending,
        BTreeMap::from([("image-pull".into(), 1.0), ("unschedulable".into(), 1.0)]),
        "{text}"
    );
    let oldest = gauge("spark_triage_app_pending_oldest_seconds", "etl-nightly");
    assert!(
        oldest.is_some_and(|s| s > 0.0),
        "etl-nightly's pending executors have waited: {oldest:?}\n{text}"
    );
    let running: f64 = samples(&text, "spark_triage_app_runs")
        .into_iter()
        .filter(|(l, _)| l["state"] == "running")
        .map(|(_, v)| v)
        .sum();
    assert_eq!(running, 3.0, "three drivers run");
    process_figures(&text);
    promtool_check(&text).await;
    // What the alerts and the dashboard (deploy/components/) query is served.
    let served: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next())
        .collect();
    for name in super::alerts::names_used() {
        assert!(
            served.contains(name.as_str()),
            "{name} is not served:\n{text}"
        );
    }
    child.start_kill().expect("kill");
    let _ = child.wait().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The standard process figures a pod left running for weeks is watched by.
fn process_figures(text: &str) {
    let one = |name: &str| {
        let s = samples(text, name);
        assert_eq!(s.len(), 1, "{name}: {s:?}\n{text}");
        s[0].1
    };
    assert!(one("process_resident_memory_bytes") > 1e6, "{text}");
    assert!(one("process_virtual_memory_bytes") > 1e6, "{text}");
    assert!(one("process_open_fds") >= 3.0, "{text}");
    assert!(one("process_max_fds") >= one("process_open_fds"), "{text}");
    // In clock ticks (10 ms): a process that has used less shows 0 (seen once, a recorder
    // scraped a moment after its start on a loaded machine).
    let cpu = one("process_cpu_seconds_total");
    assert!(cpu.is_finite() && cpu >= 0.0, "{text}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    let started = one("process_start_time_seconds");
    assert!(
        started <= now + 1.0 && started > now - 3600.0,
        "started {started}, now {now}"
    );
}

/// A single-file recording says what it holds: one segment, the file's bytes (they read 0,
/// as if nothing were written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_promtool),
    ignore = "needs promtool (Debian's prometheus package)"
)]
async fn a_single_file_recorder_reports_its_file() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.to_str().expect("utf-8 path").to_owned();
    let file = std::env::temp_dir().join(format!("st-single-{}.ndjson.zst", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let (mut child, addr, _log) = super::flight::recorder_serving(&kc, &file, &[]).await;
    let deadline = Instant::now() + Duration::from_secs(40);
    let text = loop {
        let (status, text) = get(&addr, "/metrics").await;
        assert!(status.contains("200"), "{status}");
        let bytes = samples(&text, "spark_triage_recorder_directory_bytes");
        if bytes.first().is_some_and(|(_, v)| *v > 0.0) || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let one = |name: &str| samples(&text, name).first().map(|(_, v)| *v);
    assert_eq!(one("spark_triage_recorder_segments"), Some(1.0), "{text}");
    let bytes = one("spark_triage_recorder_directory_bytes").unwrap_or_default();
    let on_disk = std::fs::metadata(&file).expect("the recording").len() as f64;
    assert!(
        bytes > 0.0 && bytes <= on_disk,
        "{bytes} of {on_disk}\n{text}"
    );
    process_figures(&text);
    promtool_check(&text).await;
    child.start_kill().expect("kill");
    let _ = child.wait().await;
    let _ = std::fs::remove_file(file);
}

/// `promtool check metrics` on a scrape: Prometheus' own rules for names, units, help.
pub(super) async fn promtool_check(text: &str) {
    use tokio::io::AsyncWriteExt;
    let mut p = tokio::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs (Debian's prometheus package)");
    let mut stdin = p.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).await.expect("writes");
    drop(stdin);
    let out = p.wait_with_output().await.expect("promtool ends");
    assert!(
        out.status.success(),
        "promtool check metrics:\n{}{}\non:\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The live view's `--metrics-addr` (here `demo`'s, in a real terminal): the same verdict
/// metrics while the view is open, and the terminal as it was after.
#[test]
#[cfg_attr(
    not(all(have_tmux, have_promtool)),
    ignore = "needs tmux (the live view wants a terminal) and promtool (Debian's prometheus)"
)]
fn the_live_views_metrics_addr_serves_the_verdicts() {
    use super::tmux::Tmux;
    // A free port: bound then released (the view binds it again at once).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let t = Tmux::start();
    t.wait_for("$", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    t.keys(&[
        &format!("{bin} demo --speed 4 --poll-interval 2s --metrics-addr {port}"),
        "Enter",
    ]);
    t.wait_for("sources ok", 30);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(90);
    let text = loop {
        let (_, text) = rt.block_on(get(&addr, "/metrics"));
        let oom = samples(&text, "spark_triage_executor_endings_total")
            .iter()
            .any(|(l, v)| {
                l["app"] == "etl-nightly" && l["cause"] == "container-oom-killed" && *v >= 1.0
            });
        if oom || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    assert!(
        text.contains(r#"app="etl-nightly",cause="container-oom-killed""#),
        "{text}"
    );
    assert!(
        samples(&text, "spark_triage_app_pending_oldest_seconds")
            .iter()
            .any(|(l, v)| l["app"] == "etl-nightly" && *v > 0.0),
        "the oldest wait (the live view's store has no clock of its own to read it by):\n{text}"
    );
    assert!(
        !text.contains("spark_triage_recorder_segments"),
        "the view serves the verdicts, not a recorder's figures:\n{text}"
    );
    // Which build answers; how fresh the view is (a view left running for weeks).
    assert_eq!(
        samples(&text, "spark_triage_build_info"),
        [(
            BTreeMap::from([("version".to_owned(), env!("CARGO_PKG_VERSION").to_owned())]),
            1.0
        )],
        "{text}"
    );
    let age = samples(&text, "spark_triage_view_last_full_list_age_seconds");
    assert!(
        age.len() == 1 && age[0].1.is_finite() && age[0].1 >= 0.0,
        "{age:?}\n{text}"
    );
    // Every executor state of every app, 0 when none is in it.
    let states: Vec<String> = samples(&text, "spark_triage_app_executors")
        .into_iter()
        .filter(|(l, _)| l["app"] == "etl-nightly")
        .map(|(l, _)| l["state"].clone())
        .collect();
    for state in [
        "pending",
        "running",
        "succeeded",
        "failed",
        "deleted",
        "terminating",
        "unknown",
    ] {
        assert!(states.iter().any(|s| s == state), "{state} in {states:?}");
    }
    process_figures(&text);
    rt.block_on(promtool_check(&text));
    t.keys(&["q"]);
    t.assert_restored("after the view with --metrics-addr");
}
