//! The simulator's clock: wall time scaled by `--speed`, so a 60 s scenario can run in 15 s
//! while every timestamp it writes still reads like a real cluster's.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::model;

/// Simulated time = `origin + (real elapsed × speed)`. Clones share one clock: a change
/// of speed ([`SimClock::set_speed`]) is seen by every part of the simulator at once.
#[derive(Debug, Clone)]
pub struct SimClock {
    /// Simulated time at the start (scenario time 0).
    epoch: DateTime<Utc>,
    rate: Arc<RwLock<Rate>>,
}

/// Since `start` (real), time runs at `speed` from `origin` (simulated).
#[derive(Debug)]
struct Rate {
    start: Instant,
    origin: DateTime<Utc>,
    speed: f64,
}

fn valid(speed: f64) -> f64 {
    if speed.is_finite() && speed > 0.0 {
        speed
    } else {
        1.0
    }
}

impl SimClock {
    pub fn new(origin: DateTime<Utc>, speed: f64) -> Self {
        Self {
            epoch: origin,
            rate: Arc::new(RwLock::new(Rate {
                start: Instant::now(),
                origin,
                speed: valid(speed),
            })),
        }
    }

    fn rate(&self) -> std::sync::RwLockReadGuard<'_, Rate> {
        self.rate
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Simulated time at scenario time 0.
    pub fn epoch(&self) -> DateTime<Utc> {
        self.epoch
    }

    pub fn now(&self) -> DateTime<Utc> {
        let r = self.rate();
        let elapsed = r.start.elapsed().as_secs_f64() * r.speed;
        let nanos = (elapsed * 1e9).min(i64::MAX as f64) as i64;
        r.origin + chrono::Duration::nanoseconds(nanos)
    }

    /// Simulated seconds since the start.
    pub fn elapsed_secs(&self) -> f64 {
        (self.now() - self.epoch)
            .num_microseconds()
            .unwrap_or(i64::MAX) as f64
            / 1e6
    }

    /// How long to really wait for `sim` simulated time to pass.
    pub fn real(&self, sim: Duration) -> Duration {
        sim.div_f64(self.rate().speed)
    }

    pub fn speed(&self) -> f64 {
        self.rate().speed
    }

    /// From now on time runs at `speed` (simulated time goes on from where it is: a
    /// scenario can be run fast to a moment, then watched in real time).
    pub fn set_speed(&self, speed: f64) {
        let now = self.now();
        let mut r = self
            .rate
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *r = Rate {
            start: Instant::now(),
            origin: now,
            speed: valid(speed),
        };
    }
}

/// `2026-11-29T10:00:00Z`, the API's `Time` format.
pub fn fmt_time(t: DateTime<Utc>) -> String {
    model::fmt_time(&t)
}

/// `2026-11-29T10:00:00.123456Z`, the API's `MicroTime` format.
pub fn fmt_micro(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_of_speed_goes_on_from_the_same_moment_in_every_clone() {
        let clock = SimClock::new(chrono::Utc::now(), 1000.0);
        let other = clock.clone();
        std::thread::sleep(Duration::from_millis(20));
        let before = clock.elapsed_secs();
        assert!(before >= 20.0, "{before}");
        other.set_speed(1.0);
        let after = clock.elapsed_secs();
        assert!(
            after >= before && after < before + 1.0,
            "{before} then {after}"
        );
        assert_eq!(clock.speed(), 1.0);
        assert_eq!(clock.real(Duration::from_secs(3)), Duration::from_secs(3));
    }
}
