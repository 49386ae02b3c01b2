//! An event log's events into the [`SourceEvent`]s a live view would have recorded of the
//! same run: the app's start (its name, Spark version, user), its configuration (the
//! environment's Spark properties, redacted by the ConfigMap's rules), the driver's
//! executor list as it changed ([`DriverView::Logged`]: added with its host and pod name;
//! removed with Spark's reason; its tasks' ends), and the app's end with its exit code.
//!
//! The executor list is given as `allexecutors` would have been read: whole, at the moment
//! of a change, at most once a second of the run, less often as the views grow, and for an
//! app so large that they would hold more than [`MAX_VIEW_ENTRIES`] entries in all, once
//! more at its end only (so at most that budget, the view that crossed it and the last).

use std::collections::{BTreeMap, BTreeSet};

use super::events::Event;
use crate::source::{DriverView, SourceEvent};
use spark_triage_core::model::{DriverExecutor, Time, driver::STOPPED_WITH_APP, fmt_time};

/// A converted log's header names its source so (where a recording names its API server).
pub(crate) const SERVER: &str = "event log ";

/// The most executors one log's conversion keeps (a few hundred bytes each): past it, the
/// rest are skipped and said so (a hostile log cannot grow the memory without bound).
const MAX_EXECUTORS: usize = 250_000;

/// The most executor entries all of one log's views hold together.
const MAX_VIEW_ENTRIES: usize = 2_000_000;

/// What one log's conversion keeps at most.
#[derive(Debug, Clone, Copy)]
struct Caps {
    executors: usize,
    view_entries: usize,
}

/// One log, converted.
#[derive(Debug)]
pub(crate) struct Converted {
    pub started_at: Option<Time>,
    pub namespace: String,
    pub events: Vec<SourceEvent>,
    pub damaged: Vec<String>,
}

/// The most of a removal reason kept: Spark's own are under 2 KiB; every view holds a copy.
const MAX_REASON: usize = 16 * 1024;

