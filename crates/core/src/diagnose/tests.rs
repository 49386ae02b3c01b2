//! One test (at least) per rule: the finding appears when its evidence is there, and not
//! when it is not.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::*;
use crate::classify::{ClassifyOptions, classify};
use crate::model::ContainerSpec;
use crate::model::testing::{self, container_status as cs, event, merge, pod};
use crate::text::human_duration;

fn now() -> DateTime<Utc> {
    "2026-11-29T10:30:00Z".parse().unwrap()
}

fn term(code: i32, reason: &str) -> Value {
    merge(
        testing::terminated(code, reason),
        json!({"terminated": {"startedAt": "2026-11-29T10:00:00Z", "finishedAt": "2026-11-29T10:20:00Z"}}),
    )
}

/// An executor pod: `status` is merged over a Running executor's.
fn executor(status: Value) -> ExecutorPod {
    executor_with(json!({}), status)
}

/// Executor 7 of `spark-abc` (`etl-1a2b-exec-7`, 4505Mi), Running since 10:00, with
/// `meta_extra` and `status` merged over it.
fn executor_with(meta_extra: Value, status: Value) -> ExecutorPod {
    testing::executor(7)
        .name("etl-1a2b-exec-7")
        .meta(meta_extra)
        .status(json!({"startTime": "2026-11-29T10:00:00Z"}))
        .status(status)
        .build()
}

fn run(p: &ExecutorPod, events: &[PodEvent]) -> Vec<Finding> {
    run_with(p, events, &ClassifyOptions::default())
}

fn run_with(p: &ExecutorPod, events: &[PodEvent], opts: &ClassifyOptions) -> Vec<Finding> {
    let resolved = opts.resolve(p);
    let state = classify(p, &resolved.config);
    diagnose(p, events, &resolved, state, now())
}

fn codes(findings: &[Finding]) -> Vec<Code> {
    findings.iter().map(|f| f.code).collect()
}

fn find(findings: &[Finding], code: Code) -> &Finding {
    findings
        .iter()
        .find(|f| f.code == code)
        .unwrap_or_else(|| panic!("no {code} in {:?}", codes(findings)))
}

#[test]
fn every_code_has_a_distinct_stable_name() {
    let names: std::collections::BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(names.len(), Code::ALL.len());
    for c in Code::ALL {
        assert_eq!(serde_json::to_value(c).unwrap(), json!(c.as_str()));
        assert_eq!(Code::parse(c.as_str()), Some(c));
        assert!(!c.label().0.is_empty(), "{c}: no label");
    }
    assert_eq!(Code::parse("no-such-code"), None);
}

/// The code table and docs/diagnosis.md §3 list the same codes: a code added to one and
/// not the other fails here.
#[test]
fn every_code_has_its_row_in_the_documentation() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/diagnosis.md"
    ))
    .expect("docs/diagnosis.md reads");
    let start = doc.find("\n## 3. ").expect("§3 Findings");
    let end = doc[start..]
        .find("\n## 4. ")
        .map_or(doc.len(), |e| start + e);
    let rows: std::collections::BTreeSet<&str> = doc[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .collect();
    let codes: std::collections::BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let undocumented: Vec<_> = codes.difference(&rows).collect();
    let unknown: Vec<_> = rows.difference(&codes).collect();
    assert!(
        undocumented.is_empty(),
        "codes without a row in docs/diagnosis.md §3: {undocumented:?}"
    );
    assert!(
        unknown.is_empty(),
        "rows of docs/diagnosis.md §3 that are no code: {unknown:?}"
    );
}

#[test]
fn running_executor_has_no_findings() {
    let p = executor(
        json!({"containerStatuses": [cs("spark-kubernetes-executor", json!({"running": {"startedAt": "2026-11-29T10:00:00Z"}}))]}),
    );
    assert!(run(&p, &[]).is_empty());
}

#[test]
fn container_oom_killed() {
    let p = executor(
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(137, "OOMKilled"))]}),
    );
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::ContainerOomKilled]);
    let oom = &f[0];
    assert_eq!(oom.severity, Severity::Error);
    assert!(oom.summary.contains("4505Mi"), "{}", oom.summary);
    assert!(oom.hint.contains("spark.executor.memoryOverhead"));
    assert!(
        oom.evidence[0].contains("exitCode=137 reason=OOMKilled"),
        "{:?}",
        oom.evidence
    );
    assert!(
        oom.evidence
            .iter()
            .any(|e| e.contains("limits.memory=4505Mi"))
    );
}

