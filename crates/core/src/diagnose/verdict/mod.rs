//! One verdict per executor, fused from every witness of its life.
//!
//! The pod (watch or LIST), the events, the driver's executor list, the captured log tail
//! and the tool's own actions are evidence; [`verdict`] turns all of one executor's
//! evidence into the one answer every output shows: the cause (one primary finding, the
//! others supporting), what Spark did about it (counted as a failure or not, following the
//! app's Spark version), how the pod ended, and for each finding the witness it came from
//! and whether it was observed or reconstructed.
//!
//! Precedence (documented in `docs/diagnosis.md`): an observed terminated container status
//! outranks the driver's reason, which outranks a log pattern, which outranks events, which
//! outrank inference. `missing` is a verdict only when no witness explains the
//! disappearance. Spark's accounting comes from the failure Spark acted on (the first final
//! state seen), never from the final deleted pod.
//!
//! Pure and deterministic: no clock (`now` is an input), no I/O, the same evidence gives
//! the same verdict.

mod account;
mod order;

use account::{account, apply_version, driver_witness_of, from_driver, missing_account};
use order::{is_exit_code, is_pod_ending, order};

use serde::{Deserialize, Serialize};

use super::{
    Code, Finding, Severity, Witness,
    app_verdict::{DriverEnd, ExecutorEnd, attribute_to_driver, ended_with, requested_at},
    driver::{PodSide, pod_from_reason, reconcile},
};
use crate::{
    classify::{ClassifyOptions, classify},
    model::{
        ExecutorPod, ExecutorState, PodEvent, Time,
        driver::{DriverSeen, RemovalKind, parse_removal},
    },
    spark::{SparkView, UNKNOWN_EXIT_CODE, describe_exit_code, spark_view},
};

/// How the executor's pod ended (or that it has not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// The pod exists and is not being deleted.
    Present,
    /// Deletion requested; the pod is still there (grace period, finalizers).
    Terminating,
    /// Kept by spark-triage's hold after a deletion request.
    Held,
    /// Deleted by Spark after it removed the executor (failure, end, scale-down, kill request).
    DeletedBySpark,
    /// Deleted by spark-triage's own kill.
    DeletedByTool,
    /// Deleted by the scheduler (preemption) or an eviction.
    DeletedByDisruption,
    /// Deleted by someone, not known who ("a user or the framework").
    Deleted,
    /// Absent from a full LIST with no deletion seen and no witness explaining why.
    Vanished,
    /// No pod was ever seen: known only from the driver's executor list.
    NeverSeen,
    /// Its container restarted in place (a StatefulSet's or Deployment's pod, restartPolicy
    /// Always) and the driver gave the new JVM another id: the pod went on as another
    /// executor.
    Restarted,
}

impl Ending {
    /// The kebab-case name every output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Present => "present",
            Self::Terminating => "terminating",
            Self::Held => "held",
            Self::DeletedBySpark => "deleted-by-spark",
            Self::DeletedByTool => "deleted-by-spark-triage",
            Self::DeletedByDisruption => "deleted-by-disruption",
            Self::Deleted => "deleted",
            Self::Vanished => "vanished",
            Self::NeverSeen => "never-seen",
            Self::Restarted => "restarted-as-another",
        }
    }

    /// For people: `pod deleted by Spark`.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Present => "pod present",
            Self::Terminating => "pod terminating",
            Self::Held => "pod kept by spark-triage's hold",
            Self::DeletedBySpark => "pod deleted by Spark",
            Self::DeletedByTool => "pod deleted by spark-triage (kill)",
            Self::DeletedByDisruption => "pod deleted by a disruption (preemption, eviction)",
            Self::Deleted => "pod deleted (by a user or the framework)",
            Self::Vanished => "pod vanished (no deletion seen)",
            Self::NeverSeen => "no pod seen (known only from the driver)",
            Self::Restarted => "container restarted in place; the pod went on as another executor",
        }
    }

    /// The pod no longer exists.
    pub fn is_gone(self) -> bool {
        !matches!(self, Self::Present | Self::Terminating | Self::Held)
    }
}

