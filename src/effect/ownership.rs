//! Whose pod is it: an action touches only pods the app's driver owns. Spark's default
//! allocator sets the driver as the controlling owner of every executor pod it creates; the
//! `statefulset` and `deployment` allocators let a StatefulSet, or a Deployment's
//! ReplicaSet, own them, and the driver owns that controller. Such a pod is taken as the
//! app's from the view only provisionally ([`Via`]): before any write, [`verify`] reads
//! the chain from the API and refuses unless it ends at the app's driver pod.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Api, Client};
use spark_triage_core::allocator::Controller;
use spark_triage_core::model::{ExecutorPod, Role};

use super::WriteError;
use crate::redact;
use crate::source::errors;

/// A driver pod, as far as ownership goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverId {
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
}

impl DriverId {
    pub fn of(p: &ExecutorPod) -> Self {
        Self {
            namespace: p.namespace.to_string(),
            name: p.name.clone(),
            uid: p.uid.clone(),
        }
    }

    /// Whether an owner reference (kind, name, uid) names this driver pod.
    fn is(&self, kind: &str, name: &str, uid: &str) -> bool {
        kind == "Pod"
            && match &self.uid {
                Some(u) => u == uid,
                None => self.name == name,
            }
    }
}

/// An executor pod owned through a controller of Spark's allocator: the controller (with
/// the uid the pod names) and the app's drivers in the pod's namespace, one of which must
/// own it. Checked by [`verify`] before a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Via {
    pub controller: Controller,
    pub uid: String,
    pub drivers: Vec<DriverId>,
}

/// How `exec` is the app's: `Ok(None)` its driver owns it (or, in client mode, it is in the
/// driver's namespace), `Ok(Some(via))` through a controller of Spark's allocator (to be
/// verified), `Err(why)` it is not the app's to touch. A pod that merely carries an app's
/// labels (copied, forged, another team's) is not the app's to delete. Without an owner (a
/// driver outside the cluster: client mode) the pod must at least be in the namespace of one
/// of the app's drivers.
pub fn owner_of(exec: &ExecutorPod, drivers: &[DriverId]) -> Result<Option<Via>, String> {
    if drivers.is_empty() {
        return Err(
            "the app's driver pod is not in the cluster, so who owns this pod cannot be checked"
                .to_owned(),
        );
    }
    let here: Vec<&DriverId> = drivers
        .iter()
        .filter(|d| d.namespace == exec.namespace)
        .collect();
    let Some(o) = &exec.owner else {
        return match here.is_empty() {
            true => Err(format!(
                "no owner, and not in the namespace of the app's driver ({})",
                drivers[0].namespace
            )),
            false => Ok(None),
        };
    };
    if here.iter().any(|d| d.is(&o.kind, &o.name, &o.uid)) {
        return Ok(None);
    }
    if let Some(controller) = Controller::of(exec).filter(|_| !here.is_empty()) {
        return Ok(Some(Via {
            controller,
            uid: o.uid.to_string(),
            drivers: here.into_iter().cloned().collect(),
        }));
    }
    Err(format!(
        "owned by {} {}, not by the app's driver{}",
        o.kind,
        o.name,
        here.first()
            .map(|d| format!(" {}", d.name))
            .unwrap_or_else(|| format!(" (in namespace {})", drivers[0].namespace))
    ))
}

/// The controlling owner of an object (`controller: true`; Spark and the controllers set it).
fn controlling(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|o| o.controller == Some(true))
}

