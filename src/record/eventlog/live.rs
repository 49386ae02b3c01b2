//! `--event-log-dir DIR|URL` for the live view and `status`: each app in scope has its event
//! log read once, from `spark.eventLog.dir` (a directory or an object store's URL), so that
//! executors that ended before the tool started are explained from Spark's own removal texts
//! (today the driver's REST API does that too, but only while the driver runs and answers).
//!
//! The log's executor list as it stands when read goes to the store as the driver's
//! (witness `event-log`), as of the log's last event; after that the pods and the driver's
//! own reads speak. A log not
//! there yet (the app just started) is looked for again at the next poll.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;

use tokio::sync::mpsc::Sender;

use super::files::{Entry, Files, Local};
use super::remote::{Remote, StoreOptions};
use crate::source::extra::{Apps, Extra};
use crate::source::{DriverView, Health, SourceEvent, SourceKind, clock::now};

/// Spark's event-log directory, read for the apps in scope.
#[derive(Debug, Clone)]
pub struct EventLogDir {
    /// As given (a path, or a URL: s3a://…).
    pub location: String,
    pub store: StoreOptions,
    pub max_line: usize,
}

impl Extra for EventLogDir {
    fn start(&self, apps: Receiver<Apps>, tx: Sender<SourceEvent>) {
        let me = self.clone();
        // Its reads block (files, or an object store's own runtime): a thread of its own.
        let started = std::thread::Builder::new()
            .name("event-logs".into())
            .spawn(move || me.run(&apps, &tx));
        if let Err(e) = started {
            tracing::warn!("cannot start the event-log reader: {e}");
        }
    }
}

fn health(tx: &Sender<SourceEvent>, health: Health) -> bool {
    tx.blocking_send(SourceEvent::SourceHealth {
        source: SourceKind::EventLogs,
        health,
        at: now(),
    })
    .is_ok()
}

impl EventLogDir {
    /// The directory's file system and its path there.
    fn open(&self) -> Result<(Box<dyn Files>, PathBuf), String> {
        let loc = self.location.as_str();
        if loc.starts_with("file://") {
            let path = super::remote::file_path(loc).map_err(|e| e.to_string())?;
            return Ok((Box::new(Local), path));
        }
        if super::remote::is_url(loc) {
            let o = Remote::open(loc, &self.store).map_err(|e| e.to_string())?;
            return Ok((Box::new(o.remote), o.key));
        }
        Ok((Box::new(Local), PathBuf::from(loc)))
    }

    fn run(&self, apps: &Receiver<Apps>, tx: &Sender<SourceEvent>) {
        if !health(tx, Health::Connecting) {
            return;
        }
        let (fs, root) = match self.open() {
            Ok(o) => o,
            Err(e) => {
                let _ = health(tx, Health::Retrying { error: e });
                return;
            }
        };
        let mut read: BTreeSet<(String, String)> = BTreeSet::new();
        // Each poll's apps; the list closes when the connection's sources stop.
        while let Ok(apps) = apps.recv() {
            let wanted: Vec<(String, String)> =
                apps.into_iter().filter(|k| !read.contains(k)).collect();
            let state = if wanted.is_empty() {
                Health::Connected
            } else {
                match fs.list(&root) {
                    Err(e) => Health::Retrying {
                        error: format!(
                            "{}: {}",
                            fs.shown(&root),
                            crate::redact::one_line(&e.to_string())
                        ),
                    },
                    Ok(entries) => {
                        let mut failed = None;
                        for (ns, id) in wanted {
                            match self.read_one(fs.as_ref(), &entries, &ns, &id) {
                                Ok(Some(ev)) => {
                                    if tx.blocking_send(ev).is_err() {
                                        return;
                                    }
                                    read.insert((ns, id));
                                }
                                // Not there yet: looked for at the next poll.
                                Ok(None) => {}
                                Err(e) => failed = Some(e),
                            }
                        }
                        failed.map_or(Health::Connected, |error| Health::Retrying { error })
                    }
                }
            };
            if !health(tx, state) {
                return;
            }
        }
    }

    /// App `id`'s log among `entries`, read: its executor list as it stands now.
    fn read_one(
        &self,
        fs: &dyn Files,
        entries: &[Entry],
        ns: &str,
        id: &str,
    ) -> Result<Option<SourceEvent>, String> {
        let name_of = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        // The last attempt's, by name.
        let Some(entry) = entries
            .iter()
            .filter(|e| super::is_log_of(&name_of(&e.path), id))
            .max_by_key(|e| name_of(&e.path))
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
        let executors = conv.events.into_iter().rev().find_map(|ev| match ev {
            SourceEvent::DriverExecutors {
                view: DriverView::Logged { executors },
                ..
            } => Some(executors),
            _ => None,
        });
        Ok(executors.map(|executors| SourceEvent::DriverExecutors {
            namespace: ns.to_owned(),
            app_id: id.to_owned(),
            view: DriverView::Logged { executors },
            at: as_of,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::is_log_of;

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
}