/// What Spark did (or will do) about the executor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SparkAccount {
    /// The exit code Spark reads (`-1` when its container had not terminated).
    pub exit_code: i32,
    /// `describeExitCode`, e.g. `137(SIGKILL, possible container OOM)`.
    pub exit_description: String,
    /// `exitCausedByApp`: task losses on it count against the app.
    pub caused_by_app: bool,
    /// Counted toward `spark.executor.maxNumFailures` (Spark 4.0+: a distinct id seen failed).
    pub counted: bool,
    /// The removal reason Spark logs (verbatim when Spark's driver said it).
    pub message: String,
    /// Where this account comes from.
    pub witness: Witness,
    /// Rebuilt (from the driver's reason or the tool's inference), not observed.
    pub reconstructed: bool,
    /// The Spark version whose rules were applied (the pod's `spark-version` label).
    pub spark_version: Option<String>,
    /// A qualification (e.g. no failure limit before Spark 4.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The one answer about an executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The state Spark assigned (gone executors: the final one it acted on) or would assign.
    pub state: ExecutorState,
    /// Primary finding first (the cause), then the supporting ones; stable order.
    pub findings: Vec<Finding>,
    /// What Spark did about it (final states only).
    pub spark: Option<Box<SparkAccount>>,
    /// How the pod ended.
    pub ending: Ending,
    /// Unexplained vanish: absent from a full LIST, no deletion seen, no witness says why.
    pub missing: bool,
    /// The Spark container's exit the verdict rests on (observed, or from Spark's reason).
    pub exit_code: Option<i32>,
    /// Its terminated reason (`OOMKilled`, `Error`, …).
    pub container_reason: Option<String>,
    /// Preempted: the pod that took its place, as its `Preempted` event names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted_by: Option<Box<crate::model::Related>>,
}

impl Default for Verdict {
    fn default() -> Self {
        Self {
            state: ExecutorState::Unknown,
            findings: Vec::new(),
            spark: None,
            ending: Ending::Present,
            missing: false,
            exit_code: None,
            container_reason: None,
            preempted_by: None,
        }
    }
}

impl Verdict {
    /// The primary finding.
    pub fn cause(&self) -> Option<&Finding> {
        self.findings.first()
    }

    /// An ending that is a failure: Spark counted it, or Spark calls it failed and blames
    /// the app (before 4.0 Spark counts nothing, so its state and blame decide). What
    /// `report` and the fleet tables count as failures.
    pub fn is_failure(&self) -> bool {
        self.counted()
            || (self.state == ExecutorState::Failed
                && self.spark.as_ref().is_some_and(|s| s.caused_by_app))
    }

    /// The cause's code as every count names it: `none` when the verdict names none.
    pub fn cause_code(&self) -> &'static str {
        self.cause().map_or("none", |f| f.code.as_str())
    }

    /// The verdict's severity: its primary finding's (none when healthy).
    pub fn severity(&self) -> Option<Severity> {
        self.cause().map(|f| f.severity)
    }

    /// Counted against the app's failure budget.
    pub fn counted(&self) -> bool {
        self.spark.as_ref().is_some_and(|s| s.counted)
    }

    /// `counted` / `not counted` / `-` (not ended), for tables.
    pub fn counted_word(&self) -> &'static str {
        match &self.spark {
            None => "-",
            Some(s) if s.counted => "counted",
            Some(_) => "not counted",
        }
    }

    /// The driver and the pod disagree (`driver-lost-pod`, `unregistered`, `zombie`).
    pub fn driver_disagrees(&self) -> bool {
        self.findings.iter().any(|f| {
            matches!(
                f.code,
                Code::DriverLostPod | Code::Unregistered | Code::Zombie
            )
        })
    }

    /// Whether any finding has this code.
    pub fn has(&self, code: Code) -> bool {
        self.findings.iter().any(|f| f.code == code)
    }
}

/// How the pod went away, as the store saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodGone {
    /// Still there.
    No,
    /// A watch DELETED event.
    Deleted,
    /// Absent from a full LIST with no deletion seen.
    Missing,
    /// Never seen: the pod is rebuilt from the driver's reason.
    DriverOnly,
    /// The pod went on as another executor after its container restarted (the pod is as
    /// it was when this executor's JVM ended: its last state).
    Restarted,
}

