//! One pass over an app's scheduler events (stages submitted and completed, tasks ended,
//! executors added and removed), in Spark's order, into its [`AppCost`]. Memory grows with
//! the stages and executors at once, not with the tasks: each task end is added to its
//! attempt's and its executor's sums and forgotten; a stage attempt no loss touched is
//! forgotten when it completes, and an executor's sums when it is removed.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::lanes::{Lane, MAX_LANES};
use super::spans::{peak_of, span, union_ms};
use super::{AppCost, CostFrom, Loss, Rerun, RerunKind, Waste};
use crate::model::Time;

mod blame;
mod held;
mod run;
use held::IdleEnd;
pub use run::{Fetched, Outcome, TaskRun, idle_removal};

/// The most stages whose last good attempt is remembered (for a map stage resubmitted with
/// no `FetchFailed`), executors held at once, and losses kept: past any, the figures are
/// marked partial.
const MAX_STAGES: usize = 200_000;
const MAX_EXECUTORS: usize = 100_000;
const MAX_LOSSES: usize = 10_000;
/// The most reruns one loss lists (their sums count them all).
const MAX_RERUNS: usize = 64;
/// Recent removals remembered for a `FetchFailed` that names no executor.
const RECENT: usize = 64;

#[derive(Debug, Default)]
struct Attempt {
    submitted: Option<Time>,
    completed: Option<Time>,
    tasks: u32,
    task_ms: u64,
    /// The loss it is charged to: (executor, why).
    owner: Option<(i64, RerunKind)>,
}

#[derive(Debug, Default)]
struct StageSeen {
    parents: Vec<u32>,
    latest: u32,
    /// When its latest attempt was submitted (its parents' output was whole then).
    submitted: Option<Time>,
    last_ok: Option<Time>,
}

#[derive(Debug, Clone, Copy)]
struct Blame {
    /// None: a fetch from something that is no executor, or whose loss is not known (its
    /// resubmission is then unexplained, never guessed).
    executor: Option<i64>,
    kind: RerunKind,
    /// The stage whose fetch failed, and its attempt.
    round: (u32, u32),
    /// An executor named by the fetch (not guessed): a guess never replaces it.
    named: bool,
    /// When: a blame no resubmission took within [`BLAME_KEPT`] is let go (an aborted
    /// stage's is never taken).
    at: Time,
}

/// How long a fetch failure's blame waits for its resubmission (Spark resubmits within a
/// second or so: `RESUBMIT_TIMEOUT`, 200 ms).
const BLAME_KEPT: chrono::TimeDelta = chrono::TimeDelta::minutes(10);
/// Dynamic allocation's scale-down, as a decommission logs it.
pub const SCALE_DOWN: &str = "spark scale down";

#[derive(Debug)]
struct Executor {
    added: Time,
    cores: u32,
    last_end: Option<Time>,
    tasks: u32,
    /// The latest stages it ran a task of to the end (at most [`STAGES_PER_EXECUTOR`]):
    /// the map stages among them wrote shuffle output on it.
    stages: Vec<u32>,
}

/// The most stages one executor's shuffle output is looked for in (its latest).
const STAGES_PER_EXECUTOR: usize = 16;

