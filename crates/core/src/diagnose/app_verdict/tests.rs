//! The application verdict, on driver pods shaped like real ones (a Spark 3.4/4.x driver
//! as `spark-submit` creates it: `spark-kubernetes-driver`, 1408Mi for 1g + 384m).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::*;
use crate::diagnose::NO_GROUPS;
use crate::diagnose::advice::{Case, groups};
use crate::diagnose::app::AppFacts;
use crate::diagnose::budget::FailureBudget;
use crate::diagnose::config::{Settings, config_findings};
use crate::model::testing::{self, container_status, event, merge, pod};
use crate::version::SparkVersion;
use crate::{diagnose, version};

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn now() -> DateTime<Utc> {
    at("2026-11-29T10:30:00Z")
}

/// The driver of `spark-abc` on Spark 3.4.1 (`etl-driver`, 1408Mi, created at 10:00, on
/// node-a), with this `status` and `meta_extra` merged over it.
fn driver(status: Value, meta_extra: Value) -> ExecutorPod {
    testing::driver()
        .meta(json!({"creationTimestamp": "2026-11-29T10:00:00Z", "labels": {"spark-version": "3.4.1"}}))
        .spec(json!({"nodeName": "node-a"}))
        .container(json!({"image": "apache/spark:3.4.1"}))
        .meta(meta_extra)
        .status(status)
        .build()
}

/// The driver container's status (apache/spark:3.4.1) in `state`, with `extra` merged over it.
fn driver_status(state: Value, extra: Value) -> Value {
    merge(
        container_status("spark-kubernetes-driver", state),
        merge(json!({"image": "apache/spark:3.4.1"}), extra),
    )
}

fn terminated(code: i32, reason: &str, restarts: i32) -> Value {
    let state = merge(
        testing::terminated(code, reason),
        json!({"terminated": {"startedAt": "2026-11-29T10:00:05Z", "finishedAt": "2026-11-29T10:20:00Z"}}),
    );
    json!({"phase": if code == 0 { "Succeeded" } else { "Failed" }, "containerStatuses": [
        driver_status(state, json!({"restartCount": restarts}))]})
}

fn running() -> Value {
    json!({"phase": "Running", "containerStatuses": [driver_status(
        json!({"running": {"startedAt": "2026-11-29T10:00:05Z"}}),
        json!({"ready": true}),
    )]})
}

fn evidence<'a>(p: &'a ExecutorPod, events: &'a [PodEvent]) -> DriverEvidence<'a> {
    DriverEvidence {
        pod: p,
        ended: None,
        ended_seen: None,
        events,
        gone: DriverGone::No,
        gone_at: None,
        log_tail: None,
        groups: &NO_GROUPS,
    }
}

fn verdict_of(d: DriverEvidence<'_>, app_findings: &[Finding]) -> AppVerdict {
    app_verdict(&AppEvidence {
        driver: Some(d),
        driver_phase: None,
        logged_end: None,
        unfinished: false,
        app_findings,
        executors: ExecutorTally::default(),
        now: now(),
        operator: None,
    })
}

