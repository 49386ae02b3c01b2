//! The batch schedulers' holds and gangs: YuniKorn (a rejected application, its queue's
//! headroom, its gang's placeholders), Volcano's PodGroup, the native gang of 1.35.

use super::*;
use crate::diagnose::Witness;
use crate::model::{PodEvent, Role};

/// YuniKorn failed the pod: its application was rejected, or (gangSchedulingStyle=Hard)
/// its gang's reservation timed out. The pod never ran.
pub(super) fn scheduler_rejected(s: &Subject<'_>) -> Option<Finding> {
    let status = s.pod.status.as_ref()?;
    let reason = status.reason.as_deref()?;
    if s.pod.phase() != Some("Failed")
        || !matches!(reason, "ApplicationRejected" | "ResourceReservationTimeout")
    {
        return None;
    }
    // The shim cuts its message at the first colon; its `ApplicationFailed` event has it whole.
    let event = s
        .last_event(&["ApplicationFailed"])
        .filter(|e| e.message.as_deref().is_some_and(|m| m.contains(reason)));
    let full = event
        .and_then(|e| e.message.as_deref())
        .and_then(|m| m.split_once("reason: ").map(|(_, r)| r.trim()))
        .map(|r| r.strip_prefix(reason).unwrap_or(r))
        .map(|r| r.trim_start_matches(':').trim().to_owned())
        .filter(|r| !r.is_empty())
        .or_else(|| {
            status
                .message
                .as_deref()
                .map(|m| m.trim().to_owned())
                .filter(|m| !m.is_empty())
        });
    let policy = s
        .pod
        .scheduling_annotations
        .get("yunikorn.apache.org/schedulingPolicyParameters");
    let (summary, hint) = if reason == "ApplicationRejected" {
        (
            format!(
                "YuniKorn rejected the application{}: the pod never ran",
                full.as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
            "YuniKorn could not place the application in a queue (no placement rule matched, \
             the queue does not exist or cannot fit its task groups). Check the pod's queue \
             (label or annotation yunikorn.apache.org/queue, set with \
             spark.kubernetes.driver.label.queue / executor.label.queue) against YuniKorn's \
             queues and placement rules, then resubmit."
                .to_owned(),
        )
    } else {
        (
            format!(
                "YuniKorn's gang reservation timed out{}: {}",
                policy.map(|p| format!(" ({p})")).unwrap_or_default(),
                full.as_deref()
                    .unwrap_or("Scheduling has timed out due to insufficient resources")
            ),
            "The task groups' placeholders (minMember × minResource) did not all fit before \
             placeholderTimeoutInSeconds, and gangSchedulingStyle=Hard fails the application. \
             Lower minMember or minResource in yunikorn.apache.org/task-groups, give the queue \
             more room, raise the timeout, or use gangSchedulingStyle=Soft (falls back to \
             normal scheduling)."
                .to_owned(),
        )
    };
    let mut f = Finding::new(Code::SchedulerRejected, Severity::Error, summary)
        .evidence(format!(
            "status.phase=Failed status.reason={reason} status.message={:?}",
            status.message.as_deref().unwrap_or_default()
        ))
        .hint(hint)
        .reference(REF_YUNIKORN);
    if let Some(e) = event {
        f = f.evidence(e.describe());
    }
    Some(f)
}

/// Volcano: the pod's own words (its condition, `FailedScheduling`) about its gang, and
/// the PodGroup's phase and conditions.
pub(super) fn volcano(s: &Subject<'_>, out: &mut Vec<Finding>) {
    if s.pod.scheduler_name.as_deref() != Some("volcano") {
        return; // a leftover annotation on another scheduler's pod is not Volcano's hold
    }
    let r = s
        .pod
        .groups
        .iter()
        .find(|r| r.kind == GroupKind::VolcanoPodGroup);
    let own = s
        .pod
        .condition("PodScheduled")
        .filter(|c| c.status == "False")
        .and_then(|c| c.message.as_deref())
        .filter(|m| !m.is_empty());
    // The nodes' words on the pod (Volcano's `0/3 nodes are unavailable: …`) are the
    // `unschedulable` rule's, whatever the PodGroup says.
    if own.is_some_and(|m| !is_volcano_gang_message(m)) {
        return;
    }
    let message = own;
    let known = r.map(|r| (r, s.groups.known(r, s.pod)));
    let group = match &known {
        Some((_, Known::Object(g))) => Some(*g),
        _ => None,
    };
    // A PodGroup not ready: Pending/Inqueue/Unknown with its Unschedulable condition newer
    // than any Scheduled one (the scheduler replaces conditions by type: both may stay).
    let stuck = group.filter(|g| {
        matches!(
            g.phase.as_deref(),
            Some("Pending" | "Inqueue" | "Unknown") | None
        ) && g.condition("Unschedulable").is_some_and(|u| {
            u.status == "True"
                && g.condition("Scheduled")
                    .is_none_or(|sc| sc.last_transition <= u.last_transition)
        })
    });
    if message.is_none() && stuck.is_none() {
        if let Some((r, Known::Absent)) = &known {
            out.push(
                Finding::new(
                    Code::GangWaiting,
                    Severity::Warn,
                    format!(
                        "Volcano cannot schedule the pod: its PodGroup {} was not in the last list of podgroups",
                        r.name
                    ),
                )
                .evidence(format!(
                    "metadata.annotations[scheduling.k8s.io/group-name]={}",
                    r.name
                ))
                .hint(
                    "Spark creates the PodGroup (<app id>-podgroup) before the driver pod when \
                     VolcanoFeatureStep is in spark.kubernetes.driver.pod.featureSteps; without \
                     it Volcano never schedules the pod. Check the driver's submission log.",
                )
                .reference(REF_SPARK_SCHEDULERS),
            );
        }
        return;
    }
    let name = r.map_or("(unnamed)", |r| r.name.as_str());
    let phase = group
        .and_then(|g| g.phase.as_deref())
        .unwrap_or("not ready");
    let words = stuck
        .and_then(|g| g.condition("Unschedulable"))
        .and_then(|c| c.message.as_deref())
        .or(message)
        .unwrap_or("pod group is not ready");
    let mut f = Finding::new(
        Code::GangWaiting,
        Severity::Warn,
        format!(
            "Volcano holds the pod: PodGroup {name} is {phase}: {}",
            first_line(words)
        ),
    )
    .reference(REF_VOLCANO);
    if let Some(m) = message {
        f = f.evidence(format!(
            "conditions[PodScheduled]: status=False message={:?}",
            first_line(m)
        ));
    }
    let mut hint = String::from(
        "Volcano schedules none of the group until minMember of its pods fit together \
         (and its queue admits the group's minResources). ",
    );
    if let Some(g) = group {
        f.witness = Witness::SchedulerObject;
        f = f.evidence(format!(
            "PodGroup {}: phase={} minMember={} queue={}",
            g.name,
            g.phase.as_deref().unwrap_or("-"),
            g.min_member.map_or("-".to_owned(), |m| m.to_string()),
            g.queue.as_deref().unwrap_or("default")
        ));
        for c in &g.conditions {
            f = f.evidence(condition_line(&format!("PodGroup {}", g.name), c));
        }
        if g.phase.as_deref() == Some("Pending") {
            hint.push_str(
                "Pending (not Inqueue) means the queue has not admitted it: the queue's \
                 capability or deserved share is used up, or the queue is closed (kubectl get \
                 queue). ",
            );
        }
        if g.min_member.is_some_and(|m| m > 1) && s.pod.role() == Some(Role::Driver) {
            f.severity = Severity::Error;
            hint.push_str(&format!(
                "minMember is {}, but a Spark driver's PodGroup holds only the driver until it \
                 runs (the app's other pods are created by it, later): the gang cannot form. \
                 Set minMember: 1 in spark.kubernetes.scheduler.volcano.podGroupTemplateFile. ",
                g.min_member.unwrap_or_default()
            ));
        }
    } else if let Some((r, Known::Unknown(why))) = &known {
        f = f.evidence(unknown_line(r, why));
    }
    hint.push_str("kubectl describe podgroup NAME shows Volcano's events.");
    f.hint = hint;
    out.push(f);
}

/// The native gang (1.35 alpha): the scheduler holds each pod of a gang until `minCount`
/// of them exist (silently: no event, no condition), then until they all fit, for 5 min.
pub(super) fn native_gang(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let Some(r) = s.pod.groups.iter().find(|r| r.kind == GroupKind::Workload) else {
        return;
    };
    let pg = r.pod_group.as_deref().unwrap_or_default();
    let timed_out = s
        .pod
        .condition("PodScheduled")
        .and_then(|c| c.message.as_deref())
        .filter(|m| m.contains("at plugin GangScheduling"));
    let members = s
        .groups
        .members
        .get(&(
            s.pod.namespace.to_string(),
            r.name.to_string(),
            pg.to_owned(),
        ))
        .copied();
    let nodes_say = s
        .pod
        .condition("PodScheduled")
        .filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
        .and_then(|c| c.message.as_deref())
        .is_some_and(|m| !m.contains("at plugin GangScheduling"));
    let mut f = Finding::new(
        Code::GangWaiting,
        Severity::Warn,
        format!("Waiting for its gang: Workload {} pod group {pg}", r.name),
    )
    .evidence(format!("spec.workloadRef: name={} podGroup={pg}", r.name))
    .hint(
        "The scheduler's GangScheduling plugin holds a gang's pods until minCount of them exist \
         (it says nothing meanwhile), then until all of them fit at once, for at most 5 min \
         per attempt.",
    )
    .reference(REF_GANG);
    if let Some(m) = timed_out {
        f.summary = format!(
            "Its gang did not fit in time: Workload {} pod group {pg}: {}",
            r.name,
            first_line(m)
        );
        f = f.evidence(format!(
            "conditions[PodScheduled]: status=False message={:?}",
            first_line(m)
        ));
    }
    if nodes_say && timed_out.is_none() && !matches!(s.groups.known(r, s.pod), Known::Object(_)) {
        return; // the scheduler placed it in its queue and the nodes answered: not the gang's
    }
    match s.groups.known(r, s.pod) {
        Known::Object(w) => {
            f.witness = Witness::SchedulerObject;
            match w.pod_groups.iter().find(|(n, _)| n == pg) {
                Some((_, Some(min))) => {
                    let have = members.unwrap_or(1);
                    if nodes_say && have as i64 >= i64::from(*min) {
                        return; // the gang is whole: the nodes hold it, as `unschedulable` says
                    }
                    f = f.evidence(format!(
                        "Workload {}: podGroups[{pg}].policy.gang.minCount={min}; pods seen with it: {have}",
                        w.name
                    ));
                    if timed_out.is_none() && (have as i64) < i64::from(*min) {
                        f.summary = format!(
                            "Waiting for its gang: {have} of the {min} pods that pod group {pg} (Workload {}) needs exist",
                            w.name
                        );
                    }
                }
                Some((_, None)) => return, // a basic pod group: no gang
                None => {
                    f.severity = Severity::Error;
                    f.summary = format!(
                        "The pod names pod group {pg}, which Workload {} does not have: it is never scheduled",
                        w.name
                    );
                }
            }
        }
        Known::Absent => {
            f.summary = format!(
                "The pod names Workload {}, which was not in the last list of workloads: it is not scheduled without it",
                r.name
            );
        }
        Known::Unknown(why) => f = f.evidence(unknown_line(r, why)),
        Known::NotRead => {}
    }
    out.push(f);
}

/// The newest event of `reason` whose message contains one of `needles`.
fn newest<'a>(s: &'a Subject<'_>, reason: &str, needles: &[&str]) -> Option<&'a PodEvent> {
    s.events.iter().rev().copied().find(|e| {
        e.reason_is(reason)
            && e.message
                .as_deref()
                .is_some_and(|m| needles.iter().any(|n| m.contains(n)))
    })
}

fn later(a: &PodEvent, b: Option<&PodEvent>) -> bool {
    b.is_none_or(|b| PodEvent::chronological(a, b).is_gt())
}

/// YuniKorn: its queue's headroom and its gang's placeholders, from its events (the core's
/// `Informational` request events, the shim's `GangScheduling` ones).
pub(super) fn yunikorn(s: &Subject<'_>, out: &mut Vec<Finding>) {
    if s.pod.scheduler_name.as_deref() != Some("yunikorn") {
        return;
    }
    let queue_full = newest(
        s,
        "Informational",
        &["does not fit in queue", "exceeds the available user quota"],
    );
    let fits = newest(
        s,
        "Informational",
        &[
            "has become schedulable in queue",
            "fits in the available user quota",
        ],
    );
    if let Some(e) = queue_full.filter(|e| later(e, fits)) {
        let msg = e.message.as_deref().unwrap_or_default();
        let user = msg.contains("user quota");
        out.push(
            Finding::new(
                Code::QueueWaiting,
                Severity::Warn,
                format!("YuniKorn holds the pod: {}", first_line(msg)),
            )
            .witness(Witness::Events)
            .evidence(e.describe())
            .hint(if user {
                "The submitting user's quota (YuniKorn limits on the queue) is used up: the pod \
                 waits until the user's other pods finish, or the limit is raised."
            } else {
                "The queue's headroom (its max resources minus what runs in it) is smaller than \
                 the request: the pod waits until the queue has room. Lower the request, or raise \
                 the queue's max in YuniKorn's queue config."
            })
            .reference(REF_YUNIKORN),
        );
        return;
    }
    let gang = s
        .events
        .iter()
        .rev()
        .copied()
        .find(|e| e.reason_is("GangScheduling"));
    if let Some(e) = gang {
        let action = e.action.as_deref().unwrap_or_default();
        let (summary, severity) = match action {
            "PlaceholderTimeOut" | "PlaceholderTimeout" => (
                "YuniKorn's gang reservation timed out: its placeholders were released",
                Severity::Warn,
            ),
            "GangSchedulingFailed" => (
                "YuniKorn gave up the gang reservation and schedules the app without it (Soft)",
                Severity::Info,
            ),
            "PlaceholderCreateFailed" => (
                "YuniKorn could not create the gang's placeholders: it falls back to normal scheduling",
                Severity::Warn,
            ),
            "TaskGroupsError" => (
                "YuniKorn cannot read the pod's task groups (yunikorn.apache.org/task-groups)",
                Severity::Error,
            ),
            "CreatingPlaceholders" | "PlaceholderAllocated" => (
                "YuniKorn reserves the gang's resources with placeholder pods first",
                Severity::Warn,
            ),
            _ => return,
        };
        let mut f = Finding::new(Code::GangWaiting, severity, summary)
            .witness(Witness::Events)
            .evidence(format!("{} (action {action})", e.describe()))
            .hint(
                "YuniKorn first runs one placeholder pod per task-group member \
                 (tg-<app>-<group>-…, pause image) and gives their place to the real pods; a \
                 reservation that does not fit within placeholderTimeoutInSeconds is released \
                 (Soft: normal scheduling follows; Hard: the app fails). kubectl get pods -l \
                 yunikorn.apache.org/app-id shows the placeholders.",
            )
            .reference(REF_YUNIKORN);
        for key in [
            "yunikorn.apache.org/task-group-name",
            "yunikorn.apache.org/schedulingPolicyParameters",
        ] {
            if let Some(v) = s.pod.scheduling_annotations.get(key) {
                f = f.evidence(format!("metadata.annotations[{key}]={v}"));
            }
        }
        out.push(f);
    }
}
