//! Arriving late, as on-call does: `mixed` opened five minutes after its failures. Every
//! surface a person, a dashboard or an agent reads first — `status` (JSON and table), the
//! `report` of a recording, MCP's `list_apps`, the recorder's `/metrics` — names the same
//! worst app first, with the same cause and severity; its first recommendation is an OOM with
//! a concrete value; and the timeline dates the executors that ended before the view started
//! by the cluster's clocks, not by when the view first saw them.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::common::{start_sim, status_json, triage};

type Utc = chrono::DateTime<chrono::Utc>;

/// One MCP tool's answer over stdio (newline-delimited JSON-RPC), as JSON.
fn mcp_calls(kc: &str, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut server = triage(&["mcp", "--kubeconfig", kc, "-n", "spark-jobs"])
        .command_blocking()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp starts");
    let pid = server.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(90));
        let _ = Command::new("kill").args(["-9", &pid]).status();
    });
    let mut stdin = server.stdin.take().expect("stdin");
    let mut out = BufReader::new(server.stdout.take().expect("stdout"));
    let mut line = String::new();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"test","version":"1"}}}}}}"#
    )
    .expect("writes");
    out.read_line(&mut line).expect("reads");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("writes");
    let mut answers = Vec::new();
    for (i, (tool, args)) in calls.iter().enumerate() {
        let call = serde_json::json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        writeln!(stdin, "{call}").expect("writes");
        line.clear();
        out.read_line(&mut line).expect("reads");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        let text = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool}: {v}"));
        answers.push(serde_json::from_str(text).unwrap_or_else(|e| panic!("{tool}: {e}: {text}")));
    }
    drop(stdin);
    let _ = server.wait();
    answers
}

