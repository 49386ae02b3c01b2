//! Recordings: a header line, then one [`SourceEvent`] per line (newline-delimited JSON), in
//! the order the store applied them. Recorded at the `SourceEvent` boundary, so a replay
//! runs the store, diagnosis and UI exactly as the live session did.
//!
//! Nothing secret is written: events carry the lean pod projection (no env values, no
//! annotations, no tokens) and the header names the API server's host, never credentials.
//! Format documented in `docs/recording-format.md`.
//!
//! Not yet: zstd compression, periodic keyframes (issue 6).

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use crate::{model::Time, source::SourceEvent};

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
        }
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
        "{path} is a version {version} recording; this spark-triage reads up to version {VERSION} (upgrade it)"
    )]
    TooNew { path: String, version: u32 },
}

/// A recording read back.
#[derive(Debug)]
pub struct Recording {
    pub header: Header,
    pub events: Vec<SourceEvent>,
    /// Lines that could not be read (a torn last line after a crash): `line N: why`.
    pub damaged: Vec<String>,
}

/// Reads a whole recording; what can be read is read, damage is reported.
pub fn read(path: &str, input: impl BufRead) -> Result<Recording, ReadError> {
    let mut lines = input.lines();
    let first = match lines.next() {
        Some(Ok(l)) => l,
        Some(Err(e)) => {
            return Err(ReadError::Io {
                path: path.to_owned(),
                source: e,
            });
        }
        None => {
            return Err(ReadError::Empty {
                path: path.to_owned(),
            });
        }
    };
    let probe: serde_json::Value =
        serde_json::from_str(&first).map_err(|_| ReadError::Foreign {
            path: path.to_owned(),
        })?;
    if probe.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(ReadError::Foreign {
            path: path.to_owned(),
        });
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
    let header: Header = serde_json::from_value(probe).map_err(|_| ReadError::Foreign {
        path: path.to_owned(),
    })?;
    let mut events = Vec::new();
    let mut damaged = Vec::new();
    for (i, line) in lines.enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                damaged.push(format!("line {}: {e}", i + 2));
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<SourceEvent>(&line) {
            Ok(ev) => events.push(ev),
            Err(e) => damaged.push(format!("line {}: {e}", i + 2)),
        }
    }
    Ok(Recording {
        header,
        events,
        damaged,
    })
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

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header::new(
            chrono::DateTime::UNIX_EPOCH,
            "namespace x".into(),
            "spark-role".into(),
            "127.0.0.1:1".into(),
        )
    }

    #[test]
    fn round_trip_and_a_torn_last_line() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf, &header()).unwrap();
        w.write(&SourceEvent::Tick {
            at: chrono::DateTime::UNIX_EPOCH,
        })
        .unwrap();
        w.flush().unwrap();
        buf.extend_from_slice(b"{\"kind\":\"tick\",\"at\":\"19");
        let r = read("r", &buf[..]).unwrap();
        assert_eq!(r.header, header());
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.damaged.len(), 1);
        assert!(r.damaged[0].starts_with("line 3: "), "{:?}", r.damaged);
    }

    #[test]
    fn foreign_empty_and_newer_files_are_named() {
        assert!(matches!(read("f", &b""[..]), Err(ReadError::Empty { .. })));
        assert!(matches!(
            read("f", &b"hello\n"[..]),
            Err(ReadError::Foreign { .. })
        ));
        assert!(matches!(
            read("f", &b"{\"kind\":\"Pod\"}\n"[..]),
            Err(ReadError::Foreign { .. })
        ));
        let newer = format!("{{\"format\":\"{FORMAT}\",\"version\":99}}\n");
        let e = read("f", newer.as_bytes()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "f is a version 99 recording; this spark-triage reads up to version 1 (upgrade it)"
        );
    }
}
