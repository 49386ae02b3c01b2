//! One pass over an app's scheduler events (stages submitted and completed, tasks ended,
//! executors added and removed), in Spark's order, into its [`AppCost`]. Memory grows with
//! the stages and executors at once, not with the tasks: each task end is added to its
//! attempt's and its executor's sums and forgotten; a stage attempt no loss touched is
//! forgotten when it completes, and an executor's sums when it is removed.

use std::collections::{HashMap, VecDeque};

use super::lanes::{Lane, MAX_LANES};
use super::{AppCost, Loss, Rerun, RerunKind, Waste};
use crate::model::Time;

/// The most stages whose last good attempt is remembered (for a map stage resubmitted with
/// no `FetchFailed`), executors held at once, and losses kept: past any, the figures are
/// marked partial.
const MAX_STAGES: usize = 200_000;
const MAX_EXECUTORS: usize = 100_000;
const MAX_LOSSES: usize = 10_000;
/// The most reruns one loss lists (their sums count them all).
const MAX_RERUNS: usize = 64;
/// Recent removals remembered for a `FetchFailed` that names no executor.
const RECENT: usize = 16;

/// How a task ended, as the cost reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Succeeded, or ended any way that costs no attempt.
    Done,
    /// `ExecutorLostFailure`: its executor was lost under it.
    Lost,
    /// `FetchFailed`: the block manager it could not fetch from (its executor), when named.
    FetchFailed {
        /// The executor it could not fetch from.
        from: Option<i64>,
    },
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

#[derive(Debug, Default)]
struct Attempt {
    submitted: Option<Time>,
    completed: Option<Time>,
    tasks: u32,
    task_ms: u64,
    /// The loss it is charged to: (executor, why).
    owner: Option<(i64, RerunKind)>,
}

#[derive(Debug)]
struct Executor {
    added: Time,
    cores: u32,
    last_end: Option<Time>,
    tasks: u32,
}

/// The pass (see the module's doc).
#[derive(Debug, Default)]
pub struct Ledger {
    attempts: HashMap<(u32, u32), Attempt>,
    parents: HashMap<u32, Vec<u32>>,
    /// Each stage's last attempt that completed without failing: when.
    last_ok: HashMap<u32, Time>,
    /// Stages to be resubmitted because a fetch failed: whose loss, and why.
    blame: HashMap<u32, (i64, RerunKind)>,
    executors: HashMap<i64, Executor>,
    losses: HashMap<i64, Loss>,
    /// The latest executors removed other than idle: (id, when).
    recent: VecDeque<(i64, Time)>,
    /// Attempts charged to a loss, in order (their figures are read at the end).
    charged: Vec<(i64, u32, u32)>,
    waste: Waste,
    unexplained: u32,
    partial: bool,
    first: Option<Time>,
    last: Option<Time>,
    lanes: Vec<Lane>,
    lane_of: HashMap<i64, usize>,
    lanes_left_out: u32,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    fn seen(&mut self, at: Time) {
        self.first = Some(self.first.map_or(at, |f| f.min(at)));
        self.last = Some(self.last.map_or(at, |l| l.max(at)));
    }

    /// `SparkListenerStageSubmitted`: a stage's attempt, its parents.
    pub fn stage_submitted(&mut self, stage: u32, attempt: u32, parents: &[u32], at: Time) {
        self.seen(at);
        if !parents.is_empty()
            && (self.parents.len() < MAX_STAGES || self.parents.contains_key(&stage))
        {
            self.parents.insert(stage, parents.to_vec());
        }
        let owner = if attempt == 0 {
            None
        } else if let Some(b) = self.blame.remove(&stage) {
            Some(b)
        } else if let Some(x) = self.missing_output(stage) {
            // Resubmitted with no fetch failure: its output went missing with an executor
            // removed since its last good attempt.
            Some((x, RerunKind::Recompute))
        } else {
            self.unexplained += 1;
            None
        };
        if let Some((x, _)) = owner {
            if self.loss(x).is_none() {
                return self.track(stage, attempt, at, None);
            }
            self.charged.push((x, stage, attempt));
        }
        self.track(stage, attempt, at, owner);
    }

    fn track(&mut self, stage: u32, attempt: u32, at: Time, owner: Option<(i64, RerunKind)>) {
        if self.attempts.len() >= MAX_STAGES && !self.attempts.contains_key(&(stage, attempt)) {
            self.partial = true;
            return;
        }
        self.attempts.insert(
            (stage, attempt),
            Attempt {
                submitted: Some(at),
                owner,
                ..Attempt::default()
            },
        );
    }

