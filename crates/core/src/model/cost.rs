//! What an application's executor losses cost it, and what it paid for and left idle: the
//! figures ([`AppCost`]) and the one pass that makes them from Spark's scheduler events, in
//! the order Spark posts them ([`ledger::Ledger`]).
//!
//! The shuffle-loss chain, as Spark's `DAGScheduler` runs it: an executor lost with no
//! external shuffle service (and no shuffle migration) takes its map outputs with it; the
//! tasks running on it fail with `ExecutorLostFailure` (rerun within their stage attempt);
//! a stage reading its output fails with `FetchFailed` (naming the executor's block manager,
//! or none when the output was already unregistered: `MetadataFetchFailedException`), and
//! the map stage and the failed stage are resubmitted as new attempts. A map stage whose
//! output is missing when a child is submitted is resubmitted with no `FetchFailed` at all.
//! Each attempt added is charged to the executor whose loss caused it.
//!
//! Ref: `DAGScheduler.handleTaskCompletion` (FetchFailed: `failedStages += failedStage,
//! mapStage`, resubmitted after `RESUBMIT_TIMEOUT`), `removeExecutorAndUnregisterOutputs`,
//! `ExecutorAllocationManager` (idle executors killed: "Executor killed by driver.").

pub mod conf;
pub mod lanes;
pub mod ledger;
pub mod pods;
pub mod rest;
mod spans;

use serde::{Deserialize, Serialize};

use super::Time;
use crate::text::human_duration;

/// What an application's executor losses cost it, and its executors' idle time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AppCost {
    /// The span the figures cover (the app's start to its end, or to the last event read), ms.
    pub run_ms: u64,
    /// The wall-clock time of every stage attempt losses added, overlapping ones once, ms.
    #[serde(default)]
    pub recompute_wall_ms: u64,
    /// Read from a log still being written, or a running driver (the app runs): the
    /// figures so far.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_progress: bool,
    /// Where the figures were read.
    #[serde(default, skip_serializing_if = "CostFrom::is_event_log")]
    pub from: CostFrom,
    /// Executor losses that cost the app work, the costliest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub losses: Vec<Loss>,
    /// Stage attempts added that no executor loss explains (a stage failed by its own
    /// tasks' errors; a fetch failure from a block manager that is no executor). A fetch
    /// failure from an executor still registered is charged to it: Spark drops its output
    /// all the same.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unexplained_reruns: u32,
    /// What its executors were paid for and did not use.
    pub waste: Waste,
    /// Why a lost executor's shuffle output outlives it (an external shuffle service,
    /// decommissioning with shuffle migration, a remote shuffle manager), from the app's
    /// configuration: its losses then cost only their running tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shuffle_kept_by: Option<String>,
    /// Bounds reached (stages or executors past what one app's figures keep): the figures
    /// count what was kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// When the run began (the app's start, else its first event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Time>,
    /// The executors over time, for a picture (the first [`lanes::MAX_LANES`] to register).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lanes: Vec<lanes::Lane>,
    /// Executors registered past the lanes kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lanes_left_out: u32,
}

/// Where an app's cost was read.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum CostFrom {
    /// Its event log: every stage, task and executor.
    #[default]
    EventLog,
    /// Its running driver's REST API: the stages, their failed tasks and
    /// the executors' removals; no idle figures.
    DriverApi,
}

impl CostFrom {
    /// Whether it is the default (left out of recordings).
    pub fn is_event_log(&self) -> bool {
        *self == Self::EventLog
    }

    /// As outputs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EventLog => "event-log",
            Self::DriverApi => "driver-api",
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One executor's loss, and the work it cost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Loss {
    /// The executor's id.
    pub executor: i64,
    /// When the driver removed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<Time>,
    /// Tasks running on it when it was lost (`ExecutorLostFailure`), and their run time, ms.
    pub tasks_lost: u32,
    /// Their run time, ms.
    pub task_ms_lost: u64,
    /// Later tasks that failed fetching its shuffle output (`FetchFailed`).
    pub fetch_failed: u32,
    /// The stage attempts added because of it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reruns: Vec<Rerun>,
    /// How many stage attempts it added (all of them; `reruns` lists the first 64).
    #[serde(default)]
    pub attempts_added: u32,
    /// The tasks of those attempts, and their run time, ms.
    pub rerun_tasks: u32,
    /// Their run time, ms.
    pub rerun_task_ms: u64,
    /// The wall-clock time the app spent in those attempts (their spans' union), ms.
    pub wall_ms: u64,
}

