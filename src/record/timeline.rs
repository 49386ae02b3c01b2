//! Recordings as the post-mortem commands open them: a file, or a directory of segments
//! read as one timeline, with the moments named on the command line (`--at`, `--from`,
//! `--to`, `--since`) resolved against it.

use chrono::{Local, NaiveDateTime, NaiveTime, TimeZone};
use spark_triage_core::model::{Time, fmt_time};

use super::{Header, Item, Recording, State, segments};
use crate::failure::Failure;
use crate::record::{Collect, Gap, ReadError};
use crate::source::{SourceEvent as E, SourceEvent};
use crate::storage::remote;
use crate::storage::remote::StoreOptions;
use crate::{eventlog, record, redact, storage};

/// How a recording is read: its line limit (`--max-line`), and how an object store holding
/// event logs is reached (`--store-option`, its timeout).
#[derive(Debug, Clone, Default)]
pub(crate) struct Reading {
    pub max_line: u64,
    pub store: StoreOptions,
    /// The app asked for (`--app`): of a directory of event logs, only a log named by its
    /// id is read when there is one.
    pub app: Option<String>,
}

/// A recording opened over a window.
pub(crate) struct Opened {
    pub rec: Recording,
    /// The last moment recorded.
    pub end: Time,
}

const FORMS: &str = "RFC 3339 (2026-12-01T03:00:00Z), a local time (2026-12-01 03:00, or 03:00 \
    for the last one), a time before the end (-2h) or after the start (90s, +90s)";

/// A moment named on the command line, in a recording from `start` to `end`.
pub(crate) fn moment(at: &str, start: Time, end: Time) -> Result<Time, Failure> {
    let at = at.trim();
    let bad = |why: String| Failure::Usage(format!("{at:?}: {why}"));
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(at) {
        return Ok(t.to_utc());
    }
    let duration = |s: &str| {
        humantime::parse_duration(s)
            .ok()
            .and_then(|d| chrono::Duration::from_std(d).ok())
    };
    if let Some(d) = at.strip_prefix('-').and_then(duration) {
        return Ok(end - d);
    }
    if let Some(d) = duration(at.strip_prefix('+').unwrap_or(at)) {
        return Ok(start + d);
    }
    let local = |n: NaiveDateTime| {
        Local
            .from_local_datetime(&n)
            .earliest()
            .map(|t| t.to_utc())
            .ok_or_else(|| bad(format!("{n} does not exist in the local time zone")))
    };
    for f in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(at, f) {
            return local(n);
        }
    }
    for f in ["%H:%M:%S", "%H:%M"] {
        if let Ok(t) = NaiveTime::parse_from_str(at, f) {
            // The latest such local time at or before the end ("03:00" is last night's).
            let day = end.with_timezone(&Local).date_naive();
            let today = local(day.and_time(t))?;
            if today <= end {
                return Ok(today);
            }
            let yesterday = day.pred_opt().ok_or_else(|| bad("out of range".into()))?;
            return local(yesterday.and_time(t));
        }
    }
    Err(bad(format!("not a time: {FORMS}")))
}

/// Whether a file is a tar (`export`'s output): "ustar" at offset 257.
fn is_tar(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 263];
    path.is_file()
        && storage::open_regular(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok()
        && &head[257..262] == b"ustar"
}

/// A tar's segments unpacked into a fresh temporary directory, removed when dropped. Only
/// entries named like segments are taken, by their file name alone (no path from the tar
/// is followed).
struct Unpacked(std::path::PathBuf);

