//! What the store holds and answers with: resources, objects with their serialisation,
//! changes, queries, pages and deletion outcomes.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::model::quantity;
pub use crate::resource::Resource;
use crate::selector::{FieldSelector, LabelSelector};

/// A stored object. One representation: its compact JSON as served (a pod is about 3 KB
/// of JSON but 20-30 KB as a `serde_json::Value` tree), with a small index of what the
/// store and the controllers ask of every object many times a second: name, namespace,
/// labels, the fields selectors read, the pod's requests. Anything else parses the bytes
/// ([`Obj::value`]), which writes do anyway.
#[derive(Debug)]
pub struct Obj {
    bytes: Bytes,
    rv: u64,
    index: Index,
    /// Pods: the containers' summed requests (CPU cores, memory bytes); zero otherwise.
    pub requests: (f64, f64),
}

impl Obj {
    pub fn new(value: Value) -> Arc<Self> {
        // Exactly as long as the JSON: `Bytes::from(Vec)` would keep the vector's spare
        // capacity (a third of the store at 100k pods).
        let json = serde_json::to_vec(&value).unwrap_or_default();
        let bytes = Bytes::from(json.into_boxed_slice());
        Arc::new(Self::indexed(bytes, &value))
    }

    fn indexed(bytes: Bytes, value: &Value) -> Self {
        let rv = value["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let requests = if value["kind"] == "Pod" {
            pod_requests(value)
        } else {
            (0.0, 0.0)
        };
        Self {
            bytes,
            rv,
            index: Index::of(value),
            requests,
        }
    }

    /// The compact JSON, as served.
    pub fn json(&self) -> Bytes {
        self.bytes.clone()
    }

    /// The object as a JSON value (parsed: keep it out of loops over every object).
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }

    /// Only `metadata`, parsed (the rest of the bytes is skipped, not built).
    pub fn metadata(&self) -> Value {
        #[derive(serde::Deserialize)]
        struct OnlyMeta {
            #[serde(default)]
            metadata: Value,
        }
        serde_json::from_slice::<OnlyMeta>(&self.bytes)
            .map(|m| m.metadata)
            .unwrap_or(Value::Null)
    }

    pub fn name(&self) -> &str {
        self.index.field(0).unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.index.field(1).unwrap_or_default()
    }

    pub fn uid(&self) -> &str {
        self.index.field(2).unwrap_or_default()
    }

    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// A label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.index.label(key)
    }

    /// An indexed field as a field selector compares it (see [`INDEXED`]); "" when absent.
    pub fn field(&self, pointer: &str) -> &str {
        field_id(pointer)
            .and_then(|id| self.index.field(id))
            .unwrap_or_default()
    }

    /// An event's last occurrence (`lastTimestamp`, else `eventTime`), when readable.
    pub fn event_last_time(&self) -> Option<DateTime<Utc>> {
        let last = Some(self.field("/lastTimestamp"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| self.field("/eventTime"));
        DateTime::parse_from_rfc3339(last).ok().map(|t| t.to_utc())
    }

    /// A pod's `spec.nodeName` ("" when unscheduled).
    pub fn node(&self) -> &str {
        self.index.field(F_NODE).unwrap_or_default()
    }

    /// A pod's `status.phase`.
    pub fn phase(&self) -> &str {
        self.index.field(F_PHASE).unwrap_or_default()
    }

    /// A pod with `spec.nodeName`.
    pub fn bound(&self) -> bool {
        !self.node().is_empty()
    }

    /// A pod whose phase is Succeeded or Failed.
    pub fn terminal(&self) -> bool {
        matches!(self.phase(), "Succeeded" | "Failed")
    }

    /// Deletion has started (`metadata.deletionTimestamp` is set).
    pub fn deleting(&self) -> bool {
        self.index.field(F_DELETION).is_some()
    }
}

// Positions in INDEXED of the fields read on every pass (checked by a test).
const F_DELETION: u8 = 3;
const F_NODE: u8 = 4;
const F_PHASE: u8 = 10;

/// The fields kept in every object's index: those field selectors read, and a few the
/// controllers test on every pass.
pub const INDEXED: [&str; 24] = [
    "/metadata/name",
    "/metadata/namespace",
    "/metadata/uid",
    "/metadata/deletionTimestamp",
    "/spec/nodeName",
    "/spec/restartPolicy",
    "/spec/schedulerName",
    "/spec/serviceAccountName",
    "/spec/hostNetwork",
    "/spec/containers/0/name",
    "/status/phase",
    "/status/podIP",
    "/status/nominatedNodeName",
    "/involvedObject/kind",
    "/involvedObject/namespace",
    "/involvedObject/name",
    "/involvedObject/uid",
    "/involvedObject/apiVersion",
    "/involvedObject/resourceVersion",
    "/involvedObject/fieldPath",
    "/reason",
    "/type",
    "/reportingComponent",
    "/source/component",
];

/// Extra fields kept only for events: the expiry reads them every few seconds.
const EVENT_TIMES: [&str; 2] = ["/lastTimestamp", "/eventTime"];

/// A label's tag in the index; fields are tagged by their position in [`INDEXED`] (or
/// past it, in [`EVENT_TIMES`]).
const LABEL: u8 = u8::MAX;

