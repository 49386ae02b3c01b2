//! A namespace's ResourceQuotas, as far as executor pods are concerned: would the API server
//! admit one more executor pod like the app's newest?
//!
//! Ref: Kubernetes' quota admission (`pkg/quota/v1/evaluator/core/pods.go`): a pod is charged
//! `pods`/`count/pods` 1, `cpu`/`requests.cpu`, `memory`/`requests.memory`, `limits.cpu`,
//! `limits.memory` (the sums over its containers); a pod without a value the quota constrains
//! is rejected ("must specify"); otherwise `used + requested > hard` is rejected with
//! `exceeded quota: NAME, requested: …, used: …, limited: …` (403 Forbidden).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{ExecutorPod, quantity};

/// One ResourceQuota: its limits and what the quota controller counted.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Quota {
    /// The quota's namespace.
    pub namespace: String,
    /// The quota's name.
    pub name: String,
    /// `status.hard` (else `spec.hard`): resource name → quantity.
    pub hard: BTreeMap<String, String>,
    /// `status.used`: resource name → quantity.
    pub used: BTreeMap<String, String>,
    /// `spec.scopes` or a scope selector is set: the quota covers only some pods, which the
    /// tool does not work out, so it never claims this quota rejects an executor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scoped: bool,
}

/// What one executor pod is charged.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PodCharge {
    /// Sum of the containers' CPU requests (cores); `None` if a container has none.
    pub requests_cpu: Option<f64>,
    /// Sum of the memory requests (bytes); `None` if a container has none.
    pub requests_memory: Option<f64>,
    /// Sum of the CPU limits; `None` if a container has none.
    pub limits_cpu: Option<f64>,
    /// Sum of the memory limits; `None` if a container has none.
    pub limits_memory: Option<f64>,
}

impl PodCharge {
    /// What the quota admission charges for this pod (its regular containers).
    pub fn of(pod: &ExecutorPod) -> Self {
        let sum = |get: &dyn Fn(&super::ContainerSpec) -> Option<&super::Text>| {
            pod.containers
                .iter()
                .map(|c| get(c).and_then(|q| quantity::parse(q)))
                .sum::<Option<f64>>()
        };
        Self {
            requests_cpu: sum(&|c| c.requests.cpu.as_ref()),
            requests_memory: sum(&|c| c.requests.memory.as_ref()),
            limits_cpu: sum(&|c| c.limits.cpu.as_ref()),
            limits_memory: sum(&|c| c.limits.memory.as_ref()),
        }
    }
}

/// Why the quota would refuse one more executor pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// `used + requested > hard`.
    Exceeded {
        /// The quota's resource name (`requests.cpu`, `pods`, …).
        resource: String,
        /// What one executor asks, as a quantity.
        requested: String,
        /// `status.used`.
        used: String,
        /// `status.hard`.
        hard: String,
    },
    /// The quota constrains a value the executor pods do not set (`limits.cpu` without
    /// `spark.kubernetes.executor.limit.cores`): every creation is rejected.
    MustSpecify {
        /// The quota's resource name.
        resource: String,
    },
}

impl Refusal {
    /// The resource the refusal is about.
    pub fn resource(&self) -> &str {
        match self {
            Self::Exceeded { resource, .. } | Self::MustSpecify { resource } => resource,
        }
    }

    /// One line, in the API server's own words where it has them.
    pub fn describe(&self) -> String {
        match self {
            Self::Exceeded {
                resource,
                requested,
                used,
                hard,
            } => format!("{resource}: used {used} of {hard}, an executor asks {requested}"),
            Self::MustSpecify { resource } => {
                format!("{resource}: the quota requires it and executor pods do not set it")
            }
        }
    }
}

impl Quota {
    /// Projects a core/v1 ResourceQuota.
    pub fn from_core(q: &k8s_openapi::api::core::v1::ResourceQuota) -> Self {
        let map = |m: Option<
            &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
        >| {
            m.map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                .unwrap_or_default()
        };
        let spec = q.spec.as_ref();
        let status = q.status.as_ref();
        let hard: BTreeMap<String, String> = map(status.and_then(|s| s.hard.as_ref()));
        Self {
            namespace: q.metadata.namespace.clone().unwrap_or_default(),
            name: q.metadata.name.clone().unwrap_or_default(),
            hard: if hard.is_empty() {
                map(spec.and_then(|s| s.hard.as_ref()))
            } else {
                hard
            },
            used: map(status.and_then(|s| s.used.as_ref())),
            scoped: spec.is_some_and(|s| {
                s.scopes.as_ref().is_some_and(|v| !v.is_empty()) || s.scope_selector.is_some()
            }),
        }
    }

