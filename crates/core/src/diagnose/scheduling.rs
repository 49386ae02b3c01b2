//! The scheduler's `FailedScheduling` message, parsed into reasons with node counts.
//!
//! Formats seen (kube-scheduler `FitError.Error()`, 1.20 … 1.33):
//! `0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient memory.
//! preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.`
//! and the pre-1.25 taint wording `… had taint {k: v}, that the pod didn't tolerate.`
//!
//! Ref: kubernetes `pkg/scheduler/framework/types.go` (`FitError.Error`), the plugins'
//! `ErrReason*` strings (noderesources, tainttoleration, nodeaffinity, volumebinding,
//! nodeports, nodeunschedulable, interpodaffinity).

use serde::{Deserialize, Serialize};

/// What kept a pod off the nodes.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulingKind {
    /// `Insufficient cpu`.
    InsufficientCpu,
    /// `Insufficient memory`.
    InsufficientMemory,
    /// Another resource: `nvidia.com/gpu`, `ephemeral-storage`, `pods`, …
    InsufficientOther,
    /// `had untolerated taint`.
    UntoleratedTaint,
    /// `didn't match Pod's node affinity/selector`.
    NodeAffinity,
    /// A volume could not be bound or attached.
    VolumeBinding,
    /// `Too many pods`.
    TooManyPods,
    /// Nodes cordoned (`node(s) were unschedulable`).
    NodeUnschedulable,
    /// Inter-pod affinity or anti-affinity.
    PodAffinity,
    /// `didn't have free ports`.
    Ports,
    /// No nodes at all.
    NoNodes,
    /// Anything else.
    Other,
}

impl SchedulingKind {
    /// The kebab-case name every output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InsufficientCpu => "insufficient cpu",
            Self::InsufficientMemory => "insufficient memory",
            Self::InsufficientOther => "insufficient resource",
            Self::UntoleratedTaint => "untolerated taint",
            Self::NodeAffinity => "node affinity/selector",
            Self::VolumeBinding => "volume binding",
            Self::TooManyPods => "too many pods",
            Self::NodeUnschedulable => "nodes cordoned",
            Self::PodAffinity => "pod (anti-)affinity",
            Self::Ports => "host ports",
            Self::NoNodes => "no nodes",
            Self::Other => "other",
        }
    }
}

/// One reason of a scheduling failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SchedulingReason {
    /// What kind of reason.
    pub kind: SchedulingKind,
    /// How many nodes gave this reason, when the message says.
    pub nodes: Option<u32>,
    /// The scheduler's words without the count, e.g. `Insufficient memory`: the label
    /// pending reasons are aggregated by.
    pub text: String,
}

/// A parsed scheduling message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    /// `3` of `0/3 nodes are available`.
    pub total_nodes: Option<u32>,
    /// The reasons, most nodes first.
    pub reasons: Vec<SchedulingReason>,
    /// The `preemption: …` part, verbatim.
    pub preemption: Option<String>,
}

/// Parses a scheduler message; unknown shapes become one `Other` reason with the whole text.
pub fn parse(message: &str) -> Parsed {
    let message = message.trim();
    let (main, preemption) = match message.split_once(" preemption: ") {
        Some((m, p)) => (m, Some(p.trim().to_owned())),
        None => (message, None),
    };
    // Volcano says `0/3 nodes are unavailable: …` where kube-scheduler says `available`.
    let Some((head, list)) = main
        .split_once(" nodes are available: ")
        .or_else(|| main.split_once(" nodes are unavailable: "))
    else {
        let text = main.trim_end_matches('.').to_owned();
        let kind = if text.contains("no nodes available") {
            SchedulingKind::NoNodes
        } else {
            classify_reason(&text)
        };
        return Parsed {
            total_nodes: None,
            reasons: vec![SchedulingReason {
                kind,
                nodes: None,
                text,
            }],
            preemption,
        };
    };
    let total_nodes = head
        .rsplit_once('/')
        .and_then(|(_, n)| n.trim().parse().ok());
    let list = list.trim().trim_end_matches('.');
    let mut reasons: Vec<SchedulingReason> = Vec::new();
    for piece in split_top_level(list) {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        // Old taint wording: `…had taint {k: v}, that the pod didn't tolerate` splits in two.
        if piece.starts_with("that the pod didn't tolerate") {
            if let Some(last) = reasons.last_mut() {
                last.text.push_str(", ");
                last.text.push_str(piece);
                last.kind = SchedulingKind::UntoleratedTaint;
            }
            continue;
        }
        let (nodes, text) = match piece.split_once(' ') {
            Some((n, rest)) if n.parse::<u32>().is_ok() => (n.parse().ok(), rest.trim()),
            _ => (None, piece),
        };
        reasons.push(SchedulingReason {
            kind: classify_reason(text),
            nodes,
            text: text.to_owned(),
        });
    }
    Parsed {
        total_nodes,
        reasons,
        preemption,
    }
}