#[test]
fn a_driver_oom_kill_gets_driver_advice_with_a_value() {
    let p = driver(terminated(137, "OOMKilled", 0), json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    let c = v.cause();
    assert_eq!(c.code, Code::DriverOomKilled);
    assert_eq!(c.severity, Severity::Error);
    assert!(c.summary.contains("1408Mi"), "{}", c.summary);
    assert!(
        c.hint.contains("--conf spark.driver.memoryOverhead=768m"),
        "{}",
        c.hint
    );
    assert!(!c.hint.contains("spark.executor."), "{}", c.hint);
    assert!(c.evidence[0].contains("exitCode=137 reason=OOMKilled"));
    assert_eq!(v.label(), "driver OOMKilled (137)");
    let end = v.end.clone().expect("ended");
    assert_eq!(end.label, "OOMKilled, 137");
    assert!(end.failed);
    assert_eq!(end.at, at("2026-11-29T10:20:00Z"));
    let d = v.driver.unwrap();
    assert_eq!((d.state, d.exit_code), (ExecutorState::Failed, Some(137)));
}

#[test]
fn exit_52_and_a_logged_oom_are_the_drivers_heap() {
    let p = driver(terminated(52, "Error", 0), json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverJvmOom);
    assert!(v.cause().hint.contains("spark.driver.memory"));
    assert!(v.cause().hint.contains("spark.driver.maxResultSize"));
    // Exit 1 with an OutOfMemoryError in the log: the log names the heap.
    let p = driver(terminated(1, "Error", 0), json!({}));
    let log = vec![
        "26/11/29 10:19:59 ERROR SparkContext: Error initializing".to_owned(),
        "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space".to_owned(),
    ];
    let mut d = evidence(&p, &[]);
    d.log_tail = Some(&log);
    let v = verdict_of(d, &[]);
    let codes: Vec<Code> = v.findings.iter().map(|f| f.code).collect();
    assert_eq!(v.cause().code, Code::DriverJvmOom, "{codes:?}");
    assert_eq!(v.cause().witness, Witness::LogTail);
    assert!(codes.contains(&Code::DriverFailed));
}

/// A driver that failed with its own last words: the exception Spark annotated on the pod
/// (`spark.exit-exception`, Spark 4.1+ and Apache's operator), else its container's
/// termination message. Either is quoted in the verdict's headline and preferred to the
/// log's last exception (a guess); an OutOfMemoryError among them names the heap.
#[test]
fn the_drivers_own_last_words_are_its_cause_before_the_logs() {
    let stack = "org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `etl`.`orders` cannot be found.\n\
                 \tat org.apache.spark.sql.catalyst.analysis.package$AnalysisErrorAt.tableNotFound(package.scala:91)\n\
                 \tat com.example.Nightly$.main(Nightly.scala:42)\n\
                 Caused by: java.io.FileNotFoundException: s3a://lake/etl/orders/_delta_log\n\
                 \tat org.apache.hadoop.fs.s3a.S3AFileSystem.getFileStatus(S3AFileSystem.java:3866)\n";
    let p = driver(
        terminated(1, "Error", 0),
        json!({"annotations": {"spark.exit-exception": stack}}),
    );
    let log = vec!["Exception in thread \"main\" java.lang.RuntimeException: a guess".to_owned()];
    let mut d = evidence(&p, &[]);
    d.log_tail = Some(&log);
    let v = verdict_of(d, &[]);
    let c = v.cause();
    assert_eq!(c.code, Code::DriverFailed);
    assert!(
        c.summary.starts_with("The driver failed (exit 1")
            && c.summary.ends_with(
                "): org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `etl`.`orders` cannot be found."
            ),
        "{}",
        c.summary
    );
    assert!(
        c.evidence.iter().any(|e| e
            == "spark.exit-exception: root cause: java.io.FileNotFoundException: s3a://lake/etl/orders/_delta_log"),
        "{:?}",
        c.evidence
    );
    assert!(
        !c.evidence.iter().any(|e| e.starts_with("log:")),
        "{:?}",
        c.evidence
    );
    assert!(
        c.hint.contains(
            "what failed first (spark.exit-exception, its innermost Caused by): java.io.FileNotFoundException"
        ),
        "{}",
        c.hint
    );

    // No annotation (Spark before 4.1, or it is off): the termination message speaks.
    let mut status = terminated(1, "Error", 0);
    status["containerStatuses"][0]["state"]["terminated"]["message"] = json!(
        "java.lang.IllegalArgumentException: --date must be YYYY-MM-DD, got 2026-13-01; token=s3cr3t\n"
    );
    let p = driver(status, json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert!(
        v.cause().summary.ends_with(
            "): java.lang.IllegalArgumentException: --date must be YYYY-MM-DD, got 2026-13-01; token=*********(redacted)"
        ),
        "{}",
        v.cause().summary
    );
    assert!(
        v.cause()
            .evidence
            .iter()
            .any(|e| e.starts_with("terminated.message: java.lang.IllegalArgumentException"))
    );

    // The main's OutOfMemoryError, exit 1: the heap, said from the pod.
    let p = driver(
        terminated(1, "Error", 0),
        json!({"annotations": {"spark.exit-exception":
            "java.lang.OutOfMemoryError: Java heap space\n\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)\n"}}),
    );
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverJvmOom);
    assert_eq!(v.cause().witness, Witness::Pod);
    assert!(
        v.cause()
            .summary
            .contains("exit exception is a JVM OutOfMemoryError")
    );

    // A connection string's password in the exception is not kept.
    let p = driver(
        terminated(1, "Error", 0),
        json!({"annotations": {"spark.exit-exception":
            "org.postgresql.util.PSQLException: FATAL: no pg_hba.conf entry (url jdbc:postgresql://etl:hunter2@db.internal:5432/ledger, password=hunter2)\n"}}),
    );
    let kept = p.exit_exception.as_deref().expect("kept");
    assert!(!kept.contains("hunter2"), "{kept}");
    assert!(kept.contains("*********(redacted)"), "{kept}");

    // A real stack: a hundred frames before its causes; the frames go, the causes stay,
    // and an executor's OOM quoted in a stage failure is not the driver's.
    let frames = "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2898)\n".repeat(100);
    let stack = format!(
        "org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times, most recent failure: Lost task 0.3 in stage 3.0 (TID 17) (10.0.0.7 executor 3): java.lang.OutOfMemoryError: Java heap space\n\
         {frames}Caused by: org.apache.spark.SparkException: stage 3 failed\n{frames}\t... 12 more\n\
         \tSuppressed: java.lang.IllegalStateException: not the cause\n\t\tCaused by: java.lang.RuntimeException: nor this\n\
         Caused by: java.io.IOException: No space left on device\n{frames}\t... 40 more\n"
    );
    let p = driver(
        terminated(1, "Error", 0),
        json!({"annotations": {"spark.exit-exception": stack}}),
    );
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverFailed, "{:?}", v.cause());
    assert!(
        v.cause().hint.contains(
            "(spark.exit-exception, its innermost Caused by): java.io.IOException: No space left on device."
        ),
        "{}",
        v.cause().hint
    );
    assert!(
        p.exit_exception
            .as_deref()
            .is_some_and(|t| !t.contains("\tat "))
    );

    // Spark's 64 KiB annotation (a message of many lines: a query plan) is kept to its bound.
    let long = format!(
        "java.lang.IllegalStateException: x\n{}",
        "+- Project [id#1, amount#2]\n".repeat(3000)
    );
    let p = driver(
        terminated(1, "Error", 0),
        json!({"annotations": {"spark.exit-exception": long}}),
    );
    let kept = p.exit_exception.as_deref().expect("kept");
    assert!(
        kept.len() <= 4 * 1024 && kept.ends_with('…'),
        "{}",
        kept.len()
    );
}