/// A field's tag, by one hash lookup: a scan comparing the pointer with each of the 26
/// was most of the simulator's time in an event LIST under a field selector (500,000
/// events, three fields each, at 100 apps of 1,000 executors).
fn field_id(pointer: &str) -> Option<u8> {
    static IDS: std::sync::LazyLock<std::collections::HashMap<&'static str, u8>> =
        std::sync::LazyLock::new(|| {
            INDEXED
                .iter()
                .chain(&EVENT_TIMES)
                .enumerate()
                .map(|(i, p)| (*p, i as u8))
                .collect()
        });
    IDS.get(pointer).copied()
}

/// Values (and label keys) in one string: entry `i` spans `text[start..key_end]` (a
/// label's key; empty for a field, whose tag says which) and `text[key_end..end]` (the
/// value), starting where entry `i - 1` ended. Two allocations an object instead of two
/// per field.
#[derive(Debug, Default)]
struct Index {
    text: Box<str>,
    spans: Box<[(u8, u32, u32)]>,
}

impl Index {
    fn of(value: &Value) -> Self {
        let mut text = String::new();
        let mut spans = Vec::new();
        let mut push = |tag: u8, k: &str, v: &str, text: &mut String| {
            text.push_str(k);
            let key_end = text.len() as u32;
            text.push_str(v);
            spans.push((tag, key_end, text.len() as u32));
        };
        let is_event = value["kind"] == "Event";
        let extra: &[&str] = if is_event { &EVENT_TIMES } else { &[] };
        for (id, p) in INDEXED.iter().chain(extra).enumerate() {
            let id = id as u8;
            match value.pointer(p) {
                Some(Value::String(s)) if !s.is_empty() => push(id, "", s, &mut text),
                Some(Value::Bool(b)) => push(id, "", &b.to_string(), &mut text),
                Some(Value::Number(n)) => push(id, "", &n.to_string(), &mut text),
                _ => {}
            }
        }
        if let Some(labels) = value["metadata"]["labels"].as_object() {
            for (k, v) in labels {
                if let Some(v) = v.as_str() {
                    push(LABEL, k, v, &mut text);
                }
            }
        }
        Self {
            text: text.into_boxed_str(),
            spans: spans.into_boxed_slice(),
        }
    }

    fn field(&self, id: u8) -> Option<&str> {
        // Fields come first (a field's key is empty, so its value starts at `key_end`).
        self.spans
            .iter()
            .take_while(|(tag, ..)| *tag != LABEL)
            .find(|(tag, ..)| *tag == id)
            .map(|&(_, key_end, end)| &self.text[key_end as usize..end as usize])
    }

    fn label(&self, key: &str) -> Option<&str> {
        let mut start = 0usize;
        for &(tag, key_end, end) in self.spans.iter() {
            let (key_end, end) = (key_end as usize, end as usize);
            if tag == LABEL && &self.text[start..key_end] == key {
                return Some(&self.text[key_end..end]);
            }
            start = end;
        }
        None
    }
}

/// A pod's summed container requests: CPU in cores, memory in bytes.
pub fn pod_requests(pod: &Value) -> (f64, f64) {
    let mut cpu = 0.0;
    let mut mem = 0.0;
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        let q = |k: &str| {
            c["resources"]["requests"][k]
                .as_str()
                .and_then(quantity::parse)
        };
        cpu += q("cpu").unwrap_or(0.0);
        mem += q("memory").unwrap_or(0.0);
    }
    (cpu, mem)
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
            && self.labels.matches_with(|k| obj.label(k))
            && self.fields.matches_with(|p| obj.field(p))
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Obj;

    #[test]
    fn the_index_answers_as_the_value_would() {
        let pod = Obj::new(json!({
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "42",
                         "labels": {"spark-role": "executor", "empty": ""}},
            "spec": {"nodeName": "n1", "hostNetwork": false,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                                    {"name": "d", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Failed"}
        }));
        assert_eq!(
            (pod.name(), pod.namespace(), pod.uid(), pod.rv()),
            ("p", "ns", "u1", 42)
        );
        assert_eq!(pod.label("spark-role"), Some("executor"));
        assert_eq!(pod.label("empty"), Some(""));
        assert_eq!(pod.label("absent"), None);
        // A label key is never mistaken for a field, nor a field for a label.
        assert_eq!(pod.label("/metadata/name"), None);
        assert_eq!(pod.field("spark-role"), "");
        assert_eq!(pod.field("/spec/hostNetwork"), "false");
        assert_eq!(pod.field("/spec/containers/0/name"), "c");
        assert!(pod.bound() && pod.terminal() && !pod.deleting());
        assert_eq!((pod.node(), pod.phase()), ("n1", "Failed"));
        for (id, p) in [
            (super::F_DELETION, "/metadata/deletionTimestamp"),
            (super::F_NODE, "/spec/nodeName"),
            (super::F_PHASE, "/status/phase"),
        ] {
            assert_eq!(super::INDEXED[id as usize], p);
        }
        assert_eq!(pod.requests, (1.5, 1024.0 * 1024.0 * 1024.0));
        assert_eq!(pod.value()["spec"]["containers"][1]["name"], "d");
        assert_eq!(pod.metadata()["uid"], "u1");
        let event = Obj::new(json!({"kind": "Event", "metadata": {"name": "e"},
                                    "lastTimestamp": "2026-01-01T00:00:00Z", "count": 3}));
        assert_eq!(event.field("/lastTimestamp"), "2026-01-01T00:00:00Z");
        assert_eq!(event.requests, (0.0, 0.0));
        assert!(!event.bound());
    }
}
