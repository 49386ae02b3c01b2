//! `kill`, `hold` and `release` from the command line: select the pods, show the plan,
//! confirm, then write through the effect layer's gate, logging every action.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use spark_triage_core::classify::{ClassifyOptions, classify};
use spark_triage_core::model;
use spark_triage_core::model::{ExecutorPod, ExecutorState, HOLD_EXPIRES, HOLD_FINALIZER, Role};

use crate::effect::{
    self, ActionLog, Denied, Effect, HoldTarget, Outcome, Runner, Target, Via, WriteError, by_owner,
};
use crate::failure::Failure;
use crate::settings::ReadOnly;
use crate::source::connection::Connection;
use crate::source::{Scope, errors};

/// A failure of an action command (one line).
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Write(#[from] WriteError),
    #[error("cannot list pods: {0}")]
    List(String),
    /// Some writes failed, the others were done (every pod has its line above).
    #[error(
        "{failed} of {tried} pod writes failed{}; the first: {first}",
        if failed < tried { ", the others were done" } else { "" }
    )]
    Partial {
        failed: usize,
        tried: usize,
        first: String,
    },
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
            .map_err(|e| ActionError::List(errors::error_line(&e)))?;
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

/// The effect runner for one command: no source stream, no driver view.
fn runner(conn: &Connection, log: &ActionLog) -> Runner {
    Runner {
        client: conn.client.clone(),
        user: conn.user.clone(),
        context: conn.context.clone(),
        server: conn.server.clone(),
        log: log.clone(),
        events: None,
        focus: None,
        captures: Default::default(),
        clock: conn.clock.clone(),
    }
}

/// Read-only mode, then what the access review says, for every namespace touched. In
/// read-only mode nothing is sent (not even the review).
async fn gate_all(
    runner: &Runner,
    namespaces: impl Iterator<Item = String>,
    verb: &str,
    readonly: &ReadOnly,
) -> Result<(), ActionError> {
    if let Some(no) = Denied::read_only(readonly) {
        return Err(WriteError::from(no).into());
    }
    let mut namespaces: Vec<String> = namespaces.collect();
    namespaces.sort();
    namespaces.dedup();
    // Fail closed: anything but an answer about permissions refuses the write.
    let Outcome::Permissions(perms) = runner
        .run(Effect::CheckPermissions {
            namespaces: namespaces.clone(),
        })
        .await
    else {
        return Err(ActionError::Refused(
            "refusing: the permission check gave no answer".into(),
        ));
    };
    for ns in &namespaces {
        perms.gate(readonly, ns, verb).map_err(WriteError::from)?;
    }
    Ok(())
}

/// What the writes of one command came to: every pod is tried, each failure is a line.
#[derive(Debug, Default)]
struct Writes {
    changed: usize,
    failed: usize,
    tried: usize,
    /// The first failure, for the last line (every one has its line on stdout).
    first: Option<String>,
}

impl Writes {
    /// Runs one write effect; its per-pod lines go to `out`.
    async fn run(&mut self, runner: &Runner, effect: Effect, out: &mut String) {
        let tried = effect.pods().max(1);
        let Outcome::Done(done) = runner.run(effect).await else {
            return;
        };
        for line in &done.lines {
            let _ = writeln!(out, "{line}");
        }
        self.tried += tried;
        self.changed += done.changed;
        self.failed += done.failed;
        if self.first.is_none() {
            self.first = done.error.map(|e| e.to_string());
        }
    }

    /// The changed count, or the failures as the error (exit status 1).
    fn result(self) -> Result<usize, ActionError> {
        match self.failed {
            0 => Ok(self.changed),
            failed => Err(ActionError::Partial {
                failed,
                tried: self.tried.max(failed),
                first: self.first.unwrap_or_else(|| "unknown".to_owned()),
            }),
        }
    }
}

fn target((p, via): &(ExecutorPod, Option<Via>)) -> Target {
    Target {
        namespace: p.namespace.to_string(),
        app_id: p.app_id().unwrap_or_default().to_owned(),
        pod: p.name.clone(),
        executor: p.executor_id().unwrap_or_default(),
        uid: p.uid.clone(),
        via: via.clone(),
    }
}

/// Reads the owner chain of every pod owned through a controller of Spark's allocator (no
/// write), so a plan shows only pods the delete will not refuse: the others, with why.
#[allow(clippy::type_complexity)]
pub async fn verify_chains(
    conn: &Connection,
    targets: Vec<(ExecutorPod, Option<Via>)>,
) -> (Vec<(ExecutorPod, Option<Via>)>, Vec<(ExecutorPod, String)>) {
    let mut ok = Vec::new();
    let mut refused = Vec::new();
    for (p, via) in targets {
        let checked = match &via {
            Some(v) => effect::ownership::verify(&conn.client, &p.namespace, &p.name, v).await,
            None => Ok(()),
        };
        match checked {
            Ok(()) => ok.push((p, via)),
            Err(e) => refused.push((p, e.to_string())),
        }
    }
    (ok, refused)
}