/// Reads the owner chain of a pod owned through `via` and refuses unless it is the
/// controller the pod named (same uid), controlled (through the Deployment Spark names, for
/// a ReplicaSet) by one of the app's driver pods, by uid. One GET per link, each under the
/// client's timeouts. Any refusal, a 403 on these reads included, is an error about this
/// pod only: it says nothing of what the user may do to pods.
pub async fn verify(
    client: &Client,
    namespace: &str,
    pod: &str,
    via: &Via,
) -> Result<(), WriteError> {
    let refuse = |message: String| WriteError::Api {
        verb: "verify owner of".to_owned(),
        namespace: namespace.to_owned(),
        pod: pod.to_owned(),
        message,
    };
    let get_err = |what: String, e: kube::Error| match e {
        kube::Error::Api(s) if s.code == 403 => refuse(format!(
            "cannot read {what} to check that the app's driver owns it (forbidden: {}); nothing written",
            redact::one_line(&s.message)
        )),
        kube::Error::Api(s) if s.code == 404 => refuse(format!(
            "{what} is gone, so who owns the pod cannot be checked"
        )),
        other => refuse(format!(
            "cannot read {what}: {}",
            errors::error_line(&other)
        )),
    };
    let same = |what: &str, meta: &ObjectMeta, uid: &str| -> Result<(), WriteError> {
        match meta.uid.as_deref() == Some(uid) {
            true => Ok(()),
            false => Err(refuse(format!(
                "{what} is not the one the pod names (another uid): it was replaced"
            ))),
        }
    };
    let drivers: Vec<(&str, &str)> = via
        .drivers
        .iter()
        .filter_map(|d| Some((d.name.as_str(), d.uid.as_deref()?)))
        .collect();
    if drivers.is_empty() {
        return Err(refuse(
            "the driver pod's uid is not known, so the chain to it cannot be checked".to_owned(),
        ));
    }
    let by_driver = |what: String, meta: &ObjectMeta| -> Result<(), WriteError> {
        match controlling(meta) {
            Some(o) if o.kind == "Pod" && drivers.iter().any(|(_, uid)| *uid == o.uid) => Ok(()),
            Some(o) => Err(refuse(format!(
                "{what} is owned by {} {}, not by the app's driver {}",
                o.kind, o.name, drivers[0].0
            ))),
            None => Err(refuse(format!(
                "{what} has no owner, so it is not the app's driver's"
            ))),
        }
    };
    match &via.controller {
        Controller::StatefulSet { name, .. } => {
            let what = format!("StatefulSet {name}");
            let api: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
            let set = api.get(name).await.map_err(|e| get_err(what.clone(), e))?;
            same(&what, &set.metadata, &via.uid)?;
            by_driver(what, &set.metadata)
        }
        Controller::ReplicaSet { name, deployment } => {
            let what = format!("ReplicaSet {name}");
            let api: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
            let rs = api.get(name).await.map_err(|e| get_err(what.clone(), e))?;
            same(&what, &rs.metadata, &via.uid)?;
            let Some(o) = controlling(&rs.metadata)
                .filter(|o| o.kind == "Deployment" && o.name == *deployment)
            else {
                return Err(refuse(format!(
                    "{what} is not controlled by Deployment {deployment}"
                )));
            };
            let what = format!("Deployment {deployment}");
            let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            let d = api
                .get(deployment)
                .await
                .map_err(|e| get_err(what.clone(), e))?;
            same(&what, &d.metadata, &o.uid)?;
            by_driver(what, &d.metadata)
        }
    }
}

