//! Operators' objects in the store (#56): one app per object, whichever comes first, the
//! object or its pods; placeholders gone with their object; an earlier run keeps no object.

use serde_json::json;
use spark_triage_core::model::{OperatorApp, OperatorKind};

use super::*;

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
