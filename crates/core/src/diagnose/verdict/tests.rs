use chrono::TimeZone;
use serde_json::{Value, json};

use super::*;
use crate::diagnose::app_verdict::DriverEnd;
use crate::diagnose::{NO_GROUPS, app_verdict};
use crate::model::DriverExecutor;
use crate::model::driver::PeakMemory;
use crate::model::testing::{self, PodBuilder, container_status, event, merge};

fn t(s: i64) -> Time {
    chrono::Utc
        .timestamp_opt(1_800_000_000 + s, 0)
        .single()
        .expect("valid")
}

fn ts(s: i64) -> String {
    t(s).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Executor `id` of `spark-1` on Spark `version` (`etl-exec-{id}`, no uid, a 4505Mi limit
/// and nothing else in its container's spec).
fn exec(id: i64, version: &str) -> PodBuilder {
    testing::executor(id)
        .app("spark-1")
        .meta(json!({"uid": null, "labels": {"spark-version": version}}))
        .container(json!({"image": null, "env": null, "resources": {"requests": null}}))
}

fn executor(id: i64, phase: &str, state: Value, extra_meta: Value, version: &str) -> ExecutorPod {
    let status = merge(
        container_status("spark-kubernetes-executor", state),
        json!({"ready": phase == "Running"}),
    );
    exec(id, version)
        .meta(extra_meta)
        .status(json!({"phase": phase, "containerStatuses": [status]}))
        .build()
}

fn running(id: i64) -> ExecutorPod {
    executor(
        id,
        "Running",
        json!({"running": {"startedAt": ts(0)}}),
        json!({}),
        "4.0.1",
    )
}

fn oom(id: i64, deleted: bool) -> ExecutorPod {
    let meta = if deleted {
        json!({"deletionTimestamp": ts(20), "deletionGracePeriodSeconds": 0})
    } else {
        json!({})
    };
    executor(
        id,
        "Failed",
        json!({"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": ts(0), "finishedAt": ts(10)}}),
        meta,
        "4.0.1",
    )
}

fn removed(id: i64, reason: &str) -> DriverSeen {
    DriverSeen {
        at: t(100),
        from: Default::default(),
        exec: Some(DriverExecutor {
            id,
            active: false,
            host_port: None,
            pod_name: None,
            add_time: Some(t(0)),
            remove_time: Some(t(12)),
            remove_reason: Some(reason.to_owned()),
            removed_again: Vec::new(),
            active_tasks: 0,
            failed_tasks: 1,
            completed_tasks: 3,
            tasks_lost: 0,
            max_memory: None,
            peak: PeakMemory::default(),
        }),
    }
}

const OOM_REASON: &str = "\nThe executor with id 7 exited with exit code 137(SIGKILL, possible container OOM).\n\n\n\nThe API gave the following container statuses:\n\n\n\t container name: spark-kubernetes-executor\n\t container image: apache/spark:4.0.1\n\t container state: terminated\n\t container started at: 2027-01-15T08:00:00Z\n\t container finished at: 2027-01-15T08:00:10Z\n\t exit code: 137\n\t termination reason: OOMKilled\n      ";

struct Case<'a> {
    pod: &'a ExecutorPod,
    ended: Option<&'a ExecutorPod>,
    events: &'a [PodEvent],
    gone: PodGone,
    missing: Option<&'a Finding>,
    driver: Option<&'a DriverSeen>,
    log: Option<&'a [String]>,
    killed: Option<&'a ToolKill>,
    driver_end: Option<&'a app_verdict::DriverEnd>,
}

impl<'a> Case<'a> {
    fn new(pod: &'a ExecutorPod) -> Self {
        Self {
            pod,
            ended: None,
            events: &[],
            gone: PodGone::No,
            missing: None,
            driver: None,
            log: None,
            killed: None,
            driver_end: None,
        }
    }

    fn run(&self) -> Verdict {
        let options = ClassifyOptions::default();
        let resolved = options.resolve(self.pod);
        verdict(&Evidence {
            resolved: &resolved,
            pod_state: classify(self.pod, &resolved.config),
            id: self.pod.executor_id().unwrap_or(0),
            first_seen: None,
            pod: self.pod,
            ended: self.ended,
            first_deletion: None,
            events: self.events,
            options: &options,
            gone: self.gone,
            missing: self.missing,
            driver: self.driver,
            log_tail: self.log,
            killed_by_tool: self.killed,
            sizing: None,
            dynamic_allocation: Some(true),
            heartbeat_logged: false,
            running_since: Some(t(0)),
            gone_at: (self.gone != PodGone::No).then(|| t(20)),
            lost_grace: chrono::Duration::seconds(60),
            api_polling: true,
            delete_on_termination: true,
            driver_end: self.driver_end,
            groups: &NO_GROUPS,
            now: t(100),
        })
    }
}