#[test]
fn container_oom_killed_in_last_state() {
    let mut status = cs("spark-kubernetes-executor", testing::running());
    status["lastState"] = json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}});
    status["restartCount"] = json!(1);
    let f = run(&executor(json!({"containerStatuses": [status]})), &[]);
    let oom = find(&f, Code::ContainerOomKilled);
    assert!(oom.summary.contains("before its last restart"));
    assert!(oom.evidence[0].contains(".lastState.terminated"));
}

#[test]
fn jvm_oom_is_not_container_oom() {
    let p = executor(
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(52, "Error"))]}),
    );
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::JvmOom]);
    assert!(f[0].hint.contains("spark.executor.memory"));
    assert!(!f[0].hint.contains("Raise spark.executor.memoryOverhead"));
}

#[test]
fn exit_codes_map_to_codes() {
    let cases = [
        (50, Code::UncaughtException),
        (51, Code::UncaughtException),
        (10, Code::UncaughtException),
        (53, Code::LocalDirFailure),
        (56, Code::HeartbeatFailure),
        (57, Code::TaskReaper),
        (139, Code::Sigsegv),
        (134, Code::Sigabrt),
        (126, Code::NotExecutable),
        (127, Code::NotExecutable),
        (1, Code::GenericError),
        (58, Code::BlockManagerReregistration),
        (101, Code::ClassNotFound),
        (2, Code::GenericError),
        (0, Code::Succeeded),
    ];
    for (code, want) in cases {
        let p = executor(
            json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(code, "Error"))]}),
        );
        assert_eq!(codes(&run(&p, &[])), vec![want], "exit {code}");
    }
}

#[test]
fn sigkill_without_oom_is_node_sigkill() {
    let p = executor(
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(137, "Error"))]}),
    );
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::NodeSigkill]);
    assert!(f[0].summary.contains("OOM killer"), "{}", f[0].summary);
}

#[test]
fn sigkill_after_grace_during_deletion() {
    let p = executor_with(
        json!({"deletionTimestamp": "2026-11-29T10:20:00Z", "deletionGracePeriodSeconds": 30}),
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(137, "Error"))]}),
    );
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::NodeSigkill, Code::Deleted]);
    assert!(
        f[0].summary.contains("30s grace period"),
        "{}",
        f[0].summary
    );
    // The kubelet's last update of the deleted pod (a real kubelet's, tests/real_node/) says
    // deletionGracePeriodSeconds 0: the grace it gave is the pod's own.
    let mut p = executor_with(
        json!({"deletionTimestamp": "2026-11-29T10:20:00Z", "deletionGracePeriodSeconds": 0}),
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(137, "Error"))]}),
    );
    p.termination_grace_period_seconds = Some(3);
    let f = run(&p, &[]);
    assert!(f[0].summary.contains("3s grace period"), "{}", f[0].summary);
}

#[test]
fn sigterm_with_deletion_is_info_and_without_is_warn() {
    let killing = event(
        json!({"metadata": {"name": "k"}, "involvedObject": {"kind": "Pod", "name": "etl-1a2b-exec-7", "namespace": "spark-jobs", "uid": "uid-7"},
        "reason": "Killing", "message": "Stopping container spark-kubernetes-executor", "type": "Normal",
        "lastTimestamp": "2026-11-29T10:20:00Z", "source": {"component": "kubelet"}}),
    );
    let p = executor_with(
        json!({"deletionTimestamp": "2026-11-29T10:20:00Z", "deletionGracePeriodSeconds": 30}),
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(143, "Error"))]}),
    );
    let f = run(&p, std::slice::from_ref(&killing));
    assert_eq!(codes(&f), vec![Code::Sigterm, Code::Deleted]);
    assert_eq!(f[0].severity, Severity::Info);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("Killing") && e.contains("kubelet")),
        "{:?}",
        f[0].evidence
    );
    let p = executor(
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(143, "Error"))]}),
    );
    assert_eq!(run(&p, &[])[0].severity, Severity::Warn);
}

