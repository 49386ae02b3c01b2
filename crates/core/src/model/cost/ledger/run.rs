//! What the ledger is told beside the stages: each task's end, an attempt's totals (where
//! each task's end is not read), and which removals are dynamic allocation's idle ones.

use super::{Ledger, SCALE_DOWN};
use crate::model::Time;

/// How a task ended, as the cost reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Succeeded, or ended any way that costs no attempt.
    Done,
    /// `ExecutorLostFailure`: its executor was lost under it.
    Lost,
    /// `FetchFailed`: whose block manager it could not fetch from.
    FetchFailed {
        /// The executor it could not fetch from.
        from: Fetched,
    },
}

/// Whose output a `FetchFailed` could not fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetched {
    /// An executor's block manager, named.
    Executor(i64),
    /// None named: the output was already unregistered (`MetadataFetchFailedException`).
    Unnamed,
    /// A block manager that is no executor (decommissioning's fallback storage): charged to
    /// nobody.
    Elsewhere,
}

/// One task's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRun {
    /// Its stage.
    pub stage: u32,
    /// Its stage's attempt.
    pub attempt: u32,
    /// Its executor, when a number (the driver's own tasks have none).
    pub executor: Option<i64>,
    /// Launch to finish, ms.
    pub ms: u64,
    /// When it finished.
    pub finished: Option<Time>,
    /// How it ended.
    pub outcome: Outcome,
}

/// A removal dynamic allocation made of an idle executor, by its reason: with it on, the
/// driver's kill ("Executor killed by driver."), or with decommissioning its scale-down
/// ("Executor decommission: spark scale down"; a node's or a preemption's decommission is
/// none).
pub fn idle_removal(reason: &str, dynamic_allocation: bool) -> bool {
    let reason = reason.trim();
    dynamic_allocation
        && (reason == "Executor killed by driver."
            || (reason.starts_with("Executor decommission") && reason.contains(SCALE_DOWN)))
}

impl Ledger {
    /// An attempt's tasks in one sum (a REST API's totals, where each task's end is not
    /// read).
    pub fn attempt_tasks(&mut self, (stage, attempt): (u32, u32), tasks: u32, task_ms: u64) {
        self.work_seen = true;
        if let Some(a) = self.attempts.get_mut(&(stage, attempt)) {
            a.tasks = a.tasks.saturating_add(tasks);
            a.task_ms = a.task_ms.saturating_add(task_ms);
        }
    }
}
