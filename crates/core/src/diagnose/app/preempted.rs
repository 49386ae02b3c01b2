//! Executors preempted, grouped by who took their place: "3 executors preempted by
//! urgent-sql (spark-high = 1000 > spark-low = 100)".

use std::collections::BTreeMap;

use super::Preemption;
use crate::diagnose::disruption::{preemption_hint, priority_text};
use crate::diagnose::{Code, Finding, Severity, Witness};

/// "3 executors preempted by urgent-sql (spark-high = 1000 > spark-low = 100)": grouped by
/// the preemptor's app (else its pod), the largest group first.
pub(super) fn preemptions(all: &[Preemption]) -> Option<Finding> {
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
    let hint = preemption_hint(groups[0].1[0].by.as_ref().and_then(|r| r.app.as_deref()));
    Some(
        Finding::new(Code::ExecutorsPreempted, Severity::Warn, summary)
            .witness(Witness::Events)
            .evidence_all(groups.iter().map(line))
            .hint(hint)
            .reference(
                "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/",
            ),
    )
}