/// The pass (see the module's doc).
#[derive(Debug, Default)]
pub struct Ledger {
    attempts: HashMap<(u32, u32), Attempt>,
    /// Per stage (ids only grow: past [`MAX_STAGES`] the lowest are let go): its parents,
    /// its latest attempt submitted, when its last good attempt completed.
    stages: BTreeMap<u32, StageSeen>,
    /// Stages to be resubmitted because a fetch failed: whose loss, why, and the failed
    /// stage whose fetch said so.
    blame: HashMap<u32, Blame>,
    executors: HashMap<i64, Executor>,
    losses: HashMap<i64, Loss>,
    /// Executors removed, and when (at most [`MAX_EXECUTORS`], the oldest let go).
    removed: HashMap<i64, Time>,
    removed_order: VecDeque<i64>,
    /// The latest executors removed: (id, when).
    recent: VecDeque<(i64, Time)>,
    /// `spark.task.cpus`: the cores one task holds.
    task_cpus: u32,
    /// The most executors registered at once.
    peak: u32,
    /// Each executor's registration, removal (or the end) and whether it ran a task (at
    /// most [`MAX_EXECUTORS`]): the peak of those that ran, at the end.
    spans: Vec<(Time, Time, bool)>,
    spans_cut: bool,
    /// A stage or a task was read.
    work_seen: bool,
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
    /// Executors idle at their end (at most [`MAX_EXECUTORS`]).
    idle_ends: Vec<IdleEnd>,
    /// `spark.dynamicAllocation.minExecutors`.
    min_executors: u32,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self {
            task_cpus: 1,
            ..Self::default()
        }
    }

    /// `spark.task.cpus` (1 unless set): a task's run time holds that many cores.
    pub fn task_cpus(&mut self, cpus: u32) {
        self.task_cpus = cpus.max(1);
    }

    /// Stage `stage`'s record, made at its first mention (past [`MAX_STAGES`], the lowest
    /// id is let go: stage ids only grow).
    fn stage(&mut self, stage: u32) -> &mut StageSeen {
        if !self.stages.contains_key(&stage) && self.stages.len() >= MAX_STAGES {
            self.stages.pop_first();
            self.partial = true;
        }
        self.stages.entry(stage).or_default()
    }

    fn seen(&mut self, at: Time) {
        self.first = Some(self.first.map_or(at, |f| f.min(at)));
        self.last = Some(self.last.map_or(at, |l| l.max(at)));
    }

    /// `SparkListenerStageSubmitted`: a stage's attempt, its parents.
    pub fn stage_submitted(&mut self, stage: u32, attempt: u32, parents: &[u32], at: Time) {
        self.work_seen = true;
        self.seen(at);
        let seen = self.stage(stage);
        if !parents.is_empty() {
            seen.parents = parents.to_vec();
        }
        if attempt >= seen.latest {
            seen.latest = attempt;
            seen.submitted = Some(at);
        }
        if self.blame.len() > 1_000 {
            self.blame.retain(|_, b| at - b.at <= BLAME_KEPT);
        }
        let blamed = self
            .blame
            .remove(&stage)
            .filter(|b| at - b.at <= BLAME_KEPT);
        let owner = if attempt == 0 {
            None
        } else if let Some(b) = blamed {
            if b.kind == RerunKind::Retry {
                // The failed stage again: its parents that were not resubmitted needed no
                // recompute after all.
                self.blame.retain(|_, o| o.round.0 != stage);
            }
            match b.executor {
                Some(x) => Some((x, b.kind)),
                None => {
                    self.unexplained += 1;
                    None
                }
            }
        } else if let Some(x) = self.retry_awaiting(stage, at) {
            // Resubmitted while a later stage whose parents are not known (the REST API's
            // answers) awaits its retry: Spark resubmits the missing parents first.
            Some((x, RerunKind::Recompute))
        } else if let Some(x) = self.missing_output(stage) {
            // Resubmitted with no fetch failure: its output went missing with an executor
            // removed since its last good attempt.
            Some((x, RerunKind::Recompute))
        } else {
            self.unexplained += 1;
            None
        };
        let owner = owner.filter(|(x, _)| self.loss(*x).is_some());
        if self.track(stage, attempt, at, owner)
            && let Some((x, _)) = owner
        {
            self.charged.push((x, stage, attempt));
            if let Some(l) = self.losses.get_mut(&x) {
                l.attempts_added = l.attempts_added.saturating_add(1);
            }
        }
    }

    /// Keeps an attempt's figures; false past [`MAX_STAGES`] attempts held.
    fn track(
        &mut self,
        stage: u32,
        attempt: u32,
        at: Time,
        owner: Option<(i64, RerunKind)>,
    ) -> bool {
        if self.attempts.len() >= MAX_STAGES && !self.attempts.contains_key(&(stage, attempt)) {
            self.partial = true;
            return false;
        }
        self.attempts.insert(
            (stage, attempt),
            Attempt {
                submitted: Some(at),
                owner,
                ..Attempt::default()
            },
        );
        true
    }

    /// `SparkListenerStageCompleted`: `failed` when its `Failure Reason` is set.
    pub fn stage_completed(&mut self, stage: u32, attempt: u32, failed: bool, at: Time) {
        self.seen(at);
        if !failed {
            self.stage(stage).last_ok = Some(at);
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

    /// Whether any stage or task was read: without them (a History Server's executor list)
    /// there is no cost to tell.
    pub fn saw_work(&self) -> bool {
        self.work_seen
    }

    /// `SparkListenerTaskEnd`.
    pub fn task_end(&mut self, t: TaskRun) {
        self.work_seen = true;
        if let Some(at) = t.finished {
            self.seen(at);
        }
        self.waste.busy_ms = self
            .waste
            .busy_ms
            .saturating_add(t.ms.saturating_mul(u64::from(self.task_cpus)));
        if let Some(a) = self.attempts.get_mut(&(t.stage, t.attempt)) {
            a.tasks = a.tasks.saturating_add(1);
            a.task_ms = a.task_ms.saturating_add(t.ms);
        }
        if let (Some(x), Some(end)) = (t.executor, t.finished)
            && let Some(i) = self.lane_of.get(&x)
            && let Some(from) = end.checked_sub_signed(chrono::TimeDelta::milliseconds(
                i64::try_from(t.ms)
                    .unwrap_or(i64::MAX / 2)
                    .min(i64::MAX / 2),
            ))
        {
            self.lanes[*i].ran(from, end);
        }
        if let Some(x) = t.executor
            && let Some(e) = self.executors.get_mut(&x)
        {
            e.tasks = e.tasks.saturating_add(1);
            e.last_end = e.last_end.max(t.finished);
            if t.outcome == Outcome::Done && !e.stages.contains(&t.stage) {
                if e.stages.len() == STAGES_PER_EXECUTOR {
                    e.stages.remove(0);
                }
                e.stages.push(t.stage);
            }
        }
        match t.outcome {
            Outcome::Done => {}
            Outcome::Lost => {
                if let Some(x) = t.executor
                    && let Some(l) = self.loss(x)
                {
                    l.tasks_lost = l.tasks_lost.saturating_add(1);
                    l.task_ms_lost = l.task_ms_lost.saturating_add(t.ms);
                }
            }
            Outcome::FetchFailed { from } => {
                if let Some(at) = t.finished.or(self.last) {
                    self.fetch_failed(t.stage, t.attempt, from, at);
                }
            }
        }
    }

    /// A fetch failed in `stage`'s attempt: the executor whose output it lost is charged
    /// the stage's retry and its parents' recompute (Spark drops that executor's output
    /// even when it stays registered).
    fn fetch_failed(&mut self, stage: u32, attempt: u32, from: Fetched, at: Time) {
        // A straggler of an attempt already superseded: Spark ignores it too.
        if self.stages.get(&stage).is_some_and(|s| s.latest > attempt) {
            return;
        }
        let (x, named) = match from {
            Fetched::Executor(x) => (Some(x), true),
            Fetched::Unnamed => (self.unnamed_loss(stage), false),
            Fetched::Elsewhere => (None, false),
        };
        // Within one round, the executor a fetch named stands: Spark unregistered its
        // output at that failure, so the round's later failures name none.
        if let Some(b) = self.blame.get(&stage)
            && b.round == (stage, attempt)
            && b.named
            && !named
        {
            if let Some(l) = b.executor.and_then(|x| self.losses.get_mut(&x)) {
                l.fetch_failed = l.fetch_failed.saturating_add(1);
            }
            return;
        }
        let x = match x {
            Some(x) => self.loss(x).map(|l| {
                l.fetch_failed = l.fetch_failed.saturating_add(1);
                l.executor
            }),
            None => None,
        };
        let blame = |kind| Blame {
            executor: x,
            kind,
            round: (stage, attempt),
            named,
            at,
        };
        self.blame.insert(stage, blame(RerunKind::Retry));
        let parents = self
            .stages
            .get(&stage)
            .map(|s| s.parents.clone())
            .unwrap_or_default();
        for p in parents {
            self.blame.insert(p, blame(RerunKind::Recompute));
        }
    }

    /// The loss of executor `x`, made at its first mention (none past [`MAX_LOSSES`]).
    fn loss(&mut self, x: i64) -> Option<&mut Loss> {
        if self.losses.len() >= MAX_LOSSES && !self.losses.contains_key(&x) {
            self.partial = true;
            return None;
        }
        let removed_at = self.removed.get(&x).copied();
        Some(self.losses.entry(x).or_insert_with(|| Loss {
            executor: x,
            removed_at,
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
                stages: Vec::new(),
            },
        );
        self.peak = self
            .peak
            .max(u32::try_from(self.executors.len()).unwrap_or(u32::MAX));
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
        self.settle(&e, at, true);
        let lost_tasks = self.losses.get(&id).is_some_and(|l| l.tasks_lost > 0);
        if idle && !lost_tasks {
            self.waste.idle_removed += 1;
            let from = e.last_end.unwrap_or(e.added).max(e.added);
            self.idle_end(&e, at, false);
            self.waste.idle_tail_ms = self.waste.idle_tail_ms.saturating_add(span(from, at));
            self.waste.idle_tail_core_ms = self
                .waste
                .idle_tail_core_ms
                .saturating_add(span(from, at).saturating_mul(u64::from(e.cores)));
        }
        // An idle removal took no shuffle output: shuffle tracking keeps an executor that
        // holds some, an external shuffle service keeps it.
        if !idle || lost_tasks {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back((id, at));
        }
        if self.removed_order.len() >= MAX_EXECUTORS
            && let Some(old) = self.removed_order.pop_front()
        {
            self.removed.remove(&old);
        }
        self.removed.insert(id, at);
        self.removed_order.push_back(id);
        if let Some(l) = self.losses.get_mut(&id) {
            l.removed_at = Some(at);
        }
    }

    /// An executor's time and use, into the app's.
    /// `over`: it is over (an executor still running at the end of a log being written has
    /// not had its chance to run a task).
    fn settle(&mut self, e: &Executor, until: Time, over: bool) {
        let paid = span(e.added, until).saturating_mul(u64::from(e.cores));
        self.waste.allocated_core_ms = self.waste.allocated_core_ms.saturating_add(paid);
        if e.tasks == 0 && over {
            self.waste.never_used += 1;
            self.waste.never_used_core_ms = self.waste.never_used_core_ms.saturating_add(paid);
        }
        if self.spans.len() < MAX_EXECUTORS {
            self.spans.push((e.added, until, e.tasks > 0));
        } else {
            self.spans_cut = true;
        }
    }

    /// Dynamic allocation's idle timeout, as the configuration says (none: it is off).
    pub fn idle_timeout(&mut self, ms: Option<u64>) {
        self.waste.idle_timeout_ms = ms;
    }

    /// The figures, as of `end` (the app's end, or the last event read); `shuffle_kept_by`
    /// as the configuration says; `ended`: the app's end is in the log (else it is being
    /// written, and its executors still running are not counted as never used).
    pub fn finish(
        mut self,
        start: Option<Time>,
        end: Option<Time>,
        shuffle_kept_by: Option<String>,
        ended: bool,
    ) -> AppCost {
        let end = end.or(self.last);
        let start = start.or(self.first);
        if let Some(end) = end {
            let live: Vec<Executor> = self.executors.drain().map(|(_, e)| e).collect();
            for e in &live {
                self.settle(e, end, ended);
                if ended {
                    self.idle_end(e, end, true);
                }
            }
        }
        self.held_by_shuffle(shuffle_kept_by.is_some());
        let mut spans: HashMap<i64, Vec<(Time, Time)>> = HashMap::new();
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
            if let Some(to) = a.completed.or(end) {
                spans.entry(x).or_default().push((submitted, to));
            }
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
            .filter(|l| l.tasks_lost > 0 || l.fetch_failed > 0 || l.attempts_added > 0)
            .collect();
        for l in &mut losses {
            l.wall_ms = union_ms(spans.get(&l.executor).cloned().unwrap_or_default());
        }
        losses.sort_by(|a, b| {
            (b.wall_ms, b.rerun_task_ms + b.task_ms_lost, a.executor).cmp(&(
                a.wall_ms,
                a.rerun_task_ms + a.task_ms_lost,
                b.executor,
            ))
        });
        self.waste.peak = self.peak;
        self.waste.peak_used = (!self.spans_cut).then(|| peak_of(&self.spans));
        AppCost {
            run_ms: match (start, end) {
                (Some(s), Some(e)) => span(s, e),
                _ => 0,
            },
            // Overlapping losses' attempts once.
            recompute_wall_ms: union_ms(spans.into_values().flatten().collect()),
            losses,
            unexplained_reruns: self.unexplained,
            waste: self.waste,
            shuffle_kept_by,
            partial: self.partial,
            in_progress: !ended,
            from: CostFrom::EventLog,
            started: start,
            lanes: self.lanes,
            lanes_left_out: self.lanes_left_out,
        }
    }
}
