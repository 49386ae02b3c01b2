//! What a namespace keeps that nobody reads: finished driver pods. spark-submit never
//! deletes its driver pod, and an operator deletes it only with its object (kubeflow's
//! `spec.timeToLiveSeconds`, Apache's `resourceRetainPolicy`); each one keeps the Service
//! and ConfigMaps Spark made for it (owned by the pod), so a namespace of nightly jobs
//! gathers thousands of objects every LIST of its pods and etcd carry.
//!
//! Ref: Kubernetes ResourceQuota (`pods` and compute resources count non-terminal pods
//! only; `count/services`, `count/configmaps` count every object), Spark on Kubernetes
//! (`KubernetesClientApplication` leaves the driver pod; `KubernetesDriverBuilder`'s
//! Service and ConfigMap are owned by it).

use super::{Code, Finding, Severity, Witness};
use crate::model::{Time, fmt_time};
use crate::text;

/// From this many finished driver pods in one namespace, they are a pile.
pub const PILE: usize = 20;

/// A finished driver pod kept this long is forgotten, not kept.
pub const STALE: chrono::Duration = chrono::Duration::days(7);

/// The objects each finished driver keeps at least: its pod, its Service, its ConfigMap.
pub const OBJECTS_EACH: usize = 3;

/// Finished driver pods kept in one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptDrivers {
    /// The namespace.
    pub namespace: String,
    /// How many.
    pub count: usize,
    /// When the one that ended first ended.
    pub oldest: Option<Time>,
}

/// The finding of a namespace's finished driver pods, when they are a pile (at least
/// [`PILE`]) or one of them is older than [`STALE`] at `now`.
pub fn kept_drivers(k: &KeptDrivers, now: Time) -> Option<Finding> {
    let stale = k.oldest.is_some_and(|t| now - t >= STALE);
    if k.count == 0 || k.count < PILE && !stale {
        return None;
    }
    let oldest = k.oldest.map_or_else(String::new, |t| {
        format!(
            ", the oldest ended {} ago ({})",
            text::human_duration(now - t),
            fmt_time(&t)
        )
    });
    let objects = k.count * OBJECTS_EACH;
    Some(
        Finding::new(
            Code::DriversKept,
            Severity::Warn,
            format!(
                "{} finished driver pod{} kept in {}{oldest}: with each one's Service and \
                 ConfigMap, at least {objects} objects in etcd that every LIST of its pods reads",
                k.count,
                if k.count == 1 { "" } else { "s" },
                k.namespace
            ),
        )
        .witness(Witness::Pod)
        .evidence(format!(
            "kubectl get pods -n {} -l spark-role=driver \
             --field-selector=status.phase!=Running,status.phase!=Pending,status.phase!=Unknown",
            k.namespace
        ))
        .hint(format!(
            "Nothing deletes a finished spark-submit driver: delete them once read (kubectl \
             delete pods -n {} -l spark-role=driver \
             --field-selector=status.phase!=Running,status.phase!=Pending,status.phase!=Unknown; \
             their Service and \
             ConfigMaps go with them), or have the operator do it (kubeflow \
             spec.timeToLiveSeconds, Apache applicationTolerations.resourceRetainPolicy). \
             Finished pods do not count against a quota's pods or cpu, but their Services and \
             ConfigMaps count against object quotas.",
            k.namespace
        ))
        .reference("https://kubernetes.io/docs/concepts/policy/resource-quotas/"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(days: i64) -> Time {
        chrono::DateTime::from_timestamp(1_800_000_000 - days * 86_400, 0).unwrap()
    }

    #[test]
    fn a_pile_or_a_stale_one_is_said_a_few_recent_ones_are_not() {
        let now = at(0);
        let few = KeptDrivers {
            namespace: "etl".into(),
            count: 3,
            oldest: Some(at(2)),
        };
        assert!(kept_drivers(&few, now).is_none());
        let stale = KeptDrivers {
            oldest: Some(at(93)),
            ..few.clone()
        };
        let f = kept_drivers(&stale, now).expect("a stale one");
        assert_eq!((f.code, f.severity), (Code::DriversKept, Severity::Warn));
        assert!(
            f.summary.starts_with(
                "3 finished driver pods kept in etl, the oldest ended 93d00h ago (2026-10-14T08:00:00Z)"
            ),
            "{}",
            f.summary
        );
        assert!(
            f.summary
                .ends_with("at least 9 objects in etcd that every LIST of its pods reads")
        );
        let pile = KeptDrivers {
            count: PILE,
            oldest: Some(at(1)),
            ..few
        };
        assert!(kept_drivers(&pile, now).is_some());
        assert!(kept_drivers(&KeptDrivers { count: 0, ..pile }, now).is_none());
    }
}