/// Splits at `, ` outside `{…}` (taints print as `{key: value}`).
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b',' if depth <= 0 && bytes.get(i + 1) == Some(&b' ') => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn classify_reason(text: &str) -> SchedulingKind {
    let t = text.to_lowercase();
    if let Some(res) = t.strip_prefix("insufficient ") {
        return match res.trim() {
            "cpu" => SchedulingKind::InsufficientCpu,
            "memory" => SchedulingKind::InsufficientMemory,
            "pods" => SchedulingKind::TooManyPods,
            _ => SchedulingKind::InsufficientOther,
        };
    }
    if t.contains("too many pods") || t.contains("pod number exceeded") {
        SchedulingKind::TooManyPods
    } else if t.contains("taint") {
        SchedulingKind::UntoleratedTaint
    } else if t.contains("volume") || t.contains("persistentvolumeclaim") {
        SchedulingKind::VolumeBinding
    } else if t.contains("node affinity")
        || t.contains("node selector")
        || t.contains("nodeselector")
    {
        SchedulingKind::NodeAffinity
    } else if t.contains("were unschedulable") || t.contains("was unschedulable") {
        SchedulingKind::NodeUnschedulable
    } else if t.contains("affinity") || t.contains("anti-affinity") || t.contains("topology spread")
    {
        SchedulingKind::PodAffinity
    } else if t.contains("free ports") {
        SchedulingKind::Ports
    } else {
        SchedulingKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(p: &Parsed) -> Vec<(SchedulingKind, Option<u32>, &str)> {
        p.reasons
            .iter()
            .map(|r| (r.kind, r.nodes, r.text.as_str()))
            .collect()
    }

    #[test]
    fn modern_message_with_preemption() {
        let p = parse(
            "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, \
             2 Insufficient memory. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, \
             2 No preemption victims found for incoming pod.",
        );
        assert_eq!(p.total_nodes, Some(3));
        assert_eq!(
            kinds(&p),
            vec![
                (
                    SchedulingKind::UntoleratedTaint,
                    Some(1),
                    "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
                ),
                (
                    SchedulingKind::InsufficientMemory,
                    Some(2),
                    "Insufficient memory"
                ),
            ]
        );
        assert!(
            p.preemption
                .unwrap()
                .starts_with("0/3 nodes are available: 1 Preemption")
        );
    }

    #[test]
    fn old_taint_wording_and_ports() {
        let p = parse(
            "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, \
             1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate.",
        );
        assert_eq!(
            kinds(&p),
            vec![
                (
                    SchedulingKind::Ports,
                    Some(1),
                    "node(s) didn't have free ports for the requested pod ports"
                ),
                (
                    SchedulingKind::UntoleratedTaint,
                    Some(1),
                    "node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate"
                ),
            ]
        );
    }

    #[test]
    fn each_kind() {
        let cases = [
            ("3 Insufficient cpu", SchedulingKind::InsufficientCpu),
            (
                "1 Insufficient nvidia.com/gpu",
                SchedulingKind::InsufficientOther,
            ),
            (
                "1 Insufficient ephemeral-storage",
                SchedulingKind::InsufficientOther,
            ),
            ("2 Too many pods", SchedulingKind::TooManyPods),
            (
                "4 node(s) didn't match Pod's node affinity/selector",
                SchedulingKind::NodeAffinity,
            ),
            (
                "1 node(s) didn't find available persistent volumes to bind",
                SchedulingKind::VolumeBinding,
            ),
            (
                "1 node(s) had volume node affinity conflict",
                SchedulingKind::VolumeBinding,
            ),
            (
                "1 node(s) were unschedulable",
                SchedulingKind::NodeUnschedulable,
            ),
            (
                "2 node(s) didn't match pod anti-affinity rules",
                SchedulingKind::PodAffinity,
            ),
            ("1 something new", SchedulingKind::Other),
        ];
        for (piece, want) in cases {
            let p = parse(&format!("0/4 nodes are available: {piece}."));
            assert_eq!(p.reasons.len(), 1, "{piece}");
            assert_eq!(p.reasons[0].kind, want, "{piece}");
        }
    }

    #[test]
    fn volcano_node_fit_message() {
        let p =
            parse("0/3 nodes are unavailable: 1 node(s) pod number exceeded, 2 Insufficient cpu.");
        assert_eq!(p.total_nodes, Some(3));
        assert_eq!(
            kinds(&p),
            vec![
                (
                    SchedulingKind::TooManyPods,
                    Some(1),
                    "node(s) pod number exceeded"
                ),
                (SchedulingKind::InsufficientCpu, Some(2), "Insufficient cpu"),
            ]
        );
    }

    #[test]
    fn messages_without_node_list() {
        let p = parse("no nodes available to schedule pods");
        assert_eq!(
            kinds(&p),
            vec![(
                SchedulingKind::NoNodes,
                None,
                "no nodes available to schedule pods"
            )]
        );
        let p = parse(
            "pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        );
        assert_eq!(p.reasons[0].kind, SchedulingKind::VolumeBinding);
        assert!(p.preemption.is_some());
        assert_eq!(parse("").reasons.len(), 1);
    }
}
