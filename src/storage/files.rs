//! Where event logs are read from: this machine's files, or an object store's
//! ([`super::remote`]). The reader lists directories and opens files through [`Files`], so
//! a rolling log in a bucket is found and read as one on disk is.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::redact;

/// A directory's entry: its path and whether it is a directory.
pub(crate) struct Entry {
    pub path: PathBuf,
    pub dir: bool,
}

/// A file system the reader can list and read.
pub(crate) trait Files {
    fn is_file(&self, path: &Path) -> bool;
    fn is_dir(&self, path: &Path) -> bool;
    /// The entries of a directory (one that cannot be read is an error; an entry that
    /// cannot is passed over: a shared directory of many users' logs).
    fn list(&self, dir: &Path) -> std::io::Result<Vec<Entry>>;
    /// The entries of `dir` if it is a directory (with entries, for an object store, where
    /// a prefix with nothing under it is not one); what makes it unreadable is an error.
    fn entries(&self, dir: &Path) -> std::io::Result<Option<Vec<Entry>>> {
        if !self.is_dir(dir) {
            return Ok(None);
        }
        self.list(dir).map(Some)
    }
    /// A file's content, streamed.
    fn open(&self, path: &Path) -> std::io::Result<Box<dyn Read + '_>>;
    /// A path as it is shown (a URL for an object store's).
    fn shown(&self, path: &Path) -> String;
}

/// This machine's files. `Local::SAY` says what it passes over on stderr (a command's
/// output); `Local::QUIET`, for the live view's event-log source, only in the diagnostics
/// log (a line on stderr would be drawn over the screen).
pub(crate) struct Local {
    say: bool,
}

impl Local {
    pub(crate) const SAY: Local = Local { say: true };
    pub(crate) const QUIET: Local = Local { say: false };
}

impl Files for Local {
    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn list(&self, dir: &Path) -> std::io::Result<Vec<Entry>> {
        Ok(std::fs::read_dir(dir)?
            .filter_map(Result::ok)
            .filter_map(|e| {
                let path = e.path();
                // What is neither a file nor a directory (a FIFO named like a log in a
                // shared directory) is passed over, said: opening it would block.
                let Ok(meta) = std::fs::metadata(&path) else {
                    // Unreadable (a dangling link named like a log): its open says why.
                    return Some(Entry { dir: false, path });
                };
                if !meta.is_file() && !meta.is_dir() {
                    tracing::warn!("{}: not a regular file, passed over", path.display());
                    if self.say {
                        eprintln!(
                            "warning: {}: not a regular file (a FIFO, socket or device), passed over",
                            redact::escape_controls(&path.display().to_string())
                        );
                    }
                    return None;
                }
                Some(Entry {
                    dir: meta.is_dir(),
                    path,
                })
            })
            .collect())
    }

    fn open(&self, path: &Path) -> std::io::Result<Box<dyn Read + '_>> {
        Ok(Box::new(super::open_regular(path)?))
    }

    fn shown(&self, path: &Path) -> String {
        path.display().to_string()
    }
}
