use serde_json::json;

use super::*;
use crate::model::GroupKind;

fn kubeflow(state: &str, message: &str) -> OperatorApp {
    OperatorApp::from_value(
        OperatorKind::Kubeflow,
        &json!({
            "metadata": {"name": "nightly", "namespace": "etl",
                         "creationTimestamp": "2026-12-01T02:00:00Z"},
            "spec": {"restartPolicy": {"type": "OnFailure", "onFailureRetries": 3,
                                       "onSubmissionFailureRetries": 1}},
            "status": {"applicationState": {"state": state, "errorMessage": message},
                       "submissionAttempts": 2, "executionAttempts": 1,
                       "lastSubmissionAttemptTime": "2026-12-01T02:01:00Z"}
        }),
    )
}

fn now() -> Time {
    chrono::DateTime::parse_from_rfc3339("2026-12-01T02:10:00Z")
        .unwrap()
        .to_utc()
}

fn one(app: &OperatorApp, admission: Option<&SchedGroup>, driver_seen: bool) -> Finding {
    let f = findings(
        &OperatorFacts {
            app,
            admission,
            driver_seen,
        },
        now(),
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    f.into_iter().next().unwrap()
}

const QUOTA: &str = "failed to submit spark application: failed to run spark-submit: Exception in \
    thread \"main\" io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: POST \
    at: https://kubernetes.default.svc/api/v1/namespaces/etl/pods. Message: pods \"nightly-driver\" \
    is forbidden: exceeded quota: etl-quota, requested: requests.cpu=1, used: requests.cpu=0, \
    limited: requests.cpu=500m. Received status: Status(apiVersion=v1, code=403, kind=Status, \
    message=…, reason=Forbidden, status=Failure).";

#[test]
fn a_refused_submission_names_the_quota_and_the_attempts() {
    let f = one(&kubeflow("SUBMISSION_FAILED", QUOTA), None, false);
    assert_eq!(f.code, Code::SubmissionFailed);
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.witness, Witness::Operator);
    assert_eq!(
        f.summary,
        "The kubeflow spark-operator could not submit it: the ResourceQuota etl-quota refused the \
         driver pod (requested: requests.cpu=1, used: requests.cpu=0, limited: requests.cpu=500m) \
         (2 submission(s) tried, no more allowed); no pod was made"
    );
    assert!(
        f.hint
            .contains("kubectl describe resourcequota etl-quota -n etl"),
        "{}",
        f.hint
    );
    assert!(
        f.evidence[0].contains("state SUBMISSION_FAILED, 2 submission(s)"),
        "{:?}",
        f.evidence
    );
}

#[test]
fn each_refusal_is_read_for_its_cause() {
    assert_eq!(
        refused(
            "admission webhook \"validate.kyverno.svc-fail\" denied the request: \
                 resource Pod/etl/x was blocked due to the following policies require-labels"
        ),
        Refused::Webhook {
            webhook: "validate.kyverno.svc-fail".into(),
            said: "resource Pod/etl/x was blocked due to the following policies require-labels"
                .into()
        }
    );
    assert_eq!(
        refused(
            "Message: pods is forbidden: User \"system:serviceaccount:spark-operator:spark-operator-spark\" \
                 cannot create resource \"pods\" in API group \"\" in the namespace \"etl\". Received"
        ),
        Refused::Rbac {
            who: "system:serviceaccount:spark-operator:spark-operator-spark".into(),
            verb: "create".into(),
            resource: "pods".into(),
            namespace: "etl".into()
        }
    );
    assert_eq!(
        refused(
            "Message: Pod \"x-driver\" is invalid: spec.containers[0].image: Required value. Received status"
        ),
        Refused::Invalid {
            said: "spec.containers[0].image: Required value".into()
        }
    );
    assert_eq!(
        refused("line one\nconnection refused\n"),
        Refused::Other {
            said: "connection refused".into()
        }
    );
}

#[test]
fn a_pending_rerun_counts_against_the_policy() {
    let f = one(
        &kubeflow(
            "PENDING_RERUN",
            "driver container failed with ExitCode: 1, Reason: Error",
        ),
        None,
        false,
    );
    assert_eq!(f.code, Code::RerunPending);
    assert_eq!(
        f.summary,
        "Run 1 failed (driver container failed with ExitCode: 1, Reason: Error); the kubeflow \
         spark-operator reruns it: rerun 1 of 3 its restart policy allows"
    );
}

#[test]
fn a_suspended_app_waits_on_its_workload() {
    let mut app = kubeflow("SUSPENDED", "");
    app.queue = Some("analytics-queue".into());
    app.suspended = true;
    let wl = SchedGroup::from_value(
        GroupKind::KueueWorkload,
        &json!({"metadata": {"name": "sparkapplication-nightly-1a2b3", "namespace": "etl",
                             "ownerReferences": [{"kind": "SparkApplication", "name": "nightly"}]},
                "spec": {"queueName": "analytics-queue"},
                "status": {"conditions": [{"type": "QuotaReserved", "status": "False",
                    "reason": "Pending", "message": "couldn't assign flavors to pod set driver: \
                    insufficient unused quota for cpu in flavor default-flavor, 4 more needed"}]}}),
    );
    let f = one(&app, Some(&wl), false);
    assert_eq!(f.code, Code::AdmissionWaiting);
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.summary.starts_with(
            "Waiting for admission: Kueue has not admitted the Workload \
             sparkapplication-nightly-1a2b3 (LocalQueue analytics-queue): couldn't assign"
        ),
        "{}",
        f.summary
    );
    assert!(
        f.evidence.iter().any(|e| e.contains("QuotaReserved=False")),
        "{:?}",
        f.evidence
    );
    // Without its Workload read, the wait is still said.
    let f = one(&app, None, false);
    assert_eq!(f.code, Code::AdmissionWaiting);
    assert!(
        f.summary.contains("LocalQueue analytics-queue"),
        "{}",
        f.summary
    );
}

