//! The simulator's object store: every object of every kind, one global resourceVersion,
//! a bounded change history for watch resumes, and a broadcast of changes to watchers.
//!
//! Objects are kept as JSON values (the API is JSON on the wire, patches are JSON operations)
//! together with their compact serialisation, so a LIST of 10,000 pods is a concatenation of
//! ready bytes. Every write takes the next resourceVersion under one lock, and the change is
//! broadcast under that same lock, so a watcher that subscribes while holding it misses nothing.
//!
//! Weak spot: pagination continues after the last key at the time of the next page, not from
//! a snapshot of the first page's revision as etcd does; pages report the first page's RV.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::{Arc, Mutex, MutexGuard},
};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::{
    clock::{SimClock, fmt_time},
    error::ApiError,
    selector::{FieldSelector, LabelSelector},
};

/// The kinds the simulator stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Pods,
    Events,
    Services,
    ConfigMaps,
    Namespaces,
    Nodes,
    PersistentVolumeClaims,
}

impl Resource {
    pub const ALL: [Self; 7] = [
        Self::Pods,
        Self::Events,
        Self::Services,
        Self::ConfigMaps,
        Self::Namespaces,
        Self::Nodes,
        Self::PersistentVolumeClaims,
    ];

    pub fn plural(self) -> &'static str {
        match self {
            Self::Pods => "pods",
            Self::Events => "events",
            Self::Services => "services",
            Self::ConfigMaps => "configmaps",
            Self::Namespaces => "namespaces",
            Self::Nodes => "nodes",
            Self::PersistentVolumeClaims => "persistentvolumeclaims",
        }
    }

    pub fn from_plural(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.plural() == s)
    }

    pub fn kind(self) -> &'static str {
        match self {
            Self::Pods => "Pod",
            Self::Events => "Event",
            Self::Services => "Service",
            Self::ConfigMaps => "ConfigMap",
            Self::Namespaces => "Namespace",
            Self::Nodes => "Node",
            Self::PersistentVolumeClaims => "PersistentVolumeClaim",
        }
    }

    pub fn namespaced(self) -> bool {
        !matches!(self, Self::Namespaces | Self::Nodes)
    }
}

/// A stored object and its compact JSON.
#[derive(Debug)]
pub struct Obj {
    pub value: Value,
    pub json: Bytes,
}

impl Obj {
    pub fn new(value: Value) -> Arc<Self> {
        let json = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Arc::new(Self { value, json })
    }

    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.value["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
    }

    pub fn rv(&self) -> u64 {
        self.value["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

/// One write, as watchers see it.
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    pub resource: Resource,
    pub change: ChangeType,
    /// The object before the write (for selector transitions).
    pub old: Option<Arc<Obj>>,
    /// The object after the write; for a deletion, its last state stamped with the deletion RV.
    pub new: Arc<Obj>,
}

/// What a LIST or a watch selects.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Query {
    pub fn matches(&self, obj: &Obj) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| obj.namespace() == ns)
            && self.labels.matches(&obj.value["metadata"]["labels"])
            && self.fields.matches(&obj.value)
    }
}

/// A page of a LIST.
#[derive(Debug)]
pub struct Page {
    pub items: Vec<Arc<Obj>>,
    pub rv: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// How a DELETE was asked for.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}

/// What a DELETE did.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Arc<Obj>),
    /// Deletion started (grace period or finalizers); the object stays.
    Pending(Arc<Obj>),
}

impl Deleted {
    pub fn obj(&self) -> &Arc<Obj> {
        match self {
            Self::Gone(o) | Self::Pending(o) => o,
        }
    }
}

type Key = (String, String);

#[derive(Debug)]
struct Inner {
    rv: u64,
    objects: BTreeMap<Resource, BTreeMap<Key, Arc<Obj>>>,
    history: VecDeque<Arc<Change>>,
    /// The RV before which history was dropped: resumes from older RVs get 410.
    compacted_rv: u64,
    uid_counter: u64,
}

