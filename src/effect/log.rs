//! The actions log: one JSON line per write, who did what to which pod with what result.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use serde::Serialize;

/// One line of the actions log.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ActionRecord {
    pub at: String,
    /// The kubeconfig user name (never a credential).
    pub user: String,
    /// The kubeconfig context and the API server it points at (host and port): which
    /// cluster the action hit.
    pub context: String,
    pub server: String,
    pub namespace: String,
    pub action: String,
    pub target: String,
    pub result: String,
}

/// Appends actions to a JSON-lines file (default `$XDG_STATE_HOME/spark-triage/actions.log`).
#[derive(Debug, Clone)]
pub struct ActionLog {
    path: Option<PathBuf>,
}

impl ActionLog {
    /// The log every command and the TUI write to: `$SPARK_TRIAGE_ACTIONS_LOG`, or the
    /// default path.
    pub fn from_env() -> Self {
        Self::new(
            std::env::var_os("SPARK_TRIAGE_ACTIONS_LOG")
                .map(PathBuf::from)
                .or_else(Self::default_path),
        )
    }

    pub fn default_path() -> Option<PathBuf> {
        use etcetera::BaseStrategy;
        let base = etcetera::base_strategy::Xdg::new().ok()?.state_dir()?;
        Some(base.join("spark-triage").join("actions.log"))
    }

    pub fn new(path: Option<PathBuf>) -> Self {
        Self { path }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether a record could be appended now (the directory made, the file opened for
    /// appending): a kill or a hold is refused when it could not be logged.
    pub fn writable(&self) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("actions log {}: {e}", path.display()))?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| format!("actions log {}: {e}", path.display()))
    }

    /// Writes one record; a log that cannot be written is reported, never fatal.
    pub fn append(&self, rec: &ActionRecord) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("actions log {}: {e}", path.display()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("actions log {}: {e}", path.display()))?;
        let mut line = serde_json::to_vec(rec).map_err(|e| e.to_string())?;
        line.push(b'\n');
        f.write_all(&line)
            .map_err(|e| format!("actions log {}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_actions_log_appends_json_lines() {
        let dir = std::env::temp_dir().join(format!("st-actions-{}", std::process::id()));
        let log = ActionLog::new(Some(dir.join("a.log")));
        let rec = ActionRecord {
            at: "t".into(),
            user: "u".into(),
            context: "prod".into(),
            server: "api.example:6443".into(),
            namespace: "ns".into(),
            action: "kill".into(),
            target: "ns/p".into(),
            result: "ok".into(),
        };
        log.append(&rec).unwrap();
        log.append(&rec).unwrap();
        let text = std::fs::read_to_string(dir.join("a.log")).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.starts_with(
            "{\"at\":\"t\",\"user\":\"u\",\"context\":\"prod\",\"server\":\"api.example:6443\",\"namespace\":\"ns\",\"action\":\"kill\""
        ));
        let _ = std::fs::remove_dir_all(dir);
    }
}
