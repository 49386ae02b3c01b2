//! Executor pods Spark's driver does not create itself: the `statefulset` allocator (3.3+)
//! and the `deployment` allocator (4.2+) of `spark.kubernetes.allocation.pods.allocator`
//! make one controller per resource profile and let Kubernetes create the pods.
//!
//! Ref: apache/spark `StatefulSetPodsAllocator.scala` and `DeploymentPodsAllocator.scala`
//! (`setName`: `spark-s-<app id>-<profile id>` and `spark-d-<app id>-<profile id>`, created
//! with the driver pod as their owner by `KubernetesUtils.addOwnerReference`; the pods carry
//! `spark-exec-id=EXECID` until the driver answers the executor's `GenerateExecID` and labels
//! the pod). A StatefulSet owns its pods itself (`<set>-<ordinal>`, `podManagementPolicy:
//! Parallel`); a Deployment owns them through a ReplicaSet (`<deployment>-<hash>`), whose
//! pods Spark marks `controller.kubernetes.io/pod-deletion-cost`.

use crate::model::{ContainerState, ExecutorPod, LABEL_EXEC_ID};

/// The controller that owns an executor pod for its app, as Spark's allocator names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Controller {
    /// `spark-s-<app id>-<profile>`: it owns the pod, named `<set>-<ordinal>`.
    StatefulSet {
        /// The StatefulSet's name.
        name: String,
        /// The pod's ordinal (its name's last part), when it reads as one.
        ordinal: Option<u32>,
    },
    /// `spark-d-<app id>-<profile>-<hash>`, owned by the Deployment `spark-d-<app id>-<profile>`.
    ReplicaSet {
        /// The ReplicaSet's name.
        name: String,
        /// The Deployment that owns it (by Spark's naming).
        deployment: String,
    },
}

impl Controller {
    /// The controller of `pod` if its controlling owner is one Spark's allocator made for the
    /// pod's app (by name: who owns that controller is checked against the API at write time).
    pub fn of(pod: &ExecutorPod) -> Option<Self> {
        let owner = pod.owner.as_ref()?;
        let app = pod.app_id()?;
        match owner.kind.as_str() {
            "StatefulSet" => {
                let profile = owner.name.strip_prefix(&format!("spark-s-{app}-"))?;
                digits(profile)?;
                let ordinal = pod
                    .name
                    .strip_prefix(owner.name.as_str())
                    .and_then(|s| s.strip_prefix('-'))
                    .and_then(|s| s.parse().ok());
                Some(Self::StatefulSet {
                    name: owner.name.to_string(),
                    ordinal,
                })
            }
            "ReplicaSet" => {
                let rest = owner.name.strip_prefix(&format!("spark-d-{app}-"))?;
                let (profile, hash) = rest.split_once('-')?;
                digits(profile)?;
                let hash_ok = !hash.is_empty() && hash.chars().all(|c| c.is_ascii_alphanumeric());
                hash_ok.then(|| Self::ReplicaSet {
                    name: owner.name.to_string(),
                    deployment: format!("spark-d-{app}-{profile}"),
                })
            }
            _ => None,
        }
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        match self {
            Self::StatefulSet { name, .. } | Self::ReplicaSet { name, .. } => name,
        }
    }

    /// `StatefulSet spark-s-…-0` / `ReplicaSet spark-d-…-0-7d4b9 (Deployment spark-d-…-0)`.
    pub fn describe(&self) -> String {
        match self {
            Self::StatefulSet { name, .. } => format!("StatefulSet {name}"),
            Self::ReplicaSet { name, deployment } => {
                format!("ReplicaSet {name} (Deployment {deployment})")
            }
        }
    }

    /// What deleting one of its pods leads to, in a sentence that names the controller:
    /// the controller, not Spark's allocator, replaces it (Spark keeps the controller's
    /// replicas at its executor target). An executor that merely exits does not end its
    /// pod: these pods restart their container in place (`restartPolicy: Always`), and the
    /// new JVM gets a new executor id.
    pub fn after_kill(&self) -> String {
        match self {
            Self::StatefulSet { name, ordinal } => format!(
                "StatefulSet {name} recreates the pod under the same name{} once it is gone \
                 (after its grace period), as a new executor with a new id",
                ordinal
                    .map(|o| format!(" (ordinal {o})"))
                    .unwrap_or_default()
            ),
            Self::ReplicaSet { name, deployment } => format!(
                "ReplicaSet {name} (Deployment {deployment}) creates a replacement pod at once, \
                 a new executor with a new id"
            ),
        }
    }

