//! `PodEvent`: one Kubernetes Event about a pod, from either events API.
//!
//! `core/v1` and `events.k8s.io/v1` are two views of one store with different field names
//! (`involvedObject`/`regarding`, `message`/`note`, `count`/`series.count`…); both project
//! to this one shape so diagnosis does not care where an event came from.

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::events::v1 as events;
use serde::{Deserialize, Serialize};

use super::pod::{ExecutorPod, Time, time};
use super::wire::WireEvent;

/// An event about a pod.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PodEvent {
    /// Namespace of the pod it is about.
    pub namespace: String,
    /// Name of the object it is about.
    pub object_name: String,
    /// The uid of the object it is about.
    pub object_uid: Option<String>,
    /// Kind of the object it is about (`Pod`, `Node`, …).
    pub object_kind: Option<String>,
    /// `Normal` or `Warning`.
    pub type_: Option<String>,
    /// The event's reason (`FailedScheduling`, `Killing`, …).
    pub reason: Option<String>,
    /// Its message.
    pub message: Option<String>,
    /// What was done (`action`): YuniKorn's gang events share one reason
    /// (`GangScheduling`) and differ only here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// How many times it happened (at least 1).
    pub count: i32,
    /// When it was first seen.
    pub first_seen: Option<Time>,
    /// When it was last seen.
    pub last_seen: Option<Time>,
    /// Who reported it (`default-scheduler`, `kubelet`, …).
    pub source: Option<String>,
    /// The secondary object: a `Preempted` event's preemptor (and what the tool knows of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related: Option<Related>,
    /// The node of a kubelet's event (`source.host`, `reportingInstance`): where the pod
    /// ran, still known when the pod is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// An event's secondary object (`related`), as the API wrote it, with what the tool itself
/// knows of the pod it names (filled when the pod is one it watches).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Related {
    /// `Pod` for a preemptor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The Spark application it belongs to (its name, else its id), when the tool knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// Its `spec.priorityClassName`, when the tool knows the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<String>,
    /// Its `spec.priority`, when the tool knows the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

impl From<super::wire::WireObjectRef> for Related {
    fn from(o: super::wire::WireObjectRef) -> Self {
        Self {
            kind: o.kind,
            namespace: o.namespace,
            name: o.name,
            uid: o.uid,
            ..Self::default()
        }
    }
}

impl From<WireEvent> for PodEvent {
    /// Projects a core/v1 Event as the API wrote it.
    fn from(e: WireEvent) -> Self {
        let obj = e.involved_object;
        let series = e.series.unwrap_or_default();
        let source = e.source.unwrap_or_default();
        let kubelet = source.component.as_deref() == Some("kubelet")
            || e.reporting_component.as_deref() == Some("kubelet");
        let host = source
            .host
            .or_else(|| e.reporting_instance.clone().filter(|_| kubelet))
            .filter(|h| kubelet && !h.is_empty());
        Self {
            namespace: obj.namespace.or(e.metadata.namespace).unwrap_or_default(),
            object_name: obj.name.unwrap_or_default(),
            object_uid: obj.uid,
            object_kind: obj.kind,
            type_: e.type_,
            reason: e.reason,
            message: e.message,
            action: e.action.filter(|a| !a.is_empty()),
            count: series.count.or(e.count).unwrap_or(1).max(1),
            first_seen: e.first_timestamp.or(e.event_time),
            last_seen: series
                .last_observed_time
                .or(e.last_timestamp)
                .or(e.event_time),
            source: source
                .component
                .or(e.reporting_component)
                .filter(|s| !s.is_empty()),
            host,
            related: e
                .related
                .map(Related::from)
                .filter(|r| r.name.is_some() || r.uid.is_some()),
        }
    }
}

impl PodEvent {
    /// Projects a typed core/v1 Event (through its JSON: one projection for both ways in).
    pub fn from_core(e: &core::Event) -> Self {
        serde_json::to_value(e)
            .ok()
            .and_then(|v| WireEvent::deserialize(&v).ok())
            .map(Self::from)
            .unwrap_or_default()
    }

    /// Projects a core/v1 Event from its JSON bytes, reading only what the projection keeps.
    pub fn from_json(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice::<WireEvent>(bytes).map(Self::from)
    }

