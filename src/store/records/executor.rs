//! An executor's record: its pod, state, history, the driver's words of it and its
//! verdict; what a trimmed (forgotten) executor leaves counted.

use spark_triage_core::diagnose::Severity;
use spark_triage_core::diagnose::code::Oom;
use spark_triage_core::model::{Deletion, KUEUE_GATE, Text};

use super::*;

/// The `Finished::id` of a driver pod.
pub const DRIVER: i64 = i64::MIN;

/// An executor (or a driver, with id [`DRIVER`]) that just reached a final state: its log
/// should be captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub namespace: String,
    pub app_id: String,
    /// The executor id (its record holds the verdict the capture policy reads).
    pub id: i64,
    pub pod: String,
    pub container: String,
    /// The container restarted: the evidence is in the previous instance.
    pub previous: bool,
}

/// The note kept for an executor pod whose `spark-exec-id` is not a number.
pub(in crate::store) fn invalid_id_note(value: &str) -> String {
    format!("spark-exec-id {value:?} is not a number")
}

/// The value back from [`invalid_id_note`]'s note.
pub(in crate::store) fn invalid_id_value(note: &str) -> Option<String> {
    let quoted = note
        .strip_prefix("spark-exec-id ")?
        .strip_suffix(" is not a number")?;
    Some(serde_json::from_str(quoted).unwrap_or_else(|_| quoted.to_owned()))
}

/// `(namespace, app id)`.
pub type AppKey = (String, String);

/// How an executor's pod went away.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum Gone {
    /// A watch DELETED event was seen.
    Deleted { at: Time },
    /// Absent from a full LIST with no deletion seen (the tool's precise rule).
    Missing {
        at: Time,
        list_rv: Option<u64>,
        /// When Spark's time-based rule declares it lost (its poll after registration + delta).
        spark_verdict: String,
    },
    /// Never seen as a pod: known only from the driver's executor list (first named `at`).
    DriverOnly { at: Time },
    /// Its container restarted in place and the pod went on as executor `as_id` (a
    /// StatefulSet's or Deployment's pod): the record keeps the pod as this executor ended.
    Restarted { at: Time, as_id: i64 },
}

impl Gone {
    pub fn at(&self) -> Time {
        match self {
            Self::Deleted { at }
            | Self::Missing { at, .. }
            | Self::DriverOnly { at }
            | Self::Restarted { at, .. } => *at,
        }
    }
}

/// One state change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    /// When it happened: by the pod's own clocks where they say (`clock`), else when this
    /// process saw it.
    pub at: Time,
    pub state: ExecutorState,
    /// Extra: `missing`, `deleted`, the container reason.
    pub note: Option<String>,
    /// Whose clock `at` is (recordings from before it was kept: this process's sight).
    #[serde(default, skip_serializing_if = "super::times::Clock::is_seen")]
    pub clock: super::times::Clock,
    /// When this process saw it, when that is not `at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Time>,
}

impl Transition {
    /// A state change at `when` (the cluster's time where known), seen by this process at
    /// `seen`.
    pub fn new(
        (at, clock): (Time, super::times::Clock),
        seen: Time,
        state: ExecutorState,
        note: Option<String>,
    ) -> Self {
        Self {
            at,
            state,
            note,
            clock,
            seen: (seen != at).then_some(seen),
        }
    }

    /// When this process saw it.
    pub fn seen_at(&self) -> Time {
        self.seen.unwrap_or(self.at)
    }
}

/// Ended executors a store let go past its bound (`MAX_KEPT`), the first to end first:
/// what a report says of them, counted (they are no longer listed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trimmed {
    pub executors: usize,
    /// Failures among them (`Verdict::is_failure`: what `report` counts).
    pub failures: usize,
    /// By their verdict's cause (`none` when it named none).
    pub by_cause: BTreeMap<String, usize>,
    /// By every finding of their verdicts.
    pub by_finding: BTreeMap<Code, usize>,
    /// Node-level SIGKILLs that were errors (the node's OOM killer): the one OOM kind a
    /// cause code alone does not tell.
    pub node_oom: usize,
    /// By the incident strip's label of their cause (`OOMKilled (137)`), those it counts:
    /// ended, with a cause that is not plain information.
    #[serde(default)]
    pub by_label: BTreeMap<String, usize>,
    /// When the first and the last of them ended.
    pub from: Option<Time>,
    pub to: Option<Time>,
}

impl Trimmed {
    pub fn is_empty(&self) -> bool {
        self.executors == 0
    }

    pub(in crate::store) fn add(&mut self, e: &ExecutorRecord) {
        self.executors += 1;
        self.failures += usize::from(e.verdict.is_failure());
        *self
            .by_cause
            .entry(e.verdict.cause_code().to_owned())
            .or_default() += 1;
        for f in e.findings() {
            *self.by_finding.entry(f.code).or_default() += 1;
        }
        if e.verdict.cause().and_then(|f| f.code.oom(f.severity)) == Some(Oom::Node) {
            self.node_oom += 1;
        }
        if let Some(f) = e.verdict.cause()
            && e.state().is_final()
            && f.severity != Severity::Info
            && !e.is_missing()
        {
            *self
                .by_label
                .entry(super::cause_label(f.code, e.exit_code()))
                .or_default() += 1;
        }
        if let Some(at) = super::ended_at(e) {
            self.from = Some(self.from.map_or(at, |f| f.min(at)));
            self.to = Some(self.to.map_or(at, |t| t.max(at)));
        }
    }
}

