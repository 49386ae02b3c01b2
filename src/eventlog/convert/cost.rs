//! What the log's configuration says of the cost of a loss: which removals are dynamic
//! allocation's idle ones, and what keeps a lost executor's shuffle output.

use std::time::Duration;

use spark_triage_core::spark::spark_time;

use spark_triage_core::model::Time;
use spark_triage_core::model::cost::ledger::{Outcome, TaskRun};

use super::Converter;
use crate::eventlog::events::Event;

/// Spark's default shuffle manager: an executor's output lives on its disks.
const SORT: [&str; 2] = ["sort", "org.apache.spark.shuffle.sort.SortShuffleManager"];

impl Converter {
    /// A task's end, into the ledger: its stage attempt, its run time, how it ended.
    pub(super) fn costed(
        &mut self,
        executor: &str,
        (stage, attempt): (u32, u32),
        ms: u64,
        at: Option<Time>,
        lost: bool,
        fetch_failed: Option<Option<String>>,
    ) {
        let outcome = match (fetch_failed, lost) {
            (Some(from), _) => Outcome::FetchFailed {
                from: from.and_then(|f| f.parse().ok()),
            },
            (None, true) => Outcome::Lost,
            (None, false) => Outcome::Done,
        };
        self.ledger.task_end(TaskRun {
            stage,
            attempt,
            executor: executor.parse().ok(),
            ms,
            finished: at,
            outcome,
        });
    }

    /// A stage attempt submitted or completed (at its own time, else the log's latest).
    pub(super) fn staged(&mut self, ev: Event) {
        match ev {
            Event::StageSubmitted {
                stage,
                attempt,
                parents,
                at,
            } => {
                if let Some(at) = at.or(self.last_at) {
                    self.seen(at);
                    self.ledger.stage_submitted(stage, attempt, &parents, at);
                }
            }
            Event::StageCompleted {
                stage,
                attempt,
                failed,
                at,
            } => {
                if let Some(at) = at.or(self.last_at) {
                    self.seen(at);
                    self.ledger.stage_completed(stage, attempt, failed, at);
                }
            }
            _ => {}
        }
    }

    fn on(&self, key: &str) -> bool {
        self.property(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// A removal dynamic allocation made of an idle executor: with it on, the driver's kill
    /// ("Executor killed by driver.") or a decommission it asked for.
    pub(super) fn removed_idle(&self, reason: &str) -> bool {
        self.on("spark.dynamicAllocation.enabled")
            && (reason.trim() == "Executor killed by driver."
                || reason.starts_with("Executor decommission"))
    }

    /// `spark.dynamicAllocation.executorIdleTimeout` with dynamic allocation on (Spark's
    /// default: 60 s), ms.
    pub(super) fn idle_timeout_ms(&self) -> Option<u64> {
        if !self.on("spark.dynamicAllocation.enabled") {
            return None;
        }
        let set = self
            .property("spark.dynamicAllocation.executorIdleTimeout")
            .and_then(|v| spark_time(v, Duration::from_secs(1)));
        Some(set.unwrap_or(Duration::from_secs(60)).as_millis() as u64)
    }

    /// What keeps a lost executor's shuffle output, as the configuration says.
    pub(super) fn shuffle_kept_by(&self) -> Option<String> {
        if self.on("spark.shuffle.service.enabled") {
            return Some("the external shuffle service (spark.shuffle.service.enabled)".into());
        }
        if let Some(m) = self.property("spark.shuffle.manager")
            && !SORT.contains(&m.trim())
        {
            return Some(format!(
                "a remote shuffle service (spark.shuffle.manager {m})"
            ));
        }
        (self.on("spark.decommission.enabled")
            && self.on("spark.storage.decommission.enabled")
            && self.on("spark.storage.decommission.shuffleBlocks.enabled"))
        .then(|| {
            "decommissioning's shuffle migration, on a graceful removal only (a pod deleted, \
             preempted or evicted within its grace; not an OOM kill or a node lost)"
                .into()
        })
    }
}
