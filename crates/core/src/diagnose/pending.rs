//! Why a pod waits: scheduling, image pulls, container config, slow container creation.
//! Spark never looks at any of this (it only counts pending pods), so a stuck executor is
//! invisible in the Spark UI: these rules are the tool's own.
//!
//! Ref: kubelet waiting reasons (`pkg/kubelet/images/types.go`,
//! `pkg/kubelet/kuberuntime/kuberuntime_container.go`), scheduler `PodScheduled` condition.

use std::collections::BTreeSet;

use super::exit::first_line;
use super::scheduling::{self, SchedulingKind};
use super::{Code, Finding, Severity, Subject};
use crate::model;
use crate::model::{ContainerState, ContainerStatus};
use crate::text::human_duration;

const REF_SCHEDULING: &str =
    "https://kubernetes.io/docs/concepts/scheduling-eviction/kube-scheduler/";
const REF_IMAGES: &str = "https://kubernetes.io/docs/concepts/containers/images/#imagepullbackoff";
const REF_WAITING: &str =
    "https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-state-waiting";

/// How long `ContainerCreating` may last before it counts as stuck.
pub const CREATING_STUCK_AFTER_SECS: i64 = 120;

const IMAGE_PULL_REASONS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
    "SignatureValidationFailed",
    "ErrImageInspect",
];

const CONFIG_REASONS: &[&str] = &[
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "PreStartHookError",
    "PostStartHookError",
    "ContainerCannotRun",
];

/// Regular and init container statuses.
fn all_statuses<'a>(s: &'a Subject<'_>) -> impl Iterator<Item = &'a ContainerStatus> {
    s.pod
        .init_container_statuses()
        .iter()
        .chain(s.pod.container_statuses())
}

fn waiting_with<'a>(s: &'a Subject<'_>, reasons: &'a [&str]) -> Vec<&'a ContainerStatus> {
    all_statuses(s)
        .filter(|c| c.waiting_reason().is_some_and(|r| reasons.contains(&r)))
        .collect()
}

fn describe_waiting(c: &ContainerStatus) -> String {
    let mut line = format!(
        "containerStatuses[{}].state.waiting.reason={}",
        c.name,
        c.waiting_reason().unwrap_or("-")
    );
    if let ContainerState::Waiting {
        message: Some(m), ..
    } = &c.state
    {
        line.push_str(&format!(" message={:?}", first_line(m)));
    }
    line
}

pub(super) fn unschedulable(s: &Subject<'_>, out: &mut Vec<Finding>) {
    if s.pod.node_name.is_some() {
        return; // scheduled since: old FailedScheduling events are history
    }
    let cond = s
        .pod
        .condition("PodScheduled")
        .filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"));
    let event = s.last_event(&["FailedScheduling"]);
    let Some(message) = cond
        .and_then(|c| c.message.as_deref())
        .or_else(|| event.and_then(|e| e.message.as_deref()))
    else {
        if cond.is_some() {
            out.push(
                Finding::new(
                    Code::Unschedulable,
                    Severity::Warn,
                    "Unschedulable (the scheduler gave no message)",
                )
                .evidence("conditions[PodScheduled]: status=False reason=Unschedulable")
                .hint("Look at `kubectl describe pod` for FailedScheduling events.")
                .reference(REF_SCHEDULING),
            );
        }
        return;
    };
    if super::queueing::owns_message(message) {
        return;
    }
    let parsed = scheduling::parse(message);
    let reasons: Vec<String> = parsed
        .reasons
        .iter()
        .map(|r| match r.nodes {
            Some(n) => format!("{} ({n} node{})", r.text, if n == 1 { "" } else { "s" }),
            None => r.text.clone(),
        })
        .collect();
    let of = parsed
        .total_nodes
        .map(|n| format!(" on all {n} nodes"))
        .unwrap_or_default();
    let mut f = Finding::new(
        Code::Unschedulable,
        Severity::Warn,
        format!("Unschedulable{of}: {}", reasons.join("; ")),
    )
    .hint(scheduling_hint(&parsed.reasons))
    .reference(REF_SCHEDULING);
    if let Some(c) = cond {
        f = f.evidence(format!(
            "conditions[PodScheduled]: status=False reason=Unschedulable message={:?}",
            c.message.as_deref().unwrap_or_default()
        ));
    }
    if let Some(e) = event {
        f = f.evidence(e.describe());
    }
    if let Some(p) = &parsed.preemption {
        f = f.evidence(format!("preemption: {p}"));
    }
    let wants_resources = parsed.reasons.iter().any(|r| {
        matches!(
            r.kind,
            SchedulingKind::InsufficientCpu | SchedulingKind::InsufficientMemory
        )
    });
    if wants_resources {
        f = f.evidence_all(s.pod.containers.iter().map(|c| {
            format!(
                "spec.containers[{}].resources.requests: cpu={} memory={}",
                c.name,
                c.requests.cpu.as_deref().unwrap_or("-"),
                c.requests.memory.as_deref().unwrap_or("-")
            )
        }));
    }
    f.scheduling = parsed.reasons;
    out.push(f);
}