impl Unpacked {
    fn new(tar_path: &std::path::Path) -> Result<Self, Failure> {
        let fail = |e: std::io::Error| {
            Failure::Runtime(format!("cannot unpack {}: {e}", tar_path.display()))
        };
        let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
        let dir =
            std::env::temp_dir().join(format!("spark-triage-tar-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir).map_err(fail)?;
        let me = Self(dir);
        let mut archive = tar::Archive::new(storage::open_regular(tar_path).map_err(fail)?);
        for entry in archive.entries().map_err(fail)? {
            let mut entry = entry.map_err(fail)?;
            let path = entry.path().map_err(fail)?.into_owned();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if entry.header().entry_type().is_file() && name.ends_with(segments::SUFFIX) {
                let mut out = std::fs::File::create(me.0.join(name)).map_err(fail)?;
                std::io::copy(&mut entry, &mut out).map_err(fail)?;
            }
        }
        Ok(me)
    }
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The newest segment was last written when it was last flushed.
pub(crate) fn last_written(segment: &segments::Segment) -> Time {
    std::fs::metadata(&segment.path)
        .and_then(|m| m.modified())
        .map(Time::from)
        .unwrap_or_else(|_| chrono::Utc::now())
        .max(segment.start)
}

/// Opens a recording file or a directory of segments over `from..to` (moments as typed),
/// whole (a replay seeks back and forth), reporting damage and gaps on stderr.
pub(crate) fn open_recording(
    path: &std::path::Path,
    read: &Reading,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Opened, Failure> {
    let mut plan = Plan::new(path, read, from, to)?;
    let mut all = Collect::default();
    let header = plan.read_into(&mut all)?;
    let rec = all.into_recording(header);
    warn(path, &rec.damaged, &rec.gaps);
    Ok(Opened { rec, end: plan.end })
}

/// Reads a recording file or a directory of segments over `from..to` into a [`State`]
/// (`make` builds it for the window resolved): a directory is streamed, segment by segment,
/// so a week of them costs the memory of the state, not of the events.
pub(crate) fn read_state(
    path: &std::path::Path,
    read: &Reading,
    from: Option<&str>,
    to: Option<&str>,
    make: impl FnOnce(Option<Time>, Option<Time>) -> State,
) -> Result<(Header, State, Option<Time>, Option<Time>), Failure> {
    read_state_beside(path, read, None, from, to, make)
}

/// [`read_state`] with Spark's event logs of the same run read beside the recording
/// (`report --event-log`): their events go in among the recording's, in time order, so the
/// logs fill the executors the recording missed and the recording adds what a log cannot
/// know (pods, nodes, events). Only the apps whose logs overlap the recording's span are
/// taken, up to its end; how many others were left out is said. The logs' own damage is
/// the caller's to say.
pub(crate) fn read_state_beside(
    path: &std::path::Path,
    read: &Reading,
    logs: Option<Recording>,
    from: Option<&str>,
    to: Option<&str>,
    make: impl FnOnce(Option<Time>, Option<Time>) -> State,
) -> Result<(Header, State, Option<Time>, Option<Time>), Failure> {
    let mut plan = Plan::new(path, read, from, to)?;
    let mut state = make(plan.from, plan.to);
    let header = match logs {
        None => plan.read_into(&mut state)?,
        Some(logs) => {
            let (events, mut said) = overlapping(logs, plan.start, plan.end);
            let mut fused = Fused {
                inner: &mut state,
                logs: events.into_iter().peekable(),
            };
            let header = plan.read_into(&mut fused)?;
            fused.finish();
            state.damaged.append(&mut said);
            header
        }
    };
    warn(path, &state.damaged, &state.gaps);
    Ok((header, state, plan.from, plan.to))
}

/// Spark's event logs at a path or a URL (an object store's), read whole.
pub(crate) fn event_logs(path: &std::path::Path, read: &Reading) -> Result<Recording, Failure> {
    let max_line = usize::try_from(read.max_line).unwrap_or(usize::MAX);
    match path.to_str().filter(|p| remote::is_url(p)) {
        Some(url) => {
            eventlog::open_url(url, &read.store, max_line, read.app.as_deref()).map(Recording::from)
        }
        None => eventlog::open(path, max_line, read.app.as_deref()).map(Recording::from),
    }
}

/// The app a converted log's event is of.
fn app_of(ev: &SourceEvent) -> Option<(&str, &str)> {
    match ev {
        E::AppNoted {
            namespace, app_id, ..
        }
        | E::DriverConfig {
            namespace, app_id, ..
        }
        | E::DriverExecutors {
            namespace, app_id, ..
        } => Some((namespace, app_id)),
        _ => None,
    }
}

/// The logs' events of the apps whose logs overlap `start..=end` (the recording's span),
/// without their ticks (the recording keeps the time), and what is to be said of the rest.
fn overlapping(logs: Recording, start: Time, end: Time) -> (Vec<SourceEvent>, Vec<String>) {
    use std::collections::BTreeMap;
    let mut span: BTreeMap<(String, String), (Time, Time)> = BTreeMap::new();
    for ev in &logs.events {
        if let Some((ns, id)) = app_of(ev) {
            let at = ev.at();
            let s = span
                .entry((ns.to_owned(), id.to_owned()))
                .or_insert((at, at));
            s.0 = s.0.min(at);
            s.1 = s.1.max(at);
        }
    }
    let taken: std::collections::BTreeSet<(String, String)> = span
        .iter()
        .filter(|(_, (f, l))| *f <= end && *l >= start)
        .map(|(k, _)| k.clone())
        .collect();
    let mut said = Vec::new();
    let left = span.len() - taken.len();
    if left > 0 {
        said.push(format!(
            "--event-log: {left} of its {} applications ran outside the recording ({} to {}): \
             left out",
            span.len(),
            fmt_time(&start),
            fmt_time(&end)
        ));
    }
    let events = logs
        .events
        .into_iter()
        // What the logs say after the recording's end is not judged against pods last seen
        // before it.
        .filter(|ev| {
            ev.at() <= end
                && app_of(ev)
                    .is_some_and(|(ns, id)| taken.contains(&(ns.to_owned(), id.to_owned())))
        })
        .collect();
    (events, said)
}

/// A sink that puts a log's events among a recording's, in time order: each before the
/// first of the recording's events that comes after it (never before the recording's first
/// keyframe, which sets the state a window starts from).
struct Fused<'a, I: Iterator<Item = SourceEvent>> {
    inner: &'a mut State,
    logs: std::iter::Peekable<I>,
}

impl<I: Iterator<Item = SourceEvent>> Fused<'_, I> {
    /// The log's events after the recording's last.
    fn finish(mut self) {
        for ev in self.logs.by_ref() {
            super::Sink::take(self.inner, Item::Event(ev));
        }
    }
}

impl<I: Iterator<Item = SourceEvent>> super::Sink for Fused<'_, I> {
    fn take(&mut self, item: Item) {
        if let Item::Event(ev) = &item {
            let at = ev.at();
            while let Some(ev) = self.logs.next_if(|l| l.at() <= at) {
                super::Sink::take(self.inner, Item::Event(ev));
            }
        }
        super::Sink::take(self.inner, item);
    }
}

impl<I: Iterator<Item = SourceEvent>> segments::DirSink for Fused<'_, I> {
    fn gap(&mut self, gap: Gap) {
        segments::DirSink::gap(self.inner, gap);
    }
}

