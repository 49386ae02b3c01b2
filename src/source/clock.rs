//! The cluster's clock, which every source event is stamped with: an age is "now" on the
//! cluster's clock less a time the cluster wrote (a `creationTimestamp`, a `finishedAt`).
//!
//! On a real cluster that is this machine's clock, corrected by the API server's `Date`
//! header when the two differ by more than [`DEADBAND`] (a laptop whose clock drifted, a
//! cluster that is not NTP-synced): `Date` has a resolution of one second, so a smaller
//! difference is noise, not skew. An in-process cluster (the demo's simulator, whose clock
//! may run faster than real time) has its own ([`Clock::of_cluster`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Utc};
use spark_triage_core::model::Time;

/// Differences between the API server's `Date` and this machine under this are ignored.
pub const DEADBAND_MS: i64 = 2_000;

/// The cluster's clock: a value the connection owns and hands to whatever stamps or ages
/// (the sources, the recorder, the runner, the TUI). Clones share one estimate.
#[derive(Clone)]
pub struct Clock(Arc<Inner>);

struct Inner {
    /// Milliseconds to add to this machine's clock to read the cluster's.
    offset_ms: AtomicI64,
    /// A cluster in this process that keeps its own time (the demo's simulator).
    own: Option<Own>,
}

struct Own {
    now: Box<dyn Fn() -> Time + Send + Sync>,
    /// How many of its seconds pass in one real second.
    rate: f64,
}

impl Clock {
    /// This machine's clock, corrected by the API server's `Date` headers as they come
    /// ([`Clock::observe_date`]).
    pub fn local() -> Self {
        Clock(Arc::new(Inner {
            offset_ms: AtomicI64::new(0),
            own: None,
        }))
    }

    /// A cluster in this process that keeps its own time, running `rate` times as fast as
    /// real time.
    pub fn of_cluster(now: impl Fn() -> Time + Send + Sync + 'static, rate: f64) -> Self {
        Clock(Arc::new(Inner {
            offset_ms: AtomicI64::new(0),
            own: Some(Own {
                now: Box::new(now),
                rate: if rate.is_finite() && rate > 0.0 {
                    rate
                } else {
                    1.0
                },
            }),
        }))
    }

    /// Now, on the cluster's clock.
    pub fn now(&self) -> Time {
        match &self.0.own {
            Some(own) => (own.now)(),
            None => Utc::now() + chrono::TimeDelta::milliseconds(self.offset_ms()),
        }
    }

    /// How many of the cluster's seconds pass in one real second (a demo's simulator may
    /// run faster): a real interval (the poll) is this many times longer on its clock.
    pub fn rate(&self) -> f64 {
        self.0.own.as_ref().map_or(1.0, |o| o.rate)
    }

    fn offset_ms(&self) -> i64 {
        self.0.offset_ms.load(Ordering::Relaxed)
    }

    /// A response's `Date` header: the API server's clock when it answered.
    pub fn observe_date(&self, value: &http::HeaderValue) {
        let Some(server) = value.to_str().ok().and_then(parse_http_date) else {
            return;
        };
        // `Date` is the server's time cut to the second: on average half a second later.
        self.observe(server + chrono::TimeDelta::milliseconds(500), Utc::now());
    }

    fn observe(&self, server: Time, local: Time) {
        let diff = (server - local).num_milliseconds();
        // A measurement within the deadband of the current offset is the header's
        // one-second resolution, not a change: "now" must not jump back and forth with it.
        if (diff - self.offset_ms()).abs() < DEADBAND_MS {
            return;
        }
        // Within the deadband of this machine's clock the two agree.
        let offset = if diff.abs() < DEADBAND_MS { 0 } else { diff };
        self.0.offset_ms.store(offset, Ordering::Relaxed);
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::local()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0.own {
            Some(own) => write!(f, "Clock(in process, ×{})", own.rate),
            None => write!(f, "Clock(local {:+} ms)", self.offset_ms()),
        }
    }
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
        let clock = Clock::local();
        clock.observe(t(1), local);
        assert_eq!(clock.offset_ms(), 0, "a second is resolution");
        clock.observe(t(300), local);
        assert_eq!(clock.offset_ms(), 300_000);
        clock.observe(t(299), local);
        assert_eq!(clock.offset_ms(), 300_000, "no jitter with the resolution");
        clock.observe(t(-90), local);
        assert_eq!(clock.offset_ms(), -90_000);
        assert_eq!(Clock::local().offset_ms(), 0, "each clock its own estimate");
        let sim = Clock::of_cluster(move || local, 4.0);
        assert_eq!((sim.now(), sim.rate()), (local, 4.0));
    }
}