#[test]
fn evicted_by_kubelet_for_memory_and_disk() {
    let p = executor(json!({"phase": "Failed", "reason": "Evicted",
        "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 12Mi. Container spark-kubernetes-executor was using 4Gi, request is 1Gi, has larger consumption of memory.",
        "containerStatuses": [cs("spark-kubernetes-executor", term(137, "Error"))]}));
    let f = run(&p, &[]);
    let e = find(&f, Code::Evicted);
    assert!(e.summary.contains("low on memory"), "{}", e.summary);
    assert!(
        e.hint.contains("spark.kubernetes.executor.limit.cores"),
        "{}",
        e.hint
    );
    let p = executor(json!({"phase": "Failed", "reason": "Evicted",
        "message": "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi."}));
    let e = run(&p, &[])
        .into_iter()
        .find(|f| f.code == Code::Evicted)
        .unwrap();
    assert!(e.hint.contains("spark.local.dir"));
}

#[test]
fn evicted_through_the_api() {
    let p = executor(
        json!({"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting"}]}),
    );
    let f = run(&p, &[]);
    assert!(find(&f, Code::Evicted).summary.contains("Eviction API"));
}

#[test]
fn preempted_by_the_scheduler() {
    let p = executor_with(
        json!({"deletionTimestamp": "2026-11-29T10:20:00Z", "deletionGracePeriodSeconds": 30}),
        json!({"phase": "Failed",
            "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": "Scheduler: preempting to accommodate a higher priority pod, scheduled by \"default-scheduler\""}],
            "containerStatuses": [cs("spark-kubernetes-executor", term(143, "Error"))]}),
    );
    let f = run(&p, &[]);
    assert_eq!(
        codes(&f),
        vec![Code::Preempted, Code::Sigterm, Code::Deleted]
    );
    // the 1.26 reason is recognised too
    let p = executor(
        json!({"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByKubeScheduler",
        "message": "Kube-scheduler: preempting to accommodate a higher priority pod: default/pause2"}]}),
    );
    assert!(
        find(&run(&p, &[]), Code::Preempted)
            .summary
            .contains("default/pause2")
    );
}

#[test]
fn node_lost() {
    let p = executor(json!({"phase": "Unknown", "reason": "NodeLost"}));
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::NodeLost]);
    assert_eq!(
        f[0].evidence,
        vec!["status.phase=Unknown", "status.reason=NodeLost"]
    );
}

#[test]
fn deleted_with_a_finalizer_long_past_grace_is_a_warning() {
    let p = executor_with(
        json!({"deletionTimestamp": "2026-11-29T10:00:00Z", "deletionGracePeriodSeconds": 30,
               "finalizers": ["example.com/keep"]}),
        json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(143, "Error"))]}),
    );
    let f = run(&p, &[]);
    let d = find(&f, Code::Deleted);
    assert_eq!(d.severity, Severity::Warn);
    assert!(
        d.summary.contains("example.com/keep") && d.summary.contains("29m30s past"),
        "{}",
        d.summary
    );
}

/// Executor 12 (`etl-1a2b-exec-12`, created at 10:00, image from a private registry, no
/// resources), Pending, with `status_extra` merged over it.
fn pending(status_extra: Value) -> ExecutorPod {
    testing::executor(12)
        .name("etl-1a2b-exec-12")
        .meta(json!({"creationTimestamp": "2026-11-29T10:00:00Z"}))
        .container(
            json!({"image": "registry.example.com/spark:4.0.1", "resources": null, "env": null}),
        )
        .status(json!({"phase": "Pending"}))
        .status(status_extra)
        .build()
}

#[test]
fn unschedulable_from_the_condition() {
    let p = pending(
        json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}]}),
    );
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::Unschedulable]);
    let u = &f[0];
    assert_eq!(
        u.summary,
        "Unschedulable on all 3 nodes: Insufficient memory (3 nodes)"
    );
    assert_eq!(u.scheduling.len(), 1);
    assert_eq!(u.scheduling[0].kind, SchedulingKind::InsufficientMemory);
    assert!(u.hint.contains("spark.executor.memory"));
    assert!(u.evidence.iter().any(|e| e.starts_with("preemption: ")));
}

