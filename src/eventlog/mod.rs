//! Spark's event logs as a source, for the runs nobody recorded: a single log file, a
//! rolling log directory (`eventlog_v2_<app>`, its `events_<n>_…` files and `appstatus_…`),
//! or a directory of many (as `spark.eventLog.dir` has them), each told by its content,
//! never by its name, in any codec Spark writes ([`codec`]).
//!
//! A log becomes the same [`SourceEvent`]s a live view records ([`convert`]), which
//! `record` holds as a recording ([`Merged`]): the driver's configuration, its executor list as
//! it changed (with Spark's removal reasons), the app's start and end. So `report`,
//! `replay` and `status --recording` read it with the same store and verdicts, whose
//! witness is `event-log`. What a log cannot know (pods, nodes, events, pending reasons,
//! log tails) is absent, never guessed.
//!
//! [`SourceEvent`]: crate::source::SourceEvent

pub mod codec;
mod convert;
mod events;
pub(crate) mod history;
pub mod live;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use codec::Codec;
pub(crate) use convert::{Converted, Merged, SERVER};

use crate::failure::Failure;
use crate::storage::{Entry, Files, Line, Local, remote};
use crate::{redact, storage};

/// One application's event log, as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLog {
    /// The file's or the rolling directory's path.
    pub path: PathBuf,
    /// Its files in the order Spark wrote them (one for a single-file log).
    pub files: Vec<PathBuf>,
    /// Still being written (`.inprogress`), or its driver died before it finished.
    pub in_progress: bool,
    /// Compacted by the History Server (`.compact`): dead executors were dropped from it.
    pub compacted: bool,
}

impl EventLog {
    /// The log's own name (the file or directory name).
    pub fn name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }
}

/// How much of a file is read to tell what it is.
const SNIFF: usize = 64 * 1024;

/// Opens a file's decompressed content.
fn open_file<'a>(fs: &'a dyn Files, path: &Path) -> std::io::Result<(Codec, Box<dyn Read + 'a>)> {
    let mut file = fs.open(path)?;
    let mut head = [0u8; 8];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    let codec = Codec::sniff(&head[..n]);
    let whole = std::io::Cursor::new(head[..n].to_vec()).chain(file);
    Ok((codec, codec.decoder(whole)?))
}

/// Whether a file is a Spark event log: its first line, decompressed, is a listener event.
fn is_log_file(fs: &dyn Files, path: &Path) -> bool {
    let Ok((_, r)) = open_file(fs, path) else {
        return false;
    };
    let mut line = Vec::new();
    let mut r = BufReader::new(r.take(SNIFF as u64));
    if r.read_until(b'\n', &mut line).is_err() {
        return false;
    }
    std::str::from_utf8(&line).is_ok_and(|l| events::is_event_line(l.trim_end()))
}

/// The index of a rolling log's event file (`events_<n>_…`), and whether it is compacted.
fn event_file_index(name: &str) -> Option<(u64, bool)> {
    let rest = name.strip_prefix("events_")?;
    let n = rest.split('_').next()?.parse().ok()?;
    Some((n, name.ends_with(".compact")))
}

/// A rolling event-log directory's files, as Spark's reader takes them: by index, from the
/// last compacted file on.
fn rolling(fs: &dyn Files, dir: &Path) -> std::io::Result<Option<EventLog>> {
    rolling_of(fs, dir, fs.list(dir)?)
}

/// [`rolling`] of a directory already listed.
fn rolling_of(
    fs: &dyn Files,
    dir: &Path,
    entries: Vec<Entry>,
) -> std::io::Result<Option<EventLog>> {
    let mut files: Vec<(u64, bool, PathBuf)> = Vec::new();
    let mut status = None;
    for entry in entries {
        let Some(name) = entry
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
        else {
            continue;
        };
        if name.starts_with("appstatus_") {
            status = Some(name.ends_with(".inprogress"));
        } else if let Some((n, compact)) = event_file_index(&name)
            && !entry.dir
        {
            files.push((n, compact, entry.path));
        }
    }
    if files.is_empty() {
        return Ok(None);
    }
    // A compacted file comes after the plain file of its index; everything before the last
    // compacted file is in it.
    files.sort_by_key(|(n, compact, _)| (*n, *compact));
    let last_compact = files.iter().rposition(|(_, c, _)| *c);
    let compacted = last_compact.is_some();
    let files: Vec<PathBuf> = files
        .into_iter()
        .skip(last_compact.unwrap_or(0))
        .map(|(_, _, p)| p)
        .collect();
    if !files.first().is_some_and(|f| is_log_file(fs, f)) {
        return Ok(None);
    }
    Ok(Some(EventLog {
        path: dir.to_owned(),
        files,
        // No status file: Spark writes one first, so the writer never got far.
        in_progress: status.unwrap_or(true),
        compacted,
    }))
}