fn scheduling_hint(reasons: &[scheduling::SchedulingReason]) -> String {
    let kinds: BTreeSet<SchedulingKind> = reasons.iter().map(|r| r.kind).collect();
    let mut hints: Vec<&str> = Vec::new();
    for k in kinds {
        hints.push(match k {
            SchedulingKind::InsufficientMemory => {
                "No node has the memory the executor requests (spark.executor.memory + \
                 memoryOverhead + pyspark memory): lower them, or add capacity (autoscaler, node pool)."
            }
            SchedulingKind::InsufficientCpu => {
                "No node has the CPU requested (spark.kubernetes.executor.request.cores, else \
                 spark.executor.cores): lower it or add capacity."
            }
            SchedulingKind::InsufficientOther => {
                "An extended resource (GPU, ephemeral-storage, …) is exhausted or absent: check \
                 spark.executor.resource.* and the nodes' allocatable resources."
            }
            SchedulingKind::UntoleratedTaint => {
                "Nodes carry taints the executor does not tolerate: add tolerations through \
                 spark.kubernetes.executor.podTemplateFile, or target other nodes."
            }
            SchedulingKind::NodeAffinity => {
                "No node matches the executor's node selector/affinity: check \
                 spark.kubernetes.node.selector.* and spark.kubernetes.executor.node.selector.*."
            }
            SchedulingKind::VolumeBinding => {
                "A volume cannot bind on any node: check the PVCs of \
                 spark.kubernetes.executor.volumes.persistentVolumeClaim.* and their storage class/zone."
            }
            SchedulingKind::TooManyPods => "Nodes are at their pod limit (max pods): add nodes.",
            SchedulingKind::NodeUnschedulable => "Nodes are cordoned (being drained or upgraded).",
            SchedulingKind::PodAffinity => "Pod (anti-)affinity or topology spread rules exclude every node.",
            SchedulingKind::Ports => "Host ports collide: executors should not use hostPort.",
            SchedulingKind::NoNodes => "The cluster has no schedulable nodes.",
            SchedulingKind::Other => "Read the scheduler's message above.",
        });
    }
    hints.push(
        "Spark keeps a pending executor pod waiting: it deletes one only when dynamic allocation \
         no longer needs it (a surplus pending pod goes after \
         spark.dynamicAllocation.executorIdleTimeout) or when a requested pod never shows up \
         (spark.kubernetes.allocation.executor.timeout, 600s); from 4.1, \
         spark.kubernetes.allocation.maximum caps how many executor pods it ever creates.",
    );
    hints.join(" ")
}

pub(super) fn image_pull(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let waiting = waiting_with(s, IMAGE_PULL_REASONS);
    let failed_events: Vec<_> = s
        .events
        .iter()
        .copied()
        .filter(|e| {
            e.reason_is("Failed")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.contains("pull") || m.contains("image"))
        })
        .collect();
    if waiting.is_empty() {
        return; // events alone may be history (the image came through later)
    }
    let image = waiting
        .first()
        .and_then(|c| {
            s.pod
                .containers
                .iter()
                .chain(&s.pod.init_containers)
                .find(|spec| spec.name == c.name)
                .and_then(|spec| spec.image.clone())
                .or_else(|| c.image.clone())
        })
        .map_or_else(|| "its image".to_owned(), String::from);
    let texts: Vec<&str> = waiting
        .iter()
        .filter_map(|c| match &c.state {
            ContainerState::Waiting { message, .. } => message.as_deref(),
            _ => None,
        })
        .chain(failed_events.iter().filter_map(|e| e.message.as_deref()))
        .collect();
    let reason = waiting
        .first()
        .and_then(|c| c.waiting_reason())
        .unwrap_or("ImagePullBackOff");
    let (cause, hint) = pull_cause(reason, &texts);
    // With imagePullPolicy Never nothing is pulled: the image is simply not on the node.
    let summary = if reason == "ErrImageNeverPull" {
        format!("{image} is not on the node and its imagePullPolicy is Never ({reason})")
    } else {
        format!("Cannot pull {image}: {cause} ({reason})")
    };
    let f = Finding::new(Code::ImagePull, Severity::Error, summary)
        .hint(hint)
        .reference(REF_IMAGES)
        .evidence_all(waiting.iter().map(|c| describe_waiting(c)))
        .evidence_all(failed_events.iter().map(|e| e.describe()));
    out.push(f);
}

