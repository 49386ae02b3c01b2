//! An operator's application with no pod yet (#56): the apps pane lists it, the incident
//! strip names its object and says why nothing runs, and `Y` in the apps pane copies the
//! object's `kubectl describe`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use spark_triage_core::model::testing::pod;
use spark_triage_core::model::{OperatorApp, OperatorKind};

use super::{draw, select_app, session};
use crate::app::{App, Effect, Focus, Msg, update};
use crate::source::SourceEvent;

/// The session, with a kubeflow SparkApplication whose submission a quota refused.
fn with_refused_app() -> App {
    let mut app = session();
    let at = app.store.view().now.expect("a clock");
    let object = OperatorApp::from_value(
        OperatorKind::Kubeflow,
        &json!({
            "metadata": {"name": "nightly-ingest", "namespace": "spark-jobs"},
            "spec": {"restartPolicy": {"type": "Never"}},
            "status": {"applicationState": {"state": "SUBMISSION_FAILED",
                "errorMessage": "failed to submit spark application: failed to run spark-submit: \
                    Message: pods \"nightly-ingest-driver\" is forbidden: exceeded quota: \
                    spark-quota, requested: requests.memory=4505Mi, used: requests.memory=60Gi, \
                    limited: requests.memory=62Gi. Received status: Status(code=403)"},
                "submissionAttempts": 1}
        }),
    );
    update(
        &mut app,
        Msg::Source(SourceEvent::OperatorAppsListed {
            operator_kind: OperatorKind::Kubeflow,
            namespace: None,
            objects: vec![object],
            unknown: None,
            complete: true,
            at,
        }),
    );
    app
}

#[test]
fn a_refused_submission_leads_the_apps_and_names_its_object() {
    let mut app = with_refused_app();
    // The worst app first: the refused submission (an error) before the rest.
    assert_eq!(
        app.apps()[0].app_name.as_deref(),
        Some("nightly-ingest"),
        "{:?}",
        app.apps()
            .iter()
            .map(|a| a.app_name.clone())
            .collect::<Vec<_>>()
    );
    select_app(&mut app, "nightly-ingest");
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("SparkApplication spark-jobs/nightly-ingest:"),
        "{frame}"
    );
    assert!(frame.contains("could not submit it"), "{frame}");
    insta::assert_snapshot!("operator_app_refused_80x24", frame);
    insta::assert_snapshot!("operator_app_refused_200x50", draw(&mut app, 200, 50));
}

#[test]
fn capital_y_in_the_apps_pane_copies_the_objects_describe() {
    let mut app = with_refused_app();
    select_app(&mut app, "nightly-ingest");
    app.focus = Focus::Apps;
    let key = |c| Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    assert_eq!(
        update(&mut app, key('Y')),
        vec![Effect::Copy(
            "kubectl -n spark-jobs describe sparkapplications.sparkoperator.k8s.io nightly-ingest"
                .to_owned()
        )]
    );
    assert_eq!(
        update(&mut app, key('y')),
        vec![Effect::Copy("nightly-ingest".to_owned())]
    );
}

/// A namespace keeping a pile of finished drivers: the apps pane's bottom border says how
/// many and where (`status` says it whole).
#[test]
fn a_pile_of_finished_drivers_is_said_under_the_apps() {
    let mut app = session();
    let at = app.store.view().now.expect("a clock");
    for n in 0..25 {
        let pod = pod(json!({
            "metadata": {"name": format!("etl-{n}-driver"), "namespace": "nightly",
                         "labels": {"spark-app-selector": format!("spark-old-{n}"),
                                    "spark-role": "driver"}},
            "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [{
                "name": "spark-kubernetes-driver", "image": "spark", "imageID": "",
                "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}
        }));
        update(
            &mut app,
            Msg::Source(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(pod),
                at,
            }),
        );
    }
    let frame = draw(&mut app, 80, 24);
    assert!(frame.contains(" 25 finished drivers "), "{frame}");
    insta::assert_snapshot!("finished_drivers_kept_80x24", frame);
    let wide = draw(&mut app, 200, 50);
    assert!(
        wide.contains(" 25 finished drivers kept in nightly "),
        "{wide}"
    );
}

/// A schedule skipping its runs: an app of its own, named for its object, its verdict the
/// incident strip's first line.
#[test]
fn a_schedule_skipping_its_runs_says_why_first() {
    let mut app = session();
    let at = app.store.view().now.expect("a clock");
    let due = at - chrono::Duration::minutes(10);
    let object = OperatorApp::from_value(
        OperatorKind::KubeflowScheduled,
        &json!({
            "metadata": {"name": "nightly-rollup", "namespace": "spark-jobs"},
            "spec": {"schedule": "0 2 * * *", "concurrencyPolicy": "Forbid"},
            "status": {"scheduleState": "Scheduled", "lastRunName": "nightly-rollup-1796500000",
                       "lastRun": (due - chrono::Duration::days(1)).to_rfc3339(),
                       "nextRun": due.to_rfc3339()}
        }),
    );
    update(
        &mut app,
        Msg::Source(SourceEvent::OperatorAppsListed {
            operator_kind: OperatorKind::KubeflowScheduled,
            namespace: None,
            objects: vec![object],
            unknown: None,
            complete: true,
            at,
        }),
    );
    select_app(&mut app, "nightly-rollup");
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("ScheduledSparkApplication spark-jobs/nightly-rollup:"),
        "{frame}"
    );
    insta::assert_snapshot!("schedule_skipping_80x24", frame);
}

/// An app whose verdict is not the executors' endings (the driver may not create them) is
/// said at the top of the strip, never "no failures" under an app the list calls in error.
#[test]
fn an_apps_own_verdict_leads_the_strip_not_no_failures() {
    let mut app = session();
    let at = app.store.view().now.expect("a clock");
    let driver = pod(json!({
        "metadata": {"name": "feature-store-driver", "namespace": "spark-jobs", "uid": "fs",
                     "labels": {"spark-app-selector": "spark-fs", "spark-role": "driver",
                                "spark-app-name": "feature-store"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
        "status": {"phase": "Running"}}));
    update(
        &mut app,
        Msg::Source(SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(driver),
            at,
        }),
    );
    update(
        &mut app,
        Msg::Source(SourceEvent::DriverRefused {
            namespace: "spark-jobs".into(),
            app_id: "spark-fs".into(),
            line: "io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: \
                   POST at: https://kubernetes.default.svc/api/v1/namespaces/spark-jobs/pods. \
                   Message: pods is forbidden: User \"system:serviceaccount:spark-jobs:spark\" \
                   cannot create resource \"pods\" in API group \"\" in the namespace \"spark-jobs\"."
                .into(),
            at,
        }),
    );
    select_app(&mut app, "feature-store");
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("feature-store: The driver may not create its"),
        "{frame}"
    );
    assert!(!frame.contains("feature-store: no failures"), "{frame}");
    insta::assert_snapshot!("app_verdict_leads_the_strip_80x24", frame);
}
