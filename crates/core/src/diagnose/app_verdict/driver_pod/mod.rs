//! The driver pod's own findings: how it waits, how it ended, with driver advice.
//!
//! The executor rules read a pod well (exits, evictions, scheduling, image pulls); the driver
//! pod is read by the same rules and each finding is then said as the driver's, with the
//! driver's settings (`spark.driver.memory`, `spark.driver.memoryOverhead`, …) in its hint:
//! an executor's advice on a driver sends people to the wrong knob.
//!
//! Ref: Spark `SparkExitCode.scala` (11 = `EXCEED_MAX_EXECUTOR_FAILURES`, 52 = OOM),
//! `BasicDriverFeatureStep` (driver memory = `spark.driver.memory` + overhead, overhead =
//! max(factor × memory, `spark.driver.minMemoryOverhead` = 384m), limit = request),
//! kubeflow/spark-operator#2775 (143 after SIGTERM is a stop, not a failure of the app).

use driverize::driverize;

use super::super::exit::{describe_terminated, first_line};
use super::super::memory::overhead_from_limit;
use super::super::{Code, Finding, Severity, Witness, diagnose_in};
use super::{DriverEvidence, DriverGone};
use crate::classify::{ClassifyOptions, classify};
use crate::model::{
    Deletion, EXIT_EXCEPTION_ANNOTATION, ExecutorPod, ExecutorState, Terminated, Time, fmt_time,
};
use crate::spark::describe_exit_code;
use crate::text;
use crate::text::clipped;

mod driverize;

const REF_EXIT: &str = "https://github.com/apache/spark/blob/master/core/src/main/scala/org/apache/spark/util/SparkExitCode.scala";
const REF_DRIVER_MEMORY: &str =
    "https://spark.apache.org/docs/latest/running-on-kubernetes.html#spark-properties";
const REF_STOP: &str = "https://github.com/kubeflow/spark-operator/issues/2775";
const REF_DISRUPTION: &str = "https://kubernetes.io/docs/concepts/workloads/pods/disruptions/";

/// The driver's Spark container, its terminated state (now, else before a restart) and
/// whether that was before a restart.
pub(super) fn driver_exit(pod: &ExecutorPod) -> Option<(&Terminated, bool)> {
    let name = ClassifyOptions::default()
        .resolve(pod)
        .config
        .spark_container;
    let status = pod.container_status(&name)?;
    match (status.terminated(), status.last_state.terminated()) {
        (Some(t), _) => Some((t, false)),
        (None, Some(t)) => Some((t, true)),
        (None, None) => None,
    }
}