    /// Projects a core/v1 Event straight from any serde input (a watch event, a LIST), with
    /// the event object's own `resourceVersion` (a watcher resumes from it).
    pub fn deserialize_api_versioned<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<(Self, Option<String>), D::Error> {
        let mut e = WireEvent::deserialize(d)?;
        let rv = e.metadata.resource_version.take();
        Ok((Self::from(e), rv))
    }

    /// Projects an events.k8s.io/v1 Event.
    pub fn from_events_v1(e: &events::Event) -> Self {
        let obj = e.regarding.as_ref();
        let event_time = e.event_time.as_ref().map(|t| time(&t.0));
        Self {
            namespace: obj
                .and_then(|o| o.namespace.clone())
                .or_else(|| e.metadata.namespace.clone())
                .unwrap_or_default(),
            object_name: obj.and_then(|o| o.name.clone()).unwrap_or_default(),
            object_uid: obj.and_then(|o| o.uid.clone()),
            object_kind: obj.and_then(|o| o.kind.clone()),
            type_: e.type_.clone(),
            reason: e.reason.clone(),
            message: e.note.clone(),
            action: e.action.clone().filter(|a| !a.is_empty()),
            count: e
                .series
                .as_ref()
                .map(|s| s.count)
                .or(e.deprecated_count)
                .unwrap_or(1)
                .max(1),
            first_seen: e
                .deprecated_first_timestamp
                .as_ref()
                .map(|t| time(&t.0))
                .or(event_time),
            last_seen: e
                .series
                .as_ref()
                .map(|s| time(&s.last_observed_time.0))
                .or_else(|| e.deprecated_last_timestamp.as_ref().map(|t| time(&t.0)))
                .or(event_time),
            source: e
                .reporting_controller
                .clone()
                .or_else(|| {
                    e.deprecated_source
                        .as_ref()
                        .and_then(|s| s.component.clone())
                })
                .filter(|s| !s.is_empty()),
            host: (e.reporting_controller.as_deref() == Some("kubelet"))
                .then(|| {
                    e.deprecated_source
                        .as_ref()
                        .and_then(|s| s.host.clone())
                        .or_else(|| e.reporting_instance.clone())
                })
                .flatten()
                .filter(|h| !h.is_empty()),
            related: e
                .related
                .as_ref()
                .map(|o| Related {
                    kind: o.kind.clone(),
                    namespace: o.namespace.clone(),
                    name: o.name.clone(),
                    uid: o.uid.clone(),
                    ..Related::default()
                })
                .filter(|r| r.name.is_some() || r.uid.is_some()),
        }
    }

    /// Whether this event is about `pod`: by uid when both have one, else by namespace and
    /// name (events written by old components carry no uid).
    pub fn is_about(&self, pod: &ExecutorPod) -> bool {
        if self.object_kind.as_deref().is_some_and(|k| k != "Pod") {
            return false;
        }
        match (&self.object_uid, &pod.uid) {
            (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() => a == b,
            _ => self.namespace == pod.namespace && self.object_name == pod.name,
        }
    }

    /// `type` is `Warning`.
    pub fn is_warning(&self) -> bool {
        self.type_.as_deref() == Some("Warning")
    }

    /// Oldest first; events of the same second ordered by content, never by arrival, so
    /// the same events always read the same.
    pub fn chronological(a: &Self, b: &Self) -> std::cmp::Ordering {
        (a.last_seen, a.first_seen, &a.reason, &a.message).cmp(&(
            b.last_seen,
            b.first_seen,
            &b.reason,
            &b.message,
        ))
    }

    /// The reason, compared exactly.
    pub fn reason_is(&self, reason: &str) -> bool {
        self.reason.as_deref() == Some(reason)
    }

    /// One line for evidence: `Warning FailedScheduling ×3 (last 10:42:07Z, default-scheduler): msg`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "event {} {}",
            self.type_.as_deref().unwrap_or("Normal"),
            self.reason.as_deref().unwrap_or("(no reason)")
        );
        if self.count > 1 {
            s.push_str(&format!(" x{}", self.count));
        }
        let mut when = Vec::new();
        if let Some(t) = &self.last_seen {
            when.push(format!("last {}", super::pod::fmt_time(t)));
        }
        if let Some(src) = &self.source {
            when.push(src.clone());
        }
        if !when.is_empty() {
            s.push_str(&format!(" ({})", when.join(", ")));
        }
        if let Some(m) = self.message.as_deref().filter(|m| !m.is_empty()) {
            s.push_str(": ");
            s.push_str(m.trim());
        }
        s
    }
}
