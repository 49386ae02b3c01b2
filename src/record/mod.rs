//! Recordings: a header line, then one [`SourceEvent`] per line (newline-delimited JSON), in
//! the order the store applied them. Recorded at the `SourceEvent` boundary, so a replay
//! runs the store, diagnosis and UI exactly as the live session did.
//!
//! Nothing secret is written: events carry the lean pod projection (no env values, no
//! annotations but a failed driver's exit exception, credentials redacted; no tokens) and the header names the API server's host, never credentials.
//! Format documented in `docs/recording-format.md`.
//!
//! A name ending in `.zst` is written zstd-compressed (flushed as a zstd block every
//! second, so a crash loses at most a second); readers detect compression by its magic.
//!
//! Keyframes: a line `{"keyframe":{"at":…,"store":…}}` holds the whole store at that
//! moment, so a replay seeks from the nearest keyframe instead of from the start. They are
//! kept as text and parsed only when a seek needs one.

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use spark_triage_core::model::Time;

use crate::eventlog::{Merged, SERVER};
use crate::failure::Failure;
use crate::source::SourceEvent;
use crate::storage::{Line, next_line, open_regular};
use crate::store::Store;

pub mod lock;
pub(crate) mod recorder;
pub mod segments;
mod sink;
pub(crate) mod timeline;

pub use sink::{Collect, ForgetRule, Sink, State};

pub const FORMAT: &str = "spark-triage-recording";
pub const VERSION: u32 = 1;

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub tool_version: String,
    pub started_at: Time,
    /// `namespace spark-jobs` or `all namespaces`.
    pub scope: String,
    pub selector: String,
    /// The API server's host and port (no credentials).
    pub server: String,
    /// In a segmented recording (a directory, `record DIR --rotate`), which segment this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentInfo>,
}

/// A segment's place in its directory: segments of one recorder run share `run_started_at`
/// and count up from 0. A new run after a gap (the recorder was down) starts again at 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentInfo {
    pub run_started_at: Time,
    pub index: u32,
}

/// A time the recording has nothing for (the recorder was down, or a segment is lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Gap {
    pub from: Time,
    pub to: Time,
}

impl Header {
    pub fn new(started_at: Time, scope: String, selector: String, server: String) -> Self {
        Self {
            format: FORMAT.to_owned(),
            version: VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            started_at,
            scope,
            selector,
            server,
            segment: None,
        }
    }

    /// Whether the recording was converted from event logs (and so has no pods).
    pub fn is_converted(&self) -> bool {
        self.server.starts_with(SERVER)
    }

    /// What a converted recording was read from (a log's name, a History Server's address).
    pub fn converted_from(&self) -> Option<&str> {
        self.server.strip_prefix(SERVER)
    }
}

/// Why a recording cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is empty, not a spark-triage recording")]
    Empty { path: String },
    #[error("{path} is not a spark-triage recording (its first line is not a recording header)")]
    Foreign { path: String },
    #[error(
        "{path} holds no recording segments (files named by their start time, *{}; `record DIR --rotate` writes them) and no Spark event log",
        segments::SUFFIX
    )]
    NoSegments { path: String },
    #[error(
        "{path} is a version {version} recording; this spark-triage reads up to version {VERSION} (upgrade it)"
    )]
    TooNew { path: String, version: u32 },
}

/// A keyframe as read: when, how many events came before it, and its text.
#[derive(Debug, Clone)]
pub struct Keyframe {
    pub at: Time,
    /// Events before the keyframe (the store holds exactly their effect).
    pub event_index: usize,
    raw: String,
}

#[derive(Serialize)]
struct KeyframeOut<'a> {
    keyframe: KeyframeBody<&'a Store>,
}

#[derive(Serialize, Deserialize)]
struct KeyframeBody<S> {
    at: Time,
    store: S,
}

