//! `driver.rs`'s tests: each reconciliation of the pod with the driver's executor list.

use chrono::TimeZone;

use super::*;
use crate::classify;
use crate::classify::ClassifyOptions;
use crate::model::driver::PeakMemory;

fn t(s: i64) -> Time {
    chrono::Utc.timestamp_opt(1_800_000_000 + s, 0).unwrap()
}

fn exec(active: bool, removed: Option<i64>, reason: Option<&str>) -> DriverExecutor {
    DriverExecutor {
        id: 7,
        active,
        host_port: None,
        pod_name: None,
        add_time: Some(t(0)),
        remove_time: removed.map(t),
        remove_reason: reason.map(str::to_owned),
        removed_again: Vec::new(),
        active_tasks: 0,
        failed_tasks: 2,
        completed_tasks: 5,
        tasks_lost: 0,
        max_memory: None,
        peak: PeakMemory::default(),
    }
}

fn side(state: ExecutorState, gone: Option<i64>, running: Option<i64>) -> PodSide {
    PodSide {
        id: 7,
        state,
        gone_at: gone.map(t),
        never_seen: false,
        running_since: running.map(t),
        lost_grace: Duration::seconds(60),
        api_polling: true,
        quick_failure: None,
        spark_version: SparkVersion::NEWEST_KNOWN,
        dynamic_allocation: Some(true),
        killed_after_grace: false,
        heartbeat_logged: false,
    }
}

fn codes(f: &[Finding]) -> Vec<&str> {
    f.iter().map(|f| f.code.as_str()).collect()
}

fn seen(at: i64, e: Option<DriverExecutor>) -> DriverSeen {
    DriverSeen {
        at: t(at),
        exec: e,
        from: Default::default(),
    }
}

#[test]
fn agreeing_views_say_nothing() {
    let running = side(ExecutorState::Running, None, Some(0));
    assert!(reconcile(&running, Some(&seen(500, Some(exec(true, None, None))))).is_empty());
    assert!(reconcile(&running, None).is_empty());
    // Absent from the driver, but not for long yet.
    assert!(
        reconcile(
            &side(ExecutorState::Running, None, Some(0)),
            Some(&seen(60, None))
        )
        .is_empty()
    );
    // Active, pod gone, within Spark's own time to notice.
    assert!(
        reconcile(
            &side(ExecutorState::Deleted, Some(100), None),
            Some(&seen(160, Some(exec(true, None, None))))
        )
        .is_empty()
    );
}

#[test]
fn each_disagreement_is_its_finding() {
    let lost = reconcile(
        &side(ExecutorState::Deleted, Some(100), None),
        Some(&seen(161, Some(exec(true, None, None)))),
    );
    assert_eq!(codes(&lost), ["driver-lost-pod"]);
    assert!(
        lost[0].summary.contains("1m01s after it lost its pod"),
        "{}",
        lost[0].summary
    );

    let unreg = reconcile(
        &side(ExecutorState::Running, None, Some(0)),
        Some(&seen(61, None)),
    );
    assert_eq!(codes(&unreg), ["unregistered"]);

    let reason = "The executor with id 7 was deleted by a user or the framework.";
    let z = reconcile(
        &side(ExecutorState::Running, None, Some(0)),
        Some(&seen(131, Some(exec(false, Some(100), Some(reason))))),
    );
    assert_eq!(codes(&z), ["driver-removed", "zombie"]);
    assert_eq!(z[0].summary, format!("Spark removed executor 7: {reason}"));
    assert_eq!(z[0].severity, Severity::Info);

    let gone = reconcile(
        &side(ExecutorState::Failed, Some(100), None),
        Some(&seen(500, Some(exec(false, Some(100), Some(reason))))),
    );
    assert_eq!(codes(&gone), ["driver-removed"]);
}

#[test]
fn a_pod_rebuilt_from_spark_reason_diagnoses_the_same() {
    let reason = "\nThe executor with id 7 exited with exit code 137(SIGKILL, possible container OOM).\n\n\n\nThe API gave the following container statuses:\n\n\n\t container name: spark-kubernetes-executor\n\t container image: apache/spark:4.0.1\n\t container state: terminated\n\t container started at: 2026-11-30T01:37:30Z\n\t container finished at: 2026-11-30T01:37:50Z\n\t exit code: 137\n\t termination reason: OOMKilled\n      ";
    let d = exec(false, Some(100), Some(reason));
    let pod = pod_from_reason("spark-jobs", "spark-1", "etl-exec-7", &d);
    assert_eq!(pod.executor_id(), Some(7));
    assert_eq!(pod.phase(), Some("Failed"));
    let resolved = ClassifyOptions::default().resolve(&pod);
    let state = classify::classify(&pod, &resolved.config);
    let f = super::super::diagnose(&pod, &[], &resolved, state, t(200));
    assert_eq!(f[0].code, Code::ContainerOomKilled);

    let jvm = exec(
        false,
        Some(100),
        Some(
            &reason
                .replace("137(SIGKILL, possible container OOM)", "52(JVM OOM)")
                .replace("exit code: 137", "exit code: 52")
                .replace("OOMKilled", "Error"),
        ),
    );
    let pod = pod_from_reason("spark-jobs", "spark-1", "etl-exec-7", &jvm);
    let resolved = ClassifyOptions::default().resolve(&pod);
    let f = super::super::diagnose(&pod, &[], &resolved, ExecutorState::Failed, t(200));
    assert_eq!(f[0].code, Code::JvmOom);

    // No reason at all (active in the driver): a valid executor tombstone, Running.
    let bare = pod_from_reason("ns", "a", "x-exec-7", &exec(true, None, None));
    assert_eq!(
        (bare.executor_id(), bare.phase()),
        (Some(7), Some("Running"))
    );
    // "Deleted by a user or the framework": a deleted pod, as Spark saw it.
    let del = pod_from_reason(
        "ns",
        "a",
        "x-exec-7",
        &exec(
            false,
            Some(100),
            Some("The executor with id 7 was deleted by a user or the framework."),
        ),
    );
    assert!(del.deletion.is_some());
}

