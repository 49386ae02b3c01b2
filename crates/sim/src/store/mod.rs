//! The simulator's object store: every object of every kind, one global resourceVersion,
//! a bounded change history for watch resumes, and a broadcast of changes to watchers.
//!
//! Objects are kept as JSON values (the API is JSON on the wire, patches are JSON operations),
//! one representation each: they are serialised when served (a page of 500 pods is a few
//! milliseconds of writing), not kept twice. Every write takes the next resourceVersion under one lock, and the change is
//! broadcast under that same lock, so a watcher that subscribes while holding it misses nothing.
//!
//! Weak spot: pagination continues after the last key at the time of the next page, not from
//! a snapshot of the first page's revision as etcd does; pages report the first page's RV.

mod objects;
mod quota;
mod writes;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
pub use objects::{
    Change, ChangeType, DeleteOptions, Deleted, INDEXED, Obj, Page, Query, Resource, pod_requests,
};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::clock::SimClock;
use crate::error::ApiError;

type Key = (String, String);

#[derive(Debug)]
struct Inner {
    rv: u64,
    objects: BTreeMap<Resource, BTreeMap<Key, Arc<Obj>>>,
    history: VecDeque<Arc<Change>>,
    /// The RV before which history was dropped: resumes from older RVs get 410.
    compacted_rv: u64,
    uid_counter: u64,
    /// The earliest last time of an event written since the expiry last asked
    /// ([`ObjectStore::take_oldest_event_write`]): a client may write one already old.
    oldest_event_write: Option<DateTime<Utc>>,
}

impl Inner {
    /// The stored object, or the API's NotFound.
    fn existing(&self, resource: Resource, key: &Key) -> Result<Arc<Obj>, ApiError> {
        self.objects
            .get(&resource)
            .and_then(|m| m.get(key))
            .cloned()
            .ok_or_else(|| ApiError::not_found(resource, &key.1))
    }
}

/// The store. Cheap to share (`Arc<ObjectStore>`).
#[derive(Debug)]
pub struct ObjectStore {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Change>>,
    pub clock: SimClock,
    history_cap: usize,
    uid_seed: u64,
}

/// A watcher's starting point: the events to replay and the live feed after them.
#[derive(Debug)]
pub struct Subscription {
    pub replay: Vec<Arc<Change>>,
    pub initial: Vec<Arc<Obj>>,
    pub rx: broadcast::Receiver<Arc<Change>>,
    pub rv: u64,
}

