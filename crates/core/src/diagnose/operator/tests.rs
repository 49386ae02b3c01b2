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

/// A kubeflow ScheduledSparkApplication as the operator writes it after starting a run.
fn scheduled(policy: Option<&str>, state: &str, next_run: &str) -> OperatorApp {
    let mut spec = json!({"schedule": "0 2 * * *", "timeZone": "UTC",
                          "template": {"type": "Scala"}});
    if let Some(p) = policy {
        spec["concurrencyPolicy"] = json!(p);
    }
    OperatorApp::from_value(
        OperatorKind::KubeflowScheduled,
        &json!({
            "metadata": {"name": "nightly", "namespace": "etl"},
            "spec": spec,
            "status": {"scheduleState": state, "reason": "",
                       "lastRun": "2026-11-30T02:00:00Z", "nextRun": next_run,
                       "lastRunName": "nightly-1764468000",
                       "pastFailedRunNames": ["nightly-1764381600"]}
        }),
    )
}

fn with_last_state(mut app: OperatorApp, state: &str) -> OperatorApp {
    app.schedule.as_mut().unwrap().last_run_state = Some(state.into());
    app
}

#[test]
fn a_schedule_is_projected_with_its_runs() {
    let app = scheduled(Some("Forbid"), "Scheduled", "2026-12-01T02:00:00Z");
    assert_eq!(app.phase, OperatorPhase::Running);
    assert_eq!(app.title(), "ScheduledSparkApplication etl/nightly");
    assert_eq!(
        app.describe_command(),
        "kubectl describe scheduledsparkapplications.sparkoperator.k8s.io -n etl nightly"
    );
    let s = app.schedule.as_deref().unwrap();
    assert_eq!(s.cron.as_deref(), Some("0 2 * * *"));
    assert_eq!(s.concurrency.as_deref(), Some("Forbid"));
    assert_eq!(s.last_run_name.as_deref(), Some("nightly-1764468000"));
    assert_eq!(s.past_failed.len(), 1);
    // kubeflow writes a zero time as null.
    let none = OperatorApp::from_value(
        OperatorKind::KubeflowScheduled,
        &json!({"metadata": {"name": "x"}, "status": {"nextRun": null, "lastRun": null}}),
    );
    assert_eq!(none.schedule.as_deref().unwrap().next_run, None);
    assert_eq!(none.phase, OperatorPhase::New);
    // Its runs' pods carry their run's name: a schedule never joins pods.
    assert_eq!(OperatorKind::KubeflowScheduled.pod_label(), None);
}

#[test]
fn a_run_due_and_not_started_under_forbid_names_the_run_still_running() {
    // Due at 02:00, 10 minutes ago; the last run is still RUNNING.
    let app = with_last_state(
        scheduled(Some("Forbid"), "Scheduled", "2026-12-01T02:00:00Z"),
        "RUNNING",
    );
    let f = one(&app, None, false);
    assert_eq!((f.code, f.severity), (Code::RunsSkipped, Severity::Error));
    assert_eq!(
        f.summary,
        "The run due at 2026-12-01T02:00:00Z has not started: the last run nightly-1764468000 \
         is still RUNNING and concurrencyPolicy is Forbid, so the operator skips every run due \
         until it ends"
    );
    assert_eq!(
        f.evidence[0],
        "ScheduledSparkApplication etl/nightly: schedule \"0 2 * * *\" (UTC), concurrencyPolicy \
         Forbid, state Scheduled"
    );
    assert!(f.evidence[1].contains("state RUNNING"), "{:?}", f.evidence);
    assert!(
        f.evidence[2].contains("nightly-1764381600"),
        "{:?}",
        f.evidence
    );
}

#[test]
fn an_unset_policy_starts_no_run_while_an_earlier_one_exists() {
    // A past run's object still there (the last one's gone): kubeflow starts none.
    let mut app = scheduled(None, "Scheduled", "2026-12-01T02:00:00Z");
    app.schedule.as_mut().unwrap().run_present = Some("nightly-1764468000".into());
    let f = one(&app, None, false);
    assert_eq!(f.code, Code::RunsSkipped);
    assert!(
        f.summary.contains(
            "concurrencyPolicy is not set, and the operator starts no run while an earlier \
             run's SparkApplication (nightly-1764468000) exists"
        ),
        "{}",
        f.summary
    );
    assert!(f.hint.contains("Set spec.concurrencyPolicy"), "{}", f.hint);
}

#[test]
fn a_run_due_whose_last_run_is_not_there_is_the_operator_not_acting() {
    // Forbid or unset: without the last run's object the operator starts the next.
    for policy in [Some("Forbid"), None] {
        let app = scheduled(policy, "Scheduled", "2026-12-01T02:00:00Z");
        let f = one(&app, None, false);
        assert!(
            f.summary.ends_with(
                "the operator did not start it (its last run nightly-1764468000 is not among \
                 the SparkApplications read)"
            ),
            "{}",
            f.summary
        );
    }
}

#[test]
fn a_schedule_no_operator_took_up_is_said_after_five_minutes() {
    let fresh = |created: &str| {
        OperatorApp::from_value(
            OperatorKind::KubeflowScheduled,
            &json!({"metadata": {"name": "nightly", "namespace": "etl",
                                 "creationTimestamp": created},
                    "spec": {"schedule": "0 2 * * *"}}),
        )
    };
    let f = one(&fresh("2026-12-01T02:00:00Z"), None, false);
    assert_eq!(f.code, Code::RunsSkipped);
    assert!(
        f.summary.starts_with(
            "ScheduledSparkApplication etl/nightly was never scheduled: no scheduleState since \
             it was created at 2026-12-01T02:00:00Z"
        ),
        "{}",
        f.summary
    );
    let facts = findings(
        &OperatorFacts {
            app: &fresh("2026-12-01T02:07:00Z"),
            admission: None,
            driver_seen: false,
        },
        now(),
    );
    assert!(facts.is_empty(), "{facts:?}");
}