#[test]
fn exit_11_names_the_budget_and_the_executors_causes() {
    let p = driver(terminated(11, "Error", 0), json!({}));
    let crash = Finding::new(
        Code::CrashLoop,
        Severity::Error,
        "10 × container-oom-killed",
    );
    let v = verdict_of(evidence(&p, &[]), std::slice::from_ref(&crash));
    assert_eq!(v.cause().code, Code::ExecutorFailuresExceeded);
    assert!(v.cause().hint.contains("spark.executor.maxNumFailures"));
    assert!(
        v.cause()
            .evidence
            .iter()
            .any(|e| e.contains("crash-loop: 10 × container-oom-killed")),
        "{:?}",
        v.cause().evidence
    );
    assert_eq!(v.findings[1].code, Code::CrashLoop);
}

#[test]
fn other_exits_say_sparks_text_and_exit_0_is_success() {
    let p = driver(terminated(1, "Error", 0), json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverFailed);
    assert!(
        v.cause()
            .summary
            .contains("1(generic, look at logs to clarify)"),
        "{}",
        v.cause().summary
    );
    let p = driver(terminated(0, "Completed", 0), json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::AppSucceeded);
    assert_eq!(v.severity(), Severity::Info);
    assert!(!v.end.unwrap().failed);
}

#[test]
fn sigterm_past_the_grace_is_a_stop_not_a_failure() {
    // kubeflow/spark-operator#2775: the driver is deleted, spark.stop() runs past the grace.
    let p = driver(
        terminated(143, "Error", 0),
        json!({"deletionTimestamp": "2026-11-29T10:20:30Z", "deletionGracePeriodSeconds": 30}),
    );
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverDeleted, "{:?}", v.findings);
    assert_eq!(v.severity(), Severity::Warn);
    assert!(
        v.cause().summary.contains("not failed by its code"),
        "{}",
        v.cause().summary
    );
    // SIGTERM with no deletion seen: stopped from outside.
    let p = driver(terminated(143, "Error", 0), json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverStopped);
    assert!(v.cause().summary.contains("not a failure"));
    assert!(!v.end.unwrap().failed);
}

