use serde_json::json;

use super::*;

/// A kubeflow object whose submission failed on a quota, as the operator writes it.
fn kubeflow_refused() -> serde_json::Value {
    json!({
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {
            "name": "nightly", "namespace": "etl",
            "creationTimestamp": "2026-12-01T02:00:00Z",
            "labels": {"kueue.x-k8s.io/queue-name": "etl-queue"}
        },
        "spec": {
            "type": "Scala", "mode": "cluster",
            "restartPolicy": {"type": "OnFailure", "onFailureRetries": 3,
                              "onSubmissionFailureRetries": 2}
        },
        "status": {
            "applicationState": {
                "state": "SUBMISSION_FAILED",
                "errorMessage": "failed to submit spark application: failed to run spark-submit: \
                    pods \"nightly-driver\" is forbidden: exceeded quota: etl-quota, requested: \
                    limits.memory=4505Mi, used: limits.memory=60Gi, limited: limits.memory=62Gi"
            },
            "submissionAttempts": 3,
            "executionAttempts": 0,
            "lastSubmissionAttemptTime": "2026-12-01T02:03:00Z"
        }
    })
}

#[test]
fn a_kubeflow_object_reads_its_state_attempts_and_policy() {
    let app = OperatorApp::from_value(OperatorKind::Kubeflow, &kubeflow_refused());
    assert_eq!(app.key(), "etl/nightly");
    assert_eq!(app.title(), "SparkApplication etl/nightly");
    assert_eq!(app.state.as_str(), "SUBMISSION_FAILED");
    assert_eq!(app.phase, OperatorPhase::SubmissionFailed);
    assert!(
        app.message
            .as_deref()
            .unwrap()
            .contains("exceeded quota: etl-quota")
    );
    assert_eq!(app.submission_attempts, Some(3));
    assert_eq!(app.execution_attempts, Some(0));
    assert_eq!(app.restart.policy.as_deref(), Some("OnFailure"));
    assert_eq!(
        app.reruns_allowed(),
        Some(2),
        "a failed submission counts against its own budget"
    );
    assert_eq!(app.queue.as_deref(), Some("etl-queue"));
    assert_eq!(
        app.since.map(|t| t.to_rfc3339()).as_deref(),
        Some("2026-12-01T02:03:00+00:00")
    );
    assert_eq!(
        app.describe_command(),
        "kubectl describe sparkapplications.sparkoperator.k8s.io -n etl nightly"
    );
}

#[test]
fn an_apache_object_reads_its_current_state_and_history() {
    let v = json!({
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkApplication",
        "metadata": {"name": "pi", "namespace": "spark"},
        "spec": {"applicationTolerations": {"restartConfig": {
            "restartPolicy": "OnFailure", "maxRestartAttempts": 2}}},
        "status": {
            "currentState": {"currentStateSummary": "ScheduledToRestart",
                             "lastTransitionTime": "2026-12-01T02:05:00Z",
                             "message": "Application will be restarted"},
            "currentAttemptSummary": {"attemptInfo": {"id": 1}},
            "stateTransitionHistory": {
                "10": {"currentStateSummary": "ScheduledToRestart"},
                "2": {"currentStateSummary": "DriverRequested", "lastTransitionTime": "2026-12-01T02:00:01Z"},
                "1": {"currentStateSummary": "Submitted", "lastTransitionTime": "2026-12-01T02:00:00Z"},
                "3": {"currentStateSummary": "Failed", "message": "Driver exited with 1"}
            }
        }
    });
    let app = OperatorApp::from_value(OperatorKind::Apache, &v);
    assert_eq!(app.phase, OperatorPhase::PendingRerun);
    assert_eq!(app.execution_attempts, Some(2));
    assert_eq!(app.reruns_allowed(), Some(2));
    let states: Vec<&str> = app.history.iter().map(|h| h.state.as_str()).collect();
    assert_eq!(
        states,
        [
            "Submitted",
            "DriverRequested",
            "Failed",
            "ScheduledToRestart"
        ],
        "by counter, not by text"
    );
}

#[test]
fn released_resources_end_as_the_state_before_them() {
    let v = |before: &str| {
        json!({"status": {
            "currentState": {"currentStateSummary": "ResourceReleased"},
            "stateTransitionHistory": {
                "0": {"currentStateSummary": "RunningHealthy"},
                "1": {"currentStateSummary": before},
                "2": {"currentStateSummary": "ResourceReleased"}}}})
    };
    let phase = |before| OperatorApp::from_value(OperatorKind::Apache, &v(before)).phase;
    assert_eq!(phase("Succeeded"), OperatorPhase::Succeeded);
    let evicted = OperatorApp::from_value(OperatorKind::Apache, &v("DriverEvicted"));
    assert_eq!(
        evicted.state.as_str(),
        "DriverEvicted",
        "the state that ended it"
    );
    assert_eq!(phase("DriverEvicted"), OperatorPhase::Failed);
    assert_eq!(phase("RunningHealthy"), OperatorPhase::Unknown);
}

