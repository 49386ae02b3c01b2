//! What the store holds and answers with: resources, objects with their serialisation,
//! changes, queries, pages and deletion outcomes.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::selector::{FieldSelector, LabelSelector};

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
    ResourceQuotas,
}

impl Resource {
    pub const ALL: [Self; 8] = [
        Self::Pods,
        Self::Events,
        Self::Services,
        Self::ConfigMaps,
        Self::Namespaces,
        Self::Nodes,
        Self::PersistentVolumeClaims,
        Self::ResourceQuotas,
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
            Self::ResourceQuotas => "resourcequotas",
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
            Self::ResourceQuotas => "ResourceQuota",
        }
    }

    pub fn namespaced(self) -> bool {
        !matches!(self, Self::Namespaces | Self::Nodes)
    }
}

/// A stored object. One representation: the JSON value (controllers read it, patches
/// apply to it); its bytes are written when it is served, not kept beside it.
#[derive(Debug)]
pub struct Obj {
    pub value: Value,
}

impl Obj {
    pub fn new(value: Value) -> Arc<Self> {
        Arc::new(Self { value })
    }

    /// The compact JSON, as served.
    pub fn json(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(&self.value).unwrap_or_default())
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