/// Everything known about one executor.
#[derive(Debug)]
pub struct Evidence<'a> {
    /// The executor id.
    pub id: i64,
    /// When this executor id was first seen (`None`: not known, as in `explain`). A
    /// StatefulSet's or Deployment's pod restarts its container in place and the driver
    /// gives the new JVM a new id: an exit before that was the executor before it in the pod.
    pub first_seen: Option<Time>,
    /// The pod as last seen (or rebuilt from the driver's reason).
    pub pod: &'a ExecutorPod,
    /// The first final (failed/succeeded) observation of the pod: the one Spark acted on.
    pub ended: Option<&'a ExecutorPod>,
    /// The pod's deletion as first seen (a later update shortens the grace and moves the
    /// timestamp, so only the first tells when it was requested).
    pub first_deletion: Option<&'a crate::model::Deletion>,
    /// Events about the pod, oldest first.
    pub events: &'a [PodEvent],
    /// How to classify (container name, checkAllContainers).
    pub options: &'a ClassifyOptions,
    /// `options` resolved for `pod`, and Spark's state for it (the store has both).
    pub resolved: &'a crate::classify::Resolved,
    /// Spark's state of the last pod seen.
    pub pod_state: ExecutorState,
    /// Whether and how the pod is gone.
    pub gone: PodGone,
    /// The tool's missing finding, when the store decided the pod vanished.
    pub missing: Option<&'a Finding>,
    /// What the driver's REST API says about the executor.
    pub driver: Option<&'a DriverSeen>,
    /// The captured tail of the Spark container's log.
    pub log_tail: Option<&'a [String]>,
    /// spark-triage's own kill deleted this pod: when, by whom.
    pub killed_by_tool: Option<&'a ToolKill>,
    /// Since when the pod is Running (for `unregistered`).
    pub running_since: Option<Time>,
    /// When the pod went away.
    pub gone_at: Option<Time>,
    /// Spark's own time to notice a removed pod (`missingPodDetectDelta` + poll interval, or
    /// the heartbeat timeout when it does not poll).
    pub lost_grace: chrono::Duration,
    /// `spark.kubernetes.executor.enableApiPolling`.
    pub api_polling: bool,
    /// The app's `spark.kubernetes.executor.deleteOnTermination`.
    pub delete_on_termination: bool,
    /// The app's driver has ended: an end of this executor's from then on is the driver's.
    pub driver_end: Option<&'a DriverEnd>,
    /// The batch schedulers' group objects read.
    pub groups: &'a super::GroupIndex,
    /// The app's executor sizing settings, when read: the value in a memory finding's hint
    /// when the pod's own limit is not known (a pod gone before it was seen).
    pub sizing: Option<&'a super::memory::Sizing>,
    /// `spark.dynamicAllocation.enabled`, when the app's configuration was read.
    pub dynamic_allocation: Option<bool>,
    /// The driver's captured log says `Removing executor N with no recent heartbeats` of
    /// this one (`HeartbeatReceiver`'s words settle what "Executor killed by driver." hides;
    /// see [`heartbeat_removals`]).
    pub heartbeat_logged: bool,
    /// The time the verdict is made at.
    pub now: Time,
}

/// A kill made through spark-triage (`K` in the live view, `spark-triage kill`), as its
/// actions log says it: the tool's own act, never an incident.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolKill {
    /// When the deletion was made (the tool's clock), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Time>,
    /// The kubeconfig user who made it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl ToolKill {
    /// The kill the pod's own annotations say spark-triage made (any process, any user).
    pub fn of(pod: &ExecutorPod) -> Option<Self> {
        let at = pod.tool_annotations.get(crate::model::KILLED_AT)?;
        Some(Self {
            at: chrono::DateTime::parse_from_rfc3339(at)
                .ok()
                .map(|t| t.to_utc()),
            by: pod
                .tool_annotations
                .get(crate::model::KILLED_BY)
                .filter(|u| !u.is_empty())
                .cloned(),
        })
    }
}

/// The executors a driver's log says `HeartbeatReceiver` removed: "Removing executor N
/// with no recent heartbeats" (read once per log, not once per executor).
pub fn heartbeat_removals(lines: &[String]) -> std::collections::BTreeSet<i64> {
    const SAYS: &str = "Removing executor ";
    lines
        .iter()
        .filter(|l| l.contains("with no recent heartbeats"))
        .filter_map(|l| {
            let rest = &l[l.find(SAYS)? + SAYS.len()..];
            rest.split_whitespace().next()?.parse().ok()
        })
        .collect()
}

/// A cause finding found by reading a witness other than the pod.
struct Rebuilt {
    findings: Vec<Finding>,
    account: Option<SparkAccount>,
    state: ExecutorState,
    exit: Option<(i32, Option<String>)>,
}

