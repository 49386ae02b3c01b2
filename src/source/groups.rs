//! The batch schedulers' group objects (Volcano's PodGroups, Kueue's and the native gang's
//! Workloads), listed every poll interval, but only the kinds a Spark pod names: a cluster
//! without Volcano is never asked for PodGroups. A kind the tool may not list (403) or
//! that the API server does not serve (404: its CRD is not installed) is said once, not
//! retried; its objects are then "unknown because …" in the verdicts that need them.
//!
//! The same poll lists the Spark operators' `SparkApplication`s (kubeflow's, Apache's) where
//! the API server serves them: asked once at its start (`GET /apis`, discovery: never
//! assumed), so a cluster without the operators gets no request for them, ever. An
//! application submitted through an operator is known from its object before any of its
//! pods exists; an object with a Kueue queue label makes Kueue's Workloads wanted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams};
use spark_triage_core::diagnose::operator::read_is_witness;
use spark_triage_core::model::{
    ExecutorPod, GroupKind, OperatorApp, OperatorKind, SchedGroup, Time,
};
use tokio::sync::{Notify, mpsc};

use super::connection::{Connection, send};
use super::{Health, Scope, SourceEvent, SourceKind, errors};

/// The kinds Spark pods named so far, shared by the pod watch (which notes them) and the
/// poll (which lists them, at once for a new kind).
#[derive(Debug, Clone, Default)]
pub struct Wanted {
    kinds: Arc<Mutex<BTreeSet<GroupKind>>>,
    new: Arc<Notify>,
}

impl Wanted {
    /// Notes the kinds a pod names.
    pub fn note(&self, pod: &ExecutorPod) {
        if pod.groups.is_empty() {
            return;
        }
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        let mut added = false;
        for r in &pod.groups {
            added |= kinds.insert(r.kind);
        }
        if added {
            self.new.notify_one();
        }
    }

    /// Notes a kind wanted for another reason than a pod (an operator's object in a
    /// Kueue queue).
    fn want(&self, kind: GroupKind) {
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        if kinds.insert(kind) {
            self.new.notify_one();
        }
    }

    fn get(&self) -> BTreeSet<GroupKind> {
        self.kinds.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

fn api_resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version: format!("{group}/{version}"),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    }
}

/// What one list of a kind gave: its objects as JSON and whether it was whole.
type Listed = (Vec<serde_json::Value>, bool);

/// One list of a kind, in the scope (`MAX_OBJECTS` at most: a cut list is partial).
async fn list(
    conn: &Connection,
    namespace: Option<&str>,
    ar: &ApiResource,
) -> Result<Listed, kube::Error> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(conn.client.clone(), ns, ar),
        None => Api::all_with(conn.client.clone(), ar),
    };
    let list = api.list(&ListParams::default().limit(MAX_OBJECTS)).await?;
    // A list cut at the page limit is partial: absence from it says nothing.
    let complete = list.metadata.continue_.as_deref().is_none_or(str::is_empty);
    let objects = list
        .items
        .iter()
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect();
    Ok((objects, complete))
}

/// What discovery said of the operators' kinds: those served, and why each other is not
/// read; `failed` when discovery itself did not answer (asked again later).
struct Discovered {
    served: Vec<OperatorKind>,
    not_served: Vec<(OperatorKind, String)>,
    failed: bool,
}

/// The operators' kinds the API server serves, from discovery (`GET /apis`).
async fn served_operators(conn: &Connection) -> Discovered {
    let groups = conn.client.list_api_groups().await;
    let mut out = Discovered {
        served: Vec::new(),
        not_served: Vec::new(),
        failed: groups.is_err(),
    };
    for k in OperatorKind::ALL {
        match &groups {
            Ok(g)
                if g.groups.iter().any(|g| {
                    g.name == k.group() && g.versions.iter().any(|v| v.version == k.version())
                }) =>
            {
                out.served.push(k);
            }
            Ok(_) => out.not_served.push((
                k,
                format!(
                    "{} is not served by this API server ({} is not installed)",
                    k.resource(),
                    k.owner()
                ),
            )),
            Err(e) => out.not_served.push((
                k,
                format!("API discovery failed: {}", errors::error_line(e)),
            )),
        }
    }
    out
}

/// How long after a failed discovery it is asked again.
const REDISCOVER: Duration = Duration::from_secs(60);

/// The most objects of one kind read per list (more are not read; a cut list is marked
/// partial, so nothing is claimed absent from it).
const MAX_OBJECTS: u32 = 2_000;

/// What the poll remembers between passes, per resource (`podgroups.scheduling.volcano.sh`).
#[derive(Default)]
struct PollState {
    /// Kinds said unknown (forbidden, not served): never asked again.
    given_up: BTreeSet<String>,
    /// The last list sent of each (as JSON): an unchanged list is not sent again.
    last: BTreeMap<String, String>,
    /// When each was last sent (the cluster's clock): an unchanged list is sent once more
    /// when an object's read becomes a witness since.
    sent_at: BTreeMap<String, Time>,
    /// Kinds whose last list failed (the next success says the source recovered).
    failing: BTreeSet<String>,
    /// The kinds refused so far: one health line names them all (the health of a source is
    /// one value, and a second refusal must not hide the first).
    refused: Vec<String>,
}

