//! Who decides Pending: each scheduler's and admission controller's words, modelled on the
//! objects their sources write (strings quoted in `queueing/mod.rs`'s references).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::super::{Code, Finding, Severity, Witness, diagnose_in};
use super::GroupIndex;
use crate::classify::{ClassifyOptions, classify};
use crate::model::testing::{self, event};
use crate::model::{ExecutorPod, GroupKind, PodCondition, PodEvent, SchedGroup};

fn now() -> DateTime<Utc> {
    "2026-11-29T10:30:00Z".parse().unwrap()
}

/// A pending pod (through the wire projection, which reads fields newer than the typed
/// client's API level, such as `spec.workloadRef`): `etl-{role}` (the executor is number 3),
/// created at 10:00, asking 4505Mi with no limit.
fn pod_of(role: &str, meta_extra: Value, spec_extra: Value, status: Value) -> ExecutorPod {
    let base = match role {
        "executor" => testing::executor(3)
            .name("etl-executor")
            .uid("uid-executor"),
        "driver" => testing::driver(),
        _ => panic!("no role {role}"),
    };
    base.meta(json!({"creationTimestamp": "2026-11-29T10:00:00Z"}))
        .container(json!({"image": "apache/spark:4.0.1", "env": null,
            "resources": {"requests": {"cpu": "1", "memory": "4505Mi"}, "limits": null}}))
        .meta(meta_extra)
        .spec(spec_extra)
        .status(json!({"phase": "Pending"}))
        .status(status)
        .build_wire()
}

fn run(p: &ExecutorPod, events: &[PodEvent], groups: &GroupIndex) -> Vec<Finding> {
    let resolved = ClassifyOptions::default().resolve(p);
    let state = classify(p, &resolved.config);
    diagnose_in(p, events, &resolved, state, now(), groups)
}

fn codes(f: &[Finding]) -> Vec<Code> {
    f.iter().map(|f| f.code).collect()
}

fn kueue_pod() -> ExecutorPod {
    pod_of(
        "executor",
        json!({"labels": {"kueue.x-k8s.io/queue-name": "team-a", "kueue.x-k8s.io/managed": "true"}}),
        json!({"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}),
        json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"}]}),
    )
}

/// A single pod's Workload, as Kueue writes it: a hashed name, owned by the pod.
fn workload(conditions: Value) -> SchedGroup {
    SchedGroup::from_value(
        GroupKind::KueueWorkload,
        &json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "pod-etl-executor-5b1f2", "namespace": "spark-jobs",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "etl-executor", "uid": "uid-executor", "controller": true}],
                "labels": {"kueue.x-k8s.io/job-uid": "uid-executor"}},
            "spec": {"queueName": "team-a", "podSets": [{"name": "main", "count": 1}]},
            "status": {"conditions": conditions}}),
    )
}

fn index(objects: Vec<SchedGroup>, listed: &[GroupKind]) -> GroupIndex {
    GroupIndex {
        objects,
        listed: listed.to_vec(),
        ..GroupIndex::default()
    }
}

#[test]
fn kueue_gate_without_its_workload_says_who_holds_the_pod() {
    let p = kueue_pod();
    let f = run(&p, &[], &GroupIndex::default());
    assert_eq!(codes(&f), vec![Code::SchedulingGated]);
    assert_eq!(
        f[0].summary,
        "Held by Kueue until its Workload is admitted (LocalQueue team-a)"
    );
    assert!(
        f[0].evidence.iter().any(|e| e.contains("SchedulingGated")),
        "{:?}",
        f[0].evidence
    );
    // No default-scheduler finding: the gate, not the nodes, holds it.
    assert!(!codes(&f).contains(&Code::Unschedulable));
}

#[test]
fn kueue_workload_not_admitted_names_the_quota_it_lacks() {
    let w = workload(
        json!([{"type": "QuotaReserved", "status": "False", "reason": "Pending",
        "message": "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 2 more needed",
        "lastTransitionTime": "2026-11-29T10:00:05Z"}]),
    );
    let f = run(
        &kueue_pod(),
        &[],
        &index(vec![w], &[GroupKind::KueueWorkload]),
    );
    assert_eq!(codes(&f), vec![Code::SchedulingGated]);
    assert_eq!(f[0].severity, Severity::Warn);
    assert_eq!(f[0].witness, Witness::SchedulerObject);
    assert!(
        f[0].summary.starts_with("Kueue has not admitted the Workload pod-etl-executor-5b1f2 (LocalQueue team-a): couldn't assign flavors"),
        "{}",
        f[0].summary
    );
    assert!(f[0].hint.contains("nominalQuota"), "{}", f[0].hint);
}

