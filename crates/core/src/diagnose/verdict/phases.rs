//! The phases of [`verdict`](super::verdict), over the state they share ([`Gathered`]):
//! gather the findings, reconcile them with the driver, say what is missing, attribute an
//! end to the driver or the tool, order them; then the state, Spark's accounting and the
//! pod's ending that follow.

use super::*;
use crate::allocator::Controller;
use crate::classify::Resolved;
use crate::model::{Deletion, LABEL_SPARK_VERSION};
use crate::{diagnose, model};

/// What the phases of [`verdict`] share: the pod Spark acted on, the driver's reason for
/// the removal, and the findings so far.
pub(super) struct Gathered<'p> {
    /// The failure Spark acted on (the pod that ended, or the pod first seen deleted that
    /// had failed before), resolved and classified.
    pub(super) acted_on: Option<(&'p ExecutorPod, Resolved, ExecutorState)>,
    /// The driver's removal reason, parsed (once it no longer lists the executor).
    pub(super) removal: Option<RemovalReason>,
    pub(super) findings: Vec<Finding>,
    /// Whose word the driver's is: its REST API, or its event log after the run.
    pub(super) driver_witness: Witness,
    /// The cause rebuilt from the driver's reason when the pod never showed its exit.
    pub(super) rebuilt: Option<Rebuilt>,
}

impl<'p> Gathered<'p> {
    /// The pod as it ended: the one Spark acted on, else the last seen.
    fn ended(&self, ev: &Evidence<'p>) -> &'p ExecutorPod {
        self.acted_on.as_ref().map_or(ev.pod, |(p, _, _)| *p)
    }
}

/// How the executor ended when not by itself: with the driver, or by the tool's kill.
pub(super) struct EndedBy<'a> {
    driver: Option<&'a DriverEnd>,
    tool: Option<&'a ToolKill>,
}

/// Phases 1 to 3: the pod's findings (the failure Spark acted on, else the pod as last
/// seen), the driver's reason for an exit the pod never showed, and the log tail's OOM.
pub(super) fn gather<'p>(
    ev: &Evidence<'p>,
    first_seen_deleted: Option<&'p ExecutorPod>,
) -> Gathered<'p> {
    let (resolved, pod_state) = (ev.resolved, ev.pod_state);
    let removal = ev
        .driver
        .and_then(|d| d.exec.as_ref())
        .filter(|d| !d.active)
        .and_then(|d| d.remove_reason.as_deref())
        .map(parse_removal);

    // 1. The pod: the failure Spark acted on, else the pod as last seen.
    let mut findings: Vec<Finding> = Vec::new();
    let acted_on = ev.ended.or(first_seen_deleted).map(|p| {
        let r = ev.options.resolve(p);
        let s = classify(p, &r.config);
        (p, r, s)
    });
    // A pod that is gone stopped waiting when it went: its ages (how long it was pending,
    // creating, unschedulable) end there, not at the time of the verdict.
    let as_of = ev.gone_at.map_or(ev.now, |g| g.min(ev.now));
    let last = diagnose::diagnose_in(ev.pod, ev.events, resolved, pod_state, as_of, ev.groups);
    match &acted_on {
        Some((p, r, s)) if !same_terminated(p, ev.pod, &r.config.spark_container) => {
            findings.extend(diagnose::diagnose_in(p, ev.events, r, *s, as_of, ev.groups));
            // From the last pod only what the ended one cannot say (its deletion).
            findings.extend(last.into_iter().filter(|f| f.code == Code::Deleted));
        }
        _ => findings.extend(last),
    }
    // The driver's words come from its REST API, or from its event log after the run.
    let driver_witness = driver_witness_of(ev);
    for f in &mut findings {
        if ev.gone == PodGone::DriverOnly && f.witness == Witness::Pod {
            f.witness = driver_witness;
            f.reconstructed = true;
        }
    }
    let observed_exit = findings
        .iter()
        .any(|f| f.witness == Witness::Pod && !f.reconstructed && is_exit_code(f.code));

    // 2. The driver's reason: the exit Spark acted on when the pod never showed it.
    let mut rebuilt = None;
    if ev.gone != PodGone::DriverOnly
        && !observed_exit
        && ev.gone != PodGone::No
        && let (Some(r), Some(d)) = (&removal, ev.driver.and_then(|d| d.exec.as_ref()))
        && r.kind == RemovalKind::Exited
    {
        rebuilt = Some(from_driver(ev, d));
    }
    if let Some(r) = &rebuilt {
        findings.extend(r.findings.iter().cloned());
    }

    // 3. The log tail.
    if !findings
        .iter()
        .any(|f| matches!(f.code, Code::JvmOom | Code::ContainerOomKilled))
        && let Some(line) = ev
            .log_tail
            .and_then(|l| l.iter().find(|l| l.contains("java.lang.OutOfMemoryError")))
    {
        findings.push(
            Finding::new(
                Code::JvmOom,
                Severity::Error,
                format!(
                    "The executor's log shows a JVM OutOfMemoryError (executor {})",
                    ev.id
                ),
            )
            .witness(Witness::LogTail)
            .evidence(format!("log: {}", line.trim()))
            .hint(
                "The JVM heap overflowed. Raise spark.executor.memory, or give each task more \
                 heap: fewer spark.executor.cores, more partitions, and look for skewed keys.",
            )
            .reference(
                "https://spark.apache.org/docs/latest/tuning.html#memory-management-overview",
            ),
        );
    }
    Gathered {
        acted_on,
        removal,
        findings,
        driver_witness,
        rebuilt,
    }
}

