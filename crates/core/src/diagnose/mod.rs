//! Diagnosis: small pure rules that turn a pod (and the events about it) into findings a
//! person can act on.
//!
//! Each rule is one function over a [`Subject`] with a `Ref:` to its source of truth. Rules
//! never do I/O, never read the clock (`now` is in the subject) and never panic on any
//! cluster data. Spark itself only reads the exit code (docs/diagnosis.md §2); everything else here
//! (OOMKilled vs node SIGKILL, eviction, preemption, pending reasons) is the tool's own
//! reading of the Kubernetes status and is labelled so in `docs/diagnosis.md`.
//!
//! Finding codes are a stable contract: add new ones, never rename.

pub mod advice;
pub mod app;
pub mod app_verdict;
pub mod budget;
pub mod code;
pub mod config;
mod containers;
pub mod disruption;
pub mod driver;
mod exit;
pub mod housekeeping;
pub mod memory;
pub mod nodes;
pub mod operator;
mod pending;
pub mod queueing;
pub mod scheduling;
pub mod verdict;

use std::borrow::Cow;

pub use code::Code;
pub use queueing::{GroupIndex, NO_GROUPS};
pub use scheduling::{SchedulingKind, SchedulingReason};
use serde::{Deserialize, Serialize};

use crate::classify::Resolved;
use crate::model::{ExecutorPod, ExecutorState, PodEvent, Time};

/// How bad it is. Ordered worst first.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The executor failed.
    Error,
    /// Worth a look.
    Warn,
    /// For the record.
    Info,
}

impl Severity {
    /// The lower-case name every output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
        }
    }

    /// The severity [`Severity::as_str`] names.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Error, Self::Warn, Self::Info]
            .into_iter()
            .find(|s| s.as_str() == name)
    }
}

/// One explanation of what happened to a pod.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// Which rule.
    pub code: Code,
    /// How serious.
    pub severity: Severity,
    /// One line for people.
    pub summary: String,
    /// The exact fields and events it came from.
    pub evidence: Vec<String>,
    /// What to change.
    pub hint: String,
    /// The scheduler's reasons, parsed (only for `unschedulable`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduling: Vec<SchedulingReason>,
    /// Where the rule's knowledge comes from.
    #[serde(rename = "ref")]
    pub reference: Cow<'static, str>,
    /// Which witness the finding's evidence came from.
    #[serde(default)]
    pub witness: Witness,
    /// Rebuilt from another witness's words (e.g. the pod from Spark's `removeReason`), not
    /// observed directly.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconstructed: bool,
}

/// Where a piece of evidence came from. Ordered by precedence: an observed pod status
/// outranks the driver's reason, which outranks a log pattern, which outranks events, which
/// outrank the tool's own inference (`docs/diagnosis.md`, "One verdict per executor").
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Witness {
    /// The pod's own status (from the watch, a LIST, or a file).
    #[default]
    Pod,
    /// A batch scheduler's or admission controller's object about the pod's group (a
    /// PodGroup, a Workload): observed like the pod, and only said of a waiting pod.
    SchedulerObject,
    /// The driver's executor list (its REST API): `removeReason`, `isActive`.
    Driver,
    /// The container log tail spark-triage captured.
    LogTail,
    /// Kubernetes events about the pod.
    Events,
    /// What spark-triage itself concluded (a pod absent from a full LIST) or did (a kill).
    Inference,
    /// The application's configuration (its driver's `spark.properties`).
    Config,
    /// The application's Spark event log (`SparkListenerExecutorRemoved`'s reason, the
    /// executor's add and remove times): the driver's words, read after the run.
    EventLog,
    /// A Spark operator's `SparkApplication` (its state, message and attempt counters).
    Operator,
}

impl Witness {
    /// The kebab-case name every output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Driver => "driver",
            Self::LogTail => "log-tail",
            Self::Events => "events",
            Self::Inference => "inference",
            Self::Config => "config",
            Self::SchedulerObject => "scheduler-object",
            Self::EventLog => "event-log",
            Self::Operator => "operator",
        }
    }
}

impl Finding {
    fn new(code: Code, severity: Severity, summary: impl Into<String>) -> Self {
        Self {
            code,
            severity,
            summary: summary.into(),
            evidence: Vec::new(),
            hint: String::new(),
            scheduling: Vec::new(),
            reference: Cow::Borrowed(""),
            witness: Witness::Pod,
            reconstructed: false,
        }
    }

    fn witness(mut self, w: Witness) -> Self {
        self.witness = w;
        self
    }

    fn evidence(mut self, line: impl Into<String>) -> Self {
        self.evidence.push(line.into());
        self
    }

