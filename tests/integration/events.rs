//! `record --emit-events`: the verdicts as Kubernetes Events on the driver pod, read back
//! with the real kubectl: a storm of 30 OOM kills is one Event with count 30, and a
//! recorder started again (with nothing of the first one's state) updates that Event
//! without counting anyone twice, and without trusting ids planted on it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common::start_sim;
use super::flight::recorder_logged;

/// 30 executors, each OOM-killed by its cgroup at 5 s; Spark allows 100 failures, so it
/// replaces them and the app goes on; their pods are kept (a recorder started later sees
/// them all). The first replacement (31) is OOM-killed at 120 s.
fn storm_scenario(dir: &Path) -> PathBuf {
    let mut fates = String::new();
    for id in 1..=30 {
        fates.push_str(&format!(
            "      - {{executor: {id}, at: 5s, exit: 137, reason: OOMKilled}}\n"
        ));
    }
    // The first replacement, long after: only the second recorder sees it end.
    fates.push_str("      - {executor: 31, at: 120s, exit: 137, reason: OOMKilled}\n");
    let text = format!(
        "name: storm\ndescription: thirty OOM kills at once\nnamespaces: [spark-jobs]\n\
         nodes:\n  - {{name: spark-node, count: 4, cpu: \"64\", memory: 256Gi}}\n\
         apps:\n  - name: storm-app\n    namespace: spark-jobs\n    executors: 30\n    \
         memoryMiB: 2048\n    overheadMiB: 384\n    maxFailures: 100\n    \
         deleteOnTermination: false\n    fates:\n{fates}"
    );
    let path = dir.join("storm.yaml");
    std::fs::write(&path, text).expect("writes");
    path
}

fn kubectl(kc: &Path, cache: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .output()
        .expect("kubectl runs");
    super::common::succeeded(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn storm_events(kc: &Path, cache: &Path) -> Vec<Value> {
    let text = kubectl(
        kc,
        cache,
        &[
            "get",
            "events",
            "-n",
            "spark-jobs",
            "--field-selector",
            "reason=SparkExecutorContainerOOMKilled",
            "-o",
            "json",
        ],
    );
    let v: Value = serde_json::from_str(&text).expect("JSON");
    v["items"].as_array().cloned().unwrap_or_default()
}

/// Waits until the storm is one Event with count `n`, and returns it.
async fn one_event_of(n: u32, kc: &Path, cache: &Path, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let events = storm_events(kc, cache);
        if events.len() == 1 && events[0]["count"] == n {
            return events[0].clone();
        }
        assert!(
            events.len() <= 1,
            "one Event per driver and reason: {events:#?}"
        );
        assert!(
            Instant::now() < deadline,
            "no Event with count {n} in {within:?}: {events:#?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (a real third-party client; .ci/run installs it)"
)]
async fn a_storm_of_30_ooms_is_one_event_on_the_driver_and_a_restart_counts_nobody_twice() {
    let base = std::env::temp_dir().join(format!("st-events-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("cache")).expect("mkdir");
    let cache = base.join("cache");
    let scenario = storm_scenario(&base);
    let sim = start_sim(scenario.to_str().expect("utf-8"), 2.0, &[]).await;
    let kc = sim.kubeconfig.clone();
    let kcs = kc.to_str().expect("utf-8").to_owned();
    let (mut first, _, _log) = recorder_logged(&kcs, &base.join("one"), &["--emit-events"]).await;
    let ev = one_event_of(30, &kc, &cache, Duration::from_secs(90)).await;
    assert_eq!(ev["type"], "Warning");
    assert_eq!(ev["source"]["component"], "spark-triage");
    assert_eq!(ev["involvedObject"]["kind"], "Pod");
    assert_eq!(
        ev["metadata"]["annotations"]["spark-triage.dev/executors"],
        "1-30"
    );
    let message = ev["message"].as_str().expect("message");
    assert!(
        message.starts_with("30 executors of storm-app: OOMKilled (executors 1-30)."),
        "{message}"
    );
    assert!(message.contains("memoryOverhead"), "the hint: {message}");
    let driver = ev["involvedObject"]["name"].as_str().expect("driver");
    assert!(driver.ends_with("-driver"), "{driver}");
    // kubectl describe shows it with the driver's other events.
    let described = kubectl(
        &kc,
        &cache,
        &["describe", "pod", "-n", "spark-jobs", driver],
    );
    let events = described
        .split("Events:")
        .nth(1)
        .expect("an Events section");
    let line = events
        .lines()
        .find(|l| l.contains("SparkExecutorContainerOOMKilled"))
        .unwrap_or_else(|| panic!("{described}"));
    assert!(
        line.contains("(x30 over") && line.contains("spark-triage"),
        "{line}"
    );
    // Another recorder, with none of the first one's state: it finds the Event by its name
    // and the executors it lists, counts nobody again, and adds executor 31 when it ends.
    first.start_kill().expect("SIGKILL");
    let _ = first.wait().await;
    // Meanwhile someone lists every executor id on it (#55: that silenced the real Event):
    // only the ids the store does not contradict are kept.
    let name = ev["metadata"]["name"].as_str().expect("name");
    kubectl(
        &kc,
        &cache,
        &[
            "annotate",
            "event",
            "-n",
            "spark-jobs",
            name,
            "--overwrite",
            "spark-triage.dev/executors=1-100000",
        ],
    );
    let (mut second, _, _log) = recorder_logged(&kcs, &base.join("two"), &["--emit-events"]).await;
    let again = one_event_of(31, &kc, &cache, Duration::from_secs(120)).await;
    assert_eq!(again["metadata"]["name"], ev["metadata"]["name"]);
    assert_eq!(
        again["metadata"]["annotations"]["spark-triage.dev/executors"],
        "1-31"
    );
    let message = again["message"].as_str().expect("message");
    assert!(
        message.starts_with("31 executors of storm-app: OOMKilled (executors 1-31)."),
        "{message}"
    );
    second.start_kill().expect("SIGKILL");
    let _ = second.wait().await;
    let _ = std::fs::remove_dir_all(base);
}
