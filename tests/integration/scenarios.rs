//! Built-in scenarios reach the states their documentation promises, observed through the
//! real kube client and classified with Spark's rules.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use spark_triage_core::classify::{ClassifyConfig, classify};
use spark_triage_core::model::{ExecutorPod, ExecutorState};

use super::common::{client, eventually, start_sim};

/// app name → executor id → (Spark state, inactive label).
async fn executors(pods: &Api<Pod>) -> BTreeMap<String, BTreeMap<i64, (ExecutorState, bool)>> {
    let mut out: BTreeMap<String, BTreeMap<i64, (ExecutorState, bool)>> = BTreeMap::new();
    for p in pods
        .list(&ListParams::default().labels("spark-role=executor"))
        .await
        .unwrap()
        .items
    {
        let app = p
            .labels()
            .get("spark-app-name")
            .cloned()
            .unwrap_or_default();
        let ep = ExecutorPod::from_pod(&p);
        let id = ep.executor_id().expect("numeric executor id");
        out.entry(app).or_default().insert(
            id,
            (classify(&ep, &ClassifyConfig::default()), ep.is_inactive()),
        );
    }
    out
}

fn ids_in(m: &BTreeMap<i64, (ExecutorState, bool)>, state: ExecutorState) -> BTreeSet<i64> {
    m.iter()
        .filter(|(_, (s, _))| *s == state)
        .map(|(id, _)| *id)
        .collect()
}

fn set(ids: &[i64]) -> BTreeSet<i64> {
    ids.iter().copied().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_reaches_its_documented_state_at_rest() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let c = client(&sim).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "spark-jobs");
    // At rest from 60 scenario seconds (15 s at speed 4): wait for the last change, the
    // replacement of the silently vanished executor 10 by 13 after Spark's 30 s poll.
    let state = eventually(40, "mixed at rest", || async {
        let e = executors(&pods).await;
        let etl = e.get("etl-nightly")?;
        let adhoc = e.get("adhoc-analysis")?;
        let ready = ids_in(etl, ExecutorState::Running).contains(&13)
            && ids_in(adhoc, ExecutorState::Running).contains(&5)
            && e.get("streaming-sessions")?
                .get(&4)
                .is_some_and(|(s, _)| *s == ExecutorState::Running);
        ready.then_some(e)
    })
    .await;
    let etl = &state["etl-nightly"];
    assert_eq!(
        ids_in(etl, ExecutorState::Running),
        set(&[1, 2, 3, 4, 5, 6, 11, 13]),
        "{etl:?}"
    );
    assert_eq!(
        ids_in(etl, ExecutorState::Pending),
        set(&[9, 12]),
        "{etl:?}"
    );
    assert_eq!(etl.len(), 10, "7, 8 and 10 are gone: {etl:?}");
    let adhoc = &state["adhoc-analysis"];
    assert_eq!(
        ids_in(adhoc, ExecutorState::Running),
        set(&[1, 2, 5]),
        "{adhoc:?}"
    );
    assert_eq!(
        ids_in(adhoc, ExecutorState::Pending),
        set(&[6]),
        "{adhoc:?}"
    );
    assert_eq!(adhoc.len(), 4, "3 and 4 are gone: {adhoc:?}");
    let streaming = &state["streaming-sessions"];
    assert_eq!(
        ids_in(streaming, ExecutorState::Running),
        set(&[1, 2, 4]),
        "{streaming:?}"
    );
    assert_eq!(
        streaming.get(&3),
        Some(&(ExecutorState::Failed, true)),
        "3 kept, labelled inactive"
    );
    // Non-Spark pods exist, and are not executors.
    let default: Api<Pod> = Api::namespaced(c, "default");
    let others = default.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(others.len(), 2);
    assert!(
        others
            .iter()
            .all(|p| !p.labels().contains_key("spark-role"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oom_storm_ends_the_application_after_max_failures() {
    let sim = start_sim("oom-storm", 8.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    let driver = eventually(60, "the driver to exit 11", || async {
        pods.list(&ListParams::default().labels("spark-role=driver"))
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"))
    })
    .await;
    let code = driver.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap()
        .exit_code;
    assert_eq!(code, 11, "EXCEED_MAX_EXECUTOR_FAILURES");
    // SparkContext.stop() removed the executors; ids climbed past the 10 allowed failures.
    let left = eventually(10, "executors removed", || async {
        let l = pods
            .list(&ListParams::default().labels("spark-role=executor"))
            .await
            .unwrap()
            .items;
        l.is_empty().then_some(l)
    })
    .await;
    assert!(left.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_capacity_waits_for_memory_then_a_node_arrives() {
    let sim = start_sim("pending-capacity", 8.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    let waiting = eventually(20, "three running, three pending", || async {
        let e = executors(&pods).await;
        let app = e.get("nightly-report")?.clone();
        (ids_in(&app, ExecutorState::Running).len() == 3
            && ids_in(&app, ExecutorState::Pending).len() == 3)
            .then_some(app)
    })
    .await;
    let pending: Vec<i64> = ids_in(&waiting, ExecutorState::Pending)
        .into_iter()
        .collect();
    let p = pods
        .list(&ListParams::default().labels(&format!("spark-exec-id={}", pending[0])))
        .await
        .unwrap()
        .items
        .remove(0);
    let msg = p
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")
        .unwrap()
        .message
        .unwrap();
    assert!(
        msg.starts_with("0/1 nodes are available: 1 Insufficient memory."),
        "{msg}"
    );
    // The autoscaled node joins at 30 s: everyone runs, with the same ids.
    let all = eventually(20, "all six running", || async {
        let e = executors(&pods).await;
        let app = e.get("nightly-report")?.clone();
        (ids_in(&app, ExecutorState::Running).len() == 6).then_some(app)
    })
    .await;
    assert_eq!(
        all.keys().copied().collect::<BTreeSet<_>>(),
        set(&[1, 2, 3, 4, 5, 6])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churn_keeps_replacing_executors_under_new_ids() {
    let sim = start_sim("churn", 8.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    let ids = eventually(40, "ids past 12", || async {
        let e = executors(&pods).await;
        let app = e.get("flaky-stream")?.clone();
        (app.keys().max().copied()? > 12).then_some(app)
    })
    .await;
    // Never more than the target alive at once.
    let alive = ids
        .values()
        .filter(|(s, _)| matches!(s, ExecutorState::Running | ExecutorState::Pending))
        .count();
    assert!(alive <= 6, "{ids:?}");
}