impl ObjectStore {
    pub fn new(clock: SimClock, history_cap: usize, seed: u64) -> Self {
        // A watcher more than this many changes behind is closed and resumes from the
        // history (as the real cacher closes a slow watcher); the ring holds every change
        // it spans, so it is kept small.
        let (tx, _) = broadcast::channel(4_096);
        Self {
            inner: Mutex::new(Inner {
                rv: 1,
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                compacted_rv: 1,
                uid_counter: 0,
                oldest_event_write: None,
            }),
            tx,
            clock,
            history_cap: history_cap.max(16),
            uid_seed: seed,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock would poison it; the data is still consistent
        // (every write is a single insert), so keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    pub fn get(&self, resource: Resource, ns: &str, name: &str) -> Option<Arc<Obj>> {
        self.lock()
            .objects
            .get(&resource)?
            .get(&(ns.to_owned(), name.to_owned()))
            .cloned()
    }

    /// All objects of a kind matching `q` (no paging). A namespaced query reads only its
    /// namespace's range of the map.
    pub fn list_all(&self, resource: Resource, q: &Query) -> (Vec<Arc<Obj>>, u64) {
        let inner = self.lock();
        let Some(m) = inner.objects.get(&resource) else {
            return (Vec::new(), inner.rv);
        };
        let items = match &q.namespace {
            Some(ns) => m
                .range::<Key, _>((ns.clone(), String::new())..)
                .take_while(|(k, _)| k.0 == *ns)
                .map(|(_, o)| o)
                .filter(|o| q.matches(o))
                .cloned()
                .collect(),
            None => m.values().filter(|o| q.matches(o)).cloned().collect(),
        };
        (items, inner.rv)
    }

    /// One page of a LIST. `limit` 0 = everything.
    pub fn list(
        &self,
        resource: Resource,
        q: &Query,
        limit: usize,
        continue_token: Option<&str>,
    ) -> Result<Page, ApiError> {
        let inner = self.lock();
        let (rv, start) = match continue_token {
            Some(t) => decode_continue(t)
                .ok_or_else(|| ApiError::bad_request(format!("invalid continue token: {t:?}")))?,
            None => (inner.rv, None),
        };
        if rv < inner.compacted_rv && continue_token.is_some() {
            return Err(ApiError::expired(
                "The provided continue parameter is too old to display a consistent list result. \
                 You can start a new list without the continue parameter.",
            ));
        }
        let empty = BTreeMap::new();
        let map = inner.objects.get(&resource).unwrap_or(&empty);
        let iter: Box<dyn Iterator<Item = (&Key, &Arc<Obj>)>> = match &start {
            Some(k) => Box::new(map.range::<Key, _>((
                std::ops::Bound::Excluded(k.clone()),
                std::ops::Bound::Unbounded,
            ))),
            None => match &q.namespace {
                Some(ns) => Box::new(map.range::<Key, _>((ns.clone(), String::new())..)),
                None => Box::new(map.iter()),
            },
        };
        // Only the query's namespace (a token may start before it).
        let iter = iter
            .skip_while(|(k, _)| q.namespace.as_ref().is_some_and(|ns| k.0 < *ns))
            .take_while(|(k, _)| q.namespace.as_ref().is_none_or(|ns| k.0 == *ns))
            .map(|(_, o)| o);
        // A field selector reads every object's fields (at 500,000 events most of a second
        // a LIST, every other request waiting on the lock meanwhile): its first page is
        // matched on the candidates' handles, copied under the lock (one version) and read
        // outside it. Later pages (many matches) are matched under the lock as before: a
        // copy of the rest for each would make a LIST quadratic.
        let (items, more) = if q.fields.is_empty() || continue_token.is_some() {
            page_of(iter, q, limit)
        } else {
            let candidates: Vec<Arc<Obj>> = iter.cloned().collect();
            drop(inner);
            page_of(candidates.iter(), q, limit)
        };
        let selective = !q.labels.is_empty() || !q.fields.is_empty();
        let last_key = items
            .last()
            .map(|o| (o.namespace().to_owned(), o.name().to_owned()));
        let continue_token = (more > 0)
            .then(|| last_key.map(|k| encode_continue(rv, &k)))
            .flatten();
        Ok(Page {
            items,
            rv,
            continue_token,
            remaining: (more > 0 && !selective).then_some(more),
        })
    }

    /// Starts a watch at `rv` (`None` = now, with every current match as initial state).
    /// Errors with 410 when `rv` is older than the history kept.
    pub fn subscribe(
        &self,
        resource: Resource,
        q: &Query,
        rv: Option<u64>,
    ) -> Result<Subscription, ApiError> {
        let inner = self.lock();
        let rx = self.tx.subscribe();
        match rv {
            None => {
                let initial = inner
                    .objects
                    .get(&resource)
                    .map(|m| m.values().filter(|o| q.matches(o)).cloned().collect())
                    .unwrap_or_default();
                Ok(Subscription {
                    replay: Vec::new(),
                    initial,
                    rx,
                    rv: inner.rv,
                })
            }
            Some(from) => {
                if from < inner.compacted_rv {
                    return Err(ApiError::expired(format!(
                        "too old resource version: {from} ({})",
                        inner.compacted_rv
                    )));
                }
                let replay = inner
                    .history
                    .iter()
                    .filter(|c| c.rv > from && c.resource == resource)
                    .cloned()
                    .collect();
                Ok(Subscription {
                    replay,
                    initial: Vec::new(),
                    rx,
                    rv: inner.rv,
                })
            }
        }
    }

    fn next_uid(&self, inner: &mut Inner) -> String {
        inner.uid_counter += 1;
        let n = inner.uid_counter;
        let s = self.uid_seed;
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            (s as u32) ^ (n as u32).wrapping_mul(2_654_435_761),
            (n >> 16) as u16,
            (n & 0xfff) as u16,
            ((s >> 32) & 0xfff) as u16,
            n
        )
    }

    fn commit(
        &self,
        inner: &mut Inner,
        resource: Resource,
        change: ChangeType,
        old: Option<Arc<Obj>>,
        mut value: Value,
    ) -> Arc<Obj> {
        inner.rv += 1;
        let rv = inner.rv;
        value["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let obj = Obj::new(value);
        if resource == Resource::Events
            && change != ChangeType::Deleted
            && let Some(last) = obj.event_last_time()
        {
            inner.oldest_event_write = Some(inner.oldest_event_write.map_or(last, |o| o.min(last)));
        }
        let key = (obj.namespace().to_owned(), obj.name().to_owned());
        let map = inner.objects.entry(resource).or_default();
        if change == ChangeType::Deleted {
            map.remove(&key);
        } else {
            map.insert(key, obj.clone());
        }
        let c = Arc::new(Change {
            rv,
            resource,
            change,
            old,
            new: obj.clone(),
        });
        inner.history.push_back(c.clone());
        while inner.history.len() > self.history_cap {
            if let Some(dropped) = inner.history.pop_front() {
                inner.compacted_rv = dropped.rv;
            }
        }
        let _ = self.tx.send(c);
        obj
    }

    /// The earliest last time of the events written since the last call (by the control
    /// plane or a client), and forgets it.
    pub fn take_oldest_event_write(&self) -> Option<DateTime<Utc>> {
        self.lock().oldest_event_write.take()
    }

    /// Forgets all history: every resume after this gets 410 (the `expire-watches` fault).
    pub fn compact_all(&self) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.compacted_rv = inner.rv;
    }

