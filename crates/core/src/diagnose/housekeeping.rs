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
    /// Who keeps them, as their operators' objects say.
    pub by: KeptBy,
}

/// Who keeps a namespace's finished driver pods: what their operators' objects say (the
/// pods name theirs by label), else spark-submit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptBy {
    /// Made by spark-submit (no operator's label): nothing deletes them.
    pub submit: usize,
    /// Kept by their operator with no time limit (kubeflow without `timeToLiveSeconds`,
    /// Apache's `resourceRetainPolicy: Always` without a duration).
    pub forever: usize,
    /// Within their operator's time limit: it deletes them.
    pub within_ttl: usize,
    /// Past their operator's time limit, still here: it is not deleting them.
    pub past_ttl: usize,
    /// Of an operator whose object was not read (deleted with its pods orphaned, or not
    /// listed).
    pub unread: usize,
}

/// Who keeps one finished driver pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeper {
    /// spark-submit (the pod names no operator's object).
    Submit,
    /// An operator whose object was not read.
    Unread,
    /// Its operator, as its object says ([`OperatorApp::keeps_driver`]): `None` when it
    /// deletes the pod at the end, else for how many seconds after it (`None`: until the
    /// object is deleted).
    ///
    /// [`OperatorApp::keeps_driver`]: crate::model::OperatorApp::keeps_driver
    Operator(Option<Option<i64>>),
}

impl KeptBy {
    /// Counts one pod that ended at `ended`.
    pub fn count(&mut self, keeper: Keeper, ended: Time, now: Time) {
        match keeper {
            Keeper::Submit => self.submit += 1,
            Keeper::Unread => self.unread += 1,
            // Deleted at the end by the operator: still here is past its limit.
            Keeper::Operator(None) => self.past_ttl += 1,
            Keeper::Operator(Some(None)) => self.forever += 1,
            Keeper::Operator(Some(Some(ttl))) if (now - ended).num_seconds() > ttl => {
                self.past_ttl += 1;
            }
            Keeper::Operator(Some(Some(_))) => self.within_ttl += 1,
        }
    }

    /// One line per kind of keeper there is.
    fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.submit > 0 {
            out.push(format!(
                "{} made by spark-submit: nothing deletes a finished driver pod",
                self.submit
            ));
        }
        if self.forever > 0 {
            out.push(format!(
                "{} of SparkApplications with no time limit (kubeflow spec.timeToLiveSeconds unset, Apache resourceRetainPolicy Always or OnFailure): the operator keeps each until its object is deleted",
                self.forever
            ));
        }
        if self.past_ttl > 0 {
            out.push(format!(
                "{} past their SparkApplication's time limit and still here: the operator is not deleting them (is it running, and watching this namespace?)",
                self.past_ttl
            ));
        }
        if self.within_ttl > 0 {
            out.push(format!(
                "{} within their SparkApplication's time limit: the operator deletes them",
                self.within_ttl
            ));
        }
        if self.unread > 0 {
            out.push(format!(
                "{} of SparkApplications not read (deleted, their pods left behind, or not listed)",
                self.unread
            ));
        }
        out
    }
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
        .evidence_all(k.by.lines())
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
            by: KeptBy::default(),
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

    #[test]
    fn who_keeps_them_is_said_from_the_operators_objects() {
        let now = at(0);
        let mut by = KeptBy::default();
        by.count(Keeper::Submit, at(3), now);
        by.count(Keeper::Operator(Some(None)), at(3), now);
        by.count(Keeper::Operator(Some(Some(86_400))), at(3), now);
        by.count(Keeper::Operator(Some(Some(86_400 * 7))), at(3), now);
        by.count(Keeper::Operator(None), at(3), now);
        by.count(Keeper::Unread, at(3), now);
        assert_eq!(
            by,
            KeptBy {
                submit: 1,
                forever: 1,
                within_ttl: 1,
                past_ttl: 2,
                unread: 1
            }
        );
        let k = KeptDrivers {
            namespace: "etl".into(),
            count: PILE,
            oldest: Some(at(3)),
            by,
        };
        let f = kept_drivers(&k, now).expect("a pile");
        assert!(
            f.evidence.iter().any(|e| e.starts_with(
                "2 past their SparkApplication's time limit and still here: the operator is not deleting them"
            )),
            "{:?}",
            f.evidence
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e.starts_with("1 made by spark-submit")),
            "{:?}",
            f.evidence
        );
    }
}