/// Deletes the selected executors (the plan is printed first; `confirmed` says go); a pod
/// owned through a controller of Spark's allocator is deleted only once its chain is verified.
pub async fn kill(
    conn: &Connection,
    targets: &[(ExecutorPod, Option<Via>)],
    grace: Option<u32>,
    readonly: &ReadOnly,
    log: &ActionLog,
    out: &mut String,
) -> Result<usize, ActionError> {
    let runner = runner(conn, log);
    gate_all(
        &runner,
        targets.iter().map(|(p, _)| p.namespace.to_string()),
        "delete",
        readonly,
    )
    .await?;
    let targets = targets.iter().map(target).collect();
    let mut w = Writes::default();
    w.run(&runner, Effect::Kill { targets, grace }, out).await;
    w.result()
}

/// Turns the app's hold on (existing executors now, and the driver mark for new ones).
pub async fn hold_on(
    conn: &Connection,
    pods: &[ExecutorPod],
    ttl: Duration,
    readonly: &ReadOnly,
    log: &ActionLog,
    out: &mut String,
) -> Result<usize, ActionError> {
    let expires =
        Utc::now() + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(2));
    let runner = runner(conn, log);
    gate_all(
        &runner,
        pods.iter().map(|p| p.namespace.to_string()),
        "patch",
        readonly,
    )
    .await?;
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
    let mut w = Writes::default();
    let drivers: Vec<&ExecutorPod> = pods
        .iter()
        .filter(|p| p.role() == Some(Role::Driver))
        .collect();
    if drivers.is_empty() {
        return Err(ActionError::Refused(
            "refusing: the app has no driver pod (it has ended); nothing held".into(),
        ));
    }
    for d in drivers {
        let hold = Effect::SetHold {
            namespace: d.namespace.to_string(),
            app_id: d.app_id().unwrap_or_default().to_owned(),
            driver: Some(d.name.clone()),
            pods: owned
                .iter()
                .filter(|(p, _)| p.namespace == d.namespace)
                .map(|(p, via)| HoldTarget::of(p, via.clone()))
                .collect(),
            until: Some(expires),
        };
        w.run(&runner, hold, out).await;
    }
    let held = w.changed;
    if w.failed > 0 && held == 0 {
        return w.result();
    }
    let _ = writeln!(
        out,
        "held {held} executor pod(s) until {} (finalizer {})",
        model::fmt_time(&expires),
        HOLD_FINALIZER
    );
    w.result()
}

/// Releases held pods: the app's (hold off), every pod in scope (`--all`), or only expired holds.
pub async fn release(
    conn: &Connection,
    pods: &[ExecutorPod],
    only_expired: bool,
    readonly: &ReadOnly,
    log: &ActionLog,
    out: &mut String,
) -> Result<usize, ActionError> {
    let now = Utc::now();
    let due: Vec<&ExecutorPod> = pods
        .iter()
        .filter(|p| !only_expired || p.hold_due(now))
        .collect();
    let runner = runner(conn, log);
    gate_all(
        &runner,
        due.iter().map(|p| p.namespace.to_string()),
        "patch",
        readonly,
    )
    .await?;
    let mut w = Writes::default();
    for p in due {
        let effect = match p.role() {
            Some(Role::Driver) if marked(p) => Effect::SetHold {
                namespace: p.namespace.to_string(),
                app_id: p.app_id().unwrap_or_default().to_owned(),
                driver: Some(p.name.clone()),
                pods: Vec::new(),
                until: None,
            },
            _ if p.is_held() || marked(p) => Effect::ReleasePod {
                namespace: p.namespace.to_string(),
                pod: p.name.clone(),
                expired: only_expired,
            },
            _ => continue,
        };
        w.run(&runner, effect, out).await;
    }
    let _ = writeln!(out, "released {} pod(s)", w.changed);
    w.result()
}

/// The pod carries the tool's expiry annotation (readable or not).
fn marked(p: &ExecutorPod) -> bool {
    p.tool_annotations.contains_key(HOLD_EXPIRES)
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
        .map_err(|e| ActionError::List(errors::error_line(&e)))?;
    Ok(pods.items.iter().map(ExecutorPod::from_pod).collect())
}

impl From<ActionError> for Failure {
    fn from(e: ActionError) -> Self {
        Self::Cause(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use spark_triage_core::model::testing::pod;

    use super::*;

    fn exec(id: i64, phase: &str, created: &str) -> ExecutorPod {
        pod(
            json!({"metadata": {"name": format!("e-{id}"), "creationTimestamp": created,
            "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": id.to_string()}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": phase}}),
        )
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