/// Phase 4: reconciliation with the driver (each disagreement is its own finding).
pub(super) fn reconcile_with_driver(ev: &Evidence<'_>, g: &mut Gathered<'_>) {
    let resolved = ev.resolved;
    let ended = g.ended(ev);
    // Its own failure, not a stop from outside: no signal exit, no deletion asked first.
    let quick_failure = exit_of_timed(ended, &resolved.config.spark_container)
        .filter(|(code, ran, finished)| {
            !matches!(code, 0 | 137 | 143)
                && *ran <= diagnose::driver::QUICK_FAILURE
                && ended.deletion.as_ref().is_none_or(|d| d.at > *finished)
        })
        .map(|(code, ran, _)| (code, ran));
    let side = PodSide {
        id: ev.id,
        state: ev.pod_state,
        gone_at: ev.gone_at,
        never_seen: ev.gone == PodGone::DriverOnly,
        running_since: ev.running_since,
        lost_grace: ev.lost_grace,
        api_polling: ev.api_polling,
        quick_failure,
        spark_version: resolved.spark_version,
        dynamic_allocation: ev.dynamic_allocation,
        killed_after_grace: killed_after_grace(ended, &resolved.config.spark_container),
        heartbeat_logged: ev.heartbeat_logged,
    };
    for mut f in reconcile(&side, ev.driver) {
        f.witness = g.driver_witness;
        g.findings.push(f);
    }
}

/// Phase 5: missing, a verdict only when nothing explains the disappearance (from the
/// pod's absence, or from the driver's words for a pod never seen).
pub(super) fn missing(ev: &Evidence<'_>, g: &mut Gathered<'_>) -> bool {
    let explained = g.acted_on.is_some()
        || g.removal
            .as_ref()
            .is_some_and(|r| matches!(r.kind, RemovalKind::Exited | RemovalKind::Deleted))
        || g.findings.iter().any(|f| {
            matches!(
                f.code,
                Code::Preempted | Code::Evicted | Code::NodeLost | Code::Deleted
            )
        });
    let missing = ev.gone == PodGone::Missing && !explained;
    if missing && let Some(m) = ev.missing {
        let mut m = m.clone();
        m.witness = Witness::Inference;
        g.findings.push(m);
    }
    // Never seen, and Spark's own missing-pod detection removed it: the same verdict, from
    // the driver's words.
    let driver_missing = ev.gone == PodGone::DriverOnly
        && g.removal
            .as_ref()
            .is_some_and(|r| r.kind == RemovalKind::NotFound);
    if driver_missing {
        let mut f = Finding::new(
                Code::Missing,
                Severity::Error,
                "The pod vanished: Spark's driver found it missing from the cluster with no deletion seen",
            )
            .witness(g.driver_witness)
            .evidence("driver: removeReason says the executor was not found in the cluster at Spark's poll")
            .hint(
                "Something removed the pod without a deletion event reaching the driver (a force \
                 delete during a watch gap, etcd restore, a node or namespace cleanup). Spark \
                 did not count it against the application and replaces it after its next poll.",
            )
            .reference("https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsLifecycleManager.scala");
        f.reconstructed = true;
        g.findings.push(f);
    }
    missing || driver_missing
}