/// A stage attempt added because of a loss.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rerun {
    /// The stage, and its attempt's number.
    pub stage: u32,
    /// The attempt (1 for the first added).
    pub attempt: u32,
    /// Recomputed (its output lost) or retried (it failed fetching).
    pub kind: RerunKind,
    /// Its tasks, and their run time, ms.
    pub tasks: u32,
    /// Its tasks' run time, ms.
    pub task_ms: u64,
    /// When it was submitted.
    pub submitted: Time,
    /// When it completed (none: it did not, within what was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<Time>,
}

/// Why an attempt was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RerunKind {
    /// The stage's shuffle output was lost with the executor: recomputed.
    Recompute,
    /// The stage failed fetching the lost output: retried.
    Retry,
}

/// What the app's executors were paid for and did not use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Waste {
    /// Executors registered.
    pub executors: u32,
    /// Executor time from registration to removal (or the app's end), times each one's
    /// cores: what was paid for, core-ms.
    pub allocated_core_ms: u64,
    /// Task run time, summed over every task (launch to finish), ms.
    pub busy_ms: u64,
    /// Dynamic allocation's tail: executors the driver removed after they idled, from
    /// their last task's end (or registration) to the removal, executor-ms.
    pub idle_tail_ms: u64,
    /// The same times each executor's cores, core-ms.
    #[serde(default)]
    pub idle_tail_core_ms: u64,
    /// How many executors the driver removed so.
    pub idle_removed: u32,
    /// Executors that registered and ran no task.
    pub never_used: u32,
    /// The most executors registered at once.
    #[serde(default)]
    pub peak: u32,
    /// The most executors that ran a task registered at once (none when not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_used: Option<u32>,
    /// Their paid time, core-ms.
    #[serde(default)]
    pub never_used_core_ms: u64,
    /// `spark.dynamicAllocation.executorIdleTimeout` (Spark's default 60 s), with dynamic
    /// allocation on, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// Executors shuffle tracking held: idle past the idle timeout while holding shuffle
    /// output nothing else kept (dynamic allocation on, no external shuffle service or
    /// migration), removed later or still there at the app's end (past `minExecutors`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held_by_shuffle: u32,
    /// Their time past the timeout, executor-ms (the removal's own latency included).
    #[serde(default, skip_serializing_if = "is_zero_ms")]
    pub held_by_shuffle_ms: u64,
    /// The same times each executor's cores, core-ms.
    #[serde(default, skip_serializing_if = "is_zero_ms")]
    pub held_by_shuffle_core_ms: u64,
}

fn is_zero_ms(n: &u64) -> bool {
    *n == 0
}

/// The one setting that would have saved the most, and about how much (an estimate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Saving {
    /// `--conf key=value`.
    pub setting: String,
    /// Executor time it would have saved, core-ms (an estimate).
    pub saved_core_ms: u64,
    /// How the estimate is made.
    pub basis: String,
}

impl Waste {
    /// The share of the paid core time no task used, in percent (none before any is paid).
    pub fn idle_percent(&self) -> Option<u32> {
        (self.allocated_core_ms > 0).then(|| {
            let busy = self.busy_ms.min(self.allocated_core_ms);
            (100 - busy * 100 / self.allocated_core_ms) as u32
        })
    }