/// The driver pod's findings, said as the driver's, worst first (not yet ordered).
pub(super) fn findings<'a>(d: &DriverEvidence<'a>, now: Time) -> Vec<Finding> {
    let opts = ClassifyOptions::default();
    // The pod Spark's end is read from: its first final observation, else the last one.
    let pod = d.ended.unwrap_or(d.pod);
    let resolved = opts.resolve(pod);
    let state = classify(pod, &resolved.config);
    let as_of = d.gone_at.map_or(now, |g| g.min(now));
    let container = resolved.config.spark_container.clone();
    let mut out = Vec::new();
    let pod_findings = diagnose_in(pod, d.events, &resolved, state, as_of, d.groups);
    let disrupted = pod_findings
        .iter()
        .any(|f| matches!(f.code, Code::Evicted | Code::Preempted | Code::NodeLost));
    for f in pod_findings {
        if let Some(f) = driverize(f, pod, &container, state, disrupted, d) {
            out.push(f);
        }
    }
    // A deletion seen only on the last pod (the ended one has none).
    if d.ended.is_some()
        && !out.iter().any(|f| f.code == Code::DriverDeleted)
        && let Some(del) = &d.pod.deletion
        && !has_end(&out)
    {
        out.push(deleted(d.pod, del, state));
    }
    // The driver's own last words, else its log: a JVM OutOfMemoryError names a generic
    // exit's cause.
    let oom = |t: &'a str| t.lines().find(|l| drivers_own_oom(l));
    let said_oom = last_words(pod, d)
        .and_then(|w| oom(w.text).map(|l| (w.from, l, Witness::Pod, w.says())))
        .or_else(|| {
            d.log_tail
                .and_then(|l| l.iter().find_map(|l| oom(l)))
                .map(|l| ("log", l, Witness::LogTail, "log shows"))
        });
    if !out
        .iter()
        .any(|f| matches!(f.code, Code::DriverJvmOom | Code::DriverOomKilled))
        && state == ExecutorState::Failed
        && let Some((from, line, witness, says)) = said_oom
    {
        out.push(
            jvm_oom(format!(
                "The driver's {says} a JVM OutOfMemoryError ({})",
                exit_words(pod, &container)
            ))
            .witness(witness)
            .evidence(format!("{from}: {}", clipped(line.trim(), WORDS_LINE_MAX))),
        );
    }
    if d.gone == DriverGone::Missing && !has_end(&out) {
        out.push(
            Finding::new(
                Code::DriverVanished,
                Severity::Error,
                format!(
                    "The driver pod {} vanished: absent from a full LIST, with no deletion seen",
                    d.pod.name
                ),
            )
            .witness(Witness::Inference)
            .evidence(format!(
                "last seen in phase {}",
                d.pod.phase().unwrap_or("(none)")
            ))
            .hint(
                "Something removed the driver pod without a deletion event reaching watchers (a \
                 force delete, a namespace cleanup, etcd restore). Without its driver the \
                 application is over; its executors are deleted by the garbage collector (they \
                 are owned by the driver pod).",
            )
            .reference("https://kubernetes.io/docs/concepts/architecture/garbage-collection/"),
        );
    }
    if d.gone == DriverGone::Deleted
        && !has_end(&out)
        && !out.iter().any(|f| f.code == Code::DriverDeleted)
    {
        // Seen deleted with no deletion timestamp on any copy (a DELETED event of a pod
        // never seen terminating).
        out.push(
            Finding::new(
                Code::DriverDeleted,
                Severity::Warn,
                format!(
                    "The driver pod {} was deleted before it finished (phase {})",
                    d.pod.name,
                    d.pod.phase().unwrap_or("(none)")
                ),
            )
            .witness(Witness::Pod)
            .evidence("a watch DELETED event")
            .hint(deleted_hint(d.pod)),
        );
    }
    if let Some(f) = restarted(d.pod, &container) {
        out.push(f);
    }
    if out.is_empty() && state == ExecutorState::Pending {
        let since = d
            .pod
            .created_at
            .map(|c| format!(" for {}", text::human_duration(as_of - c)));
        out.push(
            Finding::new(
                Code::DriverPending,
                Severity::Info,
                format!("The driver is pending{}", since.unwrap_or_default()),
            )
            .evidence(format!(
                "status.phase={}",
                d.pod.phase().unwrap_or("(none)")
            ))
            .hint(
                "Nothing blocks it yet: no scheduling failure, image or config error is reported.",
            ),
        );
    }
    out
}

/// The driver ended (a final exit, a disruption, a deletion or a vanish) per these findings.
fn has_end(out: &[Finding]) -> bool {
    out.iter().any(|f| f.code.ends_driver())
}

/// `exit 137, OOMKilled` and Spark's words for it.
fn exit_words(pod: &ExecutorPod, _container: &str) -> String {
    match driver_exit(pod) {
        Some((t, _)) => match t.reason.as_deref() {
            Some(r) if r != "Error" => format!("exit {}, {r}", t.exit_code),
            _ => format!("exit {}", describe_exit_code(t.exit_code)),
        },
        None => "no exit recorded".to_owned(),
    }
}

fn jvm_oom(summary: String) -> Finding {
    Finding::new(Code::DriverJvmOom, Severity::Error, summary)
        .hint(
            "The driver's heap overflowed: raise spark.driver.memory (e.g. --conf \
             spark.driver.memory=4g), and look for what the driver holds: collect()/toPandas() \
             of large results (cap them with spark.driver.maxResultSize), large broadcast joins \
             (spark.sql.autoBroadcastJoinThreshold), very many tasks or partitions (the \
             driver keeps state per task). spark.driver.memoryOverhead does not help here.",
        )
        .reference(REF_DRIVER_MEMORY)
}

/// Spark's driver memory request is `spark.driver.memory` + overhead (max(factor × memory,
/// 384m)); the limit equals it. From the limit alone, as for executors, a concrete value.
fn oom_killed_hint(limit: Option<&str>) -> String {
    let concrete = limit.and_then(overhead_from_limit).map(|(heap, overhead, next)| {
        format!(
            " With Spark's defaults this {} limit is about {heap}Mi of heap plus {overhead}Mi of \
             overhead: try --conf spark.driver.memoryOverhead={next}.",
            limit.unwrap_or_default()
        )
    });
    format!(
        "The driver container's total memory (JVM heap + off-heap + native + Python) passed its \
         limit; the heap itself did not overflow (that would be exit 52). Raise \
         spark.driver.memoryOverhead (default max(spark.driver.memoryOverheadFactor × \
         spark.driver.memory, spark.driver.minMemoryOverhead = 384m); the factor is 0.1, or 0.4 \
         for PySpark/R apps). Raising spark.driver.memory mostly grows the heap, which was not \
         what overflowed.{}",
        concrete.unwrap_or_default()
    )
}