/// The verdict.
pub fn verdict(ev: &Evidence<'_>) -> Verdict {
    let (resolved, pod_state) = (ev.resolved, ev.pod_state);

    let removal = ev
        .driver
        .and_then(|d| d.exec.as_ref())
        .filter(|d| !d.active)
        .and_then(|d| d.remove_reason.as_deref())
        .map(parse_removal);

    // 1. The pod: the failure Spark acted on, else the pod as last seen.
    let mut findings: Vec<Finding> = Vec::new();
    let first_seen_deleted = ev
        .ended
        .is_none()
        .then(|| failed_before_deletion(ev.pod, ev.first_deletion, ev.options))
        .flatten();
    let acted_on = ev.ended.or(first_seen_deleted.as_ref()).map(|p| {
        let r = ev.options.resolve(p);
        let s = classify(p, &r.config);
        (p, r, s)
    });
    // A pod that is gone stopped waiting when it went: its ages (how long it was pending,
    // creating, unschedulable) end there, not at the time of the verdict.
    let as_of = ev.gone_at.map_or(ev.now, |g| g.min(ev.now));
    let last = super::diagnose_in(ev.pod, ev.events, resolved, pod_state, as_of, ev.groups);
    match &acted_on {
        Some((p, r, s)) if !same_terminated(p, ev.pod, &r.config.spark_container) => {
            findings.extend(super::diagnose_in(p, ev.events, r, *s, as_of, ev.groups));
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

    // 4. Reconciliation with the driver (each disagreement is its own finding).
    let ended = acted_on.as_ref().map_or(ev.pod, |(p, _, _)| *p);
    // Its own failure, not a stop from outside: no signal exit, no deletion asked first.
    let quick_failure = exit_of_timed(ended, &resolved.config.spark_container)
        .filter(|(code, ran, finished)| {
            !matches!(code, 0 | 137 | 143)
                && *ran <= super::driver::QUICK_FAILURE
                && ended.deletion.as_ref().is_none_or(|d| d.at > *finished)
        })
        .map(|(code, ran, _)| (code, ran));
    let side = PodSide {
        id: ev.id,
        state: pod_state,
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
        f.witness = driver_witness;
        findings.push(f);
    }

    // 5. Missing: a verdict only when nothing explains the disappearance.
    let explained = acted_on.is_some()
        || removal
            .as_ref()
            .is_some_and(|r| matches!(r.kind, RemovalKind::Exited | RemovalKind::Deleted))
        || findings.iter().any(|f| {
            matches!(
                f.code,
                Code::Preempted | Code::Evicted | Code::NodeLost | Code::Deleted
            )
        });
    let missing = ev.gone == PodGone::Missing && !explained;
    if missing && let Some(m) = ev.missing {
        let mut m = m.clone();
        m.witness = Witness::Inference;
        findings.push(m);
    }
    // Never seen, and Spark's own missing-pod detection removed it: the same verdict, from
    // the driver's words.
    let driver_missing = ev.gone == PodGone::DriverOnly
        && removal
            .as_ref()
            .is_some_and(|r| r.kind == RemovalKind::NotFound);
    if driver_missing {
        let mut f = Finding::new(
                Code::Missing,
                Severity::Error,
                "The pod vanished: Spark's driver found it missing from the cluster with no deletion seen",
            )
            .witness(driver_witness)
            .evidence("driver: removeReason says the executor was not found in the cluster at Spark's poll")
            .hint(
                "Something removed the pod without a deletion event reaching the driver (a force \
                 delete during a watch gap, etcd restore, a node or namespace cleanup). Spark \
                 did not count it against the application and replaces it after its next poll.",
            )
            .reference("https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsLifecycleManager.scala");
        f.reconstructed = true;
        findings.push(f);
    }
    let mut missing = missing || driver_missing;

    // 6. The driver's end: executors deleted by Spark's stop or the garbage collector after
    // it, or failing for want of it, ended with it.
    // An error exit known from another witness (the driver's reason, the log) is its own.
    let own_failure = findings.iter().any(|f| {
        f.severity == Severity::Error
            && f.witness != Witness::Pod
            && (is_pod_ending(f.code) || f.code == Code::JvmOom)
    });
    let with_driver = ev.driver_end.filter(|end| {
        let exit = exit_of_timed_any(ended, &resolved.config.spark_container);
        ended_with(
            end,
            &ExecutorEnd {
                exit,
                final_at: super::app_verdict::final_condition_at(ended),
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
        attribute_to_driver(&mut findings, end);
        missing = false;
    }
    // Killed through spark-triage before it ended its own way: the tool's act, said as such.
    let own_end_first = acted_on
        .as_ref()
        .is_some_and(|(p, _, _)| p.deletion.is_none());
    let killed = ev
        .killed_by_tool
        .filter(|_| with_driver.is_none() && !own_end_first);
    if let Some(k) = killed {
        attribute_to_tool(&mut findings, k);
        missing = false;
    }

    predecessors_exit(ev, &mut findings);
    // A memory finding's hint ends with a value to set, from the best witness of the memory.
    let limit = ended
        .memory_limit(&resolved.config.spark_container)
        .map(|l| l.had.to_string());
    super::memory::MemoryWitnesses {
        limit: limit.as_deref(),
        sizing: ev.sizing,
    }
    .complete(&mut findings);
    order(&mut findings);
    // The driver's end, or the tool's kill, says how it ended first (an executor's own
    // "stopped with the app" in a log's list is only a finding among its others).
    let first = if with_driver.is_some() {
        Some(Code::EndedWithDriver)
    } else {
        killed.map(|_| Code::KilledByTool)
    };
    if let Some(i) = first.and_then(|c| findings.iter().position(|f| f.code == c)) {
        let f = findings.remove(i);
        findings.insert(0, f);
    }

    // The state Spark assigned or would assign.
    let state = match (&acted_on, &rebuilt, ev.gone) {
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
    };

    // What Spark did about it.
    let mut spark = match (&acted_on, &rebuilt) {
        // Spark's snapshot never shows this pod ended as this executor (it shows it as the
        // next one): no removal reason of Spark's, and nothing counted; the driver drops the
        // id when its heartbeats stop.
        _ if ev.gone == PodGone::Restarted => None,
        (Some((p, r, s)), _) => {
            spark_view(p, *s, &r.config).map(|v| account(v, Witness::Pod, false))
        }
        (None, Some(r)) => r.account.clone(),
        (None, None) if missing => Some(missing_account(ev)),
        (None, None) => spark_view(ev.pod, state, &resolved.config).map(|v| {
            account(
                v,
                Witness::Pod,
                ev.gone == PodGone::DriverOnly || (state != pod_state),
            )
        }),
    };
    if ev.gone == PodGone::DriverOnly
        && let Some(s) = &mut spark
    {
        s.witness = driver_witness;
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
        apply_version(s, ev.pod.label(crate::model::LABEL_SPARK_VERSION));
        if killed.is_some() {
            // Spark reads a deleted pod as "deleted by a user or the framework": not counted.
            s.counted = false;
            s.caused_by_app = false;
            s.note = Some(
                "killed through spark-triage: Spark does not count a deleted executor".to_owned(),
            );
        }
        if let Some(end) = with_driver {
            s.counted = false;
            s.caused_by_app = false;
            s.note = Some(format!(
                "the application had ended ({}): nothing counts it",
                end.label
            ));
        }
    }

    let exit = match (&acted_on, &rebuilt) {
        (Some((p, r, _)), _) => exit_of(p, &r.config.spark_container),
        (None, Some(r)) => r.exit.clone(),
        (None, None) => exit_of(ev.pod, &resolved.config.spark_container),
    };
    let ending = ending(
        ev,
        &findings,
        state,
        removal.as_ref().map(|r| &r.kind),
        missing,
    );
    let preempted_by = findings
        .iter()
        .any(|f| f.code == Code::Preempted)
        .then(|| super::disruption::preemptor(ev.ended.unwrap_or(ev.pod), ev.events))
        .flatten()
        .map(Box::new);
    Verdict {
        state,
        findings,
        spark: spark.map(Box::new),
        ending,
        missing,
        exit_code: exit.as_ref().map(|e| e.0),
        container_reason: exit.and_then(|e| e.1),
        preempted_by,
    }
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
        k.at.map(|t| format!(" at {}", crate::model::fmt_time(&t)))
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

/// The Spark container's terminated exit code and reason (state, else lastState).
fn exit_of(pod: &ExecutorPod, container: &str) -> Option<(i32, Option<String>)> {
    pod.container_status(container)
        .and_then(|c| c.terminated().or_else(|| c.last_state.terminated()))
        .map(|t| (t.exit_code, t.reason.as_deref().map(str::to_owned)))
}

/// A pod first seen already deleted whose Spark container had terminated before the
/// deletion was requested (`deletionTimestamp` − grace): Spark saw it fail or succeed
/// first. Returned without its deletion, as Spark saw it then.
fn failed_before_deletion(
    pod: &ExecutorPod,
    first: Option<&crate::model::Deletion>,
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
    if crate::allocator::Controller::of(ev.pod).is_none() {
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

fn ending(
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

#[cfg(test)]
mod tests;
