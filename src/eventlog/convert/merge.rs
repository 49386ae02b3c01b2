//! Logs converted into one timeline ([`merge`]).

use super::*;

/// Logs converted into one timeline: what a recording of them holds (`record` makes it
/// one, its header from these fields).
#[derive(Debug)]
pub(crate) struct Merged {
    /// The first moment of any log (now, for logs without one).
    pub started_at: Time,
    /// `namespace <ns>` when every log names the same one, else `all namespaces`.
    pub scope: String,
    /// [`SERVER`] and what the logs were read from (a path, a History Server).
    pub server: String,
    /// Every log's events in time order.
    pub events: Vec<SourceEvent>,
    /// What could not be read, said.
    pub damaged: Vec<String>,
}

/// Logs converted into one timeline, their events in time order (a directory of many
/// apps reads as one).
pub(crate) fn merge(name: &str, logs: Vec<Converted>) -> Merged {
    let started_at = logs
        .iter()
        .filter_map(|l| l.started_at)
        .min()
        .unwrap_or_else(chrono::Utc::now);
    let namespaces: BTreeSet<&str> = logs
        .iter()
        .map(|l| l.namespace.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    let scope = match namespaces.len() {
        1 => format!("namespace {}", namespaces.iter().next().unwrap_or(&"")),
        _ => "all namespaces".to_owned(),
    };
    let mut events = Vec::new();
    let mut damaged = Vec::new();
    for l in logs {
        events.extend(l.events);
        damaged.extend(l.damaged);
    }
    // Stable: each log's own order is kept among events at the same moment.
    events.sort_by_key(SourceEvent::at);
    Merged {
        started_at,
        scope,
        server: format!("{SERVER}{name}"),
        events,
        damaged,
    }
}
