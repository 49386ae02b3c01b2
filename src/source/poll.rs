//! Spark's periodic full LIST, for missing-pod detection, done the light way: metadata only,
//! compared with what the pod watch delivered; only the pods the watch is behind on are
//! read again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::ListParams;
use kube::{Api, Resource};
use spark_triage_core::model::ExecutorPod;
use tokio::sync::mpsc;

use super::connection::{Connection, pods_api, send};
use super::errors::{self, forbidden_permission, health_of};
use super::lean::{LeanPod, PodMeta};
use super::{Health, PresentPod, SourceEvent, SourceKind};

/// The resourceVersion of every pod the watch has delivered, by namespace then name (looked
/// up by borrowed names: a relist of 100,000 pods copies none): the poll's metadata-only
/// LIST is compared with it to find what the watch missed.
#[derive(Debug, Clone, Default)]
pub(super) struct Delivered(Arc<Mutex<Versions>>);

type Versions = HashMap<String, HashMap<String, u64>>;

impl Delivered {
    fn lock(&self) -> std::sync::MutexGuard<'_, Versions> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The watch delivered this version of the pod. A deletion counts too (at its
    /// version): a pod deleted after the LIST but before the comparison is not one the
    /// watch is behind on.
    pub(super) fn saw(&self, pod: &ExecutorPod) {
        if let Some(rv) = pod.rv() {
            let mut seen = self.lock();
            let names = match seen.get_mut(pod.namespace.as_str()) {
                Some(names) => names,
                None => seen.entry(pod.namespace.to_string()).or_default(),
            };
            match names.get_mut(&pod.name) {
                Some(known) => *known = rv,
                None => {
                    names.insert(pod.name.clone(), rv);
                }
            }
        }
    }

    /// After a comparison: forgets the deleted pods the LIST no longer names (deleted
    /// before it), so the map holds what exists.
    fn forget_absent(&self, listed: &[PresentPod], list_rv: Option<u64>) {
        let names: std::collections::HashSet<(&str, &str)> = listed
            .iter()
            .map(|p| (p.namespace.as_str(), p.name.as_str()))
            .collect();
        let list_rv = list_rv.unwrap_or(0);
        let mut seen = self.lock();
        seen.retain(|ns, in_ns| {
            in_ns.retain(|name, rv| *rv > list_rv || names.contains(&(ns.as_str(), name.as_str())));
            !in_ns.is_empty()
        });
    }

    /// Listed pods newer than what the watch delivered (or never delivered).
    fn behind<'a>(&self, listed: &'a [PresentPod]) -> Vec<&'a PresentPod> {
        let seen = self.lock();
        listed
            .iter()
            .filter(|p| {
                let known = seen
                    .get(p.namespace.as_str())
                    .and_then(|in_ns| in_ns.get(p.name.as_str()));
                match (p.resource_version, known) {
                    (Some(listed), Some(known)) => listed > *known,
                    _ => true,
                }
            })
            .collect()
    }
}

/// How long the poll lets the watch deliver what changed while its LIST ran, before it
/// compares the two.
const CATCH_UP: Duration = Duration::from_secs(1);
/// Pods the watch may be behind on that the poll reads one by one; past this, a full LIST.
const MAX_READS: usize = 20;

/// Spark's periodic full LIST, for missing-pod detection; the first comes one interval after
/// the start (the watch's own initial list is the first complete view). It asks for
/// metadata only (names, labels, resourceVersions): what the watch delivered is the pods'
/// content, and a pod the watch is behind on (a newer version listed than delivered) is
/// read again, one GET each, or with one full LIST when there are many.
pub(super) async fn pod_poll(
    conn: Connection,
    every: Duration,
    tx: mpsc::Sender<SourceEvent>,
    delivered: Delivered,
) {
    let now = || conn.clock.now();
    let meta: Api<PodMeta> = pods_api(&conn.client, &conn.scope);
    let full: Api<LeanPod> = pods_api(&conn.client, &conn.scope);
    let every = every.max(Duration::from_millis(100));
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let ev = match poll_once(&conn, &meta, &full, &delivered, &tx).await {
            Ok(Some(ev)) => ev,
            Ok(None) => return,
            Err(e) => SourceEvent::SourceHealth {
                source: SourceKind::PodPoll,
                health: health_of(
                    &errors::error_line(&e),
                    forbidden_permission(&e, "list", "pods", &conn.scope),
                ),
                at: now(),
            },
        };
        let ok = matches!(
            ev,
            SourceEvent::PodsListed { .. } | SourceEvent::PodsPresent { .. }
        );
        if !send(&tx, ev).await {
            return;
        }
        if ok
            && !send(
                &tx,
                SourceEvent::SourceHealth {
                    source: SourceKind::PodPoll,
                    health: Health::Connected,
                    at: now(),
                },
            )
            .await
        {
            return;
        }
    }
}

