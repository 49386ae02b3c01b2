//! The batch schedulers' group objects (Volcano's PodGroups, Kueue's and the native gang's
//! Workloads), listed every poll interval, but only the kinds a Spark pod names: a cluster
//! without Volcano is never asked for PodGroups. A kind the tool may not list (403) or
//! that the API server does not serve (404: its CRD is not installed) is said once, not
//! retried; its objects are then "unknown because …" in the verdicts that need them.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams};
use spark_triage_core::model::{ExecutorPod, GroupKind, SchedGroup};
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

    fn get(&self) -> BTreeSet<GroupKind> {
        self.kinds.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

fn api_resource(kind: GroupKind) -> ApiResource {
    ApiResource {
        group: kind.group().to_owned(),
        version: kind.version().to_owned(),
        api_version: format!("{}/{}", kind.group(), kind.version()),
        kind: kind.kind().to_owned(),
        plural: kind.plural().to_owned(),
    }
}

/// The most objects of one kind read per list (more are not read; a cut list is marked
/// partial, so nothing is claimed absent from it).
const MAX_OBJECTS: u32 = 2_000;

pub(super) async fn group_poll(
    conn: Connection,
    every: Duration,
    wanted: Wanted,
    tx: mpsc::Sender<SourceEvent>,
) {
    let now = || conn.clock.now();
    let namespace = match &conn.scope {
        Scope::Namespace(ns) => Some(ns.clone()),
        Scope::All => None,
    };
    // Kinds said unknown (forbidden, not served): never asked again.
    let mut given_up: BTreeSet<GroupKind> = BTreeSet::new();
    let mut last: std::collections::BTreeMap<GroupKind, Vec<SchedGroup>> = Default::default();
    let mut failing: BTreeSet<GroupKind> = BTreeSet::new();
    // The kinds refused so far: one health line names them all (the health of a source is
    // one value, and a second refusal must not hide the first).
    let mut refused: Vec<String> = Vec::new();
    let every = every.max(Duration::from_millis(100));
    loop {
        for kind in wanted.get() {
            if given_up.contains(&kind) {
                continue;
            }
            let ar = api_resource(kind);
            let api: Api<DynamicObject> = match &namespace {
                Some(ns) => Api::namespaced_with(conn.client.clone(), ns, &ar),
                None => Api::all_with(conn.client.clone(), &ar),
            };
            let ev = match api.list(&ListParams::default().limit(MAX_OBJECTS)).await {
                Ok(list) => {
                    // A list cut at the page limit is partial: absence from it says nothing.
                    let complete = list.metadata.continue_.as_deref().is_none_or(str::is_empty);
                    let objects: Vec<SchedGroup> = list
                        .items
                        .iter()
                        .filter_map(|o| serde_json::to_value(o).ok())
                        .map(|v| SchedGroup::from_value(kind, &v))
                        .collect();
                    let recovered = failing.remove(&kind);
                    if last.get(&kind) == Some(&objects) && !recovered {
                        continue;
                    }
                    last.insert(kind, objects.clone());
                    if recovered
                        && !send(
                            &tx,
                            SourceEvent::SourceHealth {
                                source: SourceKind::SchedulerObjects,
                                health: Health::Connected,
                                at: now(),
                            },
                        )
                        .await
                    {
                        return;
                    }
                    SourceEvent::GroupsListed {
                        group_kind: kind,
                        namespace: namespace.clone(),
                        objects,
                        unknown: None,
                        complete,
                        at: now(),
                    }
                }
                Err(kube::Error::Api(s)) if s.code == 403 || s.code == 404 => {
                    given_up.insert(kind);
                    let why = if s.code == 403 {
                        format!(
                            "forbidden: the tool may not list {} in {}",
                            kind.resource(),
                            conn.scope.describe()
                        )
                    } else {
                        format!(
                            "{} is not served by this API server (is {} installed?)",
                            kind.resource(),
                            kind.owner()
                        )
                    };
                    if s.code == 403 {
                        refused.push(kind.resource());
                        let health = Health::Forbidden {
                            permission: format!(
                                "list {} in {}",
                                refused.join(", "),
                                conn.scope.describe()
                            ),
                        };
                        let said = SourceEvent::SourceHealth {
                            source: SourceKind::SchedulerObjects,
                            health,
                            at: now(),
                        };
                        if !send(&tx, said).await {
                            return;
                        }
                    }
                    SourceEvent::GroupsListed {
                        group_kind: kind,
                        namespace: namespace.clone(),
                        objects: Vec::new(),
                        unknown: Some(why),
                        complete: true,
                        at: now(),
                    }
                }
                Err(e) => {
                    failing.insert(kind);
                    SourceEvent::SourceHealth {
                        source: SourceKind::SchedulerObjects,
                        health: Health::Retrying {
                            error: format!("{}: {}", kind.resource(), errors::error_line(&e)),
                        },
                        at: now(),
                    }
                }
            };
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