/// Phase 6: the driver's end (executors deleted by Spark's stop or the garbage collector
/// after it, or failing for want of it, ended with it), else the tool's kill made before
/// the executor ended its own way. Either explains a disappearance: not missing.
pub(super) fn ended_by<'a>(
    ev: &Evidence<'a>,
    g: &mut Gathered<'_>,
    missing: &mut bool,
) -> EndedBy<'a> {
    let ended = g.ended(ev);
    // An error exit known from another witness (the driver's reason, the log) is its own.
    let own_failure = g.findings.iter().any(|f| {
        f.severity == Severity::Error
            && f.witness != Witness::Pod
            && (is_pod_ending(f.code) || f.code == Code::JvmOom)
    });
    let with_driver = ev.driver_end.filter(|end| {
        let exit = exit_of_timed_any(ended, &ev.resolved.config.spark_container);
        ended_with(
            end,
            &ExecutorEnd {
                exit,
                final_at: diagnose::app_verdict::final_condition_at(ended),
                own_failure,
                owner_uid: ev.pod.owner.as_ref().map(|o| o.uid.as_str()),
                deletion_requested: ev
                    .first_deletion
                    .or(ev.pod.deletion.as_ref())
                    .map(requested_at),
                gone_at: ev.gone_at,
            },
        )
    });
    if let Some(end) = with_driver {
        attribute_to_driver(&mut g.findings, end);
        *missing = false;
    }
    // Killed through spark-triage before it ended its own way: the tool's act, said as such.
    let own_end_first = g
        .acted_on
        .as_ref()
        .is_some_and(|(p, _, _)| p.deletion.is_none());
    let killed = ev
        .killed_by_tool
        .filter(|_| with_driver.is_none() && !own_end_first);
    if let Some(k) = killed {
        attribute_to_tool(&mut g.findings, k);
        *missing = false;
    }
    EndedBy {
        driver: with_driver,
        tool: killed,
    }
}

/// The predecessors' exits, the memory hints' values, then the findings in order: the
/// driver's end or the tool's kill first when either says how it ended.
pub(super) fn complete_and_order(ev: &Evidence<'_>, g: &mut Gathered<'_>, by: &EndedBy<'_>) {
    predecessors_exit(ev, &mut g.findings);
    // A memory finding's hint ends with a value to set, from the best witness of the memory.
    let limit = g
        .ended(ev)
        .memory_limit(&ev.resolved.config.spark_container)
        .map(|l| l.had.to_string());
    diagnose::memory::MemoryWitnesses {
        limit: limit.as_deref(),
        sizing: ev.sizing,
    }
    .complete(&mut g.findings);
    order(&mut g.findings);
    // The driver's end, or the tool's kill, says how it ended first (an executor's own
    // "stopped with the app" in a log's list is only a finding among its others).
    let first = if by.driver.is_some() {
        Some(Code::EndedWithDriver)
    } else {
        by.tool.map(|_| Code::KilledByTool)
    };
    if let Some(i) = first.and_then(|c| g.findings.iter().position(|f| f.code == c)) {
        let f = g.findings.remove(i);
        g.findings.insert(0, f);
    }
}

/// The state Spark assigned or would assign.
pub(super) fn state_of(ev: &Evidence<'_>, g: &Gathered<'_>) -> ExecutorState {
    let pod_state = ev.pod_state;
    match (&g.acted_on, &g.rebuilt, ev.gone) {
        (Some((_, _, s)), _, _) => *s,
        (None, Some(r), _) => r.state,
        (None, None, PodGone::No | PodGone::Restarted) => pod_state,
        // Rebuilt from Spark's reason: its exit when it gives one, else a removal (a
        // deletion, a pod not found, a heartbeat timeout), unless Spark still lists it.
        (None, None, PodGone::DriverOnly) => {
            let active = ev
                .driver
                .and_then(|d| d.exec.as_ref())
                .is_some_and(|d| d.active);
            if active || matches!(pod_state, ExecutorState::Failed | ExecutorState::Succeeded) {
                pod_state
            } else {
                ExecutorState::Deleted
            }
        }
        (None, None, PodGone::Deleted | PodGone::Missing) => {
            if matches!(pod_state, ExecutorState::Failed | ExecutorState::Succeeded) {
                pod_state
            } else {
                ExecutorState::Deleted
            }
        }
    }
}

