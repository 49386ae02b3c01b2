//! ResourceQuota, as the API server enforces it and the quota controller reports it: a pod
//! is charged `pods`/`count/pods` 1 and the sums of its containers' `requests.cpu`,
//! `requests.memory` (also as `cpu`, `memory`), `limits.cpu`, `limits.memory`; pods in a
//! terminal phase (Succeeded, Failed) are not charged. Admission refuses a pod that would take
//! `used` past `hard` (403, `exceeded quota: …`) or that lacks a value a quota constrains
//! (`failed quota: …: must specify …`). Scoped quotas are not simulated.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Inner, Obj, Resource};
use crate::error::ApiError;
use crate::model::quantity;

/// The resources the simulator charges for, in the API server's order of mention.
const CHARGED: [&str; 8] = [
    "count/pods",
    "cpu",
    "limits.cpu",
    "limits.memory",
    "memory",
    "pods",
    "requests.cpu",
    "requests.memory",
];

/// What a pod is charged, per resource name; `None` where a container lacks the value.
fn charge(pod: &Value) -> BTreeMap<&'static str, Option<f64>> {
    let containers: Vec<&Value> = pod["spec"]["containers"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let sum = |kind: &str, res: &str| -> Option<f64> {
        containers
            .iter()
            .map(|c| {
                c["resources"][kind][res]
                    .as_str()
                    .and_then(quantity::parse)
                    // Requests default to limits, as the API server does.
                    .or_else(|| {
                        (kind == "requests")
                            .then(|| {
                                c["resources"]["limits"][res]
                                    .as_str()
                                    .and_then(quantity::parse)
                            })
                            .flatten()
                    })
            })
            .sum()
    };
    let mut out = BTreeMap::new();
    for r in CHARGED {
        let v = match r {
            "pods" | "count/pods" => Some(1.0),
            "cpu" | "requests.cpu" => sum("requests", "cpu"),
            "memory" | "requests.memory" => sum("requests", "memory"),
            "limits.cpu" => sum("limits", "cpu"),
            _ => sum("limits", "memory"),
        };
        out.insert(r, v);
    }
    out
}

/// A quantity back as text: whole numbers plain, memory in Mi/Gi when exact, else milli.
fn show(resource: &str, v: f64) -> String {
    let mib = 1024.0 * 1024.0;
    if resource.contains("memory") && v >= mib {
        if (v / (mib * 1024.0)).fract() == 0.0 {
            return format!("{}Gi", v / (mib * 1024.0));
        }
        return format!("{}Mi", (v / mib).round());
    }
    if v.fract() == 0.0 {
        format!("{v}")
    } else {
        format!("{}m", (v * 1000.0).round())
    }
}

/// `status.used` of a quota in `ns` given the namespace's pods.
fn used<'a>(
    hard: &BTreeMap<String, Value>,
    pods: impl Iterator<Item = &'a Arc<Obj>>,
) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = hard.keys().map(|k| (k.clone(), 0.0)).collect();
    for p in pods.filter(|p| !p.terminal()) {
        for (r, v) in charge(&p.value()) {
            if let (Some(total), Some(v)) = (out.get_mut(r), v) {
                *total += v;
            }
        }
    }
    out
}

use std::sync::Arc;

/// The stored objects of one kind in a namespace.
fn in_namespace<'a>(
    inner: &'a Inner,
    resource: Resource,
    ns: &'a str,
) -> impl Iterator<Item = &'a Arc<Obj>> {
    inner
        .objects
        .get(&resource)
        .into_iter()
        .flat_map(|m| m.values())
        .filter(move |o| o.namespace() == ns)
}

fn namespace_pods<'a>(inner: &'a Inner, ns: &'a str) -> impl Iterator<Item = &'a Arc<Obj>> {
    in_namespace(inner, Resource::Pods, ns)
}

fn quotas<'a>(inner: &'a Inner, ns: &'a str) -> impl Iterator<Item = &'a Arc<Obj>> {
    in_namespace(inner, Resource::ResourceQuotas, ns)
}

fn hard_of(q: &Obj) -> BTreeMap<String, Value> {
    q.value()["spec"]["hard"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Quota admission for a new pod in `ns` (before it is stored).
pub(super) fn admit(inner: &Inner, ns: &str, name: &str, pod: &Value) -> Result<(), ApiError> {
    let asked = charge(pod);
    for q in quotas(inner, ns) {
        let hard = hard_of(q);
        let charged: Vec<&str> = hard
            .keys()
            .filter_map(|k| CHARGED.iter().find(|c| **c == k.as_str()).copied())
            .collect();
        let missing: Vec<&str> = charged
            .iter()
            .copied()
            .filter(|r| asked.get(r).copied().flatten().is_none())
            .collect();
        if !missing.is_empty() {
            let containers: Vec<&str> = pod["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str())
                .collect();
            return Err(ApiError::forbidden_msg(format!(
                "pods \"{name}\" is forbidden: failed quota: {}: must specify {} for: {}",
                q.name(),
                missing.join(","),
                containers.join(",")
            )));
        }
        let now = used(&hard, namespace_pods(inner, ns));
        let over: Vec<&str> = charged
            .iter()
            .copied()
            .filter(|r| {
                let limit = hard[*r]
                    .as_str()
                    .and_then(quantity::parse)
                    .unwrap_or(f64::MAX);
                now[*r] + asked[r].unwrap_or(0.0) > limit * (1.0 + 1e-9)
            })
            .collect();
        if !over.is_empty() {
            let list = |f: &dyn Fn(&str) -> String| {
                over.iter()
                    .map(|r| format!("{r}={}", f(r)))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            return Err(ApiError::forbidden_msg(format!(
                "pods \"{name}\" is forbidden: exceeded quota: {}, requested: {}, used: {}, limited: {}",
                q.name(),
                list(&|r| show(r, asked[r].unwrap_or(0.0))),
                list(&|r| show(r, now[r])),
                list(&|r| hard[r].as_str().unwrap_or_default().to_owned()),
            )));
        }
    }
    Ok(())
}

impl super::ObjectStore {
    /// The quota controller's pass: every quota's `status` written where it changed.
    pub fn recount_quotas(&self) {
        let mut inner = self.lock();
        for (ns, name, value) in recount(&inner) {
            let old = inner
                .objects
                .get(&Resource::ResourceQuotas)
                .and_then(|m| m.get(&(ns, name)))
                .cloned();
            self.commit(
                &mut inner,
                Resource::ResourceQuotas,
                super::ChangeType::Modified,
                old,
                value,
            );
        }
    }
}

/// Each quota's `status` (`hard`, `used`) as it should be now: the quotas whose status
/// changed, with their new value.
fn recount(inner: &Inner) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for q in inner
        .objects
        .get(&Resource::ResourceQuotas)
        .into_iter()
        .flat_map(|m| m.values())
    {
        let hard = hard_of(q);
        let used = used(&hard, namespace_pods(inner, q.namespace()));
        let status = json!({
            "hard": hard,
            "used": used.iter().map(|(r, v)| (r.clone(), show(r, *v))).collect::<BTreeMap<_, _>>(),
        });
        if q.value()["status"] != status {
            let mut v = q.value();
            v["status"] = status;
            out.push((q.namespace().to_owned(), q.name().to_owned(), v));
        }
    }
    out
}
