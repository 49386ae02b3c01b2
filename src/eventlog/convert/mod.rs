//! An event log's events into the [`SourceEvent`]s a live view would have recorded of the
//! same run: the app's start (its name, Spark version, user), its configuration (the
//! environment's Spark properties, redacted by the ConfigMap's rules), the driver's
//! executor list as it changed ([`DriverView::Logged`]: added with its host and pod name;
//! removed with Spark's reason; its tasks' ends), and the app's end with its exit code.
//!
//! The executor list is given as `allexecutors` would have been read at the moment of a
//! change, at most once a second of the run, less often as the views grow, and for an app
//! so large that they would cost more than [`MAX_VIEW_ENTRIES`] (or [`MAX_VIEW_BYTES`]) in
//! all, at its end only, and when the executors held fill up (a view then lets the removed
//! ones go). A view names the executors running and those changed since the view before: a
//! removed executor is named once (the store keeps an executor an event log removed when a
//! later view does not name it), held [`REMOVED_KEPT`] of the run more for the task ends
//! Spark posts after a removal (named again if they change it), then let go. So views and
//! memory grow with the executors at once, not with all the executors of the run; past
//! [`MAX_EXECUTORS`] or [`MAX_HELD_BYTES`] held, those added meanwhile are skipped and said.

mod apply;
mod cost;
mod merge;

use std::collections::{BTreeMap, BTreeSet};

pub(crate) use merge::{Merged, merge};
use spark_triage_core::diagnose::memory::SettingsFrom;
use spark_triage_core::model::cost::ledger::Ledger;
use spark_triage_core::model::{DriverExecutor, Time};
use spark_triage_core::text;

use crate::redact;
use crate::source::{DriverView, SourceEvent};

/// A converted log's header names its source so (where a recording names its API server).
pub(crate) const SERVER: &str = "event log ";

/// The most executors one log's conversion holds at once (active, or removed within
/// [`REMOVED_KEPT`]): past it, those added meanwhile are skipped and counted (a hostile log
/// cannot grow the memory without bound). The store keeps 25,000 executors whole; the
/// largest real apps run a few thousand at once.
const MAX_EXECUTORS: usize = 25_000;

/// What all of one log's views cost together: their entries, and for each view the store's
/// pass over the executors it already holds (as many as the log has given, to
/// [`MAX_EXECUTORS`]).
const MAX_VIEW_ENTRIES: usize = 2_000_000;

/// How long of the run a removed executor stays in the views (task ends Spark posts after
/// the removal, `ExecutorLostFailure`, still count on it).
const REMOVED_KEPT: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// What one log's conversion keeps at most.
#[derive(Debug, Clone, Copy)]
struct Caps {
    executors: usize,
    view_entries: usize,
    view_bytes: usize,
    held_bytes: usize,
}

/// What all of one log's views hold together, in bytes (see [`weight`]): the views are in
/// memory until the store has taken them.
const MAX_VIEW_BYTES: usize = 32 << 20;

/// About what an entry of a view holds, its text included.
fn weight(e: &DriverExecutor) -> usize {
    std::mem::size_of::<DriverExecutor>()
        + [&e.host_port, &e.pod_name, &e.remove_reason]
            .into_iter()
            .map(|s| s.as_ref().map_or(0, String::len))
            .sum::<usize>()
        + e.removed_again.iter().map(String::len).sum::<usize>()
}

/// One log, converted.
#[derive(Debug)]
pub(crate) struct Converted {
    pub started_at: Option<Time>,
    pub namespace: String,
    pub events: Vec<SourceEvent>,
    pub damaged: Vec<String>,
}

/// The most of a removal reason kept: Spark's own are under 2 KiB; the hold, each view and
/// the store's record hold a copy. A later removal's text, kept beside it, has less.
const MAX_REASON: usize = 2 * 1024;
const MAX_REASON_AGAIN: usize = 256;

/// What the executors held at once may take in all (see [`weight`]): past it, as past
/// [`MAX_EXECUTORS`], those added meanwhile are skipped.
const MAX_HELD_BYTES: usize = 32 << 20;

/// Skipped executors are remembered one by one (as ranges) up to this many; past it they
/// are counted only (a later removal of one is then taken as an executor of its own).
const MAX_SKIPPED_KEPT: u64 = 100_000;