#[test]
fn a_run_due_while_the_last_one_ran_late_is_a_warning_until_the_next_slot() {
    let mut app = with_last_state(
        scheduled(Some("Forbid"), "Scheduled", "2026-12-01T02:00:00Z"),
        "COMPLETED",
    );
    let ended = chrono::DateTime::parse_from_rfc3339("2026-12-01T02:05:00Z").unwrap();
    app.schedule.as_mut().unwrap().last_run_ended = Some(ended.to_utc());
    let f = one(&app, None, false);
    assert_eq!((f.code, f.severity), (Code::RunsSkipped, Severity::Warn));
    assert!(
        f.summary.ends_with(
            "the last run nightly-1764468000 still ran then (it ended COMPLETED at \
             2026-12-01T02:05:00Z) and concurrencyPolicy is Forbid: the operator skipped it, \
             and starts the next run at the next scheduled time"
        ),
        "{}",
        f.summary
    );
}

#[test]
fn a_run_due_with_the_last_one_finished_is_the_operator_not_acting() {
    let app = with_last_state(
        scheduled(Some("Forbid"), "Scheduled", "2026-12-01T02:00:00Z"),
        "FAILED",
    );
    let f = one(&app, None, false);
    assert!(
        f.summary
            .ends_with("has not started: the operator did not start it"),
        "{}",
        f.summary
    );
    assert!(f.hint.contains("Is the operator running"), "{}", f.hint);
}

#[test]
fn a_run_within_the_grace_or_suspended_or_ahead_is_not_skipped() {
    let facts = |app: &OperatorApp| {
        findings(
            &OperatorFacts {
                app,
                admission: None,
                driver_seen: false,
            },
            now(),
        )
    };
    // Due a minute ago: the operator starts it within seconds; a minute is its grace.
    let soon = scheduled(Some("Forbid"), "Scheduled", "2026-12-01T02:09:00Z");
    assert!(facts(&soon).is_empty());
    assert!(overdue(&soon, now()).is_none());
    let ahead = scheduled(Some("Forbid"), "Scheduled", "2026-12-02T02:00:00Z");
    assert!(facts(&ahead).is_empty());
    let mut suspended = scheduled(Some("Forbid"), "Scheduled", "2026-12-01T01:00:00Z");
    suspended.suspended = true;
    assert!(facts(&suspended).is_empty());
}

#[test]
fn a_schedule_that_failed_validation_runs_nothing() {
    let mut app = scheduled(Some("Allow"), "FailedValidation", "");
    app.message = Some("expected exactly 5 fields, found 6: [0 0 2 * * *]\u{1b}[31m".into());
    let f = one(&app, None, false);
    assert_eq!(
        (f.code, f.severity),
        (Code::ScheduleInvalid, Severity::Error)
    );
    assert!(
        f.summary.starts_with(
            "ScheduledSparkApplication etl/nightly runs nothing: its schedule failed validation \
             (expected exactly 5 fields, found 6: [0 0 2 * * *]"
        ),
        "{}",
        f.summary
    );
    assert!(!f.summary.contains('\u{1b}'), "{}", f.summary);
    assert!(f.hint.contains("delete and re-apply"), "{}", f.hint);
}

/// A schedule's read is itself a witness once its due run is past the grace (the operator
/// writes nothing while it skips) or no operator has taken it up in five minutes: once, the
/// first read after that moment since the list was last sent; a run's own object never.
#[test]
fn a_due_schedules_read_is_a_witness_once() {
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
    let schedule = |state: &str| {
        OperatorApp::from_value(
            OperatorKind::KubeflowScheduled,
            &json!({"metadata": {"name": "nightly", "namespace": "etl",
                                 "creationTimestamp": "2026-12-06T09:00:00Z"},
                    "spec": {"schedule": "@hourly"},
                    "status": {"scheduleState": state, "nextRun": "2026-12-06T10:00:00Z"}}),
        )
    };
    let due = schedule("Scheduled");
    let sent = Some(at("2026-12-06T09:59:00Z"));
    assert!(
        !read_is_witness(&due, sent, at("2026-12-06T10:00:30Z")),
        "within the grace"
    );
    assert!(read_is_witness(&due, sent, at("2026-12-06T10:01:30Z")));
    // Whatever the poll interval: a day later, still the first read since.
    assert!(read_is_witness(&due, sent, at("2026-12-07T10:00:00Z")));
    // Sent after that moment: nothing new.
    let after = Some(at("2026-12-06T10:01:30Z"));
    assert!(!read_is_witness(&due, after, at("2026-12-06T10:02:00Z")));
    let unseen = schedule("");
    assert!(read_is_witness(&unseen, None, at("2026-12-06T09:06:00Z")));
    assert!(!read_is_witness(&unseen, None, at("2026-12-06T09:04:00Z")));
    let run = OperatorApp::from_value(
        OperatorKind::Kubeflow,
        &json!({"metadata": {"name": "nightly-1", "namespace": "etl"}}),
    );
    assert!(!read_is_witness(&run, None, at("2026-12-06T10:01:30Z")));
}