#[test]
fn a_pending_driver_says_why_with_driver_settings() {
    let status = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}]});
    let mut p = driver(status, json!({}));
    p.node_name = None;
    let v = verdict_of(evidence(&p, &[]), &[]);
    let c = v.cause();
    assert_eq!(c.code, Code::DriverPending);
    assert!(c.summary.contains("Insufficient memory"), "{}", c.summary);
    assert!(c.hint.contains("spark.driver.memory"), "{}", c.hint);
    assert!(!c.hint.contains("executor"), "{}", c.hint);
    assert!(!c.scheduling.is_empty());
    assert!(v.end.is_none());
    // An image pull.
    let status = json!({"phase": "Pending", "containerStatuses": [driver_status(
        json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"apache/spark:3.4.9\""}}),
        json!({"image": "apache/spark:3.4.9"}),
    )]});
    let p = driver(status, json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverPending);
    assert!(
        v.cause().summary.contains("ImagePullBackOff"),
        "{}",
        v.cause().summary
    );
}

#[test]
fn eviction_and_preemption_of_the_driver_end_the_app() {
    let status = json!({"phase": "Failed", "reason": "Evicted",
        "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."});
    let p = driver(status, json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverEvicted);
    assert!(v.cause().hint.contains("PriorityClass"));
    let ev = event(json!({
        "metadata": {"name": "etl-driver.1", "namespace": "spark-jobs"},
        "involvedObject": {"kind": "Pod", "name": "etl-driver", "namespace": "spark-jobs", "uid": "uid-driver"},
        "reason": "Preempted", "message": "Preempted by pod 1234-abcd on node node-a", "type": "Normal",
        "firstTimestamp": "2026-11-29T10:19:00Z", "lastTimestamp": "2026-11-29T10:19:00Z", "count": 1}));
    let p = driver(
        terminated(143, "Error", 0),
        json!({"deletionTimestamp": "2026-11-29T10:19:30Z", "deletionGracePeriodSeconds": 30}),
    );
    let events = [ev];
    let v = verdict_of(evidence(&p, &events), &[]);
    assert_eq!(v.cause().code, Code::DriverPreempted, "{:?}", v.findings);
}

#[test]
fn deletion_vanishing_and_restarts() {
    let p = driver(
        running(),
        json!({"deletionTimestamp": "2026-11-29T10:25:30Z", "deletionGracePeriodSeconds": 30,
               "ownerReferences": [{"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication", "name": "etl", "uid": "u1", "controller": true}]}),
    );
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverDeleted);
    assert!(
        v.cause().summary.contains("SparkApplication etl"),
        "{}",
        v.cause().summary
    );
    let p = driver(running(), json!({}));
    let mut d = evidence(&p, &[]);
    d.gone = DriverGone::Missing;
    d.gone_at = Some(at("2026-11-29T10:28:00Z"));
    let v = verdict_of(d, &[]);
    assert_eq!(v.cause().code, Code::DriverVanished);
    assert_eq!(v.end.unwrap().at, at("2026-11-29T10:28:00Z"));
    let mut status = running();
    status["containerStatuses"][0]["restartCount"] = json!(2);
    status["containerStatuses"][0]["lastState"] = json!({"terminated": {"exitCode": 137, "reason": "OOMKilled",
        "startedAt": "2026-11-29T10:00:05Z", "finishedAt": "2026-11-29T10:10:00Z"}});
    let p = driver(status, json!({}));
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverRestarted);
    assert!(
        v.cause().summary.contains("2 times"),
        "{}",
        v.cause().summary
    );
    assert!(v.cause().hint.contains("spark.driver.memoryOverhead"));
    assert!(v.end.is_none(), "a restarted driver runs");
}

