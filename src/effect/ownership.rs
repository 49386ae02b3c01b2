//! Whose pod is it: an action touches only pods the app's driver owns (Spark sets the
//! driver as the controlling owner of every executor pod it creates).

use crate::model::{ExecutorPod, Role};

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
}

/// Why `exec` is not an executor Spark's driver owns (`None`: it is). Spark sets the
/// driver pod as the controlling owner of every executor pod it creates; a pod that merely
/// carries an app's labels (copied, forged, another team's) is not the app's to delete.
/// Without an owner (a driver outside the cluster: client mode) the pod must at least be in
/// the namespace of one of the app's drivers.
pub fn not_owned(exec: &ExecutorPod, drivers: &[DriverId]) -> Option<String> {
    if drivers.is_empty() {
        return Some(
            "the app's driver pod is not in the cluster, so who owns this pod cannot be checked"
                .to_owned(),
        );
    }
    let here: Vec<&DriverId> = drivers
        .iter()
        .filter(|d| d.namespace == exec.namespace)
        .collect();
    match &exec.owner {
        Some(o) => {
            let owned = o.kind == "Pod"
                && here.iter().any(|d| match &d.uid {
                    Some(uid) => *uid == o.uid,
                    None => d.name == o.name,
                });
            (!owned).then(|| {
                format!(
                    "owned by {} {}, not by the app's driver{}",
                    o.kind,
                    o.name,
                    here.first()
                        .map(|d| format!(" {}", d.name))
                        .unwrap_or_else(|| format!(" (in namespace {})", drivers[0].namespace))
                )
            })
        }
        None if here.is_empty() => Some(format!(
            "no owner, and not in the namespace of the app's driver ({})",
            drivers[0].namespace
        )),
        None => None,
    }
}

/// Splits an app's pods into those its driver owns and the others (with why).
pub fn by_owner(
    targets: Vec<ExecutorPod>,
    all: &[ExecutorPod],
) -> (Vec<ExecutorPod>, Vec<(ExecutorPod, String)>) {
    let drivers: Vec<DriverId> = all
        .iter()
        .filter(|p| p.role() == Some(Role::Driver))
        .map(DriverId::of)
        .collect();
    let mut owned = Vec::new();
    let mut not = Vec::new();
    for p in targets {
        match not_owned(&p, &drivers) {
            None => owned.push(p),
            Some(why) => not.push((p, why)),
        }
    }
    (owned, not)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::testing::pod;

    fn exec(id: i64) -> ExecutorPod {
        pod(
            json!({"metadata": {"name": format!("e-{id}"), "creationTimestamp": "2026-11-29T10:00:00Z",
            "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": id.to_string()}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": "Running"}}),
        )
    }

    fn owned(mut p: ExecutorPod, ns: &str, owner: Option<(&str, &str)>) -> ExecutorPod {
        p.namespace = ns.into();
        p.owner = owner.map(|(name, uid)| crate::model::OwnerRef {
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
}