#[test]
fn a_missing_local_queue_never_resolves_by_waiting() {
    let w = workload(
        json!([{"type": "QuotaReserved", "status": "False", "reason": "Inadmissible",
        "message": "LocalQueue team-a doesn't exist"}]),
    );
    let f = run(
        &kueue_pod(),
        &[],
        &index(vec![w], &[GroupKind::KueueWorkload]),
    );
    assert_eq!(f[0].severity, Severity::Error);
    assert!(f[0].hint.contains("does not resolve by waiting"));
}

#[test]
fn kueue_listed_without_a_workload_or_forbidden_says_so() {
    let f = run(
        &kueue_pod(),
        &[],
        &index(Vec::new(), &[GroupKind::KueueWorkload]),
    );
    assert!(
        f[0].summary.contains("no Workload exists"),
        "{}",
        f[0].summary
    );
    let mut forbidden = GroupIndex::default();
    forbidden.unknown.insert(
        GroupKind::KueueWorkload,
        "forbidden: the tool may not list workloads.kueue.x-k8s.io in namespace spark-jobs"
            .to_owned(),
    );
    let f = run(&kueue_pod(), &[], &forbidden);
    assert_eq!(codes(&f), vec![Code::SchedulingGated]);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("Workload (found by its owner): unknown because forbidden")),
        "{:?}",
        f[0].evidence
    );
}

#[test]
fn another_controllers_gate_is_named() {
    let p = pod_of(
        "executor",
        json!({}),
        json!({"schedulingGates": [{"name": "example.com/capacity-check"}]}),
        json!({}),
    );
    let f = run(&p, &[], &GroupIndex::default());
    assert_eq!(
        f[0].summary,
        "Held by scheduling gates: example.com/capacity-check"
    );
}

#[test]
fn kueue_stopping_a_pod_is_its_cause() {
    let p = pod_of(
        "executor",
        json!({"labels": {"kueue.x-k8s.io/queue-name": "team-a"}, "deletionTimestamp": "2026-11-29T10:20:00Z"}),
        json!({"nodeName": "n1"}),
        json!({"phase": "Running", "conditions": [{"type": "TerminationTarget", "status": "True",
            "reason": "WorkloadEvictedDueToPreempted",
            "message": "Preempted to accommodate a workload (UID: 9f2, JobUID: 77a) due to prioritization in the ClusterQueue"}]}),
    );
    let f = run(&p, &[], &GroupIndex::default());
    let e = f.iter().find(|f| f.code == Code::WorkloadEvicted).unwrap();
    assert_eq!(e.severity, Severity::Error);
    assert!(
        e.summary
            .starts_with("Kueue stopped the pod: Preempted to accommodate")
    );
    assert!(e.hint.contains("WorkloadPriorityClass"));
}

fn volcano_pod(role: &str, message: &str) -> ExecutorPod {
    pod_of(
        role,
        json!({"annotations": {"scheduling.k8s.io/group-name": "spark-abc-podgroup"}}),
        json!({"schedulerName": "volcano"}),
        json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message}]}),
    )
}

fn podgroup(phase: &str, min_member: i32, message: &str) -> SchedGroup {
    SchedGroup::from_value(
        GroupKind::VolcanoPodGroup,
        &json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "spark-abc-podgroup", "namespace": "spark-jobs"},
            "spec": {"minMember": min_member, "queue": "sparkqueue", "minResources": {"cpu": "4", "memory": "8Gi"}},
            "status": {"phase": phase, "conditions": [{"type": "Unschedulable", "status": "True",
                "reason": "NotEnoughResources", "transitionID": "5d0c", "message": message,
                "lastTransitionTime": "2026-11-29T10:00:10Z"}]}}),
    )
}

#[test]
fn volcano_gang_message_is_the_gangs_not_the_nodes() {
    let p = volcano_pod(
        "executor",
        "pod group is not ready, 1 Pending, 1 minAvailable; Pending: 1 Unschedulable",
    );
    let f = run(&p, &[], &GroupIndex::default());
    assert_eq!(codes(&f), vec![Code::GangWaiting]);
    assert!(
        f[0].summary
            .starts_with("Volcano holds the pod: PodGroup spark-abc-podgroup is not ready"),
        "{}",
        f[0].summary
    );
}