fn capped(mut reason: String) -> String {
    if reason.len() > MAX_REASON {
        let mut cut = MAX_REASON;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
        reason.push('…');
    }
    reason
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
    pub(crate) settings_from: spark_triage_core::diagnose::memory::SettingsFrom,
    /// The app's identity is settled and its start said.
    begun: Option<(String, String)>,
    executors: BTreeMap<i64, DriverExecutor>,
    excluded: BTreeSet<(i64, Time)>,
    /// The bounds on what is kept ([`MAX_EXECUTORS`], [`MAX_VIEW_ENTRIES`]).
    caps: Caps,
    /// Executors past [`MAX_EXECUTORS`] were skipped.
    overflowed: bool,
    /// The newest change not yet in a view, and the last view's time.
    pending: Option<Time>,
    last_view: Option<Time>,
    interval: chrono::TimeDelta,
    /// Entries in all views so far, and where the views slow down next.
    entries: usize,
    next_slowdown: usize,
    first_at: Option<Time>,
    last_at: Option<Time>,
    out: Vec<SourceEvent>,
    damaged: Vec<String>,
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
            settings_from: spark_triage_core::diagnose::memory::SettingsFrom::EventLog,
            begun: None,
            executors: BTreeMap::new(),
            excluded: BTreeSet::new(),
            overflowed: false,
            pending: None,
            last_view: None,
            interval: chrono::TimeDelta::seconds(1),
            entries: 0,
            next_slowdown: MAX_VIEW_ENTRIES / 4,
            caps: Caps {
                executors: MAX_EXECUTORS,
                view_entries: MAX_VIEW_ENTRIES,
            },
            first_at: None,
            last_at: None,
            out: Vec::new(),
            damaged: Vec::new(),
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
        crate::redact::properties(&mut properties);
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
        let executors: Vec<DriverExecutor> = self.executors.values().cloned().collect();
        self.entries += executors.len();
        self.out.push(SourceEvent::DriverExecutors {
            namespace: ns,
            app_id: id,
            view: DriverView::Logged { executors },
            at,
        });
        self.last_view = Some(at);
        self.pending = None;
        // Past a quarter of the budget, and each time as much again, views come half as
        // often; past the whole of it, only the last one is given.
        if self.entries > self.next_slowdown {
            self.interval = self.interval * 2;
            self.next_slowdown += self.caps.view_entries / 4;
        }
    }

    /// Before a change at `at`: the changes pending go out as a view when a pace's worth
    /// of the run has passed since the last one.
    fn pace(&mut self, at: Time) {
        if let Some(p) = self.pending
            && self.entries < self.caps.view_entries
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
    fn change(&mut self, id: &str, what: &str, at: Time) -> Option<i64> {
        let id = self.numeric(id, what)?;
        self.seen(at);
        self.key(at);
        if self.full(id) {
            return None;
        }
        self.pace(at);
        Some(id)
    }

    /// Whether executor `id` is one too many to keep (said once).
    fn full(&mut self, id: i64) -> bool {
        if self.executors.len() < self.caps.executors || self.executors.contains_key(&id) {
            return false;
        }
        if !self.overflowed {
            self.overflowed = true;
            self.damage(format!(
                "more than {} executors: executor {id} and the later ones are skipped",
                self.caps.executors
            ));
        }
        true
    }

    /// Something happened at `at` (the log was last written then), with no event to say.
    pub fn seen_at(&mut self, at: Time) {
        self.seen(at);
    }

    /// Executor `id`'s task counts, as a summary gives them (the History Server's), in
    /// place of its tasks' ends.
    pub fn tasks(&mut self, id: i64, completed: u64, failed: u64) {
        if let Some(e) = self.executors.get_mut(&id) {
            e.completed_tasks = completed;
            e.failed_tasks = failed;
        }
    }

    pub fn take(&mut self, ev: Event) {
        match ev {
            Event::LogStart { spark_version } => self.version = Some(spark_version),
            Event::Environment { properties } => {
                self.properties = Some(properties);
                if let Some(at) = self.begun.as_ref().and(self.start.or(self.first_at)) {
                    self.configure(at);
                }
            }
            Event::AppStart {
                app_id,
                app_name,
                attempt,
                user,
                at,
            } => {
                self.seen(at);
                self.app_id = app_id;
                self.app_name = Some(app_name);
                self.attempt = attempt;
                self.user = user;
                self.start = Some(at);
                self.key(at);
            }
            Event::AppEnd { at, exit_code } => {
                self.seen(at);
                self.key(at);
                self.end = Some((at, exit_code));
            }
            Event::ExecutorAdded {
                id,
                at,
                host,
                cores: _,
                pod_name,
            } => {
                let Some(id) = self.change(&id, "the addition", at) else {
                    return;
                };
                let pod_name = pod_name.or_else(|| self.pod_name(id));
                self.executors.insert(
                    id,
                    DriverExecutor {
                        host_port: host,
                        add_time: Some(at),
                        ..registered(id, pod_name)
                    },
                );
                self.pending = Some(at);
            }
            Event::ExecutorRemoved { id, at, reason } => {
                let Some(id) = self.change(&id, "the removal", at) else {
                    return;
                };
                let pod_name = self.pod_name(id);
                let e = self
                    .executors
                    .entry(id)
                    .or_insert_with(|| registered(id, pod_name));
                let reason = Some(capped(reason)).filter(|r| !r.trim().is_empty());
                if e.remove_time.is_some() && e.remove_reason.is_some() {
                    // Removed again: Spark's record is the first removal (its REST API and
                    // History Server keep that one); the later texts are kept beside it, a
                    // few (a heartbeat timeout racing a kill is the second).
                    if e.removed_again.len() < 4 {
                        e.removed_again.extend(reason);
                    }
                } else {
                    e.active = false;
                    e.remove_time = Some(at);
                    e.remove_reason = reason;
                }
                self.pending = Some(at);
            }
            Event::TaskEnd {
                executor,
                failed,
                killed,
                lost,
                at,
            } => {
                if let Some(at) = at {
                    self.seen(at);
                }
                if let Ok(id) = executor.parse::<i64>()
                    && let Some(e) = self.executors.get_mut(&id)
                {
                    e.tasks_lost += u64::from(lost);
                    if failed {
                        e.failed_tasks += 1;
                    } else if !killed {
                        e.completed_tasks += 1;
                    }
                }
            }
            Event::ExecutorExcluded {
                id,
                at,
                task_failures,
            } => {
                let Some(id) = self.numeric(&id, "the exclusion") else {
                    return;
                };
                self.seen(at);
                // Spark posts `…Blacklisted` beside `…Excluded`: one line for both.
                if !self.excluded.insert((id, at)) {
                    return;
                }
                let (namespace, app_id) = self.key(at);
                self.out.push(SourceEvent::AppNoted {
                    namespace,
                    app_id,
                    app_name: None,
                    text: format!(
                        "executor {id} excluded from scheduling after {task_failures} task failures"
                    ),
                    end: false,
                    unfinished: false,
                    spark_version: None,
                    at,
                });
            }
        }
    }

    /// The log is read: the last view, the app's end (or why there is none), and a tick
    /// at the log's last moment so that ages and verdicts stand as of then.
    pub fn finish(mut self, in_progress: bool) -> Converted {
        let Some(last) = self.last_at else {
            self.damage("no event with a time: nothing to read".into());
            return Converted {
                started_at: None,
                namespace: String::new(),
                events: Vec::new(),
                damaged: self.damaged,
            };
        };
        let (namespace, app_id) = self.key(last);
        if let Some(p) = self.pending {
            self.view(p);
        } else if self.last_view.is_none() {
            self.view(self.start.unwrap_or(last));
        }
        // The app ended: Spark stopped the executors still registered and logged no removal
        // for them; the last view says they went with it.
        if let Some((at, _)) = self.end {
            let mut stopped = false;
            for e in self.executors.values_mut().filter(|e| e.active) {
                e.active = false;
                e.remove_time = Some(at);
                e.remove_reason = Some(STOPPED_WITH_APP.to_owned());
                stopped = true;
            }
            if stopped {
                self.view(at.max(last));
            }
        }
        let end_text = match self.end {
            Some((_, Some(code))) => format!("application ended, exit code {code}"),
            Some((_, None)) => {
                "application ended (the log has no exit code: Spark before 4.0 does not write it)"
                    .to_owned()
            }
            None if in_progress => format!(
                "the event log ends at {} without the application's end: it is still being \
                 written, or its driver died (the log is marked in progress)",
                fmt_time(&last)
            ),
            None => format!(
                "the event log ends at {} without the application's end",
                fmt_time(&last)
            ),
        };
        let end_at = self.end.map_or(last, |(at, _)| at.max(last));
        self.out.push(SourceEvent::AppNoted {
            namespace: namespace.clone(),
            app_id,
            app_name: None,
            text: end_text,
            end: true,
            unfinished: self.end.is_none(),
            spark_version: None,
            at: end_at,
        });
        self.out.push(SourceEvent::Tick { at: end_at });
        Converted {
            started_at: self.start.or(self.first_at),
            namespace,
            events: self.out,
            damaged: self.damaged,
        }
    }
}