#[test]
fn unschedulable_from_events_only_and_not_once_scheduled() {
    let ev = event(
        json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Pod", "name": "etl-1a2b-exec-12", "namespace": "spark-jobs"},
        "reason": "FailedScheduling", "type": "Warning", "count": 5,
        "message": "0/4 nodes are available: 4 node(s) had untolerated taint {dedicated: gpu}.",
        "source": {"component": "default-scheduler"}}),
    );
    let p = pending(json!({}));
    let f = run(&p, std::slice::from_ref(&ev));
    let u = find(&f, Code::Unschedulable);
    assert_eq!(u.scheduling[0].kind, SchedulingKind::UntoleratedTaint);
    assert!(
        u.evidence[0].contains("x5") && u.evidence[0].contains("default-scheduler"),
        "{:?}",
        u.evidence
    );
    let mut scheduled = p.clone();
    scheduled.node_name = Some("node-1".into());
    assert!(run(&scheduled, std::slice::from_ref(&ev)).is_empty());
}

#[test]
fn events_about_other_pods_are_ignored() {
    let ev = event(
        json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Pod", "name": "someone-else", "namespace": "spark-jobs"},
        "reason": "FailedScheduling", "type": "Warning", "message": "0/1 nodes are available: 1 Insufficient cpu."}),
    );
    assert!(run(&pending(json!({})), &[ev]).is_empty());
}

#[test]
fn image_pull_rate_limited() {
    let p = pending(
        json!({"containerStatuses": [cs("spark-kubernetes-executor", json!({"waiting": {"reason": "ImagePullBackOff",
        "message": "Back-off pulling image \"registry.example.com/spark:4.0.1\""}}))]}),
    );
    let ev = event(
        json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Pod", "name": "etl-1a2b-exec-12", "namespace": "spark-jobs"},
        "reason": "Failed", "type": "Warning",
        "message": "Failed to pull image \"registry.example.com/spark:4.0.1\": failed to resolve reference: unexpected status from HEAD request: 429 Too Many Requests"}),
    );
    let f = run(&p, &[ev]);
    let i = find(&f, Code::ImagePull);
    assert_eq!(
        i.summary,
        "Cannot pull registry.example.com/spark:4.0.1: the registry is rate-limiting pulls (ImagePullBackOff)"
    );
    assert_eq!(i.evidence.len(), 2);
}

#[test]
fn image_pull_causes() {
    let cases = [
        ("manifest unknown", "does not exist"),
        (
            "pull access denied, repository does not exist or may require authorization: authorization failed",
            "refused the credentials",
        ),
        (
            "dial tcp: lookup registry.example.com: no such host",
            "unreachable",
        ),
        ("something odd", "the pull failed"),
    ];
    for (msg, want) in cases {
        let p = pending(
            json!({"containerStatuses": [cs("spark-kubernetes-executor", json!({"waiting": {"reason": "ErrImagePull", "message": msg}}))]}),
        );
        let f = run(&p, &[]);
        assert!(
            find(&f, Code::ImagePull).summary.contains(want),
            "{msg}: {}",
            f[0].summary
        );
    }
    let p = pending(
        json!({"containerStatuses": [cs("spark-kubernetes-executor", json!({"waiting": {"reason": "InvalidImageName"}}))]}),
    );
    assert!(
        find(&run(&p, &[]), Code::ImagePull)
            .summary
            .contains("invalid")
    );
    // A real kubelet's words (tests/fixtures/real-kubelet/image-never-pull.json): no pull was
    // tried, so the summary does not say one failed.
    let p = pending(
        json!({"containerStatuses": [cs("spark-kubernetes-executor", json!({"waiting": {"reason": "ErrImageNeverPull",
        "message": "Container image \"localhost/x:1\" is not present with pull policy of Never"}}))]}),
    );
    let f = run(&p, &[]);
    let s = &find(&f, Code::ImagePull).summary;
    assert!(s.contains("not on the node") && s.contains("Never"), "{s}");
    assert!(
        !s.contains("pull failed") && !s.contains("Cannot pull"),
        "{s}"
    );
}

