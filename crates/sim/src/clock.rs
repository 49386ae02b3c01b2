//! The simulator's clock: wall time scaled by `--speed`, so a 60 s scenario can run in 15 s
//! while every timestamp it writes still reads like a real cluster's.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

/// Simulated time = `origin + (real elapsed × speed)`.
#[derive(Debug, Clone)]
pub struct SimClock {
    start: Instant,
    origin: DateTime<Utc>,
    speed: f64,
}

impl SimClock {
    pub fn new(origin: DateTime<Utc>, speed: f64) -> Self {
        Self {
            start: Instant::now(),
            origin,
            speed: if speed.is_finite() && speed > 0.0 {
                speed
            } else {
                1.0
            },
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        let elapsed = self.start.elapsed().as_secs_f64() * self.speed;
        let nanos = (elapsed * 1e9).min(i64::MAX as f64) as i64;
        self.origin + chrono::Duration::nanoseconds(nanos)
    }

    /// Simulated seconds since the start.
    pub fn elapsed_secs(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * self.speed
    }

    /// How long to really wait for `sim` simulated time to pass.
    pub fn real(&self, sim: Duration) -> Duration {
        sim.div_f64(self.speed)
    }

    pub fn speed(&self) -> f64 {
        self.speed
    }
}

/// `2026-11-29T10:00:00Z`, the API's `Time` format.
pub fn fmt_time(t: DateTime<Utc>) -> String {
    crate::model::fmt_time(&t)
}

/// `2026-11-29T10:00:00.123456Z`, the API's `MicroTime` format.
pub fn fmt_micro(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
