//! An app's cost (what its executor losses cost it, what it paid for and left idle) as
//! every output says it: one view for `report`, `status`, MCP and the TUI, so their
//! numbers and lines are the same.

use serde::Serialize;
use spark_triage_core::model::cost::pods::MemoryUse;
use spark_triage_core::model::cost::{AppCost, CostFrom, Loss, Rerun, Saving, ms};
use spark_triage_core::model::fmt_time;

use crate::store::AppRecord;

/// An app's cost (stable; fields may be added, never renamed).
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct CostView {
    /// Where the figures come from: `event-log` (the run's stages and tasks), or
    /// `driver-api` (the running driver's stages and failed tasks: no idle figures).
    pub from: &'static str,
    /// The run the figures cover, seconds.
    pub run_seconds: f64,
    /// Wall-clock time spent redoing work the losses cost, seconds, and its share of the run.
    pub recompute_seconds: f64,
    pub recompute_percent: u32,
    /// "+6m12s recompute, 37 % idle": what the incident strip says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    /// Each loss that cost work, the costliest first.
    pub losses: Vec<LossView>,
    /// Stage attempts added that no executor loss explains.
    pub unexplained_reruns: u32,
    pub waste: WasteView,
    /// What keeps a lost executor's shuffle output, as the configuration says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shuffle_kept_by: Option<String>,
    /// The one setting that would have saved the most executor time (an estimate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saving: Option<SavingView>,
    /// Bounds reached: the figures count what was kept.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// Read from a log still being written: the figures so far.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_progress: bool,
    /// The waste's lines (`Waste::lines`: the TUI says the same).
    #[serde(skip)]
    #[schemars(skip)]
    waste_lines: Vec<String>,
}

/// One executor's loss.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct LossView {
    pub executor: i64,
    /// Its ending's cause as the strip says it ("OOMKilled (137)"), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The line every output says.
    pub line: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<String>,
    pub tasks_lost: u32,
    pub task_seconds_lost: f64,
    pub fetch_failed: u32,
    pub rerun_tasks: u32,
    pub rerun_task_seconds: f64,
    pub wall_seconds: f64,
    pub reruns: Vec<Rerun>,
}

/// What the executors were paid for and did not use.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct WasteView {
    pub executors: u32,
    /// Executor time from registration to removal, times cores.
    pub allocated_core_seconds: f64,
    /// Task run time summed.
    pub busy_task_seconds: f64,
    /// The share of the paid core time no task used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_percent: Option<u32>,
    /// Dynamic allocation's tail: idle executors' time from their last task to their removal.
    pub idle_tail_executor_seconds: f64,
    pub idle_removed: u32,
    /// Executors that ran no task, and their paid time.
    pub never_used: u32,
    pub never_used_core_seconds: f64,
    /// `spark.dynamicAllocation.executorIdleTimeout`, with dynamic allocation on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<f64>,
    /// Executors shuffle tracking held idle past the timeout (holding shuffle output
    /// nothing else kept), and their time past it, executor-seconds.
    pub held_by_shuffle: u32,
    pub held_by_shuffle_executor_seconds: f64,
}

/// What the app's pods cost beside its event log's figures (stable; fields may be
/// added, never renamed): live, with no event log.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct PodCostView {
    /// Executor pods deleted before any container ran, and their time pending, seconds.
    pub never_ran: u32,
    pub never_ran_pending_seconds: f64,
    /// The executors' memory limits against the peaks their driver measured (no setting
    /// is suggested).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryUse>,
    /// The lines every output says.
    pub lines: Vec<String>,
}

impl PodCostView {
    /// The app's pods' cost, when they say any.
    pub fn of(app: &AppRecord) -> Option<Self> {
        let c = app.pod_cost();
        (!c.is_empty()).then(|| Self {
            never_ran: c.never_ran,
            never_ran_pending_seconds: secs(c.never_ran_pending_ms),
            memory: c.memory.clone(),
            lines: c.lines(),
        })
    }
}

/// The setting that would have saved the most: an estimate, said so.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct SavingView {
    pub setting: String,
    /// Executor core time it would have saved: an estimate.
    pub estimated_core_seconds: f64,
    pub basis: String,
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