#[test]
fn container_config_error() {
    let p = pending(
        json!({"containerStatuses": [cs("spark-kubernetes-executor", json!({"waiting": {"reason": "CreateContainerConfigError",
        "message": "secret \"s3-credentials\" not found"}}))]}),
    );
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::ContainerConfigError]);
    assert!(f[0].evidence[0].contains("s3-credentials"));
    // The summary names what is missing, as the kubelet said it.
    assert!(
        f[0].summary.contains("secret \"s3-credentials\" not found"),
        "{}",
        f[0].summary
    );
}

#[test]
fn container_creating_stuck_only_after_the_threshold() {
    let stuck = |since: &str| {
        pending(
            json!({"startTime": since, "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": since}],
            "containerStatuses": [cs("spark-kubernetes-executor", json!({"waiting": {"reason": "ContainerCreating"}}))]}),
        )
    };
    let mut p = stuck("2026-11-29T10:20:00Z");
    p.node_name = Some("node-1".into());
    let mount = event(
        json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Pod", "name": "etl-1a2b-exec-12", "namespace": "spark-jobs"},
        "reason": "FailedMount", "type": "Warning", "message": "MountVolume.SetUp failed for volume \"spark-conf-volume-exec\" : configmap \"spark-exec-conf-map\" not found"}),
    );
    let f = run(&p, std::slice::from_ref(&mount));
    let c = find(&f, Code::ContainerCreatingStuck);
    assert!(
        c.summary.contains("10m00s") && c.summary.contains("volumes fail to mount"),
        "{}",
        c.summary
    );
    let mut fresh = stuck("2026-11-29T10:29:00Z");
    fresh.node_name = Some("node-1".into());
    assert!(run(&fresh, &[mount]).is_empty());
}

#[test]
fn sidecar_failed_fails_the_pod_under_spark_4_defaults() {
    let mut p = executor(json!({"containerStatuses": [
        cs("spark-kubernetes-executor", testing::running()),
        cs("fluent-bit", term(1, "Error"))]}));
    p.containers.push(ContainerSpec {
        name: "fluent-bit".into(),
        ..Default::default()
    });
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::SidecarFailed]);
    assert_eq!(f[0].severity, Severity::Error);
    let opts = ClassifyOptions {
        check_all_containers: Some(false),
        ..Default::default()
    };
    let f = run_with(&p, &[], &opts);
    assert_eq!(f[0].severity, Severity::Warn);
}

#[test]
fn init_container_failed() {
    let p = pending(json!({"initContainerStatuses": [cs("fetch-jars", term(2, "Error"))]}));
    assert_eq!(codes(&run(&p, &[])), vec![Code::InitContainerFailed]);
}

fn renamed_executor(code: i32) -> ExecutorPod {
    pod(json!({
        "metadata": {"name": "etl-exec-3", "labels": {"spark-role": "executor", "spark-exec-id": "3"}},
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": "executor", "env": [{"name": "SPARK_EXECUTOR_ID", "value": "3"}]},
            {"name": "istio-proxy"}]},
        "status": {"phase": "Running", "containerStatuses": [
            cs("executor", term(code, if code == 0 { "Completed" } else { "Error" })),
            cs("istio-proxy", testing::running())]}
    }))
}

#[test]
fn stuck_running_when_the_name_is_guessed_is_a_warning() {
    let p = renamed_executor(0);
    let f = run(&p, &[]);
    assert_eq!(codes(&f), vec![Code::StuckRunning, Code::Succeeded]);
    assert_eq!(f[0].severity, Severity::Warn);
    assert!(f[0].hint.contains("podTemplateContainerName=executor"));
}

#[test]
fn stuck_running_when_spark_is_configured_with_another_name_is_an_error() {
    let opts = ClassifyOptions {
        spark_container: Some("spark-kubernetes-executor".into()),
        ..Default::default()
    };
    let p = renamed_executor(0);
    let f = run_with(&p, &[], &opts);
    assert_eq!(codes(&f), vec![Code::StuckRunning]);
    assert_eq!(f[0].severity, Severity::Error);
    // configured correctly: no finding
    let opts = ClassifyOptions {
        spark_container: Some("executor".into()),
        ..Default::default()
    };
    assert_eq!(codes(&run_with(&p, &[], &opts)), vec![Code::Succeeded]);
}

