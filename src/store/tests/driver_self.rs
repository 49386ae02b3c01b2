//! What the drivers say of themselves (#56): dynamic allocation's target against what the
//! app has (a stall once it has lasted), a streaming query, and a preemptor named before its
//! pod was known, completed by the next LIST.

use serde_json::json;
use spark_triage_core::diagnose::Code;
use spark_triage_core::model::driver_state::{Allocation, StreamingQuery};
use spark_triage_core::model::testing::{event, pod};

use super::*;

fn driver() -> ExecutorPod {
    pod(json!({
        "metadata": {"name": "etl-driver", "namespace": "spark-jobs", "uid": "d",
                     "labels": {"spark-app-selector": "spark-1", "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
        "status": {"phase": "Running"}}))
}

/// The driver's executor list read (its allocation is read with it).
fn read(at: u32) -> SourceEvent {
    SourceEvent::DriverExecutors {
        namespace: "spark-jobs".into(),
        app_id: "spark-1".into(),
        view: DriverView::Ok {
            executors: Vec::new(),
        },
        at: t(at),
    }
}

fn allocation(target: u32, at: u32) -> SourceEvent {
    SourceEvent::DriverAllocation {
        namespace: "spark-jobs".into(),
        app_id: "spark-1".into(),
        allocation: Allocation {
            target,
            needed: target,
            registered: 1,
        },
        at: t(at),
    }
}

fn codes(s: &Store) -> Vec<Code> {
    app(s).findings().iter().map(|f| f.code).collect()
}

#[tokio::test]
async fn a_target_above_the_executors_is_a_stall_once_it_has_lasted_and_ends_when_met() {
    let mut s = run(vec![
        up(driver(), 0),
        up(exec(1, 10, running()), 1),
        read(10),
        allocation(4, 10),
    ])
    .await;
    let seen = app(&s).allocation.expect("kept");
    assert_eq!(seen.short_since, Some(t(10)));
    assert!(!codes(&s).contains(&Code::ScaleUpStalled), "not yet");
    // Still short two minutes on: the shortfall's start is kept, and it is said.
    s.apply(read(70));
    s.apply(allocation(4, 70));
    s.apply(read(131));
    s.apply(allocation(4, 131));
    assert_eq!(app(&s).allocation.and_then(|a| a.short_since), Some(t(10)));
    assert!(codes(&s).contains(&Code::ScaleUpStalled), "{:?}", codes(&s));
    // The driver stops answering: what it asked for then is not what it asks for now.
    s.apply(SourceEvent::DriverExecutors {
        namespace: "spark-jobs".into(),
        app_id: "spark-1".into(),
        view: DriverView::Unavailable {
            reason: "the driver did not answer within 10 s".into(),
        },
        at: t(135),
    });
    assert!(
        !codes(&s).contains(&Code::ScaleUpStalled),
        "{:?}",
        codes(&s)
    );
    s.apply(read(138));
    assert!(codes(&s).contains(&Code::ScaleUpStalled), "{:?}", codes(&s));
    // Its list answers but its metrics have not for over two minutes: not what it asks now.
    s.apply(read(260));
    assert!(
        !codes(&s).contains(&Code::ScaleUpStalled),
        "{:?}",
        codes(&s)
    );
    // The target met (or lowered): no stall, and a new shortfall starts afresh.
    s.apply(allocation(1, 140));
    assert_eq!(app(&s).allocation.and_then(|a| a.short_since), None);
    assert!(!codes(&s).contains(&Code::ScaleUpStalled));
    s.apply(allocation(3, 150));
    assert_eq!(app(&s).allocation.and_then(|a| a.short_since), Some(t(150)));
    // A keyframe keeps both.
    s.apply(SourceEvent::DriverStreaming {
        namespace: "spark-jobs".into(),
        app_id: "spark-1".into(),
        query: StreamingQuery::new("q-1", Some("clicks")),
        at: t(151),
    });
    let back: Store = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(app(&back).allocation, app(&s).allocation);
    assert_eq!(
        app(&back).streaming.as_ref().map(StreamingQuery::label),
        Some("query clicks".to_owned())
    );
}

#[tokio::test]
async fn a_preemptor_seen_before_its_pod_is_named_once_a_list_has_it() {
    let mut urgent = pod(json!({
        "metadata": {"name": "urgent-driver", "namespace": "spark-jobs", "uid": "uid-urgent",
                     "labels": {"spark-app-selector": "spark-9", "spark-role": "driver", "spark-app-name": "urgent-sql"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
        "status": {"phase": "Running"}}));
    urgent.priority_class = Some("spark-high".into());
    urgent.priority = Some(1000);
    let preempted = pod(json!({
        "metadata": {"name": "app-exec-1", "namespace": "spark-jobs", "uid": "uid-1", "resourceVersion": "10",
            "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": "1"}},
        "spec": {"restartPolicy": "Never", "nodeName": "n1", "containers": [{"name": "spark-kubernetes-executor"}]},
        "status": {"phase": "Failed", "conditions": [{"type": "DisruptionTarget", "status": "True",
            "reason": "PreemptionByScheduler"}]}}));
    let s = run(vec![
        up(driver(), 0),
        up(preempted.clone(), 1),
        SourceEvent::EventSeen {
            event: Box::new(event(json!({"metadata": {"name": "p1", "namespace": "spark-jobs"},
                "involvedObject": {"kind": "Pod", "name": "app-exec-1", "namespace": "spark-jobs", "uid": "uid-1"},
                "related": {"kind": "Pod", "namespace": "spark-jobs", "name": "urgent-driver", "uid": "uid-urgent"},
                "reason": "Preempted", "type": "Normal",
                "message": "Preempted by pod uid-urgent on node n1",
                "lastTimestamp": t(2).to_rfc3339(), "source": {"component": "default-scheduler"}}))),
            at: t(2),
        },
        list(vec![driver(), preempted, urgent], 20, 3),
    ])
    .await;
    let f = app(&s)
        .findings()
        .iter()
        .find(|f| f.code == Code::ExecutorsPreempted)
        .cloned()
        .expect("preempted");
    assert!(
        f.summary
            .starts_with("1 executor preempted by urgent-sql (spark-high = 1000"),
        "{}",
        f.summary
    );
}
