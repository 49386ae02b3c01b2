//! Post-mortems of runs nobody recorded: `report`, `status --recording` and `replay`'s
//! reader on the event log a real Spark 4.3.0 driver wrote on the simulator (rolling,
//! zstd; tests/fixtures/eventlog/README.md), through the binary.

use super::common::{app, triage};

const LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/eventlog/real-spark-k8s"
);

/// The same test driver's logs in Spark's other codecs (each its own run on the simulator:
/// which executor the OOM kill and the vanish hit depends on the run).
const CODECS: [&str; 3] = ["lz4", "snappy", "none"];

fn executor(app: &serde_json::Value, id: i64) -> &serde_json::Value {
    app["executors"]
        .as_array()
        .expect("executors")
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no executor {id} in {app}"))
}

#[tokio::test]
async fn a_real_sparks_event_log_gives_the_verdicts_its_pods_gave() {
    let (code, out, err) = triage(&["status", "--recording", LOG, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "no warning for a whole log: {err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let app = app(&doc, "real-spark-oom");
    // What the recording of the same run says of executor 2 (scripts/e2e/check.py checks
    // the two agree on every run): OOM-killed, 137, counted.
    let oom = executor(app, 2);
    assert_eq!(oom["findings"][0], "container-oom-killed", "{oom}");
    assert_eq!(oom["exit_code"], 137);
    assert_eq!(oom["container_reason"], "OOMKilled");
    assert_eq!(oom["witness"], "event-log");
    assert_eq!(oom["spark"]["counted"], true);
    // Spark's own missing-pod detection: the pod vanished.
    let vanished = executor(app, 1);
    assert_eq!(vanished["findings"][0], "missing", "{vanished}");
    assert_eq!(vanished["spark"]["counted"], false);
    // Named as Spark's allocator named the pods (spark.kubernetes.executor.podNamePrefix).
    assert!(
        oom["pod"]
            .as_str()
            .is_some_and(|p| p.starts_with("real-spark-oom-") && p.ends_with("-exec-2")),
        "{oom}"
    );
    // The app's headline is the OOM kill, with a value from the log's own environment (no
    // pod was seen); the app's end and the driver's absence are notes under it.
    let v = &app["verdict"];
    assert_eq!(v["cause"], "executors-failed", "{v}");
    assert_eq!(v["severity"], "warn", "{v}");
    assert_eq!(v["witness"], "event-log");
    assert!(
        v["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("1 executor failed: OOMKilled (137)")),
        "{v}"
    );
    assert!(
        v["hint"].as_str().is_some_and(|h| h.contains(
            "From the event log's environment (spark.executor.memory=512m), the overhead is \
             about 384Mi (no overhead factor written: Spark's 0.1): try --conf \
             spark.executor.memoryOverhead=768m."
        )),
        "{v}"
    );
    let notes: Vec<&serde_json::Value> = v["supporting"].as_array().unwrap().iter().collect();
    assert!(
        notes.iter().any(|f| f["code"] == "driver-not-seen"
            && f["summary"]
                .as_str()
                .is_some_and(|s| s.contains("application ended, exit code 0"))),
        "{v}"
    );
    assert_ne!(v["cause"], "dynamic-allocation-shuffle");
    // The budget as numbers, from the log's settings and version.
    assert_eq!(
        app["failure_budget"],
        serde_json::json!({"failures_counted": 1, "failures_allowed": 4,
            "limit_from": "default-instances", "spark_version": "4.3.0"})
    );
}

/// A frozen executor (SIGSTOP) on real Spark 4.3.0: the log removes it three times, "Executor
/// killed by driver." first. The heartbeat timeout written second settles what the first
/// text cannot (apache/spark#57494), and the pod's deletion written last does not make it a
/// routine deletion.
#[tokio::test]
async fn a_frozen_executor_in_a_real_log_is_a_heartbeat_timeout_not_a_kill_or_a_deletion() {
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/eventlog/real-spark-k8s-heartbeat"
    );
    let (code, out, err) = triage(&["status", "--recording", log, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let app = app(&doc, "real-spark-oom");
    let frozen = executor(app, 4);
    assert_eq!(frozen["findings"][0], "heartbeat-timeout", "{frozen}");
    assert_eq!(frozen["severity"], "error", "{frozen}");
    // Spark's own record is the first removal, as its REST API and History Server keep it;
    // the later ones are beside it.
    let d = &frozen["driver"];
    assert_eq!(d["remove_reason"], "Executor killed by driver.", "{d}");
    assert_eq!(
        d["removed_again"][0], "Executor heartbeat timed out after 23671 ms",
        "{d}"
    );
    // The OOM kill still leads the app; the clean replacements stay clean.
    assert_eq!(executor(app, 1)["findings"][0], "container-oom-killed");
    assert_eq!(app["verdict"]["cause"], "executors-failed", "{app}");
    // With only the first text (what the History Server has), it is a kill by the driver
    // that was not a scale-down: dynamic allocation is off in the log's environment.
    let first_only = std::env::temp_dir().join(format!("st-it-hb-{}", std::process::id()));
    std::fs::create_dir_all(&first_only).unwrap();
    let whole = std::fs::read(
        std::fs::read_dir(log)
            .unwrap()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
            .find(|f| f.file_name().to_string_lossy().starts_with("events_"))
            .expect("the log's events file")
            .path(),
    )
    .unwrap();
    let text = String::from_utf8(zstd::decode_all(&whole[..]).expect("zstd")).expect("UTF-8");
    let kept: String = text
        .lines()
        .filter(|l| {
            !(l.contains("SparkListenerExecutorRemoved")
                && l.contains("\"Executor ID\":\"4\"")
                && !l.contains("Executor killed by driver."))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(first_only.join("app-heartbeat"), kept).unwrap();
    let (code, out, err) = triage(&[
        "status",
        "--recording",
        first_only.to_str().unwrap(),
        "-o",
        "json",
    ])
    .run()
    .await;
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let killed = executor(super::common::app(&doc, "real-spark-oom"), 4);
    assert_eq!(killed["findings"][0], "killed-by-driver", "{killed}");
    assert_eq!(killed["severity"], "warn", "{killed}");
    assert!(
        killed["summary"]
            .as_str()
            .is_some_and(|s| s.contains("dynamic allocation is off")),
        "{killed}"
    );
    let _ = std::fs::remove_dir_all(&first_only);
}

#[tokio::test]
async fn report_says_it_read_an_event_log_and_what_that_cannot_know() {
    let (code, md, err) = triage(&["report", LOG]).run().await;
    assert_eq!(code, 0, "{err}");
    assert!(
        md.contains("From Spark's event log (no pods, nodes"),
        "{md}"
    );
    assert!(
        md.contains("| 2 | yes | failed | 137 | container-oom-killed | counted |"),
        "{md}"
    );
    let (code, json, _) = triage(&["report", LOG, "--app", "real-spark-oom", "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(doc["event_log"], true);
    assert_eq!(app(&doc, "real-spark-oom")["failures_counted"], 1);
    let (code, _, err) = triage(&["report", LOG, "--app", "no-such-app"]).run().await;
    assert_eq!(code, 1);
    assert!(
        err.contains("no application named \"no-such-app\""),
        "{err}"
    );
}

#[tokio::test]
async fn a_log_cut_short_is_read_up_to_the_cut_and_a_directory_without_logs_is_refused() {
    let dir = std::env::temp_dir().join(format!("st-it-eventlog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rolling = dir.join("eventlog_v2_spark-cut");
    std::fs::create_dir_all(&rolling).unwrap();
    let src = std::fs::read_dir(LOG)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("eventlog_v2_"))
        .expect("the fixture's log")
        .path();
    let events = std::fs::read_dir(&src)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("events_1_"))
        .expect("its events file")
        .path();
    let bytes = std::fs::read(&events).unwrap();
    // The driver died mid-write: two thirds of the zstd stream, and the status file still
    // in progress.
    std::fs::write(
        rolling.join("events_1_spark-cut.zstd"),
        &bytes[..bytes.len() * 2 / 3],
    )
    .unwrap();
    std::fs::write(rolling.join("appstatus_spark-cut.inprogress"), "").unwrap();
    let path = rolling.to_str().unwrap();
    let (code, md, err) = triage(&["report", path]).run().await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("read up to there"), "the cut is said: {err}");
    assert!(md.contains("real-spark-oom"), "{md}");
    let (code, out, _) = triage(&["status", "--recording", path, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let summary = app(&doc, "real-spark-oom")["verdict"]["summary"].clone();
    assert!(
        summary
            .as_str()
            .is_some_and(|s| s.contains("without the application's end")),
        "{summary}"
    );
    // Neither a recording nor an event log.
    let empty = dir.join("nothing");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "hello\n").unwrap();
    let (code, _, err) = triage(&["report", empty.to_str().unwrap()]).run().await;
    assert_eq!(code, 1);
    assert!(err.contains("holds no recording segments"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_same_runs_logs_in_every_codec_say_the_same() {
    for codec in CODECS {
        let path = format!("{LOG}-{codec}");
        let (code, out, err) = triage(&["status", "--recording", &path, "-o", "json"])
            .run()
            .await;
        assert_eq!(code, 0, "{codec}: {err}");
        assert!(err.is_empty(), "{codec}: {err}");
        let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let app = app(&doc, "real-spark-oom");
        let causes: Vec<(String, bool)> = app["executors"]
            .as_array()
            .expect("executors")
            .iter()
            .map(|e| {
                (
                    e["findings"][0].as_str().unwrap_or("-").to_owned(),
                    e["spark"]["counted"] == true,
                )
            })
            .collect();
        let oom: Vec<_> = causes
            .iter()
            .filter(|(c, _)| c == "container-oom-killed")
            .collect();
        assert_eq!(
            oom,
            [&("container-oom-killed".to_owned(), true)],
            "{codec}: {causes:?}"
        );
        assert!(
            causes.contains(&("missing".to_owned(), false)),
            "{codec}: {causes:?}"
        );
        assert!(
            causes
                .iter()
                .all(|(c, counted)| c == "container-oom-killed" || !counted),
            "{codec}: only the OOM kill counts: {causes:?}"
        );
    }
}

/// Runs the binary, sampling its peak memory (`VmHWM`, KiB) every 20 ms until it exits.
fn run_measured(args: &[&str]) -> (i32, String, String, u64) {
    use std::io::Read;
    let mut child = triage(args)
        .command_blocking()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (
        status.code().unwrap_or(-1),
        out.join().expect("stdout read"),
        err.join().expect("stderr read"),
        peak,
    )
}

#[test]
fn a_log_that_expands_to_gigabytes_costs_time_not_memory() {
    use std::io::Write;
    // A zstd log of 3 KiB that expands to 1 GiB: a start, one line of a gigabyte of zeros,
    // an end (scripts/bench-eventlog.sh's figures hold a 10 GiB one).
    let dir = std::env::temp_dir().join(format!("st-el-bomb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("events.zstd");
    {
        let file = std::fs::File::create(&path).expect("create");
        let mut z = zstd::stream::write::Encoder::new(file, 1).expect("zstd");
        z.write_all(b"{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"4.3.0\"}\n{\"Event\":\"SparkListenerApplicationStart\",\"App Name\":\"bomb\",\"App ID\":\"spark-bomb\",\"Timestamp\":1796323141974,\"User\":\"root\"}\n")
            .expect("write");
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..1024 {
            z.write_all(&zeros).expect("write");
        }
        z.write_all(b"\n{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":1796323241974,\"ExitCode\":3}\n")
            .expect("write");
        z.finish().expect("finish");
    }
    let small = std::fs::metadata(&path).expect("meta").len();
    assert!(small < 1 << 20, "{small} bytes compressed");
    let shown = path.to_string_lossy().into_owned();
    let (code, out, err, peak_kib) = run_measured(&["report", &shown, "-o", "json"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    // The gigabyte line is skipped and said so; the end after it is read.
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.ends_with(": line 3: 1073741824 bytes, over the line limit (--max-line); skipped\n"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(
        doc["apps"][0]["verdict"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("exit code 3")),
        "{doc}"
    );
    // Bounded by the line limit (64 MiB) and the decoder's window, not by the gigabyte.
    assert!(peak_kib > 0, "the peak was sampled");
    assert!(peak_kib < 200 * 1024, "peak RSS {peak_kib} KiB");
}

/// Dynamic allocation's churn in its hostile shape: 30,000 executors each added and removed
/// with a removal reason at the reader's 2 KiB cap (scripts/bench-eventlog-churn.sh's
/// figures hold 2,000,000). `report` and `export --tables` finish, say what they skipped
/// and what the tables lack, and stay under 300 MB.
#[test]
fn a_churn_log_of_long_reasons_is_read_in_bounded_memory_and_says_what_it_skipped() {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("st-el-churn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("churn.zstd");
    {
        let file = std::fs::File::create(&path).expect("create");
        let mut z = zstd::stream::write::Encoder::new(file, 1).expect("zstd");
        let mut t: i64 = 1_796_319_432_067;
        writeln!(
            z,
            "{{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"4.0.1\"}}"
        )
        .expect("write");
        writeln!(z, "{{\"Event\":\"SparkListenerApplicationStart\",\"App Name\":\"churn\",\"App ID\":\"spark-churn\",\"Timestamp\":{t},\"User\":\"root\"}}").expect("write");
        for i in 1..=30_000 {
            t += 50;
            writeln!(z, "{{\"Event\":\"SparkListenerExecutorAdded\",\"Timestamp\":{t},\"Executor ID\":\"{i}\",\"Executor Info\":{{\"Host\":\"10.0.0.1\",\"Total Cores\":1,\"Log Urls\":{{}},\"Attributes\":{{}},\"Resources\":{{}},\"Resource Profile Id\":0}}}}").expect("write");
            let reason = format!(
                "The executor with id {i} exited with exit code 137(SIGKILL, possible container OOM).{}",
                "x".repeat(2048)
            );
            writeln!(z, "{{\"Event\":\"SparkListenerExecutorRemoved\",\"Timestamp\":{},\"Executor ID\":\"{i}\",\"Removed Reason\":\"{reason}\"}}", t + 40).expect("write");
        }
        writeln!(
            z,
            "{{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":{},\"ExitCode\":1}}",
            t + 1000
        )
        .expect("write");
        z.finish().expect("finish");
    }
    let shown = path.to_string_lossy().into_owned();
    let skipped = |err: &str| {
        err.lines().any(|l| {
            l.starts_with("warning: ")
                && l.contains("executors skipped (ids from ")
                && l.contains("the most read of one log")
        })
    };
    let (code, out, err, peak_kib) = run_measured(&["report", &shown, "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(skipped(&err), "the skip is said: {err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let app = &doc["apps"][0];
    let seen = app["executors_seen"].as_u64().expect("executors_seen");
    assert!(seen > 20_000 && seen < 30_000, "{seen} executors read");
    // Every executor read is counted, kept whole or not.
    assert_eq!(app["failures_counted"].as_u64(), Some(seen), "{app}");
    assert!(peak_kib > 0, "the peak was sampled");
    assert!(
        peak_kib < 300_000_000 / 1024,
        "report: peak RSS {peak_kib} KiB"
    );

    let tables = dir.join("tables");
    let (code, _, err, peak_kib) = run_measured(&[
        "export",
        &shown,
        "--tables",
        &tables.to_string_lossy(),
        "--cluster-name",
        "churn",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(skipped(&err), "the skip is said: {err}");
    assert!(err.contains("exported "), "{err}");
    assert!(
        peak_kib < 300_000_000 / 1024,
        "export: peak RSS {peak_kib} KiB"
    );
}

/// A run recorded from its start, and its event log (tests/fixtures/eventlog/README.md).
const RECORDED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/eventlog/recorded"
);

/// The fixture's recording as a tool opened at `from` would have made it: its first LIST
/// holds the pods then present (as last seen before then), then what came after; and no
/// driver reads at all (a driver whose REST API cannot be reached).
fn recorded_late(from: &str, to: &std::path::Path) {
    use std::io::{BufRead, Write};
    let raw = std::fs::File::open(format!("{RECORDED}/session.ndjson.zst")).expect("fixture");
    let lines: Vec<serde_json::Value> =
        std::io::BufReader::new(zstd::stream::read::Decoder::new(raw).expect("zstd"))
            .lines()
            .map(|l| serde_json::from_str(&l.expect("a line")).expect("JSON"))
            .collect();
    let mut header = lines[0].clone();
    let mut last_seen: std::collections::BTreeMap<String, serde_json::Value> = Default::default();
    let mut out = Vec::new();
    let mut started = false;
    for ev in &lines[1..] {
        let at = ev["at"].as_str().expect("at");
        if ev["kind"] == "driver-executors" {
            continue;
        }
        if !started {
            if ev["kind"] == "pod-upserted" {
                last_seen.insert(
                    ev["pod"]["name"].as_str().expect("name").to_owned(),
                    ev["pod"].clone(),
                );
            }
            if at < from || ev["kind"] != "pods-present" {
                continue;
            }
            started = true;
            let pods: Vec<serde_json::Value> = ev["pods"]
                .as_array()
                .expect("pods")
                .iter()
                .filter_map(|p| last_seen.get(p["name"].as_str()?).cloned())
                .collect();
            header["started_at"] = at.into();
            out.push(serde_json::json!({
                "kind": "pods-listed",
                "pods": pods,
                "resource_version": ev["resource_version"],
                "at": at,
            }));
            continue;
        }
        out.push(ev.clone());
    }
    assert!(started, "a LIST after {from}");
    let mut f = std::fs::File::create(to).expect("create");
    for v in std::iter::once(&header).chain(&out) {
        writeln!(f, "{v}").expect("write");
    }
}

#[tokio::test]
async fn an_event_log_beside_a_late_recording_fills_the_executors_it_missed() {
    let dir = std::env::temp_dir().join(format!("st-it-fused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let late = dir.join("late.ndjson");
    // After executor 2's OOM kill (18:58:50) and executor 1's vanishing: the first LIST then.
    recorded_late("2026-12-03T18:58:57", &late);
    let late = late.to_str().unwrap();
    let executor_of = |doc: &serde_json::Value, id: i64| {
        doc["apps"][0]["failures"]
            .as_array()
            .expect("failures")
            .iter()
            .find(|f| f["executor"] == id)
            .cloned()
    };
    let (code, out, err) = triage(&["report", late, "-o", "json"]).run().await;
    assert_eq!(code, 0, "{err}");
    let alone: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        executor_of(&alone, 2),
        None,
        "the late recording never saw executor 2"
    );
    assert_eq!(alone["apps"][0]["failures_counted"], 0, "{alone}");

    let (code, out, err) = triage(&["report", late, "--event-log", RECORDED, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    let fused: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        fused["source"]
            .as_str()
            .is_some_and(|s| s.contains("with the event log")),
        "{}",
        fused["source"]
    );
    let app = &fused["apps"][0];
    // The OOM kill the recording missed, from Spark's own removal text: counted.
    let oom = executor_of(&fused, 2).expect("executor 2 from the log");
    assert_eq!(oom["finding"], "container-oom-killed", "{oom}");
    assert_eq!(oom["exit_code"], 137);
    assert_eq!(oom["counted"], true);
    assert_eq!(app["failures_counted"], 1, "{app}");
    // The vanished one: Spark's missing-pod detection, not a failure.
    let vanished = executor_of(&fused, 1).expect("executor 1 from the log");
    assert_eq!(vanished["finding"], "missing", "{vanished}");
    assert_eq!(vanished["counted"], false);
    // What the recording saw stays the pods' word: executor 4's SIGTERM at the end (it never
    // registered, so the log does not know it) and executor 3's clean exit.
    assert_eq!(
        executor_of(&fused, 4).expect("executor 4")["finding"],
        "sigterm"
    );
    assert_eq!(
        executor_of(&fused, 3).expect("executor 3")["finding"],
        "succeeded"
    );
    // The same verdicts as the recording of the whole run with the same log beside it.
    let whole = format!("{RECORDED}/session.ndjson.zst");
    let (code, out, err) = triage(&["report", &whole, "--event-log", RECORDED, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    let full: serde_json::Value = serde_json::from_str(&out).unwrap();
    for id in [1, 2] {
        let (a, b) = (
            executor_of(&fused, id).unwrap(),
            executor_of(&full, id).unwrap(),
        );
        for k in ["finding", "exit_code", "counted", "failure"] {
            assert_eq!(a[k], b[k], "executor {id}: {k}: {a} vs {b}");
        }
    }
    // A log of another run (outside the recording's span) is left out, and said so.
    let other = format!(
        "{}/tests/fixtures/eventlog/real-spark-k8s",
        env!("CARGO_MANIFEST_DIR")
    );
    let (code, out, err) = triage(&["report", late, "--event-log", &other, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("ran outside the recording") && err.contains("left out"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["apps"].as_array().map(Vec::len), Some(1), "{doc}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_with_the_event_log_dir_explains_executors_that_ended_before_it_started() {
    let sim = super::common::start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let before = super::common::status_json(&kc, &["--poll-interval", "1s"]).await;
    let first = &before["apps"][0];
    let (app_id, name) = (
        first["app_id"].as_str().expect("an app id").to_owned(),
        first["app_name"].as_str().expect("a name").to_owned(),
    );
    let known = |doc: &serde_json::Value, id: i64| {
        app(doc, &name)["executors"]
            .as_array()
            .expect("executors")
            .iter()
            .find(|e| e["id"] == id)
            .cloned()
    };
    assert_eq!(
        known(&before, 900),
        None,
        "the cluster never had executor 900"
    );
    // The app's log, as Spark writes it while it runs (`<app id>.inprogress`): executor 900
    // registered and OOM-killed an hour ago, long before this status.
    let dir = std::env::temp_dir().join(format!("st-it-eldir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ms = |ago: i64| (chrono::Utc::now() - chrono::Duration::seconds(ago)).timestamp_millis();
    let reason = "The executor with id 900 exited with exit code 137(SIGKILL, possible container OOM).\n\nThe API gave the following container statuses:\n\n\t container name: spark-kubernetes-executor\n\t container state: terminated\n\t exit code: 137\n\t termination reason: OOMKilled\n";
    let lines = [
        serde_json::json!({"Event": "SparkListenerLogStart", "Spark Version": "4.3.0"}),
        serde_json::json!({"Event": "SparkListenerApplicationStart", "App Name": name, "App ID": app_id, "Timestamp": ms(4000), "User": "spark"}),
        serde_json::json!({"Event": "SparkListenerExecutorAdded", "Timestamp": ms(3700), "Executor ID": "900", "Executor Info": {"Host": "10.0.0.9", "Total Cores": 2, "Log Urls": {}, "Attributes": {}, "Resources": {}, "Resource Profile Id": 0}}),
        serde_json::json!({"Event": "SparkListenerExecutorRemoved", "Timestamp": ms(3600), "Executor ID": "900", "Removed Reason": reason}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("{app_id}.inprogress")), text).unwrap();
    // Another app's log beside it is not this app's.
    std::fs::write(
        dir.join("spark-someone-else"),
        "{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"4.3.0\"}\n",
    )
    .unwrap();
    let logs = dir.to_str().unwrap();
    let after =
        super::common::status_json(&kc, &["--poll-interval", "1s", "--event-log-dir", logs]).await;
    let oom = known(&after, 900).expect("executor 900, from the event log");
    assert_eq!(oom["findings"][0], "container-oom-killed", "{oom}");
    assert_eq!(oom["exit_code"], 137);
    assert_eq!(oom["witness"], "event-log");
    // The executors the cluster has keep their pods' word: none is called unregistered or
    // lost because the log (an hour old) does not list it.
    for e in app(&after, &name)["executors"]
        .as_array()
        .expect("executors")
    {
        let findings = e["findings"].to_string();
        assert!(
            !findings.contains("unregistered") && !findings.contains("lost-pod"),
            "executor {}: {findings}",
            e["id"]
        );
    }
    // A directory that is not there: the status still answers, and says why the logs were
    // not read.
    let missing = "/nonexistent/spark-events";
    let (code, _, err) = triage(&[
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--event-log-dir",
        missing,
    ])
    .run()
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("event logs") && err.contains("/nonexistent/spark-events"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A FIFO is never opened: named like a log inside a rolling directory (event-log
/// directories are shared mounts) it is passed over with a warning; given as the log itself
/// it is refused. Neither blocks (an open of a FIFO waits for a writer).
#[tokio::test]
async fn a_fifo_where_a_log_is_expected_is_passed_over_or_refused_never_waited_on() {
    let dir = std::env::temp_dir().join(format!("st-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let copy = std::process::Command::new("cp")
        .args(["-r", LOG])
        .arg(&dir)
        .status()
        .expect("cp");
    assert!(copy.success());
    let rolling = std::fs::read_dir(&dir)
        .expect("the copy")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("eventlog_v2_"))
        })
        .expect("a rolling log");
    let app = rolling
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_start_matches("eventlog_v2_")
        .to_owned();
    let fifo = rolling.join(format!("events_2_{app}.zstd"));
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let within = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tokio::time::timeout(std::time::Duration::from_secs(60), triage(&args).run())
            .await
            .expect("an answer, not a wait on the FIFO")
    };
    let (code, out, err) = within(vec!["report".into(), dir.display().to_string()]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("not a regular file") && err.contains("passed over"),
        "{err}"
    );
    assert!(out.contains("spark-triage report"), "{out}");
    let (code, _, err) = within(vec!["report".into(), fifo.display().to_string()]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `report` of a real Spark 4.3 log where an executor was SIGKILLed under a shuffle (and
/// `status --recording` of it): the cost section names it as the cause of the map stage's
/// recomputation, in Markdown and JSON alike.
#[tokio::test]
async fn report_says_what_a_lost_shuffle_output_cost() {
    const COST: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/eventlog/cost/shuffle-loss.json"
    );
    let (code, md, err) = triage(&["report", COST]).run().await;
    assert_eq!(code, 0, "{err}");
    assert!(md.contains("### Cost"), "{md}");
    assert!(
        md.contains("- executor 1, driver removed, lost the shuffle output of stage 0: 4 tasks of stage 0 rerun, stage 1 retried once"),
        "{md}"
    );
    let (code, json, _) = triage(&["report", COST, "-o", "json"]).run().await;
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let cost = &app(&doc, "cost-shuffle-loss")["cost"];
    assert_eq!(cost["losses"][0]["executor"], 1, "{cost}");
    assert_eq!(cost["losses"][0]["rerun_tasks"], 12, "{cost}");
    assert_eq!(cost["losses"][0]["cause"], "driver removed", "{cost}");
    assert_eq!(cost["from"], "event-log");
    let (code, json, _) = triage(&["status", "--recording", COST, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(
        app(&doc, "cost-shuffle-loss")["cost"]["losses"][0]["line"],
        cost["losses"][0]["line"]
    );
    // `--svg FILE`: the drawing beside the report; none to draw from a recording's pods.
    let dir = std::env::temp_dir().join(format!("st-it-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let svg = dir.join("cost.svg");
    let (code, _, err) = triage(&["report", COST, "--svg", svg.to_str().expect("utf-8")])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    let drawing = std::fs::read_to_string(&svg).expect("written");
    assert!(
        drawing.starts_with("<svg ") && drawing.contains("class=\"rerun\""),
        "{drawing}"
    );
    let session = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mixed-session.ndjson"
    );
    let (code, _, err) = triage(&["report", session, "--svg", svg.to_str().expect("utf-8")])
        .run()
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("--svg: no app in"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