    /// The executor removed (not idle) after `stage`'s last good attempt, the latest.
    fn missing_output(&self, stage: u32) -> Option<i64> {
        let ok = self.last_ok.get(&stage)?;
        self.recent
            .iter()
            .rev()
            .find(|(_, at)| at >= ok)
            .map(|(x, _)| *x)
    }

    /// `SparkListenerStageCompleted`: `failed` when its `Failure Reason` is set.
    pub fn stage_completed(&mut self, stage: u32, attempt: u32, failed: bool, at: Time) {
        self.seen(at);
        if !failed && (self.last_ok.len() < MAX_STAGES || self.last_ok.contains_key(&stage)) {
            self.last_ok.insert(stage, at);
        }
        let key = (stage, attempt);
        match self.attempts.get_mut(&key) {
            Some(a) if a.owner.is_some() => a.completed = Some(at),
            // Nothing charged to it: its figures are not needed (late task ends of a
            // finished attempt still count toward the executors' busy time).
            Some(_) => {
                self.attempts.remove(&key);
            }
            None => {}
        }
    }

    /// `SparkListenerTaskEnd`.
    pub fn task_end(&mut self, t: TaskRun) {
        if let Some(at) = t.finished {
            self.seen(at);
        }
        self.waste.busy_ms += t.ms;
        if let Some(a) = self.attempts.get_mut(&(t.stage, t.attempt)) {
            a.tasks += 1;
            a.task_ms += t.ms;
        }
        if let (Some(x), Some(end)) = (t.executor, t.finished)
            && let Some(i) = self.lane_of.get(&x)
        {
            let from = end - chrono::TimeDelta::milliseconds(i64::try_from(t.ms).unwrap_or(0));
            self.lanes[*i].ran(from, end);
        }
        if let Some(x) = t.executor
            && let Some(e) = self.executors.get_mut(&x)
        {
            e.tasks += 1;
            e.last_end = e.last_end.max(t.finished);
        }
        match t.outcome {
            Outcome::Done => {}
            Outcome::Lost => {
                if let Some(x) = t.executor
                    && let Some(l) = self.loss(x)
                {
                    l.tasks_lost += 1;
                    l.task_ms_lost += t.ms;
                }
            }
            Outcome::FetchFailed { from } => {
                // Named, or (the output already unregistered) the latest executor lost.
                let Some(x) = from.or_else(|| self.recent.back().map(|(x, _)| *x)) else {
                    return;
                };
                let Some(l) = self.loss(x) else { return };
                l.fetch_failed += 1;
                self.blame.entry(t.stage).or_insert((x, RerunKind::Retry));
                for p in self.parents.get(&t.stage).cloned().unwrap_or_default() {
                    self.blame.entry(p).or_insert((x, RerunKind::Recompute));
                }
            }
        }
    }

    /// The loss of executor `x`, made at its first mention (none past [`MAX_LOSSES`]).
    fn loss(&mut self, x: i64) -> Option<&mut Loss> {
        if self.losses.len() >= MAX_LOSSES && !self.losses.contains_key(&x) {
            self.partial = true;
            return None;
        }
        Some(self.losses.entry(x).or_insert_with(|| Loss {
            executor: x,
            ..Loss::default()
        }))
    }

    /// `SparkListenerExecutorAdded`.
    pub fn executor_added(&mut self, id: i64, cores: Option<u32>, at: Time) {
        self.seen(at);
        if self.executors.len() >= MAX_EXECUTORS && !self.executors.contains_key(&id) {
            self.partial = true;
            return;
        }
        self.waste.executors += 1;
        if self.lanes.len() < MAX_LANES {
            // An id registered again gets a new lane (the old one stays drawn).
            self.lane_of.insert(id, self.lanes.len());
            self.lanes.push(Lane::new(id, at));
        } else {
            self.lanes_left_out += 1;
        }
        self.executors.insert(
            id,
            Executor {
                added: at,
                cores: cores.unwrap_or(1).max(1),
                last_end: None,
                tasks: 0,
            },
        );
    }

