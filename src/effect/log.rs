//! The actions log: one JSON line per write, who did what to which pod with what result.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One line of the actions log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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

/// The result of a kill whose DELETE the API server took.
pub use crate::source::actions_log::KILLED;
use crate::source::{LoggedKill, actions_log};

/// Appends actions to a JSON-lines file (default `$XDG_STATE_HOME/spark-triage/actions.log`).
#[derive(Debug, Clone)]
pub struct ActionLog {
    path: Option<PathBuf>,
}

impl ActionLog {
    /// The log every command and the TUI write to: `$SPARK_TRIAGE_ACTIONS_LOG`, or the
    /// default path.
    pub fn from_env() -> Self {
        Self::new(actions_log::path_from_env())
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

    /// The kills of pods this log holds against `server` since `since` (read back by
    /// `source::actions_log`).
    pub fn kills(&self, server: &str, since: chrono::DateTime<chrono::Utc>) -> Vec<LoggedKill> {
        actions_log::kills(self.path.as_deref(), server, since)
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

    #[test]
    fn the_kills_read_back_are_this_servers_deletions_since_a_time() {
        let dir = std::env::temp_dir().join(format!("st-kills-{}", std::process::id()));
        let log = ActionLog::new(Some(dir.join("a.log")));
        let rec = |at: &str, server: &str, action: &str, result: &str, target: &str| ActionRecord {
            at: at.into(),
            user: "oncall".into(),
            context: "prod".into(),
            server: server.into(),
            namespace: "ns".into(),
            action: action.into(),
            target: target.into(),
            result: result.into(),
        };
        for r in [
            rec(
                "2026-12-05T10:00:00Z",
                "api:6443",
                "kill",
                KILLED,
                "ns/old-exec-1",
            ),
            rec(
                "2026-12-05T12:00:00Z",
                "api:6443",
                "kill",
                KILLED,
                "ns/app-exec-2",
            ),
            rec(
                "2026-12-05T12:00:01Z",
                "other:6443",
                "kill",
                KILLED,
                "ns/app-exec-3",
            ),
            rec(
                "2026-12-05T12:00:02Z",
                "api:6443",
                "kill",
                "already gone",
                "ns/app-exec-4",
            ),
            rec(
                "2026-12-05T12:00:03Z",
                "api:6443",
                "hold",
                "held until x",
                "ns/app-exec-5",
            ),
        ] {
            log.append(&r).unwrap();
        }
        std::fs::write(
            dir.join("a.log"),
            std::fs::read_to_string(dir.join("a.log")).unwrap() + "not a record\n",
        )
        .unwrap();
        let since = chrono::DateTime::parse_from_rfc3339("2026-12-05T11:00:00Z")
            .unwrap()
            .to_utc();
        let kills = log.kills("api:6443", since);
        assert_eq!(
            kills.iter().map(|k| k.pod.as_str()).collect::<Vec<_>>(),
            ["app-exec-2"]
        );
        assert_eq!(
            (kills[0].namespace.as_str(), kills[0].by.as_str()),
            ("ns", "oncall")
        );
        // No log at all: nothing.
        assert!(
            ActionLog::new(Some(dir.join("none.log")))
                .kills("api:6443", since)
                .is_empty()
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
