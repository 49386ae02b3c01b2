//! The driver REST view through the real binary against the simulator: each disagreement
//! between pods and the driver's executor list yields its finding, executors deleted before
//! spark-triage started keep Spark's reason, and every way the driver's API can be out of
//! reach is a clear degraded state.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::Value;

use super::common::{client, eventually, phase, start_sim, status_json, triage};

async fn status(kc: &str, extra: &[&str]) -> Value {
    let fast = ["--poll-interval", "2s", "--driver-poll-interval", "2s"];
    status_json(kc, &[&fast[..], extra].concat()).await
}

fn app<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["apps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["app_name"] == name)
        .unwrap_or_else(|| panic!("no app {name} in {doc}"))
}

fn findings(app: &Value) -> BTreeMap<i64, Vec<String>> {
    app["executors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_i64().unwrap(),
                e["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

async fn drivers_running(pods: &Api<Pod>) {
    eventually(30, "the scenario's drivers running", || async {
        let l = pods
            .list(&ListParams::default().labels("spark-role=driver"))
            .await
            .ok()?;
        (l.items.len() == 3 && l.items.iter().all(|p| phase(p) == "Running")).then_some(())
    })
    .await;
}

const RECONCILE: [&str; 6] = [
    "driver-lost-pod",
    "unregistered",
    "zombie",
    "heartbeat-timeout",
    "killed-by-driver",
    "driver-removed",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_disagreement_yields_exactly_its_finding() {
    let sim = start_sim("disagreements", 1.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    // Long enough for Spark's own grace before calling a pod lost (missingPodDetectDelta +
    // apiPollingInterval = 60 s) and for a Running pod to count as never registered (60 s).
    let doc = status(&kc, &["--for", "75s"]).await;
    let a = app(&doc, "reconcile");
    let got: BTreeMap<i64, Vec<String>> = findings(a)
        .into_iter()
        .map(|(id, f)| {
            (
                id,
                f.into_iter()
                    .filter(|c| RECONCILE.contains(&c.as_str()))
                    .collect(),
            )
        })
        .collect();
    let want: BTreeMap<i64, Vec<String>> = [
        (1, vec!["driver-lost-pod"]),
        (2, vec!["unregistered"]),
        // Spark's reason has its own code since #15; the zombie is its consequence.
        (3, vec!["heartbeat-timeout", "zombie"]),
        (4, vec!["driver-removed"]),
        // Recorded as "Executor killed by driver.": the running driver's log says it was a
        // heartbeat timeout (Spark 3.5 to 4.3, apache/spark#57494).
        (5, vec!["heartbeat-timeout"]),
        (6, vec![]),
        (7, vec![]),
    ]
    .into_iter()
    .map(|(id, v)| (id, v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(got, want, "{a}");
    let all = findings(a);
    assert!(all[&1].contains(&"deleted".to_owned()), "{:?}", all[&1]);
    assert!(all[&4].contains(&"container-oom-killed".to_owned()));
    let ex = |id: i64| {
        a["executors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(ex(1)["driver"]["active"], true);
    assert_eq!(ex(2)["driver"]["known"], false);
    assert_eq!(
        ex(3)["driver"]["remove_reason"],
        "Executor heartbeat timed out after 120000 ms"
    );
    assert_eq!(
        ex(5)["driver"]["remove_reason"],
        "Executor killed by driver."
    );
    assert_eq!(ex(5)["severity"], "error", "{}", ex(5));
    assert!(
        ex(4)["driver"]["remove_reason"]
            .as_str()
            .unwrap()
            .contains("exited with exit code 137(SIGKILL, possible container OOM)")
    );
    assert_eq!(a["driver_api"]["state"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executors_deleted_before_start_keep_sparks_reason() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    // Executors 7 (container OOM) and 8 (JVM OOM) of etl-nightly come and go.
    eventually(60, "executors 7 and 8 deleted", || async {
        let l = pods
            .list(&ListParams::default().labels("spark-app-name=etl-nightly,spark-role=executor"))
            .await
            .ok()?;
        let ids: Vec<String> = l
            .items
            .iter()
            .filter_map(|p| p.metadata.labels.as_ref()?.get("spark-exec-id").cloned())
            .collect();
        let eleven = ids.iter().any(|i| i == "11");
        (eleven && !ids.iter().any(|i| i == "7" || i == "8")).then_some(())
    })
    .await;
    let doc = status(&sim.kubeconfig.display().to_string(), &[]).await;
    let etl = app(&doc, "etl-nightly");
    let f = findings(etl);
    assert_eq!(
        f[&7],
        vec!["container-oom-killed", "driver-removed"],
        "{etl}"
    );
    assert_eq!(f[&8], vec!["jvm-oom", "driver-removed"], "{etl}");
    let seven = etl["executors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == 7)
        .unwrap();
    assert_eq!(seven["gone"], true);
    assert_eq!(seven["exit_code"], 137);
    assert!(
        seven["summary"]
            .as_str()
            .unwrap()
            .contains("OOMKilled (exit 137)")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_api_out_of_reach_is_a_clear_degraded_state() {
    // services/proxy forbidden.
    let sim = start_sim("mixed", 4.0, &["deny=proxy"]).await;
    let kc = sim.kubeconfig.display().to_string();
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    drivers_running(&pods).await;
    let doc = status(&kc, &[]).await;
    let d = &app(&doc, "etl-nightly")["driver_api"];
    assert_eq!(d["state"], "unavailable");
    assert!(
        d["reason"]
            .as_str()
            .unwrap()
            .starts_with("forbidden: cannot get services/proxy in namespace spark-jobs"),
        "{d}"
    );
    let out = triage(&["status", "--kubeconfig", &kc, "-n", "spark-jobs"])
        .output()
        .await;
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("driver view unavailable: forbidden: cannot get services/proxy"),
        "{table}"
    );
    // Everything else still works.
    assert!(table.contains("container-oom-killed") || table.contains("running"));

    // A driver that is not ready: its pod cannot be scheduled.
    let pending: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "waiting-driver", "labels": {"spark-role": "driver", "spark-app-selector": "spark-waiting", "spark-app-name": "waiting"}},
        "spec": {"nodeSelector": {"pool": "nowhere"},
                 "containers": [{"name": "spark-kubernetes-driver", "image": "apache/spark:4.0.1",
                                 "ports": [{"name": "spark-ui", "containerPort": 4040}]}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pending).await.unwrap();
    let doc = status(&kc, &["--no-driver-api"]).await;
    assert!(
        app(&doc, "waiting").get("driver_api").is_none(),
        "--no-driver-api reads no driver"
    );
    drop(sim);

    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    drivers_running(&pods).await;
    pods.create(&PostParams::default(), &pending).await.unwrap();
    let doc = status(&kc, &[]).await;
    assert_eq!(
        app(&doc, "waiting")["driver_api"]["reason"],
        "driver not ready (pod waiting-driver is Pending)"
    );
    assert_eq!(app(&doc, "etl-nightly")["driver_api"]["state"], "ok");
    drop(sim);

    // A driver that is gone: oom-storm's driver gives up (exit 11).
    let sim = start_sim("oom-storm", 8.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    eventually(90, "the oom-storm driver to fail", || async {
        let l = pods
            .list(&ListParams::default().labels("spark-role=driver"))
            .await
            .ok()?;
        l.items.iter().any(|p| phase(p) == "Failed").then_some(())
    })
    .await;
    let doc = status(&sim.kubeconfig.display().to_string(), &[]).await;
    let apps = doc["apps"].as_array().unwrap();
    let reason = apps[0]["driver_api"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("driver gone (pod ") && reason.ends_with(" is Failed)"),
        "{reason}"
    );
}

/// #15's failure modes, played by the simulator: each executor's ending yields its own
/// finding as the primary cause, through the real binary (`status --for`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_failure_modes_scenario_names_each_ending() {
    let sim = start_sim("failure-modes", 1.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let doc = status(&kc, &["--for", "20s", "-A"]).await;
    let a = app(&doc, "failure-modes");
    let primary = |id: i64| -> String {
        findings(a)
            .get(&id)
            .and_then(|f| f.first().cloned())
            .unwrap_or_else(|| panic!("no findings for executor {id}: {a}"))
    };
    for (id, want) in [
        (1, "admission-rejected"),
        (2, "local-storage-exceeded"),
        (3, "node-shutdown"),
        (4, "container-status-unknown"),
        (5, "block-manager-reregistration"),
        (6, "class-not-found"),
        (7, "driver-unreachable"),
        (8, "container-oom-killed"),
    ] {
        assert_eq!(primary(id), want, "executor {id}: {a}");
    }
    // Judged against the limit it had when it died, not the one a resize wrote in its spec.
    let oom = a["executors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == 8)
        .map(|e| e["summary"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    assert!(
        oom.contains("at its 1408Mi memory limit (its spec asks 2Gi: a resize not applied)"),
        "{oom}"
    );
    // Spark counts each of them (4.0.1 apps count failures).
    let counted = a["executors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["id"].as_i64().is_some_and(|id| id <= 7) && e["spark"]["counted"] == true)
        .count();
    assert_eq!(counted, 7, "{a}");
    // The quota-starved app: two executors fit its namespace's ResourceQuota, the API server
    // refuses the others' pods, and only the quota's status says so.
    let q = app(&doc, "quota-starved");
    assert_eq!(q["executors"].as_array().unwrap().len(), 2, "{q}");
    let f = &q["findings"][0];
    assert_eq!(f["code"], "quota-exhausted", "{q}");
    assert_eq!(f["severity"], "error", "{q}");
    assert_eq!(
        f["summary"],
        "2 of 4 executors: quota spark-quota rejects the rest (requests.cpu: used 3 of 3, an executor asks 1)"
    );
}

/// #58: a driver whose REST API never answers holds nothing. `status` answers with the
/// pods' verdicts of every app and the other drivers read, and says that driver is still
/// reading: not the read's own timeout ("did not answer within 10 s"), which it would
/// have waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_driver_holds_no_first_view() {
    let sim = start_sim("mixed", 4.0, &["silent-driver=etl-nightly-"]).await;
    let kc = sim.kubeconfig.display().to_string();
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    drivers_running(&pods).await;
    // The silent one is never waited for (its own read's 10 s timeout would say "did not
    // answer within 10 s"); the other two answer at once, though a loaded machine may need
    // a second look for them.
    let doc = eventually(30, "the two answering drivers read", || async {
        let doc = status(&kc, &[]).await;
        let silent = &app(&doc, "etl-nightly")["driver_api"];
        assert_eq!(silent["state"], "unavailable", "{silent}");
        assert!(
            silent["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("no answer yet: its REST API had not answered")),
            "{silent}"
        );
        ["adhoc-analysis", "streaming-sessions"]
            .iter()
            .all(|a| app(&doc, a)["driver_api"]["state"] == "ok")
            .then_some(doc)
    })
    .await;
    // The silent driver's app has its pods and their verdicts all the same.
    let etl = app(&doc, "etl-nightly");
    assert!(
        etl["executors"].as_array().is_some_and(|e| e.len() >= 8),
        "{etl}"
    );
    let out = triage(&["status", "--kubeconfig", &kc, "-n", "spark-jobs"])
        .output()
        .await;
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("no answer yet"), "{table}");
}
