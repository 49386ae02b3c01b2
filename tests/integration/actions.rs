//! kill, hold and release (the real binary) against the simulator.

use std::process::Stdio;

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use spark_triage_sim::SimHandle;

use super::common::{client, eventually, phase, start_sim, start_sim_with, triage};

#[derive(Debug)]
pub(super) struct Run {
    pub(super) code: i32,
    pub(super) out: String,
    pub(super) err: String,
}

/// The binary on the simulator (`--kubeconfig` its), logging its actions to `log`.
pub(super) async fn act_on(sim: &SimHandle, args: &[&str], log: &std::path::Path) -> Run {
    let (code, out, err) = triage(args)
        .arg("--kubeconfig")
        .arg(&sim.kubeconfig)
        .env("SPARK_TRIAGE_ACTIONS_LOG", log)
        .run()
        .await;
    Run { code, out, err }
}

pub(super) fn temp_log(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "st-actions-{tag}-{}-{:x}.log",
        std::process::id(),
        fastrand::u64(..)
    ))
}

pub(super) fn writes(sim: &SimHandle) -> Vec<String> {
    sim.requests()
        .into_iter()
        .filter(|r| {
            matches!(r.method.as_str(), "DELETE" | "PATCH" | "PUT")
                || (r.method == "POST" && r.uri.contains("/pods"))
        })
        .map(|r| format!("{} {}", r.method, r.uri))
        .collect()
}

