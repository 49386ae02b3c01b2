//! One recorder per recording: an advisory lock (`flock`) on a lock file beside the file,
//! or inside the segment directory, holding the holder's pid, host and start. The kernel
//! drops the lock when its process ends however it ends, so a recorder that was SIGKILLed
//! leaves a file that the next one takes over (and says so); a live holder is refused with
//! who it is.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use spark_triage_core::{model, text};

/// A held lock; dropping it removes the lock file and releases it.
#[derive(Debug)]
pub struct RecorderLock {
    file: File,
    path: PathBuf,
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{target} is being recorded by another recorder ({holder}); one recorder per {kind}")]
    Held {
        target: String,
        holder: String,
        kind: &'static str,
    },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// The lock file of a recording: inside a segment directory, or a hidden file beside a
/// single-file recording.
pub fn lock_path(target: &Path, dir: bool) -> PathBuf {
    if dir {
        return target.join(".spark-triage-recorder.lock");
    }
    let name = target
        .file_name()
        .map_or_else(|| "recording".into(), |n| n.to_string_lossy().into_owned());
    target.with_file_name(format!(".{name}.lock"))
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| text::field(h.trim()).into_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "an unknown host".to_owned())
}

/// What a lock file says about its holder, in one line, bounded.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.rewind();
    let _ = file.take(512).read_to_string(&mut text);
    let text = text::field(text.trim()).into_owned();
    if text.is_empty() {
        "a process that has not said who it is yet".to_owned()
    } else {
        text
    }
}

impl RecorderLock {
    /// Takes the lock of `target` (a directory when `dir`), or says who holds it.
    pub fn acquire(target: &Path, dir: bool) -> Result<Self, LockError> {
        // One lock per file or directory, whatever link or relative path names it.
        let real = match std::fs::canonicalize(target) {
            Ok(p) => p,
            Err(_) => match (target.parent(), target.file_name()) {
                (Some(parent), Some(name)) => {
                    std::fs::canonicalize(if parent.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        parent
                    })
                    .map_or_else(|_| target.to_path_buf(), |p| p.join(name))
                }
                _ => target.to_path_buf(),
            },
        };
        let path = lock_path(&real, dir);
        let io = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        loop {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .map_err(io)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(LockError::Held {
                        target: target.display().to_string(),
                        holder: holder(&mut file),
                        kind: if dir { "directory" } else { "file" },
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
            // The holder before may have removed the file between our open and our lock:
            // then we hold a lock on a file nobody else will open; open the path again.
            let same = std::fs::metadata(&path)
                .ok()
                .zip(file.metadata().ok())
                .is_some_and(|(a, b)| (a.dev(), a.ino()) == (b.dev(), b.ino()));
            if !same {
                continue;
            }
            let before = holder(&mut file);
            if before != "a process that has not said who it is yet" {
                tracing::warn!("taking over the recorder lock of {before}: that process has ended");
            }
            let me = format!(
                "pid {} on {}, since {}",
                std::process::id(),
                host(),
                model::fmt_time(&chrono::Utc::now())
            );
            file.set_len(0).map_err(io)?;
            file.rewind().map_err(io)?;
            file.write_all(me.as_bytes())
                .and_then(|()| file.flush())
                .map_err(io)?;
            return Ok(Self { file, path });
        }
    }
}

impl Drop for RecorderLock {
    fn drop(&mut self) {
        // Removed while still locked: the next recorder opens a new file.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_recorder_is_refused_with_the_holder_then_takes_over() {
        let dir = std::env::temp_dir().join(format!("st-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = RecorderLock::acquire(&dir, true).unwrap();
        let err = RecorderLock::acquire(&dir, true).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())) && err.contains("directory"),
            "{err}"
        );
        drop(first);
        assert!(
            !lock_path(&dir, true).exists(),
            "a clean exit leaves no lock file"
        );
        // A lock file left by a process that was killed is taken over.
        std::fs::write(lock_path(&dir, true), "pid 1 on gone, since then").unwrap();
        let again = RecorderLock::acquire(&dir, true).unwrap();
        drop(again);
        let file = dir.join("r.ndjson");
        std::fs::write(&file, "").unwrap();
        let link = dir.join("link.ndjson");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let held = RecorderLock::acquire(&file, false).unwrap();
        assert!(
            RecorderLock::acquire(&link, false).is_err(),
            "a link to the file is the same recording"
        );
        drop(held);
        // A symlink planted where the lock goes is not followed (nor truncated).
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, lock_path(&file, false)).unwrap();
        assert!(RecorderLock::acquire(&file, false).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert_eq!(
            lock_path(&file, false),
            dir.join(".r.ndjson.lock"),
            "a file's lock is hidden beside it"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
