//! Files, on this machine or in an object store, read with bounds: the one place that
//! lists directories and opens files for event logs and the fleet tables (a FIFO, socket or
//! device is never opened), reads lines no longer than a limit, and reaches S3, GCS and
//! Azure ([`remote`]).

mod files;
pub(crate) mod remote;

use std::io::BufRead;

pub(crate) use files::{Entry, Files, Local};

/// rustls's crypto provider for the HTTP clients of remote logs (ring, the one kube builds
/// with), installed for the process once; one already installed is kept.
pub(crate) fn tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Opens a path to read, refusing a FIFO, socket or device (a FIFO would block the open
/// until something writes to it, a device would never end): event-log directories are
/// often shared mounts, and a path is the user's. Symbolic links are followed; a directory
/// is opened (reading it is the error the caller reports).
pub(crate) fn open_regular(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(std::io::Error::other(
            "not a regular file (a FIFO, socket or device): not read",
        ));
    }
    std::fs::File::open(path)
}

/// One line as read by [`next_line`].
pub(crate) enum Line {
    /// The line is in the buffer (without its newline).
    Text,
    /// The line was longer than the limit: this many bytes, skipped without being held.
    TooLong(u64),
}

/// Reads the next line into `buf` (cleared first), holding at most `max` bytes of it.
/// A longer line is read to its end (to go on after it), unless `stop_over`: then reading
/// stops at the limit.
pub(crate) fn next_line(
    r: &mut impl BufRead,
    max: usize,
    stop_over: bool,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<Line>> {
    buf.clear();
    let (mut total, mut over, mut any) = (0u64, false, false);
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(any.then_some(if over {
                Line::TooLong(total)
            } else {
                Line::Text
            }));
        }
        any = true;
        let (chunk, used, done) = match avail.iter().position(|b| *b == b'\n') {
            Some(i) => (&avail[..i], i + 1, true),
            None => (avail, avail.len(), false),
        };
        total += chunk.len() as u64;
        if !over {
            if buf.len() + chunk.len() > max {
                over = true;
                *buf = Vec::new();
                if stop_over {
                    return Ok(Some(Line::TooLong(total)));
                }
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        r.consume(used);
        if done {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Some(if over {
                Line::TooLong(total)
            } else {
                Line::Text
            }));
        }
    }
}