    /// What was paid for and not used, as every output says it (report, status, MCP and
    /// the TUI's timeline): the paid core time against the busy, dynamic allocation's tail,
    /// and what shuffle tracking held.
    pub fn lines(&self) -> Vec<String> {
        if self.executors == 0 {
            return Vec::new();
        }
        let mut line = format!(
            "{} executors paid for {} of core time, busy {} ({} idle)",
            self.executors,
            ms(self.allocated_core_ms),
            ms(self.busy_ms),
            self.idle_percent()
                .map_or_else(|| "none".to_owned(), |p| format!("{p} %"))
        );
        if self.idle_removed > 0 {
            line.push_str(&format!(
                "; dynamic allocation's tail: {} of idle executors before {} removals",
                ms(self.idle_tail_ms),
                self.idle_removed
            ));
            if let Some(t) = self.idle_timeout_ms {
                line.push_str(&format!(" (executorIdleTimeout {})", ms(t)));
            }
        }
        if self.never_used > 0 {
            line.push_str(&format!("; {} never ran a task", self.never_used));
        }
        let mut out = vec![line];
        if self.held_by_shuffle > 0 {
            out.push(format!(
                "shuffle tracking held {} idle {} {} past the idle timeout in all (their \
                 shuffle output, or cached blocks, was still referenced: \
                 spark.dynamicAllocation.shuffleTracking.timeout bounds it, at the risk of \
                 recomputing that output)",
                self.held_by_shuffle,
                if self.held_by_shuffle == 1 {
                    "executor"
                } else {
                    "executors"
                },
                ms(self.held_by_shuffle_ms),
            ));
        }
        out
    }
}

/// A span of milliseconds for people ([`human_duration`]; under a second, `<1s`).
pub fn ms(ms: u64) -> String {
    if (1..1000).contains(&ms) {
        return "<1s".into();
    }
    human_duration(chrono::Duration::milliseconds(
        i64::try_from(ms).unwrap_or(i64::MAX),
    ))
}

/// The idle timeout an estimate suggests: half the one set, not under 15 s.
const LEAST_TIMEOUT_MS: u64 = 15_000;

impl AppCost {
    /// The wall-clock time all losses cost (their attempts' union), ms.
    pub fn wall_ms(&self) -> u64 {
        self.recompute_wall_ms
    }

    /// Whether the figures say anything (an app with no executor read says nothing).
    pub fn is_empty(&self) -> bool {
        self.losses.is_empty() && self.waste.executors == 0 && self.unexplained_reruns == 0
    }

    /// The one setting that would have saved the most executor time, estimated:
    /// - a shorter `executorIdleTimeout` (half, not under 15 s): each idle removal earlier
    ///   by the difference, at most its idle time;
    /// - a lower `maxExecutors` (dynamic allocation): the executors that ran no task, not
    ///   paid for.
    ///
    /// None when neither saves a minute.
    pub fn saving(&self) -> Option<Saving> {
        let w = &self.waste;
        let mut best: Option<Saving> = None;
        if let Some(t) = w.idle_timeout_ms.filter(|t| *t > LEAST_TIMEOUT_MS) {
            let shorter = (t / 2).max(LEAST_TIMEOUT_MS);
            // Each idle removal sooner by the difference, at most its idle time; in core
            // time at the idle executors' cores. Those shuffle tracking held would not have
            // gone sooner (those held to the end are not removals: the estimate errs low).
            let sooner = u64::from(w.idle_removed.saturating_sub(w.held_by_shuffle))
                .saturating_mul(t - shorter);
            let saved = if w.idle_tail_ms == 0 {
                0
            } else {
                let share = (sooner as f64 / w.idle_tail_ms as f64).min(1.0);
                (w.idle_tail_core_ms as f64 * share) as u64
            };
            best = Some(Saving {
                setting: format!(
                    "--conf spark.dynamicAllocation.executorIdleTimeout={}s",
                    shorter / 1000
                ),
                saved_core_ms: saved,
                basis: format!(
                    "{} idle executors removed {} sooner each, at most their idle time",
                    w.idle_removed.saturating_sub(w.held_by_shuffle),
                    ms(t - shorter)
                ),
            });
        }
        if let Some(used) = w
            .peak_used
            .filter(|u| w.idle_timeout_ms.is_some() && w.never_used > 0 && *u > 0 && *u < w.peak)
        {
            let saved = w.never_used_core_ms;
            if best.as_ref().is_none_or(|b| saved > b.saved_core_ms) {
                best = Some(Saving {
                    setting: format!("--conf spark.dynamicAllocation.maxExecutors={used}"),
                    saved_core_ms: saved,
                    basis: format!(
                        "{} executors that ran no task not requested: at most {used} that ran \
                         tasks were there at once, of {} at the peak",
                        w.never_used, w.peak
                    ),
                });
            }
        }
        best.filter(|b| b.saved_core_ms >= 60_000)
    }