fn codes(v: &Verdict) -> Vec<&'static str> {
    v.findings.iter().map(|f| f.code.as_str()).collect()
}

#[test]
fn failed_then_deleted_by_spark_is_a_counted_failure() {
    let ended = oom(7, false);
    let last = oom(7, true);
    let v = Case {
        ended: Some(&ended),
        gone: PodGone::Deleted,
        ..Case::new(&last)
    }
    .run();
    assert_eq!(v.state, ExecutorState::Failed);
    assert_eq!(codes(&v), vec!["container-oom-killed", "deleted"]);
    assert_eq!(v.findings[0].witness, Witness::Pod);
    let s = v.spark.as_ref().expect("account");
    assert!(s.counted && s.caused_by_app, "{s:?}");
    assert_eq!(s.exit_code, 137);
    assert_eq!(v.ending, Ending::DeletedBySpark);
    assert_eq!(v.exit_code, Some(137));
}

#[test]
fn a_failure_the_watch_missed_is_rebuilt_from_sparks_reason() {
    // The pod was last seen Running; it vanished from a LIST; the driver says 137 OOMKilled.
    let last = running(7);
    let missing = super::super::missing(Some(11), Some(40), "lost");
    let driver = removed(7, OOM_REASON);
    let v = Case {
        gone: PodGone::Missing,
        missing: Some(&missing),
        driver: Some(&driver),
        ..Case::new(&last)
    }
    .run();
    assert!(!v.missing, "Spark's reason explains the disappearance");
    assert_eq!(v.state, ExecutorState::Failed);
    assert_eq!(codes(&v), vec!["container-oom-killed", "driver-removed"]);
    assert_eq!(v.findings[0].witness, Witness::Driver);
    assert!(v.findings[0].reconstructed);
    assert!(v.counted());
    assert_eq!(v.ending, Ending::DeletedBySpark);
    assert_eq!(
        (v.exit_code, v.container_reason.as_deref()),
        (Some(137), Some("OOMKilled"))
    );
}

#[test]
fn an_unexplained_vanish_is_missing_never_running_never_counted() {
    let last = running(10);
    let missing = super::super::missing(Some(11), Some(40), "lost");
    let v = Case {
        gone: PodGone::Missing,
        missing: Some(&missing),
        ..Case::new(&last)
    }
    .run();
    assert!(v.missing);
    assert_eq!(codes(&v), vec!["missing"]);
    assert_eq!(v.findings[0].witness, Witness::Inference);
    assert_eq!(v.state, ExecutorState::Deleted);
    assert!(!v.counted());
    assert_eq!(v.spark.as_ref().map(|s| s.exit_code), Some(-1));
    assert_eq!(v.ending, Ending::Vanished);
}

#[test]
fn a_preemption_event_names_the_cause_of_a_deletion() {
    let last = executor(
        4,
        "Failed",
        json!({"terminated": {"exitCode": 143, "reason": "Error", "finishedAt": ts(21)}}),
        json!({"deletionTimestamp": ts(50), "deletionGracePeriodSeconds": 30}),
        "4.0.1",
    );
    let preempted = event(json!({
        "metadata": {"name": "e1", "namespace": "spark-jobs"},
        "involvedObject": {"kind": "Pod", "name": "etl-exec-4", "namespace": "spark-jobs"},
        "reason": "Preempted", "message": "Preempted by pod x on node n", "type": "Normal",
        "firstTimestamp": ts(20), "lastTimestamp": ts(20)
    }));
    let events = [preempted];
    let v = Case {
        events: &events,
        gone: PodGone::Deleted,
        ..Case::new(&last)
    }
    .run();
    assert_eq!(codes(&v)[0], "preempted", "{:?}", codes(&v));
    assert_eq!(v.findings[0].witness, Witness::Events);
    assert_eq!(v.state, ExecutorState::Deleted);
    assert!(!v.counted());
    assert_eq!(v.ending, Ending::DeletedByDisruption);
}

#[test]
fn spark_3_5_counts_no_failures() {
    let p = executor(
        7,
        "Failed",
        json!({"terminated": {"exitCode": 52, "finishedAt": ts(10)}}),
        json!({}),
        "3.5.7",
    );
    let v = Case {
        ended: Some(&p),
        ..Case::new(&p)
    }
    .run();
    let s = v.spark.as_ref().expect("account");
    assert!(s.caused_by_app && !s.counted);
    assert_eq!(s.spark_version.as_deref(), Some("3.5.7"));
    assert!(s.note.as_deref().is_some_and(|n| n.contains("4.0")));
    assert_eq!(codes(&v), vec!["jvm-oom"]);
}