    /// What holding one of its pods costs the app, if anything: a StatefulSet recreates an
    /// ordinal only once the old pod is gone, so a held pod that was deleted (a kill, a
    /// scale-down, an eviction) keeps the app one executor short until it is released. A
    /// ReplicaSet replaces a terminating pod at once.
    pub fn hold_cost(&self) -> Option<String> {
        self.blocks()
            .map(|b| format!("once deleted, the held pod {b}"))
    }

    /// What a held pod being deleted does to its StatefulSet (`None` for a ReplicaSet's).
    pub fn blocks(&self) -> Option<String> {
        match self {
            Self::StatefulSet { name, ordinal } => Some(format!(
                "blocks {} of StatefulSet {name}: no replacement executor until it is released",
                ordinal
                    .map(|o| format!("ordinal {o}"))
                    .unwrap_or_else(|| "its ordinal".to_owned())
            )),
            Self::ReplicaSet { .. } => None,
        }
    }

    /// The same controller with no particular pod (what holds for all of its pods).
    pub fn any_pod(&self) -> Self {
        match self {
            Self::StatefulSet { name, .. } => Self::StatefulSet {
                name: name.clone(),
                ordinal: None,
            },
            other => other.clone(),
        }
    }
}

/// The pod as executor `id` ended in it, from the pod now labelled as the next executor:
/// with `restartPolicy: Always` an exit restarts the container in place (the pod goes on,
/// its `lastState` holds the end) and the driver labels the pod with the new JVM's id.
/// Each container's `lastState`, where it has one, becomes its state.
pub fn before_restart(pod: &ExecutorPod, id: i64) -> ExecutorPod {
    let mut p = pod.clone();
    p.labels.insert(LABEL_EXEC_ID.into(), id.to_string().into());
    if let Some(s) = &mut p.status {
        for c in &mut s.container_statuses {
            if matches!(c.last_state, ContainerState::Terminated(_)) {
                c.state = std::mem::take(&mut c.last_state);
                c.ready = false;
                c.restart_count = c.restart_count.saturating_sub(1);
            }
        }
    }
    p
}

fn digits(s: &str) -> Option<()> {
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())).then_some(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::testing::pod;

    /// An executor pod as the StatefulSet and ReplicaSet controllers create them from Spark's
    /// templates (labels, EXECID placeholder, the controller as the controlling owner).
    fn owned_by(name: &str, kind: &str, owner: &str) -> ExecutorPod {
        pod(json!({"metadata": {"name": name, "namespace": "spark-jobs",
            "labels": {"spark-app-selector": "spark-0a1b2c", "spark-role": "executor",
                       "spark-exec-id": "EXECID", "spark-exec-resourceprofile-id": "0"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": owner,
                                 "uid": "u-set", "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}}))
    }

    #[test]
    fn spark_s_and_spark_d_controllers_are_the_apps() {
        let sts = owned_by(
            "spark-s-spark-0a1b2c-0-3",
            "StatefulSet",
            "spark-s-spark-0a1b2c-0",
        );
        let c = Controller::of(&sts).expect("the app's StatefulSet");
        assert_eq!(
            c,
            Controller::StatefulSet {
                name: "spark-s-spark-0a1b2c-0".into(),
                ordinal: Some(3)
            }
        );
        assert!(
            c.after_kill()
                .contains("same name (ordinal 3) once it is gone")
        );
        assert!(c.hold_cost().unwrap().contains("blocks ordinal 3"));
        assert!(
            c.any_pod()
                .hold_cost()
                .unwrap()
                .contains("blocks its ordinal")
        );

        let rs = owned_by(
            "spark-d-spark-0a1b2c-0-5d8f7c9b4-x2k9q",
            "ReplicaSet",
            "spark-d-spark-0a1b2c-0-5d8f7c9b4",
        );
        let c = Controller::of(&rs).expect("the app's ReplicaSet");
        assert_eq!(
            c.describe(),
            "ReplicaSet spark-d-spark-0a1b2c-0-5d8f7c9b4 (Deployment spark-d-spark-0a1b2c-0)"
        );
        assert!(c.after_kill().contains("creates a replacement pod"));
        assert_eq!(c.hold_cost(), None);
    }

    #[test]
    fn other_controllers_and_other_apps_sets_are_not() {
        // Another app's StatefulSet, a set named otherwise, a ReplicaSet without its hash, a Job.
        for (kind, owner) in [
            ("StatefulSet", "spark-s-spark-ffffff-0"),
            ("StatefulSet", "db"),
            ("StatefulSet", "spark-s-spark-0a1b2c-x"),
            ("ReplicaSet", "spark-d-spark-0a1b2c-0"),
            ("ReplicaSet", "spark-d-spark-0a1b2c-0-"),
            ("Job", "spark-s-spark-0a1b2c-0"),
        ] {
            assert_eq!(
                Controller::of(&owned_by("p-0", kind, owner)),
                None,
                "{kind} {owner}"
            );
        }
    }
}
