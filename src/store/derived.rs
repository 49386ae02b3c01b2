//! What is derived from a whole app (its findings, incident, trouble), computed once per
//! change of the app. At 10,000 executors each takes milliseconds and a frame asks for them
//! many times (the apps pane orders by trouble, the strip shows the incident), so every
//! mutation of an app goes through [`edit`], which forgets what was derived.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, OnceLock};

use spark_triage_core::diagnose::advice::Group;
use spark_triage_core::diagnose::app_verdict::AppVerdict;
use spark_triage_core::diagnose::nodes::NodeFailure;
use spark_triage_core::diagnose::{Finding, nodes};
use spark_triage_core::model::cost::pods::PodCost;

use super::{AppRecord, ExecutorRecord, Incident, Trouble};

/// The memo. A clone starts empty (the clone is about to be changed, or is a copy whose
/// values will be computed again on demand), and it is never serialized.
#[derive(Default)]
pub struct Derived {
    findings: OnceLock<Vec<Finding>>,
    advice: OnceLock<Vec<Group>>,
    incident: OnceLock<Incident>,
    trouble: OnceLock<Trouble>,
    verdict: OnceLock<AppVerdict>,
    node_failures: OnceLock<Vec<NodeFailure>>,
    pod_cost: OnceLock<PodCost>,
    /// Its executors by their pod's name: (the name's hash, id), in that order.
    names: OnceLock<Box<[(u64, i64)]>>,
    /// How many of its executors' pods are held for inspection.
    held: OnceLock<usize>,
}

impl Clone for Derived {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Derived")
    }
}

/// The app, to change: copied if shared, with what was derived from it forgotten.
pub(super) fn edit(app: &mut Arc<AppRecord>) -> &mut AppRecord {
    let app = Arc::make_mut(app);
    app.derived = Derived::default();
    app
}

impl AppRecord {
    /// Findings about the whole application (crash loop against Spark's failure budget, a
    /// pod breaking Spark's snapshot, OOM recovery mode, quota), worst first.
    pub fn findings(&self) -> &[Finding] {
        self.derived
            .findings
            .get_or_init(|| self.compute_findings())
    }

    /// Its executors grouped by cause, each with its advice, in the one order every place
    /// that gives advice follows (the failures finding, the strip's change, `report`).
    pub fn advice(&self) -> &[Group] {
        self.derived.advice.get_or_init(|| self.compute_advice())
    }

    /// The application's verdict (its driver, and everything above the executors).
    pub fn verdict(&self) -> &AppVerdict {
        self.derived.verdict.get_or_init(|| self.compute_verdict())
    }

    /// Its executors that failed by their node (evicted, node-level kill, node lost), for
    /// the store's node patterns across apps.
    pub fn node_failures(&self) -> &[NodeFailure] {
        self.derived.node_failures.get_or_init(|| {
            let app = self.app_name.clone().unwrap_or_else(|| self.app_id.clone());
            self.executors
                .values()
                .filter_map(|e| {
                    let code = e.verdict.cause()?.code;
                    let pod = e.ended.as_deref().unwrap_or(&e.pod);
                    if !nodes::is_node_failure(code, pod) {
                        return None;
                    }
                    // The cluster's clocks first (a tool started after the failures saw them
                    // all at once): the container's end, the driver's removal, the
                    // kubelet's event; else when the tool saw it end.
                    let at = super::ended_at(e)?;
                    Some(NodeFailure {
                        at,
                        node: e.pod.node_name.as_deref()?.to_owned(),
                        namespace: self.namespace.clone(),
                        app_id: self.app_id.clone(),
                        app: app.clone(),
                        pod: e.pod.name.clone(),
                        code,
                    })
                })
                .collect()
        })
    }

    /// What its pods cost beside its event log's figures: pods deleted before they ran, the
    /// memory limited against the peak used.
    pub fn pod_cost(&self) -> &PodCost {
        self.derived
            .pod_cost
            .get_or_init(|| self.compute_pod_cost())
    }

    /// The app's incident summary.
    pub fn incident(&self) -> &Incident {
        self.derived
            .incident
            .get_or_init(|| self.compute_incident())
    }

    /// How much trouble the app is in: every list's order (worst first, [`Trouble`]).
    pub fn trouble(&self) -> Trouble {
        *self.derived.trouble.get_or_init(|| self.compute_trouble())
    }

    /// Its executors whose pod is named `name`, in id order (a controller's pod recreated
    /// keeps its name). One binary search: an event about a pod compared the name with
    /// every executor of its namespace, 100,000 at 100 apps of 1,000: about a tenth of
    /// the live view's CPU under churn.
    pub fn executors_named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ExecutorRecord>> + 'a {
        let names = self.derived.names.get_or_init(|| {
            let mut v: Vec<(u64, i64)> = self
                .executors
                .values()
                .map(|e| (name_hash(&e.pod.name), e.id))
                .collect();
            v.sort_unstable();
            v.into_boxed_slice()
        });
        let h = name_hash(name);
        let from = names.partition_point(|(x, _)| *x < h);
        names[from..]
            .iter()
            .take_while(move |(x, _)| *x == h)
            .filter_map(|(_, id)| self.executors.get(id))
            .filter(move |e| e.pod.name == name)
    }

    /// How many of its executors' pods are held for inspection (the live view's tick looks
    /// for holds to release in an app that has any).
    pub fn held(&self) -> usize {
        *self
            .derived
            .held
            .get_or_init(|| self.executors.values().filter(|e| e.pod.is_held()).count())
    }
}

fn name_hash(name: &str) -> u64 {
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}
