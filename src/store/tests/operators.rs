//! Operators' objects in the store (#56): one app per object, whichever comes first, the
//! object or its pods; placeholders gone with their object; an earlier run keeps no object.

use serde_json::json;
use spark_triage_core::model::{OperatorApp, OperatorKind};

use super::*;
use crate::source::{Health, SourceKind};

fn object(state: &str, app_id: Option<&str>) -> OperatorApp {
    OperatorApp::from_value(
        OperatorKind::Kubeflow,
        &json!({"metadata": {"name": "etl", "namespace": "spark-jobs"},
                "status": {"applicationState": {"state": state, "errorMessage": "boom"},
                           "sparkApplicationId": app_id,
                           "terminationTime": "2027-01-15T08:00:00Z"}}),
    )
}

fn listed(objects: Vec<OperatorApp>, at: u32) -> SourceEvent {
    SourceEvent::OperatorAppsListed {
        operator_kind: OperatorKind::Kubeflow,
        namespace: None,
        objects,
        unknown: None,
        complete: true,
        at: t(at),
    }
}

/// Executor `id` of spark-1, made by the kubeflow operator for object `etl`.
fn labelled(id: i64) -> ExecutorPod {
    exec_with(
        id,
        1,
        json!({"labels": {"spark-app-selector": "spark-1", "spark-role": "executor",
                          "spark-exec-id": id.to_string(), "spark-app-name": "etl",
                          "sparkoperator.k8s.io/app-name": "etl"}}),
        running(),
    )
}

fn keys(s: &Store) -> Vec<(String, String, bool)> {
    s.view()
        .apps
        .iter()
        .map(|(k, a)| (k.0.clone(), k.1.clone(), a.operator.is_some()))
        .collect()
}

#[tokio::test]
async fn the_object_first_then_its_pods_is_one_app() {
    let s = run(vec![listed(vec![object("SUBMITTED", None)], 1)]).await;
    assert_eq!(keys(&s), [("spark-jobs".into(), "etl".into(), true)]);
    let s = run(vec![
        listed(vec![object("SUBMITTED", None)], 1),
        up(labelled(1), 2),
    ])
    .await;
    assert_eq!(keys(&s), [("spark-jobs".into(), "spark-1".into(), true)]);
}

#[tokio::test]
async fn the_pods_first_then_the_object_is_one_app() {
    let s = run(vec![
        up(labelled(1), 1),
        listed(vec![object("RUNNING", Some("spark-1"))], 2),
    ])
    .await;
    assert_eq!(keys(&s), [("spark-jobs".into(), "spark-1".into(), true)]);
}

#[tokio::test]
async fn a_placeholder_goes_with_its_object() {
    let s = run(vec![
        listed(vec![object("SUBMISSION_FAILED", None)], 1),
        listed(Vec::new(), 2),
    ])
    .await;
    assert_eq!(keys(&s), Vec::<(String, String, bool)>::new());
}

#[tokio::test]
async fn an_earlier_run_keeps_no_object_and_the_current_one_is_an_app() {
    // spark-1 ran; the object now names spark-2, whose pods are not there yet.
    let s = run(vec![
        up(labelled(1), 1),
        listed(vec![object("SUBMITTED", Some("spark-2"))], 2),
    ])
    .await;
    assert_eq!(
        keys(&s),
        [
            ("spark-jobs".into(), "etl".into(), true),
            ("spark-jobs".into(), "spark-1".into(), false),
        ]
    );
}

#[tokio::test]
async fn a_success_or_an_end_long_ago_is_no_app_of_its_own() {
    let s = run(vec![listed(vec![object("COMPLETED", None)], 1)]).await;
    assert!(keys(&s).is_empty(), "{:?}", keys(&s));
    // Ended at t(0) (2027-01-15T08:00:00Z); listed two days on, then a minute on.
    let s = run(vec![listed(vec![object("FAILED", None)], 2 * 24 * 3600)]).await;
    assert!(keys(&s).is_empty(), "{:?}", keys(&s));
    let s = run(vec![listed(vec![object("FAILED", None)], 60)]).await;
    assert_eq!(keys(&s).len(), 1);
}

/// A schedule whose run is due at `t(10)`, its last run `etl-1` (a kubeflow object).
fn schedule() -> OperatorApp {
    OperatorApp::from_value(
        OperatorKind::KubeflowScheduled,
        &json!({"metadata": {"name": "etl-nightly", "namespace": "spark-jobs"},
                "spec": {"schedule": "@every 10s", "concurrencyPolicy": "Forbid"},
                "status": {"scheduleState": "Scheduled", "lastRunName": "etl",
                           "lastRun": t(0).to_rfc3339(), "nextRun": t(10).to_rfc3339()}}),
    )
}

