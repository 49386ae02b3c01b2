//! The loss chain from a running driver's REST API, for an app whose event log is not read: its stage attempts (`stages`), the failed tasks of
//! each attempt that had any (`stages/{id}/{attempt}/taskList?status=FAILED`), and its
//! executors' removals (`allexecutors`), into the same [`Ledger`] in time order.
//!
//! What the API does not give, the figures leave out rather than guess: the stages' parents
//! (a map stage resubmitted is charged to the executor removed since its last good attempt,
//! as the ledger does when a log has no fetch failure before it), each successful task
//! (an attempt's tasks and run time are its totals: `executorRunTime`, which leaves out
//! deserialization and scheduling, so task time reads a little lower than a log's; a lost
//! task's own run is added, being in no total), and the
//! executors' idle time (no waste is told).

use serde::Deserialize;

use super::ledger::{Fetched, Ledger, Outcome, TaskRun, idle_removal};
use std::collections::BTreeMap;

use super::conf::Conf;
use super::{AppCost, CostFrom};
use crate::model::Time;
use crate::model::driver::{DriverExecutor, parse_spark_time};

/// One stage attempt, as `stages` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StageAttempt {
    /// The stage, and the attempt's number.
    pub stage_id: u32,
    /// The attempt (0 the first).
    pub attempt_id: u32,
    /// `ACTIVE`, `COMPLETE`, `FAILED`, `PENDING`, `SKIPPED`.
    pub status: String,
    /// Its tasks that completed.
    #[serde(default)]
    pub num_complete_tasks: u32,
    /// Its tasks that failed.
    #[serde(default)]
    pub num_failed_tasks: u32,
    /// Its tasks that were killed.
    #[serde(default)]
    pub num_killed_tasks: u32,
    /// Its tasks' run time, ms.
    #[serde(default)]
    pub executor_run_time: u64,
    /// When it was submitted (none: pending or skipped).
    #[serde(default)]
    pub submission_time: Option<String>,
    /// When it completed or failed.
    #[serde(default)]
    pub completion_time: Option<String>,
}

/// One failed task, as `taskList?status=FAILED` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedTask {
    /// The executor it ran on.
    #[serde(default)]
    pub executor_id: Option<String>,
    /// When it was launched.
    #[serde(default)]
    pub launch_time: Option<String>,
    /// Its run, ms.
    #[serde(default)]
    pub duration: Option<u64>,
    /// Its failure reason's error string (`FetchFailed(BlockManagerId(…`), its head only
    /// (a stack trace follows).
    #[serde(default, deserialize_with = "head")]
    pub error_message: Option<String>,
}

/// The most of a failed task's message kept: its kind and whose block manager.
const MESSAGE_HEAD: usize = 240;

fn head<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    Ok(s.map(|mut s| {
        if s.len() > MESSAGE_HEAD {
            let mut cut = MESSAGE_HEAD;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
        }
        s
    }))
}

/// Parses a `stages` answer (unknown fields ignored).
pub fn parse_stages(body: &str) -> Result<Vec<StageAttempt>, String> {
    serde_json::from_str(body).map_err(|e| format!("not Spark's stages ({e})"))
}

/// Parses a `taskList` answer.
pub fn parse_failed_tasks(body: &str) -> Result<Vec<FailedTask>, String> {
    serde_json::from_str(body).map_err(|e| format!("not Spark's task list ({e})"))
}

impl StageAttempt {
    /// Whether its failed tasks are worth asking for (a fetch failure or a lost executor
    /// is among them only then).
    pub fn had_failures(&self) -> bool {
        self.num_failed_tasks > 0
    }
}

/// How a failed task ended, from its error message (the reason's `toErrorString`).
fn outcome(message: &str) -> Outcome {
    let m = message.trim_start();
    if let Some(rest) = m.strip_prefix("FetchFailed(") {
        let from = if rest.starts_with("null") {
            Fetched::Unnamed
        } else {
            rest.strip_prefix("BlockManagerId(")
                .and_then(|r| r.split(',').next())
                .and_then(|id| id.trim().parse().ok())
                .map_or(Fetched::Elsewhere, Fetched::Executor)
        };
        return Outcome::FetchFailed { from };
    }
    if m.starts_with("ExecutorLostFailure") || m.starts_with("Resubmitted") {
        return Outcome::Lost;
    }
    Outcome::Done
}

/// What happened, in the order the ledger is told at one instant: an executor's removal
/// before what it caused, a failed attempt's tasks before its end, and an end before the
/// submissions that follow it.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Added(i64),
    Removed(i64, bool),
    Task(usize),
    Completed {
        stage: u32,
        attempt: u32,
        failed: bool,
    },
    Submitted {
        stage: u32,
        attempt: u32,
    },
}