/// [`read_state`] of a recording already in memory (a History Server's applications).
pub(crate) fn read_state_of(
    rec: Recording,
    max_line: u64,
    from: Option<&str>,
    to: Option<&str>,
    make: impl FnOnce(Option<Time>, Option<Time>) -> State,
) -> Result<(Header, State, Option<Time>, Option<Time>), Failure> {
    let max_line = usize::try_from(max_line).unwrap_or(usize::MAX);
    let mut plan = Plan::over(rec, max_line, from, to)?;
    let mut state = make(plan.from, plan.to);
    let header = plan.read_into(&mut state)?;
    Ok((header, state, plan.from, plan.to))
}

/// Spark's event logs at `path`, read as a recording (their damage said as its own).
fn event_log(
    path: &std::path::Path,
    max_line: usize,
    app: Option<&str>,
) -> Result<Recording, Failure> {
    eventlog::open(path, max_line, app).map(Recording::from)
}

/// A recording to read, with the window resolved against it.
struct Plan {
    what: What,
    max_line: usize,
    from: Option<Time>,
    to: Option<Time>,
    /// The first moment recorded.
    start: Time,
    /// The last moment recorded.
    end: Time,
}

enum What {
    /// A file, read whole (its end is its last event).
    File(Recording),
    /// A directory (and the tar it was unpacked from, removed after the read).
    Dir {
        dir: std::path::PathBuf,
        _unpacked: Option<Unpacked>,
    },
}

