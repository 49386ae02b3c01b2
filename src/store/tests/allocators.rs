//! Executors of Spark's statefulset and deployment allocators: a pod whose container
//! restarts in place goes on as the next executor, and an executor known only from the
//! driver is named by who names the app's pods (Spark's own allocator, or a controller).

use serde_json::json;
use spark_triage_core::diagnose::verdict::Ending;
use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::model::DriverExecutor;
use spark_triage_core::model::testing::event;

use super::{app, exec_with, list, run, running, t, up, *};
use crate::source::DriverView;

fn removed(id: i64) -> DriverExecutor {
    DriverExecutor {
        id,
        active: false,
        host_port: None,
        pod_name: None,
        add_time: Some(t(0)),
        remove_time: Some(t(60)),
        remove_reason: Some(format!(
            "The executor with id {id} exited with exit code 137(SIGKILL, possible container OOM)."
        )),
        removed_again: Vec::new(),
        active_tasks: 0,
        failed_tasks: 0,
        completed_tasks: 0,
        tasks_lost: 0,
        max_memory: None,
        peak: Default::default(),
    }
}

fn driver_view(ids: &[i64]) -> SourceEvent {
    SourceEvent::DriverExecutors {
        namespace: "spark-jobs".into(),
        app_id: "spark-1".into(),
        view: DriverView::Ok {
            executors: ids.iter().map(|id| removed(*id)).collect(),
        },
        at: t(100),
    }
}

#[tokio::test]
async fn a_driver_only_executor_is_named_by_its_apps_allocator() {
    // Spark's own allocator: `<podNamePrefix>-exec-<id>`, the prefix read off a pod seen.
    let s = run(vec![
        up(exec_with(4, 10, json!({}), running()), 90),
        driver_view(&[2]),
    ])
    .await;
    assert_eq!(app(&s).executors[&2].pod.name, "app-exec-2");

    // A StatefulSet's pods: the ordinal is not known, and no pod is named with `?`.
    let sts = exec_with(
        4,
        10,
        json!({"name": "spark-s-spark-1-0-1", "ownerReferences": [{"apiVersion": "apps/v1",
            "kind": "StatefulSet", "name": "spark-s-spark-1-0", "uid": "u-s", "controller": true}]}),
        running(),
    );
    let s = run(vec![up(sts, 90), driver_view(&[2])]).await;
    assert_eq!(app(&s).executors[&2].pod.name, "spark-s-spark-1-0-?");

    // No pod left at all: the driver's configuration names the allocator.
    let s = run(vec![
        SourceEvent::DriverConfig {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            properties: [(
                "spark.kubernetes.allocation.pods.allocator".to_owned(),
                "deployment".to_owned(),
            )]
            .into(),
            from: None,
            at: t(80),
        },
        driver_view(&[2]),
    ])
    .await;
    assert_eq!(app(&s).executors[&2].pod.name, "spark-d-spark-1-?");
}

/// With `restartPolicy: Always` (Spark's template for these allocators) an OOM kill
/// restarts the container in the same pod, and the driver labels the pod with the new
/// JVM's id. The executor that died ends there, judged on the pod as it ended (its last
/// state); the pod goes on as the next one; a full list later does not call the first
/// missing, and Spark is not said to count it.
#[tokio::test]
async fn a_container_restarted_in_place_ends_its_executor_and_the_pod_goes_on_as_the_next() {
    let owner = json!({"name": "spark-s-spark-1-0-0", "uid": "u-pod", "ownerReferences": [{"apiVersion": "apps/v1",
        "kind": "StatefulSet", "name": "spark-s-spark-1-0", "uid": "u-s", "controller": true}]});
    let first = exec_with(2, 10, owner.clone(), running());
    let restarted = json!({"phase": "Running", "containerStatuses": [{"name": "spark-kubernetes-executor",
        "image": "spark", "imageID": "", "ready": true, "restartCount": 1,
        "state": {"running": {"startedAt": "2027-01-15T08:00:17Z"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
            "startedAt": "2027-01-15T08:00:05Z", "finishedAt": "2027-01-15T08:00:15Z"}}}]});
    let mut next = exec_with(5, 20, owner, restarted);
    next.labels.insert("spark-exec-id".into(), "5".into());
    // A late event still carrying executor 2's label does not bring it back.
    let mut late = first.clone();
    late.resource_version = Some("15".into());
    let s = run(vec![
        up(first, 10),
        up(next.clone(), 20),
        up(late, 21),
        list(vec![next], 21, 40),
    ])
    .await;
    let a = app(&s);
    let two = &a.executors[&2];
    assert!(
        matches!(two.gone, Some(Gone::Restarted { as_id: 5, .. })),
        "{:?}",
        two.gone
    );
    assert_eq!(two.verdict.ending, Ending::Restarted);
    assert_eq!(two.state(), ExecutorState::Failed);
    assert_eq!(
        two.verdict.cause().map(|f| f.code),
        Some(Code::ContainerOomKilled),
        "{:?}",
        two.verdict.findings
    );
    assert!(two.verdict.spark.is_none(), "Spark never saw it end");
    assert!(!two.verdict.missing);
    let five = &a.executors[&5];
    assert_eq!(five.state(), ExecutorState::Running);
    assert!(five.gone.is_none());
    // The exit before the restart is evidence on the pod, said as its predecessor's.
    let f = five.verdict.cause().expect("the restart said");
    assert_eq!(f.severity, Severity::Info, "{f:?}");
    assert!(
        f.summary
            .starts_with("The executor before this one in the pod ended"),
        "{f:?}"
    );
}