fn pull_cause(reason: &str, texts: &[&str]) -> (&'static str, &'static str) {
    let all = texts.join(" ").to_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| all.contains(n));
    if reason == "ErrImageNeverPull" {
        (
            "the image is not on the node and its imagePullPolicy is Never",
            "The kubelet never pulls with imagePullPolicy Never: load the image on every node \
             the executors can run on (or use IfNotPresent, \
             spark.kubernetes.container.image.pullPolicy), and check the tag.",
        )
    } else if reason == "InvalidImageName" {
        (
            "the image name is invalid",
            "Fix spark.kubernetes.container.image / spark.kubernetes.executor.container.image.",
        )
    } else if has(&["429", "too many requests", "toomanyrequests", "rate limit"]) {
        (
            "the registry is rate-limiting pulls",
            "The registry answered 429: use a mirror or pull-through cache, authenticate pulls \
             (spark.kubernetes.container.image.pullSecrets), or pre-pull the image on nodes.",
        )
    } else if has(&[
        "unauthorized",
        "authentication required",
        "access denied",
        "denied",
        "403",
        "forbidden",
    ]) {
        (
            "the registry refused the credentials",
            "Set spark.kubernetes.container.image.pullSecrets to a Secret that can read the \
             image, in the application's namespace.",
        )
    } else if has(&["not found", "manifest unknown", "does not exist", "404"]) {
        (
            "the image or tag does not exist",
            "Check the tag in spark.kubernetes.executor.container.image (else \
             spark.kubernetes.container.image): was it pushed, for this architecture?",
        )
    } else if has(&[
        "no such host",
        "i/o timeout",
        "connection refused",
        "timeout",
        "tls",
    ]) {
        (
            "the registry is unreachable from the node",
            "The node cannot reach the registry (DNS, proxy, firewall, TLS): check node \
             networking or use a registry the cluster can reach.",
        )
    } else {
        (
            "the pull failed",
            "Read the kubelet's message (kubectl describe pod); check the image name, \
             spark.kubernetes.container.image.pullSecrets and registry availability.",
        )
    }
}

pub(super) fn container_config_error(s: &Subject<'_>, out: &mut Vec<Finding>) {
    let waiting = waiting_with(s, CONFIG_REASONS);
    let Some(first) = waiting.first() else {
        return;
    };
    let reason = first
        .waiting_reason()
        .unwrap_or("CreateContainerConfigError");
    // The kubelet's message names what is missing (`configmap "x" not found`).
    let summary = match &first.state {
        ContainerState::Waiting {
            message: Some(m), ..
        } if !m.is_empty() => {
            // Long runtime errors (CreateContainerError) say what failed at their end.
            let n = m.chars().count();
            let m = if n > 200 {
                format!("…{}", m.chars().skip(n - 199).collect::<String>())
            } else {
                m.to_string()
            };
            format!("Container {} cannot be created: {m} ({reason})", first.name)
        }
        _ => format!("Container {} cannot be created: {reason}", first.name),
    };
    let f = Finding::new(Code::ContainerConfigError, Severity::Error, summary)
    .hint(
        "The kubelet cannot build the container: usually a Secret or ConfigMap (or a key of one) \
         it references is missing (spark.kubernetes.executor.secrets.*, \
         spark.kubernetes.executor.secretKeyRef.*, envFrom in the pod template), or the runtime \
         rejected the command. Create the object in the application's namespace or fix the reference.",
    )
    .reference(REF_WAITING)
    .evidence_all(waiting.iter().map(|c| describe_waiting(c)))
    .evidence_all(s.events_with("Failed").map(|e| e.describe()));
    out.push(f);
}

pub(super) fn container_creating_stuck(s: &Subject<'_>, out: &mut Vec<Finding>) {
    // A pod that already failed or succeeded is not waiting to start any more.
    if matches!(s.pod.phase(), Some("Failed" | "Succeeded")) {
        return;
    }
    let waiting = waiting_with(s, &["ContainerCreating", "PodInitializing"]);
    let Some(first) = waiting.first() else {
        return;
    };
    // From when it was scheduled (or started, or created): the time it has had to start.
    let since = s
        .pod
        .condition("PodScheduled")
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition)
        .or_else(|| s.pod.status.as_ref().and_then(|st| st.start_time))
        .or(s.pod.created_at);
    let Some(since) = since else {
        return;
    };
    let waited = s.now - since;
    if waited <= chrono::Duration::seconds(CREATING_STUCK_AFTER_SECS) {
        return;
    }
    let causes: Vec<String> = s
        .events
        .iter()
        .filter(|e| {
            [
                "FailedMount",
                "FailedAttachVolume",
                "FailedCreatePodSandBox",
                "FailedCreatePodContainer",
                "NetworkNotReady",
            ]
            .iter()
            .any(|r| e.reason_is(r))
        })
        .map(|e| e.describe())
        .collect();
    let what = if causes
        .iter()
        .any(|c| c.contains("Mount") || c.contains("Attach"))
    {
        "; volumes fail to mount"
    } else if causes
        .iter()
        .any(|c| c.contains("Sandbox") || c.contains("Network"))
    {
        "; the pod sandbox/network cannot be set up"
    } else {
        ""
    };
    out.push(
        Finding::new(
            Code::ContainerCreatingStuck,
            Severity::Warn,
            format!(
                "Container {} has been {} for {}{what}",
                first.name,
                first.waiting_reason().unwrap_or("ContainerCreating"),
                human_duration(waited)
            ),
        )
        .hint(
            "Look at FailedMount (a missing Secret/ConfigMap/PVC of spark.kubernetes.executor.volumes.*), \
             FailedCreatePodSandBox (CNI, IP exhaustion) or a very large image still pulling.",
        )
        .reference(REF_WAITING)
        .evidence(describe_waiting(first))
        .evidence(format!("waiting since {}", model::fmt_time(&since)))
        .evidence_all(causes),
    );
}
