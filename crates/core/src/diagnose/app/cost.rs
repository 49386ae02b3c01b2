//! What the app's executor losses cost it, as a finding once it matters: the recomputation
//! they caused took more than a tenth of the run ([`COSTLY`]). The figures themselves
//! ([`AppCost`]) go with the app everywhere; this says when to look at them.
//!
//! Ref: `DAGScheduler` (a lost executor's map outputs unregistered, `FetchFailed`, the map
//! stage and the failed stage resubmitted as new attempts).

use super::AppFacts;
use crate::diagnose::{Code, Finding, Severity, Witness};
use crate::model::cost::{AppCost, CostFrom, RerunKind, ms};
use crate::model::fmt_time;

/// The share of the run past which the losses' recomputation is a warning, in percent.
pub const COSTLY: u64 = 10;

pub(super) fn losses_recomputed(f: &AppFacts<'_>) -> Option<Finding> {
    let cost = f.cost?;
    let wall = cost.wall_ms();
    if cost.run_ms == 0 || wall * 100 <= cost.run_ms * COSTLY {
        return None;
    }
    let cause = |x: i64| {
        f.loss_causes
            .iter()
            .find(|(id, _)| *id == x)
            .map(|(_, c)| c.as_str())
    };
    let top = cost.losses.first()?;
    let share = wall * 100 / cost.run_ms;
    let costly: Vec<_> = cost.losses.iter().filter(|l| l.wall_ms > 0).collect();
    let who = match cause(top.executor) {
        Some(c) => format!("executor {}, {c},", top.executor),
        None => format!("executor {}", top.executor),
    };
    let summary = if costly.len() <= 1 {
        format!(
            "≈ {} of the app's {} ({share} %) recomputed after {who} lost its shuffle output",
            ms(wall),
            ms(cost.run_ms)
        )
    } else {
        format!(
            "≈ {} of the app's {} ({share} %) recomputed after {} executor losses; the \
             costliest: {}",
            ms(wall),
            ms(cost.run_ms),
            costly.len(),
            who.trim_end_matches(',')
        )
    };
    let evidence = evidence(cost, &cause);
    Some(
        Finding::new(Code::LossesRecomputed, Severity::Warn, summary)
            .witness(match cost.from {
                CostFrom::EventLog => Witness::EventLog,
                CostFrom::DriverApi => Witness::Driver,
            })
            .evidence_all(evidence)
            .hint(hint(cost)),
    )
}

fn evidence<'a>(cost: &AppCost, cause: &dyn Fn(i64) -> Option<&'a str>) -> Vec<String> {
    let mut out: Vec<String> = cost
        .losses
        .iter()
        .take(5)
        .flat_map(|l| {
            let mut lines = vec![l.line(cause(l.executor), cost.run_ms)];
            lines.extend(l.reruns.iter().take(4).map(|r| {
                format!(
                    "stage {} attempt {} ({}): {} tasks, {} of task time, submitted {}{}",
                    r.stage,
                    r.attempt,
                    match r.kind {
                        RerunKind::Recompute => "its output recomputed",
                        RerunKind::Retry => "retried after the fetch failed",
                    },
                    r.tasks,
                    ms(r.task_ms),
                    fmt_time(&r.submitted),
                    r.completed
                        .map(|c| format!(", completed {}", fmt_time(&c)))
                        .unwrap_or_default()
                )
            }));
            lines
        })
        .collect();
    if cost.losses.len() > 5 {
        out.push(format!("{} more losses", cost.losses.len() - 5));
    }
    out
}

fn hint(cost: &AppCost) -> String {
    let mut hint = "Each loss's own cause is the one to fix (its executor's verdict). A lost \
                    executor's shuffle output is recomputed unless something keeps it"
        .to_owned();
    match &cost.shuffle_kept_by {
        Some(by) => hint.push_str(&format!(
            ": this app has {by}, which did not keep this output"
        )),
        None => hint.push_str(
            ": an external or remote shuffle service, or, for executors removed gracefully \
             (preempted, evicted, scaled down), spark.decommission.enabled=true with \
             spark.storage.decommission.enabled and \
             spark.storage.decommission.shuffleBlocks.enabled",
        ),
    }
    hint.push('.');
    hint
}