/// The store. Cheap to share (`Arc<Store>`).
#[derive(Debug)]
pub struct Store {
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

impl Store {
    pub fn new(clock: SimClock, history_cap: usize, seed: u64) -> Self {
        let (tx, _) = broadcast::channel(65_536);
        Self {
            inner: Mutex::new(Inner {
                rv: 1,
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                compacted_rv: 1,
                uid_counter: 0,
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

    /// All objects of a kind matching `q` (no paging).
    pub fn list_all(&self, resource: Resource, q: &Query) -> (Vec<Arc<Obj>>, u64) {
        let inner = self.lock();
        let items = inner
            .objects
            .get(&resource)
            .map(|m| m.values().filter(|o| q.matches(o)).cloned().collect())
            .unwrap_or_default();
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
            None => Box::new(map.iter()),
        };
        let mut items = Vec::new();
        let mut last_key = None;
        let mut more = 0usize;
        for (k, o) in iter {
            if !q.matches(o) {
                continue;
            }
            if limit > 0 && items.len() >= limit {
                more += 1;
                continue;
            }
            items.push(o.clone());
            last_key = Some(k.clone());
        }
        let continue_token = (more > 0)
            .then(|| last_key.map(|k| encode_continue(rv, &k)))
            .flatten();
        Ok(Page {
            items,
            rv,
            continue_token,
            remaining: (more > 0).then_some(more),
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

    /// Forgets all history: every resume after this gets 410 (the `expire-watches` fault).
    pub fn compact_all(&self) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.compacted_rv = inner.rv;
    }

    /// POST: names, uid, RV, timestamps and the defaults the real server fills in.
    pub fn create(
        &self,
        resource: Resource,
        ns: &str,
        mut value: Value,
    ) -> Result<Arc<Obj>, ApiError> {
        if !value.is_object() {
            return Err(ApiError::bad_request("the body must be a JSON object"));
        }
        let mut inner = self.lock();
        if !value["metadata"].is_object() {
            value["metadata"] = json!({});
        }
        let meta = &mut value["metadata"];
        let name = match meta["name"].as_str().filter(|s| !s.is_empty()) {
            Some(n) => n.to_owned(),
            None => match meta["generateName"].as_str() {
                Some(prefix) => {
                    let n = format!(
                        "{prefix}{}",
                        random_suffix(inner.uid_counter + self.uid_seed)
                    );
                    meta["name"] = Value::String(n.clone());
                    n
                }
                None => {
                    return Err(ApiError::invalid(
                        resource,
                        "",
                        "metadata.name",
                        "name or generateName is required",
                    ));
                }
            },
        };
        if resource.namespaced() {
            if ns.is_empty() {
                return Err(ApiError::bad_request("a namespace is required"));
            }
            if !inner
                .objects
                .get(&Resource::Namespaces)
                .is_some_and(|m| m.contains_key(&(String::new(), ns.to_owned())))
            {
                return Err(ApiError::not_found(Resource::Namespaces, ns));
            }
            if let Some(body_ns) = meta["namespace"].as_str()
                && !body_ns.is_empty()
                && body_ns != ns
            {
                return Err(ApiError::bad_request(format!(
                    "the namespace of the provided object ({body_ns}) does not match the namespace sent on the request ({ns})"
                )));
            }
            meta["namespace"] = Value::String(ns.to_owned());
        } else if let Some(m) = meta.as_object_mut() {
            m.remove("namespace");
        }
        let key = (
            if resource.namespaced() {
                ns.to_owned()
            } else {
                String::new()
            },
            name.clone(),
        );
        if inner
            .objects
            .get(&resource)
            .is_some_and(|m| m.contains_key(&key))
        {
            return Err(ApiError::already_exists(resource, &name));
        }
        let uid = self.next_uid(&mut inner);
        let now = fmt_time(self.clock.now());
        let meta = &mut value["metadata"];
        meta["uid"] = Value::String(uid);
        meta["creationTimestamp"] = Value::String(now.clone());
        if let Some(m) = meta.as_object_mut() {
            m.remove("deletionTimestamp");
            m.remove("deletionGracePeriodSeconds");
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        value["metadata"]["generation"] = json!(1);
        value["kind"] = Value::String(resource.kind().to_owned());
        value["apiVersion"] = Value::String("v1".to_owned());
        apply_defaults(resource, &mut value, &now);
        Ok(self.commit(&mut inner, resource, ChangeType::Added, None, value))
    }

    /// PUT (and the result of PATCH): replaces the object, or only its status for `/status`.
    /// A stale `metadata.resourceVersion` is a 409.
    pub fn update(
        &self,
        resource: Resource,
        ns: &str,
        name: &str,
        mut value: Value,
        status_only: bool,
    ) -> Result<Arc<Obj>, ApiError> {
        let mut inner = self.lock();
        let key = (ns.to_owned(), name.to_owned());
        let Some(current) = inner
            .objects
            .get(&resource)
            .and_then(|m| m.get(&key))
            .cloned()
        else {
            return Err(ApiError::not_found(resource, name));
        };
        if let Some(rv) = value["metadata"]["resourceVersion"].as_str()
            && !rv.is_empty()
            && rv != current.rv().to_string()
        {
            return Err(ApiError::conflict(resource, name));
        }
        if status_only {
            let status = value.get("status").cloned().unwrap_or(Value::Null);
            value = current.value.clone();
            value["status"] = status;
        } else {
            // Identity and server-owned metadata cannot be changed by a client.
            let cur_meta = &current.value["metadata"];
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "namespace",
                "name",
            ] {
                match cur_meta.get(k) {
                    Some(v) => value["metadata"][k] = v.clone(),
                    None => {
                        if let Some(m) = value["metadata"].as_object_mut() {
                            m.remove(k);
                        }
                    }
                }
            }
            value["kind"] = current.value["kind"].clone();
            value["apiVersion"] = current.value["apiVersion"].clone();
            if resource == Resource::Pods && value.get("status").is_none() {
                value["status"] = current.value["status"].clone();
            }
            // Once deleting, finalizers may only be removed.
            if cur_meta.get("deletionTimestamp").is_some() {
                let before = string_set(&cur_meta["finalizers"]);
                let added = string_set(&value["metadata"]["finalizers"])
                    .into_iter()
                    .any(|f| !before.contains(&f));
                if added {
                    return Err(ApiError::forbidden_msg(format!(
                        "{} \"{name}\" is forbidden: no new finalizers can be added if the object is being deleted",
                        resource.plural()
                    )));
                }
            }
            if value["spec"] != current.value["spec"] {
                let g = current.value["metadata"]["generation"]
                    .as_i64()
                    .unwrap_or(1);
                value["metadata"]["generation"] = json!(g + 1);
            }
        }
        let deleting = value["metadata"].get("deletionTimestamp").is_some();
        let finalizers_empty = string_set(&value["metadata"]["finalizers"]).is_empty();
        // A deleting object whose last finalizer went away is removed — unless it is a pod
        // still inside its grace period (the kubelet's final delete removes it then).
        let remove = deleting
            && finalizers_empty
            && (resource != Resource::Pods
                || value["metadata"]["deletionGracePeriodSeconds"] == json!(0));
        if remove {
            return Ok(self.commit(
                &mut inner,
                resource,
                ChangeType::Deleted,
                Some(current),
                value,
            ));
        }
        Ok(self.commit(
            &mut inner,
            resource,
            ChangeType::Modified,
            Some(current),
            value,
        ))
    }

    /// Reads, changes and writes an object in one step (controllers' writes). `f` returns
    /// `false` to leave the object alone.
    pub fn modify(
        &self,
        resource: Resource,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value) -> bool,
    ) -> Option<Arc<Obj>> {
        let mut inner = self.lock();
        let key = (ns.to_owned(), name.to_owned());
        let current = inner.objects.get(&resource)?.get(&key)?.clone();
        let mut value = current.value.clone();
        if !f(&mut value) {
            return Some(current);
        }
        Some(self.commit(
            &mut inner,
            resource,
            ChangeType::Modified,
            Some(current),
            value,
        ))
    }

    /// DELETE, with Kubernetes' graceful pod deletion and finalizer rules (docs/simulator.md, "What is simulated").
    pub fn delete(
        &self,
        resource: Resource,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let mut inner = self.lock();
        let key = (ns.to_owned(), name.to_owned());
        let Some(current) = inner
            .objects
            .get(&resource)
            .and_then(|m| m.get(&key))
            .cloned()
        else {
            return Err(ApiError::not_found(resource, name));
        };
        if let Some(uid) = &opts.precondition_uid
            && current.value["metadata"]["uid"].as_str() != Some(uid.as_str())
        {
            return Err(ApiError::conflict_msg(
                resource,
                name,
                format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    current.value["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv
            && *rv != current.rv().to_string()
        {
            return Err(ApiError::conflict(resource, name));
        }
        if opts.dry_run {
            return Ok(Deleted::Pending(current));
        }
        let finalizers = !string_set(&current.value["metadata"]["finalizers"]).is_empty();
        let grace = if resource == Resource::Pods {
            let phase = current.value["status"]["phase"]
                .as_str()
                .unwrap_or_default();
            let unscheduled = current.value["spec"]["nodeName"]
                .as_str()
                .is_none_or(str::is_empty);
            if unscheduled || phase == "Succeeded" || phase == "Failed" {
                0
            } else {
                opts.grace_period_seconds
                    .or_else(|| current.value["spec"]["terminationGracePeriodSeconds"].as_i64())
                    .unwrap_or(30)
                    .max(0)
            }
        } else {
            0
        };
        let already = current.value["metadata"].get("deletionTimestamp").is_some();
        if grace == 0 && !finalizers {
            let mut last = current.value.clone();
            if !already {
                last["metadata"]["deletionTimestamp"] = Value::String(fmt_time(self.clock.now()));
            }
            last["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            let obj = self.commit(
                &mut inner,
                resource,
                ChangeType::Deleted,
                Some(current),
                last,
            );
            return Ok(Deleted::Gone(obj));
        }
        let mut value = current.value.clone();
        let now = self.clock.now();
        let requested = now + chrono::Duration::seconds(grace.min(86_400 * 365));
        // A shorter grace period may replace a longer one; a longer never extends it.
        let keep_existing = already
            && value["metadata"]["deletionGracePeriodSeconds"]
                .as_i64()
                .is_some_and(|g| g <= grace);
        if keep_existing {
            return Ok(Deleted::Pending(current));
        }
        value["metadata"]["deletionTimestamp"] = Value::String(fmt_time(requested));
        value["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        let g = value["metadata"]["generation"].as_i64().unwrap_or(1);
        value["metadata"]["generation"] = json!(g + 1);
        let obj = self.commit(
            &mut inner,
            resource,
            ChangeType::Modified,
            Some(current),
            value,
        );
        Ok(Deleted::Pending(obj))
    }

    /// Removes an object at once, whatever its finalizers (scenario steps: a pod that
    /// "vanishes" with no watch event is not this — see [`Store::vanish`]).
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

fn string_set(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn random_suffix(seed: u64) -> String {
    const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..5)
        .map(|_| ALPHA[rng.usize(..ALPHA.len())] as char)
        .collect()
}

/// Defaults the real API server fills in on create.
fn apply_defaults(resource: Resource, value: &mut Value, now: &str) {
    match resource {
        Resource::Pods => {
            if !value["spec"].is_object() {
                value["spec"] = json!({});
            }
            let spec = &mut value["spec"];
            for (k, v) in [
                ("restartPolicy", json!("Always")),
                ("terminationGracePeriodSeconds", json!(30)),
                ("schedulerName", json!("default-scheduler")),
                ("dnsPolicy", json!("ClusterFirst")),
                ("serviceAccountName", json!("default")),
                ("enableServiceLinks", json!(true)),
                ("priority", json!(0)),
            ] {
                if spec.get(k).is_none() {
                    spec[k] = v;
                }
            }
            if !value["status"].is_object() {
                value["status"] = json!({});
            }
            if value["status"].get("phase").is_none() {
                value["status"]["phase"] = json!("Pending");
            }
            if value["status"].get("qosClass").is_none() {
                let requests = value["spec"]["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| {
                        c["resources"]["requests"].is_object()
                            || c["resources"]["limits"].is_object()
                    });
                value["status"]["qosClass"] =
                    json!(if requests { "Burstable" } else { "BestEffort" });
            }
        }
        Resource::Events => {
            if value.get("count").is_none() && value.get("series").is_none() {
                value["count"] = json!(1);
            }
            if value.get("firstTimestamp").is_none() && value.get("eventTime").is_none() {
                value["firstTimestamp"] = json!(now);
                value["lastTimestamp"] = json!(now);
            }
        }
        Resource::Namespaces if value["status"].get("phase").is_none() => {
            value["status"] = json!({"phase": "Active"});
        }
        _ => {}
    }
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
