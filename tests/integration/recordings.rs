//! Recordings end to end: record and live status agree; the shipped recordings replay into
//! stable reports; bad files get clear messages.

use std::collections::BTreeSet;

use serde_json::Value;

use super::common::{start_sim, triage};

/// The apps by id, without the moments the driver's REST API was read: the live `status`
/// and the recorder are two processes that each read it on their own 10 s schedule, so
/// the same answer can carry read times a second apart (seen in CI).
fn sorted_apps(doc: &Value) -> Vec<Value> {
    fn forget_read_times(v: &mut Value) {
        if let Some(m) = v.as_object_mut() {
            for key in ["driver", "driver_api"] {
                if let Some(d) = m.get_mut(key).and_then(Value::as_object_mut) {
                    d.remove("at");
                    d.remove("last_ok");
                }
            }
            for (_, child) in m.iter_mut() {
                forget_read_times(child);
            }
        } else if let Some(a) = v.as_array_mut() {
            a.iter_mut().for_each(forget_read_times);
        }
    }
    let mut apps = doc["apps"].as_array().cloned().unwrap_or_default();
    apps.sort_by_key(|a| a["app_id"].as_str().unwrap_or_default().to_owned());
    apps.iter_mut().for_each(forget_read_times);
    apps
}

/// Where two JSON documents differ, as `path: left != right` lines (a failure that only
/// said "not equal" over two 30 kB documents could not be read in CI's log).
fn json_differences(path: &str, left: &Value, right: &Value, out: &mut Vec<String>) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            let keys: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
            for k in keys {
                let (a, b) = (
                    l.get(k).unwrap_or(&Value::Null),
                    r.get(k).unwrap_or(&Value::Null),
                );
                json_differences(&format!("{path}.{k}"), a, b, out);
            }
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (i, (a, b)) in l.iter().zip(r).enumerate() {
                json_differences(&format!("{path}[{i}]"), a, b, out);
            }
        }
        (a, b) if a != b => out.push(format!("{path}: {a} != {b}")),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_of_a_recording_at_its_end_equals_live_status() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let file = std::env::temp_dir().join(format!("st-roundtrip-{}.ndjson.zst", std::process::id()));
    let file_s = file.display().to_string();
    let live_args = [
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "25s",
        "--poll-interval",
        "2s",
        "-o",
        "json",
    ];
    let rec_args = [
        "record",
        &file_s,
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--duration",
        "25s",
        "--poll-interval",
        "2s",
    ];
    let live = triage(&live_args).run();
    let rec = triage(&rec_args).run();
    let ((lc, lout, lerr), (rc, _, rerr)) = tokio::join!(live, rec);
    assert_eq!(lc, 0, "{lerr}");
    assert_eq!(rc, 0, "{rerr}");
    assert!(
        rerr.contains("events") && rerr.contains("3 apps"),
        "a progress line: {rerr}"
    );
    // Without a terminal: plain lines (the first, one a minute, the last), no `\r` flood.
    assert!(!rerr.contains('\r'), "{rerr:?}");
    let lines = rerr.lines().filter(|l| l.starts_with("recording ")).count();
    assert_eq!(lines, 2, "the first and the last line in 25 s: {rerr}");
    let (sc, sout, serr) = triage(&["status", "--recording", &file_s, "-o", "json"])
        .run()
        .await;
    assert_eq!(sc, 0, "{serr}");
    let live: Value = serde_json::from_str(&lout).unwrap();
    let replayed: Value = serde_json::from_str(&sout).unwrap();
    let (replayed_apps, live_apps) = (sorted_apps(&replayed), sorted_apps(&live));
    let mut differences = Vec::new();
    json_differences(
        "",
        &Value::from(replayed_apps),
        &Value::from(live_apps),
        &mut differences,
    );
    assert!(
        differences.is_empty(),
        "the recording's status differs from live status at:\n{}",
        differences.join("\n")
    );
    // --at inside the recording: the executors OOM-killed by the end are not yet at 1 s.
    let (early_code, early, early_err) =
        triage(&["status", "--recording", &file_s, "--at", "1s", "-o", "json"])
            .run()
            .await;
    assert_eq!(early_code, 0, "{early_err}");
    assert!(!early_err.contains("warning"), "{early_err}");
    // Past the end: the end's state, and a warning that says so.
    let (code, _, late_err) = triage(&[
        "status",
        "--recording",
        &file_s,
        "--at",
        "10h",
        "-o",
        "json",
    ])
    .run()
    .await;
    assert_eq!(code, 0, "{late_err}");
    assert!(
        late_err.starts_with("warning: \"10h\" (")
            && late_err.contains("is after the recording's end ("),
        "{late_err}"
    );
    let early: Value = serde_json::from_str(&early).unwrap();
    // (app, executor) with the container OOM kill among its findings.
    let oom_killed = |v: &Value| -> BTreeSet<(String, i64)> {
        v["apps"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|a| {
                let app = a["app_id"].as_str().unwrap_or_default().to_owned();
                a["executors"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| {
                        e["findings"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|f| f == "container-oom-killed")
                    })
                    .map(move |e| (app.clone(), e["id"].as_i64().unwrap()))
            })
            .collect()
    };
    let at_end = oom_killed(&live);
    assert!(
        !at_end.is_empty(),
        "the scenario OOM-kills an executor by the end"
    );
    assert!(
        !early["apps"].as_array().unwrap().is_empty(),
        "the moment at 1 s has the apps: {early}"
    );
    let at_one = oom_killed(&early);
    assert!(
        at_one.len() < at_end.len() && at_one.is_subset(&at_end),
        "at 1 s {at_one:?}, at the end {at_end:?}"
    );
    let _ = std::fs::remove_file(file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_of_the_shipped_recordings() {
    for name in ["mixed", "oom-storm", "churn", "real-spark-oom"] {
        let path = format!("{}/snapshots/{name}.ndjson.zst", env!("CARGO_MANIFEST_DIR"));
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size < 1024 * 1024, "{name} is {size} bytes");
        let (code, md, err) = triage(&["report", &path]).run().await;
        assert_eq!(code, 0, "{err}");
        insta::assert_snapshot!(format!("report_{name}_md"), md);
        let (code, json, err) = triage(&["report", &path, "-o", "json"]).run().await;
        assert_eq!(code, 0, "{err}");
        let doc: Value = serde_json::from_str(&json).unwrap();
        assert!(!doc["apps"].as_array().unwrap().is_empty());
    }
    let (_, md, _) = triage(&[
        "report",
        &format!(
            "{}/snapshots/oom-storm.ndjson.zst",
            env!("CARGO_MANIFEST_DIR")
        ),
    ])
    .run()
    .await;
    assert!(
        md.contains("Driver: Failed") && md.contains("container-oom-killed"),
        "{md}"
    );
    // oom-storm: the driver gave up (exit 11) — the app's verdict says so first.
    assert!(
        md.contains("**Verdict: too many executor failures (11)** (`executor-failures-exceeded`"),
        "{md}"
    );
}