/// One kind's list in one pass: the events it gives (none when unchanged or given up).
/// `listed` makes the kind's event of its objects, or of why it cannot be read.
async fn pass_kind<T: serde::Serialize>(
    st: &mut PollState,
    conn: &Connection,
    namespace: Option<&str>,
    (ar, owner): (&ApiResource, &str),
    project: impl Fn(&serde_json::Value) -> T,
    listed: impl FnOnce(Vec<T>, Option<String>, bool) -> SourceEvent,
    read_matters: impl Fn(&T, Option<Time>) -> bool,
) -> Vec<SourceEvent> {
    let resource = format!("{}.{}", ar.plural, ar.group);
    if st.given_up.contains(&resource) {
        return Vec::new();
    }
    let now = conn.clock.now();
    let health = |health| SourceEvent::SourceHealth {
        source: SourceKind::SchedulerObjects,
        health,
        at: now,
    };
    match list(conn, namespace, ar).await {
        Ok((objects, complete)) => {
            let objects: Vec<T> = objects.iter().map(project).collect();
            let recovered = st.failing.remove(&resource);
            let json = serde_json::to_string(&objects).unwrap_or_default();
            // An unchanged list is not sent again, unless an object's read itself is the
            // witness (a schedule's due run: the operator writes nothing while it skips).
            let since = st.sent_at.get(&resource).copied();
            if st.last.get(&resource) == Some(&json)
                && !recovered
                && !objects.iter().any(|o| read_matters(o, since))
            {
                return Vec::new();
            }
            st.sent_at.insert(resource.clone(), now);
            st.last.insert(resource, json);
            let mut out = Vec::new();
            if recovered {
                out.push(health(Health::Connected));
            }
            out.push(listed(objects, None, complete));
            out
        }
        Err(kube::Error::Api(s)) if s.code == 403 || s.code == 404 => {
            st.given_up.insert(resource.clone());
            let scope = conn.scope.describe();
            let mut out = Vec::new();
            let why = if s.code == 403 {
                st.refused.push(resource.clone());
                out.push(health(Health::Forbidden {
                    permission: format!("list {} in {scope}", st.refused.join(", ")),
                }));
                format!("forbidden: the tool may not list {resource} in {scope}")
            } else {
                format!("{resource} is not served by this API server (is {owner} installed?)")
            };
            out.push(listed(Vec::new(), Some(why), true));
            out
        }
        Err(e) => {
            st.failing.insert(resource.clone());
            vec![health(Health::Retrying {
                error: format!("{resource}: {}", errors::error_line(&e)),
            })]
        }
    }
}

pub(super) async fn group_poll(
    conn: Connection,
    every: Duration,
    wanted: Wanted,
    tx: mpsc::Sender<SourceEvent>,
) {
    let namespace = match &conn.scope {
        Scope::Namespace(ns) => Some(ns.clone()),
        Scope::All => None,
    };
    let ns = namespace.as_deref();
    // Discovery at the start, and again a minute after each failure (a successful one is
    // final). The kinds not served are said (nothing waits on them); a failed discovery is
    // said once, at the start, and replaced by what a later one says.
    let mut operators: Vec<OperatorKind> = Vec::new();
    let mut rediscover = Some(tokio::time::Instant::now());
    let mut first = true;
    let mut st = PollState::default();
    let every = every.max(Duration::from_millis(100));
    loop {
        if let Some(at) = rediscover
            && tokio::time::Instant::now() >= at
        {
            let found = served_operators(&conn).await;
            if first || !found.failed {
                for (kind, why) in found.not_served {
                    let ev = SourceEvent::OperatorAppsListed {
                        operator_kind: kind,
                        namespace: namespace.clone(),
                        objects: Vec::new(),
                        unknown: Some(why),
                        complete: true,
                        at: conn.clock.now(),
                    };
                    if !send(&tx, ev).await {
                        return;
                    }
                }
            }
            first = false;
            operators = found.served;
            rediscover = found
                .failed
                .then(|| tokio::time::Instant::now() + REDISCOVER);
        }
        let mut events = Vec::new();
        for kind in operators.iter().copied() {
            let ar = api_resource(kind.group(), kind.version(), kind.kind(), kind.plural());
            let project = |v: &serde_json::Value| OperatorApp::from_value(kind, v);
            let listed = |objects: Vec<OperatorApp>, unknown, complete| {
                // An app in a Kueue queue is admitted through its Workload.
                if objects.iter().any(|o| o.queue.is_some()) {
                    wanted.want(GroupKind::KueueWorkload);
                }
                SourceEvent::OperatorAppsListed {
                    operator_kind: kind,
                    namespace: namespace.clone(),
                    objects,
                    unknown,
                    complete,
                    at: conn.clock.now(),
                }
            };
            let now = conn.clock.now();
            let due = |o: &OperatorApp, since| read_is_witness(o, since, now);
            events.extend(
                pass_kind(
                    &mut st,
                    &conn,
                    ns,
                    (&ar, kind.owner()),
                    project,
                    listed,
                    due,
                )
                .await,
            );
        }
        for kind in wanted.get() {
            let ar = api_resource(kind.group(), kind.version(), kind.kind(), kind.plural());
            let project = |v: &serde_json::Value| SchedGroup::from_value(kind, v);
            let listed = |objects, unknown, complete| SourceEvent::GroupsListed {
                group_kind: kind,
                namespace: namespace.clone(),
                objects,
                unknown,
                complete,
                at: conn.clock.now(),
            };
            let never = |_: &SchedGroup, _| false;
            events.extend(
                pass_kind(
                    &mut st,
                    &conn,
                    ns,
                    (&ar, kind.owner()),
                    project,
                    listed,
                    never,
                )
                .await,
            );
        }
        for ev in events {
            if !send(&tx, ev).await {
                return;
            }
        }
        // The next list at the poll interval, or at once when a pod names a new kind.
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = wanted.new.notified() => {}
        }
        if tx.is_closed() {
            return;
        }
    }
}
