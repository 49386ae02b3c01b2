//! Store semantics over sequences of source events (fed as streams, as sources produce them).

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use spark_triage_core::diagnose;
use spark_triage_core::diagnose::verdict::Ending;
use spark_triage_core::diagnose::{Code, verdict};
use spark_triage_core::model::driver::ExecutorList;
use spark_triage_core::model::testing::{event, pod};
use spark_triage_core::model::{DriverExecutor, Quota};

use super::*;
use crate::source::{DriverView, Health, LoggedKill};
use crate::store::times;
use crate::store::times::Clock;

pub(super) fn t(s: u32) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + i64::from(s), 0).unwrap()
}

pub(super) fn exec(id: i64, rv: u64, status: Value) -> ExecutorPod {
    exec_with(id, rv, json!({}), status)
}

pub(super) fn exec_with(id: i64, rv: u64, meta: Value, status: Value) -> ExecutorPod {
    let mut m = json!({"name": format!("app-exec-{id}"), "uid": format!("uid-{id}"), "resourceVersion": rv.to_string(),
        "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": id.to_string(), "spark-app-name": "etl"}});
    if let (Some(a), Some(b)) = (m.as_object_mut(), meta.as_object()) {
        for (k, v) in b {
            a.insert(k.clone(), v.clone());
        }
    }
    pod(
        json!({"metadata": m, "spec": {"restartPolicy": "Never", "nodeName": "n1", "containers": [{"name": "spark-kubernetes-executor"}]},
               "status": status}),
    )
}

pub(super) fn running() -> Value {
    json!({"phase": "Running", "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "spark", "imageID": "",
        "ready": true, "restartCount": 0, "state": {"running": {"startedAt": "2027-01-15T08:00:05Z"}}}]})
}