#[test]
fn non_zero_exit_with_check_all_is_not_stuck() {
    // checkAllContainers catches a non-zero exit whatever the name: Spark says failed.
    let f = run(&renamed_executor(1), &[]);
    assert!(!codes(&f).contains(&Code::StuckRunning), "{:?}", codes(&f));
}

#[test]
fn human_durations() {
    assert_eq!(human_duration(chrono::Duration::seconds(-3)), "0s");
    assert_eq!(human_duration(chrono::Duration::seconds(59)), "59s");
    assert_eq!(human_duration(chrono::Duration::seconds(200)), "3m20s");
    assert_eq!(human_duration(chrono::Duration::seconds(7500)), "2h05m");
    assert_eq!(human_duration(chrono::Duration::seconds(172_799)), "47h59m");
    assert_eq!(human_duration(chrono::Duration::seconds(172_800)), "2d00h");
    assert_eq!(human_duration(chrono::Duration::days(93)), "93d00h");
}

#[test]
fn absurd_grace_periods_do_not_panic() {
    for grace in [i64::MAX, i64::MIN, -1] {
        let p = executor_with(
            json!({"deletionTimestamp": "2026-11-29T10:00:00Z", "deletionGracePeriodSeconds": grace,
                   "finalizers": ["example.com/keep"]}),
            json!({"phase": "Failed", "containerStatuses": [cs("spark-kubernetes-executor", term(137, "Error"))]}),
        );
        assert!(codes(&run(&p, &[])).contains(&Code::Deleted));
    }
}

mod failure_modes;

/// A `Preempted` event as kube-scheduler 1.3x records it (events.k8s.io/v1 seen through
/// core/v1: `related` is the preemptor; the message names it by uid).
fn preempted_event(related: Value) -> PodEvent {
    testing::event(json!({
        "metadata": {"name": "etl-1a2b-exec-7.181d", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "etl-1a2b-exec-7", "uid": "uid-7"},
        "related": related,
        "reason": "Preempted", "type": "Normal",
        "message": "Preempted by pod 5c3e1a2f-0d4b-4e8f-9a61-2b7c9d0e1f3a on node node-3",
        "eventTime": "2026-11-29T10:20:00.000000Z", "reportingComponent": "default-scheduler",
        "source": {"component": "default-scheduler"}
    }))
}

#[test]
fn a_preemption_names_the_preemptor_its_app_and_both_priorities() {
    let mut victim = executor_with(
        json!({"deletionTimestamp": "2026-11-29T10:20:00Z", "deletionGracePeriodSeconds": 30}),
        json!({"phase": "Failed",
            "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": "Scheduler: preempting to accommodate a higher priority pod, scheduled by \"default-scheduler\""}],
            "containerStatuses": [cs("spark-kubernetes-executor", term(143, "Error"))]}),
    );
    victim.priority_class = Some("spark-batch".into());
    victim.priority = Some(100);
    // The preemptor is another Spark app's driver the tool knows.
    let preemptor = pod(json!({
        "metadata": {"name": "urgent-sql-driver", "namespace": "default",
            "uid": "5c3e1a2f-0d4b-4e8f-9a61-2b7c9d0e1f3a",
            "labels": {"spark-app-selector": "spark-urgent", "spark-app-name": "urgent-sql", "spark-role": "driver"}},
        "spec": {"priorityClassName": "spark-interactive", "priority": 1000, "containers": []}
    }));
    assert_eq!(preemptor.priority, Some(1000), "spec.priority is read");
    let mut events = vec![preempted_event(json!({
        "kind": "Pod", "namespace": "default", "name": "urgent-sql-driver",
        "uid": "5c3e1a2f-0d4b-4e8f-9a61-2b7c9d0e1f3a"}))];
    disruption::resolve_preemptors(&mut events, &[victim.clone(), preemptor]);
    let f = find(&run(&victim, &events), Code::Preempted).clone();
    assert_eq!(
        f.summary,
        "Preempted by default/urgent-sql-driver (app urgent-sql, spark-interactive = 1000) to \
         make room; this pod had priority spark-batch = 100"
    );
    assert!(
        f.hint.contains("Another Spark application (urgent-sql)"),
        "{}",
        f.hint
    );

    // Only the message (an older recorder, no `related`), a pod the tool does not watch.
    let mut bare = preempted_event(Value::Null);
    bare.related = None;
    let f = find(&run(&victim, &[bare]), Code::Preempted).clone();
    assert!(
        f.summary
            .starts_with("Preempted by pod 5c3e1a2f-0d4b-4e8f-9a61-2b7c9d0e1f3a to make room"),
        "{}",
        f.summary
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("not a pod spark-triage watches"))
    );
    // Before 1.2x the message named the preemptor's namespace and name.
    let mut old = preempted_event(Value::Null);
    old.related = None;
    old.message = Some("Preempted by default/ml-training-0 on node node-3".into());
    let r = disruption::preemptor_of([&old]).unwrap();
    assert_eq!(
        (r.namespace.as_deref(), r.name.as_deref()),
        (Some("default"), Some("ml-training-0"))
    );
}

