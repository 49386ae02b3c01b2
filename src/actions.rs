//! `kill`, `hold` and `release` from the command line: select the pods, show the plan,
//! confirm, then write through the effect layer's gate, logging every action.

use std::{fmt::Write as _, time::Duration};

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, api::ListParams};

use crate::{
    classify::{ClassifyOptions, classify},
    effect::{self, ActionLog, ActionRecord, Permissions, WriteError},
    model::{ExecutorPod, ExecutorState, Role},
    source::live::{Connection, Scope},
};

/// A failure of an action command (one line).
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Write(#[from] WriteError),
    #[error("cannot list pods: {0}")]
    List(String),
}

/// The pods of one application (drivers and executors), by id or name.
pub async fn app_pods(conn: &Connection, app: &str) -> Result<Vec<ExecutorPod>, ActionError> {
    let api: Api<Pod> = match &conn.scope {
        Scope::Namespace(ns) => Api::namespaced(conn.client.clone(), ns),
        Scope::All => Api::all(conn.client.clone()),
    };
    for key in ["spark-app-selector", "spark-app-name"] {
        let lp = ListParams::default().labels(&format!("{},{key}={app}", conn.selector));
        let pods = api
            .list(&lp)
            .await
            .map_err(|e| ActionError::List(crate::source::errors::describe(&e)))?;
        if !pods.items.is_empty() {
            return Ok(pods.items.iter().map(ExecutorPod::from_pod).collect());
        }
    }
    Err(ActionError::Refused(format!(
        "no Spark application {app:?} in {}",
        conn.scope.describe()
    )))
}

/// Which executors `kill` selects.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub ids: Vec<i64>,
    pub state: Option<ExecutorState>,
    pub older_than: Option<Duration>,
}

/// Executors of the app matching the selection (ids, or state and age).
pub fn select(pods: &[ExecutorPod], sel: &Selection, now: DateTime<Utc>) -> Vec<ExecutorPod> {
    let mut chosen: Vec<ExecutorPod> = pods
        .iter()
        .filter(|p| p.role() == Some(Role::Executor))
        .filter(|p| p.executor_id().is_some())
        .filter(|p| sel.ids.is_empty() || p.executor_id().is_some_and(|id| sel.ids.contains(&id)))
        .filter(|p| {
            sel.state.is_none_or(|s| {
                let resolved = ClassifyOptions::default().resolve(p);
                classify(p, &resolved.config) == s
            })
        })
        .filter(|p| {
            sel.older_than.is_none_or(|d| {
                let limit = chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
                p.created_at.is_some_and(|c| now - c > limit)
            })
        })
        .cloned()
        .collect();
    chosen.sort_by_key(|p| (p.namespace.clone(), p.executor_id()));
    chosen
}

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
            namespace: p.namespace.clone(),
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

fn record(
    log: &ActionLog,
    conn: &Connection,
    action: &str,
    target: &str,
    result: &str,
) -> Option<String> {
    log.append(&ActionRecord {
        at: crate::model::fmt_time(&Utc::now()),
        user: conn.user.clone(),
        action: action.to_owned(),
        target: target.to_owned(),
        result: result.to_owned(),
    })
    .err()
}

/// Read-only mode, then what the access review says, for every namespace touched. In
/// read-only mode nothing is sent (not even the review).
async fn gate_all(
    conn: &Connection,
    namespaces: impl Iterator<Item = String>,
    verb: &str,
    readonly: bool,
) -> Result<(), ActionError> {
    if readonly {
        return Err(WriteError::from(effect::Denied::ReadOnly).into());
    }
    let mut namespaces: Vec<String> = namespaces.collect();
    namespaces.sort();
    namespaces.dedup();
    let perms = Permissions::check(&conn.client, &namespaces).await;
    for ns in &namespaces {
        perms.gate(readonly, ns, verb).map_err(WriteError::from)?;
    }
    Ok(())
}

/// Deletes the selected executors (the plan is printed first; `confirmed` says go).
pub async fn kill(
    conn: &Connection,
    targets: &[ExecutorPod],
    grace: Option<u32>,
    readonly: bool,
    log: &ActionLog,
    out: &mut String,
) -> Result<usize, ActionError> {
    gate_all(
        conn,
        targets.iter().map(|p| p.namespace.clone()),
        "delete",
        readonly,
    )
    .await?;
    let mut done = 0;
    for p in targets {
        let target = format!("{}/{}", p.namespace, p.name);
        match effect::kill(&conn.client, &p.namespace, &p.name, grace).await {
            Ok(()) => {
                done += 1;
                let _ = writeln!(out, "deleted {target}");
                if let Some(e) = record(log, conn, "kill", &target, "deleted") {
                    let _ = writeln!(out, "warning: {e}");
                }
            }
            Err(e) => {
                record(log, conn, "kill", &target, &e.to_string());
                return Err(e.into());
            }
        }
    }
    Ok(done)
}

