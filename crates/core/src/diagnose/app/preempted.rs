//! Executors preempted, grouped by who took their place: "3 executors preempted by
//! urgent-sql (spark-high = 1000 > spark-low = 100)".

use std::collections::BTreeMap;

use super::Preemption;
use crate::diagnose::disruption::{preemption_hint, priority_text};
use crate::diagnose::{Code, Finding, Severity, Witness};
use crate::model::driver_state::StreamingQuery;

/// Who preempted: the preemptor's app, else its pod.
fn who(p: &Preemption) -> String {
    match &p.by {
        Some(r) => r
            .app
            .clone()
            .or_else(|| r.name.clone())
            .or_else(|| r.uid.as_ref().map(|u| format!("pod {u}")))
            .unwrap_or_else(|| "a higher-priority pod".to_owned()),
        None => "higher-priority pods the events do not name".to_owned(),
    }
}

/// " (spark-high = 1000 > spark-low = 100)": the preemptor's priority against its victim's.
fn versus(p: &Preemption) -> String {
    let theirs =
        p.by.as_ref()
            .and_then(|r| priority_text(r.priority_class.as_deref(), r.priority));
    let own = priority_text(p.own_class.as_deref(), p.own_priority);
    match (theirs, own, &p.by) {
        (Some(t), Some(o), _) => format!(" ({t} > {o})"),
        (Some(t), None, _) => format!(" ({t})"),
        (None, Some(o), Some(_)) => format!(" (its priority not known; this app's: {o})"),
        (None, _, _) => String::new(),
    }
}

/// "3 executors preempted by urgent-sql (spark-high = 1000 > spark-low = 100)": grouped by
/// the preemptor's app (else its pod), the largest group first. A Structured Streaming
/// app's (`streaming`) is an error of its own: a query runs until stopped, so every
/// preemption is lost work again and again, and its priority is what to change; its
/// driver preempted (`driver`) stops the query, and is said first. (A batch app's driver
/// end is its own verdict, `driver-preempted`.)
pub(super) fn preemptions(
    all: &[Preemption],
    driver: Option<&Preemption>,
    streaming: Option<&StreamingQuery>,
) -> Option<Finding> {
    if let (Some(q), Some(d)) = (streaming, driver) {
        let line = format!("its driver preempted by {}{}", who(d), versus(d));
        let mut x = Finding::new(
            Code::StreamingPreemptible,
            Severity::Error,
            format!("streaming app ({}): {line}", q.label()),
        )
        .witness(Witness::Events)
        .evidence(line)
        .hint(streaming_hint(d.by.as_ref().and_then(|r| r.app.as_deref())))
        .reference(
            "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/",
        );
        if let Some(e) = preemptions(all, None, streaming) {
            x.evidence.extend(e.evidence);
        }
        return Some(x);
    }
    if all.is_empty() {
        return None;
    }
    let mut groups: BTreeMap<String, Vec<&Preemption>> = BTreeMap::new();
    for p in all {
        groups.entry(who(p)).or_default().push(p);
    }
    let mut groups: Vec<(String, Vec<&Preemption>)> = groups.into_iter().collect();
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    let line = |(who, ps): &(String, Vec<&Preemption>)| {
        format!(
            "{} executor{} preempted by {who}{}",
            ps.len(),
            if ps.len() == 1 { "" } else { "s" },
            versus(ps[0])
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
        "This app runs a Structured Streaming query: running until stopped, it meets every \
         burst of higher-priority work, and {who} take its nodes whenever they need them; each \
         time its micro-batches are retried, its shuffle and state rebuilt from the checkpoint, \
         and its latency lost. Give the streaming app a PriorityClass above the batch apps' \
         (priorityClassName in spark.kubernetes.driver.podTemplateFile and \
         spark.kubernetes.executor.podTemplateFile), or give the batch apps' class \
         preemptionPolicy: Never so they wait instead of preempting. (A query run with \
         Trigger.AvailableNow or Once ends like a batch job: its priority may rightly be a \
         batch app's.)"
    )
}