fn capped(reason: String) -> String {
    capped_to(reason, MAX_REASON)
}

fn capped_to(reason: String, most: usize) -> String {
    match text::clipped(&reason, most) {
        std::borrow::Cow::Borrowed(_) => reason,
        clipped => clipped.into_owned(),
    }
}

/// An executor as registered, before the log says more of it.
fn registered(id: i64, pod_name: Option<String>) -> DriverExecutor {
    DriverExecutor {
        id,
        active: true,
        host_port: None,
        pod_name,
        add_time: None,
        remove_time: None,
        remove_reason: None,
        removed_again: Vec::new(),
        active_tasks: 0,
        failed_tasks: 0,
        completed_tasks: 0,
        tasks_lost: 0,
        max_memory: None,
        peak: Default::default(),
    }
}

/// Builds one log's events as its lines come.
#[derive(Debug)]
pub(crate) struct Converter {
    /// The log's name, for what is said about it.
    name: String,
    version: Option<String>,
    app_id: Option<String>,
    app_name: Option<String>,
    attempt: Option<String>,
    user: Option<String>,
    start: Option<Time>,
    end: Option<(Time, Option<i32>)>,
    properties: Option<BTreeMap<String, String>>,
    /// Where the properties come from (an event log, or the History Server's environment).
    pub(crate) settings_from: SettingsFrom,
    /// The app's identity is settled and its start said.
    begun: Option<(String, String)>,
    executors: BTreeMap<i64, DriverExecutor>,
    excluded: BTreeSet<(i64, Time)>,
    /// The bounds on what is kept ([`MAX_EXECUTORS`], [`MAX_VIEW_ENTRIES`]).
    caps: Caps,
    /// Executors skipped: added while [`MAX_EXECUTORS`] (or [`MAX_HELD_BYTES`]) were held;
    /// how many, the lowest and highest id.
    skipped: rangemap::RangeInclusiveSet<i64>,
    skipped_n: u64,
    skipped_ids: Option<(i64, i64)>,
    /// What the executors held take ([`weight`]).
    held_bytes: usize,
    /// Why the first was skipped, said at the end.
    skipped_why: Option<String>,
    /// Executors removed and out of the views ([`REMOVED_KEPT`]): nothing more of them is
    /// taken (a second removal's text would read as a new one).
    shed: rangemap::RangeInclusiveSet<i64>,
    /// Removed executors a view has given as they stand: the next views leave them out (the
    /// store keeps an executor an event log removed when a later view does not name it)
    /// until they change again (a task end Spark posts after the removal).
    clean: std::collections::HashSet<i64>,
    /// How many are shed; how many held are removed; when a full hold last forced a view.
    shed_count: usize,
    removed_held: usize,
    last_forced: Option<Time>,
    /// The newest change not yet in a view, and the last view's time.
    pending: Option<Time>,
    last_view: Option<Time>,
    interval: chrono::TimeDelta,
    /// Entries in all views so far, and where the views slow down next.
    entries: usize,
    bytes: usize,
    /// Quarters of a budget passed: each halves how often views come.
    slowdowns: usize,
    first_at: Option<Time>,
    last_at: Option<Time>,
    out: Vec<SourceEvent>,
    damaged: Vec<String>,
    /// The run's stages, tasks and executors, into what its losses cost.
    ledger: Ledger,
    /// `spark.task.cpus` as given to the ledger (at the first task's end).
    ledger_cpus: Option<u32>,
}