/// What Spark did about it: its accounting, from the failure it acted on (or the driver's
/// words for a pod never seen); nothing counted after the tool's kill or the app's end.
pub(super) fn spark_of(
    ev: &Evidence<'_>,
    g: &Gathered<'_>,
    state: ExecutorState,
    missing: bool,
    by: &EndedBy<'_>,
) -> Option<SparkAccount> {
    let mut spark = match (&g.acted_on, &g.rebuilt) {
        // Spark's snapshot never shows this pod ended as this executor (it shows it as the
        // next one): no removal reason of Spark's, and nothing counted; the driver drops the
        // id when its heartbeats stop.
        _ if ev.gone == PodGone::Restarted => None,
        (Some((p, r, s)), _) => {
            spark_view(p, *s, &r.config).map(|v| account(v, Witness::Pod, false))
        }
        (None, Some(r)) => r.account.clone(),
        (None, None) if missing => Some(missing_account(ev)),
        (None, None) => spark_view(ev.pod, state, &ev.resolved.config).map(|v| {
            account(
                v,
                Witness::Pod,
                ev.gone == PodGone::DriverOnly || (state != ev.pod_state),
            )
        }),
    };
    if ev.gone == PodGone::DriverOnly
        && let Some(s) = &mut spark
    {
        s.witness = g.driver_witness;
        s.reconstructed = true;
        if let Some(reason) = ev
            .driver
            .and_then(|d| d.exec.as_ref())
            .and_then(|d| d.remove_reason.clone())
        {
            s.message = reason;
        }
    }
    if let Some(s) = &mut spark {
        apply_version(s, ev.pod.label(LABEL_SPARK_VERSION));
        if by.tool.is_some() {
            // Spark reads a deleted pod as "deleted by a user or the framework": not counted.
            s.counted = false;
            s.caused_by_app = false;
            s.note = Some(
                "killed through spark-triage: Spark does not count a deleted executor".to_owned(),
            );
        }
        if let Some(end) = by.driver {
            s.counted = false;
            s.caused_by_app = false;
            s.note = Some(format!(
                "the application had ended ({}): nothing counts it",
                end.label
            ));
        }
    }
    spark
}

/// Findings the tool's own kill makes mechanics: the SIGTERM it caused, the deletion, the
/// SIGKILL after the grace, Spark's removal of a deleted executor.
fn kill_mechanics(code: Code) -> bool {
    matches!(
        code,
        Code::Sigterm
            | Code::NodeSigkill
            | Code::Deleted
            | Code::DriverRemoved
            | Code::DriverLostPod
            | Code::Zombie
            | Code::Missing
            | Code::RpcDisassociated
            | Code::HeartbeatTimeout
    )
}

/// Says an executor's end as the tool's kill: `killed-by-spark-triage` first, its
/// mechanics kept as evidence.
fn attribute_to_tool(findings: &mut Vec<Finding>, k: &ToolKill) {
    let when =
        k.at.map(|t| format!(" at {}", model::fmt_time(&t)))
            .unwrap_or_default();
    let who =
        k.by.as_deref()
            .map(|u| format!(" by {u}"))
            .unwrap_or_default();
    let mut evidence = vec![format!(
        "spark-triage's own deletion{when}{who} (its actions log; the pod's spark-triage.dev/killed-at mark)"
    )];
    for f in findings.iter().filter(|f| kill_mechanics(f.code)) {
        evidence.extend(f.evidence.iter().take(2).cloned());
    }
    findings.retain(|f| !kill_mechanics(f.code));
    let mut f = Finding::new(
        Code::KilledByTool,
        Severity::Info,
        format!("Killed by spark-triage{when}{who}: the operator's act, not a failure"),
    )
    .hint(
        "Deleted through spark-triage (K in the live view, or spark-triage kill); its actions \
         log says who and when. Spark does not count a deleted executor and replaces it while \
         the app is below its target.",
    )
    .reference("https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsLifecycleManager.scala");
    f.evidence = evidence;
    f.witness = Witness::Inference;
    findings.insert(0, f);
}

/// Killed (137 without `OOMKilled`) when its deletion's grace ended: the JVM outlived
/// SIGTERM's grace and the kubelet sent SIGKILL.
fn killed_after_grace(pod: &ExecutorPod, container: &str) -> bool {
    let Some(t) = pod.container_status(container).and_then(|c| c.terminated()) else {
        return false;
    };
    let (Some(d), Some(finished)) = (&pod.deletion, t.finished_at) else {
        return false;
    };
    // SIGKILL comes when the grace ends (`deletionTimestamp`); a deletion with no grace (a
    // force delete) kills at once and says nothing of the JVM.
    t.exit_code == 137
        && t.reason.as_deref() != Some("OOMKilled")
        && d.grace_period_seconds.is_some_and(|g| g > 0)
        && finished >= d.at - chrono::Duration::seconds(2)
}

