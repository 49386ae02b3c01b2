//! What the ledger is told of each task's end.

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