/// The app's loss chain from its REST API's answers: `failed` the failed tasks of each
/// stage attempt read, as (stage, attempt, tasks); `settings` its Spark properties (whether
/// dynamic allocation's removals are idle ones, what keeps shuffle output). `None` when no
/// stage was read. An attempt whose failed tasks were not all read makes it partial.
pub fn cost_of(
    stages: &[StageAttempt],
    failed: &[(u32, u32, Vec<FailedTask>)],
    executors: &[DriverExecutor],
    settings: Option<&BTreeMap<String, String>>,
    now: Time,
) -> Option<AppCost> {
    let dynamic_allocation = settings.is_some_and(|p| Conf(p).dynamic_allocation());
    let mut steps: Vec<(Time, Step)> = Vec::new();
    for e in executors {
        if let Some(at) = e.add_time {
            steps.push((at, Step::Added(e.id)));
        }
        if let Some(at) = e.remove_time {
            let idle = e
                .remove_reason
                .as_deref()
                .is_some_and(|r| idle_removal(r, dynamic_allocation));
            steps.push((at, Step::Removed(e.id, idle)));
        }
    }
    let when = |s: &Option<String>| s.as_deref().and_then(parse_spark_time);
    let mut partial = false;
    for s in stages {
        let Some(at) = when(&s.submission_time) else {
            continue; // pending or skipped: never ran
        };
        let (stage, attempt) = (s.stage_id, s.attempt_id);
        steps.push((at, Step::Submitted { stage, attempt }));
        if let Some(done) = when(&s.completion_time) {
            let failed = s.status == "FAILED";
            steps.push((
                done,
                Step::Completed {
                    stage,
                    attempt,
                    failed,
                },
            ));
        }
        let read = failed
            .iter()
            .find(|(st, a, _)| (*st, *a) == (stage, attempt))
            .map_or(0, |(_, _, t)| t.len());
        partial |= s.had_failures() && read < s.num_failed_tasks as usize;
    }
    let mut runs: Vec<TaskRun> = Vec::new();
    for (stage, attempt, tasks) in failed {
        // A failed attempt's tasks end by its failure: the API's duration of a failed task
        // runs on to when its listener heard of it.
        let ended = stages
            .iter()
            .find(|s| s.stage_id == *stage && s.attempt_id == *attempt)
            .and_then(|s| when(&s.completion_time));
        for t in tasks {
            let Some(launched) = when(&t.launch_time) else {
                continue;
            };
            let ms = t.duration.unwrap_or(0).min(MAX_TASK_MS);
            let Some(mut at) =
                launched.checked_add_signed(chrono::TimeDelta::milliseconds(ms as i64))
            else {
                continue;
            };
            if let Some(e) = ended {
                at = at.min(e.max(launched));
            }
            let outcome = outcome(t.error_message.as_deref().unwrap_or(""));
            steps.push((at, Step::Task(runs.len())));
            runs.push(TaskRun {
                stage: *stage,
                attempt: *attempt,
                executor: t.executor_id.as_deref().and_then(|x| x.parse().ok()),
                // A lost task's run is in no total; another failed task's is in its
                // attempt's `executorRunTime` already.
                ms: if outcome == Outcome::Lost { ms } else { 0 },
                finished: Some(at),
                outcome,
            });
        }
    }
    if !steps
        .iter()
        .any(|(_, s)| matches!(s, Step::Submitted { .. }))
    {
        return None;
    }
    steps.sort();
    let mut ledger = Ledger::new();
    for (at, step) in steps {
        match step {
            Step::Added(x) => ledger.executor_added(x, None, at),
            Step::Submitted { stage, attempt } => {
                ledger.stage_submitted(stage, attempt, &[], at);
                if let Some(s) = stages
                    .iter()
                    .find(|s| s.stage_id == stage && s.attempt_id == attempt)
                {
                    // Its tasks' run time in one sum, and its tasks that did not fail.
                    ledger.attempt_tasks(
                        (stage, attempt),
                        s.num_complete_tasks.saturating_add(s.num_killed_tasks),
                        s.executor_run_time,
                    );
                }
            }
            Step::Task(i) => ledger.task_end(runs[i]),
            // An idle one is never blamed (shuffle tracking keeps one that holds output).
            Step::Removed(x, idle) => ledger.executor_removed(x, idle, at),
            Step::Completed {
                stage,
                attempt,
                failed,
            } => ledger.stage_completed(stage, attempt, failed, at),
        }
    }
    let kept_by = settings.and_then(|p| Conf(p).shuffle_kept_by());
    let mut cost = ledger.finish(None, Some(now), kept_by, false);
    // Executors' time and idleness are not read from here.
    cost.waste = Default::default();
    cost.lanes.clear();
    cost.lanes_left_out = 0;
    cost.from = CostFrom::DriverApi;
    cost.partial |= partial;
    Some(cost)
}

/// The longest run a failed task is taken to have had (a week): more is a malformed answer.
const MAX_TASK_MS: u64 = 7 * 24 * 3600 * 1000;

#[cfg(test)]
mod tests;
