//! `spark-triage explain` through the real binaries, on fixture pods modelled on real objects.

use std::process::{Command, Output};

use serde_json::Value;

use super::common::triage;

const NOW: &str = "2026-11-29T10:30:00Z";

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

fn explain_json(file: &str, extra: &[&str]) -> Value {
    let path = fixture(file);
    let mut args = vec!["explain", path.as_str(), "--output", "json", "--now", NOW];
    args.extend_from_slice(extra);
    json_of(&triage(&args).output_blocking())
}

/// `(state, finding codes)` of the only pod in a fixture.
fn state_and_codes(doc: &Value) -> (String, Vec<String>) {
    let pods = doc["pods"].as_array().expect("pods");
    assert_eq!(pods.len(), 1, "{doc}");
    let p = &pods[0];
    let codes = p["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["code"].as_str().expect("code").to_owned())
        .collect();
    (p["state"].as_str().expect("state").to_owned(), codes)
}

#[test]
fn fixtures_give_the_expected_state_and_findings() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "oomkilled-executor.json",
            "failed",
            &["container-oom-killed"],
        ),
        ("jvm-oom-exit52.yaml", "failed", &["jvm-oom"]),
        (
            "sigterm-143-deleting.json",
            "deleted",
            &["sigterm", "deleted"],
        ),
        ("evicted.yaml", "failed", &["evicted", "node-sigkill"]),
        (
            "preempted.json",
            "deleted",
            &["preempted", "sigterm", "deleted"],
        ),
        ("imagepullbackoff.yaml", "pending", &["image-pull"]),
        ("unschedulable-taint.json", "pending", &["unschedulable"]),
        ("unschedulable-memory.yaml", "pending", &["unschedulable"]),
        (
            "finalizer-deleting.json",
            "deleted",
            &["container-oom-killed", "deleted"],
        ),
        ("sidecar-failed.json", "failed", &["sidecar-failed"]),
        (
            "container-name-mismatch.yaml",
            "succeeded",
            &["stuck-running", "succeeded"],
        ),
    ];
    for (file, state, codes) in cases {
        let (got_state, got_codes) = state_and_codes(&explain_json(file, &[]));
        assert_eq!(
            (got_state.as_str(), got_codes),
            (
                *state,
                codes.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>()
            ),
            "{file}"
        );
    }
}

#[test]
fn json_output_has_the_stable_schema() {
    let doc = explain_json("oomkilled-executor.json", &[]);
    let p = &doc["pods"][0];
    assert_eq!(p["namespace"], "spark-jobs");
    assert_eq!(p["pod"], "etl-nightly-8f3a2b1c9d0e4f5a-exec-7");
    assert_eq!(p["app_id"], "spark-5f2d8c1e9a7b4c3d8e6f0a1b2c3d4e5f");
    assert_eq!(p["role"], "executor");
    assert_eq!(p["executor_id"], 7);
    assert_eq!(p["exit_code"], 137);
    assert_eq!(p["container_reason"], "OOMKilled");
    let f = &p["findings"][0];
    assert_eq!(f["severity"], "error");
    assert!(f["summary"].as_str().unwrap().contains("OOMKilled"));
    assert!(!f["evidence"].as_array().unwrap().is_empty());
    assert!(f["hint"].as_str().unwrap().contains("memoryOverhead"));
    assert_eq!(
        p["spark_view"]["exit_description"],
        "137(SIGKILL, possible container OOM)"
    );
    assert_eq!(p["spark_view"]["caused_by_app"], true);
}

