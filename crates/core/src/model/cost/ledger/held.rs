//! What shuffle tracking held: the executors idle at their end (removed as idle, or still
//! registered at the app's end) that had written shuffle output, past the idle timeout.

use super::{Executor, Ledger, MAX_EXECUTORS, span};
use crate::model::Time;

/// How long past the idle timeout an executor's removal may take before it counts as held
/// (the kill, the pod's deletion and the driver hearing of it take seconds).
const HELD_AFTER_MS: u64 = 10_000;

/// An executor idle at its end (removed as idle, or still registered at the app's end),
/// for what shuffle tracking held (the idle timeout and the map stages are known at the
/// end).
#[derive(Debug)]
pub(super) struct IdleEnd {
    stages: Vec<u32>,
    /// Its last task's end (or its registration), and its removal or the app's end.
    from: Time,
    to: Time,
    cores: u32,
    /// Still registered at the app's end (dynamic allocation's minimum may keep it).
    at_end: bool,
}

impl Ledger {
    /// `spark.dynamicAllocation.minExecutors`: that many executors stay however idle.
    pub fn min_executors(&mut self, n: u32) {
        self.min_executors = n;
    }

    /// An executor idle at its end, kept for what shuffle tracking held (only one that
    /// wrote output can have been held).
    pub(super) fn idle_end(&mut self, e: &Executor, to: Time, at_end: bool) {
        if e.stages.is_empty() {
            return;
        }
        if self.idle_ends.len() >= MAX_EXECUTORS {
            self.partial = true;
            return;
        }
        self.idle_ends.push(IdleEnd {
            stages: e.stages.clone(),
            from: e.last_end.unwrap_or(e.added).max(e.added),
            to,
            cores: e.cores,
            at_end,
        });
    }

    /// What shuffle tracking held: executors idle past the idle timeout that had written
    /// shuffle output (a task of a stage another names as its parent), with dynamic
    /// allocation on and nothing else keeping the output. Those still registered at the
    /// app's end count past the `minExecutors` dynamic allocation keeps anyway (the
    /// longest held left out: the estimate errs low).
    pub(super) fn held_by_shuffle(&mut self, shuffle_kept: bool) {
        let Some(timeout) = self.waste.idle_timeout_ms.filter(|_| !shuffle_kept) else {
            return;
        };
        let maps: std::collections::HashSet<u32> = self
            .stages
            .values()
            .flat_map(|s| s.parents.iter().copied())
            .collect();
        let timeout = chrono::TimeDelta::milliseconds(i64::try_from(timeout).unwrap_or(i64::MAX));
        let mut held: Vec<(bool, u64, u32)> = self
            .idle_ends
            .iter()
            .filter(|i| i.stages.iter().any(|s| maps.contains(s)))
            .filter_map(|i| {
                let past = span(i.from.checked_add_signed(timeout)?, i.to);
                (past > HELD_AFTER_MS).then_some((i.at_end, past, i.cores))
            })
            .collect();
        // The minimum's executors at the end: the longest held are not counted.
        held.sort_by_key(|(at_end, past, _)| (*at_end, std::cmp::Reverse(*past)));
        let mut kept_anyway = self.min_executors;
        let w = &mut self.waste;
        for (at_end, past, cores) in held {
            if at_end && kept_anyway > 0 {
                kept_anyway -= 1;
                continue;
            }
            w.held_by_shuffle += 1;
            w.held_by_shuffle_ms = w.held_by_shuffle_ms.saturating_add(past);
            w.held_by_shuffle_core_ms = w
                .held_by_shuffle_core_ms
                .saturating_add(past.saturating_mul(u64::from(cores)));
        }
    }
}
