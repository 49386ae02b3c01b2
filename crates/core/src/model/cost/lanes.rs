//! The app's executors over time, for a picture: a lane per executor (registered to
//! removed, its busy spans), bounded: at most [`MAX_LANES`] executors, the first to
//! register, and [`MAX_SPANS`] busy spans each (the two closest merge when one more comes),
//! so a lane costs the same whatever the run's tasks.

use serde::{Deserialize, Serialize};

use crate::model::Time;

/// Lanes kept (the first executors to register).
pub const MAX_LANES: usize = 256;
/// Busy spans kept per lane.
pub const MAX_SPANS: usize = 32;

/// One executor's lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Lane {
    /// The executor's id.
    pub executor: i64,
    /// When it registered.
    pub added: Time,
    /// When the driver removed it (none: to the app's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<Time>,
    /// Removed by dynamic allocation after idling.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idle_removed: bool,
    /// Its busy spans (a task running), as ms from `added`: sorted, apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy: Vec<(u64, u64)>,
}

impl Lane {
    /// A lane from `added`, no task yet.
    pub fn new(executor: i64, added: Time) -> Self {
        Self {
            executor,
            added,
            removed: None,
            idle_removed: false,
            busy: Vec::new(),
        }
    }

    /// A task ran on it from `from` to `to`: its span, merged with those it meets; past
    /// [`MAX_SPANS`], the two closest spans become one.
    pub fn ran(&mut self, from: Time, to: Time) {
        let off = |t: Time| u64::try_from((t - self.added).num_milliseconds()).unwrap_or(0);
        let (a, b) = (off(from), off(to));
        if b <= a {
            return;
        }
        let at = self.busy.partition_point(|s| s.1 < a);
        let mut end = at;
        let (mut lo, mut hi) = (a, b);
        while end < self.busy.len() && self.busy[end].0 <= hi {
            lo = lo.min(self.busy[end].0);
            hi = hi.max(self.busy[end].1);
            end += 1;
        }
        self.busy.splice(at..end, [(lo, hi)]);
        if self.busy.len() > MAX_SPANS {
            let i = (0..self.busy.len() - 1)
                .min_by_key(|i| self.busy[i + 1].0 - self.busy[*i].1)
                .unwrap_or(0);
            self.busy[i].1 = self.busy[i + 1].1;
            self.busy.remove(i + 1);
        }
    }

    /// Whether it was busy at any moment of `[from, to)` ms from `added`.
    pub fn busy_within(&self, from: u64, to: u64) -> bool {
        let at = self.busy.partition_point(|s| s.1 <= from);
        self.busy.get(at).is_some_and(|s| s.0 < to)
    }
}

/// What one column of a drawn lane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Not registered yet, or removed.
    Absent,
    /// Registered, no task running.
    Idle,
    /// A task running at some moment of the column.
    Busy,
    /// The column of its removal.
    End,
}

impl Lane {
    /// The lane in `cols` columns over the run from `start`, `span_ms` long (a column is
    /// busy when a task ran at any moment of it).
    pub fn cells(&self, start: Time, span_ms: u64, cols: usize) -> Vec<Cell> {
        let span = span_ms.max(1) as f64;
        let cols_f = cols.max(1) as f64;
        let at = |t: Time| {
            let ms = (t - start).num_milliseconds().max(0) as f64;
            ((ms / span) * cols_f).min(cols_f - 1.0) as usize
        };
        let added = (self.added - start).num_milliseconds().max(0) as u64;
        let first = at(self.added);
        let last = self.removed.map(at);
        (0..cols)
            .map(|c| {
                if c < first || last.is_some_and(|l| c > l) {
                    return Cell::Absent;
                }
                if last == Some(c) {
                    return Cell::End;
                }
                // The column's span, as ms from the lane's start.
                let from = (c as f64 * span / cols_f) as u64;
                let to = ((c + 1) as f64 * span / cols_f) as u64;
                if self.busy_within(from.saturating_sub(added), to.saturating_sub(added)) {
                    Cell::Busy
                } else {
                    Cell::Idle
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_merge_where_they_meet_and_stay_bounded() {
        let t0 = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("time");
        let s = |n: i64| t0 + chrono::TimeDelta::seconds(n);
        let mut l = Lane::new(1, t0);
        l.ran(s(10), s(20));
        l.ran(s(15), s(30));
        l.ran(s(0), s(5));
        l.ran(s(40), s(41));
        assert_eq!(l.busy, [(0, 5000), (10_000, 30_000), (40_000, 41_000)]);
        assert!(l.busy_within(29_000, 35_000));
        assert!(!l.busy_within(30_000, 40_000));
        for i in 0..100 {
            l.ran(s(100 + 2 * i), s(101 + 2 * i));
        }
        assert_eq!(l.busy.len(), MAX_SPANS);
        // 10 columns of 10 s from t0 - 10 s: absent, then busy, idle, busy…
        let mut m = Lane::new(2, s(10));
        m.ran(s(10), s(25));
        m.removed = Some(s(75));
        let cells = m.cells(t0, 100_000, 10);
        assert_eq!(
            cells,
            [
                Cell::Absent,
                Cell::Busy,
                Cell::Busy,
                Cell::Idle,
                Cell::Idle,
                Cell::Idle,
                Cell::Idle,
                Cell::End,
                Cell::Absent,
                Cell::Absent
            ]
        );
        assert!(l.busy.windows(2).all(|w| w[0].1 < w[1].0), "{:?}", l.busy);
    }
}