fn names(apps: &Value) -> Vec<String> {
    apps.as_array()
        .expect("apps")
        .iter()
        .map(|a| a["app_name"].as_str().unwrap_or("?").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (a real client's view of the pods' times; .ci/run installs it)"
)]
async fn arriving_late_every_surface_names_the_worst_app_first_with_one_cause() {
    let sim = start_sim("mixed", 25.0, &[]).await;
    let clock = sim.clock();
    // mixed's failures are at 10-25 s, Spark notices the vanished pod by 50 s: five minutes on.
    while clock.elapsed_secs() < 330.0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    clock.set_speed(1.0);
    let kc = sim.kubeconfig.to_str().expect("utf-8").to_owned();

    // status -o json: the app on fire first, its failures as the headline, the budget as
    // numbers, the change to make with its value.
    let doc = status_json(&kc, &[]).await;
    let listed = names(&doc["apps"]);
    assert_eq!(listed[0], "etl-nightly", "{listed:?}");
    let etl = &doc["apps"][0];
    let (cause, severity) = (
        etl["verdict"]["cause"].clone(),
        etl["verdict"]["severity"].clone(),
    );
    assert_eq!(cause, "executors-failed", "{}", etl["verdict"]);
    assert!(severity == "warn" || severity == "error", "{severity}");
    assert_eq!(
        etl["failure_budget"],
        serde_json::json!({"failures_counted": 2, "failures_allowed": 20,
            "limit_from": "default-instances", "spark_version": "4.0.1"})
    );
    assert!(
        etl["verdict"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--conf spark.executor.memoryOverhead=")),
        "{}",
        etl["verdict"]
    );
    // --sort name keeps the old order.
    let by_name = status_json(&kc, &["--sort", "name"]).await;
    assert_eq!(
        names(&by_name["apps"]),
        ["adhoc-analysis", "etl-nightly", "streaming-sessions"]
    );

    // The table: the same app first, the same cause and severity, the budget as numbers.
    let (code, table, err) = triage(&["status", "--kubeconfig", &kc, "-n", "spark-jobs"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(table.starts_with("spark-jobs/etl-nightly "), "{table}");
    let first_app: String = table.split("\n\n").next().unwrap_or_default().to_owned();
    assert!(
        first_app.contains(&format!(
            "verdict [{}] {}:",
            severity.as_str().unwrap(),
            cause.as_str().unwrap()
        )),
        "{first_app}"
    );
    assert!(
        first_app.contains(
            "failures 2/20 allowed (default: max(2 × spark.executor.instances, 3), Spark 4.0.1)"
        ),
        "{first_app}"
    );

    // MCP: list_apps in the same order with the same cause; the timeline by the cluster's
    // clocks.
    let kc2 = kc.clone();
    let answers = tokio::task::spawn_blocking(move || {
        mcp_calls(
            &kc2,
            &[
                ("list_apps", serde_json::json!({})),
                ("timeline", serde_json::json!({"app": "etl-nightly"})),
            ],
        )
    })
    .await
    .expect("mcp");
    let listed_mcp = names(&answers[0]["apps"]);
    assert_eq!(listed_mcp, listed, "list_apps orders as status does");
    let a = &answers[0]["apps"][0];
    assert_eq!(a["verdict"]["cause"], cause);
    assert_eq!(a["verdict"]["severity"], severity);
    assert_eq!(a["failure_budget"], etl["failure_budget"]);

    // Each executor that ended before the view started is dated by the cluster: the same
    // time `status` gives it, from a cluster clock, and the driver's own time of it.
    let (_, driver_times) = super::tui_late::cluster_times(&sim, "etl-nightly").await;
    let lines = answers[1][0]["timeline"].as_array().expect("timeline");
    for id in [7, 8, 10] {
        let about: Vec<&Value> = lines.iter().filter(|l| l["executor"] == id).collect();
        assert!(!about.is_empty(), "executor {id} in {lines:?}");
        let truth = driver_times[&id].1.expect("the driver's time of its end");
        for l in about {
            assert_ne!(l["clock"], "seen", "executor {id}: {l}");
            let at: Utc = l["at"].as_str().unwrap().parse().unwrap();
            assert!(
                (at - truth).num_seconds().abs() <= 1,
                "executor {id}: {l} against the cluster's {truth}"
            );
        }
        let e = etl["executors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap();
        let ended: Utc = e["ended_at"].as_str().unwrap().parse().unwrap();
        assert!(
            (ended - truth).num_seconds().abs() <= 1,
            "executor {id}: {e}"
        );
        assert_ne!(e["ended_at_clock"], "seen", "{e}");
    }

    // The recorder's /metrics: the same app is the worst, its verdict by the same cause;
    // its recording's report: the same app first, and an OOM with a value first to fix.
    let dir = std::env::temp_dir().join(format!("st-headline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (mut rec, addr, _log) = super::flight::recorder_logged(&kc, &dir, &[]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let text = loop {
        let (status, text) = super::flight::get(&addr, "/metrics").await;
        // Its verdicts once its drivers' lists are read too (its first LIST comes before
        // them: the executors known only from the drivers are not known yet then).
        let settled = super::metrics::samples(&text, "spark_triage_app_verdict")
            .iter()
            .any(|(l, _)| l["app"] == "etl-nightly" && l["cause"] == cause);
        if status.contains("200")
            && super::metrics::samples(&text, "spark_triage_app_verdict_severity").len() == 3
            && settled
        {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no verdict {cause} for etl-nightly within 60 s:\n{text}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let severities = super::metrics::samples(&text, "spark_triage_app_verdict_severity");
    let worst = severities.iter().map(|(_, v)| *v).fold(f64::MIN, f64::max);
    let etl_severity = severities
        .iter()
        .find(|(l, _)| l["app"] == "etl-nightly")
        .map(|(_, v)| *v);
    let want = if severity == "error" { 2.0 } else { 1.0 };
    assert_eq!(etl_severity, Some(want), "{text}");
    assert_eq!(etl_severity, Some(worst), "the worst app: {text}");
    assert!(
        super::metrics::samples(&text, "spark_triage_app_verdict")
            .iter()
            .any(|(l, v)| l["app"] == "etl-nightly" && l["cause"] == cause && *v == 1.0),
        "{text}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    rec.start_kill().expect("kill");
    let _ = rec.wait().await;
    let (code, out, err) = triage(&["report", dir.to_str().unwrap(), "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).expect("report JSON");
    let spark_jobs: Vec<&Value> = report["apps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["namespace"] == "spark-jobs")
        .collect();
    assert_eq!(spark_jobs[0]["app_name"], "etl-nightly");
    assert_eq!(spark_jobs[0]["verdict"]["cause"], cause);
    assert_eq!(spark_jobs[0]["verdict"]["severity"], severity);
    let first = &spark_jobs[0]["recommendations"][0];
    assert!(
        ["container-oom-killed", "jvm-oom"].contains(&first["finding"].as_str().unwrap()),
        "{first}"
    );
    assert!(
        first["advice"]
            .as_str()
            .is_some_and(|a| a.contains("--conf spark.executor.memory")),
        "a concrete value: {first}"
    );
    // driver-removed and deleted are evidence, never a recommendation of their own.
    for r in spark_jobs[0]["recommendations"].as_array().unwrap() {
        assert!(
            !["driver-removed", "deleted"].contains(&r["finding"].as_str().unwrap()),
            "{r}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
    drop(sim);
}
