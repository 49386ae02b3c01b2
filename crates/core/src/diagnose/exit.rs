//! Why the Spark container exited: its terminated state (or `lastState` after a restart).
//!
//! Ref: Spark `ExecutorExitCode.scala`, `SparkExitCode.scala`,
//! `ExecutorPodsLifecycleManager.describeExitCode`; Kubernetes `ContainerStateTerminated`
//! (reason `OOMKilled` is set by the kubelet from the cgroup OOM event).

use super::{Code, Finding, Severity, Subject};
use crate::model::{Deletion, ExecutorPod, Terminated, fmt_time};

const REF_SPARK_EXIT: &str = "https://github.com/apache/spark/blob/master/core/src/main/scala/org/apache/spark/executor/ExecutorExitCode.scala";
const REF_LIFECYCLE: &str = "https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsLifecycleManager.scala";
const REF_OOM: &str = "https://kubernetes.io/docs/tasks/configure-pod-container/assign-memory-resource/#exceed-a-container-s-memory-limit";
const REF_TERMINATION: &str =
    "https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination";

/// One finding for the Spark container's exit, if it has exited (now or before a restart).
pub(super) fn spark_container_exit(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let name = s.spark_container();
    let Some(status) = s.pod.container_status(name) else {
        return;
    };
    let (t, field, previous) = match (status.terminated(), status.last_state.terminated()) {
        (Some(t), _) => (t, "state", false),
        (None, Some(t)) => (t, "lastState", true),
        (None, None) => return,
    };
    let mut evidence = vec![describe_terminated(name, field, t)];
    if let Some(m) = t.message.as_deref().filter(|m| !m.trim().is_empty()) {
        evidence.push(format!("terminated.message: {}", first_line(m)));
    }
    let when = if previous {
        " (before its last restart)"
    } else {
        ""
    };
    let finding = match t.reason.as_deref() {
        Some("OOMKilled") => container_oom(s.pod, name, t, when),
        Some("ContainerStatusUnknown") => status_unknown(name, t, when),
        _ => by_exit_code(s, name, t, when),
    };
    let mut finding = finding.reference_if_unset(REF_SPARK_EXIT);
    // The terminated state is the primary evidence: list it first.
    finding.evidence.splice(0..0, evidence);
    out.push(finding);
}

fn container_oom(pod: &ExecutorPod, name: &str, t: &Terminated, when: &str) -> Finding {
    // Judged against the limit it had when it died: an in-place resize (Spark 4.2's
    // ExecutorResizePlugin, a VPA) may have raised the spec's without the node applying it.
    let limit = pod.memory_limit(name);
    let request = pod
        .container_spec(name)
        .and_then(|c| c.requests.memory.clone());
    let at = limit
        .as_ref()
        .map(|l| {
            let mut s = format!(" at its {} memory limit", l.had);
            if let Some(asks) = &l.spec_asks {
                s.push_str(&format!(" (its spec asks {asks}: a resize not applied)"));
            }
            s
        })
        .unwrap_or_default();
    let mut hint = oom_hint(limit.as_ref().map(|l| l.had.as_str()));
    if let Some(asks) = limit.as_ref().and_then(|l| l.spec_asks.as_ref()) {
        let pending = pod
            .condition("PodResizePending")
            .filter(|c| c.status == "True")
            .map(|c| {
                format!(
                    " (PodResizePending: {}{})",
                    c.reason.as_deref().unwrap_or("-"),
                    c.message
                        .as_deref()
                        .map(|m| format!(", {}", first_line(m)))
                        .unwrap_or_default()
                )
            })
            .unwrap_or_default();
        hint = format!(
            "Its memory was resized in place to {asks}, but the container still had the old \
             limit when it died{pending}: a resize the node cannot apply does not save the \
             executor. Size the memory at submit time. {hint}"
        );
    }
    let mut f = Finding::new(
        Code::ContainerOomKilled,
        Severity::Error,
        format!(
            "Container {name} was OOMKilled{at}{when} (exit {}): the kernel's cgroup OOM killer ended it",
            t.exit_code
        ),
    )
    .hint(hint)
    .reference(REF_OOM);
    if let Some(l) = &limit {
        f = f.evidence(l.evidence(name));
    }
    for c in ["PodResizePending", "PodResizeInProgress"] {
        if let Some(c) = pod.condition(c).filter(|c| c.status == "True") {
            f = f.evidence(format!(
                "conditions[{}]: status=True reason={} message={:?}",
                c.type_,
                c.reason.as_deref().unwrap_or("-"),
                c.message.as_deref().map(first_line).unwrap_or_default()
            ));
        }
    }
    if let Some(r) = request {
        f = f.evidence(format!(
            "spec.containers[{name}].resources.requests.memory={r}"
        ));
    }
    f
}

