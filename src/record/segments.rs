//! Segmented recordings: a directory of self-contained segments (`record DIR --rotate 1h`),
//! read back as one timeline.
//!
//! A segment is an ordinary zstd recording named by its start time in UTC
//! (`20261201T030000.000Z.ndjson.zst`, so names sort by time) whose header says which
//! recorder run it belongs to and its number in that run, and whose first line after the
//! header is a keyframe: the whole state when it opened. So any segment can be read alone,
//! and a directory can be read from any segment on. A recorder that was killed leaves its
//! last segment torn (at most its last second unflushed); the next run restores the state
//! from it, never appends to it, and opens a segment of its own: the time between is a gap.
//!
//! Retention deletes whole segments, oldest first, never the one being written.

use std::path::{Path, PathBuf};

use spark_triage_core::model::Time;

use super::{Gap, Header, Item, Keyframe, ReadError, Recording, SegmentInfo, Sink};
use crate::store::Store;

/// Every segment's name ends so.
pub const SUFFIX: &str = ".ndjson.zst";
/// The start time in a segment's name.
const STAMP: &str = "%Y%m%dT%H%M%S%.3fZ";

/// A segment file in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub path: PathBuf,
    /// From its name.
    pub start: Time,
    pub bytes: u64,
}

/// A segment's file name for its start time.
pub fn name_for(start: Time) -> String {
    format!("{}{SUFFIX}", start.format(STAMP))
}

fn start_of(name: &str) -> Option<Time> {
    let stamp = name.strip_suffix(SUFFIX)?;
    chrono::NaiveDateTime::parse_from_str(stamp, STAMP)
        .ok()
        .map(|t| t.and_utc())
}

/// The segments in `dir`, oldest first; other files are left alone.
pub fn list(dir: &Path) -> std::io::Result<Vec<Segment>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(start) = name.to_str().and_then(start_of) else {
            continue;
        };
        let meta = entry.metadata()?;
        if meta.is_file() {
            out.push(Segment {
                path: entry.path(),
                start,
                bytes: meta.len(),
            });
        }
    }
    out.sort_by(|a, b| (a.start, &a.path).cmp(&(b.start, &b.path)));
    Ok(out)
}

/// How much a directory keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Segments that ended longer ago than this are deleted.
    pub retain: Option<chrono::Duration>,
    /// The directory's segments together stay under this many bytes.
    pub max_bytes: Option<u64>,
}

/// Deletes the oldest segments past the retention or over the size budget; never `current`
/// (the one being written) nor the newest. Returns what was deleted.
pub fn prune(
    dir: &Path,
    budget: Retention,
    now: Time,
    current: &Path,
) -> std::io::Result<Vec<PathBuf>> {
    let segments = list(dir)?;
    let keep = |s: &Segment| s.path == current || Some(s) == segments.last();
    let mut deleted = Vec::new();
    let mut total: u64 = segments.iter().map(|s| s.bytes).sum();
    for (i, s) in segments.iter().enumerate() {
        if keep(s) {
            continue;
        }
        // A segment ends where the next one starts.
        let ended = segments.get(i + 1).map_or(now, |n| n.start);
        let old = budget.retain.is_some_and(|r| ended < now - r);
        let over = budget.max_bytes.is_some_and(|m| total > m);
        if !(old || over) {
            break;
        }
        match std::fs::remove_file(&s.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        total -= s.bytes;
        deleted.push(s.path.clone());
    }
    Ok(deleted)
}

/// The segments that hold `from..to`: from the one holding `from` (its opening keyframe is
/// the state then) to the one holding `to`.
pub fn select(all: &[Segment], from: Option<Time>, to: Option<Time>) -> &[Segment] {
    if all.is_empty() {
        return all;
    }
    let first = from.map_or(0, |f| all.iter().rposition(|s| s.start <= f).unwrap_or(0));
    let last = to.map_or(all.len() - 1, |t| {
        all.iter().rposition(|s| s.start <= t).unwrap_or(0)
    });
    &all[first..=last.max(first)]
}

/// Reads a directory's segments as one recording: from the segment holding `from` (its
/// opening keyframe is the state then) to the one holding `to`. Where two segments do not
/// join up (another recorder run, a lost segment), the recording has a gap. A segment that
/// cannot be read is reported as damage and is a gap too.
pub fn open_dir(
    dir: &Path,
    from: Option<Time>,
    to: Option<Time>,
    max_line: usize,
) -> Result<Recording, ReadError> {
    let mut all = super::Collect::default();
    let header = read_dir_each(dir, from, to, max_line, &mut all)?;
    Ok(all.into_recording(header))
}

/// A streaming read of a directory: the segments' items, and the gaps between them.
pub trait DirSink: Sink {
    fn gap(&mut self, gap: Gap);
}

impl DirSink for super::Collect {
    fn gap(&mut self, gap: Gap) {
        self.gaps.push(gap);
    }
}

/// One segment's items on their way to a directory's sink: keyframes numbered in the whole
/// read, damage named by segment, the last moment kept.
struct InSegment<'a> {
    sink: &'a mut dyn DirSink,
    name: &'a str,
    offset: usize,
    events: usize,
    last_at: Option<Time>,
}

