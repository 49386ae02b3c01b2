//! The request log behind `/_sim/requests`: each request as it came, when, and how long
//! its answer's head took and how large its body was (what a benchmark reads the tool's
//! cost to the API server from).

use std::time::Duration;

use axum::http::Method;
use serde::Serialize;

use super::ApiState;

/// The newest requests kept.
const MAX_REQUEST_LOG: usize = 100_000;

/// One request, for tests and `/_sim/requests`.
#[derive(Debug, Clone, Serialize)]
pub struct RequestRecord {
    pub method: String,
    pub uri: String,
    /// It asked to upgrade to a WebSocket.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub websocket: bool,
    /// When it came, ms since the Unix epoch (the machine's clock, not the simulated one:
    /// what a benchmark times against).
    pub at_ms: u64,
    /// How long its answer's head took, ms (none until it is answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// Its answer's body size, when known whole (none for a watch or a log stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl ApiState {
    /// Logs a request as it comes; its number, for [`Self::answered`].
    pub(super) fn record(&self, method: &Method, uri: &axum::http::Uri, websocket: bool) -> u64 {
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let mut log = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() >= MAX_REQUEST_LOG {
            log.pop_front();
        }
        log.push_back(RequestRecord {
            method: method.to_string(),
            uri: uri.to_string(),
            websocket,
            at_ms,
            ms: None,
            bytes: None,
        });
        self.recorded
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Request `n` was answered after `took`, with a body of `bytes` when known whole.
    pub(super) fn answered(&self, n: u64, took: Duration, bytes: Option<u64>) {
        let mut log = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        let total = self.recorded.load(std::sync::atomic::Ordering::Relaxed);
        let first = total.saturating_sub(log.len() as u64);
        let Some(r) = n
            .checked_sub(first)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| log.get_mut(i))
        else {
            return; // let go of already
        };
        r.ms = Some(u64::try_from(took.as_millis()).unwrap_or(u64::MAX));
        r.bytes = bytes;
    }

    pub fn request_log(&self) -> Vec<RequestRecord> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}
