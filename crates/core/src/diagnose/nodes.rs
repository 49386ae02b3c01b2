//! Node patterns: several executors (of one app or of several) failing on the same node
//! within a window. One executor evicted is the executor's story; five on one node in ten
//! minutes is the node's, and the fix is on the node (cordon it, spread the executors), not
//! in the app's settings.
//!
//! Counted: endings that come from the node, not from the executor's own code or limits:
//! the kubelet's evictions for node pressure, a node-level SIGKILL (the kernel's OOM killer
//! under node pressure, not the container's cgroup limit), a graceful node shutdown, a node
//! lost and a container whose status was lost with its node. Not counted: a pod over its own
//! storage limit (it fails on any node) and an eviction through the Eviction API (a drain:
//! the node is already being emptied).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Code, Finding, Severity, Witness};
use crate::model::{ExecutorPod, Time, fmt_time};
use crate::text;

/// Failures on one node within this window make a pattern.
pub const WINDOW: chrono::TimeDelta = chrono::TimeDelta::minutes(30);
/// This many failures (at least) make a pattern.
pub const AT_LEAST: usize = 3;

/// Whether an executor's cause is an ending that comes from its node.
pub fn is_node_failure(code: Code, pod: &ExecutorPod) -> bool {
    let drained = pod.condition("DisruptionTarget").is_some_and(|c| {
        c.status == "True" && c.reason.as_deref() == Some("EvictionByEvictionAPI")
    });
    match code {
        Code::Evicted => !drained,
        Code::NodeSigkill | Code::NodeShutdown | Code::NodeLost | Code::ContainerStatusUnknown => {
            true
        }
        _ => false,
    }
}

/// One executor that failed on a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeFailure {
    /// When it ended (cluster time when known).
    pub at: Time,
    /// The node.
    pub node: String,
    /// Its app's namespace.
    pub namespace: String,
    /// Its app's id.
    pub app_id: String,
    /// Its app for people (name, else id).
    pub app: String,
    /// Its pod.
    pub pod: String,
    /// Its verdict's cause.
    pub code: Code,
}

/// A node where failures cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePattern {
    /// The node.
    pub node: String,
    /// The failures of the busiest window, oldest first.
    pub failures: Vec<NodeFailure>,
}

impl NodePattern {
    /// The apps with a failure in the pattern: (namespace, app id).
    pub fn apps(&self) -> BTreeSet<(&str, &str)> {
        self.failures
            .iter()
            .map(|f| (f.namespace.as_str(), f.app_id.as_str()))
            .collect()
    }

