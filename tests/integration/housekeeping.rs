//! A namespace's pile of finished driver pods (`drivers-kept`), beside the apps: in
//! `status -o json` and its table, with how many and when the oldest ended.

use serde_json::{Value, json};
use spark_triage_sim::store::Resource;

use super::common::{start_sim, triage};

/// 25 finished spark-submit drivers nobody deleted, the oldest ended 40 days ago.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pile_of_finished_drivers_is_said_beside_the_apps() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let store = &sim.state.store;
    store
        .create(
            Resource::Namespaces,
            "",
            json!({"metadata": {"name": "nightly"}}),
        )
        .expect("namespace");
    // The simulator's clock is the cluster's (the tool's `now`).
    let now = store.clock.now();
    for n in 0..25_i64 {
        // Half an hour more: the status that reads it runs a little later.
        let ended =
            (now - chrono::Duration::days(40 - n) - chrono::Duration::minutes(30)).to_rfc3339();
        let pod = json!({
            "metadata": {"name": format!("etl-{n}-driver"),
                         "labels": {"spark-app-selector": format!("spark-{n:032}"),
                                    "spark-role": "driver", "spark-app-name": "etl"}},
            "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "spark"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [{
                "name": "spark-kubernetes-driver", "image": "spark", "imageID": "",
                "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                         "finishedAt": ended}}}]}
        });
        store
            .create(Resource::Pods, "nightly", pod)
            .expect("driver pod");
    }
    let kc = sim.kubeconfig.display().to_string();
    let args = [
        "status",
        "--kubeconfig",
        &kc,
        "-A",
        "--no-driver-api",
        "--poll-interval",
        "1s",
    ];
    let (code, out, err) = triage(&[&args[..], &["-o", "json"]].concat()).run().await;
    assert!(code == 0 || code == 1, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let kept = doc["housekeeping"]
        .as_array()
        .and_then(|h| h.iter().find(|h| h["namespace"] == "nightly"))
        .unwrap_or_else(|| panic!("no housekeeping for nightly: {doc:#}"));
    assert_eq!(kept["code"], "drivers-kept", "{kept:#}");
    assert_eq!(kept["finished_driver_pods"], 25, "{kept:#}");
    assert!(
        kept["summary"]
            .as_str()
            .unwrap()
            .starts_with("25 finished driver pods kept in nightly, the oldest ended 40d00h ago"),
        "{kept:#}"
    );
    let (_, table, _) = triage(&args).run().await;
    assert!(
        table.contains("Housekeeping (drivers-kept): 25 finished driver pods kept in nightly"),
        "{table}"
    );
}
