//! The projection read from the API's JSON: the wire shapes (`wire.rs`) into an
//! [`ExecutorPod`], its containers' specs and statuses; what is dropped, clipped or redacted
//! on the way.

use k8s_openapi::api::core::v1 as core;

use super::*;
use crate::model::group::GroupKind;
use crate::model::wire::{
    self, WireContainer, WireContainerStatus, WirePod, WireQuantities, WireState, WireStatus,
};
use crate::text::{clipped, credentials, floor_boundary, has_credentials};

/// A list as long as it is. Collecting a `Vec` of wire records into their projections
/// reuses the wire list's allocation: serde grows it four at a time, and a wire record is
/// two to four times its projection, so one container status held 1.6 KB where it needs
/// 0.3 (at 100,000 pods, 140 MB of the first view's 590 MB heap).
fn exact<T>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = items.collect();
    v.shrink_to_fit();
    v
}

impl From<WirePod> for ExecutorPod {
    /// Projects a Pod as the API wrote it. Never fails: absent fields become `None`/empty.
    fn from(pod: WirePod) -> Self {
        let meta = pod.metadata;
        let spec = pod.spec.unwrap_or_default();
        let mut owners = meta.owner_references;
        let controller = owners
            .iter()
            .position(|o| o.controller == Some(true))
            .unwrap_or(0);
        let owner = (controller < owners.len()).then(|| {
            let o = owners.swap_remove(controller);
            OwnerRef {
                kind: o.kind,
                name: o.name,
                uid: o.uid,
            }
        });
        let scheduling_annotations: BTreeMap<String, String> = meta
            .annotations
            .iter()
            .filter(|(k, _)| SCHEDULING_ANNOTATIONS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v[..floor_boundary(v, MAX_ANNOTATION)].to_owned()))
            .collect();
        let scheduling_gates: Vec<Text> = spec
            .scheduling_gates
            .into_iter()
            .map(|g| Text::from(g.name))
            .take(16)
            .collect();
        let groups = group_refs(
            &meta.labels,
            &scheduling_annotations,
            &scheduling_gates,
            spec.workload_ref,
        );
        let conf_config_map = spec
            .volumes
            .into_iter()
            .find(|v| v.name == "spark-conf-volume-driver")
            .and_then(|v| v.config_map)
            .map(|c| Text::from(c.name));
        Self {
            namespace: meta.namespace.unwrap_or_default(),
            name: meta.name.unwrap_or_default(),
            uid: meta.uid,
            resource_version: meta.resource_version,
            labels: meta.labels,
            owner,
            created_at: meta.creation_timestamp,
            deletion: meta.deletion_timestamp.map(|t| Deletion {
                at: wire::parse_time(&t).unwrap_or(DateTime::UNIX_EPOCH),
                grace_period_seconds: meta.deletion_grace_period_seconds,
            }),
            finalizers: meta.finalizers,
            node_name: spec.node_name,
            restart_policy: spec.restart_policy,
            termination_grace_period_seconds: spec.termination_grace_period_seconds,
            priority: spec.priority,
            priority_class: spec.priority_class_name.filter(|c| !c.is_empty()),
            scheduler_name: spec
                .scheduler_name
                .filter(|s| !s.is_empty() && s != "default-scheduler"),
            scheduling_gates,
            groups,
            scheduling_annotations,
            containers: exact(spec.containers.into_iter().map(ContainerSpec::from)),
            init_containers: exact(spec.init_containers.into_iter().map(ContainerSpec::from)),
            status: pod.status.map(PodStatus::from),
            exit_exception: meta
                .annotations
                .get(EXIT_EXCEPTION_ANNOTATION)
                .filter(|v| !v.trim().is_empty())
                .map(|v| exit_exception(v)),
            tool_annotations: meta
                .annotations
                .into_iter()
                .filter(|(k, _)| k.starts_with(TOOL_DOMAIN))
                .collect(),
            conf_config_map,
        }
    }
}

/// Spark's exit exception as kept: its exception and causes without their stack frames
/// (Hadoop's `stringifyException` indents every frame, `... N more` and `Suppressed:`
/// blocks; the exception's own lines and its `Caused by:` start a line), credentials
/// redacted (a connection string's password), to [`MAX_EXIT_EXCEPTION`].
fn exit_exception(text: &str) -> String {
    let causes: Vec<&str> = text
        .trim()
        .lines()
        .filter(|l| !l.starts_with([' ', '\t']) && !l.trim().is_empty())
        .collect();
    let kept = credentials(&causes.join("\n"));
    clipped(&kept, MAX_EXIT_EXCEPTION).into_owned()
}