#[derive(Deserialize)]
struct KeyframeHead {
    keyframe: KeyframeBody<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct KeyframeIn {
    keyframe: KeyframeBody<Store>,
}

impl Keyframe {
    /// The store it holds; `None` if the line is damaged.
    pub fn store(&self) -> Option<Store> {
        serde_json::from_str::<KeyframeIn>(&self.raw)
            .ok()
            .map(|k| k.keyframe.store)
    }
}

/// A recording read back.
#[derive(Debug)]
pub struct Recording {
    pub header: Header,
    pub events: Vec<SourceEvent>,
    pub keyframes: Vec<Keyframe>,
    /// Lines that could not be read (a torn last line after a crash): `line N: why`.
    pub damaged: Vec<String>,
    /// Where a directory's segments do not join up.
    pub gaps: Vec<Gap>,
}

/// Event logs read as a recording of what a live view would have recorded of the runs.
impl From<Merged> for Recording {
    fn from(m: Merged) -> Self {
        Recording {
            header: Header::new(m.started_at, m.scope, String::new(), m.server),
            events: m.events,
            keyframes: Vec::new(),
            damaged: m.damaged,
            gaps: Vec::new(),
        }
    }
}

impl Keyframe {
    /// The keyframe before the first event, if any: a segment's opening state (what
    /// happened before a directory read that starts after its first segment).
    pub fn opening(keyframes: &[Keyframe]) -> Option<&Keyframe> {
        keyframes.first().filter(|k| k.event_index == 0)
    }
}

/// The longest recording line read by default (`--max-line` changes it). A keyframe of
/// 10,000 executors is a few MB; a longer line is skipped with a warning, never held.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;
/// How [`read_with`] reports a read that failed midway (the rest is unreadable).
const READ_ERROR: &str = "cannot read further: ";
/// The header must be short: a file whose first line is longer is not a recording.
const MAX_HEADER: usize = 64 * 1024;

/// Reads a whole recording; what can be read is read, damage is reported.
pub fn read(path: &str, input: impl BufRead) -> Result<Recording, ReadError> {
    read_with(path, input, DEFAULT_MAX_LINE)
}

/// [`read`] with a line limit: longer lines are skipped and reported as damage.
pub fn read_with(path: &str, input: impl BufRead, max_line: usize) -> Result<Recording, ReadError> {
    let mut rec = Collect::default();
    let header = read_each(path, input, max_line, &mut rec)?;
    Ok(rec.into_recording(header))
}

/// What a streaming read hands over, in the order of the recording.
#[derive(Debug)]
pub enum Item {
    Event(SourceEvent),
    /// Its `event_index` counts the events before it in this read.
    Keyframe(Keyframe),
    /// A line that could not be read: `line N: why`.
    Damaged(String),
}

/// Reads a recording as a stream: the header is returned, every other line goes to `sink`
/// as it is read (nothing is held but the line being read).
pub fn read_each(
    path: &str,
    mut input: impl BufRead,
    max_line: usize,
    sink: &mut dyn Sink,
) -> Result<Header, ReadError> {
    let foreign = || ReadError::Foreign {
        path: path.to_owned(),
    };
    let mut buf = Vec::new();
    // The header from the first bytes: nothing else is read from a file that is not one.
    match next_line(&mut input, MAX_HEADER, true, &mut buf) {
        Ok(Some(Line::Text)) => {}
        Ok(Some(Line::TooLong(_))) => return Err(foreign()),
        Ok(None) => {
            return Err(ReadError::Empty {
                path: path.to_owned(),
            });
        }
        Err(e) => {
            return Err(ReadError::Io {
                path: path.to_owned(),
                source: e,
            });
        }
    }
    let probe: serde_json::Value = serde_json::from_slice(&buf).map_err(|_| foreign())?;
    if probe.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(foreign());
    }
    let version = probe
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0) as u32;
    if version > VERSION {
        return Err(ReadError::TooNew {
            path: path.to_owned(),
            version,
        });
    }
    let header: Header = serde_json::from_value(probe).map_err(|_| foreign())?;
    let mut events = 0;
    for n in 2.. {
        match next_line(&mut input, max_line, false, &mut buf) {
            Ok(None) => break,
            Ok(Some(Line::TooLong(len))) => {
                let limit = if max_line >= 1 << 20 {
                    format!("{} MiB", max_line >> 20)
                } else {
                    format!("{max_line} bytes")
                };
                sink.take(Item::Damaged(format!(
                    "line {n}: {len} bytes, over the line limit of {limit} (--max-line); skipped"
                )));
                continue;
            }
            Ok(Some(Line::Text)) => {}
            Err(e) => {
                sink.take(Item::Damaged(format!("{READ_ERROR}{e}")));
                break;
            }
        }
        let Ok(line) = std::str::from_utf8(&buf) else {
            sink.take(Item::Damaged(format!("line {n}: not UTF-8")));
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with("{\"keyframe\":") {
            sink.take(match serde_json::from_str::<KeyframeHead>(line) {
                Ok(h) => Item::Keyframe(Keyframe {
                    at: h.keyframe.at,
                    event_index: events,
                    raw: line.to_owned(),
                }),
                Err(e) => Item::Damaged(format!("line {n}: keyframe: {e}")),
            });
            continue;
        }
        sink.take(match serde_json::from_str::<SourceEvent>(line) {
            Ok(ev) => {
                events += 1;
                Item::Event(ev)
            }
            Err(e) => Item::Damaged(format!("line {n}: {e}")),
        });
    }
    Ok(header)
}