fn single(path: &Path) -> EventLog {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = name.as_deref().unwrap_or_default();
    EventLog {
        path: path.to_owned(),
        files: vec![path.to_owned()],
        in_progress: name.ends_with(".inprogress"),
        compacted: name.ends_with(".compact"),
    }
}

/// The event logs at `path`: one (a log file or a rolling directory), many (a directory of
/// them, by name), or none (`path` holds no event log: it may be a recording).
pub fn find(path: &Path) -> std::io::Result<Vec<EventLog>> {
    find_in(&Local::SAY, path)
}

fn find_in(fs: &dyn Files, path: &Path) -> std::io::Result<Vec<EventLog>> {
    if fs.is_file(path) {
        return Ok(if is_log_file(fs, path) {
            vec![single(path)]
        } else {
            Vec::new()
        });
    }
    let Some(mut entries) = fs.entries(path)? else {
        return Ok(Vec::new());
    };
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let dirs: Vec<(PathBuf, bool)> = entries.iter().map(|e| (e.path.clone(), e.dir)).collect();
    if let Some(log) = rolling_of(fs, path, entries)? {
        return Ok(vec![log]);
    }
    let mut out = Vec::new();
    for (p, dir) in dirs {
        if dir {
            // One unreadable directory does not hide the others.
            out.extend(rolling(fs, &p).ok().flatten());
        } else if is_log_file(fs, &p) {
            out.push(single(&p));
        }
    }
    Ok(out)
}

/// Whether `path` holds event logs (and no recording).
pub fn holds_logs(path: &Path) -> bool {
    find(path).is_ok_and(|l| !l.is_empty())
}

/// Reads one log's lines (bounded by `max_line`) into a converted recording.
#[cfg(test)]
pub(crate) fn read(log: &EventLog, max_line: usize) -> Result<Converted, Failure> {
    read_in(&Local::SAY, log, max_line)
}

fn read_in(fs: &dyn Files, log: &EventLog, max_line: usize) -> Result<Converted, Failure> {
    let mut conv = convert::Converter::new(&log.name());
    if log.compacted {
        conv.damage(
            "compacted by the History Server: the executors that were dead when it compacted \
             are no longer in it (their removals and reasons are lost)"
                .into(),
        );
    }
    let mut buf = Vec::new();
    for (i, file) in log.files.iter().enumerate() {
        let shown = fs.shown(file);
        // What is said of a file goes under the log's name: a rolling log's file by its own
        // name, a single-file log's by none.
        let part = match file.file_name() {
            Some(n) if *file != log.path => format!("{}: ", n.to_string_lossy()),
            _ => String::new(),
        };
        let last = i + 1 == log.files.len();
        let (codec, input) = open_file(fs, file).map_err(|e| {
            Failure::Runtime(format!(
                "cannot read {shown}: {}",
                redact::one_line(&e.to_string())
            ))
        })?;
        let mut input = BufReader::with_capacity(256 * 1024, input);
        for n in 1.. {
            match storage::next_line(&mut input, max_line, false, &mut buf) {
                Ok(None) => break,
                Ok(Some(Line::TooLong(len))) => {
                    conv.damage(format!(
                        "{part}line {n}: {len} bytes, over the line limit (--max-line); skipped"
                    ));
                    continue;
                }
                Ok(Some(Line::Text)) => {}
                Err(e) => {
                    conv.damage(format!(
                        "{part}{} stream: {}; read up to there",
                        codec.as_str(),
                        redact::one_line(&e.to_string())
                    ));
                    if !last {
                        conv.damage(format!(
                            "{part}not the log's last file: what followed it in that file is lost"
                        ));
                    }
                    break;
                }
            }
            let Ok(line) = std::str::from_utf8(&buf) else {
                conv.damage(format!("{part}line {n}: not UTF-8; skipped"));
                continue;
            };
            if line.trim().is_empty() {
                continue;
            }
            match events::parse(line) {
                Ok(ev) => conv.take(ev),
                Err(events::Skip::Unread) => {}
                Err(events::Skip::Bad(why)) => {
                    conv.damage(format!("{part}line {n}: {why}; skipped"));
                }
            }
        }
    }
    Ok(conv.finish(log.in_progress))
}