#[test]
fn a_running_driver_and_no_driver_at_all() {
    let p = driver(running(), json!({}));
    let v = app_verdict(&AppEvidence {
        driver: Some(evidence(&p, &[])),
        driver_phase: None,
        logged_end: None,
        unfinished: false,
        app_findings: &[],
        executors: ExecutorTally {
            running: 3,
            pending: 1,
            ..Default::default()
        },
        now: now(),
        operator: None,
    });
    assert_eq!(v.cause().code, Code::AppRunning);
    assert!(v.cause().summary.contains("3 executors running, 1 pending"));
    let v = app_verdict(&AppEvidence {
        driver: None,
        driver_phase: None,
        logged_end: None,
        unfinished: false,
        app_findings: &[],
        executors: ExecutorTally::default(),
        now: now(),
        operator: None,
    });
    assert_eq!(v.cause().code, Code::DriverNotSeen);
    assert!(v.driver.is_none());
    // A driver pod with no status at all: a clear verdict, not a panic or nothing.
    let p = pod(
        json!({"metadata": {"name": "bare-driver", "labels": {"spark-role": "driver", "spark-app-selector": "spark-x"}}}),
    );
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::DriverPending, "{:?}", v.findings);
    assert!(
        v.cause().summary.contains("bare-driver"),
        "{}",
        v.cause().summary
    );
    // A recording from before the driver's pod was kept: its phase only.
    let v = app_verdict(&AppEvidence {
        driver: None,
        driver_phase: Some("Failed"),
        logged_end: None,
        unfinished: false,
        app_findings: &[],
        executors: ExecutorTally::default(),
        now: now(),
        operator: None,
    });
    assert!(
        v.cause()
            .summary
            .starts_with("Driver Failed: its pod's details were not recorded")
    );
}

#[test]
fn executors_deleted_after_the_driver_ended_are_its_end() {
    let end = DriverEnd {
        pod: "etl-driver".to_owned(),
        uid: Some("uid-driver".to_owned()),
        at: at("2026-11-29T10:20:00Z"),
        cluster_at: Some(at("2026-11-29T10:20:00Z")),
        seen_at: at("2026-11-29T10:20:00Z"),
        code: Code::DriverOomKilled,
        label: "OOMKilled, 137".to_owned(),
        failed: true,
    };
    let gc = ExecutorEnd {
        exit: None,
        final_at: None,
        own_failure: false,
        owner_uid: Some("uid-driver"),
        deletion_requested: Some(at("2026-11-29T10:20:05Z")),
        gone_at: None,
    };
    assert!(ended_with(&end, &gc));
    // Deleted by Spark's stop a few seconds before the JVM exited.
    let stop = ExecutorEnd {
        deletion_requested: Some(at("2026-11-29T10:19:50Z")),
        ..gc
    };
    assert!(ended_with(&end, &stop));
    // A scale-down ten minutes earlier is its own (normal) end.
    let earlier = ExecutorEnd {
        deletion_requested: Some(at("2026-11-29T10:10:00Z")),
        ..gc
    };
    assert!(!ended_with(&end, &earlier));
    // Its own OOM before the driver ended stays its own, even if deleted after.
    let own = ExecutorEnd {
        exit: Some((137, true, Some(at("2026-11-29T10:19:58Z")))),
        ..gc
    };
    assert!(!ended_with(&end, &own));
    // A heartbeat failure after the driver died is the driver's.
    let lost = ExecutorEnd {
        exit: Some((56, false, Some(at("2026-11-29T10:20:40Z")))),
        deletion_requested: None,
        gone_at: None,
        ..gc
    };
    assert!(ended_with(&end, &lost));
    // Killed by its node (137 without OOMKilled) long before, deleted by the garbage
    // collector after the driver ended: its own end, still counted.
    let node_kill = ExecutorEnd {
        exit: Some((137, false, Some(at("2026-11-29T10:05:00Z")))),
        ..gc
    };
    assert!(!ended_with(&end, &node_kill));
    // Evicted long before (no container exit), deleted after.
    let evicted = ExecutorEnd {
        final_at: Some(at("2026-11-29T10:06:00Z")),
        ..gc
    };
    assert!(!ended_with(&end, &evicted));
    // Its OOM known only from the driver's reason.
    let rebuilt = ExecutorEnd {
        own_failure: true,
        ..gc
    };
    assert!(!ended_with(&end, &rebuilt));
    // Owned by another driver pod (a resubmission under the same app id).
    let other_run = ExecutorEnd {
        owner_uid: Some("uid-other-driver"),
        ..gc
    };
    assert!(!ended_with(&end, &other_run));
    let mut findings = vec![Finding::new(
        Code::Deleted,
        Severity::Info,
        "Deletion requested at 10:20:35 (grace 30s); Spark still counts the executor as running",
    )];
    attribute_to_driver(&mut findings, &end);
    assert_eq!(findings[0].code, Code::EndedWithDriver);
    assert_eq!(
        findings[0].summary,
        "Ended with its driver: the driver ended (OOMKilled, 137)"
    );
    assert!(findings.iter().all(|f| !f.summary.contains("still counts")));
}