/// The Spark container's terminated exit code, how long it ran, and when it ended.
fn exit_of_timed(pod: &ExecutorPod, container: &str) -> Option<(i32, chrono::Duration, Time)> {
    let t = pod.container_status(container)?.terminated()?;
    let finished = t.finished_at?;
    Some((t.exit_code, finished - t.started_at?, finished))
}

/// The Spark container's terminated exit: code, `OOMKilled`, `finishedAt`.
fn exit_of_timed_any(pod: &ExecutorPod, container: &str) -> Option<(i32, bool, Option<Time>)> {
    let t = pod.container_status(container)?.terminated()?;
    Some((
        t.exit_code,
        t.reason.as_deref() == Some("OOMKilled"),
        t.finished_at,
    ))
}

/// A pod first seen already deleted whose Spark container had terminated before the
/// deletion was requested (`deletionTimestamp` − grace): Spark saw it fail or succeed
/// first. Returned without its deletion, as Spark saw it then.
pub(super) fn failed_before_deletion(
    pod: &ExecutorPod,
    first: Option<&Deletion>,
    options: &ClassifyOptions,
) -> Option<ExecutorPod> {
    let d = first.or(pod.deletion.as_ref())?;
    let container = options.resolve(pod).config.spark_container;
    let finished = pod
        .container_status(&container)
        .and_then(|c| c.terminated())
        .and_then(|t| t.finished_at)?;
    let requested = d.at - chrono::Duration::try_seconds(d.grace_period_seconds.unwrap_or(0))?;
    if finished >= requested {
        return None;
    }
    let mut before = pod.clone();
    before.deletion = None;
    let r = options.resolve(&before);
    matches!(
        classify(&before, &r.config),
        ExecutorState::Failed | ExecutorState::Succeeded
    )
    .then_some(before)
}

/// Both pods show the same terminated Spark container (the usual case: a deletion does not
/// change container statuses).
fn same_terminated(a: &ExecutorPod, b: &ExecutorPod, container: &str) -> bool {
    let ta = exit_of(a, container);
    ta.is_some() && ta == exit_of(b, container)
}

/// A controller's pod whose container ended before this executor id was first seen (the
/// restart came first, then the driver's new id): that exit was the executor before it in
/// the pod. Kept as evidence, said as such, and not this executor's failure.
fn predecessors_exit(ev: &Evidence<'_>, findings: &mut [Finding]) {
    let Some(seen) = ev.first_seen else {
        return;
    };
    if Controller::of(ev.pod).is_none() {
        return;
    }
    let container = &ev.resolved.config.spark_container;
    let before = ev
        .pod
        .container_status(container)
        .and_then(|c| c.last_state.terminated())
        .and_then(|t| t.finished_at)
        .is_some_and(|end| end <= seen);
    if !before {
        return;
    }
    for f in findings.iter_mut().filter(|f| {
        f.witness == Witness::Pod
            && is_exit_code(f.code)
            && f.evidence
                .iter()
                .any(|e| e.contains(".lastState.terminated"))
    }) {
        f.severity = Severity::Info;
        f.summary = format!(
            "The executor before this one in the pod ended (its container restarted and the driver gave the new JVM this id): {}",
            f.summary
        );
    }
}

pub(super) fn ending(
    ev: &Evidence<'_>,
    findings: &[Finding],
    state: ExecutorState,
    removal: Option<&RemovalKind>,
    missing: bool,
) -> Ending {
    // Deleted by the scheduler or the Eviction API (a kubelet eviction fails the pod and
    // Spark deletes it, like any other failure).
    let disrupted = findings.iter().any(|f| {
        f.code == Code::Preempted
            || (f.code == Code::Evicted
                && f.evidence
                    .iter()
                    .any(|e| e.contains("EvictionByEvictionAPI")))
    });
    match ev.gone {
        PodGone::DriverOnly => Ending::NeverSeen,
        PodGone::Restarted => Ending::Restarted,
        PodGone::No => match &ev.pod.deletion {
            None => Ending::Present,
            Some(_) if ev.pod.is_held() => Ending::Held,
            Some(_) => Ending::Terminating,
        },
        PodGone::Missing if missing => Ending::Vanished,
        PodGone::Deleted | PodGone::Missing => {
            let spark_acted = matches!(state, ExecutorState::Failed | ExecutorState::Succeeded)
                && ev.delete_on_termination;
            if ev.killed_by_tool.is_some() {
                Ending::DeletedByTool
            } else if disrupted && !spark_acted {
                Ending::DeletedByDisruption
            } else if spark_acted || removal.is_some_and(|r| r.by_spark()) {
                Ending::DeletedBySpark
            } else {
                Ending::Deleted
            }
        }
    }
}