#[test]
fn text_output_reads_well() {
    let path = fixture("oomkilled-executor.json");
    let out = triage(&["explain", &path, "--now", NOW]).output_blocking();
    assert!(out.status.success());
    insta::assert_snapshot!(
        "explain_oomkilled_text",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn deleted_executor_json_snapshot() {
    insta::assert_json_snapshot!(
        "explain_preempted_json",
        explain_json("preempted.json", &[])
    );
}

#[test]
fn container_name_given_as_spark_sees_it() {
    let doc = explain_json(
        "container-name-mismatch.yaml",
        &["--spark-container", "spark-kubernetes-executor"],
    );
    assert_eq!(
        state_and_codes(&doc),
        ("running".to_owned(), vec!["stuck-running".to_owned()])
    );
    assert_eq!(doc["pods"][0]["findings"][0]["severity"], "error");
    let doc = explain_json(
        "container-name-mismatch.yaml",
        &["--spark-container", "executor"],
    );
    assert_eq!(
        state_and_codes(&doc),
        ("succeeded".to_owned(), vec!["succeeded".to_owned()])
    );
}

#[test]
fn check_all_containers_false_keeps_sidecar_failure_running() {
    let doc = explain_json("sidecar-failed.json", &["--check-all-containers", "false"]);
    assert_eq!(
        state_and_codes(&doc),
        ("running".to_owned(), vec!["sidecar-failed".to_owned()])
    );
    assert_eq!(doc["pods"][0]["findings"][0]["severity"], "warn");
}

#[test]
fn kubectl_list_with_driver_placeholder_and_foreign_pods() {
    let path = fixture("kubectl-list.json");
    let out = triage(&["explain", &path, "-o", "json", "--now", NOW]).output_blocking();
    let doc = json_of(&out);
    let pods = doc["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 4);
    assert_eq!(pods[0]["role"], "driver");
    assert_eq!(pods[0]["executor_id"], Value::Null);
    assert_eq!(pods[0]["spark_container"], "spark-kubernetes-driver");
    assert_eq!(pods[1]["executor_id"], Value::Null);
    assert!(pods[1]["note"].as_str().unwrap().contains("EXECID"));
    assert_eq!(pods[2]["role"], Value::Null);
    assert!(
        pods[2]["note"]
            .as_str()
            .unwrap()
            .contains("not a Spark pod")
    );
    assert_eq!(pods[3]["executor_id"], 7);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: skipped document 1 item 5: a Service (v1)"),
        "{stderr}"
    );
}

#[test]
fn events_are_matched_by_uid_from_both_apis() {
    let events = fixture("events-corev1.json");
    let doc = explain_json("unschedulable-memory.yaml", &["--events", &events]);
    let ev = doc["pods"][0]["findings"][0]["evidence"].to_string();
    assert!(ev.contains("FailedScheduling x7"), "{ev}");
    let sched = &doc["pods"][0]["findings"][0]["scheduling"];
    assert_eq!(sched[1]["kind"], "insufficient-memory");
    assert_eq!(sched[1]["nodes"], 3);

    let events = fixture("events-v1.yaml");
    let doc = explain_json("unschedulable-taint.json", &["--events", &events]);
    let ev = doc["pods"][0]["findings"][0]["evidence"].to_string();
    assert!(ev.contains("FailedScheduling x12"), "{ev}");

    let events = fixture("events-corev1.json");
    let doc = explain_json("imagepullbackoff.yaml", &["--events", &events]);
    let summary = doc["pods"][0]["findings"][0]["summary"].as_str().unwrap();
    assert!(summary.contains("rate-limiting"), "{summary}");
}

#[test]
fn reads_stdin_and_yaml_streams() {
    let pod = std::fs::read(fixture("jvm-oom-exit52.yaml")).unwrap();
    let mut two = pod.clone();
    two.extend_from_slice(b"---\n");
    two.extend_from_slice(&std::fs::read(fixture("imagepullbackoff.yaml")).unwrap());
    let doc = json_of(
        &triage(&["explain", "-", "-o", "json", "--now", NOW])
            .stdin(&two)
            .output_blocking(),
    );
    assert_eq!(doc["pods"].as_array().unwrap().len(), 2);
    // FILE omitted and stdin not a terminal: stdin is read
    let doc = json_of(
        &triage(&["explain", "-o", "json", "--now", NOW])
            .stdin(&pod)
            .output_blocking(),
    );
    assert_eq!(doc["pods"][0]["exit_code"], 52);
}

fn failure(out: &Output) -> (i32, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stderr)
}

#[test]
fn bad_input_gives_one_clear_line_and_exit_1() {
    let (code, err) = failure(&triage(&["explain", "/nonexistent/pod.json"]).output_blocking());
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("spark-triage: cannot read /nonexistent/pod.json: "),
        "{err}"
    );

    let (code, err) = failure(
        &triage(&["explain", "-"])
            .stdin(b"{\"kind\": \"Pod\",\n  \"metadata\": {\"name\": }")
            .output_blocking(),
    );
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "spark-triage: stdin: not valid JSON: expected value at line 2, column 24"
    );

    let (code, err) = failure(
        &triage(&["explain", "-"])
            .stdin(b"kind: Pod\nmetadata:\n  name: [unclosed\n")
            .output_blocking(),
    );
    assert_eq!(code, 1);
    assert!(
        err.starts_with("spark-triage: stdin: not valid YAML: ") && err.contains(" at line "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let (code, err) = failure(
        &triage(&["explain", "-"])
            .stdin(br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#)
            .output_blocking(),
    );
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "spark-triage: stdin: document 1 is a Deployment (apps/v1), not a Pod or a List of pods"
    );

    let (code, err) = failure(&triage(&["explain", "-"]).stdin(b"").output_blocking());
    assert_eq!(code, 1);
    assert!(err.contains("empty input"), "{err}");
}

#[test]
fn a_malformed_item_is_reported_and_the_rest_explained() {
    let good = std::fs::read_to_string(fixture("oomkilled-executor.json")).unwrap();
    let input = format!(
        r#"{{"kind":"List","apiVersion":"v1","items":[{good},{{"kind":"Pod","metadata":{{"name":"bad","namespace":"x","labels":"oops"}}}}]}}"#
    );
    let out = triage(&["explain", "-", "-o", "json", "--now", NOW])
        .stdin(input.as_bytes())
        .output_blocking();
    let (code, err) = failure(&out);
    assert_eq!(code, 1, "data was lost, so not success");
    assert!(
        err.contains("error: skipped document 1 item 2 (x/bad): not a valid Pod: metadata.labels: invalid type"),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["pods"].as_array().unwrap().len(), 1);
}

#[test]
fn usage_errors_exit_2() {
    let (code, err) = failure(&triage(&["explain", "x", "--output", "xml"]).output_blocking());
    assert_eq!(code, 2, "{err}");
    let (code, err) =
        failure(&triage(&["explain", "x", "--check-all-containers", "maybe"]).output_blocking());
    assert_eq!(code, 2, "{err}");
    let (code, _) = failure(&triage(&["no-such-command"]).output_blocking());
    assert_eq!(code, 2);
    let out = triage(&["--help"]).output_blocking();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn kubectl_plugin_binary_names_itself_as_the_plugin() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-spark_triage"))
        .arg("--help")
        .output()
        .expect("run plugin");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: kubectl spark-triage"), "{help}");
    let path = fixture("oomkilled-executor.json");
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-spark_triage"))
        .args(["explain", &path, "-o", "json"])
        .output()
        .expect("run plugin");
    assert_eq!(json_of(&out)["pods"][0]["exit_code"], 137);
}

/// `kubectl get pods -o yaml` of 20,000 executor pods (a List, ~90 MB) is read whole; the
/// same shape as multi-document YAML too; the billion-laughs file is still refused.
#[test]
fn yaml_at_kubectl_scale_is_read_and_an_alias_bomb_is_not() {
    let pod = std::fs::read_to_string(fixture("jvm-oom-exit52.yaml")).unwrap();
    let item: String = pod
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("- {l}\n")
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    let n = 20_000;
    let mut list = String::from("apiVersion: v1\nitems:\n");
    for i in 0..n {
        // Distinct names, as kubectl's output has.
        list.push_str(&item.replacen("name: ", &format!("name: p{i}-"), 1));
    }
    list.push_str("kind: List\nmetadata:\n  resourceVersion: \"\"\n");
    let out = triage(&["explain", "-", "--now", NOW, "-o", "json"])
        .stdin(list.as_bytes())
        .output_blocking();
    let doc = json_of(&out);
    assert_eq!(doc["pods"].as_array().map(Vec::len), Some(n));

    let docs: String = (0..2_000)
        .map(|i| {
            format!(
                "---\n{}",
                pod.replacen("name: ", &format!("name: d{i}-"), 1)
            )
        })
        .collect();
    let out = triage(&["explain", "-", "--now", NOW, "-o", "json"])
        .stdin(docs.as_bytes())
        .output_blocking();
    assert_eq!(json_of(&out)["pods"].as_array().map(Vec::len), Some(2_000));

    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (prev, name) in ["a", "b", "c", "d", "e", "f", "g", "h"]
        .windows(2)
        .map(|w| (w[0], w[1]))
    {
        bomb.push_str(&format!("{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
    }
    bomb.push_str("i: [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n");
    let (code, err) = failure(
        &triage(&["explain", "-"])
            .stdin(bomb.as_bytes())
            .output_blocking(),
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not valid YAML"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A termination message with escape sequences (a title change, a screen clear) reaches
/// the terminal as visible text, never as control characters.
#[test]
fn control_characters_from_the_cluster_are_escaped_in_text_output() {
    let pod = std::fs::read_to_string(fixture("oomkilled-executor.json")).unwrap();
    let mut v: Value = serde_json::from_str(&pod).unwrap();
    let hostile = "boom\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m";
    for cs in v["status"]["containerStatuses"].as_array_mut().unwrap() {
        cs["state"]["terminated"]["message"] = Value::String(hostile.into());
        cs["lastState"] = serde_json::json!({});
    }
    v["metadata"]["name"] = Value::String("exec-\u{1b}[31mred".into());
    let out = triage(&["explain", "-", "--now", NOW])
        .stdin(serde_json::to_string(&v).unwrap().as_bytes())
        .output_blocking();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains(|c: char| c.is_control() && c != '\n' && c != '\t'),
        "{text:?}"
    );
    assert!(text.contains("exec-\\u{1b}[31mred"), "{text}");
}

/// The driver-OOM case: a Spark 3.4 driver pod OOMKilled, its three executors deleted by
/// the garbage collector after it. The driver gets driver advice; each executor's findings
/// name the driver's end and none says Spark still counts it; the app's verdict names the
/// driver's OOM.
#[test]
fn a_driver_oom_is_the_apps_verdict_and_its_executors_ended_with_it() {
    let doc = explain_json("driver-oom-list.json", &[]);
    let pods = doc["pods"].as_array().expect("pods");
    let driver = &pods[0];
    assert_eq!(driver["role"], "driver");
    let hint = driver["findings"][0]["hint"].as_str().unwrap();
    assert_eq!(driver["findings"][0]["code"], "driver-oom-killed");
    assert!(hint.contains("spark.driver.memoryOverhead=768m"), "{hint}");
    assert!(!hint.contains("spark.executor.memoryOverhead"), "{hint}");
    for e in &pods[1..] {
        let findings = e["findings"].as_array().unwrap();
        assert_eq!(findings[0]["code"], "ended-with-driver", "{e}");
        assert!(
            findings[0]["summary"]
                .as_str()
                .unwrap()
                .contains("the driver ended (OOMKilled, 137)"),
            "{e}"
        );
        assert!(!e.to_string().contains("still counts"), "{e}");
    }
    let apps = doc["apps"].as_array().expect("apps");
    assert_eq!(apps.len(), 1);
    let v = &apps[0]["verdict"];
    assert_eq!(v["cause"], "driver-oom-killed");
    assert_eq!(v["severity"], "error");
    assert_eq!(v["witness"], "pod");
    assert_eq!(v["driver"]["exit_code"], 137);
    assert!(
        v["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "3 executors ended with the driver (not failures of their own)"),
        "{v}"
    );
    let text = String::from_utf8(
        triage(&["explain", &fixture("driver-oom-list.json"), "--now", NOW])
            .output_blocking()
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("verdict [error] driver-oom-killed: The driver's container was OOMKilled"),
        "{text}"
    );
}
