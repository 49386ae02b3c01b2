//! Executors preempted, grouped by who took their place: "3 executors preempted by
//! urgent-sql (spark-high = 1000 > spark-low = 100)".

use std::collections::BTreeMap;

use super::Preemption;
use crate::diagnose::disruption::{preemption_hint, priority_text};
use crate::diagnose::{Code, Finding, Severity, Witness};
use crate::model::driver_state::StreamingQuery;

/// "3 executors preempted by urgent-sql (spark-high = 1000 > spark-low = 100)": grouped by
/// the preemptor's app (else its pod), the largest group first. A Structured Streaming
/// app's (`streaming`) is an error of its own: a query runs until stopped, so every
/// preemption is lost work again and again, and its priority is what to change.
pub(super) fn preemptions(
    all: &[Preemption],
    streaming: Option<&StreamingQuery>,
) -> Option<Finding> {
    if all.is_empty() {
        return None;
    }
    let mut groups: BTreeMap<String, Vec<&Preemption>> = BTreeMap::new();
    for p in all {
        let key = match &p.by {
            Some(r) => r
                .app
                .clone()
                .or_else(|| r.name.clone())
                .or_else(|| r.uid.as_ref().map(|u| format!("pod {u}")))
                .unwrap_or_else(|| "a higher-priority pod".to_owned()),
            None => "higher-priority pods the events do not name".to_owned(),
        };
        groups.entry(key).or_default().push(p);
    }
    let mut groups: Vec<(String, Vec<&Preemption>)> = groups.into_iter().collect();
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    let line = |(who, ps): &(String, Vec<&Preemption>)| {
        let first = ps[0];
        let theirs = first
            .by
            .as_ref()
            .and_then(|r| priority_text(r.priority_class.as_deref(), r.priority));
        let own = priority_text(first.own_class.as_deref(), first.own_priority);
        let versus = match (theirs, own, &first.by) {
            (Some(t), Some(o), _) => format!(" ({t} > {o})"),
            (Some(t), None, _) => format!(" ({t})"),
            (None, Some(o), Some(_)) => format!(" (its priority not known; this app's: {o})"),
            (None, _, _) => String::new(),
        };
        format!(
            "{} executor{} preempted by {who}{versus}",
            ps.len(),
            if ps.len() == 1 { "" } else { "s" }
        )
    };
    let mut summary = line(&groups[0]);
    let rest: usize = groups[1..].iter().map(|g| g.1.len()).sum();
    if rest > 0 {
        summary.push_str(&format!("; {rest} more by others"));
    }
    let by_app = groups[0].1[0].by.as_ref().and_then(|r| r.app.as_deref());
    let (code, severity, summary, hint) = match streaming {
        Some(q) => (
            Code::StreamingPreemptible,
            Severity::Error,
            format!("streaming app ({}): {summary}", q.label()),
            streaming_hint(by_app),
        ),
        None => (
            Code::ExecutorsPreempted,
            Severity::Warn,
            summary,
            preemption_hint(by_app),
        ),
    };
    Some(
        Finding::new(code, severity, summary)
            .witness(Witness::Events)
            .evidence_all(groups.iter().map(line))
            .hint(hint)
            .reference(
                "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/",
            ),
    )
}

/// What to do when a streaming app's pods are preempted.
fn streaming_hint(by_app: Option<&str>) -> String {
    let who = by_app.map_or_else(
        || "pods of a higher priority".to_owned(),
        |a| format!("{a}'s pods"),
    );
    format!(
        "This app runs a Structured Streaming query, which never finishes: {who} take its \
         nodes whenever they need them, and each time its micro-batches are retried, its \
         shuffle and state rebuilt from the checkpoint, and its latency lost. Give the \
         streaming app a PriorityClass above the batch apps' (priorityClassName in \
         spark.kubernetes.driver.podTemplateFile and spark.kubernetes.executor.podTemplateFile), \
         or give the batch apps' class preemptionPolicy: Never so they wait instead of \
         preempting."
    )
}