#[test]
fn volcano_podgroup_pending_and_a_driver_gang_that_cannot_form() {
    let msg = "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 3 minAvailable; Pending: 1 Unschedulable";
    let groups = index(
        vec![podgroup("Pending", 3, msg)],
        &[GroupKind::VolcanoPodGroup],
    );
    let p = volcano_pod(
        "driver",
        "pod group is not ready, 1 Pending, 3 minAvailable; Pending: 1 Unschedulable",
    );
    let f = run(&p, &[], &groups);
    assert_eq!(codes(&f), vec![Code::GangWaiting]);
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].witness, Witness::SchedulerObject);
    assert!(
        f[0].summary
            .contains("PodGroup spark-abc-podgroup is Pending: 1/1 tasks in gang unschedulable"),
        "{}",
        f[0].summary
    );
    assert!(f[0].hint.contains("minMember: 1"), "{}", f[0].hint);
    assert!(
        f[0].hint.contains("queue has not admitted it"),
        "{}",
        f[0].hint
    );
    // An executor of the same group is not told the driver's minMember story.
    let e = volcano_pod(
        "executor",
        "pod group is not ready, 1 Pending, 3 minAvailable",
    );
    let f = run(&e, &[], &groups);
    assert_eq!(f[0].severity, Severity::Warn);
}

#[test]
fn volcano_node_fit_is_unschedulable_with_its_reasons() {
    let p = volcano_pod(
        "executor",
        "0/3 nodes are unavailable: 3 Insufficient memory.",
    );
    let f = run(&p, &[], &GroupIndex::default());
    assert_eq!(codes(&f), vec![Code::Unschedulable]);
    assert_eq!(
        f[0].summary,
        "Unschedulable on all 3 nodes: Insufficient memory (3 nodes)"
    );
}

#[test]
fn volcano_node_fit_with_a_stuck_podgroup_is_still_the_nodes() {
    let groups = index(
        vec![podgroup(
            "Inqueue",
            1,
            "1/1 tasks in gang unschedulable: pod group is not ready",
        )],
        &[GroupKind::VolcanoPodGroup],
    );
    let p = volcano_pod(
        "executor",
        "0/3 nodes are unavailable: 3 Insufficient memory.",
    );
    assert_eq!(codes(&run(&p, &[], &groups)), vec![Code::Unschedulable]);
    let mut d = volcano_pod("executor", "pod group is not ready");
    d.scheduler_name = None;
    assert!(!codes(&run(&d, &[], &groups)).contains(&Code::GangWaiting));
}

#[test]
fn kueue_admitted_with_the_gate_left_says_so() {
    let w = workload(json!([
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue cq"},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted"}]));
    let f = run(
        &kueue_pod(),
        &[],
        &index(vec![w], &[GroupKind::KueueWorkload]),
    );
    assert!(
        f[0].summary.contains("but the pod's gate is still there"),
        "{}",
        f[0].summary
    );
}

#[test]
fn volcano_podgroup_missing_is_said() {
    let p = pod_of(
        "driver",
        json!({"annotations": {"scheduling.k8s.io/group-name": "spark-abc-podgroup"}}),
        json!({"schedulerName": "volcano"}),
        json!({}),
    );
    let f = run(&p, &[], &index(Vec::new(), &[GroupKind::VolcanoPodGroup]));
    assert_eq!(codes(&f), vec![Code::GangWaiting]);
    assert_eq!(f[0].severity, Severity::Warn);
    assert!(
        f[0].summary
            .contains("was not in the last list of podgroups")
    );
}

fn yunikorn_pod(status: Value, annotations: Value) -> ExecutorPod {
    pod_of(
        "driver",
        json!({"annotations": annotations, "labels": {"queue": "root.spark"}}),
        json!({"schedulerName": "yunikorn"}),
        status,
    )
}

fn ev(reason: &str, type_: &str, message: &str, at: &str, action: Option<&str>) -> PodEvent {
    let mut e = event(
        json!({"metadata": {"name": format!("e-{reason}-{at}"), "namespace": "spark-jobs"},
        "involvedObject": {"kind": "Pod", "name": "etl-driver", "namespace": "spark-jobs", "uid": "uid-driver"},
        "type": type_, "reason": reason, "message": message, "count": 1,
        "firstTimestamp": at, "lastTimestamp": at, "source": {"component": "yunikorn"}}),
    );
    e.action = action.map(str::to_owned);
    e
}