async fn executors(pods: &Api<Pod>, app: &str) -> Vec<(i64, Pod)> {
    let mut v: Vec<(i64, Pod)> = pods
        .list(&ListParams::default().labels(&format!("spark-role=executor,spark-app-name={app}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| (p.labels()["spark-exec-id"].parse().unwrap(), p))
        .collect();
    v.sort_by_key(|(id, _)| *id);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_dry_run_selection_refusals_and_a_real_kill() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let log = temp_log("kill");
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    eventually(40, "etl at rest (13 running)", || async {
        executors(&pods, "etl-nightly")
            .await
            .iter()
            .any(|(id, p)| *id == 13 && phase(p) == "Running")
            .then_some(())
    })
    .await;
    let before = writes(&sim).len();

    // An id the app does not have: nothing to do is a failure that says what there is.
    let args = [
        "kill",
        "-n",
        "spark-jobs",
        "--app",
        "etl-nightly",
        "99",
        "--yes",
    ];
    let r = act_on(&sim, &args, &log).await;
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert!(
        r.err
            .contains("no executor of etl-nightly matches; its executor pods: 1, 2, 3"),
        "{}",
        r.err
    );

    // --state pending --older-than: exactly the two pending executors, nothing deleted.
    let r = act_on(
        &sim,
        &[
            "kill",
            "-n",
            "spark-jobs",
            "--app",
            "etl-nightly",
            "--state",
            "pending",
            "--older-than",
            "1s",
            "--dry-run",
        ],
        &log,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    let planned: Vec<&str> = r
        .out
        .lines()
        .filter(|l| l.starts_with("would delete"))
        .collect();
    assert_eq!(planned.len(), 2, "{}", r.out);
    assert!(
        planned[0].contains("-exec-9 (executor 9, pending)")
            && planned[1].contains("-exec-12 (executor 12, pending)"),
        "{}",
        r.out
    );
    assert!(r.out.contains("deleted by a user or the framework"));
    assert_eq!(
        writes(&sim).len(),
        before,
        "a dry run sends no write: {:?}",
        writes(&sim)
    );

    // Not on a terminal and no --yes: refuse.
    let r = act_on(
        &sim,
        &["kill", "-n", "spark-jobs", "--app", "etl-nightly", "1"],
        &log,
    )
    .await;
    assert_eq!(r.code, 1);
    assert!(
        r.err
            .contains("refusing to delete without --yes when not on a terminal"),
        "{}",
        r.err
    );
    // --readonly: refuse, nothing sent.
    let r = act_on(
        &sim,
        &[
            "kill",
            "-n",
            "spark-jobs",
            "--app",
            "etl-nightly",
            "1",
            "--yes",
            "--readonly",
        ],
        &log,
    )
    .await;
    assert_eq!(r.code, 1);
    assert_eq!(
        r.err.trim(),
        "spark-triage: refusing: read-only mode (--readonly)"
    );
    // Refused before any plan is printed (a "will delete" line reads as done).
    assert!(r.out.is_empty(), "{}", r.out);
    assert_eq!(writes(&sim).len(), before, "{:?}", writes(&sim));

    // Another view of the cluster watching while the kill is made (a recorder, a colleague's
    // terminal): it must say the kill was the tool's, not an incident.
    let watcher = triage(&["status", "-n", "spark-jobs", "-o", "json", "--for", "12s"])
        .arg("--kubeconfig")
        .arg(&sim.kubeconfig)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("status starts");
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    // The real thing: executor 1 goes, the Spark-like driver replaces it with id 14.
    let r = act_on(
        &sim,
        &[
            "kill",
            "-n",
            "spark-jobs",
            "--app",
            "etl-nightly",
            "1",
            "--yes",
        ],
        &log,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out.contains("deleted spark-jobs/etl-nightly-") && r.out.contains("-exec-1\n"),
        "{}",
        r.out
    );
    eventually(20, "executor 1 gone and 14 running", || async {
        let e = executors(&pods, "etl-nightly").await;
        (!e.iter().any(|(id, _)| *id == 1)
            && e.iter().any(|(id, p)| *id == 14 && phase(p) == "Running"))
        .then_some(())
    })
    .await;
    // The watcher labels it: killed by spark-triage, by whom; not counted, not a failure,
    // not the app's headline (which stays its two OOMs).
    let watched = watcher.wait_with_output().await.expect("status ends");
    assert!(
        watched.status.success(),
        "{}",
        String::from_utf8_lossy(&watched.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&watched.stdout).expect("JSON");
    let etl = super::common::app(&doc, "etl-nightly");
    let one = etl["executors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == 1)
        .unwrap_or_else(|| panic!("executor 1 in {etl}"));
    assert_eq!(one["findings"][0], "killed-by-spark-triage", "{one}");
    assert_eq!(one["severity"], "info", "{one}");
    assert!(
        ["deleted-by-spark-triage", "terminating"].contains(&one["ending"].as_str().unwrap()),
        "{one}"
    );
    assert_ne!(one["spark"]["counted"], true, "{one}");
    assert!(
        one["summary"]
            .as_str()
            .is_some_and(|s| s.contains("by spark-triage-sim")),
        "{one}"
    );
    assert_eq!(etl["failure_budget"]["failures_counted"], 2, "{etl}");
    assert_eq!(etl["verdict"]["cause"], "executors-failed", "{etl}");
    assert!(
        !etl["verdict"]["summary"]
            .as_str()
            .unwrap()
            .contains("killed"),
        "{etl}"
    );
    // A status started after the pod is gone (no mark left on it): the actions log of this
    // machine says the kill was the tool's; one with another log says what Spark says.
    let later = |log: std::path::PathBuf| {
        let sim = &sim;
        async move {
            let r = act_on(sim, &["status", "-n", "spark-jobs", "-o", "json"], &log).await;
            assert_eq!(r.code, 0, "{}", r.err);
            let doc: serde_json::Value = serde_json::from_str(&r.out).expect("JSON");
            let etl = super::common::app(&doc, "etl-nightly").clone();
            etl["executors"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == 1)
                .cloned()
                .unwrap_or_else(|| panic!("executor 1 in {etl}"))
        }
    };
    let one = later(log.clone()).await;
    assert_eq!(one["findings"][0], "killed-by-spark-triage", "{one}");
    assert!(
        one["summary"]
            .as_str()
            .is_some_and(|s| s.contains("by spark-triage-sim")),
        "{one}"
    );
    assert_ne!(one["spark"]["counted"], true, "{one}");
    let elsewhere = later(temp_log("elsewhere")).await;
    assert_ne!(
        elsewhere["findings"][0], "killed-by-spark-triage",
        "{elsewhere}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("\"user\":\"spark-triage-sim\"")
            && logged.contains("\"namespace\":\"spark-jobs\"")
            && logged.contains(&format!("\"server\":\"127.0.0.1:{}\"", sim.addr.port()))
            && logged.contains("\"context\":\"")
            && logged.contains("\"action\":\"kill\"")
            && logged.contains("\"result\":\"deleted\""),
        "{logged}"
    );
    let _ = std::fs::remove_file(log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_fault_names_the_missing_permission() {
    let sim = start_sim("mixed", 4.0, &["deny=delete,patch"]).await;
    let log = temp_log("deny");
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    eventually(20, "executors", || async {
        (!executors(&pods, "etl-nightly").await.is_empty()).then_some(())
    })
    .await;
    let r = act_on(
        &sim,
        &[
            "kill",
            "-n",
            "spark-jobs",
            "--app",
            "etl-nightly",
            "2",
            "--yes",
        ],
        &log,
    )
    .await;
    assert_eq!(r.code, 1);
    assert_eq!(
        r.err.trim(),
        "spark-triage: missing permission: delete pods in namespace spark-jobs"
    );
    let r = act_on(
        &sim,
        &["hold", "-n", "spark-jobs", "--app", "etl-nightly", "on"],
        &log,
    )
    .await;
    assert_eq!(r.code, 1);
    assert_eq!(
        r.err.trim(),
        "spark-triage: missing permission: patch pods in namespace spark-jobs"
    );
    assert!(
        !sim.requests()
            .iter()
            .any(|r| r.method == "DELETE" || r.method == "PATCH")
    );
}

const HOLD_SCENARIO: &str = "
name: hold-test
namespaces: [spark-jobs]
nodes: [{name: n, cpu: '16', memory: 64Gi}]
apps:
  - name: held-app
    namespace: spark-jobs
    executors: 2
    fates:
      - {executor: 2, at: 6s, exit: 1}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_keeps_a_failed_executor_until_released_and_expired_holds_are_released() {
    let dir = std::env::temp_dir().join(format!("st-hold-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("hold.yaml");
    std::fs::write(&scenario, HOLD_SCENARIO).unwrap();
    let scenario = scenario.display().to_string();
    let sim = start_sim_with(&scenario, 1.0, &[], |_| {}).await;
    let log = temp_log("hold");
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    let two = eventually(10, "executors running", || async {
        let e = executors(&pods, "held-app").await;
        (e.len() == 2 && e.iter().all(|(_, p)| phase(p) == "Running")).then(|| e[1].1.name_any())
    })
    .await;
    let r = act_on(
        &sim,
        &[
            "hold",
            "-n",
            "spark-jobs",
            "--app",
            "held-app",
            "on",
            "--ttl",
            "1h",
        ],
        &log,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out.starts_with("held 2 executor pod(s) until "),
        "{}",
        r.out
    );
    // Executor 2 fails at 6 s; Spark deletes it; the hold keeps it, status intact.
    let kept = eventually(15, "failed executor held", || async {
        pods.get_opt(&two)
            .await
            .unwrap()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
    })
    .await;
    assert!(
        kept.finalizers()
            .iter()
            .any(|f| f == "spark-triage.dev/hold")
    );
    let term = kept
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!(term.exit_code, 1);
    // Spark already replaced it.
    eventually(10, "replacement 3", || async {
        executors(&pods, "held-app")
            .await
            .iter()
            .any(|(id, _)| *id == 3)
            .then_some(())
    })
    .await;
    // The app-level mark is on the driver.
    let driver = pods
        .list(&ListParams::default().labels("spark-role=driver"))
        .await
        .unwrap()
        .items
        .remove(0);
    assert!(
        driver
            .annotations()
            .contains_key("spark-triage.dev/hold-expires")
    );
    // Release: the pod goes.
    let r = act_on(
        &sim,
        &["release", "-n", "spark-jobs", "--app", "held-app"],
        &log,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    eventually(10, "released pod gone", || async {
        pods.get_opt(&two).await.unwrap().is_none().then_some(())
    })
    .await;
    let driver = pods
        .list(&ListParams::default().labels("spark-role=driver"))
        .await
        .unwrap()
        .items
        .remove(0);
    assert!(
        !driver
            .annotations()
            .contains_key("spark-triage.dev/hold-expires")
    );

    // An expired hold is released by a second instance; a live one is not.
    let r = act_on(
        &sim,
        &[
            "hold",
            "-n",
            "spark-jobs",
            "--app",
            "held-app",
            "on",
            "--ttl",
            "1s",
        ],
        &log,
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.err);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let r = act_on(&sim, &["release", "-n", "spark-jobs", "--expired"], &log).await;
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.starts_with("released 2 pod(s)"), "{}", r.out);
    let e = executors(&pods, "held-app").await;
    assert!(
        e.iter()
            .all(|(_, p)| !p.finalizers().iter().any(|f| f == "spark-triage.dev/hold"))
    );
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_file(log);
}

/// A pod that merely carries an app's executor labels (no owner reference to the app's
/// driver, another namespace) is not the app's: `kill -A` lists it as not owned and
/// leaves it alone; `--force-unowned` is the explicit way to include it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_never_deletes_a_pod_the_apps_driver_does_not_own() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let log = temp_log("forged");
    let c = client(&sim).await;
    let jobs: Api<Pod> = Api::namespaced(c.clone(), "spark-jobs");
    let (id, app_id) = eventually(40, "adhoc-analysis executor 1 running", || async {
        executors(&jobs, "adhoc-analysis")
            .await
            .into_iter()
            .find(|(id, p)| *id == 1 && phase(p) == "Running")
            .map(|(id, p)| (id, p.labels()["spark-app-selector"].clone()))
    })
    .await;
    assert_eq!(id, 1);
    let default: Api<Pod> = Api::namespaced(c, "default");
    let forged = super::common::plain_pod(
        "important-database-0",
        &[
            ("spark-app-selector", &app_id),
            ("spark-app-name", "adhoc-analysis"),
            ("spark-role", "executor"),
            ("spark-exec-id", "1"),
        ],
    );
    default
        .create(&kube::api::PostParams::default(), &forged)
        .await
        .unwrap();
    let r = act_on(
        &sim,
        &["kill", "--app", "adhoc-analysis", "1", "-A", "--yes"],
        &log,
    )
    .await;
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out.contains("skip default/important-database-0 (executor 1): not owned by the app's driver: no owner, and not in the namespace of the app's driver (spark-jobs)"),
        "{}",
        r.out
    );
    assert!(r.out.contains("deleted spark-jobs/"), "{}", r.out);
    assert!(!r.out.contains("deleted default/"), "{}", r.out);
    let deletes: Vec<String> = writes(&sim)
        .into_iter()
        .filter(|w| w.starts_with("DELETE"))
        .collect();
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert!(
        deletes[0].contains("/namespaces/spark-jobs/"),
        "{deletes:?}"
    );
    assert!(
        default
            .get_opt("important-database-0")
            .await
            .unwrap()
            .is_some()
    );

    // Only the forged pod left to match: nothing deleted, exit 1; --force-unowned deletes it.
    let only_forged = [
        "kill",
        "--app",
        "adhoc-analysis",
        "1",
        "-n",
        "default",
        "--yes",
    ];
    let r = act_on(&sim, &only_forged, &log).await;
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert!(
        r.err
            .contains("no matching pod is owned by the app's driver"),
        "{}",
        r.err
    );
    let forced = [&only_forged[..], &["--force-unowned"]].concat();
    let r = act_on(&sim, &forced, &log).await;
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out.contains("deleted default/important-database-0"),
        "{}",
        r.out
    );
    let _ = std::fs::remove_file(log);
}

/// `hold on` for an app whose driver pod is gone (the app ended): refused with exit 1 and
/// nothing written; it used to say nothing was held and exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_of_an_ended_app_is_refused_and_exits_1() {
    use kube::api::PostParams;

    use super::common::{plain_pod, wait_running};
    let sim = start_sim("empty", 1.0, &[]).await;
    let log = temp_log("hold-ended");
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    let exec = plain_pod(
        "orphan-exec-1",
        &[
            ("spark-role", "executor"),
            ("spark-exec-id", "1"),
            ("spark-app-selector", "spark-orphan"),
            ("spark-app-name", "orphan"),
        ],
    );
    pods.create(&PostParams::default(), &exec).await.unwrap();
    wait_running(&pods, "orphan-exec-1").await;
    let r = act_on(
        &sim,
        &[
            "hold", "-n", "default", "--app", "orphan", "on", "--ttl", "1h",
        ],
        &log,
    )
    .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err
            .contains("the app has no driver pod (it has ended); nothing held"),
        "{r:?}"
    );
    let writes = writes(&sim);
    assert!(
        !writes.iter().any(|w| w.starts_with("PATCH")),
        "nothing written: {writes:?}"
    );
    let pod = pods.get("orphan-exec-1").await.unwrap();
    assert!(pod.finalizers().is_empty(), "{:?}", pod.finalizers());
}