    /// Removes an object at once, whatever its finalizers (scenario steps: a pod that
    /// "vanishes" with no watch event is not this — see [`ObjectStore::vanish`]).
    pub fn vanish(&self, resource: Resource, ns: &str, name: &str) -> bool {
        // Bypass history and broadcast: watchers must not see it (silent removal), but the
        // RV still moves so lists are newer than anything the watch delivered.
        let mut inner = self.lock();
        inner.rv += 1;
        inner
            .objects
            .get_mut(&resource)
            .and_then(|m| m.remove(&(ns.to_owned(), name.to_owned())))
            .is_some()
    }
}

/// A page of `objs` (in key order) matching `q`, and whether more match past it (how many,
/// without a selector: the real server counts the rest; with one it stops at the first).
fn page_of<'a>(
    objs: impl Iterator<Item = &'a Arc<Obj>>,
    q: &Query,
    limit: usize,
) -> (Vec<Arc<Obj>>, usize) {
    // Under a selector the real server leaves `remainingItemCount` unset (etcd counts
    // keys, not matches), so a page stops at the first match past it; without one, the
    // rest is counted, not matched (a page of 100k pods was O(n) matches, a LIST O(n²)).
    let selective = !q.labels.is_empty() || !q.fields.is_empty();
    let mut items = Vec::new();
    let mut more = 0usize;
    for o in objs {
        if limit > 0 && items.len() >= limit {
            if !selective {
                more += 1;
            } else if q.matches(o) {
                more = 1;
                break;
            }
            continue;
        }
        if q.matches(o) {
            items.push(o.clone());
        }
    }
    (items, more)
}

fn encode_continue(rv: u64, key: &Key) -> String {
    let raw = format!("{rv}\u{0}{}\u{0}{}", key.0, key.1);
    raw.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_continue(token: &str) -> Option<(u64, Option<Key>)> {
    if !token.len().is_multiple_of(2) || !token.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&token[i..i + 2], 16).ok())
        .collect();
    let raw = String::from_utf8(bytes?).ok()?;
    let mut parts = raw.split('\u{0}');
    let rv = parts.next()?.parse().ok()?;
    let ns = parts.next()?.to_owned();
    let name = parts.next()?.to_owned();
    Some((rv, Some((ns, name))))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{ObjectStore, Query, Resource};
    use crate::clock::SimClock;
    use crate::selector::LabelSelector;

    /// Pages walk every match once; `remainingItemCount` is there without a selector and
    /// left out under one (as the real server does), and a namespace bounds the walk.
    #[test]
    fn pages_cover_every_match_and_count_the_rest_only_without_a_selector() {
        let store = ObjectStore::new(SimClock::new(chrono::Utc::now(), 1.0), 100, 1);
        for ns in ["a", "b"] {
            store
                .create(Resource::Namespaces, "", json!({"metadata": {"name": ns}}))
                .expect("namespace");
            for i in 0..7 {
                let role = if i % 2 == 0 { "executor" } else { "driver" };
                let pod = json!({"metadata": {"name": format!("p{i}"), "labels": {"role": role}},
                                 "spec": {"containers": [{"name": "c"}]}});
                store.create(Resource::Pods, ns, pod).expect("pod");
            }
        }
        let walk = |q: &Query| {
            let (mut names, mut remaining, mut token) = (Vec::new(), Vec::new(), None::<String>);
            loop {
                let page = store
                    .list(Resource::Pods, q, 2, token.as_deref())
                    .expect("page");
                names.extend(
                    page.items
                        .iter()
                        .map(|o| format!("{}/{}", o.namespace(), o.name())),
                );
                remaining.push(page.remaining);
                match page.continue_token {
                    Some(t) => token = Some(t),
                    None => return (names, remaining),
                }
            }
        };
        let all = Query::default();
        let (names, remaining) = walk(&all);
        assert_eq!(names.len(), 14);
        assert_eq!(
            remaining,
            [Some(12), Some(10), Some(8), Some(6), Some(4), Some(2), None]
        );
        let in_b = Query {
            namespace: Some("b".into()),
            labels: LabelSelector::parse("role=executor").expect("selector"),
            ..Query::default()
        };
        let (names, remaining) = walk(&in_b);
        assert_eq!(names, ["b/p0", "b/p2", "b/p4", "b/p6"]);
        assert!(remaining.iter().all(Option::is_none), "{remaining:?}");
        let (names, _) = walk(&Query {
            namespace: Some("a".into()),
            ..Query::default()
        });
        assert_eq!(names.len(), 7);
        assert!(names.iter().all(|n| n.starts_with("a/")));
    }
}