impl Plan {
    fn new(
        path: &std::path::Path,
        read: &Reading,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<Self, Failure> {
        let max_line = usize::try_from(read.max_line).unwrap_or(usize::MAX);
        // Event logs in an object store (s3://, gs://, abfss://, file://).
        if let Some(url) = path.to_str().filter(|p| remote::is_url(p)) {
            let rec = eventlog::open_url(url, &read.store, max_line, read.app.as_deref())
                .map(Recording::from)?;
            return Self::over(rec, max_line, from, to);
        }
        // An `export` tar: its segments, unpacked into a directory of our own for the read.
        let unpacked = is_tar(path).then(|| Unpacked::new(path)).transpose()?;
        let dir = unpacked.as_ref().map_or(path, |u| u.0.as_path());
        let (what, start, end) = if dir.is_dir() {
            let segs = segments::list(dir).map_err(|source| ReadError::Io {
                path: path.display().to_string(),
                source,
            })?;
            let (Some(first), Some(last)) = (segs.first(), segs.last()) else {
                // No segments: Spark's event logs (a rolling log, or a directory of them)?
                if unpacked.is_none() && eventlog::holds_logs(path) {
                    let rec = event_log(path, max_line, read.app.as_deref())?;
                    return Self::over(rec, max_line, from, to);
                }
                return Err(ReadError::NoSegments {
                    path: path.display().to_string(),
                }
                .into());
            };
            let (start, end) = (first.start, last_written(last));
            let what = What::Dir {
                dir: dir.to_owned(),
                _unpacked: unpacked,
            };
            (what, start, end)
        } else {
            let rec = match record::open_with(path, max_line) {
                Ok(rec) => rec,
                // Not a recording: a Spark event log, told by its content?
                Err(e @ (ReadError::Foreign { .. } | ReadError::Empty { .. })) => {
                    if !eventlog::holds_logs(path) {
                        return Err(e.into());
                    }
                    event_log(path, max_line, read.app.as_deref())?
                }
                Err(e) => return Err(e.into()),
            };
            return Self::over(rec, max_line, from, to);
        };
        Self::window(what, start, end, max_line, from, to)
    }

    /// A whole recording in memory (a file, or event logs converted) over the window.
    fn over(
        rec: Recording,
        max_line: usize,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<Self, Failure> {
        let start = rec.header.started_at;
        let end = rec
            .events
            .iter()
            .map(SourceEvent::at)
            .max()
            .unwrap_or(start);
        Self::window(What::File(rec), start, end, max_line, from, to)
    }

    fn window(
        what: What,
        start: Time,
        end: Time,
        max_line: usize,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<Self, Failure> {
        let resolve = |s: Option<&str>| s.map(|a| moment(a, start, end)).transpose();
        let (from_at, to_at) = (resolve(from)?, resolve(to)?);
        // A moment outside what was recorded is read at the nearest edge: said, so that the
        // state shown is not taken for the moment asked (`--at 10m` on a 3-minute recording).
        // For a moment (`--at`: the window is one point), not for a report's window.
        if from == to
            && let (Some(typed), Some(at)) = (to, to_at)
            && let Some(edge) = outside(at, start, end)
        {
            eprintln!(
                "warning: {typed:?} ({}) is {edge}: what is shown is the state there",
                fmt_time(&at)
            );
        }
        let (from, to) = (from_at, to_at);
        if let (Some(f), Some(t)) = (from, to)
            && f > t
        {
            return Err(Failure::Usage(format!(
                "the window starts ({}) after it ends ({})",
                fmt_time(&f),
                fmt_time(&t)
            )));
        }
        Ok(Self {
            what,
            max_line,
            from,
            to,
            start,
            end,
        })
    }

    /// Reads into `sink`; returns the (first segment's) header. A recording in memory is
    /// given away as it is read (an event log's views go as the store takes them).
    fn read_into(&mut self, sink: &mut dyn segments::DirSink) -> Result<Header, Failure> {
        match &mut self.what {
            What::Dir { dir, .. } => Ok(segments::read_dir_each(
                dir,
                self.from,
                self.to,
                self.max_line,
                sink,
            )?),
            What::File(rec) => {
                for d in &rec.damaged {
                    sink.take(Item::Damaged(d.clone()));
                }
                // Keyframes where they were: after the events before them.
                let mut keyframes = rec.keyframes.iter().peekable();
                for (i, ev) in std::mem::take(&mut rec.events).into_iter().enumerate() {
                    while let Some(k) = keyframes.next_if(|k| k.event_index <= i) {
                        sink.take(Item::Keyframe(k.clone()));
                    }
                    sink.take(Item::Event(ev));
                }
                for k in keyframes {
                    sink.take(Item::Keyframe(k.clone()));
                }
                Ok(rec.header.clone())
            }
        }
    }
}

/// Where a moment is outside `start..=end`, said ("after the recording's end (…)").
fn outside(at: Time, start: Time, end: Time) -> Option<String> {
    if at > end {
        Some(format!("after the recording's end ({})", fmt_time(&end)))
    } else if at < start {
        Some(format!(
            "before the recording's start ({})",
            fmt_time(&start)
        ))
    } else {
        None
    }
}

fn warn(path: &std::path::Path, damaged: &[String], gaps: &[Gap]) {
    let shown = remote::shown_location(&path.to_string_lossy());
    for d in damaged {
        eprintln!("warning: {shown}: {}", redact::escape_controls(d));
    }
    for g in gaps {
        eprintln!(
            "warning: {shown}: nothing recorded from {} to {} (the recorder was not running)",
            fmt_time(&g.from),
            fmt_time(&g.to)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Time {
        s.parse().expect("time")
    }

    #[test]
    fn moments_in_every_form() {
        let (start, end) = (t("2026-11-30T20:00:00Z"), t("2026-12-01T10:00:00Z"));
        assert_eq!(
            moment("2026-12-01T03:00:00Z", start, end).ok(),
            Some(t("2026-12-01T03:00:00Z"))
        );
        assert_eq!(
            moment("2026-12-01T04:00:00+01:00", start, end).ok(),
            Some(t("2026-12-01T03:00:00Z"))
        );
        assert_eq!(
            moment("-2h", start, end).ok(),
            Some(t("2026-12-01T08:00:00Z"))
        );
        assert_eq!(
            moment("90s", start, end).ok(),
            Some(t("2026-11-30T20:01:30Z"))
        );
        assert_eq!(
            moment("+1h", start, end).ok(),
            Some(t("2026-11-30T21:00:00Z"))
        );
        // Local times: whatever the machine's zone, they read back as typed.
        let local = moment("2026-12-01 03:00", start, end).expect("local");
        assert_eq!(
            local.with_timezone(&Local).format("%F %R").to_string(),
            "2026-12-01 03:00"
        );
        for hm in ["03:00", "09:59:59", "10:30"] {
            let m = moment(hm, start, end).expect(hm);
            assert!(m <= end && m > end - chrono::Duration::days(1), "{hm}: {m}");
            let shown = m.with_timezone(&Local).format("%T").to_string();
            assert!(shown.starts_with(hm), "{hm}: {shown}");
        }
        let e = moment("last tuesday", start, end).expect_err("refused");
        assert!(
            matches!(e, Failure::Usage(ref m) if m.contains("not a time")),
            "{e:?}"
        );
    }
}