    /// `SparkListenerExecutorRemoved`: `idle` when the driver removed it as dynamic
    /// allocation does an idle one (the caller reads the reason and the configuration).
    pub fn executor_removed(&mut self, id: i64, idle: bool, at: Time) {
        self.seen(at);
        let Some(e) = self.executors.remove(&id) else {
            return;
        };
        if let Some(i) = self.lane_of.get(&id) {
            self.lanes[*i].removed = Some(at);
            self.lanes[*i].idle_removed = idle;
        }
        self.settle(&e, at);
        let lost_tasks = self.losses.get(&id).is_some_and(|l| l.tasks_lost > 0);
        if idle && !lost_tasks {
            self.waste.idle_removed += 1;
            let from = e.last_end.unwrap_or(e.added).max(e.added);
            self.waste.idle_tail_ms += span(from, at);
        } else {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back((id, at));
            if let Some(l) = self.losses.get_mut(&id) {
                l.removed_at = Some(at);
            } else if self.losses.len() < MAX_LOSSES {
                // Known now, so a fetch failure or a resubmission can be charged to it;
                // dropped at the end if nothing was.
                self.losses.insert(
                    id,
                    Loss {
                        executor: id,
                        removed_at: Some(at),
                        ..Loss::default()
                    },
                );
            }
        }
    }

    /// An executor's time and use, into the app's.
    fn settle(&mut self, e: &Executor, until: Time) {
        let paid = span(e.added, until) * u64::from(e.cores);
        self.waste.allocated_core_ms += paid;
        if e.tasks == 0 {
            self.waste.never_used += 1;
            self.waste.never_used_core_ms += paid;
        }
    }

    /// Dynamic allocation's idle timeout, as the configuration says (none: it is off).
    pub fn idle_timeout(&mut self, ms: Option<u64>) {
        self.waste.idle_timeout_ms = ms;
    }

    /// The figures, as of `end` (the app's end, or the last event read); `shuffle_kept_by`
    /// as the configuration says.
    pub fn finish(
        mut self,
        start: Option<Time>,
        end: Option<Time>,
        shuffle_kept_by: Option<String>,
    ) -> AppCost {
        let end = end.or(self.last);
        let start = start.or(self.first);
        if let Some(end) = end {
            let live: Vec<Executor> = self.executors.drain().map(|(_, e)| e).collect();
            for e in &live {
                self.settle(e, end);
            }
        }
        for (x, stage, attempt) in std::mem::take(&mut self.charged) {
            let Some(a) = self.attempts.get(&(stage, attempt)) else {
                continue;
            };
            let (Some(submitted), Some((_, kind))) = (a.submitted, a.owner) else {
                continue;
            };
            let Some(l) = self.losses.get_mut(&x) else {
                continue;
            };
            l.rerun_tasks += a.tasks;
            l.rerun_task_ms += a.task_ms;
            if l.reruns.len() < MAX_RERUNS {
                l.reruns.push(Rerun {
                    stage,
                    attempt,
                    kind,
                    tasks: a.tasks,
                    task_ms: a.task_ms,
                    submitted,
                    completed: a.completed,
                });
            }
        }
        let mut losses: Vec<Loss> = self
            .losses
            .into_values()
            .filter(|l| {
                l.tasks_lost > 0 || l.fetch_failed > 0 || l.rerun_tasks > 0 || !l.reruns.is_empty()
            })
            .collect();
        for l in &mut losses {
            l.wall_ms = union_ms(&l.reruns, end);
        }
        losses.sort_by(|a, b| {
            (b.wall_ms, b.rerun_task_ms + b.task_ms_lost, a.executor).cmp(&(
                a.wall_ms,
                a.rerun_task_ms + a.task_ms_lost,
                b.executor,
            ))
        });
        AppCost {
            run_ms: match (start, end) {
                (Some(s), Some(e)) => span(s, e),
                _ => 0,
            },
            losses,
            unexplained_reruns: self.unexplained,
            waste: self.waste,
            shuffle_kept_by,
            partial: self.partial,
            started: start,
            lanes: self.lanes,
            lanes_left_out: self.lanes_left_out,
        }
    }
}

fn span(from: Time, to: Time) -> u64 {
    u64::try_from((to - from).num_milliseconds()).unwrap_or(0)
}

/// The union of the attempts' spans (an attempt not completed runs to `end`), ms.
fn union_ms(reruns: &[Rerun], end: Option<Time>) -> u64 {
    let mut spans: Vec<(Time, Time)> = reruns
        .iter()
        .filter_map(|r| Some((r.submitted, r.completed.or(end)?)))
        .filter(|(a, b)| b > a)
        .collect();
    spans.sort();
    let mut total = 0;
    let mut cur: Option<(Time, Time)> = None;
    for (a, b) in spans {
        match &mut cur {
            Some((_, e)) if a <= *e => *e = (*e).max(b),
            _ => {
                if let Some((s, e)) = cur {
                    total += span(s, e);
                }
                cur = Some((a, b));
            }
        }
    }
    if let Some((s, e)) = cur {
        total += span(s, e);
    }
    total
}