#[test]
fn yunikorn_rejection_fails_the_app_with_the_whole_reason() {
    // The shim keeps only the text between the first two colons in the status; its event
    // has all of it.
    let p = yunikorn_pod(
        json!({"phase": "Failed", "reason": "ApplicationRejected", "message": " failed to place application spark-abc"}),
        json!({}),
    );
    let e = ev(
        "ApplicationFailed",
        "Warning",
        "Application spark-abc scheduling failed, reason: ApplicationRejected: failed to place application spark-abc: application rejected: no placement rule matched",
        "2026-11-29T10:00:02Z",
        Some("ApplicationFailed"),
    );
    let f = run(&p, &[e], &GroupIndex::default());
    assert_eq!(f[0].code, Code::SchedulerRejected);
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(
        f[0].summary,
        "YuniKorn rejected the application: failed to place application spark-abc: application rejected: no placement rule matched: the pod never ran"
    );
    // Without the event, the status's cut message still says it.
    let f = run(&p, &[], &GroupIndex::default());
    assert!(
        f[0].summary
            .contains("failed to place application spark-abc")
    );
}

#[test]
fn yunikorn_hard_gang_timeout() {
    let p = yunikorn_pod(
        json!({"phase": "Failed", "reason": "ResourceReservationTimeout", "message": "Scheduling has timed out due to insufficient resources"}),
        json!({"yunikorn.apache.org/schedulingPolicyParameters": "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard"}),
    );
    let f = run(&p, &[], &GroupIndex::default());
    assert_eq!(f[0].code, Code::SchedulerRejected);
    assert_eq!(
        f[0].summary,
        "YuniKorn's gang reservation timed out (placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard): Scheduling has timed out due to insufficient resources"
    );
}

#[test]
fn yunikorn_queue_headroom_until_it_fits() {
    let p = yunikorn_pod(json!({}), json!({}));
    let full = ev(
        "Informational",
        "Normal",
        "Request 'uid-driver' does not fit in queue 'root.spark' (requested map[memory:4294967296 pods:1 vcore:2000], available map[memory:1073741824 vcore:500])",
        "2026-11-29T10:00:03Z",
        Some("Informational"),
    );
    let f = run(&p, std::slice::from_ref(&full), &GroupIndex::default());
    assert_eq!(codes(&f), vec![Code::QueueWaiting]);
    assert!(f[0].summary.starts_with(
        "YuniKorn holds the pod: Request 'uid-driver' does not fit in queue 'root.spark'"
    ));
    let fits = ev(
        "Informational",
        "Normal",
        "Request 'uid-driver' has become schedulable in queue 'root.spark'",
        "2026-11-29T10:05:00Z",
        Some("Informational"),
    );
    let f = run(&p, &[full, fits], &GroupIndex::default());
    assert!(!codes(&f).contains(&Code::QueueWaiting), "{:?}", codes(&f));
}

#[test]
fn yunikorn_gang_events_are_read_by_their_action() {
    let p = yunikorn_pod(
        json!({}),
        json!({"yunikorn.apache.org/task-group-name": "spark-driver"}),
    );
    let e = ev(
        "GangScheduling",
        "Warning",
        "Application spark-abc placeholder has been timed out",
        "2026-11-29T10:01:00Z",
        Some("PlaceholderTimeOut"),
    );
    let f = run(&p, &[e], &GroupIndex::default());
    assert_eq!(codes(&f), vec![Code::GangWaiting]);
    assert!(f[0].summary.contains("timed out"));
    assert!(
        f[0].evidence
            .iter()
            .any(|l| l.contains("task-group-name]=spark-driver"))
    );
}

#[test]
fn a_named_scheduler_that_says_nothing() {
    let p = pod_of(
        "driver",
        json!({}),
        json!({"schedulerName": "volcano"}),
        json!({}),
    );
    // Without the pods' events (a file of pods only) silence says nothing.
    assert!(run(&p, &[], &GroupIndex::default()).is_empty());
    let heard = GroupIndex {
        events_read: true,
        ..GroupIndex::default()
    };
    let f = run(&p, &[], &heard);
    assert_eq!(codes(&f), vec![Code::SchedulerSilent]);
    assert!(
        f[0].summary.contains("\"volcano\" in 30m00s"),
        "{}",
        f[0].summary
    );
    // Young, or spoken of: not silent.
    let mut young = p.clone();
    young.created_at = Some("2026-11-29T10:29:40Z".parse().unwrap());
    assert!(run(&young, &[], &heard).is_empty());
    let e = ev(
        "Scheduling",
        "Normal",
        "spark-jobs/etl-driver is queued and waiting for allocation",
        "2026-11-29T10:00:01Z",
        None,
    );
    assert!(!codes(&run(&p, &[e], &GroupIndex::default())).contains(&Code::SchedulerSilent));
    // The default scheduler is never "silent" here (its own rules say what it says).
    let d = pod_of(
        "driver",
        json!({}),
        json!({"schedulerName": "default-scheduler"}),
        json!({}),
    );
    assert!(d.scheduler_name.is_none());
    assert!(run(&d, &[], &heard).is_empty());
}

