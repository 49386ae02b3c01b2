//! `--event-log-dir DIR|URL` for the live view and `status`: each app in scope has its event
//! log read once, from `spark.eventLog.dir` (a directory or an object store's URL), so that
//! executors that ended before the tool started are explained from Spark's own removal texts
//! (today the driver's REST API does that too, but only while the driver runs and answers).
//!
//! The log's executor list as it stands when read goes to the store as the driver's (witness
//! `event-log`), as of the log's last event, with what the app's losses had cost it by then
//! (`AppCost`, from its stages and tasks); after that the pods and the driver's own reads
//! speak. A running app's log (no end yet) is read again every [`LOOK_AGAIN`] for its cost
//! alone, until it ends or stops growing. A log not there yet (the app just started) is
//! looked for again at the next poll.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use spark_triage_core::model::{DriverExecutor, Time};
use tokio::sync::mpsc::Sender;

use crate::redact;
use crate::source::clock::Clock;
use crate::source::extra::{Apps, Extra, Stopped};
use crate::source::{DriverView, Health, SourceEvent, SourceKind};
use crate::storage::remote::{Remote, StoreOptions};
use crate::storage::{Entry, Files, Local, remote};

/// Spark's event-log directory, read for the apps in scope.
#[derive(Debug, Clone)]
pub struct EventLogDir {
    /// As given (a path, or a URL: s3a://…).
    pub location: String,
    pub store: StoreOptions,
    pub max_line: usize,
}

impl Extra for EventLogDir {
    fn start(&self, apps: Receiver<Apps>, tx: Sender<SourceEvent>, stop: Stopped, clock: Clock) {
        let me = self.clone();
        // Its reads block (files, or an object store's own runtime): a thread of its own.
        let started = std::thread::Builder::new()
            .name("event-logs".into())
            .spawn(move || me.run(&apps, &tx, &stop, &clock));
        if let Err(e) = started {
            tracing::warn!("cannot start the event-log reader: {e}");
        }
    }
}

/// How long before an app whose log was not there, or could not be read, is looked for
/// again (each look lists the whole directory); and before a log still being written is
/// read again for its cost.
const LOOK_AGAIN: Duration = Duration::from_secs(300);