/// The kubelet could not find the container any more (its node went away, or the pod was
/// deleted while the runtime had lost it) and reported it terminated with 137: not an OOM,
/// whatever Spark's `describeExitCode` says (kubeflow/spark-operator#781).
fn status_unknown(name: &str, t: &Terminated, when: &str) -> Finding {
    Finding::new(
        Code::ContainerStatusUnknown,
        Severity::Warn,
        format!(
            "Container {name} was lost{when} (exit {}, ContainerStatusUnknown): the kubelet could not locate it, so this is not an OOM kill",
            t.exit_code
        ),
    )
    .hint(
        "The container disappeared with its node or runtime (node replaced, spot reclaim, \
         kubelet restart with state lost); Spark's log will still say \"possible container \
         OOM\" for 137. Look at the node's history (events, the cloud provider's instance log) \
         rather than at memory settings.",
    )
    .reference("https://github.com/kubeflow/spark-operator/issues/781")
}

fn oom_hint(limit: Option<&str>) -> String {
    let concrete = super::memory::MemoryWitnesses {
        limit,
        sizing: None,
    }
    .sentence(Code::ContainerOomKilled);
    format!(
        "The container's total memory (JVM heap + off-heap + native + Python workers) passed its \
         limit; the heap itself did not overflow (that would be exit 52). Raise \
         spark.executor.memoryOverhead (default max(spark.executor.memoryOverheadFactor × \
         spark.executor.memory, spark.executor.minMemoryOverhead = 384m); the factor is 0.1, or \
         0.4 for PySpark/R apps in cluster mode). The limit also holds spark.memory.offHeap.size \
         and spark.executor.pyspark.memory when set. Raising spark.executor.memory mostly grows \
         the heap, which was not what overflowed.{}",
        concrete.unwrap_or_default()
    )
}