impl Sink for InSegment<'_> {
    fn take(&mut self, item: Item) {
        let item = match item {
            Item::Event(e) => {
                self.events += 1;
                self.last_at = self.last_at.max(Some(e.at()));
                Item::Event(e)
            }
            Item::Keyframe(k) => {
                self.last_at = self.last_at.max(Some(k.at));
                Item::Keyframe(Keyframe {
                    event_index: k.event_index + self.offset,
                    ..k
                })
            }
            Item::Damaged(d) => Item::Damaged(format!("segment {}: {d}", self.name)),
        };
        self.sink.take(item);
    }
}

/// [`open_dir`] as a stream: each segment is read as it is passed on, so a week of
/// segments costs the memory of what the sink keeps. Returns the first segment's header.
pub fn read_dir_each(
    dir: &Path,
    from: Option<Time>,
    to: Option<Time>,
    max_line: usize,
    sink: &mut dyn DirSink,
) -> Result<Header, ReadError> {
    let shown = dir.display().to_string();
    let all = list(dir).map_err(|source| ReadError::Io {
        path: shown.clone(),
        source,
    })?;
    if all.is_empty() {
        return Err(ReadError::NoSegments { path: shown });
    }
    let mut first: Option<Header> = None;
    // The last segment read: its place, and its last moment.
    let mut prev: Option<(Option<SegmentInfo>, Time)> = None;
    let mut offset = 0;
    let mut unreadable = Vec::new();
    for seg in select(&all, from, to) {
        let name = seg
            .path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let mut each = InSegment {
            sink: &mut *sink,
            name: &name,
            offset,
            events: 0,
            last_at: None,
        };
        let header = match super::open_each(&seg.path, max_line, &mut each) {
            Ok(h) => h,
            Err(e) => {
                unreadable.push(format!("segment {name}: {e}"));
                sink.take(Item::Damaged(format!("segment {name}: {e}")));
                continue;
            }
        };
        let (events, last_at) = (each.events, each.last_at);
        offset += events;
        let place = header.segment;
        if let Some((before, before_at)) = prev
            && !follows(before, place)
        {
            sink.gap(Gap {
                from: before_at,
                to: header.started_at.max(before_at),
            });
        }
        prev = Some((place, last_at.unwrap_or(header.started_at)));
        first.get_or_insert(header);
    }
    first.ok_or_else(|| ReadError::NoSegments {
        path: format!(
            "{shown} (no segment could be read: {})",
            unreadable.join("; ")
        ),
    })
}

/// Whether segment `b` continues segment `a` (same run, next number).
fn follows(a: Option<SegmentInfo>, b: Option<SegmentInfo>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a.run_started_at == b.run_started_at && b.index == a.index + 1)
}

/// The newest readable segment's header and state at its end (the store of its opening
/// keyframe with every event after it): where a new recorder run resumes from. A segment
/// whose opening keyframe is torn (killed while writing it) holds nothing after it and is
/// passed over.
pub fn resume(dir: &Path) -> Option<(Header, Store)> {
    let all = list(dir).ok()?;
    all.iter().rev().find_map(|s| {
        // Streamed: an hour of events is applied as it is read, never held.
        let mut state = super::State::default();
        let header = super::open_each(&s.path, super::DEFAULT_MAX_LINE, &mut state).ok()?;
        state.based.then_some((header, state.store))
    })
}

/// Writes a directory's segments for one recorder run.
#[derive(Debug)]
pub struct SegmentWriter {
    dir: PathBuf,
    /// Scope, selector and server of every segment.
    template: Header,
    run_started_at: Time,
    next_index: u32,
    /// The segment being written.
    pub current: PathBuf,
}

impl SegmentWriter {
    /// Starts a run in `dir` (created if missing) with its first segment, whose keyframe
    /// is `store` (the state resumed from the directory's last segment, or empty).
    pub fn start(
        dir: &Path,
        template: Header,
        store: &Store,
        at: Time,
    ) -> std::io::Result<(Self, super::Writer<super::FileOut>)> {
        std::fs::create_dir_all(dir)?;
        let mut w = Self {
            dir: dir.to_owned(),
            template,
            run_started_at: at,
            next_index: 0,
            current: PathBuf::new(),
        };
        let out = w.open(store, at)?;
        Ok((w, out))
    }

    /// Opens the next segment at `at`: its header, then the keyframe of `store`, flushed.
    /// The caller drops the previous writer (which finishes its zstd frame).
    pub fn open(
        &mut self,
        store: &Store,
        at: Time,
    ) -> std::io::Result<super::Writer<super::FileOut>> {
        let header = Header {
            started_at: at,
            segment: Some(SegmentInfo {
                run_started_at: self.run_started_at,
                index: self.next_index,
            }),
            ..self.template.clone()
        };
        // Never onto an existing file (a torn segment of a killed run stays as it is).
        let mut t = at;
        let (path, mut out) = loop {
            let path = self.dir.join(name_for(t));
            match super::create(&path, &header, false) {
                Ok(w) => break (path, w),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    t += chrono::Duration::milliseconds(1);
                }
                Err(e) => return Err(e),
            }
        };
        out.write_keyframe(store, at)?;
        out.flush()?;
        self.current = path;
        self.next_index += 1;
        Ok(out)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests;