    /// The one line a strip has room for: "+6m12s recompute, 37 % idle".
    pub fn headline(&self) -> Option<String> {
        let mut parts = Vec::new();
        let wall = self.wall_ms();
        if wall > 0 {
            parts.push(format!("+{} recompute", ms(wall)));
        } else if let Some(tasks) =
            Some(self.losses.iter().map(|l| l.tasks_lost).sum::<u32>()).filter(|n| *n > 0)
        {
            parts.push(format!("{tasks} tasks lost"));
        }
        if let Some(idle) = self.waste.idle_percent() {
            parts.push(format!("{idle} % idle"));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

impl Loss {
    /// "executor 7 OOMKilled (137) lost the shuffle output of stage 3: 48 tasks of stage 3
    /// rerun, stage 4 retried once, ≈ 6m12s of the app's 41m", with its cause as the caller
    /// knows it (the executor's verdict).
    pub fn line(&self, cause: Option<&str>, run_ms: u64) -> String {
        let who = match cause {
            Some(c) => format!("executor {}, {c},", self.executor),
            None => format!("executor {}", self.executor),
        };
        let recomputed: Vec<&Rerun> = self
            .reruns
            .iter()
            .filter(|r| r.kind == RerunKind::Recompute)
            .collect();
        let mut stages: Vec<u32> = recomputed.iter().map(|r| r.stage).collect();
        stages.sort_unstable();
        stages.dedup();
        let mut said = Vec::new();
        let head = if stages.is_empty() {
            format!("{who} lost")
        } else {
            format!("{who} lost the shuffle output of {}", stage_list(&stages))
        };
        for s in &stages {
            let n: u32 = recomputed
                .iter()
                .filter(|r| r.stage == *s)
                .map(|r| r.tasks)
                .sum();
            said.push(format!("{n} tasks of stage {s} rerun"));
        }
        let mut retried: Vec<u32> = self
            .reruns
            .iter()
            .filter(|r| r.kind == RerunKind::Retry)
            .map(|r| r.stage)
            .collect();
        retried.sort_unstable();
        let mut i = 0;
        while i < retried.len() {
            let s = retried[i];
            let n = retried[i..].iter().take_while(|x| **x == s).count();
            said.push(format!("stage {s} retried {}", times(n)));
            i += n;
        }
        if self.tasks_lost > 0 {
            said.push(format!(
                "{} running {} lost ({} of work)",
                self.tasks_lost,
                if self.tasks_lost == 1 {
                    "task"
                } else {
                    "tasks"
                },
                ms(self.task_ms_lost)
            ));
        }
        let mut line = head;
        if stages.is_empty() && said.is_empty() {
            line.push_str(" nothing the app had to redo");
            return line;
        }
        if stages.is_empty() {
            line = format!("{who} cost");
        }
        line.push_str(": ");
        line.push_str(&said.join(", "));
        if self.wall_ms > 0 {
            line.push_str(&format!(", ≈ {}", ms(self.wall_ms)));
            if run_ms > 0 {
                line.push_str(&format!(" of the app's {}", ms(run_ms)));
            }
        }
        line
    }
}

fn times(n: usize) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

fn stage_list(stages: &[u32]) -> String {
    let s: Vec<String> = stages.iter().map(u32::to_string).collect();
    match s.len() {
        1 => format!("stage {}", s[0]),
        _ => format!("stages {}", s.join(", ")),
    }
}

#[cfg(test)]
mod tests;