fn deleted(pod: &ExecutorPod, del: &Deletion, state: ExecutorState) -> Finding {
    let by = match pod.owner.as_ref() {
        Some(o) if o.kind.as_str() == "SparkApplication" => {
            format!(
                " (owned by SparkApplication {}: the operator or a deletion of it)",
                o.name
            )
        }
        Some(o) => format!(" (owned by {} {})", o.kind, o.name),
        None => String::new(),
    };
    Finding::new(
        Code::DriverDeleted,
        Severity::Warn,
        format!(
            "The driver pod was deleted while {}{by}: the application ends with it",
            state.as_str()
        ),
    )
    .evidence(format!(
        "metadata.deletionTimestamp={} deletionGracePeriodSeconds={}",
        fmt_time(&del.at),
        del.grace_period_seconds
            .map_or_else(|| "unset".to_owned(), |g| g.to_string())
    ))
    .hint(deleted_hint(pod))
    .reference("https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination")
}

fn deleted_hint(pod: &ExecutorPod) -> String {
    match pod.owner.as_ref() {
        Some(o) if o.kind.as_str() == "SparkApplication" => format!(
            "The SparkApplication {} was deleted or resubmitted, or the operator killed the \
             driver (a timeout, a restart policy): see the operator's log and the \
             SparkApplication's status.",
            o.name
        ),
        _ => "A user (kubectl delete), a controller or a namespace cleanup deleted the driver \
              pod: the API server's audit log names who. Its executors go with it (the garbage \
              collector deletes pods the driver owns)."
            .to_owned(),
    }
}

/// The driver container restarted (the operator's `restartPolicy: OnFailure`, a pod
/// template's `Always`): the previous run's end.
fn restarted(pod: &ExecutorPod, container: &str) -> Option<Finding> {
    let status = pod.container_status(container)?;
    if status.restart_count <= 0 {
        return None;
    }
    let mut f = Finding::new(
        Code::DriverRestarted,
        Severity::Warn,
        format!(
            "The driver's container restarted {} time{}",
            status.restart_count,
            if status.restart_count == 1 { "" } else { "s" }
        ),
    )
    .evidence(format!(
        "containerStatuses[{container}].restartCount={}",
        status.restart_count
    ));
    if let Some(t) = status.last_state.terminated() {
        f.summary.push_str(&format!(
            "; the last run ended with exit {}",
            match t.reason.as_deref() {
                Some(r) if r != "Error" => format!("{}, {r}", t.exit_code),
                _ => describe_exit_code(t.exit_code),
            }
        ));
        f = f.evidence(describe_terminated(container, "lastState", t));
        if let Some(m) = t.message.as_deref().filter(|m| !m.trim().is_empty()) {
            f = f.evidence(format!("terminated.message: {}", first_line(m)));
        }
        f.hint = match (t.exit_code, t.reason.as_deref()) {
            (137, Some("OOMKilled")) => {
                let limit = pod
                    .container_spec(container)
                    .and_then(|c| c.limits.memory.clone());
                oom_killed_hint(limit.as_deref())
            }
            (52, _) => jvm_oom(String::new()).hint,
            _ => "A restarted driver starts the application over (new executors, lost \
                  progress): the previous run's log (kubectl logs --previous) says why it ended."
                .to_owned(),
        };
    } else {
        f.hint = "A restarted driver starts the application over: kubectl logs --previous \
                  says why the last run ended."
            .to_owned();
    }
    Some(f)
}

/// The most of one line of the driver's last words a finding quotes.
const WORDS_LINE_MAX: usize = 240;

/// The driver's own last words: the exception Spark annotated on its pod when the main
/// ended by one ([`EXIT_EXCEPTION_ANNOTATION`]), else what its container wrote to its
/// termination message.
struct LastWords<'a> {
    /// Where they were read (`spark.exit-exception`, `terminated.message`).
    from: &'static str,
    text: &'a str,
}