#[test]
fn driver_removal_reasons_that_are_normal_are_info() {
    for (text, code, severity) in [
        (
            "Executor killed by driver.",
            Code::DriverRemoved,
            Severity::Info,
        ),
        (
            "Executor decommission: Rolling via TOTAL_DURATION",
            Code::DriverRemoved,
            Severity::Info,
        ),
        (
            "Executor heartbeat timed out after 120000 ms",
            Code::HeartbeatTimeout,
            Severity::Error,
        ),
        (
            "Remote RPC client disassociated. Likely due to containers exceeding thresholds, or network issues. Check driver logs for WARN messages.",
            Code::RpcDisassociated,
            Severity::Warn,
        ),
        (
            "Something new in Spark 5",
            Code::DriverRemoved,
            Severity::Warn,
        ),
    ] {
        let f = removed(
            &side(ExecutorState::Deleted, Some(1), None),
            &exec(false, Some(1), Some(text)),
        );
        assert_eq!((f.code, f.severity), (code, severity), "{text}");
    }
}

#[test]
fn a_quick_failure_the_driver_never_listed_could_not_reach_it() {
    let seen = DriverSeen {
        at: t(300),
        from: Default::default(),
        exec: None,
    };
    let mut pod = side(ExecutorState::Failed, None, None);
    pod.quick_failure = Some((1, Duration::seconds(4)));
    let f = reconcile(&pod, Some(&seen));
    assert_eq!(codes(&f), vec!["driver-unreachable"]);
    assert!(
        f[0].summary.contains("failed 4s after starting (exit 1)"),
        "{}",
        f[0].summary
    );
    assert!(f[0].hint.contains("pod IP"), "4.1+: the pod IP");
    pod.spark_version = SparkVersion::new(3, 5, 7);
    assert!(
        reconcile(&pod, Some(&seen))[0]
            .hint
            .contains("publishNotReadyAddresses")
    );
    // Listed by the driver (it registered): not this.
    let listed = DriverSeen {
        at: t(300),
        from: Default::default(),
        exec: Some(exec(
            false,
            Some(10),
            Some("The executor with id 7 exited with exit code 1(unexpected)."),
        )),
    };
    assert!(!codes(&reconcile(&pod, Some(&listed))).contains(&"driver-unreachable"));
}

/// "Executor killed by driver." is a scale-down only when dynamic allocation is on and the
/// evidence agrees; otherwise the kill says what it may be (Spark 3.5–4.3 write this text
/// for some heartbeat timeouts), and the driver's log line settles it.
#[test]
fn a_kill_by_the_driver_is_a_scale_down_only_when_the_evidence_agrees() {
    let killed = |lost: u64| DriverExecutor {
        tasks_lost: lost,
        ..exec(false, Some(90), Some("Executor killed by driver."))
    };
    let gone = side(ExecutorState::Deleted, Some(100), None);
    let f = reconcile(&gone, Some(&seen(500, Some(killed(0)))));
    assert_eq!(codes(&f), ["driver-removed"]);
    assert_eq!(f[0].severity, Severity::Info);
    for (why, pod, tasks) in [
        (
            "dynamic allocation is off",
            PodSide {
                dynamic_allocation: Some(false),
                ..gone
            },
            0,
        ),
        (
            "a hung JVM",
            PodSide {
                killed_after_grace: true,
                ..gone
            },
            0,
        ),
        // Dynamic allocation on, but tasks were lost with it: it was not idle.
        ("2 tasks failed with it as lost", gone, 2),
    ] {
        let f = reconcile(&pod, Some(&seen(500, Some(killed(tasks)))));
        assert_eq!(codes(&f), ["killed-by-driver"], "{why}");
        assert_eq!(f[0].severity, Severity::Warn);
        assert!(f[0].summary.contains(why), "{why}: {}", f[0].summary);
        assert!(f[0].hint.contains("apache/spark#57494"), "{}", f[0].hint);
    }
    // Not known (the configuration not read): said, for the record only.
    let unknown = PodSide {
        dynamic_allocation: None,
        ..gone
    };
    let f = reconcile(&unknown, Some(&seen(500, Some(killed(0)))));
    assert_eq!(codes(&f), ["killed-by-driver"]);
    assert_eq!(f[0].severity, Severity::Info);
    assert!(f[0].summary.contains("not known"), "{}", f[0].summary);
    let logged = PodSide {
        dynamic_allocation: Some(false),
        heartbeat_logged: true,
        ..gone
    };
    let f = reconcile(&logged, Some(&seen(500, Some(killed(0)))));
    assert_eq!(codes(&f), ["heartbeat-timeout"]);
    assert_eq!(f[0].severity, Severity::Error);
}