#[test]
fn a_log_line_names_a_generic_exit_better() {
    let p = executor(
        7,
        "Failed",
        json!({"terminated": {"exitCode": 1, "finishedAt": ts(10)}}),
        json!({}),
        "4.0.1",
    );
    let log = vec![
        "INFO starting".to_owned(),
        "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space".to_owned(),
    ];
    let v = Case {
        ended: Some(&p),
        log: Some(&log),
        ..Case::new(&p)
    }
    .run();
    assert_eq!(codes(&v), vec!["jvm-oom", "generic-error"]);
    assert_eq!(v.findings[0].witness, Witness::LogTail);
    // An observed OOMKilled outranks the log.
    let o = oom(7, false);
    let v = Case {
        ended: Some(&o),
        log: Some(&log),
        ..Case::new(&o)
    }
    .run();
    assert_eq!(codes(&v), vec!["container-oom-killed"]);
}

#[test]
fn the_tools_own_kill_says_so() {
    let last = executor(
        3,
        "Running",
        json!({"running": {"startedAt": ts(0)}}),
        json!({"deletionTimestamp": ts(50), "deletionGracePeriodSeconds": 30}),
        "4.0.1",
    );
    let kill = ToolKill {
        at: Some(t(20)),
        by: Some("oncall".to_owned()),
    };
    let v = Case {
        gone: PodGone::Deleted,
        killed: Some(&kill),
        ..Case::new(&last)
    }
    .run();
    assert_eq!(v.ending, Ending::DeletedByTool);
    assert_eq!(v.state, ExecutorState::Deleted);
    assert!(!v.counted());
    // Said as the tool's act, first, with who and when; the deletion is its evidence.
    assert_eq!(codes(&v), vec!["killed-by-spark-triage"], "{v:?}");
    let f = &v.findings[0];
    assert_eq!(f.severity, Severity::Info);
    assert!(f.summary.contains("by oncall"), "{}", f.summary);
    assert!(
        f.evidence.iter().any(|e| e.contains("deletionTimestamp")),
        "{f:?}"
    );
    assert!(!v.is_failure());
    // Killed after the JVM ignored SIGTERM (137 once the grace ran out): still the kill.
    let hung = executor(
        4,
        "Failed",
        json!({"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": ts(80)}}),
        json!({"deletionTimestamp": ts(80), "deletionGracePeriodSeconds": 30}),
        "4.0.1",
    );
    let v = Case {
        gone: PodGone::Deleted,
        killed: Some(&kill),
        ..Case::new(&hung)
    }
    .run();
    assert_eq!(codes(&v), vec!["killed-by-spark-triage"], "{v:?}");
    assert!(!v.counted());
    // An executor that had failed on its own before the kill keeps its own cause.
    let failed = oom(7, false);
    let v = Case {
        gone: PodGone::Deleted,
        killed: Some(&kill),
        ended: Some(&failed),
        ..Case::new(&failed)
    }
    .run();
    assert_eq!(codes(&v)[0], "container-oom-killed", "{v:?}");
}

#[test]
fn a_failed_pod_first_seen_deleted_is_judged_on_its_failure_only_when_it_failed_first() {
    // Seen for the first time already deleted (the tool started late): the container
    // finished before the deletion was requested, so Spark saw it fail.
    let late = oom(7, true);
    let v = Case {
        gone: PodGone::Deleted,
        ..Case::new(&late)
    }
    .run();
    assert_eq!(v.state, ExecutorState::Failed, "{v:?}");
    assert!(v.counted());
    // Killed by the deletion: the container finished after the request (143).
    let killed = executor(
        8,
        "Failed",
        json!({"terminated": {"exitCode": 143, "finishedAt": ts(45)}}),
        json!({"deletionTimestamp": ts(70), "deletionGracePeriodSeconds": 30}),
        "4.0.1",
    );
    let v = Case {
        gone: PodGone::Deleted,
        ..Case::new(&killed)
    }
    .run();
    assert_eq!(v.state, ExecutorState::Deleted);
    assert!(!v.counted());
}