/// Turns the app's hold on (existing executors now, and the driver mark for new ones).
pub async fn hold_on(
    conn: &Connection,
    pods: &[ExecutorPod],
    ttl: Duration,
    readonly: bool,
    log: &ActionLog,
    out: &mut String,
) -> Result<usize, ActionError> {
    let expires =
        Utc::now() + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(2));
    gate_all(
        conn,
        pods.iter().map(|p| p.namespace.clone()),
        "patch",
        readonly,
    )
    .await?;
    let mut held = 0;
    let (owned, unowned) = by_owner(
        pods.iter()
            .filter(|p| p.role() == Some(Role::Executor))
            .cloned()
            .collect(),
        pods,
    );
    for (p, why) in &unowned {
        let _ = writeln!(
            out,
            "skip {}/{}: not owned by the app's driver: {why}",
            p.namespace, p.name
        );
    }
    let drivers = pods.iter().filter(|p| p.role() == Some(Role::Driver));
    for p in drivers.chain(owned.iter()) {
        let target = format!("{}/{}", p.namespace, p.name);
        match p.role() {
            Some(Role::Driver) => {
                effect::mark_app_hold(&conn.client, &p.namespace, &p.name, Some(expires)).await?;
            }
            Some(Role::Executor) => {
                let newly = effect::hold_pod(&conn.client, &p.namespace, &p.name, expires).await?;
                held += usize::from(newly);
                let result = format!("held until {}", crate::model::fmt_time(&expires));
                record(log, conn, "hold", &target, &result);
            }
            None => {}
        }
    }
    let _ = writeln!(
        out,
        "held {held} executor pod(s) until {} (finalizer {})",
        crate::model::fmt_time(&expires),
        crate::model::HOLD_FINALIZER
    );
    Ok(held)
}

/// Releases held pods: the app's (hold off), every pod in scope (`--all`), or only expired holds.
pub async fn release(
    conn: &Connection,
    pods: &[ExecutorPod],
    only_expired: bool,
    readonly: bool,
    log: &ActionLog,
    out: &mut String,
) -> Result<usize, ActionError> {
    let now = Utc::now();
    let due: Vec<&ExecutorPod> = pods
        .iter()
        .filter(|p| !only_expired || p.hold_expires().is_some_and(|e| e <= now))
        .collect();
    gate_all(
        conn,
        due.iter().map(|p| p.namespace.clone()),
        "patch",
        readonly,
    )
    .await?;
    let mut released = 0;
    for p in due {
        let target = format!("{}/{}", p.namespace, p.name);
        match p.role() {
            Some(Role::Driver) if p.hold_expires().is_some() => {
                effect::mark_app_hold(&conn.client, &p.namespace, &p.name, None).await?;
            }
            _ if p.is_held() || p.hold_expires().is_some() => {
                let done = effect::release_pod(&conn.client, &p.namespace, &p.name).await?;
                released += usize::from(done);
                let result = if only_expired {
                    "released (expired)"
                } else {
                    "released"
                };
                record(log, conn, "release", &target, result);
            }
            _ => {}
        }
    }
    let _ = writeln!(out, "released {released} pod(s)");
    Ok(released)
}

/// Every Spark pod in scope (for `release --all`).
pub async fn all_pods(conn: &Connection) -> Result<Vec<ExecutorPod>, ActionError> {
    let api: Api<Pod> = match &conn.scope {
        Scope::Namespace(ns) => Api::namespaced(conn.client.clone(), ns),
        Scope::All => Api::all(conn.client.clone()),
    };
    let pods = api
        .list(&ListParams::default().labels(&conn.selector))
        .await
        .map_err(|e| ActionError::List(crate::source::errors::describe(&e)))?;
    Ok(pods.items.iter().map(ExecutorPod::from_pod).collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::testing::pod;

    fn exec(id: i64, phase: &str, created: &str) -> ExecutorPod {
        pod(
            json!({"metadata": {"name": format!("e-{id}"), "creationTimestamp": created,
            "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": id.to_string()}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": phase}}),
        )
    }

    fn owned(mut p: ExecutorPod, ns: &str, owner: Option<(&str, &str)>) -> ExecutorPod {
        p.namespace = ns.to_owned();
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
        let e = |ns, owner| owned(exec(1, "Running", "2026-11-29T10:00:00Z"), ns, owner);
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
    fn selection_by_ids_state_and_age() {
        let now: DateTime<Utc> = "2026-11-29T10:10:00Z".parse().unwrap();
        let pods = vec![
            exec(1, "Running", "2026-11-29T10:00:00Z"),
            exec(2, "Pending", "2026-11-29T10:00:00Z"),
            exec(3, "Pending", "2026-11-29T10:09:00Z"),
        ];
        let ids = |v: Vec<ExecutorPod>| {
            v.iter()
                .filter_map(ExecutorPod::executor_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(select(
                &pods,
                &Selection {
                    ids: vec![1, 3],
                    ..Selection::default()
                },
                now
            )),
            vec![1, 3]
        );
        let pending_old = Selection {
            state: Some(ExecutorState::Pending),
            older_than: Some(Duration::from_secs(300)),
            ..Selection::default()
        };
        assert_eq!(ids(select(&pods, &pending_old, now)), vec![2]);
        let pending = Selection {
            state: Some(ExecutorState::Pending),
            ..Selection::default()
        };
        assert_eq!(ids(select(&pods, &pending, now)), vec![2, 3]);
    }
}