/// A schedule is an app only once a copy read more than a minute after its due run still
/// names it (the operator writes nothing while it skips; its object is read every poll);
/// time alone, on a copy read before, makes nothing of it (a long poll interval, a list
/// failing). It carries its last run's state from that run's own object, and goes when the
/// operator starts the run.
#[tokio::test]
async fn a_schedule_becomes_an_app_when_a_read_finds_its_run_overdue() {
    let schedules = |at| SourceEvent::OperatorAppsListed {
        operator_kind: OperatorKind::KubeflowScheduled,
        namespace: None,
        objects: vec![schedule()],
        unknown: None,
        complete: true,
        at: t(at),
    };
    let tick = |at| SourceEvent::Tick { at: t(at) };
    let key = ("spark-jobs".to_owned(), "etl-nightly".to_owned());
    // Due 20 s before the read: within the grace.
    let s = run(vec![
        listed(vec![object("RUNNING", None)], 1),
        schedules(30),
    ])
    .await;
    assert!(!s.view().apps.contains_key(&key));
    // Read at 1, due at 10, and nothing read since: time alone is no witness.
    let s = run(vec![
        listed(vec![object("RUNNING", None)], 1),
        schedules(1),
        tick(30),
        tick(1000),
    ])
    .await;
    assert!(!s.view().apps.contains_key(&key));
    // Read again 90 s after it was due, still naming it: skipped.
    let s = run(vec![
        listed(vec![object("RUNNING", None)], 1),
        schedules(1),
        schedules(100),
    ])
    .await;
    let app = &s.view().apps[&key];
    assert!(app.operator_only);
    let o = app.operator.as_deref().expect("schedule");
    assert_eq!(
        o.schedule
            .as_deref()
            .and_then(|s| s.last_run_state.as_deref()),
        Some("RUNNING")
    );
    // Both kinds of one group are kept apart: the runs' complete list keeps the schedule.
    let s = run(vec![
        schedules(100),
        listed(vec![object("RUNNING", None)], 101),
        tick(102),
    ])
    .await;
    assert!(
        s.view()
            .apps
            .contains_key(&("spark-jobs".into(), "etl-nightly".into()))
    );
    // The operator starts the run: nextRun moves on, the placeholder goes.
    let mut started = schedule();
    started.schedule.as_mut().unwrap().next_run = Some(t(200));
    let s = run(vec![
        schedules(100),
        SourceEvent::OperatorAppsListed {
            operator_kind: OperatorKind::KubeflowScheduled,
            namespace: None,
            objects: vec![started],
            unknown: None,
            complete: true,
            at: t(101),
        },
    ])
    .await;
    assert!(
        !s.view()
            .apps
            .contains_key(&("spark-jobs".into(), "etl-nightly".into()))
    );
}

/// A schedule no operator takes up (no `scheduleState`) becomes an app once a copy read five
/// minutes after it was made still has none.
#[tokio::test]
async fn a_schedule_no_operator_took_up_becomes_an_app_after_five_minutes() {
    let unseen = OperatorApp::from_value(
        OperatorKind::KubeflowScheduled,
        &json!({"metadata": {"name": "etl-weekly", "namespace": "spark-jobs",
                             "creationTimestamp": t(0).to_rfc3339()},
                "spec": {"schedule": "@weekly"}}),
    );
    let listed = |at| SourceEvent::OperatorAppsListed {
        operator_kind: OperatorKind::KubeflowScheduled,
        namespace: None,
        objects: vec![unseen.clone()],
        unknown: None,
        complete: true,
        at: t(at),
    };
    let key = ("spark-jobs".to_owned(), "etl-weekly".to_owned());
    let s = run(vec![listed(1), listed(200)]).await;
    assert!(!s.view().apps.contains_key(&key));
    let s = run(vec![listed(1), SourceEvent::Tick { at: t(400) }]).await;
    assert!(!s.view().apps.contains_key(&key), "no read since");
    let s = run(vec![listed(1), listed(400)]).await;
    assert!(s.view().apps[&key].operator_only);
}

/// While the objects' list fails the store keeps its last copy, on which every due run
/// would look skipped as time passes: the copy is judged as of its read, so nothing comes of
/// it until the objects are read again.
#[tokio::test]
async fn a_stale_copy_makes_no_schedule_skipped_until_read_again() {
    let health = |health, at| SourceEvent::SourceHealth {
        source: SourceKind::SchedulerObjects,
        health,
        at: t(at),
    };
    let schedules = |at| SourceEvent::OperatorAppsListed {
        operator_kind: OperatorKind::KubeflowScheduled,
        namespace: None,
        objects: vec![schedule()],
        unknown: None,
        complete: true,
        at: t(at),
    };
    let key = ("spark-jobs".to_owned(), "etl-nightly".to_owned());
    let failing = Health::Retrying {
        error: "scheduledsparkapplications.sparkoperator.k8s.io: timed out".into(),
    };
    let s = run(vec![
        schedules(1),
        health(failing.clone(), 5),
        SourceEvent::Tick { at: t(100) },
        health(Health::Connected, 101),
    ])
    .await;
    assert!(!s.view().apps.contains_key(&key));
    let s = run(vec![
        schedules(1),
        health(failing, 5),
        health(Health::Connected, 101),
        schedules(101),
    ])
    .await;
    assert!(s.view().apps[&key].operator_only);
}