#[test]
fn executors_known_only_from_the_driver_end_as_spark_removed_them() {
    let cases = [
        (
            "The executor with id 4 was deleted by a user or the framework.",
            ExecutorState::Deleted,
            false,
            Some(false),
        ),
        (
            "The executor with ID 10 (registered at 1 ms) was not found in the cluster at the polling time (2 ms) which is after the accepted detect delta time (30000 ms) configured by `spark.kubernetes.executor.missingPodDetectDelta`. The executor may have been deleted but the driver missed the deletion event. Marking this executor as failed.",
            ExecutorState::Deleted,
            true,
            Some(false),
        ),
        (OOM_REASON, ExecutorState::Failed, false, Some(true)),
    ];
    for (reason, state, missing, counted) in cases {
        let d = removed(7, reason);
        let exec = d.exec.clone().expect("entry");
        let rebuilt =
            super::super::driver::pod_from_reason("spark-jobs", "spark-1", "etl-exec-7", &exec);
        let v = Case {
            gone: PodGone::DriverOnly,
            driver: Some(&d),
            ..Case::new(&rebuilt)
        }
        .run();
        assert_eq!(v.state, state, "{reason}");
        assert_eq!(v.missing, missing, "{reason}");
        assert_eq!(v.spark.as_ref().map(|s| s.counted), counted, "{reason}");
        assert_eq!(v.ending, Ending::NeverSeen);
        assert!(
            v.findings.iter().all(|f| f.witness == Witness::Driver),
            "{reason}"
        );
    }
}

#[test]
fn a_pod_gone_while_creating_is_not_stuck_for_longer_than_it_was_seen() {
    // Scheduled at -50 s, last seen ContainerCreating, vanished at 20 s (70 s of waiting,
    // under the 120 s of `container-creating-stuck`); the driver says 137 OOMKilled. At the
    // verdict's 100 s the pod would have "waited" 150 s had it not gone.
    let last = exec(7, "4.0.1")
        .container(json!({"resources": null}))
        .status(json!({"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(-50)}],
            "containerStatuses": [container_status("spark-kubernetes-executor",
                json!({"waiting": {"reason": "ContainerCreating"}}))]}))
        .build();
    let missing = super::super::missing(Some(11), Some(40), "lost");
    let driver = removed(7, OOM_REASON);
    let v = Case {
        gone: PodGone::Missing,
        missing: Some(&missing),
        driver: Some(&driver),
        ..Case::new(&last)
    }
    .run();
    assert!(
        !codes(&v).contains(&"container-creating-stuck"),
        "{:?}",
        codes(&v)
    );
    assert_eq!(
        v.cause().map(|f| f.code),
        Some(Code::ContainerOomKilled),
        "{:?}",
        codes(&v)
    );
}

#[test]
fn executors_deleted_after_their_driver_ended_ended_with_it() {
    let end = DriverEnd {
        pod: "etl-driver".to_owned(),
        uid: None,
        at: t(15),
        cluster_at: Some(t(15)),
        seen_at: t(15),
        code: Code::DriverOomKilled,
        label: "OOMKilled, 137".to_owned(),
        failed: true,
    };
    // Running, its deletion asked by the garbage collector after the driver's OOM.
    let gc = executor(
        3,
        "Running",
        json!({"running": {"startedAt": ts(0)}}),
        json!({"deletionTimestamp": ts(50), "deletionGracePeriodSeconds": 30}),
        "3.4.1",
    );
    let v = Case {
        gone: PodGone::Deleted,
        driver_end: Some(&end),
        ..Case::new(&gc)
    }
    .run();
    assert_eq!(codes(&v)[0], "ended-with-driver", "{:?}", codes(&v));
    assert!(
        v.findings[0]
            .summary
            .contains("the driver ended (OOMKilled, 137)"),
        "{}",
        v.findings[0].summary
    );
    assert!(
        v.findings
            .iter()
            .all(|f| !f.summary.contains("still counts"))
    );
    assert!(!v.counted());
    assert!(!v.missing);
    // Vanished after the driver ended (the garbage collector's deletion missed): not missing.
    let v = Case {
        gone: PodGone::Missing,
        driver_end: Some(&end),
        ..Case::new(&running(5))
    }
    .run();
    assert_eq!(codes(&v)[0], "ended-with-driver", "{:?}", codes(&v));
    assert!(!v.missing);
    // Its own OOM before the driver ended stays its own.
    let own = oom(7, true);
    let v = Case {
        gone: PodGone::Deleted,
        driver_end: Some(&end),
        ..Case::new(&own)
    }
    .run();
    assert_eq!(codes(&v)[0], "container-oom-killed", "{:?}", codes(&v));
    assert!(v.counted());
}

#[test]
fn the_driver_s_log_names_the_executors_it_removed_for_heartbeats() {
    let lines: Vec<String> = [
        "26/12/05 10:00:00 WARN HeartbeatReceiver: Removing executor 7 with no recent heartbeats: 125000 ms exceeds timeout 120000 ms",
        "26/12/05 10:00:01 INFO KubernetesClusterSchedulerBackend: Requesting to kill executor(s) 7",
        "26/12/05 10:00:02 WARN HeartbeatReceiver: Removing executor 12 with no recent heartbeats: 130000 ms exceeds timeout 120000 ms",
        "Removing executor x with no recent heartbeats",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    assert_eq!(
        heartbeat_removals(&lines).into_iter().collect::<Vec<_>>(),
        [7, 12]
    );
}