fn by_exit_code(s: &Subject<'_>, name: &str, t: &Terminated, when: &str) -> Finding {
    let code = t.exit_code;
    let exited = |what: &str| format!("Container {name} {what}{when} (exit {code})");
    match code {
        0 => Finding::new(Code::Succeeded, Severity::Info, exited("exited cleanly"))
            .hint("Nothing to fix: the executor finished, usually because the driver stopped it.")
            .reference(REF_LIFECYCLE),
        52 => Finding::new(
            Code::JvmOom,
            Severity::Error,
            exited("died of a JVM OutOfMemoryError"),
        )
        .hint(
            "The JVM heap overflowed (java.lang.OutOfMemoryError; Spark's handler exits 52). \
             Raise spark.executor.memory, or give each task more heap: fewer \
             spark.executor.cores, more partitions (spark.sql.shuffle.partitions, repartition), \
             and look for skewed keys. memoryOverhead does not help here.",
        ),
        3 => Finding::new(
            Code::JvmOom,
            Severity::Error,
            exited("exited with 3, the JVM's exit on OutOfMemoryError"),
        )
        .hint(
            "Exit 3 is what -XX:+ExitOnOutOfMemoryError (set in spark.executor.extraJavaOptions) \
             exits with when the heap overflows: treat it as a heap OOM. Raise \
             spark.executor.memory, or give each task more heap (fewer spark.executor.cores, more \
             partitions, less skew). If that option is not set, read the log: 3 is also a \
             generic \"path not found\" exit of shell entrypoints.",
        ),
        58 => Finding::new(
            Code::BlockManagerReregistration,
            Severity::Error,
            exited("could not re-register its block manager with the driver"),
        )
        .hint(
            "After the driver lost track of this executor's block manager (a heartbeat timeout, a \
             driver under GC pressure), the executor failed to re-register and Spark killed it. \
             Look at the driver's health and the network between them; \
             spark.executor.heartbeatInterval and spark.network.timeout bound the wait.",
        ),
        101 => Finding::new(
            Code::ClassNotFound,
            Severity::Error,
            exited("did not find a class it needed"),
        )
        .hint(
            "Spark exits 101 on ClassNotFoundException: a jar missing from the executor's \
             classpath (spark.jars, --packages resolved only on the driver, an image without \
             the application's dependencies). Read the log for the class name.",
        )
        .reference("https://github.com/apache/spark/blob/master/core/src/main/scala/org/apache/spark/util/SparkExitCode.scala"),
        50 | 51 | 10 => Finding::new(
            Code::UncaughtException,
            Severity::Error,
            exited("died of an uncaught exception"),
        )
        .hint("Read the executor log (kubectl logs --previous when restarted) for the stack trace."),
        53 => Finding::new(
            Code::LocalDirFailure,
            Severity::Error,
            exited("could not create its local directory"),
        )
        .hint(
            "Spark could not create a directory under spark.local.dir (SPARK_LOCAL_DIRS): check \
             the volume behind it (spark.kubernetes.executor.volumes.*, emptyDir sizeLimit), free \
             space and permissions.",
        ),
        56 => Finding::new(
            Code::HeartbeatFailure,
            Severity::Error,
            exited("could not send heartbeats to the driver"),
        )
        .hint(
            "The executor lost the driver: a driver in long GC or overloaded, a network policy, \
             or the driver pod gone. It exits 56 after spark.executor.heartbeat.maxFailures (60) \
             failed heartbeats in a row, one every spark.executor.heartbeatInterval (10s): about \
             ten minutes without reaching the driver. Check the driver's health and the network \
             path to it.",
        ),
        57 => Finding::new(
            Code::TaskReaper,
            Severity::Warn,
            exited("was killed by Spark's TaskReaper"),
        )
        .hint(
            "A task did not stop within spark.task.reaper.killTimeout after it was cancelled; \
             look for tasks stuck in native code, blocking I/O or user code ignoring interrupts.",
        ),
        143 => sigterm(s, exited("was stopped by SIGTERM")),
        137 => node_sigkill(s, exited("was SIGKILLed without OOMKilled")),
        139 => Finding::new(Code::Sigsegv, Severity::Error, exited("crashed with SIGSEGV"))
            .hint("A native crash (JNI, native library, JVM bug). Look for hs_err_pid*.log in the log or the work dir."),
        134 => Finding::new(Code::Sigabrt, Severity::Error, exited("aborted (SIGABRT)"))
            .hint("The JVM aborted, usually a fatal JVM error: look for hs_err_pid*.log and 'A fatal error has been detected' in the log.")
            .reference(REF_SPARK_EXIT),
        126 | 127 => Finding::new(
            Code::NotExecutable,
            Severity::Error,
            exited(if code == 126 { "could not execute its entrypoint" } else { "did not find its entrypoint" }),
        )
        .hint(
            "The image's entrypoint is not executable or not found: an image built for another \
             CPU architecture (arm64 vs amd64), wrong permissions, or a bad \
             spark.kubernetes.container.image.",
        ),
        _ => Finding::new(Code::GenericError, Severity::Error, exited("failed"))
            .hint("Read the executor log for the error (kubectl logs, --previous after a restart)."),
    }
}

fn sigterm(s: &Subject<'_>, summary: String) -> Finding {
    // SIGTERM on a pod being deleted is the normal end of a kill or a scale-down.
    let asked = s.pod.deletion.is_some() || disrupted(s);
    let mut f = Finding::new(
        Code::Sigterm,
        if asked { Severity::Info } else { Severity::Warn },
        summary,
    )
    .hint(
        "SIGTERM means something asked the pod to stop: a deletion (Spark's own after the \
         executor was removed, dynamic-allocation scale-down, a user), a node drain or a \
         preemption. Look at the deletion and disruption findings; if none, check who deletes pods.",
    )
    .reference(REF_TERMINATION);
    if let Some(d) = &s.pod.deletion {
        f = f.evidence(format!("metadata.deletionTimestamp={}", fmt_time(&d.at)));
    }
    f.evidence_all(s.events_with("Killing").map(|e| e.describe()))
}