    fn evidence_all(mut self, lines: impl IntoIterator<Item = String>) -> Self {
        self.evidence.extend(lines);
        self
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    fn reference(mut self, r: &'static str) -> Self {
        self.reference = Cow::Borrowed(r);
        self
    }
}

/// What a rule looks at.
#[derive(Debug)]
pub struct Subject<'a> {
    /// The pod, as last seen.
    pub pod: &'a ExecutorPod,
    /// Events about this pod, oldest first.
    pub events: Vec<&'a PodEvent>,
    /// Which container is Spark's, and how that was decided.
    pub resolved: &'a Resolved,
    /// Spark's state for the pod under `resolved.config`.
    pub state: ExecutorState,
    /// The time the diagnosis is made at (ages, pending durations).
    pub now: Time,
    /// The batch schedulers' group objects read (empty when none were).
    pub groups: &'a GroupIndex,
}

impl Subject<'_> {
    /// The name of the container Spark treats as the executor.
    fn spark_container(&self) -> &str {
        &self.resolved.config.spark_container
    }

    /// Events with this reason, oldest first.
    fn events_with(&self, reason: &str) -> impl Iterator<Item = &PodEvent> {
        self.events
            .iter()
            .copied()
            .filter(move |e| e.reason_is(reason))
    }

    /// The newest event with one of these reasons.
    fn last_event(&self, reasons: &[&str]) -> Option<&PodEvent> {
        self.events
            .iter()
            .rev()
            .copied()
            .find(|e| reasons.iter().any(|r| e.reason_is(r)))
    }
}

type Rule = fn(&Subject<'_>, &mut Vec<Finding>);

/// Every rule, in the order their findings are listed (causes before consequences).
const RULES: &[Rule] = &[
    exit::spark_container_exit,
    containers::sidecar_failed,
    containers::init_container_failed,
    containers::stuck_running,
    disruption::evicted,
    disruption::preempted,
    disruption::node_lost,
    disruption::admission_rejected,
    queueing::who_decides,
    pending::unschedulable,
    pending::image_pull,
    pending::container_config_error,
    pending::container_creating_stuck,
    disruption::deleted,
];

/// All findings for one pod. `events` may hold events about other pods; only the ones
/// about `pod` are used.
pub fn diagnose(
    pod: &ExecutorPod,
    events: &[PodEvent],
    resolved: &Resolved,
    state: ExecutorState,
    now: Time,
) -> Vec<Finding> {
    diagnose_in(pod, events, resolved, state, now, &NO_GROUPS)
}

/// [`diagnose`], with the batch schedulers' group objects the tool read.
pub fn diagnose_in(
    pod: &ExecutorPod,
    events: &[PodEvent],
    resolved: &Resolved,
    state: ExecutorState,
    now: Time,
    groups: &GroupIndex,
) -> Vec<Finding> {
    let mut about: Vec<&PodEvent> = events.iter().filter(|e| e.is_about(pod)).collect();
    about.sort_by(|a, b| PodEvent::chronological(a, b));
    let subject = Subject {
        pod,
        events: about,
        resolved,
        state,
        now,
        groups,
    };
    let mut findings = Vec::new();
    for rule in RULES {
        rule(&subject, &mut findings);
    }
    // Worst first; within a severity, rule order (stable sort).
    findings.sort_by_key(|f| f.severity);
    findings
}

/// The store's verdict on an executor absent from a full LIST with no deletion seen (the
/// tool's precise rule), with when Spark's own time-based rule reaches the same verdict.
pub fn missing(last_rv: Option<u64>, list_rv: Option<u64>, spark_verdict: &str) -> Finding {
    let mut f = Finding::new(
        Code::Missing,
        Severity::Error,
        "The pod vanished: absent from a full LIST, with no deletion seen by the watch",
    )
    .hint(
        "Something removed the pod without a deletion event reaching watchers (a force delete \
         during a watch gap, etcd restore, a node or namespace cleanup). Spark declares the \
         executor lost only at a poll more than spark.kubernetes.executor.missingPodDetectDelta \
         after its registration, and replaces it after its next poll.",
    )
    .reference("https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsLifecycleManager.scala")
    .evidence(format!(
        "last seen at resourceVersion {}; the LIST at resourceVersion {} does not have it",
        last_rv.map_or_else(|| "?".to_owned(), |r| r.to_string()),
        list_rv.map_or_else(|| "?".to_owned(), |r| r.to_string())
    ));
    f = f.evidence(format!("Spark's view: {spark_verdict}"));
    f
}

#[cfg(test)]
mod tests;