#[test]
fn orphans_are_named() {
    let end = DriverEnd {
        pod: "etl-driver".to_owned(),
        uid: Some("uid-driver".to_owned()),
        at: at("2026-11-29T10:20:00Z"),
        cluster_at: Some(at("2026-11-29T10:20:00Z")),
        seen_at: at("2026-11-29T10:20:00Z"),
        code: Code::DriverDeleted,
        label: "deleted".to_owned(),
        failed: true,
    };
    assert!(is_orphan(&end, ExecutorState::Running, false, false, now()));
    assert!(!is_orphan(&end, ExecutorState::Running, true, false, now()));
    assert!(!is_orphan(
        &end,
        ExecutorState::Running,
        false,
        false,
        at("2026-11-29T10:20:30Z")
    ));
    let p = driver(running(), json!({}));
    let mut d = evidence(&p, &[]);
    d.gone = DriverGone::Deleted;
    d.gone_at = Some(at("2026-11-29T10:20:00Z"));
    let orphans = vec!["etl-exec-1".to_owned(), "etl-exec-2".to_owned()];
    let v = app_verdict(&AppEvidence {
        driver: Some(d),
        driver_phase: None,
        logged_end: None,
        unfinished: false,
        app_findings: &[],
        executors: ExecutorTally {
            running: 2,
            orphans: &orphans,
            ..Default::default()
        },
        now: now(),
        operator: None,
    });
    assert_eq!(v.cause().code, Code::DriverDeleted);
    let o = v
        .findings
        .iter()
        .find(|f| f.code == Code::OrphanedExecutors)
        .unwrap();
    assert!(
        o.summary.contains("etl-exec-1, etl-exec-2"),
        "{}",
        o.summary
    );
}

