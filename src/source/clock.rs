//! The cluster's clock, which every source event is stamped with: an age is "now" on the
//! cluster's clock less a time the cluster wrote (a `creationTimestamp`, a `finishedAt`).
//!
//! On a real cluster that is this machine's clock, corrected by the API server's `Date`
//! header when the two differ by more than [`DEADBAND`] (a laptop whose clock drifted, a
//! cluster that is not NTP-synced): `Date` has a resolution of one second, so a smaller
//! difference is noise, not skew. An in-process cluster (the demo's simulator, whose clock
//! may run faster than real time) installs its own clock instead.

use std::sync::{
    OnceLock,
    atomic::{AtomicI64, Ordering},
};

use chrono::{DateTime, Utc};

use spark_triage_core::model::Time;

/// Differences between the API server's `Date` and this machine under this are ignored.
pub const DEADBAND_MS: i64 = 2_000;

/// Milliseconds to add to this machine's clock to read the cluster's.
static OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// A clock that replaces the estimate (the in-process simulator's).
type Clock = Box<dyn Fn() -> Time + Send + Sync>;
static INSTALLED: OnceLock<Clock> = OnceLock::new();

/// Now, on the cluster's clock.
pub fn now() -> Time {
    match INSTALLED.get() {
        Some(clock) => clock(),
        None => Utc::now() + chrono::TimeDelta::milliseconds(OFFSET_MS.load(Ordering::Relaxed)),
    }
}

/// The cluster is in this process and keeps its own time, running `rate` times as fast as
/// real time (first call wins).
pub fn install(clock: impl Fn() -> Time + Send + Sync + 'static, rate: f64) {
    if INSTALLED.set(Box::new(clock)).is_ok() {
        let _ = RATE.set(rate);
    }
}

static RATE: OnceLock<f64> = OnceLock::new();

/// How many of the cluster's seconds pass in one real second (a demo's simulator may run
/// faster): a real interval (the poll) is this many times longer on the cluster's clock.
pub fn rate() -> f64 {
    RATE.get()
        .copied()
        .filter(|r| r.is_finite() && *r > 0.0)
        .unwrap_or(1.0)
}

/// A response's `Date` header: the API server's clock when it answered.
pub fn observe_date(value: &http::HeaderValue) {
    let Some(server) = value.to_str().ok().and_then(parse_http_date) else {
        return;
    };
    // `Date` is the server's time cut to the second: on average half a second later.
    observe(server + chrono::TimeDelta::milliseconds(500), Utc::now());
}

fn observe(server: Time, local: Time) {
    let diff = (server - local).num_milliseconds();
    // A measurement within the deadband of the current offset is the header's one-second
    // resolution, not a change: "now" must not jump back and forth with it.
    if (diff - OFFSET_MS.load(Ordering::Relaxed)).abs() < DEADBAND_MS {
        return;
    }
    // Within the deadband of this machine's clock the two agree.
    let offset = if diff.abs() < DEADBAND_MS { 0 } else { diff };
    OFFSET_MS.store(offset, Ordering::Relaxed);
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110's IMF-fixdate, what every server sends).
fn parse_http_date(s: &str) -> Option<Time> {
    DateTime::parse_from_rfc2822(s.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The `Date` header a server at `t` sends.
pub fn http_date(t: Time) -> String {
    t.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_header_sets_the_offset_beyond_the_deadband_only() {
        let local = Utc::now();
        let t = |s: i64| local + chrono::TimeDelta::seconds(s);
        assert_eq!(
            parse_http_date(&http_date(t(0))).map(|p| p.timestamp()),
            Some(local.timestamp())
        );
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").map(|p| p.timestamp()),
            Some(784111777)
        );
        assert!(parse_http_date("yesterday").is_none());
        observe(t(1), local);
        assert_eq!(
            OFFSET_MS.load(Ordering::Relaxed),
            0,
            "a second is resolution"
        );
        observe(t(300), local);
        assert_eq!(OFFSET_MS.load(Ordering::Relaxed), 300_000);
        observe(t(299), local);
        assert_eq!(
            OFFSET_MS.load(Ordering::Relaxed),
            300_000,
            "no jitter with the resolution"
        );
        observe(t(-90), local);
        assert_eq!(OFFSET_MS.load(Ordering::Relaxed), -90_000);
        OFFSET_MS.store(0, Ordering::Relaxed);
    }
}