/// The order of an app's logs, the one to read last: by attempt (as a number), a finished
/// log after one still in progress (a crashed attempt's leftover).
fn rank(name: &str, id: &str) -> (u64, bool) {
    let rest = name.strip_prefix("eventlog_v2_").unwrap_or(name);
    let after = rest.strip_prefix(id).unwrap_or_default();
    let attempt = after
        .strip_prefix('_')
        .and_then(|a| a.split('.').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    (attempt, !name.ends_with(".inprogress"))
}

impl EventLogDir {
    /// The directory's file system and its path there.
    fn open(&self) -> Result<(Box<dyn Files>, PathBuf), String> {
        let loc = self.location.as_str();
        if loc.starts_with("file://") {
            let path = remote::file_path(loc).map_err(|e| e.to_string())?;
            return Ok((Box::new(Local::QUIET), path));
        }
        if remote::is_url(loc) {
            let o = Remote::open(loc, &self.store).map_err(|e| e.to_string())?;
            return Ok((Box::new(o.remote), o.key));
        }
        Ok((Box::new(Local::QUIET), PathBuf::from(loc)))
    }

    fn run(&self, apps: &Receiver<Apps>, tx: &Sender<SourceEvent>, stop: &Stopped, clock: &Clock) {
        let now = || clock.now();
        // Nothing is sent once the connection's sources were stopped (a context switch):
        // the old scope's news never follows the new scope's.
        let send = |ev: SourceEvent| !stop.is_set() && tx.blocking_send(ev).is_ok();
        let health_of = |health| SourceEvent::SourceHealth {
            source: SourceKind::EventLogs,
            health,
            at: now(),
        };
        if !send(health_of(Health::Connecting)) {
            return;
        }
        let (fs, root) = match self.open() {
            Ok(o) => o,
            Err(e) => {
                let _ = send(health_of(Health::Retrying { error: e }));
                return;
            }
        };
        let mut read: BTreeSet<(String, String)> = BTreeSet::new();
        // Apps whose log was still being written when read: their cost is read again then.
        let mut costs_due: BTreeMap<(String, String), Instant> = BTreeMap::new();
        // The last event of each log read, so a log that stopped growing is let go.
        let mut cost_at: BTreeMap<(String, String), Time> = BTreeMap::new();
        // Apps whose log was not there (or failed), and when they are looked for again.
        let mut later: BTreeMap<(String, String), Instant> = BTreeMap::new();
        let mut said: Option<Health> = None;
        // Each poll's apps; the list closes when the connection's sources stop.
        while let Ok(apps) = apps.recv() {
            let now_i = Instant::now();
            let due: Vec<(String, String)> = apps
                .iter()
                .filter(|k| costs_due.get(*k).is_some_and(|t| *t <= now_i))
                .cloned()
                .collect();
            let wanted: Vec<(String, String)> = apps
                .into_iter()
                .filter(|k| !read.contains(k) && later.get(k).is_none_or(|t| *t <= now_i))
                .chain(due)
                .collect();
            let state = if wanted.is_empty() {
                said.clone().unwrap_or(Health::Connected)
            } else {
                match fs.list(&root) {
                    Err(e) => Health::Retrying {
                        error: format!("{}: {}", fs.shown(&root), redact::one_line(&e.to_string())),
                    },
                    Ok(entries) => {
                        let mut failed = None;
                        for key in wanted {
                            // Read before: only its cost again.
                            let again = read.contains(&key);
                            match self.read_one(fs.as_ref(), &entries, &key.0, &key.1) {
                                Ok(Some(events)) => {
                                    costs_due.remove(&key);
                                    for ev in events {
                                        // Read again while it grows (a driver that died
                                        // leaves its log in progress, unchanged).
                                        if let SourceEvent::AppCost { cost, at, .. } = &ev
                                            && cost.in_progress
                                            && cost_at.insert(key.clone(), *at) != Some(*at)
                                        {
                                            costs_due
                                                .insert(key.clone(), Instant::now() + LOOK_AGAIN);
                                        }
                                        let skip =
                                            again && !matches!(ev, SourceEvent::AppCost { .. });
                                        if !skip && !send(ev) {
                                            return;
                                        }
                                    }
                                    later.remove(&key);
                                    read.insert(key);
                                }
                                // Not there (yet), or unreadable: looked for again later
                                // (a cost read again, at its next time).
                                Ok(None) => {
                                    let next = Instant::now() + LOOK_AGAIN;
                                    if again {
                                        costs_due.insert(key, next);
                                    } else {
                                        later.insert(key, next);
                                    }
                                }
                                Err(e) => {
                                    let next = Instant::now() + LOOK_AGAIN;
                                    if again {
                                        costs_due.insert(key, next);
                                    } else {
                                        later.insert(key, next);
                                    }
                                    failed = Some(e);
                                }
                            }
                        }
                        failed.map_or(Health::Connected, |error| Health::Retrying { error })
                    }
                }
            };
            // Said when it changes.
            if said.as_ref() != Some(&state) {
                if !send(health_of(state.clone())) {
                    return;
                }
                said = Some(state);
            }
        }
    }

    /// App `id`'s log among `entries`, read: its executor list as it stands now, and what
    /// its losses have cost it so far.
    fn read_one(
        &self,
        fs: &dyn Files,
        entries: &[Entry],
        ns: &str,
        id: &str,
    ) -> Result<Option<Vec<SourceEvent>>, String> {
        let name_of = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        // The last attempt's, by name.
        let Some(entry) = entries
            .iter()
            .filter(|e| super::is_log_of(&name_of(&e.path), id))
            .max_by_key(|e| rank(&name_of(&e.path), id))
        else {
            return Ok(None);
        };
        let log = if entry.dir {
            match super::rolling(fs, &entry.path).map_err(|e| e.to_string())? {
                Some(log) => log,
                None => return Ok(None),
            }
        } else {
            super::single(&entry.path)
        };
        let conv = super::read_in(fs, &log, self.max_line).map_err(|e| e.to_string())?;
        // As of the log's last event, not of the read: Spark buffers what it writes, so an
        // executor the log does not have yet may have registered since.
        let Some(as_of) = conv.events.iter().map(SourceEvent::at).max() else {
            return Ok(None);
        };
        let cost = conv.events.iter().find_map(|e| match e {
            SourceEvent::AppCost { cost, .. } => Some(cost.clone()),
            _ => None,
        });
        let Some(executors) = as_it_stands(conv.events) else {
            return Ok(None);
        };
        let mut out = vec![SourceEvent::DriverExecutors {
            namespace: ns.to_owned(),
            app_id: id.to_owned(),
            view: DriverView::Logged { executors },
            at: as_of,
        }];
        out.extend(cost.map(|cost| SourceEvent::AppCost {
            namespace: ns.to_owned(),
            app_id: id.to_owned(),
            cost,
            at: as_of,
        }));
        Ok(Some(out))
    }
}

/// The list as it stands at the log's end: every view's executors, the later word on each
/// (a view names what runs and what changed since the one before: a removal given once is
/// not named again); none without a view.
fn as_it_stands(events: Vec<SourceEvent>) -> Option<Vec<DriverExecutor>> {
    let mut latest = std::collections::BTreeMap::new();
    for ev in events {
        if let SourceEvent::DriverExecutors {
            view: DriverView::Logged { executors },
            ..
        } = ev
        {
            latest.extend(executors.into_iter().map(|e| (e.id, e)));
        }
    }
    (!latest.is_empty()).then(|| latest.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::super::is_log_of;

    #[test]
    fn the_last_attempts_finished_log_is_read() {
        let id = "spark-8f2c";
        let mut names = [
            "spark-8f2c_9.inprogress",
            "spark-8f2c_10.inprogress",
            "spark-8f2c_10",
            "spark-8f2c_2.zstd",
        ];
        names.sort_by_key(|n| super::rank(n, id));
        assert_eq!(names.last(), Some(&"spark-8f2c_10"));
        assert!(super::rank("eventlog_v2_spark-8f2c_3", id) > super::rank("spark-8f2c.zstd", id));
    }

    #[test]
    fn an_apps_log_is_found_by_the_names_spark_gives() {
        let id = "spark-8f2c";
        for name in [
            "eventlog_v2_spark-8f2c",
            "eventlog_v2_spark-8f2c_1",
            "spark-8f2c",
            "spark-8f2c.zstd",
            "spark-8f2c.lz4.inprogress",
            "spark-8f2c_2.inprogress",
        ] {
            assert!(is_log_of(name, id), "{name}");
        }
        for name in [
            "eventlog_v2_spark-8f2c9",
            "spark-8f2cd.zstd",
            "appstatus_spark-8f2c",
        ] {
            assert!(!is_log_of(name, id), "{name}");
        }
    }

    /// A log whose executors were removed minutes apart: the list as it stands names each
    /// with its removal, though the last view names only the last (#55 review).
    #[test]
    fn the_list_as_it_stands_names_every_executor_the_views_gave() {
        use super::super::convert::Converter;
        use super::super::events::Event;
        let at = |s: i64| chrono::DateTime::from_timestamp(1_796_300_000 + s, 0).expect("time");
        let mut c = Converter::new("live");
        for id in 1..=3_i64 {
            c.take(Event::ExecutorAdded {
                id: id.to_string(),
                at: at(id * 100),
                host: None,
                cores: None,
                pod_name: None,
            });
            c.take(Event::ExecutorRemoved {
                id: id.to_string(),
                at: at(id * 100 + 10),
                reason: format!("The executor with id {id} exited with exit code 137."),
            });
        }
        let out = c.finish(true);
        let list = super::as_it_stands(out.events).expect("a list");
        let removed: Vec<(i64, bool)> = list
            .iter()
            .map(|e| {
                (
                    e.id,
                    e.remove_reason
                        .as_deref()
                        .is_some_and(|r| r.contains("137")),
                )
            })
            .collect();
        assert_eq!(removed, vec![(1, true), (2, true), (3, true)]);
    }
}
