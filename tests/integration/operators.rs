//! Applications before their pods (#56): SparkApplications of the kubeflow and Apache
//! operators, played by the simulator (scenario `operators`), through the real binary:
//! `status -o json` and the table, a recording's `report`, and a cluster without the
//! operators' CRDs (nothing asked, nothing changed).

use std::collections::BTreeMap;

use serde_json::Value;
use spark_triage_sim::store::Resource;

use super::common::{app, start_sim, triage};

/// app name → (cause, severity) of every app of a status or report document.
fn verdicts(doc: &Value) -> BTreeMap<String, (String, String)> {
    doc["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .map(|a| {
            let v = &a["verdict"];
            (
                a["app_name"].as_str().unwrap_or_default().to_owned(),
                (
                    v["cause"].as_str().unwrap_or_default().to_owned(),
                    v["severity"].as_str().unwrap_or_default().to_owned(),
                ),
            )
        })
        .collect()
}

/// A submission refused by a quota, an app waiting in Kueue, one pending its rerun: each
/// with its verdict read from the object, none with a pod; beside them an Apache app joined
/// to its pods by the operator's label. The same verdicts from a recording's report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_apps_before_their_pods_have_their_verdicts_live_and_recorded() {
    let sim = start_sim("operators", 8.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let dir = std::env::temp_dir().join(format!("st-operators-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("rec.jsonl");
    let file_s = file.display().to_string();
    let live = [
        "status",
        "--kubeconfig",
        &kc,
        "-A",
        "--for",
        "10s",
        "--poll-interval",
        "1s",
        "--driver-poll-interval",
        "1s",
        "-o",
        "json",
    ];
    let rec = [
        "record",
        &file_s,
        "--kubeconfig",
        &kc,
        "-A",
        "--duration",
        "10s",
        "--poll-interval",
        "1s",
        "--driver-poll-interval",
        "1s",
    ];
    // Arriving a little late, as on-call does: the operator's two submissions of nightly
    // (5 s apart in the scenario, under a second here) are over.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let ((code, out, err), (rc, _, rerr)) = tokio::join!(triage(&live).run(), triage(&rec).run());
    assert_eq!(code, 0, "{err}");
    assert_eq!(rc, 0, "{rerr}");
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));

    let nightly = app(&doc, "nightly");
    let v = &nightly["verdict"];
    assert_eq!(
        (v["cause"].as_str(), v["severity"].as_str()),
        (Some("submission-failed"), Some("error")),
        "{v:#}"
    );
    assert_eq!(v["witness"], "operator");
    assert!(
        v["summary"].as_str().unwrap().contains(
            "the ResourceQuota etl-quota refused the driver pod (requested: requests.cpu=1, used: requests.cpu=0, limited: requests.cpu=500m) (2 submission(s) tried, no more allowed)"
        ),
        "{v:#}"
    );
    // Its resubmission refused too, kubeflow ends it FAILED with spark-submit's words.
    assert_eq!(nightly["operator"]["state"], "FAILED", "{nightly:#}");
    assert_eq!(
        nightly["operator"]["describe"],
        "kubectl describe sparkapplications.sparkoperator.k8s.io -n etl nightly"
    );

    let queued = &app(&doc, "hourly-report")["verdict"];
    assert_eq!(queued["cause"], "admission-waiting", "{queued:#}");
    assert!(
        queued["summary"].as_str().unwrap().contains(
            "(LocalQueue analytics-queue): couldn't assign flavors to pod set driver: insufficient unused quota for cpu in flavor default-flavor, 4 more needed"
        ),
        "{queued:#}"
    );

    // The failed run's driver is kept while kubeflow waits out the retry interval (FAILING):
    // its end is the headline, the rerun to come under it.
    let failed = &app(&doc, "sessionize")["verdict"];
    assert_eq!(failed["cause"], "driver-failed", "{failed:#}");
    let rerun = failed["supporting"]
        .as_array()
        .and_then(|s| s.iter().find(|f| f["code"] == "rerun-pending"))
        .unwrap_or_else(|| panic!("rerun-pending under {failed:#}"));
    assert!(
        rerun["summary"].as_str().unwrap().starts_with(
            "Run 1 failed (driver container failed with ExitCode: 1, Reason: Error); the kubeflow spark-operator reruns it: rerun 1 of 3"
        ),
        "{rerun:#}"
    );

    // A schedule whose run is due (10 s after the first, a minute's grace) and not started:
    // its first run still runs, under Forbid. The run itself is an app of its own.
    let schedule = app(&doc, "features-refresh");
    let v = &schedule["verdict"];
    assert_eq!(
        (v["cause"].as_str(), v["severity"].as_str()),
        (Some("runs-skipped"), Some("error")),
        "{schedule:#}"
    );
    let summary = v["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("The run due at ")
            && summary.contains(" has not started: the last run features-refresh-")
            && summary.ends_with(
                " is still RUNNING and concurrencyPolicy is Forbid, so the operator skips every run due until it ends"
            ),
        "{v:#}"
    );
    assert_eq!(
        schedule["operator"]["describe"],
        "kubectl describe scheduledsparkapplications.sparkoperator.k8s.io -n ml features-refresh"
    );
    assert_eq!(schedule["operator"]["kind"], "ScheduledSparkApplication");
    let run = app(&doc, "features");
    assert_eq!(run["verdict"]["cause"], "app-running", "{run:#}");
    // The run's pods carry its object's name: one app, the object joined to it.
    let last = schedule["operator"]["last_run_name"]
        .as_str()
        .expect("a last run");
    assert_eq!(run["operator"]["name"], last, "{run:#}");
    let runs: Vec<&str> = doc["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .filter_map(|a| a["app_name"].as_str())
        .filter(|n| n.starts_with("features-refresh-"))
        .collect();
    assert!(runs.is_empty(), "a placeholder beside the run: {runs:?}");

    // One app per object: the objects no pod names are apps of their own, the others are
    // their pods' apps (no placeholder beside them).
    let names: Vec<&str> = doc["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .filter_map(|a| a["app_name"].as_str())
        .collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");

    // No pod of the two exists: each is known by its object alone.
    for name in ["nightly", "hourly-report"] {
        let a = app(&doc, name);
        assert!(a["driver"].is_null(), "{a:#}");
        assert_eq!(a["executors"].as_array().map(Vec::len), Some(0), "{a:#}");
    }
    let (pods, _) = sim
        .state
        .store
        .list_all(Resource::Pods, &Default::default());
    let namespaces: Vec<&str> = pods.iter().map(|p| p.namespace()).collect();
    assert!(
        !namespaces
            .iter()
            .any(|ns| ["etl", "analytics"].contains(ns)),
        "{namespaces:?}"
    );

    // The Apache app runs, its pods joined to its object by the operator's label.
    let pi = app(&doc, "pi");
    assert_eq!(pi["verdict"]["cause"], "app-running", "{pi:#}");
    assert_eq!(
        pi["operator"]["api_version"], "spark.apache.org/v1",
        "{pi:#}"
    );
    assert!(
        pi["app_id"].as_str().unwrap().starts_with("spark-"),
        "{pi:#}"
    );

    // A driver whose service account may not create pods: its log says so, nothing else.
    let refused = &app(&doc, "feature-store")["verdict"];
    assert_eq!(
        (refused["cause"].as_str(), refused["witness"].as_str()),
        (Some("executors-refused"), Some("log-tail")),
        "{refused:#}"
    );
    assert!(
        refused["summary"].as_str().unwrap().starts_with(
            "The driver may not create its executors: system:serviceaccount:spark:spark may not create pods in namespace spark"
        ),
        "{refused:#}"
    );
    assert!(
        refused["hint"].as_str().unwrap().contains(
            "kubectl auth can-i create pods --as=system:serviceaccount:spark:spark -n spark"
        ),
        "{refused:#}"
    );

    // What the drivers say of themselves: dynamic allocation asks for six executors where
    // the quota has room for two (its metrics servlet); a streaming query (its jobs) whose
    // executor a batch app's pods preempted.
    let elastic = app(&doc, "elastic-report");
    let v = &elastic["verdict"];
    assert_eq!(
        (v["cause"].as_str(), v["severity"].as_str()),
        (Some("quota-exhausted"), Some("error")),
        "{elastic:#}"
    );
    assert!(
        v["summary"].as_str().unwrap().starts_with(
            "2 of 6 executors dynamic allocation asks for: quota bi-quota rejects the rest"
        ),
        "{v:#}"
    );
    assert_eq!(elastic["dynamic_allocation"]["target"], 6, "{elastic:#}");
    let stream = app(&doc, "clickstream");
    let v = &stream["verdict"];
    assert_eq!(
        (v["cause"].as_str(), v["severity"].as_str()),
        (Some("streaming-preemptible"), Some("error")),
        "{stream:#}"
    );
    assert_eq!(
        v["summary"],
        "streaming app (query clicks): 1 executor preempted by backfill (batch-high = 1000 > priority 0)",
        "{v:#}"
    );
    assert_eq!(stream["streaming"]["name"], "clicks", "{stream:#}");
    // The other streaming app's driver preempted: its end is the headline, the query it
    // stopped and the priority to change under it.
    let sessions = &app(&doc, "sessions")["verdict"];
    assert_eq!(sessions["cause"], "driver-preempted", "{sessions:#}");
    let streaming = sessions["supporting"]
        .as_array()
        .and_then(|s| s.iter().find(|f| f["code"] == "streaming-preemptible"))
        .unwrap_or_else(|| panic!("streaming-preemptible under {sessions:#}"));
    assert_eq!(
        streaming["summary"],
        "streaming app (query sessions): its driver preempted by backfill (batch-high = 1000 > priority 0)",
        "{streaming:#}"
    );
    // The batch app runs no query and has no allocation gauges.
    let batch = app(&doc, "backfill");
    assert!(
        batch["streaming"].is_null() && batch["dynamic_allocation"].is_null(),
        "{batch:#}"
    );

    // The table names the object.
    let (_, table, _) = triage(&["status", "--recording", &file_s]).run().await;
    assert!(
        table.contains("SparkApplication etl/nightly (sparkoperator.k8s.io/v1beta2): FAILED"),
        "{table}"
    );

    // The recording's report says the same.
    let (pc, pout, perr) = triage(&["report", &file_s, "-o", "json"]).run().await;
    assert_eq!(pc, 0, "{perr}");
    let report: Value = serde_json::from_str(&pout).expect("report JSON");
    let live_verdicts = verdicts(&doc);
    let reported = verdicts(&report);
    for name in [
        "nightly",
        "hourly-report",
        "sessionize",
        "features-refresh",
        "elastic-report",
        "clickstream",
        "sessions",
    ] {
        assert_eq!(
            reported.get(name),
            live_verdicts.get(name),
            "{name}: {pout}"
        );
    }
    // The markdown report names the object, and says there is no pod yet.
    let (_, md, _) = triage(&["report", &file_s]).run().await;
    assert!(
        md.contains("## SparkApplication etl/nightly (`nightly`)")
            && md.contains("No pod yet: known from its SparkApplication (`sparkoperator.k8s.io/v1beta2`), state `FAILED`"),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A cluster without the operators' CRDs: discovery is asked once, no SparkApplication is
/// ever requested, and no app gains an operator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_crds_nothing_is_asked_and_nothing_changes() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let (code, out, err) = triage(&[
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "6s",
        "--poll-interval",
        "1s",
        "-o",
        "json",
    ])
    .run()
    .await;
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).expect("JSON");
    assert!(!out.contains("\"operator\""), "{out}");
    assert!(!doc["apps"].as_array().expect("apps").is_empty());
    let log = sim.state.request_log();
    let discovery = log.iter().filter(|r| r.uri == "/apis").count();
    let asked = log
        .iter()
        .filter(|r| r.uri.contains("sparkapplications"))
        .count();
    assert_eq!(
        (discovery, asked),
        (1, 0),
        "discovery once, no SparkApplication asked"
    );
}
