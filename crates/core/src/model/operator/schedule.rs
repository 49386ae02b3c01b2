//! A kubeflow `ScheduledSparkApplication`'s schedule and runs, and who keeps an operator's
//! finished driver pod (kubeflow's `timeToLiveSeconds`, Apache's retain policy).

use serde::{Deserialize, Serialize};

use super::{OperatorApp, OperatorKind, Text, Time};

/// What a `ScheduledSparkApplication` says of its schedule and its runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Schedule {
    /// `spec.schedule` (cron, or robfig's `@every 1h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<Text>,
    /// `spec.timeZone` (the operator's default: its own `Local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<Text>,
    /// `spec.concurrencyPolicy` (`Allow`, `Forbid`, `Replace`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Text>,
    /// `status.lastRun`: when the last run was started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<Time>,
    /// `status.nextRun`: when the next is due (left in the past while runs are skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run: Option<Time>,
    /// `status.lastRunName`: the last run's `SparkApplication`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_name: Option<Text>,
    /// `status.pastFailedRunNames` (at most [`MAX_RUNS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub past_failed: Vec<Text>,
    /// `status.pastSuccessfulRunNames` (at most [`MAX_RUNS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub past_succeeded: Vec<Text>,
    /// The last run's state, as its own `SparkApplication` says (filled by whoever holds
    /// that object too; `None` when it was not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_state: Option<Text>,
    /// When the last run ended, as its object says (filled likewise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_ended: Option<Time>,
    /// A run of it whose object exists (the last, else a past one): kubeflow starts none
    /// under an unset `concurrencyPolicy` while one does (filled likewise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_present: Option<Text>,
    /// When this copy was read (filled by whoever lists it): a skip is judged as of then,
    /// not as of now, so an object read seldom (a long poll interval, a list failing) is
    /// never taken for one the operator left behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<Time>,
}

/// The most past runs kept of a schedule.
pub const MAX_RUNS: usize = 8;

impl OperatorApp {
    /// Whether the operator keeps this object's finished driver pod, and for how long: `None`
    /// when it deletes it at the end (Apache's default `Never`), `Some(None)` when forever
    /// (kubeflow without `timeToLiveSeconds`, Apache's `Always`), `Some(Some(s))` for `s`
    /// seconds after the end.
    pub fn keeps_driver(&self, failed: bool) -> Option<Option<i64>> {
        match self.kind {
            OperatorKind::Kubeflow => Some(self.ttl_seconds),
            // An app that restarts has its resources released after every attempt, the
            // last included, whatever its retain policy.
            OperatorKind::Apache
                if self.restart.policy.as_deref().is_some_and(|p| p != "Never") =>
            {
                None
            }
            OperatorKind::Apache => match self.retain_policy.as_deref() {
                Some("Always") => Some(self.ttl_seconds),
                Some("OnFailure") if failed => Some(self.ttl_seconds),
                _ => None,
            },
            OperatorKind::KubeflowScheduled => None,
        }
    }
}

impl Schedule {
    /// Every run it names, the last first.
    pub fn runs(&self) -> impl Iterator<Item = &Text> {
        self.last_run_name
            .iter()
            .chain(&self.past_failed)
            .chain(&self.past_succeeded)
    }

    /// Whether the kubeflow operator counts the last run finished (`COMPLETED` or `FAILED`),
    /// when its state is known.
    pub fn last_run_finished(&self) -> Option<bool> {
        self.last_run_state
            .as_deref()
            .map(|s| matches!(s, "COMPLETED" | "FAILED"))
    }
}
