//! `spark-triage status` (the real binary) against the simulator: the mixed scenario's
//! at-rest column, tombstones of executors that came and went, and clear failures.

use std::process::Stdio;

use serde_json::Value;
use spark_triage_sim::kubeconfig_yaml;
use tokio::process::Command;

use super::common::{app, start_sim, triage};

async fn status(args: &[&str]) -> (i32, String, String) {
    triage(&["status"]).args(args).run().await
}

/// A command run without standard input: its exit code, stdout and stderr.
async fn output(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .await
        .expect("the command runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// id → (state, missing, findings)
fn execs(app: &Value) -> std::collections::BTreeMap<i64, (String, bool, Vec<String>)> {
    app["executors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let findings = e["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_owned())
                .collect();
            (
                e["id"].as_i64().unwrap(),
                (
                    e["state"].as_str().unwrap().to_owned(),
                    e["missing"].as_bool().unwrap(),
                    findings,
                ),
            )
        })
        .collect()
}

fn ids(m: &std::collections::BTreeMap<i64, (String, bool, Vec<String>)>, state: &str) -> Vec<i64> {
    m.iter()
        .filter(|(_, (s, missing, _))| s == state && !missing)
        .map(|(id, _)| *id)
        .collect()
}

fn codes(m: &std::collections::BTreeMap<i64, (String, bool, Vec<String>)>, id: i64) -> Vec<&str> {
    m[&id].2.iter().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_for_30s_on_mixed_gives_the_at_rest_column() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let (code, out, err) = status(&[
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "30s",
        "--poll-interval",
        "2s",
        // The pods' own story; the driver's view is tests/integration/driver_view.rs.
        "--no-driver-api",
        "--output",
        "json",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).expect("JSON");

    let etl = app(&doc, "etl-nightly");
    assert_eq!(etl["driver"]["phase"], "Running");
    assert_eq!(etl["delete_on_termination"], true);
    let e = execs(etl);
    assert_eq!(ids(&e, "running"), vec![1, 2, 3, 4, 5, 6, 11, 13], "{e:?}");
    assert_eq!(ids(&e, "pending"), vec![9, 12], "{e:?}");
    // Failed, then deleted by Spark: the verdict is the failure Spark acted on.
    assert_eq!(ids(&e, "failed"), vec![7, 8], "{e:?}");
    assert!(e[&10].1, "executor 10 is missing");
    assert_eq!(etl["counts"]["missing"], 1);
    assert_eq!(codes(&e, 7), vec!["container-oom-killed", "deleted"]);
    assert_eq!(codes(&e, 8), vec!["jvm-oom", "deleted"]);
    assert_eq!(codes(&e, 9), vec!["image-pull"]);
    assert_eq!(codes(&e, 10), vec!["missing"]);
    assert_eq!(codes(&e, 12), vec!["unschedulable"]);
    let seven = etl["executors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == 7)
        .unwrap();
    assert_eq!(
        (
            seven["exit_code"].as_i64(),
            seven["container_reason"].as_str()
        ),
        (Some(137), Some("OOMKilled"))
    );
    let reasons: Vec<(String, i64)> = etl["pending_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["reason"].as_str().unwrap().to_owned(),
                r["count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("ImagePullBackOff".to_owned(), 1),
            ("Insufficient memory".to_owned(), 1)
        ]
    );

    let adhoc = app(&doc, "adhoc-analysis");
    let a = execs(adhoc);
    assert_eq!(ids(&a, "running"), vec![1, 2, 5]);
    assert_eq!(ids(&a, "pending"), vec![6]);
    // Evicted by the kubelet: the pod failed, Spark counted it, then deleted it.
    // Preempted: the scheduler deleted a running pod; Spark saw a deletion.
    assert_eq!(ids(&a, "failed"), vec![3]);
    assert_eq!(ids(&a, "deleted"), vec![4]);
    assert_eq!(codes(&a, 3), vec!["evicted", "deleted"]);
    assert_eq!(codes(&a, 4), vec!["preempted", "sigterm", "deleted"]);
    assert_eq!(codes(&a, 6), vec!["unschedulable"]);
    assert_eq!(
        adhoc["pending_reasons"][0]["reason"],
        "node(s) had untolerated taint {dedicated: gpu}"
    );

    let streaming = app(&doc, "streaming-sessions");
    assert_eq!(
        streaming["delete_on_termination"], false,
        "read from the driver's spark.properties"
    );
    let s = execs(streaming);
    assert_eq!(ids(&s, "running"), vec![1, 2, 4]);
    assert_eq!(ids(&s, "failed"), vec![3]);
    assert_eq!(codes(&s, 3), vec!["heartbeat-failure"]);
    assert_eq!(
        doc["apps"].as_array().unwrap().len(),
        3,
        "non-Spark pods are not apps"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_table_and_clear_failures() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let (code, out, err) = status(&[
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--poll-interval",
        "1s",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("spark-jobs/etl-nightly") && out.contains("ID  STATE"),
        "{out}"
    );
    // A namespace with no Spark apps.
    let (code, out, _) = status(&[
        "--kubeconfig",
        &kc,
        "-n",
        "default",
        "--poll-interval",
        "1s",
    ])
    .await;
    assert_eq!(code, 0);
    assert_eq!(out, "No Spark applications found.\n");
    // Unreachable server: one line, exit 1.
    let dir = std::env::temp_dir().join(format!("st-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dead = dir.join("dead.kubeconfig");
    std::fs::write(&dead, kubeconfig_yaml("http://127.0.0.1:9", "default")).unwrap();
    let (code, _, err) = status(&["--kubeconfig", dead.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    assert!(
        err.starts_with("spark-triage: cannot reach the API server http://127.0.0.1:9/"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // Forbidden to list pods: one line naming it, exit 1.
    let denied = start_sim("empty", 1.0, &["deny=list"]).await;
    let (code, _, err) = status(&[
        "--kubeconfig",
        &denied.kubeconfig.display().to_string(),
        "-A",
    ])
    .await;
    assert_eq!(code, 1);
    assert!(
        err.starts_with("spark-triage: forbidden: pods is forbidden"),
        "{err}"
    );
    // A kubeconfig that does not exist.
    let (code, _, err) = status(&["--kubeconfig", "/nonexistent/kc"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot read the kubeconfig /nonexistent/kc"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_mistakes_exit_1_and_say_what_is_there() {
    let sim = start_sim("mixed", 1.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let fast = [
        "--kubeconfig",
        kc.as_str(),
        "--poll-interval",
        "1s",
        "--no-driver-api",
    ];
    let (code, out, err) = status(&[&fast[..], &["-n", "nope"]].concat()).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("namespace \"nope\" not found")
            && err.contains("Spark applications run in: spark-jobs"),
        "{err}"
    );
    let (code, out, err) =
        status(&[&fast[..], &["-n", "spark-jobs", "--app", "nosuch"]].concat()).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("no application \"nosuch\"") && err.contains("etl-nightly"),
        "{err}"
    );
    // An existing namespace without Spark: exit 0, and where Spark runs on stderr.
    let (code, out, err) = status(&[&fast[..], &["-n", "default"]].concat()).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("No Spark applications found."), "{out}");
    assert!(
        err.contains("Spark applications run in: spark-jobs"),
        "{err}"
    );
    // A selector matching nothing where Spark does run: the selector is named as the reason
    // (it said "no Spark applications in namespace spark-jobs; … run in: spark-jobs").
    let (code, out, err) =
        status(&[&fast[..], &["-n", "spark-jobs", "-l", "team=nobody"]].concat()).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("no Spark applications match -l team=nobody in namespace spark-jobs, though Spark drivers run there"),
        "{err}"
    );
    assert!(!err.contains("run in: spark-jobs"), "{err}");
}

/// A `status` opened five minutes (scenario time) after the `mixed` scenario's failures:
/// every present pod's `created_at` is its `creationTimestamp` as a real client reads it,
/// and the executors that ended before are stamped by the cluster's clocks, minutes before
/// this run's first read (they were stamped with the first read itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_status_dates_everything_by_the_cluster_s_clocks() {
    use k8s_openapi::api::core::v1::Pod;
    let t0 = chrono::Utc::now();
    let sim = start_sim("mixed", 10.0, &[]).await;
    // The scenario's clock: started nine hours back (so that it never runs ahead of the
    // wall clock at 10x for an hour), ten times as fast.
    let sim_now = || t0 - chrono::TimeDelta::hours(9) + (chrono::Utc::now() - t0) * 10;
    // Six minutes of scenario time: its failures come in the first one.
    tokio::time::sleep(std::time::Duration::from_secs(36)).await;
    let pods: kube::Api<Pod> = kube::Api::all(super::common::client(&sim).await);
    let listed = pods.list(&Default::default()).await.unwrap();
    let created: std::collections::BTreeMap<String, String> = listed
        .items
        .iter()
        .map(|p| {
            let t = p.metadata.creation_timestamp.as_ref().unwrap().0;
            (
                p.metadata.name.clone().unwrap(),
                chrono::DateTime::<chrono::Utc>::from_timestamp(t.as_second(), 0)
                    .unwrap()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            )
        })
        .collect();
    let (code, out, err) = status(&[
        "--kubeconfig",
        sim.kubeconfig.to_str().unwrap(),
        "-A",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let first_read =
        chrono::DateTime::parse_from_rfc3339(doc["full_snapshot_at"].as_str().unwrap())
            .unwrap()
            .to_utc();
    let mut present = 0;
    let mut ended = 0;
    for a in doc["apps"].as_array().unwrap() {
        for e in a["executors"].as_array().unwrap() {
            let pod = e["pod"].as_str().unwrap();
            if let Some(c) = created.get(pod) {
                present += 1;
                assert_eq!(e["created_at"].as_str(), Some(c.as_str()), "{e}");
            }
            if let Some(end) = e["ended_at"].as_str() {
                ended += 1;
                let end = chrono::DateTime::parse_from_rfc3339(end).unwrap().to_utc();
                assert_ne!(e["ended_at_clock"], "seen", "{e}");
                assert!(
                    first_read - end > chrono::TimeDelta::minutes(2)
                        && sim_now() - end > chrono::TimeDelta::minutes(2),
                    "ended {end}, first read {first_read}, scenario now {}: {e}",
                    sim_now()
                );
            } else {
                assert!(!e["state"].as_str().unwrap().starts_with("failed"), "{e}");
            }
        }
    }
    assert!(present >= 15, "{present} present pods compared");
    assert!(ended >= 5, "{ended} ended executors");
}

/// kubectl's habit: the cluster flags before the command (`spark-triage -n NS status`)
/// answer with the apps (it failed with "cannot be used with '--namespace'").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_flags_before_the_command_work() {
    let sim = start_sim("mixed", 1.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let (code, stdout, stderr) = triage(&["-n", "spark-jobs", "--kubeconfig", &kc, "status"])
        .args(["--no-driver-api", "--poll-interval", "1s", "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["apps"].as_array().unwrap().len(), 3, "{stdout}");
    assert!(app(&doc, "etl-nightly")["executors"].as_array().is_some());
}

/// The plugin as kubectl runs it: `kubectl spark-triage --kubeconfig F status -A`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (it runs the plugin; .ci/run installs it)"
)]
async fn the_kubectl_plugin_takes_kubectl_s_flags() {
    let sim = start_sim("mixed", 1.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    // kubectl finds the plugin on PATH by its name, as a user's krew install leaves it.
    let bin = std::env::temp_dir().join(format!(
        "st-plugin-{}-{:x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_kubectl-spark_triage"),
        bin.join("kubectl-spark_triage"),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (code, stdout, stderr) = output(
        Command::new("kubectl")
            .args(["spark-triage", "--kubeconfig", &kc, "status", "-A"])
            .args(["--no-driver-api", "--poll-interval", "1s"])
            .env("PATH", path),
    )
    .await;
    let _ = std::fs::remove_dir_all(&bin);
    assert_eq!(code, 0, "{stdout}{stderr}");
    for name in ["etl-nightly", "adhoc-analysis", "streaming-sessions"] {
        assert!(stdout.contains(name), "{name} in:\n{stdout}");
    }
}

/// The table's AGE is the cluster's: an executor's creation (or, once it ended, its ending)
/// plus its AGE is the same moment for every executor of a recording, the moment the status
/// is of (it was absent: a shell user had no times at all without `-o json`).
#[tokio::test]
async fn the_table_s_age_is_the_cluster_s_time_of_each_executor() {
    let session = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mixed-session.ndjson"
    );
    let (code, json, err) = status(&["--recording", session, "-o", "json"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, table, err) = status(&["--recording", session]).await;
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&json).unwrap();
    let time = |v: &Value| {
        v.as_str()
            .map(|t| chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp())
    };
    let mut moments = std::collections::BTreeSet::new();
    let mut checked = 0;
    for a in doc["apps"].as_array().unwrap() {
        let name = a["app_name"].as_str().unwrap();
        let block: Vec<&str> = table
            .split("\n\n")
            .find(|b| b.contains(&format!("/{name} (")))
            .unwrap_or_else(|| panic!("{name} in\n{table}"))
            .lines()
            .collect();
        for e in a["executors"].as_array().unwrap() {
            let pod = e["pod"].as_str().unwrap();
            let row = block
                .iter()
                .find(|l| l.trim_end().ends_with(pod))
                .unwrap_or_else(|| panic!("{pod} in\n{table}"));
            // AGE is the column after STATE, which is one or two words.
            let words: Vec<&str> = row.split_whitespace().collect();
            let at = if words[2].starts_with('(') { 3 } else { 2 };
            let age = match words.get(at + 1) {
                Some(&"ago") => format!("{} ago", words[at]),
                _ => words[at].to_owned(),
            };
            let Some(shown) = super::common::age_seconds(&age) else {
                assert!(age.starts_with('≥') || age == "-", "{pod}: AGE {age:?}");
                continue;
            };
            let from = if age.ends_with("ago") {
                time(&e["ended_at"]).unwrap_or_else(|| panic!("{pod}: ago without ended_at"))
            } else {
                assert!(e["ended_at"].is_null(), "{pod}: ended, AGE {age}");
                time(&e["created_at"]).unwrap_or_else(|| panic!("{pod}: no created_at"))
            };
            moments.insert(from + shown);
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} executors checked:\n{table}");
    let (first, last) = (moments.first().unwrap(), moments.last().unwrap());
    assert!(
        last - first <= 1,
        "every AGE counts to one moment: {moments:?}\n{table}"
    );
}
