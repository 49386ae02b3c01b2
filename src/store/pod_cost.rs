//! An app's pods' cost ([`PodCost`]): the executor pods deleted before any container ran,
//! and the executors' memory limits against the peaks their driver measured. Made from
//! the records once per change of the app (see `derived`).

use spark_triage_core::diagnose::Code;
use spark_triage_core::model::cost::pods::{MemoryUse, PodCost};
use spark_triage_core::model::{ContainerState, ExecutorState, quantity};

use super::{AppRecord, ExecutorRecord, Gone};

impl AppRecord {
    pub(super) fn compute_pod_cost(&self) -> PodCost {
        let mut cost = PodCost::default();
        let mut memory = MemoryUse {
            whole_process: true,
            ..MemoryUse::default()
        };
        for e in self.executors.values() {
            if e.verdict
                .cause()
                .is_some_and(|f| matches!(f.code, Code::ContainerOomKilled | Code::JvmOom))
            {
                memory.out_of_memory += 1;
            }
            if let Some(pending_ms) = deleted_before_running(e) {
                cost.never_ran += 1;
                cost.never_ran_pending_ms = cost.never_ran_pending_ms.saturating_add(pending_ms);
            }
            let Some(d) = e.driver.as_ref().and_then(|d| d.exec.as_ref()) else {
                continue;
            };
            let (Some(peak), Some(limit)) = (
                d.peak.container_estimate(),
                e.pod
                    .memory_limit(&e.spark_container)
                    .and_then(|l| quantity::parse(&l.had))
                    .map(|b| b as u64)
                    .filter(|b| *b > 0),
            ) else {
                continue;
            };
            memory.measured += 1;
            let percent = u32::try_from(peak.saturating_mul(100) / limit).unwrap_or(u32::MAX);
            // The one nearest its limit (the first of equals).
            if memory.measured == 1 || percent > memory.peak_percent {
                memory.peak_percent = percent;
                memory.limit_bytes = limit;
                memory.peak_bytes = peak;
            }
            memory.whole_process &= d.peak.process_tree_rss.is_some();
        }
        cost.memory = (memory.measured > 0).then_some(memory);
        // The ones let go past the store's bound ran out of memory all the same.
        if let Some(m) = &mut cost.memory {
            for code in [Code::ContainerOomKilled, Code::JvmOom] {
                let gone = self
                    .trimmed
                    .by_cause
                    .get(code.as_str())
                    .copied()
                    .unwrap_or(0)
                    + self.forgotten_counted.get(&code).copied().unwrap_or(0);
                m.out_of_memory = m
                    .out_of_memory
                    .saturating_add(u32::try_from(gone).unwrap_or(u32::MAX));
            }
        }
        cost
    }
}

/// An executor pod deleted before any container of its ran: its time pending, ms. A pod
/// the driver registered, or with a container that started, ran; one never seen as a pod
/// (the driver's list alone), one that vanished from a LIST unseen, or one still there
/// undeleted is not counted.
fn deleted_before_running(e: &ExecutorRecord) -> Option<u64> {
    let deleted_at = match (&e.gone, &e.first_deletion) {
        // Vanished from a LIST: it may have run while unseen.
        (Some(Gone::DriverOnly { .. } | Gone::Restarted { .. } | Gone::Missing { .. }), _) => {
            return None;
        }
        (_, Some(d)) => d.at,
        (Some(g), None) => g.at(),
        (None, None) => return None,
    };
    let registered = e
        .driver
        .as_ref()
        .and_then(|d| d.exec.as_ref())
        .is_some_and(|x| x.add_time.is_some());
    let started = e.pod.container_statuses().iter().any(|c| match &c.state {
        ContainerState::Running { .. } => true,
        ContainerState::Terminated(t) => t.started_at.is_some(),
        _ => false,
    }) || e.ended.as_deref().is_some_and(|p| {
        p.container_statuses()
            .iter()
            .any(|c| matches!(&c.state, ContainerState::Terminated(t) if t.started_at.is_some()))
    });
    // A pod failed before it started (the kubelet's refusal) never ran either.
    let ran = e
        .history
        .iter()
        .any(|t| matches!(t.state, ExecutorState::Running | ExecutorState::Succeeded));
    if registered || started || ran {
        return None;
    }
    let from = e.pod.created_at.unwrap_or(e.first_seen);
    Some(u64::try_from((deleted_at - from).num_milliseconds()).unwrap_or(0))
}

impl AppRecord {
    /// What the strip and the app lists say of its cost, its event log's and its pods':
    /// "+4s recompute, 16 % idle, 3 pods never ran".
    pub fn cost_headline(&self) -> Option<String> {
        let parts: Vec<String> = [
            self.cost.as_deref().and_then(|c| c.headline()),
            self.pod_cost().headline(),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}
