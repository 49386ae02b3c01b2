//! What the projection answers: the tool's hold, the labels Spark reads (role, executor
//! id), the phase, containers and conditions, a container's memory limit as it ran.

use super::*;
use crate::model::{OperatorKind, quantity};

impl ExecutorPod {
    /// Whether the tool's hold finalizer is on the pod.
    pub fn is_held(&self) -> bool {
        self.finalizers.iter().any(|f| f == HOLD_FINALIZER)
    }

    /// Whether the tool's hold is due for release at `now`: past its expiry, or an expiry
    /// that cannot be read, or the hold finalizer with no expiry at all (neither would ever
    /// expire by itself).
    pub fn hold_due(&self, now: Time) -> bool {
        match self.hold_expires() {
            Some(e) => e <= now,
            None => self.tool_annotations.contains_key(HOLD_EXPIRES) || self.is_held(),
        }
    }

    /// When the tool's hold expires, if one is set.
    pub fn hold_expires(&self) -> Option<Time> {
        self.tool_annotations
            .get(HOLD_EXPIRES)
            .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
            .map(|t| t.to_utc())
    }

    /// The pod's `metadata.resourceVersion` as a number (the simulator's and etcd's are).
    pub fn rv(&self) -> Option<u64> {
        self.resource_version
            .as_deref()
            .and_then(|r| r.parse().ok())
    }

    /// `namespace/name`, for messages.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// A label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(Text::as_str)
    }

    /// The app's id (`spark-app-selector`).
    pub fn app_id(&self) -> Option<&str> {
        self.label(LABEL_APP_ID)
    }

    /// The Spark operator's application this pod belongs to (its label, valued with the
    /// `SparkApplication`'s name), when an operator made it.
    pub fn operator_app(&self) -> Option<(OperatorKind, &str)> {
        OperatorKind::ALL
            .into_iter()
            .find_map(|k| Some((k, self.label(k.pod_label()?)?)))
    }

    /// The Spark role, from `spark-role`.
    pub fn role(&self) -> Option<Role> {
        match self.label(LABEL_ROLE)? {
            "driver" => Some(Role::Driver),
            "executor" => Some(Role::Executor),
            _ => None,
        }
    }

    /// Spark's reading of `spark-exec-id` (docs/diagnosis.md §1): absent or `EXECID` means "not an
    /// executor of the snapshot"; otherwise a 64-bit integer.
    pub fn exec_id_label(&self) -> ExecIdLabel {
        match self.label(LABEL_EXEC_ID) {
            None => ExecIdLabel::Missing,
            Some("EXECID") => ExecIdLabel::Placeholder,
            Some(v) => v
                .parse::<i64>()
                .map_or_else(|_| ExecIdLabel::Invalid(v.to_owned()), ExecIdLabel::Id),
        }
    }

    /// The executor id, when the pod is an executor of Spark's snapshot.
    pub fn executor_id(&self) -> Option<i64> {
        match self.exec_id_label() {
            ExecIdLabel::Id(id) => Some(id),
            _ => None,
        }
    }

    /// Spark keeps this pod because `deleteOnTermination=false` (label `spark-exec-inactive`).
    pub fn is_inactive(&self) -> bool {
        self.label(LABEL_INACTIVE) == Some("true")
    }

    /// `status.phase`, verbatim (`None` when absent).
    pub fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }

    /// `status.containerStatuses` (empty without a status).
    pub fn container_statuses(&self) -> &[ContainerStatus] {
        self.status
            .as_ref()
            .map_or(&[][..], |s| s.container_statuses.as_slice())
    }

    /// `status.initContainerStatuses` (empty without a status).
    pub fn init_container_statuses(&self) -> &[ContainerStatus] {
        self.status
            .as_ref()
            .map_or(&[][..], |s| s.init_container_statuses.as_slice())
    }

    /// The first container status with this name (Spark takes the first).
    pub fn container_status(&self, name: &str) -> Option<&ContainerStatus> {
        self.container_statuses().iter().find(|c| c.name == name)
    }

    /// The spec of the container with this name.
    pub fn container_spec(&self, name: &str) -> Option<&ContainerSpec> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// The memory limit a container had: what the runtime enacted (status, 1.27+), else
    /// what the node allocated (Spark's memory request equals its limit), else the spec's;
    /// with where it came from and, when the spec asks otherwise (an in-place resize not
    /// applied), the spec's.
    pub fn memory_limit(&self, container: &str) -> Option<MemoryLimit> {
        let spec = self
            .container_spec(container)
            .and_then(|c| c.limits.memory.clone());
        let spec_request = self
            .container_spec(container)
            .and_then(|c| c.requests.memory.clone());
        let differs = |a: &str, b: &str| match (quantity::parse(a), quantity::parse(b)) {
            (Some(x), Some(y)) => (x - y).abs() > 0.5,
            _ => a != b,
        };
        let status = self.container_status(container);
        // The allocation is a request: it tells a resize only where it departs from the
        // spec's request (then, Spark's request being its limit, it is the limit it had).
        let allocated = status
            .and_then(|c| c.allocated.as_ref())
            .and_then(|r| r.memory.clone())
            .filter(|a| spec.is_some() && spec_request.as_deref().is_some_and(|r| differs(a, r)));
        let (had, source) = match (
            status
                .and_then(|c| c.enacted_limits.as_ref())
                .and_then(|r| r.memory.clone()),
            allocated,
        ) {
            (Some(m), _) => (m, LimitSource::Enacted),
            (None, Some(m)) => (m, LimitSource::Allocated),
            (None, None) => (spec.clone()?, LimitSource::Spec),
        };
        let spec_asks = spec.filter(|s| source != LimitSource::Spec && differs(s, &had));
        Some(MemoryLimit {
            had,
            source,
            spec_asks,
        })
    }

    /// The condition of this type, if reported.
    pub fn condition(&self, type_: &str) -> Option<&PodCondition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
    }
}

impl ContainerStatus {
    /// The terminated state, if the container has ended.
    pub fn terminated(&self) -> Option<&Terminated> {
        self.state.terminated()
    }

    /// Why the container waits, if it does.
    pub fn waiting_reason(&self) -> Option<&str> {
        match &self.state {
            ContainerState::Waiting { reason, .. } => reason.as_deref(),
            _ => None,
        }
    }
}

impl ContainerState {
    /// The terminated state, if this is one.
    pub fn terminated(&self) -> Option<&Terminated> {
        match self {
            Self::Terminated(t) => Some(t),
            _ => None,
        }
    }
}