impl Converter {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            version: None,
            app_id: None,
            app_name: None,
            attempt: None,
            user: None,
            start: None,
            end: None,
            properties: None,
            settings_from: SettingsFrom::EventLog,
            begun: None,
            executors: BTreeMap::new(),
            excluded: BTreeSet::new(),
            skipped: Default::default(),
            skipped_n: 0,
            skipped_ids: None,
            held_bytes: 0,
            skipped_why: None,
            shed: Default::default(),
            clean: Default::default(),
            shed_count: 0,
            removed_held: 0,
            last_forced: None,
            pending: None,
            last_view: None,
            interval: chrono::TimeDelta::seconds(1),
            entries: 0,
            bytes: 0,
            slowdowns: 0,
            caps: Caps {
                executors: MAX_EXECUTORS,
                view_entries: MAX_VIEW_ENTRIES,
                view_bytes: MAX_VIEW_BYTES,
                held_bytes: MAX_HELD_BYTES,
            },
            first_at: None,
            last_at: None,
            out: Vec::new(),
            damaged: Vec::new(),
            ledger: Ledger::new(),
            ledger_cpus: None,
        }
    }

    /// Something about the log itself (damage, a cut, compaction), said as the recording's
    /// damage is.
    pub fn damage(&mut self, what: String) {
        self.damaged.push(format!("{}: {what}", self.name));
    }

    fn seen(&mut self, at: Time) {
        self.first_at = Some(self.first_at.map_or(at, |f| f.min(at)));
        self.last_at = Some(self.last_at.map_or(at, |l| l.max(at)));
    }

    fn property(&self, key: &str) -> Option<&str> {
        self.properties
            .as_ref()
            .and_then(|p| p.get(key))
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The app's namespace and id, settled at its first use: its start and configuration
    /// come first in every log Spark writes.
    fn key(&mut self, at: Time) -> (String, String) {
        if let Some(k) = &self.begun {
            return k.clone();
        }
        // Spark's own default namespace when the app named none.
        let ns = self
            .property("spark.kubernetes.namespace")
            .unwrap_or("default")
            .to_owned();
        let id = self
            .app_id
            .clone()
            .or_else(|| self.property("spark.app.id").map(str::to_owned))
            .unwrap_or_else(|| self.name.clone());
        let key = (ns, id);
        self.begun = Some(key.clone());
        if self.app_name.is_none() {
            self.app_name = self.property("spark.app.name").map(str::to_owned);
        }
        let mut text = match &self.start {
            Some(_) => "application started".to_owned(),
            None => "the event log has no application start".to_owned(),
        };
        let about: Vec<String> = [
            self.version.as_ref().map(|v| format!("Spark {v}")),
            self.user.as_ref().map(|u| format!("user {u}")),
            self.attempt.as_ref().map(|a| format!("attempt {a}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !about.is_empty() {
            text.push_str(&format!(" ({})", about.join(", ")));
        }
        text.push_str(&format!("; read from its event log {}", self.name));
        self.out.push(SourceEvent::AppNoted {
            namespace: key.0.clone(),
            app_id: key.1.clone(),
            app_name: self.app_name.clone(),
            text,
            end: false,
            unfinished: false,
            spark_version: self.version.clone(),
            at: self.start.unwrap_or(at),
        });
        self.configure(at);
        key
    }

    /// The driver's configuration, once both the identity and the properties are known.
    fn configure(&mut self, at: Time) {
        let (Some((ns, id)), Some(props)) = (&self.begun, &self.properties) else {
            return;
        };
        let mut properties = props.clone();
        redact::properties(&mut properties);
        self.out.push(SourceEvent::DriverConfig {
            namespace: ns.clone(),
            app_id: id.clone(),
            properties,
            from: Some(self.settings_from),
            at: self.start.unwrap_or(at),
        });
    }

    /// The executor list as it stands, stamped `at`.
    fn view(&mut self, at: Time) {
        let Some((ns, id)) = self.begun.clone() else {
            return;
        };
        let executors: Vec<DriverExecutor> = self
            .executors
            .values()
            .filter(|e| e.active || !self.clean.contains(&e.id))
            .cloned()
            .collect();
        self.clean
            .extend(executors.iter().filter(|e| !e.active).map(|e| e.id));
        // The store's pass: over every executor given so far, to the most it keeps.
        let given = (self.shed_count + executors.len()).min(self.caps.executors);
        self.entries += executors.len() + given;
        self.bytes += executors.iter().map(weight).sum::<usize>();
        // Removed long enough ago: out of the views from now on (this one names them).
        let shed: Vec<i64> = self
            .executors
            .values()
            .filter(|e| !e.active && self.clean.contains(&e.id))
            .filter(|e| e.remove_time.is_some_and(|r| r + REMOVED_KEPT <= at))
            .map(|e| e.id)
            .collect();
        self.shed_count += shed.len();
        self.removed_held -= shed.len();
        for id in shed {
            if let Some(e) = self.executors.remove(&id) {
                self.held_bytes = self.held_bytes.saturating_sub(weight(&e));
            }
            self.clean.remove(&id);
            self.shed.insert(id..=id);
        }
        self.out.push(SourceEvent::DriverExecutors {
            namespace: ns,
            app_id: id,
            view: DriverView::Logged { executors },
            at,
        });
        self.last_view = Some(at);
        self.pending = None;
        // Past a quarter of a budget, and each time as much again, views come half as
        // often; past the whole of one, only the last one is given.
        let quarters = (self.entries * 4 / self.caps.view_entries.max(1))
            .max(self.bytes * 4 / self.caps.view_bytes.max(1));
        while self.slowdowns < quarters {
            self.interval = self.interval * 2;
            self.slowdowns += 1;
        }
    }

    /// The views' budgets are not spent: in entries (the store's work) and in bytes.
    fn budget_left(&self) -> bool {
        self.entries < self.caps.view_entries && self.bytes < self.caps.view_bytes
    }

    /// Before a change at `at`: the changes pending go out as a view when a pace's worth
    /// of the run has passed since the last one.
    fn pace(&mut self, at: Time) {
        if let Some(p) = self.pending
            && self.budget_left()
            && self.last_view.is_none_or(|l| at - l >= self.interval)
        {
            self.view(p);
        }
    }

    /// The pod name Spark's allocator gave executor `id`: `<podNamePrefix>-exec-<id>`.
    fn pod_name(&self, id: i64) -> Option<String> {
        self.property("spark.kubernetes.executor.podNamePrefix")
            .map(|p| format!("{p}-exec-{id}"))
    }

    fn numeric(&mut self, id: &str, what: &str) -> Option<i64> {
        match id.parse() {
            Ok(n) => Some(n),
            Err(_) if id == "driver" => None,
            Err(_) => {
                self.damage(format!("{what} of executor {id:?}: not a number; skipped"));
                None
            }
        }
    }

    /// Before a change to executor `id` (as the log writes it) at `at`: its number, unless
    /// it is not one or is one too many to keep; the pending changes paced into a view.
    fn change(&mut self, id: &str, what: &str, adding: bool, at: Time) -> Option<i64> {
        let id = self.numeric(id, what)?;
        self.seen(at);
        self.key(at);
        // Past the skipped ids remembered, one of their range may be one of them: a removal
        // of an id not held there is not taken (it would come back as an executor never
        // added).
        let maybe_skipped = !adding
            && self.skipped_n > MAX_SKIPPED_KEPT
            && !self.executors.contains_key(&id)
            && self
                .skipped_ids
                .is_some_and(|(lo, hi)| (lo..=hi).contains(&id));
        if maybe_skipped
            || self.shed.contains(&id)
            || self.skipped.contains(&id)
            || self.full(id, at, adding)
        {
            return None;
        }
        self.pace(at);
        Some(id)
    }

    /// Why the hold is full now: the views' bytes spent, its bytes, or its count.
    fn why_full(&self) -> String {
        if self.bytes >= self.caps.view_bytes {
            format!(
                "the log's executor lists reached {} MiB, the most read of one log",
                self.caps.view_bytes >> 20
            )
        } else if self.held_bytes >= self.caps.held_bytes {
            format!(
                "the executors held at once (active, or removed in the last {}s of the \
                 run) reached {} KiB",
                REMOVED_KEPT.num_seconds(),
                self.caps.held_bytes >> 10
            )
        } else {
            format!(
                "more than {} executors held at once (active, or removed in the last {}s \
                 of the run)",
                self.caps.executors,
                REMOVED_KEPT.num_seconds()
            )
        }
    }

    /// Whether executor `id` is one too many to hold (counted, said at the end). Full with
    /// half of those held removed (the paced views may have stopped): a view now lets the
    /// ones removed long enough ago go, at most once each [`REMOVED_KEPT`] of the run (each
    /// such view frees about half the hold, or waits: their cost stays within twice the
    /// executors of the log).
    fn full(&mut self, id: i64, at: Time, adding: bool) -> bool {
        let room = |c: &Self| {
            (c.executors.len() < c.caps.executors && c.held_bytes < c.caps.held_bytes)
                || c.executors.contains_key(&id)
        };
        if room(self) {
            return false;
        }
        if self.removed_held >= self.executors.len() / 2
            && self.bytes < self.caps.view_bytes
            && self.last_forced.is_none_or(|t| at >= t + REMOVED_KEPT)
        {
            self.last_forced = Some(at);
            self.view(self.pending.unwrap_or(at).max(at));
            if room(self) {
                return false;
            }
        }
        // Counted once, at its addition (a removal of one past those remembered is not).
        if !adding {
            return true;
        }
        if self.skipped_why.is_none() {
            self.skipped_why = Some(self.why_full());
        }
        if self.skipped_n < MAX_SKIPPED_KEPT {
            self.skipped.insert(id..=id);
        }
        self.skipped_n += 1;
        self.skipped_ids = Some(
            self.skipped_ids
                .map_or((id, id), |(lo, hi)| (lo.min(id), hi.max(id))),
        );
        true
    }

    /// Something happened at `at` (the log was last written then), with no event to say.
    pub fn seen_at(&mut self, at: Time) {
        self.seen(at);
    }

    /// Executor `id`'s task counts, as a summary gives them (the History Server's), in
    /// place of its tasks' ends.
    pub fn tasks(&mut self, id: i64, completed: u64, failed: u64) {
        self.clean.remove(&id);
        if let Some(e) = self.executors.get_mut(&id) {
            e.completed_tasks = completed;
            e.failed_tasks = failed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::events::Event;
    use super::*;

    fn at(s: i64) -> Time {
        chrono::DateTime::from_timestamp(1_796_300_000 + s, 0).expect("time")
    }

    fn added(id: i64, s: i64) -> Event {
        Event::ExecutorAdded {
            id: id.to_string(),
            at: at(s),
            host: None,
            cores: None,
            pod_name: None,
        }
    }

    /// The executor lists of the views, in order.
    fn views(c: &Converted) -> impl Iterator<Item = &Vec<DriverExecutor>> {
        c.events.iter().filter_map(|e| match e {
            SourceEvent::DriverExecutors {
                view: DriverView::Logged { executors },
                ..
            } => Some(executors),
            _ => None,
        })
    }

    fn entries(c: &Converted) -> Vec<usize> {
        views(c).map(Vec::len).collect()
    }

    /// The one line that says what was skipped.
    fn skipped_said(c: &Converted) -> &String {
        let said: Vec<_> = c
            .damaged
            .iter()
            .filter(|d| d.contains("executors skipped"))
            .collect();
        assert_eq!(said.len(), 1, "{:?}", c.damaged);
        said[0]
    }

    /// Every executor some view named.
    fn given(c: &Converted) -> BTreeSet<i64> {
        views(c).flatten().map(|x| x.id).collect()
    }

    #[test]
    fn a_hostile_log_cannot_grow_the_executors_or_the_views_without_bound() {
        let mut c = Converter::new("huge");
        c.caps = Caps {
            executors: 50,
            view_entries: 400,
            view_bytes: usize::MAX,
            held_bytes: usize::MAX,
        };
        // 200 executors, one a second: past 50 they are skipped (said once), and the views
        // slow down as they grow, then stop until the last one.
        for id in 1..=200 {
            c.take(added(id, id));
        }
        let out = c.finish(true);
        let skipped: Vec<_> = out
            .damaged
            .iter()
            .filter(|d| {
                d.contains("executors skipped") && d.contains("more than 50 executors held")
            })
            .collect();
        assert_eq!(skipped.len(), 1, "{:?}", out.damaged);
        let sizes = entries(&out);
        assert_eq!(
            sizes.last(),
            Some(&50),
            "the last view has every executor kept"
        );
        let total: usize = sizes.iter().sum();
        // The budget, the view that crossed it, and the last one.
        assert!(
            total <= 400 + 2 * 50,
            "{total} entries in {} views",
            sizes.len()
        );
        assert!(sizes.len() < 50, "{} views: paced", sizes.len());
    }

    #[test]
    fn a_removal_reason_is_kept_to_its_bound() {
        let mut c = Converter::new("long");
        c.take(added(1, 1));
        c.take(Event::ExecutorRemoved {
            id: "1".into(),
            at: at(2),
            reason: "é".repeat(MAX_REASON),
        });
        let out = c.finish(true);
        let reason = out
            .events
            .iter()
            .rev()
            .find_map(|e| match e {
                SourceEvent::DriverExecutors {
                    view: DriverView::Logged { executors },
                    ..
                } => executors[0].remove_reason.clone(),
                _ => None,
            })
            .expect("a reason");
        assert!(
            reason.len() <= MAX_REASON + '…'.len_utf8(),
            "{}",
            reason.len()
        );
        assert!(reason.ends_with('…'));
    }

    fn removed(id: i64, s: i64) -> Event {
        Event::ExecutorRemoved {
            id: id.to_string(),
            at: at(s),
            reason: format!("The executor with id {id} exited with exit code 137."),
        }
    }

    /// Churn: executors that come and go leave the views once given removed, so views and
    /// the hold stay the size of what runs at once, every executor is given, and a task end
    /// Spark posts after a removal is still counted.
    #[test]
    fn executors_that_come_and_go_are_each_given_and_leave_the_views() {
        let mut c = Converter::new("churn");
        c.caps.executors = 50;
        for id in 1..=2000 {
            c.take(added(id, id * 2));
            c.take(removed(id, id * 2 + 1));
            assert!(c.executors.len() <= 50, "{} held", c.executors.len());
        }
        // Executor 2000's lost task, a moment after its removal.
        c.take(Event::TaskEnd {
            executor: "2000".into(),
            failed: true,
            killed: false,
            lost: true,
            at: Some(at(4002)),
            stage: 0,
            stage_attempt: 0,
            ms: 1000,
            fetch_failed: None,
            resubmitted: false,
        });
        let out = c.finish(false);
        assert!(out.damaged.is_empty(), "{:?}", out.damaged);
        let mut given = BTreeSet::new();
        let mut entries = 0;
        let mut last_of_2000 = None;
        for e in &out.events {
            if let SourceEvent::DriverExecutors {
                view: DriverView::Logged { executors },
                ..
            } = e
            {
                entries += executors.len();
                for x in executors.iter().filter(|x| !x.active) {
                    given.insert(x.id);
                    if x.id == 2000 {
                        last_of_2000 = Some(x.tasks_lost);
                    }
                }
            }
        }
        assert_eq!(given.len(), 2000, "every executor given removed");
        // Once running (a view between its addition and its removal), once removed.
        assert!(
            entries <= 2 * 2000,
            "{entries} entries: each given at most twice"
        );
        assert_eq!(last_of_2000, Some(1), "the late task end counts");
    }

    /// Past the views' bytes, views stop and the hold fills: what comes after is skipped,
    /// said with why and which; memory stays what the budget and the hold allow.
    #[test]
    fn past_the_views_bytes_the_rest_is_skipped_and_said() {
        let mut c = Converter::new("bytes");
        c.caps.executors = 50;
        c.caps.view_bytes = 100 * weight(&registered(1, None));
        for id in 1..=2000 {
            c.take(added(id, id * 2));
            c.take(removed(id, id * 2 + 1));
        }
        let out = c.finish(false);
        let said = [skipped_said(&out)];
        assert!(said[0].contains("executor lists reached"), "{}", said[0]);
        let entries: usize = entries(&out).iter().sum();
        assert!(entries <= 100 + 2 * 50, "{entries} entries");
        // Each skipped executor counted once (its addition and its removal are two events),
        // and those given and those skipped are every one.
        let skipped: usize = said[0]
            .split_once(": ")
            .and_then(|(_, r)| r.split(' ').next()?.parse().ok())
            .expect("a count");
        let given = given(&out);
        assert_eq!(given.len() + skipped, 2000, "{}", said[0]);
    }

    /// Executors whose texts fill the hold's bytes before its count: the rest are skipped,
    /// said with that reason.
    #[test]
    fn past_the_holds_bytes_the_rest_is_skipped_and_said() {
        let mut c = Converter::new("long reasons");
        c.caps.held_bytes = 20 * (weight(&registered(1, None)) + MAX_REASON);
        for id in 1..=100 {
            c.take(added(id, 1));
            c.take(Event::ExecutorRemoved {
                id: id.to_string(),
                at: at(2),
                reason: "x".repeat(64 * 1024),
            });
        }
        let out = c.finish(false);
        let said = [skipped_said(&out)];
        assert!(
            said[0].contains("held at once") && said[0].contains("KiB"),
            "{}",
            said[0]
        );
        let given = given(&out);
        assert!(
            (15..=21).contains(&given.len()),
            "{} given: {:?}",
            given.len(),
            out.damaged
        );
    }
}