/// Logs converted into one timeline: what a recording of them holds (`record` makes it
/// one, its header from these fields).
#[derive(Debug)]
pub(crate) struct Merged {
    /// The first moment of any log (now, for logs without one).
    pub started_at: Time,
    /// `namespace <ns>` when every log names the same one, else `all namespaces`.
    pub scope: String,
    /// [`SERVER`] and what the logs were read from (a path, a History Server).
    pub server: String,
    /// Every log's events in time order.
    pub events: Vec<SourceEvent>,
    /// What could not be read, said.
    pub damaged: Vec<String>,
}

/// Logs converted into one timeline, their events in time order (a directory of many
/// apps reads as one).
pub(crate) fn merge(name: &str, logs: Vec<Converted>) -> Merged {
    let started_at = logs
        .iter()
        .filter_map(|l| l.started_at)
        .min()
        .unwrap_or_else(chrono::Utc::now);
    let namespaces: BTreeSet<&str> = logs
        .iter()
        .map(|l| l.namespace.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    let scope = match namespaces.len() {
        1 => format!("namespace {}", namespaces.iter().next().unwrap_or(&"")),
        _ => "all namespaces".to_owned(),
    };
    let mut events = Vec::new();
    let mut damaged = Vec::new();
    for l in logs {
        events.extend(l.events);
        damaged.extend(l.damaged);
    }
    // Stable: each log's own order is kept among events at the same moment.
    events.sort_by_key(SourceEvent::at);
    Merged {
        started_at,
        scope,
        server: format!("{SERVER}{name}"),
        events,
        damaged,
    }
}

#[cfg(test)]
mod tests {
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

    fn entries(c: &Converted) -> Vec<usize> {
        c.events
            .iter()
            .filter_map(|e| match e {
                SourceEvent::DriverExecutors {
                    view: DriverView::Logged { executors },
                    ..
                } => Some(executors.len()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_hostile_log_cannot_grow_the_executors_or_the_views_without_bound() {
        let mut c = Converter::new("huge");
        c.caps = Caps {
            executors: 50,
            view_entries: 400,
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
            .filter(|d| d.contains("more than 50"))
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
    fn a_removal_reason_is_kept_to_16_kib() {
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
}
