use std::path::{Path, PathBuf};

use spark_triage_core::diagnose::{Code, Witness};

use super::*;
use crate::record::Recording;
use crate::source::SourceEvent;
use crate::store::Store;

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("st-eventlog-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// The logs at `path` as the post-mortem commands read them: a recording.
fn open(path: &Path, max_line: usize, app: Option<&str>) -> Result<Recording, Failure> {
    super::open(path, max_line, app).map(Recording::from)
}

const T0: i64 = 1_796_300_000_000;

/// Spark's removal text for an executor whose container the kernel OOM-killed
/// (`ExecutorPodsLifecycleManager`, 3.3+).
const OOM: &str = "\nThe executor with id 2 exited with exit code 137(SIGKILL, possible container OOM).\n\n\n\nThe API gave the following container statuses:\n\n\n\t container name: spark-kubernetes-executor\n\t container image: apache/spark:4.3.0\n\t container state: terminated\n\t container started at: 2026-12-01T10:00:10Z\n\t container finished at: 2026-12-01T10:01:00Z\n\t exit code: 137\n\t termination reason: OOMKilled\n      ";

/// A Kubernetes app's log: executors 1 and 2 start, 2 is OOM-killed and replaced by 3,
/// dynamic allocation releases 1, 4 starts much later, the app ends with exit code 0 with
/// 3 and 4 still registered.
fn k8s_log() -> String {
    k8s_log_of("4.3.0")
}

fn k8s_log_of(version: &str) -> String {
    let at = |s: i64| T0 + s * 1000;
    let lines = [
        serde_json::json!({"Event": "SparkListenerLogStart", "Spark Version": version}),
        serde_json::json!({"Event": "SparkListenerEnvironmentUpdate", "JVM Information": {},
            "Spark Properties": {"spark.app.name": "etl-nightly", "spark.kubernetes.namespace": "spark-jobs",
                "spark.kubernetes.executor.podNamePrefix": "etl-nightly-0a1b",
                "spark.executor.memory": "4g", "spark.executor.instances": "2",
                "spark.hadoop.fs.s3a.secret.key": "hunter2-not-for-you"},
            "Hadoop Properties": {}, "System Properties": {}, "Classpath Entries": {}}),
        serde_json::json!({"Event": "SparkListenerApplicationStart", "App Name": "etl-nightly",
            "App ID": "spark-0a1b2c", "Timestamp": at(0), "User": "spark"}),
        serde_json::json!({"Event": "SparkListenerExecutorAdded", "Timestamp": at(10), "Executor ID": "1",
            "Executor Info": {"Host": "10.1.0.5", "Total Cores": 2, "Log Urls": {}, "Attributes": {}, "Resources": {}, "Resource Profile Id": 0}}),
        serde_json::json!({"Event": "SparkListenerExecutorAdded", "Timestamp": at(11), "Executor ID": "2",
            "Executor Info": {"Host": "10.1.0.6", "Total Cores": 2, "Log Urls": {}, "Attributes": {}, "Resources": {}, "Resource Profile Id": 0}}),
        serde_json::json!({"Event": "SparkListenerTaskStart", "Stage ID": 0, "Task Info": {"Executor ID": "2"}}),
        serde_json::json!({"Event": "SparkListenerTaskEnd", "Stage ID": 0,
            "Task End Reason": {"Reason": "ExecutorLostFailure", "Executor ID": "2", "Exit Caused By App": true, "Loss Reason": OOM},
            "Task Info": {"Task ID": 1, "Executor ID": "2", "Finish Time": at(60), "Failed": true}}),
        serde_json::json!({"Event": "SparkListenerExecutorRemoved", "Timestamp": at(60), "Executor ID": "2", "Removed Reason": OOM}),
        serde_json::json!({"Event": "SparkListenerExecutorAdded", "Timestamp": at(65), "Executor ID": "3",
            "Executor Info": {"Host": "10.1.0.7", "Total Cores": 2, "Log Urls": {}, "Attributes": {}, "Resources": {}, "Resource Profile Id": 0}}),
        serde_json::json!({"Event": "SparkListenerExecutorRemoved", "Timestamp": at(100), "Executor ID": "1", "Removed Reason": "Executor killed by driver."}),
        serde_json::json!({"Event": "SparkListenerTaskEnd", "Stage ID": 1,
            "Task End Reason": {"Reason": "TaskKilled", "Kill Reason": "another attempt succeeded"},
            "Task Info": {"Task ID": 2, "Executor ID": "3", "Finish Time": at(150), "Failed": false, "Killed": true}}),
        serde_json::json!({"Event": "SparkListenerExecutorAdded", "Timestamp": at(300), "Executor ID": "4",
            "Executor Info": {"Host": "10.1.0.8", "Total Cores": 2, "Log Urls": {}, "Attributes": {}, "Resources": {}, "Resource Profile Id": 0}}),
        serde_json::json!({"Event": "SparkListenerApplicationEnd", "Timestamp": at(400), "ExitCode": 0}),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn store_of(rec: &Recording) -> Store {
    let mut store = Store::default();
    for ev in &rec.events {
        store.apply(ev.clone());
    }
    store
}

#[test]
fn a_kubernetes_apps_log_gives_the_same_verdicts_as_its_pods_would_with_the_event_log_as_witness() {
    let dir = temp_dir("k8s");
    let path = dir.join("spark-0a1b2c");
    std::fs::write(&path, k8s_log()).expect("write");
    let rec = open(&path, 1 << 20, None).expect("an event log");
    assert!(rec.damaged.is_empty(), "{:?}", rec.damaged);
    assert_eq!(rec.header.scope, "namespace spark-jobs");
    let text = serde_json::to_string(&rec.events).expect("json");
    assert!(!text.contains("hunter2"), "a secret was kept");
    let store = store_of(&rec);
    let app = &store.view().apps[&("spark-jobs".to_owned(), "spark-0a1b2c".to_owned())];
    assert_eq!(app.app_name.as_deref(), Some("etl-nightly"));
    assert_eq!(
        app.config.executor_instances,
        Some(2),
        "the configuration was read"
    );
    let oom = &app.executors[&2];
    let cause = oom.verdict.cause().expect("a cause");
    assert_eq!(cause.code, Code::ContainerOomKilled, "{:#?}", oom.verdict);
    assert_eq!(cause.witness, Witness::EventLog);
    assert_eq!(oom.pod.name, "etl-nightly-0a1b-exec-2");
    let spark = oom.verdict.spark.as_ref().expect("Spark's account");
    assert_eq!(spark.exit_code, 137);
    assert!(spark.counted, "Spark counts an OOM kill");
    assert_eq!(spark.witness, Witness::EventLog);
    // Released by dynamic allocation: normal, not counted.
    let released = &app.executors[&1];
    assert!(
        !released.verdict.counted(),
        "{:#?}",
        released.verdict.findings
    );
    // Registered for minutes with no pod (an event log has none): never "Spark still counts
    // it active with no pod"; registered when the app ended: ended with it, not counted.
    for id in [3, 4] {
        let v = &app.executors[&id].verdict;
        assert!(
            !v.has(Code::DriverLostPod),
            "executor {id}: {:#?}",
            v.findings
        );
        assert_eq!(
            v.cause().map(|f| f.code),
            Some(Code::EndedWithDriver),
            "executor {id}: {:#?}",
            v.findings
        );
        assert!(!v.counted(), "executor {id}");
    }
    // A killed task is neither failed nor completed (as Spark's status listener counts).
    let d3 = app.executors[&3]
        .driver
        .as_ref()
        .and_then(|d| d.exec.as_ref())
        .expect("listed");
    assert_eq!((d3.failed_tasks, d3.completed_tasks), (0, 0));
    let lines: Vec<&str> = app.timeline.iter().map(|t| t.text.as_str()).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("application started (Spark 4.3.0, user spark)")),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"application ended, exit code 0"),
        "{lines:?}"
    );
    assert_eq!(app.counted_failures(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_logs_spark_version_rules_its_executors_verdicts() {
    let dir = temp_dir("version");
    let path = dir.join("spark-0a1b2c");
    // Before 4.0 Spark counted no executor failures toward a limit.
    std::fs::write(&path, k8s_log_of("3.5.1")).expect("write");
    let store = store_of(&open(&path, 1 << 20, None).expect("an event log"));
    let app = &store.view().apps[&("spark-jobs".to_owned(), "spark-0a1b2c".to_owned())];
    let oom = &app.executors[&2];
    assert!(oom.verdict.has(Code::ContainerOomKilled));
    let spark = oom.verdict.spark.as_ref().expect("Spark's account");
    assert!(!spark.counted, "{spark:#?}");
    assert_eq!(app.counted_failures(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_in_progress_log_is_read_to_its_last_whole_line_and_says_it_has_no_end() {
    let dir = temp_dir("inprogress");
    let whole = k8s_log();
    // The driver died while writing its removal of executor 1.
    let cut = whole.find("Executor killed by driver").expect("line");
    let path = dir.join("spark-0a1b2c.inprogress");
    std::fs::write(&path, &whole[..cut]).expect("write");
    let rec = open(&path, 1 << 20, None).expect("an event log");
    assert_eq!(rec.damaged.len(), 1, "{:?}", rec.damaged);
    assert!(
        rec.damaged[0].contains("SparkListenerExecutorRemoved"),
        "{:?}",
        rec.damaged
    );
    let store = store_of(&rec);
    let app = &store.view().apps[&("spark-jobs".to_owned(), "spark-0a1b2c".to_owned())];
    assert!(app.executors[&2].verdict.has(Code::ContainerOomKilled));
    let last = app.timeline.back().expect("a line");
    assert!(
        last.text.contains("without the application's end") && last.text.contains("in progress"),
        "{}",
        last.text
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Splits a log into a rolling directory as Spark writes one: `events_<n>_<app>` files
/// (each its own stream) and the `appstatus_<app>[.inprogress]` marker.
fn rolling_dir(parent: &Path, text: &str, parts: usize, done: bool) -> PathBuf {
    let dir = parent.join("eventlog_v2_spark-0a1b2c");
    std::fs::create_dir_all(&dir).expect("dir");
    let lines: Vec<&str> = text.lines().collect();
    for (i, chunk) in lines.chunks(lines.len().div_ceil(parts)).enumerate() {
        let body: String = chunk.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join(format!("events_{}_spark-0a1b2c", i + 1)), body).expect("write");
    }
    let status = if done {
        "appstatus_spark-0a1b2c"
    } else {
        "appstatus_spark-0a1b2c.inprogress"
    };
    std::fs::write(dir.join(status), "").expect("status");
    dir
}

#[test]
fn a_rolling_directory_is_read_in_its_files_order_and_a_directory_of_logs_holds_each() {
    let parent = temp_dir("rolling");
    // A line a file: events_10 sorts after events_9 by number, not by name.
    let log = k8s_log();
    let dir = rolling_dir(&parent, &log, log.lines().count(), true);
    let logs = find(&dir).expect("find");
    assert_eq!(logs.len(), 1);
    assert!(!logs[0].in_progress && !logs[0].compacted);
    let names: Vec<String> = logs[0]
        .files
        .iter()
        .map(|f| f.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(names[9], "events_10_spark-0a1b2c", "{names:?}");
    let rec = open(&dir, 1 << 20, None).expect("read");
    let store = store_of(&rec);
    assert_eq!(store.view().apps.len(), 1);
    // A directory of logs: this rolling one, and a single-file log of another app.
    let other = k8s_log()
        .replace("spark-0a1b2c", "spark-ffff")
        .replace("etl-nightly", "reporting");
    std::fs::write(
        parent.join("spark-ffff.zstd"),
        zstd::encode_all(other.as_bytes(), 3).expect("zstd"),
    )
    .expect("write");
    std::fs::write(parent.join("notes.txt"), "not a log\n").expect("write");
    let logs = find(&parent).expect("find");
    assert_eq!(logs.len(), 2, "{logs:?}");
    let store = store_of(&open(&parent, 1 << 20, None).expect("read"));
    let names: Vec<_> = store
        .view()
        .apps
        .values()
        .filter_map(|a| a.app_name.clone())
        .collect();
    assert_eq!(names, ["etl-nightly", "reporting"]);
    // Compacted: the History Server rewrote files 1..3 into events_3_….compact.
    std::fs::write(
        dir.join("events_3_spark-0a1b2c.compact"),
        k8s_log()
            .lines()
            .take(6)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .expect("write");
    let logs = find(&dir).expect("find");
    assert!(logs[0].compacted);
    assert!(logs[0].files[0].to_string_lossy().ends_with(".compact"));
    let rec = open(&dir, 1 << 20, None).expect("read");
    assert!(
        rec.damaged.iter().any(|d| d.contains("compacted")),
        "{:?}",
        rec.damaged
    );
    let _ = std::fs::remove_dir_all(&parent);
}

#[test]
fn what_is_not_an_event_log_is_told_apart() {
    let dir = temp_dir("foreign");
    std::fs::write(
        dir.join("a.json"),
        "{\"format\":\"spark-triage-recording\"}\n",
    )
    .expect("w");
    std::fs::write(dir.join("b"), [0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3]).expect("w");
    std::fs::write(dir.join("c"), "").expect("w");
    for f in ["a.json", "b", "c"] {
        assert!(find(&dir.join(f)).expect("find").is_empty(), "{f}");
    }
    assert!(find(&dir).expect("find").is_empty());
    let e = open(&dir, 1 << 20, None).expect_err("no log");
    assert!(e.to_string().contains("holds no Spark event log"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_real_spark_logs_of_every_codec_read_alike() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/eventlog/codecs"
    );
    let logs = find(Path::new(dir)).expect("find");
    assert_eq!(logs.len(), 5, "{logs:?}");
    for log in &logs {
        let conv = read(log, 1 << 20).expect("read");
        assert!(
            conv.damaged.is_empty(),
            "{}: {:?}",
            log.name(),
            conv.damaged
        );
        let ended = conv.events.iter().any(|e| {
            matches!(e, SourceEvent::AppNoted { text, .. } if text == "application ended, exit code 0")
        });
        assert!(ended, "{}", log.name());
    }
}
