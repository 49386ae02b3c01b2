//! What the log's configuration says of the cost of a loss: which removals are dynamic
//! allocation's idle ones, what a task's time holds, and what keeps a lost executor's
//! shuffle output; and the tasks and stages, into the ledger.

use std::time::Duration;

use spark_triage_core::model::Time;
use spark_triage_core::model::cost::conf::Conf;
use spark_triage_core::model::cost::ledger::{Fetched, Outcome, TaskRun, idle_removal};
use spark_triage_core::spark::spark_time;

use super::Converter;
use crate::eventlog::events::Event;

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
        if self.ledger_cpus.is_none() {
            // `spark.task.cpus`: each task's run time holds that many cores.
            let cpus = self
                .property("spark.task.cpus")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(1);
            self.ledger.task_cpus(cpus);
            self.ledger_cpus = Some(cpus);
        }
        let outcome = match (fetch_failed, lost) {
            (Some(from), _) => Outcome::FetchFailed {
                from: match from {
                    None => Fetched::Unnamed,
                    // A block manager that is no executor (the fallback storage).
                    Some(f) => f.parse().map_or(Fetched::Elsewhere, Fetched::Executor),
                },
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

    /// A removal dynamic allocation made of an idle executor ([`idle_removal`]).
    pub(super) fn removed_idle(&self, reason: &str) -> bool {
        idle_removal(reason, self.on("spark.dynamicAllocation.enabled"))
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
        Some(u64::try_from(set.unwrap_or(Duration::from_secs(60)).as_millis()).unwrap_or(u64::MAX))
    }

    /// `spark.dynamicAllocation.minExecutors` (0 unless set).
    pub(super) fn min_executors(&self) -> u32 {
        self.property("spark.dynamicAllocation.minExecutors")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// What keeps a lost executor's shuffle output, as the configuration says.
    pub(super) fn shuffle_kept_by(&self) -> Option<String> {
        self.properties
            .as_ref()
            .and_then(|p| Conf(p).shuffle_kept_by())
    }
}