/// One sentence per controller of Spark's allocator among pods to delete: what replaces
/// them, and that the chain to the driver is checked first.
pub fn replacements<'a>(vias: impl IntoIterator<Item = &'a Via>) -> Vec<String> {
    let vias: Vec<&Via> = vias.into_iter().collect();
    let mut out: Vec<String> = vias
        .iter()
        .map(|v| {
            // One pod: its ordinal; several: what holds for all.
            let c = match vias.len() {
                1 => v.controller.clone(),
                _ => v.controller.any_pod(),
            };
            format!(
                "{}. Checked before the delete: the app's driver owns {}.",
                c.after_kill(),
                c.describe()
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether any pod to delete is a StatefulSet's (`--force` deserves a warning then).
pub fn any_statefulset<'a>(vias: impl IntoIterator<Item = &'a Via>) -> bool {
    vias.into_iter()
        .any(|v| matches!(v.controller, Controller::StatefulSet { .. }))
}

/// The warning for a grace-0 delete of a StatefulSet's pod.
pub const FORCE_STATEFULSET: &str = "Grace 0 on a StatefulSet's pod: the StatefulSet may start the ordinal again before the old container has stopped (Kubernetes' documentation warns against force-deleting them).";

/// Splits an app's pods into those its driver owns (with the controller to verify, for
/// pods of Spark's statefulset or deployment allocator) and the others (with why).
#[allow(clippy::type_complexity)]
pub fn by_owner(
    targets: Vec<ExecutorPod>,
    all: &[ExecutorPod],
) -> (Vec<(ExecutorPod, Option<Via>)>, Vec<(ExecutorPod, String)>) {
    let drivers: Vec<DriverId> = all
        .iter()
        .filter(|p| p.role() == Some(Role::Driver))
        .map(DriverId::of)
        .collect();
    let mut owned = Vec::new();
    let mut not = Vec::new();
    for p in targets {
        match owner_of(&p, &drivers) {
            Ok(via) => owned.push((p, via)),
            Err(why) => not.push((p, why)),
        }
    }
    (owned, not)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use spark_triage_core::model::OwnerRef;
    use spark_triage_core::model::testing::pod;

    use super::*;

    fn exec(id: i64) -> ExecutorPod {
        pod(
            json!({"metadata": {"name": format!("e-{id}"), "creationTimestamp": "2026-11-29T10:00:00Z",
            "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": id.to_string()}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": "Running"}}),
        )
    }

    /// Why `exec` is not the app's (`None`: it is).
    fn not_owned(exec: &ExecutorPod, drivers: &[DriverId]) -> Option<String> {
        owner_of(exec, drivers).err()
    }

    fn owned(mut p: ExecutorPod, ns: &str, owner: Option<(&str, &str)>) -> ExecutorPod {
        p.namespace = ns.into();
        p.owner = owner.map(|(name, uid)| OwnerRef {
            kind: "Pod".into(),
            name: name.into(),
            uid: uid.into(),
        });
        p
    }

    #[test]
    fn only_pods_the_apps_driver_owns_are_its_executors() {
        let driver = DriverId {
            namespace: "spark-jobs".into(),
            name: "etl-driver".into(),
            uid: Some("u-1".into()),
        };
        let e = |ns, owner| owned(exec(1), ns, owner);
        let ok = e("spark-jobs", Some(("etl-driver", "u-1")));
        assert_eq!(not_owned(&ok, std::slice::from_ref(&driver)), None);
        // Client mode in the driver's namespace: no owner, same namespace.
        assert_eq!(
            not_owned(&e("spark-jobs", None), std::slice::from_ref(&driver)),
            None
        );
        // Forged labels in another namespace, no owner.
        assert_eq!(
            not_owned(&e("default", None), std::slice::from_ref(&driver)).unwrap(),
            "no owner, and not in the namespace of the app's driver (spark-jobs)"
        );
        // Same name, another uid (a previous driver, or a forgery).
        assert_eq!(
            not_owned(
                &e("spark-jobs", Some(("etl-driver", "u-2"))),
                std::slice::from_ref(&driver)
            )
            .unwrap(),
            "owned by Pod etl-driver, not by the app's driver etl-driver"
        );
        let mut by_rs = e("spark-jobs", Some(("db", "u-1")));
        by_rs.owner.as_mut().unwrap().kind = "StatefulSet".into();
        assert!(not_owned(&by_rs, std::slice::from_ref(&driver)).is_some());
        // No driver pod at all: cannot be checked.
        assert!(not_owned(&ok, &[]).is_some());
    }

    #[test]
    fn a_pod_of_the_apps_statefulset_or_replicaset_is_owned_through_it_to_be_verified() {
        let driver = DriverId {
            namespace: "spark-jobs".into(),
            name: "etl-driver".into(),
            uid: Some("u-1".into()),
        };
        let through = |kind: &str, set: &str, pod_name: &str| {
            let mut p = owned(exec(1), "spark-jobs", Some((set, "u-set")));
            p.name = pod_name.into();
            p.owner.as_mut().unwrap().kind = kind.into();
            p
        };
        let sts = through("StatefulSet", "spark-s-spark-1-0", "spark-s-spark-1-0-2");
        let via = owner_of(&sts, std::slice::from_ref(&driver))
            .expect("the app's")
            .expect("through a controller");
        assert_eq!(via.uid, "u-set");
        assert_eq!(via.drivers, vec![driver.clone()]);
        assert_eq!(via.controller.describe(), "StatefulSet spark-s-spark-1-0");
        let rs = through(
            "ReplicaSet",
            "spark-d-spark-1-0-6c9f",
            "spark-d-spark-1-0-6c9f-abcde",
        );
        assert!(matches!(
            owner_of(&rs, std::slice::from_ref(&driver)),
            Ok(Some(Via { .. }))
        ));
        // Another app's set (by name), or the right name in a namespace with no driver.
        let other = through("StatefulSet", "spark-s-spark-2-0", "spark-s-spark-2-0-0");
        assert_eq!(
            owner_of(&other, std::slice::from_ref(&driver)).unwrap_err(),
            "owned by StatefulSet spark-s-spark-2-0, not by the app's driver etl-driver"
        );
        let mut elsewhere = sts.clone();
        elsewhere.namespace = "default".into();
        assert!(owner_of(&elsewhere, std::slice::from_ref(&driver)).is_err());
    }
}
