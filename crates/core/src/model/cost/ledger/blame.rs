//! Whose loss a resubmitted stage is: the executor a later stage's fetch failure named,
//! or the one removed since the stage's output was last whole.

use super::{Ledger, RerunKind};
use crate::model::Time;

/// How soon after a fetch failure a resubmission is taken for its parents' (Spark
/// resubmits the missing parents within a second or so, `RESUBMIT_TIMEOUT` 200 ms): a
/// failed stage whose retry never comes (its job aborted) claims no later resubmission.
const PARENTS_RESUBMITTED_WITHIN: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

impl Ledger {
    /// The executor a fetch failure of a later stage named, when that stage's parents are
    /// not known and its retry is still to come: `stage`, resubmitted meanwhile, is one of
    /// its parents (a parent's id is lower than its child's). Only when every such stage
    /// awaiting its retry names the same executor (concurrent jobs' failures could each
    /// claim it: none is guessed).
    pub(super) fn retry_awaiting(&self, stage: u32, at: Time) -> Option<i64> {
        let mut named = self
            .blame
            .iter()
            .filter(|(child, b)| {
                **child > stage
                    && b.kind == RerunKind::Retry
                    && at - b.at <= PARENTS_RESUBMITTED_WITHIN
                    && self.stages.get(child).is_none_or(|s| s.parents.is_empty())
            })
            .map(|(_, b)| b.executor);
        let first = named.next()??;
        named.all(|x| x == Some(first)).then_some(first)
    }

    /// The latest executor removed since `stage`'s last good attempt.
    pub(super) fn missing_output(&self, stage: u32) -> Option<i64> {
        let ok = self.stages.get(&stage)?.last_ok?;
        self.lost_since(ok)
    }

    /// The latest executor removed at or after `since`.
    fn lost_since(&self, since: Time) -> Option<i64> {
        self.recent
            .iter()
            .rev()
            .find(|(_, at)| *at >= since)
            .map(|(x, _)| *x)
    }

    /// The executor whose output a fetch that names none lost: the latest removed since
    /// the stage's parents last completed (their output was whole then).
    pub(super) fn unnamed_loss(&self, stage: u32) -> Option<i64> {
        let seen = self.stages.get(&stage)?;
        let parents_ok = seen
            .parents
            .iter()
            .filter_map(|p| self.stages.get(p)?.last_ok)
            .min();
        // The parents' output was whole when they completed and when this attempt was
        // submitted (Spark checks): lost since the later of the two.
        let since = parents_ok.max(seen.submitted)?;
        self.lost_since(since)
    }
}