impl LastWords<'_> {
    /// How a finding says where an OutOfMemoryError was read.
    fn says(&self) -> &'static str {
        if self.from == EXIT_EXCEPTION_ANNOTATION {
            "exit exception is"
        } else {
            "termination message is"
        }
    }

    /// The first line: the exception and its message.
    fn headline(&self) -> String {
        let line = self.text.lines().map(str::trim).find(|l| !l.is_empty());
        clipped(line.unwrap_or_default(), WORDS_LINE_MAX).into_owned()
    }

    /// The innermost `Caused by:` (what failed first), when the text has one: at the start
    /// of a line (a `Suppressed:` block's causes are indented).
    fn root_cause(&self) -> Option<String> {
        self.text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("Caused by:"))
            .map(|c| clipped(c.trim(), WORDS_LINE_MAX).into_owned())
    }
}

/// A line that is the driver's own OutOfMemoryError (the exception, a cause, or the JVM's
/// "Exception in thread"), not an executor's quoted in a stage failure ("Lost task … in
/// stage … (executor 3): java.lang.OutOfMemoryError").
fn drivers_own_oom(line: &str) -> bool {
    const OOM: &str = "java.lang.OutOfMemoryError";
    let l = line.trim_start();
    (l.starts_with(OOM)
        || l.strip_prefix("Caused by: ")
            .is_some_and(|c| c.starts_with(OOM))
        || (l.starts_with("Exception in thread ") && l.contains(&format!("\" {OOM}"))))
        && !l.contains("Lost task")
}

fn last_words<'a>(pod: &'a ExecutorPod, d: &DriverEvidence<'a>) -> Option<LastWords<'a>> {
    // The last pod seen (the ended one is the same pod: a new uid starts the driver over).
    let annotated = [pod, d.pod]
        .into_iter()
        .find_map(|p| p.exit_exception.as_deref());
    if let Some(text) = annotated {
        return Some(LastWords {
            from: EXIT_EXCEPTION_ANNOTATION,
            text,
        });
    }
    let (t, _) = driver_exit(pod)?;
    let text = t.message.as_deref().filter(|m| !m.trim().is_empty())?;
    Some(LastWords {
        from: "terminated.message",
        text,
    })
}

/// The last line of a log that names an exception or error.
fn last_exception(lines: &[String]) -> Option<&String> {
    lines
        .iter()
        .rev()
        .find(|l| l.contains("Exception") || l.contains("Error:"))
}

/// An executor's hint said for the driver: its settings and its words.
fn for_driver(hint: &str) -> String {
    let cut = hint
        .find("Spark keeps a pending executor pod waiting")
        .map_or(hint, |i| hint[..i].trim_end());
    cut.replace("spark.kubernetes.executor.", "spark.kubernetes.driver.")
        .replace("spark.executor.", "spark.driver.")
        .replace("the executor's", "the driver's")
        .replace("the executor", "the driver")
        .replace("executors", "drivers")
}

/// When a final pod became final by the cluster's clock when it has no container exit to
/// say so: its `DisruptionTarget=True` or `Ready=False` transition.
pub fn final_condition_at(pod: &ExecutorPod) -> Option<Time> {
    if !pod
        .phase()
        .is_some_and(|p| p == "Failed" || p == "Succeeded")
    {
        return None;
    }
    [("DisruptionTarget", "True"), ("Ready", "False")]
        .iter()
        .filter_map(|(c, status)| {
            pod.condition(c)
                .filter(|c| c.status.as_str() == *status)
                .and_then(|c| c.last_transition)
        })
        .min()
}

/// When the driver ended: by the cluster's clocks (its container's `finishedAt`, its
/// deletion request, a failed pod's condition), and by the tool's (first seen final or gone).
pub(super) fn end_times(d: &DriverEvidence<'_>) -> (Option<Time>, Option<Time>) {
    let pod = d.ended.unwrap_or(d.pod);
    let finished = driver_exit(pod)
        .filter(|(_, before_restart)| !before_restart)
        .and_then(|(t, _)| t.finished_at);
    let deletion = d.pod.deletion.as_ref().map(super::requested_at);
    // A pod failed with no container exit (an eviction, a rejection): the cluster's own
    // time of it, the Ready or DisruptionTarget condition's transition, before first sight.
    let condition = final_condition_at(pod);
    let cluster = [finished, deletion, condition].into_iter().flatten().min();
    let seen = [d.ended_seen, d.gone_at].into_iter().flatten().min();
    (cluster, seen)
}