/// A JVM that crashes before it registers keeps the pod under its id (no new id comes):
/// the executor's own exit, not a predecessor's, an error as any failure.
#[tokio::test]
async fn a_crash_before_a_new_id_is_the_executors_own() {
    let owner = json!({"name": "spark-s-spark-1-0-0", "uid": "u-pod", "ownerReferences": [{"apiVersion": "apps/v1",
        "kind": "StatefulSet", "name": "spark-s-spark-1-0", "uid": "u-s", "controller": true}]});
    let looping = json!({"phase": "Running", "containerStatuses": [{"name": "spark-kubernetes-executor",
        "image": "spark", "imageID": "", "ready": false, "restartCount": 3,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
            "startedAt": "2027-01-15T08:01:05Z", "finishedAt": "2027-01-15T08:01:15Z"}}}]});
    let s = run(vec![
        up(exec_with(2, 10, owner.clone(), running()), 10),
        up(exec_with(2, 20, owner, looping), 200),
    ])
    .await;
    let two = &app(&s).executors[&2];
    assert!(two.gone.is_none());
    let f = two
        .verdict
        .findings
        .iter()
        .find(|f| f.evidence.iter().any(|e| e.contains("lastState")));
    let f = f.expect("its exit said");
    assert_ne!(f.severity, Severity::Info, "{f:?}");
    assert!(
        !f.summary.starts_with("The executor before this one"),
        "{f:?}"
    );
}

/// An event goes to the executor whose pod it is about, found by its pod's name: the
/// executors named so are looked up, not compared one by one, and the lookup follows the
/// app's changes (an executor added after an event was attached, a pod name that a
/// controller's recreated pod reuses for another executor, told apart by its uid).
#[tokio::test]
async fn events_reach_the_executor_named_in_them_as_the_app_changes() {
    let warning = |name: &str, uid: &str, at: u32| SourceEvent::EventSeen {
        event: Box::new(event(json!({
            "metadata": {"name": format!("ev-{uid}"), "namespace": "spark-jobs"},
            "involvedObject": {"kind": "Pod", "name": name, "namespace": "spark-jobs", "uid": uid},
            "reason": "BackOff", "type": "Warning", "count": 1, "message": format!("about {uid}")}))),
        at: t(at),
    };
    let reused = exec_with(
        3,
        30,
        json!({"name": "app-exec-1", "uid": "uid-3"}),
        running(),
    );
    let s = run(vec![
        up(exec_with(1, 10, json!({}), running()), 1),
        warning("app-exec-1", "uid-1", 2),
        up(exec_with(2, 20, json!({}), running()), 3),
        warning("app-exec-2", "uid-2", 4),
        up(reused, 5),
        warning("app-exec-1", "uid-3", 6),
    ])
    .await;
    let a = app(&s);
    let about = |id: i64| -> Vec<String> {
        a.executors[&id]
            .events
            .iter()
            .filter_map(|e| e.message.clone())
            .collect()
    };
    assert_eq!(about(1), ["about uid-1"]);
    assert_eq!(about(2), ["about uid-2"]);
    assert_eq!(about(3), ["about uid-3"]);
    let named = |n: &str| a.executors_named(n).map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(named("app-exec-1"), [1, 3]);
    assert_eq!(named("app-exec-2"), [2]);
    assert!(named("app-exec-9").is_empty());
}