/// The real Spark driver's recording: executor 1 was OOM-killed (a failure Spark counted);
/// 2 vanished, 3 and 4 ended at spark.stop() — none of them a failure, so no churn.
#[tokio::test]
async fn only_failures_make_churn_in_the_real_spark_report() {
    let path = format!(
        "{}/snapshots/real-spark-oom.ndjson.zst",
        env!("CARGO_MANIFEST_DIR")
    );
    let (code, json, err) = triage(&["report", &path, "-o", "json"]).run().await;
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&json).unwrap();
    let app = &doc["apps"][0];
    assert_eq!(app["failures_counted"], 1, "{app}");
    assert_eq!(app["churn_windows"], serde_json::json!([]), "{app}");
    let failures: Vec<i64> = app["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["failure"] == true)
        .map(|f| f["executor"].as_i64().unwrap())
        .collect();
    assert_eq!(failures, vec![1]);
    // That failure is the app's headline (not a plain run), and the first recommendation.
    assert_eq!(app["verdict"]["cause"], "executors-failed");
    assert_eq!(
        app["recommendations"][0]["executor_ids"],
        serde_json::json!([1]),
        "{app}"
    );
}

#[tokio::test]
async fn foreign_newer_and_torn_recordings_get_clear_messages() {
    let dir = std::env::temp_dir().join(format!("st-rec-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let foreign = dir.join("foreign.json");
    std::fs::write(&foreign, "{\"kind\":\"Pod\"}\n").unwrap();
    let (code, _, err) = triage(&["report", foreign.to_str().unwrap()]).run().await;
    assert_eq!(code, 1);
    assert!(
        err.trim().ends_with(
            "is not a spark-triage recording (its first line is not a recording header)"
        ),
        "{err}"
    );
    let newer = dir.join("newer.ndjson");
    std::fs::write(
        &newer,
        "{\"format\":\"spark-triage-recording\",\"version\":7}\n",
    )
    .unwrap();
    let (code, _, err) = triage(&["status", "--recording", newer.to_str().unwrap()])
        .run()
        .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("is a version 7 recording; this spark-triage reads up to version 1"),
        "{err}"
    );
    let fixture = std::fs::read_to_string(format!(
        "{}/tests/fixtures/mixed-session.ndjson",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let torn = dir.join("torn.ndjson");
    std::fs::write(&torn, &fixture[..fixture.len() - 100]).unwrap();
    let (code, out, err) = triage(&[
        "status",
        "--recording",
        torn.to_str().unwrap(),
        "-o",
        "json",
    ])
    .run()
    .await;
    assert_eq!(code, 0, "what can be read is read: {err}");
    assert!(err.contains("warning:") && err.contains("line "), "{err}");
    assert!(serde_json::from_str::<Value>(&out).is_ok());
    let _ = std::fs::remove_dir_all(dir);
}

/// A driver configuration full of secrets: the recording, `status -o json` and `report`
/// never hold them; the driver's other settings are kept as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_a_drivers_config_never_reach_a_recording_or_an_output() {
    let secrets = [
        ("spark.authenticate.secret", "S3CRET-auth-7f2a"),
        ("spark.hadoop.fs.s3a.secret.key", "S3CRET-s3a-91bc"),
        ("spark.hadoop.fs.s3a.access.key", "AKIA-S3CRET-0042"),
        (
            "spark.kubernetes.driverEnv.DB_PASSWORD",
            "S3CRET-db-hunter2",
        ),
        ("spark.executorEnv.API_TOKEN", "S3CRET-token-55e1"),
        (
            "spark.redaction.regex",
            "(?i)secret|password|token|access[.]?key|jdbc",
        ),
        (
            "spark.sql.catalog.url",
            "jdbc:postgresql://db/x?user=a&S3CRET-jdbc-pw",
        ),
    ];
    let sim = super::common::start_sim_with("mixed", 4.0, &[], |o| {
        for app in &mut o.scenario.apps {
            app.conf = secrets
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
        }
    })
    .await;
    let kc = sim.kubeconfig.display().to_string();
    let dir = std::env::temp_dir().join(format!("st-redact-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain = dir.join("r.ndjson");
    let plain_s = plain.display().to_string();
    let record = |duration: &'static str| {
        let args = [
            "record",
            &plain_s,
            "--kubeconfig",
            &kc,
            "-A",
            "--duration",
            duration,
            "--poll-interval",
            "2s",
        ];
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            triage(&args).run().await
        }
    };
    let (rc, _, rerr) = record("6s").await;
    assert_eq!(rc, 0, "{rerr}");
    let text = std::fs::read_to_string(&plain).unwrap();
    assert!(
        text.contains("driver-config") && text.contains("*********(redacted)"),
        "the recording holds the (redacted) driver configs"
    );
    assert!(
        text.contains(r#""spark.kubernetes.executor.deleteOnTermination":"true""#),
        "settings that are not secret are kept"
    );
    // Recording over an existing file needs --force.
    let (again, _, aerr) = record("1s").await;
    assert_eq!(again, 1, "{aerr}");
    assert!(aerr.contains("exists; not overwriting it"), "{aerr}");
    let (st, status, serr) = triage(&["status", "--kubeconfig", &kc, "-A", "-o", "json"])
        .run()
        .await;
    assert_eq!(st, 0, "{serr}");
    let (mc, report, merr) = triage(&["report", &plain_s]).run().await;
    assert_eq!(mc, 0, "{merr}");
    let (jc, report_json, jerr) = triage(&["report", &plain_s, "-o", "json"]).run().await;
    assert_eq!(jc, 0, "{jerr}");
    for (what, out) in [
        ("recording", &text),
        ("status", &status),
        ("status stderr", &serr),
        ("report", &report),
        ("report json", &report_json),
        ("record stderr", &rerr),
    ] {
        assert!(!out.contains("S3CRET"), "a secret in the {what}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
