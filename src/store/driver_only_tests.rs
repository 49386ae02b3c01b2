//! Executors known only from the driver: what their pod is called depends on who names
//! the app's pods (Spark's own allocator, or a StatefulSet or ReplicaSet).

use serde_json::json;

use super::tests::{app, exec_with, run, running, t, up};
use super::*;

fn removed(id: i64) -> crate::model::DriverExecutor {
    crate::model::DriverExecutor {
        id,
        active: false,
        host_port: None,
        add_time: Some(t(0)),
        remove_time: Some(t(60)),
        remove_reason: Some(format!(
            "The executor with id {id} exited with exit code 137(SIGKILL, possible container OOM)."
        )),
        active_tasks: 0,
        failed_tasks: 0,
        completed_tasks: 0,
        max_memory: None,
        peak: Default::default(),
    }
}

fn driver_view(ids: &[i64]) -> SourceEvent {
    SourceEvent::DriverExecutors {
        namespace: "spark-jobs".into(),
        app_id: "spark-1".into(),
        view: crate::source::DriverView::Ok {
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
            at: t(80),
        },
        driver_view(&[2]),
    ])
    .await;
    assert_eq!(app(&s).executors[&2].pod.name, "spark-d-spark-1-?");
}