#[test]
fn every_documented_state_has_a_phase() {
    for s in [
        "NEW",
        "SUBMITTED",
        "RUNNING",
        "COMPLETED",
        "FAILED",
        "SUBMISSION_FAILED",
        "PENDING_RERUN",
        "INVALIDATING",
        "SUCCEEDING",
        "FAILING",
        "SUSPENDING",
        "SUSPENDED",
        "RESUMING",
    ] {
        assert_ne!(
            OperatorPhase::of(OperatorKind::Kubeflow, s),
            OperatorPhase::Unknown,
            "{s}"
        );
    }
    assert_eq!(
        OperatorPhase::of(OperatorKind::Kubeflow, "UNKNOWN"),
        OperatorPhase::Unknown
    );
    for s in [
        "Submitted",
        "ScheduledToRestart",
        "DriverRequested",
        "DriverStarted",
        "DriverReady",
        "InitializedBelowThresholdExecutors",
        "RunningHealthy",
        "RunningWithBelowThresholdExecutors",
        "DriverStartTimedOut",
        "ExecutorsStartTimedOut",
        "DriverReadyTimedOut",
        "Succeeded",
        "Failed",
        "SchedulingFailure",
        "DriverEvicted",
    ] {
        assert_ne!(
            OperatorPhase::of(OperatorKind::Apache, s),
            OperatorPhase::Unknown,
            "{s}"
        );
    }
}

#[test]
fn a_hostile_object_is_bounded_and_never_fails() {
    for v in [
        json!(null),
        json!([]),
        json!({"status": 7}),
        json!({"metadata": {"name": 3}}),
    ] {
        for kind in OperatorKind::ALL {
            let app = OperatorApp::from_value(kind, &v);
            assert_eq!(app.phase, OperatorPhase::New);
            assert!(app.name.is_empty());
        }
    }
    let long = "é".repeat(10_000);
    let mut v = kubeflow_refused();
    v["status"]["applicationState"]["errorMessage"] = json!(long);
    let app = OperatorApp::from_value(OperatorKind::Kubeflow, &v);
    assert!(app.message.unwrap().len() <= 4096);
    let history: serde_json::Map<String, serde_json::Value> = (0..1000)
        .map(|i| (i.to_string(), json!({"currentStateSummary": "Failed"})))
        .collect();
    let v = json!({"status": {"stateTransitionHistory": history}});
    assert_eq!(
        OperatorApp::from_value(OperatorKind::Apache, &v)
            .history
            .len(),
        MAX_HISTORY
    );
}

/// What keeps a finished driver pod: kubeflow's TTL (none: forever), Apache's retain policy
/// and duration (its default deletes the driver's resources at the end).
#[test]
fn the_operators_retention_is_read() {
    let kubeflow = |spec: serde_json::Value| {
        OperatorApp::from_value(
            OperatorKind::Kubeflow,
            &json!({"metadata": {"name": "a", "namespace": "etl"}, "spec": spec}),
        )
    };
    assert_eq!(kubeflow(json!({})).keeps_driver(false), Some(None));
    assert_eq!(
        kubeflow(json!({"timeToLiveSeconds": 3600})).keeps_driver(false),
        Some(Some(3600))
    );
    let apache = |tolerations: serde_json::Value| {
        OperatorApp::from_value(
            OperatorKind::Apache,
            &json!({"metadata": {"name": "a", "namespace": "etl"},
                    "spec": {"applicationTolerations": tolerations}}),
        )
    };
    assert_eq!(apache(json!({})).keeps_driver(true), None);
    let on_failure = apache(
        json!({"resourceRetainPolicy": "OnFailure", "resourceRetainDurationMillis": 600_000}),
    );
    assert_eq!(on_failure.keeps_driver(true), Some(Some(600)));
    assert_eq!(on_failure.keeps_driver(false), None);
    assert_eq!(
        apache(json!({"resourceRetainPolicy": "Always"})).keeps_driver(false),
        Some(None)
    );
    // The app's own TTL when shorter; a restarting app's resources go after each attempt.
    assert_eq!(
        apache(json!({"resourceRetainPolicy": "Always", "ttlAfterStopMillis": 60_000}))
            .keeps_driver(false),
        Some(Some(60))
    );
    assert_eq!(
        apache(json!({"resourceRetainPolicy": "Always",
                      "restartConfig": {"restartPolicy": "OnFailure"}}))
        .keeps_driver(true),
        None
    );
}