fn gang_pod(name: &str) -> ExecutorPod {
    let mut p = pod_of(
        "executor",
        json!({}),
        json!({"workloadRef": {"name": "etl-gang", "podGroup": "executors"}}),
        json!({}),
    );
    p.name = name.to_owned();
    p
}

fn native_workload(min: i32) -> SchedGroup {
    SchedGroup::from_value(
        GroupKind::Workload,
        &json!({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": {"name": "etl-gang", "namespace": "spark-jobs"},
            "spec": {"podGroups": [{"name": "executors", "policy": {"gang": {"minCount": min}}},
                                   {"name": "driver", "policy": {"basic": {}}}]}}),
    )
}

#[test]
fn native_gang_counts_its_members() {
    let pods = [gang_pod("etl-exec-1"), gang_pod("etl-exec-2")];
    assert_eq!(
        pods[0].groups.len(),
        1,
        "workloadRef read: {:?}",
        pods[0].groups
    );
    let mut groups = index(vec![native_workload(4)], &[GroupKind::Workload]);
    groups.count_members(&pods);
    let f = run(&pods[0], &[], &groups);
    assert_eq!(codes(&f), vec![Code::GangWaiting]);
    assert_eq!(
        f[0].summary,
        "Waiting for its gang: 2 of the 4 pods that pod group executors (Workload etl-gang) needs exist"
    );
    // The scheduler's timeout at Permit.
    let mut late = pods[0].clone();
    late.status.as_mut().unwrap().conditions.push(PodCondition {
        type_: "PodScheduled".into(),
        status: "False".into(),
        reason: Some("Unschedulable".into()),
        message: Some("0/1 nodes are available: 1 rejected due to timeout after waiting 4m59.98s at plugin GangScheduling.".into()),
        last_transition: None,
    });
    let f = run(&late, &[], &groups);
    assert_eq!(codes(&f), vec![Code::GangWaiting], "not also unschedulable");
    assert!(
        f[0].summary.starts_with("Its gang did not fit in time"),
        "{}",
        f[0].summary
    );
    // A Workload that does not exist.
    let f = run(&pods[0], &[], &index(Vec::new(), &[GroupKind::Workload]));
    assert!(
        f[0].summary.contains("not in the last list of workloads"),
        "{}",
        f[0].summary
    );
    // A list cut at its page limit claims no absence.
    let mut cut = index(Vec::new(), &[GroupKind::Workload]);
    cut.partial.push(GroupKind::Workload);
    let f = run(&pods[0], &[], &cut);
    assert_eq!(
        f[0].summary,
        "Waiting for its gang: Workload etl-gang pod group executors"
    );
    // Ended members are not counted.
    let mut gone = pods.clone();
    gone[1].status.as_mut().unwrap().phase = Some("Failed".into());
    let mut g = index(vec![native_workload(2)], &[GroupKind::Workload]);
    g.count_members(&gone);
    assert!(
        run(&pods[0], &[], &g)[0]
            .summary
            .contains("1 of the 2 pods")
    );
}

#[test]
fn group_objects_are_bounded_and_lenient() {
    let owners: Vec<Value> = (0..10_000)
        .map(|i| json!({"kind": "Pod", "name": format!("p{i}"), "uid": "u"}))
        .collect();
    let w = SchedGroup::from_value(
        GroupKind::KueueWorkload,
        &json!({"metadata": {"name": "x".repeat(10_000), "ownerReferences": owners},
                "status": {"conditions": [{"type": 3, "message": "é".repeat(5_000)}, "junk"]}}),
    );
    assert_eq!(w.owner_pods.len(), 256);
    assert!(w.name.len() <= 256);
    assert!(w.conditions[0].message.as_ref().unwrap().len() <= 4096);
    assert_eq!(w.conditions[0].type_, "");
    // Not an object at all.
    let n = SchedGroup::from_value(GroupKind::VolcanoPodGroup, &json!("nonsense"));
    assert_eq!(n.kind, Some(GroupKind::VolcanoPodGroup));
    assert!(n.name.is_empty());
}
