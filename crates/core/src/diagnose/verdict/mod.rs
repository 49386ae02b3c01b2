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
mod phases;

use account::{account, apply_version, driver_witness_of, from_driver, missing_account};
use order::{is_exit_code, is_pod_ending, order};
use phases::{
    complete_and_order, ended_by, ending, failed_before_deletion, gather, missing,
    reconcile_with_driver, spark_of, state_of,
};
use serde::{Deserialize, Serialize};

use super::app_verdict::{DriverEnd, ExecutorEnd, attribute_to_driver, ended_with, requested_at};
use super::driver::{PodSide, pod_from_reason, reconcile};
use super::{Code, Finding, Severity, Witness};
use crate::classify::{ClassifyOptions, Resolved, classify};
use crate::model::driver::{DriverSeen, RemovalKind, RemovalReason, parse_removal};
use crate::model::{
    Deletion, ExecutorPod, ExecutorState, KILLED_AT, KILLED_BY, PodEvent, Related, Time,
};
use crate::spark::{SparkView, UNKNOWN_EXIT_CODE, describe_exit_code, spark_view};

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
    pub preempted_by: Option<Box<Related>>,
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
    pub first_deletion: Option<&'a Deletion>,
    /// Events about the pod, oldest first.
    pub events: &'a [PodEvent],
    /// How to classify (container name, checkAllContainers).
    pub options: &'a ClassifyOptions,
    /// `options` resolved for `pod`, and Spark's state for it (the store has both).
    pub resolved: &'a Resolved,
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
        let at = pod.tool_annotations.get(KILLED_AT)?;
        Some(Self {
            at: chrono::DateTime::parse_from_rfc3339(at)
                .ok()
                .map(|t| t.to_utc()),
            by: pod
                .tool_annotations
                .get(KILLED_BY)
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

/// The verdict, in phases: gather the findings (the pod, the driver's reason, the log
/// tail), reconcile them with the driver, say what is missing, attribute an end to the
/// driver or the tool, order; then the state and Spark's accounting that follow from them.
pub fn verdict(ev: &Evidence<'_>) -> Verdict {
    let first_seen_deleted = ev
        .ended
        .is_none()
        .then(|| failed_before_deletion(ev.pod, ev.first_deletion, ev.options))
        .flatten();
    let mut g = gather(ev, first_seen_deleted.as_ref());
    reconcile_with_driver(ev, &mut g);
    let mut missing = missing(ev, &mut g);
    let by = ended_by(ev, &mut g, &mut missing);
    complete_and_order(ev, &mut g, &by);
    let state = state_of(ev, &g);
    let spark = spark_of(ev, &g, state, missing, &by);
    let exit = match (&g.acted_on, &g.rebuilt) {
        (Some((p, r, _)), _) => exit_of(p, &r.config.spark_container),
        (None, Some(r)) => r.exit.clone(),
        (None, None) => exit_of(ev.pod, &ev.resolved.config.spark_container),
    };
    let ending = ending(
        ev,
        &g.findings,
        state,
        g.removal.as_ref().map(|r| &r.kind),
        missing,
    );
    let preempted_by = g
        .findings
        .iter()
        .any(|f| f.code == Code::Preempted)
        .then(|| super::disruption::preemptor(ev.ended.unwrap_or(ev.pod), ev.events))
        .flatten()
        .map(Box::new);
    Verdict {
        state,
        findings: g.findings,
        spark: spark.map(Box::new),
        ending,
        missing,
        exit_code: exit.as_ref().map(|e| e.0),
        container_reason: exit.and_then(|e| e.1),
        preempted_by,
    }
}

/// The Spark container's terminated exit code and reason (state, else lastState).
fn exit_of(pod: &ExecutorPod, container: &str) -> Option<(i32, Option<String>)> {
    pod.container_status(container)
        .and_then(|c| c.terminated().or_else(|| c.last_state.terminated()))
        .map(|t| (t.exit_code, t.reason.as_deref().map(str::to_owned)))
}

#[cfg(test)]
mod tests;