impl CostView {
    /// The app's cost, when its event log gave one.
    pub fn of(app: &AppRecord) -> Option<Self> {
        let cost = app.cost.as_deref()?;
        let causes = app.loss_labels();
        Some(Self::from_cost(cost, &causes))
    }

    fn from_cost(cost: &AppCost, causes: &[(i64, String)]) -> Self {
        let wall = cost.wall_ms();
        let w = &cost.waste;
        Self {
            from: cost.from.as_str(),
            run_seconds: secs(cost.run_ms),
            recompute_seconds: secs(wall),
            recompute_percent: (wall * 100).checked_div(cost.run_ms).unwrap_or(0) as u32,
            headline: cost.headline(),
            losses: cost
                .losses
                .iter()
                .map(|l| LossView::of(l, causes, cost.run_ms))
                .collect(),
            unexplained_reruns: cost.unexplained_reruns,
            waste: WasteView {
                executors: w.executors,
                allocated_core_seconds: secs(w.allocated_core_ms),
                busy_task_seconds: secs(w.busy_ms),
                idle_percent: w.idle_percent(),
                idle_tail_executor_seconds: secs(w.idle_tail_ms),
                idle_removed: w.idle_removed,
                never_used: w.never_used,
                never_used_core_seconds: secs(w.never_used_core_ms),
                idle_timeout_seconds: w.idle_timeout_ms.map(secs),
                held_by_shuffle: w.held_by_shuffle,
                held_by_shuffle_executor_seconds: secs(w.held_by_shuffle_ms),
            },
            shuffle_kept_by: cost.shuffle_kept_by.clone(),
            saving: cost.saving().map(|s: Saving| SavingView {
                setting: s.setting,
                estimated_core_seconds: secs(s.saved_core_ms),
                basis: s.basis,
            }),
            partial: cost.partial,
            in_progress: cost.in_progress,
            waste_lines: w.lines(),
        }
    }

    /// The lines a report says under its cost heading.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.from == CostFrom::DriverApi.as_str() {
            out.push(
                "figures as the driver's REST API last told them (its stages and their failed \
                 tasks, read every 5 minutes while it runs): its event log says more, idle time \
                 included"
                    .to_owned(),
            );
        } else if self.in_progress {
            out.push(
                "figures so far: the app's event log is still being written (read again every \
                 5 minutes live)"
                    .to_owned(),
            );
        }
        out.extend(self.losses.iter().map(|l| l.line.clone()));
        if self.unexplained_reruns > 0 {
            out.push(format!(
                "{} stage attempts added that no executor loss explains (a stage failed by its \
                 own tasks, or a fetch from a block manager that is no executor)",
                self.unexplained_reruns
            ));
        }
        if let Some(by) = &self.shuffle_kept_by {
            out.push(format!(
                "shuffle output outlives a lost executor through {by}"
            ));
        }
        out.extend(self.waste_lines.iter().cloned());
        if let Some(s) = &self.saving {
            out.push(format!(
                "estimate: {} would have saved ≈ {} of executor core time ({})",
                s.setting,
                ms((s.estimated_core_seconds * 1000.0) as u64),
                s.basis
            ));
        }
        if self.partial {
            out.push("partial: the run had more stages or executors than the figures keep".into());
        }
        out
    }
}

impl LossView {
    fn of(l: &Loss, causes: &[(i64, String)], run_ms: u64) -> Self {
        let cause = causes
            .iter()
            .find(|(x, _)| *x == l.executor)
            .map(|(_, c)| c.clone());
        Self {
            executor: l.executor,
            line: l.line(cause.as_deref(), run_ms),
            cause,
            removed_at: l.removed_at.as_ref().map(fmt_time),
            tasks_lost: l.tasks_lost,
            task_seconds_lost: secs(l.task_ms_lost),
            fetch_failed: l.fetch_failed,
            rerun_tasks: l.rerun_tasks,
            rerun_task_seconds: secs(l.rerun_task_ms),
            wall_seconds: secs(l.wall_ms),
            reruns: l.reruns.clone(),
        }
    }
}