/// Opens a recording file (plain or zstd) and reads it.
pub fn open(path: &std::path::Path) -> Result<Recording, ReadError> {
    open_with(path, DEFAULT_MAX_LINE)
}

/// [`open`] with a line limit. A zstd file is decompressed as it is read (a small file
/// that expands to gigabytes costs time, not memory); one cut short (a crash) keeps what
/// came before the cut and says so.
pub fn open_with(path: &std::path::Path, max_line: usize) -> Result<Recording, ReadError> {
    let mut rec = Collect::default();
    let header = open_each(path, max_line, &mut rec)?;
    Ok(rec.into_recording(header))
}

/// Reads a recording file (plain or zstd) as a stream into `sink`.
pub fn open_each(
    path: &std::path::Path,
    max_line: usize,
    sink: &mut dyn Sink,
) -> Result<Header, ReadError> {
    use std::io::Read;
    let name = path.display().to_string();
    let io = |source| ReadError::Io {
        path: name.clone(),
        source,
    };
    let mut file = open_regular(path).map_err(io)?;
    let mut magic = [0u8; 4];
    let n = file.read(&mut magic).map_err(io)?;
    let head = std::io::Cursor::new(magic[..n].to_vec()).chain(file);
    if n == 4 && magic == [0x28, 0xb5, 0x2f, 0xfd] {
        let decoder = zstd::stream::read::Decoder::new(head).map_err(io)?;
        // A read that fails midway in a zstd stream is a cut (a crash), said so.
        struct Cut<'a>(&'a mut dyn Sink);
        impl Sink for Cut<'_> {
            fn take(&mut self, item: Item) {
                self.0.take(match item {
                    Item::Damaged(d) => match d.strip_prefix(READ_ERROR) {
                        Some(e) => Item::Damaged(format!(
                            "the compressed stream is cut short ({e}); read up to there"
                        )),
                        None => Item::Damaged(d),
                    },
                    other => other,
                });
            }
        }
        read_each(
            &name,
            std::io::BufReader::with_capacity(256 * 1024, decoder),
            max_line,
            &mut Cut(sink),
        )
    } else {
        read_each(&name, std::io::BufReader::new(head), max_line, sink)
    }
}

/// The output of a recording file: plain, or zstd for `.zst` names.
pub type FileOut = Box<dyn Write + Send>;

/// Creates a recording file (zstd when the name ends in `.zst`) and writes its header.
/// An existing file is an `AlreadyExists` error unless `overwrite`.
pub fn create(
    path: &std::path::Path,
    header: &Header,
    overwrite: bool,
) -> std::io::Result<Writer<FileOut>> {
    let mut open = std::fs::OpenOptions::new();
    open.write(true);
    if overwrite {
        open.create(true).truncate(true);
    } else {
        open.create_new(true);
    }
    let file = std::io::BufWriter::new(open.open(path)?);
    let out: FileOut = if path.extension().is_some_and(|e| e == "zst") {
        Box::new(zstd::stream::write::Encoder::new(file, 9)?.auto_finish())
    } else {
        Box::new(file)
    };
    Writer::new(out, header)
}

/// Appends events; call [`Writer::flush`] at least every second.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    pub events: u64,
    pub bytes: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, header: &Header) -> std::io::Result<Self> {
        let mut line = serde_json::to_vec(header)?;
        line.push(b'\n');
        out.write_all(&line)?;
        Ok(Self {
            out,
            events: 0,
            bytes: line.len() as u64,
        })
    }

    pub fn write(&mut self, ev: &SourceEvent) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(ev)?;
        line.push(b'\n');
        self.out.write_all(&line)?;
        self.events += 1;
        self.bytes += line.len() as u64;
        Ok(())
    }

    /// Writes the whole store as a keyframe at `at`.
    /// Serialized straight into the output (a keyframe of tens of thousands of executors
    /// is tens of MB: never held whole in memory).
    pub fn write_keyframe(&mut self, store: &Store, at: Time) -> std::io::Result<()> {
        struct Counting<'a, W: Write>(&'a mut W, u64);
        impl<W: Write> Write for Counting<'_, W> {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let n = self.0.write(buf)?;
                self.1 += n as u64;
                Ok(n)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                self.0.flush()
            }
        }
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, Counting(&mut self.out, 0));
        serde_json::to_writer(
            &mut out,
            &KeyframeOut {
                keyframe: KeyframeBody { at, store },
            },
        )?;
        out.write_all(b"\n")?;
        let counted = out
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        self.bytes += counted.1;
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl From<ReadError> for Failure {
    fn from(e: ReadError) -> Self {
        Self::Cause(Box::new(e))
    }
}

#[cfg(test)]
mod tests;
