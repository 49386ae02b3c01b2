//! The live view's own diagnostics: a terminal UI cannot print warnings, so what the
//! sources, kube's watcher and the effect runner report through `tracing` goes to a file
//! (`--log-file`, default `$XDG_STATE_HOME/spark-triage/spark-triage.log`). Level from
//! `SPARK_TRIAGE_LOG` (error, warn, info, debug, trace; default info). Bounded: a file past
//! 10 MiB at start is moved to `.1` (one generation kept). Never secrets: what is logged
//! is what the status bar shows (redacted), and kube logs no credentials.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::redact;

/// Past this, the file is rotated at start.
const MAX_BYTES: u64 = 10 * 1024 * 1024;

/// `$XDG_STATE_HOME/spark-triage/spark-triage.log` (or `~/.local/state/…`).
pub(crate) fn default_path() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    let base = etcetera::base_strategy::Xdg::new().ok()?.state_dir()?;
    Some(base.join("spark-triage").join("spark-triage.log"))
}

/// Sends `tracing` to the file; a file that cannot be opened leaves diagnostics off (the
/// view still runs) and says so on stderr before the screen is taken.
pub(crate) fn init(path: Option<&Path>) -> Option<PathBuf> {
    let path = path.map(Path::to_path_buf).or_else(default_path)?;
    let opened = (|| {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_BYTES) {
            let mut old = path.clone().into_os_string();
            old.push(".1");
            std::fs::rename(&path, old)?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
    })();
    let file = match opened {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "warning: no diagnostics log ({}: {e})",
                redact::escape_controls(&path.display().to_string())
            );
            return None;
        }
    };
    let level = match std::env::var("SPARK_TRIAGE_LOG").as_deref() {
        Ok("error") => tracing::Level::ERROR,
        Ok("warn") => tracing::Level::WARN,
        Ok("debug") => tracing::Level::DEBUG,
        Ok("trace") => tracing::Level::TRACE,
        _ => tracing::Level::INFO,
    };
    let ok = tracing_subscriber::fmt()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_max_level(level)
        .try_init()
        .is_ok();
    if ok {
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            "spark-triage started (pid {})",
            std::process::id()
        );
    }
    ok.then_some(path)
}