/// Opens the event logs at `path` as one timeline: a directory of many holds every app
/// in it, each as its own (`--app` then picks, as in any recording).
pub(crate) fn open(path: &Path, max_line: usize, app: Option<&str>) -> Result<Merged, Failure> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    open_in(&Local::SAY, path, &name, max_line, app)
}

/// Whether `name` (a log's file or directory name) is app `id`'s log, as Spark names them:
/// `eventlog_v2_<id>[_<attempt>]` (rolling), `<id>[_<attempt>][.<codec>][.inprogress]`.
pub(crate) fn is_log_of(name: &str, id: &str) -> bool {
    let rest = name.strip_prefix("eventlog_v2_").unwrap_or(name);
    rest.strip_prefix(id)
        .is_some_and(|after| after.is_empty() || after.starts_with(['_', '.']))
}

/// Opens the event logs at a URL (`s3://bucket/spark-events/`, `gs://…`, `abfss://…`,
/// `file:///…`) as one timeline, as [`open`] does a path.
pub(crate) fn open_url(
    url: &str,
    store: &remote::StoreOptions,
    max_line: usize,
    app: Option<&str>,
) -> Result<Merged, Failure> {
    if url.starts_with("file://") {
        let path = remote::file_path(url)?;
        return open_in(
            &Local::SAY,
            &path,
            &path.display().to_string(),
            max_line,
            app,
        );
    }
    let o = remote::Remote::open(url, store)?;
    open_in(&o.remote, &o.key, &o.shown, max_line, app)
}

/// [`open`] in a file system, the recording named `name`.
/// Of a directory of many, with `app` (an id), only the logs Spark named for it are read,
/// when there are any (an app named by its name is found by reading them all).
fn open_in(
    fs: &dyn Files,
    path: &Path,
    name: &str,
    max_line: usize,
    app: Option<&str>,
) -> Result<Merged, Failure> {
    let shown = fs.shown(path);
    let logs = find_in(fs, path).map_err(|e| {
        Failure::Runtime(format!(
            "cannot read {shown}: {}",
            redact::one_line(&e.to_string())
        ))
    })?;
    if logs.is_empty() {
        return Err(Failure::Runtime(format!(
            "{shown} holds no Spark event log"
        )));
    }
    let mut logs = logs;
    if let Some(id) = app
        && logs.len() > 1
        && logs.iter().any(|l| is_log_of(&l.name(), id))
    {
        logs.retain(|l| is_log_of(&l.name(), id));
    }
    let mut all: Vec<Converted> = Vec::with_capacity(logs.len());
    for log in &logs {
        let mut conv = read_in(fs, log, max_line)?;
        // One log at the path given: its name is the path's, which the warnings already say.
        if log.path == path {
            let prefix = format!("{}: ", log.name());
            for d in &mut conv.damaged {
                if let Some(rest) = d.strip_prefix(&prefix) {
                    *d = rest.to_owned();
                }
            }
        }
        all.push(conv);
    }
    Ok(convert::merge(name, all))
}

/// The applications a History Server at `url` has (`app`, or the newest), as one timeline;
/// what it could not give is said as the recording's damage.
pub(crate) fn from_history_server(
    url: &str,
    app: Option<&str>,
    timeout: std::time::Duration,
) -> Result<Merged, Failure> {
    let server = history::HistoryServer::new(url, timeout)?;
    let mut warnings = Vec::new();
    let logs = server.read(app, &mut warnings)?;
    let mut merged = convert::merge(&format!("{} (History Server)", server.name()), logs);
    merged.damaged.splice(0..0, warnings);
    Ok(merged)
}

#[cfg(test)]
mod cost_tests;
#[cfg(test)]
mod tests;