#[test]
fn the_operators_end_stands_only_without_a_driver() {
    let failed = kubeflow(
        "FAILED",
        "driver container failed with ExitCode: 137, Reason: OOMKilled",
    );
    let f = one(&failed, None, false);
    assert_eq!((f.code, f.severity), (Code::DriverFailed, Severity::Error));
    assert!(
        findings(
            &OperatorFacts {
                app: &failed,
                admission: None,
                driver_seen: true
            },
            now()
        )
        .is_empty()
    );
    let done = kubeflow("COMPLETED", "");
    assert_eq!(one(&done, None, false).code, Code::AppSucceeded);
    let submitted = kubeflow("SUBMITTED", "");
    let f = one(&submitted, None, false);
    assert_eq!(f.code, Code::DriverNotSeen);
    assert_eq!(
        f.summary,
        "The kubeflow spark-operator: submitted 9m00s ago; no driver pod seen yet"
    );
}

#[test]
fn a_message_with_credentials_or_controls_is_made_safe() {
    let f = one(
        &kubeflow(
            "FAILED",
            "boom \u{1b}[2J token=hunter2hunter2 AWS_SECRET_ACCESS_KEY=abc\nnext",
        ),
        None,
        false,
    );
    let all = format!("{} {:?}", f.summary, f.evidence);
    assert!(
        !all.contains('\u{1b}') && !all.contains("hunter2") && !all.contains('\n'),
        "{all}"
    );
}

#[test]
fn spent_submission_retries_end_failed_and_still_read_as_a_refused_submission() {
    let f = one(&kubeflow("FAILED", QUOTA), None, false);
    assert_eq!(f.code, Code::SubmissionFailed, "{f:#?}");
    assert!(f.summary.contains("no more allowed"), "{}", f.summary);
}

#[test]
fn failing_with_retries_left_is_a_rerun_to_come_and_always_has_no_limit() {
    let failing = kubeflow(
        "FAILING",
        "driver container failed with ExitCode: 1, Reason: Error",
    );
    assert_eq!(one(&failing, None, false).code, Code::RerunPending);
    let mut always = failing.clone();
    always.restart.policy = Some("Always".into());
    let f = one(&always, None, false);
    assert!(
        f.summary
            .ends_with("as its restart policy allows (no limit said)"),
        "{}",
        f.summary
    );
    let mut spent = failing;
    spent.execution_attempts = Some(4);
    // Four runs of 1 + 3 reruns: FAILING ends FAILED, no rerun to come.
    assert_eq!(one(&spent, None, false).code, Code::DriverFailed);
}

#[test]
fn an_admitted_object_about_to_be_submitted_does_not_wait() {
    let mut app = kubeflow("RESUMING", "");
    app.queue = Some("analytics-queue".into());
    let wl = SchedGroup::from_value(
        GroupKind::KueueWorkload,
        &json!({"metadata": {"name": "w", "namespace": "etl"},
                "status": {"conditions": [{"type": "Admitted", "status": "True"}]}}),
    );
    assert_eq!(one(&app, Some(&wl), false).code, Code::DriverNotSeen);
}

#[test]
fn the_parts_of_a_refusal_are_made_safe() {
    let Refused::Webhook { said, .. } = refused(
        "admission webhook \"w\" denied the request: token=hunter2hunter2 \u{1b}[2J said no",
    ) else {
        panic!("a webhook")
    };
    assert!(
        !said.contains("hunter2") && !said.contains('\u{1b}'),
        "{said}"
    );
}

#[test]
fn a_workload_kueue_evicted_or_preempted_says_so_before_its_wait() {
    let mut app = kubeflow("SUSPENDED", "");
    app.queue = Some("analytics-queue".into());
    app.suspended = true;
    let wl = SchedGroup::from_value(
        GroupKind::KueueWorkload,
        &json!({"metadata": {"name": "w", "namespace": "etl"},
                "status": {"conditions": [
                    {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "insufficient quota"},
                    {"type": "Evicted", "status": "True", "reason": "Preempted",
                     "message": "Preempted to accommodate a workload (UID: 1) due to prioritization in the ClusterQueue"}]}}),
    );
    let f = one(&app, Some(&wl), false);
    assert_eq!(
        (f.code, f.severity),
        (Code::AdmissionWaiting, Severity::Error)
    );
    assert!(
        f.summary
            .starts_with("Kueue preempted the Workload w (Preempted): Preempted to accommodate"),
        "{}",
        f.summary
    );
    assert!(f.hint.contains("WorkloadPriorityClass"), "{}", f.hint);
}