pub(super) fn oom() -> Value {
    json!({"phase": "Failed", "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "spark", "imageID": "",
        "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]})
}

pub(super) fn up(p: ExecutorPod, at: u32) -> SourceEvent {
    SourceEvent::PodUpserted {
        pod: std::sync::Arc::new(p),
        at: t(at),
    }
}

pub(super) fn del(p: ExecutorPod, at: u32) -> SourceEvent {
    SourceEvent::PodDeleted {
        pod: std::sync::Arc::new(p),
        at: t(at),
    }
}

pub(super) fn list(pods: Vec<ExecutorPod>, rv: u64, at: u32) -> SourceEvent {
    SourceEvent::PodsListed {
        pods: pods.into_iter().map(std::sync::Arc::new).collect(),
        resource_version: Some(rv),
        at: t(at),
    }
}

pub(super) async fn run(events: Vec<SourceEvent>) -> Store {
    stream::iter(events)
        .fold(Store::new(), |mut s, e| async move {
            s.apply(e);
            s
        })
        .await
}

/// One executor as the driver lists it: added at 0, and removed at 60 s unless active.
pub(super) fn driver_exec(id: i64, active: bool) -> DriverExecutor {
    DriverExecutor {
        id,
        active,
        host_port: None,
        pod_name: None,
        add_time: Some(t(0)),
        remove_time: (!active).then(|| t(60)),
        remove_reason: None,
        removed_again: Vec::new(),
        active_tasks: 0,
        failed_tasks: 0,
        completed_tasks: 0,
        tasks_lost: 0,
        max_memory: None,
        peak: Default::default(),
    }
}

pub(super) fn app(s: &Store) -> &AppRecord {
    s.view()
        .apps
        .get(&("spark-jobs".to_owned(), "spark-1".to_owned()))
        .expect("app")
}

fn codes(rec: &ExecutorRecord) -> Vec<&'static str> {
    rec.findings().iter().map(|f| f.code.as_str()).collect()
}

#[tokio::test]
async fn watch_upserts_and_deletion_leaves_a_tombstone() {
    let s = run(vec![
        up(exec(1, 10, running()), 1),
        up(exec(2, 11, running()), 1),
        up(exec(2, 20, oom()), 10),
        del(
            exec_with(
                2,
                21,
                json!({"deletionTimestamp": "2027-01-15T08:00:11Z"}),
                oom(),
            ),
            11,
        ),
    ])
    .await;
    let a = app(&s);
    assert_eq!(a.app_name.as_deref(), Some("etl"));
    let two = &a.executors[&2];
    // The pod ended deleted, but Spark acted on the failure first: the verdict is failed,
    // counted, and the pod was deleted by Spark.
    assert_eq!(two.pod_state, ExecutorState::Deleted);
    assert_eq!(two.state(), ExecutorState::Failed);
    assert!(two.verdict.counted());
    assert_eq!(two.verdict.ending, verdict::Ending::DeletedBySpark);
    assert!(matches!(two.gone, Some(Gone::Deleted { .. })));
    assert_eq!(codes(two), vec!["container-oom-killed", "deleted"]);
    assert_eq!(
        two.verdict.spark.as_ref().unwrap().exit_description,
        "137(SIGKILL, possible container OOM)"
    );
    assert_eq!(two.exit_code(), Some(137));
    assert_eq!(two.container_reason(), Some("OOMKilled"));
    let states: Vec<ExecutorState> = two.history.iter().map(|h| h.state).collect();
    assert_eq!(
        states,
        vec![
            ExecutorState::Running,
            ExecutorState::Failed,
            ExecutorState::Deleted
        ]
    );
    let c = a.counts();
    assert_eq!((c.running, c.deleted, c.failed), (1, 0, 1));
    assert!(
        a.timeline
            .iter()
            .any(|e| e.text == "executor 2 failed (exit 137, OOMKilled)"),
        "{:?}",
        a.timeline
    );
}

#[tokio::test]
async fn a_newer_list_without_the_pod_and_no_deletion_means_missing() {
    let s = run(vec![
        up(exec(1, 10, running()), 1),
        up(exec(2, 11, running()), 1),
        // Pod 2 vanishes with no watch event; the next LIST (newer than rv 11) lacks it.
        list(vec![exec(1, 10, running())], 40, 30),
    ])
    .await;
    let a = app(&s);
    let two = &a.executors[&2];
    assert!(two.is_missing());
    assert_eq!(
        two.pod_state,
        ExecutorState::Running,
        "last known state kept"
    );
    assert_eq!(
        two.state(),
        ExecutorState::Deleted,
        "gone: never counted as running"
    );
    assert!(!two.verdict.counted());
    assert_eq!(codes(two), vec!["missing"]);
    let ev = &two.findings()[0].evidence;
    assert!(
        ev[0].contains("resourceVersion 11") && ev[0].contains("resourceVersion 40"),
        "{ev:?}"
    );
    // registered 08:00:05 + 30 s = 08:00:35; the list at +30 s (08:00:30) is earlier.
    assert!(
        ev[1].contains("first poll after 2027-01-15T08:00:35Z"),
        "{ev:?}"
    );
    assert_eq!(a.counts().missing, 1);
    assert_eq!(a.counts().running, 1);
    assert_eq!(s.view().full_snapshot_at, Some(t(30)));
}

#[tokio::test]
async fn an_older_list_proves_nothing() {
    let s = run(vec![
        up(exec(1, 50, running()), 1),
        // A LIST served from an older cache (rv 40 < 50): absence is not evidence.
        list(vec![], 40, 30),
    ])
    .await;
    assert!(!app(&s).executors[&1].is_missing());
}

#[tokio::test]
async fn a_missing_executor_that_reappears_was_only_late() {
    let s = run(vec![
        up(exec(1, 10, running()), 1),
        list(vec![], 40, 30),
        up(exec(1, 41, running()), 31),
    ])
    .await;
    assert!(!app(&s).executors[&1].is_missing());
    assert!(app(&s).executors[&1].findings().is_empty());
}

#[tokio::test]
async fn stale_watch_replays_do_not_go_back_in_time() {
    let s = run(vec![
        up(exec(1, 20, oom()), 5),
        up(exec(1, 10, running()), 6),
    ])
    .await;
    assert_eq!(app(&s).executors[&1].state(), ExecutorState::Failed);
}

#[tokio::test]
async fn events_attach_and_pending_reasons_aggregate() {
    let pending = |id: i64, msg: &str| {
        let mut p = exec(
            id,
            10 + id as u64,
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": msg}]}),
        );
        p.node_name = None;
        p
    };
    let taint_and_memory = "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 3 Insufficient memory.";
    let selector_and_taint = "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 3 node(s) didn't match Pod's node affinity/selector.";
    let s = run(vec![
        up(pending(1, taint_and_memory), 1),
        up(pending(2, taint_and_memory), 1),
        up(pending(3, selector_and_taint), 1),
        SourceEvent::EventSeen {
            event: Box::new(event(json!({"metadata": {"name": "e1", "namespace": "spark-jobs"},
                "involvedObject": {"kind": "Pod", "name": "app-exec-1", "namespace": "spark-jobs", "uid": "uid-1"},
                "reason": "FailedScheduling", "type": "Warning", "count": 4, "message": taint_and_memory}))),
            at: t(2),
        },
    ])
    .await;
    let a = app(&s);
    assert_eq!(
        a.pending_reasons(),
        vec![
            ("Insufficient memory".to_owned(), 2),
            (
                "node(s) had untolerated taint {dedicated: gpu}".to_owned(),
                1
            )
        ]
    );
    let one = &a.executors[&1];
    assert_eq!(one.events.len(), 1);
    assert!(
        one.findings()[0]
            .evidence
            .iter()
            .any(|e| e.contains("FailedScheduling x4"))
    );
}

#[tokio::test]
async fn driver_config_sets_delete_on_termination_and_the_container_name() {
    let mut props = BTreeMap::new();
    props.insert(
        "spark.kubernetes.executor.deleteOnTermination".to_owned(),
        "false".to_owned(),
    );
    props.insert(
        "spark.kubernetes.executor.podTemplateContainerName".to_owned(),
        "executor".to_owned(),
    );
    props.insert(
        "spark.kubernetes.executor.missingPodDetectDelta".to_owned(),
        "45s".to_owned(),
    );
    let s = run(vec![
        up(exec(1, 10, running()), 1),
        SourceEvent::DriverConfig {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            properties: props,
            from: None,
            at: t(2),
        },
    ])
    .await;
    let a = app(&s);
    assert!(!a.config.delete_on_termination && a.config.from_driver);
    assert_eq!(a.config.missing_pod_detect_delta, Duration::from_secs(45));
    // Spark now looks for container `executor`, which this pod does not have: stuck running.
    assert_eq!(a.executors[&1].spark_container, "executor");
}

#[tokio::test]
async fn drivers_and_unregistered_pods_are_kept_apart() {
    let driver = pod(
        json!({"metadata": {"name": "app-driver", "labels": {"spark-app-selector": "spark-1", "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}, "status": {"phase": "Running"}}),
    );
    let mut placeholder = exec(0, 5, running());
    placeholder.name = "app-exec-sts-0".into();
    placeholder
        .labels
        .insert("spark-exec-id".into(), "EXECID".into());
    let s = run(vec![up(driver, 1), up(placeholder.clone(), 1)]).await;
    let a = app(&s);
    assert_eq!(a.driver.as_ref().unwrap().phase.as_deref(), Some("Running"));
    assert!(a.executors.is_empty());
    assert!(a.unregistered["app-exec-sts-0"].contains("EXECID"));
    // Gone from the next LIST: forgotten.
    let s = run(vec![up(placeholder, 1), list(vec![], 40, 30)]).await;
    assert!(app(&s).unregistered.is_empty());
}

#[tokio::test]
async fn history_is_bounded() {
    let mut events = Vec::new();
    for i in 0..200u32 {
        let status = if i % 2 == 0 {
            running()
        } else {
            json!({"phase": "Pending"})
        };
        events.push(up(exec(1, 10 + u64::from(i), status), i));
    }
    let s = run(events).await;
    assert_eq!(app(&s).executors[&1].history.len(), MAX_HISTORY);
}

#[tokio::test]
async fn snapshots_are_independent_of_later_writes() {
    let mut s = Store::new();
    s.apply(up(exec(1, 10, running()), 1));
    let before = s.snapshot();
    s.apply(up(exec(1, 11, oom()), 2));
    let key = ("spark-jobs".to_owned(), "spark-1".to_owned());
    assert_eq!(
        before.apps[&key].executors[&1].state(),
        ExecutorState::Running
    );
    assert_eq!(
        s.view().apps[&key].executors[&1].state(),
        ExecutorState::Failed
    );
}

#[test]
fn a_bare_network_timeout_is_seconds_and_other_times_milliseconds() {
    let props = |k: &str, v: &str| [(k.to_owned(), v.to_owned())].into_iter().collect();
    let c = AppConfig::from_properties(&props("spark.network.timeout", "300"), None);
    assert_eq!(c.network_timeout, Duration::from_secs(300));
    let c = AppConfig::from_properties(
        &props("spark.kubernetes.executor.missingPodDetectDelta", "1500"),
        None,
    );
    assert_eq!(c.missing_pod_detect_delta, Duration::from_millis(1500));
    let c = AppConfig::from_properties(
        &props("spark.kubernetes.executor.apiPollingInterval", "2min"),
        None,
    );
    assert_eq!(c.api_polling_interval, Duration::from_secs(120));
    let c = AppConfig::from_properties(
        &props("spark.kubernetes.executor.apiPollingInterval", "soon"),
        None,
    );
    assert_eq!(
        c.api_polling_interval,
        Duration::from_secs(30),
        "Spark's default"
    );
}

#[tokio::test]
async fn a_kill_by_spark_triage_and_a_late_witness_are_kept_in_the_verdict() {
    let deleting =
        json!({"deletionTimestamp": "2027-01-15T08:01:00Z", "deletionGracePeriodSeconds": 30});
    let s = run(vec![
        up(exec(1, 10, running()), 1),
        up(exec(2, 11, running()), 1),
        SourceEvent::ActionTaken {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            text: "action by me: killed executor 1".into(),
            killed: Some(1),
            at: t(5),
        },
        del(exec_with(1, 20, deleting, running()), 6),
        // 2 vanishes (no deletion seen): missing, until its log tail names a JVM OOM.
        list(vec![], 40, 30),
        SourceEvent::LogCaptured {
            namespace: "spark-jobs".into(),
            pod: "app-exec-2".into(),
            lines: vec!["java.lang.OutOfMemoryError: Java heap space".into()],
            at: t(31),
        },
    ])
    .await;
    let a = app(&s);
    let one = &a.executors[&1];
    assert_eq!(one.verdict.ending, Ending::DeletedByTool);
    assert_eq!(one.state(), ExecutorState::Deleted);
    let two = &a.executors[&2];
    assert!(
        two.is_missing(),
        "a log line names a cause, not who removed the pod"
    );
    assert!(codes(two).contains(&"jvm-oom"), "{:?}", codes(two));
}

#[test]
fn an_outage_leaves_its_start_and_end_in_every_timeline_and_a_list_settles_what_vanished() {
    let health = |source, health, at| SourceEvent::SourceHealth {
        source,
        health,
        at: t(at),
    };
    let mut s = Store::new();
    s.apply(health(SourceKind::PodWatch, Health::Connected, 0));
    s.apply(list(
        vec![exec(1, 10, running()), exec(2, 11, running())],
        11,
        1,
    ));
    let error = || Health::Retrying {
        error: "no complete answer within 30s".into(),
    };
    s.apply(health(SourceKind::PodWatch, error(), 5));
    // Retrying again is the same outage: one line.
    s.apply(health(SourceKind::PodWatch, error(), 7));
    // Executor 2 vanishes during the outage; the next LIST says so.
    s.apply(list(vec![exec(1, 10, running())], 20, 40));
    s.apply(health(SourceKind::PodWatch, Health::Connected, 45));
    let app = s.view().apps.values().next().unwrap();
    let lines: Vec<&str> = app
        .timeline
        .iter()
        .filter(|e| e.executor.is_none())
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(
        lines,
        [
            "pod watch lost: no complete answer within 30s",
            "pod watch back after 40s"
        ]
    );
    assert!(app.executors[&2].is_missing());
    assert_eq!(s.view().health[&SourceKind::PodWatch], Health::Connected);
}

#[tokio::test]
async fn app_findings_come_from_the_store() {
    // A phaseless executor pod breaks Spark's snapshot of the app (an app-level error), and
    // three counted OOM kills make a crash loop (budget unknown: no driver configuration).
    let s = run(vec![
        up(exec(1, 1, oom()), 1),
        up(exec(2, 2, oom()), 2),
        up(exec(3, 3, oom()), 3),
        up(exec(4, 4, json!({})), 4),
    ])
    .await;
    let codes: Vec<&str> = app(&s).findings().iter().map(|f| f.code.as_str()).collect();
    assert_eq!(
        codes,
        vec!["snapshot-update-fails", "crash-loop"],
        "{codes:?}"
    );
    let loop_ = app(&s)
        .findings()
        .iter()
        .find(|f| f.code.as_str() == "crash-loop")
        .unwrap();
    assert!(
        loop_.summary.contains("Spark's limit is unknown"),
        "{}",
        loop_.summary
    );
}

#[tokio::test]
async fn a_full_quota_in_the_apps_namespace_is_an_app_finding_until_it_frees() {
    let quotas = |used: &str, at: u32| SourceEvent::QuotasListed {
        namespace: Some("spark-jobs".to_owned()),
        quotas: vec![Quota {
            namespace: "spark-jobs".to_owned(),
            name: "spark-quota".to_owned(),
            hard: [("requests.cpu".to_owned(), "2".to_owned())].into(),
            used: [("requests.cpu".to_owned(), used.to_owned())].into(),
            scoped: false,
        }],
        at: t(at),
    };
    let driver = pod(json!({
        "metadata": {"name": "etl-driver", "uid": "d", "labels": {"spark-app-selector": "spark-1", "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
        "status": {"phase": "Running"}}));
    let executor = pod(json!({
        "metadata": {"name": "app-exec-1", "uid": "uid-1", "resourceVersion": "2",
            "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": "1"}},
        "spec": {"restartPolicy": "Never", "nodeName": "n1", "containers": [{"name": "spark-kubernetes-executor",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}}]},
        "status": running()}));
    // The quota is listed before the app is seen: the app still gets it.
    let mut s = run(vec![quotas("2", 0), up(driver, 1), up(executor, 2)]).await;
    let codes = |s: &Store| -> Vec<&'static str> {
        app(s).findings().iter().map(|f| f.code.as_str()).collect()
    };
    assert_eq!(codes(&s), vec!["quota-exhausted"]);
    s.apply(quotas("1", 3));
    assert!(codes(&s).is_empty(), "room for one more executor");
    // A keyframe (a recording's start) keeps the quotas.
    let back: Store = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(app(&back).quotas, app(&s).quotas);
    assert!(back.view().applied_quotas);
}

#[tokio::test]
async fn without_api_polling_spark_never_declares_a_vanished_executor_lost() {
    let props = [(
        "spark.kubernetes.executor.enableApiPolling".to_owned(),
        "false".to_owned(),
    )]
    .into();
    let s = run(vec![
        SourceEvent::DriverConfig {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            properties: props,
            from: None,
            at: t(0),
        },
        up(exec(1, 10, running()), 1),
        up(exec(2, 11, running()), 1),
        list(vec![exec(1, 10, running())], 40, 30),
    ])
    .await;
    let two = &app(&s).executors[&2];
    assert!(two.is_missing());
    let ev = &two.findings()[0].evidence;
    assert!(
        ev[1].contains("enableApiPolling=false")
            && ev[1].contains("heartbeats time out (spark.network.timeout, 120s)"),
        "{ev:?}"
    );
}

#[test]
fn what_is_derived_from_an_app_follows_every_change() {
    // Each answer is read (and so memoised) before the next event; after it, the memo must
    // equal what a fresh computation gives.
    let events = vec![
        up(exec(1, 1, running()), 1),
        up(exec(2, 2, running()), 2),
        up(exec(1, 3, oom()), 3),
        del(exec(1, 3, oom()), 4),
        up(exec(3, 4, json!({})), 5),
        list(vec![exec(3, 4, json!({}))], 9, 6),
        SourceEvent::SourceHealth {
            source: SourceKind::PodWatch,
            health: Health::Retrying {
                error: "connection reset".to_owned(),
            },
            at: t(7),
        },
        up(exec(3, 10, oom()), 8),
    ];
    let mut s = Store::new();
    let mut seen = Vec::new();
    for e in events {
        s.apply(e);
        let a = app(&s);
        let fresh = AppRecord::clone(a);
        assert_eq!(a.findings(), fresh.findings());
        assert_eq!(a.incident(), fresh.incident());
        assert_eq!(a.trouble(), fresh.trouble());
        seen.push(a.trouble());
    }
    // The answers did change along the way (the test would prove nothing otherwise).
    seen.dedup();
    assert!(seen.len() >= 3, "{seen:?}");
}

#[tokio::test]
async fn an_ending_seen_late_is_dated_by_the_container() {
    // The tool starts 90 s after the OOM kill: the ending is the kubelet's finishedAt, not the
    // moment of the first LIST.
    let status = json!({"phase": "Failed", "containerStatuses": [{"name": "spark-kubernetes-executor",
        "image": "spark", "imageID": "", "ready": false, "restartCount": 0,
        "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
            "startedAt": "2027-01-15T08:00:01Z", "finishedAt": "2027-01-15T08:00:10Z"}}}]});
    let s = run(vec![list(vec![exec(1, 5, status)], 5, 100)]).await;
    assert_eq!(ended_at(&app(&s).executors[&1]), Some(t(10)));
    // Without a finishedAt, when it was seen.
    let s = run(vec![list(vec![exec(1, 5, oom())], 5, 100)]).await;
    assert_eq!(ended_at(&app(&s).executors[&1]), Some(t(100)));
}

#[tokio::test]
async fn a_finish_a_little_after_the_sighting_is_a_late_clock_and_far_after_a_skewed_node() {
    let oom_at = |finished: &str| {
        json!({"phase": "Failed", "containerStatuses": [{"name": "spark-kubernetes-executor",
            "image": "spark", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": finished}}}]})
    };
    // Seen at 100 by a clock read from the last `Date` header, 5 s behind: the kubelet's
    // 105 stands (two processes that read the clock at other moments agree on it).
    let s = run(vec![list(
        vec![exec(1, 5, oom_at("2027-01-15T08:01:45Z"))],
        5,
        100,
    )])
    .await;
    let e = &app(&s).executors[&1];
    assert_eq!(times::ended(e), Some((t(105), Clock::Container)));
    // A node clock five minutes ahead: the sighting, said to be a bound.
    let s = run(vec![list(
        vec![exec(1, 5, oom_at("2027-01-15T08:06:40Z"))],
        5,
        100,
    )])
    .await;
    let e = &app(&s).executors[&1];
    assert_eq!(times::ended(e), Some((t(100), Clock::Seen)));
}

/// Arriving late: three executors were evicted on one node over nine minutes before the
/// tool started, and are known only from the driver's list. Their node comes from the
/// kubelet's events and their times from the cluster's clocks, so the node pattern is seen
/// and spans the nine minutes, not the one moment the tool saw it all.
#[tokio::test]
async fn a_node_pattern_seen_late_takes_its_node_and_times_from_the_cluster() {
    let removed = |id: i64, min: u32| DriverExecutor {
        id,
        active: false,
        host_port: Some(format!("app-exec-{id}:7079")),
        pod_name: None,
        add_time: Some(t(0)),
        remove_time: Some(t(min * 60)),
        remove_reason: Some(format!(
            "The executor with id {id} exited with exit code -1(unexpected).\n\
             The API gave the following brief reason: Evicted\n\
             The API gave the following message: The node was low on resource: memory. \n"
        )),
        removed_again: Vec::new(),
        active_tasks: 0,
        failed_tasks: 0,
        completed_tasks: 0,
        tasks_lost: 0,
        max_memory: None,
        peak: Default::default(),
    };
    let evicted = |id: i64, min: u32| SourceEvent::EventSeen {
        event: Box::new(event(
            json!({"metadata": {"name": format!("e{id}"), "namespace": "spark-jobs"},
            "involvedObject": {"kind": "Pod", "name": format!("app-exec-{id}"), "namespace": "spark-jobs"},
            "reason": "Evicted", "type": "Warning",
            "message": "The node was low on resource: memory.",
            "lastTimestamp": t(min * 60).to_rfc3339(), "firstTimestamp": t(min * 60).to_rfc3339(),
            "source": {"component": "kubelet", "host": "node-7"}}),
        )),
        at: t(1000),
    };
    let s = run(vec![
        up(exec(4, 10, running()), 1000),
        evicted(1, 0),
        evicted(2, 4),
        evicted(3, 9),
        SourceEvent::DriverExecutors {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            view: DriverView::Ok {
                executors: vec![removed(1, 0), removed(2, 4), removed(3, 9)],
            },
            at: t(1000),
        },
    ])
    .await;
    let a = app(&s);
    assert_eq!(a.executors.len(), 4, "{:?}", a.executors.keys());
    assert!(
        matches!(a.executors[&1].gone, Some(Gone::DriverOnly { .. })),
        "known only from the driver"
    );
    assert_eq!(a.executors[&1].pod.node_name.as_deref(), Some("node-7"));
    let p = &s.view().node_patterns;
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!(p[0].node, "node-7");
    let f = a
        .findings()
        .iter()
        .find(|f| f.code == Code::NodeFailures)
        .expect("the app names the node");
    assert_eq!(
        f.summary,
        "Node node-7: 3 executor failures within 9m00s (all of this app): 3 evicted"
    );
}

/// The driver's list names an executor's pod (`attributes.POD_NAME`): that is its pod,
/// whatever the other pods' names would suggest.
#[tokio::test]
async fn an_executor_known_only_from_the_driver_keeps_the_pod_name_it_gave() {
    let gone = DriverExecutor {
        pod_name: Some("etl-0a1b2c-exec-2".into()),
        ..driver_exec(2, false)
    };
    let s = run(vec![
        up(exec(1, 10, running()), 100),
        SourceEvent::DriverExecutors {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            view: DriverView::Ok {
                executors: vec![
                    gone.clone(),
                    DriverExecutor {
                        id: 3,
                        pod_name: None,
                        ..gone
                    },
                ],
            },
            at: t(100),
        },
    ])
    .await;
    let a = app(&s);
    assert_eq!(a.executors[&2].pod.name, "etl-0a1b2c-exec-2");
    assert_eq!(
        a.executors[&3].pod.name, "app-exec-3",
        "else the allocator's name"
    );
}

/// An event log read beside the driver's own reads (`--event-log-dir`) adds only what
/// they lack: its older view never replaces what the driver said of an executor, nor the
/// driver view's state; and an executor only the log says was removed keeps that when the
/// driver (which keeps few dead executors) does not list it.
#[tokio::test]
async fn an_event_log_beside_the_driver_adds_what_it_lacks_and_replaces_nothing() {
    let view = |view, at| SourceEvent::DriverExecutors {
        namespace: "spark-jobs".into(),
        app_id: "spark-1".into(),
        view,
        at: t(at),
    };
    let removed = |id| DriverExecutor {
        remove_reason: Some(
            "The executor with id 7 exited with exit code 137(SIGKILL, possible container OOM)."
                .into(),
        ),
        ..driver_exec(id, false)
    };
    let events = vec![
        up(exec(1, 10, running()), 100),
        // The driver: executor 1 removed (its pod still Running: a zombie in the making).
        view(
            DriverView::Ok {
                executors: vec![driver_exec(1, false)],
            },
            200,
        ),
        // An hour-old log: executor 1 active then, executor 7 long gone.
        view(
            DriverView::Logged {
                executors: vec![driver_exec(1, true), removed(7)],
            },
            150,
        ),
        // The driver again, which no longer lists 7.
        view(
            DriverView::Ok {
                executors: vec![driver_exec(1, false)],
            },
            210,
        ),
    ];
    // Just after the log's view.
    let s = run(events[..3].to_vec()).await;
    let a = app(&s);
    let one = a.executors[&1].driver.as_ref().expect("the driver's word");
    assert_eq!(one.from, ExecutorList::DriverApi);
    assert!(
        one.exec.as_ref().is_some_and(|e| !e.active),
        "still removed, as the driver said"
    );
    let api = a.driver_api.as_ref().expect("driver view");
    assert_eq!((api.from, api.at), (ExecutorList::DriverApi, t(200)));
    // After the driver's next read.
    let s = run(events).await;
    let a = app(&s);
    let seven = a.executors[&7].driver.as_ref().expect("the log's word");
    assert_eq!(seven.from, ExecutorList::EventLog);
    assert!(
        seven
            .exec
            .as_ref()
            .is_some_and(|e| e.remove_reason.is_some()),
        "Spark's reason kept: {seven:?}"
    );
}

/// A fresh view LISTs the pods a moment before it reads the driver: an executor the driver
/// still counts active, registered well before that LIST, whose pod the LIST did not have,
/// is missing at once (Spark notices at its next poll), never shown running.
#[tokio::test]
async fn an_active_executor_whose_pod_a_fresh_list_lacks_is_missing_at_once() {
    let active = |id: i64, added: u32| DriverExecutor {
        id,
        active: true,
        host_port: None,
        pod_name: None,
        add_time: Some(t(added)),
        remove_time: None,
        remove_reason: None,
        removed_again: Vec::new(),
        active_tasks: 1,
        failed_tasks: 0,
        completed_tasks: 0,
        tasks_lost: 0,
        max_memory: None,
        peak: Default::default(),
    };
    let s = run(vec![
        list(vec![exec(1, 10, running())], 10, 100),
        SourceEvent::DriverExecutors {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            view: DriverView::Ok {
                executors: vec![active(1, 5), active(3, 5), active(4, 95)],
            },
            at: t(101),
        },
    ])
    .await;
    let a = app(&s);
    assert!(a.executors[&3].is_missing(), "{:?}", a.executors[&3].gone);
    assert!(a.executors[&3].verdict.missing);
    assert!(
        !a.executors[&4].is_missing(),
        "registered just before the LIST: its pod may not have been in it yet"
    );
}

/// An executor preempted before the tool started, known only from the driver: its own
/// priority is its app's (one pod template), read from the app's pods that are still there.
#[tokio::test]
async fn a_preempted_executor_seen_late_takes_its_apps_priority() {
    let mut live = exec(4, 10, running());
    live.priority_class = Some("spark-batch".into());
    live.priority = Some(100);
    let s = run(vec![
        up(live, 1000),
        SourceEvent::EventSeen {
            event: Box::new(event(json!({"metadata": {"name": "p1", "namespace": "spark-jobs"},
                "involvedObject": {"kind": "Pod", "name": "app-exec-1", "namespace": "spark-jobs"},
                "related": {"kind": "Pod", "namespace": "ml", "name": "trainer-0", "uid": "uid-trainer"},
                "reason": "Preempted", "type": "Normal",
                "message": "Preempted by pod uid-trainer on node n1",
                "lastTimestamp": t(60).to_rfc3339(), "source": {"component": "default-scheduler"}}))),
            at: t(1000),
        },
        SourceEvent::DriverExecutors {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            view: DriverView::Ok {
                executors: vec![DriverExecutor {
                    id: 1,
                    active: false,
                    host_port: None,
                    pod_name: None,
                    add_time: Some(t(0)),
                    remove_time: Some(t(60)),
                    remove_reason: Some("The executor with id 1 was deleted by a user or the framework.".into()),
                    removed_again: Vec::new(),
                    active_tasks: 0,
                    failed_tasks: 0,
                    completed_tasks: 0,
                    tasks_lost: 0,
                    max_memory: None,
                    peak: Default::default(),
                }],
            },
            at: t(1000),
        },
    ])
    .await;
    let a = app(&s);
    assert!(
        a.executors[&1].verdict.has(Code::Preempted),
        "{:?}",
        a.executors[&1].verdict.findings
    );
    let f = a
        .findings()
        .iter()
        .find(|f| f.code == Code::ExecutorsPreempted)
        .expect("the app says it");
    assert_eq!(
        f.summary,
        "1 executor preempted by trainer-0 (its priority not known; this app's: spark-batch = 100)"
    );
}

/// Forgetting goes by the cluster's clocks: an executor the driver removed nine minutes
/// before this process first saw it is forgotten at once by a five-minute horizon (it was
/// forgotten only a horizon after its first sight here), and one the driver still counts
/// active, known only from it, is kept.
#[tokio::test]
async fn forgetting_dates_an_ending_by_the_cluster_and_keeps_an_active_driver_only_executor() {
    let driver = || {
        pod(
            json!({"metadata": {"name": "app-driver", "labels": {"spark-app-selector": "spark-1", "spark-role": "driver"}},
            "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}, "status": {"phase": "Running"}}),
        )
    };
    let s = run(vec![
        up(driver(), 590),
        SourceEvent::DriverExecutors {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            view: DriverView::Ok {
                executors: vec![driver_exec(1, false), driver_exec(2, true)],
            },
            at: t(600),
        },
        SourceEvent::Forget {
            before: t(600 - 300),
            at: t(600),
        },
    ])
    .await;
    let a = app(&s);
    assert!(
        !a.executors.contains_key(&1),
        "removed at 60 s: forgotten at 600 s"
    );
    assert!(a.executors.contains_key(&2), "still active: kept");
    assert_eq!(s.view().forgotten, 1);
    // Past its first sight by more than the horizon, still active: kept while the driver
    // runs.
    let mut s = s;
    s.apply(SourceEvent::Forget {
        before: t(1000),
        at: t(1300),
    });
    assert!(app(&s).executors.contains_key(&2), "still active: kept");
    assert_eq!(s.view().forgotten, 1);
    // The driver gone, its last word is no longer news: forgotten.
    s.apply(del(driver(), 1400));
    s.apply(SourceEvent::Forget {
        before: t(1500),
        at: t(1800),
    });
    assert_eq!(s.view().forgotten, 2);
}

mod allocators;
mod driver_self;
mod housekeeping;
mod operators;
mod pod_cost;
mod relist;

/// The running driver's log names a heartbeat timeout before the driver's list (or its pod)
/// is seen: the executor known only from that list is judged with it at once.
#[tokio::test]
async fn a_heartbeat_heard_first_judges_an_executor_known_only_from_the_driver() {
    let killed = DriverExecutor {
        remove_reason: Some("Executor killed by driver.".into()),
        ..driver_exec(3, false)
    };
    let s = run(vec![
        SourceEvent::DriverHeartbeats {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            executors: vec![3],
            at: t(100),
        },
        up(exec(1, 10, running()), 100),
        SourceEvent::DriverExecutors {
            namespace: "spark-jobs".into(),
            app_id: "spark-1".into(),
            view: DriverView::Ok {
                executors: vec![driver_exec(1, true), killed],
            },
            at: t(101),
        },
    ])
    .await;
    let three = &app(&s).executors[&3];
    assert!(matches!(three.gone, Some(Gone::DriverOnly { .. })));
    assert_eq!(
        three.verdict.cause().map(|c| c.code),
        Some(diagnose::Code::HeartbeatTimeout),
        "{:?}",
        three.verdict
    );
}

/// A kill the actions log holds labels the executor whose pod went, not a running one, and
/// a recording's keyframe (the store written whole) keeps it.
#[tokio::test]
async fn a_logged_kill_labels_a_gone_pod_and_survives_a_keyframe() {
    let kills = SourceEvent::KillsLogged {
        kills: vec![
            LoggedKill {
                namespace: "spark-jobs".into(),
                pod: "app-exec-1".into(),
                at: t(50),
                by: "oncall".into(),
            },
            LoggedKill {
                namespace: "spark-jobs".into(),
                pod: "app-exec-2".into(),
                at: t(50),
                by: "oncall".into(),
            },
        ],
        at: t(0),
    };
    let s = run(vec![
        kills,
        up(exec(1, 10, running()), 1),
        up(exec(2, 11, running()), 1),
        del(exec(1, 12, running()), 60),
    ])
    .await;
    let code = |s: &Store, id: i64| app(s).executors[&id].verdict.cause().map(|c| c.code);
    assert_eq!(code(&s, 1), Some(diagnose::Code::KilledByTool));
    assert_ne!(
        code(&s, 2),
        Some(diagnose::Code::KilledByTool),
        "a running pod is not a kill made"
    );
    let text = serde_json::to_string(&s).expect("a keyframe writes");
    let mut back: Store = serde_json::from_str(&text).expect("and reads");
    back.apply(SourceEvent::Tick { at: t(61) });
    assert_eq!(code(&back, 1), Some(diagnose::Code::KilledByTool));
}