#[test]
fn configuration_predictions_follow_the_driver_they_would_have_stopped() {
    let props = |kv: &[(&str, &str)]| {
        Settings::from_properties(
            &kv.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    };
    let v33 = SparkVersion::parse("3.3.2");
    // Spark 3.3 refuses dynamic allocation without shuffle tracking; the driver failed.
    let refusal = config_findings(
        &props(&[("spark.dynamicAllocation.enabled", "true")]),
        v33,
        FailureBudget::NoneBeforeSpark4,
        0,
    );
    let failed = driver(terminated(1, "Error", 0), json!({}));
    let v = verdict_of(evidence(&failed, &[]), &refusal);
    assert_eq!(v.cause().code, Code::DriverFailed, "{:#?}", v.findings);
    let prediction = v
        .findings
        .iter()
        .find(|f| f.code == Code::DynamicAllocationShuffle)
        .expect("the prediction supports the driver's failure");
    assert_eq!(prediction.severity, Severity::Error);
    // The same prediction while the driver runs: the version read was not the one that ran.
    let up = driver(running(), json!({}));
    let v = app_verdict(&AppEvidence {
        driver: Some(evidence(&up, &[])),
        driver_phase: None,
        logged_end: None,
        unfinished: false,
        app_findings: &refusal,
        executors: ExecutorTally {
            running: 2,
            known: 2,
            ..Default::default()
        },
        now: now(),
        operator: None,
    });
    assert_eq!(v.cause().code, Code::AppRunning, "{:#?}", v.findings);
    let p = &v.findings[1];
    assert_eq!(p.severity, Severity::Info);
    assert!(
        p.summary
            .starts_with("Predicted a refusal at start, but the driver started")
    );
    // A warning about the heartbeat does not make a running app anything but running.
    let warn = config_findings(
        &props(&[("spark.executor.heartbeatInterval", "60s")]),
        v33,
        FailureBudget::NoneBeforeSpark4,
        0,
    );
    let v = app_verdict(&AppEvidence {
        driver: Some(evidence(&up, &[])),
        driver_phase: None,
        logged_end: None,
        unfinished: false,
        app_findings: &warn,
        executors: ExecutorTally::default(),
        now: now(),
        operator: None,
    });
    assert_eq!(v.cause().code, Code::AppRunning);
    assert_eq!(v.findings[1].code, Code::HeartbeatSettings);
    assert_eq!(v.findings[1].severity, Severity::Warn);
}

#[test]
fn a_refusal_predicted_for_a_driver_that_waits_follows_what_keeps_it_waiting() {
    let settings = Settings::from_properties(
        &[("spark.executor.heartbeatInterval", "300s")]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    let refusal = config_findings(
        &settings,
        version::SparkVersion::parse("3.4.1"),
        FailureBudget::NoneBeforeSpark4,
        0,
    );
    assert_eq!(refusal[0].severity, Severity::Error);
    let status = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient memory."}]});
    let mut p = driver(status, json!({}));
    p.node_name = None;
    let v = verdict_of(evidence(&p, &[]), &refusal);
    assert_eq!(v.cause().code, Code::DriverPending, "{:#?}", v.findings);
    let f = v
        .findings
        .iter()
        .find(|f| f.code == Code::HeartbeatSettings)
        .expect("the prediction follows");
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.summary.contains("refuses the configuration at start"),
        "{}",
        f.summary
    );
}

/// The headline is the worst thing that happened: failures lead over what the
/// configuration predicts (even a warning over an info-level event), and "driver not seen"
/// or "known from the event log only" is a note under them, never the headline.
#[test]
fn failures_lead_a_configuration_risk_and_the_driver_s_absence() {
    let oom = Finding::new(Code::ContainerOomKilled, Severity::Error, "OOMKilled")
        .hint("try --conf spark.executor.memoryOverhead=1g.");
    let advice = groups([Case {
        id: 3,
        cause: &oom,
        exit: Some(137),
        failure: true,
        pending: false,
        at: None,
    }]);
    let failed = [Code::ContainerOomKilled];
    let risk = Finding::new(
        Code::DynamicAllocationShuffle,
        Severity::Warn,
        "dynamic allocation without shuffle tracking",
    )
    .witness(Witness::Config);
    let mut app = diagnose::app::app_findings(&AppFacts {
        failed: &failed,
        counted: &failed,
        advice: &advice,
        config_known: true,
        executor_instances: Some(2),
        ..Default::default()
    });
    app.push(risk);
    app.sort_by_key(order);
    for (logged_end, unfinished) in [
        (None, false),
        (Some("application ended, exit code 0"), false),
    ] {
        let v = app_verdict(&AppEvidence {
            driver: None,
            driver_phase: None,
            logged_end,
            unfinished,
            app_findings: &app,
            executors: ExecutorTally::default(),
            now: now(),
            operator: None,
        });
        let codes: Vec<Code> = v.findings.iter().map(|f| f.code).collect();
        assert_eq!(
            codes,
            [
                Code::ExecutorsFailed,
                Code::DynamicAllocationShuffle,
                Code::DriverNotSeen
            ],
            "{v:#?}"
        );
        assert_eq!(v.severity(), Severity::Warn);
        assert!(
            v.cause()
                .summary
                .starts_with("1 executor failed: OOMKilled (137) ×1; 1 of 4")
        );
        assert!(
            v.cause().hint.contains("memoryOverhead=1g"),
            "{}",
            v.cause().hint
        );
        assert_eq!(v.label(), "OOMKilled (137)");
    }
    // A log without its end says so first.
    let v = app_verdict(&AppEvidence {
        driver: None,
        driver_phase: None,
        logged_end: Some(
            "the event log ends at 2026-11-29T10:20:00Z without the application's end",
        ),
        unfinished: true,
        app_findings: &app,
        executors: ExecutorTally::default(),
        now: now(),
        operator: None,
    });
    assert_eq!(v.cause().code, Code::AppUnfinished);
    assert_eq!(v.findings[1].code, Code::ExecutorsFailed);
    // No driver seen and nothing happened yet: a refusal the configuration predicts leads
    // the note that the driver was not seen.
    let refused = [Finding::new(
        Code::HeartbeatSettings,
        Severity::Error,
        "spark.executor.heartbeatInterval ≥ spark.network.timeout",
    )
    .witness(Witness::Config)];
    let v = app_verdict(&AppEvidence {
        driver: None,
        driver_phase: None,
        logged_end: None,
        unfinished: false,
        app_findings: &refused,
        executors: ExecutorTally::default(),
        now: now(),
        operator: None,
    });
    assert_eq!(v.cause().code, Code::HeartbeatSettings, "{v:#?}");
    assert_eq!(v.severity(), Severity::Warn);
}

/// A running driver whose executors failed is not "running, info": the failures are its
/// headline (a warning within the budget).
#[test]
fn a_running_app_with_failures_is_not_a_plain_run() {
    let p = driver(running(), json!({}));
    let oom = Finding::new(Code::JvmOom, Severity::Error, "JVM OOM").hint("raise the heap");
    let advice = diagnose::advice::groups([diagnose::advice::Case {
        id: 8,
        cause: &oom,
        exit: Some(52),
        failure: true,
        pending: false,
        at: None,
    }]);
    let failed = [Code::JvmOom];
    let app = diagnose::app::app_findings(&AppFacts {
        failed: &failed,
        counted: &failed,
        advice: &advice,
        config_known: true,
        executor_instances: Some(10),
        ..Default::default()
    });
    let v = verdict_of(evidence(&p, &[]), &app);
    assert_eq!(v.cause().code, Code::ExecutorsFailed);
    assert_eq!(v.severity(), Severity::Warn);
    assert!(!v.findings.iter().any(|f| f.code == Code::AppRunning));
    // Without failures it is a plain run.
    let v = verdict_of(evidence(&p, &[]), &[]);
    assert_eq!(v.cause().code, Code::AppRunning);
}

#[test]
fn every_app_code_has_a_rank_and_the_driver_s_ends_are_first() {
    let app: Vec<Code> = Code::ALL
        .iter()
        .copied()
        .filter(|c| c.app_rank().is_some())
        .collect();
    let mut ranks: Vec<u8> = app.iter().filter_map(|c| c.app_rank()).collect();
    ranks.sort_unstable();
    ranks.dedup();
    assert_eq!(ranks.len(), app.len(), "two app codes share a rank");
    for c in Code::ALL {
        if c.ends_driver() {
            assert!(c.app_rank().is_some(), "{c}: an end without a rank");
        }
        if let Some(d) = c.as_driver() {
            assert!(
                d.app_rank().is_some() || d == Code::StuckRunning,
                "{c} becomes {d}, which is no app code"
            );
        }
    }
    assert!(
        Code::ExecutorsFailed.app_rank() < Code::DynamicAllocationShuffle.app_rank()
            && Code::ExecutorsFailed.app_rank() < Code::DriverNotSeen.app_rank()
            && Code::DriverOomKilled.app_rank() < Code::ExecutorsFailed.app_rank()
    );
}