/// An in-place resize (Spark 4.2's ExecutorResizePlugin, a VPA) raises the spec's limit; the
/// node may not apply it. The OOM is judged against the limit the container had.
#[test]
fn an_oom_is_judged_against_the_limit_the_container_had_not_a_resized_spec() {
    let mut st = cs("spark-kubernetes-executor", term(137, "OOMKilled"));
    st["resources"] = json!({"limits": {"memory": "4505Mi"}, "requests": {"memory": "4505Mi"}});
    st["allocatedResources"] = json!({"memory": "4505Mi"});
    let mut p = executor(json!({"phase": "Failed", "containerStatuses": [st],
        "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible",
            "message": "Node didn't have enough capacity: memory, requested: 6Gi, allocated: 4505Mi"}]}));
    p.containers[0].limits.memory = Some("6Gi".into());
    p.containers[0].requests.memory = Some("6Gi".into());
    let f = run(&p, &[]);
    let oom = find(&f, Code::ContainerOomKilled);
    assert!(
        oom.summary
            .contains("at its 4505Mi memory limit (its spec asks 6Gi: a resize not applied)"),
        "{}",
        oom.summary
    );
    assert!(
        oom.evidence[1].starts_with(
            "status.containerStatuses[spark-kubernetes-executor].resources.limits.memory=4505Mi (the limit it ran with); spec.containers[spark-kubernetes-executor].resources.limits.memory=6Gi"
        ),
        "{:?}",
        oom.evidence
    );
    assert!(
        oom.evidence
            .iter()
            .any(|e| e.contains("PodResizePending") && e.contains("Infeasible"))
    );
    assert!(
        oom.hint
            .starts_with("Its memory was resized in place to 6Gi"),
        "{}",
        oom.hint
    );
    // The overhead advice is computed from the limit it had.
    assert!(oom.hint.contains("this 4505Mi limit"), "{}", oom.hint);

    // Only the allocation known (a terminated container's status may not keep `resources`).
    let mut st = cs("spark-kubernetes-executor", term(137, "OOMKilled"));
    st["allocatedResources"] = json!({"memory": "4505Mi"});
    let mut p = executor(json!({"phase": "Failed", "containerStatuses": [st]}));
    p.containers[0].limits.memory = Some("6Gi".into());
    p.containers[0].requests.memory = Some("6Gi".into());
    let f = run(&p, &[]);
    let oom = find(&f, Code::ContainerOomKilled);
    assert!(
        oom.summary
            .contains("at its 4505Mi memory limit (its spec asks 6Gi"),
        "{}",
        oom.summary
    );
    assert!(
        oom.evidence[1].contains("allocatedResources.memory=4505Mi"),
        "{:?}",
        oom.evidence
    );
    // A request below the limit, never resized: the allocation is the request, not a resize.
    p.containers[0].requests.memory = Some("4505Mi".into());
    let oom = run(&p, &[]).remove(0);
    assert!(
        oom.summary.contains("at its 6Gi memory limit (exit 137)"),
        "{}",
        oom.summary
    );

    // Status and spec agree (no resize): said as before, from what it ran with.
    let mut st = cs("spark-kubernetes-executor", term(137, "OOMKilled"));
    st["resources"] = json!({"limits": {"memory": "4505Mi"}});
    let p = executor(json!({"phase": "Failed", "containerStatuses": [st]}));
    let oom = run(&p, &[]).remove(0);
    assert!(
        oom.summary
            .contains("at its 4505Mi memory limit (exit 137)"),
        "{}",
        oom.summary
    );
}