    /// The finding, as one app sees it (its own failures counted apart from the others').
    pub fn finding(&self, namespace: &str, app_id: &str) -> Finding {
        let n = self.failures.len();
        let mine = |f: &NodeFailure| f.namespace == namespace && f.app_id == app_id;
        let own = self.failures.iter().filter(|f| mine(f)).count();
        let first = self.failures.first().map(|f| f.at).unwrap_or_default();
        let last = self.failures.last().map(|f| f.at).unwrap_or_default();
        let span = text::human_duration(last - first);
        let mut by_code: BTreeMap<Code, usize> = BTreeMap::new();
        for f in &self.failures {
            *by_code.entry(f.code).or_default() += 1;
        }
        let mut kinds: Vec<(Code, usize)> = by_code.into_iter().collect();
        // Most first; equal counts in the code table's order.
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let kinds = kinds
            .iter()
            .map(|(c, k)| format!("{k} {c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let others: BTreeSet<&str> = self
            .failures
            .iter()
            .filter(|f| !mine(f))
            .map(|f| f.app.as_str())
            .collect();
        let others: Vec<&str> = others.into_iter().collect();
        let whose = if others.is_empty() {
            "all of this app".to_owned()
        } else {
            format!("{own} of this app, {} of {}", n - own, others.join(", "))
        };
        let node = &self.node;
        let mut f = Finding::new(
            Code::NodeFailures,
            Severity::Warn,
            format!("Node {node}: {n} executor failures within {span} ({whose}): {kinds}"),
        )
        .witness(Witness::Inference)
        .hint(format!(
            "The node, not the app, is the common cause: replacements land on it and fail the \
             same way. Cordon or taint it while it is looked at (kubectl cordon {node}; kubectl \
             describe node {node} for its pressure conditions and events), and spread executors \
             with pod anti-affinity (spark.kubernetes.executor.podTemplateFile) so one node \
             cannot take many."
        ))
        .reference(
            "https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/",
        );
        for x in self.failures.iter().take(8) {
            f = f.evidence(format!(
                "{} {} ({}): {}",
                fmt_time(&x.at),
                x.pod,
                x.app,
                x.code
            ));
        }
        if n > 8 {
            f = f.evidence(format!("and {} more", n - 8));
        }
        f
    }
}

/// The nodes where at least [`AT_LEAST`] failures fall within [`WINDOW`], busiest first;
/// for each, its busiest window. Deterministic: the same failures in any order give the same.
pub fn node_patterns<'a>(failures: impl IntoIterator<Item = &'a NodeFailure>) -> Vec<NodePattern> {
    let mut by_node: BTreeMap<&str, Vec<&NodeFailure>> = BTreeMap::new();
    for f in failures {
        by_node.entry(f.node.as_str()).or_default().push(f);
    }
    let mut out = Vec::new();
    for (node, mut fs) in by_node {
        if fs.len() < AT_LEAST {
            continue;
        }
        fs.sort();
        // The window with the most failures (the earliest of equals), by two pointers.
        let (mut best, mut start) = ((0, 0), 0);
        for end in 0..fs.len() {
            while fs[end].at - fs[start].at > WINDOW {
                start += 1;
            }
            if end + 1 - start > best.1 - best.0 {
                best = (start, end + 1);
            }
        }
        if best.1 - best.0 >= AT_LEAST {
            out.push(NodePattern {
                node: node.to_owned(),
                failures: fs[best.0..best.1].iter().map(|f| (*f).clone()).collect(),
            });
        }
    }
    out.sort_by(|a, b| {
        b.failures
            .len()
            .cmp(&a.failures.len())
            .then(a.node.cmp(&b.node))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing;

    fn failure(min: i64, node: &str, app: &str, pod: &str, code: Code) -> NodeFailure {
        NodeFailure {
            at: "2026-11-29T10:00:00Z".parse::<Time>().unwrap() + chrono::TimeDelta::minutes(min),
            node: node.into(),
            namespace: "spark".into(),
            app_id: format!("spark-{app}"),
            app: app.into(),
            pod: pod.into(),
            code,
        }
    }

    #[test]
    fn failures_on_one_node_within_the_window_make_a_pattern_per_app() {
        let fs = vec![
            failure(0, "node-3", "etl", "etl-exec-1", Code::Evicted),
            failure(4, "node-3", "etl", "etl-exec-5", Code::Evicted),
            failure(9, "node-3", "etl", "etl-exec-9", Code::Evicted),
            failure(11, "node-3", "agg", "agg-exec-2", Code::NodeSigkill),
            // Another node, and the same node long before: not part of it.
            failure(5, "node-1", "etl", "etl-exec-2", Code::Evicted),
            failure(-90, "node-3", "old", "old-exec-1", Code::Evicted),
        ];
        let p = node_patterns(&fs);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(p[0].node, "node-3");
        assert_eq!(p[0].failures.len(), 4);
        assert_eq!(
            p[0].apps().into_iter().collect::<Vec<_>>(),
            [("spark", "spark-agg"), ("spark", "spark-etl")]
        );
        let f = p[0].finding("spark", "spark-etl");
        assert_eq!(f.code, Code::NodeFailures);
        assert_eq!(
            f.summary,
            "Node node-3: 4 executor failures within 11m00s (3 of this app, 1 of agg): 3 evicted, 1 node-sigkill"
        );
        assert!(f.hint.contains("kubectl cordon node-3"));
        assert_eq!(
            f.evidence[0],
            "2026-11-29T10:00:00Z etl-exec-1 (etl): evicted"
        );
        let mut shuffled = fs.clone();
        shuffled.reverse();
        assert_eq!(
            node_patterns(&shuffled),
            p,
            "order of arrival does not matter"
        );
    }

    #[test]
    fn too_few_or_too_spread_is_no_pattern() {
        let fs = vec![
            failure(0, "node-3", "etl", "a", Code::Evicted),
            failure(31, "node-3", "etl", "b", Code::Evicted),
            failure(62, "node-3", "etl", "c", Code::Evicted),
        ];
        assert!(node_patterns(&fs).is_empty());
        assert!(node_patterns(&fs[..2]).is_empty());
        let p = ExecutorPod::default();
        assert!(is_node_failure(Code::NodeLost, &p));
        assert!(is_node_failure(Code::Evicted, &p));
        assert!(
            !is_node_failure(Code::ContainerOomKilled, &p),
            "its own limit, not the node"
        );
        assert!(
            !is_node_failure(Code::LocalStorageExceeded, &p),
            "its own limit too"
        );
        assert!(
            !is_node_failure(Code::Preempted, &p),
            "the scheduler's choice, not the node"
        );
        let drained = testing::pod(serde_json::json!({
            "metadata": {"name": "x"},
            "spec": {"containers": []},
            "status": {"phase": "Failed", "reason": "Evicted", "conditions": [{"type": "DisruptionTarget",
                "status": "True", "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}]}
        }));
        assert!(
            !is_node_failure(Code::Evicted, &drained),
            "a drain, not the node's failure"
        );
    }
}