    /// Why this quota would reject one more pod charged `charge` (empty: it would admit it).
    pub fn refusals(&self, charge: &PodCharge) -> Vec<Refusal> {
        if self.scoped {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (resource, hard) in &self.hard {
            let (asked, shown) = match resource.as_str() {
                "pods" | "count/pods" => (Some(1.0), "1".to_owned()),
                "cpu" | "requests.cpu" => cores(charge.requests_cpu),
                "memory" | "requests.memory" => bytes(charge.requests_memory),
                "limits.cpu" => cores(charge.limits_cpu),
                "limits.memory" => bytes(charge.limits_memory),
                _ => continue,
            };
            let Some(asked) = asked else {
                out.push(Refusal::MustSpecify {
                    resource: resource.clone(),
                });
                continue;
            };
            let (Some(limit), used) = (
                quantity::parse(hard),
                self.used.get(resource).and_then(|u| quantity::parse(u)),
            ) else {
                continue;
            };
            // A tiny tolerance: quantities are decimal, the sums are floats.
            if used.unwrap_or(0.0) + asked > limit * (1.0 + 1e-9) {
                out.push(Refusal::Exceeded {
                    resource: resource.clone(),
                    requested: shown,
                    used: self
                        .used
                        .get(resource)
                        .cloned()
                        .unwrap_or_else(|| "0".into()),
                    hard: hard.clone(),
                });
            }
        }
        out
    }
}

fn cores(v: Option<f64>) -> (Option<f64>, String) {
    let shown = match v {
        Some(c) if c.fract() == 0.0 => format!("{c}"),
        Some(c) => format!("{}m", (c * 1000.0).round()),
        None => String::new(),
    };
    (v, shown)
}

fn bytes(v: Option<f64>) -> (Option<f64>, String) {
    let shown = match v {
        Some(b) if b >= 1024.0 * 1024.0 => format!("{}Mi", (b / (1024.0 * 1024.0)).ceil()),
        Some(b) => format!("{b}"),
        None => String::new(),
    };
    (v, shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing;

    fn quota(hard: &[(&str, &str)], used: &[(&str, &str)]) -> Quota {
        let v = serde_json::json!({
            "metadata": {"name": "spark-quota", "namespace": "spark-jobs"},
            "spec": {"hard": hard.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
            "status": {
                "hard": hard.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
                "used": used.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
            }
        });
        Quota::from_core(&serde_json::from_value(v).unwrap())
    }

    fn executor(requests_cpu: &str, memory: &str, limits_cpu: Option<&str>) -> PodCharge {
        let mut limits = serde_json::json!({"memory": memory});
        if let Some(c) = limits_cpu {
            limits["cpu"] = c.into();
        }
        let pod = testing::pod(serde_json::json!({
            "metadata": {"name": "etl-exec-1", "labels": {"spark-role": "executor"}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor",
                "resources": {"requests": {"cpu": requests_cpu, "memory": memory}, "limits": limits}}]}
        }));
        PodCharge::of(&pod)
    }

    #[test]
    fn a_full_cpu_quota_refuses_the_next_executor_in_the_servers_terms() {
        let q = quota(
            &[
                ("requests.cpu", "8"),
                ("requests.memory", "64Gi"),
                ("pods", "20"),
            ],
            &[
                ("requests.cpu", "8"),
                ("requests.memory", "18Gi"),
                ("pods", "8"),
            ],
        );
        let r = q.refusals(&executor("1", "2432Mi", None));
        assert_eq!(
            r,
            vec![Refusal::Exceeded {
                resource: "requests.cpu".into(),
                requested: "1".into(),
                used: "8".into(),
                hard: "8".into()
            }]
        );
        assert_eq!(
            r[0].describe(),
            "requests.cpu: used 8 of 8, an executor asks 1"
        );
    }

    #[test]
    fn room_left_admits_and_an_exact_fit_is_admitted() {
        let q = quota(
            &[("requests.cpu", "8"), ("pods", "9")],
            &[("requests.cpu", "7500m"), ("pods", "8")],
        );
        assert!(q.refusals(&executor("500m", "1Gi", None)).is_empty());
        assert_eq!(
            q.refusals(&executor("600m", "1Gi", None))[0].resource(),
            "requests.cpu"
        );
    }

    #[test]
    fn a_limits_cpu_quota_refuses_executors_without_a_cpu_limit() {
        let q = quota(&[("limits.cpu", "100")], &[("limits.cpu", "0")]);
        assert_eq!(
            q.refusals(&executor("1", "1Gi", None)),
            vec![Refusal::MustSpecify {
                resource: "limits.cpu".into()
            }]
        );
        assert!(q.refusals(&executor("1", "1Gi", Some("1"))).is_empty());
    }

    #[test]
    fn scoped_quotas_and_other_resources_are_not_judged() {
        let mut q = quota(&[("pods", "1")], &[("pods", "1")]);
        q.scoped = true;
        assert!(q.refusals(&executor("1", "1Gi", None)).is_empty());
        let q = quota(
            &[("services", "1"), ("requests.nvidia.com/gpu", "0")],
            &[("services", "5")],
        );
        assert!(q.refusals(&executor("1", "1Gi", None)).is_empty());
    }
}