/// Everything known about one executor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecutorRecord {
    pub id: i64,
    /// The pod as last seen (a tombstone's last status; rebuilt from the driver's reason
    /// when no pod was ever seen). Shared: copying a record for a writer never copies it.
    pub pod: Arc<ExecutorPod>,
    /// Spark's state for the pod as last seen. What to show is `verdict.state`.
    #[serde(alias = "state")]
    pub pod_state: ExecutorState,
    pub first_seen: Time,
    /// When the pod last changed (a relist of it unchanged is not a change).
    pub last_seen: Time,
    /// The resourceVersion at which the pod was last seen.
    pub last_rv: Option<u64>,
    pub history: VecDeque<Transition>,
    pub events: VecDeque<PodEvent>,
    /// The pod as first seen failed or succeeded: the ending Spark acted on (a later deletion
    /// does not change what Spark counted).
    #[serde(default)]
    pub ended: Option<Arc<ExecutorPod>>,
    /// The pod's deletion as first seen: when it was requested (timestamp − grace).
    #[serde(default)]
    pub first_deletion: Option<Deletion>,
    /// Set once the pod is gone: the tombstone.
    pub gone: Option<Gone>,
    /// Shared (interned): every executor of an app names the same container.
    pub spark_container: Text,
    /// The container log's tail, captured when it ended (bounded: see `MAX_LOGS`).
    #[serde(default)]
    pub log_tail: Option<Arc<Vec<String>>>,
    /// The driver's own view of this executor (its REST API), when read.
    #[serde(default)]
    pub driver: Option<Box<DriverSeen>>,
    /// spark-triage's own kill deleted this pod: when, by whom (recordings from before
    /// these were kept say `true`).
    #[serde(default, deserialize_with = "tool_kill")]
    pub killed_by_tool: Option<ToolKill>,
    /// The one answer every output shows, computed from all of the above whenever any of
    /// it changes (never per frame).
    #[serde(default)]
    pub verdict: Verdict,
}

impl ExecutorRecord {
    /// When its last state change happened and by whose clock (`seen` when it has none).
    pub fn last_change(&self, seen: Time) -> (Time, super::times::Clock) {
        self.history
            .back()
            .map_or((seen, super::times::Clock::Seen), |t| (t.at, t.clock))
    }

    /// Vanished with nothing to explain it (the verdict's `missing`).
    pub fn is_missing(&self) -> bool {
        self.verdict.missing
    }

    /// The verdict's state: the one Spark assigned or would assign.
    pub fn state(&self) -> ExecutorState {
        self.verdict.state
    }

    /// The verdict's findings, primary first.
    pub fn findings(&self) -> &[Finding] {
        &self.verdict.findings
    }

    /// The driver's view in one word: `active`, `removed`, `unknown` (not in its list), `-`.
    pub fn driver_word(&self) -> &'static str {
        match &self.driver {
            None => "-",
            Some(d) => match &d.exec {
                None => "unknown",
                Some(x) if x.active => "active",
                Some(_) => "removed",
            },
        }
    }

    /// The pod and the driver disagree (`driver-lost-pod`, `unregistered`, `zombie`).
    pub fn driver_disagrees(&self) -> bool {
        self.verdict.driver_disagrees()
    }

    /// The exit code of the ending the verdict rests on (observed, or from Spark's reason).
    pub fn exit_code(&self) -> Option<i32> {
        self.verdict.exit_code
    }

    /// The terminated reason of the ending the verdict rests on, else the Spark container's
    /// waiting reason.
    pub fn container_reason(&self) -> Option<&str> {
        self.verdict.container_reason.as_deref().or_else(|| {
            self.pod
                .container_status(&self.spark_container)
                .and_then(|c| c.waiting_reason())
        })
    }

    /// Why it waits, in one phrase (for pending executors).
    pub fn pending_reason(&self) -> Option<String> {
        if self.verdict.state != ExecutorState::Pending || self.verdict.ending.is_gone() {
            return None;
        }
        if let Some(f) = self
            .findings()
            .iter()
            .find(|f| f.code == Code::Unschedulable)
        {
            return primary_scheduling_reason(&f.scheduling)
                .or_else(|| Some("Unschedulable".to_owned()));
        }
        // Held by something other than the nodes: who holds it.
        let held = self
            .findings()
            .iter()
            .filter(|f| f.severity != diagnose::Severity::Info)
            .find_map(|f| match f.code {
                Code::SchedulingGated
                    if self.pod.scheduling_gates.iter().any(|g| g == KUEUE_GATE) =>
                {
                    Some("not admitted by Kueue")
                }
                Code::SchedulingGated => Some("scheduling gates"),
                Code::GangWaiting => Some("gang incomplete"),
                Code::QueueWaiting => Some("queue has no room"),
                Code::SchedulerSilent => Some("scheduler silent"),
                _ => None,
            });
        if let Some(h) = held {
            return Some(h.to_owned());
        }
        if let Some(r) = self.container_reason() {
            return Some(r.to_owned());
        }
        Some(
            if self.pod.node_name.is_some() {
                "ContainerCreating"
            } else {
                "Pending"
            }
            .to_owned(),
        )
    }
}

/// The blocking reason of a scheduling failure: nodes outside the pod's own node selection
/// (affinity) are not candidates, so among the others the reason most nodes gave.
fn primary_scheduling_reason(reasons: &[diagnose::SchedulingReason]) -> Option<String> {
    let candidates: Vec<_> = reasons
        .iter()
        .filter(|r| r.kind != SchedulingKind::NodeAffinity)
        .collect();
    let pool = if candidates.is_empty() {
        reasons.iter().collect()
    } else {
        candidates
    };
    pool.into_iter()
        .max_by_key(|r| r.nodes.unwrap_or(0))
        .map(|r| r.text.clone())
}