/// The groups a pod names: Kueue's (its gate, queue label or pod-group name), the native
/// gang's (`spec.workloadRef`), Volcano's (the group-name annotation).
fn group_refs(
    labels: &Labels,
    annotations: &BTreeMap<String, String>,
    gates: &[Text],
    workload: Option<wire::WireWorkloadRef>,
) -> Vec<GroupRef> {
    let mut out = Vec::new();
    let kueue_group = annotations
        .get(KUEUE_POD_GROUP)
        .map(String::as_str)
        .or_else(|| labels.get(KUEUE_POD_GROUP).map(Text::as_str))
        .filter(|g| !g.is_empty());
    if kueue_group.is_some()
        || labels.contains_key(KUEUE_QUEUE_LABEL)
        || gates.iter().any(|g| g == KUEUE_GATE)
    {
        out.push(GroupRef {
            kind: GroupKind::KueueWorkload,
            name: Text::from(kueue_group.unwrap_or_default()),
            pod_group: None,
        });
    }
    if let Some(w) = workload.filter(|w| !w.name.is_empty()) {
        out.push(GroupRef {
            kind: GroupKind::Workload,
            name: w.name,
            pod_group: w.pod_group.filter(|g| !g.is_empty()),
        });
    }
    if let Some(g) = annotations
        .get(VOLCANO_GROUP_ANNOTATION)
        .filter(|g| !g.is_empty())
    {
        out.push(GroupRef {
            kind: GroupKind::VolcanoPodGroup,
            name: Text::from(g.as_str()),
            pod_group: None,
        });
    }
    out
}

impl ExecutorPod {
    /// Projects a typed Pod (through its JSON: one projection for both ways in).
    pub fn from_pod(pod: &core::Pod) -> Self {
        serde_json::to_value(pod)
            .ok()
            .and_then(|v| Self::from_value(&v).ok())
            .unwrap_or_default()
    }

    /// Projects a Pod from its JSON bytes, reading only what the projection keeps.
    pub fn from_json(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice::<WirePod>(bytes).map(Self::from)
    }

    /// Projects a Pod straight from any serde input (a kube client's response, a watch
    /// event), reading only what the projection keeps.
    pub fn deserialize_api<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        WirePod::deserialize(d).map(Self::from)
    }

    /// Projects a Pod held as a JSON value (without copying it).
    pub fn from_value(v: &serde_json::Value) -> Result<Self, serde_json::Error> {
        WirePod::deserialize(v).map(Self::from)
    }
}

impl From<WireContainer> for ContainerSpec {
    fn from(c: WireContainer) -> Self {
        let pick = |q: WireQuantities| Resources {
            cpu: q.cpu,
            memory: q.memory,
        };
        Self {
            runs_executor: c.runs_executor,
            name: c.name,
            image: c.image,
            requests: pick(c.resources.requests),
            limits: pick(c.resources.limits),
        }
    }
}

impl From<WireStatus> for PodStatus {
    fn from(s: WireStatus) -> Self {
        let statuses =
            |l: Vec<WireContainerStatus>| exact(l.into_iter().map(ContainerStatus::from));
        Self {
            phase: s.phase,
            reason: s.reason,
            message: s.message,
            conditions: exact(s.conditions.into_iter().map(|c| PodCondition {
                type_: c.type_,
                status: c.status,
                reason: c.reason,
                message: c.message,
                last_transition: c.last_transition_time,
            })),
            container_statuses: statuses(s.container_statuses),
            init_container_statuses: statuses(s.init_container_statuses),
            start_time: s.start_time,
            nominated_node_name: s.nominated_node_name,
        }
    }
}

impl From<WireContainerStatus> for ContainerStatus {
    fn from(c: WireContainerStatus) -> Self {
        Self {
            name: c.name,
            image: c.image.filter(|i| !i.is_empty()),
            ready: c.ready,
            restart_count: c.restart_count,
            state: c.state.map(ContainerState::from).unwrap_or_default(),
            last_state: c.last_state.map(ContainerState::from).unwrap_or_default(),
            enacted_limits: c
                .resources
                .map(|r| Resources {
                    cpu: r.limits.cpu,
                    memory: r.limits.memory,
                })
                .filter(|r| r.cpu.is_some() || r.memory.is_some()),
            allocated: c
                .allocated_resources
                .map(|q| Resources {
                    cpu: q.cpu,
                    memory: q.memory,
                })
                .filter(|r| r.cpu.is_some() || r.memory.is_some()),
        }
    }
}

impl From<WireState> for ContainerState {
    fn from(s: WireState) -> Self {
        if let Some(t) = s.terminated {
            Self::Terminated(Box::new(Terminated {
                exit_code: t.exit_code,
                signal: t.signal,
                reason: t.reason,
                // What the container wrote to its termination log (a driver's last words,
                // quoted in verdicts): never with a credential in it.
                message: t.message.map(|m| match has_credentials(&m) {
                    true => Text::from(credentials(&m)),
                    false => m,
                }),
                started_at: t.started_at,
                finished_at: t.finished_at,
            }))
        } else if let Some(r) = s.running {
            Self::Running {
                started_at: r.started_at,
            }
        } else if let Some(w) = s.waiting {
            Self::Waiting {
                reason: w.reason,
                message: w.message,
            }
        } else {
            Self::None
        }
    }
}