/// The grace period a deletion gave the containers. The kubelet's last update of a deleted
/// pod (its containers gone) sets `deletionGracePeriodSeconds` to 0, so a 0 beside a
/// container the kubelet reported ended is that update, not the deletion's own grace: the pod's
/// `terminationGracePeriodSeconds` is then the best reading (a deletion asking another grace
/// is seen only while it lasts).
fn deletion_grace(pod: &ExecutorPod, d: &Deletion) -> i64 {
    match d.grace_period_seconds {
        Some(0) | None => pod.termination_grace_period_seconds.unwrap_or(30),
        Some(g) => g,
    }
}

/// The pod was evicted, preempted or taken down with its node: a kill is part of that.
fn disrupted(s: &Subject<'_>) -> bool {
    s.pod.status.as_ref().and_then(|st| st.reason.as_deref()) == Some("Evicted")
        || s.pod
            .condition("DisruptionTarget")
            .is_some_and(|c| c.status == "True")
}

fn node_sigkill(s: &Subject<'_>, summary: String) -> Finding {
    if disrupted(s) {
        return Finding::new(
            Code::NodeSigkill,
            Severity::Info,
            format!("{summary}; the kubelet killed it while the pod was disrupted (see the eviction/preemption finding)"),
        )
        .hint("Fix the disruption itself; the SIGKILL is its consequence.")
        .reference(REF_TERMINATION);
    }
    let (cause, hint) = match &s.pod.deletion {
        Some(d) => (
            format!(
                "; the pod was being deleted, so most likely the kill after the {}s grace period",
                deletion_grace(s.pod, d)
            ),
            if s.resolved.spark_version.has_executor_termination_grace() {
                "The executor did not stop within terminationGracePeriodSeconds after SIGTERM, so \
                 the kubelet sent SIGKILL. Usually harmless for a removed executor; if shuffle or \
                 decommissioning needs longer, raise \
                 spark.kubernetes.executor.terminationGracePeriodSeconds (Spark 4.1+; it overrides \
                 the pod template's value)."
            } else {
                "The executor did not stop within terminationGracePeriodSeconds after SIGTERM, so \
                 the kubelet sent SIGKILL. Usually harmless for a removed executor; if shuffle or \
                 decommissioning needs longer, set terminationGracePeriodSeconds in the executor \
                 pod template (spark.kubernetes.executor.podTemplateFile; the Spark setting \
                 exists only from 4.1)."
            },
        ),
        None => (
            "; with no deletion this points at the node's OOM killer or a runtime kill".to_owned(),
            "A SIGKILL the cgroup did not report as OOMKilled: the node ran out of memory \
             (kernel OOM killer outside the container's cgroup; look for SystemOOM/OOMKilling \
             node events and `kubectl describe node`), or the container runtime killed it. Spark \
             already sets the executor's memory request equal to its limit; Guaranteed QoS (killed \
             last) also needs spark.kubernetes.executor.limit.cores equal to the CPU request and \
             limits on every sidecar and init container of the pod template.",
        ),
    };
    let mut f = Finding::new(
        Code::NodeSigkill,
        Severity::Error,
        format!("{summary}{cause}"),
    )
    .hint(hint)
    .reference(REF_TERMINATION);
    if let Some(d) = &s.pod.deletion {
        f = f.evidence(format!(
            "metadata.deletionTimestamp={} deletionGracePeriodSeconds={}",
            fmt_time(&d.at),
            d.grace_period_seconds
                .map_or_else(|| "unset".to_owned(), |g| g.to_string())
        ));
    }
    f.evidence_all(s.events_with("Killing").map(|e| e.describe()))
}

/// `containerStatuses[name].state.terminated: exitCode=137 reason=OOMKilled finishedAt=…`.
pub(super) fn describe_terminated(name: &str, field: &str, t: &Terminated) -> String {
    let mut s = format!(
        "containerStatuses[{name}].{field}.terminated: exitCode={}",
        t.exit_code
    );
    if let Some(r) = &t.reason {
        s.push_str(&format!(" reason={r}"));
    }
    if let Some(sig) = t.signal {
        s.push_str(&format!(" signal={sig}"));
    }
    if let Some(at) = &t.finished_at {
        s.push_str(&format!(" finishedAt={}", fmt_time(at)));
    }
    s
}

pub(super) fn first_line(s: &str) -> &str {
    s.trim().lines().next().unwrap_or_default()
}

impl Finding {
    fn reference_if_unset(mut self, r: &'static str) -> Self {
        if self.reference.is_empty() {
            self.reference = std::borrow::Cow::Borrowed(r);
        }
        self
    }
}
