//! The actions log read back (it is written by the effect layer, `effect::log`): where it
//! is, and the kills made through spark-triage it holds, which a view started after a
//! pod is gone has no other witness of.

use std::path::PathBuf;

use serde::Deserialize;
use spark_triage_core::model::Time;

use super::LoggedKill;

/// The result a kill's line has when its DELETE was taken.
pub const KILLED: &str = "deleted";

/// The most of the log read back: its last MiB (a log is never read whole).
const MAX_TAIL: u64 = 1 << 20;

/// Where the actions log is: `$SPARK_TRIAGE_ACTIONS_LOG`, else
/// `$XDG_STATE_HOME/spark-triage/actions.log`.
pub fn path_from_env() -> Option<PathBuf> {
    std::env::var_os("SPARK_TRIAGE_ACTIONS_LOG")
        .map(PathBuf::from)
        .or_else(default_path)
}

pub fn default_path() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    let base = etcetera::base_strategy::Xdg::new().ok()?.state_dir()?;
    Some(base.join("spark-triage").join("actions.log"))
}

/// The fields of a line read back (the line is `effect::ActionRecord`).
#[derive(Deserialize)]
struct Line {
    at: String,
    user: String,
    server: String,
    action: String,
    target: String,
    result: String,
}

/// The kills of pods the log at `path` holds that were made against `server` since
/// `since`, oldest first. A log that is not there, or a line that is not a record, is
/// nothing.
pub fn kills(path: Option<&std::path::Path>, server: &str, since: Time) -> Vec<LoggedKill> {
    use std::io::{Read, Seek, SeekFrom};
    let Some(mut f) = path.and_then(|p| std::fs::File::open(p).ok()) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(MAX_TAIL);
    let mut tail = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.take(MAX_TAIL).read_to_end(&mut tail).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&tail);
    // A cut first line is not a record.
    text.lines()
        .skip(usize::from(start > 0))
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .filter(|r| r.action == "kill" && r.result == KILLED && r.server == server)
        .filter_map(|r| {
            let at = chrono::DateTime::parse_from_rfc3339(&r.at).ok()?.to_utc();
            let (namespace, pod) = r.target.split_once('/')?;
            (at >= since).then(|| LoggedKill {
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
                at,
                by: r.user,
            })
        })
        .collect()
}