/// One poll: the complete LIST as an event, after the pods the watch was behind on
/// (`None` when the receiver is gone).
async fn poll_once(
    conn: &Connection,
    meta: &Api<PodMeta>,
    full: &Api<LeanPod>,
    delivered: &Delivered,
    tx: &mpsc::Sender<SourceEvent>,
) -> Result<Option<SourceEvent>, kube::Error> {
    let now = || conn.clock.now();
    let (present, rv) = list_all(meta, &conn.selector, |m| m.pod).await?;
    tokio::time::sleep(CATCH_UP).await;
    let behind: Vec<(String, String)> = delivered
        .behind(&present)
        .into_iter()
        .map(|p| (p.namespace.to_string(), p.name.clone()))
        .collect();
    delivered.forget_absent(&present, rv);
    if behind.len() > MAX_READS {
        let (pods, rv) = list_all(full, &conn.selector, |p| Arc::new(p.pod)).await?;
        return Ok(Some(SourceEvent::PodsListed {
            pods,
            resource_version: rv,
            at: now(),
        }));
    }
    for (ns, name) in behind {
        let api: Api<LeanPod> = Api::namespaced(conn.client.clone(), &ns);
        // Gone since the LIST: the watch says so (or the next poll finds it absent).
        if let Some(LeanPod { pod, .. }) = api.get_opt(&name).await? {
            let ev = SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(pod.clone()),
                at: now(),
            };
            if !send(tx, ev).await {
                return Ok(None);
            }
            delivered.saw(&pod);
        }
    }
    Ok(Some(SourceEvent::PodsPresent {
        pods: present,
        resource_version: rv,
        at: now(),
    }))
}

/// A complete LIST in pages of 500, as kubectl does; the version of the last page. Each item
/// is kept as `keep` makes it as its page arrives: a whole LIST of the API's items (each
/// with the `ObjectMeta` kube asks of a resource, some 300 bytes) is never held.
async fn list_all<K, T>(
    api: &Api<K>,
    sel: &str,
    keep: impl Fn(K) -> T,
) -> Result<(Vec<T>, Option<u64>), kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut out = Vec::new();
    let mut lp = ListParams::default().labels(sel).limit(500);
    loop {
        let page = api.list(&lp).await?;
        out.extend(page.items.into_iter().map(&keep));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => {
                lp = ListParams::default()
                    .labels(sel)
                    .limit(500)
                    .continue_token(&c)
            }
            None => {
                return Ok((
                    out,
                    page.metadata.resource_version.and_then(|r| r.parse().ok()),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, rv: u64) -> ExecutorPod {
        ExecutorPod {
            namespace: "ns".into(),
            name: name.into(),
            resource_version: Some(rv.to_string()),
            ..ExecutorPod::default()
        }
    }

    fn listed(name: &str, rv: u64) -> PresentPod {
        PresentPod {
            namespace: "ns".into(),
            name: name.into(),
            app_id: None,
            executor_id: None,
            resource_version: Some(rv),
            uid: None,
        }
    }

    fn names(v: Vec<&PresentPod>) -> Vec<&str> {
        v.into_iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn behind_is_what_the_list_has_newer_than_the_watch_delivered() {
        let d = Delivered::default();
        d.saw(&pod("same", 10));
        d.saw(&pod("newer-in-list", 10));
        d.saw(&pod("newer-in-watch", 30));
        let list = [
            listed("same", 10),
            listed("newer-in-list", 20),
            listed("newer-in-watch", 20),
            listed("never-delivered", 5),
        ];
        assert_eq!(
            names(d.behind(&list)),
            vec!["newer-in-list", "never-delivered"]
        );
    }

    #[test]
    fn a_deletion_delivered_after_the_list_is_not_behind_and_is_forgotten_once_absent() {
        let d = Delivered::default();
        d.saw(&pod("deleted-after-list", 12)); // the DELETED event's version
        d.saw(&pod("deleted-before-list", 8));
        let list = [listed("deleted-after-list", 11)];
        assert!(d.behind(&list).is_empty());
        // The next LIST (at 15) names neither: both deletions are older, both forgotten.
        d.forget_absent(&[], Some(15));
        assert!(d.lock().is_empty());
        // A pod newer than the LIST (created after it) is kept.
        d.saw(&pod("created-after-list", 20));
        d.forget_absent(&[], Some(15));
        let pods: Vec<String> = d
            .lock()
            .values()
            .flat_map(|names| names.keys().cloned())
            .collect();
        assert_eq!(pods, ["created-after-list"]);
    }
}
